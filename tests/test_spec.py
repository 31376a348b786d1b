"""ModelSpec from config.json: per-layer KV kinds and KV bytes per token, checked by hand.

Every expected number is written as the arithmetic of ../shared/docs/vllm-memory.md §2.1
(per-layer bytes per token), §2.3 (which layers slide / chunk) and §2.4b (Mamba / gated-DeltaNet
state per layer per request), from the config values printed in the comment. Configs come from
the bundled offline catalog (`estimator.catalog`), so these tests run with no network and no
../shared checkout.
"""

from __future__ import annotations

import pytest

from estimator import catalog
from estimator.spec import (
    MLA,
    ChunkedLocal,
    FullAttention,
    MambaState,
    SlidingWindow,
    spec_from_config,
)

KiB = 1024


def load(repo_id: str):
    hit = catalog.lookup(repo_id)
    assert hit is not None, f"{repo_id} is not in the bundled catalog"
    cid, config, companions = hit
    return spec_from_config(config, cid, companions)


def kinds(spec) -> list[str]:
    return [lk.kind for lk in spec.layers]


# ---------------------------------------------------------------------------------------------
# Dense GQA / MQA
# ---------------------------------------------------------------------------------------------


def test_llama_31_8b_gqa_bf16():
    spec = load("meta-llama/Llama-3.1-8B")
    # 32 layers × 8 KV heads × head_dim 128 (4096/32) × 2 (K and V) × 2 B (bf16)
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 32 * 8 * 128 * 2 * 2 == 131_072
    assert kinds(spec) == ["full"] * 32
    assert spec.num_kv_heads == 8 and spec.head_dim == 128


def test_qwen25_14b_1m_seed_model():
    spec = load("Qwen/Qwen2.5-14B-Instruct-1M")
    # 48 layers × 8 KV heads × 128 (5120/40) × 2 × 2 B = 196,608 B = 192 KiB (issue 2 seed)
    assert spec.kv_bytes_per_token(1, 2) == 48 * 8 * 128 * 2 * 2 == 196_608 == 192 * KiB
    # config has sliding_window 1010000 but use_sliding_window false → vLLM ignores it (§2.3)
    assert kinds(spec) == ["full"] * 48
    assert spec.sliding_window is None


def test_qwen25_7b_sliding_window_key_is_off_without_use_sliding_window():
    spec = load("Qwen/Qwen2.5-7B-Instruct")
    # sliding_window 131072 + use_sliding_window false → all 28 layers full
    assert kinds(spec) == ["full"] * 28
    # 28 layers × 4 KV heads × 128 (3584/28) × 2 × 2 B = 57,344 B = 56 KiB (§2.1 example)
    assert spec.kv_bytes_per_token(1, 2) == 28 * 4 * 128 * 2 * 2 == 56 * KiB


def test_qwen2_use_sliding_window_true_slides():
    hit = catalog.lookup("Qwen/Qwen2.5-7B-Instruct")
    assert hit
    cfg = dict(hit[1], use_sliding_window=True, sliding_window=4096, max_window_layers=0)
    spec = spec_from_config(cfg, "synthetic/qwen2-swa")
    # use_sliding_window true and max_window_layers 0 → every layer slides with window 4096
    assert kinds(spec) == ["sliding"] * 28
    assert spec.sliding_window == 4096


def test_mistral_v01_every_layer_slides():
    spec = load("mistralai/Mistral-7B-v0.1")
    # Mistral-7B-v0.1: sliding_window 4096 on all 32 layers (§2.3)
    assert kinds(spec) == ["sliding"] * 32
    assert spec.sliding_window == 4096
    # 32 × 8 × 128 × 2 × 2 B, counted at full per-token cost while inside the window
    assert spec.kv_bytes_per_token(1, 2) == 32 * 8 * 128 * 2 * 2


def test_falcon_7b_multi_query_is_one_kv_head():
    spec = load("tiiuae/falcon-7b")
    # multi_query true (old architecture) → 1 KV head; head_dim 4544 / 71 = 64; 32 layers
    assert spec.num_kv_heads == 1
    assert spec.head_dim == 4544 // 71 == 64
    assert spec.kv_bytes_per_token(1, 2) == 32 * 1 * 64 * 2 * 2 == 8_192
    # one KV head replicated on every rank: TP2 keeps max(1, 1 // 2) = 1 head
    assert spec.kv_bytes_per_token(2, 2) == 8_192


def test_fp8_kv_halves_bytes_per_token():
    spec = load("meta-llama/Llama-3.1-8B")
    # fp8 KV: 1 B per element → 32 × 8 × 128 × 2 × 1
    assert spec.kv_bytes_per_token(1, 1) == 32 * 8 * 128 * 2 * 1 == 65_536
    assert spec.kv_bytes_per_token(1, 1) * 2 == spec.kv_bytes_per_token(1, 2)


# ---------------------------------------------------------------------------------------------
# Tensor parallel: heads split, replicated below one head per rank
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (1, 32 * 8 * 128 * 2 * 2),          # 131,072
        (2, 32 * (8 // 2) * 128 * 2 * 2),   # 65,536
        (4, 32 * (8 // 4) * 128 * 2 * 2),   # 32,768
        (8, 32 * (8 // 8) * 128 * 2 * 2),   # 16,384
        (16, 32 * 1 * 128 * 2 * 2),         # max(1, 8 // 16) = 1 head → still 16,384
    ],
)
def test_llama_31_8b_tp_split(tp, expected):
    assert load("meta-llama/Llama-3.1-8B").kv_bytes_per_token(tp, 2) == expected


def test_llama_31_70b_tp8_and_tp16_replication():
    spec = load("meta-llama/Llama-3.1-70B")
    # 80 layers × 8 KV heads × 128 × 2 × 2 B = 327,680 B = 320 KiB
    assert spec.kv_bytes_per_token(1, 2) == 80 * 8 * 128 * 2 * 2 == 320 * KiB
    # TP8: 8 // 8 = 1 head per rank → 80 × 1 × 128 × 2 × 2 = 40 KiB
    assert spec.kv_bytes_per_token(8, 2) == 80 * 1 * 128 * 2 * 2 == 40 * KiB
    # TP16: max(1, 8 // 16) = 1 head, replicated → still 40 KiB, not 20
    assert spec.kv_bytes_per_token(16, 2) == 40 * KiB


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        (2, 28 * 2 * 128 * 2 * 2),   # 4 // 2 = 2 heads → 28 KiB
        (4, 28 * 1 * 128 * 2 * 2),   # 4 // 4 = 1 head → 14 KiB
        (8, 28 * 1 * 128 * 2 * 2),   # max(1, 4 // 8) = 1 head (replicated) → 14 KiB
    ],
)
def test_qwen25_7b_tp(tp, expected):
    assert load("Qwen/Qwen2.5-7B-Instruct").kv_bytes_per_token(tp, 2) == expected


def test_qwen25_7b_tp4_is_14_kib():
    assert load("Qwen/Qwen2.5-7B-Instruct").kv_bytes_per_token(4, 2) == 14 * KiB


# ---------------------------------------------------------------------------------------------
# MLA
# ---------------------------------------------------------------------------------------------


def test_deepseek_v3_mla():
    spec = load("deepseek-ai/DeepSeek-V3")
    assert spec.uses_mla
    assert all(isinstance(lk, MLA) for lk in spec.layers) and len(spec.layers) == 61
    # latent kv_lora_rank 512 + qk_rope_head_dim 64 = 576, ONE state (no ×2 for K,V)
    assert spec.kv_bytes_per_token(1, 2) == 61 * (512 + 64) * 2 == 70_272
    # fp8 KV: 61 × 576 × 1
    assert spec.kv_bytes_per_token(1, 1) == 61 * 576 * 1 == 35_136


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_deepseek_v3_mla_not_split_by_tp(tp):
    # MLA latent is replicated on every rank: 61 × 576 × 2 regardless of TP
    assert load("deepseek-ai/DeepSeek-V3").kv_bytes_per_token(tp, 2) == 61 * 576 * 2


# ---------------------------------------------------------------------------------------------
# Sliding-window hybrids
# ---------------------------------------------------------------------------------------------


def test_gemma2_9b_even_layers_slide():
    spec = load("google/gemma-2-9b-it")
    ks = kinds(spec)
    # 42 layers: vLLM gemma2 slides on even layers → 21 sliding + 21 full, window 4096
    assert ks == ["sliding", "full"] * 21
    assert ks.count("sliding") == 21 and ks.count("full") == 21
    assert spec.sliding_window == 4096
    # per layer 2 × 8 KV heads × head_dim 256 × 2 B = 8,192 B; 42 layers = 344,064 B
    assert all(lk.bytes_per_token(1, 2) == 2 * 8 * 256 * 2 for lk in spec.layers)
    assert spec.kv_bytes_per_token(1, 2) == 42 * 2 * 8 * 256 * 2 == 344_064


def test_gemma3_4b_five_local_one_global():
    spec = load("google/gemma-3-4b-it")
    ks = kinds(spec)
    # 34 layers, sliding_window_pattern 6 (transformers default): every 6th layer global
    full_at = [i for i, k in enumerate(ks) if k == "full"]
    assert full_at == [5, 11, 17, 23, 29]
    assert ks.count("sliding") == 29
    # window 1024 from text_config
    assert spec.sliding_window == 1024
    assert all(lk.window == 1024 for lk in spec.layers if isinstance(lk, SlidingWindow))
    # per layer 2 × 4 KV heads × 256 × 2 B = 4,096 B; 34 layers = 139,264 B
    assert spec.kv_bytes_per_token(1, 2) == 34 * 2 * 4 * 256 * 2 == 139_264
    assert spec.is_multimodal


def test_gpt_oss_20b_alternating_window_128():
    spec = load("openai/gpt-oss-20b")
    ks = kinds(spec)
    # layer_types: sliding, full, sliding, full … over 24 layers
    assert ks == ["sliding", "full"] * 12
    assert spec.sliding_window == 128
    # per layer 2 × 8 KV heads × head_dim 64 × 2 B = 2,048 B → page (bs 16) = 32 KiB (§2.4c)
    per_layer = 2 * 8 * 64 * 2
    assert per_layer == 2_048 and 16 * per_layer == 32 * KiB
    assert all(lk.bytes_per_token(1, 2) == per_layer for lk in spec.layers)
    assert spec.kv_bytes_per_token(1, 2) == 24 * per_layer == 49_152


# ---------------------------------------------------------------------------------------------
# Chunked local attention (Llama 4)
# ---------------------------------------------------------------------------------------------


def test_llama4_scout_chunked_local():
    spec = load("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    ks = kinds(spec)
    # 48 layers, attention_chunk_size 8192, every 4th layer (no-rope) is global: 36 chunked + 12 full
    assert ks.count("chunked") == 36 and ks.count("full") == 12
    assert [i for i, k in enumerate(ks) if k == "full"] == list(range(3, 48, 4))
    assert all(lk.chunk == 8192 for lk in spec.layers if isinstance(lk, ChunkedLocal))
    # per layer 2 × 8 × 128 × 2 B = 4,096 B; 48 layers = 196,608 B
    assert spec.kv_bytes_per_token(1, 2) == 48 * 2 * 8 * 128 * 2 == 196_608


# ---------------------------------------------------------------------------------------------
# Mamba / linear-attention hybrid (Qwen3-Next, gated DeltaNet)
# ---------------------------------------------------------------------------------------------


def test_qwen3_next_layer_kinds_and_attention_bytes():
    spec = load("Qwen/Qwen3-Next-80B-A3B-Thinking")
    full = [i for i, lk in enumerate(spec.layers) if isinstance(lk, FullAttention)]
    # full_attention_interval 4 over 48 layers → layers 3, 7, …, 47 full; 36 gated-DeltaNet
    assert full == list(range(3, 48, 4))
    assert len(spec.state_layers) == 36
    assert spec.is_hybrid_state
    # attention per token: 12 layers × 2 × 2 KV heads × head_dim 256 × 2 B = 24,576 B
    assert spec.kv_bytes_per_token(1, 2) == 12 * 2 * 2 * 256 * 2 == 24_576


@pytest.mark.parametrize(
    ("tp", "expected"),
    [
        # §2.4b gated DeltaNet, conv kernel 4, k_heads 16, k_dim 128, v_heads 32, v_dim 128, bf16:
        #   conv = (4−1) × (2·16·128 + 32·128) / tp ; recurrent = (32/tp) × 128 × 128
        (1, ((4 - 1) * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 2),            # 1,097,728
        (2, ((4 - 1) * (2 * 16 * 128 + 32 * 128) // 2 + 16 * 128 * 128) * 2),       # 548,864
        (4, ((4 - 1) * (2 * 16 * 128 + 32 * 128) // 4 + 8 * 128 * 128) * 2),        # 274,432
    ],
)
def test_qwen3_next_gdn_state_per_layer_per_request(tp, expected):
    spec = load("Qwen/Qwen3-Next-80B-A3B-Thinking")
    st = spec.state_layers[0]
    assert isinstance(st, MambaState)
    assert st.state_bytes(tp, 2) == expected
    # state layers hold no per-token KV
    assert st.bytes_per_token(tp, 2) == 0


def test_qwen3_next_gdn_state_tp1_value():
    st = load("Qwen/Qwen3-Next-80B-A3B-Thinking").state_layers[0]
    # conv 3 × 8,192 = 24,576 elems; recurrent 32 × 128 × 128 = 524,288 elems; × 2 B
    assert st.state_bytes(1, 2) == (24_576 + 524_288) * 2 == 1_097_728


# ---------------------------------------------------------------------------------------------
# Max-length keys and robustness
# ---------------------------------------------------------------------------------------------


def test_smallest_length_key_wins():
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
        "vocab_size": 1000, "max_position_embeddings": 4096, "seq_length": 2048,
    }
    spec = spec_from_config(cfg, "synthetic/two-keys")
    # §3 step 1: the smallest present key → seq_length 2048
    assert spec.derived_max_len() == (2048, "seq_length")


def test_unknown_architecture_is_a_best_effort_with_assumption():
    cfg = {
        "architectures": ["FrobnicatorForCausalLM"], "model_type": "frobnicator",
        "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16, "vocab_size": 5000,
    }
    spec = spec_from_config(cfg, "synthetic/unknown")
    # no kv-head key → num_attention_heads (MHA): 4 layers × 2 × 16 × 128 (2048/16) × 2 B
    assert spec.kv_bytes_per_token(1, 2) == 4 * 2 * 16 * 128 * 2
    assert any("frobnicator" in a.lower() or "Frobnicator" in a for a in spec.assumptions)


def test_compressed_kv_caches_are_read_per_layer_and_an_unknown_list_is_said_to_be_unmodelled():
    """DeepSeek-V4 keeps compressed caches (compress_ratios) beside its sliding window: each layer is
    read with its ratio (estimator/kv_deepseek_v4.py lays them out as vLLM does). A compress_ratios list
    that does not cover the layers is a layout kvdoctor does not know: it says so and offers no fixes
    built on its own token counts."""
    import copy

    from estimator.advice import suggest
    from estimator.api import load_model
    from estimator.memory import estimate
    from estimator.spec import DeepseekV4Layer, spec_from_config
    from estimator.vllm import EngineSettings

    spec = load_model("deepseek-ai/DeepSeek-V4-Flash", offline=True).spec
    assert spec.kv_unmodelled == ""
    ratios = [lk.compress_ratio for lk in spec.layers if isinstance(lk, DeepseekV4Layer)]
    assert (len(ratios), ratios.count(4), ratios.count(128), ratios.count(1)) == (43, 21, 20, 2)
    odd = copy.deepcopy(spec.config)
    odd["compress_ratios"] = odd["compress_ratios"][:10]
    other = spec_from_config(odd, "some/deepseek-v4-variant")
    assert "compressed KV caches" in other.kv_unmodelled
    est = estimate(other, gpu_total_bytes=96 * 2**30, settings=EngineSettings(vllm_version="0.25.0", max_model_len=30000,
                                                                              tensor_parallel_size=4))
    assert suggest(est, error_kind="kv_capacity_v1") == []
    plain = load_model("Qwen/Qwen3-8B", offline=True).spec
    assert plain.kv_unmodelled == ""


def test_zamba2_hybrid_layers_keep_attention_and_a_mamba2_state():
    """vllm zamba2.py: every layer runs a Mamba-2 mixer and each "hybrid" layer adds a shared
    transformer block whose Attention has num_attention_heads K/V heads of attention_head_dim.
    Zamba2 names the mixer's keys n_mamba_heads / mamba_headdim / mamba_ngroups (they were missed,
    reading the state as Mamba-1). Hand arithmetic for this synthetic config (TP 1, bf16):
    KV per token 2 hybrid layers × 32 heads × 128 × 2 (K,V) × 2 B = 32,768 B;
    one Mamba-2 state = conv 3 × (4,096 + 2 × 1 × 64) × 2 B = 25,344 B + SSM 64 heads × 64 × 64 × 2 B
    = 524,288 B → 549,632 B, six of them (all layers)."""
    cfg = {"architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "hidden_size": 2048,
           "num_hidden_layers": 6, "layers_block_type": ["mamba", "mamba", "hybrid", "mamba", "mamba", "hybrid"],
           "mamba_expand": 2, "mamba_headdim": 64, "n_mamba_heads": 64, "mamba_ngroups": 1, "mamba_d_state": 64,
           "mamba_d_conv": 4, "num_attention_heads": 32, "num_key_value_heads": 32, "attention_head_dim": 128,
           "attention_hidden_size": 4096, "intermediate_size": 8192, "vocab_size": 32000,
           "torch_dtype": "bfloat16", "max_position_embeddings": 4096}
    spec = spec_from_config(cfg, "synthetic/zamba2")
    assert sum(lk.bytes_per_token(1, 2) for lk in spec.attention_layers) == 32_768
    states = spec.state_layers
    assert len(states) == 6 and {st.variant for st in states} == {"mamba2"}
    assert all(st.state_bytes(1, 2) == 549_632 for st in states)
    # without n_mamba_heads (transformers derives it: expand × hidden / headdim) the same state
    derived = spec_from_config({k: v for k, v in cfg.items() if k != "n_mamba_heads"}, "synthetic/zamba2")
    assert derived.state_layers[0].state_bytes(1, 2) == 549_632


def test_attention_sinks_are_on_the_attention_spec():
    # gpt_oss.py gives every attention layer a learned sink per head (sliding and full alike); the
    # attention backend choice reads it from the layers (estimator.attention_backend)
    from estimator.api import load_model
    from estimator.spec import FullAttention

    oss = [lk for lk in load_model("openai/gpt-oss-20b", offline=True).spec.layers if isinstance(lk, FullAttention)]
    assert oss and all(lk.sinks for lk in oss)
    qwen = load_model("Qwen/Qwen3-8B", offline=True).spec.layers
    assert not any(getattr(lk, "sinks", False) for lk in qwen)


def test_a_trimmed_llama_text_config_takes_llamaconfigs_defaults():
    """llava-hf's LLaVA configs keep only vocab, length and norm eps in text_config; transformers fills the
    rest from LlamaConfig (hidden 4096, MLP 11008, 32 layers, 32 heads): the MLP is not 4 × hidden. The
    7B's weights then come to what vLLM 0.10.2 printed for it on an RTX 4080, "Model loading took 13.1343
    GiB" (Vicuna-7B's 6.74 B + CLIP-L + projector, fp16)."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    spec = load_model("llava-hf/llava-1.5-7b-hf", offline=True).spec
    assert (spec.hidden_size, spec.intermediate_size, spec.num_layers, spec.num_kv_heads) == (4096, 11008, 32, 32)
    assert any("used transformers' defaults for llama" in a for a in spec.assumptions)
    assert abs(weight_bytes(spec, dtype="float16").bytes_total / 2**30 - 13.1343) < 0.05


def test_a_trimmed_mistral_text_config_takes_mistralconfigs_defaults():
    """llava-hf/llava-v1.6-mistral-7b-hf's text_config keeps only the keys that differ from MistralConfig
    (MLP 14336, 8 KV heads, length 32768, no window, vocab 32064); transformers fills hidden 4096, 32 layers
    and 32 heads. KV per token by hand: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 131,072 B, not
    the 524,288 B that 32 KV heads would give. The weights come to what vLLM 0.10.2 printed for it on an
    80 GB card, "Model loading took 14.0786 GiB" (Mistral-7B's 7.24 B with a 32,064-row vocabulary, CLIP-L
    and the projector, fp16)."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    spec = load_model("llava-hf/llava-v1.6-mistral-7b-hf", offline=True).spec
    assert (spec.hidden_size, spec.intermediate_size, spec.num_layers, spec.num_kv_heads) == (4096, 14336, 32, 8)
    assert any("used transformers' defaults for mistral" in a for a in spec.assumptions)
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 131_072
    assert abs(weight_bytes(spec, dtype="float16").bytes_total / 2**30 - 14.0786) < 0.05


def test_bamba_attends_at_the_listed_layers_and_runs_mamba2_elsewhere():
    """transformers' BambaConfig.layers_block_type (which vllm bamba.py builds its layers from) puts
    attention at attn_layer_indices and a Mamba-2 mixer everywhere else; every layer had been read as
    attention (32 × 8 × 128 × 2 × 2 = 131,072 B a token). The official config (layers 9, 18, 27):
    KV 3 layers × 8 KV heads × 128 × 2 (K,V) × 2 B = 12,288 B a token; one Mamba-2 state =
    conv 3 × (8,192 + 2 × 1 × 128) × 2 B = 50,688 B + SSM 128 heads × 64 × 128 × 2 B = 2,097,152 B
    → 2,147,840 B, in 29 layers."""
    spec = load("ibm-fms/Bamba-9.8b-1.8T-hf")
    assert [i for i, k in enumerate(kinds(spec)) if k == "full"] == [9, 18, 27]
    assert sum(lk.bytes_per_token(1, 2) for lk in spec.attention_layers) == 12_288
    states = spec.state_layers
    assert len(states) == 29 and {st.variant for st in states} == {"mamba2"}
    assert states[0].state_bytes(1, 2) == 2_147_840


def test_a_per_layer_moe_flag_list_marks_the_moe_layers():
    """MiniMax-M3 lists one moe_layer_freq flag per layer (a layer's MLP is MoE where its flag is
    not 0, as its vLLM model reads it); an int() of the list had raised. A list that makes layer 0
    dense is the same model as DeepSeek-V2-Lite's first_k_dense_replace 1."""
    from estimator.params import count_params

    hit = catalog.lookup("deepseek-ai/DeepSeek-V2-Lite")
    assert hit is not None
    _, cfg, _ = hit
    n = cfg["num_hidden_layers"]
    assert cfg["first_k_dense_replace"] == 1 and cfg["moe_layer_freq"] == 1
    listed = spec_from_config({**cfg, "first_k_dense_replace": 0, "moe_layer_freq": [0] + [1] * (n - 1)}, "x/listed")
    base = spec_from_config(cfg, "x/base")
    assert listed.moe.moe_layers == base.moe.moe_layers == n - 1
    assert count_params(listed).params_total == count_params(base).params_total
    every_other = spec_from_config({**cfg, "first_k_dense_replace": 0, "moe_layer_freq": [i % 2 for i in range(n)]},
                                   "x/alt")
    assert every_other.moe.moe_layers == n // 2      # layers 1, 3, …, 25 of 27


def test_the_moe_layer_count_and_the_weight_inventory_read_one_layer_map():
    """qwen3_moe.py (as qwen2_moe.py) gives layer i experts where i is not in mlp_only_layers and
    (i + 1) % decoder_sparse_step == 0. Qwen3-30B-A3B (48 layers) with decoder_sparse_step 2 and
    mlp_only_layers [0, 5]: the odd layers 1, 3, …, 47 have experts, less layer 5 — 23; layer 0 was dense
    already, so dropping it again (the count had subtracted both listed layers: 22) is wrong. The count the
    memory model sizes the profile by (spec.moe) and the layers that carry expert weights (params) must
    both say 23."""
    from estimator.params import count_params

    hit = catalog.lookup("Qwen/Qwen3-30B-A3B")
    assert hit is not None
    _, cfg, _ = hit
    assert cfg["num_hidden_layers"] == 48 and cfg["decoder_sparse_step"] == 1 and cfg["mlp_only_layers"] == []
    step2 = spec_from_config({**cfg, "decoder_sparse_step": 2}, "x/step2")
    both = spec_from_config({**cfg, "decoder_sparse_step": 2, "mlp_only_layers": [0, 5]}, "x/both")
    assert step2.moe.moe_layers == 24 and both.moe.moe_layers == 23 and both.moe.dense_layers == 25
    assert [i for i, moe in enumerate(both.moe.layer_is_moe) if moe] == [i for i in range(1, 48, 2) if i != 5]
    # one MoE layer made dense changes the parameter count by one layer's experts-for-MLP swap
    all_moe = spec_from_config(cfg, "x/all")
    one = spec_from_config({**cfg, "mlp_only_layers": [5]}, "x/one")
    per_layer = count_params(all_moe).params_total - count_params(one).params_total
    assert per_layer > 0
    assert count_params(step2).params_total - count_params(both).params_total == per_layer
