"""DeepSeek-V4's KV pool as vLLM plans it (estimator/kv_deepseek_v4.py), checked against the numbers
real vLLM logs printed. The pool is fixed with --kv-cache-memory-bytes so that only the layout
arithmetic is under test; every figure below is worked out by hand in the comments.

DeepSeek-V4-Flash: 43 layers — compress_ratios 0, 0, (4, 128) × 20, 4 — so 2 window-only layers,
21 layers compressed 4× (with a lightning indexer) and 20 compressed 128×; window 128; one latent
head of 512; 1 MTP layer. With --kv-cache-dtype fp8 every latent row is fp8_ds_mla, 584 bytes, and
pages are padded to multiples of 576 bytes. At --block-size 256 the pages per layer are:
  4× latent:   256/4 × 584 = 37,376 → 37,440       128× latent: 256/128 × 584 = 1,168 → 1,728
  indexer key: 256/4 × 132 = 8,448 → 8,640         window cache (block 64): 64 × 584 → 37,440
  4× compressor state (block 4, window 8): 4 × 2 × 2 × 512 × 4 B = 32,768 → 32,832
  indexer compressor state (block 4, window 8): 4 × 4 × 128 × 4 B = 8,192 → 8,640
  128× compressor state (block 8, window 128): 8 × 2 × 512 × 4 B = 32,768 → 32,832
Groups: the latent group (21 × 37,440 + 21 × 8,640 + 20 × 1,728 = 1,002,240 B per block), two
window groups (22 and 21 layers: 43 + draft layers split in tuples of 22), the 4× states (42
caches) and the 128× states (20).
"""

from __future__ import annotations

from test_memory import cdiv, load

from estimator.memory import estimate
from estimator.vllm import EngineSettings

GiB = 2**30
LATENT_GROUP = 21 * 37_440 + 21 * 8_640 + 20 * 1_728          # 1,002,240


def _run(version: str, blocks_bytes: int, **kw):
    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    s = EngineSettings(vllm_version=version, kv_cache_dtype="fp8", block_size=256, tensor_parallel_size=2,
                       kv_cache_memory_bytes=blocks_bytes, **kw)
    return estimate(spec, gpu_total_bytes=int(94.97 * GiB), settings=s)


def test_pool_stride_per_release():
    # 0.22: 22 layer slots × the distinct latent pages (37,440 + 8,640 + 1,728)
    assert _run("0.22.0", GiB, max_model_len=4096).layout.bytes_per_block == 22 * (37_440 + 8_640 + 1_728)
    # 0.23–0.26: each page size × its largest per-group count (the state pages padded to 37,440)
    assert _run("0.25.0", GiB, max_model_len=4096).layout.bytes_per_block == 22 * 37_440 + 21 * 8_640 + 20 * 1_728
    # 0.27+: groups overlaid, the largest group's bytes
    assert _run("0.27.0", GiB, max_model_len=4096).layout.bytes_per_block == LATENT_GROUP
    assert _run("0.33.0", GiB, max_model_len=4096).layout.bytes_per_block == LATENT_GROUP


def test_needed_and_estimated_length_of_a_022_error():
    """A 0.22-era LLM() run on two GH200s (vllm#44376's comment): 'To serve at least one request with
    the model's max seq len (30000), (6.66 GiB KV cache is needed … (5.44 GiB) … the estimated maximum
    model length is 13528' — max_num_batched_tokens 16,384 (the LLM class's default on that card)."""
    est = _run("0.22.0", int(5.4410 * GiB), max_model_len=30000, max_num_batched_tokens=16384)
    # blocks one 30,000-token request reserves, per group:
    latent = cdiv(30000, 256)                              # 118
    window = cdiv(min(128 - 1 + 16384, 30000), 64) + 1     # 259, in each of the 2 window groups
    c4_states = cdiv(min(8 - 1 + 16384, 30000), 4) + 1     # 4,099
    c128_states = cdiv(min(128 - 1 + 16384, 30000), 8) + 1  # 2,065
    pages = latent + 2 * window + c4_states + c128_states  # 6,800
    # 0.22 charges each a layer tuple's bytes: 22 × (37,440 + 8,640 + 1,728) = 1,051,776
    assert est.kv_needed_bytes == pages * 1_051_776          # 7,152,076,800 B
    assert f"{est.kv_needed_bytes / GiB:.2f}" == "6.66"
    assert est.error_kind == "kv_capacity_v1"
    assert est.max_model_len_fit == 13528                   # vLLM's binary search, as printed


def test_tokens_printed_by_025_weight_the_groups_by_their_bytes():
    """0.25.0 on two RTX PRO 6000s, no speculative decoding, --max-num-batched-tokens 8192,
    --max-model-len 131072: 'Available KV cache memory: 7.75 GiB', 'GPU KV cache size: 301,529
    tokens', 'Maximum concurrency … 2.30x'."""
    stride = 22 * 37_440 + 21 * 8_640 + 20 * 1_728          # 1,039,680
    est = _run("0.25.0", 8008 * stride, max_model_len=131072, max_num_batched_tokens=8192)
    assert est.gpu_blocks == 8008
    # blocks per group for one request (up to 0.25 the window keeps one batch, 8,192 tokens):
    counts = [cdiv(131072, 256),                    # latent 512
              cdiv(128 - 1 + 8192, 64) + 1,          # window 131 (22 layers)
              cdiv(128 - 1 + 8192, 64) + 1,          # window 131 (21 layers)
              cdiv(8 - 1 + 8192, 4) + 1,             # 4× states 2,051
              cdiv(128 - 1 + 8192, 8) + 1]           # 128× states 1,041
    # … weighted by each group's bytes per block (state pages padded to 37,440 to 0.26)
    group_bytes = [LATENT_GROUP, 22 * 37_440, 21 * 37_440, 21 * 37_440 + 21 * 8_640, 20 * 37_440]
    per_request = cdiv(sum(n * b for n, b in zip(counts, group_bytes, strict=True)), LATENT_GROUP)
    assert per_request == 3481
    assert est.kv_cache_tokens == int(8008 / 3481 * 131072) == 301_529
    assert f"{est.max_concurrency:.2f}" == "2.30"


def test_mtp_adds_one_window_cache_and_the_capacity_follows():
    """0.25.0, MTP with 2 speculative tokens, --max-num-batched-tokens 4096, max_num_seqs 64, 1M
    context: 'Available KV cache memory: 10.29 GiB', 'GPU KV cache size: 1,993,100 tokens', 1.90x.
    The MTP layer adds one window cache (44 → two window groups of 22); k adds none."""
    stride = 22 * 37_440 + 21 * 8_640 + 20 * 1_728
    est = _run("0.25.0", 10631 * stride, max_model_len=1048576, max_num_batched_tokens=4096, max_num_seqs=64,
               speculative_method="mtp", num_speculative_tokens=2)
    counts = [cdiv(1048576, 256), cdiv(127 + 4096, 64) + 1, cdiv(127 + 4096, 64) + 1,
              cdiv(7 + 4096, 4) + 1, cdiv(127 + 4096, 8) + 1]          # 4,096, 67, 67, 1,027, 529
    group_bytes = [LATENT_GROUP, 22 * 37_440, 22 * 37_440, 21 * 37_440 + 21 * 8_640, 20 * 37_440]
    per_request = cdiv(sum(n * b for n, b in zip(counts, group_bytes, strict=True)), LATENT_GROUP)
    assert est.kv_cache_tokens == int(10631 / per_request * 1048576) == 1_993_100


def test_from_027_blocks_per_request_are_a_plain_sum_and_029_holds_back_a_block():
    # 0.33, async scheduling on by default: the windows keep 2 batches in flight (2 × 8,192)
    est = _run("0.33.0", 20_000 * LATENT_GROUP, max_model_len=131072, max_num_batched_tokens=8192)
    per_request = (cdiv(131072, 256) + 2 * (cdiv(127 + 16384, 64) + 1)
                   + cdiv(7 + 16384, 4) + 1 + cdiv(127 + 16384, 8) + 1)      # 512 + 518 + 4,099 + 2,065 = 7,194
    assert per_request == 7194
    assert est.kv_cache_tokens == int(20_000 / 7194 * 131072)
    # the need is the pool's stride per block; the check leaves out one (null) block from 0.29
    assert est.kv_needed_bytes == 7194 * LATENT_GROUP
    assert est.max_model_len_fit == 131072


def test_tensor_parallelism_splits_none_of_it():
    one = _run("0.26.0", GiB, max_model_len=65536)
    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    s = EngineSettings(vllm_version="0.26.0", kv_cache_dtype="fp8", block_size=256, tensor_parallel_size=8,
                       kv_cache_memory_bytes=GiB, max_model_len=65536)
    eight = estimate(spec, gpu_total_bytes=int(94.97 * GiB), settings=s)
    assert eight.layout.bytes_per_block == one.layout.bytes_per_block
    assert eight.kv_cache_tokens == one.kv_cache_tokens


def test_auto_kv_dtype_is_modelled_as_fp8_ds_mla_and_said():
    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    s = EngineSettings(vllm_version="0.26.0", max_model_len=65536, kv_cache_memory_bytes=GiB, tensor_parallel_size=2)
    est = estimate(spec, gpu_total_bytes=int(94.97 * GiB), settings=s)
    assert est.layout.bytes_per_block == 22 * 37_440 + 21 * 8_640 + 20 * 1_728
    assert est.layout.block_size == 256                     # the backend's preferred block, no flag needed
    assert any("need --kv-cache-dtype fp8" in a for a in est.assumptions)
    # fp8 is already what is modelled (and what vLLM needs): no "--kv-cache-dtype fp8" capacity lever
    from estimator.advice import suggest
    from estimator.api import run_estimate

    tight = run_estimate(spec, "H200", EngineSettings(     # a card with fp8 support: the lever would apply
        vllm_version="0.26.0", max_model_len=1048576, kv_cache_memory_bytes=GiB, tensor_parallel_size=2))
    assert not tight.fits
    assert not any("kv-cache-dtype" in f.flags for f in suggest(tight, error_kind="kv_capacity_v1"))


def test_weights_follow_the_low_rank_attention():
    """DeepseekV4Attention: wq_a + wkv (4,096 → 1,024 + 512), wq_b 1,024 → 64 × 512, wo_a per group
    (4,096 → 8 × 1,024), wo_b 8,192 → 4,096 — not dense 4,096 → 64 × 512 q/o projections — and a sink
    per head; a compressed layer's compressor (wkv + wgate, 2 × coff × 512 out, and coff × 512 position
    biases per ratio step), a 4× layer's indexer (wq_b 1,024 → 64 × 128, its compressor 4,096 → 4 × 128)."""
    from estimator.params import count_params

    counts = count_params(load("deepseek-ai/DeepSeek-V4-Flash"))
    core = 4096 * 1024 + 4096 * 512 + 1024 * 64 * 512 + 4096 * 8 * 1024 + 8 * 1024 * 4096 + 64
    c4 = 2 * 2 * 512 * 4096 + 4 * 2 * 512 + 64 * 128 * 1024 + 4 * 128 * 4096 + 4 * 2 * 128
    c128 = 2 * 512 * 4096 + 128 * 512
    assert counts.params_by_part["attention"] == 43 * core + 21 * c4 + 20 * c128     # 5,080,723,136
    # the whole body: DeepSeek states 284 B; a published count of the layers gives 284.34 B
    assert abs(counts.params_total - 284.34e9) / 284.34e9 < 0.001


def _profiled(**kw):
    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    s = EngineSettings(vllm_version="0.25.0", kv_cache_dtype="fp8", block_size=256, tensor_parallel_size=2,
                       max_model_len=1048576, max_num_batched_tokens=4096, max_num_seqs=64, **kw)
    return estimate(spec, gpu_total_bytes=int(94.97 * GiB), settings=s, compute_capability="12.0")


def test_profile_peak_of_a_025_run_on_sm120():
    """vLLM 0.25.0, two RTX PRO 6000 (SM120), TP 2, 4,096 batched tokens, 64 sequences, 1M context, MTP
    with 2 tokens: the log printed 75.64 GiB of weights, a 1.58 GiB CUDA-graph estimate and 10.29 GiB of
    KV from 0.95 × 94.97 GiB, so activation + non-torch = 2.71 GiB. By the code:
      W (shared workspace, largest user): the indexer's K gather 1,320 B × 1,048,576 + 1 MiB
        = 1,385,168,896 B (the FP4 MoE's DeepGEMM workspace, 2 × (6 × 4,096 + 256 × 127) rows × 4,096 × 2 B
        = 935,329,792 B, is smaller; no FlashMLA gather on SM120)
      one layer's live set per token: 4 residual streams × 4,096 × 2 B + input and output 2 × 8,192 +
        q_lora and latent rows 2 × 1,536 × 2 B + compressor scores 2 × 2 × 512 × 4 B + indexer 4 × 128 × 4 B
        = 65,536 B
      the indexer moment: 4,096 × (65,536 + 32 heads × 1,024 + 8,448) + 512 MiB = 974,127,104 B (larger than
        the attention moment, 4,096 × (65,536 + 2 × 32,768) = 536,870,912 B, and the 64-row sampler)
      FlashInfer's DeepSeek-V4 workspace on SM120: 128 MiB."""
    est = _profiled(speculative_method="mtp", num_speculative_tokens=2)
    assert est.activation_bytes == 1_385_168_896 + 974_127_104 + 134_217_728        # 2.32 GiB
    # with the 0.27 GiB non-torch estimate this is within 0.1 GiB of the 2.71 GiB vLLM left outside
    assert abs((est.activation_bytes + est.non_torch_bytes) / GiB - 2.71) < 0.15


def test_model_load_keeps_buffers_sized_by_the_batch():
    # the MTP hidden-state buffer [Tb, 4 × 4,096] bf16 and the indexer's top-k [Tb, 512] int32 are built
    # with the model (so in "Model loading took"): 4,096 more batched tokens add 4,096 × (32,768 + 2,048) B
    small = _profiled().weights_bytes
    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    s = EngineSettings(vllm_version="0.25.0", kv_cache_dtype="fp8", block_size=256, tensor_parallel_size=2,
                       max_model_len=1048576, max_num_batched_tokens=8192, max_num_seqs=64)
    large = estimate(spec, gpu_total_bytes=int(94.97 * GiB), settings=s, compute_capability="12.0").weights_bytes
    assert large - small == 4096 * (32_768 + 2_048)


def test_a_paste_without_its_version_is_dated_by_the_kv_need_it_printed():
    """No version in the paste, and the newest release (0.33) would count two batches in flight in the
    window caches (11.49 GiB for 30,000 tokens); vLLM printed 6.66 GiB — one batch of the LLM class's
    16,384 tokens, the arithmetic of 0.22–0.25 (test_needed_and_estimated_length_of_a_022_error): the
    newest release that gives it is modelled, and said."""
    from estimator import diagnose

    paste = (
        "llm = LLM(\n    model=\"deepseek-ai/DeepSeek-V4-Flash\",\n    tensor_parallel_size=2,\n"
        "    enable_expert_parallel=True,\n    max_model_len=30_000,\n    gpu_memory_utilization=0.95,\n"
        "    kv_cache_dtype=\"fp8\",\n    block_size=256,\n)\n"
        "ERROR 06-03 14:24:40 [core.py:1165] ValueError: To serve at least one request with the model's max seq "
        "len (30000), (6.66 GiB KV cache is needed, which is larger than the available KV cache memory (5.44 GiB). "
        "Based on the available memory, the estimated maximum model length is 13528. Try increasing "
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` "
        "when initializing the engine.\n")
    d = diagnose(paste, gpu="GH200", offline=True, explain=True)
    assert d.estimate["settings"]["vllm_version"] == "0.25.1"
    assert any("6.66 GiB for 30,000 tokens) is vLLM 0.25.1's arithmetic" in a for a in d.assumptions)
    assert round(d.estimate["kv_needed_bytes"] / GiB, 2) == 6.66
    assert not d.disagrees
    # the offline LLM class's default batch (16,384 on this card) is what the window caches hold in flight,
    # and the fixes are written into the user's own call, every line of it indented in the reply
    from estimator.render import render_markdown

    assert d.estimate["settings"]["max_num_batched_tokens"] == 16384
    first = d.suggestions[0]
    assert first["flags"] == "--max-num-batched-tokens 8192"
    assert first["command"].startswith("LLM(\n    model=\"deepseek-ai/DeepSeek-V4-Flash\",")
    assert "    max_num_batched_tokens=8192,\n)" in first["command"]
    assert "   LLM(\n       model=" in render_markdown(d)


def test_a_release_before_020_is_said_to_have_no_deepseek_v4():
    # model_executor/models/registry.py lists DeepseekV4ForCausalLM from 0.20.0 (not in 0.19.0)
    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    old = estimate(spec, gpu_total_bytes=int(139.8 * GiB), settings=EngineSettings(
        vllm_version="0.19.0", tensor_parallel_size=2, kv_cache_dtype="fp8", max_model_len=65536))
    assert any("vLLM 0.19.0 does not list DeepseekV4ForCausalLM in its model registry (listed from 0.20.0)" in a
               for a in old.assumptions)
    assert any("no DeepSeek-V4 KV layout" in a for a in old.assumptions)
    assert old.layout.dsv4 is None
    new = estimate(spec, gpu_total_bytes=int(139.8 * GiB), settings=EngineSettings(
        vllm_version="0.20.0", tensor_parallel_size=2, kv_cache_dtype="fp8", max_model_len=65536))
    assert new.layout.dsv4 is not None
    assert not any("DeepseekV4ForCausalLM" in a or "no DeepSeek-V4 KV layout" in a for a in new.assumptions)


def test_a_smaller_batch_is_offered_where_the_window_reservation_is_what_does_not_fit():
    """0.33, async scheduling: each request reserves its window caches' 128 − 1 + 2 × Tb tokens (and the 4×
    states' 7 + 2 × Tb): at Tb 8,192 a 1M-token request needs 4,096 latent blocks + 2 × 259 + 4,099 + 2,065 =
    10,778 blocks of 1,002,240 B; a pool of 7,000 blocks does not hold it. At Tb 2,048 the same request
    needs 4,096 + 2 × (⌈4,223 / 64⌉ + 1) + (⌈4,103 / 4⌉ + 1) + (⌈4,223 / 8⌉ + 1) = 4,096 + 134 + 1,027 + 529
    = 5,786 blocks — it fits, so the fix keeps the asked context."""
    from estimator.advice import suggest

    spec = load("deepseek-ai/DeepSeek-V4-Flash")
    s = EngineSettings(vllm_version="0.33.0", kv_cache_dtype="fp8", tensor_parallel_size=2, max_model_len=1048576,
                       max_num_batched_tokens=8192, kv_cache_memory_bytes=7000 * LATENT_GROUP + LATENT_GROUP)
    est = estimate(spec, gpu_total_bytes=int(94.97 * GiB), settings=s)
    assert est.kv_needed_bytes == 10778 * LATENT_GROUP and not est.fits
    fixes = {f.flags: f for f in suggest(est, error_kind="kv_capacity_v1")}
    assert "--max-num-batched-tokens 4096" not in fixes       # 4,096 + 2 × 131 + 2,051 + 1,041 = 7,450 > 7,000
    fix = fixes["--max-num-batched-tokens 2048"]
    assert fix.keeps_goal and fix.estimate.kv_needed_bytes == 5786 * LATENT_GROUP
