"""The language model's forward pass in vLLM's profile run: the live activations of its widest
layer over the profiled tokens, and the kernel workspaces that scale with them (fused MoE, Marlin,
bitsandbytes dequantization). Estimates: each factor names the logs it was fitted on.
"""

from __future__ import annotations

from estimator import params
from estimator.params import gated_mlp
from estimator.spec import ModelSpec
from estimator.vllm import BNB_MOE_FROM, QUANT_METHOD_REMOVED, EngineSettings, Profile

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


# vLLM's fused MoE kernel works through at most this many tokens at a time and sizes its
# workspaces for one chunk (VLLM_FUSED_MOE_CHUNK_SIZE's default in vllm/envs.py, read by
# fused_moe.py fused_experts_impl and, for the modular kernels, modular_kernel.py _chunk_info): none
# before 0.5.1 (the caches hold every token), 65,536 in 0.5.1–0.5.5, 32,768 from 0.6.0, 16 × 1024 from
# 0.12.0; 0.18.0 removed the chunking (fused_experts_impl sizes its caches for M = all tokens, and the
# modular kernel runs "only one chunk"). Code, not a fit.
FUSED_MOE_CHUNKS: tuple[tuple[tuple[int, int, int], int | None], ...] = (
    ((0, 5, 1), 65536), ((0, 6, 0), 32768), ((0, 12, 0), 16384), ((0, 18, 0), None))
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


def fused_moe_chunk(spec: ModelSpec, profile: Profile, s: EngineSettings) -> int | None:
    """The most tokens the experts' workspaces hold at once in this release (FUSED_MOE_CHUNKS), None
    for all of them (before 0.5.1, from 0.18.0, and Marlin's experts before 0.12)."""
    if marlin_moe_unchunked(spec, profile, s):
        return None
    chunk = None
    for since, size in FUSED_MOE_CHUNKS:
        if profile.version >= since:
            chunk = size
    return chunk


def routed_tokens(s: EngineSettings, tokens: int) -> int:
    """The tokens each MoE layer's experts take in the profile run: with data parallelism every DP rank's
    (forward_bytes)."""
    return tokens * max(1, s.data_parallel_size or 1)


def unchunked_batch(spec: ModelSpec, profile: Profile, s: EngineSettings, tokens: int) -> int:
    """The routed tokens the experts' workspaces hold at once where this release does not chunk them
    and the batch is wider than the smallest chunk a release uses (what the reply says); 0 otherwise."""
    routed = routed_tokens(s, tokens)
    wider = routed > min(size for _since, size in FUSED_MOE_CHUNKS if size)
    return routed if spec.moe and spec.moe.moe_layers and wider and fused_moe_chunk(spec, profile, s) is None else 0


def forward_bytes(spec: ModelSpec, s: EngineSettings, tokens: int, dtype_b: int, profile: Profile) -> int:
    """Peak of one decoder layer's forward over `tokens` dummy tokens (docs §6).

    Dense: MLP gate/up + activation (3·I/tp) + qkv + residual/norm buffers (3·h) per token, × the
    V1 factor; V0 (eager): the MLP's live set 3·I/tp + 3·h, × V0_FORWARD_FACTOR (MoE layers alike).
    MoE: routed tokens fan out top_k times; fused_moe keeps the gate/up output [tokens × top_k × 2·I/tp],
    the activation's [… × I/tp] and the down projection's [… × hidden], sized for one chunk
    (fused_moe_chunk). From 0.8.0 the first and last share one buffer (fused_experts_impl's cache13),
    but the sum is kept, as the logs that size it disagree: with the max of the two, vllm#28228's Marlin
    run (whose fused_marlin_moe shares it too) leaves 3.39 GiB of KV where the log prints 2.30 (2.12
    with the sum), and the dev MoE pools of recipes-12 and vllm#34076 move 3 and 2 points away; a
    nanoserve DP 8 log of Kimi-K2.6 (0.20, 65,536 routed tokens, no chunk) prints −19.08 GiB, which the
    shared buffer gives (−20.98) and the sum overshoots (−26.18). With data parallelism every
    MoE layer first gathers the hidden states of all DP ranks (naive / allgather-reducescatter all2all:
    `naive_multicast`, vllm device_communicators/all2all.py), and the profile run gives every DP rank
    the same Tb, so the experts see dp × Tb tokens and the gathered input and combined output buffers
    hold dp × Tb × h.
    """
    tp = s.tensor_parallel_size
    v0 = profile.engine == "v0"
    h, inter = spec.hidden_size, params.max_dense_intermediate(spec)   # Gemma 4 E2B's double-wide layers
    qkv = (params.max_attention_heads(spec) + 2 * spec.num_kv_heads) * spec.head_dim // tp
    # V0's eager run frees the attention buffers before the MLP (or experts) run: no qkv term
    factor, attn = (V0_FORWARD_FACTOR, 0) if v0 else (FORWARD_FACTOR, qkv)
    dense = factor * tokens * (3 * inter // tp + attn + 3 * h) * dtype_b
    if not (spec.moe and spec.moe.moe_layers):
        return int(dense)
    m = spec.moe
    dp = max(1, s.data_parallel_size or 1)
    routed = routed_tokens(s, tokens)
    # gated experts keep 2·I + I per routed token, plain ones (relu²) I + I; LatentMoE (nemotron_h.py)
    # runs them in moe_latent_size, so their output cache is that wide, not hidden
    mats = 3 if gated_mlp(spec) else 2
    out_w = int(spec.text.get("moe_latent_size") or 0) or h
    per_token = m.experts_per_tok * (mats * m.expert_intermediate // tp + out_w) + mats * m.shared_intermediate // tp
    most = fused_moe_chunk(spec, profile, s)
    chunk = routed if most is None else min(routed, most)
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
    the activation (I) and 3h (forward_bytes); Marlin adds I more (its fp32 reduce buffer, at most
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
