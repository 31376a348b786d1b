"""Read a pasted vLLM error or log (plus the command line and prose around it) → `Facts`.

Why: people paste what vLLM printed — a fragment, inside markdown or Slack, with their command
and a sentence about their GPU — and every later stage (derive, advice, reply) needs those
numbers exactly, each with the span it was read from, or needs to know there is no vLLM
memory problem at all (`error_kind` None: the bots stay silent).

Stages:
1. `paste_text.prepare`: undo Slack/HTML/ANSI/markdown damage and strip log prefixes, keeping
   offset maps to the original text and the GPU rank of each prefixed line.
2. `paste_templates.TEMPLATES`: every memory message of ../shared/docs/vllm-memory.md §4.
3. `flags`: settings from command lines, kwargs, config dumps, non-default args, env vars.
4. `paste_prose`: model, GPU, GPU count, vLLM version, nvidia-smi, collect_env, claims;
   `paste_tables`: markdown/pipe tables and "Label: value" rows (the compared run picked by rule).
5. Resolution: per key, the paste's focal run (the invocation whose output holds the error),
   then the highest-priority source, then rank 0; values that still disagree are not guessed
   between (they go to `extra["alternatives"]`).
6. `error_kind` (design.md §4) from the messages found, with the OOM phase from where it hit.

Never raises: any input (bytes, junk, 1 MB) gives a `Facts`, quickly (regex timeouts, caps).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from functools import partial

import regex

from estimator import flags as _flags
from estimator import paste_prose as _prose
from estimator import paste_tables as _tables
from estimator import paste_templates as _tpl
from estimator.log_sites import log_line_releases
from estimator.paste_cpu import read_cpu_backend
from estimator.paste_engines import VLLM_SHOWN, foreign_engine
from estimator.paste_text import (
    PasteText,
    budget,
    cpu_clock,
    decode,
    finditer,
    prepare,
    start_clock,
    stop_clock,
    worker_grid,
)
from estimator.paste_text import search as _search
from estimator.units import HALF_HUNDREDTH
from estimator.vllm import (
    CONCURRENCY_CAPACITY_FROM,
    EXTENSIBLE_KV_CACHE_FROM,
    QUANT_METHOD_REMOVED,
    RELEASES,
    next_release,
    version_text,
)

FACT_KEYS: tuple[str, ...] = (
    "model", "gpu", "gpu_count", "vllm_version", "tensor_parallel_size", "pipeline_parallel_size",
    "gpu_memory_utilization", "max_model_len", "dtype", "kv_cache_dtype", "quantization", "enforce_eager",
    "max_num_seqs", "max_num_batched_tokens", "total_gpu_memory_gib", "weights_gib", "activation_peak_gib",
    "non_torch_gib", "cuda_graph_gib", "kv_cache_gib", "gpu_blocks", "block_size", "kv_tokens_capacity",
    "error_max_tokens_in_kv", "kv_needed_gib", "kv_available_gib", "max_concurrency",
    "estimated_max_model_len", "free_memory_gib", "error_kind",
)
ERROR_KINDS: tuple[str, ...] = (
    "kv_capacity_v0", "kv_capacity_v1", "no_cache_blocks", "free_memory_startup", "cuda_oom_load",
    "cuda_oom_profile", "cuda_oom_graph", "cuda_oom_runtime", "tp_divisibility", "bf16_compute_capability",
    "max_model_len_derived", "mamba_blocks", "startup_log_ok", "other",
)
# Start-up errors about settings, not memory: answered from vLLM's own numbers, no memory estimate.
CONFIG_ERRORS: tuple[str, ...] = ("tp_divisibility", "bf16_compute_capability", "max_model_len_derived")
# vLLM's settings checks with no error_kind of their own in design.md §4, read as "other" (paste_templates):
# the scheduler's batch checks and the Mamba cache's align-mode check
SETTINGS_CHECKS: tuple[str, ...] = ("tb_lt_len", "tb_lt_seqs", "mamba_align", "lora_rank")


def settings_error(facts) -> bool:
    """Is the paste's error about settings, not memory: a CONFIG_ERRORS kind, or one of SETTINGS_CHECKS
    (kind "other")? Either is answered from vLLM's message, with the setting it names."""
    kind = facts.values.get("error_kind")
    return kind is not None and (kind.value in CONFIG_ERRORS or (kind.value == "other" and kind.source in SETTINGS_CHECKS))
_INT_KEYS = frozenset({
    "gpu_count", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "max_num_seqs",
    "max_num_batched_tokens", "gpu_blocks", "block_size", "kv_tokens_capacity", "error_max_tokens_in_kv",
    "estimated_max_model_len",
})
_FLOAT_KEYS = frozenset({
    "gpu_memory_utilization", "total_gpu_memory_gib", "weights_gib", "activation_peak_gib", "non_torch_gib",
    "cuda_graph_gib", "kv_cache_gib", "kv_needed_gib", "kv_available_gib", "max_concurrency", "free_memory_gib",
})
# Settings keys the flag scanner knows that are also fact keys.
_SETTING_FACTS = frozenset(FACT_KEYS) - {"error_kind", "gpu", "gpu_count", "vllm_version"}
# Sources that belong to one invocation (its command line, its printed arguments).
_RUN_SOURCES = frozenset({"cmdline", "kwargs", "nondefault_args", "config_dump", "flag"})
_SOURCE_PRIORITY = {
    "config_dump": _tpl.P_CONFIG, "nondefault_args": _tpl.P_NONDEFAULT, "cmdline": _tpl.P_CMDLINE,
    "kwargs": _tpl.P_CMDLINE, "env": _tpl.P_ENV, "flag": _tpl.P_FLAG, "kv": _tpl.P_KV,
    "prose": _tpl.P_GUESS + 5,      # a setting told in words ("`fp8_e4m3` KV"): below any flag or log value
}
_BUDGET_S = 0.45     # skip the prose stage when a paste has used this much CPU time already
_DEADLINE_S = 0.6    # hard CPU-time budget of one paste (paste_text.budget: regex timeouts shrink to fit)
_PROSE_HEAD = 150_000
_PROSE_TAIL = 50_000


@dataclass(frozen=True)
class Fact:
    value: object
    span: tuple[int, int]       # offsets in the original text given to read_paste
    source: str                 # template or rule that matched
    guess: bool = False         # inferred, not printed (repo id from a path, quantization from a name …)


@dataclass
class Facts:
    text: str
    values: dict[str, Fact] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)

    def get(self, key: str, default=None):
        f = self.values.get(key)
        return default if f is None else f.value

    def to_dict(self) -> dict:
        return {k: (self.values[k].value if k in self.values else None) for k in FACT_KEYS}

    def spans(self) -> dict:
        return {k: [f.span[0], f.span[1]] for k, f in self.values.items()}

    @property
    def error_kind(self) -> str | None:
        return self.get("error_kind")

    @property
    def printed_pool_gib(self):
        """The KV pool vLLM printed, in GiB: V0's / V1's pool line, else the "available KV cache memory" of
        V1's start-up or capacity error (a zero or missing pool line gives way to it)."""
        return self.get("kv_cache_gib") or self.get("kv_available_gib")


@dataclass
class _Occ:
    key: str
    value: object
    start: int
    end: int
    source: str
    priority: int
    rank: tuple | None = None
    guess: bool = False
    norm: object = None


def read_paste(text: str | bytes) -> Facts:
    """Facts of a paste. Never raises; bytes are decoded leniently."""
    try:
        raw = decode(text)
    except Exception:  # noqa: BLE001 - any undecodable object is "no text"
        raw = ""
    token = start_clock(_DEADLINE_S)
    try:
        return _read(raw)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not become a traceback for the user
        facts = Facts(raw)
        facts.extra["reader_error"] = f"{type(exc).__name__}: {exc}"
        return facts
    finally:
        stop_clock(token)


# ---------------------------------------------------------------------------------------------


def _read(raw: str) -> Facts:
    t0 = cpu_clock()
    pt = prepare(raw)
    text = pt.logical
    facts = Facts(raw)
    extra = facts.extra
    if pt.truncated:
        extra["truncated"] = True
    occs: list[_Occ] = []
    kinds: list[tuple[int, str, str]] = []      # (pos, kind, source)
    kind_ends: dict[int, int] = {}
    hints: list[tuple[str, str | None]] = []
    # how figures are printed: a weaker sign than a message's wording, dropped where it contradicts it
    figure_hints: list[tuple[str, str | None]] = []
    engines: list[tuple[int, str]] = []          # (strength, engine)
    memory_logs: list[int] = []
    xvals: dict[str, list[tuple[int, object]]] = {}

    # 2. templates
    low = text.lower()
    for t in _tpl.TEMPLATES:
        anchor = _tpl.ANCHORS.get(t.name)
        if anchor and anchor not in low:
            continue
        for m in _finditer(t.pattern, text):
            _template_match(t, m, pt, occs, xvals)
            if t.kind:
                kinds.append((m.start(), t.kind, t.name))
                kind_ends[m.start()] = m.end()
            if t.memory_log:
                memory_logs.append(m.start())
            if t.hint:
                hints.append(t.hint)
            if t.engine:
                engines.append((2 if t.kind else 1, t.engine))
            wording = _WORDING_HINTS.get(t.name)
            if wording is not None and (got := wording(m, text, pt)):
                hints.append(got)
            figure = _FIGURE_HINTS.get(t.name)
            if figure is not None and (got := figure(m)):
                figure_hints.append(got)
            if t.name in ("blocks_gpu_cpu", "blocks_gpu_only", "blocks_CUDA", "blocks_cuda", "blocks_other"):
                if _to_int(m.group("gpu_blocks")) is not None and _to_int(m.group("gpu_blocks")) <= 0:
                    kinds.append((m.start(), "no_cache_blocks", "blocks_le_zero"))
            if t.name == "v1_available_kv" and (_to_float(m.group("kv_available_gib")) or 0) < 0:
                # V1 raises "No available memory for the cache blocks" for a KV share ≤ 0 right after
                # printing it (v1/core/kv_cache_utils.py check_enough_kv_cache_memory): a paste that
                # stops at the negative figure ("EngineCore failed to start") failed that check
                kinds.append((m.start(), "no_cache_blocks", "available_kv_negative"))
    _log_prefix_hints(raw, hints)
    _torch_oom(text, pt, occs, kinds, extra)

    # 3. settings
    cmd_spans = _flags.command_spans(text)
    settings = _flags.scan_text(text)
    seen_spans: dict[tuple[int, int], int] = {}
    model_paths: list[str] = []
    for s in settings:
        prio = _SOURCE_PRIORITY.get(s.source, _tpl.P_KV)
        if s.source == "env":
            if _on_log_line(pt, text, s.span[0]):
                continue    # vLLM's own log line names it ("To try it now, set VLLM_…=1"): advice, not the run's
            extra.setdefault("env", {})[s.key] = s.value
            continue
        if s.span in seen_spans and seen_spans[s.span] >= prio:
            continue
        seen_spans[s.span] = prio
        if s.key == "served_model_name" and s.value:
            # the name clients call the run by: often another repo's id than the weights it served
            # (a local AWQ copy served as "deepseek-ai/DeepSeek-R1"); a fix's command keeps it
            extra.setdefault("served_model_name", str(s.value).strip("[]'\" "))
        if s.key == "model":
            got = _prose.model_from_value(str(s.value))
            model_paths.append(str(s.value))
            if got is None:
                extra.setdefault("model_path", str(s.value))
                continue
            repo, guessed = got
            if guessed:
                extra.setdefault("model_path", str(s.value))
            occs.append(_Occ("model", repo, s.span[0], s.span[1], f"{s.source}_model",
                             _tpl.P_GUESS + 5 if guessed else prio, pt.rank_at(s.span[0]), guessed))
            continue
        if s.key in _SETTING_FACTS:
            occs.append(_Occ(s.key, s.value, s.span[0], s.span[1], s.source, prio, pt.rank_at(s.span[0])))
        elif s.key in ("data_parallel_size", "decode_context_parallel_size", "cpu_offload_gb", "kv_cache_memory_bytes", "enable_chunked_prefill",
                       "swap_space", "max_seq_len_to_capture", "num_gpu_blocks_override", "enable_prefix_caching",
                       "enable_expert_parallel", "speculative_config", "speculative_model", "num_speculative_tokens",
                       "limit_mm_per_prompt", "async_scheduling", "mamba_cache_mode", "mm_encoder_tp_mode",
                       "language_model_only",
                       "performance_mode", "attention_backend", "enable_lora", "max_loras", "max_lora_rank",
                       "runner"):
            xvals.setdefault(s.key, []).append((s.span[0], s.value))
    _, dumps = _flags.scan_config_dump(text)
    for eng, ver, span in dumps:
        if eng:
            engines.append((3, eng.lower()))
        if ver:
            occs.append(_Occ("vllm_version", ver.lstrip("v"), span[0], span[1], "config_dump", _tpl.P_CONFIG))
    nd_settings, nd_dicts = _flags.scan_nondefault_args(text)
    if nd_dicts:
        extra["non_default_args"] = nd_dicts[0] if len(nd_dicts) == 1 else nd_dicts
    # Traceback paths: vllm/v1/… is the V1 engine; V0's worker and its cache check live elsewhere.
    code = _search(_ENGINE_PATHS, text) if "vllm/" in text or "raise_if_cache" in text else None
    if code is not None:
        engines.append((3, "v1" if code.group("v1") else "v0"))   # code that ran: outranks an env var
    if "EngineCore" in pt.clean and _search(_ENGINE_CORE, pt.clean) is not None:
        # V1's engine-core process ran (v1/engine/core.py: "EngineCore failed to start", the "(EngineCore_DP0
        # pid=…)" prefix); V0 has none. It outranks a VLLM_USE_V1=0 in another command of the paste (vllm#17431
        # set it for the run that worked, not for the one whose log it shows)
        engines.append((3, "v1"))
    # the `[mxfp4.py:N]` tag is in the log prefix, which `text` no longer has
    backend = _search(_MXFP4_BACKEND, pt.clean) if "fp4" in pt.clean or "FP4" in pt.clean else None
    if backend is not None:
        extra["mxfp4_backend"] = _mxfp4_backend_name(backend)
    runner = _search(_MODEL_RUNNER, text) if "odel" in text and "unner" in text else None
    if runner is not None:
        extra["model_runner_v2"] = runner.group("v1") is None
    load = _search(_V1_RUNNER_LOAD, pt.clean) if "gpu_model_runner" in pt.clean else None
    if load is not None:
        # the V1 runner's load line (v1/worker/gpu_model_runner.py), whose "GiB and" (no "memory")
        # is the 0.8.3–0.11.0 wording (0.11.1 wrote "GiB memory and": the wheels); Model Runner V2's own
        # line reads "GiB and" again
        extra.setdefault("model_runner_v2", False)
        if not load.group("memory"):
            hints.append(("0.8.3", "0.11.1"))
    sampler = _search(_SAMPLER_IMPL, text) if "top-k" in low else None
    if sampler is not None:
        extra["flashinfer_sampler"] = bool(sampler.group("fi"))
    if "vllm-openai" in low and _search(_OFFICIAL_IMAGE, text) is not None:
        extra["official_image"] = True     # FlashInfer installed (vllm.image_flashinfer_sampler)
    encoder = _search(_ENCODER_PROFILE, text) if "encoder cache will be" in low else None
    if encoder is not None:
        extra["encoder_profile"] = (encoder.group("modality"), int(encoder.group("items")),
                                    int(encoder.group("budget")))
    if "backend" in low:
        from estimator.attention_backend import backend_from_name

        for backend in _finditer(_ATTENTION_BACKEND, text, limit=50):
            # the first line that names an attention backend ("Using CUTLASS backend." is a GEMM's)
            named = backend_from_name(backend.group("enum") or backend.group("words") or backend.group("cls"))
            if named:
                extra["attention_backend_used"] = named
                break
    fmt = _search(_SPARSE_KV_FORMAT, text) if "cache format" in low else None
    if fmt is not None:
        # the sparse-MLA layer's own line says how its fp8 cache is laid out, so which backend ran
        # (attention_backend.PACKED_SPARSE_MLA_BACKENDS); a line naming the backend itself comes first
        from estimator.attention_backend import FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE

        extra.setdefault("attention_backend_used", FLASHINFER_MLA_SPARSE if fmt.group("plain") else FLASHMLA_SPARSE)
    if any(w in low for w in ("compiled graph", "compiling a graph", "aot compilation", "compiling model again")):
        found = {k for m in _finditer(_COMPILE_CACHE, text, limit=20) for k, v in m.groupdict().items() if v}
        extra["compile_cache_warm"] = found == {"warm"}
    if "mig" in low or "partition-size" in low:
        from estimator.gpus import mig_profile

        mig = mig_profile(text)
        if mig is not None:
            # the card is a MIG slice of the one the paste names (gpus.lookup_gpu sizes it)
            extra["mig_profile"] = mig.group("profile").lower()
    if ("pooler" in low or "pooling" in low) and _search(_POOLING_RUN, text) is not None:
        extra["runner"] = "pooling"     # a --runner / --task / --convert flag read below says it too
    if "wsl" in low and _search(_WSL_HOST, text) is not None:
        extra["windows_host"] = "wsl"
    elif ("windows" in low or "WDDM" in text) and _search(_WINDOWS_HOST, text) is not None:
        extra["windows_host"] = "windows"
    if "expandable_segments" in low and _search(_flags.EXPANDABLE_SEGMENTS, text) is not None:
        extra["expandable_segments"] = True     # PYTORCH_CUDA_ALLOC_CONF in the run's environment
    mamba_mode = _search(_MAMBA_MODE, text) if "mamba" in low else None
    if mamba_mode is not None:
        extra["mamba_cache_mode"] = mamba_mode.group(1)
    if "LLM" in text and _search(_flags.LLM_CLASS_CALL, text) is not None and _search(_API_SERVER, raw) is None:
        extra["usage"] = "llm"
    if "Unsloth" in text or "from_pretrained" in text:
        _unsloth_launch(text, extra, occs)
    if "compile range" in low:
        _compile_range_batch(pt, occs)
    async_line = _search(_ASYNC_SCHEDULING, text) if "scheduling is" in low else None
    if async_line is not None and "async_scheduling" not in xvals:
        extra["async_scheduling"] = async_line.group(1) == "enabled"
    env = extra.get("env", {})
    if isinstance(env, dict):
        if str(env.get("VLLM_USE_V1", "")) in ("0", "1"):
            engines.append((2, "v1" if env["VLLM_USE_V1"] == "1" else "v0"))
        cvd = env.get("CUDA_VISIBLE_DEVICES")
        if cvd and regex.fullmatch(r"\d+(?:,\d+)*", str(cvd)):
            extra["cuda_visible_devices"] = [int(x) for x in str(cvd).split(",")]

    # 4. prose, smi, collect_env — on the head and tail of a huge paste only (the prose around a
    # log is at its ends; a 1 MB middle is log lines the templates already read)
    if cpu_clock() - t0 < _BUDGET_S:
        skip = [(s, e) for s, e, _v in cmd_spans]
        if len(text) > _PROSE_HEAD + _PROSE_TAIL:
            cut = len(text) - _PROSE_TAIL
            text_p = text[:_PROSE_HEAD] + " " * (cut - _PROSE_HEAD) + text[cut:]
        else:
            text_p = text
        for h in _prose.find_versions(text_p, []):
            occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority, pt.rank_at(h.start)))
        for h in _prose.find_models(text_p, skip):
            occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority, None, h.guess))
        for h in _prose.find_bare_models(text_p, skip):
            occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority, None, h.guess))
        for h in _prose.find_values(text_p, skip, _flags.is_suggestion):
            occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority, pt.rank_at(h.start), h.guess))
            if h.source == "prose_need_avail" and h.key == "kv_needed_gib":
                kinds.append((h.start, "kv_capacity_v1", "prose_need_avail"))
        for m in _finditer(_LOAD_MODEL, text_p, limit=20):
            got = _prose.model_from_value(m.group("path"))
            if got:
                occs.append(_Occ("model", got[0], m.start("path"), m.end("path"), "load_model_log",
                                 _tpl.P_GUESS + 5 if got[1] else _tpl.P_LOAD, None, got[1]))
            if not got or got[1]:
                # the local path vLLM itself loaded (a command's path, read first, wins): the catalog model
                # its directory spells is looked for as for a served path (diagnosis._model_of_path)
                extra.setdefault("model_path", m.group("path"))
            model_paths.append(m.group("path"))
        for h in _prose.downloaded_models(text_p, model_paths):
            occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority))
        model_paths += _prose.config_file_models(text_p)
        for h in _prose.find_gpus(text_p, []):
            occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority, None, h.guess, h.norm))
        _smi(text_p, occs, extra)
        claims = _prose.find_claims(text_p, skip)
        if claims:
            extra["claims"] = [{k: v for k, v in c.items() if k not in ("start", "end")} | {"span": list(pt.span(c["start"], c["end"]))}
                               for c in claims]
        # the speculative settings read so far (extra gets them from xvals only further down)
        spec_seen = {k: v[0][1] for k, v in xvals.items() if k in ("speculative_config", "speculative_model") and v}
        occs = _without_draft_models(occs, {**spec_seen, **extra})
        # tables last: a table comparing runs is read at the run the rest of the paste points to
        model_occs = [o for o in occs if o.key == "model"]
        subject = _resolve("model", model_occs, None, lambda _p: 0)[0] if model_occs else None
        anchors = [(o.key, o.value, o.start) for o in occs]
        for h in _tables.find_table_values(text_p, str(subject.value) if subject else None, anchors,
                                           [k[0] for k in kinds]):
            if not _inside_any(h.start, skip):
                occs.append(_Occ(h.key, h.value, h.start, h.end, h.source, h.priority, pt.rank_at(h.start)))

    # before/after comparisons (PR descriptions): the "after" numbers are a proposal, not the user's state
    for a, b in _after_sections(text):
        for o in occs:
            if a <= o.start < b:
                o.priority -= 3
                o.source += ":after_change"

    # 5. runs and resolution
    run_starts = sorted({s for s, _e, v in cmd_spans if v})
    def run_of(pos: int) -> int:
        return bisect.bisect_right(run_starts, pos)
    kinds.sort()
    focal = run_of(kinds[0][0]) if kinds else (run_of(min(memory_logs)) if memory_logs else None)
    if focal and focal > 1 and _flags.detached_container(text, run_starts[focal - 1]) \
            and any(_flags.detached_container(text, s) for s in run_starts[:focal - 1]):
        # containers started in the background run side by side: the log after them is `docker logs` of
        # any one of them, not the last command's output
        focal = None
    failed_runs = {run_of(k[0]) for k in kinds}
    by_key: dict[str, list[_Occ]] = {}
    for o in occs:
        if isinstance(o.value, float) and not math.isfinite(o.value):
            continue  # "1e999" or "nan" where a figure belongs: no figure vLLM prints
        by_key.setdefault(o.key, []).append(o)
    chosen: dict[str, _Occ] = {}
    per_rank: dict[str, list] = {}
    alternatives: dict[str, list] = {}

    def settle(key: str, run: int | None) -> None:
        best, ranks, alts = _resolve(key, by_key[key], run, run_of, failed_runs)
        for table in (chosen, per_rank, alternatives):
            table.pop(key, None)
        if best is not None:
            chosen[key] = best
        if ranks:
            per_rank[key] = ranks
        if alts:
            alternatives[key] = alts

    for key in by_key:
        settle(key, focal)
    home = focal
    served = chosen.get("model")
    if home is None and served is not None and served.source.removesuffix("_model") in _RUN_SOURCES \
            and len(run_starts) > 1:
        # no run is the log's by position (containers started side by side, or no log at all): the one
        # whose command serves the model read sets the rest, not whichever command says it first
        home = run_of(served.start)
        for key in sorted(_SETTING_FACTS & by_key.keys() - {"model"}):
            settle(key, home)
    _gpu_by_printed_total(chosen, alternatives, by_key.get("gpu", []))
    if "vllm_version" in chosen:
        for key in [k for k in alternatives if k not in chosen]:
            got = _pick_by_version(text, by_key[key], str(chosen["vllm_version"].value))
            if got is not None:
                chosen[key] = got
                del alternatives[key]
    # extra values first: the parallel sizes read data_parallel_size from them
    commands = [(s, e) for s, e, v in cmd_spans if v]
    for name, vals in xvals.items():
        mine = [v for p, v in vals if home is None or run_of(p) == home]
        if not mine and home:
            # the run has a command line of its own: what another run's command line sets is not this
            # run's (an embedding container's --task embed); a log before any command has none
            mine = [v for p, v in vals if not any(s <= p < e for s, e in commands)]
        elif not mine:
            mine = [vals[0][1]]
        if mine:
            extra[name] = mine[0]
    if not (extra.get("speculative_config") or extra.get("speculative_model")) and "mtp" in low:
        # the drafter told in words ("Drafter: MTP n=3", "MTP (n=3)", "MTP with 3 speculative
        # tokens") where no flag or engine config line says it
        mtp = _search(_MTP_PROSE, text)
        if mtp is not None:
            k = int(mtp.group("k") or mtp.group("k2"))
            if 0 < k <= 16:
                extra["speculative_config"] = {"method": "mtp", "num_speculative_tokens": k}
    _infer_quantization(chosen, by_key, model_paths, text)
    _derive_parallel_sizes(chosen, extra, pt, focal, run_of)
    _derive_gpu_count(chosen, extra)
    if kinds:
        before = _named_before(by_key, chosen, kinds[0][0])
        if before:
            extra["named_before_error"] = before
    intro = _log_intro(text, by_key.get("model", []), [k[0] for k in kinds] + memory_logs)
    if intro is not None and "model" in chosen and _occ_norm(intro) != _occ_norm(chosen["model"]):
        extra["log_intro_model"] = intro.value
    if per_rank:
        extra["per_rank"] = per_rank
    if alternatives:
        extra["alternatives"] = alternatives

    _utilization_from_budget(chosen, extra)

    # 6. error kind, engine, version range
    engine = _engine(engines, chosen.get("vllm_version"))
    kind = _error_kind(text, kinds, memory_logs, focal, run_of, run_starts, set(pt.line_starts), engine)
    mapped = _search(_MMAP_REFUSED, text) if "unable to mmap" in text and (kind is None or kind[0] == "other") else None
    if mapped is not None:
        # the host refused to map a checkpoint file: a memory failure, of host memory, whatever else the
        # traceback says
        kind = ("other", (mapped.start(), mapped.end()), "host_mmap")
        extra["host_mmap_bytes"], extra["host_mmap_file"] = int(mapped.group(1)), mapped.group(2)
    env = extra.get("env")
    cpu, cpu_hints = read_cpu_backend(text, low, env if isinstance(env, dict) else {})
    if cpu:
        # vLLM's CPU backend: its KV space is a setting or a share of the host's RAM, not a card's leftover
        short = cpu.pop("cpu_node_short", None)
        if short is not None and (kind is None or kind[0] == "other"):
            # 0.20+: the NUMA node has less RAM available than the share vLLM asks for
            kind = ("free_memory_startup", short, "cpu_node_memory")
        killed = _search(_KILLED, text) if kind is None and "illed" in text else None
        if killed is not None:
            # the kernel's OOM killer on a CPU-backend run: its weights and KV cache are both host RAM
            kind = ("other", (killed.start(), killed.end()), "host_killed")
        extra.update(cpu)
        hints += cpu_hints
    other = foreign_engine(pt.clean, bool(memory_logs))
    if other is not None:
        # another engine's log (vllm.rs, SGLang, llama.cpp …) with nothing of vLLM in it: a PyTorch
        # out-of-memory error it printed is no vLLM memory problem (the contract's error_kind null)
        extra["foreign_engine"] = other.name
        kind = None
    for key, o in chosen.items():
        facts.values[key] = Fact(o.value, pt.span(o.start, o.end), o.source, o.guess)
    if kind is not None:
        pos, src = kind[1], kind[2]
        end = max(pos[1], kind_ends.get(pos[0], pos[1]))
        facts.values["error_kind"] = Fact(kind[0], pt.span(pos[0], end), src)
        if kind[0] == "other" and ("illed" in text or "limit" in text) and _search(_KILLED, text) is not None:
            extra["host_killed"] = True
            if _search(_CONTAINER_KILLED, text) is not None:
                extra["container_killed"] = True
        elif kind[0] == "other" and src in ("vllm_error", "vllm_traceback"):
            cause = _root_exception(text)
            if cause is not None:
                extra["root_exception"] = cause
        free = facts.values.get("free_memory_gib")
        if free is not None and free.source == "free_memory_startup" and kind[0] in _SPECIFIC \
                and kind[0] != "free_memory_startup":
            # the start-up check failed on that attempt and stopped it before loading: the attempt whose
            # later error is read got past it, with other free memory (MiniMax-M2 on 4× A800: 37.95 GiB
            # free in one attempt's error, 9.38 GiB of KV cache at 0.9 of the card in the next's)
            extra["earlier_attempt_free_gib"] = free.value
            del facts.values["free_memory_gib"]
    if engine:
        extra["engine"] = engine
    unknown = _search(_UNKNOWN_QUANT, text)
    if unknown is not None:
        extra["unknown_quantization"] = method = unknown.group(1).lower()
        if method in QUANT_METHOD_REMOVED:      # the release that printed it is one without the method
            hints.append((version_text(QUANT_METHOD_REMOVED[method]), None))
    unsupported = _search(_UNSUPPORTED_ARCH, text) if "are not supported" in text else None
    if unsupported is not None:
        names = _QUOTED_NAME.findall(unsupported.group(1))       # at most 400 characters: no timeout needed
        if names:
            extra["unsupported_architectures"] = names
    if "default in v0.19" in low and _search(_GRAPH_OPT_IN_ON, text) is not None:
        hints.append(("0.18.0", "0.20.0"))
    _capacity_rule_hint(facts, hints)
    hint = _version_hint(pt.clean, hints, figure_hints, extra)
    if hint:
        extra["version_hint"] = hint
    return facts


def _version_hint(clean: str, hints: list, figure_hints: list, extra: dict) -> tuple[str, str | None] | None:
    """The releases the paste's wording, its log lines' file:line prefixes (log_sites, read in the clean
    text: Slack's links and HTML unwrapped) and how it prints figures allow, in that order of strength:
    each weaker sign is dropped where it contradicts the stronger ones (a fork's moved lines, a figure
    printed as another release prints it)."""
    lines = log_line_releases(clean)
    signs = [_half_open(lines[0], lines[1])] if lines else []
    for group in (hints + signs + figure_hints, hints + signs, hints + figure_hints, hints):
        hint = _intersect(group) if group else None
        if hint:
            if lines and signs[0] in group:
                extra["log_line_releases"] = list(lines)
            return hint
    return None


def _half_open(first: str, last: str) -> tuple[str, str | None]:
    """[first, the release after last) — a hint's form; open-ended when last is the newest release."""
    return first, next_release(last)


def _capacity_rule_hint(facts, hints: list) -> None:
    """From 0.20.1 V1 prints "GPU KV cache size" as int(concurrency × max_model_len)
    (vllm/v1/core/kv_cache_utils.py _report_kv_cache_config; vllm#40691's fix, in the 0.20.1 wheel,
    not in 0.20.0's), so the two printed figures agree to the concurrency's two decimals; the earlier
    figure (blocks × block size, ÷ KV groups for a hybrid model) need not. Where they disagree the
    paste predates 0.20.1 (vllm#28228: 75,840 tokens beside 2.48× at 120,000)."""
    tokens, conc, length = (facts.get(k) for k in ("kv_tokens_capacity", "max_concurrency", "max_model_len"))
    if not (tokens and conc and length) or float(length) <= 0:
        return
    if any(_vkey(h[0]) >= CONCURRENCY_CAPACITY_FROM for h in hints):
        return      # another message already dates the paste; the figures may be another run's
    # the concurrency is printed to 2 decimals and the tokens are truncated: |N/L − C| ≤ 0.005 + 1/L
    if abs(float(tokens) / float(length) - float(conc)) > HALF_HUNDREDTH + 1 / float(length) + 1e-9:
        hints.append(("0.1.0", version_text(CONCURRENCY_CAPACITY_FROM)))


# A speculative decoding drafter's name (z-lab's "…-DFlash", "…-speculator", Medusa heads; EAGLE only where
# the run decodes speculatively: RWKV's Eagle is a base model)
_DRAFTER = regex.compile(r"(?i)(?:^|[-_.])(?:d-?flash|speculators?|medusa)(?:$|[-_.\d])")
_EAGLE = regex.compile(r"(?i)(?:^|[-_.])eagle\d*(?:$|[-_.])")


def _without_draft_models(occs: list[_Occ], extra: dict) -> list[_Occ]:
    """Model mentions that name the run's draft model — the one its speculative config loads, or a
    drafter by name — are not the model it serves, when the paste names another ("DFlash model:
    Qwen3.6-35B-A3B-DFlash … LLM model: Qwen3.6-35B-A3B-FP8")."""
    spec = extra.get("speculative_config")
    drafts = []
    if spec and _flags.speculative_draft_model(spec):
        drafts.append(str(_flags.speculative_draft_model(spec)))
    if extra.get("speculative_model"):
        drafts.append(str(extra["speculative_model"]))
    names = {_squash_name(d) for d in drafts} - {""}
    speculative = bool(spec or extra.get("speculative_model"))

    def draft(o: _Occ) -> bool:
        name = str(o.value).rstrip("/").rsplit("/", 1)[-1]
        return _squash_name(name) in names or bool(_DRAFTER.search(name)) or speculative and bool(_EAGLE.search(name))

    def configured(o: _Occ) -> bool:
        return _squash_name(str(o.value).rstrip("/").rsplit("/", 1)[-1]) in names

    models = [o for o in occs if o.key == "model"]
    if not models:
        return occs
    # the run's own model argument names the served model even where the speculative config names it
    # too (an MTP head inside the served checkpoint: 'model': 'lukealonso/GLM-5.1-NVFP4-MTP' in both)
    served = {o.value for o in models if o.source.removesuffix("_model") in _RUN_SOURCES}
    if all(draft(o) for o in models):
        # the speculative config's own draft is not the served model, even where the target is only a
        # local path (vLLM's args: 'speculative_config': {'model': 'google/…-assistant'}, 'model':
        # '/workspace/gemma_build/int4_g32_lmhead'); a drafter-like name alone may be what was served
        return [o for o in occs if o.key != "model" or not configured(o) or o.value in served]
    return [o for o in occs if o.key != "model" or not draft(o) or o.value in served]


def _squash_name(path: str) -> str:
    return "".join(c for c in path.rstrip("/").rsplit("/", 1)[-1].lower() if c.isalnum())


_LOAD_MODEL = regex.compile(r"Starting[ ]+to[ ]+load[ ]+model[ ]+(?P<path>[^\s]+?)\.{0,3}(?=\s|$)")


_SECTION_LABEL = regex.compile(
    r"(?im)^[ #*_>-]*(?:(?P<after>this[ ]+pr|the[ ]+pr|pr|patched|proposed|after(?:[ ]+(?:this|the)[ ]+(?:pr|patch|fix|change))?"
    r"|with[ ]+(?:this|the)[ ]+(?:pr|patch|fix))|(?P<before>main|before|dev[ ]+branch|current|baseline|original|master|upstream))"
    r"[ *_]*:?[ *_]*$")


def _after_sections(text: str) -> list[tuple[int, int]]:
    """Ranges under an "after"/"This PR:" label, up to the next "before"/"Main:" label."""
    out = []
    start = None
    for m in _finditer(_SECTION_LABEL, text, limit=40):
        if m.group("after") and start is None:
            start = m.end()
        elif m.group("before") and start is not None:
            out.append((start, m.start()))
            start = None
    if start is not None:
        out.append((start, len(text)))
    return out


def _inside_any(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= pos < e for s, e in spans)


_finditer = partial(finditer, seconds=0.2)     # the paste's budgeted finditer at this module's timeout


def _tpl_timeout() -> float:
    return 0.2


def _to_int(s: str | None) -> int | None:
    if s is None:
        return None
    t = s.replace(",", "").replace("'", "").replace("_", "").strip()
    try:
        return int(t)
    except ValueError:
        return None


def _utilization_from_budget(chosen: dict, extra: dict) -> None:
    """V0's memory_profiling line prints the utilization to 2 decimals and the budget it gives, total ×
    utilization, to 2 as well (worker/worker.py, the 0.8.5 wheel): Unsloth's 0.7828 prints as 0.78 and its
    budget as 37.18 GiB of 47.50, which says 0.7827. Where the printed figure is off by more than the budget's
    own rounding allows, the budget's is the finer one and the one the KV cache was sized from: kept beside the
    read figure as extra["utilization_from_budget"]."""
    u, total, budget = chosen.get("gpu_memory_utilization"), chosen.get("total_gpu_memory_gib"), extra.get("budget_gib")
    if u is None or total is None or not isinstance(budget, (int, float)) or u.source != "v0_budget" \
            or total.source != "v0_budget" or not float(total.value) > 0:
        return
    t, printed = float(total.value), float(u.value)
    exact = float(budget) / t
    err = (0.005 + 0.005 * printed) / t          # the budget's and the total's own rounding, carried through
    if abs(exact - printed) <= err or abs(exact - printed) > 0.005 + err:
        return      # the printed figure is already exact enough (0.9 set, 0.8999 implied), or the two disagree
    # the fewest decimals the budget allows (0.865 set and printed 0.86 or 0.87; Unsloth's 0.7828)
    extra["utilization_from_budget"] = next((round(exact, d) for d in (3, 4) if abs(round(exact, d) - exact) <= err),
                                            round(exact, 4))


def _to_float(s: str | None) -> float | None:
    if s is None:
        return None
    try:
        return float(s.replace(",", "").strip())
    except ValueError:
        return None


# The CUDA-graph memory profiler's minimal KV cache (0.18+: v1/worker/gpu_model_runner.py
# _init_minimal_kv_cache_for_profiling sets num_gpu_blocks_override to the largest capture size and sizes a
# cache for 0 bytes, so kv_cache_utils logs "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512"
# before "Profiling CUDA graph memory: …", or before the OOM of allocating it; the 0.19.0 wheel): a
# placeholder, not the run's block count
_GRAPH_PROFILER_CACHE = regex.compile(r"[\s\S]{0,600}?(?:Profiling[ \n]+CUDA[ \n]+graph[ \n]+memory"
                                      r"|OutOfMemoryError|(?:CUDA|HIP)[ \n]+out[ \n]+of[ \n]+memory)")


def _template_match(t, m, pt: PasteText, occs: list[_Occ], xvals: dict) -> None:
    if t.name == "num_gpu_blocks_override" and _to_int(m.group("x_computed_blocks")) == 0 \
            and _GRAPH_PROFILER_CACHE.match(m.string, m.end(), timeout=budget(0.1)) is not None:
        return
    for name, val in m.groupdict().items():
        if val is None:
            continue
        if name.startswith("x_"):
            v = _to_float(val) if regex.fullmatch(r"-?[\d.,]+", val.strip()) else val.strip()
            xvals.setdefault(name[2:], []).append((m.start(), v))
            continue
        key = regex.sub(r"\d+$", "", name)
        if key in _INT_KEYS:
            value: object = _to_int(val)
        elif key in _FLOAT_KEYS:
            value = _to_float(val)
        elif key == "gpu":
            value = " ".join(val.split())
        else:
            value = val.strip()
        if value is None:
            continue
        s, e = m.span(name)
        norm = _prose.gpu_family(str(value)) if key == "gpu" else None
        occs.append(_Occ(key, value, s, e, t.name, t.priority, pt.rank_at(s), norm=norm))
        if key == "kv_available_gib" and t.name in ("v1_available_kv", "actual_usage"):
            # V1 hands exactly this much to the KV cache (gpu_worker.determine_available_memory)
            occs.append(_Occ("kv_cache_gib", value, s, e, t.name, _tpl.P_PROSE + 5, pt.rank_at(s)))
    if t.name == "actual_usage" and m.group("x_kv_bytes"):
        s, e = m.span("x_kv_bytes")
        gib = int(m.group("x_kv_bytes")) / 2**30
        for key in ("kv_available_gib", "kv_cache_gib"):
            # the same pool as the "Available KV cache memory: 55.15 GiB" line, to its 2 decimals: that
            # line, where the paste has it, is the figure quoted back
            occs.append(_Occ(key, gib, s, e, t.name, _tpl.P_PROSE + 4, pt.rank_at(s), norm=round(gib, 2)))


# The rest of V1's length error after its estimate, to its last words, and no " See https://docs.vllm.ai…"
# after them: where the paste keeps the whole message, its end dates it (the link came in 0.13).
_ENDS_WITHOUT_LINK = regex.compile(r"\.?[ \n]+Try[ \n]+increasing[^\n]{0,120}?when[ \n]+initializing[ \n]+the[ \n]+engine"
                                   r"(?!\.?[ \n]*See[ \n])")
_LOG_GOES_ON = regex.compile(r"\.?[ \t]*\n[ \t]*\S")


def _ended_without_link(text: str, start: int, end: int) -> bool:
    """vLLM prints these messages on one line, the link at its end: a message that ends its line with no
    link, where it stands on one line as printed or the log goes on after it, had none. One the poster broke
    over lines and stopped their excerpt at may have been cut (a 0.19.1 blog excerpt, re-wrapped, ends its
    code block at "…when initializing the engine.")."""
    if text[end - 1:end] != "." and not text.startswith(".", end):
        return False
    return "\n" not in text[start:end] or _LOG_GOES_ON.match(text, end) is not None


def _v1_error_hint(m, text: str) -> tuple[str, str | None]:
    after = text[m.end(): m.end() + 400]
    if not m.group("x_models").startswith("models"):
        # 0.34's hints name the KV cache sized after warmup (kv_cache_planning.py
        # _more_kv_cache_memory_hint: "The extensible KV cache already takes …", "… with the extensible
        # KV cache it defaults to 1.0")
        return ("0.34.0", None) if "extensible KV cache" in " ".join(after.split()) else ("0.22.0", None)
    if m.group("x_unit") == "GB":
        return ("0.7.0", "0.8.3")
    if m.group("estimated_max_model_len"):
        if "docs.vllm.ai" in after[:300]:
            return ("0.13.0", "0.22.0")
        ended = _ENDS_WITHOUT_LINK.match(text, m.end(), min(len(text), m.end() + 400))
        if ended is not None and _ended_without_link(text, m.start(), ended.end()):
            # the message ran to its last words and no docs link followed them: 0.13 appended one
            # (v1/core/kv_cache_utils.py), so this is 0.9.1–0.12
            return ("0.9.1", "0.13.0")
        return ("0.9.1", "0.22.0")
    return ("0.8.3", "0.22.0")


# How V1 writes a GiB figure in its length error (v1/core/kv_cache_utils.py) and its "Available KV cache
# memory" line (v1/worker/gpu_worker.py): `{:.2f}` / `%.2f` to 0.13 ("36.00", "13.50"), vLLM's format_gib
# from 0.14 (round(x, 2) printed as a float: "36.0", "13.5", never a trailing zero after the point), as
# the 0.12.0, 0.13.0, 0.14.0 and 0.34.0 wheels read. Corpus: 0.10.0–0.11.2 print "12.20", "24.00",
# "62.00"; 0.15.2–0.29 print "24.0", "7.0", "-0.7"
FORMAT_GIB_FROM = "0.14.0"
_FIGURE_ONE_DECIMAL = regex.compile(r"-?\d+\.\d")
_FIGURE_TRAILING_ZERO = regex.compile(r"-?\d+\.\d0")
_FIGURE_FOUR_DECIMALS = regex.compile(r"\d+\.\d{4}")


# The start-up check's error names the device from 0.14 ("Free memory on device cuda:0 (…)", v1/worker/utils.py
# request_memory); to 0.13 gpu_worker.py wrote "Free memory on device (…)" (the 0.12.0–0.14.0 wheels). The INFO
# line that begins the same way never names it (gpu_worker.py, 0.10.2–0.34).
DEVICE_NAMED_FROM = "0.14.0"
_NO_DEVICE_NAME = regex.compile(r"Free[ \n]+memory[ \n]+on[ \n]+device[ \n]*\(")
_CUDA_DEVICE = regex.compile(r"device[ \n]+cuda:\d")


def _free_memory_hint(error: str) -> tuple[str, str | None]:
    """The releases that raised this start-up free-memory error: by its device name, and 0.34 checks only
    without its extensible KV cache, which CUDA and ROCm ("cuda:N" either way) have on by default."""
    if _NO_DEVICE_NAME.match(error):
        return ("0.9.1", DEVICE_NAMED_FROM)
    if _CUDA_DEVICE.search(error):
        return (DEVICE_NAMED_FROM, version_text(EXTENSIBLE_KV_CACHE_FROM))
    return (DEVICE_NAMED_FROM, None)


# How "No available memory for the cache blocks." goes on (V0 worker.py; V1 v1/core/kv_cache_utils.py, the
# 0.10.2–0.27.0 wheels): "Try increasing `gpu_memory_utilization` when initializing the engine." and nothing
# more to 0.12; " See https://docs.vllm.ai/…/conserving_memory/ for more details." from 0.13; "… the engine
# (this flag also controls CPU memory reservation on the CPU backend, despite its name). See …" from 0.22
NO_BLOCKS_LINK_FROM = "0.13.0"
NO_BLOCKS_CPU_NOTE_FROM = "0.22.0"
_NO_BLOCKS_ADVICE = regex.compile(r"\.?[ \n]+Try[ \n]+increasing[ \n]+`?gpu_memory_utilization`?[ \n]+when[ \n]+"
                                  r"initializing[ \n]+the[ \n]+engine(?P<cpu>[ \n]+\(this[ \n]+flag[ \n]+also[ \n]+controls)?"
                                  r"(?:\)?\.(?P<link>[ \n]*See[ \n])?)?")


def _no_blocks_hint(text: str, start: int, end: int) -> tuple[str, str | None] | None:
    """The releases whose "No available memory for the cache blocks" goes on as the paste's does; None where
    the paste cuts it before its advice, or stops right after it (an excerpt may drop a link)."""
    m = _NO_BLOCKS_ADVICE.match(text, end)
    if m is None:
        return None
    if m.group("cpu"):
        return (NO_BLOCKS_CPU_NOTE_FROM, None)
    if m.group("link"):
        return (NO_BLOCKS_LINK_FROM, NO_BLOCKS_CPU_NOTE_FROM)
    if text[m.end() - 1:m.end()] == "." and _ended_without_link(text, start, m.end()):
        return ("0.1.0", NO_BLOCKS_LINK_FROM)      # the message ended with no link
    return None


# "CUDA graph memory profiling is enabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1). This will become the default
# in v0.19.": the opt-in's own line, 0.18.0–0.19.1 (v1/worker/gpu_worker.py; 0.20.0 says "default since v0.21.0")
_GRAPH_OPT_IN_ON = regex.compile(r"This[ \n]+will[ \n]+become[ \n]+the[ \n]+default[ \n]+in[ \n]+v0\.19")


# The "Actual usage" report dates itself (v1/worker/gpu_worker.py compile_or_warm_up_model; the 0.10.2, 0.11.0,
# 0.11.2, 0.12.0–0.14.0, 0.20.0–0.27.0 wheels): 0.10.2 quotes its `--kv-cache-memory=N` suggestions and the KV
# cache in use in bytes alone; 0.11.0 adds "(X GiB)" after each suggestion and prints the pool in GiB. Its
# parts read "… GiB for weight, … GiB for non-torch memory" to 0.26 and one "… GiB for consumed memory
# (weights + non-torch)" from 0.27. It is logged at INFO in 0.10.2 and from 0.26.0, at DEBUG in 0.11.0–0.25.1.
USAGE_IN_GIB_FROM = "0.11.0"
USAGE_INFO_AGAIN_FROM = "0.26.0"
USAGE_CONSUMED_FROM = "0.27.0"
_USAGE_SUGGESTION = regex.compile(r"--kv-cache-memory=\d+`(?P<gib>[ \n]*\()?")


def _actual_usage_hint(m, text: str, level: str | None) -> tuple[str, str | None] | None:
    """The releases whose "Actual usage" report reads like this one: by its parts' wording, the units of
    its suggestions and pool, and the level it was logged at where the paste keeps the line's prefix."""
    if m.group("x_consumed_gib"):
        return (USAGE_CONSUMED_FROM, None)
    suggestion = _USAGE_SUGGESTION.search(text, m.start(), min(m.end() + 600, len(text)))
    if m.group("x_kv_bytes") or (suggestion is not None and not suggestion.group("gib")):
        return ("0.10.2", USAGE_IN_GIB_FROM)
    in_gib = m.group("kv_available_gib") is not None or suggestion is not None
    hi = USAGE_CONSUMED_FROM if m.group("weights_gib") else None
    if level == "DEBUG":
        return (USAGE_IN_GIB_FROM, USAGE_INFO_AGAIN_FROM)
    if level == "INFO" and in_gib:
        return (USAGE_INFO_AGAIN_FROM, hi)
    if in_gib:
        return (USAGE_IN_GIB_FROM, hi)
    return ("0.10.2", hi) if hi else None


_LEVEL = regex.compile(r"\b(INFO|DEBUG)\b")


def _line_level(pt: PasteText, pos: int) -> str | None:
    """The level in the log prefix of the line holding logical offset `pos` (the prefix is stripped from
    the logical text; the cleaned text keeps it), or None where the paste cut it."""
    src = pt.logical_map.to_src(pos)
    head = pt.clean[pt.clean.rfind("\n", 0, src) + 1: src]
    found = _LEVEL.findall(head[-300:])
    return found[-1] if found else None


def _figures_hint(figures) -> tuple[str, str | None] | None:
    """The releases that printed these GiB figures: one with a single decimal is format_gib's, one whose
    second decimal is a zero is `%.2f`'s; a figure with a nonzero second decimal fits both, and says
    nothing."""
    figures = [f for f in figures if f]
    if any(_FIGURE_ONE_DECIMAL.fullmatch(f) for f in figures):
        return (FORMAT_GIB_FROM, None)
    if any(_FIGURE_TRAILING_ZERO.fullmatch(f) for f in figures):
        return ("0.1.0", FORMAT_GIB_FROM)
    return None


def _weights_figure_hint(m) -> tuple[str, str | None]:
    """"Model loading took X GiB memory and": "%.4f" 0.11.1–0.13, format_gib's figure from 0.14
    (gpu_model_runner.py, the wheels)."""
    return ("0.11.1", FORMAT_GIB_FROM) if _FIGURE_FOUR_DECIMALS.fullmatch(m.group("weights_gib")) \
        else (FORMAT_GIB_FROM, None)


# Templates whose match dates the paste more finely than their fixed range (Template.hint), by name: the
# message's wording, a strong sign (match, logical text, PasteText → range or None) …
_WORDING_HINTS = {
    "v1_capacity_error": lambda m, text, pt: _v1_error_hint(m, text),
    "free_memory_startup": lambda m, text, pt: _free_memory_hint(m.group(0)),
    "no_cache_blocks": lambda m, text, pt: _no_blocks_hint(text, m.start(), m.end()),
    "actual_usage": lambda m, text, pt: _actual_usage_hint(m, text, _line_level(pt, m.start())),
}
# … and how it prints its GiB figures, a weak one dropped where it contradicts the wording
_FIGURE_HINTS = {
    "v1_capacity_error": lambda m: _figures_hint((m.group("kv_needed_gib"), m.group("kv_available_gib"))),
    "v1_available_kv": lambda m: _figures_hint((m.group("kv_available_gib"),)),
    "weights_0112": _weights_figure_hint,
}


# A log line may carry a docker-compose service prefix ("vllm-1  | ") or a CI timestamp first.
_LINE_LEAD = r"(?:[\w.-]{1,40}[ ]*\|[ ]*|\[\d{4}-\d\d-\d\dT[\d:.]{5,15}Z?\][ ]*)?"
_OLD_PREFIX = regex.compile(r"(?m)^" + _LINE_LEAD + r"(?:\([^)\n]{1,60}\)[ ]*)?(?:INFO|WARNING|ERROR|DEBUG)[ ]+\d\d-\d\d[ ]+\d\d:\d\d:\d\d[ ]+[\w.-]+:\d+\]")
_NEW_PREFIX = regex.compile(r"(?m)^" + _LINE_LEAD + r"(?:\([^)\n]{1,60}\)[ ]*)?(?:INFO|WARNING|ERROR|DEBUG)[ ]+\d\d-\d\d[ ]+\d\d:\d\d:\d\d(?:\.\d+)?[ ]+\[[\w./-]+:\d+\]")


# The MXFP4 MoE backend vLLM chose, as its log says it (mxfp4.py get_mxfp4_backend; the Marlin FP4
# warning from marlin_utils_fp4.py): it sets how the experts are padded (memory.MXFP4_LAYOUTS).
_MXFP4_BACKEND = regex.compile(
    r"\[mxfp4\.py:\d+\][ ]+Using[ ]+(?P<b>Triton|Marlin)[ ]+backend"
    r"|Using[ ]+FlashInfer[ ]+MXFP4[ ]+(?P<fi>BF16|MXFP8[ ]+CUTLASS|MXFP8[ ]+TRTLLM)?[ ]*backend[ ]+for[ ]+(?P<sm>SM90|SM100)"
    r"|(?P<m>Weight-only[ ]+FP4[ ]+compression[ ]+will[ ]+be[ ]+used[ ]+leveraging[ ]+the[ ]+Marlin[ ]+kernel)")


def _mxfp4_backend_name(m) -> str:
    if m.group("b"):
        return m.group("b")
    if m.group("m"):
        return "Marlin"
    if m.group("sm") == "SM90":
        return "FlashInfer SM90"
    return "FlashInfer SM100 CUTLASS" if "CUTLASS" in (m.group("fi") or "") else "FlashInfer SM100"


# V1's top-k/top-p sampler as its log names it (vllm/v1/sample/ops/topk_topp_sampler.py): FlashInfer's
# kernel or the PyTorch-native fallback, which sorts the vocabulary (vllm.SAMPLER_BYTES_*).
# V1 gpu_model_runner.py profile_run (0.8+): what the encoder was profiled with
_ENCODER_PROFILE = regex.compile(
    r"Encoder[ ]+cache[ ]+will[ ]+be[ ]+initialized[ ]+with[ ]+a[ ]+budget[ ]+of[ ]+(?P<budget>\d{1,9})[ ]+tokens,"
    r"[ ]+and[ ]+profiled[ ]+with[ ]+(?P<items>\d{1,6})[ ]+(?P<modality>[a-z_]{1,20})[ ]+items")


# Which model runner ran (vllm/v1/worker/gpu_worker.py "Using V2 Model Runner"; config/vllm.py's
# fallback warning): the V2 runner sizes the KV cache differently (memory.py). Its load line's
# [model_runner.py:N] tag is no sign: V0's worker/model_runner.py prints the same "Model loading took".
_MODEL_RUNNER = regex.compile(
    r"Using[ ]+V2[ ]+Model[ ]+Runner"
    r"|(?P<v1>using[ ]+the[ ]+V1[ ]+model[ ]+runner[ ]+instead)", regex.IGNORECASE)

_V1_RUNNER_LOAD = regex.compile(
    r"\[gpu_model_runner\.py:\d+\][^\n]{0,40}?Model[ ]+loading[ ]+took[ ]+[\d.]+[ ]*GiB[ ]+(?P<memory>memory[ ]+)?and")

_MTP_PROSE = regex.compile(
    r"(?i)(?<![\w-])MTP(?:[ ]*\(?[ ]*[nk][ ]*=[ ]*(?P<k>\d{1,2})\b"
    r"|[ ]+with[ ]+(?P<k2>\d{1,2})[ ]+(?:speculative|draft(?:ed)?)[ ]+tokens?\b)")
# vLLM's own docker image, as `docker run`, compose files and k8s manifests name it
_OFFICIAL_IMAGE = regex.compile(r"(?i)(?<![\w.-])(?:docker\.io/)?vllm/vllm-openai(?![\w-])|(?<![\w./-])vllm-openai:v?\d")
_SAMPLER_IMPL = regex.compile(
    r"(?P<fi>Using[ ]+FlashInfer[ ]+for[ ]+top-p[ ]+&[ ]+top-k[ ]+sampling)"
    r"|Falling[ ]+back[ ]+to[ ]+the[ ]+PyTorch-native[ ]+implementation[ ]+of[ ]+top-p[ ]+&[ ]+top-k[ ]+sampling")


# vLLM logs this only when prefix caching is on for a hybrid model (vllm/model_executor/models/config.py):
# "align" mode keeps two state blocks per running request (kv_layout.mamba_cache_mode), flag or default.
# vllm/config/vllm.py (0.26+): "Asynchronous scheduling is enabled." / "... disabled."
_ASYNC_SCHEDULING = regex.compile(r"Asynchronous[ \n]+scheduling[ \n]+is[ \n]+(enabled|disabled)\b")
# The marks of an API server run (a paste with user code's LLM(...) call and none of these ran the offline
# class, whose V1 defaults batch more tokens than the API server's)
_API_SERVER = regex.compile(r"(?i)\bvllm[ \n]+serve\b|api_server|APIServer|openai[ .]api_server|vllm-openai"
                            r"|vllm\.entrypoints\.openai")
# A pooling (embedding / reranking / reward) run as vLLM's own lines show it: the engine config's
# PoolerConfig (generative runs print pooler_config=None), the cudagraph override pooling models get
# (vllm/config/vllm.py: "Pooling models do not support full cudagraphs"); a runner flag or the
# non-default args' 'runner' is the flag reader's (flags.FLAG_KEYS)
_POOLING_RUN = regex.compile(r"pooler_config=PoolerConfig\(|Pooling models do not support")
_MAMBA_MODE = regex.compile(r"Mamba[ \n]+cache[ \n]+mode[ \n]+is[ \n]+set[ \n]+to[ \n]+'(align|all)'")
# A Windows host, which reports a card's whole memory to CUDA (gpus.windows_total): vLLM's own lines
# under WSL ("Using 'pin_memory=False' as WSL is detected", platforms/interface.py; the old
# utils.in_wsl callers) and on native Windows ("Windows detected, skipping ulimit adjustment",
# utils set_ulimit), the WSL kernel's uname, nvidia-smi's driver model on a Windows driver ("WDDM" in
# its table's TCC/WDDM column, and "Driver Model … Current : WDDM" of `nvidia-smi -a`, inside WSL2
# too), or the user's words "WSL"/"WSL2", "Windows 10/11", "native Windows". Case-sensitive "Windows":
# "sliding windows" and "context windows" are no host.
_WSL_HOST = regex.compile(r"(?i)(?<![\w-])wsl2?(?![\w-])|microsoft-standard-wsl")
_WINDOWS_HOST = regex.compile(r"Windows[ ]+detected|Windows[ ]+1[01](?!\d)|(?i:native)[ ]+Windows|(?<![\w-])WDDM(?![\w-])")

# The attention backend V1 chose for the model's layers, as its log names it: platforms/cuda.py
# "Using FLASHINFER attention backend out of potential backends" (0.11+; "Using
# AttentionBackendEnum.X backend." in some builds), "Using FlashInfer backend on V1 engine." (0.8–0.10)
# and the cudagraph-mode warning of config/compilation.py ("… for attention backend FlashInferBackend").
# It decides what the CUDA-graph estimate holds (estimator.attention_backend).
_ATTENTION_BACKEND = regex.compile(
    r"Using[ ]+(?:AttentionBackendEnum\.)?(?P<enum>[A-Z][A-Z0-9_]{2,30})[ ]+(?:attention[ ]+)?backend"
    r"(?:[ ]+out[ ]+of[ ]+potential|\.)"
    r"|Using[ ]+(?P<words>FlashInfer|Flash[ ]?Attention|Triton[ ]+Attention|FlexAttention)[ ]+backend[ ]+on[ ]+V1"
    r"|for[ ]+attention[ ]+backend[ ]+(?P<cls>(?:FlashInfer|FlashAttention|TritonAttention|FlexAttention)Backend)\b")
# The sparse-MLA cache format a DeepSeek-V3.2 / GLM-5 log states: mla_attention.py MLAAttention's "Using
# DeepSeek's fp8_ds_mla KV cache format. To use standard fp8 kv-cache format, please set
# `--attention-backend FLASHINFER_MLA_SPARSE`" (FLASHMLA_SPARSE) and "Using standard fp8 KV cache format. …"
# (FLASHINFER_MLA_SPARSE); 0.11's models/config.py "Using custom fp8 kv-cache format for DeepSeekV3.2".
_SPARSE_KV_FORMAT = regex.compile(
    r"Using[ ]+(?:DeepSeek's[ ]+fp8_ds_mla[ ]+KV[ ]+cache[ ]+format[ .]+To[ ]+use[ ]+standard"
    r"|custom[ ]+fp8[ ]+kv-cache[ ]+format[ ]+for[ ]+DeepSeekV3\.2"
    r"|(?P<plain>standard[ ]+fp8[ ]+KV[ ]+cache[ ]+format))")
# torch.compile's cache as the log shows it: "Directly load the compiled graph(s) … from the cache"
# (compilation/backends.py) or, with AOT compilation (0.20+ decorators.py _try_load_aot_compiled_fn),
# "Directly load AOT compilation from path …" on a hit — the whole compiled function comes from disk and
# no per-graph line follows —; "Compiling a graph for …" when Inductor compiles, and "Compiling model
# again due to a load failure" when the AOT artifact could not be used. A warm cache takes nothing more
# in the profile run (activation.V2_FIRST_COMPILE).
_COMPILE_CACHE = regex.compile(r"(?P<warm>Directly[ ]+load[ ]+(?:the[ ]+compiled[ ]+graph|AOT[ ]+compilation[ ]+from))"
                               r"|(?P<cold>Compiling[ ]+(?:a[ ]+graph[ ]+for|model[ ]+again[ ]+due))")


_ENGINE_CORE = regex.compile(r"\bEngineCore(?:_DP\d+|Proc|Client)?\b")
_ENGINE_PATHS = regex.compile(r"(?P<v1>vllm/v1/(?:engine|worker|core)/)|vllm/worker/(?:worker|model_runner)\.py"
                              r"|raise_if_cache_size_invalid")


def _on_log_line(pt, text: str, pos: int) -> bool:
    """Is `pos` (logical) on a line that carried a log prefix ("INFO 04-17 02:01:15 [gpu_worker.py:470]")?"""
    start = text.rfind("\n", 0, pos) + 1
    i = bisect.bisect_left(pt.line_starts, start)
    return i < len(pt.line_starts) and pt.line_starts[i] == start


def _log_prefix_hints(raw: str, hints: list) -> None:
    try:
        if _OLD_PREFIX.search(raw[:400_000], timeout=budget(0.1)):
            hints.append(("0.1.0", "0.8.0"))
        elif _NEW_PREFIX.search(raw[:400_000], timeout=budget(0.1)):
            hints.append(("0.8.0", None))
    except TimeoutError:
        pass


def torch_oom_records(facts) -> list[dict]:
    """The PyTorch OOM messages a paste holds, first first: `extra["torch_oom"]` is one record for
    one message and a list for several (readers take the first)."""
    ooms = facts.extra.get("torch_oom")
    if isinstance(ooms, dict):
        return [ooms]
    return [o for o in ooms if isinstance(o, dict)] if isinstance(ooms, list) else []


def _torch_oom(text: str, pt: PasteText, occs: list[_Occ], kinds: list, extra: dict) -> None:
    ooms = []
    covered: list[tuple[int, int]] = []
    for m in _finditer(_tpl.TORCH_OOM, text, limit=50):
        covered.append(m.span())
        info: dict[str, object] = {"tried_to_allocate_gib": _size_gib(m.group("tried"))}
        total = m.group("total") or m.group("total_old")
        free = m.group("free") or m.group("free_old")
        idx = m.group("gpu_index") or m.group("gpu_index_old")
        if idx is not None:
            info["gpu_index"] = int(idx)
        if total:
            info["total_capacity_gib"] = _size_gib(total)
            if total.endswith("GiB"):
                s, e = m.span("total") if m.group("total") else m.span("total_old")
                occs.append(_Occ("total_gpu_memory_gib", float(total.split()[0].replace("GiB", "")), s, e - 4
                                 if total.endswith(" GiB") else e - 3, "torch_oom", _tpl.P_OOM, pt.rank_at(m.start())))
        if free:
            info["free_gib"] = _size_gib(free)
        if m.group("allocated_old"):
            info["allocated_by_pytorch_gib"] = _size_gib(m.group("allocated_old"))
        tail_end = min(len(text), m.end() + 800)
        procs = []
        for p in _finditer(_tpl.TORCH_OOM_PROC, text[: tail_end], limit=20):
            if p.start() < m.end() - 1:
                continue
            if p.group("pid"):
                procs.append(_size_gib(p.group("used")))
            else:
                info["this_process_in_use_gib"] = _size_gib(p.group("self"))
        if procs:
            info["process_in_use_gib"] = procs
        a = _tpl.TORCH_OOM_ALLOC.search(text, m.end(), tail_end, timeout=budget(0.1))
        if a:
            info["allocated_by_pytorch_gib"] = _size_gib(a.group("by_torch"))
            info["reserved_unallocated_gib"] = _size_gib(a.group("reserved"))
            if a.group("private"):
                info["private_pools_gib"] = _size_gib(a.group("private"))
        phase = "graph" if (info.get("private_pools_gib") or 0) > 0 else None
        kinds.append((m.start(), "cuda_oom" + (":" + phase if phase else ""), "torch_oom"))
        ooms.append(info)
    pools = any(k[1] == "cuda_oom:graph" for k in kinds)
    for m in _finditer(_tpl.SAMPLER_OOM, text, limit=10):
        covered.append(m.span())
        if m.group("n") and "sampler_warmup_requests" not in extra:
            extra["sampler_warmup_requests"] = int(m.group("n"))
        # V1 warms the sampler up twice: in the profile run, and again after the KV cache and the
        # CUDA graphs (compile_or_warm_up_model, outside the budget) — the failure a full card sees.
        # Graph pools in torch's message say the second; else the phase markers around it decide
        # (_oom_phase: a config dump's "cudagraph_capture_sizes" before the profile run is not one).
        kinds.append((m.start(), "cuda_oom:graph" if pools else "cuda_oom", "sampler_warmup_oom"))
    for m in _finditer(_tpl.OTHER_CUDA_OOM, text, limit=50):
        if any(s <= m.start() < e + 40 for s, e in covered):
            continue
        kinds.append((m.start(), "cuda_oom", "cuda_oom_text"))
    if ooms:
        extra["torch_oom"] = ooms[0] if len(ooms) == 1 else ooms
        for k, v in ooms[0].items():          # flat too: extra["process_in_use_gib"], extra["free_gib"] …
            extra.setdefault(k, v)


def _size_gib(size: str | None) -> float | None:
    """'1.74 GiB' / '953.94 MiB' in torch's OOM message → GiB, rounded (derive.gib_bytes goes on to bytes)."""
    if not size:
        return None
    v = _tpl.size_gib(size)
    return None if v is None else round(v, 4)


def _smi(text: str, occs: list[_Occ], extra: dict) -> None:
    info = _prose.find_smi(text)
    if info.gpus:
        names = []
        for idx in sorted(info.gpus):
            name, s, e = info.gpus[idx]
            names.append(name)
            occs.append(_Occ("gpu", name, s, e, "nvidia_smi", 28 if idx == min(info.gpus) else 27, None,
                             norm=_prose.gpu_family(name)))
        extra["gpus"] = names
        extra["gpu_rows"] = len(info.gpus)
    if info.memory:
        extra["nvidia_smi_memory_mib"] = [{"gpu": i, "used": u, "total": t} for i, u, t, _s, _e in info.memory]
        i, _u, total, s, e = info.memory[0]
        occs.append(_Occ("total_gpu_memory_gib", round(total / 1024, 2), s, e, "nvidia_smi_total", _tpl.P_SMI))
    if info.query_totals:
        idx = min(info.query_totals)
        extra["nvidia_smi_total_mib"] = dict(sorted(info.query_totals.items()))
        if idx not in {m[0] for m in info.memory}:
            pass
    if info.processes:
        extra["gpu_processes"] = info.processes


# Unsloth starting vLLM (unsloth_zoo vllm_utils.load_vllm): its banner line, or the user's
# `FastLanguageModel.from_pretrained(..., fast_inference = True)`
_UNSLOTH_LOADING = regex.compile(r"Unsloth: vLLM loading \S{1,300} with actual GPU utilization = (?P<u>\d{1,3}(?:\.\d{1,4})?)%")
_UNSLOTH_VISION = regex.compile(r"Unsloth: Vision model detected, setting approx_max_num_seqs to 1")
_UNSLOTH_KV_GB = regex.compile(r"Unsloth: vLLM's KV Cache can use up to (?P<gb>\d{1,4}(?:\.\d{1,3})?) GB")
_UNSLOTH_BANNER = regex.compile(r"Unsloth (20\d\d)\.(\d{1,2})\.(\d{1,2})\b")
_UNSLOTH_CONSERVATIVENESS = regex.compile(r"Unsloth: Using conservativeness = (?P<c>\d(?:\.\d{1,3})?)")


# torch.compile's ranges as vllm/compilation/backends.py logs them (0.13+): "Compiling a graph for compile range
# (1, 8192) takes 12.98 s", "Directly load the compiled graph(s) for compile range (1, 2048) from the cache"
_COMPILE_RANGE = regex.compile(r"compile[ \n]+range[ \n]*\((?P<s>\d{1,7}),[ \n]*(?P<e>\d{1,7})\)")


def _compile_range_batch(pt: PasteText, occs: list[_Occ]) -> None:
    """max_num_batched_tokens as the run's compile ranges show it. vLLM ends its last range at it
    (config/vllm.py _set_compile_ranges, 0.13–0.34: the endpoints are max_num_batched_tokens and fusion
    thresholds below it), so the largest printed end is it where that range is not the first (a later
    one), or where an engine-core process printed it: its only worker runs no tensor parallelism, so
    no all-reduce fusion threshold (FlashInfer all-reduce + RMSNorm, TP > 1 on Hopper/Blackwell) splits
    the range. A first range from one of several workers may end at that threshold: not read."""
    best = None
    for m in _finditer(_COMPILE_RANGE, pt.logical, limit=64):
        start, end = int(m.group("s")), int(m.group("e"))
        if start < end and (best is None or end > int(best.group("e"))):
            best = m          # a compile size prints as the one-token range (s, s)
    if best is None or not (int(best.group("s")) > 1 or pt.proc_at(best.start()).startswith("EngineCore")):
        return
    occs.append(_Occ("max_num_batched_tokens", int(best.group("e")), *best.span("e"), "compile_range",
                     _tpl.P_CONFIG, pt.rank_at(best.start())))


def _unsloth_launch(text: str, extra: dict, occs: list[_Occ]) -> None:
    """extra["launcher"] = "unsloth" where Unsloth started vLLM, with the utilization it handed vLLM
    and the one the user gave from_pretrained (their ratio maps a utilization fix back to Unsloth's
    argument: `flags.unsloth_call_with`). The handed one is vLLM's gpu_memory_utilization where vLLM's
    own lines do not print it: the `gpu_memory_utilization = 0.9` of the user's call is Unsloth's."""
    loading = _search(_UNSLOTH_LOADING, text)
    kwargs = _flags.unsloth_call_kwargs(text) or {}
    if loading is None and kwargs.get("fast_inference") != "True":
        return
    extra["launcher"] = "unsloth"
    if loading is not None and 0 < float(loading.group("u")) <= 100:
        extra["unsloth_vllm_utilization"] = u = round(float(loading.group("u")) / 100, 4)
        occs.append(_Occ("gpu_memory_utilization", u, loading.start("u"), loading.end("u"), "unsloth_loading",
                         _tpl.P_LOAD))
    given = _flags.unsloth_given_utilization(kwargs)
    if given is not None:
        extra["unsloth_gpu_memory_utilization"] = given
    # Unsloth's vLLM serves its LoRA adapters: load_vllm's enable_lora, with the max_lora_rank from_pretrained
    # passes (the call's, else its default: unsloth/models/loader.py max_lora_rank = 64)
    rank = _flags.unsloth_lora_rank(kwargs)
    extra.setdefault("enable_lora", True)
    if rank is None:
        extra["lora_rank_assumed"] = True
    extra.setdefault("max_lora_rank", rank or _flags.UNSLOTH_DEFAULT_LORA_RANK)
    kv = _search(_UNSLOTH_KV_GB, text)
    if kv is not None:
        extra["unsloth_kv_gb"] = float(kv.group("gb"))
    banner = _search(_UNSLOTH_BANNER, text)
    if banner is not None:
        extra["unsloth_version"] = tuple(int(x) for x in banner.groups())
    conservative = _search(_UNSLOTH_CONSERVATIVENESS, text)
    if conservative is not None and 0 < float(conservative.group("c")) <= 1:
        extra["unsloth_conservativeness"] = float(conservative.group("c"))
    if kwargs.get("float8_kv_cache") == "True":
        extra["unsloth_float8_kv"] = True
    caller = _flags.unsloth_caller(text)
    if caller:
        extra["unsloth_call"] = caller
    if _search(_UNSLOTH_VISION, text) is not None or (caller == "FastVisionModel"
                                                      and kwargs.get("fast_inference") == "True"):
        # unsloth_zoo load_vllm for a vision model (since its VLM support, 2025-09-16): one sequence, a batch
        # of max(8192, max_seq_length) tokens and one image, no video per prompt; the "Chunked prefill
        # tokens" it prints beside is not the batch vLLM gets
        extra["unsloth_vision"] = True
        extra.setdefault("limit_mm_per_prompt", dict(_flags.UNSLOTH_VISION_MM_LIMITS))
        occs[:] = [o for o in occs if not (o.source == "unsloth_batch" and o.key == "max_num_batched_tokens")]


# vLLM prints the torch total with two decimals; one card's variants (PCIe or SXM, the driver's
# reservation) differ by about 0.01 GiB (an A100-PCIE-40GB printed 39.38, the SXM4 gives 39.39), two
# cards of one size class by more (RTX 3090 23.69, RTX 4090 23.64 GiB)
_PRINTED_TOTAL_SLACK = 0.02
_PRINTED_TOTAL_DRIVER_SLACK = 0.0012  # of the total: 0.095 GiB at 80 GiB, 0.03 at 24 (under RTX 3090 vs 4090)
_TPL_NAMES = frozenset(t.name for t in _tpl.TEMPLATES)


def _occ_norm(o: _Occ):
    """What two readings compare by: their normal form (a GPU family, a model repo), else the value."""
    return o.norm if o.norm is not None else (round(o.value, 6) if isinstance(o.value, float) else o.value)


# What a post names in prose for the run it shows: the model, the card and how many of them.
_RUN_SUBJECT = ("model", "gpu", "gpu_count")


def _named_before(by_key: dict, chosen: dict, at: int) -> dict:
    """{key: value} of the model, card and count a post names in prose last before its error (`at`),
    where that is not what was read (the first named, the post's subject). Why: a README or a thread
    that lists several setups puts the failing one right before its traceback ("With four A6000s:"
    under a 70B heading, after "one 3090" for an 8B); the reply tries it when vLLM's figures rule out
    the subject (diagnosis._run_named_before). Only prose readings: a command or log line is the run."""
    out: dict = {}
    for key in _RUN_SUBJECT:
        prior = [o for o in by_key.get(key, []) if o.start < at and o.source.startswith("prose")]
        read = chosen.get(key)
        if not prior or (read is not None and not read.source.startswith("prose")):
            continue
        last = max(prior, key=lambda o: o.start)
        if read is None or _occ_norm(last) != _occ_norm(read):
            out[key] = last.value
    return out if set(out) & {"model", "gpu"} else {}


def _gpu_by_printed_total(chosen: dict, alternatives: dict, gpu_occs: list[_Occ]) -> None:
    """Of several cards a paste names (a heading's "RTX 4090 48GB", Unsloth's banner "NVIDIA GeForce
    RTX 3090"), the one whose memory is the total vLLM printed for the run (23.68 GiB), where the
    first-named one's is not and exactly one other's is."""
    total = chosen.get("total_gpu_memory_gib")
    others = alternatives.get("gpu")
    if not others or "gpu" not in chosen or total is None or total.source not in _TPL_NAMES:
        return
    from estimator.errors import KvdoctorError
    from estimator.gpus import lookup_gpu

    def holds(name: object, slack: float = _PRINTED_TOTAL_SLACK) -> bool:
        try:
            size = lookup_gpu(str(name)).total_bytes / 2**30
        except KvdoctorError:
            return False
        return abs(size - float(total.value)) <= slack

    if holds(chosen["gpu"].value):
        return
    fitting = [v for v in dict.fromkeys(others) if holds(v)]
    if not fitting:
        # one card's total varies with the driver by up to ~0.1 GiB (H100s print 79.10–79.21): the
        # one named card within that of the printed total, where the first-named one is not
        loose = _PRINTED_TOTAL_DRIVER_SLACK * float(total.value)
        if not holds(chosen["gpu"].value, loose):
            fitting = [v for v in dict.fromkeys(others) if holds(v, loose)]
    occ = next((o for o in gpu_occs if fitting and o.value == fitting[0]), None)
    if len(fitting) == 1 and occ is not None:
        alternatives["gpu"] = [v for v in others if v != fitting[0]] + [chosen["gpu"].value]
        chosen["gpu"] = occ


def _log_intro(text: str, models: list[_Occ], log_at: list[int]) -> _Occ | None:
    """The model named on the line that introduces the log ("Finally got vllm to work with
    qwen3.5:9b:" and the log under it), else None: the last sentence of the last line before the
    log's first figure that ends in a colon, if it names one model. A post that tells of several
    models shows there the one its log is of, where the subject it names first may be another
    (diagnosis._other_named_model weighs the two)."""
    if not log_at:
        return None
    start = min(log_at)
    pos = text.rfind("\n", 0, start)
    while pos > 0:
        begin = text.rfind("\n", 0, pos) + 1
        if text[begin:pos].rstrip(" \t`*").endswith(":"):
            # its last sentence: "The 72B would not start. It works with the 7B:"
            line = text[begin:pos]
            begin += max(line.rfind(". "), line.rfind("! "), line.rfind("? ")) + 1
            named = [o for o in models if begin <= o.start < pos]
            # one model: a line that names two ("72B and 32B on my 4090:") says neither is the log's
            return named[0] if len({_occ_norm(o) for o in named}) == 1 else None
        pos = begin - 1
    return None


def _resolve(key: str, lst: list[_Occ], focal: int | None, run_of,
             failed_runs: set[int] | frozenset = frozenset()) -> tuple[_Occ | None, list, list]:
    cands = lst
    if focal is not None:
        in_focal = [o for o in cands if run_of(o.start) == focal]
        # the machine, the install and the subject (GPU, vLLM version, model) named in prose
        # belong to no single run
        if in_focal and not (key in ("gpu", "model", "gpu_count", "vllm_version")
                             and all(o.source.startswith(("prose", "catalog", "hf_")) for o in in_focal)):
            # a local path the run served, read as a guess, gives way to the repo the paste downloaded there
            cands = in_focal + [o for o in cands if o.source == "download_local_dir" and all(f.guess for f in in_focal)]
        elif not in_focal and focal > 0 and key in _SETTING_FACTS:
            # The failing run has its own command line and it does not set this flag: vLLM used its
            # default, not the value another attempt passed — one that failed on its own, or one
            # after it (vllm PR10511 shows a TP 1 run, then `-tp 2`). A command before it without an
            # error of its own may be the real one the log echoes (`vllm serve MODEL` after docker).
            cands = [o for o in cands if o.source not in _RUN_SOURCES
                     or run_of(o.start) < focal and run_of(o.start) not in failed_runs]
            if not cands:
                return None, [], []
    top = max(o.priority for o in cands)
    top_occ = [o for o in cands if o.priority == top]
    primary = [o for o in top_occ if o.rank is None]
    ranked = [o for o in top_occ if o.rank is not None]
    per_rank: list = []
    if ranked:
        seen_ranks: dict = {}
        for o in sorted(ranked, key=lambda o: (o.rank[0] != "rank", o.rank[1] if o.rank[0] == "rank" else o.start)):
            seen_ranks.setdefault(o.rank, o.value)
        vals = ([primary[0].value] if primary else []) + list(seen_ranks.values())
        if len(set(map(repr, vals))) > 1 or len(vals) > 1 and primary:
            per_rank = vals
    group = primary or sorted(ranked, key=lambda o: (o.rank[0] != "rank", o.rank[1] if o.rank[0] == "rank" else o.start))[:1]
    if not group:
        return None, per_rank, []
    norm = _occ_norm
    distinct = []
    for o in group:
        if norm(o) not in distinct:
            distinct.append(norm(o))
    if len(distinct) == 1:
        if key == "gpu":
            # the most specific spelling of the same GPU ("H100 NVL" over "H100")
            return max(group, key=lambda o: (len(str(o.value)), -o.start)), per_rank, []
        return group[0], per_rank, []
    workers = _per_worker_lines(key, group)
    if workers:
        return workers[0], [o.value for o in workers], []
    if key == "free_memory_gib" and all(o.source == "free_memory_startup" for o in group):
        # each worker checks its own GPU at start-up ("Free memory on device cuda:3 (53.76/79.18 GiB)"):
        # other processes hold a different amount on each, and a utilization that fits must fit the tightest
        ordered = sorted(group, key=lambda o: o.start)
        return min(ordered, key=lambda o: float(o.value)), [o.value for o in ordered], []
    if key == "model" and top <= _tpl.P_PROSE + 10:
        first = min(group, key=lambda o: o.start)     # the subject is named first
        return first, per_rank, [o.value for o in group if norm(o) != norm(first)]
    if key == "gpu":
        # several GPUs named in prose: the first is the one the writer runs on far more often
        first = min(group, key=lambda o: o.start)
        same = [o for o in group if norm(o) == norm(first)]
        return max(same, key=lambda o: (len(str(o.value)), -o.start)), per_rank, [o.value for o in group if norm(o) != norm(first)]
    return None, per_rank, [o.value for o in group]


# V1 up to 0.10.x sizes the KV cache once per worker in the engine core, in rank order, and each
# call logs its own "GPU KV cache size" / "Maximum concurrency" pair before the blocks are unified
# to the smallest (vllm/v1/engine/core.py _initialize_kv_caches → kv_cache_utils.get_kv_cache_config,
# then unify_kv_cache_configs). The lines carry no worker prefix; their values differ by each
# rank's free memory, a fraction of a percent — not by a change of settings between two runs.
_PER_WORKER_SOURCES = {"kv_tokens_capacity": ("kv_cache_size",), "max_concurrency": ("max_concurrency",)}
_PER_WORKER_SPREAD = 0.05


def _per_worker_lines(key: str, group: list[_Occ]) -> list[_Occ]:
    """The engine core's per-worker capacity lines of one run, in order (the first is rank 0's),
    when `group` is such lines; else []."""
    sources = _PER_WORKER_SOURCES.get(key)
    if not sources or any(o.source not in sources for o in group):
        return []
    vals = [float(o.value) for o in group]
    if min(vals) <= 0 or (max(vals) - min(vals)) / max(vals) > _PER_WORKER_SPREAD:
        return []
    return sorted(group, key=lambda o: o.start)


_LINE_VERSION = regex.compile(r"(?i)(?<![\w.])v?(\d+\.\d+(?:\.\d+)?)(?![\d]|\.\d)")


def _pick_by_version(text: str, lst: list[_Occ], version: str) -> _Occ | None:
    """Values that disagree because the paste compares versions line by line ("- vLLM 0.2.4:
    `# GPU blocks: 1464`" / "- vLLM 0.2.5: `# GPU blocks: 112`"): the line labelled with the
    version the paste is about. None unless exactly one top-priority value's line names it."""
    top = max(o.priority for o in lst)
    want = _vkey(version)
    hits = []
    for o in (o for o in lst if o.priority == top):
        head = text[text.rfind("\n", 0, o.start) + 1: o.start]
        versions = [_vkey(m.group(1)) for m in _finditer(_LINE_VERSION, head, limit=5)]
        if versions and want in versions:
            hits.append(o)
    vals = {repr(o.value) for o in hits}
    return hits[0] if len(vals) == 1 else None


# `quantization=None` in the engine's config dump (llm_engine.py / v1 core.py "with config: …"): the
# method vLLM resolved from the flag and the checkpoint — none
_DUMP_NO_QUANT = regex.compile(r"(?<![\w'\"-])quantization=None(?=[,\s]|$)")


def _dump_says_unquantized(text: str) -> bool:
    """A `quantization=None` of the engine's config dump, even an excerpt of it — not an argument line
    (flags.is_argument_line: the 0.4–0.8 api_server's `args: Namespace(…)`, the flag before vLLM reads
    the checkpoint's own method, nor user code's `LLM(…)`)."""
    return any(not _flags.is_argument_line(text[text.rfind("\n", 0, m.start()) + 1: m.start()])
               for m in _finditer(_DUMP_NO_QUANT, text, limit=20))


def _repo_quant(name: object) -> str | None:
    """The quantization a model id or path names in its last component ("…/Qwen3-14B-AWQ" → awq)."""
    return _prose.quantization_in_name(str(name).rsplit("/", 1)[-1])


def _infer_quantization(chosen: dict, by_key: dict, model_paths: list[str], text: str) -> None:
    """Quantization named in the model id (or a path / recipe file named after it) when nothing
    stronger said it; a bare word in prose ("AWQ", below P_GUESS) yields to the model's name."""
    if "quantization" in chosen and chosen["quantization"].priority >= _tpl.P_GUESS:
        return
    if "quantization=None" in text and _dump_says_unquantized(text):
        return      # the engine's config dump says the model ran unquantized, whatever names say
    names = []
    served = chosen.get("model")
    if served is not None:
        names.append((served, str(served.value)))
    for p in model_paths:
        names.append((None, p))
    ran = served is not None and served.source.removesuffix("_model") in _RUN_SOURCES and not served.guess
    word = chosen.get("quantization")
    for o in by_key.get("model", []):
        if ran and o.value != served.value:
            # the command (or its `--model` flag, a YAML args list, the printed arguments) says which
            # model ran; another one the prose compares it with, or switched to later, is not it —
            # nor is a bare word that is that other model's format ("serving `…-AWQ` via AWQ")
            if word is not None and _repo_quant(o.value) == word.value and not _repo_quant(served.value):
                del chosen["quantization"]
                word = None
            continue
        if served is not None and not served.guess and o.value != served.value \
                and o.source.removesuffix("_model") not in _RUN_SOURCES:
            # another model the text only names (a results table's next row, a comparison): its
            # format is not the one named first — only a run's own record could overrule that
            continue
        names.append((o, str(o.value)))
    for occ, name in names:
        q = _repo_quant(name)
        if q:
            if occ is not None:
                chosen["quantization"] = _Occ("quantization", q, occ.start, occ.end, "model_name", _tpl.P_GUESS, None, True)
            else:
                i = text.find(name)
                s = i if i >= 0 else 0
                chosen["quantization"] = _Occ("quantization", q, s, s + (len(name) if i >= 0 else 0), "model_name",
                                              _tpl.P_GUESS, None, True)
            return


_DP_ENGINE = regex.compile(r"EngineCore_DP[1-9]|DPEngineCore")
# Custom all-reduce's P2P cache is named after the devices the process sees (CUDA_VISIBLE_DEVICES,
# else all of them; vllm/distributed/device_communicators/custom_all_reduce_utils.py
# gpu_p2p_access_check), not after the tensor-parallel group: an 8-GPU host running TP 2 names 0–7.
_P2P_CACHE = regex.compile(r"gpu_p2p_access_cache_for_(?P<devs>\d{1,3}(?:,\d{1,3}){1,63})\.json")


def _derive_parallel_sizes(chosen: dict, extra: dict, pt: PasteText, focal: int | None, run_of) -> None:
    """Tensor/pipeline sizes from what the workers printed, where no flag says them.

    Four `(VllmWorker rank=0…3)` lines each saying "Model loading took 14.25 GiB" are a 4-way
    split, not four copies of one card's state (vllm#17327 was read as one GPU holding the whole
    KV pool). Sources, surest first: custom all-reduce's P2P cache file names the tensor-parallel
    devices; V1 worker names give both sizes; a global rank gives the world (tensor assumed);
    V0's worker processes give at least their count + 1, and the GPU count the paste states (or
    the devices custom all-reduce's P2P cache file names) when it is at least that. Skipped where
    data parallelism could own the ranks."""
    if "tensor_parallel_size" in chosen or "pipeline_parallel_size" in chosen:
        return
    if int(extra.get("data_parallel_size") or 1) > 1 or ("EngineCore" in pt.clean and _search(_DP_ENGINE, pt.clean)):
        return
    grid = worker_grid([li for li in pt.lines if focal is None or run_of(li.start) == focal])
    if grid is None:
        return
    tp, pp, how = grid
    src = {"names": "worker_grid", "ranks": "worker_ranks", "pids": "worker_processes"}[how]
    if how == "pids":
        stated = chosen.get("gpu_count")
        p2p = _search(_P2P_CACHE, pt.clean) if "p2p_access_cache" in pt.clean else None
        if stated is not None or p2p:
            seen = int(stated.value) if stated is not None else len(p2p.group("devs").split(","))
            if seen >= tp:
                tp = seen
                src = "worker_processes" if stated is not None else "p2p_cache"
            elif tp & (tp - 1):
                return      # neither a stated count nor a power of two: too unsure to guess
        else:
            # the workers beside the driver are a lower bound; tensor parallelism comes in powers of
            # two, and the GPUs the host lists (collect_env / nvidia-smi, every one on the host, or
            # CUDA_VISIBLE_DEVICES') cap it (vllm#6746: four workers + the driver on eight H100s → 8)
            visible = extra.get("cuda_visible_devices")
            cap = len(visible) if isinstance(visible, list) and visible else int(extra.get("gpu_rows") or 0)
            p2 = 1 << (tp - 1).bit_length()
            if tp & (tp - 1) and not (cap and p2 <= cap):
                return      # not a power of two and nothing says the next one fits: too unsure
            tp = p2
    if tp > 1:
        chosen["tensor_parallel_size"] = _Occ("tensor_parallel_size", tp, 0, 0, src, _tpl.P_GUESS, None, True)
    if pp > 1:
        chosen["pipeline_parallel_size"] = _Occ("pipeline_parallel_size", pp, 0, 0, src, _tpl.P_GUESS, None, True)


# the source of a GPU count that is only the lower bound the parallel sizes give, not GPUs the paste shows
COUNT_FROM_SIZES = "parallel_sizes"


def _derive_gpu_count(chosen: dict, extra: dict) -> None:
    """GPU count: said in prose ("2x 4090") wins; else at least the GPUs the parallel sizes need,
    or the rows of nvidia-smi / collect_env."""
    if "gpu_count" in chosen:
        return
    tp = chosen.get("tensor_parallel_size")
    pp = chosen.get("pipeline_parallel_size")
    need = (tp.value if tp else 1) * (pp.value if pp else 1) * int(extra.get("data_parallel_size") or 1)
    rows = int(extra.get("gpu_rows") or 0)
    if max(need, rows) <= 1 and not (tp or pp or rows):
        return
    n = max(need, rows)
    src = tp or pp
    if src is not None and need >= rows:
        chosen["gpu_count"] = _Occ("gpu_count", n, src.start, src.end, COUNT_FROM_SIZES, _tpl.P_GUESS, None, True)
    elif rows and "gpu" in chosen:
        g = chosen["gpu"]
        chosen["gpu_count"] = _Occ("gpu_count", n, g.start, g.end, "gpu_rows", _tpl.P_GUESS, None, True)


# ---------------------------------------------------------------------------------------------
# error kind

_SPECIFIC = ("kv_capacity_v0", "kv_capacity_v1", "no_cache_blocks", "free_memory_startup", "mamba_blocks",
             *CONFIG_ERRORS)
# The shell's word when the kernel's OOM killer ended the process: host RAM ran out, not the GPU's.
# the kernel's OOM killer as the shell reports it ("Killed"), and a container killed at its memory limit as
# Docker / Kubernetes report it ("OOMKilled", "was OOM-killed", "exceeded its 8Gi memory limit"; not
# `docker inspect`'s "OOMKilled": false)
_CONTAINER_KILLED_RE = (r"\bOOM[- ]?[Kk]illed\b(?![\"']?[ ]*[:=][ ]*[\"']?(?:false|False|0)\b)"
                        r"|\bexceeded[ ]+its[ ]+[\w.]+[ ]+memory[ ]+limit\b")
_KILLED_RE = r"(?m:^[ ]*Killed[ ]*$)|" + _CONTAINER_KILLED_RE
_KILLED = regex.compile(_KILLED_RE)
# PyTorch's MapAllocator (aten/src/ATen/MapAllocator.cpp), which safetensors' torch loader maps each
# checkpoint file with (safe_open → UntypedStorage.from_file: mmap PROT_READ|PROT_WRITE, MAP_PRIVATE):
# "unable to mmap 16933256392 bytes from file </root/.cache/…/model.safetensors>: Cannot allocate memory
# (12)" — the kernel refused the mapping (ENOMEM), a host-memory failure before any GPU memory is sized
_MMAP_REFUSED = regex.compile(r"unable[ ]to[ ]mmap[ ](\d{1,15})[ ]bytes[ ]from[ ]file[ ]<([^<>\n]{1,500})>:?[ ]*"
                              r"Cannot[ ]allocate[ ]memory")
_CONTAINER_KILLED = regex.compile(_CONTAINER_KILLED_RE)
# config/model.py _verify_quantization / quantization get_quantization_config when the release has no
# such method (bitsandbytes after 0.27, GGUF after 0.23, or a misspelt --quantization)
_UNKNOWN_QUANT = regex.compile(r"(?:Unknown|Invalid) quantization method:? ['\"`]?([A-Za-z0-9][A-Za-z0-9_-]{0,40})")
# vllm/model_executor/models/registry.py _raise_for_unsupported (model_loader.py in 0.1.x): none of the
# config's architectures is in the release's model registry, e.g. "Model architectures
# ['Qwen3ForCausalLM'] are not supported for now. Supported architectures: …"
_UNSUPPORTED_ARCH = regex.compile(r"Model[ ]architectures[ ]\[([^\]\n]{1,400})\][ ]are[ ]not[ ]supported")
_QUOTED_NAME = regex.compile(r"['\"]([A-Za-z_][A-Za-z0-9_]{0,80})['\"]")
_OTHER_ERROR = regex.compile(
    r"EngineCore[ ]+failed[ ]+to[ ]+start|Engine[ ]+core[ ]+initialization[ ]+failed|EngineCore[ ]+hit[ ]+an[ ]+exception"
    r"|vLLM[ ]+cannot[ ]+currently[ ]+support|Trying[ ]+to[ ]+create[ ]+tensor[ ]+with[ ]+negative[ ]+dimension"
    r"|WorkerProc[ ]+(?:failed|hit)|" + _KILLED_RE)
_VLLM_TRACEBACK = regex.compile(
    r"(?s)Traceback[ ]\(most[ ]recent[ ]call[ ]last\)(?=.{0,3000}?vllm[/\\.])(?=.{0,4000}?(?:kv_cache|determine_available_memory"
    r"|determine_num_available_blocks|profile_run|initialize_cache|_initialize_kv_caches|init_device|get_kv_cache_config))")
_PROSE_KV_CHECK = regex.compile(
    r"(?i)\b(?:OOM(?:s|'?ed|ing)?|fail(?:s|ed|ing)?|dies|died|crash(?:es|ed)?|errors?[ ]+out)[ ]+(?:at|during|in|on)[ ]+(?:the[ ]+)?"
    r"KV[ -]?cache[ ]+(?:(?:capacity|size|length|admission)[ ]+)?check\b")
_PROSE_OOM = regex.compile(
    r"(?i)\bOOM(?:s|'?ed|ing)?\b(?=[ ]+(?:errors?|at|when|during|while|on|under)\b)"
    r"|\b(?:get|got|getting|hits?|hitting|throws?|thrown|see|seeing|gives?|encounter(?:ed)?|causes?d?|results?(?:ed)?[ ]+in)[ ]+"
    r"(?:an?[ ]+|the[ ]+|same[ ]+)?(?:CUDA[ ]+)?(?:OOM|out[ ]+of[ ]+memory)\b|\bruns?[ ]+out[ ]+of[ ]+memory")

# Words that make an OOM a possibility, as vLLM's own advice words it: arg_utils.py's long-context warning
# "This may cause OOM errors during the initial memory profiling phase"
_HEDGE = regex.compile(r"(?i)\b(?:may|might|could|can|to[ ]+avoid|to[ ]+prevent|otherwise)\b")
# ... and words that deny it right before it: "leaves room for draft-model overhead without OOM under load"
_DENIED = regex.compile(r"(?i)\b(?:without|no|never)[ ]+(?:an?[ ]+|any[ ]+)?(?:CUDA[ ]+)?$")

# The lines that size the KV cache (V0's blocks and share, V1's pool and capacity): the profile run is over
_KV_SIZED_WORDS = (r"\#[ ]*(?:GPU|CUDA|cuda)[ ]+blocks|KV[ ]+cache[ ]+size:|Available[ ]+KV[ ]+cache[ ]+memory"
                   r"|reserved[ ]+for[ ]+KV[ ]+Cache[ ]+is")
_PHASES = (
    ("load", regex.compile(r"(?i)load_model|load_weights|Loading[ ]+model[ ]+weights(?![ ]+took)|Starting[ ]+to[ ]+load[ ]+model"
                           r"|Loading[ ]+safetensors|Loading[ ]+checkpoint[ ]+shards|model_loader|weight_loader|initialize_model"
                           r"|while[ ]+loading|during[ ]+(?:model[ ]+|weight[ ]+)?loading")),
    # `_dummy_run` / `_dummy_sampler_run` and V1's "… when warming up sampler" message are shared by
    # the profile run and the warm-up after the KV cache: the outer frames (profile_run vs
    # capture_model / compile_or_warm_up_model) tell the phase, so the shared ones are not markers.
    ("profile", regex.compile(r"(?i)Loading[ ]+model[ ]+weights[ ]+took|Model[ ]+loading[ ]+took|Loading[ ]+weights[ ]+took"
                              r"|profile_run|determine_num_available_blocks|determine_available_memory"
                              r"|profile[ ]+run|Memory[ ]+profiling|\bprofiling\b(?![ ]+is[ ]+enabled)")),
    # the KV cache sized (V0's "the rest of the memory reserved for KV Cache is", V1's pool and blocks):
    # the profile run is over, what fails next is the cache's allocation, graph capture or warm-up
    ("graph", regex.compile(r"(?i)" + _KV_SIZED_WORDS +
                            r"|initialize_cache|initialize_from_config|capture_model|Capturing[ ]+(?:the[ ]+model"
                            r"[ ]+for[ ]+)?CUDA[ ]+graphs?|cudagraph|CUDA[ ]+graph|Graph[ ]+capturing|capture_end"
                            r"|compile_or_warm_up_model|warm[ _-]?up(?![ ]+sampler)|warming[ ]+up(?![ ]+sampler)"
                            r"|(?:at|during|while)[ ]+(?:graph[ ]+)?captur(?:e|ing)\b")),
    ("runtime", regex.compile(r"(?i)Application[ ]+startup[ ]+complete|Uvicorn[ ]+running|Avg[ ]+prompt[ ]+throughput"
                              r"|Received[ ]+request|POST[ ]+/v1|under[ ]+load|at[ ]+runtime|during[ ]+(?:inference|generation)"
                              r"|while[ ]+(?:serving|generating)|\d+(?:\.\d+)?k?[ ]*(?:-?token[ ]+)?prompts?\b|max_tokens"
                              r"|Processed[ ]+prompts|\bgenerate\(")),
)
_PHASE_RE = dict(_PHASES)
# The engine's `_initialize_kv_caches` (V0 LLMEngine, V1 EngineCore) runs the profile run, then sizes and
# allocates the KV cache, then captures graphs: a traceback cut to that frame says only "after the load".
# Before a line that sizes the KV cache it is the profile run (an RX 9070 XT log: Inductor's OOM under it,
# no pool printed), after one the cache's allocation or graph capture.
_KV_INIT_FRAME = regex.compile(r"_initialize_kv_caches")
_KV_SIZED = regex.compile(r"(?i)" + _KV_SIZED_WORDS)
_PHASE_MARKERS = _PHASES + (("kv_init", _KV_INIT_FRAME),)


_LOGGISH = regex.compile(r"[ ]*(?:File[ ]+\"|Traceback|\w+(?:\.\w+)*(?:Error|Exception)\b|\w+[ ]+\d\d-\d\d[ ])")


def _phase_in(text: str, start: int, end: int, log_lines: set | None = None) -> tuple[int, str] | None:
    """Last phase marker in text[start:end]; with `log_lines`, only markers on lines vLLM or a
    traceback printed (prose like "# disable cuda graphs" says nothing about where it failed)."""
    best: tuple[int, str] | None = None
    for name, pat in _PHASE_MARKERS:
        try:
            for m in pat.finditer(text, start, end, timeout=budget(0.1)):
                if log_lines is not None:
                    ls = text.rfind("\n", 0, m.start()) + 1
                    if ls not in log_lines and not _LOGGISH.match(text, ls):
                        continue
                if best is None or m.start() >= best[0]:
                    best = (m.start(), name)
        except TimeoutError:
            continue
    if best is not None and best[1] == "kv_init":
        try:
            sized = _KV_SIZED.search(text, start, best[0], timeout=budget(0.1)) is not None
        except TimeoutError:
            sized = True
        best = (best[0], "graph" if sized else "profile")
    return best


def _mentions_graphs(text: str) -> bool:
    """A graph-phase marker anywhere in the paste other than a config key (`cudagraph_mode`…)."""
    try:
        return any(text[m.end():m.end() + 1] != "_"
                   for m in _PHASE_RE["graph"].finditer(text, timeout=budget(0.1)))
    except TimeoutError:
        return False


def _oom_phase(text: str, pos: int, run_start: int, from_template: bool, log_lines: set) -> str | None:
    """Phase of a CUDA OOM: the last phase marker before it (traceback frames are innermost
    last), else one on its own line ("CUDA OOM … with an 88k prompt"). A torch OOM message with
    no marker at all happened while loading (nothing else ran yet); a mention in prose without
    a marker has no phase (→ "other")."""
    ls = text.rfind("\n", 0, pos) + 1
    le = text.find("\n", pos)
    le = len(text) if le < 0 else le
    line = _phase_in(text, ls, le)
    before = _phase_in(text, max(run_start, pos - 30000), ls, log_lines)

    def after() -> tuple[int, str] | None:
        # an OOM put above the log (an issue title, "got CUDA OOM:" then the log): the log below
        # shows how far start-up got, so its last marker is where it failed
        return None if before or line else _phase_in(text, le, min(len(text), pos + 30000), log_lines)

    if from_template or _is_error_line(text, pos):
        if before:
            return before[1]
        if line:
            return line[1]
        below = after()
        if below:
            return below[1]
        try:
            if _PHASE_RE["runtime"].search(text, run_start, min(len(text), pos + 20000), timeout=budget(0.1)):
                return "runtime"
        except TimeoutError:
            pass
        return "load" if from_template else None
    if line:
        return line[1]
    below = after() if pos - ls < 200 and ls < 400 else None
    return below[1] if below else None


def _error_kind(text: str, kinds: list, memory_logs: list[int], focal, run_of, run_starts: list[int], log_lines: set,
                engine: str | None = None):
    in_focal = [k for k in kinds if focal is None or run_of(k[0]) == focal]
    # Two different checks failing in one account ("No available memory for the cache blocks" …
    # "Later, after reducing max-model-len … larger than the maximum number of tokens … (1936)"): the
    # later message is the later attempt, the one whose figures the paste goes on with.
    for pos, kind, src in reversed(in_focal):
        if kind in _SPECIFIC:
            return kind, (pos, pos + 1), src
    context = bool(memory_logs or log_lines) or _search(VLLM_SHOWN, text) is not None
    phaseless = None
    for pos, kind, src in in_focal:
        if kind.startswith("cuda_oom"):
            explicit_phase = kind.split(":", 1)[1] if ":" in kind else None
            r = run_of(pos)
            run_start = run_starts[r - 1] if r > 0 else 0
            phase = explicit_phase or _oom_phase(text, pos, run_start, src == "torch_oom", log_lines)
            if phase is None and src == "sampler_warmup_oom":
                # a write-up with no log around the message: the warm-up after the KV cache when the
                # paste speaks of graphs or a KV cache at all (not a config key such as
                # "cudagraph_capture_sizes"), else the profile run's
                phase = "graph" if _mentions_graphs(text) else "profile"
            if phase is None:
                # a mention without a phase (a title, "torch.OutOfMemoryError for 0.6.4"): a later
                # occurrence in the log may still say where it hit
                phaseless = phaseless or (pos, src)
                continue
            return f"cuda_oom_{phase}", (pos, pos + 1), src
    if phaseless and context:
        return "other", (phaseless[0], phaseless[0] + 1), phaseless[1]
    for pos, kind, src in in_focal:
        if kind == "other":
            return "other", (pos, pos + 1), src
    if not context:
        return None
    m = _search(_PROSE_KV_CHECK, text)
    if m and engine in ("v0", "v1"):
        # "OOMs at the KV-cache check": the length-vs-KV-capacity check, told in words; which
        # message it was follows the engine (V0 worker.py vs V1 kv_cache_utils.py)
        return f"kv_capacity_{engine}", m.span(), "prose_kv_check"
    m = _search(_OTHER_ERROR, text)
    if m and (memory_logs or "Killed" not in m.group(0)):
        return "other", m.span(), "vllm_error"
    m = _search(_VLLM_TRACEBACK, text)
    if m:
        return "other", m.span(), "vllm_traceback"
    m = None
    for pm in _finditer(_PROSE_OOM, text, limit=20):
        before = text[max(text.rfind("\n", 0, pm.start()) + 1, pm.start() - 60): pm.start()]
        if _HEDGE.search(before) or _DENIED.search(before):
            continue    # a warning of what may happen ("This may cause OOM errors during …"), not a failure
        m = m or pm
        ls = text.rfind("\n", 0, pm.start()) + 1
        le = text.find("\n", pm.end())
        line = _phase_in(text, ls, len(text) if le < 0 else le)
        if line:
            return f"cuda_oom_{line[1]}", pm.span(), "prose_oom"
    if m and not memory_logs:
        return "other", m.span(), "prose_oom"
    if memory_logs:
        p = min(memory_logs)
        return "startup_log_ok", (p, p + 1), "memory_log"
    if m:
        return "other", m.span(), "prose_oom"
    return None


# An exception as Python prints it, at a line's start or after a log prefix: "ValueError: Following weights
# were not initialized from checkpoint:", "RuntimeError: No supported CUDA architectures found …"
_EXCEPTION_LINE = regex.compile(r"(?m)(?:^|[ \]:])[ ]*(?P<name>(?:[A-Za-z_]\w{0,40}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception))"
                                r":[ ]+(?P<msg>[^\n]{1,300})")
# what a memory failure's exception says (torch's and vLLM's messages): such a cause stays a memory problem
# (not "an illegal memory access", a kernel's crash; nor any other CUDA error: "no kernel image is available")
_MEMORY_WORDS = regex.compile(r"(?i)(?<!illegal[ ])memory|\bOOM\b|KV|cache|blocks?\b|allocat"
                              r"|max[ _]?(?:model[ _])?(?:seq[ _])?len|out[ ]of")


# vLLM's wrappers around the real failure ("RuntimeError: Engine core initialization failed. See root cause
# above.", "Worker failed with error '…', please check the stack trace above", EngineDeadError): no cause
_WRAPPER_EXCEPTION = regex.compile(r"(?i)root[ ]cause|stack[ ]trace[ ]above|engine[ ]?core|EngineDead|worker"
                                   r"|exited[ ]unexpectedly|died[ ]unexpectedly|failed[ ]core[ ]proc")


def _root_exception(text: str) -> str | None:
    """The exception a failed engine start ended with ("EngineCore failed to start" and the traceback
    above it), where none of the paste's exceptions is a memory one: the last such line, as printed,
    not one of vLLM's wrappers around it. None where there is none, or where any exception speaks of
    memory (OutOfMemoryError, a KV cache, blocks, an allocation)."""
    every = list(_finditer(_EXCEPTION_LINE, text, limit=200))
    if any("OutOfMemory" in m.group("name") or _MEMORY_WORDS.search(m.group("msg")) for m in every):
        return None
    found = [m for m in every if not _WRAPPER_EXCEPTION.search(m.group("name") + ": " + m.group("msg"))]
    if not found:
        return None
    last = found[-1]
    return f"{last.group('name')}: {last.group('msg').strip()}"


def _is_error_line(text: str, pos: int) -> bool:
    ls = text.rfind("\n", 0, pos) + 1
    return bool(regex.match(r"[ ]*(?:\w+\.)*\w*(?:Error|Exception)\b", text[ls:pos + 40]))



def _engine(engines: list[tuple[int, str]], version: _Occ | None) -> str | None:
    if engines:
        best = max(s for s, _ in engines)
        vals = {e for s, e in engines if s == best}
        if len(vals) == 1:
            return vals.pop()
    if version is not None:
        m = regex.match(r"(\d+)\.(\d+)", str(version.value))
        if m and (int(m.group(1)), int(m.group(2))) >= (0, 11):
            return "v1"
    return None


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in regex.findall(r"\d+", v)[:3])


# vLLM's releases, patch releases included (vllm.RELEASES): they turn an exclusive bound ("absent from
# 0.11.0 on") into the last release that still prints the text (0.10.2).
_RELEASES = tuple(v for v, _ in RELEASES)


def _intersect(hints: list) -> tuple[str, str | None] | None:
    """Intersection of half-open ranges [lo, hi) → (lo, last release below hi) — both inclusive;
    hi None = still printed by the newest release read."""
    if not hints:
        return None
    lo = max((h[0] for h in hints), key=_vkey)
    his = [h[1] for h in hints if h[1]]
    hi = min(his, key=_vkey) if his else None
    if hi is not None and _vkey(hi) <= _vkey(lo):
        return None
    if hi is None:
        return (lo, None)
    below = [r for r in _RELEASES if _vkey(lo) <= _vkey(r) < _vkey(hi)]
    return (lo, below[-1] if below else lo)
