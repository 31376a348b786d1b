"""Settings a paste cuts off, read back from the capacity vLLM printed beside its pool
(anchoring.capacity_settings), and the check when no setting explains it (derive.layout_disagreement).

The expected token counts are worked out here from vLLM's V1 arithmetic (0.21+,
v1/core/kv_cache_utils.py): GPU KV cache size = int(blocks / blocks per request × max_model_len),
and a request of L tokens takes cdiv(L, block_size) attention blocks plus, for a hybrid model,
per Mamba group 1 state block (2 with prefix caching's "align" mode, +1 per speculative token:
v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes).
"""

from __future__ import annotations

import pytest

from estimator.diagnosis import diagnose

GiB = 2**30


def _log(pool_gib: str, tokens: int | None, length: int, command: str) -> str:
    lines = [f"$ {command}",
             f"(EngineCore pid=1) INFO 08-22 00:11:50 [gpu_worker.py:563] Available KV cache memory: {pool_gib} GiB"]
    if tokens is not None:
        lines += [f"(EngineCore pid=1) INFO 08-22 00:11:50 [kv_cache_utils.py:2235] GPU KV cache size: {tokens:,} tokens",
                  f"(EngineCore pid=1) INFO 08-22 00:11:50 [kv_cache_utils.py:2236] Maximum concurrency for "
                  f"{length:,} tokens per request: {tokens / length:.2f}x"]
    return "\n".join(lines) + "\n"


# Llama-3.1-8B: 32 layers × 8 KV heads × 128 head_dim × 2 (K, V) = 65,536 values per token; in
# 16-token blocks that is 2 MiB per block in bf16 and 1 MiB in fp8. A 55.00 GiB pool (about what an
# H100 leaves it at 0.92) holds 28,160 bf16 blocks or 56,320 fp8 blocks; a 131,072-token request
# takes 8,192 blocks, so vLLM prints int(28,160 / 8,192 × 131,072) = 450,560 tokens (bf16) or
# 901,120 (fp8).
LLAMA = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072"
BF16_TOKENS, FP8_TOKENS = 450_560, 901_120


def _llama(tokens: int, command: str = LLAMA):
    return diagnose(_log("55.00", tokens, 131_072, command), gpu="H100", vllm_version="0.27.0",
                    offline=True, explain=True)


def test_an_fp8_kv_cache_is_read_back_from_the_printed_capacity():
    d = _llama(FP8_TOKENS)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "fp8"
    assert e["gpu_blocks"] == 56_320
    assert e["kv_cache_tokens"] == FP8_TOKENS
    assert any("the paste does not show the KV cache dtype" in a and "an fp8 KV cache" in a for a in d.assumptions)
    assert not any("KV pool holds" in c for c in d.checks)
    # the fixes the reply re-checks keep the fp8 cache vLLM ran with
    assert any("--kv-cache-dtype fp8" in (s.get("command") or "") for s in d.suggestions)


def test_a_capacity_the_assumed_settings_give_changes_nothing():
    d = _llama(BF16_TOKENS)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "auto"
    assert e["gpu_blocks"] == 28_160 and e["kv_cache_tokens"] == BF16_TOKENS
    assert not any("the paste does not show" in a for a in d.assumptions)
    assert not d.checks or not any("KV pool holds" in c for c in d.checks)


def test_a_capacity_no_setting_gives_is_a_check_not_a_guess():
    """700,000 tokens in 55 GiB is neither 450,560 (bf16) nor 901,120 (fp8): nothing is read back,
    and the reply says vLLM's figure and the model's disagree (by more than 10%)."""
    d = _llama(700_000)
    assert d.estimate["settings"]["kv_cache_dtype"] == "auto"
    assert not any("the paste does not show" in a for a in d.assumptions)
    check = " ".join(d.checks)
    assert "its 55.00 GiB KV pool holds 700,000 tokens" in check and "holds 450,560 in it" in check
    assert "the KV cache dtype" in check
    assert d.disagrees


def test_a_stated_kv_cache_dtype_is_not_overridden():
    d = _llama(FP8_TOKENS, LLAMA + " --kv-cache-dtype auto")
    assert d.estimate["settings"]["kv_cache_dtype"] == "auto"
    assert d.estimate["kv_cache_tokens"] == BF16_TOKENS
    check = " ".join(d.checks)
    assert "holds 901,120 tokens" in check
    # the dtype was stated, so the check does not blame it
    assert "the KV cache dtype" not in check


# Qwen3.6-27B at TP 2 (bundled catalog): 16 full-attention layers and 48 Gated DeltaNet layers; V1
# groups layers 16 at a time, so 1 attention group and 3 Mamba groups share each block. 0.27 keeps
# prefix caching off for hybrid models unless asked for (1 state block per Mamba group per request).
# FP8 weights, as the talos-argocd-proxmox run this mirrors served them: 16-bit ones (25.5 GiB a rank)
# do not fit a 3090 at all, so no pool of theirs is a figure to read settings back from.
QWEN = ("vllm serve Qwen/Qwen3.6-27B --quantization fp8 --tensor-parallel-size 2 --max-model-len 131072 "
        "--kv-cache-dtype fp8_e4m3 --max-num-seqs 2")
MAMBA_GROUPS = 3


def _qwen(tokens: int | None):
    return diagnose(_log("4.99", tokens, 131_072, QWEN), gpu="RTX 3090", vllm_version="0.27.0",
                    offline=True, explain=True)


def _capacity(blocks: int, block_size: int, states: int, length: int = 131_072) -> int:
    per_request = -(-length // block_size) + MAMBA_GROUPS * states
    return int(blocks / per_request * length)


def test_prefix_caching_is_read_back_from_a_hybrid_models_capacity():
    base = _qwen(None).estimate
    blocks, bs = base["gpu_blocks"], base["settings"]["block_size"]
    assert base["settings"]["enable_prefix_caching"] is None
    align = _capacity(blocks, bs, states=2)
    d = _qwen(align)
    e = d.estimate
    assert e["settings"]["enable_prefix_caching"] is True
    assert e["gpu_blocks"] == blocks
    assert e["kv_cache_tokens"] == pytest.approx(align, abs=1)
    note = next(a for a in d.assumptions if "the paste does not show whether prefix caching was on" in a)
    assert "prefix caching on (Mamba cache mode 'align')" in note
    assert f"took {-(-131_072 // bs) + 2 * MAMBA_GROUPS} blocks" in note
    # the fixes are re-checked with prefix caching on, as vLLM ran
    assert all("--enable-prefix-caching" in s["command"] for s in d.suggestions if s.get("command"))


def test_a_hybrid_capacity_with_one_state_per_group_keeps_the_default():
    base = _qwen(None).estimate
    plain = _capacity(base["gpu_blocks"], base["settings"]["block_size"], states=1)
    d = _qwen(plain)
    assert d.estimate["settings"]["enable_prefix_caching"] is None
    assert d.estimate["kv_cache_tokens"] == pytest.approx(plain, abs=1)
    assert not any("the paste does not show" in a for a in d.assumptions)


def test_the_number_of_speculative_tokens_is_read_back():
    """MTP named without num_speculative_tokens: vLLM's default is 1; a capacity that needs 3
    speculative blocks per Mamba group says it was 3."""
    text = _log("4.99", None, 131_072, QWEN + " --enable-prefix-caching --speculative-config '{\"method\": \"mtp\"}'")
    base = diagnose(text, gpu="RTX 3090", vllm_version="0.27.0", offline=True, explain=True).estimate
    assert base["settings"]["speculative_method"] == "mtp"
    # k = 3: 2 align states + 3 speculative blocks per Mamba group
    target = _capacity(base["gpu_blocks"], base["settings"]["block_size"], states=2 + 3)
    d = diagnose(_log("4.99", target, 131_072, QWEN + " --enable-prefix-caching --speculative-config "
                      "'{\"method\": \"mtp\"}'"), gpu="RTX 3090", vllm_version="0.27.0", offline=True, explain=True)
    assert d.estimate["settings"]["num_speculative_tokens"] == 3
    assert any("3 speculative tokens per step" in a for a in d.assumptions)


# V0 (0.7.3) prints the pool and the block count ("# cuda blocks: N"): 71.27 − 14.99 − 0.15 − 1.22 =
# 54.91 GiB for the KV cache, which holds floor(54.91 × 1024 / 2) = 28,113 bf16 blocks of 2 MiB
# (Llama-3.1-8B, 16 tokens × 32 layers × 8 heads × 128 × 2 × 2 B) or floor(54.91 × 1024) = 56,227 fp8
# blocks of 1 MiB.
V0_LOG = ("$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072   # one H100\n"
          "INFO 04-12 08:21:19 [worker.py:267] Memory profiling takes 4.0 seconds\n"
          "the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\n"
          "model weights take 14.99GiB; non_torch_memory takes 0.15GiB; PyTorch activation peak memory takes "
          "1.22GiB; the rest of the memory reserved for KV Cache is 54.91GiB.\n"
          "INFO 04-12 08:21:19 [executor_base.py:111] # cuda blocks: {blocks}, # CPU blocks: 2048\n")


@pytest.mark.parametrize(("blocks", "dtype"), [(56_227, "fp8"), (28_113, "auto")])
def test_a_v0_block_count_says_which_kv_cache_dtype_ran(blocks, dtype):
    d = diagnose(V0_LOG.format(blocks=blocks), vllm_version="0.7.3", offline=True, explain=True)
    e = d.estimate
    assert e["settings"]["engine"] == "v0"
    assert e["settings"]["kv_cache_dtype"] == dtype
    assert e["gpu_blocks"] == blocks
    assert e["kv_cache_tokens"] == blocks * 16
    read_back = [a for a in d.assumptions if "the paste does not show the KV cache dtype" in a]
    assert bool(read_back) == (dtype == "fp8")
    if read_back:
        assert "56,227 blocks" in read_back[0] and "the assumed settings give 28,113 blocks" in read_back[0]


# V1's start-up error prints the KV one max_model_len request needs: Llama-3.1-8B at 131,072 tokens
# needs 131,072 × 131,072 B = 16.00 GiB in bf16, 8.00 GiB in fp8; with 5.00 GiB available an fp8
# cache holds 5 × 2^30 / 65,536 = 81,920 tokens (vLLM's estimated maximum model length).
V1_ERROR = ("$ {command}\n"
            "ValueError: To serve at least one request with the models's max seq len (131072), ({need} GiB KV cache "
            "is needed, which is larger than the available KV cache memory (5.00 GiB). Based on the available memory, "
            "the estimated maximum model length is {fit}. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.\n")


def test_the_kv_a_request_needs_says_which_kv_cache_dtype_ran():
    d = diagnose(V1_ERROR.format(command=LLAMA, need="8.00", fit=81920), gpu="RTX 4090", vllm_version="0.27.0",
                 offline=True, explain=True)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "fp8"
    assert e["kv_needed_bytes"] == 8 * GiB
    assert e["fits"] is False
    assert e["max_model_len_fit"] == 81_920 and not d.disagrees
    note = next(a for a in d.assumptions if "the paste does not show the KV cache dtype" in a)
    assert "8.00 GiB of KV for one 131,072-token request" in note and "the assumed settings give 16.00 GiB" in note
    # every fix is re-checked, and written, with the fp8 cache vLLM ran with
    assert d.suggestions and all("--kv-cache-dtype fp8" in s["command"] for s in d.suggestions)
    # the bf16 figure is the assumed settings' own: nothing to read back
    plain = diagnose(V1_ERROR.format(command=LLAMA, need="16.00", fit=40960), gpu="RTX 4090", vllm_version="0.27.0",
                     offline=True, explain=True)
    assert plain.estimate["settings"]["kv_cache_dtype"] == "auto"
    assert not any("the paste does not show" in a for a in plain.assumptions)


def test_a_per_token_head_cache_is_read_back_from_0_20():
    """Llama-3.1-8B with an 8-bit per-token-head cache (0.20+): 32 layers × 8 KV heads × (128 + 128 +
    2 fp32 scales × 4 B) = 67,584 B per token, 1,081,344 B per 16-token block; 55.00 GiB holds 54,613
    blocks, i.e. 873,808 tokens (8,192 blocks per 131,072-token request)."""
    d = _llama(873_808)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "int8_per_token_head"
    assert (e["gpu_blocks"], e["kv_cache_tokens"]) == (54_613, 873_808)
    assert any("per-token-head scales" in a and "fp8_per_token_head" in a for a in d.assumptions)
    assert all("--kv-cache-dtype int8_per_token_head" in s["command"] for s in d.suggestions)


def test_an_nvfp4_cache_is_read_back_from_0_20():
    """NVFP4: 32 × 8 × 2 × (64 + 8) = 36,864 B per token, 589,824 B per block; 140.00 GiB on a B200
    holds 254,862 blocks = 4,077,792 tokens. Before 0.20 (no such format) it is not tried."""
    text = _log("140.00", 4_077_792, 131_072, LLAMA)
    d = diagnose(text, gpu="B200", vllm_version="0.27.0", offline=True, explain=True)
    assert d.estimate["settings"]["kv_cache_dtype"] == "nvfp4"
    assert (d.estimate["gpu_blocks"], d.estimate["kv_cache_tokens"]) == (254_862, 4_077_792)
    # before 0.20 there is no such format to read back
    old = diagnose(text, gpu="B200", vllm_version="0.19.0", offline=True, explain=True)
    assert old.estimate["settings"]["kv_cache_dtype"] == "auto"


def test_v0_blocks_beside_the_pool_read_back_the_block_size():
    """V0 prints its pool in GiB and in blocks ("reserved for KV Cache is 54.32GiB", "# CUDA blocks:
    6953"): their ratio is the block size, which frameworks set for their own reasons (Dynamo's KV
    routing used 64). Llama-3.1-8B keeps 131,072 B per token: 54.32 GiB ÷ (64 × 131,072 B = 8 MiB) =
    6,953 blocks, where 16-token blocks give 27,811; the fixes keep --block-size 64."""
    log = ("INFO 04-03 01:48:02 llm_engine.py:246] Initializing a V0 LLM engine (v0.7.2) with config: "
           "model='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, max_seq_len=16384, tensor_parallel_size=1\n"
           "INFO 04-03 01:39:44 worker.py:270] the current vLLM instance can use total_gpu_memory (79.10GiB) x "
           "gpu_memory_utilization (0.90) = 71.19GiB\n"
           "INFO 04-03 01:39:44 worker.py:270] model weights take 14.99GiB; non_torch_memory takes 0.16GiB; PyTorch "
           "activation peak memory takes 1.72GiB; the rest of the memory reserved for KV Cache is 54.32GiB.\n"
           "INFO 04-03 01:39:44 executor_base.py:110] # CUDA blocks: {blocks}, # CPU blocks: 512\n"
           "INFO 04-03 01:39:44 executor_base.py:115] Maximum concurrency for 16384 tokens per request: {x}x\n")
    # an fp8 cache in 128-token blocks fills the pool with as many blocks: the concurrency line,
    # blocks × block size ÷ 16,384 = 6,953 × 64 ÷ 16,384 = 27.16, tells them apart (× 128: 54.32)
    d = diagnose(log.format(blocks=6953, x="27.16"), offline=True, explain=True)
    assert d.estimate["settings"]["block_size"] == 64 and d.estimate["gpu_blocks"] == 6953
    assert any("64-token blocks (`--block-size 64`)" in a for a in d.assumptions)
    assert all("--block-size 64" in s["command"] for s in d.suggestions)
    plain = diagnose(log.format(blocks=27811, x="27.16"), offline=True, explain=True)
    assert plain.estimate["settings"]["block_size"] == 16
    assert not any("block size" in a for a in plain.assumptions)


# Gemma 4 26B-A4B (AWQ) on vLLM 0.22.1 (an RTX 3090, bf16 KV): 5 full-attention layers × 2 KV heads × 512
# head_dim × 2 (K, V) × 2 B = 20,480 B a token; 25 sliding-window layers (window 1,024) × 8 KV heads
# × 256 × 2 × 2 B = 8,192 B a token each. V1 groups them 5 layers a group, one page of 131,072 B per
# layer (16 sliding tokens, 32 full-attention ones), 655,360 B per block id. One 262,144-token request
# takes 262,144 / 32 = 8,192 full-attention blocks and, per sliding group, cdiv(1,023 + batch, 16) + 1
# blocks (SlidingWindowSpec.max_memory_usage_bytes; one batch in flight before 0.26): 193 at the
# 2,048-token default, (8,192 + 5 × 193) × 655,360 B = 5.59 GiB; 321 at 4,096, (8,192 + 5 × 321) ×
# 655,360 = 6,420,561,920 B = 5.98 GiB (club-3090#334's printed figure, its compose's batch).
GEMMA = "vllm serve google/gemma-4-26B-A4B --quantization awq --max-model-len 262144 --gpu-memory-utilization 0.92"


def _gemma_need(need_gib: str, command: str = GEMMA):
    text = (f"$ {command}\n"
            "ERROR 06-06 10:00:00 [core.py:708] ValueError: To serve at least one request with the models's max seq "
            f"len (262144), ({need_gib} GiB KV cache is needed, which is larger than the available KV cache memory "
            "(1.82 GiB). Based on the available memory, the estimated maximum model length is 44224. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    return diagnose(text, gpu="RTX 3090", vllm_version="0.22.1", offline=True, explain=True)


def test_a_batch_size_is_read_back_from_a_windowed_models_printed_need():
    d = _gemma_need("5.98")
    e = d.estimate
    assert e["settings"]["max_num_batched_tokens"] == 4096
    assert e["kv_needed_bytes"] == (8_192 + 5 * 321) * 655_360 == 6_420_561_920
    assert any("the paste does not show max_num_batched_tokens" in a and "--max-num-batched-tokens 4096" in a
               for a in d.assumptions)
    # the fixes re-checked keep the batch vLLM ran with
    commands = [s.get("command") or "" for s in d.suggestions]
    assert commands and all("--max-num-batched-tokens 4096" in c for c in commands if c)


def test_a_need_the_default_batch_gives_reads_nothing_back():
    d = _gemma_need("5.59")
    e = d.estimate
    assert e["settings"]["max_num_batched_tokens"] == 2048
    assert e["kv_needed_bytes"] == (8_192 + 5 * 193) * 655_360
    assert not any("the paste does not show" in a for a in d.assumptions)


def test_a_stated_batch_size_is_not_overridden():
    d = _gemma_need("5.98", GEMMA + " --max-num-batched-tokens 2048")
    assert d.estimate["settings"]["max_num_batched_tokens"] == 2048
    assert not any("the paste does not show max_num_batched_tokens" in a for a in d.assumptions)


# Qwen3.6-27B (hybrid: 16 full-attention layers, 48 Gated DeltaNet layers) at TP 2. Per rank a GDN
# layer's state is 3 × 5,120 conv values × 2 B + 24 heads × 128 × 128 × 4 B (fp32 SSM state) =
# 1,603,584 B; an attention layer's token is 2 heads × 256 × 2 × 1 B = 1,024 B in fp8 (2,048 in bf16),
# so the attention block is raised to 1,568 tokens (784 in bf16) and every page is 1,605,632 B; a
# block of a 16-layer group is 25,690,112 B. One 131,072-token request with prefix caching (on by
# default for hybrid models from 0.28, "align" mode: 2 state blocks per Mamba group) takes
# cdiv(131,072, 1,568) = 84 attention blocks + 3 × 2 = 90 blocks in fp8 (168 + 6 = 174 in bf16).
QWEN36 = "vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2 --max-model-len 131072 --gpu-memory-utilization 0.92"
QWEN36_BLOCK = 16 * 1_605_632


def test_a_setting_tried_at_the_value_the_run_resolves_it_to_is_not_a_second_reading():
    # a 43.08 GiB pool holds 1,800 blocks; vLLM prints int(1,800 / 90 × 131,072) = 2,621,440 tokens for
    # fp8 (bf16: int(1,800 / 174 × 131,072) = 1,355,917). "fp8" and "fp8 with prefix caching on" are
    # the same run on 0.30 — one reading, so the dtype is read back
    d = diagnose(_log("43.08", 2_621_440, 131_072, QWEN36), gpu="H100", vllm_version="0.30.0",
                 offline=True, explain=True)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "fp8"
    assert e["gpu_blocks"] == 1_800 and e["kv_cache_tokens"] == 2_621_440
    note = next(a for a in d.assumptions if "the paste does not show the KV cache dtype" in a)
    assert "only an fp8 KV cache" in note and "prefix caching" not in note


def test_the_kv_a_request_needs_reads_back_the_dtype_where_no_state_reproduces_the_pool():
    # on two 16 GB V100s the bf16 weights the model id names (~25 GiB a rank) exceed the budget, so no
    # state reproduces the 1.50 GiB pool (the run loaded a smaller checkpoint); the need is the layout's
    # own arithmetic and still says fp8: 90 × 25,690,112 B = 2.15 GiB (bf16: 174 blocks, 4.16 GiB). The
    # pool's 62 blocks less 6 state blocks hold 56 × 1,568 = 87,808 tokens, vLLM's estimate
    d = diagnose(V1_ERROR.format(command=QWEN36, need="2.15", fit=87808).replace("(5.00 GiB)", "(1.50 GiB)"),
                 gpu="V100 16GB", vllm_version="0.30.0", offline=True, explain=True)
    e = d.estimate
    assert e["settings"]["kv_cache_dtype"] == "fp8"
    assert e["kv_needed_bytes"] == 90 * QWEN36_BLOCK
    assert any("only an fp8 KV cache" in a for a in d.assumptions)
    assert not any("KV layout for this architecture is not vLLM's" in c for c in d.checks)
