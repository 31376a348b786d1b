"""The memory model's exact parts, checked by hand: budget, KV layout, blocks, capacity, search.

The estimated parts (weights W, activation peak P, non-torch N, CUDA graphs G) are passed in
explicitly wherever a test is about the exact arithmetic, so every expected number below follows
from ../shared/docs/vllm-memory.md alone (§1 budget per era, §2 layout/grouping/pages/capacity,
§2.5 the admission check and estimated max model length, §3 max_model_len, §5 defaults, §7 the
worked example). The arithmetic is written in each test.
"""

from __future__ import annotations

import math

import pytest

from estimator import catalog
from estimator.activation import V2_FIRST_COMPILE
from estimator.memory import estimate, rerun, resolve_max_model_len
from estimator.spec import MambaState, spec_from_config
from estimator.vllm import EngineSettings, parse_flags, profile_for

GiB = 2**30
MiB = 2**20
KiB = 2**10


def load(repo_id: str):
    cid, config, companions = catalog.lookup(repo_id)
    return spec_from_config(config, cid, companions)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def run(spec, version, *, engine=None, T=64 * GiB, W=16 * GiB, P=1 * GiB, N=512 * MiB, G=0, **settings):
    """Estimate with every estimated part given: only vLLM's exact arithmetic is left."""
    s = EngineSettings(vllm_version=version, engine=engine, **settings)
    return estimate(spec, gpu_total_bytes=T, settings=s, weights_bytes=W, activation_bytes=P,
                    non_torch_bytes=N, cuda_graph_bytes=G)


def run_pool(spec, version, pool, **settings):
    """V1 estimate with the KV pool fixed by --kv-cache-memory-bytes (0.10.2+)."""
    return run(spec, version, kv_cache_memory_bytes=pool, **settings)


@pytest.fixture(scope="module")
def llama8b():
    return load("meta-llama/Llama-3.1-8B")


@pytest.fixture(scope="module")
def seed_spec():
    return load("Qwen/Qwen2.5-14B-Instruct-1M")


# Llama-3.1-8B: 131,072 B per token (32 × 8 × 128 × 2 × 2) → one block of 16 tokens = 2 MiB.
LLAMA_BPB = 16 * 32 * 8 * 128 * 2 * 2
assert LLAMA_BPB == 2 * MiB


# ---------------------------------------------------------------------------------------------
# Budget per era: KV = T × u − (W + P + N [+ G])
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "engine"),
    [("0.6.3", None), ("0.6.4", None), ("0.6.5", None), ("0.7.3", None), ("0.10.1", "v0"),
     ("0.8.5", None), ("0.9.1", None), ("0.19.0", None), ("0.26.0", None), ("0.27.0", None)],
)
def test_budget_and_kv_per_era(llama8b, version, engine):
    e = run(llama8b, version, engine=engine, gpu_memory_utilization=0.5, max_model_len=8192)
    # T × u = 64 GiB × 0.5 = 32 GiB (exact, so int and ceil agree)
    assert e.budget_bytes == 32 * GiB
    # KV = 32 GiB − (16 GiB + 1 GiB + 0.5 GiB) = 14.5 GiB
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB) == int(14.5 * GiB)
    # blocks = 14.5 GiB // 2 MiB = 7,424
    assert e.gpu_blocks == int(14.5 * GiB) // (2 * MiB) == 7_424
    assert e.layout.bytes_per_block == 2 * MiB


@pytest.mark.parametrize("version", ["0.20.0", "0.27.0", "0.33.0"])
def test_budget_subtracts_graphs_from_020(llama8b, version):
    # the V1 model runner (VLLM_USE_V2_MODEL_RUNNER=0: Llama runs on V2 by default from 0.23)
    e = run(llama8b, version, G=256 * MiB, gpu_memory_utilization=0.5, max_model_len=8192, model_runner_v2=False)
    # KV = 32 GiB − (16 + 1 + 0.5 + 0.25) GiB = 14.25 GiB → 14.25 × 512 = 7,296 blocks of 2 MiB
    assert e.kv_cache_bytes == int(14.25 * GiB)
    assert e.gpu_blocks == 7_296


def test_budget_rounding_int_before_014_ceil_from_014(llama8b):
    T = 10**10 + 1  # T × 0.9 = 9,000,000,000.9
    kw = dict(T=T, W=0, P=0, N=0, gpu_memory_utilization=0.9, max_model_len=4096)
    assert run(llama8b, "0.13.0", **kw).budget_bytes == 9_000_000_000
    assert run(llama8b, "0.14.0", **kw).budget_bytes == 9_000_000_001
    assert run(llama8b, "0.14.0", **kw).kv_cache_bytes == 9_000_000_001


def test_default_utilization_090_then_092(llama8b):
    T = 100 * GiB
    # not given → 0.90 up to 0.19 (int before 0.14, ceil 0.14–0.19), 0.92 from 0.20 (ceil)
    assert run(llama8b, "0.10.1", T=T, max_model_len=4096).budget_bytes == int(T * 0.90)
    assert run(llama8b, "0.19.0", T=T, max_model_len=4096).budget_bytes == math.ceil(T * 0.90)
    assert run(llama8b, "0.20.0", T=T, max_model_len=4096).budget_bytes == math.ceil(T * 0.92)
    assert run(llama8b, "0.7.3", T=T, max_model_len=4096).budget_bytes == int(T * 0.90)


# ---------------------------------------------------------------------------------------------
# CUDA-graph accounting: off ≤0.19, on from 0.20, G = 0 with enforce_eager (§1.7)
# ---------------------------------------------------------------------------------------------


def _graphs(spec, version, engine=None, **settings):
    s = EngineSettings(vllm_version=version, engine=engine, gpu_memory_utilization=0.5,
                       max_model_len=8192, **settings)
    return estimate(spec, gpu_total_bytes=64 * GiB, settings=s, weights_bytes=16 * GiB,
                    activation_bytes=GiB, non_torch_bytes=512 * MiB)  # G left to the model


@pytest.mark.parametrize(("version", "engine"), [("0.7.3", None), ("0.10.1", "v0"), ("0.17.0", None),
                                                 ("0.18.0", None), ("0.19.0", None)])
def test_cuda_graphs_not_budgeted_before_020(llama8b, version, engine):
    e = _graphs(llama8b, version, engine)
    assert e.cuda_graph_bytes == 0
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB)


def test_vllm_memory_profiler_estimate_cudagraphs_turns_the_graph_budget_on_and_off(llama8b):
    """gpu_worker.py reads VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS from 0.18: 1 subtracts the CUDA-graph
    estimate there (opt-in until 0.19), 0 stops it from 0.20 (the default); 0.17 has no such variable."""
    from estimator.vllm import parse_flags

    def run(version, env):
        s = parse_flags([f"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS={env}"],
                        EngineSettings(vllm_version=version, gpu_memory_utilization=0.5, max_model_len=8192))
        return estimate(llama8b, gpu_total_bytes=64 * GiB, settings=s, weights_bytes=16 * GiB,
                        activation_bytes=GiB, non_torch_bytes=512 * MiB)

    on = run("0.19.0", 1)
    assert on.cuda_graph_bytes > 0
    assert on.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB) - on.cuda_graph_bytes
    assert run("0.17.0", 1).cuda_graph_bytes == 0
    assert run("0.20.0", 0).cuda_graph_bytes == 0 < _graphs(llama8b, "0.20.0").cuda_graph_bytes


def test_cuda_graphs_budgeted_from_020(llama8b):
    e = _graphs(llama8b, "0.20.0")
    assert e.cuda_graph_bytes > 0
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB) - e.cuda_graph_bytes


def test_graph_estimate_counts_piecewise_and_full_captures(llama8b):
    """G = (PIECEWISE + FULL graphs) × decoder layers × the fitted per-graph-layer figure: at
    max_num_seqs 256 vLLM captures 51 PIECEWISE sizes (up to 512) and 35 FULL ones (up to 256)."""
    from estimator.cuda_graphs import GRAPH_BYTES_PER_LAYER_DENSE

    e = _graphs(llama8b, "0.22.0", max_num_seqs=256, max_num_batched_tokens=8192)
    assert e.cuda_graph_bytes == (51 + 35) * 32 * GRAPH_BYTES_PER_LAYER_DENSE
    e = _graphs(llama8b, "0.22.0", max_num_seqs=1024, max_num_batched_tokens=8192)
    assert e.cuda_graph_bytes == (51 + 51) * 32 * GRAPH_BYTES_PER_LAYER_DENSE
    e = _graphs(llama8b, "0.22.0", max_num_seqs=4, max_num_batched_tokens=8192)
    assert e.cuda_graph_bytes == (4 + 3) * 32 * GRAPH_BYTES_PER_LAYER_DENSE      # [1,2,4,8] and [1,2,4]


def test_v2_model_runner_sets_graphs_aside_from_029(llama8b):
    """0.29's V2 runner estimates its graphs like V1 (`profile_cudagraph_memory` →
    `_profile_cudagraph_memory`, v1/worker/gpu/model_runner.py); up to 0.28 it answered 0."""
    e = _graphs(llama8b, "0.33.0", model_runner_v2=True)
    same = _graphs(llama8b, "0.33.0", model_runner_v2=False)
    assert e.cuda_graph_bytes == same.cuda_graph_bytes > 0
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB) - e.cuda_graph_bytes
    assert _graphs(llama8b, "0.29.0", model_runner_v2=True).cuda_graph_bytes == e.cuda_graph_bytes
    # a log whose own figures show the graphs on top of the KV cache decides over the version
    after = _graphs(llama8b, "0.33.0", model_runner_v2=True, graphs_after_kv=True)
    assert after.cuda_graph_bytes == 0


@pytest.mark.parametrize("version", ["0.20.0", "0.25.1", "0.28.0"])
def test_v2_model_runner_subtracts_no_graph_estimate(llama8b, version):
    # VLLM_USE_V2_MODEL_RUNNER=1: its profile_cudagraph_memory() returns 0, so the KV pool is
    # requested − W − P − N even when a graph figure is printed (vllm PR48601: G = 2.04 GiB printed,
    # "kv cache memory in use" = 72.78 − 7.39 − 1.54 − 0.6 = 63.25 GiB).
    s = parse_flags(["VLLM_USE_V2_MODEL_RUNNER=1"], EngineSettings(vllm_version=version))
    assert s.model_runner_v2
    e = _graphs(llama8b, version, model_runner_v2=True)
    assert e.cuda_graph_bytes == 0
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB)
    assert any("V2 model runner" in a for a in e.assumptions)
    printed = run(llama8b, version, G=2 * GiB, gpu_memory_utilization=0.5, max_model_len=8192,
                  model_runner_v2=True)
    assert printed.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB)
    assert parse_flags(["VLLM_USE_V2_MODEL_RUNNER=0"], EngineSettings()).model_runner_v2 is False
    assert EngineSettings().model_runner_v2 is None          # unset: the release's default


def test_a_quantized_export_read_through_its_base_config_stays_on_v1_in_022():
    """0.22–0.23 put only unquantized models on V2 (ModelConfig.is_quantized: the checkpoint's own
    quantization_config). Qwen3-8B-AWQ, read offline through Qwen3-8B's config with its format from
    the name, has one in its real config: V1, like the checkpoint vLLM loads; the base model is V2."""
    from estimator.api import load_model

    def runner(ref, version):
        s = EngineSettings(vllm_version=version, max_model_len=4096)
        return estimate(load_model(ref, offline=True).spec, gpu_total_bytes=80 * GiB, settings=s).settings.model_runner_v2
    assert runner("Qwen/Qwen3-8B", "0.22.0") is True
    assert runner("Qwen/Qwen3-8B-AWQ", "0.22.0") is False
    assert runner("Qwen/Qwen3-8B-AWQ", "0.24.0") is True        # 0.24 lists Qwen3 whatever its format


def test_rocm_keeps_its_excluded_architectures_on_v1():
    """0.29+ runs every model on V2 except, on ROCm, ROCM_DEFAULT_MRV1_ARCHITECTURES (DeepSeek-V3.2
    among them): an AMD card (its gfx target) keeps DeepSeek-V3.2 on V1, an NVIDIA card does not."""
    from estimator.api import run_estimate

    spec = load("deepseek-ai/DeepSeek-V3.2")
    def runner(card):
        s = EngineSettings(vllm_version="0.29.0", max_model_len=4096, tensor_parallel_size=8)
        return run_estimate(spec, card, s).settings.model_runner_v2
    assert runner("MI300X") is False
    assert runner("H200") is True


def test_llama_runs_on_v2_by_default_from_023_and_its_graphs_follow(llama8b):
    """Llama-3.1-8B at defaults: V1 in 0.22 (V2 took only Qwen3 then), V2 from 0.23, so 0.23–0.28
    size the KV cache before the graphs and 0.29 subtracts them again; it is said."""
    def graphs(version):
        return _graphs(llama8b, version).cuda_graph_bytes
    assert graphs("0.22.0") > 0
    assert graphs("0.23.0") == graphs("0.28.0") == 0
    e = _graphs(llama8b, "0.27.0")
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB)
    assert any("Model Runner V2 by default" in a for a in e.assumptions)
    assert graphs("0.29.0") == _graphs(llama8b, "0.29.0", model_runner_v2=False).cuda_graph_bytes > 0


def test_v2_model_runner_profile_peak(llama8b):
    # Model Runner V2 samples its dummy batch with its own code (vllm.v2_sampler_bytes): Llama-3.1-8B,
    # 1,024 rows × 128,256 vocab — the bf16 logits (2 B) and their fp32 copy (4 B) to 0.25, the logits
    # alone 0.26–0.32 (an all-gather's 4 + 2/tp B under TP), a warm-up pass with every parameter set in
    # 0.33 (10 B); its first compile adds 0.9 GiB to the 2,048-token forward (activation.V2_FIRST_COMPILE),
    # not with --enforce-eager. V1 keeps its fitted 16 B (vllm.SAMPLER_BYTES_TRITON_WARMED).
    def act(version, v2, seqs, eager=False, tp=1):
        s = EngineSettings(vllm_version=version, max_num_seqs=seqs, max_num_batched_tokens=2048,
                           max_model_len=8192, model_runner_v2=v2, enforce_eager=eager, tensor_parallel_size=tp)
        return estimate(llama8b, gpu_total_bytes=80 * GiB, settings=s).activation_bytes

    forward = act("0.25.1", False, 1)            # V1, one row: the forward alone (327,155,712 B)
    rows = 1024 * 128_256
    assert act("0.25.1", False, 1024) == rows * 16 > forward
    for version in ("0.25.1", "0.28.0"):
        assert act(version, True, 1024) == forward + V2_FIRST_COMPILE      # 1,293,523,353 B
    assert act("0.25.1", True, 1024, eager=True) == rows * 6 > forward
    assert act("0.28.0", True, 1024, eager=True) == forward > rows * 2
    assert act("0.28.0", True, 1024, eager=True, tp=2) == rows * 5       # 4 + 2/2 B while gathering
    assert act("0.33.0", True, 1024) == rows * 10 > forward + V2_FIRST_COMPILE
    compiled = estimate(llama8b, gpu_total_bytes=80 * GiB, settings=EngineSettings(
        vllm_version="0.28.0", max_model_len=8192, model_runner_v2=True))
    assert any("torch.compile's first compile" in a for a in compiled.assumptions)
    eager = estimate(llama8b, gpu_total_bytes=80 * GiB, settings=EngineSettings(
        vllm_version="0.28.0", max_model_len=8192, model_runner_v2=True, enforce_eager=True))
    assert not any("torch.compile's first compile" in a for a in eager.assumptions)
    # a log that loaded the compiled graphs from the cache: no first compile in the profile run
    warm = EngineSettings(vllm_version="0.28.0", max_num_seqs=1024, max_num_batched_tokens=2048, max_model_len=8192,
                          model_runner_v2=True, compile_cache_warm=True)
    assert estimate(llama8b, gpu_total_bytes=80 * GiB, settings=warm).activation_bytes == forward
    from estimator.paste import read_paste

    hit = "INFO [backends.py:293] Directly load the compiled graph(s) for compile range (1, 2048) from the cache, took 0.7 s"
    miss = "INFO [backends.py:310] Compiling a graph for compile range (1, 2048) takes 20.6 s"
    assert read_paste(hit).extra["compile_cache_warm"] is True
    assert read_paste(miss).extra["compile_cache_warm"] is False
    assert read_paste(hit + "\n" + miss).extra["compile_cache_warm"] is False
    assert "compile_cache_warm" not in read_paste("Model loading took 15.27 GiB").extra
    # AOT compilation (0.20+ decorators.py): the whole compiled function loaded from disk is a hit with
    # no per-graph line; a failed load compiles again
    aot = ("INFO 10-01 22:41:21 [decorators.py:313] Directly load AOT compilation from path "
           "/root/.cache/vllm/torch_compile_cache/torch_aot_compile/9892/rank_0_0/model")
    again = ("WARNING [decorators.py:320] Compiling model again due to a load failure from "
             "/root/.cache/vllm/torch_compile_cache/torch_aot_compile/9892/rank_0_0/model, reason: "
             "Compile cache file corrupted.")
    assert read_paste(aot).extra["compile_cache_warm"] is True
    assert read_paste(again).extra["compile_cache_warm"] is False
    assert read_paste(aot + "\n" + miss).extra["compile_cache_warm"] is False
    # ... and `explain` carries it into the settings it models
    from estimator import diagnose

    cmd = "VLLM_USE_V2_MODEL_RUNNER=1 vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192\n"
    notes = diagnose(cmd + hit, gpu="H100", vllm_version="0.28.0", offline=True, explain=True).assumptions
    cold = diagnose(cmd + miss, gpu="H100", vllm_version="0.28.0", offline=True, explain=True).assumptions
    assert not any("first compile" in a for a in notes) and any("first compile" in a for a in cold)


def test_enforce_eager_means_no_graph_memory(llama8b):
    e = _graphs(llama8b, "0.33.0", enforce_eager=True)
    assert e.cuda_graph_bytes == 0
    assert e.kv_cache_bytes == 32 * GiB - (16 * GiB + GiB + 512 * MiB)


# ---------------------------------------------------------------------------------------------
# Other processes / CUDA context charged only in 0.6.4 (V0) and V1 0.7–0.9.0 (§1.3, §1.5)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "engine", "charged"),
    [("0.6.3", None, False), ("0.6.4", None, True), ("0.6.5", None, False), ("0.10.1", "v0", False),
     ("0.8.5", None, True), ("0.9.0", None, True), ("0.9.1", None, False), ("0.27.0", None, False)],
)
def test_other_process_memory_charged_per_era(llama8b, version, engine, charged):
    def kv(other):
        s = EngineSettings(vllm_version=version, engine=engine, gpu_memory_utilization=0.5,
                           max_model_len=8192)
        return estimate(llama8b, gpu_total_bytes=64 * GiB, settings=s, weights_bytes=16 * GiB,
                        activation_bytes=GiB, cuda_graph_bytes=0, other_process_bytes=other).kv_cache_bytes

    # 1 GiB used by another process: KV drops by exactly 1 GiB where non_torch = total − free − allocated
    assert kv(0) - kv(GiB) == (GiB if charged else 0)


# ---------------------------------------------------------------------------------------------
# --kv-cache-memory-bytes: KV pool = that, utilization ignored (§1.9)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("u", [0.5, 0.9])
def test_kv_cache_memory_bytes_sets_pool(llama8b, u):
    e = run_pool(llama8b, "0.33.0", 8 * GiB, gpu_memory_utilization=u, max_model_len=8192)
    assert e.kv_cache_bytes == 8 * GiB
    # 8 GiB // 2 MiB = 4,096 blocks; L = 8192 needs 512 → concurrency 8, N = int(8 × 8192)
    assert e.gpu_blocks == 4_096
    assert e.max_concurrency == 4096 / 512
    assert e.kv_cache_tokens == int(4096 / 512 * 8192) == 65_536


# ---------------------------------------------------------------------------------------------
# V0 chunked prefill switch above 32K through the estimate (§5)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "L", "tb"),
    [
        ("0.7.3", 32768, 32768),   # L ≤ 32768 → off → Tb = max(L, 2048)
        ("0.7.3", 32769, 2048),    # L > 32768 → on → 2048 (0.6.5+)
        ("0.6.4", 32769, 512),     # 512 in 0.5.3–0.6.4
        ("0.5.3", 32769, 512),
        ("0.7.3", 1000, 2048),     # off → max(1000, 2048)
    ],
)
def test_v0_tb_from_chunked_switch(llama8b, version, L, tb):
    e = run(llama8b, version, engine="v0", max_model_len=L)
    assert e.settings.max_num_batched_tokens == tb
    assert e.settings.max_num_seqs == 256


# ---------------------------------------------------------------------------------------------
# V0 capacity and the V0 length check (§2.2)
# ---------------------------------------------------------------------------------------------


def test_v0_capacity_and_error_kind(llama8b):
    # KV 14.5 GiB → 7,424 blocks → capacity 16 × 7,424 = 118,784 < 131,072 (derived L)
    e = run(llama8b, "0.7.3", gpu_memory_utilization=0.5)
    assert e.max_model_len == 131_072
    assert e.kv_cache_tokens == 16 * 7_424 == 118_784
    assert e.fits is False and e.error_kind == "kv_capacity_v0"
    assert e.max_concurrency == pytest.approx(118_784 / 131_072)
    ok = run(llama8b, "0.7.3", gpu_memory_utilization=0.5, max_model_len=118_784)
    assert ok.fits is True and ok.error_kind is None   # L ≤ capacity passes


def test_v0_capacity_divided_by_pp_from_080(llama8b):
    # PP=2: 16 layers per stage → 16 × 8 × 128 × 2 × 2 = 65,536 B/token → 1 MiB blocks
    # KV 14.5 GiB → 14,848 blocks; 0.7.3: 16 × 14,848; 0.8.0 V0: 16 × (14,848 // 2)
    e7 = run(llama8b, "0.7.3", engine="v0", pipeline_parallel_size=2, gpu_memory_utilization=0.5,
             max_model_len=8192)
    e8 = run(llama8b, "0.8.0", engine="v0", pipeline_parallel_size=2, gpu_memory_utilization=0.5,
             max_model_len=8192)
    assert e7.layout.bytes_per_block == e8.layout.bytes_per_block == MiB
    assert e7.gpu_blocks == e8.gpu_blocks == 14_848
    assert e7.kv_cache_tokens == 16 * 14_848
    assert e8.kv_cache_tokens == 16 * (14_848 // 2)
    # the concurrency line is not divided: 14,848 × 16 / 8,192 = 29.0× (executor_base.py)
    assert e8.max_concurrency == pytest.approx(29.0)


@pytest.mark.parametrize(("version", "engine"), [("0.7.3", None), ("0.9.1", None), ("0.33.0", None)])
def test_no_cache_blocks(llama8b, version, engine):
    # KV = 32 GiB − (32 GiB − 1 MiB) = 1 MiB < one 2 MiB block → 0 blocks
    e = run(llama8b, version, engine=engine, gpu_memory_utilization=0.5, W=32 * GiB - MiB, P=0, N=0,
            max_model_len=4096)
    assert e.gpu_blocks == 0
    assert e.error_kind == "no_cache_blocks" and e.fits is False
    # negative KV (weights over the budget) is clamped to 0 blocks too
    neg = run(llama8b, version, engine=engine, gpu_memory_utilization=0.5, W=40 * GiB, max_model_len=4096)
    assert neg.gpu_blocks == 0 and neg.error_kind == "no_cache_blocks"


# ---------------------------------------------------------------------------------------------
# V1 reported capacity per era (§2.6)
# ---------------------------------------------------------------------------------------------


def test_v1_capacity_single_group_per_era(llama8b):
    pool = 1000 * LLAMA_BPB  # 1,000 blocks
    # L = 1000 (not a multiple of 16): a request needs cdiv(1000, 16) = 63 blocks
    e20 = run_pool(llama8b, "0.20.0", pool, max_model_len=1000)
    e21 = run_pool(llama8b, "0.21.0", pool, max_model_len=1000)
    assert e20.gpu_blocks == e21.gpu_blocks == 1000
    # 0.9.1–0.20: (n // groups) × bs = 1000 × 16
    assert e20.kv_cache_tokens == (1000 // 1) * 16 == 16_000
    # 0.21+: int(c × L) with c = n / blocks_per_request = 1000 / 63
    assert e21.kv_cache_tokens == int(1000 / 63 * 1000) == 15_873
    assert e21.max_concurrency == pytest.approx(1000 / 63)


def test_v1_080_capacity_is_blocks_times_bs(llama8b):
    # 0.8.x: N = n × bs; KV 14.5 GiB → 7,424 blocks → 118,784 tokens, c = N / L
    e = run(llama8b, "0.8.5", gpu_memory_utilization=0.5, max_model_len=1000)
    assert e.kv_cache_tokens == 7_424 * 16
    assert e.max_concurrency == pytest.approx(7_424 * 16 / 1000)


# ---------------------------------------------------------------------------------------------
# The 0.29 reserved block and the estimated maximum model length (§2.4, §2.5)
# ---------------------------------------------------------------------------------------------


def test_estimated_max_len_single_group_and_reserved_block(llama8b):
    pool = 1000 * LLAMA_BPB + 12_345  # 1,000 whole blocks + change
    e28 = run_pool(llama8b, "0.28.0", pool)
    e29 = run_pool(llama8b, "0.29.0", pool)
    # L = 131,072 needs 8,192 blocks → does not fit in either
    assert e28.error_kind == e29.error_kind == "kv_capacity_v1"
    assert e28.kv_needed_bytes == cdiv(131_072, 16) * LLAMA_BPB
    # W = bs × floor(avail / bytes_per_block) = 16 × 1000; 0.29+: bs × (floor(...) − 1) = 16 × 999
    assert e28.max_model_len_fit == 16 * 1000 == 16_000
    assert e29.max_model_len_fit == 16 * (1000 - 1) == 15_984


def test_reserved_block_changes_the_admission_check(llama8b):
    pool = 1000 * LLAMA_BPB
    # L = 16,000 needs exactly cdiv(16000, 16) = 1,000 blocks = the whole pool
    assert run_pool(llama8b, "0.28.0", pool, max_model_len=16_000).fits is True
    e = run_pool(llama8b, "0.29.0", pool, max_model_len=16_000)  # check uses pool − 1 block
    assert e.fits is False and e.error_kind == "kv_capacity_v1"


# ---------------------------------------------------------------------------------------------
# --max-model-len auto (0.14+): reduce to the largest L that fits (§3 step 8)
# ---------------------------------------------------------------------------------------------


def test_auto_reduces_to_largest_fitting_length(llama8b):
    pool = 1000 * LLAMA_BPB + 12_345
    e14 = run_pool(llama8b, "0.14.0", pool, max_model_len="auto")
    assert e14.max_model_len == 16 * 1000 and e14.fits is True and e14.error_kind is None
    e33 = run_pool(llama8b, "0.33.0", pool, max_model_len="auto")
    assert e33.max_model_len == 16 * 999 and e33.fits is True
    # before 0.14 the value is not accepted: the config's length is modelled, and the reply says so
    e13 = run_pool(llama8b, "0.13.0", pool, max_model_len="auto")
    assert e13.max_model_len == 131_072 and not e13.fits
    assert any("came with vLLM 0.14" in a for a in e13.assumptions)


def test_auto_keeps_derived_length_when_it_fits(llama8b):
    # 10,000 blocks ≥ 8,192 needed at the derived 131,072 (llama3 rope: no scaling)
    e = run_pool(llama8b, "0.33.0", 10_000 * LLAMA_BPB, max_model_len="auto")
    assert e.max_model_len == 131_072 and e.fits is True


# ---------------------------------------------------------------------------------------------
# max_model_len derivation (§3)
# ---------------------------------------------------------------------------------------------


def _llama_cfg(**extra):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
            "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000,
            "torch_dtype": "bfloat16", **extra}


def _mml(spec, version, user=None):
    return resolve_max_model_len(spec, EngineSettings(vllm_version=version, max_model_len=user),
                                 profile_for(version), [])


def test_max_len_llama3_rope_not_scaled(llama8b):
    # rope_type llama3 factor 8: no scaling → max_position_embeddings 131,072
    assert _mml(llama8b, "0.33.0") == 131_072


def test_max_len_seed_model(seed_spec):
    assert _mml(seed_spec, "0.7.3") == 1_010_000


@pytest.mark.parametrize("version", ["0.7.3", "0.29.0", "0.33.0"])
def test_max_len_linear_factor_multiplies(version):
    spec = spec_from_config(_llama_cfg(max_position_embeddings=4096,
                                       rope_scaling={"type": "linear", "factor": 4.0}), "synthetic/linear")
    assert _mml(spec, version) == 4096 * 4


def test_max_len_dynamic_factor_multiplies():
    spec = spec_from_config(_llama_cfg(max_position_embeddings=4096,
                                       rope_scaling={"rope_type": "dynamic", "factor": 2.0}), "synthetic/dyn")
    assert _mml(spec, "0.20.0") == 4096 * 2


def test_max_len_yarn_scaled_up_to_029_not_from_030():
    hit = catalog.lookup("Qwen/Qwen2.5-7B-Instruct")
    cfg = dict(hit[1], rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    spec = spec_from_config(cfg, "synthetic/qwen25-yarn")
    # ≤0.29: original 32,768 × 4 = 131,072; 0.30+: YaRN not scaled → max_position_embeddings 32,768
    assert _mml(spec, "0.29.0") == 32768 * 4 == 131_072
    assert _mml(spec, "0.30.0") == 32_768


def test_max_len_deepseek_v3_yarn_consistent_both_sides_of_030():
    spec = load("deepseek-ai/DeepSeek-V3")
    # yarn factor 40 × original 4,096 = 163,840 (≤0.29) = max_position_embeddings (0.30+)
    assert _mml(spec, "0.29.0") == 4096 * 40 == 163_840
    assert _mml(spec, "0.30.0") == 163_840


def test_max_len_gemma3_rope_factor_skipped():
    # gemma-3 text_config has rope_scaling linear factor 8 but vLLM skips Gemma-3 (0.8.0+)
    assert _mml(load("google/gemma-3-4b-it"), "0.33.0") == 131_072


def test_max_len_model_max_length_overrides_from_083():
    spec = spec_from_config(_llama_cfg(max_position_embeddings=8192, model_max_length=131072), "synthetic/mml")
    assert _mml(spec, "0.8.2") == 8192        # smallest key
    assert _mml(spec, "0.8.3") == 131_072     # 0.8.3+: model_max_length overrides the minimum


def test_max_len_longrope_defaults_to_original_from_0112():
    spec = spec_from_config(_llama_cfg(
        max_position_embeddings=131072, original_max_position_embeddings=4096,
        rope_scaling={"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}), "synthetic/longrope")
    assert _mml(spec, "0.11.0") == 131_072    # longrope: no scaling
    assert _mml(spec, "0.11.2") == 4_096      # 0.11.2+: default = original_max_position_embeddings
    # early Phi-3-128k configs spell it "su"; vLLM renames that to longrope (patch_rope_scaling_dict)
    su = spec_from_config(_llama_cfg(
        max_position_embeddings=131072, original_max_position_embeddings=4096,
        rope_scaling={"type": "su", "long_factor": [1.0], "short_factor": [1.0]}), "synthetic/su")
    assert _mml(su, "0.11.0") == 131_072
    assert _mml(su, "0.11.2") == 4_096


def test_max_len_no_key_defaults_to_2048_and_user_value_wins(llama8b):
    assert _mml(spec_from_config(_llama_cfg(), "synthetic/nokey"), "0.33.0") == 2048
    assert _mml(llama8b, "0.33.0", user=4096) == 4096


# ---------------------------------------------------------------------------------------------
# KV layout: TP, fp8, PP stage (§2.1)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tp", "per_token"), [(8, 80 * 1 * 128 * 2 * 2), (16, 80 * 1 * 128 * 2 * 2)])
def test_layout_llama70b_tp_replication(tp, per_token):
    e = run_pool(load("meta-llama/Llama-3.1-70B"), "0.33.0", 8 * GiB, tensor_parallel_size=tp,
                 max_model_len=8192)
    # TP8: 8 KV heads / 8 = 1 per rank; TP16: max(1, 8 // 16) = 1 (replicated) → 40 KiB either way
    assert e.layout.kv_bytes_per_token == per_token == 40 * KiB
    assert e.layout.bytes_per_block == 16 * 40 * KiB


def test_layout_qwen25_7b_tp4():
    e = run_pool(load("Qwen/Qwen2.5-7B-Instruct"), "0.33.0", 8 * GiB, tensor_parallel_size=4,
                 max_model_len=8192)
    assert e.layout.kv_bytes_per_token == 28 * 1 * 128 * 2 * 2 == 14 * KiB


def test_layout_mla_not_split_by_tp():
    e = run_pool(load("deepseek-ai/DeepSeek-V3"), "0.33.0", 8 * GiB, tensor_parallel_size=8,
                 max_model_len=8192)
    assert e.layout.kv_bytes_per_token == 61 * 576 * 2 == 70_272


def test_layout_fp8_kv_halves(llama8b):
    e = run_pool(llama8b, "0.33.0", 8 * GiB, kv_cache_dtype="fp8", max_model_len=8192)
    # 32 × 8 × 128 × 2 × 1 B = 65,536 B/token → 1 MiB blocks → 8 GiB / 1 MiB = 8,192 blocks
    assert e.layout.kv_bytes_per_token == 65_536
    assert e.layout.bytes_per_block == MiB
    assert e.gpu_blocks == 8_192


@pytest.mark.parametrize(("version", "engine", "latent"), [("0.7.3", None, 640), ("0.8.0", "v0", 576),
                                                          ("0.33.0", None, 576)])
def test_pp_61_layers_largest_stage_16(version, engine, latent):
    # 61 layers, pp=4: 15,15,15,16 (≤0.7.3) or 15,15,16,15 (0.8+): largest stage 16 MLA layers, each
    # 512 + 64 latent values (0.7.3's V0 cache engine pads them to 640: 256-byte alignment)
    e = run(load("deepseek-ai/DeepSeek-V3"), version, engine=engine, pipeline_parallel_size=4,
            gpu_memory_utilization=0.5, max_model_len=8192)
    assert e.layout.kv_bytes_per_token == 16 * latent * 2


@pytest.mark.parametrize(("version", "layers"), [("0.7.3", 4), ("0.8.0", 3)])
def test_pp_remainder_placement(version, layers):
    # 10 layers, pp=4: ≤0.7.3 → 2,2,2,4 (remainder to the last stage); 0.8.0+ → 2,3,3,2
    spec = spec_from_config(_llama_cfg(num_hidden_layers=10, hidden_size=4096, num_attention_heads=32,
                                       max_position_embeddings=8192), "synthetic/10-layers")
    e = run(spec, version, engine="v0", pipeline_parallel_size=4, gpu_memory_utilization=0.5)
    assert e.layout.kv_bytes_per_token == layers * 2 * 8 * 128 * 2


@pytest.mark.parametrize(("version", "attn_layers"), [("0.7.3", 2), ("0.8.0", 1)])
def test_pp_61_layer_boundaries(version, attn_layers):
    # Jamba-style 61 layers, attention only at layers 45 and 46, pp=4.
    # ≤0.7.3 stages [0,15) [15,30) [30,45) [45,61): 45 and 46 share the last stage → 2 layers
    # 0.8.0+ 15,15,16,15: [30,46) holds 45, [46,61) holds 46 → the largest stage has 1 layer
    types = ["attention" if i in (45, 46) else "mamba" for i in range(61)]
    spec = spec_from_config(_llama_cfg(num_hidden_layers=61, layers_block_type=types, model_type="jamba",
                                       architectures=["JambaForCausalLM"], max_position_embeddings=8192),
                            "synthetic/jamba-61")
    e = run(spec, version, engine="v0", pipeline_parallel_size=4, gpu_memory_utilization=0.5)
    # head_dim 1024 / 8 = 128, 8 KV heads
    assert e.layout.kv_bytes_per_token == attn_layers * 2 * 8 * 128 * 2


# ---------------------------------------------------------------------------------------------
# V1 grouping and pages (§2.4, §2.4c)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt_oss():
    return load("openai/gpt-oss-20b")


GPT_OSS_PAGE = 16 * 2 * 8 * 64 * 2     # 32 KiB per layer per block
GPT_OSS_BPB = 12 * GPT_OSS_PAGE        # group_size 12 → 384 KiB


def test_gpt_oss_groups_pages_and_blocks_per_request(gpt_oss):
    e = run_pool(gpt_oss, "0.21.0", 10_000 * GPT_OSS_BPB, max_num_batched_tokens=8192)
    assert GPT_OSS_PAGE == 32 * KiB and GPT_OSS_BPB == 384 * KiB
    assert e.max_model_len == 131_072          # yarn 4096 × 32 (≤0.29)
    assert e.layout.num_groups == 2
    assert e.layout.bytes_per_block == 384 * KiB
    assert e.gpu_blocks == 10_000
    # per request at L = 131,072, Tb = 8,192: full cdiv(131072,16) = 8,192;
    # sliding cdiv(min(128 − 1 + 8192, L), 16) + 1 = 520 + 1 = 521 → 8,713 blocks
    need = cdiv(131_072, 16) + cdiv(min(128 - 1 + 8192, 131_072), 16) + 1
    assert need == 8192 + 521 == 8_713
    assert e.kv_needed_bytes == need * 384 * KiB == 3_426_091_008
    # 0.21+: N = int(n / 8713 × 131072)
    assert e.kv_cache_tokens == int(10_000 / 8_713 * 131_072)
    assert e.max_concurrency == pytest.approx(10_000 / 8_713)


def test_gpt_oss_capacity_091_to_020_divides_by_groups(gpt_oss):
    e = run_pool(gpt_oss, "0.20.0", 10_000 * GPT_OSS_BPB, max_num_batched_tokens=8192)
    # (n // groups) × bs = (10,000 // 2) × 16
    assert e.kv_cache_tokens == (10_000 // 2) * 16 == 80_000


def test_gpt_oss_estimated_max_len_with_sliding_group(gpt_oss):
    # 5,000 blocks < 8,713: largest L with cdiv(L,16) + 521 ≤ 5,000 → cdiv(L,16) ≤ 4,479 → L = 71,664
    e = run_pool(gpt_oss, "0.21.0", 5_000 * GPT_OSS_BPB, max_num_batched_tokens=8192)
    assert e.error_kind == "kv_capacity_v1"
    assert e.max_model_len_fit == 4_479 * 16 == 71_664
    # 0.29+: one block reserved; from 0.26 the sliding group holds the two batches in flight (async
    # scheduling): cdiv(127 + 2 × 8,192, 16) + 1 = 1,033 → cdiv(L,16) ≤ 4,999 − 1,033 = 3,966 → 63,456
    e29 = run_pool(gpt_oss, "0.29.0", 5_000 * GPT_OSS_BPB, max_num_batched_tokens=8192)
    assert e29.max_model_len_fit == 3_966 * 16 == 63_456
    # without async scheduling one batch: cdiv(L,16) ≤ 4,999 − 521 = 4,478 → 71,648
    e29s = run_pool(gpt_oss, "0.29.0", 5_000 * GPT_OSS_BPB, max_num_batched_tokens=8192, async_scheduling=False)
    assert e29s.max_model_len_fit == 4_478 * 16 == 71_648


@pytest.fixture(scope="module")
def gemma2():
    return load("google/gemma-2-9b-it")


GEMMA2_PAGE = 16 * 2 * 8 * 256 * 2     # 128 KiB per layer per block


def test_gemma2_v0_single_pool(gemma2):
    e = run(gemma2, "0.7.3", gpu_memory_utilization=0.5, max_model_len=8192)
    # V0: every attention layer at full length: 16 × 42 × 8,192 B
    assert e.layout.bytes_per_block == 16 * 42 * 2 * 8 * 256 * 2 == 5_505_024


def test_gemma2_v1_085_one_group_unified(gemma2):
    e = run(gemma2, "0.8.5", gpu_memory_utilization=0.5, max_model_len=8192, max_num_batched_tokens=2048)
    # 0.7–0.9.0: one group; available // page // num_layers → bytes per block = 42 pages
    assert e.layout.bytes_per_block == 42 * GEMMA2_PAGE
    # KV 14.5 GiB // 5,505,024 B
    assert e.gpu_blocks == int(14.5 * GiB) // (42 * GEMMA2_PAGE)


def test_gemma2_v1_091_two_groups(gemma2):
    e = run(gemma2, "0.9.1", gpu_memory_utilization=0.5, max_model_len=8192, max_num_batched_tokens=2048)
    # 21 sliding + 21 full, equal pages → group_size 21, 2 groups, block = 21 × 128 KiB
    assert e.layout.num_groups == 2
    assert e.layout.bytes_per_block == 21 * GEMMA2_PAGE == 2_752_512
    # per request at L = 8192, Tb = 2048: full 512 + sliding cdiv(min(4095 + 2048, 8192), 16) + 1 = 385
    need = cdiv(8192, 16) + cdiv(min(4096 - 1 + 2048, 8192), 16) + 1
    assert need == 512 + 385
    assert e.kv_needed_bytes == need * 21 * GEMMA2_PAGE == 2_469_003_264
    assert e.kv_cache_tokens == (e.gpu_blocks // 2) * 16


def test_gemma2_v1_085_check_uses_sliding_need_before_unification(gemma2):
    e = run(gemma2, "0.8.5", gpu_memory_utilization=0.5, max_model_len=8192, max_num_batched_tokens=2048)
    full = 21 * cdiv(8192, 16) * GEMMA2_PAGE
    sliding = 21 * (cdiv(min(4096 - 1 + 2048, 8192), 16) + 1) * GEMMA2_PAGE
    assert e.kv_needed_bytes == full + sliding == 2_469_003_264


@pytest.fixture(scope="module")
def gemma3():
    return load("google/gemma-3-4b-it")


GEMMA3_PAGE = 16 * 2 * 4 * 256 * 2     # 64 KiB per layer per block


def test_gemma3_groups_with_padding_019(gemma3):
    e = run_pool(gemma3, "0.19.0", 8 * GiB, max_num_batched_tokens=2048)
    # 5 full + 29 sliding → group_size 5; sliding split into cdiv(29, 5) = 6 groups (1 padding layer)
    assert e.layout.num_groups == 1 + 6
    assert e.layout.bytes_per_block == 5 * GEMMA3_PAGE == 327_680
    assert e.max_model_len == 131_072
    # per request at L = 131,072, Tb = 2,048: full 8,192; each sliding group
    # cdiv(min(1024 − 1 + 2048, L), 16) + 1 = 192 + 1 = 193 → 8,192 + 6 × 193 = 9,350
    need = cdiv(131_072, 16) + 6 * (cdiv(min(1024 - 1 + 2048, 131_072), 16) + 1)
    assert need == 9_350
    assert e.kv_needed_bytes == need * 5 * GEMMA3_PAGE == 3_063_808_000
    assert e.gpu_blocks == 8 * GiB // (5 * GEMMA3_PAGE)


def test_gemma3_013_needed_is_sum_over_layers(gemma3):
    e = run_pool(gemma3, "0.13.0", 8 * GiB, max_num_batched_tokens=2048)
    need = 5 * cdiv(131_072, 16) * GEMMA3_PAGE + 29 * (cdiv(1024 - 1 + 2048, 16) + 1) * GEMMA3_PAGE
    assert e.kv_needed_bytes == need == 3_051_159_552


def test_gpt_oss_014_to_018_check_counts_first_group_only(gpt_oss):
    e = run_pool(gpt_oss, "0.15.0", 10_000 * GPT_OSS_BPB, max_num_batched_tokens=8192)
    assert e.kv_needed_bytes in {521 * GPT_OSS_BPB, 8_192 * GPT_OSS_BPB}


# ---------------------------------------------------------------------------------------------
# Chunked local attention (Llama 4) and the 0.10.1–0.13 hybrid-manager switch-off (§2.4-5)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scout():
    return load("meta-llama/Llama-4-Scout-17B-16E-Instruct")


SCOUT_PAGE = 16 * 2 * 8 * 128 * 2      # 64 KiB per layer per block


@pytest.mark.parametrize("version", ["0.10.0", "0.19.0"])
def test_scout_chunked_groups(scout, version):
    e = run_pool(scout, version, 16 * GiB, max_model_len=131_072, max_num_batched_tokens=8192)
    # 36 chunked + 12 full → group_size 12: 3 chunked groups + 1 full = 4; block = 12 pages
    assert e.layout.num_groups == 4
    assert e.layout.bytes_per_block == 12 * SCOUT_PAGE == 768 * KiB
    # per request at L = 131,072: full 8,192; chunked cdiv(min(8192 + 8192, L), 16) = 1,024 each
    need = cdiv(131_072, 16) + 3 * cdiv(min(8192 + 8192, 131_072), 16)
    assert need == 8_192 + 3 * 1_024 == 11_264
    assert e.kv_needed_bytes == need * 12 * SCOUT_PAGE == 8_858_370_048


def test_scout_hybrid_manager_off_0101_to_013(scout):
    e = run_pool(scout, "0.12.0", 16 * GiB, max_model_len=131_072, max_num_batched_tokens=8192)
    # chunked layers converted to full: one group of 48 layers, block = 48 × 64 KiB = 3 MiB
    assert e.layout.num_groups == 1
    assert e.layout.bytes_per_block == 48 * SCOUT_PAGE == 3 * MiB
    # ... but the admission check ran before that, on the per-layer ChunkedLocalAttentionSpec
    # (kv_cache_utils.py get_kv_cache_configs: check_enough_kv_cache_memory, then get_kv_cache_groups)
    assert e.kv_needed_bytes == (12 * cdiv(131_072, 16) + 36 * cdiv(8192 + 8192, 16)) * SCOUT_PAGE


# ---------------------------------------------------------------------------------------------
# Mamba hybrid (Qwen3-Next): attention block size raised to fit the state page (§2.4-4, §2.4b)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qwen3_next():
    return load("Qwen/Qwen3-Next-80B-A3B-Thinking")


GDN_STATE_TP1 = ((4 - 1) * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 2   # 1,097,728 B


def test_qwen3_next_layout_tp1(qwen3_next):
    e = run_pool(qwen3_next, "0.10.2", 16 * GiB, max_model_len=262_144, max_num_batched_tokens=8192)
    # attention page per token per layer: 2 × 2 KV heads × 256 × 2 B = 2,048 B
    # block size = 16 × cdiv(1,097,728, 16 × 2,048) = 16 × 34 = 544
    bs = 16 * cdiv(GDN_STATE_TP1, 16 * 2048)
    assert bs == 544 and e.layout.block_size == 544
    page = 544 * 2048
    assert page == 1_114_112 >= GDN_STATE_TP1   # Mamba page padded up to the attention page
    # 12 full + 36 GDN → group_size 12: 1 attention group + 3 Mamba groups; block = 12 pages
    assert e.layout.num_groups == 4
    assert e.layout.bytes_per_block == 12 * page == 13_369_344
    assert e.layout.state_bytes_per_request == 36 * GDN_STATE_TP1
    # per request at L = 262,144: cdiv(262144, 544) = 482 attention blocks + 1 per Mamba group
    need = cdiv(262_144, 544) + 3
    assert need == 485
    assert e.kv_needed_bytes == need * 12 * page == 6_484_131_840
    assert e.gpu_blocks == 16 * GiB // (12 * page)
    # 0.9.1–0.20: (n // groups) × block size
    assert e.kv_cache_tokens == (e.gpu_blocks // 4) * 544


def test_qwen3_next_layout_tp4(qwen3_next):
    e = run_pool(qwen3_next, "0.10.2", 16 * GiB, tensor_parallel_size=4, max_model_len=262_144,
                 max_num_batched_tokens=8192)
    # TP4: attention max(1, 2 // 4) = 1 head → 1 × 2 × 256 × 2 = 1,024 B per token per layer;
    # GDN state (3 × 8,192/4 + 8 × 128 × 128) × 2 = 274,432 B → block = 16 × cdiv(274432, 16384) = 272
    state = (3 * (2 * 16 * 128 + 32 * 128) // 4 + 8 * 128 * 128) * 2
    assert state == 274_432
    assert e.layout.block_size == 16 * cdiv(state, 16 * 1024) == 272
    assert e.layout.bytes_per_block == 12 * 272 * 1024


def test_kimi_linear_kda_mla_hybrid_layout():
    """Kimi-Linear-48B (kimi_linear): 20 KDA layers and 7 MLA layers (linear_attn_config, 1-based).
    vllm#28228 (TP 2, 0.11): "Add 1 padding layers", 2.30 GiB → "GPU KV cache size: 75,840 tokens"."""
    spec = load("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    kda = [lk for lk in spec.layers if isinstance(lk, MambaState)]
    assert len(kda) == 20 and len(spec.layers) - len(kda) == 7
    # kda_state_shape at TP 2: q/k/v convs (4 − 1) × 32·128/2 each in bf16, recurrent 16 × 128 × 128 fp32
    state = 3 * 3 * (32 * 128 // 2) * 2 + (32 // 2) * 128 * 128 * 4
    assert kda[0].state_bytes(2, 2) == state == 1_085_440
    pool = 2469606195                                          # 2.30 GiB as printed (2.30 × 2^30)
    e = run_pool(spec, "0.11.0", pool, tensor_parallel_size=2, max_model_len=120_000, enable_prefix_caching=False)
    # MLA page per token per layer: (512 + 64) × 2 B; the block is aligned to 64 for MLA backends
    bs = 64 * cdiv(state, 64 * 1152)
    assert bs == 960 and e.layout.block_size == 960
    # 7 MLA + 20 KDA → groups of 7: 1 attention + 3 KDA groups (21 slots: 1 padding layer)
    assert e.layout.num_groups == 4 and e.layout.bytes_per_block == 7 * 960 * 1152
    assert e.gpu_blocks == pool // (7 * 960 * 1152) == 319
    assert e.kv_cache_tokens == (319 // 4) * 960 == 75_840      # what vLLM printed


# ---------------------------------------------------------------------------------------------
# The worked example (§7): Qwen2.5-14B-Instruct-1M on one RTX A6000
# ---------------------------------------------------------------------------------------------

A6000_T = int(47.54 * GiB)                     # torch total, 47.54 GiB
SEED_W = int(27.75 * GiB)                      # 27.511 GiB of bf16 params + 0.241 GiB RoPE cache
SEED_P = int(1.45 * GiB)                       # sampler 256 × 152,064 × ~40 B
SEED_N = int(0.073 * GiB)                      # single-GPU non-torch
SEED_BLOCK = 16 * 48 * 2 * 8 * 128 * 2         # 3 MiB


def _seed(spec, version, **settings):
    s = EngineSettings(vllm_version=version, **settings)
    return estimate(spec, gpu_total_bytes=A6000_T, settings=s, gpu_name="NVIDIA RTX A6000",
                    compute_capability="8.6", weights_bytes=SEED_W, activation_bytes=SEED_P,
                    non_torch_bytes=SEED_N, cuda_graph_bytes=0)


def test_seed_worked_example_v0(seed_spec):
    e = _seed(seed_spec, "0.7.3")
    assert e.profile.engine == "v0"
    assert SEED_BLOCK == 3 * MiB == e.layout.bytes_per_block
    # L = 1,010,000 > 32K → chunked prefill on → Tb 2048, S 256
    assert e.max_model_len == 1_010_000
    assert e.settings.max_num_batched_tokens == 2048 and e.settings.max_num_seqs == 256
    # budget = 47.54 GiB × 0.90 = 42.786 GiB
    assert e.budget_bytes == int(A6000_T * 0.90)
    assert e.budget_bytes / GiB == pytest.approx(42.786, abs=1e-3)
    # non-KV = 27.75 + 1.45 + 0.073 = 29.273 GiB → KV ≈ 13.513 GiB ∈ [4612, 4613) × 3 MiB
    kv = e.budget_bytes - (SEED_W + SEED_P + SEED_N)
    assert e.kv_cache_bytes == kv
    assert 4_612 * 3 * MiB <= kv < 4_613 * 3 * MiB
    assert e.gpu_blocks == 4_612
    # V0 capacity 16 × 4,612 = 73,792; 1,010,000 > 73,792 → the V0 length error
    assert e.kv_cache_tokens == 16 * 4_612 == 73_792
    assert e.error_kind == "kv_capacity_v0" and e.fits is False
    assert round(e.max_concurrency, 2) == 0.07   # 73,792 / 1,010,000 = 0.073


def test_seed_v0_passes_at_capacity(seed_spec):
    assert _seed(seed_spec, "0.7.3", max_model_len=73_792).fits is True
    assert _seed(seed_spec, "0.7.3", max_model_len=73_793).error_kind == "kv_capacity_v0"


def test_seed_same_memory_on_v1(seed_spec):
    e = _seed(seed_spec, "0.10.1", gpu_memory_utilization=0.90)
    # needed = cdiv(1,010,000, 16) × 65,536 B × 48 = 198,574,080,000 B = 184.94 GiB
    assert e.kv_needed_bytes == cdiv(1_010_000, 16) * 65_536 * 48 == 198_574_080_000
    assert round(e.kv_needed_bytes / GiB, 2) == 184.94
    assert e.gpu_blocks == 4_612
    assert e.error_kind == "kv_capacity_v1"
    # estimated maximum model length = 16 × floor(avail / 3 MiB) = 73,792
    assert e.max_model_len_fit == 73_792
    # 0.9.1–0.20: N = (n // 1) × 16
    assert e.kv_cache_tokens == 73_792


def test_seed_v1_029_reserves_one_block(seed_spec):
    e = _seed(seed_spec, "0.29.0", gpu_memory_utilization=0.90)
    # ceil from 0.14: budget one byte above int(); still 4,612 blocks
    assert e.budget_bytes == math.ceil(A6000_T * 0.90)
    assert e.gpu_blocks == 4_612
    # 0.29+: 16 × (4,612 − 1) = 73,776
    assert e.max_model_len_fit == 16 * 4_611 == 73_776
    # 0.21+: N = int(4612 / 63125 × 1,010,000)
    assert e.kv_cache_tokens == int(4_612 / cdiv(1_010_000, 16) * 1_010_000)


def test_seed_rerun_higher_utilization(seed_spec):
    e = rerun(_seed(seed_spec, "0.7.3"), gpu_memory_utilization=0.95)
    # u = 0.95 adds 0.05 × 47.54 GiB ≈ 811 blocks: KV = int(T × 0.95) − 29.273 GiB → 5,423 blocks
    kv = int(A6000_T * 0.95) - (SEED_W + SEED_P + SEED_N)
    assert e.kv_cache_bytes == kv
    assert e.gpu_blocks == kv // (3 * MiB) == 5_423
    assert e.kv_cache_tokens == 16 * 5_423 == 86_768


def test_seed_rerun_fp8_kv(seed_spec):
    e = rerun(_seed(seed_spec, "0.7.3"), kv_cache_dtype="fp8")
    # fp8 halves the block to 1.5 MiB: 13.513 GiB / 1.5 MiB → 9,224 blocks → 147,584 tokens
    assert e.layout.bytes_per_block == 3 * MiB // 2
    assert e.gpu_blocks == 9_224
    assert e.kv_cache_tokens == 16 * 9_224 == 147_584


def test_seed_rerun_short_length_turns_chunked_prefill_off(seed_spec):
    # V0: L = 32,768 → chunked prefill off → Tb = max(L, 2048) = 32,768
    e = rerun(_seed(seed_spec, "0.7.3"), max_model_len=32_768)
    assert e.settings.max_num_batched_tokens == 32_768


# ---------------------------------------------------------------------------------------------
# KV dtype and model dtype (§2.1 dtype_bytes, §5 dtype=auto)
# ---------------------------------------------------------------------------------------------


def test_kv_auto_follows_checkpoint_fp8_from_014():
    spec = load("nvidia/Llama-3.1-70B-Instruct-FP8")   # hf_quant_config: kv_cache_quant_algo FP8
    e13 = run_pool(spec, "0.13.0", 8 * GiB, max_model_len=8192)
    e14 = run_pool(spec, "0.14.0", 8 * GiB, max_model_len=8192)
    # ≤0.13: auto = model dtype → 80 × 8 × 128 × 2 × 2 B; 0.14+: checkpoint fp8 → × 1 B
    assert e13.layout.kv_bytes_per_token == 80 * 8 * 128 * 2 * 2 == 327_680
    assert e14.layout.kv_bytes_per_token == 80 * 8 * 128 * 2 * 1 == 163_840
    # a compressed-tensors kv_cache_scheme is followed from 0.15 (attention/layer.py), not 0.14
    ct = spec_from_config(_llama_cfg(max_position_embeddings=8192, quantization_config={
        "quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float"}}), "synthetic/ct")
    assert run_pool(ct, "0.14.0", 8 * GiB, max_model_len=8192).layout.kv_bytes_per_token == \
        2 * run_pool(ct, "0.15.0", 8 * GiB, max_model_len=8192).layout.kv_bytes_per_token


def test_fp32_config_runs_16_bit_so_kv_is_2_bytes():
    spec = spec_from_config(_llama_cfg(torch_dtype="float32", max_position_embeddings=4096), "synthetic/fp32")
    # dtype auto: fp32 config → fp16 (≤0.9.0) / bf16 (0.9.1+, cc ≥ 8.0): 2 layers × 2 × 8 × 128 × 2 B
    for v in ("0.7.3", "0.9.0", "0.9.1", "0.33.0"):
        assert run(spec, v, gpu_memory_utilization=0.5).layout.kv_bytes_per_token == 2 * 2 * 8 * 128 * 2, v
    # explicit --dtype float32 → KV auto = 4 B
    e = run(spec, "0.33.0", gpu_memory_utilization=0.5, dtype="float32")
    assert e.layout.kv_bytes_per_token == 2 * 2 * 8 * 128 * 4


def test_deepseek_v32_fp8_ds_mla_656_bytes():
    e = run_pool(load("deepseek-ai/DeepSeek-V3.2"), "0.11.0", 8 * GiB, kv_cache_dtype="fp8_ds_mla",
                 max_model_len=8192)
    # 656 B of packed latent per layer, plus the indexer's own key cache: 128 fp8 values + one
    # fp32 scale = 132 B per layer (DeepseekV32IndexerCache, uint8, whatever the KV dtype)
    assert e.layout.kv_bytes_per_token == 61 * 656 + 61 * 132 == 48_068


def test_glm5_index_share_caches_keys_only_in_full_indexer_layers():
    """GLM-5's indexer_types: 21 of 78 layers run an indexer ("full"), the rest reuse its top-k
    ("shared") and keep no key cache. recipes#893's offload counter on 8 ranks (59,763,793,920 B
    for 138,615 tokens ≈ 431,150 B per token) matches 8 × (78 × 656 + 21 × 132) = 431,520 B
    (0.1%), not 8 × 78 × (656 + 132) = 491,712 B."""
    e = run_pool(load("zai-org/GLM-5.3"), "0.28.0", 8 * GiB, kv_cache_dtype="fp8", max_model_len=8192)
    assert e.layout.kv_bytes_per_token == 78 * 656 + 21 * 132 == 53_940
    assert abs(8 * 53_940 - 59_763_793_920 / 138_615) / (59_763_793_920 / 138_615) < 0.002


def test_deepseek_v3_mla_from_071():
    e = run(load("deepseek-ai/DeepSeek-V3"), "0.7.1", gpu_memory_utilization=0.5, max_model_len=8192)
    # V0 0.7.1+: MLA cache, one latent (no V): 61 × 576 × 2 B
    assert e.layout.kv_bytes_per_token == 61 * 576 * 2


def test_deepseek_v3_before_071_has_no_mla_cache():
    e = run(load("deepseek-ai/DeepSeek-V3"), "0.7.0", engine="v0", gpu_memory_utilization=0.5,
            max_model_len=8192)
    assert e.layout.kv_bytes_per_token == 61 * 2 * 128 * (128 + 64) * 2 == 5_996_544


# ---------------------------------------------------------------------------------------------
# Gemma-2's sliding-window cap in 0.5.1–0.6.4 (§3 step 2 says 0.6.3; the 0.6.4 wheel's
# vllm/config.py still caps unconditionally, 0.6.5 only with VLLM_ATTENTION_BACKEND=XFORMERS)
# ---------------------------------------------------------------------------------------------


def test_gemma2_max_len_from_065_is_max_position_embeddings(gemma2):
    assert _mml(gemma2, "0.6.5") == 8192


def test_gemma2_max_len_capped_to_window_051_to_064(gemma2):
    assert _mml(gemma2, "0.6.3") == 4096
    assert _mml(gemma2, "0.6.4") == 4096


# ---------------------------------------------------------------------------------------------
# Defaults filled in by the estimate (§5)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu_name", "total", "usage", "seqs", "tb"),
    [
        ("NVIDIA H100 80GB HBM3", int(79.18 * GiB), "server", 1024, 8192),    # ≥70 GiB, not A100
        ("NVIDIA H100 80GB HBM3", int(79.18 * GiB), "llm", 1024, 16384),
        ("NVIDIA A100-SXM4-80GB", int(79.15 * GiB), "server", 256, 2048),     # A100 excluded
        ("NVIDIA RTX A6000", int(47.54 * GiB), "server", 256, 2048),
    ],
)
def test_estimate_fills_v1_batch_defaults(llama8b, gpu_name, total, usage, seqs, tb):
    s = EngineSettings(vllm_version="0.29.0", usage=usage, max_model_len=8192)
    e = estimate(llama8b, gpu_total_bytes=total, settings=s, gpu_name=gpu_name, weights_bytes=16 * GiB,
                 activation_bytes=GiB, non_torch_bytes=512 * MiB, cuda_graph_bytes=0)
    assert e.settings.max_num_seqs == seqs
    assert e.settings.max_num_batched_tokens == tb   # ≤ S × L, never binding here
    assert e.settings.gpu_memory_utilization == 0.92


def test_hybrid_block_alignment_overrides_a_block_size_that_is_too_small():
    """HybridAttentionMambaModelConfig: vLLM raises the attention block size "if either (a) the user has
    not set it or (b) the user has set it too small". FlashMLA's 64-token default on Hopper is too small
    for Kimi-Linear's KDA state, so the hybrid alignment (960 at TP 2) still applies there."""
    spec = load("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    state = 3 * 3 * (32 * 128 // 2) * 2 + (32 // 2) * 128 * 128 * 4          # 1,085,440 B per KDA layer
    need = 64 * cdiv(state, 64 * 1152)
    hopper = run_pool(spec, "0.14.0", 4 * GiB, tensor_parallel_size=2, max_model_len=32768, block_size=64)
    assert need == 960 and hopper.layout.block_size == 960
    assert run_pool(spec, "0.14.0", 4 * GiB, tensor_parallel_size=2, max_model_len=32768,
                    block_size=16).layout.block_size == 960
    big = run_pool(spec, "0.14.0", 4 * GiB, tensor_parallel_size=2, max_model_len=32768, block_size=2048)
    assert big.layout.block_size == 2048                       # large enough: kept
    # 0.20+ (platforms/interface.py): the alignment is max(backend's kernel block, cache block size)
    e20 = run_pool(spec, "0.20.0", 4 * GiB, tensor_parallel_size=2, max_model_len=32768, block_size=128)
    assert e20.layout.block_size == 128 * cdiv(state, 128 * 1152) == 1024


def test_nearly_equal_layer_counts_share_the_larger_group_size_from_0_18():
    """vllm/v1/core/kv_cache_utils.py 0.18+: when max < 1.5 × min layers per spec, the group size is the
    larger count. gpt-oss-20b + EAGLE-3: 12 sliding (W 128) + 13 full layers (the head's one added),
    8 KV heads × 64 × 2 × 2 B = 2,048 B per token per layer, a 32,768 B page."""
    spec = load("openai/gpt-oss-20b")
    pool = 40 * GiB
    kw = dict(max_model_len=131072, max_num_batched_tokens=8192, speculative_method="eagle3",
              num_speculative_tokens=3)
    old, new = run_pool(spec, "0.17.0", pool, **kw), run_pool(spec, "0.21.0", pool, **kw)
    # 0.17: groups of 12 → 1 sliding + 2 full groups (11 padding layers); 0.18+: 2 groups of 13
    assert old.layout.num_groups == 3 and old.layout.bytes_per_block == 12 * 32768
    assert new.layout.num_groups == 2 and new.layout.bytes_per_block == 13 * 32768
    blocks = pool // (13 * 32768)
    assert new.gpu_blocks == blocks == 100_824
    per_request = cdiv(131072, 16) + cdiv(127 + 8192, 16) + 1             # 8,192 + 521
    assert new.kv_cache_tokens == int(blocks / per_request * 131072)


def test_chunked_local_layers_checked_at_their_chunk_before_unification_0_10_1_to_0_13():
    """vllm/v1/core/kv_cache_utils.py 0.10.1–0.13: check_enough_kv_cache_memory runs on the per-layer
    ChunkedLocalAttentionSpec before the hybrid manager (off by default for chunked attention) unifies
    those layers to full attention. Llama-4-Scout at TP 8: 12 full + 36 chunked (8,192) layers, one KV
    head per rank → 1 × 128 × 2 × 2 B = 512 B per token, an 8,192 B page."""
    spec = load("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    e = run(spec, "0.10.1", tensor_parallel_size=8, max_model_len=1_048_576, max_num_batched_tokens=8192)
    page = 16 * 512
    need = 12 * cdiv(1_048_576, 16) * page + 36 * cdiv(8192 + 8192, 16) * page
    assert e.kv_needed_bytes == need == 6_744_440_832
    assert e.layout.num_groups == 1                      # the pool itself: all 48 layers as full attention
    assert e.layout.bytes_per_block == 48 * page
    # 0.9.2 had no chunked spec: every layer at full length
    assert run(spec, "0.9.2", tensor_parallel_size=8, max_model_len=1_048_576,
               max_num_batched_tokens=8192).kv_needed_bytes == 48 * cdiv(1_048_576, 16) * page


def test_blackwell_head_256_hybrid_blocks_align_to_32_in_0_11_2_to_0_17(qwen3_next):
    """models/config.py 0.11.2–0.17: on compute capability 10.x with head size 256 (FlashInfer, the
    default backend) the hybrid block is a multiple of 32, not 16. Qwen3-Next at TP 4: GDN state
    274,432 B over 1,024 B per attention token → 16 × 17 = 272 elsewhere, 32 × 9 = 288 on a B200."""
    def est(version, cc):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=4, max_model_len=262_144,
                           max_num_batched_tokens=8192, kv_cache_memory_bytes=16 * GiB)
        return estimate(qwen3_next, gpu_total_bytes=180 * GiB, settings=s, compute_capability=cc,
                        weights_bytes=0, activation_bytes=0, non_torch_bytes=0, cuda_graph_bytes=0)

    assert 32 * cdiv(274_432, 32 * 1024) == 288 and 16 * cdiv(274_432, 16 * 1024) == 272
    assert est("0.14.0", "10.0").layout.block_size == 288
    assert est("0.14.0", "9.0").layout.block_size == 272
    assert est("0.18.0", "10.0").layout.block_size == 272


def test_printed_weights_are_what_the_gpu_holds_with_cpu_offload(llama8b):
    """--cpu-offload-gb 12: the model's own weights figure drops by the 12 GiB offloaded
    (14.99 → 2.99 GiB for Llama-3.1-8B), but vLLM's "Model loading took 2.91 GiB" is already the GPU's
    share and is not reduced again (a 0.27 RTX 3090 log had been read as 0 GiB of weights)."""
    s = EngineSettings(vllm_version="0.27.0", cpu_offload_gb=12.0, max_model_len=8192, model_runner_v2=False)
    modelled = estimate(llama8b, gpu_total_bytes=24 * GiB, settings=s)
    whole = estimate(llama8b, gpu_total_bytes=24 * GiB, settings=s.replace(cpu_offload_gb=0.0))
    assert modelled.weights_bytes == whole.weights_bytes - 12 * GiB
    printed = estimate(llama8b, gpu_total_bytes=24 * GiB, settings=s, weights_bytes=int(2.91 * GiB))
    assert printed.weights_bytes == int(2.91 * GiB)


def test_model_runner_v2_before_028_ignores_cpu_offload(llama8b):
    """vllm#51396: Model Runner V2 set no weight offloader until 0.28 (#51413), so --cpu-offload-gb 8
    leaves all 14.99 GiB of Llama-3.1-8B on the GPU where the V1 runner keeps 8 GiB fewer."""
    def weights(version, v2=None):
        s = EngineSettings(vllm_version=version, cpu_offload_gb=8.0, max_model_len=8192, model_runner_v2=v2)
        return estimate(llama8b, gpu_total_bytes=24 * GiB, settings=s)

    whole = estimate(llama8b, gpu_total_bytes=24 * GiB,
                     settings=EngineSettings(vllm_version="0.27.0", max_model_len=8192)).weights_bytes
    ignored = weights("0.27.0")                      # Llama on V2 by default from 0.23
    assert ignored.weights_bytes == whole and any("ignores --cpu-offload-gb" in a for a in ignored.assumptions)
    assert weights("0.27.0", v2=False).weights_bytes == whole - 8 * GiB
    assert weights("0.28.0").weights_bytes == whole - 8 * GiB


def test_mllama_v0_encodes_an_image_per_dummy_prompt_with_its_attention_mask():
    """Llama-3.2-11B-Vision on V0: enc_dec_model_runner.py gives every one of max_num_seqs (128) dummy
    prompts an image (no max_num_batched_tokens cap) and the tower encodes them in one batch. Per image
    T = 4 tiles × 1,608 tokens ((560/14)² + CLS = 1,601, padded to 8): the T × T bf16 mask, six
    T × 1280 hidden states (five kept intermediates and the running one) and fc1 + GELU (2 × T × 5120),
    by hand 128 × 313,264,128 B = 37.34 GiB (vllm PR #12126's log: 36.63)."""
    spec = load("meta-llama/Llama-3.2-11B-Vision-Instruct")
    s = EngineSettings(vllm_version="0.6.6", max_model_len=65536, max_num_seqs=128, enforce_eager=True)
    e = estimate(spec, gpu_total_bytes=int(79.22 * GiB), settings=s)
    t = 4 * 1608
    per_image = (t * t + 6 * t * 1280 + 2 * t * 5120) * 2
    assert per_image == (41_370_624 + 49_397_760 + 65_863_680) * 2 == 313_264_128
    assert e.activation_bytes == 128 * per_image


# -- 0.34: the extensible KV cache, sized after warmup (vllm/v1/worker/extensible_kv_cache.py
# measure_kv_cache_bytes, vllm/v1/worker/gpu_worker.py peak_activation_memory, 0.34.0 wheel)

def test_034_sizes_the_kv_cache_after_warmup_from_the_memory_it_measures(llama8b):
    from estimator.non_torch import CUDA_CONTEXT

    T, W, P, N, G = 24 * GiB, 15 * GiB, 1 * GiB, 256 * MiB, 512 * MiB
    est = run(llama8b, "0.34.0", T=T, W=W, P=P, N=N, G=G, max_model_len=8192)
    # --gpu-memory-utilization unset: 1.0 with the extensible KV cache (resolved_gpu_memory_utilization)
    assert est.settings.gpu_memory_utilization == 1.0 and est.budget_bytes == T
    # the profile run's pool, printed as "Available KV cache memory": 24 − 15 − 1 − 0.25 − 0.5 = 7.25 GiB
    assert est.reserved_pool_bytes == int(7.25 * GiB)
    # after warmup: in use W + N + G = 15.75 GiB; free then 24 − context − 15.75; headroom P + G = 1.5 GiB;
    # margin max(1 GiB, 0.75 × 1.5) = 1.125 GiB: min(24 − 15.75, 8.25 − context − 1.125) − 1.5
    assert est.kv_cache_bytes == int(5.625 * GiB) - CUDA_CONTEXT
    assert est.gpu_blocks == est.kv_cache_bytes // LLAMA_BPB
    # another process holding 1 GiB leaves that much less free after warmup
    s = EngineSettings(vllm_version="0.34.0", max_model_len=8192)
    shared = estimate(llama8b, gpu_total_bytes=T, settings=s, weights_bytes=W, activation_bytes=P, non_torch_bytes=N,
                      cuda_graph_bytes=G, other_process_bytes=GiB)
    assert shared.kv_cache_bytes == int(4.625 * GiB) - CUDA_CONTEXT
    # a small headroom (0.5 GiB: graphs only) keeps the 1 GiB floor, not 0.375: 8.25 − context − 1 − 0.5
    small = run(llama8b, "0.34.0", T=T, W=W, P=0, N=N, G=G, max_model_len=8192)
    assert small.kv_cache_bytes == int(6.75 * GiB) - CUDA_CONTEXT
    # on ROCm the floor is 3 GiB: 8.25 − context − 3 − 1.5
    s = EngineSettings(vllm_version="0.34.0", max_model_len=8192)
    rocm = estimate(llama8b, gpu_total_bytes=T, settings=s, compute_capability="gfx942", weights_bytes=W,
                    activation_bytes=P, non_torch_bytes=N, cuda_graph_bytes=G)
    assert rocm.kv_cache_bytes == int(3.75 * GiB) - CUDA_CONTEXT


def test_034_with_a_utilization_below_one_the_budget_binds_and_the_graphs_count_twice(llama8b):
    T, W, P, N, G = 24 * GiB, 15 * GiB, 1 * GiB, 256 * MiB, 512 * MiB
    est = run(llama8b, "0.34.0", T=T, W=W, P=P, N=N, G=G, max_model_len=8192, gpu_memory_utilization=0.8)
    requested = math.ceil(0.8 * T)                       # 19.2 GiB, as request_memory rounds it
    assert est.reserved_pool_bytes == requested - W - P - N - G
    # requested − in use (W + N + G) − headroom (P + G): below free − margin here (19.2 − 15.75 < 8.25 −
    # context − 1.125), so the graph estimate is paid twice, once captured and once as headroom
    assert est.kv_cache_bytes == requested - (W + N + G) - (P + G) == est.reserved_pool_bytes - G
    # and no start-up free-memory check: the budget is only a cap (v1/worker/utils.py request_memory)
    full = run(llama8b, "0.34.0", T=T, W=W, P=P, N=N, G=G, max_model_len=8192, gpu_memory_utilization=1.0)
    assert full.error_kind is None and full.fits


def test_034_a_fixed_kv_cache_size_keeps_the_profile_run_sizing(llama8b):
    # --kv-cache-memory-bytes turns the extensible KV cache off (config/vllm.py _resolve_extensible_kv_cache)
    est = run_pool(llama8b, "0.34.0", 4 * GiB, max_model_len=8192)
    assert est.kv_cache_bytes == 4 * GiB and est.reserved_pool_bytes is None
    assert est.settings.gpu_memory_utilization == 0.92
    # and 0.33 had none of it: ceil(0.92 T) − W − P − N − G
    T, W, P, N, G = 24 * GiB, 15 * GiB, 1 * GiB, 256 * MiB, 512 * MiB
    old = run(llama8b, "0.33.0", T=T, W=W, P=P, N=N, G=G, max_model_len=8192)
    assert old.reserved_pool_bytes is None and old.kv_cache_bytes == math.ceil(0.92 * T) - W - P - N - G


def test_rerun_with_another_checkpoint_sizes_its_own_weights():
    """A paste's measured weights belong to the checkpoint it served: re-run with another checkpoint of the
    model (advice.four_bit_checkpoint's AWQ export) they are not scaled onto it, while the settings change
    as asked. The seed model with 20 GiB of weights "measured" (a figure apart from its modelled 16-bit
    weights) gives the AWQ spec exactly the weights a fresh estimate of that spec gives."""
    from dataclasses import replace

    from estimator.api import load_model, run_estimate
    from estimator.vllm import parse_flags

    spec = load_model("Qwen/Qwen2.5-14B-Instruct-1M", offline=True).spec
    flags = parse_flags(["--vllm-version", "0.10.1", "--max-model-len", "8192"])
    measured = run_estimate(spec, "RTX A6000", flags, weights_bytes=20 * 2**30)
    assert measured.weights_bytes == 20 * 2**30
    awq = replace(spec, quantization={"quant_method": "awq", "_from_name": True})
    fresh = run_estimate(awq, "RTX A6000", parse_flags(["--vllm-version", "0.10.1", "--max-model-len", "8192"]))
    again = rerun(measured, awq, quantization=None)
    assert again.weights_bytes == fresh.weights_bytes < 10 * 2**30
    # without another spec the measured weights stay the run's own
    assert rerun(measured, max_num_seqs=64).weights_bytes == 20 * 2**30


@pytest.mark.parametrize(("version", "gpu", "backend", "block"), [
    ("0.22.0", "Intel Arc Pro B70", None, 64),            # flash_attn.py get_preferred_block_size on XPU
    ("0.19.1", "Intel Arc Pro B70", None, 16),            # no XPU branch yet
    ("0.22.0", "Intel Arc Pro B70", "TRITON_ATTN", 16),   # another backend keeps vLLM's 16
    ("0.22.0", "NVIDIA H100 PCIe", None, 16),             # not an Intel GPU
])
def test_an_intel_gpus_flash_attention_takes_64_token_blocks_from_020(llama8b, version, gpu, backend, block):
    """From 0.20 vLLM's FlashAttention backend, the default on an Intel GPU, asks for blocks of at least 64
    tokens there: Llama-3.1-8B's 2 MiB block of 16 tokens becomes 8 MiB, and a 16 GiB pool holds 2,048 of them
    (16 GiB / 8 MiB), 131,072 tokens either way."""
    s = EngineSettings(vllm_version=version, attention_backend=backend, kv_cache_memory_bytes=16 * GiB)
    est = estimate(llama8b, gpu_total_bytes=30 * GiB, settings=s, gpu_name=gpu, weights_bytes=16 * GiB,
                   activation_bytes=1 * GiB, non_torch_bytes=512 * MiB, cuda_graph_bytes=0)
    assert est.layout.block_size == block
    assert est.gpu_blocks == 16 * GiB // (block * LLAMA_BPB // 16)
