"""High-level calls that glue model resolution, GPU lookup and the memory model together.

Why here: the CLI, the web API and `diagnose` all need "model ref + GPU + flags → Estimate";
keeping that in one place keeps the surfaces thin and the behaviour identical everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from estimator.errors import BadInput, ModelConfigUnusable, ModelNotFound, ModelUnavailable
from estimator.memory import Estimate, estimate
from estimator.spec import ModelSpec, spec_from_config
from estimator.vllm import EngineSettings


@dataclass
class LoadedModel:
    spec: ModelSpec
    origin: str
    safetensors_bytes_by_dtype: dict | None
    assumptions: list[str]


def load_model(ref: str, *, offline: bool | None = None, revision: str | None = None,
               token: str | None = None, timeout: float = 10.0) -> LoadedModel:
    """Resolve a model reference (repo id, local dir) into a ModelSpec (estimator.hub)."""
    from estimator.hub import OFFLINE_NOTE, is_offline, resolve_model

    if not ref or not str(ref).strip():
        raise BadInput("no model given: name a Hugging Face repo id or a local directory with config.json")
    ref = str(ref).strip()
    try:
        src = resolve_model(ref, revision=revision, offline=offline, token=token, timeout=timeout)
        base_note, name_quant = None, None
    except ModelUnavailable as exc:
        # Not found, gated or the Hub unreachable: a quantized export whose base model is in the
        # catalog still has a known architecture (the reason stays in the note).
        base = base_model_candidate(ref)
        if base is None:
            raise
        try:
            src = resolve_model(base[0], offline=True)
        except ModelNotFound:
            raise exc from None
        if not is_offline(offline):
            # the base came from the catalog because the export failed, not because we are offline
            src.assumptions = [a for a in src.assumptions if a != OFFLINE_NOTE]
        name_quant = base[1]
        why = "" if isinstance(exc, ModelNotFound) else f" ({exc})"
        leaf, base_leaf = ref.rstrip("/").split("/")[-1], src.model_id.split("/")[-1]
        fmt = f", {name_quant} weights from the name" if name_quant else ""
        if _bare_name(leaf) != _bare_name(base_leaf) and _undated(_bare_name(leaf)) == _undated(_bare_name(base_leaf)):
            # a dated revision of the catalog's model, or the model a dated catalog entry revises
            base_note = (f"{ref} is not available here{why}; used the config of {src.model_id}, a revision of the "
                         f"same model under another release date (a dated re-release keeps the architecture; its "
                         f"default context length may differ{fmt})")
        elif _bare_name(leaf) != _bare_name(base_leaf) and _variant_stem(_bare_name(leaf)) == _variant_stem(_bare_name(base_leaf)):
            # the catalog's model is the release's base or chat sibling (of the export's own model, if quantized)
            # a sibling may ship another checkpoint format (Kimi-K2-Thinking's int4 beside K2-Instruct's FP8)
            also = "" if fmt else " and checkpoint format"
            base_note = (f"{ref} is not available here{why}; used the config of {src.model_id}, the same release's "
                         f"other variant (base and chat weights share one architecture; its default context length"
                         f"{also} may differ{fmt})")
        elif _QUANT_SUFFIX.search(leaf):
            base_note = (f"{ref} is not available here{why}; used the config of its base model {src.model_id} "
                         f"(same architecture{fmt})")
        else:
            base_note = (f"{ref} is not available here{why}; used the config of {src.model_id}, the model it is "
                         "named after (another organization's upload of it, a mirror or a fine-tune, keeps its "
                         "architecture; paste the repo's config.json if it does not)")
        if name_quant == "bitsandbytes":
            # A bitsandbytes export lists the modules it keeps in 16-bit in its own config's
            # llm_int8_skip_modules (unsloth's "dynamic" 4-bit exports keep whole layers): the base
            # config cannot say which.
            base_note += ("; a bitsandbytes export may keep some modules in 16-bit (its config's "
                          "llm_int8_skip_modules), so its weights can be larger than modelled here")
    try:
        spec = spec_from_config(src.config, src.model_id if base_note is None else ref, src.companions)
        if name_quant:
            # The export's own format (from its name) replaces the base model's quantization_config.
            spec.quantization, qat_grid = _name_format(name_quant, leaf)
            if qat_grid:
                base_note = (f"{base_note}; a QAT export keeps the int4 grid its weights were trained on: "
                             "symmetric, groups of 32")
        _probe(spec)
    except _CONFIG_FAULTS as exc:
        raise ModelConfigUnusable(
            f"kvdoctor cannot compute with the config.json of {src.model_id} ({type(exc).__name__}: "
            f"{str(exc)[:160]}): a value has a type or size it does not read. If the file is the model's "
            "own, please report it; otherwise paste the model's config.json") from None
    spec.assumptions[:0] = list(src.assumptions) + ([base_note] if base_note else [])
    spec.safetensors_bytes_by_dtype = src.safetensors_bytes_by_dtype  # type: ignore[attr-defined]
    return LoadedModel(spec, src.origin, src.safetensors_bytes_by_dtype, list(src.assumptions))


# What arithmetic over a config's values raises when one has a type or size no model has, or a shape not
# read yet: a list where one number is read, a string, zero, a billion layers (spec.MAX_LAYERS).
_CONFIG_FAULTS = (TypeError, ValueError, AttributeError, KeyError, IndexError, ZeroDivisionError,
                  OverflowError, MemoryError, RecursionError)


def _probe(spec: ModelSpec) -> None:
    """Count the model's weights and size its KV cache once, on a default card, so that a config value
    kvdoctor cannot compute with fails here, as one sentence about the config, rather than later in an
    estimate, a fix or a bot's reply. Both are cached or cheap (about 3 ms for a 61-layer MoE)."""
    from estimator.params import count_params

    count_params(spec)
    estimate(spec, gpu_total_bytes=80 * 2**30, settings=EngineSettings())


# Suffixes quantized exports add to their base model's name (…-FP8, …-AWQ, …-GPTQ-Int4,
# …-unsloth-bnb-4bit, …-int4-AutoRound-awq-sym), 16-bit re-uploads (TheBloke's …-fp16 of a
# Meta …-hf repo), and the words people give a local copy of a repo (an HF cache dir renamed
# models--Qwen--Qwen3.6-27B-local). The architecture (layers, heads, KV) is the base's.
_QUANT_SUFFIX = re.compile(
    r"(?i)[-_.](?:fp8(?:-dynamic|-block)?|w8a8|w8a16|w4a16|int4|int8|awq|gptq|bnb|nvfp4|mxfp4|autoround|qat|"
    r"4bit|8bit|unsloth|quantized|dynamic|gguf|q4_k_m|q8_0|fp16|bf16|local|copy|mirror|backup|bak)(?:[-_.].*)?$"
)


_VARIANT = re.compile(r"(?i)-(?:instruct|chat|it|base|pt|thinking)(?=(?:-v\d+(?:\.\d+)*)?(?:-hf)?$)")
# A release date a revision adds to a repo name: MMDD (DeepSeek-V3-0324, DeepSeek-R1-0528,
# DeepSeek-V4-Flash-0731) or YYMM (Qwen3-30B-A3B-Instruct-2507, Mistral-Large-Instruct-2411).
_DATED = re.compile(r"-(?:(?:0[1-9]|1[0-2])(?:[0-2]\d|3[01])|2[3-9](?:0[1-9]|1[0-2]))$")


def _undated(name: str) -> str:
    """A repo name without a revision's release date ("DeepSeek-V4-Flash-0731" → "deepseek-v4-flash"):
    a dated re-release keeps the layers, heads and KV layout of the model it revises (DeepSeek's -0324 /
    -0528 / -0731, Qwen's -2507); its default context length may differ."""
    return _DATED.sub("", name).lower()


def _same_release(siblings: list[str], name: str) -> list[str]:
    """Of several catalogued variants of one model, those of the release `name` dates (or, undated, the
    undated ones): Qwen3-30B-A3B-Thinking-2507 — or an AWQ export of it — stands on -Instruct-2507, not on
    the first Qwen3-30B-A3B, whose context length differs. One sibling is kept as it is."""
    if len(siblings) < 2:
        return siblings
    date = _DATED.search(name)
    return [cid for cid in siblings if (cid.endswith(date.group(0)) if date else not _DATED.search(cid))]


def _variant_stem(name: str) -> str:
    """A repo name without its release date and base/chat variant word ("Meta-Llama-3-70B-Instruct" →
    "meta-llama-3-70b", "Qwen3-30B-A3B-Instruct-2507" → "qwen3-30b-a3b", "Mistral-7B-Instruct-v0.3" →
    "mistral-7b-v0.3")."""
    return _VARIANT.sub("", _undated(name)).lower()


def model_stem(model_id: str) -> str:
    """The model a repo holds an export or copy of, by name and without an organisation, whose
    uploads vary: "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8" → "Qwen3-Coder-30B-A3B-Instruct"."""
    name = str(model_id).rstrip("/").split("/")[-1]
    m = _QUANT_SUFFIX.search(name)
    return name[: m.start()] if m and m.start() > 0 else name


def _bare_name(name: str) -> str:
    """A repo name as the family knows it, for comparing an export's stem with the catalog: lower-cased,
    without Meta's "-hf" (Hugging Face format) or a precision/format suffix (NVIDIA's …-BF16 / …-FP8
    siblings), and without the "Meta-" of Llama 3's and 3.1's official names (Meta-Llama-3.1-… is now
    Llama-3.1-…, and exports name Meta-Llama-3-70B-Instruct "llama-3-70b-instruct": casperhansen's AWQ)."""
    m = _QUANT_SUFFIX.search(name)
    bare = re.sub(r"(?i)-hf$", "", name[: m.start()] if m else name).lower()
    return re.sub(r"^meta-llama-3(\.1)?-", r"llama-3\1-", bare)


# A QAT word in a repo name: Google trains its Gemma QAT checkpoints on an int4 grid, symmetric, with groups
# of 32 (gau-nernst/gemma3-int4's README; a public Gemma 4 run log calls google/gemma-4-E4B-it-qat-w4a16-ct
# "int4-W4A16-g32"), and a 4-bit export of one keeps that grid, or it would not reproduce the trained weights.
_QAT = re.compile(r"(?i)[-_.]qat(?:[-_.]|$)")


def _name_format(name_quant: str, leaf: str) -> tuple[dict, bool]:
    """The quantization_config a repo name implies (marked `_from_name`, so that an explicit
    --quantization wins), and whether it is a QAT export's int4 grid. "w4a16" is llm-compressor's
    scheme (compressed-tensors, 4-bit weights, symmetric: no zero points; groups of 128 by its
    preset), a bare "int8" GPTQ's per-channel layout; a QAT export keeps the training grid's groups
    of 32."""
    if name_quant == "int8":
        return {"quant_method": "gptq", "bits": 8, "group_size": -1, "_from_name": True}, False
    qat = name_quant in ("w4a16", "awq", "gptq") and bool(_QAT.search(leaf))
    if name_quant == "w4a16":
        weights = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32 if qat else 128,
                   "symmetric": True}
        return {"quant_method": "compressed-tensors", "_from_name": True,
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}}, qat
    if qat:
        return {"quant_method": name_quant, "bits": 4, "group_size": 32, "_from_name": True}, True
    return {"quant_method": name_quant, "_from_name": True}, False


def export_method(word: str | None) -> str | None:
    """The format an export's name (or the word beside a model a post names) says: the paste reader's
    format words, where bare bits are GPTQ's int4 and an int8 layout."""
    return {"int4": "gptq", "w8a16": "int8"}.get(word, word) if word else None


def export_quantization(word: str) -> dict:
    """The quantization_config an export named by a format word alone has (`_name_format`, no QAT grid)."""
    return _name_format(str(export_method(word)), "")[0]


def base_model_candidate(ref: str) -> tuple[str, str | None] | None:
    """The catalog model a quantized export is derived from, and the format its name says."""
    from estimator.catalog import canonical_id, catalog_ids, lookup
    from estimator.paste_prose import quantization_in_name

    if canonical_id(ref):
        return None        # the catalog's own model: its copy, not a sibling's
    name = ref.rstrip("/").split("/")[-1]
    m = _QUANT_SUFFIX.search(name)
    org = ref.split("/")[0] if "/" in ref else None
    own = re.split(r"[-_.]", org)[0] if org else ""
    if len(own) >= 3 and name.lower().startswith(own.lower() + "-") and len(name) > len(own) + 1:
        # a publisher that puts its own name first (huihui-ai/Huihui-gpt-oss-20b-mxfp4-abliterated-v2):
        # the rest names the model it is an export or fine-tune of
        found = base_model_candidate(f"{org}/{name[len(own) + 1:]}")
        if found:
            return found
    if not m:
        # no format suffix: another organization's upload under the catalog model's own name
        # (unsloth/Llama-3.2-3B-Instruct, NousResearch/Meta-Llama-3-8B-Instruct) — a mirror or a
        # fine-tune, either way the architecture of the model it is named after
        same = [cid for cid in catalog_ids() if org and cid.split("/")[-1].lower() == name.lower()
                and cid.split("/")[0].lower() != org.lower()]
        if len(same) == 1:
            return same[0], None
        # the same release's other variant (meta-llama/Meta-Llama-3-70B beside the catalog's -Instruct,
        # Llama-2-7b-hf beside -chat-hf): base and chat weights share one architecture
        sib = [cid for cid in catalog_ids() if org and cid.split("/")[0].lower() == org.lower()
               and cid.split("/")[-1].lower() != name.lower() and _variant_stem(cid.split("/")[-1]) == _variant_stem(name)]
        if not sib and org and _variant_stem(name) != name.lower():
            # another organization's upload of a variant the catalog holds under its sibling's name
            # (unsloth/Qwen3-4B-Base beside Qwen/Qwen3-4B): a name that carries its own variant word
            sib = [cid for cid in catalog_ids() if cid.split("/")[0].lower() != org.lower()
                   and _variant_stem(_bare_name(cid.split("/")[-1])) == _variant_stem(_bare_name(name))]
        if len(sib) > 1:
            # of several (Qwen3-VL-32B beside -Instruct and -Thinking), -Instruct
            sib = _same_release(sib, name)
            if len(sib) > 1:
                sib = [cid for cid in sib if re.search(r"(?i)-instruct$", cid)]
        return (sib[0], None) if len(sib) == 1 else None
    stem = name[: m.start()]
    # the paste reader's format words; bare bits in a repo name are GPTQ's int4 / an int8 layout
    quant = export_method(quantization_in_name(m.group(0)))
    if quant == "gptq" and re.search(r"(?i)w4a16", m.group(0)):
        quant = "w4a16"     # llm-compressor's scheme name (compressed-tensors), not GPTQ's
    if re.match(r"(?i)[-_.]qat\b", m.group(0)):
        # quantization-aware training says how the weights were trained, not how they are stored: Google's
        # "-qat-q4_0-unquantized" releases are 16-bit; a format word after it says the export's
        # (-qat-w4a16-ct, -qat-AWQ-INT4); none recognised (-qat-autoawq) — not this rule's to guess
        if re.search(r"(?i)unquantized", m.group(0)):
            quant = None
        elif quant is None:
            return None
    if org and canonical_id(f"{org}/{stem}"):
        return canonical_id(f"{org}/{stem}"), quant
    hits = [cid for cid in catalog_ids() if _bare_name(cid.split("/")[-1]) == _bare_name(stem)] or _same_release([
        # an export of the chat model whose catalog entry is the base one, or the reverse
        # (RedHatAI/gemma-4-26B-A4B-it-FP8-Dynamic beside google/gemma-4-26B-A4B): one architecture
        cid for cid in catalog_ids()
        if _variant_stem(_bare_name(cid.split("/")[-1])) == _variant_stem(_bare_name(stem))], stem)
    if len(hits) > 1:
        # several precisions of one model (NVIDIA's -BF16 / -FP8 / -NVFP4): the unquantized one; the
        # same model under an old and a new name (Meta-Llama-3.1-8B, Llama-3.1-8B): either
        plain = [cid for cid in hits if not _QUANT_SUFFIX.search(cid.split("/")[-1])
                 or re.search(r"(?i)[-_.](?:bf16|fp16)$", cid)] or hits
        if all(lookup(cid)[1] == lookup(plain[0])[1] for cid in plain):
            hits = plain[:1]
    return (hits[0], quant) if len(hits) == 1 else None


def stage_cards(cards: list[tuple[str, int]], settings: EngineSettings) -> list[tuple[str, int]] | None:
    """(name, torch total) per pipeline stage from cards listed in rank order — one per rank (a
    stage with TP > 1 is as small as its smallest card) or one per stage; None when that does not
    fit the layout or there is one stage."""
    tp, pp = settings.tensor_parallel_size, settings.pipeline_parallel_size
    per = tp if len(cards) == tp * pp else 1 if len(cards) == pp else 0
    if not per or pp <= 1:
        return None
    return [min(cards[i * per:(i + 1) * per], key=lambda c: c[1]) for i in range(pp)]


def run_estimate(spec: ModelSpec, gpu: str | None, settings: EngineSettings, *, gpu_count: int | None = None,
                 **overrides) -> Estimate:
    """Estimate for `spec` on `gpu` (name/alias/size; default: assume an 80 GB H100 and say so)."""
    from estimator.gpus import card_count, lookup_gpu
    from estimator.params import count_params

    assumed = []
    if not gpu:
        gpu = "H100 80GB"
        ranks = settings.tensor_parallel_size * settings.pipeline_parallel_size
        assumed.append("no GPU given: assumed one NVIDIA H100 80GB" if ranks == 1 else
                       f"no GPU given: assumed {ranks}× NVIDIA H100 80GB, one per GPU rank")
    cards = [c.strip() for c in gpu.split("+")] if "+" in gpu else []
    if gpu_count is None:
        # "2x L40S", "RTX 5070 Ti + RTX 5090": the GPUs the user has, which the advice stays within
        gpu_count = sum(card_count(c) or 1 for c in cards) if len(cards) > 1 else card_count(gpu)
    if len(cards) > 1 and "stage_gpus" not in overrides:
        # Mixed cards in rank order, one per rank or one per pipeline stage ("RTX 5070 Ti + RTX 5090"):
        # each stage is sized on its own card (the smallest of its TP ranks).
        found = [lookup_gpu(c) for c in cards]
        stages = stage_cards([(c.name, c.total_bytes) for c in found], settings)
        if stages:
            overrides["stage_gpus"] = stages
        gpu = min(zip(cards, found, strict=True), key=lambda cg: cg[1].total_bytes)[0]
    g = lookup_gpu(gpu)
    if g.assumed:
        assumed.append(g.assumed)
    est = estimate(spec, gpu_total_bytes=g.total_bytes, settings=settings, gpu_name=g.name,
                   device_name=g.product, compute_capability=g.compute_capability, gpu_count=gpu_count,
                   **overrides)
    est.assumptions[:0] = assumed
    est.params = count_params(spec).params_total
    est.gpu = g
    return est


def settings_from_dict(d: dict) -> EngineSettings:
    """Settings named as in design.md §4 `settings` (web API, corpus cases) → EngineSettings."""
    from estimator.vllm import parse_flags

    argv: list[str] = []
    for key, value in d.items():
        if value is None or key in ("engine",):
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            continue
        argv += [flag, str(value)]
    return parse_flags(argv, EngineSettings(engine=d.get("engine")))


def estimate_json(*, model: str, gpu: str | None = None, settings: dict | None = None,
                  gpu_count: int | None = None, offline: bool | None = None) -> dict:
    """design.md §4 JSON for a model + GPU + settings (used by POST /api/estimate)."""
    loaded = load_model(model, offline=offline)
    est = run_estimate(loaded.spec, gpu, settings_from_dict(settings or {}), gpu_count=gpu_count)
    from estimator.advice import suggest

    est.suggestions = [s.to_json() for s in suggest(est)]
    return est.to_json()
