"""Parameter counts and weight bytes: hand arithmetic, plus every exact count in ../shared/data/models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from estimator.params import (
    checkpoint_bytes,
    count_params,
    pp_partition,
    rope_cache_bytes,
    stored_params,
    weight_bytes,
)
from estimator.spec import spec_from_config

GIB = 2**30
MODELS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "models"
needs_shared = pytest.mark.skipif(not (MODELS / "params.jsonl").exists(),
                                  reason="../shared/data/models is not beside this checkout")

LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5,
}

# Llama-3.1-8B by hand.
EMBED = 128256 * 4096                        # 525,336,576 (embed_tokens; lm_head is the same size, untied)
LAYER_LINEAR = (4096 * 4096                  # q_proj
                + 2 * 4096 * (8 * 128)       # k_proj, v_proj (8 KV heads × 128)
                + 4096 * 4096                # o_proj
                + 3 * 4096 * 14336)          # gate, up, down = 218,103,808
LAYER_NORMS = 2 * 4096                       # input + post-attention RMSNorm
LLAMA_PARAMS = 2 * EMBED + 32 * (LAYER_LINEAR + LAYER_NORMS) + 4096   # + final norm
ROPE_LLAMA = 131072 * 128 * 2                # cos/sin cache: positions × rotary_dim × bf16


def spec(cfg: dict, **kw):
    return spec_from_config(json.loads(json.dumps(cfg)), kw.pop("model_id", "test/model"), kw.pop("companions", None))


def test_llama_31_8b_params_by_hand():
    assert LLAMA_PARAMS == 8_030_261_248
    wb = count_params(spec(LLAMA_31_8B))
    assert wb.params_total == LLAMA_PARAMS
    assert wb.params_by_part["embed"] == EMBED and wb.params_by_part["lm_head"] == EMBED
    assert wb.params_by_part["attention"] == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)


def test_llama_31_8b_bf16_bytes_include_rope_cache():
    wb = weight_bytes(spec(LLAMA_31_8B))
    assert wb.format == "bf16"
    assert wb.bytes_by_part["rope_cache"] == ROPE_LLAMA == 33_554_432
    assert wb.bytes_total == LLAMA_PARAMS * 2 + ROPE_LLAMA == 16_094_076_928


def test_tp2_split():
    # Per rank: linear layers halve (8 KV heads → 4 per rank), embed/lm_head are vocab-sharded
    # (128256 is already a multiple of 64 → 64128 rows each), norms and the RoPE cache are replicated.
    wb = weight_bytes(spec(LLAMA_31_8B), tp=2)
    expect = (32 * LAYER_LINEAR // 2 * 2          # 6,979,321,856 B
              + 2 * (128256 // 2) * 4096 * 2       # 1,050,673,152 B
              + (32 * LAYER_NORMS + 4096) * 2      # 532,480 B
              + ROPE_LLAMA
              # the caching allocator: each 501 MiB embed / lm_head shard holds a 502 MiB segment (the 1 MiB
              # left is not split off, params.allocator_slack); every other tensor is a whole number of 2 MiB
              + 2 * 2**20)
    assert wb.bytes_total == expect == 8_066_179_072


def test_kv_projection_replicated_when_kv_heads_below_tp():
    # tp=16 > 8 KV heads: each rank keeps one whole KV head (128 rows) for k and v, not half a head.
    wb16 = weight_bytes(spec(LLAMA_31_8B), tp=16)
    per_layer = (4096 * 4096 // 16 * 2            # q, o split 16 ways
                 + 2 * 128 * 4096                   # k, v: 1 head each
                 + 3 * 4096 * 14336 // 16)
    expect = (32 * per_layer + 2 * (128256 // 16) * 4096 + 32 * LAYER_NORMS + 4096) * 2 + ROPE_LLAMA
    assert wb16.bytes_total == expect


def test_vocab_padding_to_64_then_split():
    cfg = {**LLAMA_31_8B, "vocab_size": 32001, "num_hidden_layers": 1}
    wb = weight_bytes(spec(cfg))
    assert wb.bytes_by_part["embed"] == 32064 * 4096 * 2      # 32001 → 32064 (501 × 64)
    assert wb.bytes_by_part["lm_head"] == 32064 * 4096 * 2
    wb4 = weight_bytes(spec(cfg), tp=4)
    assert wb4.bytes_by_part["embed"] == 32064 // 4 * 4096 * 2  # 8016 rows per rank
    assert count_params(spec(cfg)).params_by_part["embed"] == 32001 * 4096  # logical count unpadded


def test_rope_cache_for_a_million_positions():
    cfg = {**LLAMA_31_8B, "model_type": "qwen2", "max_position_embeddings": 1_010_000, "rope_scaling": None}
    b, _ = rope_cache_bytes(spec(cfg), 2)
    assert b == 1_010_000 * 128 * 2 == 258_560_000
    assert round(b / GIB, 3) == 0.241


def test_rope_cache_yarn_uses_original_times_factor():
    cfg = {**LLAMA_31_8B, "max_position_embeddings": 131072,
           "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}}
    assert rope_cache_bytes(spec(cfg), 2)[0] == 4096 * 32 * 128 * 2


def test_awq_int4_group128_bytes():
    cfg = {**LLAMA_31_8B, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128,
                                                  "zero_point": True, "version": "gemm"}}
    wb = weight_bytes(spec(cfg))
    # Per linear of r × c: r·c/2 packed int4 + r·c/128 fp16 scales (2 B) + r·c/128 packed 4-bit zeros (0.5 B)
    # = r·c × (0.5 + 2/128 + 0.5/128) = r·c × 133/256 bytes. All layer dims are multiples of 128.
    linear = 32 * LAYER_LINEAR * 133 // 256                  # 3,625,976,... B
    unquant = (2 * EMBED + 32 * LAYER_NORMS + 4096) * 2       # embed, lm_head, norms stay bf16
    assert wb.format == "awq-int4"
    assert wb.bytes_total == linear + unquant + ROPE_LLAMA
    assert 0.519 < (linear / (32 * LAYER_LINEAR)) < 0.52      # ≈ 4.16 bits per weight


def test_online_fp8_quantizes_linears_only():
    wb = weight_bytes(spec(LLAMA_31_8B), quantization="fp8")
    # 1 byte per linear weight; embed, lm_head, norms stay bf16. Per-tensor fp32 scales add a few
    # bytes per linear (at most 7 linears × 2 scales × 4 B per layer).
    no_scales = 32 * LAYER_LINEAR + (2 * EMBED + 32 * LAYER_NORMS + 4096) * 2 + ROPE_LLAMA
    assert 0 < wb.bytes_total - no_scales <= 32 * 7 * 8


def test_dtype_casting_and_float32_configs():
    wb32 = weight_bytes(spec(LLAMA_31_8B), dtype="float32")
    assert wb32.bytes_total == LLAMA_PARAMS * 4 + 131072 * 128 * 4
    fp32_cfg = {**LLAMA_31_8B, "torch_dtype": "float32"}
    wb = weight_bytes(spec(fp32_cfg))          # auto: fp32 config loads as 16-bit
    assert wb.bytes_total == LLAMA_PARAMS * 2 + ROPE_LLAMA
    assert any("float32" in a for a in wb.assumptions)


def test_pp_partition_matches_get_pp_indices():
    assert [hi - lo for lo, hi in pp_partition(61, 4)] == [15, 15, 16, 15]
    assert [hi - lo for lo, hi in pp_partition(32, 2)] == [16, 16]
    assert [hi - lo for lo, hi in pp_partition(30, 4)] == [7, 8, 8, 7]


def test_pp2_stage_bytes():
    s = spec(LLAMA_31_8B)
    first = weight_bytes(s, pp=2, pp_rank=0)
    last = weight_bytes(s, pp=2, pp_rank=1)
    half_layers = 16 * (LAYER_LINEAR + LAYER_NORMS) * 2
    assert first.bytes_total == half_layers + EMBED * 2 + ROPE_LLAMA
    assert last.bytes_total == half_layers + (EMBED + 4096) * 2 + ROPE_LLAMA   # lm_head + final norm
    assert weight_bytes(s, pp=2).bytes_total == max(first.bytes_total, last.bytes_total)


def test_tied_embeddings_counted_once():
    cfg = {**LLAMA_31_8B, "tie_word_embeddings": True}
    assert count_params(spec(cfg)).params_total == LLAMA_PARAMS - EMBED


def test_mxfp4_only_experts_are_packed():
    cfg = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
           "intermediate_size": 2880, "num_hidden_layers": 2, "num_attention_heads": 64, "num_key_value_heads": 8,
           "head_dim": 64, "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 1024,
           "max_position_embeddings": 4096, "attention_bias": True, "tie_word_embeddings": False,
           "quantization_config": {"quant_method": "mxfp4"}}
    wb = weight_bytes(spec(cfg))
    experts = 2 * 4 * 3 * 2880 * 2880                   # 2 layers × 4 experts × (gate+up+down)
    assert wb.format == "mxfp4"
    assert wb.bytes_by_part["experts"] == experts // 2 + experts // 32 + 2 * 4 * (2 * 2880 + 2880) * 2  # + bf16 biases
    assert wb.bytes_by_part["attention"] == count_params(spec(cfg)).params_by_part["attention"] * 2  # bf16


GPT_OSS_TINY = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
                "intermediate_size": 2880, "num_hidden_layers": 2, "num_attention_heads": 64,
                "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 4, "num_experts_per_tok": 2,
                "vocab_size": 1024, "max_position_embeddings": 4096, "attention_bias": True,
                "tie_word_embeddings": False, "quantization_config": {"quant_method": "mxfp4"}}


def test_mxfp4_marlin_layout_pads_intermediate_to_128_and_hidden_to_256():
    # vLLM's Marlin MXFP4 MoE: I 2880 → 2944, h 2880 → 3072 (mxfp4.py create_weights)
    from estimator.params import Mxfp4Layout

    wb = weight_bytes(spec(GPT_OSS_TINY), mxfp4_layout=Mxfp4Layout("Marlin", 128, 256))
    n = 2 * 4 * 3 * 2944 * 3072                        # 2 layers × 4 experts × (w13 2·I + w2) × h
    bias = 2 * 4 * (2 * 2944 + 3072) * 2                # w13_bias 2·I + w2_bias h, bf16
    assert wb.bytes_by_part["experts"] == n // 2 + n // 32 + bias


def test_mxfp4_triton_layout_keeps_two_scale_copies_and_fp32_biases():
    from estimator.params import Mxfp4Layout

    wb = weight_bytes(spec(GPT_OSS_TINY), mxfp4_layout=Mxfp4Layout("Triton", 64, 1, scale_copies=2, bias_bytes=4))
    n = 2 * 4 * 3 * 2880 * 2880                        # 2880 is a multiple of 64: no padding
    assert wb.bytes_by_part["experts"] == n // 2 + 2 * (n // 32) + 2 * 4 * (2 * 2880 + 2880) * 4


def test_mxfp4_layout_under_tp_pads_each_ranks_share():
    from estimator.params import Mxfp4Layout

    # TP 4: I per rank 720 → 768 (×128); w2_bias (h) is whole on every rank
    wb = weight_bytes(spec(GPT_OSS_TINY), tp=4, mxfp4_layout=Mxfp4Layout("Marlin", 128, 256))
    n = 2 * 4 * 3 * 768 * 3072
    assert wb.bytes_by_part["experts"] == n // 2 + n // 32 + 2 * 4 * (2 * 768 + 3072) * 2


def test_unknown_quant_block_without_method_is_not_applied():
    cfg = {**LLAMA_31_8B, "quantization_config": {"group_size": 64, "bits": 4}}   # an MLX export's block
    wb = weight_bytes(spec(cfg))
    assert wb.bytes_total == LLAMA_PARAMS * 2 + ROPE_LLAMA


def test_hub_bytes_are_used_when_given():
    wb = weight_bytes(spec(LLAMA_31_8B), safetensors_bytes_by_dtype={"BF16": 16_060_522_496 + 1000})
    assert wb.bytes_by_part["computed_total"] == LLAMA_PARAMS * 2
    assert wb.bytes_total == 16_060_522_496 + 1000 + ROPE_LLAMA
    assert any("Hub" in a for a in wb.assumptions)


# --------------------------------------------------------------------------------------------
# Real configs (../shared/data/models)
# --------------------------------------------------------------------------------------------

def _rows() -> list[dict]:
    if not (MODELS / "params.jsonl").exists():
        return []
    return [json.loads(line) for line in (MODELS / "params.jsonl").read_text().splitlines() if line.strip()]


def _load(row: dict):
    cfg = json.loads((MODELS / row["config_file"]).read_text())
    comp = {}
    q = MODELS / row["config_file"].replace(".config.json", ".hf_quant_config.json")
    if q.exists():
        comp["hf_quant_config.json"] = json.loads(q.read_text())
    return spec_from_config(cfg, row["model"], comp)


def _counted_rows() -> list:
    out = []
    for r in _rows():
        if not r.get("params_total") or not r.get("config_file") or not (MODELS / r["config_file"]).exists():
            continue
        marks = []
        if r["model"] == "Qwen/Qwen3-Next-80B-A3B-Thinking":
            # Data anomaly, not a rule: this row's total is 2.29e9 below its -Instruct sibling
            # (81,324,862,720), which has the same architecture; this config plus the checkpoint's one
            # MTP layer reproduces the sibling exactly (test_qwen3_next_instruct_sibling). No config
            # field explains 79,039,037,440, so this stays a strict xfail until the source is checked.
            marks.append(pytest.mark.xfail(strict=True, reason="Hub figure inconsistent with its sibling"))
        out.append(pytest.param(r, id=r["model"], marks=marks))
    return out


@needs_shared
@pytest.mark.parametrize("row", _counted_rows())
def test_params_match_hub_counts(row):
    """Within 0.5% of the exact Hub count, counting what the checkpoint stores.

    Adjustments (general rules, none keyed on a model):
    - the logical count (`count_params`) is what vLLM loads; an HF total counts stored tensors,
      so `stored_params` adds MTP modules the checkpoint keeps (num_nextn_predict_layers /
      mtp_num_hidden_layers) and FP8 block-scale tensors (one fp32 per 128×128 tile);
    - a tied model's checkpoint may store the shared vocab × hidden matrix once or twice
      (as embed_tokens and lm_head); the config cannot tell, so for tied models the stored total
      may be the count plus one vocab × hidden copy;
    - persisted buffers (e.g. 64 rotary inv_freq values per layer in old Llama-2 checkpoints) are
      far below 0.5% and not modelled.
    """
    s = _load(row)
    stored, _ = stored_params(s)
    exact = row["params_total"]
    candidates = [stored] + ([stored + s.vocab_size * s.hidden_size] if s.tie_word_embeddings else [])
    err = min(abs(c - exact) / exact for c in candidates)
    assert err < 0.005, f"{row['model']}: stored {candidates} vs Hub {exact:,}"


@needs_shared
def test_every_unquantized_exact_row_is_covered():
    ids = [p.id for p in _counted_rows()]
    for name in ("Qwen/Qwen2.5-14B-Instruct-1M", "Qwen/Qwen2.5-VL-7B-Instruct", "google/gemma-3-4b-it",
                 "Qwen/Qwen3-VL-8B-Instruct", "google/gemma-4-26B-A4B", "mistralai/Mixtral-8x7B-Instruct-v0.1",
                 "Qwen/Qwen3.6-27B", "tiiuae/falcon-7b"):
        assert name in ids
    assert len(ids) >= 50


@needs_shared
def test_qwen25_14b_1m_params_and_bytes():
    row = next(r for r in _rows() if r["model"] == "Qwen/Qwen2.5-14B-Instruct-1M")
    s = _load(row)
    # embed + lm_head: 2 × 152064 × 5120; per layer: q 5120² + 5120 bias, k/v 2 × (5120 × 1024 + 1024),
    # o 5120², MLP 3 × 5120 × 13824, 2 norms × 5120; 48 layers; final norm 5120.
    by_hand = (2 * 152064 * 5120
               + 48 * (5120 * 5120 + 5120 + 2 * (5120 * 1024 + 1024) + 5120 * 5120 + 3 * 5120 * 13824 + 2 * 5120)
               + 5120)
    assert by_hand == 14_770_033_664
    wb = weight_bytes(s)
    assert abs(wb.params_total - 14_770_033_664) / 14_770_033_664 < 0.005
    # The worked example (§7): 27.511 GiB of bf16 weights + 0.241 GiB RoPE cache ≈ 27.75 GiB, and what the
    # caching allocator counts beyond the tensors (params.allocator_slack): each layer's down_proj
    # (5,120 × 13,824 × 2 B = 135 MiB) holds a 136 MiB segment, the embedding and lm_head (1,485 MiB) 1,486:
    # 48 + 2 = 50 MiB more, 27.80 GiB (a Qwen2.5-14B log prints 27.5681 GiB for its 32,768-position
    # sibling: 27.5191 + 0.0488).
    assert wb.bytes_total == by_hand * 2 + 1_010_000 * 128 * 2 + 50 * 2**20
    assert round(wb.bytes_total / GIB, 2) == 27.80


@needs_shared
def test_qwen3_next_instruct_sibling():
    row = next(r for r in _rows() if r["model"] == "Qwen/Qwen3-Next-80B-A3B-Thinking")
    cfg = json.loads((MODELS / row["config_file"]).read_text())
    cfg["mtp_num_hidden_layers"] = 1    # the published checkpoints keep one MTP layer (assumption stated)
    stored, _ = stored_params(spec_from_config(cfg, "Qwen/Qwen3-Next-80B-A3B-Instruct"))
    assert abs(stored - 81_324_862_720) / 81_324_862_720 < 0.005


def _dtype_breakdown_bytes(row: dict) -> int | None:
    """Bytes from a params.jsonl per-dtype element breakdown ("F8_E4M3 n + BF16 n + F32 n").

    U8 in an MXFP4 checkpoint: the notes state the Hub counted the logical expert parameters, so
    bytes = count × (0.5 + 1/32) (4-bit values + one e8m0 scale per 32).
    """
    size = {"F8_E4M3": 1, "BF16": 2, "F16": 2, "F32": 4, "I8": 1}
    parts = re.findall(r"\b(F8_E4M3|BF16|F16|F32|U8|I8)\s+(\d{6,})", row.get("weights_dtype") or "")
    if not parts:
        return None
    total = 0.0
    for dt, n in parts:
        total += int(n) * (0.5 + 1 / 32 if dt == "U8" else size[dt])
    return int(total)


@needs_shared
@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b", "openai/gpt-oss-120b"])
def test_quantized_checkpoint_bytes_within_2pct(model):
    row = next(r for r in _rows() if r["model"] == model)
    expect = _dtype_breakdown_bytes(row)
    assert expect
    got = checkpoint_bytes(_load(row))
    assert abs(got - expect) / expect < 0.02, (got, expect)


@needs_shared
def test_gpt_oss_20b_bytes_by_hand():
    # 2 × 1,804,459,584 (BF16) + 19,110,297,600 × 17/32 (MXFP4 + scales) = 13,761,264,768
    row = next(r for r in _rows() if r["model"] == "openai/gpt-oss-20b")
    assert _dtype_breakdown_bytes(row) == 2 * 1_804_459_584 + 19_110_297_600 * 17 // 32 == 13_761_264_768


@needs_shared
def test_bf16_safetensors_bytes_where_known():
    for row in _rows():
        if row.get("safetensors_bytes") and row.get("config_file") and (MODELS / row["config_file"]).exists():
            got = checkpoint_bytes(_load(row))
            assert abs(got - row["safetensors_bytes"]) / row["safetensors_bytes"] < 0.02, row["model"]


@needs_shared
def test_modelopt_fp8_companion_quantizes_all_but_lm_head():
    row = next(r for r in _rows() if r["model"] == "nvidia/Llama-3.1-70B-Instruct-FP8")
    s = _load(row)
    wb = weight_bytes(s)
    assert wb.format == "fp8"
    p = count_params(s).params_by_part
    assert wb.bytes_by_part["lm_head"] == p["lm_head"] * 2     # excluded → bf16
    assert wb.bytes_by_part["embed"] == p["embed"] * 2
    assert p["attention"] <= wb.bytes_by_part["attention"] < p["attention"] * 1.001   # ~1 byte per weight


@needs_shared
def test_deepseek_v3_mtp_excluded_from_gpu_bytes():
    row = next(r for r in _rows() if r["model"] == "deepseek-ai/DeepSeek-V3")
    s = _load(row)
    cp = count_params(s)
    assert "mtp" in cp.params_by_part and cp.params_total + cp.params_by_part["mtp"] > cp.params_total
    wb = weight_bytes(s, tp=8)
    assert wb.format == "fp8"
    # The whole FP8 checkpoint is ~688.6 GB; one of 8 ranks holds well under 1/7 of it.
    assert 75e9 < wb.bytes_total < 688.6e9 / 7


@needs_shared
def test_qwen36_27b_fp8_measured_bytes():
    # SOURCES.md: Qwen3.6-27B-FP8 = 30,866,866,928 bytes in 66 safetensors (measured). Its config is
    # not in the folder; the BF16 config plus Qwen's usual FP8 block (128×128, lm_head and
    # embeddings unconverted) is assumed here. The checkpoint also stores the MTP layer and the
    # vision tower (bf16).
    cfg = json.loads((MODELS / "Qwen__Qwen3.6-27B.config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128],
                                  "modules_to_not_convert": ["lm_head", "embed_tokens"]}
    got = checkpoint_bytes(spec_from_config(cfg, "Qwen/Qwen3.6-27B-FP8"))
    assert abs(got - 30_866_866_928) / 30_866_866_928 < 0.02


def test_deepseek_v4_experts_are_fp4_inside_an_fp8_checkpoint():
    """config `expert_dtype: fp4`: routed experts are e2m1 + one ue8m0 scale per 32 values; the
    rest keeps the checkpoint's FP8 blocks. EP 2: each rank holds 128 of the 256 experts."""
    from estimator.catalog import lookup
    from estimator.spec import spec_from_config

    cid, config, _files = lookup("deepseek-ai/DeepSeek-V4-Flash")
    spec = spec_from_config(config, cid)
    w = weight_bytes(spec, tp=2, ep=2)
    n = 4096 * 2048                                    # one expert matrix: hidden × moe_intermediate
    assert w.bytes_by_part["experts"] == 43 * 128 * 3 * (n // 2 + n // 32)
    assert any("expert_dtype fp4" in a for a in w.assumptions)


def test_k_eq_v_layers_store_no_v_proj_but_vllm_allocates_its_rows():
    """gemma-4 global layers (attention_k_eq_v) have no v_proj in the checkpoint; vLLM's
    QKVParallelLinear still allocates the V rows and loads K into them (gemma4.py). The parameter
    count leaves them out, the GPU memory does not: 10 layers × 4 KV heads × 512 × 5,376 hidden."""
    from estimator.catalog import lookup

    cid, config, companions = lookup("nvidia/Gemma-4-31B-IT-NVFP4")
    plain = json.loads(json.dumps(config))
    plain["text_config"]["attention_k_eq_v"] = False          # the same model with a stored v_proj
    k_eq_v, stored = spec_from_config(config, cid, companions), spec_from_config(plain, cid, companions)
    v_rows = 10 * 4 * 512 * 5376
    assert count_params(stored).params_total - count_params(k_eq_v).params_total == v_rows == 110_100_480
    assert stored_params(stored)[0] - stored_params(k_eq_v)[0] == v_rows
    # self_attn is excluded from NVFP4 (hf_quant_config exclude_modules): the V rows are bf16.
    assert checkpoint_bytes(stored) - checkpoint_bytes(k_eq_v) == 2 * v_rows
    assert weight_bytes(stored).bytes_total == weight_bytes(k_eq_v).bytes_total


def test_kimi_linear_counts_kda_and_mla_layers_apart():
    """Kimi-Linear-48B-A3B: a report summing the checkpoint's tensors gives 49,122,681,728; here by
    hand from the config (hidden 2,304, 27 layers: 20 KDA + 7 MLA, 256 experts × 1,024 + 1 shared,
    first layer dense 9,216, vocab 163,840 untied)."""
    from estimator.catalog import lookup

    cid, config, _ = lookup("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    spec = spec_from_config(config, cid)
    h, inner, d = 2304, 32 * 128, 128
    kda = (3 * inner * h + 2 * d * h + 2 * inner * d + 32 * h + 3 * inner * 4 + 32 + inner + d + h * inner)
    mla = 32 * 192 * h + 576 * h + 512 + 32 * 256 * 512 + h * 32 * 128       # q, kv_a (+norm), kv_b, o
    moe = 26 * (256 * 3 * h * 1024 + 3 * h * 1024 + 256 * h + 256)          # experts, shared, gate, bias
    norms = 27 * 2 * h + h
    total = 2 * 163840 * h + 20 * kda + 7 * mla + moe + 3 * h * 9216 + norms
    assert count_params(spec).params_total == total == 49_122_681_728


def test_opt_counts_biases_layernorms_and_learned_positions():
    """facebook/opt-125m (vLLM opt.py): biased q/k/v/out and fc1/fc2, LayerNorms with bias, 2,050
    learned positions (OPT's offset of 2) and the head tied to the embedding: 125,239,296."""
    from estimator.catalog import lookup

    cid, config, _ = lookup("facebook/opt-125m")
    spec = spec_from_config(config, cid)
    h, f, n, v = 768, 3072, 12, 50272
    layer = (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    assert count_params(spec).params_total == v * h + 2050 * h + n * layer + 2 * h == 125_239_296


def test_gpt2_counts_biases_layernorms_and_learned_positions():
    """openai-community/gpt2 (vLLM gpt2.py): c_attn, c_proj, c_fc, c_proj all biased, ln_1/ln_2/ln_f
    LayerNorms with bias, wpe of n_positions (1,024) rows with no offset, and lm_head tied to wte (the
    config has no tie_word_embeddings key; PretrainedConfig's default True applies): 124,439,808, GPT-2
    small's published total. opt-2.7b by the same rules (OPT: 2,050 positions): 2,651,596,800."""
    from estimator.catalog import lookup

    cid, config, _ = lookup("gpt2")
    assert cid == "openai-community/gpt2"  # the Hub's legacy id
    spec = spec_from_config(config, cid)
    h, f, n, v = 768, 3072, 12, 50257
    layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    assert count_params(spec).params_total == v * h + 1024 * h + n * layer + 2 * h == 124_439_808
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 12 * 12 * 64 * 2 * 2

    cid, config, _ = lookup("facebook/opt-2.7b")
    h, f, n, v = 2560, 10240, 32, 50272
    layer = (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    total = v * h + 2050 * h + n * layer + 2 * h
    assert count_params(spec_from_config(config, cid)).params_total == total == 2_651_596_800


def test_added_catalog_models_counted_by_hand():
    """Catalog copies researched on 2026-12-04, counted by hand from their config.json.
    Qwen3-Embedding-0.6B (tied): embed 151,669 × 1,024; per layer q 1,024 × 2,048, k and v 1,024 × 1,024,
    o 2,048 × 1,024, q/k norms 2 × 128, MLP 3 × 1,024 × 3,072, two norms: 15,730,944; 28 layers and the
    final norm: 595,776,512, keras-hub's figure for its preset. Phi-3-medium-4k (untied, 10 KV heads of
    128): per layer 2 × 5,120² + 2 × 5,120 × 1,280 + 3 × 5,120 × 17,920 + 2 × 5,120 = 340,797,440; 40 layers,
    the final norm and 2 × 32,064 × 5,120 of embeddings: 13,960,238,080 (its card's 13.96 B)."""
    from estimator.catalog import lookup

    layer = 2 * 1024 * 2048 + 2 * 1024 * 1024 + 2 * 128 + 3 * 1024 * 3072 + 2 * 1024
    cid, config, _ = lookup("Qwen/Qwen3-Embedding-0.6B")
    spec = spec_from_config(config, cid)
    assert count_params(spec).params_total == 151669 * 1024 + 28 * layer + 1024 == 595_776_512
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 28 * 8 * 128 * 2 * 2

    h = 5120
    layer = 2 * h * h + 2 * h * 1280 + 3 * h * 17920 + 2 * h
    cid, config, _ = lookup("microsoft/Phi-3-medium-4k-instruct")
    spec = spec_from_config(config, cid)
    assert count_params(spec).params_total == 40 * layer + h + 2 * 32064 * h == 13_960_238_080
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 40 * 10 * 128 * 2 * 2


def test_mllama_counts_its_tiled_tower_and_cross_attention_extras():
    """Llama-3.2-11B-Vision as vLLM's mllama.py builds it. Tower (hidden 1,280, MLP 5,120, 560 px / 14 px
    patches: 1,601 positions with the class token, 4 tiles, 8 supported aspect ratios): patch linear
    588 × 1,280 = 752,640; class embedding 1,280; position gate 1 + 1,601 × 1,280 = 2,049,280 + tile
    positions 9 × 4 × 1,601 × 1,280 = 73,774,080; pre/post aspect-ratio embeddings 2 × (9 × 4 × 1,280 + 1);
    two LayerNorms 5,120; 32 layers of 4 × 1,280² + 1,280 × 5,120 + 5,120 + 5,120 × 1,280 + 1,280 + 4 × 1,280 =
    19,672,320 and 8 gated ones (+2); projector 7,680 × 4,096 + 4,096: 895,028,755. Text: vocab + 8 embedding
    rows (128,264 × 4,096), 40 Llama layers, q/k norms (2 × 128) and two gates on each of the 8
    cross-attention layers: 10,670,220,835 in all, the Hub's safetensors count (a public benchmark's table
    of `get_safetensors_metadata` counts lists it); × 2 B = 19.875 GiB, against the 19.86 GiB vLLM
    printed for its weights (vllm#12126)."""
    from estimator.catalog import lookup

    cid, config, _ = lookup("meta-llama/Llama-3.2-11B-Vision-Instruct")
    spec = spec_from_config(config, cid)
    assert not any("not one kvdoctor knows" in a for a in spec.assumptions)   # mllama's text part is known
    parts = count_params(spec).params_by_part
    layer = 4 * 1280 * 1280 + 1280 * 5120 + 5120 + 5120 * 1280 + 1280 + 4 * 1280
    tower = (588 * 1280 + 1280 + 1 + 1601 * 1280 + 9 * 4 * 1601 * 1280 + 2 * (9 * 4 * 1280 + 1) + 2 * 2 * 1280
             + 32 * layer + 8 * (layer + 2) + 7680 * 4096 + 4096)
    assert parts["vision"] == tower == 895_028_755
    assert parts["embed"] == 128264 * 4096
    assert sum(v for k, v in parts.items() if k != "computed_total") == 10_670_220_835


@pytest.mark.parametrize("h,n,heads,inner,total", [
    (6144, 40, 48, 24576, 15_517_456_384),     # StarCoder (15B)
    (2048, 24, 16, 8192, 1_137_207_296),        # StarCoderBase-1B
])
def test_gpt_bigcode_counts_biases_layernorms_positions_and_one_kv_head(h, n, heads, inner, total):
    """gpt_bigcode.py (StarCoder): multi-query attention (c_attn gives h + 2 × head_dim: one K/V head),
    every linear biased, LayerNorms with bias, 8,192 learned positions, lm_head tied to wte. The totals are
    the ones a public table of StarCoder sizes lists."""
    cfg = {"architectures": ["GPTBigCodeForCausalLM"], "model_type": "gpt_bigcode", "n_embd": h, "n_layer": n,
           "n_head": heads, "n_positions": 8192, "vocab_size": 49152, "multi_query": True, "n_inner": inner}
    spec = spec_from_config(cfg, "bigcode/starcoder")
    hd = h // heads
    layer = (h * (h + 2 * hd) + h + 2 * hd) + (h * h + h) + (h * inner + inner) + (inner * h + h) + 2 * 2 * h
    assert count_params(spec).params_total == 49152 * h + 8192 * h + n * layer + 2 * h == total
    assert spec.num_kv_heads == 1


@pytest.mark.parametrize("repo_id,h,n,total", [
    ("microsoft/phi-2", 2560, 32, 2_779_683_840),
    ("microsoft/phi-1_5", 2048, 24, 1_418_270_720),
])
def test_phi_counts_its_biases_layernorms_and_head_bias(repo_id, h, n, total):
    """phi.py: qkv_proj, dense, fc1 and fc2 all biased (vLLM's linear layers default to bias), one
    LayerNorm per layer (attention and MLP read the same normed input), a final LayerNorm, and a biased
    lm_head, untied, over 51,200 tokens. The totals are the Hub's safetensors counts."""
    from estimator.catalog import lookup

    cid, config, _ = lookup(repo_id)
    f, v = 4 * h, 51200
    layer = (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 2 * h
    assert count_params(spec_from_config(config, cid)).params_total == v * h + n * layer + 2 * h + v * h + v == total


def test_chatglm_biases_its_fused_qkv_only():
    """chatglm3-6b (chatglm.py): add_qkv_bias true, add_bias_linear false — the fused query_key_value
    (32 query heads and 2 KV groups of 128: 4,608 outputs) has a bias, nothing else does. By hand:
    embedding and output layer 2 × 65,024 × 4,096, per layer 4,096 × 4,608 + 4,608 + 4,096² +
    4,096 × 2 × 13,696 + 13,696 × 4,096 + 2 × 4,096 norms, 28 layers and the final norm: 6,243,584,000,
    what transformers counts for the checkpoint."""
    from estimator.catalog import lookup

    cid, config, _ = lookup("THUDM/chatglm3-6b")
    h, f = 4096, 13696
    layer = h * 4608 + 4608 + h * h + h * 2 * f + f * h + 2 * h
    assert count_params(spec_from_config(config, cid)).params_total == 2 * 65024 * h + 28 * layer + h == 6_243_584_000


def test_lfm2_short_convolutions_and_its_adjusted_mlp():
    """LiquidAI/LFM2-1.2B as vLLM's lfm2.py builds it: 16 layers, attention at 2, 5, 8, 10, 12, 14
    (full_attn_idxs), short convolutions elsewhere (in_proj 3 × 2,048 × 2,048, a 3-tap depthwise conv
    2,048 × 3, out_proj 2,048²: 16,783,360 each); attention q 2,048², k and v 2,048 × 512, o 2,048² and
    per-head q/k norms (2 × 64); the MLP's block_ff_dim 12,288 auto-adjusted to 2/3 rounded up to a
    multiple of 256: 8,192 (3 × 2,048 × 8,192 per layer); two norms a layer, a final one, tied
    embeddings (tie_embedding): 1,170,340,608, what transformers counts for it. Only the six attention
    layers page KV: 6 × 8 × 64 × 2 × 2 = 12,288 B a token; a conv layer keeps 2,048 × 2 values a request."""
    cfg = {"architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "block_auto_adjust_ff_dim": True,
           "block_ff_dim": 12288, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256, "conv_L_cache": 3,
           "conv_bias": False, "conv_dim": 2048, "full_attn_idxs": [2, 5, 8, 10, 12, 14], "hidden_size": 2048,
           "max_position_embeddings": 128000, "num_attention_heads": 32, "num_hidden_layers": 16,
           "num_key_value_heads": 8, "vocab_size": 65536, "tie_embedding": True, "torch_dtype": "bfloat16"}
    spec = spec_from_config(cfg, "LiquidAI/LFM2-1.2B")
    h = 2048
    conv = 3 * h * h + h * 3 + h * h
    attn = 2 * h * h + 2 * h * 512 + 2 * 64
    total = 65536 * h + 10 * conv + 6 * attn + 16 * (3 * h * 8192 + 2 * h) + h
    assert count_params(spec).params_total == total == 1_170_340_608
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 6 * 8 * 64 * 2 * 2
    states = [lk for lk in spec.layers if lk.kind == "mamba"]
    assert len(states) == 10 and states[0].state_elems(1) == (2 * 2048, 0)


@pytest.mark.parametrize("h,n,heads,total", [
    (512, 6, 8, 70_426_624),        # pythia-70m
    (768, 12, 12, 162_322_944),     # pythia-160m
])
def test_gpt_neox_counts_biases_and_layernorms(h, n, heads, total):
    """gpt_neox.py (Pythia): query_key_value and dense biased (attention_bias, default True), MLP
    dense_h_to_4h / dense_4h_to_h biased, two LayerNorms with bias a layer and a final one, embed_in and
    embed_out untied over 50,304 tokens. The totals are the ones public tables of Pythia sizes list."""
    cfg = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": h,
           "num_hidden_layers": n, "num_attention_heads": heads, "intermediate_size": 4 * h, "vocab_size": 50304,
           "max_position_embeddings": 2048, "rotary_pct": 0.25, "use_parallel_residual": True,
           "tie_word_embeddings": False}
    f = 4 * h
    layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    assert count_params(spec_from_config(cfg, "EleutherAI/pythia")).params_total == 2 * 50304 * h + n * layer + 2 * h \
        == total


def test_mpt_cohere_and_starcoder2_norms_biases_and_tied_heads():
    """Three families vLLM builds with their own norm and bias rules, counted by hand:
    - MPT-7B (mpt.py): no biases (no_bias), two LayerNorms a layer without bias, the head tied to wte (MPTConfig's
      default): 50,432 × 4,096 + 32 × (4,096 × 12,288 + 4,096² + 2 × 4,096 × 16,384 + 2 × 4,096) + 4,096 =
      6,649,286,656 (its card's 6.7 B);
    - Command-R (commandr.py): one LayerNorm a layer (attention and MLP read the same input), no biases, the
      head tied (CohereConfig's default): 256,000 × 8,192 + 40 × (4 × 8,192² + 3 × 8,192 × 22,528 + 8,192) +
      8,192 = 34,980,831,232 (the Open LLM Leaderboard's 34.981 B);
    - StarCoder2-3B (starcoder2.py): use_bias on qkv (3,072 + 2 × 256), o and the MLP, LayerNorms with bias,
      tied: 3,030,371,328 (3.03 B)."""
    mpt = {"architectures": ["MPTForCausalLM"], "model_type": "mpt", "d_model": 4096, "n_layers": 32, "n_heads": 32,
           "expansion_ratio": 4, "vocab_size": 50432, "max_seq_len": 2048, "no_bias": True}
    h = 4096
    assert count_params(spec_from_config(mpt, "mosaicml/mpt-7b")).params_total == \
        50432 * h + 32 * (h * 3 * h + h * h + 2 * h * 4 * h + 2 * h) + h == 6_649_286_656
    cohere = {"architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": 8192,
              "num_hidden_layers": 40, "num_attention_heads": 64, "num_key_value_heads": 64,
              "intermediate_size": 22528, "vocab_size": 256000, "use_qk_norm": False}
    h = 8192
    assert count_params(spec_from_config(cohere, "CohereForAI/c4ai-command-r-v01")).params_total == \
        256000 * h + 40 * (4 * h * h + 3 * h * 22528 + h) + h == 34_980_831_232
    sc2 = {"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "hidden_size": 3072,
           "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2, "intermediate_size": 12288,
           "vocab_size": 49152, "use_bias": True, "tie_word_embeddings": True}
    h, kv = 3072, 2 * 128
    layer = (h * (h + 2 * kv) + h + 2 * kv) + (h * h + h) + (h * 12288 + 12288) + (12288 * h + h) + 2 * 2 * h
    assert count_params(spec_from_config(sc2, "bigcode/starcoder2-3b")).params_total == \
        49152 * h + 30 * layer + 2 * h == 3_030_371_328


def test_olmo_qk_norms_span_all_heads():
    """olmo2.py / olmoe.py: q_norm is an RMSNorm over heads × head_dim and k_norm over KV heads × head_dim,
    not one head's width; OLMo 2 has two layer norms a layer (after attention, after the MLP).
    OLMo-2-1124-7B: 100,352 × 4,096 × 2 + 32 × (4 × 4,096² + 3 × 4,096 × 11,008 + 2 × 4,096 + 2 × 4,096) +
    4,096 = 7,298,617,344; OLMoE-1B-7B: 50,304 × 2,048 × 2 + 16 × (4 × 2,048² + 2 × 2,048 + 64 × 3 × 2,048 ×
    1,024 + 64 × 2,048 + 2 × 2,048) + 2,048 = 6,919,161,856 — both the Hub's safetensors counts."""
    olmo2 = {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 4096, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 100352,
             "tie_word_embeddings": False, "attention_bias": False}
    h = 4096
    assert count_params(spec_from_config(olmo2, "allenai/OLMo-2-1124-7B")).params_total == \
        100352 * h * 2 + 32 * (4 * h * h + 3 * h * 11008 + 2 * h + 2 * h) + h == 7_298_617_344
    olmoe = {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "num_hidden_layers": 16,
             "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 1024, "num_experts": 64,
             "num_experts_per_tok": 8, "vocab_size": 50304, "tie_word_embeddings": False}
    h = 2048
    assert count_params(spec_from_config(olmoe, "allenai/OLMoE-1B-7B-0924")).params_total == \
        50304 * h * 2 + 16 * (4 * h * h + 2 * h + 64 * 3 * h * 1024 + 64 * h + 2 * h) + h == 6_919_161_856


def test_jamba_puts_experts_on_every_other_layer():
    """Jamba-v0.1 (jamba.py): attention at i % 8 == 4 (4 layers), Mamba elsewhere; experts where
    i % expert_layer_period (2) == expert_layer_offset (1), JambaConfig.layers_num_experts — 16 MoE layers of
    16 experts and 16 dense MLPs, not 32 MoE layers. By hand: embeddings and head 2 × 65,536 × 4,096;
    attention 4 × (2 × 4,096² + 2 × 4,096 × 1,024); Mamba 28 × (in_proj 4,096 × 16,384, conv 8,192 × 4 +
    8,192 bias, x_proj 8,192 × 288, dt_proj 256 × 8,192 + 8,192, A_log 8,192 × 16, D 8,192, out_proj 8,192 ×
    4,096, dt/B/C norms 256 + 32); MLP 16 × 3 × 4,096 × 14,336 and experts 16 × 16 × that, routers
    16 × 16 × 4,096; norms 32 × 2 × 4,096 + 4,096: 51,570,323,328 (its card's 52 B)."""
    cfg = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096, "num_hidden_layers": 32,
           "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1,
           "num_experts": 16, "num_experts_per_tok": 2, "intermediate_size": 14336, "mamba_d_state": 16,
           "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256, "mamba_conv_bias": True,
           "mamba_proj_bias": False, "vocab_size": 65536, "num_attention_heads": 32, "num_key_value_heads": 8,
           "tie_word_embeddings": False}
    spec = spec_from_config(cfg, "ai21labs/Jamba-v0.1")
    h, d, mlp = 4096, 8192, 3 * 4096 * 14336
    mamba = h * 2 * d + d * 4 + d + d * (256 + 32) + 256 * d + d + d * 16 + d + d * h + 256 + 32
    total = 2 * 65536 * h + 4 * (2 * h * h + 2 * h * 1024) + 28 * mamba + 16 * mlp + 16 * (16 * mlp + 16 * h) \
        + 32 * 2 * h + h
    assert spec.moe.moe_layers == 16 and spec.moe.dense_layers == 16
    assert count_params(spec).params_total == total == 51_570_323_328
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 4 * 8 * 128 * 2 * 2


def test_dbrx_reads_its_experts_from_ffn_config():
    """DBRX keeps its MoE settings in ffn_config (dbrx.py DbrxExperts / DbrxRouter): 16 experts of
    ffn_hidden_size 10,752 (w1, v1, w2), 4 a token, a bias-free router, Wqkv for 48 heads and 8 KV heads,
    bias-free LayerNorms, an untied head. By hand: 2 × 100,352 × 6,144 + 40 × (6,144 × (6,144 + 2,048) +
    6,144² + 16 × 6,144 + 16 × 3 × 6,144 × 10,752 + 2 × 6,144) + 6,144 = 131,596,523,520 (its card's
    132 B); read as a dense model with a 4 × hidden MLP it was 22.9 B."""
    cfg = {"architectures": ["DbrxForCausalLM"], "model_type": "dbrx", "d_model": 6144, "n_layers": 40, "n_heads": 48,
           "attn_config": {"kv_n_heads": 8, "clip_qkv": 8, "rope_theta": 500000},
           "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4},
           "vocab_size": 100352, "max_seq_len": 32768, "tie_word_embeddings": False}
    spec = spec_from_config(cfg, "databricks/dbrx-instruct")
    h = 6144
    layer = h * (h + 2 * 1024) + h * h + 16 * h + 16 * 3 * h * 10752 + 2 * h
    assert (spec.moe.num_experts, spec.moe.experts_per_tok, spec.moe.expert_intermediate) == (16, 4, 10752)
    assert count_params(spec).params_total == 2 * 100352 * h + 40 * layer + h == 131_596_523_520


@pytest.mark.parametrize("h,n,rank,total", [
    (768, 24, 48, 129_135_360),        # mamba-130m-hf
    (2048, 48, 128, 1_372_178_432),    # mamba-1.4b-hf
])
def test_a_pure_mamba_model_is_all_mixers(h, n, rank, total):
    """mamba.py: every layer is a norm and a Mamba-1 mixer — in_proj h × 4h, a 4-tap conv with bias over
    2h channels, x_proj 2h × (dt_rank + 2 × 16), dt_proj with bias, A_log 2h × 16, D, out_proj — and no
    attention or MLP (it was read as a transformer: about twice the weights, and KV it does not have).
    Its state, not KV: conv 3 × 2h and SSM 2h × 16 values a request. V0 sizes no KV blocks for it and
    checks none. The totals are the ones a public table of Mamba sizes lists."""
    from estimator.api import run_estimate
    from estimator.vllm import EngineSettings

    cfg = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": h, "num_hidden_layers": n,
           "state_size": 16, "conv_kernel": 4, "expand": 2, "vocab_size": 50280, "tie_word_embeddings": True,
           "time_step_rank": rank, "use_bias": False, "use_conv_bias": True}
    spec = spec_from_config(cfg, "state-spaces/mamba-hf")
    d = 2 * h
    layer = h * 2 * d + d * 4 + d + d * (rank + 32) + rank * d + d + d * 16 + d + d * h + h
    assert count_params(spec).params_total == 50280 * h + n * layer + h == total
    assert spec.kv_bytes_per_token(tp=1, kv_dtype_bytes=2) == 0
    assert spec.layers[0].state_elems(1) == (3 * d, d * 16)
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.6.4"))
    assert est.error_kind is None and est.fits


def test_a_pure_mamba2_model_reads_num_heads_and_head_dim():
    """Mamba2Config spells the mixer's heads num_heads / head_dim (mamba2.py). Mamba-Codestral-7B by hand:
    per layer in_proj 4,096 × (2 × 8,192 + 2 × 8 groups × 128 + 128 heads), a 4-tap conv with bias over
    8,192 + 2,048 channels, dt_bias / A_log / D 3 × 128, the gated norm 8,192, out_proj 8,192 × 4,096 and
    the layer norm; 64 layers, the final norm and untied 32,768 × 4,096 embeddings: 7,285,403,648. Its
    state: conv 3 × 10,240 and SSM 128 heads × 64 × 128 values a request."""
    cfg = {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "hidden_size": 4096, "num_hidden_layers": 64,
           "state_size": 128, "expand": 2, "n_groups": 8, "num_heads": 128, "head_dim": 64, "conv_kernel": 4,
           "vocab_size": 32768, "tie_word_embeddings": False, "use_bias": False, "use_conv_bias": True}
    spec = spec_from_config(cfg, "mistralai/Mamba-Codestral-7B-v0.1")
    h, d, g = 4096, 8192, 8 * 128
    layer = h * (2 * d + 2 * g + 128) + (d + 2 * g) * 5 + 3 * 128 + d + d * h + h
    assert count_params(spec).params_total == 2 * 32768 * h + 64 * layer + h == 7_285_403_648
    assert spec.layers[0].state_elems(1) == (3 * (d + 2 * g), 128 * 64 * 128)


def test_added_copies_count_as_their_siblings_hub_totals():
    """Copies added on 2026-12-04 whose repo has no exact count here share their shapes with a sibling
    that has one (../shared/data/models/params.jsonl, the HF API's safetensors totals): Mistral-7B-Instruct
    -v0.1 with Mistral-7B-v0.1 (7,241,732,096), Llama-3.2-3B with its Instruct (3,212,749,824, tied),
    Qwen2.5-14B with Qwen2.5-14B-Instruct-1M (14,770,033,664). vicuna-7b-v1.5 is a Llama-2-7B fine-tune
    with its shapes: the same count as the catalog's Llama-2-7b-hf."""
    from estimator.catalog import lookup

    def total(repo_id: str) -> int:
        cid, config, _ = lookup(repo_id)
        return count_params(spec_from_config(config, cid)).params_total

    assert total("mistralai/Mistral-7B-Instruct-v0.1") == 7_241_732_096
    assert total("meta-llama/Llama-3.2-3B") == 3_212_749_824
    assert total("Qwen/Qwen2.5-14B") == 14_770_033_664
    assert total("lmsys/vicuna-7b-v1.5") == total("meta-llama/Llama-2-7b-hf")


def test_added_catalog_models_match_their_hub_totals():
    """Exact totals a source shows for models the catalog researched itself: the HF API's for
    DeepSeek-R1-Distill-Llama-8B (8,030,261,248) and a tensor sum for Qwen2.5-3B-Instruct."""
    from estimator.catalog import lookup

    for repo_id, total in (("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 8_030_261_248),
                           ("Qwen/Qwen2.5-3B-Instruct", 3_085_938_688)):
        cid, config, _ = lookup(repo_id)
        assert count_params(spec_from_config(config, cid)).params_total == total, repo_id


def test_opt_350m_embeds_at_its_projection_width():
    """opt-350m's shape (word_embed_proj_dim 512 < hidden 1,024, post-norm: no final LayerNorm): vLLM's
    opt.py embeds at 512 and bridges with project_in / project_out — 331,196,416 parameters."""
    cfg = {"architectures": ["OPTForCausalLM"], "model_type": "opt", "vocab_size": 50272, "hidden_size": 1024,
           "word_embed_proj_dim": 512, "ffn_dim": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
           "max_position_embeddings": 2048, "do_layer_norm_before": False, "torch_dtype": "float16"}
    h, f = 1024, 4096
    layer = (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    total = 50272 * 512 + 2050 * h + 2 * 512 * h + 24 * layer
    assert count_params(spec_from_config(cfg, "facebook/opt-350m")).params_total == total == 331_196_416


def test_nemotron_h_layers_hold_one_mixer_each():
    """Nemotron-3-Nano-30B-A3B (nemotron_h.py): hybrid_override_pattern gives each layer one mixer —
    23 Mamba-2 (M), 6 attention (*), 23 MoE (E) — behind one norm; non-gated relu² experts and a shared
    expert; 31.6 B parameters in all, not an attention + MLP stack per layer."""
    from estimator.catalog import lookup

    cid, config, _ = lookup("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    spec = spec_from_config(config, cid)
    h = 2688
    mamba = (2 * 4096 + 2 * 8 * 128 + 64) * h + (4096 + 2 * 8 * 128) * 5 + 3 * 64 + 4096 + h * 4096
    attn = 32 * 128 * h + 2 * 2 * 128 * h + h * 32 * 128
    moe = 128 * 2 * 1856 * h + (128 * h + 128) + 2 * 3712 * h      # experts, router + bias, shared expert
    total = 23 * mamba + 6 * attn + 23 * moe + 52 * h + h + 2 * 131072 * h
    assert count_params(spec).params_total == total == 31_577_940_288
    # LatentMoE (Nemotron-3-Super): 512 experts run in a 1,024-wide latent between two projections
    cid, config, _ = lookup("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    parts = count_params(spec_from_config(config, cid)).params_by_part
    assert parts["experts"] == 40 * (512 * 2 * 2688 * 1024 + 2 * 4096 * 1024)


def test_nemotron_h_layer_list_reads_like_the_pattern_and_mixers_match_export_excludes():
    """Newer configs list the layers (`layers_block_type`) instead of hybrid_override_pattern; vLLM reads
    either, so the same Nano config in list form gives the same 31,577,940,288. The NVFP4 export excludes
    mixers by their checkpoint names (backbone.layers.5.mixer.q_proj): the weights carry those names."""
    import copy

    from estimator.catalog import lookup
    from estimator.params import _ignored, _inventory, _resolve_format

    cid, config, companions = lookup("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    listed = copy.deepcopy(config)
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    listed["layers_block_type"] = [names[c] for c in listed.pop("hybrid_override_pattern")]
    assert count_params(spec_from_config(listed, cid)).params_total == 31_577_940_288
    cid, config, companions = lookup("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4")
    spec = spec_from_config(config, cid, companions)
    weights = [w.name for w in _inventory(spec)[0]]
    assert "model.layers.5.mixer.q_proj" in weights and "model.layers.4.mixer.in_proj" in weights
    fmt = _resolve_format(spec, None, [])
    assert fmt.kind == "nvfp4"
    assert _ignored(fmt, "model.layers.5.mixer.q_proj") and not _ignored(fmt, "model.layers.1.mixer.experts")


def test_nemotron_h_mtp_block_follows_its_own_pattern():
    """Nemotron-3-Super's MTP step (nemotron_h_mtp.py) is `mtp_hybrid_override_pattern` "*E": an attention
    layer opening with enorm + hnorm + eh_proj (2h → h) and a LatentMoE layer closing with a final norm.
    It reads the backbone's embeddings and lm_head, so the checkpoint has no copies of them (DeepSeek's MTP
    modules do). The list form (`mtp_layers_block_type`, Nemotron-3 Ultra/Lightning) reads the same."""
    import copy

    from estimator.catalog import lookup

    cid, config, _ = lookup("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    h = 4096
    attn = 32 * 128 * h + 2 * 2 * 128 * h + h * 32 * 128 + h       # q, k, v (2 KV heads), o, norm
    fusion = h * 2 * h + 2 * h                                        # eh_proj, enorm + hnorm
    moe = (512 * 2 * 2688 * 1024 + 2 * 1024 * h + 512 * h + 512      # latent experts, projections, router + bias
           + 2 * 5376 * h + h)                                        # relu² shared expert, norm
    expected = attn + fusion + moe + h                                # + final_layernorm
    assert expected == 2_942_325_248
    assert count_params(spec_from_config(config, cid)).params_by_part["mtp"] == expected
    listed = copy.deepcopy(config)
    listed["mtp_layers_block_type"] = ["attention", "moe"]
    del listed["mtp_hybrid_override_pattern"]
    assert count_params(spec_from_config(listed, cid)).params_by_part["mtp"] == expected


def test_a_toolkit_flag_keeps_the_format_the_repo_name_gives():
    """`--quantization modelopt` on a repo named …-nvfp4 (no config to read offline): vLLM lets the
    checkpoint pick FP8 or NVFP4 (override_quantization_method), so the name's NVFP4 stands; a flag
    that names a format (fp8) still wins over a guess from the name."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    spec = load_model("Qwen/qwen3.6-35b-a3b-nvfp4", offline=True).spec
    assert weight_bytes(spec, quantization="modelopt").format == weight_bytes(spec).format == "nvfp4"
    assert weight_bytes(spec, quantization="fp8").format == "fp8"


def test_qwen25_vl_vision_config_copy_takes_the_class_defaults():
    """A Qwen2.5-VL config copy without the vision tower's depth / hidden_act / spatial_merge_size has
    the class defaults (32 blocks, silu → a gated MLP, 2×2 merge → the patch merger): counted as if
    stated, where the tower had not been counted at all."""
    cfg = json.loads((Path(__file__).resolve().parents[1] / "estimator" / "catalog"
                      / "Qwen__Qwen2.5-VL-32B-Instruct.config.json").read_text())
    assert not {"depth", "hidden_act", "spatial_merge_size"} & set(cfg["vision_config"])
    stated = json.loads(json.dumps(cfg))
    stated["vision_config"].update(depth=32, hidden_act="silu", spatial_merge_size=2)
    def vision(c):
        return count_params(spec(c)).params_by_part["vision"]

    assert vision(cfg) == vision(stated)
    # against a plain GELU tower with a 1×1 merge: the 2×2 merger RMSNorm(1280) + (1280·4)² + 5120 +
    # 5120 · 5120 (out_hidden) + 5120 instead of LayerNorm(2·1280) + 1280² + 1280 + 1280 · 5120 + 5120;
    # the gate matrix and its bias (1280 × 3456 + 3456) in each of 32 blocks; RMSNorms without the
    # LayerNorms' 1280 biases (two per block) and a patch embed without its 1280 bias
    plain = json.loads(json.dumps(cfg))
    plain["vision_config"].update(depth=32, hidden_act="gelu", spatial_merge_size=1)
    merger = (1280 + 5120 * 5120 + 5120 + 5120 * 5120 + 5120) - (2560 + 1280 * 1280 + 1280 + 1280 * 5120 + 5120)
    gate = 32 * (1280 * 3456 + 3456)
    biases = 32 * 2 * 1280 + 1280
    assert vision(stated) - vision(plain) == merger + gate - biases


def test_pixtral_tower_and_mistral3_projector_by_hand():
    """Mistral Small 3.1's vision side as vLLM builds it (pixtral.py PixtralHFVisionModel, mistral3.py
    Mistral3MultiModalProjector), by hand from its config (vision hidden 1024, MLP 4096, 24 blocks,
    patch 14, text hidden 5120, 2×2 merge, no projector bias):
    patch_conv 3·14·14·1024 = 602,112 (no bias) + ln_pre RMSNorm 1,024; a block = attention_norm 1,024
    + q/k/v/o 4·1024² = 4,194,304 (no biases) + ffn_norm 1,024 + gate/up 2·4096·1024 + down 4096·1024 =
    12,582,912 → 16,779,264, × 24 = 402,702,336; no position embeddings (2-D RoPE); projector = RMSNorm
    1,024 + patch merger 4·1024·1024 = 4,194,304 + linear_1 1024·5120 = 5,242,880 + linear_2 5120² =
    26,214,400 → 438,958,080 in all. Read as a llava-style tower with LayerNorms, biases, a learned
    position table of (1540/14)² rows and no merger it was 447.5 M."""
    cfg = json.loads((Path(__file__).resolve().parents[1] / "estimator" / "catalog"
                      / "mistralai__Mistral-Small-3.1-24B-Instruct-2503.config.json").read_text())
    block = 1024 + 4 * 1024 * 1024 + 1024 + 3 * 4096 * 1024
    tower = 3 * 14 * 14 * 1024 + 1024 + 24 * block
    projector = 1024 + 4 * 1024 * 1024 + 1024 * 5120 + 5120 * 5120
    assert count_params(spec(cfg)).params_by_part["vision"] == tower + projector == 438_958_080
    # multimodal_projector_bias adds linear_1's and linear_2's biases (5,120 each)
    biased = dict(cfg, multimodal_projector_bias=True)
    assert count_params(spec(biased)).params_by_part["vision"] == 438_958_080 + 2 * 5120


def test_modelopt_mixed_precision_takes_each_layers_own_format():
    """nvidia/Qwen3.6-27B-NVFP4 is ModelOpt MIXED_PRECISION: its `quantized_layers` give the MLPs and
    lm_head W4A16_NVFP4 (group 16) and the attention / linear-attention projections FP8; in_proj_b/a
    are listed nowhere and stay bf16. By hand, an NVFP4 tensor of n weights is n/2 + n/16 + 8 B:
    gate_up 34,816 × 5,120 → 100,270,088 B, down 5,120 × 17,408 → 50,135,048 B, × 64 layers =
    9,625,928,704 B; lm_head 248,320 × 5,120 → 715,161,608 B. Read as FP8 throughout (the first
    config group's format) the weights were 28.3 GiB where vLLM printed 19.78 ("Model loading took
    19.78 GiB", a DGX Spark log); now 19.66."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    spec = load_model("nvidia/Qwen3.6-27B-NVFP4", offline=True).spec
    b = weight_bytes(spec)
    assert b.bytes_by_part["mlp"] == 64 * (100_270_088 + 50_135_048) == 9_625_928_704
    assert b.bytes_by_part["lm_head"] == 715_161_608
    assert b.format == "mixed (fp8 + nvfp4)"
    assert abs(b.bytes_total / 2**30 - 19.78) < 0.2


def test_compressed_tensors_groups_that_name_modules_are_mixed_precision():
    """compressed-tensors config groups whose targets are module names: each module takes its group's
    scheme (a class target such as "Linear" keeps the single-format reading). Llama-3.1-8B with the
    MLPs in int4 (group 128) and the attention projections in FP8 with per-channel fp32 scales: by
    hand the attention is, per layer, q and o 4,096 × 4,096 + 4,096 × 4 B, k and v 1,024 × 4,096 +
    1,024 × 4 B = 41,984,000 B, × 32 = 1,343,488,000 B; the MLPs are what an all-int4 checkpoint has."""
    layers = 32
    mlp = [f"model.layers.{i}.mlp.{p}" for i in range(layers) for p in ("gate_proj", "up_proj", "down_proj")]
    attn = [f"model.layers.{i}.self_attn.{p}" for i in range(layers) for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
    int4 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}
    fp8 = {"num_bits": 8, "type": "float", "strategy": "channel"}
    cfg = dict(LLAMA_31_8B, quantization_config={"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": int4, "targets": mlp}, "group_1": {"weights": fp8, "targets": attn}}})
    whole = dict(LLAMA_31_8B, quantization_config={"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": int4, "targets": ["Linear"]}}})
    mixed, all_int4 = weight_bytes(spec(cfg)), weight_bytes(spec(whole))
    assert mixed.format == "mixed (fp8 + int4-g128)" and all_int4.format == "int4-g128"
    assert mixed.bytes_by_part["mlp"] == all_int4.bytes_by_part["mlp"]
    per_layer = 2 * (4096 * 4096 + 4096 * 4) + 2 * (1024 * 4096 + 1024 * 4)
    assert per_layer == 41_984_000
    assert mixed.bytes_by_part["attention"] == layers * per_layer
    # lm_head is in neither group: 16-bit, as in the all-Linear checkpoint (which skips lm_head too)
    assert mixed.bytes_by_part["lm_head"] == 128256 * 4096 * 2


def test_an_ignore_list_naming_shards_leaves_the_fused_linear_unquantized():
    """vLLM fuses gate_proj and up_proj into gate_up_proj (packed_modules_mapping) and skips a fused
    layer whose shards the checkpoint's ignore list names. Llama-3.1-8B, int4 group 128 everywhere but
    layer 0's gate and up: that 28,672 × 4,096 tensor stays bf16 (234,881,024 B) instead of int4
    (58,720,256 B packed + 917,504 fp16 group scales = 60,555,264 B): 174,325,760 B more."""
    int4 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}
    q = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": int4, "targets": ["Linear"]}}}
    plain = weight_bytes(spec(dict(LLAMA_31_8B, quantization_config=q)))
    skip = dict(q, ignore=["lm_head", "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"])
    kept = weight_bytes(spec(dict(LLAMA_31_8B, quantization_config=skip)))
    assert 28672 * 4096 * 2 - (28672 * 4096 // 2 + 28672 * 4096 // 128 * 2) == 174_325_760
    assert kept.bytes_by_part["mlp"] - plain.bytes_by_part["mlp"] == 174_325_760


def test_attention_sinks_counted_from_the_attention_spec():
    # gpt_oss.py: one learned sink per query head in every attention layer (FullAttention.sinks)
    from estimator.params import _inventory

    weights = _inventory(spec(GPT_OSS_TINY))[0]
    sinks = [w for w in weights if w.name.endswith(".sinks")]
    assert [(w.rows, w.layer) for w in sinks] == [(64, 0), (64, 1)]
    llama = _inventory(spec(LLAMA_31_8B))[0]
    assert not any(w.name.endswith(".sinks") for w in llama)


def test_gemma4_small_models_match_their_safetensors_totals():
    """Gemma 4 E2B-it / E4B-it (catalog copies: tt-metal's E2B-it, and E4B-it rebuilt from it, both
    byte-identical to Google's config.json by sha256) against the totals Hugging Face reports,
    5,123,178,051 and 7,996,156,490 parameters, with the parts the E-models add by hand:
    - E2B's last 20 (KV-shared) layers run a double-wide MLP (use_double_wide_mlp): 20 × 3 × 1536 × 6144 more;
    - every layer's per-layer-input gate and projection (h ↔ 256) and its norm (h);
    - the audio tower (hidden 1024, 12 conformer layers: 24·h² + 9·h + conv 5·h + head_dim 128 each;
      the subsampling convs 128 → 32 channels and their 1024 → 1024 projection; output_proj 1024 → 1536
      with bias; embed_audio 1536 → text hidden)."""
    from estimator.api import load_model

    e2b = count_params(load_model("google/gemma-4-E2B-it", offline=True).spec)
    e4b = count_params(load_model("google/gemma-4-E4B-it", offline=True).spec)
    assert (e2b.params_total, e4b.params_total) == (5_123_178_051, 7_996_156_490)
    layer = 24 * 1024 ** 2 + 9 * 1024 + 5 * 1024 + 1024 // 8
    towers = 12 * layer + (9 * 128 + 128 + 9 * 128 * 32 + 32 + 32 * 32 * 1024) + (1024 * 1536 + 1536)
    assert e2b.params_by_part["audio"] == towers + 1536 * 1536
    assert e4b.params_by_part["audio"] == towers + 1536 * 2560
    # E2B's MLPs: 15 layers of 3 × 1536 × 6144, 20 of twice that, and 35 gates + projections (2 × 1536 × 256)
    # with the model-level per_layer_model_projection (1536 → 35 × 256)
    assert e2b.params_by_part["mlp"] == 15 * 3 * 1536 * 6144 + 20 * 3 * 1536 * 12288 + 35 * 2 * 1536 * 256 \
        + 1536 * 35 * 256


def test_the_audio_tower_is_left_out_when_audio_is_limited_to_0():
    """vLLM (0.15+) does not build a tower whose modalities are all limited to 0: `audio: 0` drops Gemma 4's
    audio tower (0.58 GiB of E4B's bf16 weights) and keeps the vision tower; before 0.15 both are loaded."""
    from estimator.api import load_model
    from estimator.memory import estimate
    from estimator.vllm import EngineSettings

    sp = load_model("google/gemma-4-E4B-it", offline=True).spec
    audio = count_params(sp).params_by_part["audio"]

    def weights(version, limits=None):
        # expandable segments: no allocator blocks beyond the tensors, so the difference is the tower's bytes
        s = EngineSettings(vllm_version=version, max_model_len=4096, limit_mm_per_prompt=limits,
                           expandable_segments=True)
        return estimate(sp, gpu_total_bytes=80 * GIB, settings=s).weights_bytes

    assert weights("0.22.0") - weights("0.22.0", {"audio": 0}) == 2 * audio
    assert weights("0.14.0") == weights("0.14.0", {"audio": 0})
    text_only = weights("0.22.0", {"image": 0, "video": 0, "audio": 0})
    assert weights("0.22.0", {"audio": 0}) - text_only == 2 * count_params(sp).params_by_part["vision"]


def test_gemma4_vision_standardize_buffers_are_counted():
    """The 26B-A4B and 31B towers set `standardize`: std_bias and std_scale (2 × 1152) are stored in the
    checkpoint — with them both models match Hugging Face's totals exactly (25,805,936,206 and
    31,273,088,876)."""
    from estimator.api import load_model

    assert count_params(load_model("google/gemma-4-26B-A4B", offline=True).spec).params_total == 25_805_936_206
    assert count_params(load_model("google/gemma-4-31B-it", offline=True).spec).params_total == 31_273_088_876


def test_hand_edited_gemma4_keys_are_not_a_traceback():
    """A pasted config may hold anything: strings or junk in the E-models' keys count as absent."""
    from estimator.catalog import lookup

    _, cfg, _ = lookup("google/gemma-4-E2B-it")
    for key, value in (("num_kv_shared_layers", "x"), ("hidden_size_per_layer_input", "x"),
                       ("use_double_wide_mlp", "yes"), ("vocab_size_per_layer_input", None)):
        bad = json.loads(json.dumps(cfg))
        bad["text_config"][key] = value
        assert count_params(spec(bad)).params_total > 0
    # junk channels take the tower's defaults (128, 32) and a number written as a string is read as
    # spec.py reads every key: the same tower as the real config
    bad = json.loads(json.dumps(cfg))
    bad["audio_config"].update(subsampling_conv_channels=7, hidden_size="1024")
    assert count_params(spec(bad)).params_by_part["audio"] == count_params(spec(cfg)).params_by_part["audio"]
    bad["audio_config"]["hidden_size"] = "x"
    assert count_params(spec(bad)).params_by_part.get("audio", 0) == 0


def test_the_caching_allocator_keeps_a_large_tensors_2_mib_rounded_rest():
    """c10/cuda/CUDACachingAllocator.cpp: a request of 10 MiB or more gets a segment rounded up to 2 MiB and
    is split off it only when more than 1 MiB would remain, so torch.cuda.memory_allocated — vLLM's weights
    figure — counts the rest of the segment. By hand: a 31.5 MiB tensor holds 32 MiB (0.5 more), a 259 MiB
    one 260 (1 more: 1 MiB is not "more than 1 MiB"), a 24.5 MiB one 24.5 (the 1.5 MiB rest is split off),
    an 8 MiB one (a shared 20 MiB segment) and a 2 MiB multiple nothing; 100 B rounds to 512. Qwen2.5-7B
    per layer: qkv 4,608 × 3,584 × 2 B = 31.5 MiB (+0.5), o 24.5 (+0), gate_up 259 (+1), down 129.5 (+0.5);
    × 28 = 56 MiB, + 0.5 each for the 1,039.5 MiB embedding and lm_head = 57 MiB. Logs print the weights to
    the fourth decimal: Qwen2-7B 14.2488 GiB (modelled 14.2487), Qwen3-4B 7.5552 (7.5551), Qwen2.5-3B 5.7916
    (5.7915), Qwen2.5-14B 27.5681 (27.5680), Llama-3.1-8B 14.9888 (14.9888: every tensor a multiple of 2 MiB).
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (and Unsloth, which sets it) counts the tensors only."""
    from estimator.api import load_model
    from estimator.params import allocator_slack
    from estimator.vllm import EngineSettings, parse_flags

    MiB = 2**20
    assert allocator_slack(int(31.5 * MiB)) == MiB // 2
    assert allocator_slack(259 * MiB) == MiB
    assert allocator_slack(int(24.5 * MiB)) == 0
    assert allocator_slack(8 * MiB) == 0 and allocator_slack(48 * MiB) == 0
    assert allocator_slack(100) == 412
    q7 = load_model("Qwen/Qwen2.5-7B-Instruct", offline=True).spec
    assert weight_bytes(q7).bytes_by_part["allocator_blocks"] == 57 * MiB
    assert any("57.0 MiB beyond the weight tensors" in n for n in weight_bytes(q7).assumptions)   # the reply says so
    for repo, printed in (("Qwen/Qwen2.5-7B-Instruct", 14.2488), ("Qwen/Qwen3-4B", 7.5552),
                          ("Qwen/Qwen2.5-3B-Instruct", 5.7916), ("Qwen/Qwen2.5-14B-Instruct", 27.5681),
                          ("meta-llama/Llama-3.1-8B-Instruct", 14.9888)):
        got = weight_bytes(load_model(repo, offline=True).spec).bytes_total / GIB
        assert abs(got - printed) < 0.0002, (repo, got)
    assert weight_bytes(q7, allocator_blocks=False).bytes_total == 7_615_616_512 * 2 + 32768 * 128 * 2
    assert parse_flags(["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"], EngineSettings()).expandable_segments
    assert not parse_flags(["PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512"], EngineSettings()).expandable_segments


def test_qwen25_32b_instruct_has_the_official_32k_positions():
    """The bundled copy of Qwen2.5-32B-Instruct's config came from a third-party repo that says
    max_position_embeddings 131072; the official card says its config.json "is set for context length
    up to 32,768 tokens" (like the other Qwen2.5-Instruct sizes), and vllm#15815's V0 0.7.1 log of the
    repo on two L40S printed "Loading model weights took 30.7098 GB" per rank. By hand at TP=2, in bytes:
    the embedding and lm_head 76,032 × 5,120 × 2 = 778,567,680 each; per layer qkv 3,584 × 5,120 × 2 =
    36,700,160 (35 MiB) + its bias 7,168, o 26,214,400 (25 MiB), gate_up 283,115,520 (270 MiB), down
    141,557,760 (135 MiB), two norms 20,480: 487,615,488 × 64 layers; the final norm 10,240; the caching
    allocator's rest of the three odd-MiB tensors' 2 MiB-rounded segments, 3 MiB × 64; the RoPE cache
    32,768 × 128 × 2 = 8 MiB. Sum 32,974,252,032 B = 30.7097 GiB (with 131,072 positions, 32 MiB of
    RoPE cache: 30.7331)."""
    from estimator.api import load_model

    spec = load_model("Qwen/Qwen2.5-32B-Instruct", offline=True).spec
    assert spec.text["max_position_embeddings"] == 32768
    wb = weight_bytes(spec, tp=2)
    assert wb.bytes_by_part["rope_cache"] == 32768 * 128 * 2
    assert wb.bytes_by_part["embed"] == wb.bytes_by_part["lm_head"] == 76_032 * 5_120 * 2
    assert wb.bytes_by_part["allocator_blocks"] == 64 * 3 * 2**20
    assert wb.bytes_total == 2 * 778_567_680 + 64 * 487_615_488 + 10_240 + 64 * 3 * 2**20 + 8 * 2**20
    assert abs(wb.bytes_total / GIB - 30.7098) < 0.0002


def test_packed_integer_weights_hold_their_segments_rest_too():
    """AWQ's and GPTQ's qweight is one tensor allocated at init like a 16-bit weight (the Marlin repack
    allocates its successor the same size), so it keeps the rest of its 2 MiB-rounded segment as well. By
    hand, Qwen2.5-14B at 4 bits, per layer: qkv 5,120 × 7,168 / 2 B = 17.5 MiB (+0.5), o 12.5 (the 1.5 MiB
    rest is split off, +0), gate_up 5,120 × 27,648 / 2 = 67.5 (+0.5), down 13,824 × 5,120 / 2 = 33.75 (+0.25):
    1.25 MiB × 48 layers = 60 MiB, + 1 MiB each for the 1,485 MiB fp16 embedding and lm_head = 62 MiB.
    The AWQ log (collected-2026-12.jsonl, vLLM 0.13, RTX A5000) prints 9.3795 GiB: 9.363 with the rule,
    9.304 without. gemma-3-27b AWQ (dev vllm#16199, 17.6110 GiB printed): qkv 5,376 × 8,192 / 2 = 21 MiB
    (+1: a 1 MiB rest is not split off), down 21,504 × 5,376 / 2 = 55.125 (+0.875), o 10.5 and gate_up
    110.25 (rests of 1.5 and 1.75, split off): 1.875 MiB × 62 = 116.25 MiB beside the tower's 0.19."""
    from estimator.api import load_model

    MiB = 2**20
    q14 = load_model("Qwen/Qwen2.5-14B-Instruct", offline=True).spec
    for fmt in ("awq", "gptq"):
        assert weight_bytes(q14, quantization=fmt).bytes_by_part["allocator_blocks"] == 62 * MiB
    awq = weight_bytes(q14, quantization="awq").bytes_total
    assert abs(awq / GIB - 9.3795) < 0.02 and abs((awq - 60 * MiB) / GIB - 9.3795) > 0.07
    gemma = load_model("gaunernst/gemma-3-27b-it-int4-awq", offline=True).spec
    blocks = weight_bytes(gemma, quantization="awq", dtype="float16").bytes_by_part["allocator_blocks"]
    assert blocks - int(116.25 * MiB) == 194_848         # the vision tower's tensors, as before
    assert abs(weight_bytes(gemma, quantization="awq", dtype="float16").bytes_total / GIB - 17.6110) < 0.02


def test_an_unsloth_start_and_the_allocator_option_turn_the_blocks_off():
    """Unsloth sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before it imports vLLM; a paste that
    shows either (its launch, or the variable) is read so, and its weights are the tensors alone."""
    from estimator.diagnosis import settings_from_facts
    from estimator.paste import read_paste

    unsloth = read_paste('model, tokenizer = FastLanguageModel.from_pretrained(\n    model_name = "unsloth/Qwen3-4B-Base",\n'
                         '    fast_inference = True,\n    gpu_memory_utilization = 0.9,\n)\n'
                         "Unsloth: vLLM loading unsloth/Qwen3-4B-Base with actual GPU utilization = 69.34%\n")
    assert unsloth.extra.get("launcher") == "unsloth"
    assert settings_from_facts(unsloth, "0.8.5", "v1").expandable_segments
    env = read_paste("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True vllm serve Qwen/Qwen2.5-7B-Instruct\n")
    assert settings_from_facts(env, "0.13.0", "v1").expandable_segments
    # outside the command: a Kubernetes env entry (paste.py reads the option anywhere in the paste)
    pod = read_paste('env:\n  PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True"\n'
                     "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192\n")
    assert pod.extra.get("expandable_segments") is True
    assert settings_from_facts(pod, "0.13.0", "v1").expandable_segments
    plain = read_paste("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192\n")
    assert not settings_from_facts(plain, "0.13.0", "v1").expandable_segments
    off = read_paste("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False vllm serve Qwen/Qwen2.5-7B-Instruct\n")
    assert not settings_from_facts(off, "0.13.0", "v1").expandable_segments


def test_an_unknown_exports_mtp_block_stays_16_bit_but_autoround_requantizes_it():
    """transformers drops Qwen3.5/3.6's `mtp.*` weights on load, so a quantizer working on its classes
    never quantizes the MTP block: llm-compressor copies it in as stored (save_mtp_tensors_to_checkpoint),
    NVIDIA's NVFP4 configs ignore `mtp*`, LibertAIDAI's W4A16 card says "MTP head kept" BF16 — unless the
    export re-quantizes the copied tensors, as AutoRound does (copy_missing_tensors_from_source, RTN into
    the packed format) for all but `mtp.fc` (BLOCK_NAME_TO_IGNORE). Qwen3.6-27B's MTP block by hand: fc
    5120 × 10240 = 52,428,800; q_proj with its gate 5120 × (24 × 256 × 2) = 62,914,560; k_proj and
    v_proj 2 × 5120 × 1024 = 10,485,760; o_proj 6144 × 5120 = 31,457,280; gate/up/down 3 × 5120 × 17408
    = 267,386,880 — 424,673,280 in linears — and 26,112 norm values (five of 5120, q/k norms of 256).
    At 16 bits 2 B each; in AutoRound's int4 g128 layout with zero points half a byte each plus, per 128
    values, a 2-byte scale and half a byte of zeros: the 372,244,480 values past fc take 186,122,240 +
    5,816,320 + 1,454,080, fc (104,857,600) and the norms (52,224) 2 B each."""
    fc = 52_428_800
    linears, norms = fc + 62_914_560 + 10_485_760 + 31_457_280 + 267_386_880, 26_112
    assert linears == 424_673_280

    def mtp(name, quantization=None):
        from estimator.api import load_model
        w = weight_bytes(load_model(name, offline=True).spec, quantization=quantization, with_mtp=True)
        return w.bytes_by_part["mtp"], w

    awq, w = mtp("cyankiwi/Qwen3.6-27B-AWQ-INT4")
    assert awq == 2 * (linears + norms)
    assert any("MTP block is counted at 16 bits" in a for a in w.assumptions), w.assumptions
    # the RTX 5090 log of that checkpoint with MTP (collected corpus, dvllm2584) prints 18.47 GiB of weights;
    # the estimate's (the same weights as vLLM loads them) is 18.44 — 17.86 with a 4-bit MTP block
    from estimator.api import load_model, run_estimate
    from estimator.vllm import EngineSettings
    est = run_estimate(load_model("cyankiwi/Qwen3.6-27B-AWQ-INT4", offline=True).spec, "RTX 5090",
                       EngineSettings(speculative_method="mtp"))
    assert est.weights_bytes / GIB == pytest.approx(18.47, abs=0.05)
    assert mtp("RedHatAI/Qwen3.8-27B-INT4")[0] == 2 * (linears + norms)
    # a 16-bit checkpoint served with an integer method names no export: its MTP block is as stored too
    assert mtp("Qwen/Qwen3.6-27B", "awq")[0] == 2 * (linears + norms)
    rest = linears - fc
    assert rest // 2 + 2 * rest // 128 + rest // 128 // 2 == 186_122_240 + 5_816_320 + 1_454_080
    autoround_bytes = 186_122_240 + 5_816_320 + 1_454_080 + 2 * fc + 2 * norms
    autoround, w = mtp("Lorbus/Qwen3.6-27B-int4-AutoRound")
    assert autoround == autoround_bytes
    assert not any("MTP block is counted at 16 bits" in a for a in w.assumptions)
    # a flag that only names the bits or the toolkit leaves the name's AutoRound reading (and its MTP rule)
    assert mtp("Lorbus/Qwen3.6-27B-int4-AutoRound", "int4")[0] == autoround_bytes
    assert mtp("Lorbus/Qwen3.6-27B-int4-AutoRound", "compressed-tensors")[0] == autoround_bytes
    # a known config decides by its own ignore list: NVIDIA's mixed NVFP4 export leaves `mtp*` out
    assert mtp("nvidia/Qwen3.6-27B-NVFP4")[0] == 2 * (linears + norms)


def test_gemma4_nvfp4_exclusions_leave_the_experts_in_fp4():
    """nvidia/Gemma-4-26B-A4B-NVFP4's hf_quant_config excludes every layer's `mlp*`, `router*` and
    `self_attn*`: in vLLM's gemma4.py the layer's `mlp` is its dense MLP and the experts are `moe.experts`,
    which stay NVFP4. A public vLLM 0.20.2 log of that checkpoint prints "Checkpoint size: 17.50 GiB" and
    "Model loading took 17.89 GiB"; with the experts counted in bf16 the weights were 48 GiB. By hand: the
    128 experts × 30 layers × 3 × 704 × 2,816 weights are 22.8 B parameters, 4 bits + an FP8 scale per 16,
    about 12 GiB, the rest (attention, dense MLPs, embeddings, vision, RoPE cache) in bf16 about 6 GiB."""
    from estimator.api import load_model

    s = load_model("nvidia/Gemma-4-26B-A4B-NVFP4", offline=True).spec
    loaded = weight_bytes(s).bytes_total
    assert abs(loaded / GIB - 17.89) / 17.89 < 0.01, loaded / GIB
    assert abs(checkpoint_bytes(s) / GIB - 17.50) / 17.50 < 0.02, checkpoint_bytes(s) / GIB
    # the bf16 release of the same architecture keeps its experts in bf16
    assert weight_bytes(load_model("google/gemma-4-26B-A4B", offline=True).spec).bytes_total > 2.5 * loaded


def test_a_checkpoints_regex_ignore_patterns_match_as_vllm_matches_them():
    """compressed-tensors' `re:` ignore entries are matched from the start of the layer name (vLLM's
    _is_equal_or_regex_match: re.match), so "re:.*mlp\\.gate_proj" ignores layer 0's gate while
    "re:mlp\\.gate_proj" does not. An entry that runs out both wall-clock limits ((a|aa)+$ on a long run of
    a's backtracks exponentially) matches nothing and is not run again; a malformed one matches nothing."""
    from estimator.params import _SLOW_PATTERNS, _re_ignores

    name = "model.layers.0.mlp.gate_proj"
    assert _re_ignores(r".*mlp\.gate_proj", name) and not _re_ignores(r"mlp\.gate_proj", name)
    assert not _re_ignores("(", name)
    slow = "(a|aa)+$"
    assert not _re_ignores(slow, "a" * 40 + "!") and slow in _SLOW_PATTERNS
    assert not _re_ignores(slow, "a")       # remembered as slow: no longer run, even where it would match
