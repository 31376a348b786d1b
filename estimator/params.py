"""Parameter counts and weight bytes from a ModelSpec, the way vLLM lays the weights out on GPUs.

Why a tensor inventory instead of a formula: quantization formats leave some tensors alone
(lm_head, embeddings, routers, ignore lists), tensor parallelism splits some and replicates
others, pipeline parallelism puts embeddings on the first stage and lm_head on the last. So the
model is first turned into a list of weight groups (`_W`: shape, kind, layer, HF-style name), and
`count_params` / `weight_bytes` are sums over that list under different rules. Shapes follow the
model files in `vllm/model_executor/models/` (llama.py, qwen2.py, qwen3*.py, deepseek_v2.py,
gpt_oss.py, falcon.py, gemma*.py, qwen2_5_vl.py, qwen3_vl.py, siglip.py …); nothing here is keyed
on a model name, only on config keys and model_type families.

Conventions: counts are "logical" parameters as the model defines them (a tied embedding once,
packed quantized tensors counted as the parameters they encode). Bytes are per GPU rank.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import regex

from estimator.spec import (
    PURE_MAMBA_TYPES,
    DeepseekV4Layer,
    MambaState,
    ModelSpec,
    _positive_int,
    dtype_bytes,
)

# --------------------------------------------------------------------------------------------
# Result type
# --------------------------------------------------------------------------------------------


@dataclass
class WeightBreakdown:
    params_total: int                 # logical parameter count (embeddings once if tied), incl. vision tower
    params_by_part: dict[str, int]    # embed, attention, mlp, experts, ..., mtp (excluded from the total)
    bytes_total: int                  # bytes on one GPU rank (whole model when tp=pp=1)
    bytes_by_part: dict[str, int]
    format: str                       # "bf16", "fp8", "fp8-block", "awq-int4", "mxfp4", "nvfp4", ...
    assumptions: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Weight inventory
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _W:
    part: str          # embed | attention | mlp | experts | shared_experts | router | norms | lm_head | vision | mtp
    name: str          # HF-style module name, used to match quantization ignore lists
    rows: int          # out_features (linear) / vocab (embedding) / length (1-D tensors)
    cols: int = 1      # in_features (linear) / hidden (embedding) / 1 (1-D tensors)
    copies: int = 1    # experts (one tensor per expert)
    kind: str = "linear"  # linear | embed | lm_head | norm | bias | param | conv | router (a linear built without
    #                       quant_config, kept in the model dtype: MoE routers and gates, DeepSeek-V4's compressors)
    layer: int | None = None  # decoder layer index (PP placement); None = outside the layer stack
    tp: str = "split"  # split | replicate | vocab | kv (split by KV heads, replicated when kv < tp)
    kv_heads: int = 0  # for tp == "kv": number of KV heads in `rows`
    stored: bool = True  # False: vLLM allocates it on the GPU but the checkpoint has no such tensor
    elem_bytes: int = 0  # an unquantized tensor kept in its own dtype (fp32 mixing weights), not the model's

    @property
    def params(self) -> int:
        return self.rows * self.cols * self.copies


# model_type families (per-architecture facts, not per-model):
# Qwen2-style attention has q/k/v biases without a config key (vllm/model_executor/models/qwen2.py).
_QKV_BIAS_TYPES = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_audio")
# Families whose attention has per-head q_norm/k_norm weights (qwen3.py, gemma3.py, olmo2.py …).
_QK_NORM_TYPES = ("qwen3", "gemma3", "gemma4", "olmo2", "olmoe", "qwen3_5", "lfm2", "laguna")
# Non-gated MLPs (up + down only): GPT-2/NeoX/Falcon/Phi-1/2/StarCoder2/MPT/BLOOM/Nemotron lineage.
_NON_GATED_TYPES = (
    "falcon", "refinedweb", "refinedwebmodel", "gpt2", "gpt_bigcode", "gpt_neox", "gptj", "phi",
    "starcoder2", "mpt", "bloom", "opt", "nemotron", "nemotron_h", "persimmon", "stablelm_epoch",
)
# Families whose every linear layer has a bias (gpt2.py, gpt_bigcode.py: c_attn, c_proj, c_fc, c_proj all
# bias=True; phi.py: qkv_proj, dense, fc1, fc2; gpt_neox.py: query_key_value and dense per attention_bias,
# default True, dense_h_to_4h and dense_4h_to_h); OPT reads its enable_bias key instead.
_ALL_BIAS_TYPES = ("gpt2", "gpt_bigcode", "phi", "gpt_neox")
# Families with one norm a layer (attention and MLP read the same normed input): commandr.py (Cohere's
# input_layernorm, a LayerNorm without bias), phi.py (input_layernorm).
_ONE_NORM_TYPES = ("cohere", "cohere2", "phi")
# Families whose norms are LayerNorms with a bias (2 × hidden each, the final one too): opt.py, gpt2.py and
# gpt_bigcode.py (ln_1, ln_2, ln_f), gpt_neox.py and starcoder2.py (input_layernorm, post_attention_layernorm,
# the final norm), phi.py (input_layernorm, final_layernorm).
_LAYERNORM_TYPES = ("opt", "gpt2", "gpt_bigcode", "gpt_neox", "starcoder2", "phi")
# Gemma families have two extra norms per layer (pre/post feed-forward) — gemma2.py, gemma3.py.
_SANDWICH_NORM_TYPES = ("gemma2", "gemma3", "gemma4")
# Families whose q_norm / k_norm span all heads at once (RMSNorm over heads × head_dim and KV heads ×
# head_dim: olmo2.py, olmoe.py), not one head's width; OLMo 2's two layer norms sit after attention and
# after the MLP (post_attention_layernorm, post_feedforward_layernorm), two like any other layer's.
_FULL_WIDTH_QK_NORM_TYPES = ("olmo2", "olmoe")


def _get(d: dict, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if isinstance(d, dict) and d.get(k) is not None:
            return d[k]
    return default


def vision_width(vision_config: dict | None) -> int:
    """A vision tower's hidden width. Qwen2-VL's vision_config names it embed_dim and keeps hidden_size
    for the merger's output (the language model's width): embed_dim first wherever a config has it."""
    return int(_get(vision_config or {}, "embed_dim", "hidden_size", "width", default=0) or 0)


def _is(mtype: str, families: tuple[str, ...]) -> bool:
    return any(mtype == f or mtype.startswith(f + "_") for f in families)


def gated_mlp(spec: ModelSpec) -> bool:
    """Gated (gate·up, SiLU/GELU-and-mul) MLPs and experts hold 2·I then I; plain ones (relu², GELU) I."""
    return _gated(spec.model_type, spec.text)


def vision_mlp_gated(spec: ModelSpec) -> bool:
    """A vision tower's MLP is gated (gate·up) when SiLU-activated (Qwen2.5-VL, Pixtral), in Gemma's
    own towers (gemma4) and in dots.ocr's (dots_ocr.py DotsSwiGLUFFN: silu(fc1)·fc3, a vision_config
    without hidden_act), plain fc1/fc2 in SigLIP, Qwen2-VL, Qwen3-VL and the rest."""
    v = spec.vision or {}
    vt = str(v.get("model_type") or spec.config.get("model_type") or "").lower()
    gemma = str(spec.config.get("model_type") or "").lower().startswith("gemma") or vt.startswith("gemma")
    act = str(_get(v, "hidden_act", "hidden_activation", default="gelu")).lower()
    return act in ("silu", "swiglu") or (gemma and not vt.startswith("siglip")) or vt.startswith("dots")


def _gated(mtype: str, text: dict) -> bool:
    if _is(mtype, _NON_GATED_TYPES):
        return False
    act = str(_get(text, "hidden_act", "hidden_activation", "activation_function", default="silu")).lower()
    return act not in ("gelu_new", "relu2", "relu_squared") or mtype.startswith(("gemma", "qwen"))


def _attention_weights(spec: ModelSpec, i: int, kind: str, pfx: str) -> list[_W]:
    """Attention projections of decoder layer i (standard, GQA/MQA, MLA, gated DeltaNet, lightning)."""
    t, h, mt = spec.text, spec.hidden_size, spec.model_type
    out: list[_W] = []
    a = f"{pfx}.self_attn"
    lk = spec.layers[i] if i < len(spec.layers) else None
    if isinstance(lk, MambaState):
        return _state_layer_weights(spec, lk, i, pfx)   # hybrids with MLA too (kimi_linear's KDA layers)
    if isinstance(lk, DeepseekV4Layer):
        return _deepseek_v4_attention(spec, lk, i, pfx)
    if spec.mla:
        m = spec.mla
        heads = spec.num_attention_heads
        rope, nope = int(m["qk_rope_head_dim"]), int(m.get("qk_nope_head_dim") or 0)
        v_dim = int(m.get("v_head_dim") or nope)
        kvr, qr = int(m["kv_lora_rank"]), m.get("q_lora_rank")
        # vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention: the *_a projections are
        # ReplicatedLinear (not split by TP), the *_b projections column-parallel, o_proj row-parallel.
        if qr:
            out += [_W("attention", f"{a}.q_a_proj", int(qr), h, layer=i, tp="replicate"),
                    _W("norms", f"{a}.q_a_layernorm", int(qr), kind="norm", layer=i, tp="replicate"),
                    _W("attention", f"{a}.q_b_proj", heads * (nope + rope), int(qr), layer=i)]
        else:
            out.append(_W("attention", f"{a}.q_proj", heads * (nope + rope), h, layer=i))
        out += [_W("attention", f"{a}.kv_a_proj_with_mqa", kvr + rope, h, layer=i, tp="replicate"),
                _W("norms", f"{a}.kv_a_layernorm", kvr, kind="norm", layer=i, tp="replicate"),
                _W("attention", f"{a}.kv_b_proj", heads * (nope + v_dim), kvr, layer=i),
                _W("attention", f"{a}.o_proj", h, heads * v_dim, layer=i)]
        ih, ihd = _get(t, "index_n_heads"), _get(t, "index_head_dim")
        itypes = t.get("indexer_types")
        has_indexer = ih and ihd and t.get("index_topk")
        if has_indexer and isinstance(itypes, list) and i < len(itypes) and str(itypes[i]) != "full":
            has_indexer = False  # layers that share another layer's indexer keep no weights
        if has_indexer:
            # DeepSeek-V3.2 sparse-attention indexer (vllm deepseek_v2.py Indexer): wq_b, wk, k_norm, weights_proj.
            ih, ihd = int(ih), int(ihd)
            out += [_W("attention", f"{a}.indexer.wq_b", ih * ihd, int(qr or h), layer=i, tp="replicate"),
                    _W("attention", f"{a}.indexer.wk", ihd, h, layer=i, tp="replicate"),
                    _W("norms", f"{a}.indexer.k_norm", 2 * ihd, kind="norm", layer=i, tp="replicate"),
                    _W("router", f"{a}.indexer.weights_proj", ih, h, kind="router", layer=i, tp="replicate")]
        return out

    if kind == "none":
        return out

    heads = layer_heads(spec, i)
    hd, kv = spec.head_dim, spec.num_kv_heads
    k_eq_v = False
    if kind == "full":
        # Some families give full-attention layers their own KV heads / head size (gemma-4).
        hd = int(_get(t, "global_head_dim", default=hd))
        kv = int(_get(t, "num_global_key_value_heads", default=kv))
        k_eq_v = bool(t.get("attention_k_eq_v"))
    # qwen3_next.py / qwen3_5.py: a sigmoid output gate rides on q_proj (on unless attn_output_gate is false).
    gate = t.get("attn_output_gate", True if mt.startswith(("qwen3_next", "qwen3_5")) else False)
    q_out = heads * hd * (2 if gate else 1)
    all_bias = _is(mt, _ALL_BIAS_TYPES)
    # chatglm.py: add_qkv_bias (ChatGLM2/3, GLM-4) biases the fused query_key_value only
    # starcoder2.py: use_bias (qkv, o and the MLP), read after the keys that name attention biases alone
    qkv_bias = bool(_get(t, "qkv_bias", "add_qkv_bias", "attention_bias", "bias", "enable_bias", "use_bias",
                         default=_is(mt, _QKV_BIAS_TYPES) or all_bias))
    if _is(mt, _QKV_BIAS_TYPES) and t.get("qkv_bias") is not False:
        qkv_bias = True
    o_bias = bool(_get(t, "attention_bias", "bias", "enable_bias", "use_bias", default=all_bias)) \
        and not _is(mt, _QKV_BIAS_TYPES)
    falcon_fused = mt.startswith(("falcon", "refinedweb"))
    if falcon_fused:
        # falcon.py: one fused query_key_value (+dense); old MQA configs have 1 KV head.
        # QKVParallelLinear: the query rows split by TP, the KV rows replicated when kv < tp.
        out.append(_W("attention", f"{a}.query_key_value", q_out, h, layer=i))
        out.append(_W("attention", f"{a}.query_key_value", 2 * kv * hd, h, layer=i, tp="kv", kv_heads=kv))
        if qkv_bias:
            out.append(_W("attention", f"{a}.query_key_value.bias", q_out + 2 * kv * hd, kind="bias", layer=i))
    else:
        out.append(_W("attention", f"{a}.q_proj", q_out, h, layer=i))
        out.append(_W("attention", f"{a}.k_proj", kv * hd, h, layer=i, tp="kv", kv_heads=kv))
        # attention_k_eq_v (gemma-4 global layers): the checkpoint has no v_proj, but vLLM's
        # QKVParallelLinear still allocates the V rows and loads K into them (gemma4.py).
        out.append(_W("attention", f"{a}.v_proj", kv * hd, h, layer=i, tp="kv", kv_heads=kv, stored=not k_eq_v))
        if qkv_bias:
            out.append(_W("attention", f"{a}.qkv_proj.bias", q_out + (1 if k_eq_v else 2) * kv * hd,
                          kind="bias", layer=i))
    out.append(_W("attention", f"{a}.o_proj", h, heads * hd, layer=i))
    if mt == "laguna" and t.get("gating"):
        # laguna.py LagunaAttention: a softplus output gate, g_proj, one value per head ("per-head", or
        # True in the v5 config) or per channel (any other value), column-parallel like q_proj
        per_head = t["gating"] is True or t["gating"] == "per-head"
        out.append(_W("attention", f"{a}.g_proj", heads if per_head else heads * hd, h, layer=i))
    if o_bias:
        out.append(_W("attention", f"{a}.o_proj.bias", h, kind="bias", layer=i, tp="replicate"))
    if _is(mt, _QK_NORM_TYPES) or t.get("use_qk_norm") and t.get("qk_norm_type"):
        # minimax (qk_norm_type per_layer), OLMo 2, OLMoE: a norm over all heads
        per_layer = str(t.get("qk_norm_type", "")).lower() == "per_layer" or _is(mt, _FULL_WIDTH_QK_NORM_TYPES)
        qn, kn = (heads * hd, kv * hd) if per_layer else (hd, hd)
        out.append(_W("norms", f"{a}.q_norm", qn + kn, kind="norm", layer=i, tp="replicate"))
    if getattr(lk, "sinks", False):
        out.append(_W("attention", f"{a}.sinks", heads, kind="param", layer=i))  # gpt_oss.py: one sink per head
    return out


def _deepseek_v4_attention(spec: ModelSpec, lk: DeepseekV4Layer, i: int, pfx: str) -> list[_W]:
    """DeepSeek-V4 attention (vllm/models/deepseek_v4/attention.py DeepseekV4Attention, compressor.py,
    the indexer): low-rank query (wq_a → wq_b) and grouped low-rank output (wo_a per group → wo_b),
    one latent K=V head (wkv); wq_a and wkv are one ReplicatedLinear, wq_b / wo_a column- and wo_b
    row-parallel. A compressed layer adds the compressor's wkv + wgate (ReplicatedLinear without
    quantization, bf16) and fp32 position biases (ape); a 4× layer the lightning indexer: wq_b
    (replicated, fp8), weights_proj (bf16) and its own compressor. Plus the hyper-connection mixing
    weights (fp32, hc_mult streams)."""
    t, h = spec.text, spec.hidden_size
    a = f"{pfx}.attn"
    heads, hd = spec.num_attention_heads, lk.head_dim
    qr = int(_get(t, "q_lora_rank", default=1024))
    groups, orank = int(_get(t, "o_groups", default=8)), int(_get(t, "o_lora_rank", default=1024))
    out = [_W("attention", f"{a}.wq_a", qr, h, layer=i, tp="replicate"),
           _W("attention", f"{a}.wkv", hd, h, layer=i, tp="replicate"),
           _W("norms", f"{a}.q_norm", qr + hd, kind="norm", layer=i, tp="replicate"),
           _W("attention", f"{a}.wq_b", heads * hd, qr, layer=i),
           _W("attention", f"{a}.wo_a", groups * orank, heads * hd // groups, layer=i),
           _W("attention", f"{a}.wo_b", h, groups * orank, layer=i),
           _W("attention", f"{a}.attn_sink", heads, kind="param", layer=i, elem_bytes=4)]
    cr = lk.compress_ratio
    if cr > 1:
        coff = 2 if cr == 4 else 1
        out += [_W("attention", f"{a}.compressor.wkv_wgate", 2 * coff * hd, h, kind="router", layer=i, tp="replicate"),
                _W("attention", f"{a}.compressor.ape", cr * coff * hd, kind="param", layer=i, tp="replicate",
                   elem_bytes=4),
                _W("norms", f"{a}.compressor.norm", hd, kind="norm", layer=i, tp="replicate")]
    if cr == 4:
        ih, ihd = int(_get(t, "index_n_heads", default=64)), lk.index_head_dim
        out += [_W("attention", f"{a}.indexer.wq_b", ih * ihd, qr, layer=i, tp="replicate"),
                _W("router", f"{a}.indexer.weights_proj", ih, h, kind="router", layer=i, tp="replicate"),
                _W("attention", f"{a}.indexer.compressor.wkv_wgate", 4 * ihd, h, kind="router", layer=i,
                   tp="replicate"),
                _W("attention", f"{a}.indexer.compressor.ape", 4 * 2 * ihd, kind="param", layer=i, tp="replicate",
                   elem_bytes=4),
                _W("norms", f"{a}.indexer.compressor.norm", ihd, kind="norm", layer=i, tp="replicate")]
    hc = int(_get(t, "hc_mult", default=0) or 0)
    if hc:
        mix = (2 + hc) * hc
        out.append(_W("norms", f"{pfx}.hc_fn", 2 * (mix * hc * h + mix), kind="param", layer=i, tp="replicate",
                      elem_bytes=4))
    return out


def _state_layer_weights(spec: ModelSpec, lk: MambaState, i: int, pfx: str) -> list[_W]:
    """Gated DeltaNet (qwen3_next.py), Mamba-1/2 (mamba*.py), lightning attention (minimax_text_01.py)."""
    h = spec.hidden_size
    a = f"{pfx}.linear_attn"
    if lk.variant == "gdn":
        kd, vd = lk.k_heads * lk.k_dim, lk.n_heads * lk.v_dim
        conv = 2 * kd + vd
        return [_W("attention", f"{a}.in_proj_qkvz", 2 * kd + 2 * vd, h, layer=i),
                _W("attention", f"{a}.in_proj_ba", 2 * lk.n_heads, h, layer=i),
                _W("attention", f"{a}.conv1d", conv, lk.conv_kernel, kind="conv", layer=i),
                _W("attention", f"{a}.A_log_dt_bias", 2 * lk.n_heads, kind="param", layer=i),
                _W("norms", f"{a}.norm", lk.v_dim, kind="norm", layer=i, tp="replicate"),
                _W("attention", f"{a}.out_proj", h, vd, layer=i)]
    if lk.variant == "kda":
        # KimiDeltaAttention (vllm/model_executor/layers/kda.py): q/k/v, low-rank f (gate) and g
        # (output gate) projections whose first halves are replicated, b_proj, three short convs,
        # A_log and dt_bias (the convs, A_log and dt_bias are float32 in vLLM: ≈0.1 MB per layer more
        # than counted here at the model dtype), o_norm, o_proj
        inner, d = lk.n_heads * lk.head_dim, lk.head_dim
        return [_W("attention", f"{a}.qkv_proj", 3 * inner, h, layer=i),
                _W("attention", f"{a}.f_a_proj", d, h, layer=i, tp="replicate"),
                _W("attention", f"{a}.f_b_proj", inner, d, layer=i),
                _W("attention", f"{a}.g_a_proj", d, h, layer=i, tp="replicate"),
                _W("attention", f"{a}.g_b_proj", inner, d, layer=i),
                _W("attention", f"{a}.b_proj", lk.n_heads, h, layer=i),
                _W("attention", f"{a}.conv1d", 3 * inner, lk.conv_kernel, kind="conv", layer=i),
                _W("attention", f"{a}.A_log_dt_bias", lk.n_heads + inner, kind="param", layer=i),
                _W("norms", f"{a}.o_norm", d, kind="norm", layer=i, tp="replicate"),
                _W("attention", f"{a}.o_proj", h, inner, layer=i)]
    if lk.variant == "linear":
        inner = lk.n_heads * lk.head_dim
        return [_W("attention", f"{a}.qkv_proj", 3 * inner, h, layer=i),
                _W("attention", f"{a}.output_gate", inner, h, layer=i),
                _W("norms", f"{a}.norm", inner, kind="norm", layer=i, tp="replicate"),
                _W("attention", f"{a}.out_proj", h, inner, layer=i)]
    if lk.variant == "short_conv":
        # lfm2.py ShortConv: in_proj to B, C and x (3 × conv_dim), a depthwise conv of conv_L_cache taps,
        # out_proj (biases per conv_bias)
        d, b = lk.d_inner, bool(spec.text.get("conv_bias"))
        return [_W("attention", f"{pfx}.conv.in_proj", 3 * d, h, layer=i),
                _W("attention", f"{pfx}.conv.conv", d, lk.conv_kernel, kind="conv", layer=i),
                _W("attention", f"{pfx}.conv.out_proj", h, d, layer=i)] + (
            [_W("attention", f"{pfx}.conv.biases", 3 * d + d + h, kind="bias", layer=i)] if b else [])
    m = f"{pfx}.mamba"
    d = lk.d_inner
    if lk.variant == "mamba2":
        g = lk.n_groups * lk.d_state
        conv = d + 2 * g
        return [_W("attention", f"{m}.in_proj", 2 * d + 2 * g + lk.n_heads, h, layer=i),
                _W("attention", f"{m}.conv1d", conv, lk.conv_kernel + 1, kind="conv", layer=i),
                _W("attention", f"{m}.A_D_dt", 3 * lk.n_heads, kind="param", layer=i),
                _W("norms", f"{m}.norm", d, kind="norm", layer=i, tp="replicate"),
                _W("attention", f"{m}.out_proj", h, d, layer=i)]
    dt_rank = int(_get(spec.text, "mamba_dt_rank", "time_step_rank", default=math.ceil(h / 16)))
    # jamba.py builds its MambaMixer with use_rms_norm: dt_layernorm, b_layernorm and c_layernorm
    inner_norms = ([_W("norms", f"{m}.dt_b_c_layernorms", dt_rank + 2 * lk.d_state, kind="norm", layer=i,
                       tp="replicate")] if spec.model_type == "jamba" else [])
    return inner_norms + [_W("attention", f"{m}.in_proj", 2 * d, h, layer=i),
            _W("attention", f"{m}.conv1d", d, lk.conv_kernel + 1, kind="conv", layer=i),
            _W("attention", f"{m}.x_proj", dt_rank + 2 * lk.d_state, d, layer=i),
            _W("attention", f"{m}.dt_proj", d, dt_rank + 1, layer=i),
            _W("attention", f"{m}.A_log", d, lk.d_state + 1, kind="param", layer=i),
            _W("attention", f"{m}.out_proj", h, d, layer=i)]


def _mlp_weights(spec: ModelSpec, i: int, pfx: str) -> list[_W]:
    t, h, mt, moe = spec.text, spec.hidden_size, spec.model_type, spec.moe
    gated = _gated(mt, t)
    mats = 3 if gated else 2
    mlp_bias = bool(_get(t, "mlp_bias", "use_bias", "enable_bias",   # opt: enable_bias
                         default=_is(mt, _ALL_BIAS_TYPES)))
    out: list[_W] = []

    def dense(inter: int, name: str, part: str = "mlp") -> list[_W]:
        ws = [_W(part, f"{name}.{'gate_up_proj' if gated else 'up_proj'}", (mats - 1) * inter, h, layer=i),
              _W(part, f"{name}.down_proj", h, inter, layer=i)]
        if mlp_bias:
            ws.append(_W(part, f"{name}.bias", (mats - 1) * inter + h, kind="bias", layer=i))
        return ws

    if moe is None or not moe.layer_is_moe[i]:     # the spec's one per-layer map (spec.moe_layer_flags)
        inter = spec.intermediate_size
        if moe is not None:
            inter = int(_get(t, "intermediate_size_mlp", default=inter))  # llama4 dense layers
        if _double_wide(spec, i):
            inter *= 2
        return dense(inter, f"{pfx}.mlp")

    e, ei = moe.num_experts, moe.expert_intermediate
    # gemma4.py Gemma4DecoderLayer: the dense MLP is the layer's `mlp`, the experts `moe.experts` and the
    # router `router` — names a checkpoint's exclusion list matches ("layers.0.mlp*" leaves the experts in FP4)
    gemma4 = mt.startswith("gemma4")
    m = f"{pfx}.moe" if gemma4 else f"{pfx}.mlp"
    latent = int(_get(t, "moe_latent_size", default=0) or 0)
    if latent:
        # LatentMoE (nemotron_h.py): the experts run in a `moe_latent_size` space between two
        # projections, fc1_latent_proj (h → latent) and fc2_latent_proj back, kept on every rank
        out += [_W("experts", f"{m}.fc1_latent_proj", latent, h, layer=i, tp="replicate"),
                _W("experts", f"{m}.fc2_latent_proj", h, latent, layer=i, tp="replicate")]
    out.append(_W("experts", f"{m}.experts", mats * ei, latent or h, copies=e, layer=i))
    if mt.startswith("gpt_oss"):  # gpt_oss.py: experts carry biases (gate_up and down)
        out.append(_W("experts", f"{m}.experts.bias", (mats - 1) * ei + h, copies=e, kind="bias", layer=i))
    out.append(_W("router", f"{pfx}.router.proj" if gemma4 else f"{m}.gate", e, h, kind="router", layer=i,
                  tp="replicate"))
    if mt.startswith("gpt_oss") or t.get("router_bias"):
        out.append(_W("router", f"{m}.gate.bias", e, kind="bias", layer=i, tp="replicate"))
    if t.get("topk_method") == "noaux_tc" or t.get("use_routing_bias") or mt in ("kimi_linear", "nemotron_h", "laguna"):
        # DeepSeek-V3 style e_score_correction_bias (deepseek_v2.py / minimax_m2.py; kimi_linear.py
        # KimiMoE always has one: the Kimi-Linear-48B checkpoint's tensors sum to 26 × 256 more; laguna.py
        # LagunaMoE's "auxiliary-loss-free load-balancing bias").
        out.append(_W("router", f"{m}.gate.e_score_correction_bias", e, kind="param", layer=i, tp="replicate"))
    if gemma4:  # gemma-4 router: learned input scale + per-expert scale
        out.append(_W("router", f"{pfx}.router.scales", h + e, kind="param", layer=i, tp="replicate"))
    if moe.shared_intermediate:
        out += dense(moe.shared_intermediate, f"{m}.shared_experts", "shared_experts")
        if t.get("shared_expert_intermediate_size") and mt != "laguna":
            # qwen2_moe/qwen3_next: a sigmoid gate on the shared expert (laguna.py's LagunaMoE has none)
            out.append(_W("router", f"{m}.shared_expert_gate", 1, h, kind="router", layer=i, tp="replicate"))
    elif mt.startswith("llama4"):  # llama4.py: every MoE layer also has a shared expert of intermediate_size
        out += dense(spec.intermediate_size, f"{m}.shared_expert", "shared_experts")
    if t.get("enable_moe_block"):  # gemma-4: a dense MLP runs beside the experts in every layer
        out += dense(spec.intermediate_size, f"{pfx}.mlp")
    return out


def _norm_weights(spec: ModelSpec, i: int, pfx: str) -> list[_W]:
    t, h, mt = spec.text, spec.hidden_size, spec.model_type
    if mt.startswith(("falcon", "refinedweb")):
        # falcon.py: LayerNorm with bias; parallel-attention layers share one norm unless the new
        # decoder architecture (ln_attn + ln_mlp).
        n = 2 if (t.get("new_decoder_architecture") or not t.get("parallel_attn", True)) else 1
        return [_W("norms", f"{pfx}.layernorms", 2 * n * h, kind="norm", layer=i, tp="replicate")]
    n = 4 if _is(mt, _SANDWICH_NORM_TYPES) else 1 if _is(mt, _ONE_NORM_TYPES) else 2
    if mt.startswith("gemma4") and t.get("enable_moe_block"):
        n += 3  # extra pre/post norms around the MoE block
    if mt.startswith("gemma4"):
        n_scalar = 1  # per-layer output scalar
    else:
        n_scalar = 0
    width = 2 * h if _is(mt, _LAYERNORM_TYPES) else h    # a LayerNorm's bias beside its weight
    return [_W("norms", f"{pfx}.layernorms", n * width + n_scalar, kind="norm", layer=i, tp="replicate")]


def _block_char(spec: ModelSpec, i: int) -> str | None:
    """nemotron-h's layer i: one mixer per layer (hybrid_override_pattern M Mamba, * attention,
    - MLP, E MoE; vllm/model_executor/models/nemotron_h.py), each behind one norm; a pure Mamba model's
    layers are all M."""
    if spec.model_type in PURE_MAMBA_TYPES:
        return "M"      # mamba.py / mamba2.py: every layer is a norm and a mixer, no MLP
    pattern = spec.text.get("hybrid_override_pattern")
    return pattern[i] if spec.model_type == "nemotron_h" and isinstance(pattern, str) and i < len(pattern) else None


def _double_wide(spec: ModelSpec, i: int) -> bool:
    """Gemma 4 E2B (`use_double_wide_mlp`): the KV-shared layers — the last num_kv_shared_layers — run an
    MLP of twice intermediate_size (gemma4.py Gemma4DecoderLayer)."""
    t = spec.text
    shared = _pos(t.get("num_kv_shared_layers"))
    return t.get("use_double_wide_mlp") is True and 0 < shared < spec.num_layers and i >= spec.num_layers - shared


def layer_heads(spec: ModelSpec, i: int) -> int:
    """Query heads of decoder layer i: num_attention_heads, or the layer's entry of
    num_attention_heads_per_layer where a config lists one per layer (laguna.py LagunaDecoderLayer:
    Laguna-S-2.1's sliding-window layers have 72 heads, its full-attention ones 48)."""
    per = spec.text.get("num_attention_heads_per_layer")
    own = _positive_int(per[i]) if isinstance(per, list) and i < len(per) else None
    return own or spec.num_attention_heads


def max_attention_heads(spec: ModelSpec) -> int:
    """The most query heads any decoder layer has (what the profile run's widest qkv is sized by)."""
    return max([layer_heads(spec, i) for i in range(spec.num_layers)] or [spec.num_attention_heads])


def max_dense_intermediate(spec: ModelSpec) -> int:
    """The widest dense MLP of any layer (what the profile run's MLP peak is sized by): the double-wide
    layers are the last ones, so the last layer says whether there are any."""
    return spec.intermediate_size * (2 if _double_wide(spec, spec.num_layers - 1) else 1)


def _per_layer_input_weights(spec: ModelSpec, i: int, pfx: str) -> list[_W]:
    """Gemma 3n / 4 per-layer embeddings inside a decoder layer: per_layer_input_gate (h → hpl),
    per_layer_projection (hpl → h), both ReplicatedLinear, and post_per_layer_input_norm (gemma4.py)."""
    hpl = _pos(spec.text.get("hidden_size_per_layer_input"))
    if not hpl:
        return []
    h = spec.hidden_size
    return [_W("mlp", f"{pfx}.per_layer_input_gate", hpl, h, layer=i, tp="replicate"),
            _W("mlp", f"{pfx}.per_layer_projection", h, hpl, layer=i, tp="replicate"),
            _W("norms", f"{pfx}.post_per_layer_input_norm", h, kind="norm", layer=i, tp="replicate")]


def _decoder_layer(spec: ModelSpec, i: int, kinds: list[str], pfx: str) -> list[_W]:
    c = _block_char(spec, i)
    if c is not None:
        mixer = _attention_weights(spec, i, kinds[i], pfx) if c in "M*" else \
            _mlp_weights(spec, i, pfx) if c in "-E" else []
        # the checkpoint names every mixer `backbone.layers.N.mixer.*` (matched against ignore lists
        # such as the NVFP4 exports' exclude_modules: _norm_name maps backbone. → model.)
        for part in ("mamba", "self_attn", "mlp"):
            mixer = [dataclasses.replace(w, name=w.name.replace(f"{pfx}.{part}.", f"{pfx}.mixer.")) for w in mixer]
        return mixer + [_W("norms", f"{pfx}.norm", spec.hidden_size, kind="norm", layer=i, tp="replicate")]
    return (_attention_weights(spec, i, kinds[i], pfx) + _mlp_weights(spec, i, pfx) + _norm_weights(spec, i, pfx)
            + _per_layer_input_weights(spec, i, pfx))


def _layer_kinds(spec: ModelSpec) -> list[str]:
    out = []
    for lk in spec.layers[: spec.num_layers]:
        out.append("sliding" if lk.kind in ("sliding", "chunked") else ("none" if lk.kind == "none" else
                                                                       "state" if lk.kind in ("mamba", "linear")
                                                                       else "full"))
    out += ["full"] * (spec.num_layers - len(out))
    # Layers the spec marks "none" (nemotron-h MLP-only '-' layers) still have an MLP.
    return out


def _vocab_layer_norm(spec: ModelSpec) -> int:
    """Final norm size: LayerNorm (weight+bias) for falcon-style models, RMSNorm weight otherwise."""
    layernorm = spec.model_type.startswith(("falcon", "refinedweb")) or _is(spec.model_type, _LAYERNORM_TYPES)
    return 2 * spec.hidden_size if layernorm else spec.hidden_size


def _mtp_weights(spec: ModelSpec, kinds: list[str]) -> tuple[list[_W], bool]:
    """Multi-token-prediction modules stored in the checkpoint; vLLM loads them only for speculative decoding.

    DeepSeek-style (`num_nextn_predict_layers`, deepseek_mtp.py): each module is one decoder layer
    (MoE when the model is MoE) + enorm + hnorm + eh_proj (2h → h) + shared_head norm, and the
    checkpoint stores its own embed_tokens and shared_head.head copies (the BF16 total of
    DeepSeek-V3's checkpoint, 4 × vocab × hidden + norms/gates/eh_proj, shows those copies).
    Qwen-style (`mtp_num_hidden_layers`, qwen3_next_mtp.py): fc (2h → h), two pre-fc norms, decoder
    layer(s), a final norm; embeddings shared unless `mtp_use_dedicated_embeddings`.
    """
    t, h, V = spec.text, spec.hidden_size, spec.vocab_size
    n_ds = int(_get(t, "num_nextn_predict_layers", default=0) or 0)
    n_qw = int(_get(t, "mtp_num_hidden_layers", default=0) or 0)
    out: list[_W] = []
    pattern = t.get("mtp_hybrid_override_pattern") if spec.model_type == "nemotron_h" else None
    if n_ds and isinstance(pattern, str) and pattern:
        return _nemotron_mtp_weights(spec, kinds, n_ds, pattern), True
    if n_ds:
        last = spec.num_layers - 1
        for j in range(n_ds):
            pfx = f"model.layers.{spec.num_layers + j}"
            layer = _decoder_layer(spec, last, kinds, pfx)
            out += [_W("mtp", w.name, w.rows, w.cols, w.copies, w.kind, None, w.tp, w.kv_heads) for w in layer]
            out += [_W("mtp", f"{pfx}.eh_proj", h, 2 * h),
                    _W("mtp", f"{pfx}.norms", 3 * h, kind="norm", tp="replicate"),
                    _W("mtp", f"{pfx}.embed_tokens", V, h, kind="embed", tp="vocab"),
                    _W("mtp", f"{pfx}.shared_head.head", V, h, kind="lm_head", tp="vocab")]
        return out, True
    if n_qw:
        full = next((i for i, k in enumerate(kinds) if k == "full"), spec.num_layers - 1)
        for j in range(n_qw):
            pfx = f"mtp.layers.{j}"
            layer = _decoder_layer(spec, full, kinds, pfx)
            out += [_W("mtp", w.name, w.rows, w.cols, w.copies, w.kind, None, w.tp, w.kv_heads) for w in layer]
        out += [_W("mtp", "mtp.fc", h, 2 * h), _W("mtp", "mtp.norms", 3 * h, kind="norm", tp="replicate")]
        if t.get("mtp_use_dedicated_embeddings"):
            out.append(_W("mtp", "mtp.embed_tokens", V, h, kind="embed", tp="vocab"))
        return out, True
    return out, False


def _nemotron_mtp_weights(spec: ModelSpec, kinds: list[str], steps: int, pattern: str) -> list[_W]:
    """Nemotron-H's MTP block (nemotron_h_mtp.py): one layer per character of
    `mtp_hybrid_override_pattern` (`*` attention, `E` MoE, as in the backbone), the step's first
    layer with enorm + hnorm + eh_proj (2h → h), its last with a final norm. The draft reads the
    backbone's embeddings and lm_head (load_weights maps `backbone.embeddings`), so the checkpoint
    stores no copies of them, unlike DeepSeek's MTP modules."""
    h, main = spec.hidden_size, spec.text.get("hybrid_override_pattern") or ""
    out: list[_W] = []
    for j in range(steps * len(pattern)):
        k, c = j % len(pattern), pattern[j % len(pattern)]
        ref = main.find(c)          # a backbone layer with the same mixer gives its shapes
        if ref < 0:
            continue
        pfx = f"mtp.layers.{j}"
        out += [dataclasses.replace(w, part="mtp", name=w.name.replace(f"model.layers.{ref}.", f"{pfx}."),
                                    layer=None)
                for w in _decoder_layer(spec, ref, kinds, f"model.layers.{ref}")]
        if k == 0:
            out += [_W("mtp", f"{pfx}.eh_proj", h, 2 * h),
                    _W("mtp", f"{pfx}.enorm_hnorm", 2 * h, kind="norm", tp="replicate")]
        if k == len(pattern) - 1:
            out.append(_W("mtp", f"{pfx}.final_layernorm", h, kind="norm", tp="replicate"))
    return out


# ---- vision towers ---------------------------------------------------------------------------


def _vision_weights(spec: ModelSpec) -> tuple[list[_W], list[str]]:
    """A ViT encoder + projector from vision_config keys (qwen2_5_vl.py, qwen3_vl.py, siglip.py, gemma3_mm.py).

    Family rules: Qwen-VL towers have a Conv3d patch embed (temporal_patch_size) and a patch
    merger (spatial_merge_size² × hidden → out_hidden_size); Qwen2.5-VL uses RMSNorm and a gated
    MLP (silu), Qwen2-VL/Qwen3-VL/SigLIP LayerNorm and a 2-matrix MLP with biases. Gemma towers
    project vision hidden → text hidden (+ a norm).
    """
    v = spec.vision or {}
    notes: list[str] = []
    if not v or v.get("_TRUNCATED") or spec.config.get("_TRUNCATED"):
        if v:
            notes.append("vision_config is truncated; vision tower parameters not counted")
        return [], notes
    vt = str(v.get("model_type") or spec.config.get("model_type") or "").lower()
    top = str(spec.config.get("model_type") or "").lower()
    if top == "mllama":
        return _mllama_vision_weights(spec, v), notes
    depth = int(_get(v, "depth", "num_hidden_layers", "num_layers", default=0) or 0)
    vh = vision_width(v)
    if not depth or not vh:
        notes.append("vision_config lacks depth/hidden size; vision tower parameters not counted")
        return [], notes
    vi = int(_get(v, "intermediate_size", default=0) or int(float(v.get("mlp_ratio", 4)) * vh))
    act = str(_get(v, "hidden_act", "hidden_activation", default="gelu")).lower()
    qwen = top.startswith("qwen") or vt.startswith("qwen")
    gemma = top.startswith("gemma") or vt.startswith("gemma")
    # Pixtral (pixtral.py PixtralHFVisionModel; Mistral 3 / Pixtral-12B): RMSNorm, no biases, a 2-D
    # RoPE instead of position embeddings, one ln_pre norm instead of a post-layernorm
    pixtral = vt == "pixtral"
    gated = vision_mlp_gated(spec)
    rms = (qwen and act == "silu") or vt.startswith("gemma4") or pixtral
    # siglip/qwen towers use biases; gemma-4's and Pixtral's do not
    bias = not (vt.startswith("gemma4") or pixtral)
    norm = (1 if rms else 2) * vh
    per_block = (4 * vh * vh + (4 * vh if bias else 0)
                 + (3 if gated else 2) * vh * vi + (((2 if gated else 1) * vi + vh) if bias else 0)
                 + 2 * norm)
    if vt.startswith("gemma4"):
        per_block += 2 * norm + 2 * int(_get(v, "head_dim", default=vh // max(1, int(_get(v, "num_attention_heads", default=1)))))
    ws = [_W("vision", "vision_tower.blocks", per_block * depth, tp="split")]
    ch = int(_get(v, "in_chans", "in_channels", "num_channels", default=3))
    patch = int(_get(v, "patch_size", "spatial_patch_size", default=14))
    tpatch = int(_get(v, "temporal_patch_size", default=1))
    # Qwen2-VL's Conv3d patch embed has no bias (qwen2_vl.py Qwen2VisionPatchEmbed, bias=False)
    patch_bias = bias and not rms and "qwen2_vl" not in (vt, top)
    ws.append(_W("vision", "vision_tower.patch_embed", ch * tpatch * patch * patch * vh + (vh if patch_bias else 0),
                 kind="param", tp="replicate"))
    npos = _get(v, "num_position_embeddings", "position_embedding_size")
    if not npos and v.get("image_size") and not (qwen or pixtral):
        npos = (int(v["image_size"]) // patch) ** 2
    if npos:
        mult = 2 if vt.startswith("gemma4") else 1  # gemma-4: separate x/y position tables
        ws.append(_W("vision", "vision_tower.pos_embed", int(npos) * mult, vh, kind="param", tp="replicate"))
    if vt.startswith("gemma4") and v.get("standardize"):
        # Gemma4VisionModel with `standardize`: std_bias and std_scale buffers of the tower's width,
        # stored in the checkpoint (the 26B-A4B / 31B towers; not the E2B / E4B ones)
        ws.append(_W("vision", "vision_tower.std_bias_scale", 2 * vh, kind="param", tp="replicate"))
    if vt.startswith("siglip") or (not qwen and not gemma):
        ws.append(_W("vision", "vision_tower.ln_pre" if pixtral else "vision_tower.post_layernorm",
                     norm, kind="norm", tp="replicate"))
    text_h = int(_get(v, "out_hidden_size", default=spec.hidden_size))
    merge = int(_get(v, "spatial_merge_size", default=0) or 0)
    if top == "mistral3":
        # mistral3.py Mistral3MultiModalProjector: RMSNorm, the patch merger (spatial_merge_size² × vision
        # hidden → vision hidden, no bias), linear_1 and linear_2 (biases per multimodal_projector_bias)
        m = int(spec.config.get("spatial_merge_size") or 2)
        pb = text_h if spec.config.get("multimodal_projector_bias", False) else 0
        ws.append(_W("vision", "multi_modal_projector",
                     vh + vh * m * m * vh + vh * text_h + pb + text_h * text_h + pb, tp="split"))
    elif merge:
        cat = vh * merge * merge
        merger = norm + cat * cat + cat + cat * text_h + text_h
        deep = len(v.get("deepstack_visual_indexes") or [])
        # qwen3_vl.py: deepstack mergers normalise after the shuffle (LayerNorm over cat).
        merger_total = merger + deep * (merger - norm + 2 * cat)
        ws.append(_W("vision", "visual.merger", merger_total, tp="split"))
    elif gemma:
        # gemma3_mm.py keeps an RMSNorm (mm_soft_emb_norm) before the projection; Gemma 4's embedder
        # normalises without a scale (embedding_pre_projection_norm, with_scale=False): no parameters
        ws.append(_W("vision", "multi_modal_projector", vh * text_h + (0 if vt.startswith("gemma4") else vh), tp="split"))
    else:
        ws.append(_W("vision", "multi_modal_projector", vh * text_h + text_h * text_h + 2 * text_h, tp="split"))
        notes.append("vision projector assumed llava-style (2 linear layers)")
    return ws, notes


def _mllama_vision_weights(spec: ModelSpec, v: dict) -> list[_W]:
    """Llama 3.2 Vision's tower as vLLM's mllama.py builds it (MllamaVisionModel): a bias-free patch
    linear, a class embedding, a gated position embedding of (image_size / patch)² + 1 rows beside a
    tile-position table of (max_aspect_ratio_id + 1) × max_num_tiles × that × hidden, gated pre/post
    aspect-ratio embeddings, two LayerNorms, num_hidden_layers encoder layers (bias-free qkv/o, CLIP's
    biased MLP, two LayerNorms) and num_global_layers gated ones (two tanh gates each), then the
    projector from vision_output_dim (the final and intermediate layers' states side by side) to the
    text width, with bias. max_aspect_ratio_id is the number of supported aspect ratios
    (MllamaVisionConfig)."""
    h, inter = vision_width(v), _pos(v.get("intermediate_size")) or 4 * vision_width(v)
    patch, image = _pos(v.get("patch_size")) or 14, _pos(v.get("image_size")) or 560
    tiles, ch = _pos(v.get("max_num_tiles")) or 4, _pos(v.get("num_channels")) or 3
    ratios = _pos(v.get("max_aspect_ratio_id")) or len(v.get("supported_aspect_ratios") or []) or 8
    patches = (image // patch) ** 2 + 1
    layer = 4 * h * h + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    local, glob = _pos(v.get("num_hidden_layers")) or 32, _pos(v.get("num_global_layers")) or 8
    out = _pos(v.get("vision_output_dim")) or h
    return [_W("vision", "vision_model.patch_embedding", h, ch * patch * patch),
            _W("vision", "vision_model.embeddings", h + 1 + patches * h + (ratios + 1) * tiles * patches * h
               + 2 * ((ratios + 1) * tiles * h + 1) + 2 * 2 * h, kind="param", tp="replicate"),
            _W("vision", "vision_model.transformer.layers", layer * local),
            _W("vision", "vision_model.global_transformer.layers", (layer + 2) * glob),
            _W("vision", "multi_modal_projector", spec.hidden_size, out + 1)]


def _pos(v: object) -> int:
    """A positive integer a config gives, read as spec.py reads every key, else 0 (a hand-edited config
    may hold anything)."""
    return _positive_int(v) or 0


def _audio_weights(spec: ModelSpec) -> list[_W]:
    """Gemma 4's audio tower (transformers modeling_gemma4.py Gemma4AudioModel, which vLLM's gemma4_mm.py
    loads): a subsampling conv projection (two 3×3 stride-2 convs, LayerNorms without bias, a linear
    from (channels[0] // 4) × channels[1] to hidden), `num_hidden_layers` conformer layers — two
    feed-forwards (h → 4h → h, two RMSNorms each), chunked attention (q, k, v, post, relative_k_proj:
    5·h², per_dim_scale), a light conv (linear_start h → 2h, depthwise conv, linear_end h → h, two
    norms) and three layer norms — then output_proj (h → output_proj_dims, with bias) and embed_audio
    (output_proj_dims → text hidden) — about 307M, the card's "~300M". With it E2B-it and E4B-it come to
    their safetensors totals (5,123,178,051 / 7,996,156,490) exactly."""
    a = spec.config.get("audio_config") or {}
    if not str(a.get("model_type") or "").startswith("gemma4_audio"):
        return []
    h, n = _pos(a.get("hidden_size")), _pos(a.get("num_hidden_layers"))
    if not (h and n):
        return []
    heads = _pos(a.get("num_attention_heads")) or 1
    k = _pos(a.get("conv_kernel_size")) or 5
    channels = a.get("subsampling_conv_channels")
    c0, c1 = ([_pos(c) or 32 for c in channels] + [32, 32])[:2] if isinstance(channels, list) else (128, 32)
    out = _pos(a.get("output_proj_dims")) or h
    layer = 24 * h * h + 9 * h + h * k + h // heads
    sub = 9 * c0 + c0 + 9 * c0 * c1 + c1 + (c0 // 4) * c1 * h
    return [_W("audio", "audio_tower.layers", layer * n, tp="replicate"),
            _W("audio", "audio_tower.subsample_conv_projection", sub, kind="param", tp="replicate"),
            _W("audio", "audio_tower.output_proj", out, h + 1, tp="replicate"),
            _W("audio", "embed_audio.embedding_projection", spec.hidden_size, out, tp="replicate")]


# Multimodal encoders: kept at the base dtype by quantizers, built on the first pipeline stage only
TOWER_PARTS = ("vision", "audio")


# ---- whole model ------------------------------------------------------------------------------


# The inventories of the specs estimated last: a diagnosis re-estimates one spec dozens of times (each fix
# re-checked, each pipeline partition scored), and the inventory depends on the spec alone. Keyed by the
# object (held, so its id is not reused); callers only read the lists. An OrderedDict: its oldest entry
# goes in one step (popitem), safe beside the server's threads.
_INVENTORY_CACHE: OrderedDict[int, tuple[ModelSpec, tuple[list[_W], list[_W], list[str]]]] = OrderedDict()
_INVENTORY_CACHE_SIZE = 16


def _inventory(spec: ModelSpec) -> tuple[list[_W], list[_W], list[str]]:
    """(weights vLLM loads, MTP weights stored but not loaded, notes)."""
    hit = _INVENTORY_CACHE.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    got = _build_inventory(spec)
    if len(_INVENTORY_CACHE) >= _INVENTORY_CACHE_SIZE:
        try:
            _INVENTORY_CACHE.popitem(last=False)
        except KeyError:
            pass            # another thread emptied it
    _INVENTORY_CACHE[id(spec)] = (spec, got)
    return got


def _build_inventory(spec: ModelSpec) -> tuple[list[_W], list[_W], list[str]]:
    h, V = spec.hidden_size, spec.vocab_size
    t = spec.text
    kinds = _layer_kinds(spec)
    opt = spec.model_type == "opt"
    # opt.py: tokens are embedded at word_embed_proj_dim (project_in/out bridge it to hidden_size)
    e = int(_get(t, "word_embed_proj_dim", default=h) or h) if opt else h
    mllama = str(spec.config.get("model_type") or "") == "mllama"
    # mllama.py: the text model embeds vocab_size + 8 rows (learned image-token embeddings)
    ws: list[_W] = [_W("embed", "model.embed_tokens", V + (8 if mllama else 0), e, kind="embed", tp="vocab")]
    if opt:
        # OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows (OPT's offset), replicated
        ws.append(_W("embed", "model.embed_positions", int(_get(t, "max_position_embeddings", default=2048)) + 2, h,
                     kind="embed", tp="replicate"))
        if e != h:
            ws += [_W("embed", "model.project_in", h, e, tp="replicate"),
                   _W("embed", "model.project_out", e, h, tp="replicate")]
    elif _is(spec.model_type, ("gpt2", "gpt_bigcode")):
        # gpt2.py, gpt_bigcode.py: wpe, an nn.Embedding of max_position_embeddings (n_positions) rows, replicated
        ws.append(_W("embed", "transformer.wpe", int(_get(t, "max_position_embeddings", "n_positions", default=1024)),
                     h, kind="embed", tp="replicate"))
    hpl = _pos(t.get("hidden_size_per_layer_input"))
    if hpl:  # gemma-3n/4 per-layer input embeddings + projection
        vpl = _pos(t.get("vocab_size_per_layer_input")) or V
        ws += [_W("embed", "model.embed_tokens_per_layer", vpl, spec.num_layers * hpl, kind="embed", tp="vocab"),
               _W("mlp", "model.per_layer_model_projection", spec.num_layers * hpl, h),
               _W("norms", "model.per_layer_projection_norm", hpl, kind="norm", tp="replicate")]
    for i in range(spec.num_layers):
        ws += _decoder_layer(spec, i, kinds, f"model.layers.{i}")
    if mllama:
        # MllamaCrossAttentionDecoderLayer: q_norm and k_norm (head_dim each) and two tanh gates per
        # cross-attention layer, beyond a self-attention layer's weights
        for i in t.get("cross_attention_layers") or []:
            ws.append(_W("norms", f"model.layers.{i}.cross_attn.norms_gates", 2 * spec.head_dim + 2, kind="norm",
                         layer=int(i), tp="replicate"))
    if not opt or (t.get("do_layer_norm_before", True) and not t.get("_remove_final_layer_norm")):
        ws.append(_W("norms", "model.norm", _vocab_layer_norm(spec), kind="norm", tp="replicate"))
    if not spec.tie_word_embeddings:
        ws.append(_W("lm_head", "lm_head", V, e, kind="lm_head", tp="vocab"))
        if _is(spec.model_type, ("phi",)):
            ws.append(_W("lm_head", "lm_head.bias", V, kind="bias", tp="vocab"))   # phi.py: ParallelLMHead(bias=True)
    vis, notes = _vision_weights(spec)
    ws += vis + _audio_weights(spec)
    mtp, _ = _mtp_weights(spec, kinds)
    return ws, mtp, notes


def _stored_only(ws: list[_W]) -> list[_W]:
    return [w for w in ws if w.stored]


def count_params(spec: ModelSpec) -> WeightBreakdown:
    """Logical parameter counts by part (unquantized: bytes at the config dtype, tp = pp = 1)."""
    ws, mtp, notes = _inventory(spec)
    ws, mtp = _stored_only(ws), _stored_only(mtp)
    by: dict[str, int] = {}
    for w in ws:
        by[w.part] = by.get(w.part, 0) + w.params
    total = sum(by.values())
    if mtp:
        by["mtp"] = sum(w.params for w in mtp)
    db = dtype_bytes(spec.torch_dtype, 2)
    bytes_by = {k: v * db for k, v in by.items() if k != "mtp"}
    assumptions = list(notes)
    if mtp:
        assumptions.append(f"multi-token-prediction weights ({by['mtp']:,} params) are stored in the checkpoint "
                           "but not loaded by vLLM unless it decodes with them (--speculative-config method mtp); excluded from the total")
    return WeightBreakdown(total, by, total * db, bytes_by, _dtype_name(spec.torch_dtype), assumptions)


def stored_params(spec: ModelSpec) -> tuple[int, list[str]]:
    """What a Hugging Face safetensors total counts for this config's checkpoint.

    An HF total counts the tensors that are stored: the logical parameters, plus MTP modules kept
    in the checkpoint, plus quantization scale tensors (FP8 block scales: one fp32 per
    block_n × block_k tile of each quantized linear). Used to compare with Hub counts; vLLM's
    memory comes from `weight_bytes`.
    """
    ws, mtp, _ = _inventory(spec)
    ws, mtp = _stored_only(ws), _stored_only(mtp)
    total = sum(w.params for w in ws + mtp)
    notes = []
    if mtp:
        notes.append("includes the MTP weights the checkpoint stores")
    fmt = _resolve_format(spec, None, [])
    if fmt.kind == "fp8" and fmt.block:
        bn, bk = fmt.block
        scales = sum(math.ceil(w.rows / bn) * math.ceil(w.cols / bk) * w.copies
                     for w in ws + mtp if _quantized(fmt, w))
        total += scales
        notes.append(f"includes {scales:,} FP8 block-scale elements")
    return total, notes


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------

# llama.cpp's average bits per weight for each GGUF type (llama.cpp `tools/quantize` README table,
# LLaMA-class 7-8B models; K-quant "_M/_S" mixes vary a little by model).
GGUF_BPW = {
    "f32": 32.0, "f16": 16.0, "bf16": 16.0, "q8_0": 8.5, "q6_k": 6.5625, "q5_k_m": 5.69, "q5_k_s": 5.54,
    "q5_1": 6.0, "q5_0": 5.5, "q4_k_m": 4.85, "q4_k_s": 4.58, "q4_1": 5.0, "q4_0": 4.5, "iq4_xs": 4.25,
    "iq4_nl": 4.5, "q3_k_l": 4.27, "q3_k_m": 3.91, "q3_k_s": 3.5, "iq3_m": 3.66, "iq3_xxs": 3.06,
    "q2_k": 2.63, "iq2_xs": 2.31, "iq2_xxs": 2.06, "iq1_s": 1.56,
}


@dataclass
class _Fmt:
    name: str
    kind: str = "none"      # none | fp8 | int | nvfp4 | mxfp4 | bnb4 | bnb8 | gguf
    bits: float = 16.0
    group: int = 0          # int formats: elements per scale along the input dim (0 = per output channel)
    zeros: bool = False     # int formats: packed zero points stored
    block: tuple[int, int] | None = None   # fp8 block shape
    channel: bool = False   # fp8 per-channel scales
    double_quant: bool = True
    experts_only: bool = False
    ignore: tuple[str, ...] = ()
    experts_fp4: bool = False   # routed experts stored as FP4 (e2m1 + e8m0 scale per 32) inside an FP8 checkpoint
    # the MTP block stored at 16 bits although the rest is quantized: an export whose quantization_config
    # is not known (_mtp_stored_16bit)
    mtp_unquantized: bool = False
    # mixed precision: each listed checkpoint module's own format (normalised names); a linear listed
    # nowhere stays unquantized (ModelOpt MIXED_PRECISION `quantized_layers`, compressed-tensors
    # config_groups whose targets name modules)
    layers: dict[str, _Fmt] | None = None


@dataclass(frozen=True)
class Mxfp4Layout:
    """How a vLLM MXFP4 MoE backend holds the experts once loaded (vllm/model_executor/layers/
    quantization/mxfp4.py Mxfp4MoEMethod.create_weights / process_weights_after_loading).

    The backend pads the per-rank intermediate size and the hidden size to its kernel's tile;
    Triton (triton_kernels) swizzles the scales into new tensors while the loaded ones stay
    registered, and keeps the biases in fp32."""

    name: str
    inter_multiple: int = 1
    hidden_multiple: int = 1
    scale_copies: int = 1
    bias_bytes: int = 2


def _dtype_name(d: str | None) -> str:
    b = str(d or "bfloat16").lower().replace("torch.", "")
    return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(b, b)


def _ignore_list(q: dict) -> tuple[str, ...]:
    out: list[str] = []
    for k in ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules", "llm_int8_skip_modules",
              "modules_in_block_to_quantize_exclude"):
        v = q.get(k)
        if isinstance(v, list):
            out += [str(x) for x in v]
    return tuple(out)


# --quantization values that name a toolkit whose checkpoints come in several formats
_CHECKPOINT_DECIDES = ("modelopt", "compressed-tensors")
# Words that say only the bits (paste_prose.QUANT_BITS_WORDS and the scheme names that carry them):
# not vLLM --quantization methods, so never a reason to drop a fuller format read from the same name.
_BITS_WORDS = ("int4", "int8", "w4a16", "w8a16", "int4-w4a16", "int8-w8a16")


def weight_format(spec: ModelSpec, quantization: str | None) -> _Fmt:
    """The format vLLM loads the weights in (its name says the method family: "awq-int4",
    "gptq-int8", "int4-g128" …): what decides kernel-side memory (bitsandbytes' dequantized copies,
    Marlin's input copy) and whether a release can load the checkpoint at all. Asked on every re-run
    of the estimate (advice checks dozens of fixes), so kept per spec like memory._weights' breakdowns."""
    formats = spec.__dict__.setdefault("_format_cache", {})
    if quantization not in formats:
        formats[quantization] = _resolve_format(spec, quantization, [])
    return formats[quantization]


def weight_format_kind(spec: ModelSpec, quantization: str | None) -> str:
    """The family of that format: none, fp8, int, nvfp4, mxfp4, bnb4, bnb8, gguf, mixed."""
    return weight_format(spec, quantization).kind


# Formats a third-party export of a 16-bit checkpoint comes in (GPTQ, AWQ, AutoRound, llm-compressor's
# W4A16/W8A16, NVFP4): see _mtp_stored_16bit.
_EXPORT_KINDS = ("int", "nvfp4")
# The --quantization spellings of AutoRound's own format
_AUTOROUND = ("auto-round", "autoround")
# The MTP tensors an AutoRound export keeps at 16 bits while re-quantizing the rest of the block (an
# ignore-list entry): auto_round/utils/missing_tensors.py BLOCK_NAME_TO_IGNORE ("mtp.fc.", since
# intel/auto-round#1731, "skip quantizing mtp.fc since vLLM doesn't support"; with the routers, which
# are never quantized here).
AUTOROUND_MTP_16BIT = ("mtp.fc",)


def _resolve_format(spec: ModelSpec, quantization: str | None, notes: list[str]) -> _Fmt:
    """The weight format vLLM will use: --quantization, else the checkpoint's quantization_config."""
    method, q = _served_method(spec, quantization, notes)
    fmt = _checkpoint_format(spec, quantization, method, q, notes)
    if fmt.kind in _EXPORT_KINDS and _mtp_stored_16bit(q):
        if method in _AUTOROUND:
            fmt = dataclasses.replace(fmt, ignore=fmt.ignore + AUTOROUND_MTP_16BIT)
        else:
            fmt = dataclasses.replace(fmt, mtp_unquantized=True)
    return fmt


def _mtp_stored_16bit(q: dict) -> bool:
    """Whether an export keeps its MTP block at 16 bits: where its quantization_config is not known
    (the format read from the repo name or the --quantization flag: `q`, the config the served
    method comes with, is empty or only the name's reading). The quantizers work on transformers'
    model classes, which drop the MTP weights on load (Qwen3-Next / Qwen3.5
    `_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]`), so they never quantize them with the rest:
    llm-compressor copies them in as stored and adds them to the ignore list (compressed_tensors
    save_mtp_tensors_to_checkpoint), and the NVIDIA NVFP4 configs of the bundled catalog leave their
    MTP block out (Qwen3.5-122B-A10B, Qwen3.6-27B, Qwen3.6-35B-A3B: `mtp*`; Qwen3.5-397B-A17B:
    `mtp.layers.0*`; DeepSeek-V4 Flash / Pro: `mtp.*`; GLM-5.1 / 5.2: layer 78). Public logs with MTP
    print RedHatAI/Qwen3.8-27B-INT4 at 18.50 GiB of weights (DGX Spark, 0.25.1) and
    cyankiwi/Qwen3.6-27B-AWQ-INT4 at 18.47 (RTX 5090), 0.6 over the all-4-bit figure — the MTP
    block's 0.85 GB at 16 bits instead of 4 is 0.59 GiB more. AutoRound is the exception
    (_resolve_format): its export copies the missing MTP tensors in and re-quantizes them with RTN into
    the rest's packed format, all but AUTOROUND_MTP_16BIT (auto_round/utils/missing_tensors.py
    copy_missing_tensors_from_source), and the club-3090 logs of Lorbus/Qwen3.6-27B-int4-AutoRound with
    MTP reproduce to 0.0–0.5% so (2–3% off with a 16-bit block). A known config decides by its own
    ignore list; FP8 checkpoints are often the model maker's own, whose MTP block is FP8
    (DeepSeek-V3), so they keep it quantized."""
    return not q.get("quant_method") or bool(q.get("_from_name"))


def _served_method(spec: ModelSpec, quantization: str | None, notes: list[str]) -> tuple[str, dict]:
    """The quantization method vLLM serves the checkpoint with, and the config that comes with it:
    --quantization where the checkpoint's own config is not known, else that config's method."""
    q = dict(spec.quantization or {})
    method = str(quantization or q.get("quant_method") or "").lower().replace("_", "-")
    if quantization and q.get("quant_method") and str(q["quant_method"]).lower().replace("_", "-") != method \
            and not method.startswith(str(q["quant_method"]).lower()):
        if q.get("_from_name") and (method in _CHECKPOINT_DECIDES or method in _BITS_WORDS):
            # `--quantization modelopt` / `compressed-tensors` names a toolkit; the checkpoint's own
            # config picks the format (vLLM's override_quantization_method: an NVFP4 ModelOpt export
            # served with `modelopt` runs as modelopt_fp4), and here the repo name says which. A bare
            # bits word ("int4", read from that same name) is no vLLM method: the name's fuller reading
            # (its scheme, a QAT export's groups) stands.
            method = str(q["quant_method"]).lower().replace("_", "-")
        elif q.get("_from_name"):
            q = {}  # the format was only guessed from the repo name: the flag is better evidence
        else:
            # A quantized checkpoint loads in its own format (vllm/config/model.py
            # _verify_quantization: the flag may only pick a compatible kernel); keep its layout
            # and ignore lists.
            notes.append(f"--quantization {quantization}: the checkpoint is already {q['quant_method']}; "
                         "its own format and exclusions are used")
            method = str(q["quant_method"]).lower().replace("_", "-")
    return method, q


def _checkpoint_format(spec: ModelSpec, quantization: str | None, method: str, q: dict, notes: list[str]) -> _Fmt:
    """The format of the served `method` with its config `q` (_served_method), before the MTP rule."""
    ignore = _ignore_list(q)
    if q and not q.get("quant_method") and not quantization:
        notes.append("config carries a quantization block without quant_method (e.g. an MLX export); "
                     "vLLM does not load it as quantized — weights counted unquantized")
        return _Fmt("none")
    if not method or method in ("none", "auto"):
        return _Fmt("none")
    if method.startswith("gguf"):
        typ = method[5:].replace("-", "_") if len(method) > 5 else str(q.get("gguf_type", "q4_k_m")).lower()
        bpw = GGUF_BPW.get(typ)
        if bpw is None:
            notes.append(f"unknown GGUF type {typ!r}; assumed Q4_K_M (4.85 bits/weight)")
            typ, bpw = "q4_k_m", GGUF_BPW["q4_k_m"]
        notes.append(f"GGUF {typ.upper()}: {bpw} bits/weight average over all 2-D tensors (llama.cpp table; "
                     "exact per-tensor types vary)")
        return _Fmt(f"gguf-{typ}", "gguf", bits=bpw)
    if method in ("fp8", "fbgemm-fp8", "ptpc-fp8", "fp8-dynamic", "fp8-per-tensor", "fp8-per-channel",
                  "fp8-per-block"):
        block = q.get("weight_block_size")
        # DeepSeek-V4 checkpoints: `expert_dtype: fp4` — FP8 blocks everywhere but the routed
        # experts, which are FP4 with a ue8m0 scale per 32 values (config.json; vllm deepseek_v4).
        fp4 = str(spec.text.get("expert_dtype") or spec.config.get("expert_dtype") or "").lower() == "fp4"
        if fp4:
            notes.append("routed experts stored as FP4 (expert_dtype fp4): 4.25 bits per weight; the rest FP8")
        if method == "fp8-per-block":
            block = block or [128, 128]      # online block quantization: 128 × 128 scales
        if block:
            return _Fmt("fp8-block", "fp8", 8, block=(int(block[0]), int(block[1])), ignore=ignore,
                        experts_fp4=fp4)
        return _Fmt("fp8", "fp8", 8, channel=method not in ("fp8", "fp8-per-tensor"), ignore=ignore,
                    experts_fp4=fp4)
    if method == "mxfp4":
        return _Fmt("mxfp4", "mxfp4", 4, group=32, experts_only=True, ignore=ignore)
    if method in ("awq", "awq-marlin", "gptq", "gptq-marlin", "gptq-marlin-24", *_AUTOROUND):
        bits = int(_get(q, "bits", "w_bit", default=4))
        group = int(_get(q, "group_size", "q_group_size", default=128))
        fam = "awq" if method.startswith("awq") else "gptq"
        return _Fmt(f"{fam}-int{bits}", "int", bits, group=group if group > 0 else 0, zeros=True, ignore=ignore)
    if method in ("bitsandbytes", "bnb"):
        if q.get("load_in_8bit"):
            return _Fmt("bnb-8bit", "bnb8", 8, ignore=ignore)
        return _Fmt("bnb-4bit", "bnb4", 4, double_quant=bool(q.get("bnb_4bit_use_double_quant", True)), ignore=ignore)
    if method in ("compressed-tensors", "modelopt", "modelopt-fp4", "nvfp4", "modelopt-nvfp4", "modelopt-mixed"):
        mixed = _mixed_layers(q)
        if mixed:
            kinds = sorted({f.name for f in mixed.values()})
            notes.append(f"mixed-precision checkpoint: {', '.join(kinds)} per layer as its quantization config "
                         "lists them; linears listed nowhere stay 16-bit")
            return _Fmt("mixed (" + " + ".join(kinds) + ")", "mixed", layers=mixed, ignore=ignore)
        algo = str(q.get("quant_algo") or "").upper()
        if method in ("nvfp4", "modelopt-fp4", "modelopt-nvfp4"):
            algo = "NVFP4"
        elif method.startswith("modelopt") and not q.get("config_groups") and "FP4" not in algo:
            algo = algo if algo.startswith("FP8") else "FP8"    # ModelOpt's other whole-model format
        single = _algo_format(algo, q.get("group_size"))
        if single is not None:
            single.ignore = ignore
            return single
        w = {}
        for g in (q.get("config_groups") or {}).values():
            if isinstance(g, dict) and isinstance(g.get("weights"), dict):
                w = g["weights"]
                break
        single = _group_format(w)
        single.ignore = ignore
        return single
    # Format words that are not vLLM method names but say the bits (read from a repo name or prose:
    # "INT8-W8A16", "int4"): weight-only integer layouts as compressed-tensors loads them.
    if method in ("int8", "w8a16", "w8a8", "int8-w8a16", "int8-w8a8"):
        notes.append(f"{method}: 8-bit integer weights with per-channel scales assumed")
        return _Fmt("int8", "int", 8, group=0, ignore=ignore)
    if method in ("int4", "w4a16", "int4-w4a16"):
        notes.append(f"{method}: 4-bit integer weights, group 128, assumed")
        return _Fmt("int4-g128", "int", 4, group=128, ignore=ignore)
    notes.append(f"quantization {method!r} is not modelled; weights counted at the base dtype")
    return _Fmt("none")


def _algo_format(algo: str, group: int | None) -> _Fmt | None:
    """A ModelOpt per-layer quant_algo as a format (vllm/model_executor/layers/quantization/modelopt.py)."""
    a = algo.upper()
    if "FP4" in a:
        return _Fmt("nvfp4", "nvfp4", 4, group=int(group or 16))
    if a.startswith("FP8"):
        return _Fmt("fp8", "fp8", 8, channel="PER_CHANNEL" in a)
    return None


def _group_format(w: dict) -> _Fmt:
    """A compressed-tensors config group's weight scheme as a format."""
    bits, typ = int(w.get("num_bits") or 8), str(w.get("type") or "float")
    strat = str(w.get("strategy") or "tensor")
    if typ == "float" and bits == 4:
        return _Fmt("nvfp4", "nvfp4", 4, group=int(w.get("group_size") or 16))
    if typ == "float":
        bs = w.get("block_structure")
        if strat == "block" and bs:
            return _Fmt("fp8-block", "fp8", 8, block=(int(bs[0]), int(bs[1])))
        return _Fmt("fp8", "fp8", 8, channel=strat == "channel")
    group = int(w.get("group_size") or 0) if strat == "group" else 0
    return _Fmt(f"int{bits}" + (f"-g{group}" if group else ""), "int", bits, group=group,
                zeros=not w.get("symmetric", True))


def _mixed_layers(q: dict) -> dict[str, _Fmt] | None:
    """Per-module formats of a mixed-precision checkpoint, None for a single-format one.

    ModelOpt MIXED_PRECISION lists every quantized module with its quant_algo (`quantized_layers`,
    read by vLLM's ModelOptMixedPrecisionConfig); compressed-tensors lists modules per config group
    (`targets`: module names; a class name such as "Linear" or a `re:` pattern means one format for
    all, read by the single-format path)."""
    table: dict[str, _Fmt] = {}
    layers = q.get("quantized_layers")
    if isinstance(layers, dict) and layers:
        for name, cfg in layers.items():
            if isinstance(cfg, dict) and (f := _algo_format(str(cfg.get("quant_algo") or ""), cfg.get("group_size"))):
                table[_norm_name(str(name))] = f
        return table or None
    groups = [g for g in (q.get("config_groups") or {}).values() if isinstance(g, dict)]
    named = [g for g in groups if isinstance(g.get("weights"), dict) and g.get("targets")
             and all("." in str(x) and not str(x).startswith("re:") for x in g["targets"])]
    if len(groups) < 2 or len(named) != len(groups):
        return None
    for g in named:
        f = _group_format(g["weights"])
        for name in g["targets"]:
            table[_norm_name(str(name))] = f
    return table or None


# vLLM's fused linears and the checkpoint modules they load (packed_modules_mapping in the model files)
_PACKED = {"gate_up_proj": ("gate_proj", "up_proj"), "qkv_proj": ("q_proj", "k_proj", "v_proj"),
           "in_proj_qkvz": ("in_proj_qkv", "in_proj_z"), "in_proj_ba": ("in_proj_b", "in_proj_a")}


def _checkpoint_names(name: str) -> list[str]:
    """The checkpoint module names a (possibly fused) vLLM linear loads, normalised."""
    n = _norm_name(name)
    head, _, last = n.rpartition(".")
    return [f"{head}.{part}" if head else part for part in _PACKED.get(last, (last,))]


def _layer_fmt(fmt: _Fmt, name: str) -> _Fmt | None:
    """The format a mixed-precision checkpoint gives this (possibly fused) linear; None: unquantized."""
    return next((f for n in _checkpoint_names(name) if (f := (fmt.layers or {}).get(n)) is not None), None)


def _norm_name(name: str) -> str:
    for a, b in (("model.language_model.", "model."), ("language_model.model.", "model."),
                 ("model.text_model.", "model."), ("language_model.lm_head", "lm_head"), ("backbone.", "model.")):
        name = name.replace(a, b)
    return name


def _ignored(fmt: _Fmt, name: str) -> bool:
    """Is this linear in the checkpoint's ignore list — by its own name or, for a fused vLLM linear,
    a shard's (vLLM skips a fused layer whose shards are skipped; they must agree)."""
    return any(_ignored_name(fmt, n) for n in _checkpoint_names(name))


# A checkpoint's "re:" ignore patterns come from an untrusted config and run over every layer name, so each
# match has a wall-clock limit. A busy machine (bot threads sharing two cores) can run out a short limit on a
# harmless pattern and count an ignored layer as quantized, so a timeout is tried once more with the longer
# limit; a pattern that runs that out too is slow in itself and is skipped from then on (at most
# _SLOW_KEPT remembered): one hostile pattern costs the longer limit once, not on every name.
_RE_LIMIT_S, _RE_RETRY_S, _SLOW_KEPT = 0.05, 0.5, 256
_SLOW_PATTERNS: set[str] = set()


def _re_ignores(pattern: str, n: str) -> bool:
    """Does the checkpoint's `re:` ignore pattern match layer name `n`? Anchored at the name's start, as
    vLLM matches it (compressed_tensors/utils.py _is_equal_or_regex_match: `re.match`). A malformed or
    slow pattern matches nothing."""
    if pattern in _SLOW_PATTERNS:
        return False
    for limit in (_RE_LIMIT_S, _RE_RETRY_S):
        try:
            return regex.match(pattern, n, timeout=limit) is not None
        except regex.error:
            return False
        except TimeoutError:
            continue
    if len(_SLOW_PATTERNS) < _SLOW_KEPT:
        _SLOW_PATTERNS.add(pattern)
    return False


def _ignored_name(fmt: _Fmt, n: str) -> bool:
    for p in fmt.ignore:
        if p.startswith("re:"):
            if _re_ignores(p[3:], n):
                return True
            continue
        q = _norm_name(p)
        if "*" in q or "?" in q:
            if fnmatch.fnmatchcase(n, q) or fnmatch.fnmatchcase(n, q + ".*") or fnmatch.fnmatchcase(n, "*." + q):
                return True
        elif n == q or n.endswith("." + q) or n.startswith(q + ".") or ("." + q + ".") in n:
            return True
    return False


def _quantized(fmt: _Fmt, w: _W) -> bool:
    """Does `fmt` quantize this tensor? Linear layers only (GGUF: every 2-D tensor), minus ignore lists."""
    if fmt.kind == "none":
        return False
    if fmt.kind == "gguf":
        return w.kind in ("linear", "embed", "lm_head") and w.part not in TOWER_PARTS
    if fmt.layers is not None:
        # a mixed-precision checkpoint says module by module, lm_head included where it lists it
        # (ModelOpt NVFP4 exports store lm_head in FP4, and vLLM loads it so)
        return w.kind in ("linear", "lm_head") and w.part not in TOWER_PARTS and _layer_fmt(fmt, w.name) is not None
    if w.kind != "linear" or w.part in TOWER_PARTS:
        return False
    if w.part == "mtp" and fmt.mtp_unquantized:
        return False
    if fmt.experts_only and w.part not in ("experts",):
        return False
    return not _ignored(fmt, w.name)


def _own_fmt(fmt: _Fmt, w: _W) -> _Fmt:
    """The format of this tensor's module: a mixed-precision checkpoint's listed format for it, else `fmt`."""
    return (_layer_fmt(fmt, w.name) or fmt) if fmt.layers is not None else fmt


def _wbytes(fmt: _Fmt, w: _W, rows: int, cols: int, copies: int) -> int:
    """Bytes of a quantized tensor: the format's layout, or FP4 for the routed experts of a
    checkpoint that stores them so (fmt.experts_fp4)."""
    if fmt.experts_fp4 and (w.part == "experts" or (w.part == "mtp" and ".experts" in w.name)):
        return _qbytes(_Fmt("fp4-experts", "mxfp4", 4, group=32), rows, cols, copies)
    return _qbytes(_own_fmt(fmt, w), rows, cols, copies)   # mixed precision: only listed modules come here


def _qbytes(fmt: _Fmt, rows: int, cols: int, copies: int) -> int:
    """Bytes of one quantized linear (copies = experts), following each format's parameter layout."""
    n = rows * cols
    if fmt.kind == "fp8":
        if fmt.block:  # fp8.py block quant: weight_scale_inv fp32 per block_n × block_k tile
            scales = math.ceil(rows / fmt.block[0]) * math.ceil(cols / fmt.block[1]) * 4
        elif fmt.channel:
            scales = rows * 4
        else:
            scales = 8  # weight_scale + input_scale (fp32 scalars)
        return (n + scales) * copies
    if fmt.kind == "int":
        g = fmt.group or cols
        groups = math.ceil(cols / g) * rows
        zeros = math.ceil(groups * fmt.bits / 8) if fmt.zeros else 0
        return (math.ceil(n * fmt.bits / 8) + groups * 2 + zeros) * copies  # packed ints + fp16 scales (+ zeros)
    if fmt.kind == "nvfp4":
        return (n // 2 + math.ceil(n / (fmt.group or 16)) + 8) * copies  # e2m1 + fp8 scale per 16 + 2 fp32 globals
    if fmt.kind == "mxfp4":
        return (n // 2 + math.ceil(n / 32)) * copies  # e2m1 + e8m0 scale per 32
    if fmt.kind == "bnb4":
        blocks = math.ceil(n / 64)
        absmax = blocks + math.ceil(blocks / 256) * 4 + 4 if fmt.double_quant else blocks * 4
        return (math.ceil(n / 2) + absmax) * copies
    if fmt.kind == "bnb8":
        return (n + rows * 4) * copies  # int8 + fp32 row scale (SCB)
    if fmt.kind == "gguf":
        return math.ceil(n * fmt.bits / 8) * copies
    raise ValueError(fmt.kind)


def _mxfp4_expert_bytes(lay: Mxfp4Layout, w: _W, rows: int, copies: int, hidden: int, tp: int) -> int:
    """One rank's MXFP4 experts (w13 [2·I/tp, h] + w2 [h, I/tp] as one `_W` of 3·I rows) or their
    biases (w13_bias 2·I/tp, w2_bias h whole on every rank), at the backend's padded sizes."""
    h = _pad(hidden, lay.hidden_multiple)
    if w.kind == "bias":
        inter = -(-((w.rows - hidden) // 2) // tp)
        return (2 * _pad(inter, lay.inter_multiple) + h) * lay.bias_bytes * copies
    inter = _pad(rows // 3, lay.inter_multiple)
    n = 3 * inter * h
    return (n // 2 + lay.scale_copies * math.ceil(n / 32)) * copies


# --------------------------------------------------------------------------------------------
# dtype, TP, PP
# --------------------------------------------------------------------------------------------


def resolve_dtype(spec: ModelSpec, dtype: str | None, notes: list[str]) -> str:
    """--dtype as vLLM resolves it (vllm/config/model.py _get_and_verify_dtype / _resolve_auto_dtype)."""
    cfg = str(spec.torch_dtype or "").lower().replace("torch.", "")
    d = str(dtype or "auto").lower()
    if d == "auto":
        if cfg in ("float32", "float", ""):
            notes.append(f"config dtype {'float32' if cfg else 'missing (float32)'} → vLLM loads 16-bit: bf16 on "
                         "compute capability ≥ 8.0 (0.9.1+), fp16 on older GPUs/versions; assumed bf16")
            return "bfloat16"
        return cfg
    return {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "float": "float32", "fp32": "float32"}.get(d, d)


def _pad(x: int, to: int) -> int:
    return -(-x // to) * to


def pp_partition(n_layers: int, pp: int, layer_partition: list[int] | None = None,
                 remainder_last: bool = False) -> list[tuple[int, int]]:
    """vllm/distributed/utils.py get_pp_indices: n//pp each, the remainder one each to stages
    -2, -3, … (0.8+) or all to the last stage (`remainder_last`, before 0.8); VLLM_PP_LAYER_PARTITION
    ("16,32") when it has one count per stage summing to the layers."""
    pp = max(1, pp)
    if layer_partition and len(layer_partition) == pp and sum(layer_partition) == n_layers:
        parts = list(layer_partition)
    else:
        parts = [n_layers // pp] * pp
        if remainder_last:
            parts[-1] += n_layers % pp
        else:
            for i in range(2, n_layers % pp + 2):
                parts[-i] += 1
    out, start = [], 0
    for p in parts:
        out.append((start, start + p))
        start += p
    return out


def _rank_share(w: _W, tp: int, vocab_rank_rows: int) -> tuple[int, int]:
    """(rows, cols) of this tensor on one TP rank."""
    if w.tp == "vocab":
        return vocab_rank_rows, w.cols
    if tp <= 1 or w.tp == "replicate":
        return w.rows, w.cols
    if w.tp == "kv" and w.kv_heads:
        # QKVParallelLinear: KV heads split, replicated when kv < tp (max(1, kv // tp) heads per rank).
        per_head = w.rows // w.kv_heads
        return max(1, w.kv_heads // tp) * per_head, w.cols
    if w.kind in ("norm", "param") and w.part not in TOWER_PARTS:
        return -(-w.rows // tp), w.cols
    # Column- or row-parallel: one dimension divides by tp; the element count is the same either way.
    if w.rows >= tp and w.rows % tp == 0:
        return w.rows // tp, w.cols
    return w.rows, -(-w.cols // tp)


# --------------------------------------------------------------------------------------------
# The caching allocator's blocks (c10/cuda/CUDACachingAllocator.cpp)
# --------------------------------------------------------------------------------------------

# A request of 10 MiB or more (kMinLargeAlloc) gets a segment rounded up to 2 MiB (kRoundLarge); the block
# is split off it only when more than 1 MiB (kSmallSize) would remain (should_split), so a tensor whose
# leftover is 1 MiB or less holds the whole segment, and torch.cuda.memory_allocated — what vLLM prints
# as the weights — counts it. Smaller requests round to 512 B (kMinBlockSize) and share segments.
_MIN_LARGE_ALLOC, _ROUND_LARGE, _SMALL_SIZE, _MIN_BLOCK = 10 << 20, 2 << 20, 1 << 20, 512
_QKV_NAMES = (".q_proj", ".k_proj", ".v_proj")    # one QKVParallelLinear weight in vLLM


def allocator_slack(nbytes: int) -> int:
    """Bytes the caching allocator counts beyond a tensor of `nbytes`: the unsplit rest of its 2 MiB-
    rounded segment (a 31.5 MiB qkv_proj holds 32 MiB), or the 512-byte rounding of a smaller one."""
    block = -(-nbytes // _MIN_BLOCK) * _MIN_BLOCK
    if nbytes >= _MIN_LARGE_ALLOC:
        segment = -(-nbytes // _ROUND_LARGE) * _ROUND_LARGE
        if segment - block <= _SMALL_SIZE:
            block = segment
    return block - nbytes


def _single_tensor_bytes(fmt: _Fmt, w: _W, rows: int, cols: int, copies: int, b: int,
                         mxfp4_layout: Mxfp4Layout | None) -> int:
    """The bytes of the largest GPU tensor a weight is: a 16-bit (or kept-dtype) weight, an FP8 weight
    apart from its small scale tensors, or the packed values of an integer format (AWQ's / GPTQ's
    qweight, compressed-tensors' weight_packed; their scales and zero points are tensors of their own,
    under 10 MiB for all but the largest layers). 0 for the FP4 layouts and the norms counted together.

    Packed integer weights get the allocator's rounding too: they are allocated at model init as the
    16-bit ones are, and the Marlin repack after loading allocates each new qweight the size of the one
    it frees, so the slack the init leaves stays: a replay of the caching allocator's rules (best fit,
    large segments rounded to 2 MiB, no split that would leave 1 MiB or less) over the init and the
    repack of Qwen2.5-14B, Qwen2.5-Coder-32B, gemma-3-27b and Qwen2.5-72B keeps it within 2 MiB for
    AWQ's sequence and within 42 MiB, either way, for GPTQ's and compressed-tensors'. Logs: Qwen2.5-14B-AWQ printed
    9.38 GiB against 9.30 without it and 9.36 with it, Qwen2.5-Coder-32B-AWQ 18.14 (18.01 → 18.14),
    gemma-3-27b AWQ (dev vllm#16199) 17.61 (17.48 → 17.59); of the 15 packed-integer weight figures in
    collected-2026-12.jsonl 10 come closer and 5 move away by at most 0.3 points (a GPTQ 72B and four
    Gemma 4 E4B QAT runs)."""
    if w.kind == "norm" or (fmt.kind == "mxfp4" and mxfp4_layout and w.part == "experts"):
        return 0
    if not _quantized(fmt, w):
        return b
    if fmt.kind == "fp8" and not (fmt.experts_fp4 and w.part == "experts"):
        return rows * cols * copies
    own = _own_fmt(fmt, w)
    if own.kind == "int":
        return math.ceil(rows * cols * own.bits / 8) * copies
    return 0


# --------------------------------------------------------------------------------------------
# RoPE cos/sin caches (GPU buffers created at load)
# --------------------------------------------------------------------------------------------


def rope_cache_bytes(spec: ModelSpec, dtype_b: int, mrope_factor: int = 1) -> tuple[int, list[str]]:
    """vllm/model_executor/layers/rotary_embedding.py: cos_sin_cache [positions, rotary_dim] in the model dtype.

    get_rope() caches instances by (head_size, rotary_dim, max_position, base, scaling), so a
    model has one cache per distinct rope setup (one for most models; local + global for
    gemma-3/4). Positions: max_position_embeddings; linear/dynamic scaling multiply by the factor;
    YaRN / deepseek_yarn use original_max_position_embeddings × factor; longrope keeps a short
    and a long cache (original + max positions). A multimodal RoPE (mrope_section: Qwen2-VL and its
    successors) keeps `mrope_factor` times the positions: MRotaryEmbedding's cache_max_position_num is
    4 × max_position_embeddings from vLLM 0.7.2 ("the maximum index value is related to the duration
    of the input video"), max_position_embeddings before.
    """
    t = spec.text
    notes: list[str] = []
    maxpos = int(_get(t, "max_position_embeddings", default=0) or 0)
    if not maxpos or t.get("position_embedding_type") in ("alibi",) or t.get("alibi"):
        return 0, notes
    setups: list[tuple[int, dict | None]] = []
    rp = t.get("rope_parameters")
    v4 = spec.deepseek_v4_layers
    if v4:
        # models/deepseek_v4/common/rope.py: DeepseekV4ScalingRotaryEmbedding keeps its cos/sin cache in
        # fp32 over rope_dim (qk_rope_head_dim) columns, one per base: rope_theta for the window-only
        # layers, compress_rope_theta for the compressed ones
        rot = int(_get(t, "qk_rope_head_dim", default=64))
        bases = {t.get("compress_rope_theta") if lk.compress_ratio > 1 else t.get("rope_theta") for lk in v4}
        sc = spec.rope_scaling or {}
        positions = int(sc.get("original_max_position_embeddings") or maxpos) * int(float(sc.get("factor") or 1)) \
            if str(sc.get("rope_type") or sc.get("type") or "default") != "default" else maxpos
        return len(bases) * positions * rot * 4, notes
    if isinstance(rp, dict) and set(rp) & {"full_attention", "sliding_attention"}:
        kinds = {("full" if lk.kind == "full" else "sliding") for lk in spec.layers if lk.kind in ("full", "sliding")}
        for k in sorted(kinds):
            p = rp.get(f"{k}_attention") or {}
            hd = int(_get(t, "global_head_dim", default=spec.head_dim)) if k == "full" else spec.head_dim
            if str(p.get("rope_type") or "") == "proportional":
                # rotary_embedding/gemma4_rope.py Gemma4RotaryEmbedding: the cache spans the whole head
                # (rotary_dim = head_size), its non-rotated pairs zero frequencies
                setups.append((hd, p))
            else:
                setups.append((int(hd * float(p.get("partial_rotary_factor") or 1.0)), p))
    else:
        scaling = spec.rope_scaling
        setups.append((spec.rotary_dim, scaling))
        if t.get("rope_local_base_freq") and any(lk.kind == "sliding" for lk in spec.layers):
            setups.append((spec.rotary_dim, None))  # gemma-3 local layers: separate unscaled cache
    total = 0
    for rot, sc in setups:
        positions = maxpos
        rtype = str((sc or {}).get("rope_type") or (sc or {}).get("type") or "default").lower()
        factor = float((sc or {}).get("factor") or 1.0)
        orig = int((sc or {}).get("original_max_position_embeddings") or t.get("original_max_position_embeddings")
                   or maxpos)
        if rtype in ("linear", "dynamic"):
            positions = int(maxpos * factor)
        elif rtype in ("yarn", "deepseek_yarn"):
            positions = int(orig * factor)
        elif rtype in ("longrope", "su"):
            positions = orig + maxpos
        if (sc or {}).get("mrope_section") or (isinstance(rp, dict) and rp.get("mrope_section")):
            positions *= mrope_factor
        total += positions * rot * dtype_b
    if t.get("dual_chunk_attention_config"):
        notes.append("dual-chunk attention config present: vLLM 0.9+ may build a larger dual-chunk rotary cache; "
                     "counted one standard cos/sin cache")
    return total, notes


def _mla_absorb_bytes(spec: ModelSpec, fmt: _Fmt, tp: int, n_layers: int, dtype_b: int,
                     matrix_absorption: bool = False) -> tuple[int, list[str]]:
    """What MLA backends build from the attention weights after loading, beside them, and the notes.

    Copies of kv_b_proj as 16-bit W_UK/W_UV when it is quantized (vllm/v1/attention/backends/mla/
    common.py process_weights_after_loading: views, no memory, for an unquantized one). With
    `matrix_absorption` (0.7.1–0.7.3, VLLM_MLA_PERFORM_MATRIX_ABSORPTION; vllm/attention/backends/mla/
    utils.py) also the decode matrices W_Q_UK = W_Q·W_UK [q_lora_rank (or hidden), heads × kv_lora_rank]
    and W_UV_O = W_UV·W_O [heads × kv_lora_rank, hidden] — requantized to FP8 with the checkpoint's
    block scales when the weights are FP8, else in the model dtype — and W_QR, a contiguous copy of
    q_proj's RoPE columns [q_in, heads × rope]. DeepSeek-R1 at TP 8: 12,582,912 + 58,720,256 +
    3,145,728 B and scales per layer, 4.2 GiB over 61 layers."""
    if not spec.mla:
        return 0, []
    m = spec.mla
    heads = spec.num_attention_heads // max(1, tp)
    lora = int(m["kv_lora_rank"])
    total, notes = 0, []
    if fmt.kind != "none":
        nope = int(m.get("qk_nope_head_dim") or 0)
        v = int(m.get("v_head_dim") or nope)
        total += lora * heads * (nope + v) * dtype_b * n_layers
        notes.append("MLA: quantized kv_b_proj is dequantized into 16-bit W_UK/W_UV copies at load")
    if matrix_absorption:
        q_in = int(m.get("q_lora_rank") or 0) or spec.hidden_size
        rope = int(m.get("qk_rope_head_dim") or 0)

        def absorbed(rows: int, cols: int) -> int:
            if fmt.kind != "fp8":
                return rows * cols * dtype_b
            bn, bk = fmt.block or (rows, cols)       # per-tensor FP8: one scale
            return rows * cols + math.ceil(rows / bn) * math.ceil(cols / bk) * 4

        extra = (absorbed(q_in, heads * lora) + absorbed(heads * lora, spec.hidden_size)
                 + q_in * heads * rope * dtype_b) * n_layers
        total += extra
        notes.append(f"MLA matrix absorption (vLLM 0.7.1–0.7.3): W_Q_UK, W_UV_O and W_QR precomputed per layer, "
                     f"{extra / 2**30:.2f} GiB beside the weights")
    return total, notes


# --------------------------------------------------------------------------------------------
# weight_bytes
# --------------------------------------------------------------------------------------------


def weight_bytes(spec: ModelSpec, *, dtype: str | None = None, quantization: str | None = None,
                 tp: int = 1, pp: int = 1, pp_rank: int | None = None, ep: int = 1,
                 safetensors_bytes_by_dtype: dict[str, int] | None = None,
                 with_mtp: bool = False, layer_partition: list[int] | None = None,
                 mxfp4_layout: Mxfp4Layout | None = None, with_vision: bool = True, with_audio: bool = True,
                 mla_absorption: bool = False, rope_per_layer: bool = False,
                 with_lm_head: bool = True, vision_replicated: bool = False,
                 mrope_factor: int = 1, allocator_blocks: bool = True) -> WeightBreakdown:
    """Bytes of weights + load-time GPU buffers on one rank, as vLLM loads them (the W of §1.1).

    `ep` > 1 (--enable-expert-parallel, ep = tp × dp): each rank holds whole experts, a 1/ep share
    of them, instead of a 1/tp slice of every expert (vllm/model_executor/layers/fused_moe/layer.py).
    `with_mtp` (MTP speculative decoding): the MTP layers are loaded on the last stage; their
    embedding and lm_head copies are not, the drafter shares the target's (vllm/v1/spec_decode/eagle.py
    load_model).
    `with_vision` False: the vision tower is not built (every modality limited to 0, vLLM 0.15+);
    `with_audio` False: nor the audio tower (audio limited to 0).
    `with_lm_head` False: no lm_head (a pooling model: model_executor/models/adapters.py deletes it).
    `vision_replicated`: every tensor-parallel rank holds the whole vision tower (--mm-encoder-tp-mode
    data: its linears are built with disable_tp, e.g. qwen2_5_vl.py use_data_parallel).
    `allocator_blocks`: count what the caching allocator keeps beyond each large tensor (allocator_slack);
    False under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    """
    tp, pp, ep = max(1, int(tp)), max(1, int(pp)), max(1, int(ep))
    notes: list[str] = []
    base = resolve_dtype(spec, dtype, notes)
    db = dtype_bytes(base, 2)
    fmt = _resolve_format(spec, quantization, notes)
    ws, mtp, vnotes = _inventory(spec)
    notes += vnotes
    counts = count_params(spec)

    # PP: which stage, which layers.
    parts = pp_partition(spec.num_layers, pp, layer_partition)
    if pp_rank is None:
        stages = range(pp)
    else:
        if not 0 <= pp_rank < pp:
            raise ValueError(f"pp_rank {pp_rank} out of range for pp={pp}")
        stages = [pp_rank]
    vocab_rank = -(-_pad(spec.vocab_size, 64) // tp)  # vocab_parallel_embedding.py: pad to 64, split by tp

    def stage_bytes(s: int) -> tuple[dict[str, int], int]:
        lo, hi = parts[s]
        first, last = s == 0, s == pp - 1
        by: dict[str, int] = {}
        allocs: dict[str, int] = {}     # one GPU tensor each: q/k/v merge into qkv_proj, experts into one
        drafts = [w for w in mtp if w.kind not in ("embed", "lm_head")] if (with_mtp and last) else []
        for w in ws + drafts:
            if w.part != "mtp" and w.layer is not None and not lo <= w.layer < hi:
                continue
            if w.layer is None:
                if w.kind == "embed" and not (first or (last and spec.tie_word_embeddings)):
                    continue  # tied models keep the embedding on the last stage too (llama.py)
                if (w.kind == "lm_head" or w.name == "model.norm") and not last:
                    continue
                if w.kind == "lm_head" and not with_lm_head:
                    continue
                if w.part == "vision" and not (first and with_vision):
                    continue
                if w.part == "audio" and not (first and with_audio):
                    continue
            copies = w.copies
            if ep > 1 and (w.part == "experts" or (w.part == "mtp" and ".experts" in w.name)):
                rows, cols, copies = w.rows, w.cols, -(-w.copies // ep)
            elif vision_replicated and w.part == "vision":
                rows, cols = w.rows, w.cols
            else:
                rows, cols = _rank_share(w, tp, vocab_rank)
            if fmt.kind == "mxfp4" and mxfp4_layout and w.part == "experts" and w.kind in ("linear", "bias"):
                b = _mxfp4_expert_bytes(mxfp4_layout, w, rows, copies, spec.hidden_size, tp if ep == 1 else 1)
            elif _quantized(fmt, w):
                b = _wbytes(fmt, w, rows, cols, copies)
            else:
                b = rows * cols * copies * (w.elem_bytes or db)
            by[w.part] = by.get(w.part, 0) + b
            alloc = _single_tensor_bytes(fmt, w, rows, cols, copies, b, mxfp4_layout) if allocator_blocks else 0
            if alloc:
                key = w.name.rsplit(".", 1)[0] + ".qkv_proj" if w.name.endswith(_QKV_NAMES) else w.name
                allocs[key] = allocs.get(key, 0) + alloc
        slack = sum(allocator_slack(a) for a in allocs.values())
        if slack:
            by["allocator_blocks"] = slack
        return by, hi - lo

    best: tuple[int, dict[str, int], int, int] | None = None
    for s in stages:
        by, nl = stage_bytes(s)
        tot = sum(by.values())
        if best is None or tot > best[0]:
            best = (tot, by, s, nl)
    assert best is not None
    _, by, stage, n_stage_layers = best
    if pp > 1:
        lo, hi = parts[stage]
        notes.append(f"PP={pp}: stage {stage} holds layers {lo}–{hi - 1}"
                     + (" (the largest stage; vLLM sizes the KV cache by the tightest worker)" if pp_rank is None else ""))
    checkpoint = sum(by.values())
    by["computed_total"] = checkpoint

    if safetensors_bytes_by_dtype:
        hub = sum(int(v) for v in safetensors_bytes_by_dtype.values())
        ckpt_fmt = _resolve_format(spec, None, [])
        same = (ckpt_fmt.name == fmt.name) and (dtype in (None, "auto") or base == str(spec.torch_dtype).lower())
        if same and hub > 0:
            stored = _stored_bytes(spec, fmt, ws + mtp, db)
            scaled = round(checkpoint * hub / stored) if stored else checkpoint
            notes.append(f"checkpoint bytes from the Hub ({hub:,} B over {', '.join(sorted(safetensors_bytes_by_dtype))}) "
                         f"used for the weights; computed {stored:,} B for the stored tensors"
                         + (", scaled to this rank's share" if (tp > 1 or pp > 1 or mtp) else ""))
            by["checkpoint"] = scaled
            checkpoint = scaled
        else:
            notes.append("Hub checkpoint bytes not used: the requested dtype/quantization changes the stored format")

    rope, rnotes = rope_cache_bytes(spec, db, mrope_factor)
    notes += rnotes
    if rope and rope_per_layer:
        # vLLM ≤ 0.2.2 (rotary_embedding.py): each attention layer registers its own cos/sin cache
        # buffer; 0.2.3 shares one per setup (get_rope's _ROPE_DICT)
        rope *= max(1, n_stage_layers)
        notes.append(f"vLLM ≤ 0.2.2 keeps a cos/sin cache in every attention layer ({n_stage_layers} here)")
    if rope:
        by["rope_cache"] = rope
    absorb, anotes = _mla_absorb_bytes(spec, fmt, tp, n_stage_layers, db, mla_absorption)
    notes += anotes
    if absorb:
        by["mla_absorbed"] = absorb
    if fmt.kind == "mxfp4" and mxfp4_layout is None:
        notes.append("MXFP4 experts counted unpadded; some vLLM MoE backends pad hidden/intermediate to "
                     "multiples of 64–256, adding a few percent")
    elif fmt.kind == "mxfp4" and mxfp4_layout is not None:
        lay = mxfp4_layout
        pads = [f"{what} to a multiple of {m}" for what, m in (("intermediate", lay.inter_multiple),
                                                                ("hidden", lay.hidden_multiple)) if m > 1]
        extra = (["scales held twice (swizzled copy + loaded tensor)"] if lay.scale_copies > 1 else []) + \
                (["fp32 biases"] if lay.bias_bytes == 4 else [])
        notes.append(f"MXFP4 experts as vLLM's {lay.name} MoE backend holds them"
                     + (f": {', '.join(pads + extra)}" if pads or extra else ": unpadded"))
    if vision_replicated and spec.vision and tp > 1:
        notes.append(f"--mm-encoder-tp-mode data: every one of the {tp} tensor-parallel ranks holds the whole vision "
                     "tower (the images are split between them instead)")
    if not with_vision and spec.vision:
        notes.append("vision tower not loaded: every modality's limit is 0 (--language-model-only or "
                     "--limit-mm-per-prompt 0; vllm _mark_tower_model, 0.15+)")
    elif fmt.kind != "none" and spec.vision:
        notes.append("vision tower kept at the base dtype (quantizers usually skip it)")
    if by.get("allocator_blocks", 0) >= 1 << 20:
        notes.append(f"PyTorch's caching allocator keeps {by['allocator_blocks'] / 2**20:,.1f} MiB beyond the weight tensors "
                     "on this rank: a tensor of 10 MiB or more holds its whole 2 MiB-rounded segment when 1 MiB or "
                     "less would be left, and torch.cuda.memory_allocated, which vLLM prints, counts it")
    if not with_audio and any(w.part == "audio" for w in ws):
        notes.append("audio tower not loaded: the audio limit is 0")
    if ep > 1:
        notes.append(f"expert parallelism over {ep} ranks: each holds {-(-(spec.moe.num_experts if spec.moe else 0) // ep)} "
                     "whole experts")
    if tp > 1:
        notes.append(f"TP={tp}: linear layers split, KV projections replicated when KV heads < TP, norms and "
                     f"routers replicated, vocab padded to {_pad(spec.vocab_size, 64):,} and split")
    total = checkpoint + rope + absorb
    name = fmt.name if fmt.kind != "none" else _dtype_name(base)
    if fmt.kind != "none":
        name = name if name != "fp8-block" else "fp8"
    base_notes = counts.assumptions
    if with_mtp and mtp:
        mtp_params = sum(w.params for w in mtp if w.kind not in ("embed", "lm_head"))
        base_notes = [n for n in base_notes if not n.startswith("multi-token-prediction weights")]
        notes.append(f"MTP speculative decoding: the {mtp_params:,} MTP-layer parameters are loaded (on the last "
                     "pipeline stage); the drafter shares the target's embedding and lm_head")
        if fmt.mtp_unquantized:
            notes.append(f"the MTP block is counted at 16 bits beside the {fmt.name} weights: the checkpoint's "
                         "quantization config is not known, and quantizers leave MTP layers unquantized "
                         "(transformers drops them on load; llm-compressor and ModelOpt exports store them so)")
    return WeightBreakdown(counts.params_total, counts.params_by_part, total, by, name, base_notes + notes)


def _stored_bytes(spec: ModelSpec, fmt: _Fmt, ws: list[_W], db: int) -> int:
    """Bytes the checkpoint stores for these tensors (whole model, incl. MTP), in format `fmt`."""
    out = 0
    for w in _stored_only(ws):
        out += _wbytes(fmt, w, w.rows, w.cols, w.copies) if _quantized(fmt, w) else w.params * db
    return out


def checkpoint_bytes(spec: ModelSpec, *, quantization: str | None = None) -> int:
    """Bytes of the safetensors files this config describes (stored tensors incl. MTP, no GPU buffers)."""
    notes: list[str] = []
    fmt = _resolve_format(spec, quantization, notes)
    ws, mtp, _ = _inventory(spec)
    return _stored_bytes(spec, fmt, ws + mtp, dtype_bytes(spec.torch_dtype or "bfloat16", 2))
