"""ModelSpec: what a model's config.json says about its memory, for any architecture.

Why data, not model names: users run a million fine-tunes; a new architecture should be a
config key read into an existing attention kind, rarely new code. Each decoder layer gets one
`LayerKV` object (full, sliding, chunked-local, MLA, mamba/linear state, cross, none) that says
what one token (or one request, for state layers) costs on one GPU rank — the way vLLM's
`vllm/v1/kv_cache_interface.py` gives each KV-cache spec a `page_size_bytes`.

Config reading mirrors vLLM's `ModelConfig` (`vllm/config/model.py`: get_head_size,
get_total_num_kv_heads, get_num_kv_heads) and the model files that decide per-layer kinds
(`vllm/model_executor/models/*.py`). Where a config relies on transformers' class defaults
(trimmed configs such as gemma-3's text_config) the defaults are filled from `_TYPE_DEFAULTS`
and said in `assumptions`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1, "float8_e4m3fn": 1,
    "int8": 1, "uint8": 1,
}


def dtype_bytes(name: str | None, default: int = 2) -> int:
    if not name:
        return default
    return DTYPE_BYTES.get(str(name).lower().replace("torch.", ""), default)


# --------------------------------------------------------------------------------------------
# Per-layer KV kinds. Each answers: bytes per token of context (per rank) and bytes per request
# (state layers). `tp` is the tensor-parallel size; `kv_dtype_bytes` the KV cache element size.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerKV:
    kind: str = "none"

    def bytes_per_token(self, tp: int, kv_dtype_bytes: int) -> int:
        """KV bytes one token of context costs in this layer on one rank (0 for state layers)."""
        return 0

    def state_bytes(self, tp: int, model_dtype_bytes: int) -> int:
        """Bytes of per-request state (Mamba/linear layers); 0 for attention layers."""
        return 0

    @property
    def describe(self) -> dict:
        return {"kind": self.kind}


@dataclass(frozen=True)
class FullAttention(LayerKV):
    kind: str = "full"
    kv_heads: int = 1
    head_dim: int = 128
    head_dim_v: int | None = None
    # num_kv_shared_layers (gemma-3n / gemma-4 E-models): the layer reads an earlier layer's cache
    # (vLLM kv_sharing_target_layer_name) and allocates none of its own; its weights stay.
    shared: bool = False
    # learned attention sinks (models/gpt_oss.py: one per head): not every attention backend takes them
    sinks: bool = False
    # Bytes one token takes per KV head, K and V together, where the KV format packs scales beside the
    # values (kv_layout.packed_kv_content: per-token-head int8/fp8/int4, NVFP4); 0 = (K + V dims) × dtype bytes
    content_bytes: int = 0

    def heads_per_rank(self, tp: int) -> int:
        # vllm/config/model.py get_num_kv_heads: max(1, total // tp) — replicated when kv < tp.
        return max(1, self.kv_heads // max(1, tp))

    def bytes_per_token(self, tp: int, kv_dtype_bytes: int) -> int:
        if self.shared:
            return 0
        if self.content_bytes:
            return self.heads_per_rank(tp) * self.content_bytes
        hd_v = self.head_dim if self.head_dim_v is None else self.head_dim_v
        return self.heads_per_rank(tp) * (self.head_dim + hd_v) * kv_dtype_bytes

    @property
    def describe(self) -> dict:
        return {"kind": self.kind, "kv_heads": self.kv_heads, "head_dim": self.head_dim, "window": None}


@dataclass(frozen=True)
class SlidingWindow(FullAttention):
    kind: str = "sliding"
    window: int = 4096

    @property
    def describe(self) -> dict:
        return {**super().describe, "window": self.window}


@dataclass(frozen=True)
class ChunkedLocal(FullAttention):
    kind: str = "chunked"
    chunk: int = 8192

    @property
    def describe(self) -> dict:
        return {**super().describe, "window": self.chunk}


@dataclass(frozen=True)
class CrossAttention(FullAttention):
    """Encoder-decoder cross attention (mllama, whisper): sized by encoder tokens, not context."""

    kind: str = "cross"
    encoder_tokens: int = 0

    def bytes_per_token(self, tp: int, kv_dtype_bytes: int) -> int:
        return 0

    def cross_bytes(self, tp: int, kv_dtype_bytes: int) -> int:
        return FullAttention.bytes_per_token(self, tp, kv_dtype_bytes) * self.encoder_tokens


@dataclass(frozen=True)
class MLA(LayerKV):
    """Multi-head latent attention: one latent (kv_lora_rank + rope dim) per token, not split by TP."""

    kind: str = "mla"
    kv_lora_rank: int = 512
    rope_dim: int = 64
    # DeepSeek-V3.2-style sparse attention keeps an extra fp8 indexer key per token per layer in a
    # cache of its own (vllm/model_executor/models/deepseek_v2.py DeepseekV32IndexerCache:
    # MLAAttentionSpec, head_size index_head_dim + index_head_dim // 128 × 4 = 132, uint8), whatever
    # the KV cache dtype.
    indexer_bytes: int = 0
    # Fixed per-token size of a packed format (V1 0.11+ "fp8_ds_mla": 656 B — fp8 latent, fp32
    # scales and a bf16 rope part; vllm/v1/kv_cache_interface.py MLAAttentionSpec).
    fixed_bytes: int = 0

    def bytes_per_token(self, tp: int, kv_dtype_bytes: int) -> int:
        latent = self.fixed_bytes or (self.kv_lora_rank + self.rope_dim) * kv_dtype_bytes
        return latent + self.indexer_bytes

    @property
    def head_dim(self) -> int:
        return self.kv_lora_rank + self.rope_dim

    @property
    def describe(self) -> dict:
        return {"kind": self.kind, "kv_heads": 1, "head_dim": self.head_dim, "window": None}


@dataclass(frozen=True)
class DeepseekV4Layer(LayerKV):
    """A DeepSeek-V4 layer (vllm/models/deepseek_v4/attention.py): a sliding-window latent cache on every
    layer and, where `compress_ratio` is 4 or 128, a compressed latent cache of one row per that many
    tokens (plus, at 4, a lightning-indexer key cache); compressor states beside them. One KV head,
    replicated on every TP rank. How vLLM pools these caches is estimator/kv_deepseek_v4.py; the
    per-token figure here is only the compressed rows' marginal cost (fp8_ds_mla: 584 B a row)."""

    kind: str = "dsv4"
    compress_ratio: int = 1         # 1: the sliding window only (config ratio 0, and MTP layers)
    head_dim: int = 512
    index_head_dim: int = 128
    window: int = 128

    def bytes_per_token(self, tp: int, kv_dtype_bytes: int) -> int:
        if self.compress_ratio <= 1:
            return 0
        row = 584 if kv_dtype_bytes == 1 else self.head_dim * kv_dtype_bytes
        indexer = (self.index_head_dim + self.index_head_dim // 128 * 4) // 4 if self.compress_ratio == 4 else 0
        return -(-row // self.compress_ratio) + indexer

    @property
    def describe(self) -> dict:
        return {"kind": self.kind, "kv_heads": 1, "head_dim": self.head_dim, "window": self.window,
                "compress_ratio": self.compress_ratio}


@dataclass(frozen=True)
class MambaState(LayerKV):
    """Mamba-1/2, gated DeltaNet, lightning/linear attention, short conv: constant state per request.

    Shapes follow vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator).
    """

    kind: str = "mamba"
    variant: str = "mamba2"  # mamba1 | mamba2 | gdn | kda | linear | short_conv
    conv_kernel: int = 4
    d_inner: int = 0         # mamba1/mamba2/short_conv intermediate size
    d_state: int = 16
    n_groups: int = 1
    n_heads: int = 0         # mamba2 heads / gdn value heads / kda or linear heads
    head_dim: int = 0        # mamba2 head dim / kda or linear head dim
    k_heads: int = 0         # gdn key heads
    k_dim: int = 0           # gdn key head dim
    v_dim: int = 0           # gdn value head dim
    ssm_dtype_bytes: int | None = None  # None → model dtype (mamba_ssm_cache_dtype auto)

    def state_elems(self, tp: int) -> tuple[int, int]:
        tp = max(1, tp)
        k = self.conv_kernel - 1
        if self.variant == "mamba1":
            return k * (self.d_inner // tp), (self.d_inner // tp) * self.d_state
        if self.variant == "mamba2":
            groups = self.n_groups
            if groups % tp:
                groups = tp * math.ceil(groups / tp)  # n_groups padded up to a multiple of tp
            conv = k * ((self.d_inner + 2 * groups * self.d_state) // tp)
            return conv, (self.n_heads // tp) * self.head_dim * self.d_state
        if self.variant == "gdn":
            conv = k * ((2 * self.k_heads * self.k_dim + self.n_heads * self.v_dim) // tp)
            return conv, (self.n_heads // tp) * self.k_dim * self.v_dim
        if self.variant == "kda":
            # MambaStateShapeCalculator.kda_state_shape: one (K−1) × H·d/tp conv state each for q, k
            # and v (later releases pack them into one of the same size), (H/tp) × d × d recurrent
            return 3 * k * (self.n_heads * self.head_dim // tp), (self.n_heads // tp) * self.head_dim * self.head_dim
        if self.variant == "linear":
            return 0, (self.n_heads // tp) * self.head_dim * self.head_dim
        if self.variant == "short_conv":
            return k * (self.d_inner // tp), 0
        return 0, 0

    def state_bytes(self, tp: int, model_dtype_bytes: int) -> int:
        conv, ssm = self.state_elems(tp)
        ssm_b = self.ssm_dtype_bytes or model_dtype_bytes
        return conv * model_dtype_bytes + ssm * ssm_b

    @property
    def describe(self) -> dict:
        return {"kind": self.kind, "kv_heads": None, "head_dim": None, "window": None, "variant": self.variant}


# --------------------------------------------------------------------------------------------
# ModelSpec
# --------------------------------------------------------------------------------------------

MAX_LEN_KEYS = (
    # vllm/config/model.py _get_and_verify_max_len: the smallest of these that is present.
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_sequence_length", "max_seq_length", "seq_len", "max_target_positions",
)


@dataclass
class MoE:
    num_experts: int = 0
    experts_per_tok: int = 0
    expert_intermediate: int = 0
    shared_experts: int = 0
    shared_intermediate: int = 0
    dense_layers: int = 0        # decoder layers with a dense MLP (first_k_dense_replace …)
    layer_is_moe: tuple[bool, ...] = ()   # per decoder layer: its MLP is MoE (moe_layer_flags)

    @property
    def moe_layers(self) -> int:
        """Decoder layers whose MLP is MoE."""
        return sum(self.layer_is_moe)


@dataclass
class ModelSpec:
    model_id: str
    architecture: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    torch_dtype: str | None
    layers: tuple[LayerKV, ...]
    max_len_keys: dict[str, int]
    rope_scaling: dict | None
    rotary_dim: int
    moe: MoE | None = None
    mla: dict | None = None
    quantization: dict | None = None
    vision: dict | None = None
    is_multimodal: bool = False
    is_encoder_decoder: bool = False
    config: dict = field(default_factory=dict)       # the whole config.json
    text: dict = field(default_factory=dict)         # the text (LLM) config with defaults filled
    companions: dict = field(default_factory=dict)   # hf_quant_config.json etc.
    assumptions: list[str] = field(default_factory=list)
    # why the KV layout is only partly modelled ("" when it is): the reply then leads with vLLM's numbers
    kv_unmodelled: str = ""

    # ---- derived views -----------------------------------------------------------------
    @property
    def attention_layers(self) -> list[LayerKV]:
        return [lk for lk in self.layers if lk.bytes_per_token(1, 2) > 0]

    @property
    def state_layers(self) -> list[MambaState]:
        return [lk for lk in self.layers if isinstance(lk, MambaState)]

    @property
    def is_hybrid_state(self) -> bool:
        return bool(self.state_layers)

    @property
    def uses_mla(self) -> bool:
        return any(isinstance(lk, MLA) for lk in self.layers)

    @property
    def deepseek_v4_layers(self) -> list[DeepseekV4Layer]:
        """DeepSeek-V4's layers (their caches are pooled by estimator/kv_deepseek_v4.py); [] for other models."""
        return [lk for lk in self.layers if isinstance(lk, DeepseekV4Layer)]

    @property
    def kv_replicated_by_tp(self) -> bool:
        """One latent KV head (MLA, DeepSeek-V4): every TP rank keeps the whole KV cache."""
        return any(isinstance(lk, (MLA, DeepseekV4Layer)) for lk in self.layers)

    @property
    def sliding_window(self) -> int | None:
        ws = [lk.window for lk in self.layers if isinstance(lk, SlidingWindow)]
        return min(ws) if ws else None

    @property
    def model_dtype_bytes(self) -> int:
        return dtype_bytes(self.torch_dtype, 2)

    def kv_bytes_per_token(self, tp: int = 1, kv_dtype_bytes: int = 2, layers: list[LayerKV] | None = None) -> int:
        """Bytes of KV one token costs on one rank, summed over all layers that keep per-token KV.

        Sliding/chunked layers are counted at full per-token cost here (that is what one token
        costs while it is inside the window); the memory model caps their per-request use.
        """
        return sum(lk.bytes_per_token(tp, kv_dtype_bytes) for lk in (self.layers if layers is None else layers))

    def attention_summary(self) -> list[dict]:
        """Group identical layers for the JSON contract: [{kind, layers, kv_heads, head_dim, window}]."""
        groups: dict[tuple, dict] = {}
        for lk in self.layers:
            d = lk.describe
            key = tuple(sorted(d.items(), key=lambda kv: kv[0]))
            if key not in groups:
                groups[key] = {**d, "layers": 0}
            groups[key]["layers"] += 1
        return list(groups.values())

    def derived_max_len(self) -> tuple[int | None, str | None]:
        """Smallest length key present (vLLM's `derived_max_model_len` before rope scaling)."""
        if not self.max_len_keys:
            return None, None
        key = min(self.max_len_keys, key=lambda k: self.max_len_keys[k])
        return self.max_len_keys[key], key


# --------------------------------------------------------------------------------------------
# Reading config.json
# --------------------------------------------------------------------------------------------

# transformers class defaults that trimmed configs rely on (configuration_<type>.py).
_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072,
        "sliding_window": 4096, "sliding_window_pattern": 6, "tie_word_embeddings": True, "query_pre_attn_scalar": 256,
        # the local (sliding) layers' RoPE base: vLLM's gemma3.py builds their rotary embedding from it, a
        # second cos/sin cache beside the global layers' scaled one (params.rope_cache_bytes)
        "rope_theta": 1_000_000.0, "rope_local_base_freq": 10_000.0,
    },
    # LlamaConfig: llava-hf's LLaVA configs keep only a few text_config keys (vocab, length, norm eps)
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "max_position_embeddings": 2048},
    # MistralConfig (transformers configuration_mistral.py): llava-hf's LLaVA-NeXT Mistral config keeps only
    # the text_config keys that differ from these
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
                "sliding_window": 4096},
    "gemma2": {"head_dim": 256, "sliding_window": 4096, "tie_word_embeddings": True},
    "gemma": {"head_dim": 256, "tie_word_embeddings": True},
    "llama4_text": {"no_rope_layer_interval": 4, "tie_word_embeddings": False},
    # FalconConfig/RWConfig leave tie_word_embeddings to PretrainedConfig's default (True); vLLM falcon.py ties too.
    "falcon": {"tie_word_embeddings": True},
    "refinedwebmodel": {"tie_word_embeddings": True},
    "refinedweb": {"tie_word_embeddings": True},
    # GPT2Config and GPTBigCodeConfig leave tie_word_embeddings to PretrainedConfig's default (True); vLLM's
    # gpt2.py and gpt_bigcode.py tie lm_head to wte.
    "gpt2": {"tie_word_embeddings": True},
    "gpt_bigcode": {"tie_word_embeddings": True},
    # MPTConfig and CohereConfig / Cohere2Config tie by default too (vLLM's mpt.py and commandr.py use wte /
    # embed_tokens as the head)
    "mpt": {"tie_word_embeddings": True},
    "cohere": {"tie_word_embeddings": True},
    "cohere2": {"tie_word_embeddings": True},
    # OPTConfig: tie_word_embeddings and enable_bias default to True (vLLM opt.py ties lm_head)
    "opt": {"tie_word_embeddings": True, "enable_bias": True},
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                            "num_attention_heads": 12, "image_size": 224, "patch_size": 16, "num_channels": 3},
}

# Vision-config class defaults (transformers Qwen2VLVisionConfig / Qwen2_5_VLVisionConfig) that
# config copies leave out, keyed by the model's type: the tower's depth, its activation (whether its
# MLP is gated, params.vision_mlp_gated), and the merge (its patches per token, its merger's size).
# A re-saved Qwen2-VL file keeps only the keys that differ from the class's (Qwen2-VL-7B's fine-tunes:
# in_chans, model_type, spatial_patch_size), so all of Qwen2VLVisionConfig's sizes are here.
_VISION_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen2_vl": {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "hidden_act": "quick_gelu", "mlp_ratio": 4,
                 "num_heads": 16, "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2,
                 "temporal_patch_size": 2},
    "qwen2_5_vl": {"depth": 32, "hidden_act": "silu", "spatial_merge_size": 2},
}

_TEXT_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


def _first(d: dict, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return default


def text_config(config: dict) -> dict:
    """The LLM part of a (possibly multimodal / nested) config, with class defaults filled in."""
    text = dict(config)
    for key in _TEXT_KEYS:
        sub = config.get(key)
        if isinstance(sub, dict) and sub:
            # Some multimodal configs keep LLM keys at top level and a partial text_config.
            text = {**{k: v for k, v in config.items() if k not in _TEXT_KEYS and not isinstance(v, dict)}, **sub}
            break
    mtype = text.get("model_type") or config.get("model_type") or ""
    if mtype == "gemma3" and "text_config" in config:
        mtype = "gemma3_text"
    defaults = _TYPE_DEFAULTS.get(mtype, {}) or _TYPE_DEFAULTS.get(str(mtype).lower(), {})
    for k, v in defaults.items():
        text.setdefault(k, v)
    text["_defaults_used"] = sorted(k for k in defaults if k not in (config.get("text_config") or config))
    return text


def _total_kv_heads(text: dict, heads: int, mtype: str) -> int:
    # vllm/config/model.py get_total_num_kv_heads.
    falcon_new = mtype == "falcon" and text.get("new_decoder_architecture")
    if text.get("multi_query") and not falcon_new:
        return 1
    if mtype in ("mpt", "dbrx") and isinstance(text.get("attn_config"), dict):
        return int(text["attn_config"].get("kv_n_heads", heads))
    v = _first(text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num")
    return int(v) if v is not None else heads


# Models with no attention at all (vllm mamba.py, mamba2.py): every layer a Mamba mixer
PURE_MAMBA_TYPES = ("mamba", "mamba2", "falcon_mamba")


def _layer_kinds(text: dict, n: int, mtype: str) -> list[str]:
    """Per-layer kind names: full | sliding | chunked | linear | mamba | cross | mla-handled later."""
    if mtype in PURE_MAMBA_TYPES:
        return ["mamba"] * n
    lt = text.get("layer_types")
    if isinstance(lt, list) and len(lt) >= n:
        out = []
        for t in lt[:n]:
            t = str(t).lower()
            if "sliding" in t or t == "local":
                out.append("sliding")
            elif "chunk" in t:
                out.append("chunked")
            elif "linear" in t:
                out.append("linear")
            elif "mamba" in t or t in ("m", "ssm", "conv"):
                out.append("mamba")
            else:
                out.append("full")
        return out
    if mtype.startswith("lfm2") and isinstance(text.get("full_attn_idxs"), list):
        # LFM2's first configs list the attention layers; the rest are short convolutions (transformers'
        # Lfm2Config turns them into layer_types "full_attention" / "conv")
        full = {int(x) for x in text["full_attn_idxs"]}
        return ["full" if i in full else "mamba" for i in range(n)]
    lac = text.get("linear_attn_config")
    if isinstance(lac, dict) and isinstance(lac.get("kda_layers"), list):
        # Kimi-Linear: 1-based layer numbers of the KDA (linear) layers; the rest are MLA
        # (vllm/model_executor/models/kimi_linear.py: is_kda = layer_idx + 1 in kda_layers)
        kda = {int(x) for x in lac["kda_layers"]}
        return ["linear" if i + 1 in kda else "full" for i in range(n)]
    if isinstance(text.get("hybrid_override_pattern"), str):  # nemotron-h: M mamba, * attention, - mlp, E moe
        return [{"M": "mamba", "*": "full"}.get(c, "none") for c in text["hybrid_override_pattern"][:n]]
    if isinstance(text.get("attn_layer_indices"), list):
        # Bamba: attention at the listed layers, Mamba-2 elsewhere (transformers' BambaConfig.layers_block_type,
        # which vllm/model_executor/models/bamba.py builds its decoder layers from)
        attn = {x for x in text["attn_layer_indices"] if isinstance(x, int)}
        return ["full" if i in attn else "mamba" for i in range(n)]
    if isinstance(text.get("layers_block_type"), list):  # jamba/zamba style
        return ["mamba" if str(t).lower() == "mamba" else "full" for t in text["layers_block_type"][:n]]
    if isinstance(text.get("attn_type_list"), list):  # minimax: 1 softmax attention, 0 lightning
        return ["full" if int(t) == 1 else "linear" for t in text["attn_type_list"][:n]]
    if "attn_layer_period" in text and "attn_layer_offset" in text:  # jamba
        p, o = int(text["attn_layer_period"]), int(text["attn_layer_offset"])
        return ["full" if i % p == o else "mamba" for i in range(n)]
    if text.get("full_attention_interval") and mtype.startswith(("qwen3_next", "qwen3_5")):
        k = int(text["full_attention_interval"])
        return ["full" if (i + 1) % k == 0 else "linear" for i in range(n)]
    if text.get("attention_chunk_size"):  # llama4: every no_rope_layer_interval-th layer is global
        nope = text.get("no_rope_layers")
        if isinstance(nope, list) and len(nope) >= n:
            return ["chunked" if nope[i] else "full" for i in range(n)]
        k = int(text.get("no_rope_layer_interval") or 4)
        return ["full" if (i + 1) % k == 0 else "chunked" for i in range(n)]
    window = text.get("sliding_window")
    if window:
        if mtype == "gemma2":  # transformers/vLLM gemma2: even layers slide
            return ["sliding" if i % 2 == 0 else "full" for i in range(n)]
        pattern = text.get("sliding_window_pattern") or text.get("_sliding_window_pattern")
        if pattern:  # gemma3: every pattern-th layer is global
            p = int(pattern)
            return ["full" if (i + 1) % p == 0 else "sliding" for i in range(n)]
        if "use_sliding_window" in text:
            # Qwen2 family: the window is off unless use_sliding_window; then layers from
            # max_window_layers on slide (transformers Qwen2Attention / vLLM qwen2.py).
            if not text.get("use_sliding_window"):
                return ["full"] * n
            mwl = int(text.get("max_window_layers") or 0)
            return ["sliding" if i >= mwl else "full" for i in range(n)]
        return ["sliding"] * n
    return ["full"] * n


def _lfm2_ff_dim(text: dict, ff: int) -> int:
    """LFM2's MLP width as vLLM's lfm2.py Lfm2MLP derives it: block_ff_dim (or intermediate_size), and with
    block_auto_adjust_ff_dim two thirds of it, times block_ffn_dim_multiplier, rounded up to a multiple of
    block_multiple_of (12,288 → 8,192 for LFM2-1.2B)."""
    ff = _positive_int(text.get("block_ff_dim")) or ff
    if text.get("block_auto_adjust_ff_dim"):
        ff = int(2 * ff / 3)
        if text.get("block_ffn_dim_multiplier") is not None:
            ff = int(float(text["block_ffn_dim_multiplier"]) * ff)
        step = _positive_int(text.get("block_multiple_of")) or 256
        ff = step * ((ff + step - 1) // step)
    return ff


def _mamba_state(text: dict, kind: str, mtype: str, hidden: int) -> MambaState:
    if mtype.startswith("lfm2"):
        # LFM2's short convolution (lfm2.py ShortConv; MambaStateShapeCalculator.short_conv_state_shape):
        # a conv_dim / tp × (conv_L_cache − 1) state in the model dtype, no SSM state
        return MambaState(variant="short_conv", conv_kernel=int(text.get("conv_L_cache") or 3),
                          d_inner=int(text.get("conv_dim") or hidden))
    ssm_dtype = text.get("mamba_ssm_dtype") or text.get("mamba_ssm_cache_dtype")
    ssm_b = dtype_bytes(ssm_dtype) if ssm_dtype else None
    if kind == "linear" and ("linear_num_value_heads" in text):  # gated DeltaNet (Qwen3-Next, Qwen3.5)
        return MambaState(
            kind="linear", variant="gdn", conv_kernel=int(text.get("linear_conv_kernel_dim", 4)),
            n_heads=int(text["linear_num_value_heads"]), k_heads=int(text.get("linear_num_key_heads", 0)),
            k_dim=int(text.get("linear_key_head_dim", 128)), v_dim=int(text.get("linear_value_head_dim", 128)),
            ssm_dtype_bytes=ssm_b,
        )
    lac = text.get("linear_attn_config")
    if kind == "linear" and isinstance(lac, dict) and lac.get("kda_layers"):
        # Kimi Delta Attention (vllm/model_executor/layers/kda.py): q/k/v short-conv states in the
        # cache dtype and a float32 recurrent state (MambaStateDtypeCalculator.kda_state_dtype)
        return MambaState(kind="linear", variant="kda", conv_kernel=int(lac.get("short_conv_kernel_size", 4)),
                          n_heads=int(lac["num_heads"]), head_dim=int(lac["head_dim"]), ssm_dtype_bytes=4)
    if kind == "linear":  # lightning attention (MiniMax-Text-01): heads × head_dim²
        heads = int(_first(text, "num_attention_heads", default=1))
        hd = int(_first(text, "head_dim", default=hidden // max(1, heads)))
        # its state is in the cache dtype (mamba_utils.py linear_attention_state_dtype: the model dtype)
        return MambaState(kind="linear", variant="linear", n_heads=heads, head_dim=hd, ssm_dtype_bytes=ssm_b)
    d_state = int(_first(text, "mamba_d_state", "ssm_state_size", "state_size", "d_state", default=16))
    conv = int(_first(text, "mamba_d_conv", "conv_kernel", "d_conv", default=4))
    expand = _first(text, "mamba_expand", "expand", default=2)
    # Zamba2 spells them n_mamba_heads / mamba_headdim / mamba_ngroups (vllm zamba2.py)
    n_heads = _first(text, "mamba_n_heads", "mamba_num_heads", "num_heads_mamba", "n_mamba_heads")
    head_dim = _first(text, "mamba_d_head", "mamba_head_dim", "mamba_headdim")
    if mtype == "mamba2" and not n_heads:
        # Mamba2Config spells them num_heads / head_dim (its layers have no attention to share them with)
        n_heads, head_dim = text.get("num_heads"), head_dim or text.get("head_dim")
    d_inner = _first(text, "mamba_d_ssm", "intermediate_size_mamba")
    if mtype == "zamba2" and not n_heads and head_dim:
        n_heads = int(expand * hidden) // int(head_dim)     # transformers' Zamba2Config derives it so
    if n_heads and head_dim and not d_inner:
        d_inner = int(n_heads) * int(head_dim)
    d_inner = int(d_inner or int(expand * hidden))
    if n_heads:  # Mamba-2
        return MambaState(variant="mamba2", conv_kernel=conv, d_inner=d_inner, d_state=d_state,
                          n_groups=int(_first(text, "mamba_n_groups", "n_groups", "mamba_ngroups", default=1)),
                          n_heads=int(n_heads), head_dim=int(head_dim or d_inner // int(n_heads)),
                          ssm_dtype_bytes=ssm_b)
    return MambaState(variant="mamba1", conv_kernel=conv, d_inner=d_inner, d_state=d_state, ssm_dtype_bytes=ssm_b)


def _positive_int(v: Any) -> int | None:
    try:
        iv = int(v)
    except (TypeError, ValueError):
        return None
    return iv if iv > 0 else None


_NEMOTRON_BLOCKS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _nemotron_pattern(text: dict) -> None:
    """Newer Nemotron-H configs list the layers (`layers_block_type`: mamba / attention / mlp / moe)
    where older ones have `hybrid_override_pattern` (M * - E); vLLM reads either. Both become the
    pattern string here, which the layer kinds, the MoE layer count and the weights read. The MTP
    block's list (`mtp_layers_block_type`) becomes `mtp_hybrid_override_pattern` the same way."""
    for listed, pattern in (("layers_block_type", "hybrid_override_pattern"),
                            ("mtp_layers_block_type", "mtp_hybrid_override_pattern")):
        blocks = text.get(listed)
        if isinstance(text.get(pattern), str) or not isinstance(blocks, list):
            continue
        if all(str(b).lower() in _NEMOTRON_BLOCKS for b in blocks):
            text[pattern] = "".join(_NEMOTRON_BLOCKS[str(b).lower()] for b in blocks)


# More layers than any model has (the largest configs list a few hundred): a config claiming more is
# not a model, and building per-layer lists for it would take the process's memory and time.
MAX_LAYERS = 10_000


# The counts the weights and KV layout build one entry per layer for (the model's, its MTP modules',
# its towers')
_NUM_LAYERS_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")   # the model's own, first found
_LAYER_COUNT_KEYS = _NUM_LAYERS_KEYS + ("num_nextn_predict_layers", "mtp_num_hidden_layers", "depth")


def _check_layer_counts(config: dict, text: dict) -> None:
    for part in (text, *(v for v in config.values() if isinstance(v, dict))):
        for key in _LAYER_COUNT_KEYS:
            v = part.get(key)
            if isinstance(v, int) and v > MAX_LAYERS:
                raise ValueError(f"{key} {v:,} is more than any model has")


def spec_from_config(config: dict, model_id: str = "", companions: dict | None = None) -> ModelSpec:
    """Build a ModelSpec from a config.json dict. Missing keys become guesses in assumptions; a config
    that is not an object or claims more than MAX_LAYERS layers raises ValueError (api.load_model turns
    it, like any value of a type the arithmetic cannot use, into ModelConfigUnusable)."""
    if not isinstance(config, dict):
        raise ValueError("config.json must be a JSON object")
    assumptions: list[str] = []
    text = text_config(config)
    if text.get("_defaults_used"):
        assumptions.append(
            f"config omits {', '.join(text['_defaults_used'])}; used transformers' defaults for {text.get('model_type')}"
        )
    archs = config.get("architectures") or text.get("architectures") or []
    arch = archs[0] if archs else (config.get("model_type") or "unknown")
    mtype = str(text.get("model_type") or config.get("model_type") or "").lower()

    if mtype == "nemotron_h":
        _nemotron_pattern(text)
    n = _positive_int(_first(text, *_NUM_LAYERS_KEYS))
    if mtype == "nemotron_h" and isinstance(text.get("hybrid_override_pattern"), str):
        n = len(text["hybrid_override_pattern"])      # nemotron_h.py builds one layer per pattern character
    hidden = _positive_int(_first(text, "hidden_size", "n_embd", "d_model", "dim"))
    heads = _positive_int(_first(text, "num_attention_heads", "n_head", "n_heads", "num_heads"))
    if not n:
        n = 32
        assumptions.append("number of layers not found in config; assumed 32")
    _check_layer_counts(config, text)
    if not hidden:
        hidden = 4096
        assumptions.append("hidden size not found in config; assumed 4096")
    if not heads:
        heads = max(1, hidden // 128)
        assumptions.append(f"attention heads not found in config; assumed {heads} (head_dim 128)")
    kv_heads = _total_kv_heads(text, heads, mtype)
    head_dim = _positive_int(text.get("head_dim")) or hidden // heads
    inter = _positive_int(_first(text, "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")) or 4 * hidden
    if mtype.startswith("lfm2"):
        inter = _lfm2_ff_dim(text, inter)
    vocab = _positive_int(_first(text, "vocab_size", "padded_vocab_size")) or 32000
    if not _first(text, "vocab_size", "padded_vocab_size"):
        assumptions.append("vocab_size not found; assumed 32000")
    # LFM2's configs spell it tie_embedding (transformers' Lfm2Config reads it as tie_word_embeddings)
    tie = bool(_first(text, "tie_word_embeddings", "tie_embedding",
                      default=_first(config, "tie_word_embeddings", default=False)))
    torch_dtype = _first(text, "torch_dtype", "dtype", default=_first(config, "torch_dtype", "dtype"))

    kinds = _layer_kinds(text, n, mtype)
    if len(kinds) < n:
        kinds += ["full"] * (n - len(kinds))

    # MLA (DeepSeek V2/V3/R1, Kimi K2, GLM DSA …): vllm/config/model.py is_deepseek_mla.
    mla = None
    if _positive_int(text.get("kv_lora_rank")) and text.get("qk_rope_head_dim") is not None:
        mla = {k: text.get(k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")}
    indexer = 0
    if mla and text.get("index_head_dim") and text.get("index_topk"):
        indexer = int(text["index_head_dim"]) + 4
    # IndexShare (GLM-5 "indexer_types"): only "full" layers run an indexer and cache its keys;
    # "shared" layers reuse the previous one's top-k. vllm-project/recipes#893's offload byte counts
    # (≈431 KB per token over 8 ranks for GLM-5.3) match 78 × 656 + 21 × 132 B, not 78 × (656 + 132).
    owners = text.get("indexer_types")
    owns_indexer = [t == "full" for t in owners] if isinstance(owners, list) and len(owners) == n else [True] * n

    # Full-attention layers may use their own heads/dims (gemma-4 global layers).
    g_kv = _positive_int(text.get("num_global_key_value_heads")) or kv_heads
    g_hd = _positive_int(text.get("global_head_dim")) or head_dim
    # attention_k_eq_v (gemma-4 global layers) shares K as V in the model, not in vLLM's cache:
    # Gemma4Attention builds a standard Attention with K and V slots and loads K into both
    # (vllm/model_executor/models/gemma4.py), so the cache keeps two states per token. Dev case
    # club3090#334 (26B-A4B, bf16: 5.98 GiB needed at 262,144) and vllm#43308 (31B: 0.21 reports
    # ≈9.5× 0.20's tokens for the same pool) agree with two states, not one.
    window = _positive_int(text.get("sliding_window")) or 4096
    chunk = _positive_int(text.get("attention_chunk_size")) or 8192
    cross = set(text.get("cross_attention_layers") or [])

    ratios = text.get("compress_ratios") or config.get("compress_ratios")
    dsv4 = isinstance(ratios, list) and len(ratios) >= n
    layers: list[LayerKV] = []
    for i, kind in enumerate(kinds):
        if dsv4:
            # DeepSeek-V4: compress_ratios[i] (0: window only; the list's extra entry is the MTP layer's)
            layers.append(DeepseekV4Layer(compress_ratio=max(1, int(ratios[i] or 0)), head_dim=head_dim,
                                          index_head_dim=_positive_int(text.get("index_head_dim")) or 128,
                                          window=_positive_int(text.get("sliding_window")) or 128))
        elif i in cross:
            enc = _positive_int((config.get("vision_config") or {}).get("max_num_tiles")) or 4
            layers.append(CrossAttention(kv_heads=kv_heads, head_dim=head_dim, encoder_tokens=enc * 1601))
        elif kind in ("mamba", "linear"):
            layers.append(_mamba_state(text, kind, mtype, hidden))
        elif kind == "none":
            layers.append(LayerKV())
        elif mla:
            layers.append(MLA(kv_lora_rank=int(mla["kv_lora_rank"]), rope_dim=int(mla["qk_rope_head_dim"]),
                              indexer_bytes=indexer if owns_indexer[i] else 0))
        elif kind == "sliding":
            layers.append(SlidingWindow(kv_heads=kv_heads, head_dim=head_dim, window=window))
        elif kind == "chunked":
            layers.append(ChunkedLocal(kv_heads=kv_heads, head_dim=head_dim, chunk=chunk))
        else:
            layers.append(FullAttention(kv_heads=g_kv, head_dim=g_hd))
    if mtype.startswith("gpt_oss"):
        # gpt_oss.py passes a learned sink per head to every attention layer (params.py counts them)
        layers = [dataclasses.replace(lk, sinks=True) if isinstance(lk, FullAttention) else lk for lk in layers]
    n_shared = _positive_int(text.get("num_kv_shared_layers")) or 0
    if 0 < n_shared < n:
        # gemma3n.py / gemma4.py: the last num_kv_shared_layers layers reuse the cache of the last
        # earlier layer of their type, so only the first n − shared layers hold KV.
        layers = [dataclasses.replace(lk, shared=True) if i >= n - n_shared and isinstance(lk, FullAttention)
                  and not isinstance(lk, CrossAttention) else lk for i, lk in enumerate(layers)]
        assumptions.append(f"num_kv_shared_layers: the last {n_shared} layers reuse earlier layers' KV cache "
                           "and hold none of their own")
    # Layers that run a Mamba-2 mixer beside their attention keep both a KV cache and a state:
    # every layer of Falcon-H1; each "hybrid" layer of Zamba2 (vllm zamba2.py: a shared transformer
    # block AND a Mamba-2 layer, the block's Attention with num_attention_heads K/V heads of
    # attention_head_dim = attention_hidden_size / heads — transformers: 2 × hidden / heads — and its
    # own cache per hybrid layer although the blocks' weights are shared).
    both: list[int] = []
    if mtype == "falcon_h1" or text.get("parallel_hybrid"):
        both = list(range(n))
        assumptions.append("parallel hybrid: each layer keeps both attention KV and a Mamba-2 state")
    elif mtype == "zamba2":
        z_hd = _positive_int(text.get("attention_head_dim")) or \
            (_positive_int(text.get("attention_hidden_size")) or 2 * hidden) // heads
        both = [i for i, lk in enumerate(layers) if isinstance(lk, FullAttention)]
        layers = [FullAttention(kv_heads=heads, head_dim=z_hd) if i in both else lk for i, lk in enumerate(layers)]
        if both:
            assumptions.append(f"Zamba2: {len(both)} hybrid layers keep attention KV ({heads} heads × {z_hd}) "
                               "and a Mamba-2 state each")
    if both:
        layers = layers + [_mamba_state(text, "mamba", mtype, hidden)] * len(both)

    max_len_keys = {k: int(text[k]) for k in MAX_LEN_KEYS if _positive_int(text.get(k))}
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    if isinstance(rope, dict) and set(rope) >= {"full_attention"}:  # per-layer-type rope params (gemma-4)
        rope = None
    partial = float(text.get("partial_rotary_factor") or (rope or {}).get("partial_rotary_factor") or 1.0) \
        if isinstance(rope, dict) or text.get("partial_rotary_factor") else 1.0
    rot = _positive_int(text.get("rotary_dim")) or int((mla["qk_rope_head_dim"] if mla else head_dim) * partial)

    moe = _moe(text, n, inter)
    quant = config.get("quantization_config") or text.get("quantization_config")
    companions = dict(companions or {})
    if not quant and isinstance(companions.get("hf_quant_config.json"), dict):
        q = companions["hf_quant_config.json"].get("quantization", companions["hf_quant_config.json"])
        quant = {"quant_method": "modelopt", **q}
    if not quant and isinstance(companions.get("quantize_config.json"), dict):
        quant = {"quant_method": "gptq", **companions["quantize_config.json"]}

    vision = config.get("vision_config") if isinstance(config.get("vision_config"), dict) else None
    if vision:
        vision = {**_VISION_DEFAULTS.get(str(config.get("model_type") or ""), {}), **vision}
    is_mm = bool(vision) or any(k in config for k in ("image_token_index", "image_token_id", "vision_start_token_id"))
    # a multimodal config's own type (mllama) knows its text part's (mllama_text_model)
    known = mtype in _KNOWN_TYPES or str(config.get("model_type") or "") in _KNOWN_TYPES
    if not known:
        assumptions.append(
            f"architecture {arch} ({mtype or 'no model_type'}) is not one kvdoctor knows; read it as a generic "
            "decoder (standard attention unless the config says otherwise)"
        )
    kv_unmodelled = ""
    if (text.get("compress_ratios") or config.get("compress_ratios")) and not dsv4:
        # a compress_ratios list that does not cover the layers: not a layout kvdoctor knows
        kv_unmodelled = ("this model's compressed KV caches (compress_ratios, DeepSeek-V4 style) do not match its "
                         "layer count: kvdoctor counts its sliding window only, so its KV per token and capacity "
                         "are not vLLM's")
        assumptions.append(kv_unmodelled)
    return ModelSpec(
        model_id=model_id or str(config.get("_name_or_path") or ""),
        architecture=arch, model_type=mtype, num_layers=n, hidden_size=hidden,
        num_attention_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        intermediate_size=inter, vocab_size=vocab, tie_word_embeddings=tie, torch_dtype=torch_dtype,
        layers=tuple(layers), max_len_keys=max_len_keys, rope_scaling=rope if isinstance(rope, dict) else None,
        rotary_dim=rot, moe=moe, mla=mla, quantization=quant if isinstance(quant, dict) else None,
        vision=vision, is_multimodal=is_mm, is_encoder_decoder=bool(config.get("is_encoder_decoder")),
        config=config, text=text, companions=companions, assumptions=assumptions, kv_unmodelled=kv_unmodelled,
    )


def _moe(text: dict, n: int, inter: int) -> MoE | None:
    ffn = text.get("ffn_config") if isinstance(text.get("ffn_config"), dict) else {}
    if ffn:
        # DBRX keeps its experts in ffn_config (dbrx.py DbrxExperts: moe_num_experts × ffn_hidden_size,
        # moe_top_k of them a token)
        text = {**text, "moe_num_experts": ffn.get("moe_num_experts"), "moe_topk": ffn.get("moe_top_k"),
                "expert_intermediate_size": ffn.get("ffn_hidden_size")}
    experts = _positive_int(_first(text, "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"))
    if not experts or experts <= 1:
        return None
    topk = _positive_int(_first(text, "num_experts_per_tok", "experts_per_token", "num_experts_per_token",
                                "top_k_experts", "moe_topk")) or 1
    e_inter = _positive_int(_first(text, "moe_intermediate_size", "expert_intermediate_size")) or inter
    shared = _positive_int(_first(text, "n_shared_experts", "num_shared_experts")) or 0   # kimi_linear: num_…
    shared_inter = _positive_int(_first(text, "shared_expert_intermediate_size", "shared_intermediate_size",
                                        "moe_shared_expert_intermediate_size")) or 0
    if shared and not shared_inter:
        shared_inter = shared * e_inter
    if shared_inter and not shared:
        shared = 1
    flags = moe_layer_flags(text, n)
    pattern = text.get("hybrid_override_pattern")
    # nemotron-h's M (Mamba) and * (attention) layers have no MLP at all: its dense layers are the "-" ones
    dense = pattern[:n].count("-") if isinstance(pattern, str) else n - sum(flags)
    return MoE(num_experts=experts, experts_per_tok=topk, expert_intermediate=e_inter, shared_experts=shared,
               shared_intermediate=shared_inter, dense_layers=dense, layer_is_moe=flags)


def moe_layer_flags(text: dict, n: int) -> tuple[bool, ...]:
    """Which of the n decoder layers run their MLP as experts, by the key each family's vLLM model reads:
    nemotron-h's hybrid_override_pattern (E; nemotron_h.py), a per-layer mlp_layer_types list, Jamba's
    expert_layer_period / offset (JambaConfig.layers_num_experts), a per-layer moe_layer_freq list
    (MiniMax-M3: MoE where the flag is not 0), else the first_k_dense_replace dense layers, one MoE
    layer every interleave_moe_layer_step / decoder_sparse_step / moe_layer_freq layers and none in
    mlp_only_layers (deepseek_v2.py, llama4.py, qwen2_moe.py / qwen3_moe.py). One map, so that the count
    the memory model uses and the per-layer weight inventory (params) cannot disagree."""
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return tuple(i < len(pattern) and pattern[i] == "E" for i in range(n))
    types = text.get("mlp_layer_types")
    if isinstance(types, list) and len(types) >= n:
        return tuple(str(x).lower() != "dense" for x in types[:n])
    period = _positive_int(text.get("expert_layer_period"))
    if period:
        offset = int(text.get("expert_layer_offset") or 0)
        return tuple(i % period == offset for i in range(n))
    flags = text.get("moe_layer_freq")
    if isinstance(flags, list) and len(flags) >= n:
        return tuple(bool(f) for f in flags[:n])
    dense = _positive_int(text.get("first_k_dense_replace")) or 0
    step = _positive_int(_first(text, "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq")) or 1
    only = text.get("mlp_only_layers") if isinstance(text.get("mlp_only_layers"), list) else []
    return tuple(i >= dense and (i + 1) % step == 0 and i not in only for i in range(n))


_KNOWN_TYPES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "qwen2_vl",
    "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "gemma", "gemma2",
    "gemma3", "gemma3_text", "gemma4", "gemma4_text", "gpt_oss", "llama4", "llama4_text", "deepseek_v2",
    "deepseek_v3", "deepseek_v32", "deepseek_v4", "kimi_k2", "glm_moe_dsa", "glm4_moe", "minimax_m2",
    "minimax_text_01", "phi3", "phi", "phi4", "falcon", "refinedwebmodel", "refinedweb", "jamba", "falcon_h1",
    "granitemoehybrid", "nemotron_h", "bamba", "kimi_linear", "qwen3_vl_text", "qwen3_vl_moe_text", "qwen3_5_moe_text", "mamba", "mamba2", "falcon_mamba", "mllama", "mistral3",
    "pixtral", "cohere", "cohere2", "starcoder2", "gpt_bigcode", "gpt_neox", "mpt", "dbrx", "internlm2",
    "chatglm", "glm4", "olmo2", "exaone", "granite", "llava", "yi", "baichuan", "zamba2", "lfm2", "opt", "gpt2",
    "laguna",
}
