"""Paste-reader extraction benchmark: per-field recall and precision on a corpus of real pastes.

Usage: python bench/extraction.py ../shared/corpus/dev.jsonl [--verbose]

A case field counts only when the case states a value AND the paste itself shows it
(`shows()`: the value as printed appears in the paste — see its docstring). For those fields:
recall = read back exactly / shown; precision = read back exactly / read back at all.
`error_kind` agreement is against the case's `error_kind` when it has one, else the
hand-made labels of DEV_ERROR_KINDS (dev corpus only; written from reading each paste).
The last line prints the totals.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))   # bench/ last: it must not shadow a package module

from corpus_reader import read_cases  # noqa: E402

from estimator.paste import read_paste  # noqa: E402

SETTING_FIELDS = ("model", "gpu", "gpu_count", "vllm_version", "tensor_parallel_size", "pipeline_parallel_size",
                  "gpu_memory_utilization", "max_model_len", "dtype", "kv_cache_dtype", "quantization",
                  "enforce_eager", "max_num_seqs", "max_num_batched_tokens")

# Hand labels for ../shared/corpus/dev.jsonl (what the paste shows; design.md §4 values).
# Conventions: a vLLM failure whose message the excerpt cuts off (a traceback into
# _initialize_kv_caches, "EngineCore failed to start", "Killed") is "other", not the kind the
# case's notes infer; vLLM's memory log lines with no failure are "startup_log_ok"; write-ups,
# recipes and summaries that quote no vLLM output and report no failure of the writer's are None.
# A failure told in words is labelled when the words name the check ("OOMs at the KV-cache
# check" on a V1 version → kv_capacity_v1).
DEV_ERROR_KINDS: dict[str, str | None] = {
    "vllm15815-l40s-tp2-qwen25-32b": "startup_log_ok",
    "vllm10533-a100-two-instances-qwen25-14b-gptq": "no_cache_blocks",
    "vllm2136-2x4090-codellama13b-v025": "startup_log_ok",
    "vllm13061-2x4090-r1-distill-qwen14b": "kv_capacity_v0",
    "bonito7-a10g-bonito-v1-32k": "kv_capacity_v0",
    "vllm184-t4-vicuna7b-blocks-neg1": "no_cache_blocks",
    "vllm1267-rtx6000ada-llongorca-7b-16k": "other",
    "vllm14452-2x5090-qwq32b-bnb-pp2": "kv_capacity_v0",
    "vllm16570-4xa100-40-qwen25-vl-72b": "startup_log_ok",
    "vllm9630-h100nvl-llama32-11b-vision": "cuda_oom_profile",
    "vllm2312-3090-mixtral-awq-oom": "cuda_oom_load",
    "gpustack1800-3090-qwen25-vl-7b-v0-2400": "kv_capacity_v0",
    "jetson795-orin-nx-16g-qwen2-7b-gguf": "other",
    "vllm10511-pr-h100-llama3-8b-profile": "startup_log_ok",
    "vllm12126-pr-h100-llama32-11b-vision-dummy": "startup_log_ok",
    "aphrodite262-a6000-4090-mistral7b-blocks": None,
    "vllm4650-8gpu-deepseek-coder-v2-236b": "kv_capacity_v0",
    "wildguard2-3090-wildguard-30448": "kv_capacity_v0",
    "aphrodite362-2x3090-miqu70b-gptq-fp8kv-96": "kv_capacity_v0",
    "vllm7768-2x4090-internvl2-8b-low-usage": None,
    "aphrodite1320-48gb-pixtral-profile": "startup_log_ok",
    "aphrodite166-a40-mistral7b-profiling-fix": "startup_log_ok",
    "vllm-21348-qwen3-235b-fp8-4xh100-lmcache": "startup_log_ok",
    "vllm-34076-qwen3coder30b-fp8-pp2-5070ti-5090d": "kv_capacity_v1",
    "recipes-12-qwen3coder480b-fp8-8xh20-dp8": "kv_capacity_v1",
    "kaito-2132-mistral-small4-119b-h100nvl-1m": "kv_capacity_v1",
    "vllm-44376-dsv4flash-2xgh200-30k": "kv_capacity_v1",
    "vllm-23192-mixtral8x7b-fp8-h200-freemem": "free_memory_startup",
    "vllm-omni-276-qwen3-omni-30b-2xa100-freemem": "free_memory_startup",
    "club3090-487-qwen36-27b-int4-2x3090-runtime-oom": "cuda_oom_runtime",
    "vllm-16712-llama4-scout-2xh100nvl-oom": "cuda_oom_load",
    "gpustack-1800-qwen25vl-7b-3090-v0-default": "kv_capacity_v0",
    "club3090-pr323-qwen-35b-a3b-single3090-v022": "kv_capacity_v1",
    "vllm-17238-qwen25-32b-w8a16-2x3090-maxnumseqs": "no_cache_blocks",
    "vllm-26612-qwen3vl-30b-a3b-a800-13p69": "other",
    "vllm-pr48601-qwen36-27b-fp8-4xh100-v2runner": "cuda_oom_graph",
    "vllm-15105-qwq32b-awq-2x24gb-v080-sampler-oom": "cuda_oom_graph",
    "vllm-16199-gemma3-27b-awq-24gb-v0-083": "kv_capacity_v0",
    "vllm-16128-mistral-small31-awq-24gb-v1-kvalloc-oom": "other",
    "recipes-810-qwen38-27b-fp8-2x5090-tp2": None,
    "qevos-qwen36-27b-fp8-4090-48gb-262k": "kv_capacity_v1",
    "robotmunki-gemma4-31b-nvfp4-h100-annotated": None,
    "vllm-28228-kimi-linear-48b-awq-2x3090": "startup_log_ok",
    "vllm-19125-two-qwen25-05b-4060ti-8gb": "other",
    "recipes-831-qwen38-27b-rtxpro6000-mamba-blocks": "mamba_blocks",
    "spark-vllm-docker-396-minimax-m27-awq-2xdgxspark": "kv_capacity_v1",
    "kvcached-110-two-llama31-8b-a100-freemem": "free_memory_startup",
    "vllm-54354-qwen38-flashnext-fp8-dp3-rtxpro6000-shared-gpu": "cuda_oom_runtime",
    "vllm-51041-dsv4flash-0731-2xh20-56bytes": None,
    "glm53flash-4xdgxspark-786k-16kib": None,
    "recipes-893-glm53-fp8-8xh200-maxlen-required": None,
    "talos-1995-qwen38-27b-fp8-2x3090-262k": "startup_log_ok",
    "club3090-pr334-gemma4-26b-a4b-awq-3090-42k": "kv_capacity_v1",
    "vllm-39133-gemma4-31b-int4-2x24gb-25200tok": None,
    "recipes-762-dsv4flash-0731-8xb200-dp8-vs-tp8": None,
}

_DTYPE_SYN = {"bfloat16": ("bfloat16", "bf16"), "float16": ("float16", "fp16", "half"), "float32": ("float32", "fp32"),
              "auto": ("auto",)}
_NUM_WORDS = {1: ("one", "single"), 2: ("two", "dual"), 3: ("three",), 4: ("four", "quad"), 8: ("eight",)}
# the GPU family a name belongs to (independent of the reader's own GPU rules)
_GPU_CORE = re.compile(
    r"(?i)(rtx\s*pro\s*6000|rtx\s*6000\s*ada|a6000|a5000|a4000|gh200|gb200|gb300|gb10|dgx\s*spark|b200|b300|h100|h200|h800|h20|"
    r"a800|a100|l40s|l40|a10g|a10|a30|a40|l4|t4|v100|p100|orin\s*nx|orin|mi\d{3}x?|(?<!\d)(?:[2345]0[5-9]0|1080)(?:\s*ti)?(?!\d))")


def core_gpu(text: str) -> str | None:
    m = _GPU_CORE.search(text or "")
    return re.sub(r"\s+", "", m.group(1).lower()) if m else None


def case_value(key: str, value):
    """A case's value in comparable form, or None when it is not a plain value (free text)."""
    if value is None:
        return None
    if isinstance(value, str):
        base = value.split(" (")[0].split(" + ")[0].split(" and ")[0].strip()
        if key == "model":
            return base.lower() if re.fullmatch(r"[\w.-]+/[\w.-]+", base) else None
        if key == "gpu":
            return core_gpu(value)
        if key == "vllm_version":
            base = base.lstrip("v")
            return base if re.match(r"\d+\.\d+", base) else None
        if key in ("dtype", "kv_cache_dtype", "quantization"):
            tok = base.lower()
            if key == "dtype":
                for canon, syn in _DTYPE_SYN.items():
                    if tok in syn or tok == f"torch.{canon}":
                        return canon
                return None
            return tok if re.fullmatch(r"[a-z0-9_-]+", tok) else None
        return None
    return value


def _num_forms(v) -> list[str]:
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        s = str(abs(v))
        forms = {s, f"{abs(v):,}", f"{abs(v):,}".replace(",", "'"), f"{abs(v):,}".replace(",", "_")}
        return [("-" if v < 0 else "") + f for f in forms]
    out = set()
    for d in range(0, 5):
        f = f"{v:.{d}f}"
        if math.isclose(float(f), v, abs_tol=1e-12):
            out.add(f)
            if f.startswith("0."):
                out.add(f[1:])
    return sorted(out)


_LABELS = {
    "tensor_parallel_size": r"tensor|tp",
    "pipeline_parallel_size": r"pipeline|pp",
    "block_size": r"block[ _-]?size",
    "max_num_seqs": r"max[ _-]num[ _-]seqs|seqs",
    "max_concurrency": r"concurrency",
    "total_gpu_memory_gib": r"total|gib|gb|memory|vram",
}


def _shows_gpu_count(paste: str, value: int) -> bool:
    """'2x 4090', '4xH100', 'two 4090s', 'dual RTX 3090', '2 GH200 GPUs', 'GPU number: 8'."""
    words = [str(value)] + list(_NUM_WORDS.get(value, ()))
    alt = "|".join(re.escape(w) for w in words)
    gpu = _GPU_CORE.pattern.removeprefix("(?i)")
    pats = [
        r"(?<![\w.])(?:" + alt + r")\s*[x×*]\s*(?:nvidia\s+|geforce\s+|rtx\s+)*" + gpu,
        r"(?<![\w.])(?:" + alt + r")\s+(?:[\w.]+\s+){0,2}?(?:gpus?|cards?|" + gpu + r")",
        r"gpu(?:s|\s+number|\s+count)?\s*[:=]\s*(?:" + alt + r")\b",
    ]
    return any(re.search(p, paste, re.I) for p in pats)


def shows(paste: str, key: str, value) -> bool:
    """True when the paste itself states `value` for `key`.

    Numbers: one of their printed forms (thousands separators, 2–4 decimals, '.97') stands
    alone in the paste (no digit or decimal continues it); a one- or two-character number must
    also have a word naming the field within 40 characters (a bare '16' is not a block size).
    Booleans: the flag or `key=True/False` is written. Strings: the model's repo id, the GPU's
    family token, the version, the dtype (next to a dtype label), the quantization / KV dtype
    word appear in the paste.
    """
    low = paste.lower()
    if isinstance(value, bool):
        name = key.replace("_", "[-_]")
        if value:
            return re.search(r"--" + name + r"\b(?![ =]*(?:false|0)\b)|" + name + r"\s*[=:]\s*true", low) is not None
        return re.search(name + r"['\"]?\s*[=:]\s*false|--no-" + name, low) is not None
    if key == "gpu_count":
        return _shows_gpu_count(paste, int(value))
    if isinstance(value, (int, float)):
        forms = _num_forms(value)
        for f in forms:
            for m in re.finditer(r"(?<![\d.,'_\w" + ("" if f.startswith("-") else "-") + r"])" + re.escape(f) + r"(?![\d]|[.,'_]\d)", paste, re.I):
                if len(f) > 2:
                    return True
                near = paste[max(0, m.start() - 40): m.end() + 40]
                label = _LABELS.get(key, key.replace("_", "[ _-]"))
                if re.search(r"(?i)(?<![a-z])(?:" + label + r")(?![a-z])", near):
                    return True
        return False
    v = str(value).lower()
    if key == "model":
        return re.search(r"(?<![\w.-])" + re.escape(v) + r"(?![\w-])", low) is not None
    if key == "gpu":
        return any(core_gpu(m.group(0)) == v for m in _GPU_CORE.finditer(paste))
    if key == "vllm_version":
        return re.search(r"(?<![\w.])v?" + re.escape(v) + r"(?![\d]|\.\d)", low) is not None
    if key == "dtype":
        syn = _DTYPE_SYN.get(v, (v,))
        return re.search(r"(?<![\w-])(?<!cache[_-])dtype['\"]?\s*[=: ]\s*['\"]?(?:torch\.)?(?:" + "|".join(syn) + r")\b", low) is not None
    if key == "kv_cache_dtype":
        return re.search(r"kv[-_]cache[-_]dtype['\"]?\s*[=: ]\s*['\"]?" + re.escape(v) + r"(?![\w])", low) is not None
    if key == "quantization":
        # a KV-cache dtype ('kv_cache_dtype': 'fp8', "fp8 KV") says nothing about the weights
        for m in re.finditer(r"(?<![a-z0-9])" + re.escape(v) + r"(?![a-z0-9])", low):
            before, after = low[max(0, m.start() - 25): m.start()], low[m.end(): m.end() + 4]
            if not re.search(r"kv[-_ ]cache[-_ ]dtype\W*$", before) and not after.startswith((" kv", "_kv")):
                return True
        return False
    return re.search(r"(?<![a-z0-9])" + re.escape(v) + r"(?![a-z0-9])", low) is not None


def same(key: str, expected, got) -> bool:
    if got is None:
        return False
    if key == "model":
        return str(got).lower() == expected
    if key == "gpu":
        return core_gpu(str(got)) == expected
    if key == "vllm_version":
        return str(got).lstrip("v").split("+")[0] == str(expected).split("+")[0]
    if key in ("dtype", "kv_cache_dtype", "quantization"):
        return str(got).lower() == expected
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        if key.endswith("_gib") and isinstance(got, float) and _decimals(got) < _decimals(float(expected)):
            # vLLM prints the weights twice: "Loading weights took 5.2032 GiB" and the profile line's
            # "model weights take 5.20GiB"; a label may take either — the same figure to the precision read
            return round(float(expected), _decimals(got)) == got
        return math.isclose(float(expected), float(got), rel_tol=0, abs_tol=1e-9)
    return expected == got


def _decimals(x: float) -> int:
    text = repr(float(x))
    return 0 if "e" in text else len(text.split(".")[1].rstrip("0"))


def case_fields(case: dict) -> dict:
    """The case's comparable fields (settings + observed), values in comparable form."""
    out = {}
    for k in SETTING_FIELDS:
        v = case_value(k, case.get(k))
        if v is not None:
            out[k] = v
    for k, v in (case.get("observed") or {}).items():
        if v is not None:
            out[k] = v
    return out


def shown_fields(case: dict) -> dict:
    paste = case.get("paste") or ""
    return {k: v for k, v in case_fields(case).items() if shows(paste, k, v)}


def expected_kind(case: dict):
    if "error_kind" in case:
        return True, case["error_kind"]
    if case.get("id") in DEV_ERROR_KINDS:
        return True, DEV_ERROR_KINDS[case["id"]]
    return False, None


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    verbose = "--verbose" in argv or "-v" in argv
    path = Path([a for a in argv if not a.startswith("-")][0])
    if not path.is_file():
        print(f"extraction: no corpus file at {path}", file=sys.stderr)
        return 2
    cases = [dict(case, id=name) for name, case in read_cases(path) if case is not None]
    stats: dict[str, list[int]] = {}     # key → [shown, extracted, correct]
    kind_total = kind_ok = 0
    for case in cases:
        facts = read_paste(case.get("paste") or "")
        for key, exp in shown_fields(case).items():
            st = stats.setdefault(key, [0, 0, 0])
            got = facts.get(key)
            st[0] += 1
            if got is not None:
                st[1] += 1
                if same(key, exp, got):
                    st[2] += 1
            if verbose and not same(key, exp, got):
                print(f"  {case['id']}: {key} expected {exp!r} got {got!r}")
        has, kind = expected_kind(case)
        if has:
            kind_total += 1
            if facts.error_kind == kind:
                kind_ok += 1
            elif verbose:
                print(f"  {case['id']}: error_kind expected {kind!r} got {facts.error_kind!r}")
    print(f"{'field':28} {'shown':>6} {'read':>6} {'right':>6} {'recall':>8} {'precision':>10}")
    tot = [0, 0, 0]
    for key in sorted(stats):
        s, e, c = stats[key]
        tot = [tot[0] + s, tot[1] + e, tot[2] + c]
        print(f"{key:28} {s:6d} {e:6d} {c:6d} {c / s:8.1%} {(c / e if e else 1):10.1%}")
    if kind_total:
        print(f"{'error_kind agreement':28} {kind_total:6d} {'':6} {kind_ok:6d} {kind_ok / kind_total:8.1%}")
    s, e, c = tot
    print(f"TOTAL cases={len(cases)} fields_shown={s} read={e} right={c} "
          f"recall={c / s if s else 1:.1%} precision={c / e if e else 1:.1%} "
          f"error_kind={kind_ok}/{kind_total}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
