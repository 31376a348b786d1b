"""vLLM era profiles, defaults and flags, checked against ../shared/docs/vllm-memory.md.

Eras: §0 table and §1.2–1.8; defaults: §5; CUDA-graph sizes: §5; budget rounding: §1.6
(`math.ceil(T × u)` from 0.14). Each expected value quotes the doc rule it comes from.
"""

from __future__ import annotations

import math

import pytest

from estimator import catalog
from estimator.errors import BadInput
from estimator.flags import human_int
from estimator.spec import spec_from_config
from estimator.vllm import (
    EngineSettings,
    cuda_graph_sizes,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    is_main_build,
    parse_bytes,
    parse_flags,
    parse_version,
    profile_for,
    release_after,
    release_at,
    requested_bytes,
    v0_chunked_prefill,
)

GiB = 2**30

# torch totals (../shared/data/gpus.csv): names as torch.cuda.get_device_name prints them
A6000 = ("NVIDIA RTX A6000", int(47.54 * GiB))
A100_80 = ("NVIDIA A100-SXM4-80GB", int(79.15 * GiB))
H100 = ("NVIDIA H100 80GB HBM3", int(79.18 * GiB))
H200 = ("NVIDIA H200", int(139.8 * GiB))
B200 = ("NVIDIA B200", int(178.4 * GiB))
GB10 = ("NVIDIA GB10", int(119.7 * GiB))


def load(repo_id: str):
    cid, config, companions = catalog.lookup(repo_id)
    return spec_from_config(config, cid, companions)


# ---------------------------------------------------------------------------------------------
# Versions and eras
# ---------------------------------------------------------------------------------------------


def test_parse_version_forms():
    assert parse_version("0.8.5.dev169+gce17db808") == (0, 8, 5)
    assert parse_version("v0.7.3") == (0, 7, 3)
    assert parse_version("0.10") == (0, 10, 0)
    # default = newest (0.34)
    assert parse_version(None) == (0, 34, 0)
    # the words for the newest release or a build of main (--vllm-version latest)
    assert parse_version("latest") == parse_version("nightly") == (0, 34, 0)
    with pytest.raises(BadInput):
        parse_version("stable-ish")
    # a 50,000-digit "version" (a paste in the field) is not echoed back whole
    with pytest.raises(BadInput) as ei:
        parse_version("9" * 50_000)
    assert "50000 digits" in str(ei.value) and len(str(ei.value)) < 100


@pytest.mark.parametrize(
    ("version", "engine", "want_engine", "rule"),
    [
        ("0.2.0", None, "v0", "v0_allocated"),       # torch.cuda.max_memory_allocated() up to 0.2.4
        ("0.2.4", None, "v0", "v0_allocated"),
        ("0.2.5", None, "v0", "v0_total_free"),      # total − free, 0.2.5–0.3.0 (vllm PR #2031)
        ("0.3.0", None, "v0", "v0_total_free"),
        ("0.3.1", None, "v0", "v0_classic"),         # init_gpu_memory − free from 0.3.1
        ("0.4.0", None, "v0", "v0_classic"),         # V0 classic 0.4.0–0.6.3 (§1.2)
        ("0.6.3", None, "v0", "v0_classic"),
        ("0.6.4", None, "v0", "v0_nontorch"),        # V0 0.6.4 only (§1.3)
        ("0.6.5", None, "v0", "v0_profiling"),       # V0 memory_profiling 0.6.5–0.10.x (§1.4)
        ("0.7.3", None, "v0", "v0_profiling"),       # V0 still the default engine up to 0.7.3
        ("0.10.1", "v0", "v0", "v0_profiling"),      # V0 fallback until 0.10.x
        ("0.7.0", "v1", "v1", "v1_peak"),            # V1 peak+non-torch 0.7.0–0.9.0 (§1.5)
        ("0.8.0", None, "v1", "v1_peak"),            # V1 default from 0.8.0
        ("0.9.0", None, "v1", "v1_peak"),
        ("0.9.1", None, "v1", "v1_profiling"),       # V1 memory_profiling 0.9.1–0.26.x (§1.6)
        ("0.26.0", None, "v1", "v1_profiling"),
        ("0.27.0", None, "v1", "v1_total"),          # V1 total consumed 0.27–0.33 (§1.8)
        ("0.33.0", None, "v1", "v1_total"),
        ("0.11.0", "v0", "v1", "v1_profiling"),      # V0 removed in 0.11.0
    ],
)
def test_era_budget_rule(version, engine, want_engine, rule):
    p = profile_for(version, engine)
    assert p.engine == want_engine
    assert p.budget_rule == rule


def test_default_version_is_newest():
    p = profile_for(None)
    assert p.version == (0, 34, 0) and p.budget_rule == "v1_total"


@pytest.mark.parametrize(
    ("version", "engine", "u"),
    [
        ("0.7.3", None, 0.90),     # V0: 0.90 always
        ("0.10.1", "v0", 0.90),
        ("0.19.0", None, 0.90),    # V1: 0.90 up to 0.19.x
        ("0.20.0", None, 0.92),    # 0.92 from 0.20.0 (§5, §1.7)
        ("0.33.0", None, 0.92),
    ],
)
def test_default_gpu_memory_utilization(version, engine, u):
    assert profile_for(version, engine).default_utilization == u


@pytest.mark.parametrize(
    ("version", "budgeted"),
    [("0.10.1", False), ("0.17.0", False),
     ("0.18.0", False), ("0.19.0", False),  # 0.18–0.19 measure but subtract only with env=1 (default 0)
     ("0.20.0", True), ("0.33.0", True)],   # env default 1 from 0.20.0
)
def test_cuda_graph_accounting_per_version(version, budgeted):
    assert profile_for(version).cuda_graphs_budgeted is budgeted


def test_v0_never_budgets_cuda_graphs():
    assert profile_for("0.10.1", "v0").cuda_graphs_budgeted is False


@pytest.mark.parametrize(("version", "reserved"), [("0.28.0", False), ("0.29.0", True), ("0.33.0", True)])
def test_reserved_null_block_from_029(version, reserved):
    assert profile_for(version).reserved_block is reserved


@pytest.mark.parametrize(
    ("version", "engine", "rule"),
    [
        ("0.7.3", None, "v0"),
        ("0.8.0", None, "v1_blocks"),          # N = n × bs (0.8.0–0.9.0)
        ("0.9.0", None, "v1_blocks"),
        ("0.9.1", None, "v1_groups"),          # N = (n // groups) × bs (0.9.1–0.20.0)
        ("0.20.0", None, "v1_groups"),
        ("0.20.1", None, "v1_concurrency"),    # N = int(c × L): kv_cache_utils.py of the 0.20.1 wheel
        ("0.21.0", None, "v1_concurrency"),
        ("0.33.0", None, "v1_concurrency"),
    ],
)
def test_capacity_rule(version, engine, rule):
    assert profile_for(version, engine).capacity_rule == rule


def test_context_and_other_processes_charged_only_in_064_and_v1_peak():
    # §1.3 (0.6.4) and §1.5 (V1 0.7.0–0.9.0): non_torch = (total − free) − allocated: CUDA context
    # and other processes included. Everywhere else the baseline is the start-up free memory.
    assert profile_for("0.6.4").context_in_non_torch
    assert profile_for("0.9.0").context_in_non_torch
    for v, e in (("0.6.3", None), ("0.6.5", None), ("0.10.1", "v0"), ("0.9.1", None), ("0.27.0", None)):
        assert not profile_for(v, e).context_in_non_torch, v


# ---------------------------------------------------------------------------------------------
# Budget = T × u (int before 0.14, math.ceil from 0.14)
# ---------------------------------------------------------------------------------------------


def test_requested_bytes_int_before_014_ceil_from_014():
    t = 10**10 + 1
    # T × 0.9 = 9,000,000,000.9
    assert requested_bytes(profile_for("0.13.0"), t, 0.9) == 9_000_000_000
    assert requested_bytes(profile_for("0.14.0"), t, 0.9) == 9_000_000_001
    assert requested_bytes(profile_for("0.33.0"), t, 0.9) == math.ceil(t * 0.9)


def test_requested_bytes_exact_product_unchanged():
    t = 64 * GiB
    # 64 GiB × 0.5 = 32 GiB exactly: int and ceil agree
    assert requested_bytes(profile_for("0.7.3"), t, 0.5) == 32 * GiB
    assert requested_bytes(profile_for("0.33.0"), t, 0.5) == 32 * GiB


# ---------------------------------------------------------------------------------------------
# max_num_seqs defaults (§5)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "engine", "gpu", "expected"),
    [
        ("0.7.3", None, H100, 256),           # V0: 256
        ("0.10.1", "v0", H100, 256),
        ("0.7.0", "v1", A6000, 1024),         # V1 0.6.6–0.8.3: 1024 everywhere
        ("0.8.3", None, A6000, 1024),
        ("0.8.4", None, H100, 1024),          # 0.8.4: by device NAME (H100/H200)
        ("0.8.4", None, H200, 1024),
        ("0.8.4", None, A100_80, 256),        # 79 GiB but not named H100/H200
        ("0.8.5", None, A100_80, 1024),       # 0.8.5: ≥70 GiB
        ("0.8.5", None, A6000, 256),
        ("0.9.0", None, A100_80, 256),        # 0.9.0+: ≥70 GiB and not A100
        ("0.9.0", None, H100, 1024),
        ("0.29.0", None, A6000, 256),
        ("0.30.0", None, B200, 1024),
        ("0.33.0", None, GB10, 256),          # 0.33: not GB10
    ],
)
def test_default_max_num_seqs(version, engine, gpu, expected):
    name, total = gpu
    assert default_max_num_seqs(profile_for(version, engine), total, name) == expected


@pytest.mark.parametrize("version", ["0.11.0", "0.25.1", "0.32.0", "0.33.0"])
def test_gb10_gets_the_small_defaults_in_every_release(version):
    """vLLM reads the card's size through NVML, which cannot size the GB10's unified memory: the error
    counts as 0 bytes, so 119.7 GiB gets what a card under 70 GiB gets (256 sequences, 2,048 batched
    tokens for the server, 8,192 for LLM()); NVIDIA's 0.11.0 build prints that 2,048 on a DGX Spark."""
    name, total = GB10
    assert default_max_num_seqs(profile_for(version), total, name) == 256
    assert _tb(version, GB10) == 2048
    assert _tb(version, GB10, usage="llm") == 8192
    # a card of the same size that NVML can read gets the large ones
    assert default_max_num_seqs(profile_for(version), total, "NVIDIA H100 NVL") == 1024
    assert _tb(version, ("NVIDIA H100 NVL", total)) == 8192


def test_an_a800_gets_the_large_defaults_that_vllm_keeps_from_a100s():
    """The catalog sizes an A800 as the A100-SXM4-80GB, but vLLM's check is on the device's own name
    (engine/arg_utils.py: ≥ 70 GiB and "a100" not in it): "NVIDIA A800-SXM4-80GB" passes, so 0.11 gives it
    1,024 sequences and 8,192 batched tokens where an A100 gets 256 / 2,048. Before 0.8.5 the test was
    "h100" or "h200" in the name, which an H800 (sized as the H100) fails."""
    from estimator.api import run_estimate
    from estimator.gpus import lookup_gpu

    a800 = lookup_gpu("NVIDIA A800-SXM4-80GB")
    assert a800.name == "NVIDIA A100-SXM4-80GB" and a800.product == "NVIDIA A800-SXM4-80GB"
    assert lookup_gpu("A100 80GB").product == ""
    spec = load("Qwen/Qwen2.5-7B-Instruct")
    for card, seqs, tokens in (("NVIDIA A800-SXM4-80GB", 1024, 8192), ("A100 80GB", 256, 2048)):
        s = run_estimate(spec, card, EngineSettings(vllm_version="0.11.0", max_model_len=8192)).settings
        assert (s.max_num_seqs, s.max_num_batched_tokens) == (seqs, tokens), card
    for card, tokens in (("H800", 2048), ("H100", 8192)):
        s = run_estimate(spec, card, EngineSettings(vllm_version="0.8.0", max_model_len=8192)).settings
        assert s.max_num_batched_tokens == tokens, card


# ---------------------------------------------------------------------------------------------
# max_num_batched_tokens defaults (§5)
# ---------------------------------------------------------------------------------------------


def _tb(version, gpu, *, engine=None, usage="server", L=131072, S=256, chunked=True, mm=False):
    name, total = gpu
    s = EngineSettings(vllm_version=version, usage=usage)
    return default_max_num_batched_tokens(profile_for(version, engine), s, L, S, total, name, chunked, mm)


@pytest.mark.parametrize(
    ("version", "gpu", "usage", "expected"),
    [
        # 0.7.0–0.8.4: 16384 (LLM) / 8192 (server) on H100/H200 by device name, else 8192 / 2048
        ("0.8.0", H100, "server", 8192),
        ("0.8.0", H100, "llm", 16384),
        ("0.8.0", A6000, "server", 2048),
        ("0.8.0", A6000, "llm", 8192),
        ("0.8.4", A100_80, "server", 2048),   # name-based: an 80 GB A100 is not "big"
        ("0.8.5", A100_80, "server", 8192),   # 0.8.5: ≥70 GiB
        ("0.8.5", A100_80, "llm", 16384),
        ("0.9.0", A100_80, "server", 2048),   # 0.9.0+: ≥70 GiB and not A100
        ("0.9.0", H100, "server", 8192),
        ("0.27.0", B200, "server", 8192),
        ("0.28.0", B200, "server", 16384),    # 0.28+ (engine/arg_utils.py@0.28.0): ≥160 GiB → 16384 / 16384
        ("0.30.0", B200, "llm", 16384),
        ("0.30.0", H100, "server", 8192),
    ],
)
def test_v1_default_max_num_batched_tokens(version, gpu, usage, expected):
    assert _tb(version, gpu, usage=usage) == expected


def test_v1_max_num_batched_tokens_clamped_to_seqs_times_len_from_0112():
    # 0.11.2+ (engine/arg_utils.py): a default Tb ≤ S × L. S = 4, L = 256 → min(2048, 4 × 256) = 1024
    assert _tb("0.11.2", A6000, L=256, S=4) == 4 * 256
    # 0.9.2–0.11.0 clamp only in SchedulerConfig's unset branch, which V1's own default pre-empts → 2048
    assert _tb("0.10.1", A6000, L=256, S=4) == 2048
    assert _tb("0.9.1", A6000, L=256, S=4) == 2048


@pytest.mark.parametrize(
    ("version", "L", "expected"),
    [
        ("0.7.3", 1000, 2048),     # chunked off: max(L, 2048)
        ("0.7.3", 32768, 32768),
        ("0.5.5", 20000, 20000),
    ],
)
def test_v0_max_num_batched_tokens_chunked_off(version, L, expected):
    assert _tb(version, A6000, L=L, chunked=False) == expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.4.1", 768), ("0.4.2", 512), ("0.5.3", 512), ("0.6.4", 512), ("0.6.5", 2048), ("0.10.1", 2048)],
)
def test_v0_max_num_batched_tokens_chunked_on(version, expected):
    # §5: 768 (0.4.1), 512 (0.4.2–0.6.4), 2048 (0.6.5+)
    assert _tb(version, A6000, engine="v0", L=65536, chunked=True) == expected


@pytest.mark.parametrize(("version", "expected"), [("0.5.5", 2048), ("0.6.2", 4096), ("0.6.3", 5120)])
def test_v0_multimodal_minimum_with_chunked_off(version, expected):
    # §5: multimodal ≥ 4096 (0.6.0–0.6.2) / 5120 (0.6.3+); L = 2048 → max(2048, 2048) otherwise
    assert _tb(version, A6000, L=2048, chunked=False, mm=True) == expected


# ---------------------------------------------------------------------------------------------
# V0 automatic chunked prefill above 32K (§5 "chunked prefill")
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "L", "on"),
    [
        ("0.7.3", 32768, False),   # L ≤ 32768 → off
        ("0.7.3", 32769, True),    # L > 32768 → on (0.5.3+)
        ("0.5.3", 32769, True),
        ("0.5.2", 32769, False),   # before 0.5.3 never automatic
    ],
)
def test_v0_chunked_prefill_switch(version, L, on):
    spec = load("meta-llama/Llama-3.1-8B")
    assert v0_chunked_prefill(profile_for(version, "v0"), L, spec, EngineSettings()) is on


def test_v0_chunked_prefill_not_with_sliding_window():
    spec = load("mistralai/Mistral-7B-v0.1")   # sliding window 4096 on every layer
    assert v0_chunked_prefill(profile_for("0.7.3"), 65536, spec, EngineSettings()) is False


def test_v0_chunked_prefill_not_multimodal_from_06():
    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    assert spec.is_multimodal
    assert v0_chunked_prefill(profile_for("0.6.5"), 65536, spec, EngineSettings()) is False


def test_v0_chunked_prefill_not_mla_from_08():
    spec = load("deepseek-ai/DeepSeek-V3")
    # 0.8+: not MLA; 0.7.3: MLA does not matter
    assert v0_chunked_prefill(profile_for("0.8.0", "v0"), 65536, spec, EngineSettings()) is False
    assert v0_chunked_prefill(profile_for("0.7.3", "v0"), 65536, spec, EngineSettings()) is True


def test_v0_chunked_prefill_explicit_flag_wins():
    spec = load("meta-llama/Llama-3.1-8B")
    s = EngineSettings(enable_chunked_prefill=False)
    assert v0_chunked_prefill(profile_for("0.7.3"), 65536, spec, s) is False
    s = EngineSettings(enable_chunked_prefill=True)
    assert v0_chunked_prefill(profile_for("0.7.3"), 4096, spec, s) is True


def test_v0_chunked_prefill_multimodal_in_05x_is_on():
    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    assert v0_chunked_prefill(profile_for("0.5.5"), 65536, spec, EngineSettings()) is True


def test_v0_chunked_prefill_05x_prefix_caching_keeps_it_off():
    llama = load("meta-llama/Llama-3.1-8B")
    s = EngineSettings(enable_prefix_caching=True)
    assert v0_chunked_prefill(profile_for("0.5.5"), 65536, llama, s) is False


def test_v0_chunked_prefill_05x_mamba_keeps_it_off():
    jamba = spec_from_config({
        "architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 1024,
        "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000,
        "attn_layer_period": 8, "attn_layer_offset": 4, "max_position_embeddings": 262144,
    }, "synthetic/jamba")
    assert jamba.is_hybrid_state
    assert v0_chunked_prefill(profile_for("0.5.5"), 65536, jamba, EngineSettings()) is False
    # 0.6.x: the Mamba condition is gone (only 0.5.x lists it)
    assert v0_chunked_prefill(profile_for("0.6.5"), 65536, jamba, EngineSettings()) is True


# ---------------------------------------------------------------------------------------------
# CUDA-graph capture sizes (§5)
# ---------------------------------------------------------------------------------------------


def test_cuda_graph_sizes_v0():
    # V0: [1,2,4] + 8·k up to the smallest size ≥ S; S = 256 → 8..256 (32 sizes) → 35
    sizes = cuda_graph_sizes(profile_for("0.7.3"), 256, 2048)
    assert sizes == [1, 2, 4] + list(range(8, 257, 8)) and len(sizes) == 3 + 32
    # S = 100 → up to 104
    assert cuda_graph_sizes(profile_for("0.7.3"), 100, 2048)[-1] == 104


def test_cuda_graph_sizes_v1_08_bounded_by_tb():
    # 0.8.x: [1,2,4] + range(8, 513, 8) ≤ Tb; Tb = 2048 → 3 + 64 = 67 sizes; Tb = 100 → up to 96
    assert len(cuda_graph_sizes(profile_for("0.8.5"), 256, 2048)) == 3 + 64
    assert cuda_graph_sizes(profile_for("0.8.5"), 256, 100)[-1] == 96


def test_cuda_graph_sizes_v1_011():
    # 0.11: up to min(2·S, 512); S = 64 → 128: [1,2,4] + 8..128 (16) = 19
    assert cuda_graph_sizes(profile_for("0.11.0"), 64, 8192) == [1, 2, 4] + list(range(8, 129, 8))


def test_cuda_graph_sizes_v1_014():
    # 0.14+: [1,2,4] + range(8,256,8) + range(256, max+1, 16), max = min(2·S, 512, Tb)
    # S = 256, Tb = 8192 → max 512: 3 + 31 + 17 = 51 sizes
    sizes = cuda_graph_sizes(profile_for("0.14.0"), 256, 8192)
    assert sizes == [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))
    assert len(sizes) == 51


def test_cuda_graph_sizes_with_speculative_decoding():
    """q = 1 + k tokens per decode step: the cap is max_num_seqs × q × 2 and every size is rounded
    up to a multiple of q (vllm compilation.py adjust_cudagraph_sizes_for_spec_decode). Public logs:
    MTP 3 at max_num_seqs 8 printed "PIECEWISE=9 (largest=64), FULL=5 (largest=32)"; 6 draft tokens
    "PIECEWISE=15 (largest=112), FULL=8 (largest=56)"."""
    from estimator.vllm import full_graph_sizes

    p = profile_for("0.22.0")
    mtp3 = cuda_graph_sizes(p, 8, 8192, 3)
    assert mtp3 == [4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert full_graph_sizes(mtp3, 8, 3) == [4, 8, 16, 24, 32]
    k6 = cuda_graph_sizes(p, 8, 8192, 6)
    # 1,2,4,8,16,…,64,72,…,112 rounded up to multiples of 7: 7,14,21,…,56,70,77,…,112
    assert k6 == [7, 14, 21, 28, 35, 42, 49, 56, 70, 77, 84, 91, 98, 105, 112]
    assert len(full_graph_sizes(k6, 8, 6)) == 8


def test_full_graphs_cover_uniform_decode_sizes_only():
    # "PIECEWISE=51 (largest=512), FULL=35 (largest=256)" at max_num_seqs 256; 51/51 at 1,024
    from estimator.vllm import full_graph_sizes

    p = profile_for("0.22.0")
    sizes = cuda_graph_sizes(p, 256, 8192)
    assert (len(sizes), len(full_graph_sizes(sizes, 256))) == (51, 35)
    sizes = cuda_graph_sizes(p, 1024, 8192)
    assert (len(sizes), len(full_graph_sizes(sizes, 1024))) == (51, 51)


# ---------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------


def test_human_int_suffixes():
    # vLLM human_readable_int: lower-case decimal, upper-case binary (§3 step 8)
    assert human_int("1k") == 1000
    assert human_int("1K") == 1024
    assert human_int("25.6k") == 25600
    assert human_int("32768") == 32768
    assert human_int("12.5") is None          # not an integer: the CLI refuses it
    with pytest.raises(BadInput):
        parse_flags(["--max-model-len", "12.5"])


def test_parse_flags_common_set():
    s = parse_flags([
        "--gpu-memory-utilization", "0.95", "--max-model-len=32k", "-tp", "2",
        "--kv-cache-dtype", "FP8", "--enforce-eager", "--max_num_seqs", "64", "--trust-remote-code",
    ])
    assert s.gpu_memory_utilization == 0.95
    assert s.max_model_len == 32000
    assert s.tensor_parallel_size == 2
    assert s.kv_cache_dtype == "fp8"
    assert s.enforce_eager is True
    assert s.max_num_seqs == 64
    assert s.unknown_flags == ["--trust-remote-code"]


@pytest.mark.parametrize("value", ["auto", "-1"])
def test_parse_flags_max_model_len_auto(value):
    assert parse_flags(["--max-model-len", value]).max_model_len == "auto"


def test_parse_flags_kv_cache_memory_bytes():
    # binary suffixes: 8GiB / 8G = 8 × 2^30
    assert parse_flags(["--kv-cache-memory-bytes", "8GiB"]).kv_cache_memory_bytes == 8 * GiB
    assert parse_flags(["--kv-cache-memory=8G"]).kv_cache_memory_bytes == 8 * GiB
    assert parse_bytes("1073741824") == GiB
    # vLLM's human_readable_int (engine/arg_utils.py, 0.15.1): a lower-case suffix is decimal, an upper-case
    # one binary, and a decimal with a binary suffix is refused
    assert parse_flags(["--kv-cache-memory-bytes", "8g"]).kv_cache_memory_bytes == 8_000_000_000
    assert parse_flags(["--kv-cache-memory-bytes", "25.6g"]).kv_cache_memory_bytes == 25_600_000_000
    assert parse_bytes("1T") == 1024 * GiB
    with pytest.raises(BadInput, match="binary suffix"):
        parse_bytes("1.5G")


@pytest.mark.parametrize("argv", [["--gpu-memory-utilization", "1.5"], ["--gpu-memory-utilization", "0"],
                                  ["--max-model-len"], ["-tp", "zero"]])
def test_parse_flags_bad_values(argv):
    with pytest.raises(BadInput):
        parse_flags(argv)


# Found by fuzzing the CLI's flags: these raised OverflowError (a 400-digit count through float, 10^20
# pipeline stages sizing a list) or ran for minutes (10^8 stages) instead of saying what is wrong.
@pytest.mark.parametrize("argv, words", [
    (["-pp", "99999999999999999999"], "at most 4,096"),
    (["-pp", "100000000"], "at most 4,096"),
    (["-tp", "4097"], "at most 4,096"),
    (["--max-model-len", "9" * 400], "(400 digits)"),
    (["--max-num-batched-tokens", str(2**40 + 1)], "at most 1,099,511,627,776"),
    (["--block-size", "9" * 30], "(30 digits)"),
    (["--kv-cache-memory", "9" * 400], "--kv-cache-memory: 999999999999… (400 digits)"),
    (["--gpu-memory-utilization", "9" * 400], "(400 digits)"),
    # more digits than Python reads into an int (4,300): refused, not a ValueError
    (["--max-model-len", "9" * 5000], "(5000 digits)"),
    (["--kv-cache-memory-bytes", "1" * 5000 + "g"], "expected a byte size"),
])
def test_parse_flags_numbers_past_any_run_are_refused_with_a_message(argv, words):
    with pytest.raises(BadInput) as exc:
        parse_flags(argv)
    assert words in str(exc.value)


def test_parse_flags_takes_zero_where_zero_is_vllms_own_default():
    # --cpu-offload-gb 0 is vLLM's default and --swap-space 0 the fix kvdoctor offers for V0's pinned
    # CPU blocks: both were refused as "not a positive number"; a negative amount still is refused
    s = parse_flags(["--cpu-offload-gb", "0", "--swap-space", "0"])
    assert (s.cpu_offload_gb, s.swap_space, s.unknown_flags) == (0.0, 0.0, [])
    assert parse_flags(["--swap-space", "8"]).swap_space == 8.0
    for argv in (["--swap-space", "-1"], ["--cpu-offload-gb", "-2"], ["-tp", "0"]):
        with pytest.raises(BadInput):
            parse_flags(argv)


def test_parse_flags_keeps_the_largest_counts_it_models():
    s = parse_flags(["-tp", "4096", "--max-model-len", str(2**40), "--kv-cache-memory", "1024T"])
    assert (s.tensor_parallel_size, s.max_model_len, s.kv_cache_memory_bytes) == (4096, 2**40, 2**50)


# -- the thread's date bounds the version (PyPI upload days: 0.9.2 2025-07-08, 0.10.0 2025-07-25,
# 0.5.5 2024-08-23, 0.22.0 2026-05-29, 0.7.2 2025-02-06, 0.7.3 2025-02-20, 0.33.0 2026-11-02, 0.34.0
# 2026-11-16; first release 2023-06-19)

@pytest.mark.parametrize("day, want", [
    ("2025-07-22", "0.9.2"), ("2025-07-24", "0.9.2"), ("2025-07-25", "0.10.0"),
    ("2025-07-25T09:30:00.000Z", "0.10.0"),       # a Discourse created_at
    ("2024-08", "0.5.5"),                         # a month: any day of it
    ("2026-11-15", "0.33.0"), ("2026-11-30", "0.34.0"),
    ("2023-01-01", None), ("", None), (None, None), ("yesterday", None),
])
def test_release_at(day, want):
    assert release_at(day) == want


def test_assumed_version_is_capped_by_the_post_date():
    from estimator.release_choice import assumed_version

    # A V1 message format valid 0.9.1–0.27.0 (vllm#21348's lines), posted 2025-07-22: 0.9.2, not 0.27.
    assert assumed_version(("0.9.1", "0.27.0"), "v1")[0] == "0.27.0"
    version, note = assumed_version(("0.9.1", "0.27.0"), "v1", "2025-07-22")
    assert version == "0.9.2" and "2025-07-22" in note
    # Formats newer than the last release before the post: a build of main, modelled as the
    # oldest release with those formats.
    version, note = assumed_version(("0.10.2", None), "v1", "2025-07-22")
    assert version == "0.10.2" and "0.9.2" in note
    # No upper bound from the formats: the date gives one.
    assert assumed_version(("0.22.0", None), "v1", "2026-06-03")[0] == "0.22.0"
    assert assumed_version(("0.9.1", None), "v1", "2025-09-03")[0] == "0.10.1.1"
    # V0: the post date caps the 0.7.3 default too (2025-02-11 is before 0.7.3's 2025-02-20).
    assert assumed_version(("0.4.0", "0.7.3"), "v0")[0] == "0.7.3"
    assert assumed_version(("0.4.0", "0.7.3"), "v0", "2025-02-11")[0] == "0.7.2"
    # V0 chosen where V1 is the default (formats of 0.8.0+, gpustack#1800 posted 2025-04-17): the
    # newest release of that day, 0.8.4 (2025-04-15), as for V1; undated, the oldest with the formats.
    version, note = assumed_version(("0.8.0", None), "v0", "2025-04-17")
    assert version == "0.8.4" and "0.8.0–0.8.4" in note
    assert assumed_version(("0.8.0", None), "v0")[0] == "0.8.0"
    # A date after the formats' newest release changes nothing.
    assert assumed_version(("0.9.1", "0.27.0"), "v1", "2026-11-30")[0] == "0.27.0"
    # Formats first released months after the post matched by accident (vllm PR2031, 2023-12-12, quotes
    # "# GPU blocks: 7449", V1 0.7's line): main is weeks ahead of a release, so the date wins.
    version, note = assumed_version(("0.7.0", "0.7.3"), "v1", "2023-12-12")
    assert version == "0.2.4" and "predates vLLM 0.7.0" in note
    # a month (`--posted 2023-12`, read as its last day) is a date too
    version, note = assumed_version(("0.7.0", "0.7.3"), "v1", "2023-12")
    assert version == "0.2.6" and "predates vLLM 0.7.0" in note


def test_a_build_of_main_is_the_release_that_followed_its_date():
    # 0.1.dev19754+g3a0914114 (vLLM's version for an untagged build), posted 2026-08-20: main then
    # became 0.28.0 (PyPI 2026-08-26; 0.27.1 was 2026-08-11). After the newest release: None (= newest).
    assert is_main_build("0.1.dev19754+g3a0914114") and not is_main_build("0.15.2rc1.dev93+g11a4c9d30")
    assert release_after("2026-08-20") == "0.28.0"
    assert release_after("2026-08-26") == "0.29.0"
    assert release_after("2026-11-30") is None and release_after(None) is None
    # '0.0.0+local': a version pretended for a source tree without git (vLLM's first release is 0.0.1)
    assert is_main_build("0.0.0+local") and is_main_build("v0.0.0") and not is_main_build("0.0.1")
    assert parse_version("0.0.1") == (0, 0, 1)
    assert parse_version("0.0.0+local") == parse_version("0.1.dev19754") == (0, 34, 0)
    from estimator.release_choice import modelled_version

    assert modelled_version("0.0.0+local", None, "v1", "2026-05-03")[0] == release_after("2026-05-03")
    version, why = modelled_version("0.0.0+local", None, "v1")
    assert version == "0.34.0" and "no date" in why and "0.0.0+local" in why


def test_batch_defaults_read_from_the_released_engine_args():
    """engine/arg_utils.py per release: V1 sets its default before SchedulerConfig, whose multimodal
    5,120-token minimum then never runs (0.8.5, 0.10.1; gone from 0.11.2); V0 0.6.x applies that
    minimum chunked or not (config.py SchedulerConfig); from 0.11.2 a V1 run without chunked prefill
    batches a whole prompt, max(max_model_len, default)."""
    assert _tb("0.10.1", A6000, L=32768, mm=True) == 2048
    assert _tb("0.20.0", A6000, L=32768, mm=True) == 2048
    assert _tb("0.6.5", A6000, engine="v0", L=65536, mm=True, chunked=True) == 5120
    assert _tb("0.6.5", A6000, engine="v0", L=65536, mm=False, chunked=True) == 2048
    name, total = H100
    off = EngineSettings(vllm_version="0.20.0", enable_chunked_prefill=False)
    assert default_max_num_batched_tokens(profile_for("0.20.0", None), off, 32768, 1024, total, name, True, False) \
        == 32768
    off10 = EngineSettings(vllm_version="0.10.1", enable_chunked_prefill=False)
    assert default_max_num_batched_tokens(profile_for("0.10.1", None), off10, 32768, 1024, total, name, True, False) \
        == 8192                      # 0.10.1 runs V1 with chunked prefill whatever the flag says


def test_v0_keeps_chunked_prefill_off_with_speculative_decoding():
    """engine/arg_utils.py 0.6.3: the > 32K switch needs `not use_spec_decode` (and no LoRA)."""
    from estimator.vllm import v0_chunked_prefill

    cid, config, _ = catalog.lookup("meta-llama/Llama-3.1-8B-Instruct")
    spec = spec_from_config(config, cid)
    p = profile_for("0.6.3", "v0")
    assert v0_chunked_prefill(p, 65536, spec, EngineSettings()) is True
    assert v0_chunked_prefill(p, 65536, spec, EngineSettings(speculative_method="ngram")) is False


def test_startup_free_memory_check_counts_the_cuda_context_and_runs_with_a_fixed_pool():
    """v1/worker/utils.py request_memory (0.14+; gpu_worker.py init_device from 0.9.1): free memory,
    measured after the CUDA context exists, must cover ceil(T × u) — always, --kv-cache-memory-bytes or
    not. On a 24 GB card with nothing else on it u = 0.99 asks for 23.40 of 23.64 GiB; about 0.45 GiB
    of context leaves 23.19 free."""
    from estimator.memory import estimate
    from estimator.non_torch import CUDA_CONTEXT

    cid, config, _ = catalog.lookup("meta-llama/Llama-3.2-1B-Instruct")
    spec = spec_from_config(config, cid)
    total = int(23.64 * GiB)
    assert math.ceil(total * 0.99) > total - CUDA_CONTEXT > math.ceil(total * 0.97)

    def est(u, **kw):
        return estimate(spec, gpu_total_bytes=total, settings=EngineSettings(
            vllm_version="0.20.0", gpu_memory_utilization=u, max_model_len=8192, **kw))

    assert est(0.99).error_kind == "free_memory_startup"
    assert est(0.97).error_kind is None
    assert est(0.99, kv_cache_memory_bytes=4 * GiB).error_kind == "free_memory_startup"


def test_default_max_num_seqs_never_exceeds_the_batch_from_0_10_1():
    """engine/arg_utils.py 0.10.1+: max_num_seqs = min(default, max_num_batched_tokens) when unset."""
    from estimator.memory import estimate

    cid, config, _ = catalog.lookup("meta-llama/Llama-3.1-8B-Instruct")
    spec = spec_from_config(config, cid)
    e = estimate(spec, gpu_total_bytes=H100[1], gpu_name=H100[0], settings=EngineSettings(
        vllm_version="0.20.0", max_num_batched_tokens=512, max_model_len=8192))
    assert e.settings.max_num_seqs == 512
    mine = estimate(spec, gpu_total_bytes=H100[1], gpu_name=H100[0], settings=EngineSettings(
        vllm_version="0.20.0", max_num_batched_tokens=512, max_num_seqs=600, max_model_len=8192))
    assert mine.settings.max_num_seqs == 600


@pytest.mark.parametrize(("version", "expected"), [
    ("0.4.0", 32768),   # 0.4.0 vllm/config.py SchedulerConfig: max(max_model_len, 2048), chunked or not
    ("0.4.1", 768),     # 0.4.1: chunked prefill's own default
    ("0.4.2", 512),     # 0.4.2–0.6.4: 512
    ("0.6.5", 2048),
])
def test_v0_chunked_prefill_batch_default_per_release(version, expected):
    assert _tb(version, A6000, engine="v0", L=32768) == expected


def test_v0_before_0_4_charges_what_its_release_measured():
    """vllm/worker/worker.py in the wheels: up to 0.2.4 the budget loses torch.cuda.max_memory_allocated()
    (torch's own tensors: nothing outside torch), 0.2.5–0.3.0 total − free (vllm PR #2031: the CUDA
    context, NCCL and cuBLAS workspaces, other processes too), 0.3.1+ the free memory at start minus
    the free memory after the profile (non-torch, but not the context made before the first reading).
    Llama-2-7B on an A100-80GB with benchmark_throughput's defaults, as PR #2031 ran it: the PR printed
    7,351 blocks, the main branch before it 7,449. A block is 32 layers × 2 × 4,096 × 2 B × 16 = 8 MiB,
    so 0.2.5 has (0.45 GiB context + 0.15 GiB non-torch) / 8 MiB = 76.8 → 77 blocks fewer than 0.2.4,
    and 0.3.1 (no context; an A100's 0.09 GiB, non_torch.NON_TORCH_SINGLE_A100, and the 0.49 GiB of cached
    blocks its free-memory reading keeps, memory.V0_CLASSIC_CACHED_EXCESS) 0.58 GiB / 8 MiB = 74.2 → 74
    fewer (73 or 74 with the byte rounding of the two figures)."""
    from estimator.api import load_model, run_estimate

    spec = load_model("meta-llama/Llama-2-7b-hf", offline=True).spec
    blocks = {v: run_estimate(spec, "A100 80GB", EngineSettings(vllm_version=v, gpu_memory_utilization=0.9))
              for v in ("0.2.4", "0.2.5", "0.3.1")}
    assert blocks["0.2.4"].non_torch_bytes == 0
    assert blocks["0.2.4"].gpu_blocks - blocks["0.2.5"].gpu_blocks == 77
    assert blocks["0.2.4"].gpu_blocks - blocks["0.3.1"].gpu_blocks in (73, 74)
    # within 1% of what PR #2031 printed for its main branch (0.2.4's rule) and for the PR (0.2.5's)
    assert abs(blocks["0.2.4"].gpu_blocks / 7449 - 1) < 0.01 and abs(blocks["0.2.5"].gpu_blocks / 7351 - 1) < 0.01


def test_v0_with_tp_warns_about_cached_all_reduce_buffers_where_the_release_counts_them():
    """0.2.5–0.6.3 measure with mem_get_info and no empty_cache, and eager TP all-reduces leave their
    blocks cached behind NCCL's stream: the reply says how much that can be (2 × layers × Tb × hidden ×
    2 B) where it applies. vllm#2136 (CodeLlama-13B, TP 2, 16,384 tokens): 2 × 40 × 16,384 × 5,120 ×
    2 B = 12.5 GiB; nothing at TP 1, nothing on 0.2.4 (torch's peak) or 0.6.4 (empty_cache first)."""
    from estimator.api import load_model, run_estimate

    spec = load_model("codellama/CodeLlama-13b-Instruct-hf", offline=True).spec

    def said(version, tp):
        est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version=version, tensor_parallel_size=tp,
                                                            max_model_len=16384, max_num_seqs=16))
        return [a for a in est.assumptions if "NCCL's stream" in a]

    assert 2 * 40 * 16384 * 5120 * 2 / 2**30 == 12.5
    assert said("0.2.5", 2) and "up to 12.5 GiB" in said("0.2.5", 2)[0]
    assert said("0.6.3", 2)
    assert not said("0.2.5", 1) and not said("0.2.4", 2) and not said("0.6.4", 2)


def test_after_load_rules_are_version_profile_rules():
    """MLA matrix absorption ran 0.7.1–0.7.3 (VLLM_MLA_PERFORM_MATRIX_ABSORPTION, gone in 0.8.0);
    0.2.0–0.2.2 keep a RoPE cache per attention layer (0.2.3's get_rope shares one)."""
    assert [profile_for(v).mla_matrix_absorption for v in ("0.7.0", "0.7.1", "0.7.3", "0.8.0")] == \
        [False, True, True, False]
    assert [profile_for(v).rope_cache_per_layer for v in ("0.2.0", "0.2.2", "0.2.3", "0.33.0")] == \
        [True, True, False, False]


def _v2(version, arch, *, moe=False, hybrid=False, quantized=False, attention_free=False, spec=None,
        rocm=False):
    from estimator.vllm import default_model_runner_v2
    return default_model_runner_v2(profile_for(version), arch, moe=moe, hybrid=hybrid, quantized=quantized,
                                   attention_free=attention_free, speculative_method=spec, rocm=rocm)


def test_model_runner_v2_default_follows_each_releases_rule():
    """config/vllm.py `use_v2_model_runner` with VLLM_USE_V2_MODEL_RUNNER unset, release by release
    (the rollout vLLM's blog dates: Qwen3 canary, Llama/Mistral, the MoE families, quantized, all
    dense models, all families from 0.29)."""
    assert not _v2("0.21.0", "Qwen3ForCausalLM")
    assert _v2("0.22.0", "Qwen3ForCausalLM")
    assert not _v2("0.22.0", "Qwen3ForCausalLM", quantized=True)    # 0.22–0.23: not quantized ones
    assert not _v2("0.22.0", "LlamaForCausalLM")
    assert _v2("0.23.0", "LlamaForCausalLM") and _v2("0.23.0", "MistralForCausalLM")
    assert not _v2("0.23.0", "Qwen2ForCausalLM")
    assert _v2("0.24.0", "Qwen2MoeForCausalLM", moe=True)
    assert _v2("0.24.0", "LlamaForCausalLM", quantized=True)
    assert not _v2("0.24.0", "Qwen2ForCausalLM")
    assert _v2("0.25.0", "Qwen2ForCausalLM", quantized=True)          # 0.25: every dense model
    assert not _v2("0.25.0", "Qwen3MoeForCausalLM", moe=True)
    assert not _v2("0.26.0", "Qwen3NextForCausalLM", moe=True, hybrid=True)
    assert not _v2("0.27.1", "Qwen3_5ForConditionalGeneration", hybrid=True)
    assert _v2("0.28.0", "DeepseekV4ForCausalLM", moe=True)
    assert _v2("0.27.1", "KimiK3ForConditionalGeneration", moe=True)
    assert not _v2("0.27.1", "KimiK3ForConditionalGeneration", moe=True, rocm=True)
    assert _v2("0.29.0", "Qwen3MoeForCausalLM", moe=True) and _v2("0.29.0", "Qwen3NextForCausalLM", hybrid=True)
    assert not _v2("0.29.0", "DeepseekV4ForCausalLM", moe=True, rocm=True)
    assert _v2("0.29.0", "DeepseekV4ForCausalLM", moe=True)
    # speculative methods V2 did not run fall back to V1 (ngram until 0.33; suffix still in 0.33)
    assert not _v2("0.29.0", "LlamaForCausalLM", spec="ngram") and _v2("0.29.0", "LlamaForCausalLM", spec="eagle3")
    assert _v2("0.33.0", "LlamaForCausalLM", spec="ngram") and not _v2("0.33.0", "LlamaForCausalLM", spec="suffix")
    from estimator.vllm import default_model_runner_v2
    eagle_pp = dict(moe=False, hybrid=False, quantized=False, attention_free=False, speculative_method="eagle3",
                    rocm=False, pipeline_parallel=2)
    assert not default_model_runner_v2(profile_for("0.29.0"), "LlamaForCausalLM", **eagle_pp)   # to 0.29
    assert default_model_runner_v2(profile_for("0.30.0"), "LlamaForCausalLM", **eagle_pp)
    assert not default_v2_on_v0()


def default_v2_on_v0():
    from estimator.vllm import default_model_runner_v2
    return default_model_runner_v2(profile_for("0.10.1", "v0"), "LlamaForCausalLM", moe=False, hybrid=False,
                                   quantized=False, attention_free=False, speculative_method=None, rocm=False)


def test_performance_mode_doubles_the_defaults_or_captures_every_small_batch():
    """--performance-mode (0.17+, engine/arg_utils.py and config/vllm.py): "throughput" doubles the
    max_num_batched_tokens and max_num_seqs vLLM would default to (not the ones given); "interactivity"
    captures a graph for each batch size 1–32 before the 8-step sizes: at max_num_seqs 256 that is
    32 + 27 (40…248) + 17 (256…512) = 76 sizes against balanced's 3 + 31 + 17 = 51."""
    from estimator.api import load_model
    from estimator.memory import estimate

    assert parse_flags(["--performance-mode", "throughput"]).performance_mode == "throughput"
    assert parse_flags(["--performance-mode=interactivity"]).performance_mode == "interactivity"
    spec = load_model("meta-llama/Llama-3.1-8B", offline=True).spec

    def run(version, **kw):
        s = estimate(spec, gpu_total_bytes=22 * 2**30, gpu_name="NVIDIA L4",
                     settings=EngineSettings(vllm_version=version, max_model_len=8192, **kw)).settings
        return s.max_num_seqs, s.max_num_batched_tokens

    assert run("0.27.0") == (256, 2048)
    assert run("0.27.0", performance_mode="throughput") == (512, 4096)
    assert run("0.27.0", performance_mode="throughput", max_num_seqs=64) == (64, 4096)
    assert run("0.16.0", performance_mode="throughput") == (256, 2048)      # no such mode before 0.17
    p = profile_for("0.27.0")
    assert len(cuda_graph_sizes(p, 256, 8192)) == 51
    inter = cuda_graph_sizes(p, 256, 8192, interactivity=True)
    assert len(inter) == 76 and inter[:33] == list(range(1, 33)) + [40]


def test_a_main_build_between_a_release_and_its_patch_is_that_release():
    """setuptools-scm names main N commits after the x.y.(z)rc0 tag 'x.y.(z)rc1.devN': the code of
    x.y.(z−1), not of the patch cut later on its release branch. A GB10 log of 0.20.1rc1.dev23 printed
    'GPU KV cache size: 1,253,392 tokens' for a 52.66 GiB pool of Qwen3.6-35B-A3B — 0.20.0's blocks ÷
    groups count, where 0.20.1's int(concurrency × max_model_len) gives 3.9 M."""
    from estimator.release_choice import modelled_version

    version, why = modelled_version("0.20.1rc1.dev23+gde3da0b97.d20260428", None, "v1")
    assert version == "0.20.0" and "build of main" in why
    assert modelled_version("0.26.1rc1.dev608+g99a10304d", None, "v1")[0] == "0.26.0"
    assert modelled_version("0.8.0rc2.dev9+g6eaf1e5c", None, "v1") == ("0.8.0rc2.dev9+g6eaf1e5c", "")  # no patch
    assert modelled_version("0.8.5.dev169+gce17db808", None, "v1") == ("0.8.5.dev169+gce17db808", "")
    assert modelled_version("0.26.0", None, "v1") == ("0.26.0", "")


def test_a_main_build_may_hold_a_model_the_next_minor_release_lists():
    """0.18.2rc1.dev73 is main after 0.18.1 branched and before 0.19.0 did: vllm#40002 served Gemma 4
    (registry: from 0.19.0) on it. Modelled as 0.18.1, whose registry lacks the model, the reply must not
    say the build "would run only through its Transformers backend". A model listed only from 0.20.0 was
    not yet on main then: that note stays. `kvdoctor estimate --vllm-version` models the build as
    `explain` does (0.18.1, not a 0.18.2 that 0.20.1rc1.devN's rule shows to be the wrong code)."""
    from estimator import load_model, parse_flags, run_estimate
    from estimator.vllm import next_minor_release, registry_span, unlisted_architecture_note

    assert registry_span("Gemma4ForConditionalGeneration")[0] == "0.19.0"
    assert next_minor_release("0.18.1") == "0.19.0" and next_minor_release("0.20.0") == "0.21.0"
    build = unlisted_architecture_note("Gemma4ForConditionalGeneration", (0, 18, 1), "0.18.1", "0.18.2rc1.dev73")
    assert "may already have vLLM's own implementation" in build and "Transformers backend" not in build
    release = unlisted_architecture_note("Gemma4ForConditionalGeneration", (0, 18, 1), "0.18.1")
    assert "Transformers backend" in release
    older = unlisted_architecture_note("Gemma4ForConditionalGeneration", (0, 17, 1), "0.17.1", "0.17.2rc1.dev5")
    assert "Transformers backend" in older      # main after 0.17.1 branched is before 0.18.0's branch
    spec = load_model("google/gemma-4-26B-A4B", offline=True).spec
    est = run_estimate(spec, "H100", parse_flags(["--vllm-version", "0.18.2rc1.dev73"]))
    assert est.settings.vllm_version == "0.18.1" and est.settings.vllm_build == "0.18.2rc1.dev73"
    assert any("build of main from after 0.18.1 branched" in a for a in est.assumptions)
    assert not any("Transformers backend" in a for a in est.assumptions)
    # the capacity a build prints follows its base: 0.20.1rc1.dev23 is 0.20.0's blocks ÷ groups
    assert run_estimate(spec, "H100", parse_flags(["--vllm-version", "0.20.1rc1.dev23"])).profile.capacity_rule \
        == "v1_groups"


def test_the_card_assumed_for_a_tensor_parallel_run_is_one_per_rank():
    """With no GPU named kvdoctor sizes an 80 GB H100 per rank; a TP 2 run (vllm#40002 named no card) is two
    of them, which "assumed one NVIDIA H100" misstated."""
    from estimator import load_model, parse_flags, run_estimate

    spec = load_model("Qwen/Qwen2.5-7B-Instruct", offline=True).spec
    one = run_estimate(spec, None, parse_flags([]))
    two = run_estimate(spec, None, parse_flags(["--tensor-parallel-size", "2"]))
    assert "no GPU given: assumed one NVIDIA H100 80GB" in one.assumptions
    assert "no GPU given: assumed 2× NVIDIA H100 80GB, one per GPU rank" in two.assumptions


def test_an_environment_switch_with_a_templated_value_says_nothing():
    """`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=${PROFILE}` (a compose file's template) leaves the release's
    default: an unparsable value is not "off" (which would stop 0.20+'s graph budgeting)."""
    from estimator.vllm import EngineSettings, parse_flags

    s = parse_flags(["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=${PROFILE}", "VLLM_USE_V2_MODEL_RUNNER=${V2}"],
                    EngineSettings())
    assert s.graph_profiling is None and s.model_runner_v2 is None
    s = parse_flags(["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0", "VLLM_USE_V2_MODEL_RUNNER=1"], EngineSettings())
    assert s.graph_profiling is False and s.model_runner_v2 is True


def test_a_stated_series_is_its_newest_release_by_the_post_date():
    from estimator.release_choice import modelled_version
    from estimator.vllm import series_release

    # "0.8.x": 0.8.0 (03-18) … 0.8.4 (04-15), 0.8.5 (04-28) in RELEASES
    assert series_release("0.8.x", "2025-04-17") == "0.8.4"
    assert series_release("0.8.x") == "0.8.5"
    assert series_release("v0.10.*", "2025-09-30") == "0.10.2"
    assert series_release("0.8.4") is None and series_release("0.99.x") is None
    assert series_release("0.8.x", "2024-01-01") is None          # no 0.8 release by then
    version, note = modelled_version("0.8.x", None, "v0", "2025-04-17")
    assert version == "0.8.4" and "names a series" in note


def test_v0_0_3_to_0_6_3_counts_the_allocators_cached_blocks():
    """0.3.1–0.6.3 size the pool from the free memory the profile run took, with nothing emptied in
    between, so PyTorch's reserved-but-unused blocks count against the KV cache; 0.6.4 empties the
    cache first. Two public RTX 3090 logs of vLLM 0.4.1 with Meta-Llama-3-8B-Instruct's defaults (zhjunqin's
    benchmark notes, llm-tracker) print 2,358 and 2,354 blocks: 0.9 × 23.69 GiB − 14.96 GiB weights leaves
    6.36 GiB, of which 2,358 blocks × 2 MiB take 4.61, so the profile run took 1.75 GiB — the sampler's
    256 × 128,256 × 40 B = 1.22 GiB, 0.05 outside torch and 0.49 cached."""
    from estimator.api import load_model, run_estimate
    from estimator.memory import V0_CLASSIC_CACHED_EXCESS

    spec = load_model("meta-llama/Meta-Llama-3-8B-Instruct", offline=True).spec
    est = {v: run_estimate(spec, "RTX 3090", EngineSettings(vllm_version=v, dtype="bfloat16"))
           for v in ("0.4.1", "0.6.4")}
    assert abs(est["0.4.1"].gpu_blocks / 2358 - 1) < 0.01
    assert V0_CLASSIC_CACHED_EXCESS == int(0.49 * 2**30)
    assert any("cached blocks still reserved" in a for a in est["0.4.1"].assumptions)
    assert not any("cached blocks still reserved" in a for a in est["0.6.4"].assumptions)
    # the same profile run, measured without the cache: only the cached blocks differ
    assert est["0.4.1"].activation_bytes - est["0.6.4"].activation_bytes == V0_CLASSIC_CACHED_EXCESS
