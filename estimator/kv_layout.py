"""The KV cache as vLLM lays it out: per-layer page sizes, V1's groups, drafter and MTP layers,
packed and quantized KV formats, and the cache a request of a given length needs.

Exact parts: each follows the vLLM code it names (vllm/v1/kv_cache_interface.py page sizes,
vllm/v1/core/kv_cache_utils.py grouping and page-size unification).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from estimator import kv_deepseek_v4
from estimator.attention_backend import sparse_mla_packs_fp8
from estimator.drafters import gemma4_assistant
from estimator.gpus import is_rocm_target
from estimator.params import pp_partition
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
    DCP_FROM,
    EngineSettings,
    Profile,
    ceil_div,
    kv_dtype_exists,
    parse_version,
    registry_span,
    version_text,
)

# Speculative methods that keep vLLM's default async scheduling (vllm/config/vllm.py 0.26.0: EAGLE,
# the MTP family, DFlash, GPU n-gram, DSpark); any other method turns it off unless it is asked for.
_ASYNC_SPEC_METHODS = ("eagle", "eagle3", "extract_hidden_states", "dflash", "ngram_gpu", "dspark")


# Families whose Mamba layers support prefix caching per block, the "all" mode
# (SupportsMambaPrefixCaching in vllm/model_executor/models/: mamba, mamba2, nemotron_h, jamba,
# zamba2, falcon_h1, granitemoehybrid, bamba; 0.11.2–0.32 — 0.33 keeps only "align").
_MAMBA_ALL_TYPES = ("mamba", "falcon_mamba", "mamba2", "nemotron_h", "jamba", "zamba2", "falcon_h1",
                    "granitemoehybrid", "bamba")


# "In Mamba cache align mode, block_size (B) must be <= max_num_batched_tokens (T)": vLLM refuses a batch that
# cannot hold the aligned attention block (config/vllm.py; in the 0.17.0–0.26.0 wheels, not in 0.16.0 or 0.27.0)
MAMBA_ALIGN_BATCH_CHECK = ((0, 17, 0), (0, 27, 0))


def mamba_align_batch(block_size: int) -> int:
    """The batch to offer where the align-mode check refuses one: the power of two at or above the
    attention block, the round figure a user would write that still holds the block."""
    return 1 << (block_size - 1).bit_length()


def mamba_align_refused(layout: KVLayout, s: EngineSettings, profile: Profile) -> bool:
    """Does vLLM refuse these settings at its align-mode check (MAMBA_ALIGN_BATCH_CHECK)?"""
    return layout.mamba_mode == "align" and MAMBA_ALIGN_BATCH_CHECK[0] <= profile.version < MAMBA_ALIGN_BATCH_CHECK[1] \
        and (s.max_num_batched_tokens or 0) < layout.block_size


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


# 0.10.1–0.13's admission check counts a chunked-local layer at its chunk (its per-layer spec, before the
# hybrid manager unifies it to full attention): kv_needed_bytes, and so windows_hold_batch
CHUNKED_NEED_FROM = (0, 10, 0)


def windows_hold_batch(layout: KVLayout, profile: Profile, max_len: int) -> bool:
    """Whether a request's KV need counts the tokens in flight (`window_tokens`): a sliding-window
    layer with its own spec, or a chunked-local one from 0.10 (kv_needed_bytes), whose window is
    shorter than the context. Only then does max_num_batched_tokens change what one request takes."""
    if profile.engine != "v1" or layout.dsv4 is not None:
        return False
    for lk in [g.spec for g in layout.groups] + list(layout.layers):
        if isinstance(lk, SlidingWindow) and profile.sliding_spec and lk.window < max_len:
            return True
        if isinstance(lk, ChunkedLocal) and profile.version >= CHUNKED_NEED_FROM and lk.chunk < max_len:
            return True
    return False


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
    draft = f" ({s.speculative_model})" if s.speculative_model else ""
    # (no second config is read for a draft checkpoint: naming it would not change the figures)
    assumptions.append(f"speculative method {method!r}: the draft model's{draft} weights and KV cache are another "
                       "checkpoint's and are not counted, so vLLM's KV pool is smaller than modelled here by them")
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
                     model_dtype_bytes: int = 2, whole_model: bool = True,
                     backend: str | None = None) -> list[LayerKV]:
    """Layers as this vLLM version caches them.

    MLA before 0.7.1 had no latent cache: K and V per head of qk_nope+qk_rope dims (docs §2.1).
    V1 0.11+ stores DeepSeek-V3.2-style sparse MLA with an fp8 KV cache as "fp8_ds_mla", 656 B
    per token per layer (FlashMLA's sparse format): in 0.11.0 whatever the dtype ("auto" too,
    models/config.py), from 0.11.2 for an fp8 cache — the flag's or the checkpoint's — on a backend
    that packs it: FlashMLA's, not FlashInfer's, which Blackwell prefers from 0.19
    (attention_backend.sparse_mla_packs_fp8; `backend` is the one the user or the log named).
    """
    out: list[LayerKV] = []
    fp8 = kv_cache_dtype.startswith("fp8") or (kv_cache_dtype == "auto" and kv_bytes == 1)
    v = profile.version
    ds_mla = kv_cache_dtype == "fp8_ds_mla" or (profile.engine == "v1" and (
        (0, 11, 0) <= v < (0, 11, 2) and (fp8 or kv_cache_dtype == "auto")
        or v >= (0, 11, 2) and fp8 and sparse_mla_packs_fp8(v, cc, backend)))
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
            elif profile.engine == "v0" and V0_MLA_ALIGNED <= v < (0, 8, 0) and not is_rocm_target(cc) \
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


# Mamba-2 conv states widened by the speculative tokens as GDN's are: mamba_utils.py mamba2_state_shape
# takes num_spec from 0.17.0, and only nemotron_h.py and mamba2.py pass it (vllm_config.num_speculative_
# tokens; Bamba, GraniteMoeHybrid, Falcon-H1 and Zamba2 keep conv_kernel − 1 rows). A public DGX Spark log
# of Nemotron-3-Super-120B with 3 MTP tokens and fp8 KV (0.19.2 dev) sets the attention block to 8,432
# tokens: 6 conv rows give its Mamba page 4,317,184 B, i.e. 8,432 tokens of 512 B; 3 rows give 8,320.
MAMBA2_SPEC_ROWS_FROM = (0, 17, 0)
MAMBA2_SPEC_ROWS_TYPES = ("nemotron_h", "mamba2")


# DeepSeek-V4's KV pool (kv_layout._deepseek_v4_layout) exists from the release that brought the model: the
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
                              settings.compute_capability, model_dtype_bytes, whole_model=pp <= 1,
                              backend=settings.attention_backend)
    if spec_k:
        # Gated DeltaNet and KDA keep the last k speculative tokens' inputs in their conv states:
        # (conv_kernel − 1 + num_spec) rows (mamba_utils.py gated_delta_net_state_shape, kda_state_shape).
        # (KDA's num_spec argument is used from 0.27: mamba_utils.py kda_state_shape ignored it before)
        spec_rows = ("gdn", "kda") if profile.version >= (0, 27, 0) else ("gdn",)
        if profile.version >= MAMBA2_SPEC_ROWS_FROM and spec.model_type in MAMBA2_SPEC_ROWS_TYPES:
            spec_rows += ("mamba2",)
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


def attention_groups(layout: KVLayout) -> int:
    """The KV-cache groups of attention layers (not Mamba states): one attention metadata builder each
    (v1/worker/gpu_model_runner.py initialize_attn_backend)."""
    return sum(1 for g in layout.groups if isinstance(g.spec, FullAttention))


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
            elif isinstance(lk, ChunkedLocal) and profile.version >= CHUNKED_NEED_FROM:
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
