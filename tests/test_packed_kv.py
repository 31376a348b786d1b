"""KV cache formats that pack scales beside the values (vLLM 0.20+, vllm/v1/kv_cache_interface.py
KVQuantMode): per-token-head int8 / fp8 (one fp32 scale per token, head and side), int4 from 0.33,
and NVFP4 (fp4 values plus an fp8 scale per 16 values). Every expected figure is worked out here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.api import load_model, run_estimate
from estimator.attention_backend import FLASHINFER, TRITON_ATTN, attention_backend
from estimator.derive import kv_formula
from estimator.diagnosis import diagnose
from estimator.kv_layout import packed_kv_content
from estimator.paste import read_paste
from estimator.vllm import EngineSettings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("dtype", "version", "hd", "hd_v", "expected"), [
    ("int8_per_token_head", (0, 22, 0), 128, 128, 128 + 128 + 2 * 4),      # 264
    ("fp8_per_token_head", (0, 20, 0), 256, 256, 256 + 256 + 2 * 4),       # 520
    ("nvfp4", (0, 22, 0), 128, 128, 2 * (128 // 2 + 128 // 16)),           # 144
    ("nvfp4", (0, 22, 0), 192, 128, (96 + 12) + (64 + 8)),                 # 180
    ("nvfp4_4over6", (0, 28, 0), 128, 128, 2 * (128 // 2 + 128 // 16)),    # the NVFP4 layout, 0.28+
    ("nvfp4_4over6", (0, 27, 0), 128, 128, 0),
    ("int4_per_token_head", (0, 25, 0), 128, 128, (128 + 128) // 2 + 8),   # 136
    ("int4_per_token_head", (0, 24, 0), 128, 128, 0),      # no such format before 0.25
    ("int8_per_token_head", (0, 19, 0), 128, 128, 0),      # nor these before 0.20
    ("fp8", (0, 22, 0), 128, 128, 0),                      # a plain dtype: dims × bytes
])
def test_bytes_per_token_and_head(dtype, version, hd, hd_v, expected):
    assert packed_kv_content(dtype, hd, hd_v, version) == expected


def _qwen7b(dtype: str, gpu: str = "RTX 4090", version: str = "0.22.0"):
    spec = load_model("Qwen/Qwen2.5-7B-Instruct", offline=True).spec
    return run_estimate(spec, gpu, EngineSettings(vllm_version=version, kv_cache_dtype=dtype))


@pytest.mark.parametrize(("dtype", "per_head", "backend"), [
    # Qwen2.5-7B: 28 layers × 4 KV heads × head_dim 128
    ("fp8", 256, None),
    ("int8_per_token_head", 264, TRITON_ATTN),     # only Triton's backend lists the per-token-head formats
    ("fp8_per_token_head", 264, TRITON_ATTN),
])
def test_a_models_kv_per_token_in_each_format(dtype, per_head, backend):
    est = _qwen7b(dtype)
    assert est.layout.kv_bytes_per_token == 28 * 4 * per_head
    if backend:
        assert attention_backend(est.spec, est.profile, est.settings) == backend


def test_nvfp4_runs_on_flashinfer_and_the_formula_says_what_a_token_holds():
    est = _qwen7b("nvfp4", gpu="B200")
    assert est.layout.kv_bytes_per_token == 28 * 4 * 144     # 16,128 B
    assert attention_backend(est.spec, est.profile, est.settings) == FLASHINFER
    text = kv_formula(est)
    assert "28 full-attention layers × 4 KV heads per GPU × 144 B" in text and "16,128 B per token (nvfp4)" in text


def test_club_3090_446_is_reproduced_to_the_token():
    """club-3090#446 (collected corpus): Qwen3.6-27B AutoRound INT4, TP 4, vLLM 0.22 image, KV
    int8_per_token_head, MTP n=3, 15.73 GiB of KV and 1,746,661 tokens printed. One token costs
    16 attention layers + the MTP layer, × 1 KV head per rank × (256 + 256 + 2 × 4) = 8,840 B; the
    block is 1,584 tokens, so a page is 1,584 × 520 = 823,680 B and a block of the 4 groups of 17
    layers 17 × 823,680 = 14,002,560 B: 15.73 GiB holds 1,206 of them. A 262,144-token request takes
    cdiv(262,144, 1,584) = 166 attention blocks and, in each of the 3 Mamba groups, 2 states (prefix
    caching's "align" mode) + 3 speculative blocks: 181 — vLLM prints int(1,206 / 181 × 262,144)."""
    case = next(c for line in (ROOT / "bench" / "corpus" / "collected-2026-12.jsonl").read_text().splitlines()
                if line.strip() and (c := json.loads(line))["id"] == "club3090-446-qwen36-27b-autoround-4x3090-tp4-int8kv")
    assert read_paste(case["paste"]).extra["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 3}
    d = diagnose(case["paste"], offline=True, explain=True)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "int8_per_token_head" and e["settings"]["num_speculative_tokens"] == 3
    assert e["model"]["kv_bytes_per_token"] == 17 * 520
    assert e["settings"]["block_size"] == 1584
    assert e["gpu_blocks"] == 1206 == int(15.73 * 2**30) // (17 * 1584 * 520)
    assert e["kv_cache_tokens"] == int(1206 / (166 + 3 * (2 + 3)) * 262_144) == 1_746_661
    # prefix caching, which the paste does not show, is what the printed capacity needs
    assert e["settings"]["enable_prefix_caching"] is True
    assert not any("KV pool holds" in c for c in d.checks)


@pytest.mark.parametrize(("text", "expected"), [
    ("- **Drafter:** MTP n=3", 3),
    ("served with MTP (n=2) on two cards", 2),
    ("MTP with 4 speculative tokens", 4),
    ("MTP is what we want next", None),
    ("our SMTP n=3 relay", None),
])
def test_an_mtp_drafter_told_in_words_is_read(text, expected):
    got = read_paste(text).extra.get("speculative_config")
    assert (got["num_speculative_tokens"] if got else None) == expected


@pytest.mark.parametrize(("dtype", "version", "since"), [("nvfp4", "0.19.0", "0.20.0"),
                                                         ("int4_per_token_head", "0.24.0", "0.25.0")])
def test_a_format_the_release_does_not_have_is_said(dtype, version, since):
    est = _qwen7b(dtype, version=version)
    assert any(f"--kv-cache-dtype {dtype} came with vLLM {since}: {version} rejects it" in a for a in est.assumptions)
    assert est.layout.kv_bytes_per_token == 28 * 4 * 256      # modelled as a plain 1-byte cache
    assert not any("came with" in a for a in _qwen7b(dtype, version=since).assumptions)


@pytest.mark.parametrize(("dtype", "hd", "slot"), [
    # key: 8 bits = the fp8 values (hd B), else ceil(hd × bits / 8) + a 2-byte norm;
    # value: ceil(hd × bits / 8) + 2-byte scale + 2-byte zero; the slot rounded up to even
    ("turboquant_k8v4", 128, 128 + (64 + 4)),            # 196
    ("turboquant_4bit_nc", 128, (64 + 2) + (64 + 4)),    # 134
    ("turboquant_k3v4_nc", 128, (48 + 2) + (64 + 4)),    # 118
    ("turboquant_3bit_nc", 128, (48 + 2) + (48 + 4)),    # 102
    ("turboquant_3bit_nc", 72, (27 + 2) + (27 + 4) + 0),  # 60, already even
    ("turboquant_k3v4_nc", 72, (27 + 2) + (36 + 4) + 1),  # 69 → 70
    ("fp8", 128, 0),
])
def test_a_turboquant_slot(dtype, hd, slot):
    from estimator.kv_layout import turboquant_slot

    assert turboquant_slot(dtype, hd) == slot


def test_turboquant_leaves_a_dense_models_edge_layers_unquantized():
    """Llama-3.1-8B (32 layers × 8 KV heads × 128) with turboquant_k8v4: layers 0, 1, 30 and 31 keep
    bf16 K and V (8 × 256 × 2 = 4,096 B per token each), the other 28 a 196-byte slot per head (1,568
    B): 16,384 + 43,904 = 60,288 B per token, against 131,072 in bf16."""
    spec = load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec
    est = run_estimate(spec, "H100", EngineSettings(vllm_version="0.22.0", kv_cache_dtype="turboquant_k8v4"))
    assert est.layout.kv_bytes_per_token == 4 * 4_096 + 28 * 8 * 196 == 60_288
    assert attention_backend(est.spec, est.profile, est.settings) == TRITON_ATTN
    text = kv_formula(est)
    assert "4 full-attention layers × 8 KV heads per GPU × 512 B" in text and "28 full-attention layers" in text
    assert "60,288 B per token (turboquant_k8v4)" in text
    # with pipeline parallelism the stage's layers are modelled as quantized, and the reply says so
    staged = run_estimate(spec, "H100", EngineSettings(vllm_version="0.22.0", kv_cache_dtype="turboquant_k8v4",
                                                       pipeline_parallel_size=2), gpu_count=2)
    assert staged.layout.kv_bytes_per_token == 16 * 8 * 196
    assert any("this stage's layers are all modelled as quantized" in a for a in staged.assumptions)


def test_turboquant_on_a_hybrid_model_by_release():
    """0.20 refuses TurboQuant for hybrid models (said); 0.21 quantizes every attention layer: Qwen3.6-27B's
    16 full-attention layers (4 KV heads × 256) at TP 2 take 16 × 2 × slot(256) = 16 × 2 × (256 + 132) B."""
    spec = load_model("Qwen/Qwen3.6-27B", offline=True).spec
    old = run_estimate(spec, "H100", EngineSettings(vllm_version="0.20.0", kv_cache_dtype="turboquant_k8v4",
                                                    tensor_parallel_size=2), gpu_count=2)
    assert any("refuses TurboQuant KV caches for hybrid" in a for a in old.assumptions)
    new = run_estimate(spec, "H100", EngineSettings(vllm_version="0.21.0", kv_cache_dtype="turboquant_k8v4",
                                                    tensor_parallel_size=2), gpu_count=2)
    assert new.layout.kv_bytes_per_token == 16 * 2 * (256 + 128 + 4)
    assert not any("refuses TurboQuant" in a for a in new.assumptions)


def test_nvfp4_on_mla_models():
    """DeepSeek-V3.2 (61 MLA layers, each with a 132-byte fp8 indexer key): the nvfp4_ds_mla blob (0.30+)
    is 352 B a token (mla_attention.py), so 61 × (352 + 132) = 29,524 B; a plain nvfp4 cache vLLM refuses
    for MLA models (from 0.21), and nvfp4_ds_mla does not exist before 0.30."""
    spec = load_model("deepseek-ai/DeepSeek-V3.2", offline=True).spec

    def est(dtype: str, version: str = "0.33.0"):
        return run_estimate(spec, "B200", EngineSettings(vllm_version=version, kv_cache_dtype=dtype,
                                                         tensor_parallel_size=8), gpu_count=8)

    assert est("nvfp4_ds_mla").layout.kv_bytes_per_token == 61 * (352 + 132) == 29_524
    assert any("refuses an nvfp4 KV cache for MLA models" in a and "nvfp4_ds_mla" in a for a in est("nvfp4").assumptions)
    assert any("--kv-cache-dtype nvfp4_ds_mla came with vLLM 0.30.0: 0.29.0 rejects it" in a
               for a in est("nvfp4_ds_mla", "0.29.0").assumptions)


@pytest.mark.parametrize("word", ["auto", "fp8_e4m3", "int8_per_token_head", "nvfp4", "turboquant_3bit_nc", "FP8"])
def test_a_kv_cache_dtype_vllm_has_is_taken(word):
    from estimator.vllm import parse_flags

    assert parse_flags(["--kv-cache-dtype", word]).kv_cache_dtype == word.lower()


@pytest.mark.parametrize("word", ["bogus", "fp8e4m3", "int3"])
def test_a_kv_cache_dtype_vllm_never_had_is_refused_with_the_reason(word):
    from estimator.errors import BadInput
    from estimator.vllm import parse_flags

    with pytest.raises(BadInput, match="is not a KV cache dtype vLLM has"):
        parse_flags(["--kv-cache-dtype", word])


def test_a_format_kvdoctor_does_not_model_is_said():
    est = _qwen7b("octave_k3v4", version="0.33.0")
    assert any("octave_k3v4: a packed format (octave: ROCm) whose slot kvdoctor does not model" in a
               for a in est.assumptions)


def test_every_dtype_that_came_later_is_said_before_its_release():
    """One table (vllm.KV_CACHE_DTYPE_FROM) dates every dtype: bfloat16 came with 0.11 (0.10.1's
    CacheDType lacks it), so 0.10.1 refuses it — the estimate keeps its 2 bytes and says so."""
    est = _qwen7b("bfloat16", version="0.10.1")
    assert any("--kv-cache-dtype bfloat16 came with vLLM 0.11.0: 0.10.1 rejects it; modelled with 2 byte(s)" in a
               for a in est.assumptions)
    assert not any("came with" in a for a in _qwen7b("bfloat16", version="0.11.0").assumptions)
