"""Every vLLM message template that carries a memory number, as regexes over the logical text.

Source: ../shared/docs/vllm-memory.md §4 (literal text of each message by version, read from the
released wheels) plus §1.3–§1.9 and §2.6 for the profiling / capacity log lines. Each template
names the fact keys its groups fill (`(?P<kv_cache_gib>…)`), extra values (`x_…`), the
`error_kind` it proves (design.md §4), the version range its wording fingerprints (§4.14;
half-open [lo, hi)), and a priority used when several lines state the same key (an error's
own number beats a log line, which beats a command-line flag, which beats prose).
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

INT = r"-?\d{1,3}(?:[,'_]\d{3})+(?!\d)|-?\d+"
NUM = r"(?:-?\d+(?:\.\d+)?|-?\.\d+)"
# where a paste cuts a line short: "[...]", "..." or "…"
CUT = r"(?:\[\.\.\.\]|\.\.\.|…)"
# a log line's " and …" tail, or the end of the line where a paste stops it before that tail
_AND_OR_END = r"(?:[ \n]+and|[ \t]*(?:\n|$))"
# whitespace incl. a wrapped line; allows "Gi B" typos not, but "GiB"/"GB"/"Gib"
_ = r"[ \n]+"
GI = r"\s*Gi?[Bb]"

# Priorities (higher wins when two sources state the same key).
P_ERROR = 100
P_PROFILE = 90
P_CAPACITY = 85
P_LOAD = 80
P_OOM = 70
P_CONFIG = 60
P_NONDEFAULT = 55
P_CMDLINE = 50
P_ENV = 45
P_FLAG = 40
P_KV = 40          # a key=value in prose is as good (or bad) as a loose flag: disagreements surface
P_SMI = 30
P_PROSE = 20
P_GUESS = 10


@dataclass(frozen=True)
class Template:
    name: str
    pattern: regex.Pattern
    priority: int
    kind: str | None = None              # error_kind this message proves
    hint: tuple[str, str | None] | None = None
    engine: str | None = None
    memory_log: bool = True              # counts as a vLLM memory log line (startup_log_ok)


def _t(name, pat, priority, kind=None, hint=None, engine=None, memory_log=True) -> Template:
    return Template(name, regex.compile(pat, regex.V0), priority, kind, hint, engine, memory_log)


# vLLM's start-up free-memory report, "Free memory on device cuda:0 (F/T GiB) on startup", which the
# start-up check (an error) and the profiling summary (INFO) both begin with
_FREE_ON_STARTUP = (r"Free[ \n]+memory[ \n]+on[ \n]+device[ \n]*(?:(?P<x_device>[\w:]+)[ \n]*)?\((?P<free_memory_gib>" + NUM
                    + r")[ \n]*/[ \n]*(?P<total_gpu_memory_gib>" + NUM + r")[ \n]*GiB\)[ \n]+on[ \n]+startup")

_INIT_ENGINE_TOOK = (r"init[ \n]+engine[ \n]+\(profile,[ \n]+create[ \n]+kv[ \n]+cache,[ \n]+warmup[ \n]+model\)"
                     r"[ \n]+took[ \n]+")

TEMPLATES: tuple[Template, ...] = (
    # 4.1 V0 length check (vllm/worker/worker.py raise_if_cache_size_invalid)
    _t("v0_capacity_error",
       r"(?:[Tt]he[ \n]+)?models?'?s?'?[ \n]+max[ \n]+seq[ \n]+len[ \n]+\((?P<max_model_len>" + INT + r")\)[ \n]+is[ \n]+larger"
       r"[ \n]+than[ \n]+the[ \n]+maximum[ \n]+number[ \n]+of[ \n]+tokens[ \n]+that[ \n]+can[ \n]+be[ \n]+stored"
       r"[ \n]+in[ \n]+KV[ \n]+cache[ \n]*\((?P<error_max_tokens_in_kv>" + INT + r")\)",
       P_ERROR, "kv_capacity_v0", ("0.4.0", "0.11.0"), "v0"),
    # 4.3 V1 "To serve at least one request" (vllm/v1/core/kv_cache_utils.py), all wordings
    _t("v1_capacity_error",
       r"To[ \n]+serve[ \n]+at[ \n]+least[ \n]+one[ \n]+request[ \n]+with[ \n]+the[ \n]+(?P<x_models>models?'?s?'?)[ \n]+max"
       r"[ \n]+seq[ \n]+len[ \n]*\((?P<max_model_len>" + INT + r")\),?[ \n]*\(?[ \n]*(?P<kv_needed_gib>" + NUM + r")"
       r"[ \n]*(?P<x_unit>Gi?B)[ \n]+KV[ \n]+cache[ \n]+is[ \n]+needed(?:,?[ \n]+which[ \n]+is[ \n]+larger[ \n]+than[ \n]+the"
       r"[ \n]+available[ \n]+KV[ \n]+cache[ \n]+memory[ \n]*\((?P<kv_available_gib>" + NUM + r")[ \n]*Gi?B\)\.?"
       r"(?:[ \n]*Based[ \n]+on[ \n]+the[ \n]+available[ \n]+memory,(?P<x_based>[ \n]*the[ \n]+estimated[ \n]+maximum"
       r"[ \n]+model[ \n]+length[ \n]+is[ \n]+(?P<estimated_max_model_len>" + INT + r"))?)?"
       # the message cut after its need ("… 23.32 GiB KV cache is needed, which is larger t[...]"): the
       # need and the length are vLLM's, the available memory is not in the paste
       r"|(?=[^\n()]{0,60}?" + CUT + r"))",
       P_ERROR, "kv_capacity_v1", ("0.7.0", None), "v1"),
    # 4.2 no blocks (V0 0.4–0.10, V1 0.7+; docs-link suffix 0.13+)
    _t("no_cache_blocks",
       r"No[ \n]+available[ \n]+memory[ \n]+for[ \n]+the[ \n]+cache[ \n]+blocks",
       P_ERROR, "no_cache_blocks"),
    _t("auto_fit_failed",
       r"Cannot[ \n]+auto-fit[ \n]+max_model_len:[ \n]+not[ \n]+enough[ \n]+GPU[ \n]+memory",
       P_ERROR, "no_cache_blocks", ("0.14.0", None), "v1"),
    # 4.4 start-up free-memory check (V1 0.9.1+; "device cuda:0" 0.14+)
    _t("free_memory_startup",
       _FREE_ON_STARTUP + r"[ \n]+is[ \n]+less[ \n]+than[ \n]+desired"
       r"[ \n]+GPU[ \n]+memory[ \n]+utilization[ \n]*\((?P<gpu_memory_utilization>" + NUM + r"),[ \n]*(?P<x_requested_gib>"
       + NUM + r")[ \n]*GiB\)",
       P_ERROR, "free_memory_startup", ("0.9.1", None), "v1"),
    # either line above cut after "on startup" (a paste that ends it with "…"): the card's free and total
    _t("free_memory_cut",
       _FREE_ON_STARTUP + r"(?![ \n]+is[ \n]+less|\.[ \n]+Desired)",
       P_PROFILE, None, ("0.9.1", None), "v1"),
    # 1.9 the "Actual usage" report (V1 0.10.2+; INFO in 0.10.2 and 0.26+, DEBUG between: paste._actual_usage_hint),
    # and vllm-ascend's NPU worker's (worker.py, 2026): "Actual usage: 1.14 GiB for weights, 0.22 GiB for peak
    # activation, 0.03 GiB for non-torch memory, 0.09 GiB for NPU graph memory. … Current KV cache memory: 54.98 GiB."
    _t("actual_usage",
       _FREE_ON_STARTUP + r"\.[ \n]+Desired[ \n]+GPU[ \n]+memory"
       r"[ \n]+utilization[ \n]+is[ \n]+\((?P<gpu_memory_utilization>" + NUM + r"),[ \n]*(?P<x_requested_gib>" + NUM
       + r")[ \n]*GiB\)\.(?:[ \n]+Actual[ \n]+usage(?:[ \n]+is|:)[ \n]+(?:(?P<weights_gib>" + NUM + r")[ \n]*GiB[ \n]+for[ \n]+"
       r"weights?,[ \n]+(?P<activation_peak_gib>" + NUM + r")[ \n]*GiB[ \n]+for[ \n]+peak[ \n]+activation,[ \n]+(?P<non_torch_gib>"
       + NUM + r")[ \n]*GiB[ \n]+for[ \n]+non-torch[ \n]+memory,|(?P<x_consumed_gib>" + NUM + r")[ \n]*GiB[ \n]+for[ \n]+consumed"
       r"[ \n]+memory[^,\n]{0,40},[ \n]+(?P<activation_peak_gib2>" + NUM + r")[ \n]*GiB[ \n]+for[ \n]+peak[ \n]+activation,)"
       # (a paste that cuts the line after its parts, "… for non-torch memory, and...", keeps them)
       # (vllm-ascend's graphs are captured after the KV cache is sized, as its "took" line says: not this figure's key)
       r"(?:[ \n]+and[ \n]+(?P<cuda_graph_gib>" + NUM + r")[ \n]*GiB[ \n]+for[ \n]+CUDAGraph[ \n]+memory\.|[ \n]+"
       r"(?P<x_npu_graph_gib>" + NUM + r")[ \n]*GiB[ \n]+for[ \n]+NPU[ \n]+graph[ \n]+memory\.)?)?"
       # the pool (self.available_kv_cache_memory_bytes), in GiB or, in 0.10.2–0.11, in bytes
       # (on the same line, or the next where a log prints the report's sentences one per line)
       r"(?:[^\n]{0,700}?(?:\n[ ]*)?Current[ \n]+(?:kv|KV)[ \n]+cache[ \n]+memory(?:[ \n]+in[ \n]+use[ \n]+is|:)[ \n]+"
       r"(?:(?P<kv_available_gib>" + NUM + r")[ \n]*GiB|(?P<x_kv_bytes>\d{4,15})[ \n]*bytes))?",
       P_PROFILE, None, ("0.10.2", None), "v1"),
    _t("kv_cache_memory_bytes",
       r"Initial[ \n]+free[ \n]+memory[ \n]+(?P<free_memory_gib>" + NUM + r")[ \n]*GiB,[ \n]+reserved[ \n]+(?P<kv_cache_gib>"
       + NUM + r")[ \n]*GiB[ \n]+memory[ \n]+for[ \n]+KV[ \n]+Cache[ \n]+as[ \n]+specified[ \n]+by[ \n]+kv_cache_memory_bytes",
       P_PROFILE, None, ("0.10.2", None)),
    _t("profiling_assert",
       r"Error[ \n]+in[ \n]+memory[ \n]+profiling\.(?:[ \n]+Initial[ \n]+free[ \n]+memory[ \n]+(?P<x_initial_free>" + NUM
       + r")(?:[ \n]*GiB)?,[ \n]+current[ \n]+free[ \n]+memory[ \n]+(?P<x_current_free>" + NUM + r"))?",
       P_ERROR, "other"),
    # 1.3 V0 0.6.4 one-line results (each pair read separately: pastes get cut mid-line)
    _t("v064_results_head", r"Memory[ \n]+profiling[ \n]+results:[ ]*total_gpu_memory=(?P<total_gpu_memory_gib>" + NUM + r")" + GI,
       P_PROFILE, None, ("0.6.4", "0.6.5"), "v0"),
    _t("v064_initial", r"\binitial_memory_usage=(?P<x_initial_memory_usage_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v064_peak_torch", r"\bpeak_torch_memory=(?P<x_peak_torch_memory_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v064_non_torch", r"\bnon_torch_memory=(?P<non_torch_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v064_kv", r"\bkv_cache_size=(?P<kv_cache_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v064_util", r"GiB[ \n]+gpu_memory_utilization=(?P<gpu_memory_utilization>" + NUM + r")", P_PROFILE),
    # 1.4 V0 memory_profiling 0.6.5–0.10.x (and the Dec-2024 tabular variant)
    _t("v0_profiling_takes", r"Memory[ \n]+profiling[ \n]+takes[ \n]+(?P<x_profiling_seconds>" + NUM + r")[ \n]+seconds(?!\.[ \n]+Total)",
       P_PROFILE, None, ("0.6.5", "0.11.0"), "v0"),
    _t("v0_budget",
       r"the[ \n]+current[ \n]+vLLM[ \n]+instance[ \n]+can[ \n]+use[ \n]+total_gpu_memory[ \n]*\((?P<total_gpu_memory_gib>" + NUM
       + r")" + GI + r"\)[ \n]*x[ \n]*gpu_memory_utilization[ \n]*\((?P<gpu_memory_utilization>" + NUM + r")\)"
       r"(?:[ \n]*=[ \n]*(?P<x_budget_gib>" + NUM + r")" + GI + r")?",
       P_PROFILE, None, ("0.6.5", "0.11.0"), "v0"),
    _t("v0_weights", r"model[ \n]+weights[ \n]+take[ \n]+(?P<weights_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v0_non_torch", r"non_torch_memory(?:[ \n]+takes)?[ \n]+(?P<non_torch_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v0_activation", r"PyTorch[ \n]+activation[ \n]+peak[ \n]+memory(?:[ \n]+takes)?[ \n]+(?P<activation_peak_gib>" + NUM + r")" + GI,
       P_PROFILE),
    _t("v0_kv_rest",
       r"the[ \n]+rest[ \n]+of[ \n]+the[ \n]+memory[ \n]+reserved[ \n]+for[ \n]+KV[ \n]+Cache[ \n]+is(?:[ \n]+[a-z]+){0,2}[ \n]+"
       r"(?P<kv_cache_gib>" + NUM + r")" + GI, P_PROFILE),
    _t("v065_tab_total", r"(?m)^[ ]*total_gpu_memory[ ]+(?P<total_gpu_memory_gib>" + NUM + r")" + GI, P_PROFILE, None, None, "v0"),
    _t("v065_tab_util", r"(?m)^[ ]*gpu_memory_utilization[ ]+(?P<gpu_memory_utilization>" + NUM + r")[ ]*$", P_PROFILE),
    _t("v065_tab_kv", r"(?m)^[ ]*available_kv_cache_memory[ ]+(?P<kv_cache_gib>" + NUM + r")" + GI, P_PROFILE),
    # 1.6 V1 DEBUG repr of MemoryProfilingResult
    _t("v1_profiling_debug",
       r"Memory[ \n]+profiling[ \n]+takes[ \n]+(?P<x_profiling_seconds>" + NUM + r")[ \n]+seconds\.[ \n]+Total[ \n]+non[ \n]+KV"
       r"[ \n]+cache[ \n]+memory:[ \n]*(?P<x_non_kv_gib>" + NUM + r")" + GI + r";[ \n]*torch[ \n]+peak[ \n]+memory[ \n]+increase:"
       r"[ \n]*(?P<activation_peak_gib>" + NUM + r")" + GI + r";[ \n]*non-torch[ \n]+forward[ \n]+increase[ \n]+memory:[ \n]*"
       r"(?P<non_torch_gib>" + NUM + r")" + GI + r";[ \n]*weights[ \n]+memory:[ \n]*(?P<weights_gib>" + NUM + r")" + GI,
       P_PROFILE, None, ("0.9.1", None), "v1"),
    # its DEBUG companion (v1/worker/gpu_worker.py determine_available_memory, 0.9.1+): the free memory at
    # start-up, after the profile run (not used: the KV pool is read from its own lines), and utilization × total
    _t("v1_free_debug",
       r"Initial[ \n]+free[ \n]+memory:[ \n]*(?P<free_memory_gib>" + NUM + r")[ \n]*GiB,[ \n]+free[ \n]+memory:[ \n]*"
       + NUM + r"[ \n]*GiB,[ \n]+requested[ \n]+GPU[ \n]+memory:[ \n]*(?P<x_requested_gib>" + NUM
       + r")[ \n]*GiB", P_PROFILE, None, ("0.9.1", None), "v1"),
    # 4.5 Available KV cache memory (V1 0.9.1+)
    _t("v1_available_kv", r"Available[ \n]+KV[ \n]+cache[ \n]+memory:[ \n]*(?P<kv_available_gib>" + NUM + r")[ \n]*Gi?B",
       P_CAPACITY, None, ("0.9.1", None), "v1"),
    # 2.6 blocks / capacity / concurrency
    # (a line cut off after "# GPU blocks: 260, #" still has V0's comma: triton-inference-server#7562)
    _t("blocks_gpu_cpu", r"\#[ ]*GPU[ ]+blocks:[ ]*(?P<gpu_blocks>" + INT + r"),[ ]*\#(?:[ ]*CPU[ ]+blocks:[ ]*(?P<x_cpu_blocks>"
       + INT + r"))?",
       P_CAPACITY, None, ("0.1.0", "0.7.0"), "v0"),
    _t("blocks_gpu_only", r"\#[ ]*GPU[ ]+blocks:[ ]*(?P<gpu_blocks>" + INT + r")(?![,\d])", P_CAPACITY, None, ("0.7.0", "0.7.4"), "v1"),
    _t("blocks_CUDA", r"\#[ ]*CUDA[ ]+blocks:[ ]*(?P<gpu_blocks>" + INT + r")(?:,[ ]*\#[ ]*CPU[ ]+blocks:[ ]*(?P<x_cpu_blocks>" + INT + r"))?",
       P_CAPACITY, None, ("0.7.0", "0.7.3"), "v0"),
    _t("blocks_cuda", r"\#[ ]*cuda[ ]+blocks:[ ]*(?P<gpu_blocks>" + INT + r")(?:,[ ]*\#[ ]*CPU[ ]+blocks:[ ]*(?P<x_cpu_blocks>" + INT + r"))?",
       P_CAPACITY, None, ("0.7.3", "0.11.0"), "v0"),
    _t("blocks_other", r"\#[ ]*(?:npu|xpu|hpu|tpu|neuron|cpu)[ ]+blocks:[ ]*(?P<gpu_blocks>" + INT + r"),[ ]*\#[ ]*CPU", P_CAPACITY),
    # a report retelling the capacity lines may drop their "per request" ("Maximum concurrency for 32,768
    # tokens: 12.57x", spark-vllm-docker#388): the figures are vLLM's all the same
    _t("kv_cache_size_merged",
       r"\b[A-Z]{2,5}[ \n]+KV[ \n]+cache[ \n]+size:[ \n]*(?P<kv_tokens_capacity>" + INT + r")[ \n]+tokens,[ \n]*Maximum[ \n]+concurrency"
       r"[ \n]+for[ \n]+(?P<max_model_len>" + INT + r")[ \n]+tokens(?:[ \n]+per[ \n]+request)?:[ \n]*(?P<max_concurrency>" + NUM + r")[ \n]*x",
       P_CAPACITY, None, ("0.28.0", None), "v1"),
    _t("kv_cache_size", r"\b(?:[A-Z]{2,5})[ \n]+KV[ \n]+cache[ \n]+size:[ \n]*(?P<kv_tokens_capacity>" + INT + r")[ \n]+tokens(?!,[ \n]*Maximum)",
       P_CAPACITY, None, ("0.8.0", "0.28.0"), "v1"),
    # V1's stat logger once the engine is up (v1/metrics/loggers.py log_engine_initialized, 0.10–0.11 wheels):
    # cache_config.num_gpu_blocks, the blocks every worker allocated
    _t("v1_num_gpu_blocks",
       r"vllm[ \n]+cache_config_info[ \n]+with[ \n]+initialization[ \n]+after[ \n]+num_gpu_blocks[ \n]+is:[ \n]*"
       r"(?P<gpu_blocks>" + INT + r")", P_CAPACITY, None, None, "v1"),
    _t("max_concurrency",
       r"(?<!tokens,[ \n]*)Maximum[ \n]+concurrency[ \n]+for[ \n]+(?P<max_model_len>" + INT + r")[ \n]+tokens(?:(?:[ \n]+per[ \n]+"
       r"request)?:[ \n]*(?P<max_concurrency>" + NUM + r")[ \n]*x"
       # a line the paste cuts after its length ("… for 65,536 tokens [...]") still says max_model_len
       r"|(?=[ ]*" + CUT + r"))", P_CAPACITY),
    # Aphrodite (vLLM fork) worker.raise_if_cache_size_invalid logs block_size * num_gpu_blocks,
    # the same capacity V0's length check compares against max_model_len
    _t("aphrodite_max_seq_len",
       r"Maximum[ \n]+sequence[ \n]+length[ \n]+allowed[ \n]+in[ \n]+the[ \n]+cache:[ \n]*(?P<kv_tokens_capacity>" + INT + r")",
       P_CAPACITY, None, None, None),
    _t("num_gpu_blocks_override",
       r"Overriding[ \n]+num_gpu_blocks=(?P<x_computed_blocks>" + INT + r")[ \n]+with[ \n]+num_gpu_blocks_override=(?P<gpu_blocks>" + INT + r")",
       P_ERROR),
    _t("using_max_model_len", r"Using[ \n]+max[ \n]+model[ \n]+len[ \n]+(?P<max_model_len>" + INT + r")", P_CAPACITY, None, ("0.9.2", None)),
    _t("auto_fit",
       r"Auto-fit[ \n]+max_model_len:[ \n]+reduced[ \n]+from[ \n]+(?P<x_auto_fit_from>" + INT + r")[ \n]+to[ \n]+(?P<max_model_len>" + INT
       + r")[ \n]+to[ \n]+fit[^(\n]{0,60}\((?P<kv_available_gib>" + NUM + r")[ \n]*GiB",
       P_CAPACITY, None, ("0.14.0", None), "v1"),
    # 4.6 weights
    _t("weights_v0", r"Loading[ \n]+model[ \n]+weights[ \n]+took[ \n]+(?P<weights_gib>" + NUM + r")[ \n]*GB", P_LOAD, None,
       ("0.4.0", "0.8.0")),
    # (a line quoted without its tail — "Model loading took 7.1217 GiB", "… 50.22 GiB memory" — still says it:
    # _AND_OR_END, its " and N seconds" or the end of the line)
    _t("weights_080", r"Model[ \n]+loading[ \n]+took[ \n]+(?P<weights_gib>" + NUM + r")[ \n]*GB" + _AND_OR_END,
       P_LOAD, None, ("0.8.0", "0.8.3")),
    _t("weights_083", r"Model[ \n]+loading[ \n]+took[ \n]+(?P<weights_gib>" + NUM + r")[ \n]*GiB" + _AND_OR_END,
       P_LOAD, None, ("0.8.3", None)),
    # "GiB memory and" from 0.11.1 (v1/worker/gpu_model_runner.py in the 0.11.0 and 0.11.1 wheels; the
    # template keeps the name it was given when 0.11.2 was the first release read with it)
    _t("weights_0112", r"Model[ \n]+loading[ \n]+took[ \n]+(?P<weights_gib>" + NUM + r")[ \n]*GiB[ \n]+memory" + _AND_OR_END, P_LOAD, None,
       ("0.11.1", None), "v1"),
    # the engine's start-up time, "init engine (profile, create kv cache, warmup model) took 11.33 seconds" (V0's
    # llm_engine.py; V1's engine/core.py to 0.19.1), "took 212.68 s (compilation: 13.01 s)" or "took 9.80 s" from
    # 0.20.0 (the 0.14.0–0.27.0 wheels): a dating hint only, nothing about memory
    _t("init_engine_seconds", _INIT_ENGINE_TOOK + NUM + r"[ \n]+seconds\b", P_LOAD, None, ("0.1.0", "0.20.0"),
       memory_log=False),
    _t("init_engine_s", _INIT_ENGINE_TOOK + NUM + r"[ \n]*s(?![A-Za-z])", P_LOAD, None, ("0.20.0", None), "v1",
       memory_log=False),
    # 1.7 CUDA graphs
    _t("graph_took", r"Graph[ \n]+capturing[ \n]+finished[ \n]+in[ \n]+(?P<x_graph_seconds>" + NUM + r")[ \n]+secs?,[ \n]+took[ \n]+"
       r"(?P<cuda_graph_gib>" + NUM + r")[ \n]*GiB", P_LOAD, None, ("0.6.4", None)),
    # the estimate vLLM subtracts (MRV2: "... GiB total", older builds "... GiB additional"); it outranks
    # the actual capture printed later ("CUDA graph pool memory: 0.94 GiB (actual), 1.94 GiB
    # (estimated)", "Actual usage is … 0.94 GiB for CUDAGraph memory"): the KV cache was sized with it
    _t("graph_estimated", r"Estimated[ \n]+(?:MRV2[ \n]+)?CUDA[ \n]+graph[ \n]+memory:[ \n]*(?P<cuda_graph_gib>" + NUM
       + r")[ \n]*GiB", P_PROFILE + 2, None, ("0.18.0", None), "v1"),
    _t("graph_pool", r"CUDA[ \n]+graph[ \n]+pool[ \n]+memory:[ \n]*(?P<cuda_graph_gib>" + NUM + r")[ \n]*GiB[ \n]+\(actual\)",
       P_LOAD + 1, None, ("0.18.0", None), "v1"),      # printed by 0.18–0.19 builds too (graphs not set aside)
    # "CUDA graph memory profiling is enabled (…). The current --gpu-memory-utilization=U is equivalent to …": 0.18–0.19
    # with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 ("This will become the default in v0.19."), 0.20+ by default
    # ("(default since v0.21.0)"): v1/worker/gpu_worker.py in the 0.18.0–0.20.1 wheels
    _t("graph_profiling_enabled",
       r"The[ \n]+current[ \n]+--gpu-memory-utilization=(?P<gpu_memory_utilization>" + NUM + r")[ \n]+is[ \n]+equivalent[ \n]+to[ \n]+"
       r"--gpu-memory-utilization=(?P<x_equivalent_utilization>" + NUM + r")", P_PROFILE, None, ("0.18.0", None), "v1"),
    _t("graph_profiling", r"Profiling[ \n]+CUDA[ \n]+graph[ \n]+memory:", P_LOAD, None, ("0.18.0", None), "v1"),
    # decode context parallelism's factor in "GPU KV cache size" (v1/core/kv_cache_utils.py): "by the
    # dcp_world_size 8." (0.10.2+), later "by the cp_world_size 4 (pcp_world_size 1 * dcp_world_size 4)."
    _t("dcp_multiply", r"Multiplying[ \n]+the[ \n]+GPU[ \n]+KV[ \n]+cache[ \n]+size[ \n]+by[ \n]+the[ \n]+(?:dcp_world_size[ \n]+"
       r"(?P<x_decode_context_parallel_size>" + INT + r")|cp_world_size[ \n]+\d+[ \n]*\(pcp_world_size[ \n]+\d+"
       r"[ \n]*\*[ \n]*dcp_world_size[ \n]+(?P<x_decode_context_parallel_size>" + INT + r")\))",
       P_PROFILE, None, ("0.10.2", None), "v1"),
    # 0.18–0.19.x, before graph profiling became the default (0.20.0): "In v0.19, CUDA graph memory
    # profiling will be enabled by default … increase --gpu-memory-utilization from 0.9000 to 0.9616
    # to maintain the same effective KV cache size" — the utilization in use, graphs not set aside
    # (v1/worker/gpu_worker.py in the 0.18.0, 0.19.0 and 0.19.1 wheels; 0.20.0 prints "Consider re-enabling")
    _t("graph_profiling_optin",
       r"increase[ \n]+--gpu-memory-utilization[ \n]+from[ \n]+(?P<gpu_memory_utilization>" + NUM + r")[ \n]+to[ \n]+"
       r"(?P<x_optin_utilization>" + NUM + r")[ \n]+to[ \n]+maintain[ \n]+the[ \n]+same[ \n]+effective[ \n]+KV[ \n]+cache",
       P_PROFILE, None, ("0.18.0", "0.20.0"), "v1"),
    # 0.20+ (and the 0.19.2 builds before it) run with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: "CUDA graph
    # memory profiling is disabled (…). … Consider re-enabling it (the default as of v0.21.0) and increasing
    # --gpu-memory-utilization from 0.9200 to 0.9285." (v1/worker/gpu_worker.py) — the utilization in use,
    # the graphs not set aside
    _t("graph_profiling_disabled",
       r"Consider[ \n]+re-enabling[ \n]+it[^\n]{0,60}?[ \n]+and[ \n]+increasing[ \n]+--gpu-memory-utilization[ \n]+from[ \n]+"
       r"(?P<gpu_memory_utilization>" + NUM + r")[ \n]+to[ \n]+(?P<x_unprofiled_utilization>" + NUM + r")",
       P_PROFILE, None, ("0.20.0", None), "v1"),
    # the defaults vLLM fills in (engine/arg_utils.py): "Setting max_num_batched_tokens to 2048 for
    # OPENAI_API_SERVER usage context." (a WARNING in 0.7, DEBUG later), "Defaulting max_num_seqs to 256 for
    # openai-api-server usage context." (the later wording)
    _t("default_batch", r"(?:Setting|Defaulting)[ \n]+(?:max_num_batched_tokens[ \n]+to[ \n]+(?P<max_num_batched_tokens>" + INT
       + r")|max_num_seqs[ \n]+to[ \n]+(?P<max_num_seqs>" + INT + r"))[ \n]+for[ \n]+[\w-]+[ \n]+usage[ \n]+context", P_CAPACITY),
    # 4.11 chunked prefill
    _t("chunked_prefill_tb", r"Chunked[ \n]+prefill[ \n]+is[ \n]+enabled[ \n]+with[ \n]+max_num_batched_tokens=(?P<max_num_batched_tokens>" + INT + r")",
       P_CAPACITY),
    # Unsloth's load_vllm (unsloth_zoo/vllm_utils.py) prints the batch it then hands vLLM's engine args:
    # max_num_batched_tokens = chunked_prefill_tokens, max_num_seqs = approx_max_num_seqs
    _t("unsloth_batch",
       r"Unsloth:[ \n]+Using[ \n]+conservativeness[ \n]+=[ \n]+" + NUM + r"\.?[ \n]+Chunked[ \n]+prefill[ \n]+tokens[ \n]+=[ \n]+"
       r"(?P<max_num_batched_tokens>" + INT + r")\.[ \n]+Num[ \n]+Sequences[ \n]+=[ \n]+(?P<max_num_seqs>" + INT + r")",
       P_CONFIG, None, None, None, False),
    # Unsloth's banner: "NVIDIA GeForce RTX 3090. Num GPUs = 1. Max memory: 23.684 GB. Platform: Linux." — the GPUs
    # torch sees (torch.cuda.device_count()) and torch's total_memory in GiB, rounded to 3 places (vLLM's own
    # line beside it prints 23.68 GiB)
    _t("unsloth_max_memory", r"(?:Num[ \n]+GPUs[ \n]+=[ \n]+(?P<gpu_count>\d{1,2})\.[ \n]+)?Max[ \n]+memory:[ \n]*"
       r"(?P<total_gpu_memory_gib>" + NUM + r")[ \n]*GB\.[ \n]+Platform",
       P_CONFIG, None, None, None, False),
    _t("long_context_warning", r"The[ \n]+model[ \n]+has[ \n]+a[ \n]+long[ \n]+context[ \n]+length[ \n]+\((?P<max_model_len>" + INT + r")\)",
       P_CAPACITY, None, None, None, False),
    # 4.8 TP divisibility and quantized-shape errors
    _t("tp_heads",
       r"Total[ \n]+number[ \n]+of[ \n]+attention[ \n]+heads[ \n]+\((?P<x_num_heads>" + INT + r")\)[ \n]+must[ \n]+be[ \n]+divisible[ \n]+by"
       r"[ \n]+tensor[ \n]+parallel[ \n]+size[ \n]+\((?P<tensor_parallel_size>" + INT + r")\)", P_ERROR, "tp_divisibility"),
    _t("pp_layers",
       r"Total[ \n]+number[ \n]+of[ \n]+hidden[ \n]+layers[ \n]+\((?P<x_num_layers>" + INT + r")\)[ \n]+must[ \n]+be[ \n]+divisible[ \n]+by"
       r"[ \n]+pipeline[ \n]+parallel[ \n]+size[ \n]+\((?P<pipeline_parallel_size>" + INT + r")\)", P_ERROR, "tp_divisibility"),
    _t("quant_shape",
       r"The[ \n]+input[ \n]+size[ \n]+is[ \n]+not[ \n]+aligned[ \n]+with[ \n]+the[ \n]+quantized[ \n]+weight[ \n]+shape"
       r"|is[ \n]+not[ \n]+divisible[ \n]+by[ \n]+(?:min_thread_[nk][ \n]+=[ \n]+\d+|weight[ \n]+quantization[ \n]+block_[nk])",
       P_ERROR, "tp_divisibility"),
    # 4.9 bf16 on pre-Ampere
    _t("bf16_cc",
       r"Bfloat16[ \n]+is[ \n]+only[ \n]+supported[ \n]+on[ \n]+GPUs[ \n]+with[ \n]+compute[ \n]+capability[ \n]+of[ \n]+at[ \n]+least"
       r"[ \n]+8\.0\.?(?:[ \n]+Your[ \n]+(?P<gpu>[^\n]{2,80}?)[ \n]+GPU[ \n]+(?:has[ \n]+compute[ \n]+capability[ \n]+(?P<x_compute_capability>"
       r"\d+\.\d+)|does[ \n]+not[ \n]+have))?", P_ERROR, "bf16_compute_capability"),
    _t("bf16_fallback",
       r"Your[ \n]+device[ \n]+'(?P<gpu>[^'\n]{2,80})'[ \n]+\(with[ \n]+compute[ \n]+capability[ \n]+(?P<x_compute_capability>\d+\.\d+)\)"
       r"[ \n]+doesn't[ \n]+support[ \n]+torch\.bfloat16", P_ERROR, None, ("0.9.1", None), None, False),
    # 4.10 user max_model_len above the derived one
    _t("max_model_len_derived",
       r"User-specified[ \n]+max_model_len[ \n]+\((?P<max_model_len>" + INT + r")\)[ \n]+is[ \n]+greater[ \n]+than[ \n]+the[ \n]+derived"
       r"[ \n]+max_model_len[ \n]+\((?P<x_derived_key>\w+)=(?P<x_derived_max_model_len>[\d.]+)",
       P_ERROR, "max_model_len_derived"),
    # vLLM 0.2.0–0.2.1: PagedAttention V1 keeps a context's attention logits in shared memory
    # (worker.py _check_if_can_support_max_seq_len, vllm PR #1154; removed by PR #1510 in 0.2.2)
    _t("shared_mem_max_len",
       r"vLLM[ \n]+cannot[ \n]+currently[ \n]+support[ \n]+max_model_len=(?P<max_model_len>" + INT + r")[ \n]+with[ \n]+"
       r"block_size=(?P<block_size>\d+)[ \n]+on[ \n]+GPU[ \n]+with[ \n]+compute[ \n]+capability[ \n]+\([ \n]*\d+,[ \n]*\d+\)"
       r"[ \n]+\(required[ \n]+shared[ \n]+memory[ \n]+(?P<x_shared_mem_required>[\d.]+)[ \n]+>[ \n]+available[ \n]+shared"
       r"[ \n]+memory[ \n]+(?P<x_shared_mem_available>\d+)\)", P_ERROR, "other", ("0.2.0", "0.2.2"), "v0"),
    # Mamba / hybrid block shortage (V1 hybrid models)
    _t("mamba_blocks",
       r"max_num_seqs[ \n]+\((?P<max_num_seqs>" + INT + r")\)[ \n]+exceeds[ \n]+available[ \n]+Mamba[ \n]+cache[ \n]+blocks[ \n]+"
       r"\((?P<gpu_blocks>" + INT + r")\)", P_ERROR, "mamba_blocks", ("0.20.0", None), "v1"),
    # 3. scheduler checks (no dedicated error_kind in design.md §4 → "other")
    _t("tb_lt_len",
       r"max_num_batched_tokens[ \n]+\((?P<max_num_batched_tokens>" + INT + r")\)[ \n]+is[ \n]+smaller[ \n]+than[ \n]+max_model_len[ \n]+"
       r"\((?P<max_model_len>" + INT + r")\)", P_ERROR, "other"),
    _t("tb_lt_seqs",
       r"max_num_batched_tokens[ \n]+\((?P<max_num_batched_tokens>" + INT + r")\)[ \n]+must[ \n]+be[ \n]+greater[ \n]+than[ \n]+or[ \n]+equal"
       r"[ \n]+to[ \n]+max_num_seqs[ \n]+\((?P<max_num_seqs>" + INT + r")\)", P_ERROR, "other"),
    # the attention block size a hybrid (Mamba / linear-attention) model gets so that one attention page
    # holds one Mamba state (model_executor/models/config.py HybridAttentionMambaModelConfig to 0.19,
    # platforms/interface.py from 0.20): "Setting attention block size to 1056 tokens to ensure that
    # attention page size is >= mamba page size." A check on the model's Mamba and attention pages.
    _t("hybrid_block_size",
       r"Setting[ \n]+attention[ \n]+block[ \n]+size[ \n]+to[ \n]+(?P<x_attention_block_size>" + INT + r")[ \n]+tokens"
       r"[ \n]+to[ \n]+ensure[ \n]+that[ \n]+attention[ \n]+page[ \n]+size", P_CONFIG, None, None, "v1", False),
    # Mamba cache align mode (prefix caching on a hybrid model): the attention block size vLLM aligned to the
    # Mamba page must fit in one batch (config/vllm.py validate_block_size, the 0.20.0 wheel)
    _t("mamba_align",
       r"In[ \n]+Mamba[ \n]+cache[ \n]+align[ \n]+mode,[ \n]+block_size[ \n]+\((?P<x_align_block_size>" + INT + r")\)[ \n]+must"
       r"[ \n]+be[ \n]+<=[ \n]+max_num_batched_tokens[ \n]+\((?P<max_num_batched_tokens>" + INT + r")\)", P_ERROR, "other"),
    # an adapter of a higher rank than --max-lora-rank (vllm/lora/models.py, when the adapter loads): "LoRA
    # rank 64 is greater than max_lora_rank 16."
    _t("lora_rank",
       r"LoRA[ \n]+rank[ \n]+(?P<x_lora_rank>" + INT + r")[ \n]+is[ \n]+greater[ \n]+than[ \n]+max_lora_rank[ \n]+"
       r"(?P<x_max_lora_rank>" + INT + r")", P_ERROR, "other"),
    # version lines
    # "vLLM API server version X" (up to 0.10); from 0.11 vllm/entrypoints/utils.py log_version_and_model
    # prints its logo with "█ ▀▄▀ █  version X" beside it, or "vLLM server version X, serving model Y"
    # with VLLM_DISABLE_LOG_LOGO
    _t("api_server_version", r"(?:vLLM[ \n]+(?:API[ \n]+)?server|▀▄▀[ ]█)[ \n]+version[ \n]+"
       r"v?(?P<vllm_version>\d+\.\d+(?:\.\d+)?[\w.+-]*)", P_CONFIG, None, None, None, False),
)

# 4.12 PyTorch OOM — parsed by its own function (sizes carry units, several processes).
SIZE = r"(?P<n>" + NUM + r")[ ]?(?P<u>GiB|MiB|KiB|GB|MB|KB|bytes|B)\b"
# (ROCm builds of PyTorch print the same message with "HIP" for "CUDA": c10's caching allocator, hipified)
TORCH_OOM = regex.compile(
    r"(?:(?:torch\.)?(?:cuda\.)?OutOfMemoryError:[ \n]*)?(?:CUDA|HIP)[ \n]+out[ \n]+of[ \n]+memory\.[ \n]+Tried[ \n]+to[ \n]+allocate[ \n]+"
    r"(?P<tried>" + NUM + r"[ ]?(?:GiB|MiB|KiB|GB|MB|bytes))[ \n]*"
    r"(?:\.[ \n]+GPU[ \n]+(?P<gpu_index>\d+)[ \n]+has[ \n]+a[ \n]+total[ \n]+capac(?:i)?ty[ \n]+of[ \n]+(?P<total>" + NUM
    + r"[ ]?(?:GiB|MiB|GB))[ \n]+of[ \n]+which[ \n]+(?P<free>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes|GB|MB))[ \n]+is[ \n]+free\."
    r"|\([ \n]*GPU[ \n]+(?P<gpu_index_old>\d+);[ \n]*(?P<total_old>" + NUM + r"[ ]?(?:GiB|MiB))[ \n]+total[ \n]+capacity;[ \n]*"
    r"(?P<allocated_old>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+already[ \n]+allocated;[ \n]*(?P<free_old>" + NUM
    + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+free;)?")
TORCH_OOM_PROC = regex.compile(
    r"(?:Process[ \n]+(?P<pid>\d+)[ \n]+has[ \n]+(?P<used>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+memory[ \n]+in[ \n]+use"
    r"|this[ \n]+process[ \n]+has[ \n]+(?P<self>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+memory[ \n]+in[ \n]+use)")
TORCH_OOM_ALLOC = regex.compile(
    r"Of[ \n]+the[ \n]+allocated[ \n]+memory[ \n]+(?P<by_torch>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+is[ \n]+allocated[ \n]+by"
    r"[ \n]+PyTorch,[ \n]+(?:with[ \n]+(?P<private>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+allocated[ \n]+in[ \n]+private[ \n]+pools"
    r"(?:[ \n]*\(e\.g\.,[ \n]*CUDA[ \n]+Graphs\))?,[ \n]+)?and[ \n]+(?P<reserved>" + NUM + r"[ ]?(?:GiB|MiB|KiB|bytes))[ \n]+is[ \n]+reserved")
SAMPLER_OOM = regex.compile(r"CUDA[ \n]+out[ \n]+of[ \n]+memory[ \n]+occurred[ \n]+when[ \n]+warming[ \n]+up[ \n]+sampler"
                            r"(?:[ \n]+with[ \n]+(?P<n>\d+)[ \n]+dummy[ \n]+requests)?")
# CUDA OOM said some other way (driver error, a user's words).
OTHER_CUDA_OOM = regex.compile(
    r"CUDA[ \n]+error:[ \n]+out[ \n]+of[ \n]+memory|\bOutOfMemoryError\b|CUDA[ \n]+OOM\b|(?:CUDA|HIP)[ \n]+out[ \n]+of[ \n]+memory"
    r"|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|hipErrorOutOfMemory", regex.I)


def size_gib(text: str) -> float | None:
    """'524.00 MiB' → GiB (2^30)."""
    m = regex.match(r"\s*(" + NUM + r")\s*(GiB|MiB|KiB|GB|MB|KB|bytes|B)", text)
    if not m:
        return None
    n = float(m.group(1))
    mult = {"GiB": 1.0, "GB": 1.0, "MiB": 1 / 1024, "MB": 1 / 1024, "KiB": 1 / 1024**2, "KB": 1 / 1024**2,
            "bytes": 1 / 1024**3, "B": 1 / 1024**3}[m.group(2)]
    return n * mult


# A lower-case word each template cannot match without: a substring test (fast, in C) lets a
# long paste skip every template whose word it lacks. Words chosen to survive line wrapping.
ANCHORS: dict[str, str] = {
    "v0_capacity_error": "stored", "v1_capacity_error": "serve", "no_cache_blocks": "cache",
    "auto_fit_failed": "auto-fit", "free_memory_startup": "startup", "actual_usage": "startup",
    "kv_cache_memory_bytes": "kv_cache_memory_bytes", "profiling_assert": "profiling", "v064_results_head": "results",
    "v064_initial": "initial_memory_usage", "v064_peak_torch": "peak_torch_memory", "v064_non_torch": "non_torch_memory",
    "v064_kv": "kv_cache_size", "v064_util": "gpu_memory_utilization", "v0_profiling_takes": "profiling",
    "v0_budget": "total_gpu_memory", "v0_weights": "weights", "v0_non_torch": "non_torch_memory",
    "v0_activation": "activation", "v0_kv_rest": "reserved", "v065_tab_total": "total_gpu_memory",
    "v065_tab_util": "gpu_memory_utilization", "v065_tab_kv": "available_kv_cache_memory", "v1_profiling_debug": "profiling",
    "v1_available_kv": "available", "v1_free_debug": "requested gpu memory", "blocks_gpu_cpu": "blocks", "blocks_gpu_only": "blocks", "blocks_CUDA": "blocks",
    "blocks_cuda": "blocks", "blocks_other": "blocks", "kv_cache_size_merged": "concurrency", "kv_cache_size": "size",
    "max_concurrency": "concurrency", "num_gpu_blocks_override": "overriding", "aphrodite_max_seq_len": "allowed", "using_max_model_len": "using",
    "auto_fit": "auto-fit", "weights_v0": "weights", "weights_080": "loading", "weights_083": "loading",
    "weights_0112": "loading", "graph_took": "capturing", "graph_estimated": "estimated", "graph_pool": "pool",
    "graph_profiling_enabled": "equivalent", "graph_profiling_optin": "maintain", "graph_profiling_disabled": "re-enabling", "graph_profiling": "profiling", "dcp_multiply": "multiplying", "chunked_prefill_tb": "chunked", "default_batch": "usage context",
    "long_context_warning": "context", "tp_heads": "divisible", "pp_layers": "divisible", "quant_shape": "quantiz",
    "bf16_cc": "bfloat16", "bf16_fallback": "bfloat16", "max_model_len_derived": "user-specified", "mamba_blocks": "mamba",
    "shared_mem_max_len": "shared memory", "unsloth_max_memory": "max memory", "v1_num_gpu_blocks": "cache_config_info",
    "tb_lt_len": "max_num_batched_tokens", "tb_lt_seqs": "max_num_batched_tokens", "api_server_version": "version",
    "lora_rank": "max_lora_rank",
    "init_engine_seconds": "warmup model", "init_engine_s": "warmup model",
}
