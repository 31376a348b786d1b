"""CUDA-graph memory (G): which graphs a version captures, when it budgets them before sizing the KV
cache, and the fitted memory per graph.
"""

from __future__ import annotations

from estimator.attention_backend import FLASHINFER, attention_backend, flashinfer_capture, full_graphs_kept
from estimator.kv_layout import drafter, speculative_tokens, stage_sizes
from estimator.spec import LayerKV, ModelSpec
from estimator.units import MiB
from estimator.vllm import (
    EngineSettings,
    Profile,
    cuda_graph_sizes,
    full_graph_sizes,
    graphs_budgeted,
    performance_mode,
)

# CUDA-graph memory when budgeted (V1 0.20+): vLLM captures PIECEWISE graphs for every size and
# FULL ones for uniform-decode sizes (vllm.full_graph_sizes); each graph keeps per-layer kernel
# state in the shared pool. Fitted per graph per decoder layer on logs that print "Estimated CUDA
# graph memory" with the graph counts (0.20–0.27, public logs): dense Qwen2.5-VL-7B 0.53 GiB /
# (86 graphs × 28 layers) = 0.23 MiB, Qwen2.5-Omni-7B 0.26, Gemma-4-31B 0.13 (102 × 60),
# Gemma-4-E4B 0.22, Qwen3.8-27B (hybrid) 0.28, vllm PR48601 Qwen3.6-27B 0.31 (102 × 64): median
# 0.24 MiB. MoE layers hold more (routing, expert kernels): spark-vllm-docker#396 MiniMax-M2.7
# 0.79 (util 0.80 "equivalent to 0.758" on a 119.7 GiB GB10, 102 × 62), vllm#54354 0.47,
# GLM-5.2 NVFP4 TP4 0.64 (4.99 GiB, 102 × 78), DeepSeek-V4-Flash TP2 0.54: about 0.6 MiB. With
# few graphs a first capture of a few hundred MiB dominates (Qwen3.6-35B-A3B NVFP4: 0.39 GiB for
# 4 graphs): FlashInfer's buffers where it is the backend (estimator/attention_backend.py).
GRAPH_BYTES_PER_LAYER_DENSE = int(0.24 * MiB)
GRAPH_BYTES_PER_LAYER_MOE = int(0.6 * MiB)


# max_num_seqs above a hybrid model's Mamba state blocks (config/compilation.py in the wheels): until 0.17
# nothing checks it; 0.18–0.19 cap the CUDA-graph capture sizes at the block count
# (adjust_cudagraph_sizes_for_mamba_cache); from 0.20 the engine raises "max_num_seqs (N) exceeds available
# Mamba cache blocks (M)" when it captures FULL graphs (not with --enforce-eager; vllm issue #34094).
MAMBA_GRAPHS_CAPPED_FROM = (0, 18, 0)
MAMBA_BLOCKS_CHECK_FROM = (0, 20, 0)


def graphs_after_kv(profile: Profile, s: EngineSettings) -> bool:
    """The V2 model runner before 0.29 (vllm/v1/worker/gpu/model_runner.py) answers
    `profile_cudagraph_memory()` with 0 ("It is TBD whether we keep this API"), so nothing is
    subtracted and the graphs are captured on top of the KV cache: vllm PR48601's log (main, 2026-07)
    prints 2.04 GiB of graphs yet "kv cache memory in use" = requested − W − P − N, and akiyax's
    0.26.0 run (Qwen2.5-7B-AWQ, V2 by default) 14.39 − 5.29 − 1.04 − 0.06 = 8.00 GiB of KV beside
    0.48 GiB of graphs. A log whose own figures show it (`graphs_after_kv` read from the paste)
    decides over the version's rule."""
    if s.graphs_after_kv is not None:
        return s.graphs_after_kv
    return s.model_runner_v2 and not profile.v2_runner_budgets_graphs


def graphs_outside_budget(profile: Profile, s: EngineSettings) -> bool:
    """Are the CUDA graphs (if any are captured) outside what vLLM subtracts before sizing the KV cache:
    a release that does not budget them (before 0.20, or with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0),
    or one that captures them after the KV cache (`graphs_after_kv`)."""
    return graphs_after_kv(profile, s) or not graphs_budgeted(profile, s)


def cuda_graph_memory(spec: ModelSpec, profile: Profile, s: EngineSettings,
                      draft_layers: list[LayerKV] | None = None, attention_groups: int = 1) -> int:
    """The CUDA-graph estimate vLLM subtracts before sizing the KV cache (docs §1.7); 0 where the
    graphs come after it (`graphs_after_kv`). `attention_groups`: the KV-cache groups of attention
    layers, each with its own attention metadata builder."""
    graphs, flashinfer, _note = cuda_graph_parts(spec, profile, s, draft_layers, attention_groups)
    return graphs + flashinfer


def cuda_graph_parts(spec: ModelSpec, profile: Profile, s: EngineSettings, draft_layers: list[LayerKV] | None = None,
                     attention_groups: int = 1) -> tuple[int, int, str]:
    """`cuda_graph_memory` in parts: the graphs themselves (per graph per layer, a fit), what the
    FlashInfer attention backend allocates inside the estimate and what that is in words
    (estimator.attention_backend; "" with another backend)."""
    if s.enforce_eager or graphs_outside_budget(profile, s):
        return 0, 0, ""
    seqs, k = s.max_num_seqs or 256, speculative_tokens(spec, s)
    sizes = cuda_graph_sizes(profile, seqs, s.max_num_batched_tokens or 2048, k,
                             interactivity=performance_mode(profile, s) == "interactivity")
    backend = attention_backend(spec, profile, s)
    full = full_graph_sizes(sizes, seqs, k) if full_graphs_kept(backend, s, k) else []
    graphs = len(sizes) + len(full)       # PIECEWISE + FULL captures
    pp = max(1, s.pipeline_parallel_size)
    if s.pp_stage is not None and pp > 1:
        stage_layers = stage_sizes(spec, profile, pp, s.pp_layer_partition)[s.pp_stage]
    else:
        stage_layers = spec.num_layers // pp
    draft = drafter(spec, s, profile, [])[0] if draft_layers is None else draft_layers
    layers = max(1, stage_layers) + len(draft)
    per_layer = GRAPH_BYTES_PER_LAYER_MOE if spec.moe else GRAPH_BYTES_PER_LAYER_DENSE
    workspace, note = flashinfer_capture(spec, profile, s, full, attention_groups, k) if backend == FLASHINFER \
        else (0, "")
    return graphs * layers * per_layer, workspace, note
