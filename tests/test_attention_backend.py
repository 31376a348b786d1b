"""The attention backend vLLM picks (platforms/cuda.py) and FlashInfer's buffers in the CUDA-graph
estimate (v1/worker/gpu_model_runner.py profile_cudagraph_memory, v1/attention/backends/flashinfer.py).

The graph figures are written out by hand: PIECEWISE sizes [1, 2, 4] and FULL sizes [1, 2] at
max_num_seqs 2 (vllm.cuda_graph_sizes / full_graph_sizes), 0.24 MiB per graph per layer for a
dense model (cuda_graphs.GRAPH_BYTES_PER_LAYER_DENSE), FlashInfer's 394 MiB workspace and 8 MiB per
decode wrapper (one per FULL size, shared by its warm-up and its capture: flashinfer.py build()).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_memory import load

from estimator import diagnose, render_markdown
from estimator.api import run_estimate
from estimator.attention_backend import attention_backend
from estimator.cuda_graphs import GRAPH_BYTES_PER_LAYER_DENSE
from estimator.errors import BadInput
from estimator.kv_layout import attention_groups
from estimator.paste import read_paste
from estimator.vllm import EngineSettings, parse_flags, profile_for

MiB = 2**20
PER = GRAPH_BYTES_PER_LAYER_DENSE          # int(0.24 MiB) = 251,658 B


def _backend(model: str, version: str, cc: float, kv: str = "auto", named: str | None = None) -> str | None:
    s = EngineSettings(kv_cache_dtype=kv, compute_capability=cc, attention_backend=named)
    return attention_backend(load(model), profile_for(version), s)


def test_backend_choice_follows_platform_priorities_and_support_checks():
    q = "Qwen/Qwen3.6-27B"           # head size 256
    # Ampere / Ada / consumer Blackwell: FlashAttention first, but it takes an FP8 cache only as FA3 on SM 9.0
    assert _backend(q, "0.27.0", 8.6) == "FLASH_ATTN"
    assert _backend(q, "0.27.0", 8.6, "fp8_e4m3") == "FLASHINFER"
    assert _backend(q, "0.21.0", 8.9, "fp8") == "FLASHINFER"
    assert _backend(q, "0.27.0", 12.0, "fp8") == "FLASHINFER"
    # Hopper: FA3 takes fp8 (e4m3) but never e5m2
    assert _backend(q, "0.27.0", 9.0, "fp8") == "FLASH_ATTN"
    assert _backend(q, "0.27.0", 9.0, "fp8_e5m2") == "FLASHINFER"
    # SM 10.x: FlashInfer first whatever the cache dtype
    assert _backend(q, "0.27.0", 10.0) == "FLASHINFER"
    # attention sinks (gpt-oss): FlashAttention needs SM 9.0, FlashInfer the SM 10.x TRT-LLM path
    assert _backend("openai/gpt-oss-20b", "0.27.0", 8.6) == "TRITON_ATTN"
    assert _backend("openai/gpt-oss-20b", "0.27.0", 10.0) == "FLASHINFER"
    # Turing with an FP8 cache: FlashInfer took SM 7.5 until 0.24 raised its floor to 8.0
    assert _backend(q, "0.22.0", 7.5, "fp8") == "FLASHINFER"
    assert _backend(q, "0.24.0", 7.5, "fp8") == "TRITON_ATTN"
    # head size 512 (Gemma 4's global layers alone would be): FlashInfer takes it from 0.22
    base = load(q)
    spec512 = replace(base, layers=tuple(replace(lk, head_dim=512) if lk.kind == "full" else lk for lk in base.layers))
    s512 = EngineSettings(kv_cache_dtype="fp8", compute_capability=8.6)
    assert attention_backend(spec512, profile_for("0.22.0"), s512) == "FLASHINFER"
    assert attention_backend(spec512, profile_for("0.21.0"), s512) == "TRITON_ATTN"
    # a named backend wins; before 0.18, MLA and unknown cards are not modelled
    assert _backend(q, "0.27.0", 8.6, "fp8", named="TRITON_ATTN") == "TRITON_ATTN"
    assert _backend(q, "0.17.0", 8.6, "fp8") is None
    assert _backend(q, "0.27.0", None, "fp8") is None          # type: ignore[arg-type]
    assert _backend("deepseek-ai/DeepSeek-V3", "0.27.0", 8.6, "fp8") is None


def _talos_like(**changes):
    """Qwen3.6-27B at TP 2 on RTX 3090s, 0.27 on the V1 runner, 2 sequences, 8,192-token batches."""
    base = dict(vllm_version="0.27.0", tensor_parallel_size=2, max_num_seqs=2, max_num_batched_tokens=8192,
                kv_cache_dtype="fp8_e4m3", max_model_len=131072, model_runner_v2=False)
    base.update(changes)
    return run_estimate(load("Qwen/Qwen3.6-27B"), "RTX 3090", EngineSettings(**base))


def test_flashinfer_workspace_and_wrappers_are_in_the_graph_estimate():
    fi = _talos_like()
    assert attention_groups(fi.layout) == 1                  # 16 attention layers: one KV group
    graphs = (3 + 2) * 64 * PER                              # 5 graphs × 64 layers
    # 0.26+: workspace = max(394 MiB, 8,192 tokens × 12 query heads per rank × 256 × 16 B = 384 MiB)
    workspace = 394 * MiB
    assert fi.cuda_graph_bytes == graphs + workspace + 8 * MiB * 2       # 510,446,720 B
    assert fi.flashinfer_graph_bytes == workspace + 8 * MiB * 2
    # the same run with a bf16 cache runs FlashAttention: no FlashInfer buffers, the same graphs
    fa = _talos_like(kv_cache_dtype="auto")
    assert fa.cuda_graph_bytes == graphs and fa.flashinfer_graph_bytes == 0
    # ... and the KV pool of the FP8 run is smaller by exactly those buffers
    assert any("FlashInfer" in a and "394 MiB or more" in a for a in fi.assumptions)
    assert not any("FlashInfer" in a for a in fa.assumptions)


def test_flashinfer_keeps_no_full_graphs_with_speculative_decoding():
    # one MTP token: sizes up to min(2 × 2 × 2, 512) = 8, rounded to multiples of 2 → [2, 4, 8];
    # FULL sizes ≤ 2 × 2 → [2, 4]. FlashInfer's native decode graphs one token per request, so
    # vLLM keeps PIECEWISE only (config/compilation.py) and no workspace enters the estimate.
    fi = _talos_like(speculative_method="mtp", num_speculative_tokens=1)
    triton = _talos_like(speculative_method="mtp", num_speculative_tokens=1, attention_backend="TRITON_ATTN")
    layers = 64 + 1                                          # the MTP layer is captured too
    assert fi.cuda_graph_bytes == 3 * layers * PER
    assert triton.cuda_graph_bytes == (3 + 2) * layers * PER
    assert any("PIECEWISE CUDA graphs only" in a for a in fi.assumptions)


def test_workspace_grows_with_the_prefill_chunk_from_026():
    # Llama-3.1-8B: 32 query heads × 128; 8,192 × 32 × 128 × 16 B = 512 MiB > 394 MiB from 0.26
    spec = load("meta-llama/Llama-3.1-8B-Instruct")

    def cg(version: str) -> int:
        s = EngineSettings(vllm_version=version, max_num_seqs=2, max_num_batched_tokens=8192, kv_cache_dtype="fp8",
                           max_model_len=8192, model_runner_v2=False)
        return run_estimate(spec, "RTX 4090", s).cuda_graph_bytes

    assert cg("0.27.0") - cg("0.25.0") == 512 * MiB - 394 * MiB


def test_trtllm_decode_on_sm100_holds_one_workspace_and_no_wrappers():
    # B200: FlashInfer decodes through TRT-LLM's kernels with one process-wide 394 MiB buffer —
    # from 0.27 whenever the card supports it, up to 0.26 for batches of ≤ 256 tokens with a 16-bit
    # cache; an FP8 cache there decodes natively (the builder's workspace + one wrapper per size)
    spec = load("Qwen/Qwen3.6-27B")

    def run(version: str, kv: str, seqs: int = 2):
        s = EngineSettings(vllm_version=version, max_num_seqs=seqs, max_num_batched_tokens=8192,
                           max_model_len=131072, kv_cache_dtype=kv, model_runner_v2=False)
        return run_estimate(spec, "B200", s)

    def cg(version: str, kv: str, seqs: int = 2) -> int:
        return run(version, kv, seqs).cuda_graph_bytes

    graphs = (3 + 2) * 64 * PER
    assert cg("0.27.0", "auto") == graphs + 394 * MiB
    assert cg("0.27.0", "fp8") == graphs + 394 * MiB
    assert cg("0.25.0", "auto") == graphs + 394 * MiB
    assert cg("0.25.0", "fp8") == graphs + 394 * MiB + 2 * 8 * MiB
    # 0.25, 16-bit cache, 1,024 sequences: FULL sizes up to 512 (vllm.full_graph_sizes, 51 of them);
    # the first two (512, 496) decode natively, so vLLM extrapolates the second's 8 MiB wrapper over
    # the other 50 graphs
    big = cg("0.25.0", "auto", seqs=1024)
    assert big - (51 + 51) * 64 * PER == 394 * MiB + 8 * MiB + 50 * 8 * MiB
    # the reply names what was counted, from the same first capture: the builders' own workspace there,
    # TRT-LLM's buffer where every size decodes through it
    assert any("its workspace (394 MiB or more)" in a for a in run("0.25.0", "auto", 1024).assumptions)
    assert any("TRT-LLM's 394 MiB decode workspace" in a for a in run("0.27.0", "auto", 1024).assumptions)


def test_the_v2_runner_and_eager_runs_count_no_flashinfer_workspace():
    assert _talos_like(model_runner_v2=True).cuda_graph_bytes == 0          # 0.27's V2: graphs after the KV cache
    eager = _talos_like(enforce_eager=True)
    assert eager.cuda_graph_bytes == 0 and not any("FlashInfer" in a for a in eager.assumptions)
    # 0.29's V2 budgets its graphs; its FlashInfer workspace is set up with the attention backends,
    # before the capture it measures: only the decode wrappers of the 2 FULL sizes are in it
    v2 = _talos_like(vllm_version="0.29.0", model_runner_v2=True)
    assert v2.cuda_graph_bytes == (3 + 2) * 64 * PER + 2 * 8 * MiB
    assert any("Model Runner V2 sets its 394 MiB workspace up outside" in a for a in v2.assumptions)


def test_backend_read_from_flags_and_log_lines():
    from estimator.attention_backend import backend_from_name

    assert [backend_from_name(n) for n in ("FlashInferBackend", "Flash Attention", "TritonAttentionBackend",
                                           "AttentionBackendEnum.FLASH_ATTN", "CUTLASS")] \
        == ["FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLASH_ATTN", None]
    assert parse_flags(["--attention-backend", "FLASHINFER"]).attention_backend == "FLASHINFER"
    assert parse_flags(["--attention-backend=triton_attn"]).attention_backend == "TRITON_ATTN"
    lines = {
        "INFO 05-01 19:56:40 [cuda.py:300] Using FLASHINFER attention backend out of potential backends: "
        "('FLASHINFER', 'TRITON_ATTN')": "FLASHINFER",
        "INFO 10-11 12:00:00 [cuda.py:366] Using AttentionBackendEnum.TRITON_ATTN backend.": "TRITON_ATTN",
        "INFO 03-01 12:00:00 [cuda.py:1] Using FlashInfer backend on V1 engine.": "FLASHINFER",
        "WARNING 04-29 12:01:03 [compilation.py:1390] CUDAGraphMode.FULL_AND_PIECEWISE is not supported with "
        "spec-decode for attention backend FlashInferBackend (support: "
        "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE": "FLASHINFER",
        # a GEMM's backend line first does not hide the attention one
        "INFO Using CUTLASS backend.\nINFO [cuda.py:300] Using FLASH_ATTN attention backend out of "
        "potential backends: ['FLASH_ATTN', 'FLASHINFER']": "FLASH_ATTN",
    }
    for text, name in lines.items():
        assert read_paste(text).extra.get("attention_backend_used") == name, text
    assert read_paste("INFO [mxfp4.py:1] Using Marlin backend").extra.get("attention_backend_used") is None


def test_the_sparse_mla_cache_format_line_names_the_backend():
    """MLAAttention's format line says which sparse-MLA backend ran (mla_attention.py); a line naming
    the backend itself wins; the b12x fork's backend is read from its args, and other words are not."""
    packed = ("INFO 05-15 03:31:02 [mla_attention.py:311] Using DeepSeek's fp8_ds_mla KV cache format. To use "
              "standard fp8 kv-cache format, please set `--attention-backend FLASHINFER_MLA_SPARSE`")
    plain = ("INFO 05-15 03:31:02 [mla_attention.py:328] Using standard fp8 KV cache format. To use DeepSeek's "
             "fp8_ds_mla KV cache format, please set `--attention-backend FLASHMLA_SPARSE`")
    old = "INFO 10-01 12:00:00 [config.py:1] Using custom fp8 kv-cache format for DeepSeekV3.2"
    assert read_paste(packed).extra.get("attention_backend_used") == "FLASHMLA_SPARSE"
    assert read_paste(plain).extra.get("attention_backend_used") == "FLASHINFER_MLA_SPARSE"
    assert read_paste(old).extra.get("attention_backend_used") == "FLASHMLA_SPARSE"
    named = "INFO [cuda.py:300] Using FLASHINFER_MLA_SPARSE attention backend out of potential backends: " \
            "['FLASHINFER_MLA_SPARSE']\n" + packed
    assert read_paste(named).extra.get("attention_backend_used") == "FLASHINFER_MLA_SPARSE"
    # DeepSeek-V4's own line (no "To use standard") says nothing of a V3.2-style backend
    assert read_paste("INFO Using DeepSeek's fp8_ds_mla KV cache format.").extra.get("attention_backend_used") is None
    assert parse_flags(["--attention-backend", "B12X_MLA_SPARSE"]).attention_backend == "B12X_MLA_SPARSE"
    args = "INFO [utils.py:240] non-default args: {'model': 'lukealonso/GLM-5.1-NVFP4-MTP', " \
           "'attention_backend': 'B12X_MLA_SPARSE', 'kv_cache_dtype': 'fp8'}"
    assert read_paste(args).extra.get("attention_backend") == "B12X_MLA_SPARSE"
    with pytest.raises(BadInput):
        parse_flags(["--attention-backend", "B13X_MLA_SPARSE"])


def test_a_log_that_names_triton_keeps_the_workspace_out():
    # the FP8 run on 3090s of the tests above, on the V1 runner: FlashInfer is what vLLM picks, but
    # a log line naming the backend it used wins, and Triton holds none of FlashInfer's buffers
    cmd = ("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2 "
           "--kv-cache-dtype fp8_e4m3 --max-num-seqs 2 --max-num-batched-tokens 8192 --max-model-len 131072")
    log = ("\nINFO 05-01 19:56:40 [cuda.py:300] Using TRITON_ATTN attention backend out of potential "
           "backends: ('TRITON_ATTN',)")

    def graphs(text: str) -> tuple[int, list[str], str]:
        d = diagnose(text, gpu="RTX 3090", vllm_version="0.27.0", offline=True, explain=True)
        return d.estimate["memory"]["cuda_graph_bytes"], d.assumptions, render_markdown(d)

    picked, notes, reply = graphs(cmd)
    named, named_notes, named_reply = graphs(cmd + log)
    assert picked == (3 + 2) * 64 * PER + 394 * MiB + 2 * 8 * MiB
    assert named == (3 + 2) * 64 * PER
    assert any("FlashInfer" in a for a in notes) and not any("FlashInfer" in a for a in named_notes)
    # the breakdown's graph row says how much of it is FlashInfer's: (394 + 16) MiB = 0.40 GiB
    assert "with 0.40 GiB that the FlashInfer attention backend allocates" in reply
    assert "FlashInfer attention backend allocates" not in named_reply
