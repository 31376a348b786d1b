"""The forward memory model: what vLLM of a given version does with one GPU rank's memory.

Steps mirror vLLM's start-up (docs/vllm-memory.md §1.1): load weights (W), profile run
(activation peak P, non-torch N), optional CUDA-graph estimate (G), KV bytes = budget − rest,
blocks from the KV layout (per-layer specs, V1 grouping), reported capacity, concurrency,
the admission check and the largest max_model_len that fits.

Exact parts (vLLM's code): budget formulas, KV page sizes, grouping, blocks, capacity,
max-length search. Estimated parts (no closed form in vLLM; measured at run time): P, N, G —
each constant below names the evidence it was fitted on.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from estimator import kv_deepseek_v4, params
from estimator.attention_backend import FLASHINFER, attention_backend, flashinfer_capture, full_graphs_kept
from estimator.drafters import gemma4_assistant
from estimator.gpus import on_nvswitch_board
from estimator.params import Mxfp4Layout, gated_mlp, pp_partition, vision_mlp_gated, vision_width
from estimator.spec import (
    MLA,
    ChunkedLocal,
    CrossAttention,
    DeepseekV4Layer,
    FullAttention,
    LayerKV,
    MambaState,
    ModelSpec,
    SlidingWindow,
    dtype_bytes,
)
from estimator.vllm import (
    BNB_MOE_FROM,
    DCP_FROM,
    FLASHINFER_SAMPLER_ANY_FROM,
    FLASHINFER_SAMPLER_OPT_IN_FROM,
    KV_CACHE_DTYPE_FROM,
    MM_PREFIX_FLOOR_FROM,
    NEWEST,
    NEWEST_WORDS,
    QUANT_METHOD_REMOVED,
    SAMPLER_BYTES_FLASHINFER,
    SAMPLER_BYTES_V0,
    V1_SAMPLER_PROFILED_FROM,
    V2_RUNNER_ENCODER_PROFILED_FROM,
    V2_RUNNER_OFFLOAD_FROM,
    EngineSettings,
    Profile,
    ceil_div,
    cuda_graph_sizes,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    default_model_runner_v2,
    full_graph_sizes,
    graphs_budgeted,
    installed_flashinfer_sampler,
    kv_dtype_exists,
    native_sampler_bytes,
    parse_version,
    performance_mode,
    profile_for,
    registry_span,
    release_serving,
    removed_quant_method,
    requested_bytes,
    sampler_bytes,
    unlisted_architecture_note,
    v0_chunked_prefill,
    v0_text_only_dummy,
    v2_sampler_bytes,
    version_text,
)

if TYPE_CHECKING:
    from estimator.gpus import Gpu

GiB = 2**30
MiB = 2**20

# ---- fitted constants (estimates, not vLLM code) ------------------------------------------
# Non-torch memory (cuBLAS/cuDNN workspaces, attention-backend buffers, NCCL and custom
# all-reduce buffers under TP). Fitted on the dev cases that print it: single GPU 0.03–0.4 GiB
# (docs §6; vllm#13882 0.03) → 0.15 GiB; with TP, 0.15 + 0.06 × tp GiB: TP2 0.27 (vllm15815 0.30,
# vllm13061 0.25), TP4 0.39 (vllm16570 0.34–0.43, vllm PR48601 0.60).
NON_TORCH_SINGLE = int(0.15 * GiB)
NON_TORCH_PER_TP_RANK = int(0.06 * GiB)
# ... and it stops growing past 4 ranks where the GPUs talk over PCIe (NCCL's ring keeps 2 peers
# and few channels whatever the ring's length): logs of 8 and more such cards print 0.18 (8× L40S,
# 0.10.2), 0.28 (L40S, TP 8, 0.7.3), 0.36 (8× L40S, 0.6.6) and 0.20 GiB (16× RTX 3090, 0.8.3) — below
# even the 4-rank 0.39. NVSwitch boards (NVSWITCH_NCCL_* below) and AMD's xGMI boards (8× MI300X
# 0.6.4 prints 8–9 GiB, not modelled) are not capped.
NON_TORCH_RANKS_CAP = 4
# A single GPU's figure follows the card's generation, measured where it is taken after the CUDA
# context (0.6.5+ V0, V1 0.9.1+): what the profile run loads outside torch is mostly kernel code
# (lazily loaded modules), and Hopper loads the most (FlashAttention 3, sm90 CUTLASS). Printed by
# public logs: H100/H200 0.13–0.16 (15 logs of 0.6.6–0.8.5, four projects: ART notebooks, llm-d,
# vLLM PR12126, Dynamo) → NON_TORCH_SINGLE; A100 0.01–0.11 (9 logs, 0.6.6–0.10.2, median 0.09);
# Turing/Ampere-consumer/Ada/Blackwell-workstation cards 0.02–0.08 (30 logs: T4, A10, RTX 2060,
# 3090, 4060, 4070, 4080, 4090, RTX PRO 6000; 0.7.1–0.12; median 0.05). No such figure for AMD
# or datacenter Blackwell, nor from releases after 0.12 (their logs print no non-torch line): they
# keep NON_TORCH_SINGLE, which 0.17.1's RTX 3090 log (TheBuccaneer/vllm-offload-profiles: 16.58 −
# 14.99 weights − 0.43 sampler peak − 0.95 KV = 0.21 GiB for the rest) supports.
NON_TORCH_BY_CARD_UNTIL = (0, 13, 0)
# A card known only by its size (vLLM's printed total): every Hopper and A100 has 39 GiB or more, so a
# smaller one takes the other cards' figure (the unnamed 7–16 GiB cards of the public logs above print
# 0.01–0.05, one 0.13: Colab T4s, an 8 GB card, an RTX 2060 and a 4070 laptop).
UNNAMED_SMALL_CARD = 32 * GiB
NON_TORCH_SINGLE_A100 = int(0.09 * GiB)
NON_TORCH_SINGLE_SMALL = int(0.05 * GiB)
# Hopper GPUs on NVSwitch boards (HGX/DGX H100, H200, H800, H20) under tensor parallelism hold more
# outside torch than the fit above: NCCL opens its NVLink connections over many channels (16–32
# against the 2–4 of a PCIe ring), each with its own buffers, and how many it opens follows the
# release's NCCL and all-reduce path. Public logs, by release window:
# - 0.9.0–0.10.x (torch 2.7–2.8 with NCCL 2.26–2.27; vLLM's symmetric-memory all-reduce, which keeps
#   mid-size all-reduces off NCCL, is on by default from 0.11): printed 1.38 GiB (2× H200, 0.10.2),
#   2.04 (4× H200-class, 0.9.2, vLLM PR21429's debug log) and 1.84 (4× 80 GB Hopper, 0.10.2, vllm#24881;
#   not in the fit, found after it: 0.2 below its TP 4 figure); implied by the printed pool with the rest
#   modelled, 2.51 (dev vllm#21348, 4× H100, 0.9.2) and 2.35 / 2.41 (8× H100, 0.10.0, two runs of
#   DaisukeTakai/eval_dataset). Least squares in log2(tp): 1.16 + 0.44 × log2(tp) GiB (TP 2 1.60,
#   TP 4 2.04, TP 8 2.48).
# - 0.11 on: printed 0.55 (2× H100, llm-d) and 0.60 (4× H100, vLLM PR48601), implied 0.44 / 0.84 /
#   1.06 (2× H100, 0.12.0, three runs of a public repo): 0.60 GiB. One 8× H200 SXM log (0.28.1, AWS
#   p5en, GLM-5.3-Flash) prints 1.74 (consumed − weights) at TP 8, but 8× H200 NVL runs (bridged pairs,
#   no NVSwitch, which the catalog reads as the H200) leave room for no more than about 0.7 at TP 8 and
#   H200 NVL at TP 2/4 lands within 1% with 0.60: TP 8 on a full NVSwitch board is left at 0.60 until
#   the two can be told apart.
# Before 0.9 the same boards print more at TP 8 (8× H200 0.7.3 with DeepSeek-R1: 7.16 GiB; 16× H100
# 0.6.6 with DeepSeek-V3: about 9.7 implied) and no public log gives TP 2 or 4: kept to the general fit.
# A100 boards show no such excess in their logs (2× A100-SXM4-80GB 0.10.1: 0.6 GiB for activation and
# non-torch together), nor do PCIe cards (L40S TP 8: 0.18).
NVSWITCH_NCCL_FROM = (0, 9, 0)
NVSWITCH_NCCL_UNTIL = (0, 11, 0)
NVSWITCH_NCCL_BASE = int(1.16 * GiB)
NVSWITCH_NCCL_PER_DOUBLING = int(0.44 * GiB)
NVSWITCH_NCCL_LATE = int(0.60 * GiB)
# AMD Instinct MI300-class cards (gfx942: MI300X, MI300A, MI325X) in the ROCm builds of vLLM 0.6.0–0.6.4
# (ROCm 6.1–6.2), which measure with total − free: single-card runs leave 2.0–2.4 GiB less KV cache
# than the fit (the ROCm blog's two 0.6.2 Llama-3-8B runs 2.36, llm-tracker's 0.6.3 Llama-2-7B 2.03,
# MI300-testing's two 0.6.4 runs 2.25 / 2.01) — and the same llm-tracker run with hipBLASLt turned off
# got 220 blocks (1.72 GiB) more: hipBLASLt's kernels and workspace, 2.1 GiB (the median). Under tensor
# parallelism RCCL's buffers over xGMI come on top: 8 × MI300X runs print 8.02 / 9.32 / 9.32 GiB of
# non-torch memory (0.6.4) and five more leave 4.8–11.2 GiB (median 6.8) less KV than the fit; a 2 ×
# MI300X run 3.2: 0.72 GiB per rank beside hipBLASLt's (TP 2 3.5, TP 8 7.9 over the fit). W7900
# (gfx1100) logs of 0.6.4 print 0.34 / 0.44 — no such excess; later releases have too few MI300 logs
# to say (a 0.16 TP 4 run 1.6 GiB over the fit, a 0.23 single-card run 3 GiB under it).
ROCM_MI300_FROM = (0, 6, 0)
ROCM_MI300_UNTIL = (0, 6, 5)
ROCM_MI300_HIPBLASLT = int(2.1 * GiB)
ROCM_MI300_RCCL_PER_RANK = int(0.72 * GiB)
# CUDA context (driver + kernels) counted by 0.6.4 V0 and V1 ≤0.9.0 (docs §6: 0.3–0.6 GiB).
# 0.6.4's V0 logs print it: vllm/worker/worker.py takes non_torch_memory = (total − free) − torch's
# allocated bytes after the profile run, with no baseline, so the figure is the context plus
# whatever the run loaded beside it. Six single-GPU 0.6.4.post1 logs print 0.35 (RTX 3090,
# vllm#10517), 0.43 / 0.44 / 0.47 (a GTX 1080, three models, public notes), 0.44 (RTX A6000,
# vllm#10360) and 0.73 GiB (H200, a public training log): median 0.44. Where the same log prints
# initial_memory_usage, that less the weights is within 0.07 GiB of it (RTX 3090: 15.34 − 14.99 =
# 0.35 beside 0.35; GTX 1080: 3.09 − 2.64 = 0.45 beside 0.47, 2.73 − 2.32 = 0.41 beside 0.44; H200:
# 2.71 − 2.05 = 0.66 beside 0.73): the run adds next to nothing outside torch, so for 0.6.4 the
# context alone is the non-torch figure (non_torch below), not context + NON_TORCH_SINGLE. V1 ≤ 0.9.0
# keeps both: its compiled run loads Triton and FlashAttention modules after start-up (dev vllm#16128,
# 0.8.3: 3.5% off with 0.60 GiB, 6.3% with 0.45); so does 0.2.5–0.3.0, whose total − free also holds
# the allocator's cached blocks (vllm PR #2031: Llama-2-7B on an A100 lost 98 blocks, 0.77 GiB, to
# that change).
CUDA_CONTEXT = int(0.45 * GiB)
# What 0.3.1–0.6.3 V0 subtracts beyond the torch peak the model gives (`v0_classic`): vllm/worker/worker.py
# takes init_gpu_memory − free after the profile run with no empty_cache between, so the caching allocator's
# reserved blocks count, not only the allocated peak (0.6.4 empties the cache first; 0.6.6+ measures the
# allocated peak). Single-GPU NVIDIA runs of those releases leave this much less KV cache than the
# allocated-peak model, whatever the activation: vllm PR #4454's Llama-2-7B-GPTQ and Llama-3-8B on an
# RTX A6000 (0.4.1) 0.58 / 0.68 GiB, two RTX 3090 Llama-3-8B runs (0.4.1, xformers and flash-attn) 0.48 /
# 0.49, Qwen1.5-7B-GPTQ on a 3090 (0.4.0) 0.49, GLM-4-9B on a 4090 (0.6.3, version second-hand) 0.24:
# median 0.49 GiB. ROCm builds are left out: the MI300 fit below was taken from such runs already.
V0_CLASSIC_CACHED_EXCESS = int(0.49 * GiB)
# V1's dummy sampler run with speculative decoding (gpu_model_runner.py _dummy_sampler_run): after the
# sampler, the rejection sampler runs on torch.randn logits of one draft row and one bonus row per request
# (2R × V in the model dtype) and samples the bonus tokens from its own copy of the bonus rows with the
# same sampler, so the peak is the sampler's plus 3 × dtype bytes per R × V element. The earlier form
# (R draft rows, bonus token ids given) stays under the sampler's own peak. 0.10's code has the earlier
# form, the current code the later; 0.11.0 is taken as the boundary, not checked release by release.
V1_REJECTION_BONUS_FROM = (0, 11, 0)
# V1's forward activation of one token: MLP gate/up (2I) + activation (I) + qkv + residual/norm
# buffers (≈3h) in the model dtype, times 1.3 (docs §6: 1.2–1.5). V1 runs compiled graphs and its
# attention backends' buffers inside the profile, so the eager MLP live set (V0 below) is not
# enough: with 1.0 and no qkv term the dev V1 pools that rest on the forward (qevos 262k, vllm#16128,
# club-3090#487) go from 4.7 / 2.1 / 0.7% to 13.5 / 9.6 / 3.2%, and the V2-runner log that prints
# the forward peak alone (vllm PR48601, 1.54 GiB) is above even 1.3× (modelled 1.20).
FORWARD_FACTOR = 1.3
# V0 runs the model eagerly (no torch.compile, no V1 attention-backend workspaces in the profile),
# and its dense profile peak is the MLP's live set alone: gate/up output (2I) + activation output
# (I) + residual, normed input and down-projection output (3h), once, with no qkv term (the
# attention's buffers are freed before the MLP runs). Three text-only V0 runs agree within 1%:
# vllm#10517 (Llama-3.1-8B, 0.6.4, Tb = 20,000 / 29,000: peak_torch − weights = 2.07 / 2.99 GiB;
# model 2.06 / 2.99) and vllm#11251 (Llama-3.1-8B TP2, 0.6.5, Tb = 40,000: 2.53 GiB; model 2.52);
# a public V0 0.8 log of Qwen3-4B on a 12 GB RTX 2060 (Tb = 10,000, one sequence) printed 0.74 GiB
# (model 0.69).
V0_FORWARD_FACTOR = 1.0
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
# Model Runner V2's profile peak above the code's forward and sampler: torch.compile's first compile
# runs inside the profiled forward. One setup measured it: Qwen3-8B on an RTX 4090 with 0.27.1 printed
# a 1.18 GiB peak with a cold compile cache and 0.19 GiB with a warm one (0.99 GiB apart); warm-cache V2
# logs print the code's figures (vllm PR48601's Qwen3.6-27B TP 4: 1.54 GiB = its 1,024-row sampler, an
# RTX PRO 6000 Qwen3-32B TP 2 on 0.27.1: 1.38 GiB). A paste seldom says which, and most are first runs:
# scanned from 0.6 to 1.5 GiB over the 78 V2-runner KV figures of the collected public logs (not
# dev.jsonl, where PR48601 is the only one), every value from 0.75 to 1.0 beats V1's fitted 29 B sampler
# (since refitted to 16 B on V1-runner logs) that V2 took before; 0.9 GiB is the best: the 68 figures of logs with a version or a date go from a
# 5.0% to a 2.7% median (38 → 50 within 5%), while 10 undated ones — modelled as the newest release,
# though most ran V1's runner — lose (4 → 1 within 5%). Not with --enforce-eager (nothing compiles), nor where the
# log shows a warm cache ("Directly load the compiled graph(s) … from the cache", paste.py).
# dev.jsonl's PR48601: 7.6% → 0.8%.
V2_FIRST_COMPILE = int(0.9 * GiB)


# Speculative methods that keep vLLM's default async scheduling (vllm/config/vllm.py 0.26.0: EAGLE,
# the MTP family, DFlash, GPU n-gram, DSpark); any other method turns it off unless it is asked for.
_ASYNC_SPEC_METHODS = ("eagle", "eagle3", "extract_hidden_states", "dflash", "ngram_gpu", "dspark")


# Families whose Mamba layers support prefix caching per block, the "all" mode
# (SupportsMambaPrefixCaching in vllm/model_executor/models/: mamba, mamba2, nemotron_h, jamba,
# zamba2, falcon_h1, granitemoehybrid, bamba; 0.11.2–0.32 — 0.33 keeps only "align").
_MAMBA_ALL_TYPES = ("mamba", "falcon_mamba", "mamba2", "nemotron_h", "jamba", "zamba2", "falcon_h1",
                    "granitemoehybrid", "bamba")


def mamba_cache_mode(spec: ModelSpec, s: EngineSettings, profile: Profile, has_attention: bool) -> str:
    """How a hybrid model's Mamba states are cached per request: "none" (one state), "align" (two:
    the running one and the last block-aligned one) or "all" (one per block of the context).

    Prefix caching is off by default for hybrid models until 0.27 (engine/arg_utils.py keeps it
    opt-in) and on from 0.28; attention-free models never default to it. 0.11.2–0.14: with it, models
    that support Mamba prefix caching keep a state per block (MambaSpec: cdiv(max_model_len,
    mamba_block_size) pages), the others turn it off (models/config.py MambaModelConfig). 0.15–0.32:
    `--mamba-cache-mode` all | align, by default "all" where supported, else "align"; 0.33: "align".
    Before 0.11.2 MambaSpec kept one state whatever the flag said.
    """
    if profile.engine != "v1" or profile.version < (0, 11, 2):
        return "none"
    prefix = s.enable_prefix_caching
    if prefix is None:
        prefix = has_attention and profile.version >= (0, 28, 0)
    if not prefix:
        return "none"
    supports = spec.model_type in _MAMBA_ALL_TYPES
    if profile.version < (0, 15, 0):
        return "all" if supports else "none"
    if profile.version >= (0, 33, 0):
        return "align"
    if s.mamba_cache_mode == "align" or (s.mamba_cache_mode != "all" and not supports):
        return "align"
    return "all" if supports else "align"


def window_tokens(s: EngineSettings, profile: Profile) -> int:
    """Tokens a sliding-window or chunked-local layer holds beyond its window for one request.

    Up to 0.25 one batch: max_num_batched_tokens. From 0.26 `VllmConfig.max_in_flight_tokens`:
    max_concurrent_batches × max_num_batched_tokens, because out-of-window blocks are freed only once
    a step is processed. max_concurrent_batches (vllm/config/vllm.py) is 2 with async scheduling
    (on by default) and PP 1, PP + 1 under the V2 model runner with async scheduling, else PP
    (the V2 runner, by default or by VLLM_USE_V2_MODEL_RUNNER, changes the count only with PP).
    """
    tb = s.max_num_batched_tokens or 2048
    if not profile.window_in_flight:
        return tb
    pp = max(1, s.pipeline_parallel_size)
    async_on = s.async_scheduling
    if async_on is None:
        method = (s.speculative_method or "").lower()
        async_on = not method or method in _ASYNC_SPEC_METHODS or method.endswith("mtp")
    if not async_on:
        return pp * tb
    return (pp + 1 if s.model_runner_v2 else (2 if pp == 1 else pp)) * tb


def dcp_ranks(profile: Profile, s: EngineSettings) -> int:
    """The ranks decode context parallelism spreads a request's tokens over (1 where the release has
    no --decode-context-parallel-size: V1 from DCP_FROM)."""
    return s.decode_context_parallel_size if profile.engine == "v1" and profile.version >= DCP_FROM else 1


@dataclass
class KVGroup:
    """One V1 KV-cache group: layers of one spec type sharing block ids."""

    kind: str
    layers: int
    page_bytes: int          # bytes of one block of this group's layers (one layer)
    block_size: int          # tokens per block for this group
    spec: LayerKV

    def blocks_per_request(self, max_len: int, tb: int, profile: Profile, mamba_extra: int = 0,
                           mamba_all: bool = False, cp: int = 1) -> int:
        """`max_memory_usage_bytes / page` for one request at max_len (vllm/v1/kv_cache_interface.py).
        `tb`: the tokens a windowed layer holds beyond its window (`window_tokens`); a Mamba group
        holds 1 + `mamba_extra` states, or one per block of the context in the "all" mode; `cp`: the
        context-parallel ranks a full-attention layer spreads a request's tokens over (DCP_FROM)."""
        bs = self.block_size
        if isinstance(self.spec, MambaState):
            return (ceil_div(max_len, bs) if mamba_all else 1) + mamba_extra
        if isinstance(self.spec, SlidingWindow) and profile.sliding_spec:
            return ceil_div(min(self.spec.window - 1 + tb, max_len), bs) + 1
        if isinstance(self.spec, ChunkedLocal) and profile.chunked_local_spec:
            return ceil_div(min(self.spec.chunk + tb, max_len), bs)
        return ceil_div(ceil_div(max_len, cp), bs)


@dataclass
class KVLayout:
    """How the KV pool is organised on one rank for one version."""

    groups: list[KVGroup]
    bytes_per_block: int          # bytes one block id costs across all pools
    block_size: int               # the attention block size (tokens)
    kv_bytes_per_token: int       # per-token bytes summed over per-token layers (rank)
    state_bytes_per_request: int  # Mamba/linear state per request (rank)
    note: str = ""
    layers: list = field(default_factory=list)   # this rank's layers as vLLM sizes them
    state_page: int = 0                          # one Mamba page (padded to the attention page)
    mamba_mode: str = "none"                     # Mamba prefix-caching mode: none | align | all
    # DeepSeek-V4 (kv_deepseek_v4.py): the pool's own plan — blocks per request, the check's block bytes
    dsv4: kv_deepseek_v4.Plan | None = None

    @property
    def num_groups(self) -> int:
        return len(self.groups)


@dataclass
class Reconciliation:
    """How a diagnosis matched the forward model to the figures vLLM printed (estimator.diagnosis).

    Kept beside the Estimate it produced: the advice re-checks fixes in the model's own state
    too, and the reply labels the parts that were solved for rather than estimated."""

    plain: Estimate | None = None               # the model's own state, before any part was solved for
    solved: list[str] = field(default_factory=list)   # parts moved to reproduce vLLM's KV pool ("activation_bytes", …)
    failed: bool = False                        # no state reproduces vLLM's figures
    card_implied: str | None = None             # the card size vLLM's KV figure implies, and how


@dataclass
class Estimate:
    spec: ModelSpec
    profile: Profile
    settings: EngineSettings               # resolved settings (defaults filled)
    gpu_name: str
    gpu_total_bytes: int
    gpu_count: int
    compute_capability: str | None
    budget_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    kv_cache_bytes: int
    layout: KVLayout
    gpu_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    max_model_len_fit: int
    kv_needed_bytes: int
    fits: bool
    error_kind: str | None
    assumptions: list[str] = field(default_factory=list)
    suggestions: list[dict] = field(default_factory=list)
    checkpoint_weights_bytes: int = 0           # the model's own weights per rank, whatever was printed
    cached_all_reduce_bytes: int = 0            # V0 0.2.5–0.6.3 with TP: what the profile may leave cached
    flashinfer_graph_bytes: int = 0             # of cuda_graph_bytes: FlashInfer's workspace and decode wrappers
    # Not results of the arithmetic: what it was run with, and what the callers learnt about it.
    inputs: dict = field(default_factory=dict, repr=False, compare=False)   # estimate()'s arguments (rerun)
    # what estimate() itself said about these inputs: a re-run on other inputs says it afresh, so a
    # caller carrying its own notes over to the re-run leaves these behind
    own_assumptions: tuple[str, ...] = field(default=(), repr=False, compare=False)
    tightest_stage: int = 0                     # mixed PP stages: the one whose block count all get
    params: int | None = None                   # parameter count (api.run_estimate)
    gpu: Gpu | None = field(default=None, repr=False, compare=False)   # the catalog card (api.run_estimate)
    reconciliation: Reconciliation = field(default_factory=Reconciliation, repr=False, compare=False)

    @property
    def non_kv_bytes(self) -> int:
        return self.weights_bytes + self.activation_bytes + self.non_torch_bytes + self.cuda_graph_bytes

    @property
    def modelled_weights_bytes(self) -> int:
        """The weights of the state vLLM ran with (its printed figure where the paste has one),
        before any part was solved for to reproduce vLLM's pool."""
        return (self.reconciliation.plain or self).weights_bytes

    @property
    def others_charged_bytes(self) -> int:
        """Memory other processes hold that this version charges to this instance's own budget
        (0.6.4 V0 and V1 before 0.9.1: Profile.context_in_non_torch); 0 where it is not charged."""
        return (self.inputs.get("other_process_bytes") or 0) if self.profile.context_in_non_torch else 0

    def to_json(self) -> dict:
        s = self.settings
        return {
            "model": {
                "id": self.spec.model_id, "architecture": self.spec.architecture,
                "params": self.params, "weight_bytes": self.weights_bytes,
                "kv_bytes_per_token": self.layout.kv_bytes_per_token,
                "attention": self.spec.attention_summary(),
            },
            "gpu": {"name": self.gpu_name, "total_bytes": self.gpu_total_bytes, "count": self.gpu_count,
                    "compute_capability": self.compute_capability,
                    # mixed cards: each pipeline stage's (name, torch total); the figures above are the tightest's
                    "stages": [{"name": n, "total_bytes": t} for n, t in
                               (self.inputs.get("stage_gpus") or [])] or None},
            "settings": {
                "vllm_version": s.vllm_version, "engine": self.profile.engine,
                "gpu_memory_utilization": s.gpu_memory_utilization, "max_model_len": self.max_model_len,
                "tensor_parallel_size": s.tensor_parallel_size, "pipeline_parallel_size": s.pipeline_parallel_size,
                "dtype": s.dtype, "kv_cache_dtype": s.kv_cache_dtype, "quantization": s.quantization,
                "max_num_seqs": s.max_num_seqs, "max_num_batched_tokens": s.max_num_batched_tokens,
                "block_size": self.layout.block_size, "enforce_eager": s.enforce_eager,
                "enable_prefix_caching": s.enable_prefix_caching, "enable_chunked_prefill": s.enable_chunked_prefill,
                "data_parallel_size": s.data_parallel_size, "enable_expert_parallel": s.enable_expert_parallel,
                "decode_context_parallel_size": s.decode_context_parallel_size,
                "speculative_method": s.speculative_method, "num_speculative_tokens": s.num_speculative_tokens,
                "pp_layer_partition": s.pp_layer_partition, "model_runner_v2": s.model_runner_v2,
                "usage": s.usage,
            },
            "memory": {
                "budget_bytes": self.budget_bytes, "weights_bytes": self.weights_bytes,
                "activation_bytes": self.activation_bytes, "non_torch_bytes": self.non_torch_bytes,
                "cuda_graph_bytes": self.cuda_graph_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "other_process_bytes": self.inputs.get("other_process_bytes") or 0,
            },
            "gpu_blocks": self.gpu_blocks,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": round(self.max_concurrency, 4),
            "max_model_len": self.max_model_len,
            "max_model_len_fit": self.max_model_len_fit,
            "kv_needed_bytes": self.kv_needed_bytes,
            "fits": self.fits,
            "error_kind": self.error_kind,
            "era": self.profile.era,
            "suggestions": self.suggestions,
            "assumptions": self.assumptions,
        }


# ------------------------------------------------------------------------------------------
# Settings resolution
# ------------------------------------------------------------------------------------------


def cc_number(compute_capability: str | None) -> float | None:
    """NVIDIA compute capability as a number ("8.6" → 8.6); None for other vendors ("gfx942")."""
    try:
        return float(compute_capability) if compute_capability else None
    except (TypeError, ValueError):
        return None


def resolve_dtype(spec: ModelSpec, settings: EngineSettings, profile: Profile,
                  compute_capability: str | None, assumptions: list[str]) -> str:
    """--dtype auto → the checkpoint dtype with vLLM's fp32 / pre-Ampere rules (vllm/config/model.py)."""
    want = (settings.dtype or "auto").lower()
    cfg = str(spec.torch_dtype or "").lower().replace("torch.", "")
    cc = cc_number(compute_capability)
    if want in ("half", "float16", "fp16"):
        return "float16"
    if want in ("bfloat16", "bf16"):
        return "bfloat16"
    if want in ("float32", "float", "fp32"):
        return "float32"
    if cfg in ("bfloat16", "float16"):
        if cfg == "bfloat16" and cc is not None and cc < 8.0 and profile.version >= (0, 9, 1):
            assumptions.append("bf16 checkpoint on a GPU below compute capability 8.0: vLLM ≥0.9.1 falls back to fp16")
            return "float16"
        return cfg
    if not cfg:
        assumptions.append("config has no torch_dtype: vLLM treats it as fp32 and loads fp16/bf16")
    if profile.version >= (0, 9, 1) and (cc is None or cc >= 8.0):
        return "bfloat16"
    return "float16"


def resolve_max_model_len(spec: ModelSpec, settings: EngineSettings, profile: Profile,
                          assumptions: list[str]) -> int:
    """vLLM's `_get_and_verify_max_len` (vllm/config/model.py; docs §3)."""
    derived, rtype = derived_max_model_len(spec, profile, assumptions)
    user = settings.max_model_len
    if user in (None, "auto"):
        # 0.11.2+: LongRoPE defaults to original_max_position_embeddings (vllm/config/model.py); the
        # legacy "su" type is renamed to longrope first (transformers_utils/config.py patch_rope_scaling_dict)
        if rtype in ("longrope", "su") and profile.version >= (0, 11, 2) \
                and spec.text.get("original_max_position_embeddings"):
            return int(spec.text["original_max_position_embeddings"])
        return int(derived)
    return int(user)


def length_over_config(spec: ModelSpec, settings: EngineSettings, profile: Profile) -> int | None:
    """The config's length when the user's max_model_len exceeds it and vLLM refuses to start:
    "User-specified max_model_len (L) is greater than the derived max_model_len …" unless
    model_max_length allows it or VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm/config/model.py
    _get_and_verify_max_len). None when the length is accepted."""
    user = settings.max_model_len
    if not isinstance(user, int) or settings.allow_long_max_model_len:
        return None
    derived, _ = derived_max_model_len(spec, profile, [])
    mml = spec.text.get("model_max_length")
    if user > derived and not (isinstance(mml, int) and mml > 0 and user <= mml):
        return int(derived)
    return None


def derived_max_model_len(spec: ModelSpec, profile: Profile, assumptions: list[str]) -> tuple[int, str]:
    """(the length vLLM derives from the config, the RoPE scaling type) — docs §3."""
    derived, key = spec.derived_max_len()
    if derived is None:
        derived = 2048
        assumptions.append("config has no max-length key: vLLM defaults to 2048")
    mml = spec.text.get("model_max_length")
    if profile.version >= (0, 8, 3) and isinstance(mml, int) and mml > 0:
        derived = mml
    if spec.model_type == "gemma2" and (0, 5, 1) <= profile.version <= (0, 6, 4) and spec.sliding_window:
        # vllm/config.py 0.5.1–0.6.4: Gemma 2's sliding window was unsupported, so vLLM disabled it
        # and capped the length to the window ("capping the max length to the sliding window size");
        # from 0.6.5 only when VLLM_ATTENTION_BACKEND=XFORMERS is set.
        derived = min(derived, spec.sliding_window)
        assumptions.append(f"vLLM {profile.release} caps Gemma 2 at its "
                           f"{spec.sliding_window}-token sliding window")
    rope = spec.rope_scaling or {}
    rtype = str(rope.get("rope_type") or rope.get("type") or "").lower()
    factor = rope.get("factor")
    if rope and rtype not in ("su", "longrope", "llama3", "default", "mrope", "proportional") \
            and not spec.model_type.startswith("gemma3"):
        if rtype in ("yarn", "deepseek_yarn", "deepseek_llama_scaling"):
            if profile.yarn_scales_max_len and factor:
                orig = rope.get("original_max_position_embeddings") or derived
                derived = int(orig * float(factor))
        elif factor:
            derived = int(derived * float(factor))
    return int(derived), rtype


# ------------------------------------------------------------------------------------------
# KV layout
# ------------------------------------------------------------------------------------------


def kv_dtype_bytes_for(settings: EngineSettings, model_dtype: str, spec: ModelSpec, profile: Profile,
                       assumptions: list[str] | None = None) -> int:
    kv = (settings.kv_cache_dtype or "auto").lower()
    if kv == "auto":
        q = spec.quantization or {}
        # ModelOpt's kv_cache_quant_algo from 0.14 (utils/torch_utils.py get_kv_cache_quant_algo_string);
        # a compressed-tensors kv_cache_scheme from 0.15 (attention/layer.py switches the cache to fp8)
        since = (0, 14, 0) if q.get("kv_cache_quant_algo") else (0, 15, 0)
        if (q.get("kv_cache_quant_algo") or q.get("kv_cache_scheme")) and profile.version >= since:
            if assumptions is not None:
                assumptions.append("KV cache in fp8 (1 byte per value): the checkpoint's quantization config "
                                   "quantizes the KV cache, and --kv-cache-dtype auto follows it from vLLM "
                                   + ("0.14" if since == (0, 14, 0) else "0.15"))
            return 1
        return dtype_bytes(model_dtype)
    return dtype_bytes(kv, 1)


def stage_sizes(spec: ModelSpec, profile: Profile, pp: int, partition: list[int] | None) -> list[int]:
    """Layers per PP stage, as this version splits them (params.pp_partition, one rule for weights and KV)."""
    return [hi - lo for lo, hi in pp_partition(spec.num_layers, pp, partition, profile.version < (0, 8, 0))]


def _stage_layers(spec: ModelSpec, profile: Profile, pp: int, stage: int | None = None,
                  partition: list[int] | None = None) -> list[LayerKV]:
    """Layers of PP stage `stage`, or of the stage with the most KV bytes per token when None
    (with one GPU type and vLLM's own partition, that stage has the fewest blocks)."""
    n = len(spec.layers) if spec.model_type != "falcon_h1" else spec.num_layers
    if pp <= 1:
        return list(spec.layers)
    sizes = stage_sizes(spec, profile, pp, partition)
    best, start = None, 0
    for i, size in enumerate(sizes):
        layers = list(spec.layers[start:start + size])
        if n != len(spec.layers):  # parallel hybrid: append this stage's state layers
            layers += list(spec.layers[spec.num_layers + start: spec.num_layers + start + size])
        if stage == i:
            return layers
        cost = sum(lk.bytes_per_token(1, 2) for lk in layers)
        if best is None or cost > best[0]:
            best = (cost, layers)
        start += size
    return best[1]


def mtp_layers(spec: ModelSpec) -> int:
    """Multi-token-prediction layers the checkpoint carries (DeepSeek `num_nextn_predict_layers`,
    Qwen3-Next/3.5 `mtp_num_hidden_layers`)."""
    t = spec.text or {}
    return int(t.get("num_nextn_predict_layers") or t.get("mtp_num_hidden_layers") or 0)


def _mtp_attention_layers(spec: ModelSpec) -> int:
    """Attention layers per MTP step: one, except where Nemotron-H's `mtp_hybrid_override_pattern`
    lists the step's layers (nemotron_h_mtp.py: `*` attention with a KV cache, `E` MoE without)."""
    pattern = (spec.text or {}).get("mtp_hybrid_override_pattern")
    if spec.model_type == "nemotron_h" and isinstance(pattern, str) and pattern:
        return pattern.count("*")
    return 1


def _first_global_attention(spec: ModelSpec, kinds: tuple) -> LayerKV | None:
    """The model's first attention layer that sees the whole context (no window, chunk or cross
    attention): the shape a speculative head's own layer takes."""
    return next((lk for lk in spec.layers if isinstance(lk, kinds)
                 and not isinstance(lk, (SlidingWindow, ChunkedLocal, CrossAttention))), None)


def speculative_tokens(spec: ModelSpec, s: EngineSettings) -> int:
    """Tokens proposed per step: the flag's, else for MTP the number of MTP layers (vLLM's default,
    vllm/config SpeculativeConfig) — on every pipeline stage, since the graph sizes need it too."""
    if s.num_speculative_tokens:
        return s.num_speculative_tokens
    method = (s.speculative_method or "").lower()
    if gemma4_assistant(spec.model_type, spec.hidden_size, method, s.speculative_model) and not mtp_layers(spec):
        return 1    # the assistant drafts one token per step unless told otherwise
    return mtp_layers(spec) if method.endswith("mtp") else 0


def drafter(spec: ModelSpec, s: EngineSettings, profile: Profile,
            assumptions: list[str]) -> tuple[list[LayerKV], int, bool]:
    """(the draft model's KV layers, speculative tokens per step, MTP weights loaded).

    MTP methods (`mtp`, `deepseek_mtp`, `qwen3_next_mtp`, … vllm/v1/spec_decode/eagle.py) run the
    checkpoint's own MTP layers as the drafter: vLLM loads them (sharing embeddings and lm_head with
    the target) and gives each MTP layer a KV cache of the model's attention kind, in the same pool
    and the same KV groups as the target's layers (V0 likewise splits the blocks between target and
    draft). `num_speculative_tokens` defaults to the number of MTP layers (vllm/config SpeculativeConfig).
    Hybrid models keep 1 + k Mamba state blocks per request (MambaSpec.num_speculative_blocks).
    n-gram / suffix proposers need no GPU memory; an EAGLE head adds one layer of the target's
    attention shape; an external draft model is not in this config, so its weights and KV are said
    to be missing rather than guessed.
    """
    method = (s.speculative_method or "").lower()
    if not method or (s.pp_stage is not None and s.pp_stage != s.pipeline_parallel_size - 1):
        return [], 0, False
    n_mtp = mtp_layers(spec)
    k = speculative_tokens(spec, s)
    assistant = gemma4_assistant(spec.model_type, spec.hidden_size, method, s.speculative_model)
    if assistant is not None and not n_mtp:
        assumptions.append(f"Gemma 4 speculative decoding ({k} token(s) per step) drafts with {assistant.repo} "
                           f"({assistant.params / 1e9:.2f} B parameters, loaded in the model dtype beside the model); "
                           "its attention reads this model's KV cache (vLLM's cross-model KV sharing), so it adds "
                           "no KV of its own. Three public pairs of runs with and without the E4B assistant "
                           "(eager, one sequence) lost its weights and nothing more; its activations and CUDA "
                           "graphs under larger batches are not modelled — two runs with the 26B-A4B assistant "
                           "(an RTX 3090 and an L40S) had 1–1.4 GiB less KV cache than this estimate gives")
        return [], k, False
    if method.endswith("mtp"):
        if not n_mtp:
            assumptions.append(f"speculative method {method!r} but the config has no MTP layers: no draft "
                               "memory counted")
            return [], k, False
        if not s.num_speculative_tokens:
            assumptions.append(f"num_speculative_tokens not given: vLLM's default for MTP, {k}")
        attn = _first_global_attention(spec, (FullAttention, MLA))
        layers = [attn] * (n_mtp * _mtp_attention_layers(spec)) if attn is not None else []
        assumptions.append(f"MTP speculative decoding ({k} token(s) per step): {n_mtp} MTP layer(s) loaded "
                           "with their own KV cache")
        return layers, k, True
    if method in ("ngram", "suffix", "ngram_gpu"):
        assumptions.append(f"speculative method {method!r}: the proposer runs without GPU memory of its own")
        return [], k, False
    if method in ("eagle", "eagle3"):
        # An EAGLE head is one decoder layer beside the target (vllm/model_executor/models/llama_eagle*.py)
        # whose attention gets a KV cache in the same pool; its shape is the target's in the published
        # heads. A 0.9 log with EAGLE on Llama-3.1-8B printed 410,128 tokens for 51.63 GiB: 33 layers'
        # worth per token (32 + 1).
        attn = _first_global_attention(spec, (FullAttention,))
        assumptions.append(f"{method} speculative decoding: the draft head's one layer counted with this model's "
                           "attention shape; its weights (not in this config) are not counted")
        return ([attn] if attn is not None else []), k, False
    assumptions.append(f"speculative method {method!r}: the draft model's weights and KV cache are not in this "
                       "model's config and are not counted — paste the draft model's id to include them")
    return [], k, False


# KV formats that pack scales beside the values (vllm/v1/kv_cache_interface.py KVQuantMode; each from the
# release vllm.KV_CACHE_DTYPE_FROM gives): per-token-head int8 / fp8 keep one fp32 scale per token, head
# and side (AttentionSpec.page_size_bytes adds 2 × block × heads × 4 B; 0.33's Triton backend packs
# (K + V dims) × 1 B + 2 × 4 B per head slot), int4 the same at half the dims (real_page_size_bytes,
# 0.25+); NVFP4 packs fp4 values (dim / 2 B) and an fp8 scale per 16 values (dim / 16 B) per side
# (nvfp4_kv_cache_full_dim; nvfp4_4over6 picks its scales otherwise in the same layout; 0.33 FlashInfer's
# two slots per head, the same bytes).
_PER_TOKEN_HEAD_SCALE = 4
# TurboQuant's presets (model_executor/layers/quantization/turboquant/config.py TQ_PRESETS, 0.20+):
# (key bits, value bits). A slot holds one head's key (8 bits: the fp8 values; else Lloyd-Max indices
# of key_bits each + a 2-byte norm) and value (value_bits each + a 2-byte scale and a 2-byte zero),
# rounded up to an even byte count (slot_size_aligned); TQFullAttentionSpec's page is block × heads × slot.
TURBOQUANT_PRESETS = {"turboquant_k8v4": (8, 4), "turboquant_4bit_nc": (4, 4), "turboquant_k3v4_nc": (3, 4),
                      "turboquant_3bit_nc": (3, 3)}
# A dense model keeps its first and last TURBOQUANT_EDGE_LAYERS layers in the model dtype (arg_utils.py:
# TurboQuantConfig.get_boundary_skip_layers, "boundary protection", at most half the layers); 0.20
# refuses TurboQuant for hybrid models, 0.21+ quantizes all their attention layers.
TURBOQUANT_EDGE_LAYERS = 2
TURBOQUANT_HYBRID_FROM = (0, 21, 0)
NVFP4_MLA_REFUSED_FROM = (0, 21, 0)     # config/vllm.py validate_nvfp4_kv_cache_with_mla (not in 0.20; 0.21–0.33)
_NVFP4_DS_MLA_BYTES = 352               # mla_attention.py state_content_bytes (0.30+)


def turboquant_slot(kv_cache_dtype: str, head_dim: int) -> int:
    """Bytes of one head's TurboQuant slot (key and value) per token; 0 for another dtype."""
    if kv_cache_dtype not in TURBOQUANT_PRESETS:
        return 0
    key_bits, value_bits = TURBOQUANT_PRESETS[kv_cache_dtype]
    key = head_dim if key_bits == 8 else -(-head_dim * key_bits // 8) + 2
    slot = key + -(-head_dim * value_bits // 8) + 4
    return slot + slot % 2


def packed_kv_content(kv_cache_dtype: str, head_dim: int, head_dim_v: int, version: tuple) -> int:
    """Bytes a token takes per KV head (K and V) in a scale-carrying KV format; 0 for a plain dtype
    or a format this release does not have."""
    if not kv_dtype_exists(kv_cache_dtype, version):
        return 0
    if kv_cache_dtype in ("int8_per_token_head", "fp8_per_token_head", "int4_per_token_head"):
        halve = 2 if kv_cache_dtype.startswith("int4") else 1
        return (head_dim + head_dim_v) // halve + 2 * _PER_TOKEN_HEAD_SCALE
    if kv_cache_dtype in ("nvfp4", "nvfp4_4over6"):
        return sum(d // 2 + d // 16 for d in (head_dim, head_dim_v))
    return 0


def effective_layers(spec: ModelSpec, profile: Profile, layers: list[LayerKV], kv_cache_dtype: str,
                     assumptions: list[str], kv_bytes: int = 2, cc: float | None = None,
                     model_dtype_bytes: int = 2, whole_model: bool = True) -> list[LayerKV]:
    """Layers as this vLLM version caches them.

    MLA before 0.7.1 had no latent cache: K and V per head of qk_nope+qk_rope dims (docs §2.1).
    V1 0.11+ stores DeepSeek-V3.2-style sparse MLA with an fp8 KV cache as "fp8_ds_mla", 656 B
    per token per layer (FlashMLA's sparse format): in 0.11.0 whatever the dtype ("auto" too,
    models/config.py), from 0.11.2 for an fp8 cache — the flag's or the checkpoint's —, except on
    Blackwell from 0.19, where the FlashInfer sparse backend takes plain fp8 (platforms/cuda.py).
    """
    out: list[LayerKV] = []
    fp8 = kv_cache_dtype.startswith("fp8") or (kv_cache_dtype == "auto" and kv_bytes == 1)
    v = profile.version
    ds_mla = kv_cache_dtype == "fp8_ds_mla" or (profile.engine == "v1" and (
        (0, 11, 0) <= v < (0, 11, 2) and (fp8 or kv_cache_dtype == "auto")
        or v >= (0, 11, 2) and fp8 and not (cc is not None and cc >= 10.0 and v >= (0, 19, 0))))
    # the packed format is chosen for the whole (sparse-attention) model, also for its layers
    # that share another layer's indexer
    sparse = any(getattr(lk, "indexer_bytes", 0) for lk in spec.layers)
    edges = _turboquant_edges(spec, profile, kv_cache_dtype, whole_model, assumptions)
    for i, lk in enumerate(layers):
        if isinstance(lk, CrossAttention) and profile.engine == "v0":
            # V0's cache engine gives every decoder layer a KV page, cross-attention ones too
            # (worker/cache_engine.py: get_num_attention_layers = the text config's num_hidden_layers)
            lk = FullAttention(kv_heads=lk.kv_heads, head_dim=lk.head_dim)
        if isinstance(lk, MambaState) and lk.variant in ("mamba1", "mamba2", "gdn"):
            ssm = _ssm_state_bytes(spec, profile, lk.ssm_dtype_bytes)
            if ssm != lk.ssm_dtype_bytes:
                lk = dataclasses.replace(lk, ssm_dtype_bytes=ssm)
        if isinstance(lk, MLA):
            if not profile.mla_cache:
                mla = spec.mla or {}
                hd = int(mla.get("qk_nope_head_dim") or 128) + int(mla.get("qk_rope_head_dim") or 64)
                if profile.version < (0, 7, 0) and spec.model_type in ("deepseek_v2", "deepseek_v3"):
                    # config.py get_head_size up to 0.6.6: "FlashAttention supports only head_size 32, 64,
                    # 128, 256, we need to pad head_size 192 to 256" (K and V alike)
                    hd = 256
                lk = FullAttention(kv_heads=spec.num_kv_heads, head_dim=hd)
            elif kv_cache_dtype == "nvfp4_ds_mla" and profile.engine == "v1" and kv_dtype_exists(kv_cache_dtype, v):
                lk = dataclasses.replace(lk, fixed_bytes=_NVFP4_DS_MLA_BYTES)     # the NVFP4 sparse-MLA blob
            elif ds_mla and (sparse or kv_cache_dtype == "fp8_ds_mla"):
                lk = dataclasses.replace(lk, fixed_bytes=656)
            elif profile.engine == "v0" and V0_MLA_ALIGNED <= v < (0, 8, 0) and not str(cc or "").startswith("gfx") \
                    and not lk.indexer_bytes:
                # V0's cache engine pads each token's latent (worker/cache_engine.py _align_cache,
                # VLLM_CUDA_MEM_ALIGN_KV_CACHE=1 by default, CUDA only)
                lk = dataclasses.replace(lk, fixed_bytes=v0_mla_padded_values(lk) * kv_bytes)
        if type(lk) in (FullAttention, SlidingWindow, ChunkedLocal) and profile.engine == "v1":
            hd_v = lk.head_dim if lk.head_dim_v is None else lk.head_dim_v
            if i in edges:
                packed = (lk.head_dim + hd_v) * model_dtype_bytes     # kv_cache_dtype "auto" there
            elif type(lk) is FullAttention and kv_dtype_exists(kv_cache_dtype, v) \
                    and turboquant_slot(kv_cache_dtype, lk.head_dim):
                # (TurboQuant packs full-attention layers only: a sliding one keeps a plain uint8 spec)
                packed = turboquant_slot(kv_cache_dtype, lk.head_dim)
            else:
                packed = packed_kv_content(kv_cache_dtype, lk.head_dim, hd_v, v)
            if packed:
                lk = dataclasses.replace(lk, content_bytes=packed)
        out.append(lk)
    if spec.uses_mla and not profile.mla_cache:
        assumptions.append("vLLM before 0.7.1 has no MLA cache: it stores K and V for every head")
    return out


def _turboquant_edges(spec: ModelSpec, profile: Profile, kv_cache_dtype: str, whole_model: bool,
                      assumptions: list[str]) -> set[int]:
    """Indices (in the model's layer list) of the layers a TurboQuant cache leaves in the model dtype."""
    if kv_cache_dtype not in TURBOQUANT_PRESETS or profile.engine != "v1" \
            or not kv_dtype_exists(kv_cache_dtype, profile.version) or spec.is_hybrid_state:
        return set()
    n = spec.num_layers
    k = min(TURBOQUANT_EDGE_LAYERS, n // 2)
    if not whole_model:
        assumptions.append(f"TurboQuant leaves the model's first and last {k} layers unquantized; with pipeline "
                           "parallelism this stage's layers are all modelled as quantized")
        return set()
    return set(range(k)) | set(range(n - k, n))


# V0's cache engine allocates an MLA token's latent padded to 256 bytes (align_to_256bytes of the entry
# in the model dtype: 576 → 640 values for DeepSeek's 512 + 64 in bf16) — in the 0.7.2 and 0.7.3 wheels
# (worker/cache_engine.py get_cache_block_size and _allocate_kv_cache); 0.7.1 had no such padding and
# 0.8.0 dropped it. A DeepSeek-Coder-V2-Lite AWQ log between those releases (vllm PR #13109) printed
# 59.75 GiB for 116,023 blocks: 1,280 B per token per layer over its 27 layers, not 1,152.
V0_MLA_ALIGNED = (0, 7, 2)


def v0_mla_padded_values(lk: MLA) -> int:
    """The latent's values as 0.7.2–0.7.3's V0 cache engine stores them: rounded up to 256 bytes of the
    16-bit model dtype, i.e. to a multiple of 128 values."""
    return -(-(lk.kv_lora_rank + lk.rope_dim) // 128) * 128


def _ssm_state_bytes(spec: ModelSpec, profile: Profile, from_config: int | None) -> int | None:
    """Bytes of one SSM state element (None: the model dtype, vLLM's mamba_ssm_cache_dtype "auto").
    vLLM reads a config's dtype only for some families (vllm/model_executor/models/config.py):
    Nemotron-H from 0.13 (NemotronHForCausalLMConfig: the config's mamba_ssm_cache_dtype, else float16,
    float32 from 0.20), Qwen3.5 from 0.17 (its mamba_ssm_dtype)."""
    v, mt = profile.version, spec.model_type
    if mt == "nemotron_h":
        if v < (0, 13, 0):
            return None
        return from_config or (2 if v < (0, 20, 0) else 4)
    if mt.startswith("qwen3_5"):
        return from_config if v >= (0, 17, 0) else None
    return from_config


# DeepSeek-V4's KV pool (memory._deepseek_v4_layout) exists from the release that brought the model: the
# first whose registry lists DeepseekV4ForCausalLM (estimator/data/vllm_architectures.json), 0.20.0
DEEPSEEK_V4_FROM = parse_version(registry_span("DeepseekV4ForCausalLM")[0])


def kv_layout(spec: ModelSpec, profile: Profile, settings: EngineSettings, kv_bytes: int,
              model_dtype_bytes: int, assumptions: list[str],
              draft_info: tuple[list[LayerKV], int, bool] | None = None) -> KVLayout:
    tp, pp = settings.tensor_parallel_size, settings.pipeline_parallel_size
    # The drafter's layers live on the last PP stage; counted with the stage sized here.
    draft, spec_k, _w = draft_info or drafter(spec, settings, profile, [])
    layers = effective_layers(spec, profile, _stage_layers(spec, profile, pp, settings.pp_stage,
                                                           settings.pp_layer_partition) + draft,
                              (settings.kv_cache_dtype or "auto").lower(), assumptions, kv_bytes,
                              settings.compute_capability, model_dtype_bytes, whole_model=pp <= 1)
    if spec_k:
        # Gated DeltaNet and KDA keep the last k speculative tokens' inputs in their conv states:
        # (conv_kernel − 1 + num_spec) rows (mamba_utils.py gated_delta_net_state_shape, kda_state_shape).
        # (KDA's num_spec argument is used from 0.27: mamba_utils.py kda_state_shape ignored it before)
        spec_rows = ("gdn", "kda") if profile.version >= (0, 27, 0) else ("gdn",)
        layers = [dataclasses.replace(lk, conv_kernel=lk.conv_kernel + spec_k)
                  if isinstance(lk, MambaState) and lk.variant in spec_rows else lk for lk in layers]
    if any(isinstance(lk, DeepseekV4Layer) for lk in layers):
        if profile.engine == "v1" and profile.version >= DEEPSEEK_V4_FROM:
            return _deepseek_v4_layout(spec, profile, settings, layers, assumptions)
        assumptions.append(f"vLLM {profile.release} has no DeepSeek-V4 KV layout (it came with the model in "
                           f"{version_text(DEEPSEEK_V4_FROM)}): the KV figures count only its compressed rows per token")
    bs = settings.block_size or 16
    attn = [lk for lk in layers if lk.bytes_per_token(tp, kv_bytes) > 0]
    states = [lk for lk in layers if isinstance(lk, MambaState)]
    per_token = sum(lk.bytes_per_token(tp, kv_bytes) for lk in attn)
    state_req = sum(lk.state_bytes(tp, model_dtype_bytes) for lk in states)
    cross = [lk for lk in layers if isinstance(lk, CrossAttention)]
    if cross:
        assumptions.append("cross-attention layers (encoder KV) are not sized; their memory is ignored")

    if profile.engine == "v0" or not profile.hybrid_manager:
        # V0: one pool, every attention layer at full length (sliding windows ignored by the
        # check; vllm/worker/cache_engine.py get_cache_block_size). V1 0.7–0.9.0: one group,
        # sliding layers unified to full attention for allocation.
        if states and profile.engine == "v0":
            note = "V0 keeps Mamba state outside the KV pool (allocated in the profile run)"
        else:
            note = ""
        groups = [KVGroup("full", len(attn), bs * per_token // max(1, len(attn)), bs,
                          FullAttention(kv_heads=1, head_dim=1))] if attn else []
        return KVLayout(groups, bs * per_token, bs, per_token, state_req if profile.engine != "v0" else 0, note,
                        layers=layers)

    # ---- V1 0.9.1+: hybrid KV cache manager (vllm/v1/core/kv_cache_utils.py) ----
    kinds: dict[str, list[LayerKV]] = {}
    for lk in layers:
        if isinstance(lk, CrossAttention) or (lk.bytes_per_token(tp, kv_bytes) == 0 and not isinstance(lk, MambaState)):
            continue
        kind = lk.kind
        if kind == "sliding" and not profile.sliding_spec:
            kind = "full"
        if kind == "chunked" and not profile.chunked_local_spec:
            kind = "full"
        if isinstance(lk, MambaState):
            kind = "mamba"
        kinds.setdefault(kind, []).append(lk)
    if not kinds:
        return KVLayout([], 0, bs, 0, 0, "attention-free model")
    mamba_mode = mamba_cache_mode(spec, settings, profile, bool(attn)) if states else "none"
    if states and attn:
        # Attention block size raised so one attention page ≥ one Mamba page (vLLM's
        # HybridAttentionMambaModelConfig: vllm/model_executor/models/config.py to 0.19,
        # vllm/platforms/interface.py from 0.20): a multiple of the kernel alignment A = 16, or 64 for
        # MLA backends (128 with CUTLASS_MLA, which kvdoctor cannot see; the first MLA hybrid,
        # kimi_linear.py, came after 0.11.0 together with that rule) — vllm#28228's
        # Kimi-Linear on two RTX 3090s: 960-token blocks give its 75,840 tokens exactly, 944 would give
        # 76,464. From 0.20 A is also at least the cache's own block size (the MLA backend's 64/128, or
        # --block-size). A block size already set (--block-size, the MLA backend's) stays when it is large
        # enough ("override ... if the user has set it too small").
        mla = any(isinstance(lk, MLA) for lk in attn)
        a = 64 if mla else (settings.hybrid_block_align or 16)
        current = settings.block_size
        if current and profile.version >= (0, 20, 0):
            a = max(a, current)
        attn_ppt = max(lk.bytes_per_token(tp, kv_bytes) for lk in attn)
        mamba_page = max(lk.state_bytes(tp, model_dtype_bytes) for lk in states)
        need = a * ceil_div(mamba_page, a * attn_ppt)
        if mamba_mode == "all":
            # the "all" mode aligns the block to the Mamba kernel's chunk (ModelConfig.get_mamba_chunk_size:
            # mamba_chunk_size, else chunk_size, else 2048): lcm(chunk, A) × cdiv(tokens per state, lcm)
            chunk = int(spec.text.get("mamba_chunk_size") or spec.text.get("chunk_size") or 2048)
            c = math.lcm(chunk, a)
            need = c * ceil_div(ceil_div(mamba_page, attn_ppt), c)
        if current is None or current < need:
            bs = need
            if mla:
                assumptions.append(f"MLA hybrid: attention blocks aligned to {a} tokens (vLLM's rule for MLA "
                                   "backends; 128 with CUTLASS_MLA)")
            assumptions.append(f"hybrid Mamba model: attention block size raised to {bs} tokens (vLLM aligns pages)")
    # Page per token of each kind (one layer). Unify pages: larger per-token pages keep bs,
    # smaller ones get a proportionally larger block size (0.33 unify_kv_cache_spec_page_size).
    ppt = {k: max(lk.bytes_per_token(tp, kv_bytes) for lk in v) for k, v in kinds.items() if k != "mamba"}
    max_ppt = max(ppt.values()) if ppt else 0
    if len(kinds) == 1:
        # One spec type (identical specs, or UniformTypeKVCacheSpecs 0.11+): one group, one
        # block = one page in every layer.
        k, members = next(iter(kinds.items()))
        page_sum = sum(lk.bytes_per_token(tp, kv_bytes) * bs for lk in members) or \
            sum(lk.state_bytes(tp, model_dtype_bytes) for lk in members)
        g = KVGroup(k, len(members), page_sum // max(1, len(members)), bs, members[0])
        return KVLayout([g], page_sum, bs, per_token, state_req, layers=layers,
                        state_page=page_sum // max(1, len(members)) if k == "mamba" else 0, mamba_mode=mamba_mode)
    groups: list[KVGroup] = []
    group_size = min(len(v) for v in kinds.values())
    if profile.version >= (0, 18, 0) and max(len(v) for v in kinds.values()) < 1.5 * group_size:
        # vllm/v1/core/kv_cache_utils.py 0.18+: nearly equal layer counts (gpt-oss-20b + EAGLE: 12
        # sliding + 13 full) share the larger count as group size, padding one layer, not 12
        group_size = max(len(v) for v in kinds.values())
    page = max_ppt * bs if max_ppt else max(lk.state_bytes(tp, model_dtype_bytes) for lk in states)
    for k, members in kinds.items():
        if k == "mamba":
            gbs = bs
        else:
            ratio = max_ppt / ppt[k]
            gbs = bs * int(ratio) if ratio.is_integer() else bs
        for _ in range(ceil_div(len(members), group_size)):
            groups.append(KVGroup(k, group_size, page, gbs, members[0]))
    padded = sum(ceil_div(len(v), group_size) * group_size - len(v) for v in kinds.values())
    note = f"{len(groups)} KV groups of {group_size} layers"
    if padded:
        note += f" ({padded} padding layers)"
    return KVLayout(groups, group_size * page, bs, per_token, state_req, note, layers=layers,
                    state_page=page if states else 0, mamba_mode=mamba_mode)


def _deepseek_v4_layout(spec: ModelSpec, profile: Profile, settings: EngineSettings, layers: list[LayerKV],
                        assumptions: list[str]) -> KVLayout:
    """DeepSeek-V4's pool (kv_deepseek_v4.py) as a KVLayout: the latent group keeps the whole context,
    the window and compressor-state groups their window + the tokens in flight."""
    own = [lk for lk in layers if isinstance(lk, DeepseekV4Layer)]
    draft = kv_deepseek_v4.draft_layers(spec, settings.speculative_method) \
        if settings.pp_stage is None or settings.pp_stage == settings.pipeline_parallel_size - 1 else 0
    if settings.speculative_method and not draft \
            and (settings.speculative_method or "").lower() not in ("ngram", "ngram_gpu", "suffix"):
        assumptions.append(f"speculative method {settings.speculative_method!r} with DeepSeek-V4: its draft layers' "
                           "caches are not counted")
    p = kv_deepseek_v4.plan(own, profile.version, settings.block_size, settings.kv_cache_dtype or "auto", draft,
                            assumptions)
    groups = [KVGroup("mla" if g.kind == "mla" else "sliding", len(g.pages), g.bytes // max(1, len(g.pages)),
                      g.block, MLA() if g.kind == "mla" else kv_deepseek_v4.window_spec(g)) for g in p.groups]
    note = (f"DeepSeek-V4: {len(groups)} KV groups (compressed latent + indexer caches, sliding-window caches, "
            f"compressor states), {p.bytes_per_block:,} B per block; every rank holds the whole cache")
    if draft:
        note += f"; {draft} draft layer(s) with a sliding-window cache each"
    return KVLayout(groups, p.bytes_per_block, p.groups[0].block, p.latent_bytes_per_token, 0, note,
                    layers=layers, dsv4=p)


# ------------------------------------------------------------------------------------------
# Activation, non-torch, graphs (estimates)
# ------------------------------------------------------------------------------------------


def activation_peak(spec: ModelSpec, profile: Profile, s: EngineSettings, model_dtype_bytes: int,
                    assumptions: list[str], samples: bool = True, max_len: int | None = None) -> int:
    """Torch peak increase of the profile run (docs §1.10, §6): max(forward(Tb), sampler(S')), in V1 with
    the dummy encoder outputs and the dummy media's pixels held beside them, or the vision encoder's own
    peak (with those pixels) if larger.

    `samples` False: a rank that runs no sampler (a V0 worker other than the driver)."""
    tp = s.tensor_parallel_size
    tb, seqs = s.max_num_batched_tokens or 2048, s.max_num_seqs or 256
    encoder, mm_tokens, outputs, pixels, pixel_copy = encoder_profile(spec, profile, s, model_dtype_bytes,
                                                                      assumptions, max_len)
    encoder += pixels + pixel_copy
    tokens = tb
    if profile.engine == "v0" and mm_tokens and v0_text_only_dummy(profile.version, spec.model_type, mm_tokens, tb):
        assumptions.append(f"V0 profile run: one dummy prompt's {mm_tokens:,} media tokens exceed "
                           f"max_num_batched_tokens {tb:,}, so vLLM {profile.release} profiles a text-only prompt of "
                           f"{tb:,} tokens (\"too short to hold the multi-modal embeddings\" in its log): the vision "
                           "encoder's peak is not set aside, and the first large image must find room at run time")
        encoder = mm_tokens = 0
        seqs = 1
    if profile.engine == "v0" and mm_tokens:
        # V0 profiles multimodal models with fewer, media-carrying dummy sequences:
        # max_num_seqs → min(S, Tb // max_mm_tokens), at least 1 (vllm/worker/model_runner.py), and a
        # dummy prompt is never cut to Tb // S: when the media tokens do not fit, V0 only warns
        # ("The sequence length used for profiling … is too short to hold the multi-modal embeddings")
        # and runs the whole prompt (vllm/multimodal/profiling.py get_decoder_dummy_data).
        seqs = max(1, min(seqs, tb // mm_tokens))
        tokens = seqs * max(tb // seqs, mm_tokens)
        if tokens > tb:
            assumptions.append(f"V0 profile run: {seqs} dummy prompt(s) of {mm_tokens:,} media tokens, "
                               f"{tokens:,} tokens through the language model (more than "
                               f"max_num_batched_tokens {tb:,})")
    marlin = marlin_input_copy_bytes(spec, profile, s, tokens, model_dtype_bytes)
    unchunked = marlin_moe_unchunked(spec, profile, s)
    if unchunked and tokens > FUSED_MOE_CHUNK_TOKENS:
        assumptions.append(f"the experts run on Marlin (fused_marlin_moe), whose workspaces hold all {tokens:,} "
                           f"tokens at once in this release, not a chunk of {FUSED_MOE_CHUNK_TOKENS:,}")
    forward = _forward_bytes(spec, s, tokens, model_dtype_bytes, v0=profile.engine == "v0", unchunked_moe=unchunked) \
        + bnb_dequant_bytes(spec, profile, s, model_dtype_bytes) + marlin
    if marlin:
        assumptions.append(f"Marlin (the AWQ/GPTQ kernel) copies the MLP down projection's input in the profile "
                           f"run before vLLM 0.9: {marlin / GiB:.2f} GiB in the forward's peak")
    if profile.engine == "v0" and mm_tokens and not spec.model_type.startswith("mllama"):
        # the dummy media's pixels stay on the GPU through the tower and then the LLM, and the tower
        # encodes a model-dtype copy of them (v0_dummy_pixel_bytes); Llama-3.2-Vision's V0 path is
        # its own fit (_mllama_v0_encoder_peak)
        kept, copy = v0_dummy_pixel_bytes(spec, profile, model_dtype_bytes, seqs,
                                          *_media_per_prompt(s, _dummy_item(spec).video))
        forward += kept
        encoder += kept + copy
        twice = ", twice: the batch and the copy the model's input check concatenates" \
            if v0_pixel_copies(spec, profile) > 1 else ""
        assumptions.append(f"V0 keeps the dummy media's pixels on the GPU through the whole profile run{twice} "
                           f"({kept / GiB:.2f} GiB" + (", float32 as the image processor gives them, and the "
                                                        f"tower's {copy / GiB:.2f} GiB model-dtype copy" if copy else "")
                           + ")")
    rows = min(seqs, tb)
    vocab = spec.vocab_size
    if profile.engine == "v0":
        per_elem = SAMPLER_BYTES_V0
    elif profile.version >= V1_SAMPLER_PROFILED_FROM:
        # the release's sampler for these rows, or the one the log (or VLLM_USE_FLASHINFER_SAMPLER)
        # names: FlashInfer's kernel samples without sorting the vocabulary (≈ 10 B), the PyTorch-native
        # path sorts it (≈ 38 B) or, from 0.17, masks it with a Triton kernel (14 B; ≈ 16 B measured
        # from 0.21, where it runs twice); see vllm.py
        per_elem = sampler_bytes(profile.version, s.flashinfer_sampler, rows)
    else:
        per_elem = 0        # V1 0.7.x: the logits alone (below)
    sampler = rows * vocab * per_elem
    if s.pp_stage is not None and s.pp_stage != s.pipeline_parallel_size - 1 or not samples:
        sampler = 0     # logits and the sampler run on the last pipeline stage only
    if sampler and profile.engine == "v1" and s.speculative_method and profile.version >= V1_REJECTION_BONUS_FROM:
        sampler += rows * vocab * 3 * model_dtype_bytes     # the rejection sampler's dummy run (above)
    if sampler and _v2_profiled(spec, profile, s):
        # Model Runner V2 (by default from 0.22, vllm.py default_model_runner_v2) samples its dummy
        # batch with its own sampler: the code's bytes (vllm.v2_sampler_bytes), not V1's fitted ones;
        # its first compile adds to the forward (V2_FIRST_COMPILE)
        sampler = int(rows * vocab * v2_sampler_bytes(profile.version, tp))
    if v2_first_compile(spec, profile, s):
        forward += V2_FIRST_COMPILE
        assumptions.append(f"Model Runner V2: the profile peak includes {V2_FIRST_COMPILE / GiB:.1f} GiB for "
                           "torch.compile's first compile (a cold compile cache, as on a first start; with a "
                           "warm cache vLLM measures up to that much less and the KV cache gets it)")
    if profile.logits_all_tokens:
        sampler = max(sampler, tb * vocab * 2 * 2)  # bf16 logits + fp32 upcast for all Tb tokens
    elif profile.engine == "v1" and profile.version < V1_SAMPLER_PROFILED_FROM:
        sampler = rows * vocab * 4
    if s.runner == "pooling":
        sampler = 0     # a pooling model ends its profile run in the pooler: no logits, no sampler
    if profile.engine == "v1" and spec.deepseek_v4_layers:
        return deepseek_v4_profile_peak(spec, profile, s, tb, max_len or s.max_model_len or 0, sampler)
    # V1 holds the dummy encoder outputs and the dummy media's pixels while the language model and the
    # sampler run (gpu_model_runner.py profile_run: encoder_cache["tmp"] and batched_dummy_mm_inputs);
    # Model Runner V2 moves the pixels to the GPU inside the encoder's call (encoder_runner.py
    # execute_mm_encoder), so there they count only in the encoder's peak
    if s.model_runner_v2:
        pixels = 0
    peak = max(max(forward, sampler) + outputs + pixels, encoder)
    if profile.engine == "v0" and spec.state_layers:
        # V0 allocates the Mamba state for max_num_seqs inside the first forward (docs §1.10).
        peak += seqs * sum(lk.state_bytes(tp, model_dtype_bytes) for lk in spec.state_layers)
    return peak


# The smallest profile-peak difference between V1's two samplers worth a note: under it the
# forward, not the sampler, sets the peak and which sampler ran hardly moves the KV cache.
SAMPLER_NOTE_MIN = 256 * MiB


def _unnamed_sampler_note(spec: ModelSpec, profile: Profile, s: EngineSettings, model_dtype_bytes: int,
                          act: int, max_len: int | None, assumptions: list[str]) -> None:
    """0.9.0–0.11.0 sample with FlashInfer wherever it is importable (vllm.installed_flashinfer_sampler):
    a pip install without it runs the PyTorch-native sampler, which this estimate counts, and one with
    it measures a smaller peak. A run that does not say which gets the difference named: a vLLM
    0.10.1.1 Qwen2-7B on A100s (dennislee22/vLLM-benchmarking) printed 11.03 GiB of KV where its log
    says "FlashInfer is not available" (the native peak: 0.7% from this estimate) and about 1 GiB
    more than the native peak leaves on cards whose log says "Using FlashInfer for top-p & top-k
    sampling"."""
    if s.flashinfer_sampler is not None or profile.engine != "v1" \
            or not FLASHINFER_SAMPLER_ANY_FROM <= profile.version < FLASHINFER_SAMPLER_OPT_IN_FROM:
        return
    rows = min(s.max_num_seqs or 256, s.max_num_batched_tokens or 2048)
    if rows * spec.vocab_size * (native_sampler_bytes(profile.version, rows) - SAMPLER_BYTES_FLASHINFER) \
            < SAMPLER_NOTE_MIN:
        return      # the samplers cannot differ by that much: no second profile estimate
    alt = activation_peak(spec, profile, dataclasses.replace(s, flashinfer_sampler=True), model_dtype_bytes, [],
                          max_len=max_len)
    if act - alt >= SAMPLER_NOTE_MIN:
        assumptions.append(
            f"the profile peak counts vLLM's PyTorch-native top-k/top-p sampler (a pip install without FlashInfer); "
            f"where FlashInfer is installed (the vllm/vllm-openai image has it; `pip install flashinfer-python` adds it) "
            f"vLLM {profile.release} samples with it, measures about {(act - alt) / GiB:.2f} GiB less and gives that "
            "to the KV cache — the log's \"Using FlashInfer for top-p & top-k sampling\" or \"FlashInfer is not "
            "available\" line says which ran")


def _v2_profiled(spec: ModelSpec, profile: Profile, s: EngineSettings) -> bool:
    """Model Runner V2's own profile run (its sampler, its first compile); DeepSeek-V4 keeps the peak its
    own model was checked with (deepseek_v4_profile_peak)."""
    return profile.engine == "v1" and bool(s.model_runner_v2) and not spec.deepseek_v4_layers


def v2_first_compile(spec: ModelSpec, profile: Profile, s: EngineSettings) -> bool:
    """Does the profile peak hold Model Runner V2's first-compile allowance (V2_FIRST_COMPILE)?"""
    return _v2_profiled(spec, profile, s) and not s.enforce_eager and not s.compile_cache_warm


def deepseek_v4_load_buffers(spec: ModelSpec, s: EngineSettings, profile: Profile) -> int:
    """Buffers DeepSeek-V4 builds with the model, so inside vLLM's "Model loading took" figure
    (models/deepseek_v4/nvidia/model.py): the MTP hidden-state buffer [Tb, hc_mult × hidden] bf16 — on the
    last pipeline stage, with or without speculative decoding — and the indexer's top-k indices
    [Tb, index_topk] int32; in 0.27–0.28 also the eager scratch pool (models/deepseek_v4/eager_scratch.py:
    Tb × (padded heads × a latent row in bf16 + 4.5 KiB)). Its fp32 RoPE caches are in
    params.rope_cache_bytes."""
    t, tb = spec.text or {}, s.max_num_batched_tokens or 2048
    last = s.pp_stage is None or s.pp_stage == s.pipeline_parallel_size - 1
    hc = int(t.get("hc_mult") or 1)
    out = (tb * hc * spec.hidden_size * 2 if last else 0) + tb * int(t.get("index_topk") or 0) * 4
    if (0, 27, 0) <= profile.version < (0, 29, 0):
        _heads, padded, row, _flashmla = _deepseek_v4_attention_kernel(spec, s)
        out += tb * (padded * row + 4608)
    return out


# --enable-lora's defaults (vllm/config LoRAConfig): one adapter slot of rank 16
LORA_DEFAULT_MAX_LORAS = 1
LORA_DEFAULT_RANK = 16


def lora_buffer_bytes(spec: ModelSpec, s: EngineSettings, dtype_b: int, assumptions: list[str]) -> int:
    """The adapter slots --enable-lora allocates while the model loads (so inside "Model loading took"):
    vllm/lora/layers.py create_lora_weights stacks, for each adapted linear and each of its slices,
    A = max_loras × rank × input and B = max_loras × output × rank in the model dtype — the column-
    parallel q/k/v and gate/up split their outputs over TP, the row-parallel o and down their inputs.
    Counted for dense standard-attention models; the embedding / lm_head slots (vocabulary × rank) and
    MoE experts' or other layers' adapters are not (said)."""
    if not s.enable_lora:
        return 0
    loras = s.max_loras or LORA_DEFAULT_MAX_LORAS
    r = s.max_lora_rank or LORA_DEFAULT_RANK
    if spec.moe is not None or spec.uses_mla or spec.is_hybrid_state or not spec.intermediate_size:
        assumptions.append(f"--enable-lora: vLLM also allocates adapter slots (rank {r}) at load for this "
                           "architecture's layers; kvdoctor does not size them here, so the weights can be larger")
        return 0
    tp = max(1, s.tensor_parallel_size)
    h, inter = spec.hidden_size, spec.intermediate_size
    q_out, kv_out = spec.num_attention_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    a = 3 * h + q_out // tp + 2 * h + inter // tp                 # qkv, o, gate_up, down: rank × input each
    b = (q_out + 2 * kv_out) // tp + h + 2 * inter // tp + h      # output × rank each
    layers = max(1, spec.num_layers // max(1, s.pipeline_parallel_size))
    total = loras * r * (a + b) * layers * dtype_b
    assumptions.append(f"--enable-lora: {loras} adapter slot(s) of rank {r} on q/k/v/o/gate/up/down take "
                       f"{total / GiB:.2f} GiB at load (vllm/lora/layers.py), counted with the weights; the "
                       "embedding and lm_head slots are not")
    return total


def deepstack_buffer_bytes(spec: ModelSpec, s: EngineSettings, profile: Profile, dtype_b: int) -> int:
    """Qwen3-VL's deepstack buffers (qwen3_vl.py, 0.11.0–0.33 alike): one [max_num_batched_tokens, text
    hidden] tensor per deepstack level, made with the model in its dtype and so inside vLLM's "Model
    loading took" figure; none when the vision tower is not loaded."""
    levels = len((spec.vision or {}).get("deepstack_visual_indexes") or ())
    if not levels or profile.engine != "v1" or vision_tower_skipped(spec, s, profile):
        return 0
    return levels * (s.max_num_batched_tokens or 2048) * spec.hidden_size * dtype_b


def _deepseek_v4_attention_kernel(spec: ModelSpec, s: EngineSettings) -> tuple[int, int, int, bool]:
    """(query heads per rank, as the attention kernel pads them, bytes of one latent row in bf16,
    FlashMLA or not): FlashMLA (SM90/SM100) pads the heads to 64 (nvidia/flashmla.py); on SM120
    FlashInfer's sparse kernel takes them as they are."""
    cc = cc_number(s.compute_capability) or 9.0
    flashmla = 9.0 <= cc < 11.0
    heads = spec.num_attention_heads // max(1, s.tensor_parallel_size)
    return heads, max(heads, 64) if flashmla else heads, spec.deepseek_v4_layers[0].head_dim * 2, flashmla


def deepseek_v4_profile_peak(spec: ModelSpec, profile: Profile, s: EngineSettings, tb: int, max_len: int,
                             sampler: int) -> int:
    """DeepSeek-V4's profile-run peak: a shared, grow-only workspace W (v1/worker/workspace.py) sized by
    its largest user, plus the largest transient moment — one layer's attention, the lightning indexer's
    (with its 512 MiB dummy logits, VLLM_SPARSE_INDEXER_MAX_LOGITS_MB) or the sampler — plus the SM120
    FlashInfer backend's fixed 128 MiB workspace. From the code of vLLM 0.22–0.26 (models/deepseek_v4/,
    model_executor/layers/sparse_attn_indexer.py, fused_moe/experts/marlin_moe.py and deep_gemm_moe.py,
    nvidia/flashmla.py, nvidia/flashinfer_sparse.py). Checked on a 0.25 RTX PRO 6000 run (10.33 GiB of KV
    against the 10.29 printed); a second one with 1,024 sequences comes out 2 GiB short, where the sampler
    took V1's fitted figure of then (29 B per row × vocab, now 16) against the code's ≈14 B; two GH200 runs (a 0.22 LLM() run, a 0.26 source build) leave 0.5–2 GiB vLLM spent beyond it."""
    t, h = spec.text or {}, spec.hidden_size
    tp = s.tensor_parallel_size
    heads, padded, head_b, flashmla = _deepseek_v4_attention_kernel(spec, s)
    hd = head_b // 2
    ihd = int(t.get("index_head_dim") or 128)
    qr = int(t.get("q_lora_rank") or 1024)
    hc = int(t.get("hc_mult") or 1)
    cc = cc_number(s.compute_capability) or 9.0
    # W: the indexer's K gather (0.32+: 264 × f × L, f = 5 up to 256K, else 2), FlashMLA's prefill gather
    # (4 × (L/4 + window + Tb) latent rows in bf16), the MoE experts' workspace for top_k × Tb rows
    # (Marlin on Hopper: (max(I, h) + max(2I, h)) bf16; DeepGEMM FP4 on Blackwell: 2 × h bf16 per row plus
    # alignment padding of up to 127 rows per local expert)
    per_token = 264 * (5 if max_len <= 262144 else 2) if profile.version >= (0, 32, 0) else 1320
    ws = [per_token * max_len + 2**20]
    if flashmla:
        ws.append(4 * (ceil_div(max_len, 4) + 128 + tb) * head_b)
    if spec.moe:
        k, inter = spec.moe.experts_per_tok, spec.moe.expert_intermediate // (1 if s.enable_expert_parallel else tp)
        if cc < 10.0:
            ws.append(k * tb * (max(inter, h) + max(2 * inter, h)) * 2)
        else:
            local = spec.moe.num_experts // (tp * s.data_parallel_size if s.enable_expert_parallel else 1)
            ws.append(2 * (k * tb + min(k * tb, local) * 127) * h * 2)
    # one layer's live set per token: the hc_mult residual streams, the layer's input and previous output,
    # q_lora + latent rows (before and after their norms), the compressor's and the indexer's fp32 scores
    fixed = hc * h * 2 + 2 * h * 2 + 2 * (qr + hd) * 2 + 2 * 2 * hd * 4 + 4 * ihd * 4
    attn = tb * (fixed + padded * head_b + heads * head_b + (padded * head_b if padded > heads else 0))
    indexer = tb * (fixed + padded * head_b + 8448) + 512 * 2**20
    extra = 0 if flashmla else 128 * 2**20
    return max(ws) + max(attn, indexer, sampler) + extra


def v0_capacity_divisor(profile: Profile, s: EngineSettings) -> int:
    """V0 0.8+ prints (and checks) a token capacity of block_size × (blocks // pipeline stages)
    (vllm/worker/worker.py raise_if_cache_size_invalid); older V0 and V1 do not divide."""
    return s.pipeline_parallel_size if profile.engine == "v0" and profile.version >= (0, 8, 0) else 1


def v0_driver_extra_bytes(est: Estimate) -> int:
    """What V0's driver worker (TP rank 0) adds to its profile peak over the other TP ranks.

    V0 gathers the logits to rank 0 only (LogitsProcessor._gather_logits, tensor_model_parallel_gather)
    and only the driver samples (vllm/worker/model_runner.py: non-driver workers return before
    sampling), so the driver profiles the sampler too and has the fewest KV blocks; the executor
    gives every worker the minimum (determine_num_available_blocks). 0 where ranks are alike."""
    s, profile = est.settings, est.profile
    if profile.engine != "v0" or s.tensor_parallel_size <= 1:
        return 0
    db = dtype_bytes(resolve_dtype(est.spec, s, profile, est.compute_capability, []), 2)
    return (activation_peak(est.spec, profile, s, db, [])
            - activation_peak(est.spec, profile, s, db, [], samples=False))


# vLLM's fused MoE kernel works through at most this many tokens at a time and sizes its
# workspaces for one chunk (VLLM_FUSED_MOE_CHUNK_SIZE, default 32768; vllm/envs.py,
# vllm/model_executor/layers/fused_moe/fused_moe.py fused_experts_impl).
FUSED_MOE_CHUNK_TOKENS = 32768
# AWQ / GPTQ / W4A16 experts on Marlin (compute capability ≥ 8.0): their MoE methods called
# fused_marlin_moe directly (quantization/awq_marlin.py AWQMoEMethod.apply, 0.11-era source), which sizes
# intermediate_cache13 / cache2 for all M tokens with no chunk; later releases run them as the
# modular kernel's MarlinExperts (supports_chunking: chunked like the rest) — from 0.12 modelled so.
# vllm#28228 (Kimi-Linear AWQ, 2 × 3090, 0.11, 64,000 batched tokens): 2.30 GiB of KV where the
# chunked workspace left 5.53.
MARLIN_MOE_CHUNKED_FROM = (0, 12, 0)


def marlin_moe_unchunked(spec: ModelSpec, profile: Profile, s: EngineSettings) -> bool:
    """Do the experts' Marlin workspaces hold every routed token at once (MARLIN_MOE_CHUNKED_FROM)?"""
    return bool(spec.moe and spec.moe.moe_layers) and profile.version < MARLIN_MOE_CHUNKED_FROM \
        and (s.compute_capability or 0) >= 8.0 and params.weight_format_kind(spec, s.quantization) == "int"


def _forward_bytes(spec: ModelSpec, s: EngineSettings, tokens: int, dtype_b: int, v0: bool = False,
                   unchunked_moe: bool = False) -> int:
    """Peak of one decoder layer's forward over `tokens` dummy tokens (docs §6).

    Dense: MLP gate/up + activation (3·I/tp) + qkv + residual/norm buffers (3·h) per token, × the
    V1 factor; V0 (eager): the MLP's live set 3·I/tp + 3·h, × V0_FORWARD_FACTOR (MoE layers alike).
    MoE: routed tokens fan out top_k times through 2·I_expert (+ I_expert act) per token; fused_moe
    keeps [tokens × top_k × 2·I/tp], [… × I/tp] and [… × hidden] caches, sized for one chunk of
    FUSED_MOE_CHUNK_TOKENS. With data parallelism every MoE layer first gathers the hidden
    states of all DP ranks (naive / allgather-reducescatter all2all: `naive_multicast`, vllm
    device_communicators/all2all.py), and the profile run gives every DP rank the same Tb, so the
    experts see dp × Tb tokens and the gathered input and combined output buffers hold dp × Tb × h.
    """
    tp = s.tensor_parallel_size
    h, inter = spec.hidden_size, params.max_dense_intermediate(spec)   # Gemma 4 E2B's double-wide layers
    qkv = (spec.num_attention_heads + 2 * spec.num_kv_heads) * spec.head_dim // tp
    # V0's eager run frees the attention buffers before the MLP (or experts) run: no qkv term
    factor, attn = (V0_FORWARD_FACTOR, 0) if v0 else (FORWARD_FACTOR, qkv)
    dense = factor * tokens * (3 * inter // tp + attn + 3 * h) * dtype_b
    if not (spec.moe and spec.moe.moe_layers):
        return int(dense)
    m = spec.moe
    dp = max(1, s.data_parallel_size or 1)
    routed = tokens * dp
    # gated experts keep 2·I + I per routed token, plain ones (relu²) I + I; LatentMoE (nemotron_h.py)
    # runs them in moe_latent_size, so their output cache is that wide, not hidden
    mats = 3 if gated_mlp(spec) else 2
    out_w = int(spec.text.get("moe_latent_size") or 0) or h
    per_token = m.experts_per_tok * (mats * m.expert_intermediate // tp + out_w) + mats * m.shared_intermediate // tp
    chunk = routed if unchunked_moe else min(routed, FUSED_MOE_CHUNK_TOKENS)
    moe = factor * (chunk * per_token + tokens * (attn + 3 * h)) * dtype_b
    if dp > 1:
        moe += 2 * routed * h * dtype_b
    return int(max(dense if m.dense_layers else 0, moe))


def bnb_dequant_bytes(spec: ModelSpec, profile: Profile, s: EngineSettings, dtype_b: int) -> int:
    """What bitsandbytes 4-bit weights add to the forward's peak: their dequantized copies.

    A prefill matmul (more than one row) dequantizes its weight before multiplying:
    layers/quantization/bitsandbytes.py `_apply_bnb_4bit` calls bitsandbytes' matmul_4bit one
    shard at a time (gate, up, q, …), which builds the shard in 16 bits (dequantize_4bit) beside
    the layer's output — the largest shard is the MLP's I × h (or the query's heads·d × h), split
    by TP. From 0.10.1 a MoE layer's experts (BitsAndBytesMoEMethod `_apply_4bit_dequnt`)
    dequantize w13 and w2 of every local expert at once before fused_experts: E × 3 · I_expert × h
    over TP (before 0.10.1 get_quant_method gave MoE layers no bitsandbytes method: nothing of theirs is
    dequantized). Code, not a fit; bitsandbytes left vLLM in 0.28 (QUANT_METHOD_REMOVED)."""
    if profile.version >= QUANT_METHOD_REMOVED["bitsandbytes"] or \
            params.weight_format_kind(spec, s.quantization) != "bnb4":
        return 0
    tp, h = max(1, s.tensor_parallel_size), spec.hidden_size
    m = spec.moe
    moe = bool(m and m.moe_layers)
    mlp = spec.intermediate_size if not moe or m.dense_layers else 0
    shard = max(mlp, spec.num_attention_heads * spec.head_dim) // tp * h * dtype_b
    if not moe or profile.version < BNB_MOE_FROM:
        return shard
    return max(shard, m.num_experts * (3 * m.expert_intermediate // tp) * h * dtype_b)


# Marlin's GEMM (csrc/quantization/gptq_marlin/gptq_marlin.cu gptq_marlin_gemm) allocates `a_tmp`, an
# M × K copy of its input for act-order reordering, on every call up to 0.8.x — its Python binding
# (_custom_ops.py) still takes g_idx and perm as plain tensors there; from 0.9.0 they are Optional and the
# kernel allocates it only when the checkpoint reorders activations (GPTQ desc_act).
MARLIN_INPUT_COPY_ALWAYS_UNTIL = (0, 9, 0)


def marlin_input_copy_bytes(spec: ModelSpec, profile: Profile, s: EngineSettings, tokens: int, dtype_b: int) -> int:
    """Marlin's copy of the down projection's input (K = I/tp) beside the MLP's live set.

    Which kernel runs a 4/8-bit integer checkpoint (vllm/model_executor/layers/quantization): AWQ goes
    to awq_marlin on compute capability ≥ 8.0 (an explicit `--quantization awq` forces the plain kernel,
    which dequantizes a whole weight for a prefill instead: about as much, and not told apart here, as
    the setting names the format as well); GPTQ and compressed-tensors W4A16/W8A16 go to the
    mixed-precision kernels, of which Machete comes first on Hopper (kernels/mixed_precision in the
    0.7.3 wheel: MacheteLinearKernel, CUTLASS, no such copy) and Marlin everywhere else. At the down projection the eager MLP already holds gate/up (2I),
    the activation (I) and 3h (_forward_bytes); Marlin adds I more (its fp32 reduce buffer, at most
    1,024 rows × h, is left out). Two Qwen2.5-72B int4 V0 logs print the difference: vllm#11230
    (GPTQ, A40, 0.6.4, TP 1, 8,192 tokens) peak_torch 40.87 − weights 38.53 = 2.34 GiB, where
    3I + 3h gives 1.73 and 4I + 3h 2.18; a weisser-zwerg.dev log (AWQ, 2 × A40, 0.7.2, TP 2, 32,768
    tokens) 5.66 GiB, where 3I + 3h gives 4.21 and 4I + 3h 5.11. MoE experts run their own kernel
    (fused Marlin MoE): nothing added for a model whose MLPs are all experts."""
    fmt = params.weight_format(spec, s.quantization)
    if fmt.kind != "int":
        return 0
    cc = s.compute_capability
    if cc is None or cc < 8.0 or (spec.moe and spec.moe.moe_layers and not spec.moe.dense_layers):
        return 0
    awq = fmt.name.startswith("awq")
    if not awq and 9.0 <= cc < 10.0:
        return 0        # Machete
    if profile.version >= MARLIN_INPUT_COPY_ALWAYS_UNTIL and (awq or not (spec.quantization or {}).get("desc_act")):
        return 0
    return tokens * (spec.intermediate_size // max(1, s.tensor_parallel_size)) * dtype_b


# Image processors' default largest image for dynamic-resolution ViTs (Qwen2-VL / Qwen2.5-VL /
# Qwen3-VL `max_pixels` = 16384 merged tokens): the profile run uses the largest image allowed.
MAX_DYNAMIC_IMAGE_TOKENS = 16384
# Config keys that fix the LLM tokens one image becomes (Gemma 3 / Gemma 4 / others).
_TOKENS_PER_IMAGE_KEYS = ("mm_tokens_per_image", "vision_soft_tokens_per_image", "image_seq_length")


def qwen2_vl_video_tokens(frame_tokens: int, budget: int, *, videos: int = 1, start_frames: int = 1) -> int:
    """LLM tokens of the longest video Qwen2-VL / Qwen2.5-VL build for a token budget
    (vllm/model_executor/models/qwen2_vl.py get_num_frames_with_most_features): as many frames of
    the largest size as the budget holds (_get_max_video_frames, counting from `start_frames`),
    shared by `videos`, at most _MAX_FRAMES_PER_VIDEO = 14 and at least 1 per video, two frames per
    temporal patch. A 0.23 log (max_model_len 128,000): "Encoder cache will be initialized with a
    budget of 114688 tokens, and profiled with 1 video items" = 7 × 16,384."""
    frames = start_frames
    while ceil_div(frames + 1, 2) * frame_tokens <= budget:
        frames += 1
    per_video = max(1, min(frames // max(1, videos), QWEN2_VL_MAX_FRAMES))
    return ceil_div(per_video, 2) * frame_tokens


# Releases where V1's profiler changed how it sizes Qwen2-VL's dummy video (the wheels):
# multimodal/registry.py get_max_tokens_per_item_by_modality passes the per-prompt limits as the
# item counts up to 0.8.3 (999 when unset, config get_limit_per_prompt) and {modality: 1} from 0.8.4;
# qwen2_vl.py takes the images' tokens out of the frames' budget up to 0.10.1 and counts frames
# from 0 up to 0.10.2, from 1 after; gpu_model_runner.py builds the dummy batch it encodes with
# seq_len = max_num_batched_tokens up to 0.10.2, with max_model_len from 0.11.0.
V1_MM_COUNTS_ONE_FROM = (0, 8, 4)
V1_VIDEO_NO_IMAGE_SHARE_FROM = (0, 10, 2)
V1_FRAMES_FROM_ONE_FROM = (0, 11, 0)
V1_DUMMY_AT_MAX_LEN_FROM = (0, 11, 0)
V1_UNSET_MM_LIMIT = 999


def qwen2_vl_dummy_video(profile: Profile, s: EngineSettings, frame_tokens: int, max_len: int,
                         tb: int) -> tuple[int, int]:
    """(tokens of the largest video item, tokens of the video the profile run encodes) for V1.

    The first decides whether the video is profiled and how many items the encoder budget holds;
    the second is what the ViT runs on. Up to 0.10.2 they differ: a default 128,000-token run on
    0.10.1 sizes the budget for a 98,304-token video but encodes one built for the 2,048-token batch
    — a single 16,384-token frame pair."""
    v = profile.version
    limits = s.limit_mm_per_prompt or {}
    one = v >= V1_MM_COUNTS_ONE_FROM
    images = 1 if one else int(limits.get("image", V1_UNSET_MM_LIMIT))
    videos = 1 if one else int(limits.get("video", V1_UNSET_MM_LIMIT))
    start = 1 if v >= V1_FRAMES_FROM_ONE_FROM else 0
    share = frame_tokens * images if v < V1_VIDEO_NO_IMAGE_SHARE_FROM else 0
    largest = qwen2_vl_video_tokens(frame_tokens, max_len - share, videos=videos, start_frames=start)
    if v >= V1_DUMMY_AT_MAX_LEN_FROM:
        return largest, largest
    # the dummy batch: {video: 1} from 0.8.4 (no images beside it); up to 0.8.3 the whole dummy
    # prompt with the limits' counts
    run = qwen2_vl_video_tokens(frame_tokens, tb - (0 if one else share), videos=videos, start_frames=start)
    return largest, run


QWEN2_VL_MAX_FRAMES = 14
# Architectures whose vLLM processor runs qwen2_vl.py's dummy-video rule (Qwen2.5-VL reuses its processing
# info). Qwen3-VL has its own (qwen3_vl.py): below.
_QWEN2_VL_TYPES = ("qwen2_vl", "qwen2_5_vl")
# Qwen3-VL's largest video (qwen3_vl.py get_max_video_tokens, the 0.11.0–0.33 wheels): however many frames
# the dummy gets, video_smart_resize keeps all of them within the video processor's size.longest_edge
# (25,165,824 pixels in the released video_preprocessor_config.json) — 12,288 tokens, fewer than the
# 16,384-token image, which is therefore the item profiled — except in 0.11.0–0.12.0, where the count is
# multiplied by 12.5 for the "<t seconds>" text and the vision start/end tokens each video token brings
# and the video wins. A 0.11.0 log (Qwen3-VL-30B-A3B, sipeed wiki): "Encoder cache will be initialized with
# a budget of 153600 tokens, and profiled with 1 video items" = 12,288 × 12.5.
_QWEN3_VL_TYPES = ("qwen3_vl", "qwen3_vl_moe")
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
QWEN3_VL_VIDEO_TOKEN_FACTOR = 12.5
QWEN3_VL_TIMESTAMPED_VIDEO = ((0, 11, 0), (0, 13, 0))
# gpu_model_runner.py profile_run 0.11.0–0.12.0: an encoder output shorter than its padded length is copied
# into zeros of that length (`output.new_zeros((encoder_budget, hidden))`), kept through the LLM's dummy
# run — up to 0.11.2 the whole encoder budget max(Tb, item), in 0.12.0 the item's own token count; 0.13.0
# keeps the outputs as they are.
V1_ENCODER_OUTPUT_PADDED = ((0, 11, 0), (0, 13, 0))
V1_ENCODER_OUTPUT_PADDED_TO_BUDGET_UNTIL = (0, 12, 0)


def _in(version: tuple, releases: tuple) -> bool:
    return releases[0] <= version < releases[1]


# The Qwen ViTs' attention (qwen2_vl.py Qwen2VisionAttention; qwen2_5_vl.py Qwen2_5_VisionAttention, which
# Qwen3-VL's blocks reuse) rotates q and k in float32 before 0.12.0: apply_rotary_pos_emb_vision takes
# `t_ = t.float()` and casts the rotated copy back with `type_as`. From 0.12.0 it rotates in the model dtype.
QWEN_VIT_FP32_ROTARY_UNTIL = (0, 12, 0)
# Up to 0.8.5 the rotation is apply_rotary_emb_torch (four float32 temporaries live at once) unless the
# ViT runs on the upstream flash-attn package, which vLLM's own install lacks (vision.py get_vit_attn_backend:
# "Current `vllm-flash-attn` has a bug inside vision module, so we use xformers backend instead"); from
# 0.9.0 CUDA always takes vllm_flash_attn's out-of-place Triton kernel.
QWEN_VIT_TRITON_ROTARY_FROM = (0, 9, 0)
# 0.11.0 rotates q and k as one concatenated copy (`torch.cat([q, k])`) beside the contiguous q, k, v; 0.11.1
# drops the contiguous copies (qwen2_5_vl.py rotates a view of qkv; qwen2_vl.py still concatenates).
QWEN_VIT_CONCAT_ROTARY_FROM = (0, 11, 0)
QWEN_VIT_QKV_VIEWS_FROM = (0, 11, 1)
# Qwen2-VL's split_qkv all-gathers the heads at TP > 1 from 0.7.0 (`all_gather_interleave`; 0.6.x splits
# its local heads); Qwen2.5-VL (0.7.2) and Qwen3-VL (0.11.0) were added with it.
QWEN_VIT_GATHER_FROM = (0, 7, 0)


def qwen_vit_attention_bytes(spec: ModelSpec, version: tuple, hv: int, tp: int, dtype_b: int) -> int | None:
    """Bytes per patch live at the peak of a Qwen ViT block's attention half in the releases that rotate
    in float32 (QWEN_VIT_FP32_ROTARY_UNTIL), read from each release's forward (u = H/tp values):
    the block's input and norm1's output (2·H, replicated), the local qkv (3u), before 0.11.1 the
    contiguous q, k, v copies (3u) — then one of:
    - ≤ 0.8.5, q then k alone through apply_rotary_emb_torch: the float32 copy, x·cos, rotate_half's
      concatenation and its ·sin (4 × 2u in model-dtype units);
    - 0.9.0–0.10.2, q then k through the Triton kernel: the float32 copy and output (2u each) and the cast (u);
    - 0.11+, q and k together (their concatenation, 2u, where it is a copy): float32 copy and output (4u
      each) and the cast (2u);
    or, at TP > 1 where split_qkv all-gathers the heads (Qwen2-VL from 0.7.0; the others until 0.11.1), the
    gathered 3·H beside the local qkv and the copies made from it (from 0.11.1 q, k and v are views of
    it, so it stays through the rotation). None for other towers and releases."""
    model_type = spec.config.get("model_type")
    if version >= QWEN_VIT_FP32_ROTARY_UNTIL or model_type not in _QWEN2_VL_TYPES + _QWEN3_VL_TYPES:
        return None
    u = hv // max(1, tp)
    views = version >= QWEN_VIT_QKV_VIEWS_FROM
    gathers = tp > 1 and version >= QWEN_VIT_GATHER_FROM and (model_type == "qwen2_vl" or not views)
    base = (2 * hv + 3 * u + (0 if views else 3 * u)) * dtype_b
    if gathers and views:
        base += 3 * hv * dtype_b    # q, k, v are views of the gathered heads, which stay
    if version < QWEN_VIT_TRITON_ROTARY_FROM:
        rotary = 4 * u * 4                                  # four float32 tensors of q's size
    elif version < QWEN_VIT_CONCAT_ROTARY_FROM:
        rotary = 2 * u * 4 + u * dtype_b
    else:
        concat = 0 if views and model_type != "qwen2_vl" else 2 * u * dtype_b
        rotary = concat + 2 * (2 * u * 4) + 2 * u * dtype_b
    gather = 3 * hv * dtype_b if gathers and not views else 0      # beside the copies made from it
    return base + max(rotary, gather)


def qwen3_vl_dummy_video(spec: ModelSpec, profile: Profile) -> tuple[int, int] | None:
    """(tokens of Qwen3-VL's largest video as the encoder budget counts them, its vision tokens), or None
    for other models (QWEN3_VL_VIDEO_MAX_PIXELS)."""
    if profile.engine != "v1" or spec.config.get("model_type") not in _QWEN3_VL_TYPES:
        return None
    v = spec.vision or {}
    patch, merge = int(v.get("patch_size") or 16), int(v.get("spatial_merge_size") or 2)
    soft = QWEN3_VL_VIDEO_MAX_PIXELS // (patch * patch * int(v.get("temporal_patch_size") or 2) * merge * merge)
    if _in(profile.version, QWEN3_VL_TIMESTAMPED_VIDEO):
        return int(soft * QWEN3_VL_VIDEO_TOKEN_FACTOR), soft
    return soft, soft


def encoder_output_width(spec: ModelSpec) -> int:
    """Values per token of the embeddings the encoder hands the language model: its hidden size, or for
    Qwen3-VL the merger's output and one per deepstack level beside it (qwen3_vl.py:
    out_hidden_size × (1 + len(deepstack_visual_indexes)))."""
    v = spec.vision or {}
    out = int(v.get("out_hidden_size") or spec.hidden_size)
    return out * (1 + len(v.get("deepstack_visual_indexes") or ()))


class DummyItem(NamedTuple):
    """The largest dummy image vLLM profiles (_dummy_item)."""
    tokens: int         # LLM tokens it becomes
    patches: int        # ViT patches
    video: bool         # the model also takes video (a dynamic-resolution ViT with a video_token_id)
    values: int         # pixel values the processor hands over: patches × patch² × channels (× temporal patch)


def _dummy_item(spec: ModelSpec) -> DummyItem:
    """A fixed-size tower's image (its image_size, or the tokens its config fixes), else a
    dynamic-resolution ViT's largest image (MAX_DYNAMIC_IMAGE_TOKENS), beside which a model with a
    `video_token_id` also gets a video of the same size. Qwen2-VL's processors flatten each patch
    with its temporal_patch_size frames (a still image duplicated)."""
    v = spec.vision or {}
    patch = int(v.get("patch_size") or 14)
    merge = int(v.get("spatial_merge_size") or spec.config.get("spatial_merge_size") or 1)
    pool = int(v.get("pooling_kernel_size") or 1)
    fixed = next((int(spec.config[k]) for k in _TOKENS_PER_IMAGE_KEYS if spec.config.get(k)), 0)
    fixed = fixed or int(v.get("default_output_length") or 0)
    video = False
    if v.get("image_size"):
        patches = (int(v["image_size"]) // patch) ** 2
        tokens = fixed or max(1, patches // (merge * merge))
    elif fixed:
        tokens, patches = fixed, fixed * max(merge * merge, pool * pool)
        # Gemma 4 takes video as frames through the same tower (gemma4_mm.py), sized in encoder_profile
        video = spec.config.get("model_type") == "gemma4" and bool(spec.config.get("video_token_id"))
    else:
        tokens, patches = MAX_DYNAMIC_IMAGE_TOKENS, MAX_DYNAMIC_IMAGE_TOKENS * merge * merge
        video = bool(spec.config.get("video_token_id"))
    channels = int(v.get("num_channels") or v.get("in_channels") or v.get("in_chans") or 3)
    values = patches * patch * patch * channels * int(v.get("temporal_patch_size") or 1)
    return DummyItem(tokens, patches, video, values)


def _media_per_prompt(s: EngineSettings, video: bool) -> tuple[int, int]:
    """(images, videos) of one dummy prompt: --limit-mm-per-prompt, vLLM's default 1 of each."""
    limits = s.limit_mm_per_prompt or {}
    return max(0, int(limits.get("image", 1))), max(0, int(limits.get("video", 1))) if video else 0


class EncoderProfile(NamedTuple):
    """What the profile run's multimodal dummy inputs cost (encoder_profile)."""
    peak: int       # the vision encoder's activation peak
    media: int      # LLM tokens of one dummy prompt's media
    kept: int = 0   # bytes of encoder outputs V1 holds through the LLM's dummy run and the sampler
    pixels: int = 0  # bytes of the dummy media's inputs V1 holds on the GPU through the whole profile run
    pixel_copy: int = 0  # the tower's model-dtype copy of them, beside its peak (float32 inputs, ≤ 0.8.5)


# vllm/model_executor/models/gemma4_mm.py _VIDEO_MAX_FRAMES / _VIDEO_MAX_SOFT_TOKENS
GEMMA4_VIDEO_FRAMES = 32
GEMMA4_VIDEO_SOFT_TOKENS = 70
# get_mm_max_tokens_per_item's video: each frame's soft tokens plus boi, eoi and about 6 timestamp tokens
GEMMA4_VIDEO_ITEM_TOKENS = GEMMA4_VIDEO_FRAMES * (GEMMA4_VIDEO_SOFT_TOKENS + 2 + 6)
# From 0.22 Gemma 4's tower encodes images, and a video's frames, in batches (vllm PR #43169) of
# `_encoder_chunk` items: min(free // 2, total // 10) of GPU memory over GEMMA4_ONE_HOT_COST_FACTOR ×
# patches × position_embedding_size × 8 bytes per item (PR #43296; gemma4_mm.py). Before, one image or
# frame per call.
GEMMA4_ENCODER_CHUNKED_FROM = (0, 22, 0)
GEMMA4_ONE_HOT_COST_FACTOR = 4
# transformers' Gemma4VisionPatchEmbedder._position_embeddings built the position embeddings from
# F.one_hot(positions, position_embedding_size): (batch, patches, 2, P) int64 and its cast to the table's
# dtype, alive together — the tower's peak, which is why vLLM sizes the batch by it. transformers#46176
# (merged 2026-05-28) replaced it with two F.embedding look-ups. Evidence for the window: nine 0.22.0 logs
# of Gemma-4-E4B on an A10G (gemma-challenge-senpai, June 2026: one seq, 512–2,048 batched tokens,
# bf16 and W4A16, with and without a drafter) leave 0.72–0.73 GiB more outside the KV cache than the
# tower's activations, and an 11-frame one-hot is 0.73 GiB more (1.32 GiB); 0.25.1 logs of Gemma-4-26B-A4B
# (L40S, two GB10) and Gemma-4-31B (RTX PRO 6000) fit without it. 0.23–0.24 were not seen: modelled as 0.25.
GEMMA4_ONE_HOT_UNTIL = (0, 23, 0)


def gemma4_encoder_call(spec: ModelSpec, profile: Profile, s: EngineSettings, units: int, unit_patches: int,
                        dtype_b: int) -> tuple[int, int]:
    """(patches one call of Gemma 4's vision tower encodes, the position embeddings' one-hot bytes beside
    them) for `units` dummy images or video frames of `unit_patches` patches each (gemma4_mm.py
    _process_image_input / _process_video_input, _encoder_chunk); (units × unit_patches, 0) for other
    models or where the free memory at the profile run is not known."""
    v = spec.vision or {}
    classes = int(v.get("position_embedding_size") or 0)
    if spec.config.get("model_type") != "gemma4" or profile.engine != "v1" or not classes or units <= 0:
        return units * unit_patches, 0
    if profile.version < GEMMA4_ENCODER_CHUNKED_FROM:
        chunk = 1
    elif s.gpu_memory_at_profile is None:
        return units * unit_patches, 0
    else:
        total, free = s.gpu_memory_at_profile
        budget = min(free // 2, total // 10)
        chunk = max(1, budget // (unit_patches * GEMMA4_ONE_HOT_COST_FACTOR * classes * 8))
    chunk = min(chunk, units)
    one_hot = chunk * unit_patches * 2 * classes * (8 + dtype_b) if profile.version < GEMMA4_ONE_HOT_UNTIL else 0
    return chunk * unit_patches, one_hot


def vision_encoder_peak(spec: ModelSpec, profile: Profile, s: EngineSettings, dtype_b: int,
                        assumptions: list[str], max_len: int | None = None) -> tuple[int, int]:
    """(activation peak of the vision encoder in the profile run, LLM tokens of one dummy prompt's media):
    encoder_profile's first two figures."""
    return encoder_profile(spec, profile, s, dtype_b, assumptions, max_len)[:2]


def encoder_profile(spec: ModelSpec, profile: Profile, s: EngineSettings, dtype_b: int,
                    assumptions: list[str], max_len: int | None = None) -> EncoderProfile:
    """The vision encoder's activation peak in the profile run, the LLM tokens of one dummy prompt's
    media, the encoder outputs V1 keeps meanwhile (items × their rows × encoder_output_width, padded
    in 0.11–0.12: V1_ENCODER_OUTPUT_PADDED) and V1's dummy pixels (v1_dummy_pixel_bytes), which
    activation_peak adds beside the tower and the language model.

    vLLM profiles a multimodal model with max-size dummy items (V0: each dummy prompt carries
    `--limit-mm-per-prompt` items per modality, one by default; V1: as many items of the largest
    modality as the encoder budget max(Tb, tokens per item) holds, docs §1.10; none when every
    limit is 0). Dynamic-resolution models that take video (a `video_token_id` in the config) get
    a video of the image's maximum size too: vLLM's own warning reports e.g. {'image': 16384,
    'video': 16384} for Qwen2.5-VL. One ViT block on all the patches of one modality is the peak,
    in whichever of its two halves holds more (qwen2_5_vl.py / qwen3_vl.py vision blocks, the
    encoders vLLM builds from column/row-parallel linears):
    - the MLP: the column-parallel output (gate and up, 2·I, for a gated MLP — Qwen2.5-VL, Pixtral,
      Gemma 4, params.vision_mlp_gated; fc1, I, for a plain GELU one — SigLIP, Qwen2-VL, Qwen3-VL)
      and the activation (I),
      split by TP, beside the block's input, the residual sum and the norm (3·H) replicated;
    - the attention: the block's input and its norm (2·H), the local qkv (3·H/tp), which
      Qwen2_5_VisionAttention.split_qkv all-gathers at TP > 1 (3·H replicated), and the rotated
      q/k copies and the output (≈ 5·H/tp). This half is why a tower's peak shrinks far less
      than 1/tp: Qwen3.6-27B's logs print 2.2 / 1.8 / 1.5 GiB of encoder peak at TP 1 / 2 / 4.
    Gemma 4 encodes its items (a video's frames) a batch at a time and its position embeddings once held
    a one-hot per patch, which can be the larger figure (gemma4_encoder_call).
    Times the LLM forward's factor: V1's fragmentation factor, V0's eager 1.0 (activation_peak adds the
    dummy media's pixels V0 keeps on the GPU, v0_dummy_pixel_bytes). An estimate, said as one, checked on V1 logs that
    profile one huge item: Qwen2.5-VL-7B's 114,688-token video on 0.23 (solved 15.34 GiB, modelled
    15.66, and 16.66 with the video's 1.0 GiB of pixels beside it) and 16,384-token image on an L4 on
    0.9.0.1 (KV 1.81 GiB printed, 1.53 modelled); Qwen3.6's image at TP 1 / 2 / 4 (club-3090#652 on
    0.24, #487 on 0.23, vllm PR48601 on 0.25.1: modelled 14%, 7% and 17% under the peaks their KV
    figures imply, and 4.5% under, 1.7% over and 2% under with the image's 0.19 GiB of pixels). It was
    MLP plus qkv before, which overstated TP 1 by a third and understated TP 4.
    Before 0.12 the Qwen ViTs' attention half is read from each release's code instead
    (qwen_vit_attention_bytes: q and k rotated in float32), at factor 1, as eagerly as the encoder runs:
    Qwen2.5-VL on an L4, 0.9.0.1 (KV 1.81 GiB printed: 1.53 → 1.74 modelled) and 0.11.0 (Ray's docs,
    9.26 GiB printed: 10.43 → 9.55).
    """
    v = spec.vision or {}
    hv = vision_width(v)
    if not spec.is_multimodal or not hv:
        if spec.is_multimodal:
            assumptions.append("the vision encoder's size is not in the config: its profile-run activation "
                               "is not counted")
        return EncoderProfile(0, 0)
    tp = max(1, s.tensor_parallel_size)
    iv = int(v.get("intermediate_size") or 4 * hv)
    tokens, patches, video, item_values = _dummy_item(spec)
    patch_values = item_values // max(1, patches)   # pixel values per patch, whatever the item's size
    merge2 = patches // tokens
    tb, seqs = s.max_num_batched_tokens or 2048, s.max_num_seqs or 256
    # a Qwen2-VL video: tokens of the largest item (which picks the modality and the item count)
    # and of the item the profile run actually encodes (qwen2_vl_dummy_video)
    video_tokens = video_run = tokens
    if video and profile.engine == "v1" and max_len and spec.model_type in _QWEN2_VL_TYPES:
        video_tokens, video_run = qwen2_vl_dummy_video(profile, s, tokens, max_len, tb)
    elif video and (qwen3 := qwen3_vl_dummy_video(spec, profile)):
        video_tokens, video_run = qwen3
    elif video and profile.engine == "v1" and spec.config.get("model_type") == "gemma4":
        # gemma4_mm.py get_mm_max_tokens_per_item: a video is _VIDEO_MAX_FRAMES (32) frames of
        # _VIDEO_MAX_SOFT_TOKENS (70) soft tokens and 8 marker tokens each, 2,496 — more than an image's
        # 280 — so the profile run encodes the dummy video, as many as the encoder budget holds of 2,496:
        # 32 frames, each padded to 70 × pooling² patches, through the tower (2,240 rows out)
        video_tokens, video_run = GEMMA4_VIDEO_ITEM_TOKENS, GEMMA4_VIDEO_FRAMES * GEMMA4_VIDEO_SOFT_TOKENS
    n_img, n_vid = _media_per_prompt(s, video)
    if n_img + n_vid == 0:
        assumptions.append("--limit-mm-per-prompt allows no images or videos: no multimodal dummy inputs in "
                           "the profile run")
        return EncoderProfile(0, 0)
    if s.model_runner_v2 and profile.version < V2_RUNNER_ENCODER_PROFILED_FROM and not s.encoder_profile:
        # Model Runner V2's profile_run before 0.27 (v1/worker/gpu/model_runner.py) runs the language
        # model and the sampler only: no dummy media, so the encoder's peak is not in the budget and
        # limiting media frees nothing there (vllm PR48601's Qwen3.6-27B TP 4 log on V2: 1.54 GiB of
        # peak activation printed, the LLM forward and sampler alone)
        assumptions.append(f"Model Runner V2 in vLLM {profile.release} does not profile the vision encoder "
                           "(from 0.27 it does): its peak is not set aside, so the first large image or video "
                           "must find room outside the KV cache at run time")
        return EncoderProfile(0, 0)
    media = tokens * (n_img + n_vid)
    per_prompt = max(n_img, n_vid)
    what = "image(s)" + (" and as many videos" if n_vid and n_img and profile.engine == "v0" else "")
    if not n_img:
        what = "video(s)"
    if profile.engine == "v0" and spec.model_type.startswith("mllama"):
        return EncoderProfile(_mllama_v0_encoder_peak(spec, v, seqs * n_img, tp, dtype_b, assumptions), media)
    kept = pixels = pixel_copy = 0
    if profile.engine == "v0":
        items = max(1, min(seqs, tb // media)) * per_prompt
    else:
        run = tokens
        logged = s.encoder_profile if s.encoder_profile and s.encoder_profile[1] > 0 else None
        if (logged and logged[0] == "video" and n_vid) or \
                (not logged and n_vid and (video_tokens > tokens or not n_img)):
            # V1 profiles the modality whose largest item has the most tokens (a tie keeps the
            # image, listed first) — here the video; or the log says so
            tokens, run, what = video_tokens, video_run, "video(s)"
        # items: the encoder budget max(Tb, largest item) over the largest item (vllm/v1/worker/
        # gpu_model_runner.py profile_run; utils compute_encoder_budget)
        items = max(1, min(max(tb, tokens) // tokens, seqs * per_prompt))
        if logged:
            # the log says what V1 profiled: its modality and item count stand; each item is the
            # size the release's dummy builder makes (above)
            items, what = logged[1], f"{logged[0]}(s)"
        if video:
            patches = run * merge2              # a dynamic-resolution item: its tokens × the merge²
        # the outputs stay in the encoder cache through the LLM's dummy run and the sampler, padded
        # with zeros in 0.11.0–0.12.0 (V1_ENCODER_OUTPUT_PADDED) to the encoder budget max(Tb, item)
        # up to 0.11.2 and to the item's token count in 0.12.0
        rows = run
        if _in(profile.version, V1_ENCODER_OUTPUT_PADDED):
            budget = profile.version < V1_ENCODER_OUTPUT_PADDED_TO_BUDGET_UNTIL
            rows = max(run, max(tb, tokens) if budget else tokens)
        kept = items * rows * encoder_output_width(spec) * dtype_b
        if kept >= GiB // 4:
            assumptions.append(f"the dummy encoder outputs stay on the GPU through the language model's profile "
                               f"run: {kept / GiB:.2f} GiB ({items} × {rows:,} rows × "
                               f"{encoder_output_width(spec):,} values"
                               + (", zero-padded as vLLM 0.11–0.12 do" if rows > run else "") + ")")
        tokens = run
        pixels, pixel_copy = v1_dummy_pixel_bytes(profile, dtype_b, items * patches * patch_values)
        if pixels >= GiB // 4:
            assumptions.append(f"the dummy media's pixels stay on the GPU through the whole profile run: "
                               f"{pixels / GiB:.2f} GiB ({items * patches:,} patches)")
    mlp = (3 if vision_mlp_gated(spec) else 2) * iv // tp + 3 * hv
    attention = (2 * hv + (3 * hv if tp > 1 else 0) + 8 * hv // tp) * dtype_b
    # V0 runs the tower eagerly, as it runs the LLM (V0_FORWARD_FACTOR); V1's factor covers its compiled graphs
    factor = V0_FORWARD_FACTOR if profile.engine == "v0" else FORWARD_FACTOR
    if (exact := qwen_vit_attention_bytes(spec, profile.version, hv, tp, dtype_b)) is not None:
        # a release whose ViT attention is read from its code: that live set, as eagerly as every
        # release runs the encoder (compile_mm_encoder is an opt-in from 0.12)
        attention, factor = exact, V0_FORWARD_FACTOR
    # the patches one call of the tower encodes: all of them, except where the model batches its calls
    frames = GEMMA4_VIDEO_FRAMES if video and what == "video(s)" and spec.config.get("model_type") == "gemma4" else 1
    encoded, one_hot = gemma4_encoder_call(spec, profile, s, items * frames, patches // frames, dtype_b)
    peak = max(int(factor * encoded * max(mlp * dtype_b, attention)), one_hot)
    rotation = ", whose attention rotates q and k in float32 in this release" if exact and exact > mlp * dtype_b else ""
    assumptions.append(f"profile run includes {items} max-size dummy {what} of {tokens:,} tokens "
                       f"({patches:,} patches) through the vision encoder{rotation} (estimate)")
    if encoded < items * patches:
        unit = "frame" if frames > 1 else "image"
        assumptions.append(f"Gemma 4's vision tower encodes them {encoded // (patches // frames)} {unit}(s) at a time"
                           + (f" (vLLM {profile.release} sizes the batch by the GPU's free memory)"
                              if profile.version >= GEMMA4_ENCODER_CHUNKED_FROM else
                              f" (vLLM {profile.release} encodes one per call)"))
    if one_hot:
        assumptions.append(f"the tower's position embeddings are built from a one-hot of "
                           f"{int(v.get('position_embedding_size')):,} classes per patch (int64, and its cast): "
                           f"{one_hot / GiB:.2f} GiB at the profile run's peak (transformers' Gemma 4 of vLLM "
                           f"{profile.release}'s time; transformers#46176 replaced it with a look-up)")
    return EncoderProfile(peak, media, kept, pixels, pixel_copy)


# From this release vLLM casts a processor's floating-point outputs to the model dtype on the CPU
# (inputs/registry.py call_hf_processor `maybe_cast_dtype`: absent in the 0.9.0 wheel, present in
# 0.9.1's); before it, the image processors' float32 pixels went to the GPU as they were.
MM_INPUTS_CAST_FROM = (0, 9, 1)


def v0_dummy_pixel_bytes(spec: ModelSpec, profile: Profile, dtype_b: int, prompts: int, images: int,
                         videos: int) -> tuple[int, int]:
    """(pixels of every dummy item, the model-dtype copy of one modality's) in V0's profile run.

    V0's model runner passes the batch's multimodal inputs as keyword arguments of the model's
    forward (worker/model_runner.py execute_model, `MultiModalKwargs.as_kwargs`), so the pixels
    of all `prompts` dummy prompts stay on the GPU while the tower and then the LLM run. Each
    item is its patches × patch² × channels values (× temporal_patch_size for Qwen2-VL's
    flattened patches, a video frame pair or a duplicated image): 4 B each as the image
    processors emit them up to 0.9.0, the model dtype from 0.9.1 (MM_INPUTS_CAST_FROM). Before
    then the tower converts its input first (gemma3_mm.py `pixel_values.to(dtype=…)`,
    qwen2_5_vl.py `.type(self.visual.dtype)`): a copy of the encoded modality's items beside it.
    vllm#16199 (Gemma 3 27B, 0.8.3 V0: 20 dummy prompts of one 896² image, 192.7 MiB of float32
    pixels) printed 17.61 GiB of weights and 224 blocks at utilization 0.98 of 21.99 GiB — 2.24 GiB
    of activation and non-torch memory; the eager SigLIP block (1.84 GiB) with these pixels (0.28)
    and 0.15 non-torch gives 2.27, where V1's factor 1.3 without them gave 2.54."""
    item = _dummy_item(spec).values
    kept, copy = _pixels_with_copy(profile, dtype_b, prompts * (images + videos) * item,
                                   prompts * max(images, videos) * item)
    return kept * v0_pixel_copies(spec, profile), copy


# V0's Qwen2-VL and Qwen2.5-VL check their pixels with `torch.concat(list(pixel_values))`
# (qwen2_vl.py / qwen2_5_vl.py _validate_and_reshape_mm_tensor): V0 hands the model each modality as a
# 3-D batch (multimodal/inputs.py MultiModalKwargs.batch, `unsqueeze(0)` for one prompt), and
# concatenating its rows allocates a second copy, held in `image_input` / `video_input`, locals of the
# model's forward, while the language model runs. Read in the 0.6.4, 0.7.3, 0.8.0, 0.8.4, 0.9.2 and
# 0.10.1 wheels (every V0 release with these models, 0.6.1–0.10.x, validates them so).


def v0_pixel_copies(spec: ModelSpec, profile: Profile) -> int:
    """How many copies of the dummy media's pixels V0's forward holds: two for Qwen2-VL and Qwen2.5-VL
    (the concatenated copy above), one for the others."""
    return 2 if profile.engine == "v0" and spec.model_type in _QWEN2_VL_TYPES else 1


# V1's profile run moves its dummy batch to the GPU in the model dtype from this release
# (gpu_model_runner.py profile_run: `MultiModalKwargs.as_kwargs(..., dtype=self.model_config.dtype, ...)`
# in the 0.9.0 wheel; 0.7.3–0.8.5 pass only the device, and the processors' pixels are float32).
V1_MM_INPUTS_CAST_FROM = (0, 9, 0)


def v1_dummy_pixel_bytes(profile: Profile, dtype_b: int, values: int) -> tuple[int, int]:
    """(the dummy batch's pixels, the tower's model-dtype copy of them) in V1's profile run, for `values`
    pixel values in all. profile_run keeps the batch (`batched_dummy_mm_inputs`, a local of the function
    in every V1 release, 0.7.3–0.33) until it returns, so the pixels sit beside the tower and then beside
    the language model's dummy run and the sampler (Model Runner V2, from 0.27: beside the tower only,
    activation_peak); each patch is patch² × channels values (× the temporal patch for Qwen2-VL's
    flattened frames), 4 B each before V1_MM_INPUTS_CAST_FROM (_pixels_with_copy), when the tower
    converts them first (qwen2_5_vl.py `.type(self.visual.dtype)`). vllm PR #25631's 0.11-era log
    (Qwen2.5-VL-3B, A100-40GB): its default 114,688-token dummy video is 458,752 patches, 1.0 GiB of bf16 pixels, and
    the KV cache printed 5.26 GiB (6.41 modelled without them, 5.40 with)."""
    return _pixels_with_copy(profile, dtype_b, values, values)


def _pixels_with_copy(profile: Profile, dtype_b: int, kept: int, copied: int) -> tuple[int, int]:
    """(bytes of `kept` pixel values on the GPU, bytes of the tower's model-dtype copy of `copied` of them,
    made only where the pixels are not already in the model dtype): the one rule both engines share. A
    value is the image processors' float32 until the release casts it to the model dtype — on the CPU
    from MM_INPUTS_CAST_FROM (both engines), in V1's runner already from V1_MM_INPUTS_CAST_FROM."""
    cast_from = V1_MM_INPUTS_CAST_FROM if profile.engine == "v1" else MM_INPUTS_CAST_FROM
    value_b = 4 if profile.version < cast_from else dtype_b
    return kept * value_b, (copied * dtype_b if value_b != dtype_b else 0)


def _mllama_v0_encoder_peak(spec: ModelSpec, v: dict, images: int, tp: int, dtype_b: int,
                            assumptions: list[str]) -> int:
    """Llama-3.2-Vision on V0: the encoder-decoder runner gives each of max_num_seqs dummy prompts its
    images (worker/enc_dec_model_runner.py profile_run: no max_num_batched_tokens cap, unlike
    model_runner.py), and the vision tower encodes them in one batch (mllama.py MllamaVisionModel).
    Per image of T = tiles × (patches + CLS, padded to 8) tokens, what is live in its last layers: the
    4-D aspect-ratio attention mask (T × T in the model dtype, built for every image and kept through
    all layers), the intermediate hidden states it collects (intermediate_layers_indices) beside the
    running one, and the MLP's fc1 output and GELU (2 × I/tp). vllm PR #12126's log (128 images of
    4 × 1,608 tokens, H100) prints 36.63 GiB of peak activation; this gives 37.3."""
    hv, iv = int(v.get("hidden_size") or 1280), int(v.get("intermediate_size") or 5120)
    patches = (int(v.get("image_size") or 560) // int(v.get("patch_size") or 14)) ** 2 + 1
    t = int(v.get("max_num_tiles") or 4) * (-(-patches // 8) * 8)
    kept = len(v.get("intermediate_layers_indices") or ())
    per_image = (t * t + (kept + 1) * t * hv + 2 * t * iv // tp) * dtype_b
    assumptions.append(f"profile run encodes {images} dummy images of {t:,} vision tokens in one batch (V0 "
                       "encoder-decoder runner: one per dummy prompt), with the vision tower's attention mask")
    return images * per_image


def nvswitch_nccl(profile: Profile, s: EngineSettings, nvswitch: bool) -> int:
    """What a Hopper GPU on an NVSwitch board holds outside torch under tensor parallelism, as the
    release's NCCL leaves it (NVSWITCH_NCCL_*); 0 where the general fit applies."""
    tp = s.tensor_parallel_size
    if not nvswitch or tp < 2 or cc_number(s.compute_capability) != 9.0 or profile.version < NVSWITCH_NCCL_FROM:
        return 0
    if profile.version >= NVSWITCH_NCCL_UNTIL:
        return NVSWITCH_NCCL_LATE
    return NVSWITCH_NCCL_BASE + int(NVSWITCH_NCCL_PER_DOUBLING * math.log2(tp))


def non_torch(profile: Profile, s: EngineSettings, other_process_bytes: int,
              unnamed_card_bytes: int | None = None, nvswitch: bool = False, arch: str = "") -> int:
    """Memory the instance holds outside torch's allocator, as the version measures it: the fits
    below, and what the early ROCm builds add on MI300-class cards (ROCM_MI300_*)."""
    fit = _non_torch_fit(profile, s, other_process_bytes, unnamed_card_bytes, nvswitch, arch.startswith("gfx"))
    return fit + rocm_mi300_extra(profile, s, arch)


def rocm_mi300_extra(profile: Profile, s: EngineSettings, arch: str) -> int:
    """hipBLASLt's and RCCL's memory on an MI300-class card in the ROCm builds of vLLM before 0.6.5."""
    if arch != "gfx942" or not ROCM_MI300_FROM <= profile.version < ROCM_MI300_UNTIL:
        return 0
    tp = s.tensor_parallel_size
    return ROCM_MI300_HIPBLASLT + (ROCM_MI300_RCCL_PER_RANK * tp if tp > 1 else 0)


def _non_torch_fit(profile: Profile, s: EngineSettings, other_process_bytes: int,
                   unnamed_card_bytes: int | None, nvswitch: bool, amd: bool) -> int:
    """The fitted figure, as the version measures it.

    V0 0.6.5+ measures it after `gc.collect(); torch.cuda.empty_cache()` (vllm/utils.py
    memory_profiling: "after garbage-collecting activation tensors"), so the allocator's cached
    activation memory is not in it: released 0.6.5–0.6.6 logs print 0.10–0.39 GiB beside
    activation peaks of 0.94–15.73 GiB (vllm#11251: 0.39 beside 2.53). Only the pre-release log of
    vllm PR10511 (its tabular format, never released) shows the activation in it (1.79 GiB at TP1).
    """
    if profile.budget_rule == "v0_allocated":
        return 0    # ≤ 0.2.4 subtracts torch.cuda.max_memory_allocated(): nothing outside torch counts
    world = s.tensor_parallel_size * s.pipeline_parallel_size
    # 0.6.4 measures all of it against an empty card, so its figure is the CUDA context with what
    # the run adds folded in (see CUDA_CONTEXT); every other era's baseline already holds the
    # context and what it measures on top of it starts at NON_TORCH_SINGLE
    single = 0 if profile.budget_rule == "v0_nontorch" else NON_TORCH_SINGLE
    if world > 1:
        ranks = world if nvswitch or amd else min(world, NON_TORCH_RANKS_CAP)
        shared = max(single + NON_TORCH_PER_TP_RANK * ranks, nvswitch_nccl(profile, s, nvswitch))
        return shared + (CUDA_CONTEXT + other_process_bytes if profile.context_in_non_torch else 0)
    if profile.context_in_non_torch:
        return single + CUDA_CONTEXT + other_process_bytes
    if not single or profile.version >= NON_TORCH_BY_CARD_UNTIL:
        return single
    cc = cc_number(s.compute_capability)
    if cc == 8.0:
        return NON_TORCH_SINGLE_A100
    small_unnamed = cc is None and bool(unnamed_card_bytes) and unnamed_card_bytes < UNNAMED_SMALL_CARD
    if small_unnamed or (cc is not None and not 9.0 <= cc < 12.0):
        return NON_TORCH_SINGLE_SMALL
    return single       # Hopper, datacenter Blackwell, AMD (no number) or an unnamed card of 32 GiB or more


def cached_all_reduce_bytes(spec: ModelSpec, profile: Profile, s: EngineSettings, dtype_b: int) -> int:
    """How much the profile's all-reduced activations can leave cached where V0 measures with
    mem_get_info and no empty_cache (0.2.5–0.6.3, `v0_total_free` / `v0_classic`); 0 elsewhere.

    Eager V0 all-reduces each layer's attention and MLP output in place with torch.distributed
    (vllm/model_executor/parallel_utils/communication_op.py; 0.5–0.6.3 parallel_state.py leaves pynccl
    for graph capture), whose NCCL stream holds every such block until the GPU catches up, so the
    caching allocator takes new memory instead of reusing it. Up to 2 × layers × Tb × hidden. Not
    subtracted: how much stays cached depends on how far the CPU runs ahead and on the allocator's
    flushes when the card fills (vllm PR #2031: Llama-2-70B TP 4 at 4,096 tokens ≈ 12 GiB, i.e. all
    of it and more; vllm#2136: CodeLlama-13B TP 2 at 16,384 tokens ≈ 8 of the 12.5 GiB)."""
    if profile.budget_rule not in ("v0_total_free", "v0_classic") or s.tensor_parallel_size <= 1:
        return 0
    layers = max(1, spec.num_layers // max(1, s.pipeline_parallel_size))
    return 2 * layers * (s.max_num_batched_tokens or 2048) * spec.hidden_size * dtype_b


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


def attention_groups(layout: KVLayout) -> int:
    """The KV-cache groups of attention layers (not Mamba states): one attention metadata builder each
    (v1/worker/gpu_model_runner.py initialize_attn_backend)."""
    return sum(1 for g in layout.groups if isinstance(g.spec, FullAttention))


def graphs_captured_after_kv(est: Estimate) -> bool:
    """Does vLLM capture CUDA graphs that this budget holds none of (V2 before 0.29: after the KV
    cache is sized), as opposed to capturing none (eager) or not counting them (before 0.20)?"""
    return not est.cuda_graph_bytes and not est.settings.enforce_eager and graphs_budgeted(est.profile, est.settings) \
        and graphs_after_kv(est.profile, est.settings)


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
    if s.enforce_eager or not graphs_budgeted(profile, s) or graphs_after_kv(profile, s):
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


# ------------------------------------------------------------------------------------------
# The estimate
# ------------------------------------------------------------------------------------------


def estimate(spec: ModelSpec, *, gpu_total_bytes: int, settings: EngineSettings | None = None,
             gpu_name: str = "", compute_capability: str | None = None, gpu_count: int | None = None,
             weights_bytes: int | None = None, other_process_bytes: int = 0,
             activation_bytes: int | None = None, non_torch_bytes: int | None = None,
             cuda_graph_bytes: int | None = None, stage_gpus: list[tuple[str, int]] | None = None,
             adjust: dict[str, tuple[str, float]] | None = None) -> Estimate:
    """Forward model for one rank. Overrides (weights/activation/…) come from a paste when read.

    `stage_gpus`: (name, torch total) of each pipeline stage's GPU when they differ (mixed cards).
    `adjust`: how measured figures differ from the model's, applied to the modelled parts of every
    rank or stage ({"weights_bytes": ("ratio", r), "activation_bytes": ("offset", d), …}); `rerun`
    sets it, so a fix is checked from the user's measured state even when it moves layers between
    pipeline stages of different cards.
    """
    inputs = dict(gpu_total_bytes=gpu_total_bytes, settings=settings, gpu_name=gpu_name,
                  compute_capability=compute_capability, gpu_count=gpu_count, weights_bytes=weights_bytes,
                  other_process_bytes=other_process_bytes, activation_bytes=activation_bytes,
                  non_torch_bytes=non_torch_bytes, cuda_graph_bytes=cuda_graph_bytes, stage_gpus=stage_gpus,
                  adjust=adjust)
    base = settings or EngineSettings()
    if base.pp_stage is None and base.pipeline_parallel_size > 1 and (
            base.pp_layer_partition or (stage_gpus and len({t for _n, t in stage_gpus}) > 1)):
        return _tightest_stage(spec, inputs)
    s = base.replace()
    assumptions: list[str] = list(spec.assumptions)
    _settle_release(spec, s, assumptions)
    default = profile_for(s.vllm_version, None) if s.engine is None and spec.model_type.startswith("mllama") else None
    if default is not None and default.engine == "v1" and default.version < (0, 10, 0):
        # mllama.py is SupportsV0Only through 0.9: vLLM runs it on the V0 engine
        s.engine = "v0"
        assumptions.append("Llama-3.2-Vision (mllama) runs on vLLM's V0 engine in this version")
    profile = profile_for(s.vllm_version, s.engine)
    s.engine = profile.engine
    if s.vllm_version is None:
        s.vllm_version = profile.release
        assumptions.append(f"vLLM version not given: assumed {s.vllm_version} ({profile.era})")
    if profile.version > parse_version(NEWEST):
        assumptions.append(f"vLLM {s.vllm_version} is newer than the newest release kvdoctor has read ({NEWEST}): "
                           f"modelled with {NEWEST}'s rules")
    unlisted = unlisted_architecture_note(spec.architecture, profile.version, profile.release)
    if unlisted:
        assumptions.append(unlisted)
    if s.gpu_memory_utilization is None:
        s.gpu_memory_utilization = profile.default_utilization
    pooling = pooling_runner(spec, s)
    s.runner = "pooling" if pooling else (s.runner or "generate")
    if pooling:
        assumptions.append(f"pooling model ({pooling}): vLLM loads no lm_head and its profile run ends in the "
                           "pooler, not the sampler; with CUDA graphs, PIECEWISE ones only")
    model_dtype = resolve_dtype(spec, s, profile, compute_capability, assumptions)
    s.dtype = s.dtype or "auto"
    mdb = dtype_bytes(model_dtype)
    kvb = kv_dtype_bytes_for(s, model_dtype, spec, profile, assumptions)
    s.kv_cache_dtype = s.kv_cache_dtype or "auto"
    kv_word = s.kv_cache_dtype.lower()
    since = KV_CACHE_DTYPE_FROM.get(kv_word)
    if not kv_dtype_exists(kv_word, profile.version):
        assumptions.append(f"--kv-cache-dtype {s.kv_cache_dtype} came with vLLM {version_text(since)}: "
                           f"{profile.release} rejects it; modelled with {kvb} byte(s) per value")
    elif kv_word.startswith(("octave_", "ultraquant_")):
        assumptions.append(f"--kv-cache-dtype {s.kv_cache_dtype}: a packed format (octave: ROCm) whose slot kvdoctor "
                           "does not model — counted as 1 byte per value, so the KV figures are rough")
    elif kv_word in TURBOQUANT_PRESETS and spec.is_hybrid_state and profile.version < TURBOQUANT_HYBRID_FROM:
        assumptions.append(f"vLLM {profile.release} refuses TurboQuant KV caches for hybrid (attention + Mamba) models "
                           f"(from {version_text(TURBOQUANT_HYBRID_FROM)} it quantizes their attention layers)")
    elif kv_word in ("nvfp4", "nvfp4_4over6") and spec.uses_mla and profile.version >= NVFP4_MLA_REFUSED_FROM:
        assumptions.append(f"vLLM {profile.release} refuses an nvfp4 KV cache for MLA models (config/vllm.py: "
                           "'nvfp4 KV cache is not supported with MLA')"
                           + ("; its sparse-MLA form is --kv-cache-dtype nvfp4_ds_mla"
                              if kv_dtype_exists("nvfp4_ds_mla", profile.version) else ""))
    auto_len = s.max_model_len == "auto"
    if auto_len and not profile.auto_max_model_len:
        assumptions.append(f"--max-model-len auto / -1 came with vLLM 0.14: {profile.release} rejects it; "
                           "modelled with the config's length (omit the flag for that)")
    max_len = resolve_max_model_len(spec, s, profile, assumptions)
    seqs_defaulted = s.max_num_seqs is None
    doubled = performance_mode(profile, s) == "throughput"
    if seqs_defaulted:
        s.max_num_seqs = default_max_num_seqs(profile, gpu_total_bytes, gpu_name) * (2 if doubled else 1)
    chunked = v0_chunked_prefill(profile, max_len, spec, s) if profile.engine == "v0" else True
    if s.max_num_batched_tokens is None:
        item = mm_prefix_item_tokens(spec, s, profile)
        s.max_num_batched_tokens = default_max_num_batched_tokens(
            profile, s, max_len, s.max_num_seqs, gpu_total_bytes, gpu_name, chunked, spec.is_multimodal, doubled,
            mm_item_tokens=item)
        if item and s.max_num_batched_tokens == item:
            assumptions.append(f"vLLM {profile.release} raises the default max_num_batched_tokens to {item:,} for this "
                               "prefix-LM multimodal model: its largest media item (a 32-frame video) must fit in "
                               "one batch")
        if s.usage == "llm" and profile.engine == "v1":
            assumptions.append(f"the offline LLM(...) class: vLLM's default max_num_batched_tokens for it is "
                               f"{s.max_num_batched_tokens:,} (the API server's is smaller)")
    if seqs_defaulted and profile.engine == "v1" and profile.version >= (0, 10, 1):
        # engine/arg_utils.py 0.10.1+: a default max_num_seqs never exceeds max_num_batched_tokens
        s.max_num_seqs = min(s.max_num_seqs, s.max_num_batched_tokens)
    if profile.engine == "v0" and chunked and s.enable_chunked_prefill is None and max_len > 32768:
        assumptions.append(f"V0 turns chunked prefill on for max_model_len > 32K: max_num_batched_tokens "
                           f"{s.max_num_batched_tokens}")

    if s.block_size is None and spec.uses_mla and profile.engine == "v1" and profile.mla_cache \
            and profile.version >= (0, 8, 0) and cc_number(compute_capability):
        # V1 MLA backends force their block size (vllm/v1/attention/backends/mla/): FlashMLA on
        # Hopper 64, CUTLASS MLA on Blackwell 128; Triton MLA elsewhere keeps 16.
        cc = cc_number(compute_capability)
        if 9.0 <= cc < 10.0:
            s.block_size = 64
        elif cc >= 10.0:
            s.block_size = 128
    cc = cc_number(compute_capability)
    s.compute_capability = cc
    # models/config.py 0.11.2–0.17: FlashInfer (the default backend there) does not take 16-token
    # blocks with head size 256 on Blackwell (flashinfer#1993): hybrid blocks align to 32
    s.hybrid_block_align = 32 if (profile.engine == "v1" and (0, 11, 2) <= profile.version < (0, 18, 0)
                                  and cc and 10.0 <= cc < 11.0 and not spec.uses_mla
                                  and spec.head_dim == 256) else None
    why_flashinfer = installed_flashinfer_sampler(profile, s, gpu_name)
    if why_flashinfer:
        s.flashinfer_sampler = True
        assumptions.append(why_flashinfer)
    if s.model_runner_v2 is None:
        s.model_runner_v2 = default_model_runner_v2(
            profile, spec.architecture, moe=spec.moe is not None, hybrid=spec.is_hybrid_state,
            # ModelConfig.is_quantized: the checkpoint's own quantization_config (an export kvdoctor
            # read through its base model's config carries one: spec.quantization from its name)
            quantized=bool(spec.quantization),
            attention_free=not spec.attention_layers, speculative_method=s.speculative_method,
            rocm=str(compute_capability or "").startswith("gfx"),     # every AMD row's target (gpus.csv)
            pipeline_parallel=s.pipeline_parallel_size)
        if s.model_runner_v2 and not profile.v2_runner_budgets_graphs:
            assumptions.append(f"vLLM {profile.release} runs this model on Model Runner V2 by default "
                               "(VLLM_USE_V2_MODEL_RUNNER unset)")
    if s.kv_cache_memory_bytes and not profile.kv_memory_flag:
        assumptions.append("--kv-cache-memory-bytes exists from vLLM 0.10.2; ignored for this version")
        s.kv_cache_memory_bytes = None
    # the drafter once per estimate: its layers (KV, graphs), its token count (Mamba blocks), its weights
    draft_info = drafter(spec, s, profile, assumptions)
    layout = kv_layout(spec, profile, s, kvb, mdb, assumptions, draft_info)
    if s.block_size is None:
        s.block_size = layout.block_size

    # ---- weights, activation, non-torch, graphs ----
    # the checkpoint's own weights even when a paste gave vLLM's figure: the two are compared
    offload = int(s.cpu_offload_gb * GiB)
    if offload and s.model_runner_v2 and profile.version < V2_RUNNER_OFFLOAD_FROM:
        # Model Runner V2 set no weight offloader until 0.28 (only v1/worker/gpu_model_runner.py
        # calls set_offloader(create_offloader(...)); vllm#51396, fixed by #51413)
        offload = 0
        assumptions.append(f"Model Runner V2 in vLLM {profile.release} ignores --cpu-offload-gb (vllm#51396, fixed "
                           "in 0.28): every weight stays on the GPU (VLLM_USE_V2_MODEL_RUNNER=0 offloads)")
    removed = removed_quant_method(params.weight_format_kind(spec, s.quantization), profile.version)
    if removed:
        method, gone = removed[0], version_text(removed[1])
        assumptions.append(f"vLLM {profile.release} cannot load {method} weights: {gone} removed them (it "
                           f"stops with \"Unknown quantization method: {method}\"); these figures are what they "
                           f"would take — serve them with a release before {gone}, or an AWQ / GPTQ / FP8 "
                           "export of the model")
    model_weights = max(0, _weights(spec, s, profile, model_dtype, assumptions if weights_bytes is None else [],
                                    with_mtp=draft_info[2], compute_capability=compute_capability) - offload)
    if layout.dsv4 is not None and profile.engine == "v1":
        model_weights += deepseek_v4_load_buffers(spec, s, profile)
    model_weights += deepstack_buffer_bytes(spec, s, profile, mdb)
    assistant = gemma4_assistant(spec.model_type, spec.hidden_size, s.speculative_method, s.speculative_model)
    if assistant is not None and draft_info[1] and not draft_info[2]:    # drafting on this stage (the last)
        model_weights += assistant.bytes_per_rank(mdb, s.tensor_parallel_size)
    model_weights += lora_buffer_bytes(spec, s, mdb, assumptions if weights_bytes is None else [])
    # a figure vLLM printed ("Model loading took X GiB") is what the GPU holds, offloaded part already out
    weights_bytes = model_weights if weights_bytes is None else weights_bytes
    # what torch sees free when the profile run starts: the weights, the CUDA context and other processes
    # taken, nothing else yet
    s.gpu_memory_at_profile = (gpu_total_bytes,
                               max(0, gpu_total_bytes - weights_bytes - CUDA_CONTEXT - other_process_bytes))
    act = activation_peak(spec, profile, s, mdb, assumptions, max_len=max_len) if activation_bytes is None \
        else activation_bytes
    if activation_bytes is None:
        _unnamed_sampler_note(spec, profile, s, mdb, act, max_len, assumptions)
        if profile.budget_rule == "v0_classic" and not str(compute_capability or "").startswith("gfx"):
            act += V0_CLASSIC_CACHED_EXCESS
            assumptions.append(f"vLLM {profile.release} measures the profile run as the free memory it took, "
                               "with PyTorch's cached blocks still reserved: about "
                               f"{V0_CLASSIC_CACHED_EXCESS / GiB:.2f} GiB more than the tensors' own peak "
                               "(public 0.4–0.6.3 logs; vLLM 0.6.4+ empties the cache first)")
    nvswitch = on_nvswitch_board(gpu_name)
    nt = non_torch(profile, s, other_process_bytes, None if compute_capability else gpu_total_bytes, nvswitch,
                   arch=str(compute_capability or "")) \
        if non_torch_bytes is None else non_torch_bytes
    board = nvswitch_nccl(profile, s, nvswitch) if non_torch_bytes is None else 0
    context = CUDA_CONTEXT + other_process_bytes if profile.context_in_non_torch else 0
    if board and nt - context == board:      # the board's figure, not the general fit, is the estimate
        assumptions.append(f"NCCL over the NVSwitch board's links with tensor parallelism {s.tensor_parallel_size}: "
                           f"{board / GiB:.2f} GiB outside torch per GPU in vLLM "
                           f"{profile.release} (public logs of H100/H200 boards print 1.4–2.5 GiB in 0.9–0.10 "
                           "and about 0.6 GiB from 0.11; an estimate — the log's non_torch_memory line gives yours)")
    rocm = rocm_mi300_extra(profile, s, str(compute_capability or "")) if non_torch_bytes is None else 0
    if rocm:
        assumptions.append(f"vLLM {profile.release}'s ROCm build on an MI300-class card: hipBLASLt"
                           f"{' and RCCL (over xGMI)' if s.tensor_parallel_size > 1 else ''} add about "
                           f"{rocm / GiB:.1f} GiB outside torch (public MI300X logs of 0.6.2–0.6.4; a run with hipBLASLt "
                           "turned off had 1.7 GiB more KV cache)")
    held = cached_all_reduce_bytes(spec, profile, s, mdb)
    if held:
        assumptions.append(
            f"vLLM {profile.release} with tensor parallelism counts what PyTorch still caches after the profile "
            f"run, and the all-reduced activations wait on NCCL's stream before they can be reused: up to "
            f"{held / GiB:.1f} GiB (2 per layer × {s.max_num_batched_tokens:,} tokens × hidden) on top of this "
            "estimate, varying from run to run and capped by the free memory — the KV cache can be that much "
            "smaller (vllm PR #2031's Llama-2-70B TP 4: 20,865 blocks where the torch peak allows 31,000). "
            "vLLM 0.6.4+ empties the cache before measuring; a smaller max_num_batched_tokens shrinks it")
    # graphs vLLM captures after sizing the KV cache (before 0.20, or the early V2 runner) are not
    # a budget item even when the log prints their size
    after = graphs_after_kv(profile, s) or not graphs_budgeted(profile, s)
    fi_graph = 0
    if after:
        graphs = 0
    elif cuda_graph_bytes is not None:
        graphs = cuda_graph_bytes
    else:
        graphs, fi_graph, fi_note = cuda_graph_parts(spec, profile, s, draft_info[0], attention_groups(layout))
        graphs += fi_graph
        if fi_note:
            assumptions.append(fi_note)
    if adjust:
        parts = {"weights_bytes": weights_bytes, "activation_bytes": act, "non_torch_bytes": nt, "cuda_graph_bytes": graphs}
        for key, (how, amount) in adjust.items():
            if key in parts and not (key == "cuda_graph_bytes" and after):
                parts[key] = int(parts[key] * amount) if how == "ratio" else int(amount) if how == "value" \
                    else max(0, parts[key] + int(amount))
        weights_bytes, act, nt, graphs = (parts["weights_bytes"], parts["activation_bytes"], parts["non_torch_bytes"],
                                          parts["cuda_graph_bytes"])
    if graphs_after_kv(profile, s) and graphs_budgeted(profile, s) and not s.enforce_eager:
        assumptions.append("V2 model runner: vLLM does not subtract CUDA-graph memory before sizing the KV "
                           "cache (its profile_cudagraph_memory returns 0); graphs are captured on top of it")
    budget = requested_bytes(profile, gpu_total_bytes, s.gpu_memory_utilization)
    if s.kv_cache_memory_bytes:
        kv_pool = s.kv_cache_memory_bytes
        assumptions.append("--kv-cache-memory-bytes set: vLLM skips profiling and ignores gpu_memory_utilization")
    else:
        kv_pool = budget - weights_bytes - act - nt - graphs

    # ---- blocks and capacity ----
    bpb = layout.bytes_per_block
    blocks = max(0, kv_pool // bpb) if bpb else 0
    # Mamba prefix caching (vllm/v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes): the
    # "align" mode keeps 2 state blocks per running sequence instead of 1 — dev cases qevos (0.21) and
    # talos#1995 with --enable-prefix-caching match 2 blocks per Mamba group —, the "all" mode one per
    # block of the context (mamba_cache_mode says which, per version and model family).
    mamba_all = layout.mamba_mode == "all"
    mamba_extra = 1 if layout.mamba_mode == "align" else 0
    spec_k = draft_info[1]
    if spec_k and layout.state_bytes_per_request and profile.engine == "v1" and profile.version >= (0, 10, 2) \
            and (not mamba_all or profile.version >= (0, 26, 0)):
        mamba_extra += spec_k   # MambaSpec.num_speculative_blocks = num_speculative_tokens
    if layout.mamba_mode != "none":
        assumptions.append(
            f"prefix caching on ({'vLLM ≥ 0.28 default for hybrid models' if s.enable_prefix_caching is None else 'flag'}):"
            f" Mamba cache mode '{layout.mamba_mode}' keeps "
            + ("a state per block of each request" if mamba_all else "2 states per request per Mamba group"))
    tb = window_tokens(s, profile)
    # 0.28+ (kv_cache_utils extra_retained_tokens): a multi-module MTP drafter keeps k − 1 more tokens
    # in every windowed cache — DeepSeek-V4 checkpoints with more than one MTP layer
    dsv4_extra = spec_k - 1 if layout.dsv4 is not None and profile.version >= (0, 28, 0) \
        and (s.speculative_method or "").lower().endswith("mtp") and min(mtp_layers(spec), spec_k) > 1 else 0

    cp = dcp_ranks(profile, s)
    if s.decode_context_parallel_size > 1:
        if cp > 1:
            assumptions.append(f"decode context parallelism {cp}: each of {cp} ranks keeps every {cp}th token of a "
                               f"request, so a rank's KV cache holds {cp}× the tokens its memory alone would")
        else:
            assumptions.append(f"--decode-context-parallel-size is not in vLLM {profile.release} (V1 from "
                               f"{'.'.join(map(str, DCP_FROM))}): modelled without it")

    def blocks_needed(length: int) -> int:
        if layout.dsv4 is not None:
            return kv_deepseek_v4.blocks_per_request(layout.dsv4, length, tb, dsv4_extra)
        return sum(g.blocks_per_request(length, tb, profile, mamba_extra, mamba_all, cp) for g in layout.groups)

    check_layout = layout
    if profile.pp_global_check and s.pipeline_parallel_size > 1:
        # docs §1.11: 0.14.0–0.16.x checked once with the global (all stages') KV groups against the
        # smallest worker's available memory, over-estimating the need under PP.
        check_layout = kv_layout(spec, profile, s.replace(pipeline_parallel_size=1), kvb, mdb, [])
        assumptions.append("vLLM 0.14–0.16 checks the KV need of all pipeline stages against one stage's memory")

    def check_blocks(length: int) -> int:
        if check_layout.dsv4 is not None:
            # the admission check sums the groups' own counts (_max_memory_usage_bytes_from_groups)
            return sum(kv_deepseek_v4.group_blocks(g, length, tb, dsv4_extra) for g in check_layout.dsv4.groups)
        return sum(g.blocks_per_request(length, tb, profile, mamba_extra, mamba_all, cp) for g in check_layout.groups)

    def needed(length: int) -> int:
        return kv_needed_bytes(check_layout, profile, s, length, check_blocks, kvb, mdb, cp)

    check_pool = kv_pool - (bpb if profile.reserved_block else 0)
    need_blocks = blocks_needed(max_len) if layout.groups else 0
    kv_needed = needed(max_len)
    if profile.engine == "v0":
        capacity = layout.block_size * (blocks // v0_capacity_divisor(profile, s))
        # the printed concurrency does not divide by the pipeline stages: blocks × block size / L
        # (vllm/executor/executor_base.py initialize_cache), though the capacity check does
        concurrency = blocks * layout.block_size / max_len if max_len else 0.0
        fits = blocks > 0 and max_len <= capacity
        fit_len = capacity
    else:
        concurrency = blocks / need_blocks if need_blocks else 0.0
        if profile.capacity_rule == "v1_blocks":
            capacity = blocks * layout.block_size * cp
            concurrency = capacity / max_len if max_len else 0.0
        elif profile.capacity_rule == "v1_groups":
            capacity = (blocks // max(1, layout.num_groups)) * min(g.block_size for g in layout.groups) * cp \
                if layout.groups else 0
        else:
            capacity = int(concurrency * max_len)
        fit_len = _largest_fitting(needed, check_pool, max_len)
        fits = kv_pool > 0 and kv_needed <= check_pool
    error = None
    # a hybrid model's decoding sequences each hold a Mamba state block: more sequences than blocks
    # (MAMBA_BLOCKS_CHECK_FROM, MAMBA_GRAPHS_CAPPED_FROM) where vLLM captures FULL CUDA graphs
    mamba_short = bool(layout.state_bytes_per_request) and profile.engine == "v1" and not s.enforce_eager \
        and 0 < blocks < s.max_num_seqs
    # free memory when vLLM takes its start-up snapshot: after this process's CUDA context is made
    startup_free = gpu_total_bytes - other_process_bytes - CUDA_CONTEXT
    cap = length_over_config(spec, s, profile)
    if cap is not None:
        # the engine's config check comes before any memory is touched
        error, fits = "max_model_len_derived", False
        assumptions.append(f"vLLM refuses --max-model-len {max_len:,}: the model's config allows {cap:,} tokens "
                           "(set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, or configure RoPE scaling, to go past it); "
                           "the memory figures are for the requested length")
    elif profile.free_memory_check and startup_free < budget:
        # vllm/v1/worker/gpu_worker.py init_device (0.9.1+; v1/worker/utils.py request_memory from
        # 0.14): free memory at start must cover T × u — also with --kv-cache-memory-bytes, and the
        # CUDA context is already out of it (so u ≈ 0.98+ fails on a 24 GB card with nothing else on it)
        error, fits = "free_memory_startup", False
        assumptions.append(f"only {startup_free / GiB:.2f} GiB is free at start-up (after the CUDA context, about "
                           f"{CUDA_CONTEXT / GiB:.2f} GiB) but vLLM asks for {budget / GiB:.2f} GiB "
                           "(utilization × total): it stops before loading")
    elif kv_pool <= 0 or blocks == 0:
        error = "no_cache_blocks"
    elif mamba_short and profile.version >= MAMBA_BLOCKS_CHECK_FROM:
        # Hybrid (Mamba / linear-attention) models: every decoding sequence holds one state block,
        # so vLLM refuses max_num_seqs above the number of blocks when it captures FULL graphs.
        error, fits = "mamba_blocks", False
    elif not fits:
        error = "kv_capacity_v0" if profile.engine == "v0" else "kv_capacity_v1"
    if mamba_short and MAMBA_GRAPHS_CAPPED_FROM <= profile.version < MAMBA_BLOCKS_CHECK_FROM:
        assumptions.append(f"max_num_seqs {s.max_num_seqs:,} is above the {blocks:,} Mamba state blocks: vLLM "
                           f"{profile.release} caps its CUDA-graph sizes at {blocks:,} and starts (from 0.20 it stops "
                           "with \"max_num_seqs … exceeds available Mamba cache blocks\")")
    if auto_len and profile.auto_max_model_len and error in ("kv_capacity_v0", "kv_capacity_v1") and fit_len > 0:
        # auto-fit only shortens the context: the start-up check and the Mamba-blocks check still fail
        assumptions.append(f"--max-model-len auto: vLLM reduces it from {max_len} to {fit_len}")
        max_len, fits, error = fit_len, True, None
    if layout.note:
        assumptions.append(layout.note)
    est = Estimate(
        spec=spec, profile=profile, settings=s, gpu_name=gpu_name, gpu_total_bytes=gpu_total_bytes,
        gpu_count=gpu_count or s.tensor_parallel_size * s.pipeline_parallel_size * s.data_parallel_size,
        compute_capability=compute_capability, budget_bytes=budget, weights_bytes=weights_bytes,
        activation_bytes=act, non_torch_bytes=nt, cuda_graph_bytes=graphs, kv_cache_bytes=kv_pool,
        layout=layout, gpu_blocks=blocks, kv_cache_tokens=capacity, max_concurrency=concurrency,
        max_model_len=max_len, max_model_len_fit=fit_len, kv_needed_bytes=kv_needed, fits=fits,
        error_kind=error, assumptions=_dedupe(assumptions), checkpoint_weights_bytes=model_weights,
        cached_all_reduce_bytes=held, flashinfer_graph_bytes=fi_graph if graphs else 0,
    )
    est.inputs = inputs
    est.own_assumptions = tuple(est.assumptions)
    return est


def _settle_release(spec: ModelSpec, s: EngineSettings, assumptions: list[str]) -> None:
    """The release to model where the settings name a word for the newest ("latest", "nightly") or none
    at all and the newest release no longer serves the model (its registry dropped the architecture):
    then the last release that did. Other unnamed releases are the profile's default (estimate)."""
    if str(s.vllm_version or "").strip().lower() in NEWEST_WORDS:
        assumptions.append(f"vLLM {s.vllm_version!r} read as {NEWEST}, the newest release kvdoctor has read")
        s.vllm_version = NEWEST
    dropped_by = release_serving(spec.architecture, parse_version(NEWEST)) if s.vllm_version is None else None
    if dropped_by:
        s.vllm_version = dropped_by
        assumptions.append(f"vLLM version not given: assumed {dropped_by}, the last release whose model registry "
                           f"lists {spec.architecture}")


def _tightest_stage(spec: ModelSpec, inputs: dict) -> Estimate:
    """Size every pipeline stage on its own GPU and return the one with the fewest blocks.

    vLLM profiles each worker separately (its own layers, its own card; logits and the sampler
    on the last stage only) and gives every stage the minimum block count (docs §1.11;
    vllm/v1/core/kv_cache_utils.py, V0 executor: min over workers). Used when the stages differ
    by more than vLLM's default split: a VLLM_PP_LAYER_PARTITION, or GPUs of different sizes.
    """
    s = inputs["settings"]
    pp = s.pipeline_parallel_size
    gpus = inputs.get("stage_gpus") or []
    profile = profile_for(s.vllm_version, s.engine)
    sizes = stage_sizes(spec, profile, pp, s.pp_layer_partition)
    best: Estimate | None = None
    per_stage = []
    start = 0
    for i in range(pp):
        name, total = gpus[i] if i < len(gpus) else (inputs["gpu_name"], inputs["gpu_total_bytes"])
        stage_inputs = {**inputs, "settings": s.replace(pp_stage=i), "gpu_total_bytes": total, "gpu_name": name,
                        "stage_gpus": None}
        e = estimate(spec, **stage_inputs)
        per_stage.append(f"stage {i} ({name}, layers {start}–{start + sizes[i] - 1}): "
                         f"{e.kv_cache_bytes / GiB:.2f} GiB of KV, {e.gpu_blocks:,} blocks")
        start += sizes[i]
        if best is None or (e.gpu_blocks, e.kv_cache_bytes) < (best.gpu_blocks, best.kv_cache_bytes):
            best = e
    assert best is not None
    part = s.pp_layer_partition
    if part and (len(part) != pp or sum(part) != spec.num_layers):
        best.assumptions.append(f"VLLM_PP_LAYER_PARTITION={','.join(map(str, part))} does not give {pp} stages summing "
                                f"to the model's {spec.num_layers} layers: vLLM refuses to start with it; sized "
                                "with vLLM's own split instead")
    stage = best.settings.pp_stage
    best.assumptions.append(f"pipeline stages sized one by one; vLLM gives every stage the block count of the "
                            f"tightest, stage {stage}: " + "; ".join(per_stage))
    best.settings.pp_stage = None
    best.tightest_stage = stage
    best.inputs = inputs
    best.own_assumptions = tuple(best.assumptions)
    return best


def rerun(est: Estimate, **changes) -> Estimate:
    """The same estimate with some settings changed (advice re-checks every fix this way).

    Figures measured in a paste (weights, activation, non-torch, graphs) are carried over and
    moved by what the model says the change does: weights scale by the modelled ratio (tp,
    quantization), the others shift by the modelled difference (batch sizes, V0's Tb = f(L)).
    """
    inputs = dict(est.inputs)
    base = inputs.pop("settings") or EngineSettings()
    new = base.replace(**changes)
    if "tensor_parallel_size" in changes or "pipeline_parallel_size" in changes:
        inputs["gpu_count"] = None
    keys = ("weights_bytes", "activation_bytes", "non_torch_bytes", "cuda_graph_bytes")
    measured = {k: inputs[k] for k in keys if inputs.get(k) is not None}
    if measured:
        # Measured parts become their difference from the model (a ratio for the weights, an offset
        # for the rest), applied to the changed model on every rank/stage: the model says what the
        # change does, the measurement what the model missed.
        bare = {**inputs, **{k: None for k in keys}, "adjust": None}
        old_model = estimate(est.spec, settings=base, **bare)
        adjust = dict(inputs.get("adjust") or {})
        for k, v in measured.items():
            o = getattr(old_model, k)
            # a negative CUDA-graph estimate is vLLM's own artifact (free memory grew while it measured,
            # unified-memory boards such as GB10): kept as printed, as vLLM would measure it again; so is
            # one the old settings did not subtract (0.18–0.19 without VLLM_MEMORY_PROFILER_ESTIMATE_
            # CUDAGRAPHS), which is no offset from the model's own
            adjust[k] = ("ratio", v / o if o else 1.0) if k == "weights_bytes" else \
                ("value", v) if k == "cuda_graph_bytes" and (v < 0 or not o) else ("offset", v - o)
            inputs[k] = None
        inputs["adjust"] = adjust
    out = estimate(est.spec, settings=new, **inputs)
    out.params, out.gpu = est.params, est.gpu
    return out


def kv_needed_bytes(layout: KVLayout, profile: Profile, s: EngineSettings, length: int, blocks_needed,
                    kv_bytes: int, model_dtype_bytes: int, cp: int = 1) -> int:
    """KV memory one request at `length` needs, as the version's admission check counts it.

    V0: every attention layer at full length (cache_engine.get_cache_block_size). V1 0.7–0.13:
    Σ over layers of `max_memory_usage_bytes` (vllm/v1/core/kv_cache_utils.py
    check_enough_kv_cache_memory) — sliding layers at their window from 0.8.3, chunked-local layers at
    their chunk from 0.10, before any unification or padding. 0.14–0.18: group-aware, but only the FIRST group was counted in the
    multi-group case (fixed in 0.19); 0.19+: bytes_per_block × Σ_groups blocks. `cp`: decode context
    parallelism, a full-attention layer keeping cdiv(length, cp) tokens (`blocks_needed` counts it too).
    """
    rule = profile.needed_rule
    bs, tp, tb = layout.block_size, s.tensor_parallel_size, window_tokens(s, profile)
    if rule == "v0":
        return ceil_div(length, bs) * layout.bytes_per_block
    if rule == "layers":
        total = 0
        for lk in layout.layers:
            if isinstance(lk, MambaState):
                # one page; one per block of the context when prefix caching keeps them all (0.11.2–0.13)
                pages = ceil_div(length, bs) if layout.mamba_mode == "all" else 1
                total += pages * (layout.state_page or lk.state_bytes(tp, model_dtype_bytes))
                continue
            if isinstance(lk, CrossAttention):
                continue
            ppt = lk.bytes_per_token(tp, kv_bytes)
            if not ppt:
                continue
            if isinstance(lk, SlidingWindow) and profile.sliding_spec:
                n = ceil_div(min(lk.window - 1 + tb, length), bs) + 1
            elif isinstance(lk, ChunkedLocal) and profile.version >= (0, 10, 0):
                # 0.10.1–0.13 check the per-layer ChunkedLocalAttentionSpec before the hybrid manager
                # (off by default for chunked attention) unifies it to full attention (get_kv_cache_config)
                n = ceil_div(min(lk.chunk + tb, length), bs)
            else:
                n = ceil_div(ceil_div(length, cp), bs)
            total += n * ppt * bs
        return total
    if layout.dsv4 is not None:
        # DeepSeek-V4: a layer tuple's bytes per block to 0.28, the pool's stride from 0.29
        return layout.dsv4.needed_block_bytes * blocks_needed(length)
    if rule == "first_group" and len(layout.groups) > 1:
        return layout.bytes_per_block * layout.groups[0].blocks_per_request(length, tb, profile, cp=cp)
    return layout.bytes_per_block * blocks_needed(length)


def _largest_fitting(needed, available: int, upper: int) -> int:
    """vLLM's binary search for the largest L in [1, upper] with needed(L) ≤ available (0 if none)."""
    if available <= 0 or needed(1) > available:
        return 0
    if needed(upper) <= available:
        return upper
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if needed(mid) <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo


# How each MXFP4 MoE backend holds the experts (vllm/model_executor/layers/quantization/mxfp4.py):
# Marlin pads the per-rank intermediate size to 128 and hidden to 256 (its kernel needs n % 256 and
# k % 128); FlashInfer on SM100 (TRT-LLM / BF16) pads both to 256, its CUTLASS path and the SM90
# FlashInfer path to 128; Triton (triton_kernels) pads the intermediate to 64, swizzles the scales
# into new tensors while the loaded ones stay registered, and upcasts the biases to fp32. Checked
# on gpt-oss: 120b on an H100 with 0.10.1.1 (Marlin warning) printed 65.97 GiB, Marlin layout
# 65.93; 120b with 0.14.1 ("Using Triton backend") 64.38, Triton layout 64.19; 20b on an A100
# with 0.19.0 13.72, Marlin 13.70; 20b on a 3090 with the gpt-oss launch build (before 0.10.1
# brought Marlin MXFP4 MoE) 12.88, unpadded 12.83.
MXFP4_LAYOUTS = {
    "Marlin": Mxfp4Layout("Marlin", 128, 256),
    "Triton": Mxfp4Layout("Triton", 64, 1, scale_copies=2, bias_bytes=4),
    "FlashInfer SM100": Mxfp4Layout("FlashInfer SM100", 256, 256),
    "FlashInfer SM100 CUTLASS": Mxfp4Layout("FlashInfer SM100 CUTLASS", 128, 128),
    "FlashInfer SM90": Mxfp4Layout("FlashInfer SM90", 128, 128),
    "unpadded": Mxfp4Layout("gpt-oss launch build", 1, 1),
}
# Hopper runs Triton once triton_kernels ships with vLLM (utils/import_utils.py has_triton_kernels:
# the `triton_kernels` package or vllm.third_party.triton_kernels), else Marlin. The wheels from 0.10.1
# to 0.11.2 neither carry nor require it; 0.12.0's is the first with vllm/third_party/triton_kernels.
# Logs agree: 0.10.1.1 used Marlin (vllm#23278), 0.14.1 Triton (vllm#33155), and a gpt-oss-120b H100
# log of late October 2025 (0.11.0's line numbers, u 0.95, Tb 1,024) left 1.71 GiB of KV cache:
# Marlin's weights give 1.87, Triton's 3.59.
MXFP4_HOPPER_TRITON_FROM = (0, 12, 0)


def mxfp4_backend(profile: Profile, compute_capability: str | None, named: str | None) -> str:
    """The MXFP4 MoE backend vLLM picks (mxfp4.py get_mxfp4_backend), or the one a log named."""
    if named in MXFP4_LAYOUTS:
        return named
    if profile.version < (0, 10, 1):
        return "unpadded"
    cc = cc_number(compute_capability) or 9.0
    if 10.0 <= cc < 11.0:
        return "FlashInfer SM100"
    if 9.0 <= cc < 10.0:        # triton_kernels: SM90 and SM100 only
        return "Triton" if profile.version >= MXFP4_HOPPER_TRITON_FROM else "Marlin"
    return "Marlin"


# vllm/model_executor/models/interfaces.py _mark_tower_model (0.15.0+): a tower whose modalities are
# all limited to 0 is replaced by a placeholder and its weights are not loaded.
TOWER_SKIP_FROM = (0, 15, 0)


# What makes vLLM run a model as a pooling model (embedding, reranking, reward), when no --runner /
# --task / --convert says so (vllm/config/model.py _get_default_runner_type): an architecture its registry
# lists as one, or whose suffix maps to the pooling runner (_SUFFIX_TO_DEFAULTS), or a Sentence
# Transformers repo (a modules.json: Qwen3-Embedding keeps Qwen3ForCausalLM), which the name says here.
POOLING_ARCH_SUFFIXES = ("ForSequenceClassification", "ForTokenClassification", "ForRewardModeling",
                         "RewardModel", "ForProcessRewardModel", "EmbeddingModel", "EmbedModel", "ForTextEncoding",
                         "ClassificationModel", "ForEmbedding")
# decoder backbones the registry serves as embedding models (models/registry.py _EMBEDDING_MODELS)
POOLING_ARCHITECTURES = ("LlamaModel", "MistralModel", "Qwen2Model", "Gemma2Model", "GritLM")
_EMBEDDING_NAME = ("embedding", "-embed-", "_embed_")


def pooling_runner(spec: ModelSpec, s: EngineSettings) -> str | None:
    """Why vLLM runs this model with the pooling runner, or None (the generate runner). A pooling
    model's profile run ends in its pooler, not the sampler (v1/worker/gpu_model_runner.py
    profile_run: _dummy_pooler_run), and it loads no lm_head (model_executor/models/adapters.py deletes
    it); the pooler's own output (one vector per request) is small beside the forward."""
    if s.runner == "pooling":
        return "the run is a pooling (embedding / scoring) run"
    if s.runner == "generate":
        return None
    arch = spec.architecture or ""
    if arch in POOLING_ARCHITECTURES or arch.endswith(POOLING_ARCH_SUFFIXES):
        return f"{arch} is a pooling architecture in vLLM"
    if isinstance((spec.companions or {}).get("sentence_bert_config.json"), dict):
        return "the repo is a Sentence Transformers model (its sentence_bert_config.json), which vLLM serves as one"
    name = (spec.model_id or "").lower().rsplit("/", 1)[-1] + "-"
    if any(w in name for w in _EMBEDDING_NAME):
        return ("the model's name says it is an embedding model (a Sentence Transformers repo, which vLLM serves "
                "with its pooling runner; --runner generate says otherwise)")
    return None


def vision_tower_skipped(spec: ModelSpec, s: EngineSettings, profile: Profile) -> bool:
    """Whether vLLM leaves the vision tower out: every modality it serves (image, and video where the
    config has a video token) limited to 0, from 0.15. Unlisted modalities keep vLLM's default
    (non-zero) limit, so `image=0` alone keeps a Qwen-VL tower for video."""
    limits = s.limit_mm_per_prompt
    if not (spec.is_multimodal and limits) or profile.version < TOWER_SKIP_FROM:
        return False
    # the tower's modalities as each model file marks them: {"image", "video"} for Qwen-VL, InternVL,
    # MiniCPM-V, GLM-4.1V, Gemma 4 … (whatever the config says about video), "image" for these
    modalities = ["image"] if spec.config.get("model_type") in _IMAGE_ONLY_TOWERS else ["image", "video"]
    return all(int(limits.get(m, 1) or 0) == 0 for m in modalities)


def audio_tower_skipped(spec: ModelSpec, s: EngineSettings, profile: Profile) -> bool:
    """Whether vLLM leaves an audio tower out: the audio limit 0 (--limit-mm-per-prompt, or
    --language-model-only's every modality at 0), from 0.15 as for vision towers."""
    limits = s.limit_mm_per_prompt
    return bool(spec.is_multimodal and limits) and profile.version >= TOWER_SKIP_FROM \
        and int(limits.get("audio", 1) or 0) == 0


def mm_prefix_item_tokens(spec: ModelSpec, s: EngineSettings, profile: Profile) -> int:
    """The largest media item of a multimodal prefix-LM model, as its processing info reports it
    (get_mm_max_tokens_per_item) — Gemma 4 with bidirectional vision attention (transformers_utils/
    model_arch_config_convertor.py Gemma4ModelArchConfigConvertor): an image's soft tokens
    (vision_config.default_output_length) or a video of 32 frames × (70 soft tokens + 8 markers)
    (model_executor/models/gemma4_mm.py). 0 for other models, before 0.27, or when every modality is
    off (vLLM then serves it as text only and the model is not prefix-LM)."""
    if profile.engine != "v1" or profile.version < MM_PREFIX_FLOOR_FROM or not spec.is_multimodal:
        return 0
    if spec.config.get("model_type") != "gemma4" or (spec.text or {}).get("use_bidirectional_attention") != "vision":
        return 0
    if s.language_model_only or vision_tower_skipped(spec, s, profile):
        return 0
    image = int((spec.vision or {}).get("default_output_length") or 280)
    return max(image, GEMMA4_VIDEO_ITEM_TOKENS)


# model types whose vision tower vLLM marks for "image" alone (gemma3_mm.py, mistral3.py, pixtral.py,
# llava.py, mllama4.py, kimi_vl.py in 0.33)
_IMAGE_ONLY_TOWERS = ("gemma3", "mistral3", "pixtral", "llava", "llama4", "kimi_vl")


def _weights(spec: ModelSpec, s: EngineSettings, profile: Profile, model_dtype: str, assumptions: list[str],
             with_mtp: bool, compute_capability: str | None = None) -> int:
    # Advice re-runs the model dozens of times per reply: weights depend only on these inputs.
    st = getattr(spec, "safetensors_bytes_by_dtype", None)
    ep = s.tensor_parallel_size * s.data_parallel_size if (s.enable_expert_parallel and spec.moe) else 1
    pp = s.pipeline_parallel_size
    part = tuple(stage_sizes(spec, profile, pp, s.pp_layer_partition)) if pp > 1 else None
    layout = MXFP4_LAYOUTS[mxfp4_backend(profile, compute_capability, s.mxfp4_backend)]
    vision = not vision_tower_skipped(spec, s, profile)
    audio = not audio_tower_skipped(spec, s, profile)
    if s.language_model_only and profile.version < (0, 17, 0):
        assumptions.append("--language-model-only is a vLLM 0.17+ flag: this release refuses it "
                           "(use --limit-mm-per-prompt with every modality at 0)")
    absorption, rope_per_layer = profile.mla_matrix_absorption, profile.rope_cache_per_layer
    head = s.runner != "pooling"       # adapters.py: a pooling model deletes lm_head and skips its weights
    key = (model_dtype, s.quantization, s.tensor_parallel_size, pp, ep, tuple(sorted(st.items())) if st else None,
           with_mtp, s.pp_stage, part, layout, vision, audio, absorption, rope_per_layer, head)
    cache = spec.__dict__.setdefault("_weights_cache", {})
    if key not in cache:
        cache[key] = params.weight_bytes(spec, dtype=model_dtype, quantization=s.quantization,
                                         tp=s.tensor_parallel_size, pp=s.pipeline_parallel_size, ep=ep,
                                         safetensors_bytes_by_dtype=st, with_mtp=with_mtp,
                                         pp_rank=s.pp_stage if s.pipeline_parallel_size > 1 else None,
                                         layer_partition=list(part) if part else None, mxfp4_layout=layout,
                                         with_vision=vision, with_audio=audio, mla_absorption=absorption,
                                         rope_per_layer=rope_per_layer, with_lm_head=head)
    wb = cache[key]
    assumptions.extend(wb.assumptions)
    return wb.bytes_total


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for it in items:
        if it not in seen:
            seen.add(it)
            out.append(it)
    return out


def gib(x: float) -> float:
    return x / GiB


def fmt_gib(x: float, nd: int = 2) -> str:
    return f"{x / GiB:.{nd}f}"


__all__ = ["Estimate", "KVLayout", "estimate", "GiB", "MiB", "gib", "fmt_gib", "math"]
