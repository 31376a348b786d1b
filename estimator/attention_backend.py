"""The attention backend vLLM's V1 engine picks for a model's attention layers, and what the
FlashInfer backend allocates when vLLM's CUDA-graph estimate first captures a FULL graph.

Why it matters: from 0.20 (0.18–0.19 on request) vLLM subtracts a measured CUDA-graph estimate
before it sizes the KV cache (v1/worker/gpu_model_runner.py profile_cudagraph_memory: the memory the
first capture of each mode takes, plus the second capture's × the remaining graphs). The profile run
before it builds no attention metadata; the warm-up of the first FULL graph does, and FlashInfer's
metadata builder then allocates its float workspace (VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE, 394 MiB)
and one decode wrapper per graph size, each with an 8 MiB int workspace on the GPU
(flashinfer/decode.py BatchDecodeWithPagedKVCacheWrapper). FlashAttention and Triton allocate
nothing of that size there, so the same model and flags leave about 0.4 GiB less KV cache where
FlashInfer is the backend: with an FP8 KV cache on Ampere, Ada and consumer Blackwell cards (where
FlashAttention takes no FP8 KV cache), and by default on B200/GB200-class cards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.spec import CrossAttention, FullAttention, ModelSpec

if TYPE_CHECKING:       # estimator.vllm and estimator.flags read backend names through this module
    from estimator.vllm import EngineSettings, Profile

MiB = 2**20

FLASH_ATTN = "FLASH_ATTN"
FLASHINFER = "FLASHINFER"
TRITON_ATTN = "TRITON_ATTN"
FLEX_ATTENTION = "FLEX_ATTENTION"
FLASHMLA_SPARSE = "FLASHMLA_SPARSE"
FLASHINFER_MLA_SPARSE = "FLASHINFER_MLA_SPARSE"

# The backends a user can name (--attention-backend, a log's "Using … backend" line), in vLLM's enum spelling (v1/attention/backends/registry.py AttentionBackendEnum).
KNOWN_BACKENDS = frozenset({
    FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION, "TREE_ATTN", "TURBOQUANT", "XFORMERS",
    "FLASHMLA", "FLASHINFER_MLA", "CUTLASS_MLA", "TRITON_MLA", "FLASH_ATTN_MLA", FLASHMLA_SPARSE,
    FLASHINFER_MLA_SPARSE, "ROCM_ATTN", "ROCM_AITER_FA", "ROCM_AITER_MLA", "ROCM_AITER_UNIFIED_ATTN",
    "CPU_ATTN", "TORCH_SDPA",
})
# Backends of vLLM forks that pastes name: the b12x builds the RTX PRO 6000 community runs
# (voipmonitor/rtx6kpro's images, "attention_backend: B12X_MLA_SPARSE" in their args) — not vLLM's enum.
FORK_BACKENDS = frozenset({"B12X_MLA_SPARSE"})
# Sparse-MLA backends (DeepSeek-V3.2, GLM-5: MLA with an `index_topk` indexer) by the layout they give a
# quantized KV cache: vllm/model_executor/layers/attention/mla_attention.py MLAAttention converts fp8 to
# DeepSeek's packed "fp8_ds_mla" (656 B per token per layer) on FLASHMLA_SPARSE and keeps standard fp8
# (576 B) on FLASHINFER_MLA_SPARSE, each saying so in the log ("Using DeepSeek's fp8_ds_mla KV cache
# format", "Using standard fp8 KV cache format"). The fork's B12X_MLA_SPARSE packs too: its logs'
# capacities solve to 656 B rows — GLM-5.1 NVFP4 on 8 × RTX PRO 6000 (rtx6kpro startup.log of 2026-05-15):
# 5,336 blocks of 64 = 341,504 tokens in 19.55 GiB is 61,464 B per token = 78 layers × (656 + 132 B of
# indexer key), where standard fp8 rows would hold 380,121 tokens.
PACKED_SPARSE_MLA_BACKENDS = frozenset({FLASHMLA_SPARSE, "B12X_MLA_SPARSE"})
PLAIN_SPARSE_MLA_BACKENDS = frozenset({FLASHINFER_MLA_SPARSE})
# platforms/cuda.py: from 0.19 Blackwell (SM 10.x and up) prefers FlashInfer's sparse-MLA backend
FLASHINFER_SPARSE_MLA_FROM = (0, 19, 0)
# The words older logs and warnings use ("Using FlashInfer backend on V1 engine.", "Using Flash Attention
# backend", "… for attention backend FlashInferBackend"), lower-cased without spaces or "Backend".
_LOG_WORDS = {"flashinfer": FLASHINFER, "flashattention": FLASH_ATTN, "tritonattention": TRITON_ATTN,
              "flexattention": FLEX_ATTENTION}

# platforms/cuda.py _get_backend_priorities and the backends' supports_* checks are modelled from
# the release whose CUDA-graph estimate they feed (0.18's opt-in); unchanged for plain (non-MLA)
# attention through 0.33.
SELECTION_FROM = (0, 18, 0)
# flashinfer.py supports_compute_capability: SM 7.5 and up, raised to 8.0 in 0.24 (flashinfer#3620)
FLASHINFER_SM80_FROM = (0, 24, 0)
# flashinfer.py get_supported_head_sizes: 512 added in 0.22
FLASHINFER_HEAD_512_FROM = (0, 22, 0)
# envs.py VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE (0.18–0.33)
FLASHINFER_WORKSPACE = 394 * MiB
# flashinfer.py 0.26+: the workspace grows to the prefill chunk's head footprint when that is larger
# (max_num_batched_tokens × query heads × head size × 16 B, FLASHINFER_PREFILL_WORKSPACE_BYTES_PER_ELEM)
FLASHINFER_WORKSPACE_BY_CHUNK_FROM = (0, 26, 0)
# utils/flashinfer.py / flashinfer.py: decode's TRT-LLM path chosen once per builder (0.27+) instead
# of per batch
TRTLLM_DECODE_STATIC_FROM = (0, 27, 0)
# flashinfer/decode.py: every decode wrapper's int workspace on the GPU
FLASHINFER_WRAPPER_INT_WORKSPACE = 8 * MiB


def backend_from_name(text: str | None) -> str | None:
    """A backend as a flag, an environment variable or a log names it, in vLLM's enum spelling."""
    if not text:
        return None
    t = str(text).strip().strip("'\"").rsplit(".", 1)[-1]     # "AttentionBackendEnum.FLASHINFER"
    if t.upper() in KNOWN_BACKENDS or t.upper() in FORK_BACKENDS:
        return t.upper()
    return _LOG_WORDS.get(t.lower().replace(" ", "").removesuffix("backend"))


def sparse_mla_packs_fp8(version: tuple, cc: float | None, backend: str | None) -> bool:
    """Whether a sparse-MLA model's fp8 KV cache is the packed fp8_ds_mla format (from 0.11.2; see
    PACKED_SPARSE_MLA_BACKENDS): the backend the user or the log named decides, else the one vLLM
    prefers — FlashInfer's, which keeps plain fp8, on Blackwell from 0.19, FlashMLA's elsewhere."""
    if backend in PACKED_SPARSE_MLA_BACKENDS:
        return True
    if backend in PLAIN_SPARSE_MLA_BACKENDS:
        return False
    return not (cc is not None and cc >= 10.0 and version >= FLASHINFER_SPARSE_MLA_FROM)


def _attention_layers(spec: ModelSpec) -> list[FullAttention]:
    return [lk for lk in spec.layers if isinstance(lk, FullAttention) and not isinstance(lk, CrossAttention)]


def _attention_head_sizes(spec: ModelSpec) -> set[int]:
    return {lk.head_dim for lk in _attention_layers(spec)}


def attention_backend(spec: ModelSpec, profile: Profile, s: EngineSettings) -> str | None:
    """The backend of the model's (non-MLA) attention layers: the one the user or the log named, else
    the first in platforms/cuda.py's priority order whose checks pass — FlashInfer first on SM 10.x,
    FlashAttention first elsewhere, Triton last. None where kvdoctor does not model the choice (V0,
    before 0.18, AMD or an unknown card, MLA and DeepSeek-V4 caches, attention-free models)."""
    if s.attention_backend:
        return s.attention_backend
    cc = s.compute_capability
    if profile.engine != "v1" or profile.version < SELECTION_FROM or cc is None:
        return None
    if spec.uses_mla or spec.deepseek_v4_layers:
        return None
    heads = _attention_head_sizes(spec)
    if not heads:
        return None
    fa4 = 9.0 <= cc < 11.0
    if len(heads) > 1:
        # models/config.py Gemma4Config: heterogeneous head sizes run FA4 where it exists, else
        # TRITON_ATTN is forced for every layer
        return FLASH_ATTN if fa4 else TRITON_ATTN
    head = heads.pop()
    kv = (s.kv_cache_dtype or "auto").lower()
    if kv.endswith("_per_token_head") or kv.startswith("turboquant_"):
        # the per-token-head scale formats (0.20+) only Triton's backend lists in its
        # supported_kv_cache_dtypes (triton_attn.py); NVFP4 only FlashInfer's (flashinfer.py).
        # TurboQuant runs its own Triton kernels (turboquant_attn.py): for the memory, no
        # FlashInfer workspace either
        return TRITON_ATTN
    fp8 = kv.startswith("fp8")
    sinks = any(lk.sinks for lk in _attention_layers(spec))

    def flash_attn_ok() -> bool:
        # flash_attn.py: SM 8.0+, head size a multiple of 8 up to 256 (512 with FA4); an FP8 cache
        # needs FA3 on SM 9.0 or FA4 on SM 10.x (fa_utils.flash_attn_supports_kv_cache_dtype), never
        # e5m2; sinks need SM 9.0+
        if cc < 8.0 or head % 8 or head > (512 if fa4 else 256):
            return False
        if fp8 and (kv == "fp8_e5m2" or not fa4):
            return False
        return not (sinks and cc < 9.0)

    def flashinfer_ok() -> bool:
        # flashinfer.py: SM 7.5 (8.0 from 0.24) to 12.1, head sizes 64/128/256 (and 512 from 0.22);
        # sinks only on the SM 10.x TRT-LLM path; every FP8 KV dtype
        floor = 8.0 if profile.version >= FLASHINFER_SM80_FROM else 7.5
        sizes = (64, 128, 256, 512) if profile.version >= FLASHINFER_HEAD_512_FROM else (64, 128, 256)
        if not floor <= cc <= 12.1 or head not in sizes:
            return False
        return not (sinks and not 10.0 <= cc < 11.0)

    if kv in ("nvfp4", "nvfp4_4over6"):
        return FLASHINFER if flashinfer_ok() else TRITON_ATTN
    order = (FLASHINFER, FLASH_ATTN) if 10.0 <= cc < 11.0 else (FLASH_ATTN, FLASHINFER)
    for name in order:
        if (flashinfer_ok if name == FLASHINFER else flash_attn_ok)():
            return name
    return TRITON_ATTN


def _sm100(s: EngineSettings) -> bool:
    cc = s.compute_capability
    return cc is not None and 10.0 <= cc < 11.0


def flashinfer_trtllm_decode(profile: Profile, s: EngineSettings, batch: int, spec_tokens: int) -> bool:
    """Does FlashInfer decode a batch of `batch` tokens through TRT-LLM's kernels (one process-wide
    workspace, no decode wrapper)? utils/flashinfer.py use_trtllm_attention: on SM 10.x always with
    speculative decoding, else up to 0.26 only for batches of at most 256 tokens with a 16-bit cache,
    from 0.27 whenever the card supports it (chosen once per builder, flashinfer.py); on SM 9.0 from
    0.27 XQA decodes an FP8 cache."""
    kv = (s.kv_cache_dtype or "auto").lower()
    if _sm100(s):
        return profile.version >= TRTLLM_DECODE_STATIC_FROM or spec_tokens > 0 or (batch <= 256 and kv == "auto")
    cc = s.compute_capability
    return cc is not None and 9.0 <= cc < 10.0 and profile.version >= TRTLLM_DECODE_STATIC_FROM \
        and kv.startswith("fp8")


def full_graphs_kept(backend: str | None, s: EngineSettings, spec_tokens: int) -> bool:
    """FULL decode graphs with speculative decoding need a backend that graphs uniform batches
    (config/compilation.py resolve_cudagraph_mode_and_sizes): FlashInfer graphs them on SM 10.x
    (TRT-LLM) only, elsewhere one token per request, so vLLM falls back to PIECEWISE graphs alone. A
    pooling model gets PIECEWISE graphs alone too (config/vllm.py: "Pooling models do not support full
    cudagraphs")."""
    if s.runner == "pooling":
        return False
    return not (backend == FLASHINFER and spec_tokens > 0 and not _sm100(s))


def flashinfer_capture(spec: ModelSpec, profile: Profile, s: EngineSettings, full_sizes: list[int],
                       attention_groups: int, spec_tokens: int = 0) -> tuple[int, str]:
    """What FlashInfer allocates inside vLLM's CUDA-graph estimate, and that in words for the reply: the
    first FULL capture (the largest size) plus the second one's cost times the remaining FULL graphs,
    as vLLM extrapolates them.

    A batch decoded through TRT-LLM allocates its 394 MiB process-wide buffer once. A batch decoded
    natively allocates, in every KV-cache group of attention layers (each has its own metadata
    builder), a decode wrapper for that size with an 8 MiB int workspace, and — the V1 runner's
    builders, at their first use — the float workspace (394 MiB; from 0.26 at least the prefill
    chunk's max_num_batched_tokens × query heads × head size × 16 B). Model Runner V2 (0.29+, whose
    estimate this is) shares one workspace that it sets up with its attention backends, before the
    capture it measures (v1/worker/gpu/attn_utils.py). Checked on Qwen3.6-35B-A3B NVFP4 logs of 0.20
    with an FP8 KV cache on consumer Blackwell cards: 0.39–0.47 GiB estimated for 2–5 graphs, where
    the per-graph figure alone gives 0.05–0.12 GiB (this model: 0.44–0.52)."""
    which = "attention backend FlashInfer" + ("" if s.attention_backend else
                                              " (the one vLLM picks for this card and KV cache dtype)")
    if not full_sizes:
        why = ("with speculative decoding vLLM captures PIECEWISE CUDA graphs only (FlashInfer's decode graphs "
               "take one token per request here)" if not full_graphs_kept(FLASHINFER, s, spec_tokens)
               else "no FULL CUDA graph is captured")
        return 0, f"{which}: {why}, so none of its buffers is in the graph estimate"
    groups = max(1, attention_groups)
    workspace = 0
    if not s.model_runner_v2:
        workspace = FLASHINFER_WORKSPACE
        if profile.version >= FLASHINFER_WORKSPACE_BY_CHUNK_FROM:
            heads = max(1, spec.num_attention_heads // max(1, s.tensor_parallel_size))
            head = max(_attention_head_sizes(spec) or {spec.head_dim})
            workspace = max(workspace, (s.max_num_batched_tokens or 0) * heads * head * 16)
    sizes = sorted(full_sizes, reverse=True)
    first_trtllm = flashinfer_trtllm_decode(profile, s, sizes[0], spec_tokens)
    first = FLASHINFER_WORKSPACE if first_trtllm else groups * (workspace + FLASHINFER_WRAPPER_INT_WORKSPACE)
    second = 0
    if len(sizes) > 1:
        if flashinfer_trtllm_decode(profile, s, sizes[1], spec_tokens):
            second = 0 if first_trtllm else FLASHINFER_WORKSPACE
        else:
            second = groups * (FLASHINFER_WRAPPER_INT_WORKSPACE + (workspace if first_trtllm else 0))
    total = first + second * (len(sizes) - 1)
    if first_trtllm:
        what = "TRT-LLM's 394 MiB decode workspace"
    elif s.model_runner_v2:
        what = (f"its decode wrappers, 8 MiB per FULL graph per attention KV group ({groups}); Model Runner V2 "
                "sets its 394 MiB workspace up outside the estimate")
    else:
        what = f"its workspace (394 MiB or more) per attention KV group ({groups}) and 8 MiB per FULL graph"
    return total, (f"{which}: the CUDA-graph estimate holds {what}, allocated at the first FULL graph "
                   f"({total / 2**30:.2f} GiB)")
