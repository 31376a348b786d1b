"""Accuracy of the forward memory model against what vLLM printed in real threads.

usage: python bench/accuracy.py CORPUS.jsonl [--verbose]

For every case whose model config is available offline (bundled catalog / HF cache), run the
estimator with the case's settings (its fields, and what its paste states where a field is
empty) — not with its observed numbers — and compare with
`observed`: KV pool GiB, token capacity, blocks, weights, activation peak, non-torch and the
estimated max model length. Prints one row per case, then count / median / p90 absolute %
error per quantity; the last line is the KV summary.
"""

from __future__ import annotations

import functools
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))   # bench/ last: it must not shadow a package module
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from corpus_reader import read_cases  # noqa: E402

from estimator.api import load_model, run_estimate  # noqa: E402
from estimator.derive import graphs_on_top, other_worker_pool  # noqa: E402
from estimator.errors import KvdoctorError  # noqa: E402
from estimator.units import GiB  # noqa: E402
from estimator.vllm import EngineSettings  # noqa: E402

_REPO = re.compile(r"\b([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)")
_VER = re.compile(r"\d+\.\d+(?:\.\d+)?")
QUANTITIES = ("kv_cache_gib", "kv_tokens", "gpu_blocks", "weights_gib", "activation_peak_gib", "non_torch_gib",
              "overhead_gib", "estimated_max_model_len", "kv_needed_gib")


def repo_id(text: str | None) -> str | None:
    m = _REPO.search(text or "")
    return m.group(1) if m else None


@functools.lru_cache(maxsize=8)
def _read(paste: str):
    from estimator.paste import read_paste

    return read_paste(paste)


def paste_facts(case: dict):
    """The case's paste as `diagnose` reads it, read once per case."""
    return _read(case.get("paste") or "")


def settings_for(case: dict) -> EngineSettings:
    ver_text = str(case.get("vllm_version") or "")
    m = _VER.search(ver_text)
    # the whole token, so that a build of main ("0.1.dev19754+g3a0914114") reads as one, not as 0.1
    version = ver_text[m.start():].split()[0] if m else None
    # The engine that printed the paste's lines (its message formats) first, as `diagnose` reads it;
    # then a "V0" in the version field, then the case's era: notes about other attempts
    # ("other attempts with VLLM_USE_V1=0") do not turn a V1 log into a V0 run.
    from estimator.release_choice import modelled_version
    facts = paste_facts(case)
    pasted_engine = facts.extra.get("engine")
    engine = case.get("era") if case.get("era") in ("v0", "v1") else None
    if "V0" in ver_text:
        engine = "v0"
    engine = pasted_engine or engine
    # As `diagnose` does: the stated version, else the one the paste's message formats point to,
    # both placed by the case's date.
    version = modelled_version(version or facts.get("vllm_version"), facts.extra.get("version_hint"),
                               engine, case.get("date"))[0]
    # What the paste itself says (its `vllm serve` command, the engine's config line) first: a
    # case field left empty is not "default" when the paste states it.
    from estimator.diagnosis import settings_from_facts

    s = settings_from_facts(facts, version, engine)
    # Flags recorded in free text ("--data-parallel-size 8 --enable-expert-parallel …") first: the
    # case's own fields are the run that printed `observed` and win over notes such as "second run
    # --gpu-memory-utilization 0.95".
    from estimator.vllm import parse_flags

    other = str(case.get("other_flags") or "")
    for env in re.findall(r"\bVLLM_[A-Z0-9_]+=[\w.,]+", other):   # VLLM_PP_LAYER_PARTITION=16,32 …
        try:
            parse_flags([env.rstrip(",.")], s)
        except KvdoctorError:
            pass
    if re.search(r"(?i)(?<![\w.-])(?:vllm/)?vllm-openai\b", other):
        s.official_image = True     # "docker compose (vllm-openai v0.8.5)": FlashInfer installed
    if re.search(r"(?i)\bMTP\b", other) and re.search(r"(?i)specul", other) and not s.speculative_method:
        # "MTP speculative decoding", "external MTP drafter n=4 (speculative decoding)"
        s.speculative_method = "draft_model" if re.search(r"(?i)external", other) else "mtp"
        k = re.search(r"(?i)(?:\bn\s*=\s*|num_speculative_tokens\W+)(\d+)", other)
        if k:
            s.num_speculative_tokens = int(k.group(1))
    # per-prompt media limits recorded in any of their spellings ("limit_mm_per_prompt={'image': 1,
    # 'video': 0}", "limit-mm-per-prompt '{\"video\": 0}'", "limit_mm_per_prompt image=0/audio=0"): the
    # modalities the dummy profile run encodes
    mm = re.search(r"(?i)limit[-_ ]mm[-_ ]per[-_ ]prompt([^;]{0,60})", other)
    if mm:
        from estimator.flags import read_mm_limits

        limits = read_mm_limits(mm.group(1))
        if limits:
            s.limit_mm_per_prompt = limits
    backend = notes_backend(other)
    if backend and not s.attention_backend:
        s.attention_backend = backend
    # LLM(...) keyword arguments recorded as such ("enable_expert_parallel=True, block_size=256").
    for key, value in re.findall(r"\b([a-z][a-z0-9_]+)=(True|False|\d+(?:\.\d+)?)\b", other):
        flag = "--" + key.replace("_", "-")
        chunk = [f"{flag}={value.lower()}"] if value in ("True", "False") else [flag, value]
        try:
            parse_flags(chunk, s)
        except KvdoctorError:
            pass
    words = re.sub(r"[,;]", " ", other).split()
    i = 0
    while i < len(words):
        if words[i].startswith("-") and len(words[i]) > 1:
            chunk = words[i:i + 2] if i + 1 < len(words) and not words[i + 1].startswith("-") else words[i:i + 1]
            unit = words[i + 2] if len(chunk) == 2 and i + 2 < len(words) else ""
            # a size the notes write with its unit apart ("--kv-cache-memory 6 GiB") is that size
            value = [chunk[0], chunk[1] + unit] if re.fullmatch(r"[KMGT]i?B", unit) else chunk
            try:
                parse_flags(value, s)
            except KvdoctorError:
                pass
            i += len(chunk) + (value is not chunk)
        else:
            i += 1
    if pasted_engine:
        s.engine = pasted_engine
    # the case's own numbers, through the flags' checks: a 0 or a 1.5 in a hand-made record is
    # skipped, not modelled (parse_flags rejects what vLLM would)
    for key, kinds in (("tensor_parallel_size", int), ("pipeline_parallel_size", int),
                       ("gpu_memory_utilization", (int, float)), ("max_num_seqs", int),
                       ("max_num_batched_tokens", int), ("max_model_len", int)):
        v = case.get(key)
        if isinstance(v, kinds) and not isinstance(v, bool):
            try:
                parse_flags(["--" + key.replace("_", "-"), str(v)], s)
            except KvdoctorError:
                pass
    for key in ("dtype", "kv_cache_dtype"):
        v = case.get(key)
        if isinstance(v, str) and v.strip():
            setattr(s, key, v.split()[0].strip("(),").lower())
    quant = quant_word(case.get("quantization"))
    generic = str(case.get("quantization") or s.quantization or "").lower().replace("_", "-") in (
        "modelopt", "compressed-tensors")
    said = str(case.get("quantization") or "").split()
    if said and said[0].strip("(),;:").lower() in _NO_QUANT:
        pass        # the field says the checkpoint is unquantized ("none (BF16 baseline)"): nothing to infer
    elif not (quant or s.quantization) or (generic and not quant):
        # no format in the field or the paste, or only a toolkit's name ("modelopt" serves FP8 and
        # NVFP4 exports alike): the checkpoint as the case describes it ("AutoRound int4 checkpoint of
        # Qwen3.6-27B", "single-nvfp4 compose"), where the repo id is the base model's
        # … the path it served; a speculative config's draft model is another checkpoint
        # ("speculative_config={'model': '…-qat-q4_0-unquantized-assistant', …}" is not a GGUF target)
        other = _SPEC_CONFIG.sub(" ", str(case.get("other_flags") or ""))
        named = " ".join(str(x) for x in (case.get("model"), other, facts.get("model"),
                                          facts.extra.get("model_path")) if x)
        quant = quant_word(named, weights_only=True)
    if quant:
        s.quantization = quant
    if case.get("enforce_eager") is not None:
        s.enforce_eager = bool(case["enforce_eager"])
    s.unknown_flags = []
    return s


# A case's free text about its checkpoint, read with the paste reader's own format words
# (paste_prose.quantization_in_name); what is particular to a corpus field is handled here.
# vLLM's online int8 for MoE experts only: no whole-model format the estimator can take from a word.
_EXPERTS_INT8 = re.compile(r"(?i)(?<![A-Za-z0-9])experts[-_]int8(?![A-Za-z0-9])")
_GGUF_TYPE = re.compile(r"(?i)(?<![A-Za-z0-9])gguf\W*(q\d\w*)")
_SPEC_CONFIG = re.compile(r"(?i)speculative[-_ ]?(?:config|model)\s*[=:]?\s*(?:\{[^}]{0,500}\}|\S+)")
# The attention backend the notes record, in vLLM's enum spelling (or a fork's): "attention_backend
# B12X_MLA_SPARSE", "attention-backend flash_attn", "TRITON_MLA attention backend". Words that are not a
# backend's name ("attention backend; FlashInfer CUTLASS … MoE backend", "(FA2") say nothing, and a
# speculative config's own backend ("{method: dflash, …, attention_backend: flash_attn}") is the drafter's.
_NOTES_BACKEND = re.compile(r"(?i)\battention[-_ ]backend[ :=]+['\"]?(?P<after>\w+)"
                            r"|\b(?P<before>[A-Z][A-Z0-9_]+)[ ]+attention[ ]+backend\b")


def notes_backend(other: str) -> str | None:
    from estimator.attention_backend import backend_from_name

    outside = re.sub(r"\{[^{}]*\}", " ", other)
    for m in _NOTES_BACKEND.finditer(outside):
        name = backend_from_name(m.group("after") or m.group("before"))
        if name:
            return name
    return None


# an fp8 that belongs to the KV cache ("fp8 KV cache", "kv_cache_dtype fp8", "fp8_e5m2 KV")
_KV_FP8 = re.compile(r"(?i)kv[-_ ]?(?:cache)?[-_ ]?(?:dtype)?\W{0,3}fp8|fp8(?:[-_]e[45]m[23])?\W{0,3}kv")
_NO_QUANT = ("none", "null", "no", "n/a", "auto", "bf16", "bfloat16", "fp16", "float16", "half", "fp32", "float32")


def quant_word(text, weights_only: bool = False) -> str | None:
    """The quantization a case's free text names, None when it names none. A leading method word wins
    ("awq (AutoRound int4 sym)" → awq; a leading "none"/"bf16" says there is none); then the text's
    words in order of specificity ("compressed-tensors W8A16 (int8 weights)" → w8a16, "gguf (Q4_K_M)" →
    gguf_q4_k_m). An fp8 beside "KV" is the cache's, never the weights'; with `weights_only` (text
    that may describe the cache anywhere) no fp8 is read at all."""
    from estimator.paste_prose import QUANT_BITS_WORDS, quantization_in_name

    if not isinstance(text, str) or not text.strip():
        return None
    first = text.split()[0].strip("(),;:").lower()
    if first in _NO_QUANT or _EXPERTS_INT8.search(text):
        return None
    cleaned = _KV_FP8.sub(" ", text)
    word = quantization_in_name(cleaned.split()[0]) if cleaned.split() else None
    if word in QUANT_BITS_WORDS or (word == "fp8" and weights_only) or word is None:
        word = quantization_in_name(cleaned.replace("fp8", "").replace("FP8", "") if weights_only else cleaned)
    if word == "gguf":
        m = _GGUF_TYPE.search(cleaned)
        return f"gguf_{m.group(1).lower()}" if m else word
    return word


_SMI_NOTE = re.compile(r"total_gpu_memory_gib\b[^.;]*?\b(\d{1,3}(?:,\d{3})+|\d{4,6})\s?MiB")


def smi_total_mib(case: dict) -> int | None:
    """nvidia-smi's MiB total when the case's notes say its `total_gpu_memory_gib` came from it
    ("total_gpu_memory_gib derived from 49,140 MiB", "… is nvidia-smi's 24564MiB converted") and
    the figures agree; None for a total vLLM printed."""
    total = (case.get("observed") or {}).get("total_gpu_memory_gib")
    m = _SMI_NOTE.search(str(case.get("notes") or ""))
    if not (total and m):
        return None
    mib = int(m.group(1).replace(",", ""))
    return mib if abs(mib / 1024 - float(total)) < 0.02 else None


def gpu_for(case: dict) -> str:
    """The case's card: its name when we know it (per rank), the torch total it printed when that
    agrees with the name (exact), else the printed total alone — on the Windows host its paste
    shows, as `diagnose` reads it (diagnosis.gpu_ref)."""
    from estimator.gpus import with_host

    return with_host(_card_for(case), paste_facts(case).extra.get("windows_host")) or ""


def _card_for(case: dict) -> str:
    from estimator.gpus import SMI_RESERVED_MIB, lookup_gpu, names_a_card

    name = case.get("gpu") or ""
    total = (case.get("observed") or {}).get("total_gpu_memory_gib")
    if not name and not total:
        # no card in the fields: the one the paste names or prints, as `diagnose` reads it
        from estimator.diagnosis import gpu_ref

        return gpu_ref(paste_facts(case), None) or ""
    smi = smi_total_mib(case)
    if smi:
        # The corpus took this total from nvidia-smi (its notes say so): vLLM budgets from torch's
        # total, which the driver's reservation keeps lower; the lookup knows what torch sees. A card
        # named with it is sized by its name, as `diagnose` sizes it (the family's own reservation: a
        # modded 48 GB RTX 4090 is the 4090's 23.64 GiB + 24 GiB, not an RTX A6000, the card that
        # shows the same 49,140 MiB), where the name's total lies within the reservation below it.
        try:
            named = lookup_gpu(name) if name else None
        except KvdoctorError:
            named = None
        if named is None or not 0 <= smi * 2**20 - named.total_bytes <= 2 * SMI_RESERVED_MIB * 2**20:
            return f"{smi}MiB"
        return name
    mixed = re.sub(r"\([^)]*\)", "", name).strip()
    if "+" in mixed and all(names_a_card(part) for part in mixed.split("+")):
        # Mixed cards, one per pipeline stage ("RTX 5070 Ti 16GB + RTX 5090 D 32GB (heterogeneous)"):
        # each is looked up on its own; a printed total would be their sum, not a card. A "+" in a
        # label's reasoning ("… + 62.52 GiB KV per GPU") joins no cards.
        return mixed
    try:
        known = lookup_gpu(name)
    except KvdoctorError:
        known = None
    if known is None and mixed != name:
        # a label whose bracketed reasoning makes it too long for a card name ("NVIDIA H200 NVL 141GB
        # (nvidia-smi 143771 MiB), 8 per node …"): the words outside the brackets
        try:
            known = lookup_gpu(mixed)
            name = known.name
        except KvdoctorError:
            known = None
    agrees = bool(known and total and abs(known.total_bytes / GiB - total) / total < 0.1)
    if known and total and known.assumed and not (agrees and known.vendor):
        # only a nominal size ("80GB-class GPU"), or a card whose size the printed total contradicts:
        # the total vLLM printed is what it saw. A card read from a longer label ("NVIDIA H20 (95 GiB
        # reported)", "8x AMD Instinct MI300X 192GB (gfx942 …)") whose size agrees keeps its name, below.
        return f"{total}GiB"
    if agrees:
        # the card, whose name sets vLLM's defaults (an A100's smaller batch) and compute capability
        # (the attention backend, ROCm's rules); `printed_total` then puts the total vLLM printed in its place
        return known.name
    observed = case.get("observed") or {}
    from estimator.gpus import states_its_size

    # what vLLM said it put on one GPU: the weights it loaded and the KV pool it allocated
    on_card = sum(int(x * GiB) for x in (observed.get("weights_gib"),
                                         observed.get("kv_cache_gib") or observed.get("kv_available_gib"))
                  if isinstance(x, (int, float)) and x > 0)
    if known and not total and on_card and not states_its_size(name):
        # as `diagnose` reads a paste (family_card_holding for the weights, anchoring.card_from_pool for the
        # pool): the card held them, so an "A100" that loaded 48.5 GiB, or allocated a 69.66 GiB
        # pool, was an 80 GB one
        from estimator.gpus import family_card_holding

        held = family_card_holding(name, on_card)
        if held is not None:
            return held.name
    if known:
        # a "+" that joins no cards is not to be split by run_estimate (as mixed cards are)
        return known.name if "+" in name else name
    return f"{total}GiB" if total else name


def printed_total(case: dict, gpu_arg: str) -> int | None:
    """The torch total vLLM printed, in bytes, for a case run on a named card (gpu_for): the card
    sets the defaults, the printed figure the size — as `diagnose` re-runs a paste on the total it
    prints (anchoring.with_printed_total). The case's observed figure, else a total a line of the
    paste prints as torch reports it (derive.printed_torch_total_gib)."""
    from estimator.derive import printed_torch_total_gib
    from estimator.gpus import is_size_only

    total = (case.get("observed") or {}).get("total_gpu_memory_gib")
    if not _number(total):
        total = printed_torch_total_gib(paste_facts(case))
    if not _number(total) or "+" in gpu_arg or smi_total_mib(case) or is_size_only(gpu_arg):
        return None
    return int(float(total) * GiB)


def _model_of(case: dict):
    """The case's model offline: the repo its `model` field names, else the one its paste names
    (as `diagnose` reads it) — a field may describe a local copy ("… AutoRound INT4 (local
    checkpoint ~/.cache/huggingface/…)") where the paste has the repo id."""
    for rid in (repo_id(case.get("model")), paste_facts(case).get("model")):
        if rid:
            try:
                return load_model(str(rid), offline=True)
            except KvdoctorError:
                continue
    return None


def observed_values(obs: dict, utilization: float | None = None) -> dict:
    out = {k: obs.get(k) for k in ("kv_cache_gib", "gpu_blocks", "weights_gib", "activation_peak_gib",
                                   "non_torch_gib", "estimated_max_model_len", "kv_needed_gib")}
    if out["kv_cache_gib"] is None:
        out["kv_cache_gib"] = obs.get("kv_available_gib")  # V1 prints the pool as "available KV cache memory"
    out["kv_tokens"] = obs.get("kv_tokens_capacity") or obs.get("error_max_tokens_in_kv")
    parts = [obs.get(k) for k in ("activation_peak_gib", "non_torch_gib")]
    if all(_number(p) for p in parts):
        graphs = obs.get("cuda_graph_gib") if _number(obs.get("cuda_graph_gib")) else 0
        # The printed graph memory is part of the overhead only where vLLM subtracted it before sizing
        # the KV cache; the printed figures themselves say which (requested − W − P − N [− G] = KV).
        known = [obs.get("total_gpu_memory_gib"), utilization, obs.get("weights_gib"), out.get("kv_cache_gib")]
        if graphs and all(isinstance(k, (int, float)) for k in known) \
                and graphs_on_top(known[0] * known[1], known[2], parts[0], parts[1], graphs, known[3]):
            graphs = 0
        out["overhead_gib"] = sum(parts) + graphs
    return {k: v for k, v in out.items() if _number(v)}


def _number(v) -> bool:
    """A figure a case recorded as a number ("n/a", true or a string is not compared)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def predicted_values(est, observed: dict | None = None) -> dict:
    """The estimate's figures for the rank whose memory line the case printed (from 0.34 its
    "Available KV cache memory" is the profile run's pool, Estimate.reserved_pool_bytes).

    V0 with tensor parallelism: every worker logs its own line, but only the driver samples
    (memory.v0_driver_extra_bytes) and vLLM sizes every GPU by the driver's blocks. A printed pool
    larger than the printed capacity by about the sampler is another worker's line
    (derive.other_worker_pool, as `explain` reads it): its pool and activation are compared with
    that worker's (the driver's plus / minus the sampler), the capacity with the driver's."""
    extra = 0
    if observed:
        worker = other_worker_pool(observed, est)      # reads the figures with .get, as a paste's facts
        extra = worker.extra if worker else 0
    pool = est.kv_cache_bytes
    if est.reserved_pool_bytes is not None and observed and observed.get("kv_available_gib") is not None:
        # 0.34+: "Available KV cache memory" is the profile run's pool, before warmup sized the cache
        pool = est.reserved_pool_bytes
    return {
        "kv_cache_gib": (pool + extra) / GiB,
        "kv_tokens": est.kv_cache_tokens,
        "gpu_blocks": est.gpu_blocks,
        "weights_gib": est.weights_bytes / GiB,
        "activation_peak_gib": (est.activation_bytes - extra) / GiB,
        "non_torch_gib": est.non_torch_bytes / GiB,
        "overhead_gib": (est.activation_bytes - extra + est.non_torch_bytes + est.cuda_graph_bytes) / GiB,
        "estimated_max_model_len": est.max_model_len_fit,
        "kv_needed_gib": est.kv_needed_bytes / GiB,
    }


def pct(pred: float, obs: float) -> float | None:
    if obs == 0:
        return None
    return abs(pred - obs) / abs(obs) * 100


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"accuracy: no corpus file at {path}", file=sys.stderr)
        return 2
    verbose = "--verbose" in argv
    t0 = time.perf_counter()
    errors: dict[str, list[float]] = {q: [] for q in QUANTITIES}
    evaluated = skipped = 0
    print(f"{'case':<58} {'quantity':<24} {'observed':>12} {'predicted':>12} {'err%':>7}")
    for name, case in read_cases(path):
        if case is None:
            skipped += 1
            continue
        name = name[:58]
        obs = observed_values(case.get("observed") or {}, case.get("gpu_memory_utilization"))
        loaded = _model_of(case) if obs else None
        if loaded is None:
            skipped += 1
            continue
        gpu_arg = gpu_for(case)
        if not gpu_arg:
            # no card in the case or its paste: a forward estimate would be of a default card the
            # author did not have (`diagnose` asks for `nvidia-smi` instead)
            if verbose:
                print(f"{name:<58} skipped: no GPU in the case or its paste")
            skipped += 1
            continue
        settings = settings_for(case)
        if not isinstance(case.get("tensor_parallel_size"), int):
            # as `diagnose` does: a TP size read as a lower bound from the workers' lines is
            # sharpened by the weights each rank printed
            from estimator.anchoring import tp_from_weights

            tp_from_weights(paste_facts(case), loaded.spec, settings)
        if not isinstance(case.get("pipeline_parallel_size"), int):
            # as `diagnose` does: a pipeline size the paste cuts, from the weights each rank printed
            from estimator.anchoring import pp_from_weights

            pp_from_weights(paste_facts(case), loaded.spec, settings)
        if not case.get("quantization"):
            # as `diagnose` does: a format only the paste's words name, which the served 16-bit
            # checkpoint cannot load in, is another run's
            from estimator.diagnosis import impossible_prose_quantization

            impossible_prose_quantization(paste_facts(case), loaded.spec, settings)
        if not (_VER.search(str(case.get("vllm_version") or "")) or paste_facts(case).get("vllm_version")):
            # as `diagnose` does: an assumed release that cannot have run the model (its registry lacks
            # the architecture, or it dropped the checkpoint's format) gives way to the nearest that can
            from estimator.release_choice import loadable_release

            loadable_release(loaded.spec, settings, paste_facts(case).extra.get("version_hint"))
        try:
            est = run_estimate(loaded.spec, gpu_arg, settings)
            total = printed_total(case, gpu_arg)
            if total:
                from estimator.anchoring import with_printed_total

                est = with_printed_total(est, total)
        except KvdoctorError as exc:
            if verbose:
                print(f"{name:<58} skipped: {exc}")
            skipped += 1
            continue
        evaluated += 1
        pred = predicted_values(est, case.get("observed") or {})
        for q, o in obs.items():
            p = pred.get(q)
            if p is None:
                continue
            e = pct(p, o)
            if e is not None:
                errors[q].append(e)
            print(f"{name:<58} {q:<24} {o:>12,.2f} {p:>12,.2f} {'' if e is None else f'{e:7.1f}'}")
    print()
    print(f"cases evaluated: {evaluated}, skipped (no observed numbers, model config offline or GPU): {skipped}")
    print(f"{'quantity':<24} {'n':>4} {'median%':>9} {'p90%':>9}")
    for q in QUANTITIES:
        v = sorted(errors[q])
        if not v:
            continue
        p90 = v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
        print(f"{q:<24} {len(v):>4} {statistics.median(v):>9.1f} {p90:>9.1f}")
    kv = sorted(errors["kv_cache_gib"] + errors["kv_tokens"] + errors["gpu_blocks"])
    overhead = sorted(errors["overhead_gib"])
    models = path.resolve().parent.parent / "data" / "models"
    if (models / "params.jsonl").exists():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from params import main as params_summary

        print("params " + params_summary(models, quiet=True))
    print(f"elapsed {time.perf_counter() - t0:.1f} s")
    print(f"non-KV overhead: n={len(overhead)} median={statistics.median(overhead) if overhead else float('nan'):.1f}%")
    print(f"KV summary: n={len(kv)} median={statistics.median(kv) if kv else float('nan'):.1f}% "
          f"p90={kv[min(len(kv) - 1, int(round(0.9 * (len(kv) - 1))))] if kv else float('nan'):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
