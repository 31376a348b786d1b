"""`diagnose(text)`: the one call every surface makes (Slack, Discourse, web, CLI).

Pipeline: paste → facts (estimator.paste) → model + GPU + settings → forward estimate anchored
on what vLLM printed (estimator.memory) → memory state with provenance (estimator.derive) →
re-checked fixes (estimator.advice) → reply (estimator.render).

Anchoring: when the paste gives vLLM's own KV figure (a capacity, a block count, "Available KV
cache memory"), the forward model's estimated parts are adjusted so that it reproduces that
figure; every fix is then re-checked from the user's real state, not from a fresh guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from estimator.advice import STUB_CONTEXT
from estimator.anchoring import (
    anchor_to_pool,
    capacity_settings,
    card_from_free,
    card_from_pool,
    estimate_with,
    pp_from_weights,
    tp_from_cpu_blocks,
    tp_from_gpu_count,
    tp_from_weights,
    v0_swap_bytes,
    with_printed_total,
)
from estimator.derive import (
    PRINTED_POOL,
    activation_from_facts,
    derive,
    gib_bytes,
    graph_from_facts,
    graphs_after_kv_from_facts,
    kv_formula,
    kv_pool_from_facts,
    need_sentence,
    other_worker_pool,
    reserved_pool_fact,
    torch_total_from_facts,
    total_from_graph_hint,
)
from estimator.errors import BadInput, KvdoctorError, ModelUnavailable
from estimator.gpus import WINDOWS_HOLDERS, states_its_size, with_host
from estimator.kv_layout import mamba_align_refused
from estimator.memory import Estimate
from estimator.non_torch import CUDA_CONTEXT
from estimator.paste import COUNT_FROM_SIZES, settings_error
from estimator.release_choice import loadable_release, modelled_version, release_from_need
from estimator.render import align_refusal, redact, render_markdown, render_slack, render_text
from estimator.units import GiB
from estimator.vllm import CONCURRENCY_CAPACITY_FROM, version_text

# Whose figures a token count is where the model's state contradicts vLLM's (the headline's fix, the
# full-context plan): the model's, not vLLM's
MODELS_OWN = "the model's own estimate, which disagrees with vLLM's figures as Checks says"

# A size that belongs to the card named just before it ("RTX 4090 with 48GB", "A100 (80GB)", "my A100
# is 40GB", "RTX 5070 Ti 16303MiB"), not a usage figure ("T4 and only takes ~10GB/15GB") nor the
# total of several cards ("A10*4, 96GB VRAM").
_SIZE_TOKEN = re.compile(r"(?i)\d+(?:\.\d+)?\s*(?:GB|GiB|MiB)\b")
_USAGE_BEFORE_SIZE = re.compile(r"(?i)\b(?:takes?|took|taking|uses?|using|used|only|free|left|of\s+it|occupie[sd]|total|"
                                r"loading|loaded|weights?|cache|needs?|needed|requires?|allocated?)\b|/"
                                r"|^\s*[*×x]\s*\d")     # "A10*4, 96GB": the size of all the cards together



@dataclass
class Diagnosis:
    """Everything a surface needs to reply: facts read, derived state, fixes, the short answer."""

    error_kind: str | None
    summary: str
    facts: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    estimate: dict | None = None
    suggestions: list[dict] = field(default_factory=list)
    unchecked: list[dict] = field(default_factory=list)   # from printed numbers only (no model to re-check)
    missing: list[str] = field(default_factory=list)
    specific: bool = False
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    kv_formula: str = ""
    full_context: str = ""
    four_bit: str = ""             # the run with a 4-bit export of the model, where no flag frees enough
    unchecked_header: str = ""     # what the unchecked fixes were checked against, where the default words do not fit
    state: object | None = None
    # the model's state cannot reproduce vLLM's printed KV figure: vLLM's own numbers lead the advice
    disagrees: bool = False
    # the engine failed on an exception that speaks of no memory (paste._root_exception): a surface
    # that answers unprompted stays silent; asked, it says so
    not_memory: bool = False
    settings_error: bool = False    # a settings check failed, not memory (paste.settings_error)

    def to_json(self) -> dict:
        """The explain JSON; every string is passed through `redact` (it may be stored or posted)."""
        return _redact_all(self._json())

    def _json(self) -> dict:
        return {
            "facts": self.facts,
            "derived": self.derived,
            "diagnosis": {
                "error_kind": self.error_kind, "summary": self.summary, "suggestions": self.suggestions,
                "unchecked_suggestions": self.unchecked,
                "missing": self.missing, "specific": self.specific, "notes": self.notes,
                "checks": self.checks, "full_context": self.full_context, "four_bit": self.four_bit,
            },
            "estimate": self.estimate,
            "reply": render_markdown(self),
        }


def _redact_all(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_all(v) for v in value]
    return value


def explain_json(diag: Diagnosis) -> dict:
    return diag.to_json()


def settings_from_facts(facts, version: str | None, engine: str | None):
    from estimator.vllm import EngineSettings, branched_release, build_name, plausible_setting

    def f(key: str):
        # a figure vLLM could not have run with (0 blocks, 10^20 stages) is a misreading: not stated
        v = facts.get(key)
        return v if plausible_setting(key, v) else None

    # a paste is what vLLM did with these settings: a length above the config's either got past its
    # check (overrides the paste need not show) or the paste's own error says so
    s = EngineSettings(vllm_version=version, engine=engine, allow_long_max_model_len=True)
    stated = facts.get("vllm_version")
    if stated and version and branched_release(stated) == version:
        s.vllm_build = build_name(stated)     # the main build the paste ran, modelled as `version`
    for key in ("gpu_memory_utilization", "max_model_len", "dtype", "kv_cache_dtype", "quantization",
                "max_num_seqs", "max_num_batched_tokens", "block_size"):
        v = f(key)
        if v is not None:
            setattr(s, key, v)
    if isinstance(facts.extra.get("utilization_from_budget"), float):
        s.gpu_memory_utilization = facts.extra["utilization_from_budget"]     # finer than the printed 2 decimals
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        if f(key):
            setattr(s, key, int(f(key)))
    if f("enforce_eager") is not None:
        s.enforce_eager = bool(f("enforce_eager"))
    # Read as extras (not fact keys): engine arguments that change the memory arithmetic.
    for key in ("enable_prefix_caching", "enable_chunked_prefill", "enable_expert_parallel", "async_scheduling",
                "enable_lora"):
        if isinstance(facts.extra.get(key), bool):
            setattr(s, key, facts.extra[key])
    for key in ("max_loras", "max_lora_rank"):
        if isinstance(facts.extra.get(key), int) and not isinstance(facts.extra.get(key), bool):
            setattr(s, key, facts.extra[key])
    if facts.extra.get("usage") == "llm":
        s.usage = "llm"         # the offline LLM class: its own V1 defaults (vllm/engine/arg_utils.py)
    if facts.extra.get("equivalent_utilization") is not None:
        # "The current --gpu-memory-utilization=U is equivalent to …": printed only where the CUDA-graph
        # estimate was subtracted (gpu_worker.py; 0.18–0.19 with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)
        s.graph_profiling = True
    elif facts.extra.get("unprofiled_utilization") is not None:
        # "Consider re-enabling it … and increasing --gpu-memory-utilization from U to U'": printed where
        # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 kept the graphs out of the budget (gpu_worker.py, 0.20+)
        s.graph_profiling = False
    if facts.extra.get("runner") in ("pooling", "generate"):
        s.runner = facts.extra["runner"]   # an embedding / reranking run: no sampler, no lm_head
    if facts.extra.get("performance_mode") in ("balanced", "interactivity", "throughput"):
        s.performance_mode = facts.extra["performance_mode"]
    if facts.extra.get("expandable_segments") or facts.extra.get("launcher") == "unsloth":
        # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the paste, or Unsloth's start (unsloth sets it
        # before it imports vLLM)
        s.expandable_segments = True
    if facts.extra.get("mm_encoder_tp_mode") in ("weights", "data"):
        s.mm_encoder_tp_mode = facts.extra["mm_encoder_tp_mode"]
    mode = facts.extra.get("mamba_cache_mode")
    if mode in ("all", "align", "none"):
        s.mamba_cache_mode = mode          # the log says how the hybrid model caches its states
        if s.enable_prefix_caching is None and mode != "none":
            s.enable_prefix_caching = True     # a Mamba cache mode other than none means prefix caching
    dp = facts.extra.get("data_parallel_size")
    if isinstance(dp, int) and dp > 1 and plausible_setting("data_parallel_size", dp):
        s.data_parallel_size = dp
    dcp = facts.extra.get("decode_context_parallel_size")
    if isinstance(dcp, (int, float)) and dcp == int(dcp) and dcp > 1 \
            and plausible_setting("decode_context_parallel_size", int(dcp)):
        s.decode_context_parallel_size = int(dcp)    # a flag, vLLM's args, or its "Multiplying …" line
    if facts.extra.get("mxfp4_backend"):
        s.mxfp4_backend = facts.extra["mxfp4_backend"]
    # the backend the log says ran, else the one --attention-backend asked for
    s.attention_backend = facts.extra.get("attention_backend_used") or facts.extra.get("attention_backend") \
        or s.attention_backend
    if isinstance(facts.extra.get("flashinfer_sampler"), bool):
        s.flashinfer_sampler = facts.extra["flashinfer_sampler"]
    s.official_image = bool(facts.extra.get("official_image"))    # vllm/vllm-openai: FlashInfer installed
    if isinstance(facts.extra.get("compile_cache_warm"), bool):
        s.compile_cache_warm = facts.extra["compile_cache_warm"]     # the log's torch.compile cache lines
    if isinstance(facts.extra.get("model_runner_v2"), bool):
        s.model_runner_v2 = facts.extra["model_runner_v2"]     # the log says which runner ran
    if facts.extra.get("encoder_profile"):
        s.encoder_profile = tuple(facts.extra["encoder_profile"])
    warmup = facts.extra.get("sampler_warmup_requests")
    if s.max_num_seqs is None and isinstance(warmup, int) and warmup > 0:
        s.max_num_seqs = warmup        # the warm-up samples min(max_num_seqs, max_num_batched_tokens) rows
    from estimator.vllm import apply_speculative

    for key in ("speculative_model", "speculative_config"):
        if facts.extra.get(key):
            apply_speculative(s, facts.extra[key])
    k = facts.extra.get("num_speculative_tokens")
    if isinstance(k, int) and k > 0:
        s.num_speculative_tokens = k
    from estimator.vllm import ENV_SETTINGS, parse_flags

    for name, value in (facts.extra.get("env") or {}).items():
        if name == "VLLM_USE_FLASHINFER_SAMPLER" and isinstance(facts.extra.get("flashinfer_sampler"), bool):
            continue        # the log's own line says which sampler ran
        if name == "VLLM_USE_V2_MODEL_RUNNER" and isinstance(facts.extra.get("model_runner_v2"), bool):
            continue        # ... and which model runner
        if name in ENV_SETTINGS:        # VLLM_PP_LAYER_PARTITION, VLLM_USE_V2_MODEL_RUNNER: read as the CLI reads them
            try:
                parse_flags([f"{name}={str(value).replace(' ', '')}"], s)
            except BadInput:
                pass
    version = facts.extra.get("unsloth_version")
    if version is None and s.vllm_version:
        from estimator.vllm import parse_version

        # no banner: a vLLM before 0.10.2 (September 2025) ran beside an Unsloth of before its changes
        if parse_version(s.vllm_version) < (0, 10, 2):
            version = (2025, 8, 0)
    if facts.extra.get("launcher") == "unsloth" and not facts.extra.get("unsloth_vision") \
            and isinstance(facts.extra.get("unsloth_kv_gb"), float):
        # Unsloth started vLLM for a text model: the batch it gives vLLM by its release (flags.unsloth_text_batch)
        from estimator.flags import unsloth_text_batch

        got = unsloth_text_batch(version, facts.extra["unsloth_kv_gb"], bool(facts.extra.get("unsloth_float8_kv")),
                                 facts.extra.get("unsloth_conservativeness", 1.0))
        if got is not None:
            batch, seqs = got
            if facts.values.get("max_num_seqs") is None or facts.values["max_num_seqs"].source != "unsloth_batch":
                s.max_num_seqs = s.max_num_seqs or seqs
            read = facts.values.get("max_num_batched_tokens")
            if batch is not None and (read is None or read.source == "unsloth_batch"):
                s.max_num_batched_tokens = batch     # the printed "Chunked prefill tokens" is not it here
            elif batch is None and read is None:
                s.max_num_batched_tokens = s.max_model_len or s.max_num_batched_tokens
    if facts.extra.get("unsloth_vision"):
        # Unsloth started vLLM for a vision model (paste._unsloth_launch): its own batch and sequence count
        from estimator.flags import UNSLOTH_VISION_MIN_BATCH

        s.max_num_seqs = s.max_num_seqs or 1
        if s.max_num_batched_tokens is None:
            s.max_num_batched_tokens = max(UNSLOTH_VISION_MIN_BATCH, s.max_model_len or 0)
    if facts.extra.get("limit_mm_per_prompt"):
        from estimator.flags import read_mm_limits

        s.limit_mm_per_prompt = read_mm_limits(facts.extra["limit_mm_per_prompt"]) or None
    if facts.extra.get("language_model_only") is True:
        parse_flags(["--language-model-only"], s)      # the flag's own reading: every modality limited to 0
    for key in ("cpu_offload_gb", "kv_cache_memory_bytes"):
        v = facts.extra.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            setattr(s, key, v)
    if isinstance(s.dtype, str) and s.dtype.startswith("auto"):
        s.dtype = "auto"
    if isinstance(s.kv_cache_dtype, str) and s.kv_cache_dtype.startswith("auto"):
        s.kv_cache_dtype = "auto"
    # (None: the release's default runner, which may be V2)
    s.graphs_after_kv = graphs_after_kv_from_facts(facts) if s.model_runner_v2 is not False else None
    return s


def _rank_notes(facts) -> list[str]:
    """Say where parallel sizes no flag stated came from (paste.py `_derive_parallel_sizes`)."""
    notes = []
    if facts.extra.get("tp_from_weights"):
        fact = facts.values["tensor_parallel_size"]
        return [f"no --tensor-parallel-size in the paste: the worker lines show at least {fact.value} GPUs, and the "
                f"weights each rank printed ({facts.get('weights_gib')} GiB) are the model split "
                f"{facts.extra['tp_from_weights']} ways: tensor parallelism {facts.extra['tp_from_weights']} assumed"]
    if facts.extra.get("tp_from_cpu_blocks"):
        tp, cpu = facts.extra["tp_from_cpu_blocks"], facts.extra.get("cpu_blocks")
        swap = v0_swap_bytes(facts) / GiB
        whose = "the" if facts.extra.get("swap_space") is not None else "its default"
        notes.append(f"no --tensor-parallel-size in the paste: V0's {int(cpu):,} CPU blocks fill {whose} {swap:g} GiB "
                     f"swap space with the model's blocks split {tp} ways, so tensor parallelism {tp} assumed "
                     "(pipeline stages, or an fp8 KV cache the paste does not show, would shrink a block as well)")
    if facts.extra.get("pp_from_weights"):
        pp = facts.extra["pp_from_weights"]
        notes.append(f"the paste cuts --pipeline-parallel-size's value: the weights each rank printed "
                     f"({facts.get('weights_gib')} GiB) are one of {pp} pipeline stages of the model: {pp} assumed")
    for key, flag in (("tensor_parallel_size", "--tensor-parallel-size"), ("pipeline_parallel_size",
                                                                           "--pipeline-parallel-size")):
        if key == "tensor_parallel_size" and facts.extra.get("tp_from_cpu_blocks"):
            continue        # said above, from the CPU blocks rather than the lower bound the workers give
        fact = facts.values.get(key)
        how = {"worker_grid": "the worker names in the log (Worker_PP…_TP…)",
               "worker_ranks": "the worker ranks that printed lines (a global rank does not tell tensor from "
                               "pipeline parallelism; tensor assumed)",
               "worker_processes": "the worker processes that printed lines and the GPU count (tensor "
                                   "parallelism assumed)",
               "p2p_cache": "the worker processes that printed lines and the GPUs custom all-reduce's P2P cache "
                            "file names (all the GPUs the process sees; tensor parallelism over all of them assumed)",
               }.get(fact.source if fact else "")
        if how is None:
            continue
        notes.append(f"no {flag} in the paste: {fact.value} read from {how}")
    return notes


def gpu_ref(facts, gpu: str | None) -> str | None:
    """The card to size: the caller's, else the one the paste names (with a size stated after the
    name), else the total it printed (nvidia-smi's MiB, which the lookup maps to torch's total) —
    with the Windows host the paste shows (WSL2 or native), whose driver reports another total
    (gpus.windows_total); a total vLLM printed replaces it anyway (with_printed_total)."""
    return with_host(_card_ref(facts, gpu), facts.extra.get("windows_host"))


def _card_ref(facts, gpu: str | None) -> str | None:
    if gpu:
        return gpu
    mig = facts.extra.get("mig_profile")
    if mig and f"{mig}" not in str(facts.get("gpu") or "").lower():
        # a MIG slice: the card's name with its profile (the slice is all vLLM sees)
        return f"{str(facts.get('gpu') or '').removesuffix(' MIG').strip()} MIG {mig}".strip()
    if facts.get("gpu"):
        # Keep the words right after the name: "RTX 4090 with 48GB of VRAM" names a variant,
        # "RTX 5070 Ti 16303MiB" (nvidia-smi) gives the size of a card the catalog lacks.
        fact = facts.values["gpu"]
        tail = (facts.text or "")[fact.span[1]: fact.span[1] + 32].split("\n")[0]
        m = _SIZE_TOKEN.search(tail)
        if m and not _USAGE_BEFORE_SIZE.search(tail[:m.start()]):
            return f"{fact.value} {m.group(0)}"
        return str(fact.value)
    if facts.get("total_gpu_memory_gib"):
        rows = facts.extra.get("nvidia_smi_memory_mib") or []
        if facts.values["total_gpu_memory_gib"].source == "nvidia_smi_total" and rows:
            return f"{int(rows[0]['total'])}MiB"   # nvidia-smi's figure: the lookup knows what torch sees
        return f"{facts.get('total_gpu_memory_gib')}GiB"
    return None


def _stage_gpus(facts, settings) -> list[tuple[str, int]] | None:
    """(name, torch total) of each pipeline stage's GPU when the paste lists cards of different
    sizes (nvidia-smi rows, CUDA_VISIBLE_DEVICES order; a stage with TP > 1 is as small as its
    smallest card). None when they are all alike or the list does not cover every rank."""
    from estimator.api import stage_cards
    from estimator.gpus import lookup_gpu

    pp, tp = settings.pipeline_parallel_size, settings.tensor_parallel_size
    if pp <= 1:
        return None
    devices: dict[int, list] = {i: [n, None] for i, n in enumerate(facts.extra.get("gpus") or [])}
    for i, mib in (facts.extra.get("nvidia_smi_total_mib") or {}).items():
        devices.setdefault(int(i), [None, None])[1] = int(mib)
    for row in facts.extra.get("nvidia_smi_memory_mib") or []:
        devices.setdefault(int(row["gpu"]), [None, None])[1] = int(row["total"])
    order = facts.extra.get("cuda_visible_devices") or sorted(devices)
    ranks = [devices.get(i) for i in order][: pp * tp]
    if len(ranks) < pp * tp or any(d is None for d in ranks):
        return None
    cards: list[tuple[str, int]] = []
    for name, mib in ranks:
        try:
            g = lookup_gpu(with_host(f"{mib}MiB" if mib else str(name), facts.extra.get("windows_host")) or "")
        except KvdoctorError:
            return None
        cards.append((str(name or g.name), g.total_bytes))
    if len({t for _n, t in cards}) <= 1:
        return None
    return stage_cards(cards, settings)


def diagnose(text: str, *, model: str | None = None, gpu: str | None = None, vllm_version: str | None = None,
             offline: bool | None = None, explain: bool = False, hub_timeout: float = 10.0,
             posted: str | None = None, answer_refusals: bool = False) -> Diagnosis | None:
    """Read `text`; None when it holds no vLLM memory problem (bots stay silent).

    With `explain=True` (the CLI) a Diagnosis is always returned, saying what was found.
    `answer_refusals`: also answer a paste where vLLM stopped before sizing any memory (no such
    quantization method, an architecture its registry lacks) — not a memory problem, so not for a
    bot's unprompted reply, but what a person who asked (the web page) needs to hear.
    `posted`: the day the paste was written (a forum post's or Slack message's date, ISO); when
    the paste does not name its vLLM version, no release newer than that day is assumed.
    """
    from estimator.paste import read_paste

    facts = read_paste(text or "")
    kind = facts.error_kind
    if facts.extra.get("foreign_engine"):
        # another engine's log: answered only to a person who asked, and never with vLLM's arithmetic
        return _foreign_diagnosis(facts) if explain or answer_refusals else None
    refusal = bool(facts.extra.get("unknown_quantization") or facts.extra.get("unsupported_architectures"))
    if kind is None and not explain and not (answer_refusals and refusal):
        return None
    version = vllm_version or facts.get("vllm_version")
    engine = None
    if kind == "kv_capacity_v0" or facts.extra.get("engine") == "v0":
        engine = "v0"
    elif kind == "kv_capacity_v1" or facts.extra.get("engine") == "v1":
        engine = "v1"
    assumptions: list[str] = []
    stated = version
    version, note = modelled_version(version, facts.extra.get("version_hint"), engine, posted)
    if note:
        assumptions.append(note)
    lines = facts.extra.get("log_line_releases")
    if lines and not stated:
        first, last, agree, example = lines
        span = first if first == last else f"{first}–{last}"
        assumptions.append(f"the log's file:line prefixes ([{example}] …) match vLLM {span}'s code: "
                           f"{'that line is' if agree == 1 else f'{agree} of its lines are'} logged at those lines there")
    missing: list[str] = []
    model_ref = model or facts.get("model")
    card_ref = gpu_ref(facts, gpu)
    est: Estimate | None = None
    problem = None
    read_back = ""        # flags for the settings read back from vLLM's printed capacity
    path = str(facts.extra.get("model_path") or "")
    from_path = not model_ref and bool(path)     # the model is read from the local path the run served
    if from_path:
        model_ref = _model_of_path(facts, path, assumptions)
    elif not model:
        guessed = _guessed_organisation(facts)
        if guessed:
            assumptions.append(guessed)
    if not model_ref:
        missing.append(f"which Hub model the local path `{path}` holds (its repo id, or its config.json)" if path
                       else "the model id (your `vllm serve …` command)")
    if facts.extra.get("platform") == "cpu" and (kind in _CPU_KINDS or facts.extra.get("host_killed")):
        # vLLM's CPU backend: the KV cache is a space of host RAM, not what a card leaves
        return _cpu_diagnosis(facts, model_ref, version, assumptions, offline=offline, timeout=hub_timeout)
    if not card_ref:
        missing.append("the GPU (`nvidia-smi` output)")
    # a settings error is answered from vLLM's message alone: a memory estimate of the settings vLLM
    # refused (3 GPUs splitting 40 heads) would be a table of an impossible run
    # so is a release that has no such quantization method: vLLM stopped before sizing any memory
    refused = kind is None and refusal
    # the engine failed on an exception that speaks of no memory: nothing of memory to fix or to ask for
    not_memory = bool(facts.extra.get("root_exception"))
    settings_check = settings_error(facts)
    if model_ref and not settings_check and not refused:
        stated = bool(vllm_version or facts.get("vllm_version"))

        def estimate_of(ref: str, f=None) -> tuple[Estimate, str, list[str]]:
            from estimator.api import load_model

            card = card_ref if f is None else gpu_ref(f, gpu)
            f = facts if f is None else f
            spec = load_model(ref, offline=offline, timeout=hub_timeout).spec
            _export_beside(f, spec)
            notes = list(assumptions)
            moved: list[str] = []
            e = _anchored_estimate(f, spec, card, version, engine, stated=stated, moved=moved)
            if moved:
                # the checkpoint's format or the model's architecture moved the assumed release: that
                # note takes the format's place, among the first assumptions a reply shows
                notes = [moved[0] if a == note else a for a in notes] if note in notes else moved + notes
            elif not stated:
                dated = release_from_need(f, e, e.settings.vllm_version, lambda v: _anchored_estimate(
                    f, spec, card, v, engine, stated=False))
                if dated is not None:
                    e, why = dated
                    notes = [a for a in notes if a != note] + [why]
            settled = e.settings.vllm_version
            e, back = capacity_settings(f, e, lambda adj: _anchored_estimate(
                f, spec, card, settled, engine, stated=False, adjust=adj))
            return e, back, notes

        try:
            ref_used = str(model_ref)
            est, read_back, assumptions = estimate_of(ref_used)
            if est.reconciliation.failed and not model and not from_path:
                first = est
                est, read_back, assumptions = _other_named_model(facts, est, read_back, assumptions, estimate_of)
                ref_used = ref_used if est is first else est.spec.model_id
            if est.reconciliation.failed:
                facts, (est, read_back, assumptions) = _other_stated_value(
                    facts, (est, read_back, assumptions), lambda f: estimate_of(ref_used, f))
            if est.reconciliation.failed and not model and not gpu and not from_path:
                facts, (est, read_back, assumptions) = _run_named_before(facts, (est, read_back, assumptions),
                                                                         estimate_of)
        except ModelUnavailable as exc:
            problem = str(exc)
            missing.append("the model's config.json (the model could not be looked up)")
        except KvdoctorError as exc:
            problem = str(exc)
    assumptions += _rank_notes(facts)      # after the estimate: the weights may have sharpened the TP size
    state = derive(facts, est)
    if est is not None and state.disagrees:
        # vLLM's printed need / estimate, or its "no blocks", contradict the model's layout or state:
        # the re-checked fixes rest on it, so the reply leads with vLLM's own numbers
        est.reconciliation.failed = True
    suggestions = []
    fixes = []          # the re-checked fixes of a memory problem, before they are rendered
    shm_notes: list[str] = []
    full = ""
    killed = kind == "other" and bool(facts.extra.get("host_killed"))
    mapped = kind == "other" and bool(facts.extra.get("host_mmap_bytes"))    # the host refused a checkpoint file
    if est is not None and killed:
        from estimator.advice import host_memory_fixes

        suggestions = [s.to_json() for s in host_memory_fixes(est, _cpu_swap_bytes(facts, est))]
    elif est is not None and kind == "cuda_oom_graph" and facts.extra.get("sampler_warmup_requests"):
        from estimator.advice import sampler_warmup_fixes

        tried, free = facts.extra.get("tried_to_allocate_gib"), facts.extra.get("free_gib")
        suggestions = [s.to_json() for s in sampler_warmup_fixes(
            est, int(facts.extra["sampler_warmup_requests"]),
            gib_bytes(tried) if isinstance(tried, (int, float)) else None,
            gib_bytes(free) if isinstance(free, (int, float)) else None)]
    elif est is not None and facts.extra.get("shared_mem_available") is not None:
        from estimator.advice import shared_memory_fixes

        # not the KV cache: the attention kernel's shared memory bounds the context (0.2.0–0.2.1)
        shm = shared_memory_fixes(facts, est)
        suggestions = [s for s in shm if s["flags"]]
        shm_notes = [s["why"][0].upper() + s["why"][1:] + "." for s in shm if not s["flags"]]
    elif est is not None and not not_memory and not mapped:
        from estimator.advice import suggest

        fixes = suggest(est, error_kind=kind)
        suggestions = [s.to_json() for s in fixes]
    if est is not None and facts.extra.get("pp_from_weights"):
        # the stage count the paste cut: the fixes' effects assume it, so their commands say it
        read_back = f"--pipeline-parallel-size {facts.extra['pp_from_weights']} {read_back}".strip()
    if est is not None and est.settings.tensor_parallel_size != (facts.get("tensor_parallel_size") or 1):
        # a split read from the paste's figures (CPU blocks, the weights each rank printed, the GPUs shown
        # for weights one card cannot hold): likewise
        read_back = f"--tensor-parallel-size {est.settings.tensor_parallel_size} {read_back}".strip()
    if est is not None:
        _in_users_command(suggestions, facts, est.spec.model_id, from_path=from_path, read_back=read_back,
                          compute_capability=est.compute_capability)
        from estimator.flags import command_cut

        if any(s.get("command") for s in suggestions) and command_cut(facts.text)[0]:
            assumptions.append("the paste cuts the vllm serve command short: the fix commands carry the flags it "
                               "shows; add the ones it cut")
        est.suggestions = suggestions
    if est is not None and kind in ("kv_capacity_v0", "kv_capacity_v1"):
        from estimator.advice import MORE_GPUS, full_context_plan

        plan = full_context_plan(est)
        if plan:
            # vLLM's own need where it printed one for this length (the model's may disagree: see Checks)
            printed = facts.get("kv_needed_gib") if facts.get("max_model_len") in (None, est.max_model_len) else None
            full = (f"{est.max_model_len:,} tokens need {float(printed):,.2f} GiB of KV per GPU (vLLM's figure)"
                    if printed is not None else
                    f"{est.max_model_len:,} tokens need {plan['kv_needed_bytes'] / GiB:,.2f} GiB of KV per GPU")
            if facts.extra.get("launcher") == "unsloth":
                full += "; Unsloth starts vLLM on one GPU, so that needs a card with that much room beside the weights"
            elif plan["plans"]:
                p, have = plan["plans"][0], plan["have"]
                whose = f"by {MODELS_OWN}, " if est.reconciliation.failed else ""
                full += (f"; {whose}with {p['gpus']}× {p['gpu']} and `--tensor-parallel-size "
                         f"{p['tensor_parallel_size']}` the KV cache holds {p['kv_cache_tokens']:,} tokens, "
                         f"{p['max_concurrency']:.2f}× concurrency at {est.max_model_len:,} tokens"
                         + (f" ({MORE_GPUS.format(n=p['gpus'], have=have)})" if have and p["gpus"] > have else ""))
            else:
                full += "; that is more than these GPUs can hold even with tensor parallelism up to 8"
    four_bit = _four_bit_text(est, fixes) if est is not None and kind != "startup_log_ok" \
        and not not_memory and not settings_check and not killed and not mapped else ""
    if kind == "other" and est is not None and est.fits and not killed and not not_memory and not mapped:
        missing.append("the exception the traceback ends with (its last lines)")
    if mapped:
        missing = [HOST_MEMORY_ASK]     # the host's memory decides it, not the card or the model's config
    if kind == "kv_capacity_v1" and facts.get("kv_needed_gib") is not None and facts.get("kv_available_gib") is None:
        missing.append("the whole error line: the paste cuts it before the KV cache memory vLLM had available")
    if settings_check or refused or not_memory:
        missing = []       # a settings error, or no memory one: its fix needs no model config or card
    d = Diagnosis(
        error_kind=kind, summary="", facts=facts.to_dict(), derived=state.to_json(),
        estimate=est.to_json() if est else None, suggestions=suggestions, missing=missing,
        specific=bool(est is not None or _has_numbers(facts)), checks=list(state.checks),
        assumptions=assumptions + (est.assumptions if est else []), full_context=full, four_bit=four_bit, state=state,
    )
    if est is not None:
        d.kv_formula = kv_formula(est)
    d.disagrees = bool(est and est.reconciliation.failed)
    d.not_memory = not_memory
    d.settings_error = settings_check
    if est is None or not suggestions or d.disagrees:
        from estimator.advice import facts_fixes, printed_pool_fixes

        d.unchecked = facts_fixes(facts)
        if d.disagrees and kind == "startup_log_ok":
            d.unchecked = printed_pool_fixes(facts, est) + d.unchecked
    elif not [s for s in suggestions if not _MORE_CARDS.search(str(s.get("flags")))]:
        # nothing re-checked fits on the cards the run had: vLLM's own figures still give the lever
        # (a shorter context) where the model's state leaves no room (a card a little larger than its
        # catalog size, a checkpoint a little smaller)
        from estimator.advice import facts_fixes

        d.unchecked = [u for u in facts_fixes(facts) if not _MORE_CARDS.search(str(u.get("flags")))]
        d.specific = d.specific or bool(d.unchecked)
    d.notes = state.notes + _claims_notes(facts, est) + _asked_length_notes(facts, est) + ([f"Could not use the model: {_public(problem)}"] if problem else [])
    d.notes += shm_notes
    d.summary = _summary(d, facts, est)
    return d


# what the CPU backend's own arithmetic answers: its KV checks, its RAM checks and its start-up log (and the
# kernel's OOM killer, by extra["host_killed"]); other failures on a CPU host take the usual paths
_CPU_KINDS = ("kv_capacity_v0", "kv_capacity_v1", "no_cache_blocks", "free_memory_startup", "startup_log_ok", None)


def _foreign_diagnosis(facts) -> Diagnosis:
    """The reply to another engine's log (paste_engines): what it is, and no figure or fix of vLLM's, whose
    memory accounting that engine does not follow (an SGLang out-of-memory error was answered with
    `--tensor-parallel-size 2`, a vllm.rs allocation failure with a vLLM budget on a card it did not have)."""
    from estimator.paste_engines import engine_named

    name = facts.extra["foreign_engine"]
    engine = engine_named(name)
    article, what = (engine.article, engine.what) if engine else ("a", "a separate inference engine")
    summary = (f"This is {article} **{name}** log, not vLLM's: {name} is {what}, and it sizes its memory and KV cache by its "
               "own rules. kvdoctor reproduces vLLM's arithmetic, so it cannot explain these numbers or check a fix "
               "for them.")
    notes = [f"Flags {name} shares with vLLM (--max-model-len, --max-num-seqs …) do not make vLLM's memory accounting "
             f"apply; {name}'s own error message and documentation are the guide here."]
    return Diagnosis(error_kind=facts.error_kind, summary=summary, facts=facts.to_dict(), notes=notes,
                     missing=["your vLLM log or `vllm serve …` command, if you run this model on vLLM too"])


def _cpu_diagnosis(facts, model_ref: str | None, version: str | None, assumptions: list[str], *,
                   offline: bool | None, timeout: float) -> Diagnosis:
    """The reply for vLLM's CPU backend (estimator.cpu_backend): no card, no profile run, no GPU fixes."""
    from estimator.api import load_model
    from estimator.cpu_backend import cpu_reply

    spec, notes = None, []
    if model_ref:
        try:
            spec = load_model(str(model_ref), offline=offline, timeout=timeout).spec
        except KvdoctorError as exc:
            notes.append(f"Could not use the model: {_public(str(exc))}")
    reply = cpu_reply(facts, spec, version)
    _cpu_commands(reply.fixes + reply.unchecked, facts, spec.model_id if spec is not None else None)
    missing = ([] if model_ref else ["the model id (your `vllm serve …` command)"]) + \
        [m for m in reply.missing if m != "the model id (your `vllm serve …` command)"]
    derived = {"figures": {k: f.to_json() for k, f in reply.figures.items()}, "checks": [], "per_rank": {}}
    return Diagnosis(error_kind=facts.error_kind, summary=reply.summary, facts=facts.to_dict(), derived=derived,
                     suggestions=reply.fixes, unchecked=reply.unchecked, unchecked_header=reply.unchecked_header,
                     missing=missing, specific=True, notes=reply.notes + notes,
                     assumptions=reply.assumptions + assumptions, kv_formula=reply.kv_formula)


def _cpu_commands(fixes: list[dict], facts, model_id: str | None) -> None:
    """Each CPU fix as the user's own command (or a bare `vllm serve`) with it applied; the KV space is
    an environment variable, which `command_with` puts before the command in place of the user's."""
    from estimator.advice import command_with
    from estimator.flags import user_command

    if facts.extra.get("usage") == "llm" or facts.extra.get("launcher"):
        return      # a Python call or another tool's: no shell command of theirs to put it in
    anchors = [f.span[0] for f in facts.values.values() if str(f.source).startswith("cmdline") and f.span]
    base = user_command(facts.text, min(anchors) if anchors else None) or (["vllm", "serve", model_id] if model_id else None)
    for s in fixes if base else []:
        s["command"] = command_with(base, str(s["flags"]))


def _export_beside(facts, spec) -> None:
    """A format word a post writes beside a model it names in words ("MiniMax M2.7 AutoRound") names an
    export of that model. Where the model's own checkpoint is quantized otherwise (MiniMax-M2.7's FP8),
    whose config vLLM would keep over a --quantization flag, the export's format from the word replaces
    the base's quantization_config, as an export's repo name does (api.load_model); a 16-bit base takes
    the word as its --quantization already."""
    from estimator.api import export_quantization

    word, model = facts.values.get("quantization"), facts.values.get("model")
    own = str((spec.quantization or {}).get("quant_method") or "").lower().replace("_", "-")
    if word is None or word.source != "prose_quant_word" or model is None or not model.guess or not own:
        return
    fmt = export_quantization(str(word.value))
    if str(fmt["quant_method"]).lower().replace("_", "-") == own:
        return
    spec.quantization = fmt
    spec.assumptions.append(f"the paste writes {word.value} beside {model.value}, whose own checkpoint is {own}: "
                            f"an export of it in that format is assumed (its config is not in the paste)")


def _other_named_model(facts, est: Estimate, read_back: str, assumptions: list[str], estimate_of):
    """Another model the paste names, when vLLM's figures rule out the one read first.

    Why: of several models a post names in prose, the first is taken as its subject ("impossible to
    get qwen3.5-27b running … finally got vllm to work with qwen3.5:9b:" and then the 9B's log). Where
    no state of that model reproduces the KV figures vLLM printed, the first other named model whose
    state does is the one the log is of. With none, the model named on the line that introduces
    the log (paste._log_intro: "… work with qwen3.5:9b:") is the log's, where it is another; else
    the first reading stands."""
    for other in (facts.extra.get("alternatives") or {}).get("model") or []:
        try:
            got, back, notes = estimate_of(str(other))
        except KvdoctorError:
            continue         # not loadable here (offline, unknown): no evidence either way
        if not got.reconciliation.failed:
            notes.append(f"the paste names {est.spec.model_id} first, but no state of that model reproduces the KV figures "
                         f"vLLM printed; they fit {got.spec.model_id}, also named, so the log is read as its run")
            return got, back, notes
    intro = facts.extra.get("log_intro_model")
    if intro:
        try:
            got, back, notes = estimate_of(str(intro))
        except KvdoctorError:
            return est, read_back, assumptions
        notes.append(f"the paste names {est.spec.model_id} first, but the line that introduces the log names "
                     f"{got.spec.model_id}; no state of either reproduces the KV figures vLLM printed, so the log is "
                     "read as the run of the one named there")
        return got, back, notes
    return est, read_back, assumptions


def _facts_with(facts, values: dict, source: str):
    """The paste's facts with `values` read in place of its own (another reading of the same paste)."""
    from estimator.paste import Fact, Facts

    return Facts(facts.text, {**facts.values, **{k: Fact(v, (0, 0), source) for k, v in values.items()}},
                 dict(facts.extra))


def _run_named_before(facts, first: tuple, estimate_of):
    """(facts, (estimate, read-back flags, notes)) of the model and card the paste names last before
    its error (paste._named_before), when vLLM's figures rule out the ones named first.

    Why: a README that lists setups ("Llama-3.1-8B: one 3090; Llama-3.1-70B: four A6000s") and then
    the 70B's traceback is read as the 8B on a 3090, the first named; its figures cannot be that run.
    Taken only where they reproduce vLLM's figures, with a note; else the first reading stands."""
    named = facts.extra.get("named_before_error") or {}
    if not named:
        return facts, first
    other = _facts_with(facts, named, "named_before_error")
    try:
        got = estimate_of(str(other.get("model")), other)
    except KvdoctorError:
        return facts, first
    if got[0].reconciliation.failed:
        return facts, first
    was = " on ".join(str(facts.get(k)) for k in ("model", "gpu") if facts.get(k))
    now = " on ".join(str(other.get(k)) for k in ("model", "gpu") if other.get(k))
    count = f" ({other.get('gpu_count')} of them)" if other.get("gpu_count") else ""
    got[2].append(f"the paste names {was} first, but vLLM's figures cannot be that run; they fit {now}{count}, "
                  "named right before the error, so the log is read as that run's")
    return other, got


# settings a paste may give twice, one per run it describes, that vLLM's figures can tell apart
_RUN_SETTINGS = ("gpu_memory_utilization",)


def _other_stated_value(facts, first: tuple, estimate_with):
    """(facts, (estimate, read-back flags, notes)) with another value the paste gives for a setting,
    when vLLM's figures rule out the one read (or none was, the values disagreeing).

    Why: a post that shows a baseline and the change it made ("--gpu-memory-utilization 0.9" in its
    manifest, then "0.5  # 0.9 → 0.5" beside the failing run's log) gives two values; the reader keeps
    neither. The later-stated value is tried first (posts show the change after the baseline); the
    first whose state reproduces vLLM's KV figures is the run's, and a note says so."""
    alts = (facts.extra.get("alternatives") or {})
    for key in _RUN_SETTINGS:
        read = facts.get(key)
        for value in dict.fromkeys(reversed(alts.get(key) or [])):
            if value == read:
                continue
            other = _facts_with(facts, {key: value}, "alternative")
            try:
                got = estimate_with(other)
            except KvdoctorError:
                continue
            if not got[0].reconciliation.failed:
                stated = ", ".join(str(v) for v in dict.fromkeys(alts[key]))
                got[2].append(f"the paste gives {key} as {stated}; vLLM's KV figures fit {value}, so the log is "
                              "read as that run's")
                return other, got
    return facts, first


# a fix that needs more GPUs than the run had
_MORE_CARDS = re.compile(r"--(?:tensor|pipeline|data)-parallel-size")


# unsloth_zoo vllm_utils.load_vllm refuses float8_kv_cache below compute capability 8.0
UNSLOTH_FP8_KV_MIN_CC = 8.0


def _in_unsloth_call(suggestions: list[dict], facts, model_id: str | None, compute_capability: str | None) -> None:
    """Unsloth started vLLM (flags.UNSLOTH_CALL): a fix is shown as the user's from_pretrained call with
    Unsloth's own arguments, and one no argument of it can say (more GPUs, a quantization method,
    max_num_seqs: Unsloth runs one GPU and sizes the batch itself) is dropped. A utilization fix maps
    through the scale Unsloth applied (the user's value over the one it printed handing vLLM); without
    both figures it is told in words."""
    from estimator.flags import unsloth_call_with
    from estimator.gpus import cc_number

    given, handed = facts.extra.get("unsloth_gpu_memory_utilization"), facts.extra.get("unsloth_vllm_utilization")
    scale = given / handed if given and handed else None
    caller = facts.extra.get("unsloth_call") or "FastLanguageModel"    # the user's own call (paste reader)
    cc = cc_number(compute_capability)
    kept = []
    for s in suggestions:
        if "--kv-cache-dtype fp8" in s["flags"] and cc is not None and cc < UNSLOTH_FP8_KV_MIN_CC:
            continue    # load_vllm: "Your GPU is too old for float8 KV cache! Set it to False."
        utilization = s["flags"].startswith("--gpu-memory-utilization")
        call = unsloth_call_with(facts.text, s["flags"], scale, model_id)
        if not call and not utilization:
            continue    # more GPUs, a quantization method, max_num_seqs …: no argument of from_pretrained
        s["command"] = call or ""   # a utilization Unsloth's scale cannot map back: told in words below
        if utilization and handed:
            s["why"] += (f"; Unsloth handed vLLM {handed:g} of the card" + (f" for your gpu_memory_utilization {given:g}"
                         if given else "") + f": the gpu_memory_utilization you give {caller}.from_pretrained "
                         "is scaled by the memory free when Unsloth starts vLLM")
        kept.append(s)
    suggestions[:] = kept


def _in_users_command(suggestions: list[dict], facts, model_id: str | None = None, from_path: bool = False,
                      read_back: str = "", compute_capability: str | None = None) -> None:
    """Show each fix as the user's own command with the fix applied (their TP, model path and
    other flags kept), when the paste holds a `vllm serve` command; without one, a command that
    serves the local path the user's run served, not the repo id kvdoctor read it as (a log's
    `'model': '~/.cache/huggingface/qwen3.6-27b-autoround-int4'` is not a Hub repo). `read_back`:
    flags of settings the command shown lacks but vLLM's printed capacity says the run had
    (`capacity_settings`) — the fix's predicted effect assumes them, so its command carries them."""
    from estimator.advice import command_with
    from estimator.flags import llm_call_with, user_command

    if facts.extra.get("launcher") == "unsloth":
        _in_unsloth_call(suggestions, facts, model_id, compute_capability)
        return
    if facts.extra.get("usage") == "llm":
        # the offline LLM(...) class: the fix in the user's own call, as keyword arguments
        for s in suggestions:
            call = llm_call_with(facts.text, f"{read_back} {s['flags']}".strip())
            if call:
                s["command"] = call
        return
    anchors = [f.span[0] for f in facts.values.values() if str(f.source).startswith("cmdline") and f.span]
    base = user_command(facts.text, min(anchors) if anchors else None)
    if base:
        back = f"{_printed_run_length(facts, base)} {read_back}".strip()
        for s in suggestions:
            s["command"] = command_with(base, f"{back} {s['flags']}".strip())
        return
    import shlex

    path = str(facts.extra.get("model_path") or "")
    served = facts.values.get("model")
    # the run served a local path under another name (its config line's served_model_name): kvdoctor
    # read the model as that name, but the command serves the path and keeps the name
    alias = model_id if facts.extra.get("served_model_name") == model_id else None
    # only where the estimate's model is the one kvdoctor read from that path (not a model= the
    # caller gave), and the path is no shell variable ("$MODEL" would be the user's own script)
    read_there = from_path or (served is not None and (served.guess or alias) and str(served.value) == model_id)
    if not (model_id and path and read_there) or "$" in path:
        return
    quoted = "~/" + shlex.quote(path[2:]) if path.startswith("~/") else shlex.quote(path)
    keep = f" --served-model-name {shlex.quote(alias)}" if alias else ""
    for s in suggestions:
        cmd = str(s.get("command") or "")
        s["command"] = cmd.replace(f"vllm serve {model_id}", f"vllm serve {quoted}{keep}", 1) \
            .replace(f"--model {model_id}", f"--model {quoted}{keep}", 1)


def _printed_run_length(facts, base: list[str]) -> str:
    """`--max-model-len N` where the command shown states another length than the run whose figures the
    paste prints (vllm#6156: the command is the next run's `--max-model-len 30720`; the failing run's
    error says "max seq len (163840)"): a fix that leaves the length alone is predicted at the printed
    run's, so its command says so. "" where they agree, or the command states none."""
    from estimator.advice import flag_groups
    from estimator.flags import human_int

    fact = facts.values.get("max_model_len")
    if fact is None or str(fact.source).startswith("cmdline") or not isinstance(fact.value, int):
        return ""
    shown = [words for key, words in flag_groups(base) if key == "max_model_len"]
    value = (shown[-1][0].partition("=")[2] or (shown[-1][1] if len(shown[-1]) > 1 else "")) if shown else ""
    length = human_int(value.strip()) if value.strip() else None       # "32K" as vLLM reads it; "auto": None
    return f"--max-model-len {fact.value}" if length and length > 0 and length != fact.value else ""


def impossible_prose_quantization(facts, spec, settings) -> str | None:
    """A format only the paste's words name ("switched to the AWQ variant") that the served checkpoint
    cannot load in: AWQ, GPTQ, NVFP4 … need an export in that format (vLLM quantizes a 16-bit checkpoint
    while loading only with ONLINE_QUANT_METHODS), so with a 16-bit repo the words are about another
    run. Drops it from `settings` and says so; None when the paste states it as a flag or the
    checkpoint (or its name) is quantized."""
    from estimator.vllm import ONLINE_QUANT_METHODS

    fact, served = facts.values.get("quantization"), facts.values.get("model")
    method = str(settings.quantization or "").lower()
    # only words (not a flag, nor the checkpoint's own name) against a checkpoint the run names exactly
    # (its command, not prose such as "Qwen3.6-35B-A3B W4A16", which describes an export)
    if fact is None or not str(fact.source).startswith("prose_quant") or served is None or served.guess \
            or not method or spec.quantization or method in ONLINE_QUANT_METHODS:
        return None
    settings.quantization = None
    return (f"the paste's words name {fact.value}, but {spec.model_id} is a 16-bit checkpoint, which vLLM "
            f"cannot load as {fact.value} (it quantizes while loading only to fp8, bitsandbytes or int8 experts): "
            "modelled unquantized, as the run that printed these figures served it — paste that run's command "
            "if it served another checkpoint")


def _model_of_path(facts, path: str, assumptions: list[str]) -> str | None:
    """The model a served local path holds: the directory's own name when it spells exactly one catalog
    model, else the name the run serves it under (_served_repo), which may be an alias of another repo
    ("openai/gpt-4o") and so comes second. Said in the assumptions."""
    from estimator.catalog import match_local_name

    ask = "say which model the path holds if it is another"
    parts = [p for p in path.replace("\\", "/").rstrip("/").split("/") if p]
    # the directory's own name, else the nearest of its parents that spells one: a Kaggle model is
    # mounted as /kaggle/input/<model>/<framework>/<variation>/<version>, a checkpoint sits in
    # <model>/checkpoint-500 or <model>/snapshots/<commit>
    for depth, part in enumerate(reversed(parts[-5:])):
        model = match_local_name(part)
        if model:
            where = "whose name" if depth == 0 else f"whose directory {part}"
            assumptions.append(f"the command serves the local path {path}, {where} spells {model} "
                               f"(kvdoctor's catalog): modelled as that model — {ask}")
            return model
    model = _served_repo(facts)
    if model:
        assumptions.append(f"the command serves the local path {path}, under the name {model} "
                           f"(--served-model-name): modelled as that Hub repo — {ask}")
    return model


def _asked_length_notes(facts, est: Estimate | None) -> list[str]:
    """A context the prose asks for ("with 128k context") that the model's config does not allow: the
    estimate sizes it all the same, but vLLM refuses such a --max-model-len before any memory is touched
    (memory.length_over_config), which the fixes' commands do not undo."""
    from estimator.memory import length_over_config

    asked = facts.values.get("max_model_len")
    if est is None or asked is None or asked.source != "prose_context":
        return []
    cap = length_over_config(est.spec, est.settings.replace(allow_long_max_model_len=False), est.profile)
    if cap is None:
        return []
    return [f"The {est.max_model_len:,}-token context asked for is longer than the model's config allows ({cap:,}): "
            "vLLM refuses such a --max-model-len unless the model's RoPE scaling is configured (`--hf-overrides`, as "
            "its model card gives it) or VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set. The figures are for the length asked."]


def _four_bit_text(est: Estimate, fixes: list) -> str:
    """What a 4-bit export of the model would hold with the run's other settings (advice.four_bit_checkpoint)."""
    from estimator.advice import four_bit_checkpoint
    from estimator.api import model_stem

    four = four_bit_checkpoint(est, fixes)
    if four is None:
        return ""
    tp = four.settings.tensor_parallel_size
    split = (f", split with `--tensor-parallel-size {tp}` over {four.gpu_count} GPUs,"
             if tp != est.settings.tensor_parallel_size else "")
    return (f"a 4-bit AWQ or GPTQ export of {model_stem(est.spec.model_id)} (modelled as AWQ: 4 bits in groups of 128)"
            f"{split} takes {four.weights_bytes / GiB:.2f} GiB of weights per GPU against {est.weights_bytes / GiB:.2f} "
            f"GiB per GPU now; with the run's other settings the KV cache then holds {four.kv_cache_tokens:,} tokens, "
            f"{four.max_concurrency:.2f}× concurrency at {four.max_model_len:,} tokens. Not a flag: serve such a "
            "checkpoint instead (4-bit weights cost some accuracy)")


def _guessed_organisation(facts) -> str | None:
    """A model the paste names without its Hub organisation (a local path's last directory, a bare
    name) is read under the organisation its family publishes from (paste_prose.guess_repo): a guess,
    which a reply says — the weights may be another's upload (vllm#40002 served
    ${PATH_TO_MODELS}/gemma-4-26B-A4B-it-AWQ-4bit, which google never published)."""
    fact = facts.values.get("model")
    if fact is None or not fact.guess or "/" not in str(fact.value):
        return None
    repo = str(fact.value)
    org, name = repo.split("/", 1)
    named = (facts.text or "")[fact.span[0]:fact.span[1]].strip().strip("'\"") if fact.span else ""
    parts = [p for p in re.split(r"[/\\]", named) if p]
    if not parts or [p.lower() for p in parts[-2:]] == [org.lower(), name.lower()] \
            or parts[-1].lower() in (f"{org}_{name}".lower(), f"{org}-{name}".lower()):
        return None         # the paste spells the organisation itself (…/Qwen/Qwen2.5-7B-Instruct, Qwen_QwQ-32B-AWQ)
    if len(parts) > 1 or named.startswith(("/", "~", "$", ".")):
        return (f"the command serves the local path {named}: read as {repo}, the repo of that name from its family's "
                "organisation — say the repo id if the path holds another's upload")
    return (f"the paste names {named} without a Hub organisation: read as {repo}, its family's — say the repo id "
            "if it is another's upload")


def _served_repo(facts) -> str | None:
    """The name a run serves a local path under, where it is a Hub repo id ("sambarnes/Midnight-Miqu-
    70B-v1.5_GPTQ32G" for /media/…/Midnight-Miqu-70B-v1.5_GPTQ32G): people serve a download under the
    id they fetched it by. None for a bare alias ("gpt-4", "my-model")."""
    from estimator.paste_prose import model_from_value

    served = str(facts.extra.get("served_model_name") or "")
    got = model_from_value(served) if served.count("/") == 1 and not served.startswith((".", "/", "~")) else None
    return got[0] if got and not got[1] else None


def _public(message: str) -> str:
    """A hub message without this server's own file paths (replies go to other people)."""
    try:
        from estimator.hub import _cache_dir

        return message.replace(str(_cache_dir(None)), "the local HF cache")
    except Exception:  # the message is still useful without the substitution
        return message


def _has_numbers(facts) -> bool:
    return any(facts.get(k) is not None for k in ("error_max_tokens_in_kv", "kv_tokens_capacity", "gpu_blocks",
                                                   "kv_cache_gib", "kv_needed_gib"))


def _anchored_estimate(facts, spec, card_ref, version, engine, stated: bool = True,
                       moved: list[str] | None = None, adjust: dict | None = None) -> Estimate:
    """The estimate of the paste's run, its stated figures fixed. `moved` collects the note when an
    unstated release had to give way to one that can run the model (else the note joins the estimate's
    assumptions). `adjust`: settings the paste does not show, read back from its figures
    (`capacity_settings`)."""
    from estimator.api import run_estimate

    settings = settings_from_facts(facts, version, engine)
    for key, value in (adjust or {}).items():
        setattr(settings, key, value)
    unquantized = impossible_prose_quantization(facts, spec, settings)
    capped = None if stated else loadable_release(spec, settings, facts.extra.get("version_hint"))
    tp_from_weights(facts, spec, settings)
    pp_from_weights(facts, spec, settings)
    f = facts.get

    from_peak = activation_from_facts(facts)
    overrides = {"weights_bytes": gib_bytes(f("weights_gib")),
                 "activation_bytes": from_peak[0] if from_peak else gib_bytes(f("activation_peak_gib")),
                 "non_torch_bytes": gib_bytes(f("non_torch_gib")), "cuda_graph_bytes": gib_bytes(f("cuda_graph_gib"))}
    read_total = torch_total_from_facts(facts) or (None if card_ref else total_from_graph_hint(facts))
    total = read_total[0] if read_total else None
    free = gib_bytes(f("free_memory_gib"))
    initial = facts.extra.get("initial_memory_usage_gib")
    if free is not None and total:
        # vLLM measures free memory after creating its CUDA context: the rest is other processes
        overrides["other_process_bytes"] = max(0, total - free - CUDA_CONTEXT)
    stage_gpus = _stage_gpus(facts, settings)
    if stage_gpus:
        overrides["stage_gpus"] = stage_gpus
    held = None
    if card_ref and overrides["weights_bytes"] and not total and not stage_gpus \
            and not states_its_size(card_ref):
        from estimator.gpus import family_card_holding

        held = family_card_holding(str(card_ref), overrides["weights_bytes"])
        if held is not None:
            named = card_ref
            card_ref = held.name
    # the GPUs the paste shows (prose, nvidia-smi's rows), which the advice keeps its splits within; not
    # the lower bound the parallel sizes give (paste._derive_gpu_count), which the settings hold already
    shown = facts.values.get("gpu_count")
    gpu_count = shown.value if shown is not None and shown.source != COUNT_FROM_SIZES else None
    def run() -> Estimate:
        return run_estimate(spec, card_ref, settings, gpu_count=gpu_count,
                            **{k: v for k, v in overrides.items() if v is not None})

    known = facts.extra.get("tp_from_cpu_blocks")
    if known:
        settings.tensor_parallel_size = known        # found by an earlier estimate of this paste
    est = run()
    split = None if known else tp_from_cpu_blocks(facts, est)
    if split:
        # the run's split, from V0's CPU block count: the estimate is of that run
        settings.tensor_parallel_size = split
        facts.extra["tp_from_cpu_blocks"] = split
        est = run()
    elif not known and (by_count := tp_from_gpu_count(facts, est, gpu_count)):
        # weights one card cannot hold, in a run that got to sizing its KV cache: split over the GPUs shown
        weights, budget, read_tp = est.weights_bytes, est.budget_bytes, settings.tensor_parallel_size
        settings.tensor_parallel_size = by_count
        split_est = run()
        if split_est.weights_bytes <= split_est.budget_bytes:
            est = split_est
            est.assumptions.append(
                f"no --tensor-parallel-size in the paste: the model's {weights / GiB:,.2f} GiB of weights exceed one "
                f"card's {budget / GiB:,.2f} GiB budget, and vLLM got as far as sizing its KV cache, so they were split "
                f"over the {by_count} GPUs the paste shows: tensor parallelism {by_count} assumed (pipeline stages "
                "would split them as well)")
        else:
            settings.tensor_parallel_size = read_tp    # no split over those GPUs holds them either: not the explanation
    if capped and moved is not None:
        moved.append(capped)
    elif capped:
        est.assumptions.insert(0, capped)
    if unquantized:
        est.assumptions.append(unquantized)
    if settings.enable_lora and facts.extra.get("lora_rank_assumed"):
        est.assumptions.append(f"the paste does not show the max_lora_rank Unsloth passed vLLM: its from_pretrained "
                               f"default {settings.max_lora_rank} assumed for the LoRA slots")
    if held is not None:
        est.assumptions.append(f"the paste names the {named} without its size, but vLLM loaded "
                               f"{overrides['weights_bytes'] / GiB:.2f} GiB of weights per GPU, more than that "
                               f"card's smallest version holds: modelled as the {held.name} "
                               f"({held.total_bytes / GiB:.2f} GiB) — say the size if that is wrong")
    if total:
        est = with_printed_total(est, total)
    elif free is not None and not card_ref and not stage_gpus:
        est = card_from_free(est, free, spec, settings, gpu_count, overrides)
    # what the first estimate shows the paste settles: each independent of the others, one re-run
    changes: dict = {}
    graphs = graph_from_facts(facts, est.gpu_total_bytes)
    if graphs is not None:
        changes["cuda_graph_bytes"] = graphs[0]
    if initial is not None and free is None and settings.tensor_parallel_size * settings.pipeline_parallel_size == 1:
        # 0.6.4's "initial_memory_usage" is total − free when profiling starts (vllm/worker/worker.py):
        # this instance's weights and CUDA context too, so on one GPU the other processes hold the
        # rest. With several GPUs NCCL and custom all-reduce buffers are in it as well (vllm#10702,
        # TP 8: 3.19 GiB beyond the weights), in amounts the paste does not separate: no claim then.
        others = int(float(initial) * GiB) - est.weights_bytes - CUDA_CONTEXT
        if others > 0.1 * GiB:
            changes["other_process_bytes"] = others
    consumed = gib_bytes(facts.extra.get("consumed_gib"))
    if consumed is not None and overrides["weights_bytes"] is None:
        # From 0.27 the "Actual usage" line prints the weights and the non-torch memory as one figure,
        # "consumed memory (weights + non-torch)" (v1/worker/gpu_worker.py total_consumed): both are
        # fixed by it — the weights are that less the non-torch part (read, else estimated)
        nt = overrides["non_torch_bytes"] if overrides["non_torch_bytes"] is not None else est.non_torch_bytes
        changes["weights_bytes"] = max(0, consumed - nt)
        changes["non_torch_bytes"] = nt
    if overrides["activation_bytes"] is not None and other_worker_pool(facts, est) is not None:
        # the activation peak printed is a non-sampling worker's; the driver's is solved for below
        changes["activation_bytes"] = None
    if changes:
        overrides.update(changes)
        est = estimate_with(est, {**est.inputs, **changes})

    solved = kv_pool_from_facts(facts, est)
    pool = solved[0] if solved else None
    # the card's size left open (no card, or a name without its size): vLLM's figure implies it
    if pool is not None and not total and not stage_gpus and not settings.kv_cache_memory_bytes \
            and not states_its_size(card_ref):
        # graphs read as (U − U′) × total scale with the card tried, not the one first assumed
        frac = graphs[0] / est.gpu_total_bytes if graphs is not None else None
        # a pool vLLM printed in GiB is its own figure; one from tokens or blocks rests on the modelled layout
        est = card_from_pool(est, pool, spec, settings, gpu_count, overrides, named=bool(card_ref),
                              graph_frac=frac, printed_pool=solved[1].startswith(PRINTED_POOL))
    # 0.34+ with only the profile run's pool printed: that is the figure to reproduce
    printed = reserved_pool_fact(facts, est) if pool is None else None
    reserved = gib_bytes(printed.value) if printed is not None else None
    if reserved is not None and not settings.kv_cache_memory_bytes:
        anchored = anchor_to_pool(est, reserved, overrides, reserved=True)
        if anchored is not est:
            anchored.reconciliation.plain = est
        est = anchored
    if pool is not None and not settings.kv_cache_memory_bytes and est.error_kind != "free_memory_startup":
        anchored = anchor_to_pool(est, pool, overrides)
        if anchored is not est:
            anchored.reconciliation.plain = est  # advice checks fixes in both states
        est = anchored
    return est


def _claims_notes(facts, est: Estimate | None) -> list[str]:
    """Gently confirm or correct what the user says about sizes (weights, GB vs GiB)."""
    notes: list[str] = []
    claims = facts.extra.get("claims") or []
    weights = est.modelled_weights_bytes if est else None
    # a claim can be about every GPU together ("72B at FP16 = ~144 GB" on two cards)
    ranks = est.settings.tensor_parallel_size * est.settings.pipeline_parallel_size if est else 1
    for c in claims:
        gb = c.get("gb")
        if gb is None or not weights or c.get("about") not in (None, "weights", "parameters", "model"):
            continue
        c = {**c, "text": str(c.get("text", "")).strip().lstrip("•*-– ").strip()}
        real_gb = weights / 1e9
        real = weights / GiB if c.get("unit") == "GiB" else real_gb     # in the claim's own unit
        if abs(gb - real) / real <= 0.12:
            notes.append(f"You're right about \"{c['text']}\": the weights take {weights / GiB:.2f} GiB "
                         f"({real_gb:.1f} GB) per GPU.")
        elif ranks > 1 and abs(gb - real * ranks) / (real * ranks) <= 0.12:
            notes.append(f"You're right about \"{c['text']}\" for the {ranks} GPUs together: each holds its share, "
                         f"{weights / GiB:.2f} GiB ({real_gb:.1f} GB) of weights.")
        else:
            # "it does not halve it" is the reason only where the claim is about half of a 16-bit checkpoint
            halved = not (est.spec.quantization or est.settings.quantization) and 0.4 <= gb / real <= 0.6
            why = (f" — dtype auto keeps the checkpoint's {est.spec.torch_dtype or '16-bit'} (2 bytes per "
                   f"parameter), it does not halve it" if halved else "")
            notes.append(f"\"{c['text']}\" is not what vLLM loads: the weights take {weights / GiB:.2f} GiB "
                         f"({real_gb:.1f} GB) per GPU{why}.")
    if est is not None and " GB" in (facts.text or "").replace("GB", " GB"):
        total = est.gpu_total_bytes
        # the card as the user named it where the catalog sizes it as another (an A800 as the A100-SXM4-80GB)
        card = f"{est.gpu.product} ({est.gpu_name} to the catalog)" if est.gpu is not None and est.gpu.product \
            else est.gpu_name
        notes.append(f"GB vs GiB: this {card} has {total / GiB:.2f} GiB as torch reports it "
                     f"({total / 1e9:.1f} GB); vLLM's figures are GiB (2^30 bytes), even where a message says GB.")
    capacity = _group_capacity_note(facts, est)
    if capacity:
        notes.append(capacity)
    if est is not None and est.settings.tensor_parallel_size > 1:
        kv = ("a whole copy of the KV cache (one latent KV head, replicated)" if est.spec.kv_replicated_by_tp
              else "its share of the KV heads")
        notes.append(f"All figures are per GPU: with tensor parallelism each GPU holds its share of the weights and "
                     f"{kv}, and vLLM's token capacity is per GPU pool, not the sum over GPUs.")
    return notes


def _group_capacity_note(facts, est: Estimate | None) -> str | None:
    """0.9.1–0.20.0 print a hybrid model's "GPU KV cache size" as its blocks ÷ KV groups × block size
    (vllm.py capacity_rule "v1_groups"): below max_model_len even where whole requests fit, which reads
    as a failure. Said where vLLM's figure (or the model's) is that low and the concurrency is not, with
    what later releases print for the same pool: users comparing 0.20.0 with 0.21 see a tenfold jump
    (vllm#43308, Gemma 4 31B: ~55k → ~525k tokens, the pool unchanged)."""
    if est is None or est.profile.capacity_rule != "v1_groups" or est.layout.num_groups < 2 or not est.gpu_blocks \
            or est.layout.dsv4 is not None:      # DeepSeek-V4's compressed caches grow with the context too
        return None
    read_tokens, printed = facts.get("kv_tokens_capacity"), facts.get("max_concurrency")
    tokens, conc = read_tokens or est.kv_cache_tokens, printed or est.max_concurrency
    length = est.max_model_len
    if not tokens or int(tokens) >= length or float(conc) < 1:
        return None
    read = (f"The concurrency line vLLM printed is the one to read: {float(conc):.2f}× at {length:,} tokens" if printed
            else f"The \"Maximum concurrency\" line vLLM prints next is the one to read (by the model's arithmetic, "
            f"{float(conc):.2f}× at {length:,} tokens)")
    # a figure the paste did not print is not quoted as vLLM's message
    size = (f"\"GPU KV cache size: {int(tokens):,} tokens\"" if read_tokens else
            f"The \"GPU KV cache size\" vLLM prints (by the model's arithmetic, {int(tokens):,} tokens)")
    return (f"{size} is below max_model_len ({length:,}) but is no shortage: "
            f"vLLM {est.profile.release} prints a hybrid model's pool as its blocks ÷ {est.layout.num_groups} KV groups "
            f"× {est.layout.block_size:,} tokens per block, while only the full-attention group's blocks grow with "
            f"a request's context. {read}, so whole requests fit. From {version_text(CONCURRENCY_CAPACITY_FROM)} "
            f"vLLM prints that concurrency × max_model_len instead: about {int(float(conc) * length):,} tokens for "
            f"the same pool.")


def _unknown_quantization_text(method: str) -> str:
    """vLLM refused the weights' format before sizing any memory: say which releases have it."""
    from estimator.vllm import QUANT_METHOD_REMOVED, last_release_before

    out = (f"**Not a memory problem**: this vLLM has no `{method}` quantization method, so it stops before "
           "loading the model.")
    if method in QUANT_METHOD_REMOVED:
        gone = QUANT_METHOD_REMOVED[method]
        last = last_release_before(gone)
        return (out + f" {method} support was removed in vLLM {version_text(gone)}. Fix: install the last release "
                f"that has it (`pip install vllm=={last}`), or serve an AWQ, GPTQ or FP8 export of the model.")
    return out + (" Fix: check the spelling of `--quantization` (vLLM's message lists the methods this release "
                  "has), or leave it out to let the checkpoint's own quantization_config decide.")


def _unsupported_architecture_text(names: list[str], version: str | None) -> str:
    """vLLM found none of the config's architectures in its model registry and stopped before sizing
    any memory: say which releases list them (estimator/data/vllm_architectures.json)."""
    from estimator.vllm import NEWEST, parse_version, registry_span

    ran = f"vLLM {version}" if version else "this vLLM"
    what = (f"the model's architecture (`{names[0]}`)" if len(names) == 1
            else f"any of the model's architectures ({', '.join(f'`{n}`' for n in names)})")
    out = (f"**Not a memory problem**: {ran} does not have {what} in its model registry, so it stops before "
           "loading the model.")
    known = [(n, span) for n in names if (span := registry_span(n))]
    if not known:
        return out + (f" No vLLM release up to {NEWEST} lists {'it' if len(names) == 1 else 'them'}: check "
                      "`architectures` in the model's config.json, or (vLLM ≥ 0.7.2) try the Transformers backend, "
                      "`--model-impl transformers`, if the transformers library has the model.")
    name, (first, last) = min(known, key=lambda k: parse_version(k[1][0]))
    listed = f"vLLM's model registry lists `{name}` from {first}" + (f" to {last}" if last else "")
    ran_at = parse_version(version) if version else None
    if ran_at is not None and parse_version(first) <= ran_at and (last is None or ran_at <= parse_version(last)):
        return out + (f" {listed}, {version} included: the message likely comes from another vLLM installation "
                      "than the one the paste shows (check `python -c 'import vllm; print(vllm.__version__)'` in "
                      "the environment that runs it).")
    if last is None:
        return out + f" {listed}. Fix: upgrade to vLLM {first} or newer (`pip install -U vllm`)."
    return out + (f" {listed}; later releases dropped it. Fix: install {last}, the last release that has it "
                  f"(`pip install vllm=={last}`).")


def _summary(d: Diagnosis, facts, est: Estimate | None) -> str:
    f = facts.get
    kind = d.error_kind
    too_big = False     # a free-memory failure of a model whose weights exceed the whole card
    if kind is None and facts.extra.get("unknown_quantization"):
        return _unknown_quantization_text(facts.extra["unknown_quantization"])
    if kind is None and facts.extra.get("unsupported_architectures"):
        return _unsupported_architecture_text(facts.extra["unsupported_architectures"], f("vllm_version"))
    if kind is None:
        out = "I found no vLLM memory error in this text."
        return f"{out} {_verdict(d, est)}" if est is not None and not d.disagrees else out
    parts: list[str] = []
    if kind in ("kv_capacity_v0", "kv_capacity_v1"):
        # V1's length is vLLM's own only when the message printed it ("Based on the available memory, the
        # estimated maximum model length is N", 0.9+); kvdoctor's fit is not "vLLM estimates"
        cap = f("error_max_tokens_in_kv") or f("estimated_max_model_len") \
            or (est.max_model_len_fit if est and kind == "kv_capacity_v0" else None)
        want = f("max_model_len") or (est.max_model_len if est else None)
        request = f"{want:,}-token " if want else "full-length "

        def printed(key: str) -> str:
            return f"{float(f(key)):.2f}"     # vLLM's two decimals

        if cap is not None and want is not None and kind == "kv_capacity_v0":
            parts.append(f"vLLM's KV cache can hold **{cap:,} tokens**, but max_model_len is **{want:,}**, so "
                         "one full-length request cannot fit and the engine refuses to start.")
        elif cap is not None and want is not None:
            parts.append(f"vLLM estimates that the longest request its KV cache can hold is **{cap:,} tokens**, "
                         f"but max_model_len is **{want:,}**, so the engine refuses to start.")
        elif cap is not None:
            parts.append(f"vLLM estimates that the longest request its KV cache can hold is **{cap:,} tokens**, "
                         "shorter than the max_model_len it was given, so the engine refuses to start.")
        elif est is not None and want is not None and f("kv_available_gib") is not None and est.max_model_len_fit < want:
            # a message without vLLM's own estimate (before 0.9, or cut): the length that fits the memory
            # it printed, by its arithmetic, labelled as kvdoctor's
            parts.append(f"With the **{printed('kv_available_gib')} GiB** vLLM had for the KV cache, the longest request "
                         f"that fits is **{est.max_model_len_fit:,} tokens** (derived by vLLM's arithmetic), but "
                         f"max_model_len is **{want:,}**, so the engine refuses to start.")
        elif f("kv_needed_gib") is not None and f("kv_available_gib") is not None:
            parts.append(f"One {request}request needs **{printed('kv_needed_gib')} GiB** of KV cache but vLLM has "
                         f"**{printed('kv_available_gib')} GiB** for it, so the engine refuses to start.")
        elif f("kv_needed_gib") is not None:
            # the message cut after its need: what vLLM had for the KV cache is not in the paste
            parts.append(f"vLLM says one {request}request needs **{printed('kv_needed_gib')} GiB** of KV cache, more than "
                         "it had for it, so the engine refuses to start (the paste cuts the message before the memory it had).")
        if est is not None and est.reconciliation.failed and f("kv_needed_gib") is not None:
            parts.append(f"vLLM says {want or est.max_model_len:,} tokens need {printed('kv_needed_gib')} GiB of "
                         f"KV; the KV pool is {_pool_text(d)}.")
        elif est is not None:
            sentence = need_sentence(est, want or est.max_model_len)
            parts.append(f"{sentence[0].upper()}{sentence[1:]}; the KV pool is {_pool_text(d)}.")
            if est.fits and f("kv_available_gib") is None and f("error_max_tokens_in_kv") is None:
                # nothing in the paste anchors the pool, and the forward model's is larger than vLLM's was
                parts.append("That pool is kvdoctor's forward estimate: vLLM had less, so something the estimate "
                             "does not model holds the difference.")
    elif kind == "no_cache_blocks":
        parts.append("vLLM had **no memory left for the KV cache** after weights, activations and other overhead.")
        others = est.others_charged_bytes if est is not None else 0
        if others:
            parts.append(f"Other processes hold {others / GiB:.2f} GiB of this GPU, and vLLM "
                         f"{est.profile.release} charges that memory to this instance's own "
                         f"{est.budget_bytes / GiB:.2f} GiB budget ({est.settings.gpu_memory_utilization:g} × "
                         f"{est.gpu_total_bytes / GiB:.2f} GiB).")
    elif kind == "free_memory_startup":
        too_big = est is not None and est.weights_bytes > est.gpu_total_bytes
        parts.append("vLLM checks at start that the requested share of the GPU is free; **another process holds "
                     "part of the GPU**, so the request cannot be met."
                     + (f" Under WSL2/Windows that is {WINDOWS_HOLDERS}." if facts.extra.get("windows_host") else ""))
        if too_big:
            # freeing the GPU would only move the failure to the weights' loading
            read = f("weights_gib") is not None
            parts.append(f"Even on an empty GPU the model would not fit: its weights take "
                         f"{est.weights_bytes / GiB:.2f} GiB per GPU ({'read' if read else 'estimated'}), more than "
                         f"this card's {est.gpu_total_bytes / GiB:.2f} GiB, so it needs tensor parallelism over more "
                         "GPUs or a quantized checkpoint.")
    elif kind.startswith("cuda_oom"):
        phase = {"cuda_oom_load": "while loading the weights", "cuda_oom_profile": "during the profile run",
                 "cuda_oom_graph": "while capturing CUDA graphs", "cuda_oom_runtime": "while serving"}.get(kind, "")
        warmup = facts.extra.get("sampler_warmup_requests")
        if kind == "cuda_oom_graph" and warmup:
            parts.append(f"PyTorch ran **out of GPU memory while warming up the sampler** with {int(warmup):,} dummy "
                         "requests, after the KV cache was allocated: outside vLLM's budget, in the memory it leaves.")
        elif kind == "cuda_oom_graph" and est is not None and est.settings.enforce_eager:
            # the phase after the KV cache is sized (paste._PHASES "graph"): an eager run captures nothing there
            parts.append("PyTorch ran **out of GPU memory after the KV cache was sized**: with --enforce-eager no CUDA "
                         "graphs are captured, so it was the cache's allocation or the warm-up that follows it.")
        else:
            parts.append(f"PyTorch ran **out of GPU memory {phase}**.")
    elif kind == "startup_log_ok":
        parts.append("This start-up log shows no error; here is how vLLM used the memory.")
    elif kind == "other" and facts.extra.get("host_killed"):
        parts.append(_killed_text(d, facts, est))
    elif kind == "other" and facts.extra.get("host_mmap_bytes"):
        parts.append(_mmap_text(facts))
    elif kind == "mamba_blocks":
        parts.append("This hybrid (Mamba/linear-attention) model needs one cache block per running sequence, "
                     "and max_num_seqs is larger than the number of blocks.")
    elif d.settings_error:
        parts.append("**A settings error, not a memory one**: " + _settings_error_text(kind, facts))
    elif facts.extra.get("shared_mem_available") is not None:
        need, have, want = facts.extra.get("shared_mem_required"), facts.extra["shared_mem_available"], f("max_model_len")
        needed = f"{float(need):,.0f} B needed, " if isinstance(need, (int, float)) else ""
        parts.append(f"Not a GPU-memory shortage: vLLM {'' if est is None else est.profile.release + ' '}refused "
                     f"max_model_len {f'{int(want):,}' if isinstance(want, (int, float)) else '(not shown)'} because "
                     f"its attention kernel (PagedAttention V1, vLLM 0.2.0–0.2.1) keeps one float per context token "
                     f"in the GPU's shared memory: {needed}{float(have):,.0f} B per block on this GPU.")
    elif d.not_memory:
        # the engine's start failed on an exception that speaks of no memory (paste._root_exception)
        parts.append(f"**Not a memory error**: vLLM's engine failed to start with `{facts.extra['root_exception']}`. "
                     "kvdoctor explains where vLLM's GPU memory goes; this failure needs the fix its message points "
                     "to, and no memory setting changes it.")
    else:
        parts.append(f"vLLM reported a memory-related problem ({kind}).")
        if est is not None and est.fits:
            parts.append(f"By vLLM's arithmetic these settings fit ({est.kv_cache_tokens:,} tokens of KV for "
                         f"{est.max_model_len:,}-token requests), so it was not the KV-capacity check.")
    if d.suggestions and not (d.disagrees and d.unchecked):
        s = d.suggestions[0]
        # a start-up log without an error asks how to get more, not what to mend
        lead = "For more KV cache" if kind == "startup_log_ok" else "Change to make"
        # where the model's state contradicts vLLM's figures, its token counts are not vLLM's
        whose = f"{MODELS_OWN}: " if d.disagrees else ""
        parts.append(f"{lead}: `{s['flags']}` ({whose}{_short_effect(s)}).")
    elif d.unchecked and d.disagrees:
        u = d.unchecked[0]
        lead = "For more KV cache" if kind == "startup_log_ok" else "Likely fix"
        parts.append(f"{lead}: {'`' + u['flags'] + '` — ' if u['flags'] else ''}{u['why']}. The model's "
                     "figures disagree with vLLM's (see Checks), so the fixes it re-checked are less certain.")
    elif d.unchecked:
        u = d.unchecked[0]
        # a setting vLLM accepts is a fix, not a guess; for a model too big for the card it only gets
        # past the start-up check
        lead = "Fix" if d.settings_error else "For the start-up check alone" if too_big else "Likely fix"
        stub = next((x for x in d.unchecked[1:2] if not x["flags"] and STUB_CONTEXT in x["why"]), None)
        if stub is not None:
            # vLLM's own capacity is a stub of the length asked for (advice.facts_fixes): what makes room
            # leads, not a context too short to use
            parts.append(f"A shorter context fits (`{u['flags']}`), but {stub['why']}.")
        else:
            parts.append(f"{lead}: {'`' + u['flags'] + '` — ' if u['flags'] else ''}{u['why']}.")
        if d.missing:
            parts.append("To re-check it with vLLM's arithmetic I need " + " and ".join(d.missing) + ".")
    elif d.disagrees:
        parts.append("The model's figures disagree with vLLM's (see Checks), so it offers no re-checked fix.")
    if not d.suggestions and not d.unchecked and d.missing:
        parts.append("To say more I need " + " and ".join(d.missing) + ".")
    return redact(" ".join(parts))


def _settings_error_text(kind: str, facts) -> str:
    """What a settings error means, in the numbers vLLM printed (the fixes: advice.config_error_fixes)."""
    f, x = facts.get, facts.extra
    check, tb = facts.values["error_kind"].source, f("max_num_batched_tokens")
    if check == "mamba_align":
        return (f"with prefix caching on a hybrid (Mamba / linear-attention) model, vLLM's Mamba cache 'align' mode "
                f"needs max_num_batched_tokens ({tb:,}) to be at least the attention block size it chose "
                f"({int(x['align_block_size']):,} tokens, so that an attention page is as large as a Mamba state's).")
    if check == "tb_lt_len":
        return (f"without chunked prefill vLLM's scheduler takes a whole prompt in one batch, so max_num_batched_tokens "
                f"({tb:,}) cannot be smaller than max_model_len ({f('max_model_len'):,}).")
    if check == "lora_rank":
        rank, most = int(x["lora_rank"]), int(x["max_lora_rank"])
        return (f"the adapter's LoRA rank ({rank:,}) is above --max-lora-rank ({most:,}; vLLM's default is 16), the rank "
                "vLLM sizes its LoRA buffers for when it starts, so it refuses to load the adapter.")
    if check == "tb_lt_seqs":
        return (f"every running sequence takes at least one token of a batch, so max_num_batched_tokens ({tb:,}) cannot "
                f"be smaller than max_num_seqs ({f('max_num_seqs'):,}).")
    if kind == "tp_divisibility":
        heads, tp = x.get("num_heads"), f("tensor_parallel_size")
        if isinstance(heads, (int, float)) and tp:
            return (f"vLLM splits the {int(heads)} attention heads evenly over the tensor-parallel GPUs, and "
                    f"{int(heads)} cannot be split {tp} ways.")
        return "the model's layers or heads cannot be split evenly over this many GPUs."
    if kind == "bf16_compute_capability":
        return "the model asks for bfloat16, which this GPU cannot compute (it needs compute capability 8.0, Ampere or newer)."
    derived, want = x.get("derived_max_model_len"), f("max_model_len")
    if isinstance(derived, (int, float)) and want:
        return f"the max_model_len you set ({int(want):,}) is longer than the model's config allows ({int(derived):,})."
    return "the max_model_len you set is longer than the model's config allows."


def _cpu_swap_bytes(facts, est: Estimate) -> int:
    """V0's pinned CPU swap space per GPU: the "# CPU blocks" printed × bytes per block, else
    --swap-space (GiB), else its default of 4 GiB (vllm/config.py CacheConfig); none in V1."""
    if est.profile.engine != "v0":
        return 0
    blocks = facts.extra.get("cpu_blocks")
    if blocks:
        return int(blocks) * est.layout.bytes_per_block
    return v0_swap_bytes(facts)


HOST_MEMORY_ASK = "`free -h` and `ulimit -v` from the machine (or container) that runs vLLM: its RAM, swap and limit"


def _mmap_text(facts) -> str:
    """The host refused to map a checkpoint file (paste._MMAP_REFUSED). safetensors' torch loader maps each
    file whole, private and writable (torch.UntypedStorage.from_file, shared=False), a mapping Linux charges
    in full: its default overcommit heuristic refuses one larger than RAM plus swap (mm/util.c
    __vm_enough_memory, OVERCOMMIT_GUESS), vm.overcommit_memory=2 anything beyond the commit limit, and an
    address-space limit (`ulimit -v`) anything beyond it. A human answer on vllm#2391 blamed CPU cores."""
    size = int(facts.extra["host_mmap_bytes"])
    name = str(facts.extra.get("host_mmap_file") or "").replace("\\", "/").rsplit("/", 1)[-1]
    return (f"**Host memory, not GPU memory**: while loading the checkpoint the operating system refused to map "
            f"{size:,} bytes ({size / GiB:.2f} GiB, {size / 1e9:.1f} GB) of `{name}` into vLLM's process "
            "(\"Cannot allocate memory\", ENOMEM), before any GPU memory was sized. safetensors maps each file whole "
            "and writable, which Linux charges in full: its default overcommit check refuses a mapping larger than the "
            "machine's RAM plus swap, `vm.overcommit_memory=2` one beyond its commit limit, and `ulimit -v` one beyond "
            "that limit. Give the machine more RAM or swap than the file's size (or lift the limit), or serve a copy "
            "saved in smaller shards.")


def _killed_text(d: Diagnosis, facts, est: Estimate | None) -> str:
    """Why the kernel killed the process, from the figures the diagnosis has."""
    out = ("The container was **killed at its memory limit** (OOMKilled, exit code 137): that limit is host RAM, not "
           "GPU memory — what vLLM's processes hold in RAM (the checkpoint as it loads, torch.compile's workers) counts "
           "against it, the GPU's memory does not. Raise the container's limit or lower what those processes hold."
           if facts.extra.get("container_killed") else
           "The process was **killed by the operating system**: the kernel's OOM killer ends a process when the "
           "machine runs out of RAM (host memory, not GPU memory), and the shell prints `Killed`.")
    if est is None:
        return out
    swap = _cpu_swap_bytes(facts, est)
    cpu = facts.extra.get("cpu_blocks")
    pinned = (f" and pinned {swap / GiB:.2f} GiB of CPU memory as swap space"
              + (f" ({int(cpu):,} CPU blocks)" if cpu else "") if swap else "")
    budget = est.budget_bytes
    if est.gpu is not None and est.gpu.unified:
        left = est.gpu_total_bytes - budget - swap
        rest = (f"leaving {left / GiB:.2f} GiB for the operating system, Python and everything else" if left > 0 else
                f"{-left / GiB:.2f} GiB more than the board has, before the operating system and Python take any")
        return (out + f" On the {est.gpu_name} the GPU and the CPU share the same {est.gpu_total_bytes / GiB:.2f} GiB: "
                f"vLLM took {est.settings.gpu_memory_utilization:g} × {est.gpu_total_bytes / GiB:.2f} = "
                f"{budget / GiB:.2f} GiB for weights, activations and KV cache{pinned}, {rest}.")
    return (out + (f" Besides the model's files, vLLM{pinned.replace(' and pinned', ' pinned')}." if swap else "")
            + ("" if facts.extra.get("container_killed") else " Check the host's (or the container's) memory limit."))


def _pool_text(d: Diagnosis) -> str:
    st = d.state
    kv = st.figures.get("kv_pool") if st else None
    if kv is None or kv.value is None:
        return "unknown"
    out = f"{kv.value / GiB:.2f} GiB ({kv.how})"
    budget = st.figures.get("budget")
    non_kv = st.figures.get("non_kv")
    if budget is not None and non_kv is not None:
        out += f" of a {budget.value / GiB:.2f} GiB budget, with {non_kv.value / GiB:.2f} GiB going to everything else"
    return out


def _verdict(d: Diagnosis, est: Estimate) -> str:
    """For a text with no error in it (a question, a command not yet run): what vLLM would make of the
    settings it gives, by the estimate, and the first fix where they do not fit."""
    where = f"vLLM {est.profile.release}'s arithmetic"
    if est.fits and est.kv_cache_tokens < est.max_model_len:
        # a hybrid model's pool as 0.9.1–0.20.0 print it (blocks ÷ groups): the concurrency says it (see the note)
        return (f"By {where} these settings fit: {est.max_concurrency:.2f}× concurrency at {est.max_model_len:,}-token "
                f"requests (vLLM prints the KV cache as {est.kv_cache_tokens:,} tokens; see below).")
    if est.fits:
        return (f"By {where} these settings fit: **{est.kv_cache_tokens:,} tokens** of KV cache, "
                f"{est.max_concurrency:.2f}× concurrency at {est.max_model_len:,}-token requests.")
    # (no "longer than the config" case: a paste's length is vLLM's to accept, settings_from_facts)
    if est.error_kind == "mamba_blocks":
        why = (f"max_num_seqs ({est.settings.max_num_seqs:,}) is more than the {est.gpu_blocks:,} cache blocks, one "
               "Mamba state per running sequence")
    elif mamba_align_refused(est.layout, est.settings, est.profile):
        why = f"vLLM refuses the settings before it sizes memory: {align_refusal(est)}"
    elif est.weights_bytes >= est.budget_bytes:
        why = (f"the weights alone ({est.weights_bytes / GiB:.2f} GiB per GPU) exceed its "
               f"{est.budget_bytes / GiB:.2f} GiB budget")
    else:
        why = (f"one {est.max_model_len:,}-token request needs {est.kv_needed_bytes / GiB:.2f} GiB of KV cache and "
               f"{max(0, est.kv_cache_bytes) / GiB:.2f} GiB is left for it")
    out = f"By {where} these settings **do not fit**: {why}."
    if d.suggestions:
        s = d.suggestions[0]
        out += f" Change to make: `{s['flags']}` ({_short_effect(s)})."
    if d.four_bit:
        out += " A 4-bit checkpoint of the model would serve the whole context (below)."
    return out


def _short_effect(s: dict) -> str:
    """A fix's effect for the headline, with the condition it puts on the user (advice.condition_of)."""
    from estimator.advice import condition_of

    tok = s.get("kv_cache_tokens")
    conc = s.get("max_concurrency")
    txt = "fits"
    if tok is not None:
        txt += f", {tok:,} tokens of KV"
    if conc is not None:
        txt += f", {conc:.2f}× concurrency"
    cond = condition_of(s)
    return f"{txt}; {cond}" if cond else txt


__all__ = ["Diagnosis", "diagnose", "explain_json", "render_markdown", "render_slack", "render_text"]
