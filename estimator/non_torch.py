"""Memory outside torch's allocator that vLLM counts against the budget (N): CUDA context where a
version counts it, cuBLAS and attention-backend workspaces, NCCL and custom all-reduce buffers.
All fits: no closed form exists; each constant names the logs it comes from.
"""

from __future__ import annotations

import math

from estimator.gpus import cc_number, is_rocm_target
from estimator.spec import ModelSpec
from estimator.units import GiB
from estimator.vllm import EngineSettings, Profile

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
# The collected corpus's 4-rank PCIe logs print less (4× RTX 2080 Ti 0.20, 4× A30 0.09, 4 × 80 GB with
# custom all-reduce off 0.13) and its 4× RTX 3090 runs of 0.18–0.19 leave pools 0.1–0.4 GiB above what
# 0.39 does, which a cap at 2 ranks (0.27) would follow; but dev vllm16570 prints 0.34–0.43 and the
# sipeed 4× 3090 Qwen3-VL log reproduces to 0.4% with 0.39 (4.7% with 0.27): kept at 4 until a log
# tells the two apart.
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
# 0.6.6 with DeepSeek-V3: about 9.7 implied): NCCL_EAGER_* below.
# A100 boards show no such excess in their logs (2× A100-SXM4-80GB 0.10.1: 0.6 GiB for activation and
# non-torch together), nor do PCIe cards (L40S TP 8: 0.18).
NVSWITCH_NCCL_FROM = (0, 9, 0)
NVSWITCH_NCCL_UNTIL = (0, 11, 0)
NVSWITCH_NCCL_BASE = int(1.16 * GiB)
NVSWITCH_NCCL_PER_DOUBLING = int(0.44 * GiB)
NVSWITCH_NCCL_LATE = int(0.60 * GiB)
# Before 0.9 (PyTorch 2.5–2.6, which ship NCCL 2.21) NCCL sets up every channel's buffers when a
# communicator starts, and NCCL 2.22 made that lazy ("runtime connect": buffers on first use); 0.9.0
# moved to PyTorch 2.7 (NCCL 2.26). vLLM takes its baseline before the distributed set-up (worker.py
# init_device: the snapshot, then init_worker_distributed_environment), so from 0.6.5, where the
# figure is measured against that baseline, the start-up buffers are in the printed non_torch_memory —
# and NVSwitch boards open many more channels than PCIe rings. Public logs: 1.54 GiB (2× A100-SXM4-40GB,
# 0.7.2, TP 2) and 1.39 (4× A800, 0.8.2, TP 4) → NCCL_EAGER_AMPERE, their mean; 7.16 (8× H200, 0.7.3,
# TP 8) → NCCL_EAGER_HOPPER_TP8. Checked on a log outside the fit: 16× H100, 0.6.6, TP 8 × PP 2 (llm-tracker)
# prints 2,889 blocks, 4,019 with the general fit and 3,220 with this. No log gives Hopper at TP 2 or 4
# before 0.9: it keeps the general fit.
NCCL_EAGER_FROM = (0, 6, 5)
NCCL_EAGER_AMPERE = int(1.46 * GiB)
NCCL_EAGER_HOPPER_TP8 = int(7.16 * GiB)
# AMD Instinct MI300-class cards (gfx942: MI300X, MI300A, MI325X) in the ROCm builds of vLLM 0.5.5–0.6.4
# (ROCm 6.1–6.2), which measure with total − free: single-card runs leave 2.0–2.4 GiB less KV cache
# than the fit (the ROCm blog's two Llama-3-8B runs 2.36, on 0.5.5 by their log lines' file:line and
# their 08-29 date, the earliest release with such a log; llm-tracker's 0.6.3 Llama-2-7B 2.03;
# MI300-testing's two 0.6.4 runs 2.25 / 2.01) — and the same llm-tracker run with hipBLASLt turned off
# got 220 blocks (1.72 GiB) more: hipBLASLt's kernels and workspace, 2.1 GiB (the median). Under tensor
# parallelism RCCL's buffers over xGMI come on top: 8 × MI300X runs print 8.02 / 9.32 / 9.32 GiB of
# non-torch memory (0.6.4) and five more leave 4.8–11.2 GiB (median 6.8) less KV than the fit; a 2 ×
# MI300X run 3.2: 0.72 GiB per rank beside hipBLASLt's (TP 2 3.5, TP 8 7.9 over the fit). W7900
# (gfx1100) logs of 0.6.4 print 0.34 / 0.44 — no such excess; later releases have too few MI300 logs
# to say (a 0.16 TP 4 run 1.6 GiB over the fit, a 0.23 single-card run 3 GiB under it).
ROCM_MI300_FROM = (0, 5, 5)
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


def nvswitch_nccl(profile: Profile, s: EngineSettings, nvswitch: bool) -> int:
    """What a GPU on an NVSwitch board holds outside torch under tensor parallelism, as the release's
    NCCL leaves it: before 0.9 its start-up buffers (NCCL_EAGER_*: Ampere, Hopper at TP 8), from 0.9
    Hopper's (NVSWITCH_NCCL_*); 0 where the general fit applies."""
    tp, cc = s.tensor_parallel_size, cc_number(s.compute_capability)
    if not nvswitch or tp < 2 or profile.version < NCCL_EAGER_FROM:
        return 0
    if profile.version < NVSWITCH_NCCL_FROM:
        return NCCL_EAGER_AMPERE if cc == 8.0 else NCCL_EAGER_HOPPER_TP8 if cc == 9.0 and tp >= 8 else 0
    if cc != 9.0:
        return 0
    if profile.version >= NVSWITCH_NCCL_UNTIL:
        return NVSWITCH_NCCL_LATE
    return NVSWITCH_NCCL_BASE + int(NVSWITCH_NCCL_PER_DOUBLING * math.log2(tp))


def non_torch(profile: Profile, s: EngineSettings, other_process_bytes: int,
              unnamed_card_bytes: int | None = None, nvswitch: bool = False, arch: str = "") -> int:
    """Memory the instance holds outside torch's allocator, as the version measures it: the fits
    below, and what the early ROCm builds add on MI300-class cards (ROCM_MI300_*)."""
    fit = _non_torch_fit(profile, s, other_process_bytes, unnamed_card_bytes, nvswitch, is_rocm_target(arch))
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
