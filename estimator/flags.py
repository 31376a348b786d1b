"""vLLM settings from the ways people write them: argv, pasted command lines, `LLM(...)` kwargs,
docker/compose/Kubernetes argument lists, the "non-default args: {...}" log dict, the engine
config dump ("Initializing a V0 LLM engine (v0.7.1) with config: model='…', dtype=…"), YAML
`key: value` configs and environment variables.

Why one module: the paste reader (`estimator.paste`) and the CLI (`kvdoctor estimate -- vllm
serve MODEL …`) must agree on what a flag means. Flag spellings follow vLLM's
`vllm/engine/arg_utils.py` (`EngineArgs.add_cli_args`): `FlexibleArgumentParser` accepts
underscores for dashes, `--flag=value` and `--flag value`, and argparse's unique-prefix
abbreviations (`--tensor_parallel 2`).

Everything here is a pure function of its input; regexes are compiled once and run with a
timeout so hostile input cannot hang a caller.
"""

from __future__ import annotations

import functools
import json
import math
import shlex
from collections import deque
from dataclasses import dataclass

import regex

from estimator.paste_engines import FOREIGN_COMMAND, FOREIGN_WORDS
from estimator.paste_text import budget as _budget
from estimator.paste_text import finditer

# Seconds one regex call may take before we give up on that scan (the caller keeps going).
TIMEOUT = 0.25
# Longest command line / kwargs block we read; longer runs are junk, not a command.
MAX_COMMAND_CHARS = 8000

# ---------------------------------------------------------------------------------------------
# Flag vocabulary (vllm/engine/arg_utils.py; aliases from its add_argument calls).

#: normalised flag name (no dashes prefix, dashes→underscores, lower case) → settings key
FLAG_KEYS: dict[str, str] = {
    "model": "model",
    "tensor_parallel_size": "tensor_parallel_size",
    "tp": "tensor_parallel_size",
    "tp_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "pp": "pipeline_parallel_size",
    "data_parallel_size": "data_parallel_size",
    "dp": "data_parallel_size",
    "decode_context_parallel_size": "decode_context_parallel_size",
    "dcp": "decode_context_parallel_size",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "gmu": "gpu_memory_utilization",           # Aphrodite (vLLM fork) short alias
    "max_model_len": "max_model_len",
    "max_seq_len": "max_model_len",             # engine config dump spelling
    "max_model_length": "max_model_len",        # TRL's (GRPOConfig's vllm_max_model_length)
    "dtype": "dtype",
    "kv_cache_dtype": "kv_cache_dtype",
    "quantization": "quantization",
    "q": "quantization",
    "enforce_eager": "enforce_eager",
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "block_size": "block_size",
    "cpu_offload_gb": "cpu_offload_gb",
    "kv_cache_memory_bytes": "kv_cache_memory_bytes",
    "kv_cache_memory": "kv_cache_memory_bytes",
    "enable_chunked_prefill": "enable_chunked_prefill",
    "chunked_prefill_enabled": "enable_chunked_prefill",
    "enable_prefix_caching": "enable_prefix_caching",
    "swap_space": "swap_space",
    "max_seq_len_to_capture": "max_seq_len_to_capture",
    "num_gpu_blocks_override": "num_gpu_blocks_override",
    "trust_remote_code": "trust_remote_code",
    "served_model_name": "served_model_name",
    "load_format": "load_format",
    "enable_expert_parallel": "enable_expert_parallel",
    "distributed_executor_backend": "distributed_executor_backend",
    "device": "device",
    "tokenizer": "tokenizer",
    "disable_custom_all_reduce": "disable_custom_all_reduce",
    "speculative_config": "speculative_config",
    "num_speculative_tokens": "num_speculative_tokens",   # V0 (≤0.9) spelling
    "speculative_model": "speculative_model",             # V0 (≤0.9) spelling
    "kv_transfer_config": "kv_transfer_config",
    "compilation_config": "compilation_config",
    "mm_processor_kwargs": "mm_processor_kwargs",
    "limit_mm_per_prompt": "limit_mm_per_prompt",
    "language_model_only": "language_model_only",
    "disable_hybrid_kv_cache_manager": "disable_hybrid_kv_cache_manager",
    "calculate_kv_scales": "calculate_kv_scales",
    "async_scheduling": "async_scheduling",
    "mamba_cache_mode": "mamba_cache_mode",
    "mm_encoder_tp_mode": "mm_encoder_tp_mode",
    "performance_mode": "performance_mode",
    "attention_backend": "attention_backend",
    "max_logprobs": "max_logprobs",
    "enable_lora": "enable_lora",
    "max_loras": "max_loras",
    "max_lora_rank": "max_lora_rank",
    # the runner: --runner pooling (0.10.2+), or the task / conversion that implies it (--task embed to
    # 0.10, --convert embed from 0.10.2); vllm/config/model.py
    "runner": "runner",
    "task": "runner",
    "convert": "runner",
    "seed": "seed",
    "port": "port",
    "host": "host",
}

#: Other real vLLM flags, only so that argparse-style prefix matching stays unambiguous.
_OTHER_FLAGS = (
    "max_num_partial_prefills", "max_long_partial_prefills", "max_loras", "max_lora_rank",
    "max_cpu_loras", "max_parallel_loading_workers", "max_seq_len_to_capture", "max_num_seqs",
    "tensor_parallel_size", "tokenizer_mode", "tokenizer_revision", "tool_call_parser",
    "gpu_memory_utilization", "enable_lora", "enable_auto_tool_choice", "enable_reasoning",
    "enable_sleep_mode", "enable_prompt_tokens_details", "data_parallel_size_local",
    "data_parallel_address", "data_parallel_rpc_port", "data_parallel_backend",
    "pipeline_parallel_size", "kv_cache_dtype", "kv_cache_memory_bytes", "kv_events_config",
    "block_size", "disable_log_requests", "disable_log_stats", "served_model_name",
    "trust_remote_code", "enforce_eager", "dtype", "download_dir", "device", "quantization",
    "quantization_param_path", "chat_template", "reasoning_parser", "api_key", "uvicorn_log_level",
    "max_model_len", "model", "model_impl", "mm_processor_kwargs", "cpu_offload_gb",
    "swap_space", "seed", "spec_decoding_acceptance_method", "speculative_config",
    "enable_chunked_prefill", "enable_prefix_caching", "enable_expert_parallel",
    "hf_config_path", "hf_overrides", "load_format", "num_scheduler_steps",
    "num_gpu_blocks_override", "max_num_batched_tokens",
)
_ALL_FLAGS: tuple[str, ...] = tuple(sorted(set(FLAG_KEYS) | set(_OTHER_FLAGS)))

BOOL_KEYS = frozenset({
    "enforce_eager", "enable_chunked_prefill", "enable_prefix_caching", "trust_remote_code",
    "enable_expert_parallel", "disable_custom_all_reduce", "disable_hybrid_kv_cache_manager",
    "calculate_kv_scales", "async_scheduling", "language_model_only", "enable_lora",
})
INT_KEYS = frozenset({
    "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "decode_context_parallel_size",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size", "kv_cache_memory_bytes",
    "max_seq_len_to_capture", "num_gpu_blocks_override", "max_logprobs", "seed", "port",
    "num_speculative_tokens", "max_loras", "max_lora_rank",
})
FLOAT_KEYS = frozenset({"gpu_memory_utilization", "cpu_offload_gb", "swap_space"})

#: Flags of vLLM that never take a value (store_true); a following True/False is still read.
_STORE_TRUE_FLAGS = frozenset({
    "enforce_eager", "trust_remote_code", "enable_chunked_prefill", "enable_prefix_caching",
    "enable_expert_parallel", "disable_custom_all_reduce", "disable_log_requests",
    "disable_log_stats", "enable_auto_tool_choice", "enable_reasoning", "enable_lora",
    "disable_hybrid_kv_cache_manager", "enable_sleep_mode", "calculate_kv_scales",
    "enable_prompt_tokens_details", "no_enable_prefix_caching", "no_enforce_eager",
    "no_enable_chunked_prefill", "disable_frontend_multiprocessing", "skip_tokenizer_init",
    "disable_sliding_window", "async_scheduling", "omni", "headless", "language_model_only",
})

_DTYPES = {
    "auto": "auto", "half": "float16", "float16": "float16", "fp16": "float16",
    "torch.float16": "float16", "torch.half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
    "torch.bfloat16": "bfloat16", "float": "float32", "float32": "float32", "fp32": "float32",
    "torch.float32": "float32",
}


@dataclass(frozen=True)
class Setting:
    """One setting read from text: normalised key and value, the span of the value (offsets in
    the text given to the scanner) and where it came from."""

    key: str
    value: object
    span: tuple[int, int]
    source: str          # "cmdline", "kwargs", "nondefault_args", "config_dump", "flag", "kv", "env"
    raw: str = ""


# ---------------------------------------------------------------------------------------------
# Value normalisation


_MAX_INT_DIGITS = 4000


def human_int(text: str) -> int | None:
    """vLLM's `human_readable_int`: 'k' = 1000, 'K' = 1024, '32k' = 32000, '32K' = 32768, '25.6k' = 25600
    (vllm/utils/argparse_utils.py, earlier vllm/engine/arg_utils.py); a decimal with a binary suffix
    ('1.5M') vLLM refuses ("Decimals are not allowed with binary suffixes"): no value a run had. Also
    '30_000', '1,010,000', '4096.0' (config files)."""
    t = text.strip().strip("'\"`").replace("_", "").replace(",", "")
    if not t or len(t) > _MAX_INT_DIGITS:
        return None          # (Python refuses to read an int of more than 4,300 digits; no run has one)
    m = regex.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)", t)
    if not m:
        m2 = regex.fullmatch(r"-?\d+", t)
        return int(t) if m2 else None
    num, suf = m.group(1), m.group(2)
    mult = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
            "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}[suf]
    if "." not in num:
        return int(num) * mult      # exact: a 400-digit count is no float (it would be inf)
    if suf.isupper():
        return None
    value = float(num) * mult
    if not math.isfinite(value) or (value != int(value) and not suf):
        return None
    return int(value)


def _float(text: str) -> float | None:
    t = text.strip().strip("'\"`").rstrip(",")
    if regex.fullmatch(r"[+]?(?:\d+(?:\.\d*)?|\.\d+)", t) and math.isfinite(float(t)):
        return float(t)
    return None


def parse_bool(text: str) -> bool | None:
    """A yes/no as flags and environment variables spell it (true/1/yes/on); None when neither."""
    t = text.strip().strip("'\"`").lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    return None


# --runner / --task / --convert values (vllm/config/model.py RunnerOption, TaskOption, ConvertOption) →
# the runner they mean; "auto" and "none" leave it to vLLM (None)
_POOLING_WORDS = frozenset({"pooling", "embed", "embedding", "classify", "classification", "score", "reward",
                            "encode", "token_embed", "token_classify", "plugin"})
_GENERATE_WORDS = frozenset({"generate", "generation", "transcription", "draft"})


def runner_word(text: str) -> str | None:
    """'pooling' or 'generate' for a runner, task or conversion word; None for auto/none/unknown."""
    t = text.strip().strip("'\"`").lower()
    return "pooling" if t in _POOLING_WORDS else "generate" if t in _GENERATE_WORDS else None


def normalise(key: str, raw: object) -> object | None:
    """Value of `key` in its canonical type, or None when `raw` does not say a usable value
    (None/'None'/'auto' for a numeric key, a variable name, …)."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        return raw if key in BOOL_KEYS else None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        if isinstance(raw, float) and not math.isfinite(raw):
            return None         # 1e309 in a kwargs dict: no value vLLM accepts
        if key in INT_KEYS:
            return int(raw) if float(raw).is_integer() else None
        if key in FLOAT_KEYS:
            return float(raw)
        return None
    text = str(raw).strip()
    if text.lower() in ("none", "null", ""):
        return None
    if key in BOOL_KEYS:
        return parse_bool(text)
    if key in INT_KEYS:
        return human_int(text)
    if key in FLOAT_KEYS:
        return _float(text)
    t = text.strip("'\"`")
    if key == "dtype":
        return _DTYPES.get(t.lower())
    if key in ("kv_cache_dtype", "quantization"):
        t = t.lower()
        return t if regex.fullmatch(r"[a-z][\w.-]{0,30}", t) else None
    if key == "mamba_cache_mode":
        t = t.lower()
        return t if t in ("all", "align", "none") else None
    if key == "mm_encoder_tp_mode":
        t = t.lower()
        return t if t in ("weights", "data") else None
    if key == "runner":
        return runner_word(t)
    if key == "performance_mode":
        t = t.lower()
        return t if t in ("balanced", "interactivity", "throughput") else None
    if key == "attention_backend":
        from estimator.attention_backend import backend_from_name

        return backend_from_name(t)
    if key == "model":
        t = t.rstrip("/") if len(t) > 1 else t
        return t or None
    return t


# PYTORCH_CUDA_ALLOC_CONF's expandable_segments option, on (c10/cuda/CUDAAllocatorConfig.cpp reads True / true):
# read from a command's environment (vllm.parse_flags) and from anywhere in a paste (paste.py)
EXPANDABLE_SEGMENTS = regex.compile(r"(?i)expandable_segments\s{0,5}:\s{0,5}true")

_SPEC_METHOD = regex.compile(r"""(?i)['"]?method['"]?\s*[:=]\s*['"]?([\w.-]+)""")
_SPEC_MODEL = regex.compile(r"""(?i)['"]?model['"]?\s*[:=]\s*['"]?(\[?[\w./-]+\]?)""")
_SPEC_TOKENS = regex.compile(r"""(?i)['"]?num_spec(?:ulative)?_tokens['"]?\s*[:=]\s*(\d+)""")


def _method_from_draft_name(name: str) -> str:
    """The speculative method a draft model's name implies: vllm/config/speculative.py runs a draft
    named like an EAGLE head as one, "ngram" as prompt lookup, anything else as a draft model."""
    name = name.lower()
    if "gemma-4" in name and name.endswith("-assistant"):
        # Gemma 4's assistant checkpoints run on vLLM's Gemma 4 MTP path, not the generic draft-model
        # one (vllm PR #42180: docs/features/spec_decode "Gemma 4 assistant"; vllm/v1/spec_decode/gemma4.py)
        return "mtp"
    if "dflash" in name or "dspark" in name:
        # vllm/config/speculative.py: a draft named like a DFlash (from 0.20) or DSpark (0.25) drafter runs
        # as one (0.34: the method configs' `matches`), e.g. poolside/Laguna-S-2.1-DFlash-INT4
        return "dflash" if "dflash" in name else "dspark"
    return "ngram" if "ngram" in name else "eagle3" if "eagle3" in name else \
        "eagle" if "eagle" in name else "draft_model"


def speculative_draft_model(value: object) -> str | None:
    """The draft model a speculative config names (a dict's "model", or `model=…` inside the engine
    dump's SpeculativeConfig(…) or a dict's text), None when it names none."""
    if isinstance(value, dict):
        m = value.get("model")
        return str(m) if m else None
    mm = _first(_SPEC_MODEL, str(value or "")[:2000])
    return mm.group(1) if mm else None


def read_speculative(value: object) -> tuple[str | None, int | None]:
    """(method, num_speculative_tokens) of a speculative config as users and logs write it: a JSON
    or Python dict (`--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'`), the
    engine dump `SpeculativeConfig(method='mtp', …, num_spec_tokens=3)`, or a V0 draft model name.
    A truncated dict ("{'method': 'mtp', 'num_specul…") still gives its method. A config with a
    draft `model` and no method is vLLM's "draft_model"; `[ngram]` is the n-gram proposer."""
    if isinstance(value, dict):
        text = ", ".join(f"'{k}': {v!r}" for k, v in value.items())
    else:
        text = str(value or "")[:2000]
    if not text.strip() or text.strip().lower() in ("none", "null", "{}"):
        return None, None
    m = _first(_SPEC_METHOD, text)
    method = m.group(1).lower() if m else None
    if method in ("none", "null"):
        method = None
    if method is None:
        mm = _first(_SPEC_MODEL, text)
        if mm:
            method = _method_from_draft_name(mm.group(1))
        elif "{" not in text and "(" not in text and ":" not in text:
            word = text.strip().strip("'\"`")   # a bare --speculative-model value
            method = _method_from_draft_name(word) if word else None
    t = _first(_SPEC_TOKENS, text)
    return method, (int(t.group(1)) if t else None)


def speculative_draft(value: object) -> str | None:
    """The draft model a speculative config loads (its `model`, or a bare V0 --speculative-model value);
    None for a method without one (MTP, n-gram)."""
    text = ", ".join(f"'{k}': {v!r}" for k, v in value.items()) if isinstance(value, dict) else str(value or "")[:2000]
    m = _first(_SPEC_MODEL, text)
    if m:
        name = m.group(1)
    elif text.strip() and not any(c in text for c in "{(:"):
        name = text.strip().strip("'\"`")
    else:
        return None
    return None if not name or name.startswith("[") or name.lower() in ("none", "null") else name


_MM_LIMIT = regex.compile(r"""(?i)['"]?(image|video|audio)['"]?\s*[:=]\s*(\d+)""")


def read_mm_limits(value: object) -> dict[str, int]:
    """--limit-mm-per-prompt as users write it: JSON '{"image": 1, "video": 0}' (0.10+) or the
    older 'image=1,video=0'. Only the modalities it names; vLLM's default for the others is 1
    (0 for none-capable modalities)."""
    if isinstance(value, dict):
        return {str(k).lower(): int(v) for k, v in value.items()
                if str(k).lower() in ("image", "video", "audio") and isinstance(v, int)}
    return {m.group(1).lower(): int(m.group(2)) for m in _safe_finditer(_MM_LIMIT, str(value or "")[:500])}


def _first(pattern, text: str):
    """The first match, under the same timeout as every scan here (None on junk)."""
    return next(_safe_finditer(pattern, text, limit=1), None)


def flag_key(flag: str) -> str | None:
    """Settings key of a flag spelling ('--max-model-len', '-tp', '--tensor_parallel'), or None.
    Unique prefixes of a known flag are accepted, as argparse does (allow_abbrev)."""
    name = flag.lstrip("-").replace("-", "_").lower()
    if not name:
        return None
    if name in FLAG_KEYS:
        return FLAG_KEYS[name]
    if flag.startswith("--") and len(name) >= 4:
        hits = [f for f in _ALL_FLAGS if f.startswith(name)]
        if len(hits) == 1 and hits[0] in FLAG_KEYS:
            return FLAG_KEYS[hits[0]]
    return None


# vLLM's argument parser takes a dict-valued engine argument one key at a time, `--speculative-config.method
# mtp --speculative-config.num_speculative_tokens 2` or `--limit-mm-per-prompt.image=10`, and merges the keys
# into the dict (vllm/utils/argparse_utils.py FlexibleArgumentParser, "--json-arg.key value"). The keys read:
DOTTED_KEYS = frozenset({"speculative_config", "limit_mm_per_prompt"})


def dotted_flag(flag: str) -> tuple[str, str] | None:
    """(settings key, dict key) of a dotted flag ('--speculative-config.method' → ('speculative_config',
    'method')), or None for any other word."""
    base, dot, sub = flag.partition(".")
    key = flag_key(base) if dot and regex.fullmatch(r"[A-Za-z_][\w.]*", sub) else None
    return (key, sub.replace("-", "_")) if key in DOTTED_KEYS else None


class DottedValues:
    """Dotted flags' keys gathered per setting, as one dict each (a JSON text, like a dict-valued flag's),
    at the first dotted flag's place: the value vLLM builds from them."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[dict[str, object], tuple[int, int], str]] = {}

    def add(self, key: str, sub: str, raw: str, span: tuple[int, int], source_text: str) -> None:
        flag = parse_bool(raw)
        value: object = flag if flag is not None and not raw.isdigit() else _literal(raw)
        self._found.setdefault(key, ({}, span, source_text))[0][sub] = value

    def settings(self, source: str) -> list[Setting]:
        out = []
        for key, (d, span, text) in self._found.items():
            value = normalise(key, json.dumps(d))
            if value is not None:
                out.append(Setting(key, value, span, source, text))
        return out


# ---------------------------------------------------------------------------------------------
# argv (the CLI's `kvdoctor estimate -- vllm serve MODEL …`)


def parse_argv(argv: list[str]) -> dict[str, object]:
    """Settings from an argv list as a shell would pass it. Unknown flags are ignored; the
    model is `--model X` or the first positional after `serve`. Raises nothing."""
    out: dict[str, object] = {}
    for s in _parse_tokens([(t, (0, 0)) for t in argv], "cmdline"):
        out.setdefault(s.key, s.value) if s.key == "model" else out.__setitem__(s.key, s.value)
    return out


def is_flag_word(tok: str) -> bool:
    """'--max-model-len', '-tp' — not a negative number given as a value ('-1')."""
    return tok.startswith("-") and len(tok) > 1 and not regex.match(r"-\d", tok)


def flag_takes_value(flag: str) -> bool:
    """Whether a flag word (without '=value') consumes the next word: not for store_true flags,
    boolean settings or their --no- forms."""
    name = flag.split("=", 1)[0].lstrip("-").replace("-", "_").lower()
    negated = name.startswith("no_") and flag_key("--" + name[3:]) in BOOL_KEYS
    return not (name in _STORE_TRUE_FLAGS or flag_key(flag.split("=", 1)[0]) in BOOL_KEYS or negated)


_IMAGE_TOKEN = regex.compile(r"(?:[\w.:-]+/)*vllm/vllm-openai(?::[\w.+-]+)?")


def _parse_tokens(tokens: list[tuple[str, tuple[int, int]]], source: str) -> list[Setting]:
    out: list[Setting] = []
    dotted = DottedValues()
    i = 0
    after_serve = False
    positional_taken = False
    n = len(tokens)
    while i < n:
        tok, span = tokens[i]
        if tok in ("serve", "vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server") \
                or _IMAGE_TOKEN.fullmatch(tok):
            # (the vllm/vllm-openai image's entrypoint is `vllm serve`: its first bare argument is the model)
            after_serve = True
            i += 1
            continue
        if is_flag_word(tok) and dotted_flag(tok.partition("=")[0]):
            flag, eq, val = tok.partition("=")
            key, sub = dotted_flag(flag)
            if not eq and i + 1 < n and not is_flag_word(tokens[i + 1][0]):
                val, i = tokens[i + 1][0], i + 1
            dotted.add(key, sub, val if (eq or val) else "true", span, tok)
            i += 1
            continue
        if is_flag_word(tok):
            flag, eq, val = tok.partition("=")
            name = flag.lstrip("-").replace("-", "_").lower()
            negated = name.startswith("no_") and flag_key("--" + name[3:]) in BOOL_KEYS
            key = flag_key("--" + name[3:]) if negated else flag_key(flag)
            takes_value = flag_takes_value(flag)
            if eq:
                vspan = (span[0] + len(flag) + 1, span[1]) if span != (0, 0) else span
                if key:
                    value = normalise(key, val)
                    if negated and isinstance(value, bool):
                        value = not value
                    if value is not None:
                        out.append(Setting(key, value, vspan, source, tok))
                i += 1
                continue
            if takes_value:
                if i + 1 < n and not is_flag_word(tokens[i + 1][0]):
                    val, vspan = tokens[i + 1]
                    if key:
                        value = normalise(key, val)
                        if value is not None:
                            out.append(Setting(key, value, vspan, source, f"{flag} {val}"))
                    i += 2
                    continue
                i += 1
                continue
            # store_true flag, possibly followed by an explicit True/False (old vLLM took one)
            value = True
            vspan = span
            if i + 1 < n and parse_bool(tokens[i + 1][0]) is not None and not tokens[i + 1][0].isdigit():
                value = bool(parse_bool(tokens[i + 1][0]))
                vspan = (span[0], tokens[i + 1][1][1]) if span != (0, 0) else span
                i += 1
            if negated:
                value = not value
            if key:
                out.append(Setting(key, value, vspan, source, tok))
            i += 1
            continue
        if after_serve and not positional_taken:
            positional_taken = True       # only the first bare word after `serve` can be the model
            # (a path may start at a shell variable: "$BGFS_ROOT/models/MiniMax-M2.7")
            model_like = regex.fullmatch(r"[\w.~/:\\${}-]+", tok) and regex.search(r"[/\\\-_\d]", tok)
            value = normalise("model", tok) if model_like else None
            if value:
                out.append(Setting("model", value, span, source, tok))
        i += 1
    return out + dotted.settings(source)


# ---------------------------------------------------------------------------------------------
# Scanning text

_TOKEN = regex.compile(r"""(?:[^\s"'\\`]|\\[^\n]|"[^"\n]*"|'[^'\n]*')+""")

# Start of a vLLM invocation; the command runs to the end of the (backslash-continued) line.
_INVOCATION = regex.compile(
    r"""(?x)
    (?:\b[Vv][Ll][Ll][Mm]\s+serve\b
     | \b(?:vllm|aphrodite)\.(?:entrypoints|endpoints)\.(?:openai\.)?api_server\b
     | \bvllm/vllm-openai(?::[\w.+-]+)?
     | \baphrodite\s+run\b)""")
# Invocations of other servers whose flags must not be read as vLLM's: paste_engines.FOREIGN_COMMAND.

_LOOSE_FLAG = regex.compile(
    r"""(?x)
    (?<![\w/.-])(--?[A-Za-z][\w-]*(?:\.[A-Za-z_][\w]*)*)   # the flag (a dict key after a dot: DOTTED_KEYS)
    (?:
       \s*=\s*["']?(?P<v>[^\s"',\]\)}`]+)        # --flag=value
     | (?:[ \t]+|["']\s*,\s*["']|["']?[ \t]*\n[ \t]*-[ \t]+["']?)(?P<w>(?!--)[^\s"',\]\)}`]+)   # --flag value / "--flag", "value" / yaml list
    )?""")

# A line that proposes a change rather than saying what was run ("--gpu-memory-utilization 0.85
# fixes it", "try --max-model-len 8192"): its flags and numbers are not the user's settings.
# Words of a line that proposes a change or reports a cure ("try …", "should", "worked", "started
# normally now"), and the verbs of a change itself ("lowering …", "raise …", "I set max_num_seqs = 4").
_PROPOSAL_WORDS = (r"fix(?:es|ed)?|solv(?:es|ed)|suggest(?:s|ed|ion)?|recommend(?:s|ed)?|try(?:ing)?|instead|should|could"
                   r"|would|workaround|resolved?|consider(?:ing)?"
                   # vLLM's V0 capture message: "To run the model in eager mode, set 'enforce_eager=True' or use
                   # '--enforce-eager' in the CLI." (worker/model_runner.py) tells how, it is no setting of the run
                   r"|in[ ]the[ ]CLI"
                   # a report of what worked after the failure ("I set max_num_seqs = 4 … started normally now")
                   r"|worked|works[ ]now|started[ ]normally|starts[ ]normally")
_CHANGE_WORDS = (r"bump(?:ing)?|lower(?:ing)?|rais(?:e|ing)|reduc(?:e|ing)|decreas(?:e|ing)|increas(?:e|ing)"
                 r"|replac(?:e|ing)"  # vLLM's own "Replace gpu_memory_utilization config with `--kv-cache-memory=…`"
                 r"|i[ ]set|i[ ]changed|after[ ]setting")
FIX_LINE = regex.compile(r"(?i)\b(?:" + _PROPOSAL_WORDS + "|" + _CHANGE_WORDS + r")\b")
_PROPOSAL = regex.compile(r"(?i)\b(?:" + _PROPOSAL_WORDS + r")\b")


def line_of(text: str, pos: int) -> str:
    ls = text.rfind("\n", 0, pos) + 1
    le = text.find("\n", pos)
    return text[ls: len(text) if le < 0 else le]


def is_suggestion(text: str, pos: int) -> bool:
    """True when `pos` sits on a line proposing a change, or after a comment marker."""
    ls = text.rfind("\n", 0, pos) + 1
    head = text[ls:pos]
    if "#" in head and not regex.match(r"[ ]*#+[ ]", head):
        return True       # commented out: `# "--enforce-eager",`
    if regex.match(r"[ ]*#[ ]*(?:\"|-)", head):
        return True
    line = line_of(text, pos)
    cut = regex.search(r"[ ]#[ ]", line[len(head):])    # a trailing comment explains, it does not propose
    if cut:
        line = line[: len(head) + cut.start()]
    if FIX_LINE.search(line) is None:
        return False
    return not _introduces_failure(text, pos, line)


# "Later, after reducing `max-model-len` to 2048 and raising `gpu-memory-utilization` to 0.95:" over
# the error it got: the change it tells is the failing run's setting, not a proposal or a cure.
_AFTER_CHANGE = regex.compile(r"(?i)\bafter[ ]+(?:\w+[ ]+){0,2}?(?:" + _CHANGE_WORDS
                              + r"|setting|changing|adding|using|passing)\b")
_FAILURE_AHEAD = regex.compile(r"(?:Error|Exception)\b|out[ ]of[ ]memory|larger[ ]than[ ]the[ ]maximum|No[ ]available[ ]memory")


def _introduces_failure(text: str, pos: int, line: str) -> bool:
    """A line telling what was changed ("after raising … to 0.95") that ends in a colon, proposes and
    cures nothing, and is followed within a few lines by vLLM's failure: the settings of the run
    that failed."""
    if not line.rstrip().endswith(":") or _PROPOSAL.search(line) or not _AFTER_CHANGE.search(line):
        return False
    le = text.find("\n", pos)
    ahead = text[le + 1: le + 400] if le >= 0 else ""
    return _FAILURE_AHEAD.search(ahead) is not None


# `Namespace(…)`: the argparse arguments vLLM's 0.4–0.8 api_server logs ("args: Namespace(…)") and
# its benchmark scripts print, i.e. the engine arguments of the run
_KWARGS_CALL = regex.compile(r"\b(?:LLM|AsyncEngineArgs|EngineArgs|AsyncLLM|Namespace)\s*\(|(?<![\w.])VLLM\s*\(")
# LangChain's VLLM(...) wrapper (langchain_community/llms/vllm.py) builds vllm.LLM from these of its own
# fields and its `vllm_kwargs` dict alone; its other keywords are sampling parameters or dropped (a
# `max_model_len=1000` given to it left vLLM at the config's 131,072: vllm#14102)
_LANGCHAIN_FORWARDED = frozenset({"model", "tensor_parallel_size", "trust_remote_code", "dtype"})
_KWARG = regex.compile(
    r"""(?x)(?<![\w.])([A-Za-z_]\w*)\s*=\s*
    (?P<v>"[^"\n]*"|'[^'\n]*'|[-+]?[\d_]*\.?\d[\d_]*(?:[eE][-+]?\d+)?|True|False|None)(?=\s*[,)\n#])""")

# A keyword argument whose value may also be a name (`max_seq_length = max_seq_length`): a fix replaces
# it rather than repeating the keyword, which Python refuses
_KWARG_ANY = regex.compile(
    r"""(?x)(?<![\w.])([A-Za-z_]\w*)\s*=\s*
    (?P<v>"[^"\n]*"|'[^'\n]*'|[-+]?[\d_]*\.?\d[\d_]*(?:[eE][-+]?\d+)?|[A-Za-z_][\w.]*)(?=\s*(?:[,)\n#]|$))""")

_SPACED_KWARG = regex.compile(r"(?<![\w.])[A-Za-z_]\w*[ ]=[ ]")

_NONDEFAULT = regex.compile(r"non-default args:\s*")
_DICT_PAIR = regex.compile(
    r"""(?x)['"]([A-Za-z_]\w*)['"]\s*:\s*
    (?P<v>"[^"\n]*"|'[^'\n]*'|[-+]?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?|True|False|None|\{|\[)""")
_EQ_PAIR = regex.compile(r"(?<![\w.])([A-Za-z_]\w*)=(?P<v>'[^'\n]*'|\"[^\"\n]*\"|[^\s,·|;]+)")

# (a log cut after the version — "Initializing a V1 LLM engine (v0.18.0)" — still names it)
_CONFIG_DUMP = regex.compile(
    r"Initializing an?\s+(?:(?P<eng>V[01])\s+)?LLM engine\s*(?:\(v?(?P<ver>[\w.+-]+)\)[ \t]*(?:with config:\s*)?"
    r"|with config:\s*)")

# `key=value` / `key: value` for the keys people write in prose, YAML configs, titles, and JSON
# (`"gpu_memory_utilization": 0.47` in a Triton model.json).
_KV_KEYS = (
    "gpu_memory_utilization|mem_util|gpu_mem_util|max_model_length|max_model_len|max_num_seqs|max_num_batched_tokens|"
    "tensor_parallel_size|"
    "pipeline_parallel_size|data_parallel_size|kv_cache_dtype|enforce_eager|block_size|quantization|"
    "cpu_offload_gb|max_seq_len|dtype")
# A training framework's name for what it hands vLLM carries a `vllm_` prefix: TRL's GRPOConfig
# (vllm_gpu_memory_utilization, vllm_tensor_parallel_size, vllm_max_model_length), OpenRLHF's flags
# (--vllm_gpu_memory_utilization, --vllm_tensor_parallel_size)
_KV_PAIR = regex.compile(
    r"(?i)(?:(?<=(?<![\w-])--)(?P<pre>vllm[_-])|(?<![\w-])(?P<pre2>vllm[_-])?)(?:(?P<k>" + _KV_KEYS + r"|" + _KV_KEYS.replace("_", "-") + r")"
    r"[\"']?(?:\s*=\s*|[ \t]*:[ \t]*)|(?P<k2>" + _KV_KEYS.replace("_", "-").replace("|dtype", "") + r"|"
    + _KV_KEYS.replace("|dtype", "") + r")[ ]+(?=[\d.]))"
    r"(?P<v>'[^'\n]*'|\"[^\"\n]*\"|\d{1,3}(?:,\d{3})+(?![\d])|[A-Za-z0-9_.+-]+)")

# A JSON config's model entry (Triton's vLLM backend model.json, an engine-args file): only the quoted
# key form, so prose such as "model: the 7B one" is not read as a model.
# a key that is the right operand of arithmetic in a message ("max_num_batched_tokens / max_num_seqs = 5120",
# V0's multimodal profiling warning) names the result, not that setting
_OPERAND_BEFORE = regex.compile(r"[\w)][ \t]*(?:/{1,2}|\*)[ \t]*\Z")
_JSON_MODEL = regex.compile(r'"model"[ \t]*:[ \t]*"(?P<v>[^"\n]{1,300})"')
_API_BODY = regex.compile(r'"(?:messages|prompt|max_tokens|temperature)"[ \t]*:|\bcurl\b')

# `VAR=v`, `VAR: v` (compose), and the quoted key of Python: `os.environ["VAR"] = "v"`, `env={"VAR": "v"}`
_ENV = regex.compile(
    r"(?<![\w-])(?P<k>VLLM_[A-Z0-9_]+|CUDA_VISIBLE_DEVICES|PYTORCH_CUDA_ALLOC_CONF|CUDA_DEVICE_ORDER)"
    r"(?:[\"']\]?)?\s*[=:]\s*[\"']?(?P<v>[^\s\"'`]*)")


# the paste's budgeted finditer, with this module's per-call timeout and a higher cap on matches
_safe_finditer = functools.partial(finditer, limit=2000, seconds=TIMEOUT)


_INVOCATION_WORDS = ("vllm", "aphrodite")
_cache: dict[int, tuple[str, list]] = {}


# flags after an image name: on its line, or on the next after a backslash continuation
_FLAG_NEXT = regex.compile(r"[ \t]*(?:\\[ \t]*\n[ \t]*)?--")


def _continued_line(text: str, pos: int) -> str:
    """The shell line holding `pos`, with the lines before it that a trailing backslash continues
    (`docker run -dit --gpus all \\` / `    --name llm vllm/vllm-openai:latest \\`)."""
    ls = text.rfind("\n", 0, pos) + 1
    for _ in range(40):
        j = ls - 2                   # the last character of the line before, its trailing blanks skipped
        while j >= 0 and text[j] in " \t":
            j -= 1
        if j < 0 or text[j] != "\\":
            break
        ls = text.rfind("\n", 0, ls - 1) + 1
    le = text.find("\n", pos)
    return text[ls: len(text) if le < 0 else le]


# a container started in the background (`docker run -d`, `-dit`, `--detach`): its output is not what
# follows the command in a paste, but what `docker logs` later shows
_DETACHED = regex.compile(r"\b(?:docker|podman|nerdctl)[ ]+run\b[^\n]*?[ ](?:-[a-zA-Z]*d[a-zA-Z]*|--detach)(?=[ \\]|$)",
                          regex.M)


def detached_container(text: str, start: int) -> bool:
    """Does the invocation at `start` start a container in the background?"""
    return _DETACHED.search(_continued_line(text, start).replace("\\\n", " ")) is not None


def command_spans(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, is_vllm) of each server invocation in `text`: to the end of the line,
    following backslash continuations and indented `--flag` lines. A docker image name counts
    as an invocation only on a `docker run` line or when flags follow it."""
    hit = _cache.get(id(text))
    if hit is not None and hit[0] is text:
        return hit[1]
    low = text.lower()
    spans: list[tuple[int, int, bool]] = []
    for pat, is_vllm, words in ((_INVOCATION, True, _INVOCATION_WORDS),
                                (FOREIGN_COMMAND, False, FOREIGN_WORDS)):
        if not any(w in low for w in words):
            continue
        for m in _safe_finditer(pat, text, limit=100):
            if spans and m.start() < spans[-1][1]:
                spans[-1] = (spans[-1][0], m.start(), spans[-1][2])     # the next command ends this one
            if m.group(0).lower().startswith("vllm/vllm-openai"):
                head = _continued_line(text, m.start())
                if not regex.search(r"\b(?:docker|podman|nerdctl)\b", head) and _FLAG_NEXT.match(text, m.end()) is None:
                    continue
            end = _command_end(text, m.start())
            spans.append((m.start(), end, is_vllm))
    spans.sort()
    _cache.clear()
    _cache[id(text)] = (text, spans)
    return spans


def _command_end(text: str, start: int) -> int:
    limit = min(len(text), start + MAX_COMMAND_CHARS)
    pos = start
    while pos < limit:
        nl = text.find("\n", pos, limit)
        if nl < 0:
            return limit
        line = text[pos:nl].rstrip()
        nxt_end = text.find("\n", nl + 1, limit)
        nxt = text[nl + 1: nxt_end if nxt_end >= 0 else limit]
        if line.endswith("\\") or regex.match(r"[ \t]*--?[A-Za-z]", nxt):
            pos = nl + 1
            continue
        return nl
    return limit


def tokens_with_spans(text: str, start: int, end: int) -> list[tuple[str, tuple[int, int]]]:
    """Shell-like tokens of text[start:end] with their spans; quotes removed from values."""
    out = []
    for m in _safe_finditer(_TOKEN, text, start, end, limit=4000):
        tok = m.group(0)
        if tok == "\\":
            continue
        s, e = m.span()
        glued = regex.match(r"([^-\s]+?)(--[A-Za-z][\w-]+(?:=.*)?)$", tok)
        if glued and not tok.startswith("-") and flag_key(glued.group(2).split("=")[0]):
            # "--port 8111--gpu-memory-utilization 0.95": a lost space, two tokens
            cut = len(glued.group(1))
            out.append((tok[:cut], (s, s + cut)))
            tok, s = tok[cut:], s + cut
        if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "\"'":
            tok, s, e = tok[1:-1], s + 1, e - 1
        elif "=" in tok and tok.endswith(("'", '"')) and tok.count(tok[-1]) == 2:
            q = tok[-1]
            i = tok.index(q)
            tok = tok[:i] + tok[i + 1:-1]
            e -= 1
        out.append((tok, (s, e)))
    return out


_ENV_NAME = r"[A-Z_][A-Z0-9_]*="
_ENV_PREFIX = regex.compile(r"(?:^|[\s\\])((?:" + _ENV_NAME + r"[^\s\\]*[ \t]+(?:\\\n[ \t]*)?)+)$")
_ENV_WORD = regex.compile(_ENV_NAME + r"\S*")


def is_env_word(tok: str) -> bool:
    """`VLLM_PP_LAYER_PARTITION=16,32`: an environment setting written before a command."""
    return _ENV_WORD.fullmatch(tok) is not None


def user_command(text: str, near: int | None = None) -> list[str] | None:
    """The tokens of the `vllm serve` / `python -m vllm.entrypoints…` command the paste ran — the
    one holding position `near` (a setting the diagnosis read), else the last one — with the
    `VAR=value` environment words written before it. None for a docker image, an `LLM(...)` call
    or no command: a fix is then shown as its flags alone."""
    spans = [(s, e) for s, e, is_vllm in command_spans(text) if is_vllm]
    if not spans:
        return None
    start, end = next(((s, e) for s, e in spans if near is not None and s <= near < e), spans[-1])
    tokens = [t for t, _span in tokens_with_spans(text, start, end)]
    if not tokens:
        return None
    if tokens[0].lower() == "vllm" and len(tokens) > 1 and tokens[1].lower() == "serve":
        head: list[str] = []
        rest, positional = tokens[2:], 1          # vllm serve MODEL
    elif tokens[0].startswith("vllm.entrypoints"):
        head = ["python", "-m"]
        rest, positional = tokens[1:], 0
    else:
        return None
    cut = next((i for i, t in enumerate(rest) if _CUT_WORD.search(t)), None)
    if cut is not None:
        # the paste cuts the command ("--pipeline-parallel-s[...]"): what follows is unknown, and a
        # cut word is no flag; a flag whose value was cut goes with it
        lead = tokens[:len(tokens) - len(rest)]
        rest = rest[:cut]
        if rest and is_flag_word(rest[-1]) and "=" not in rest[-1] and flag_takes_value(rest[-1]):
            rest = rest[:-1]
        tokens = lead + rest
    if not _reads_as_a_command(rest, positional):
        return None          # "vllm serve with the --dtype auto option. However, …": prose
    env = []
    try:
        before = _ENV_PREFIX.search(text[max(0, start - 400):start], timeout=_budget(TIMEOUT))
    except TimeoutError:
        before = None
    if before:
        env = [w for w in before.group(1).split() if "=" in w]
    return env + head + tokens


def command_cut(text: str) -> tuple[bool, str | None]:
    """Whether a `vllm serve` command in the paste is cut short ("--pipeline-parallel-s[...]"), and the
    setting whose flag or value the cut took (argparse's prefix reading: "pipeline_parallel_size"),
    if any. A cut command's fixes show the flags it keeps, and the reply says the rest is the user's
    to add; a setting it cut may be worked back from vLLM's figures (anchoring.pp_from_weights)."""
    for s, e, is_vllm in command_spans(text):
        if not is_vllm:
            continue
        words = [t for t, _span in tokens_with_spans(text, s, e)]
        for i, word in enumerate(words):
            if _CUT_WORD.search(word):
                # what stands before the cut: the flag's name ("--pipeline-parallel-s[...]"), else the flag
                # before a cut value ("--pipeline-parallel-size …")
                head = _CUT_WORD.split(word)[0]
                name = head if head.startswith("-") else (words[i - 1] if i and not head else "")
                return True, flag_key(name) if is_flag_word(name) else None
    return False, None


# a word the paste cut: "[...]", an ellipsis, or three dots ending it ("--pipeline-parallel-s...")
_CUT_WORD = regex.compile(r"\[\.\.\.|…|\.\.\.$")


def _reads_as_a_command(tokens: list[str], positional: int) -> bool:
    """Every word is a flag, a flag's value or one of the `positional` arguments (the model),
    and the model looks like a repo id or a path."""
    i, seen = 0, 0
    while i < len(tokens):
        tok = tokens[i]
        if is_flag_word(tok):
            takes_value = "=" not in tok and flag_takes_value(tok) and i + 1 < len(tokens) \
                and not is_flag_word(tokens[i + 1])
            i += 2 if takes_value else 1
            continue
        seen += 1
        try:
            # a path may start at a shell variable: "$BGFS_ROOT/models/MiniMax-M2.7", "${MODELS}/…"
            model_like = regex.fullmatch(r"[\w.~:@+${}-]*[/\\.:][\w./\\~:@+${}-]*|[\w.-]+/[\w.-]+", tok,
                                         timeout=_budget(TIMEOUT))
        except TimeoutError:
            model_like = None
        if seen > positional or not model_like:
            return False
        i += 1
    return seen == positional or any(t.split("=", 1)[0] == "--model" for t in tokens)


def _within(pos: int, spans: list[tuple[int, int, bool]]) -> tuple[int, int, bool] | None:
    for s, e, v in spans:
        if s <= pos < e:
            return (s, e, v)
    return None


def scan_commands(text: str) -> list[Setting]:
    """Settings on vLLM command lines (`vllm serve …`, `python -m vllm.entrypoints…`, docker
    image args) and loose `--flags` anywhere else (code blocks of bare args, YAML/JSON arg lists,
    prose). Flags of other servers' command lines (SGLang, llama.cpp …) are skipped."""
    out: list[Setting] = []
    dotted = DottedValues()
    spans = command_spans(text)
    for s, e, is_vllm in spans:
        if is_vllm:
            out.extend(_parse_tokens(tokens_with_spans(text, s, e), "cmdline"))
    for m in _safe_finditer(_LOOSE_FLAG, text, limit=3000):
        where = _within(m.start(), spans)
        if where is not None:
            continue       # read with its command line, or belongs to another server
        if is_suggestion(text, m.start()):
            continue
        flag = m.group(1)
        if "." in flag:
            grp = "v" if m.group("v") is not None else ("w" if m.group("w") is not None else None)
            if dotted_flag(flag) and grp is not None:
                dotted.add(*dotted_flag(flag), m.group(grp), m.span(1), m.group(0))
            continue
        name = flag.lstrip("-").replace("-", "_").lower()
        negated = name.startswith("no_") and flag_key("--" + name[3:]) in BOOL_KEYS
        key = flag_key("--" + name[3:]) if negated else flag_key(flag)
        if key is None or (flag.startswith("-") and not flag.startswith("--") and name not in FLAG_KEYS):
            continue
        if not flag.startswith("--") and name not in ("tp", "pp", "dp", "q", "gmu"):
            continue
        brace = _dict_value_at(text, m.end(1))
        if brace is not None:
            # an unquoted JSON value (`--speculative-config {"method":"mtp",…}` in a compose args list):
            # the whole balanced dict, not its first character
            raw = text[brace[0]:brace[1]]
            # inside a double-quoted item of a JSON / compose args list the dict's quotes are escaped
            value = normalise(key, raw.replace('\\"', '"') if '\\"' in raw else raw)
            if value is not None:
                out.append(Setting(key, value, brace, "flag", text[m.start():brace[1]]))
            continue
        grp = "v" if m.group("v") is not None else ("w" if m.group("w") is not None else None)
        if key in BOOL_KEYS:
            value: object = True
            span = m.span(1)
            if grp is not None and parse_bool(m.group(grp)) is not None:
                value = bool(parse_bool(m.group(grp)))
                span = m.span(grp)
            if negated:
                value = not value
            out.append(Setting(key, value, span, "flag", m.group(0)))
            continue
        if grp is None:
            continue
        if key == "kv_cache_memory_bytes" and _VLLM_KV_SUGGESTION_TAIL.match(text, m.end(grp)):
            continue       # vLLM's own suggestion quoted ("`--kv-cache-memory=7911991092` (7.37 GiB)")
        value = normalise(key, m.group(grp))
        if value is not None:
            out.append(Setting(key, value, m.span(grp), "flag", m.group(0)))
    return out + dotted.settings("flag")


# vLLM prints the --kv-cache-memory it suggests with its GiB figure in brackets (v1/worker/gpu_worker.py
# "Replace gpu_memory_utilization config with `--kv-cache-memory=N` (X GiB) to fit into requested
# memory"); a user who quotes that line has not set the flag
_VLLM_KV_SUGGESTION_TAIL = regex.compile(r"[`'\" ]{0,4}[(（][ ]?\d+(?:\.\d+)?[ ]?GiB[ ]?[)）]")


def _dict_value_at(text: str, pos: int) -> tuple[int, int] | None:
    """Span of a `{…}` value right after a flag (past `=`, spaces and one opening quote), or None."""
    # `--flag {…}`, `--flag='{…}'`, and an args list's next item (`"--flag", "{…}"`, or a YAML
    # list's next line `- '{…}'`, the form _LOOSE_FLAG reads a plain value in)
    m = regex.match(r"""[ \t]*(?:=|['"]?[ \t]*,|['"]?[ \t]*\n[ \t]*-[ \t]+)?[ \t]*['"]?(?=\{)""", text[pos:pos + 60])
    if not m:
        return None
    start = pos + m.end()
    end = _balanced_end(text, start + 1, "{", "}")
    return (start, end) if end > start + 1 and text[end - 1] == "}" else None


def _depths(text: str, start: int, stop: int):
    """(index, bracket depth after that character) over text[start:stop], ignoring quoted brackets."""
    depth, quote = 0, ""
    for i in range(start, stop):
        c = text[i]
        if quote:
            if c == quote or c == "\n":
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        yield i, depth


def _balanced_end(text: str, start: int, opener: str, closer: str) -> int:
    """Index just past the bracket closing the one opened before `start` (bounded, string-aware)."""
    limit = min(len(text), start + MAX_COMMAND_CHARS)
    for i, depth in _depths(text, start, limit):
        if depth == -1:
            return i + 1
    return limit


def _depth_ok(text: str, start: int, pos: int) -> bool:
    """True when `pos` sits at bracket depth 0 relative to `start` (kwargs of the call itself,
    not of a nested dict such as compilation_config={...})."""
    final = deque(_depths(text, start, pos), maxlen=1)
    return not final or final[0][1] == 0


# `LLM(...)`'s first parameter is `model`: a string literal or a name given first, or `model=` a name
# a line that sets a name to a string literal (`model_name = "gpt2"  # comment`, `MODEL: str = '…'`)
_STR_ASSIGN = regex.compile(r"""(?m)^[ \t]*(?P<name>[A-Za-z_]\w{0,60})[ \t]*(?::[ \t]*str[ \t]*)?=[ \t]*"""
                            r"""(?P<v>"[^"\n]{1,300}"|'[^'\n]{1,300}')[ \t]*(?:#.*)?$""")
_FIRST_ARG = regex.compile(r"""\s*(?:model\s*=\s*)?(?:(?P<lit>"[^"\n]{1,300}"|'[^'\n]{1,300}')|(?P<name>[A-Za-z_]\w{0,60}))\s*[,)]""")


def _model_argument(text: str, call, start: int) -> Setting | None:
    """The model an `LLM(...)` call names first: a literal (`LLM("gpt2")`, which no keyword marks), or a
    variable the notebook set to one above the call (`model_name = "gpt2"` … `LLM(model_name)`), whose
    last assignment before the call is the one it runs."""
    if not call.group(0).startswith(("LLM", "VLLM")):
        return None
    m = _FIRST_ARG.match(text, start, timeout=_budget(TIMEOUT))
    if m is None:
        return None
    if m.group("lit"):
        return Setting("model", m.group("lit")[1:-1], _value_span(m, "lit"), "kwargs", m.group(0).strip())
    if m.group("name") in ("True", "False", "None"):
        return None
    last = None
    for a in _safe_finditer(_STR_ASSIGN, text, 0, call.start(), limit=500):
        if a.group("name") == m.group("name"):
            last = a
    if last is None:
        return None
    return Setting("model", last.group("v")[1:-1], _value_span(last, "v"), "kwargs", last.group(0).strip())


def _langchain_calls(text: str) -> list[tuple[int, int]]:
    """The spans of LangChain `VLLM(...)` calls' own keywords: each call's arguments less its `vllm_kwargs`
    dict, which goes to vLLM whole."""
    spans = []
    for c in _safe_finditer(_KWARGS_CALL, text, limit=100):
        if not c.group(0).startswith("VLLM"):
            continue
        start, end = c.end(), _balanced_end(text, c.end(), "(", ")")
        kw = _VLLM_KWARGS.search(text, start, end)
        brace = _dict_value_at(text, kw.end(1)) if kw else None
        spans += [(start, brace[0]), (brace[1], end)] if brace else [(start, end)]
    return spans


_VLLM_KWARGS = regex.compile(r"(?<![\w.])(vllm_kwargs)\s*=\s*(?=\{)")


def scan_kwargs(text: str) -> list[Setting]:
    """`LLM(model="…", max_model_len=30_000, …)` and EngineArgs(...) keyword arguments, and the model an
    `LLM(...)` call gives first or through a variable."""
    out: list[Setting] = []
    for call in _safe_finditer(_KWARGS_CALL, text, limit=100):
        start = call.end()
        end = _balanced_end(text, start, "(", ")")
        try:
            first = _model_argument(text, call, start)
        except TimeoutError:
            first = None
        if first is not None:
            out.append(first)
        langchain = call.group(0).startswith("VLLM")
        for m in _safe_finditer(_KWARG, text, start, end, limit=200):
            if not _depth_ok(text, start, m.start()):
                continue
            key = FLAG_KEYS.get(m.group(1).lower())
            if key is None or (langchain and key not in _LANGCHAIN_FORWARDED):
                continue
            value = normalise(key, _literal(m.group("v")))
            if value is not None:
                out.append(Setting(key, value, _value_span(m, "v"), "kwargs", m.group(0)))
        for m in _safe_finditer(_DICT_KWARG, text, start, end, limit=20):
            # `speculative_config={"method": "mtp", …}`: the whole dict, as a flag's dict value is read
            brace = _dict_value_at(text, m.end(1)) if _depth_ok(text, start, m.start()) else None
            value = normalise(m.group(1), text[brace[0]:brace[1]]) if brace else None
            if value is not None:
                out.append(Setting(m.group(1), value, brace, "kwargs", text[m.start():brace[1]]))
    return out


# A dict-valued keyword argument of LLM(...) / EngineArgs(...) that kvdoctor reads (DOTTED_KEYS)
_DICT_KWARG = regex.compile(r"(?<![\w.])(" + "|".join(sorted(DOTTED_KEYS)) + r")\s*=\s*(?=\{)")


# User code's `LLM(model=…, …)` — the offline LLM class (UsageContext.LLM_CLASS), not a word "LLM (…)"
LLM_CLASS_CALL = regex.compile(r"(?<![\w.])LLM\s*\((?=\s*(?:model\s*=|[\"']))")


def llm_call_with(text: str, flags: str) -> str | None:
    """User code's `LLM(...)` call with a fix applied — its keyword arguments kept as written, each
    one the fix sets replaced, the others appended — so an offline-class user gets the fix in the form
    they run it (None when the paste has no such call or the fix needs an environment variable)."""
    fix = _flag_values(flags)
    if fix is None:
        return None
    return _call_with(text, LLM_CLASS_CALL, fix, lambda name: FLAG_KEYS.get(name.lower()))


def _flag_values(flags: str) -> dict[str, str] | None:
    """{settings key: Python literal} of a fix's flags; None when one is no vLLM flag or an
    environment variable (no keyword argument can say it)."""
    try:
        words = shlex.split(flags)
    except ValueError:
        return None
    if any(is_env_word(w) for w in words):
        return None
    fix: dict[str, str] = {}
    i = 0
    while i < len(words):
        name, eq, value = words[i].partition("=")
        key = flag_key(name) if is_flag_word(name) else None
        if key is None:
            return None
        if not eq and flag_takes_value(name) and i + 1 < len(words) and not is_flag_word(words[i + 1]):
            value, i = words[i + 1], i + 1
        elif not eq:
            value = "False" if name.lstrip("-").startswith("no-") else "True"
        fix[key] = value if regex.fullmatch(r"-?\d+(?:\.\d+)?|True|False", value) else repr(value)
        i += 1
    return fix


def _call_with(text: str, call_pattern, fix: dict[str, str], key_of) -> str | None:
    """The first call `call_pattern` finds with `fix` ({key: literal}) applied to its keyword
    arguments: one whose name `key_of` maps to a fixed key gets the value, the rest are appended."""
    call = _first(call_pattern, text)
    if call is None:
        return None
    start, end = call.end(), _balanced_end(text, call.end(), "(", ")")
    if end > len(text) or text[end - 1] != ")":
        return None
    fix = dict(fix)
    body = text[start:end - 1]
    for m in reversed(list(_safe_finditer(_KWARG_ANY, body, limit=200))):
        key = key_of(m.group(1))
        if key in fix and _depth_ok(body, 0, m.start()):
            body = body[:m.start("v")] + fix.pop(key) + body[m.end("v"):]
    if fix:
        eq = " = " if _first(_SPACED_KWARG, body) else "="     # the call's own spacing
        added = [f"{k}{eq}{v}" for k, v in fix.items()]
        stripped = body.rstrip()
        if "\n" in stripped:
            indent = regex.search(r"\n([ \t]*)\S[^\n]*$", stripped)
            pad = indent.group(1) if indent else "    "
            head, _, last = stripped.rpartition("\n")
            code, hash_, comment = last.partition(" #") if "'" not in last and '"' not in last else (last, "", "")
            # the comma goes after the last argument, not into its trailing comment
            last = code.rstrip().rstrip(",") + "," + (f" #{comment}" if hash_ else "")
            body = (head + "\n" if head else "") + last + "\n" + ",\n".join(pad + a for a in added) + ",\n"
        else:
            body = stripped.rstrip(",") + (", " if stripped else "") + ", ".join(added)
    return text[call.start():start] + body + ")"


# Unsloth's `FastLanguageModel.from_pretrained(..., fast_inference = True)` starts vLLM itself
# (unsloth_zoo's vllm_utils.load_vllm): its own keyword arguments stand for vLLM's settings —
# max_seq_length is max_model_len, float8_kv_cache = True is kv_cache_dtype fp8, and its
# gpu_memory_utilization is scaled by the memory free at that moment before vLLM gets it ("Unsloth:
# vLLM loading … with actual GPU utilization = 79.08%"). It runs one GPU and sets max_num_seqs,
# max_num_batched_tokens and swap_space itself, so no argument of it says those.
UNSLOTH_CALL = regex.compile(r"(?<![\w.])Fast(?:Language|Vision)?Model\.from_pretrained\s*\(")
UNSLOTH_DEFAULT_LORA_RANK = 64        # FastLanguageModel.from_pretrained's max_lora_rank (unsloth/models/loader.py)
# unsloth_zoo vllm_utils.load_vllm's own batch for a text model, by the memory it leaves the KV cache
# ("Unsloth: vLLM's KV Cache can use up to X GB"), as its releases wrote it:
# - 83f5318c (2025-02-06) … 9308f9ea (2025-11-29): max_num_seqs 128 … 400 by that memory; the batch was
#   max_seq_length until 2afbcc19 (2025-09-16), then vLLM's 2048 (the printed "Chunked prefill tokens" is not it);
# - from 9308f9ea: (max_num_batched_tokens, max_num_seqs) from (2048, 8) to (8192, 256).
# (226 for 40–48 GB is unsloth_zoo's own figure, as its code has it.) Both × 1.05 with float8_kv_cache, × conservativeness, at least 1. Eras by the banner's Unsloth release
# (released beside unsloth_zoo); a month that straddles a change is not guessed.
_UNSLOTH_SEQS_A = ((2, 128), (4, 160), (8, 192), (12, 224), (16, 256), (24, 288), (40, 320), (48, 226), (80, 368))
_UNSLOTH_BATCH_B = ((2, 2048, 8), (4, 2048, 16), (8, 4096, 32), (12, 4096, 48), (16, 6144, 64), (24, 6144, 80),
                    (40, 8192, 96), (48, 8192, 112), (80, 8192, 128))


def unsloth_text_batch(version: tuple[int, int, int] | None, kv_gb: float, fp8_kv: bool = False,
                       conservativeness: float = 1.0) -> tuple[int | None, int] | None:
    """(max_num_batched_tokens — None for max_seq_length —, max_num_seqs) Unsloth gave vLLM for a text
    model, or None when the release is unknown or straddles a change (above)."""
    if version is None or version < (2025, 2, 0) or version[:2] in ((2025, 9), (2025, 11)):
        return None
    if version < (2025, 11, 0):
        seqs = next((n for cap, n in _UNSLOTH_SEQS_A if kv_gb <= cap), 400)
        batch = None if version < (2025, 9, 0) else 2048
    else:
        batch, seqs = next(((b, n) for cap, b, n in _UNSLOTH_BATCH_B if kv_gb <= cap), (8192, 256))
    if fp8_kv:
        seqs = int(seqs * 1.05)
    return batch, max(int(seqs * conservativeness), 1)


# unsloth_zoo vllm_utils.load_vllm's engine arguments for a vision model (is_vision_model)
UNSLOTH_VISION_MM_LIMITS = {"image": 1, "video": 0}
UNSLOTH_VISION_MIN_BATCH = 8192      # max_num_batched_tokens = max(8192, max_seq_length); max_num_seqs = 1
UNSLOTH_ARGS = {"max_model_len": "max_seq_length"}      # beside float8_kv_cache and the scaled utilization


# `lora_rank = 32` on a line of its own: a name the user's call passes instead of a number
_INT_ASSIGNMENT = regex.compile(r"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(\d{1,4})\b")


def unsloth_caller(text: str) -> str | None:
    """The class whose from_pretrained the user called (FastLanguageModel, FastVisionModel, FastModel)."""
    call = _first(UNSLOTH_CALL, text)
    return call.group(0).split(".")[0] if call else None


def unsloth_call_kwargs(text: str) -> dict[str, str] | None:
    """The top-level keyword arguments of the user's first from_pretrained call as written ({name: value};
    a name the paste assigns a number before the call is replaced by that number), None without one."""
    call = _first(UNSLOTH_CALL, text)
    if call is None:
        return None
    start, end = call.end(), _balanced_end(text, call.end(), "(", ")")
    names = {m.group(1): m.group(2) for m in _safe_finditer(_INT_ASSIGNMENT, text, 0, call.start(), limit=200)}
    return {m.group(1): names.get(m.group("v"), m.group("v"))
            for m in _safe_finditer(_KWARG_ANY, text, start, end, limit=100) if _depth_ok(text, start, m.start())}


def unsloth_given_utilization(kwargs: dict[str, str]) -> float | None:
    """The gpu_memory_utilization the user's from_pretrained call passes Unsloth (None if unstated)."""
    value = _literal(kwargs.get("gpu_memory_utilization", "None"))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1 else None


def unsloth_lora_rank(kwargs: dict[str, str]) -> int | None:
    """The max_lora_rank the user's from_pretrained call gives Unsloth — a number, or a name the paste
    assigns one (`lora_rank = 32` … `max_lora_rank = lora_rank`); None where it says none."""
    value = kwargs.get("max_lora_rank", "")
    return int(value) if value.isdigit() and 0 < int(value) <= 4096 else None


def unsloth_call_with(text: str, flags: str, scale: float | None, model_id: str | None = None) -> str | None:
    """The user's `FastLanguageModel.from_pretrained(...)` with a fix in Unsloth's own arguments (a bare
    call naming `model_id` where the paste shows none), or None when the fix has none there (tensor
    parallelism, a quantization method, max_num_seqs …). `scale`: Unsloth's gpu_memory_utilization per
    unit of the one vLLM got (the user's value over the printed actual one); without it a utilization
    fix has no argument."""
    fix = _flag_values(flags)
    if not fix:
        return None
    if _first(UNSLOTH_CALL, text) is None:
        if not model_id:
            return None
        text = f'FastLanguageModel.from_pretrained(model_name = "{model_id}", fast_inference = True)'

    out: dict[str, str] = {}
    for key, value in fix.items():
        if key == "kv_cache_dtype" and value.strip("'\"").lower() == "fp8":
            out["float8_kv_cache"] = "True"
        elif key == "gpu_memory_utilization" and scale:
            out["gpu_memory_utilization"] = f"{min(0.99, float(value) * scale):.2f}"
        elif key in UNSLOTH_ARGS:
            out[UNSLOTH_ARGS[key]] = value
        else:
            return None
    return _call_with(text, UNSLOTH_CALL, out, lambda name: name)


def _literal(raw: str) -> object:
    if raw in ("True", "False"):
        return raw == "True"
    if raw == "None":
        return None
    if raw[:1] in "\"'":
        return raw[1:-1]
    try:
        return int(raw.replace("_", ""))
    except ValueError:
        try:
            return float(raw.replace("_", ""))
        except ValueError:
            return raw


def _value_span(m, group: str) -> tuple[int, int]:
    s, e = m.span(group)
    raw = m.group(group)
    if len(raw) >= 2 and raw[0] in "\"'" and raw[-1] == raw[0]:
        return (s + 1, e - 1)
    return (s, e)


# Engine arguments whose value is a dict; kept as text, read by these (a truthy result = usable).
_NESTED_READERS = {
    "speculative_config": lambda t: read_speculative(t)[0],
    "limit_mm_per_prompt": lambda t: read_mm_limits(t),
}


def scan_nondefault_args(text: str) -> tuple[list[Setting], list[dict[str, object]]]:
    """The `non-default args: {...}` log line (vllm/entrypoints/utils.py, 0.9+), also in its
    `key=value · key=value` rendering. Returns the settings and each raw dict (for `extra`)."""
    out: list[Setting] = []
    dicts: list[dict[str, object]] = []
    for m in _safe_finditer(_NONDEFAULT, text, limit=50):
        start = m.end()
        raw: dict[str, object] = {}
        if text.startswith("{", start):
            end = _balanced_end(text, start + 1, "{", "}")
            nl = text.find("\n", start)
            if 0 <= nl < end and not text[start:end].rstrip().endswith("}"):
                end = nl
            for p in _safe_finditer(_DICT_PAIR, text, start + 1, end, limit=300):
                if not _depth_ok(text, start + 1, p.start()):
                    continue
                name = p.group(1)
                val = p.group("v")
                if val in ("{", "["):
                    raw[name] = "…"
                    key = FLAG_KEYS.get(name.lower())
                    if key in _NESTED_READERS and val == "{":
                        # a nested dict, often cut off by the log line: what it still says
                        v0 = p.start("v")
                        close = min(_balanced_end(text, v0 + 1, "{", "}"), end)
                        raw[name] = text[v0:close]
                        if _NESTED_READERS[key](raw[name]):
                            out.append(Setting(key, raw[name], (v0, close), "nondefault_args", text[p.start():close]))
                    continue
                lit = _literal(val)
                raw[name] = lit
                key = FLAG_KEYS.get(name.lower()) or ("model" if name == "model_tag" else None)
                if key:
                    value = normalise(key, lit)
                    if value is not None:
                        out.append(Setting(key, value, _value_span(p, "v"), "nondefault_args", p.group(0)))
        else:
            nl = text.find("\n", start)
            end = nl if nl >= 0 else min(len(text), start + 2000)
            for p in _safe_finditer(_EQ_PAIR, text, start, end, limit=300):
                name, val = p.group(1), p.group("v")
                raw[name] = val.strip("'\"")
                key = FLAG_KEYS.get(name.lower())
                if key:
                    value = normalise(key, val)
                    if value is not None:
                        out.append(Setting(key, value, _value_span(p, "v"), "nondefault_args", p.group(0)))
        dicts.append(raw)
    return out, dicts


_DUMP_KEYS = {
    "model": "model", "dtype": "dtype", "max_seq_len": "max_model_len",
    "tensor_parallel_size": "tensor_parallel_size", "pipeline_parallel_size": "pipeline_parallel_size",
    "quantization": "quantization", "enforce_eager": "enforce_eager", "kv_cache_dtype": "kv_cache_dtype",
    "chunked_prefill_enabled": "enable_chunked_prefill", "enable_prefix_caching": "enable_prefix_caching",
    "data_parallel_size": "data_parallel_size", "speculative_config": "speculative_config",
    "served_model_name": "served_model_name", "decode_context_parallel_size": "decode_context_parallel_size",
    "task": "runner",       # V0 0.6–0.9 print task=embed / task=generate
}


_SPEC_CALL = regex.compile(r"[A-Za-z_]\w*\(")     # the dump's value is a call: SpeculativeConfig(…)
_DUMP_KEY = regex.compile(r"\b(?:tokenizer_mode|skip_tokenizer_init|load_format|chunked_prefill_enabled|enforce_eager|kv_cache_dtype)=")


# lines that pass arguments to vLLM rather than print what it resolved: the api_server's `args:
# Namespace(…)`, a benchmark's Namespace, user code's `LLM(…)` (read by scan_kwargs)
_ARGUMENT_LINE = ("Namespace(", "LLM(", "args:", "args =")


def _config_dumps(text: str) -> tuple[list[tuple[str | None, str | None, tuple[int, int]]], list[tuple[int, int]]]:
    """(engine, version, version span) of each config-dump header and the spans of every dump's
    `key=value` run: after a header, or a headerless line holding several `name=value, ` pairs of the
    dump's own keys (its header cut off) that is not an argument line."""
    heads, spans = [], []
    for m in _safe_finditer(_CONFIG_DUMP, text, limit=50):
        heads.append((m.group("eng"), m.group("ver"), m.span("ver") if m.group("ver") else m.span()))
        nl = text.find("\n", m.end())
        spans.append((m.end(), nl if nl >= 0 else len(text)))
    for m in _safe_finditer(_DUMP_KEY, text, limit=50):
        ls = text.rfind("\n", 0, m.start()) + 1
        le = text.find("\n", m.end())
        le = len(text) if le < 0 else le
        if not any(s <= m.start() < e for s, e in spans) and text.count("=", ls, le) >= 3 \
                and not is_argument_line(text[ls:le]):
            spans.append((ls, le))
    return heads, spans


def is_argument_line(line: str) -> bool:
    """A line that passes arguments to vLLM (what it was given, not what it resolved)."""
    return any(w in line for w in _ARGUMENT_LINE)


def scan_config_dump(text: str) -> tuple[list[Setting], list[tuple[str | None, str | None, tuple[int, int]]]]:
    """The engine's own config line (`Initializing a V0 LLM engine (v0.7.1) with config: …`,
    vllm/engine/llm_engine.py and vllm/v1/engine/core.py), whose values are what vLLM used.
    Also matches `key=value` runs of such a dump when the header was cut off (`[...] dtype=…`).
    Returns the settings and (engine, version, version span) of each header."""
    out: list[Setting] = []
    heads, seen_ranges = _config_dumps(text)
    for s, e in seen_ranges:
        inside = -1     # the end of a SpeculativeConfig(…) call: its `model=` is the draft's, not the engine's
        for p in _safe_finditer(_EQ_PAIR, text, s, e, limit=400):
            key = _DUMP_KEYS.get(p.group(1))
            if not key or p.start() < inside:
                continue
            if key == "speculative_config":
                # SpeculativeConfig(method='mtp', model=…, num_spec_tokens=3): the whole call
                v0 = p.start("v")
                close = _balanced_end(text, text.find("(", v0, e) + 1, "(", ")") if "(" in text[v0:e] else p.end("v")
                if _SPEC_CALL.match(text, v0, min(e, v0 + 80)):
                    inside = min(close, e)      # skip the pairs inside SpeculativeConfig(…) only
                raw = text[v0:min(close, e)]
                if read_speculative(raw)[0]:
                    out.append(Setting(key, raw, (v0, min(close, e)), "config_dump", raw))
                continue
            value = normalise(key, p.group("v").rstrip(","))
            if value is not None:
                out.append(Setting(key, value, _value_span(p, "v"), "config_dump", p.group(0)))
    return out, heads


# A dict-valued setting (`--speculative-config '{…}'`, `"hf_overrides": {…}`, `compilation_config=`):
# the keys inside it are the draft's or the compiler's, not the engine's.
_DICT_SETTING_END = regex.compile(r"(?i)(?:config|overrides)[\"']?[ \t]*[=:]?[ \t]*[\"']?[ \t]*\Z")


def _in_dict_setting(text: str, pos: int) -> bool:
    """Is `pos` inside the `{…}` value of a dict-valued setting (the innermost open brace before it,
    looked for in the 2,000 characters before)?"""
    depth = 0
    for i in range(pos - 1, max(-1, pos - 2000), -1):
        c = text[i]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth == 0:
                return _DICT_SETTING_END.search(text[max(0, i - 80):i]) is not None
            depth -= 1
    return False


def scan_key_values(text: str) -> list[Setting]:
    """`gpu_memory_utilization=0.96`, `max_model_len: 8192` written in prose, titles or YAML."""
    out: list[Setting] = []
    wrapped = _langchain_calls(text) if "VLLM" in text else []
    for m in _safe_finditer(_KV_PAIR, text, limit=500):
        k = m.group("k") or m.group("k2")
        name = k.replace("-", "_").lower()
        key = FLAG_KEYS.get(name) or ("gpu_memory_utilization" if "mem_util" in name else None)
        if key is None or is_suggestion(text, m.start()) or _in_dict_setting(text, m.start()):
            continue
        if key not in _LANGCHAIN_FORWARDED and any(a <= m.start() < b for a, b in wrapped):
            continue          # a keyword LangChain's VLLM(...) keeps to itself (scan_kwargs)
        if not (k.islower() or k.isupper()):
            continue          # Mixed-Case words are prose, not keys
        # `--max-model-len …` is a flag (read by scan_commands), not a key=value pair; a framework's
        # `--vllm_gpu_memory_utilization 0.5` is no command of vLLM's, so it is read here
        if text[max(0, m.start() - 2): m.start()] == "--" and not (m.group("pre") or m.group("pre2")):
            continue
        if _OPERAND_BEFORE.search(text[max(0, m.start() - 40): m.start()]):
            continue
        value = normalise(key, m.group("v").rstrip(".,;"))
        if value is not None:
            out.append(Setting(key, value, _value_span(m, "v"), "kv", m.group(0)))
    for m in _safe_finditer(_JSON_MODEL, text, limit=20):
        if is_suggestion(text, m.start()) or _in_dict_setting(text, m.start()):
            continue
        # an OpenAI-style request body names the served alias, not the checkpoint
        if _API_BODY.search(text[max(0, m.start() - 200): m.end() + 300]):
            continue
        raw = m.group("v").strip()
        value = normalise("model", raw) if raw and not any(c in raw for c in "$<{") else None
        if value:
            out.append(Setting("model", value, m.span("v"), "kv", m.group(0)))
    return out


def scan_env(text: str) -> list[Setting]:
    """Environment variables that change memory behaviour (VLLM_USE_V1, CUDA_VISIBLE_DEVICES …)."""
    out = []
    for m in _safe_finditer(_ENV, text, limit=200):
        out.append(Setting(m.group("k"), m.group("v"), m.span("v"), "env", m.group(0)))
    return out


# V0's engine args warn so only when chunked prefill stays off for a context over 32K
# (vllm/engine/arg_utils.py: `if not self.enable_chunked_prefill and use_long_context`)
_LONG_CONTEXT_NO_CHUNKING = regex.compile(
    r"The[ ]model[ ]has[ ]a[ ]long[ ]context[ ]length[ ]\(\d+\)\.[ \n]+This[ ]may[ ]cause[ ]OOM[ ]errors[ ]during[ ]"
    r"the[ ]initial[ ]memory[ ]profiling[ ]phase")


def scan_long_context_warning(text: str) -> list[Setting]:
    """Chunked prefill off, as V0's long-context warning says: its profile run then covers the
    whole context (max_num_batched_tokens = max_model_len)."""
    return [Setting("enable_chunked_prefill", False, m.span(), "config_dump", m.group(0))
            for m in _safe_finditer(_LONG_CONTEXT_NO_CHUNKING, text, limit=5)]


# A KV-cache dtype told in prose: "`fp8_e4m3` KV at default", "FP8 KV cache", "KV cache: fp8" (talos
# docs on a Qwen3.8-27B run), "KV `fp8_e5m2`" (a 2× V100 run sheet). Not on a line proposing a change
# ("try an fp8 KV cache"); a flag wins.
# The words: vLLM's own KV cache dtypes (vllm.KV_CACHE_DTYPE_FROM, longest first) and a bare "int8".
@functools.lru_cache(maxsize=1)
def _kv_dtype_prose() -> regex.Pattern:
    # (vllm imports this module, so its table is read when the pattern is first used)
    from estimator.vllm import KV_CACHE_DTYPE_FROM

    words = "|".join(sorted((*(k for k in KV_CACHE_DTYPE_FROM if k != "auto"), "int8"), key=len, reverse=True))
    return regex.compile(
        r"(?i)(?<![\w-])`?(?P<v>" + words + r")`?[ ]+KV(?:[ ]cache)?\b"
        r"|\bKV[ ]cache(?:[ ]dtype)?[ ]*(?::|=|[ ]in|[ ]is)[ ]*`?(?P<w>" + words + r")\b"
        # the value right after the words: "KV `fp8_e5m2`, context 131,072", "KV cache fp8 on both cards"
        # (the paste reader has turned inline-code backticks into spaces), not one side of a comparison
        # ("KV fp8 vs bf16")
        r"|\bKV(?:[ ]cache)?(?:[ ]dtype)?[ ]+`?(?P<x>" + words + r")`?(?![\w-])(?![ ]*(?:vs\b|versus\b|or\b|/))")


# advice in words reads like a setting ("consider using fp8 KV cache"): a prose KV dtype is taken only
# from lines that tell what ran
_KV_ADVICE = regex.compile(r"(?i)\b(?:consider|use|using|switch|enable|enabling|halve[sd]?|save[sd]?|might|may|"
                           r"option|alternative|if[ ]you|you[ ]can|could|should|would)\b")


def scan_kv_dtype_prose(text: str) -> list[Setting]:
    out = []
    for m in _safe_finditer(_kv_dtype_prose(), text, limit=20):
        grp = next(g for g in ("v", "w", "x") if m.group(g))
        if is_suggestion(text, m.start()) or _KV_ADVICE.search(line_of(text, m.start()), timeout=_budget(0.1)):
            continue
        out.append(Setting("kv_cache_dtype", m.group(grp).lower(), m.span(grp), "prose", m.group(0)))
    return out


def scan_text(text: str) -> list[Setting]:
    """Every setting found in `text`, in no particular order; callers rank by `source`."""
    out = scan_commands(text)
    out += scan_kv_dtype_prose(text)
    out += scan_long_context_warning(text)
    out += scan_kwargs(text)
    out += scan_nondefault_args(text)[0]
    out += scan_config_dump(text)[0]
    out += scan_key_values(text)
    out += scan_env(text)
    return out
