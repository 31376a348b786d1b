"""Reverse derivation as the reply shows it: which figure is read, derived or assumed, and how.

Every expected number here is worked out by hand in the test from the model's config (bundled
catalog) and vLLM's formulas, not copied from the code's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from estimator.diagnosis import diagnose
from estimator.paste import read_paste
from estimator.render import render_markdown
from estimator.vllm import NEWEST

GiB = 2**30

# A summary page retelling a vLLM start-up (labels and values on their own lines), as blogs and
# dashboards print it. Gemma-4-31B-IT-NVFP4: 50 sliding-window layers (window 1,024; 16 KV heads ×
# 256) and 10 global layers (4 KV heads × 512; K = V in the model, but vLLM's cache keeps both); its
# ModelOpt config quantizes the KV cache to fp8 (1 byte).
SUMMARY = """Model Gemma-4-31B-IT-NVFP4
Weights 31.18 GiB
KV cache 1,563,739 tokens
Context 262,144 tok
KEY [APIServer] non-default args: model=nvidia/Gemma-4-31B-IT-NVFP4 · max_num_batched_tokens=4096
vLLM 0.21.0 on an H100
"""


def test_a_number_is_one_fact():
    """'Weights 31.18 GiB' followed by a 'KV cache …' row is the weights, not also a KV pool."""
    f = read_paste(SUMMARY)
    assert f.get("weights_gib") == 31.18
    assert f.get("kv_cache_gib") is None and f.get("kv_available_gib") is None
    assert f.get("kv_tokens_capacity") == 1563739
    # a sentence wrapped inside "… GiB of / KV" still reads as the KV pool
    assert read_paste("which leaves 25.94 GiB of\nKV cache on each rank").get("kv_cache_gib") == 25.94
    assert read_paste("which leaves 25.94 GiB\nof KV cache on each rank").get("kv_cache_gib") == 25.94


@pytest.fixture(scope="module")
def summary():
    d = diagnose(SUMMARY, offline=True, explain=True)
    assert d is not None and d.estimate is not None
    return d


def test_kv_formula_has_one_term_per_layer_shape(summary):
    # sliding: 50 × 16 × 256 × 2 (K,V) × 1 B = 409,600; global: 10 × 4 × 512 × 2 × 1 B = 40,960 — the
    # global layers' K=V sharing is the model's, vLLM's cache still has K and V slots (gemma4.py)
    assert 50 * 16 * 256 * 2 + 10 * 4 * 512 * 2 == 450_560
    f = summary.kv_formula
    assert "50 sliding-window layers (window 1,024) × 16 KV heads per GPU × 256 head_dim × 2 (K,V)" in f
    assert "10 full-attention layers × 4 KV heads per GPU × 512 head_dim × 2 (K,V)" in f
    assert "× 1 B (fp8) = 450,560 B per token" in f
    assert any("KV cache in fp8" in a for a in summary.assumptions)


def test_kv_pool_back_solved_from_the_token_capacity(summary):
    """0.21+ prints int(concurrency × max_model_len); concurrency = blocks ÷ blocks per request."""
    # Pages are unified to the sliding layers' 16 tokens × 16 heads × 256 × 2 × 1 B = 131,072 B; the
    # global layers (4 × 512 × 2 × 1 B = 4,096 B per token) get 32-token blocks. One 262,144-token
    # request: the global group 262,144 / 32 = 8,192 blocks; each of 5 sliding groups
    # cdiv(1,023 + 4,096, 16) + 1 = 321.
    per_request = 8192 + 5 * 321
    blocks = -(-1563739 * per_request // 262144)
    assert (per_request, blocks) == (9797, 58441)
    assert int(blocks / per_request * 262144) == 1563739 > int((blocks - 1) / per_request * 262144)
    pool = blocks * 10 * 131072            # a block id spans the 10 layers of a group
    fig = summary.derived["figures"]["kv_pool"]
    assert fig["provenance"] == "derived" and fig["value"] == pool
    assert "58,441 blocks" in fig["how"]
    need = summary.derived["figures"]["kv_needed"]
    assert "at most 5,119 tokens in the sliding-window layers" in need["how"]   # 1,024 − 1 + 4,096
    assert "all 262,144 tokens in the full-attention layers" in need["how"]


def test_a_pool_larger_than_the_budget_keeps_the_models_parts_and_says_what_to_check(summary):
    """71.3 GiB of KV plus 31.18 GiB of weights exceed 0.92 × an H100 SXM's 79.18 GiB (72.84 GiB):
    the card or the utilization differ from the assumed ones. The table keeps the model's own
    estimates (never a row of zeros) and the reply asks for nvidia-smi and the memory lines."""
    figs = summary.derived["figures"]
    assert figs["total"]["provenance"] == "assumed" and figs["utilization"]["provenance"] == "assumed"
    assert figs["activation"]["value"] > 0.5 * GiB and figs["activation"]["provenance"] == "estimated"
    assert figs["non_torch"]["value"] > 0
    check = " ".join(summary.checks)
    assert "more than the budget" in check and "nvidia-smi" in check
    assert "GPU size and the gpu_memory_utilization were assumed" in check
    # the pool and the printed weights alone (102.5 GiB) overrun the whole 79.18 GiB card: no
    # utilization explains that, a larger card does
    assert "the likely cause is a larger card." in check and "higher utilization" not in check


V100_ERROR = (
    "2x V100 16GB, TP2, gpu_memory_utilization 0.92:\n"
    "$ vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2 --max-model-len 131072 --gpu-memory-utilization 0.92\n"
    "ValueError: To serve at least one request with the model's max seq len (131072), (2.15 GiB KV cache is needed, "
    "which is larger than the available KV cache memory (1.50 GiB). Based on the available memory, the estimated "
    "maximum model length is 87808. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
    "initializing the engine.\n")


def test_weights_and_pool_that_overrun_the_card_point_to_a_smaller_checkpoint():
    """Qwen3.6-27B in bf16 is ~25 GiB a rank at TP 2, more than a 16 GB V100's 15.78 GiB before any KV:
    the run that printed a 1.50 GiB pool loaded a smaller (quantized) checkpoint than the model id's —
    the card the paste names comes second, and no utilization is a cause."""
    d = diagnose(V100_ERROR, vllm_version="0.30.0", offline=True, explain=True)
    figs = d.derived["figures"]
    weights = figs["weights"]
    assert weights["provenance"] == "estimated" and weights["value"] + 1.5 * GiB > figs["total"]["value"]
    check = next(c for c in d.checks if "more than the budget" in c)
    assert (f"the likely causes are a smaller checkpoint than the {weights['value'] / GiB:.2f} GiB of weights per GPU "
            "estimated for the model id (a quantized copy) or a larger card.") in check
    assert '"Model loading took …"' in check and "utilization" not in check.split("assumed")[-1]


def test_a_pool_the_card_can_hold_is_no_sign_of_another_checkpoint():
    """Qwen3-1.7B (3.2 GiB of bf16 weights) and an 18.78 GiB pool fit a 24 GB card together: the
    budget the defaults of a January 2026 release give (0.9 of the card) is what is off, not the
    checkpoint (vllm#33263)."""
    d = diagnose("LLM(model='Qwen/Qwen3-1.7B', max_num_seqs=1, max_model_len=1024) on a 24 GB GPU:\n"
                 "INFO 01-28 16:08:46 [gpu_worker.py:358] Available KV cache memory: 18.78 GiB\n"
                 "INFO 01-28 16:08:46 [kv_cache_utils.py:1305] GPU KV cache size: 175,856 tokens\n",
                 offline=True, explain=True, posted="2026-01-28")
    check = next(c for c in d.checks if "more than the budget" in c)
    assert "smaller checkpoint" not in check and "Model loading took" not in check
    assert "the likely causes are a larger card or a higher utilization." in check


NO_GPU = """ERROR 04-17 15:10:09 [engine.py:448] ValueError: The model's max seq len (32768) is larger than the
maximum number of tokens that can be stored in KV cache (22352). Try increasing `gpu_memory_utilization` or
decreasing `max_model_len` when initializing the engine.
$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768
"""


def test_no_card_in_the_paste_the_kv_figure_implies_its_size():
    """Llama-3.1-8B (15 GiB of bf16 weights) with 22,352 tokens of KV left cannot be an 80 GB card:
    the figures put the card at (non-KV + KV) / 0.9, a 24 GB class card, and the fixes are
    checked on that size instead of on a default H100. By hand: V0 0.8 without chunked prefill
    profiles Tb = 32,768 tokens, (3 × 14,336 + 3 × 4,096) × 2 B × 32,768 = 3.375 GiB; weights
    14.99 GiB; non-torch 0.15 GiB; KV 1,397 blocks × 16 × 131,072 B = 2.73 GiB:
    (18.51 + 2.73) ÷ 0.9 = 23.6 GiB."""
    d = diagnose(NO_GPU, offline=True, explain=True)
    assert d is not None and d.estimate is not None
    fig = d.derived["figures"]["total"]
    assert fig["provenance"] == "derived" and "no GPU in the paste" in fig["how"]
    # 22,352 tokens = 1,397 blocks × 16 × 131,072 B per token (32 layers × 8 × 128 × 2 × 2 B) = 2.73 GiB
    pool = 1397 * 16 * 32 * 8 * 128 * 2 * 2
    mem = d.estimate["memory"]
    non_kv = mem["weights_bytes"] + mem["activation_bytes"] + mem["non_torch_bytes"] + mem["cuda_graph_bytes"]
    assert fig["value"] == pytest.approx((non_kv + pool) / 0.9, rel=0.01)
    assert fig["value"] == pytest.approx(23.6 * GiB, rel=0.01)
    # cards of about that size are named (all 24 GB class: A10G/L4 22 GiB … RTX 3090/4090 23.6 GiB)
    assert any(name in fig["how"] for name in ("A10G", "L4", "A10", "RTX 3090", "RTX 4090", "A5000"))
    assert abs(d.estimate["kv_cache_tokens"] - 22352) <= 16     # the state reproduces vLLM's figure


_V2_RUNNER_TP4 = (  # vllm PR48601's log: 72.78 − 7.39 − 1.54 − 0.60 = 63.25, the KV pool
    "VLLM_USE_V2_MODEL_RUNNER=1 vllm serve Qwen/Qwen3.6-27B-FP8 -tp 4\n"
    "(Worker_TP2 pid=1) INFO 07-14 09:50:23 [gpu_worker.py:855] Free memory on device (77.57/79.11 GiB) on "
    "startup. Desired GPU memory utilization is (0.92, 72.78 GiB). Actual usage is 7.39 GiB for weight, "
    "1.54 GiB for peak activation, 0.6 GiB for non-torch memory, and 2.04 GiB for CUDAGraph memory. Replace "
    "gpu_memory_utilization config with `--kv-cache-memory=65565989131` (61.06 GiB) to fit into requested "
    "memory, or `--kv-cache-memory=70712017408` (65.86 GiB) to fully utilize gpu memory. Current kv cache "
    "memory in use is 63.25 GiB.\n")
_V0_NO_MODEL_A800 = (  # a LLaMA-Factory A800 log (0.8.2 V0): 71.39 − 4.03 − 1.39 − 0.32 = 65.65
    "INFO 07-09 12:57:45 [worker.py:267] the current vLLM instance can use total_gpu_memory (79.33GiB) x "
    "gpu_memory_utilization (0.90) = 71.39GiB\n"
    "INFO 07-09 12:57:45 [worker.py:267] model weights take 4.03GiB; non_torch_memory takes 1.39GiB; PyTorch "
    "activation peak memory takes 0.32GiB; the rest of the memory reserved for KV Cache is 65.65GiB.\n"
    "INFO 07-09 12:58:20 [model_runner.py:1570] Graph capturing finished in 32 secs, took 2.74 GiB\n")


@pytest.mark.parametrize(("text", "split", "pool", "has_model"), [
    (_V2_RUNNER_TP4, (72.78, 7.39, 1.54, 0.60), 63.25, True),
    (_V0_NO_MODEL_A800, (71.39, 4.03, 1.39, 0.32), 65.65, False),
])
def test_graphs_captured_after_the_kv_cache_are_not_part_of_the_split(text, split, pool, has_model):
    """The V2 model runner prints its CUDA-graph memory but never set it aside, and V0's capture
    runs after the KV cache is sized: budget − weights − activation − non-torch is the KV pool in
    both logs, so the graph memory is no budget overrun, with or without a known model."""
    budget, weights, activation, non_torch = split
    assert round(budget - weights - activation - non_torch, 2) == pool
    d = diagnose(text, offline=True, explain=True)
    assert d is not None and (d.estimate is not None) == has_model
    assert not any("more than the budget" in c or "does not explain" in c for c in d.checks), d.checks
    assert "not set aside" in d.derived["figures"]["cuda_graphs"]["how"]


def test_without_a_model_no_unexplained_memory_is_claimed():
    """No config, no weights read: nothing is 'unexplained', the reply asks for the model."""
    d = diagnose("INFO Available KV cache memory: 7.71 GiB\nINFO total_gpu_memory 95.0 GiB\n"
                 "vllm serve some-org/not-a-real-model-xyz", offline=True, explain=True)
    assert d is not None
    assert not any("does not explain" in c for c in d.checks)


def test_when_the_model_cannot_reproduce_vllm_its_own_numbers_lead():
    """48.66 GiB of KV next to a 480B FP8 model's weights cannot fit an L40S (44 GiB, and no
    larger L40S exists): the state disagrees with vLLM's figures, so the reply leads with what
    vLLM itself computed (its estimated maximum length, rounded down: 205,728 → 200 × 1,024 =
    204,800) and labels the model's re-checked fixes as resting on its own state."""
    text = ("ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available "
            "memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n"
            "$ vllm serve Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8 -dp 8 --enable-expert-parallel\n"
            "GPU: 8x L40S\n")
    d = diagnose(text, offline=True)
    assert d is not None and d.estimate is not None and d.disagrees
    assert "`--max-model-len 204800`" in d.summary and "disagree" in d.summary
    md = render_markdown(d)
    assert md.index("From vLLM's own numbers") < md.index("**Fixes**")
    assert "on the model's own state" in md


def test_a_card_named_without_its_size_is_the_variant_vllms_figures_imply():
    """"H20" is sold with 96 GB and 141 GB. With 48.66 GiB of KV left next to a 480B FP8 model's
    weights (DP8 + EP), only the 141 GB card fits vLLM's figures: (non-KV + KV) / 0.9 lands within
    a few percent of its 140.53 GiB, so that variant is modelled, and said."""
    text = ("ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available "
            "memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n"
            "$ vllm serve Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8 -dp 8 --enable-expert-parallel\n"
            "GPU: 8x H20\n")
    d = diagnose(text, offline=True)
    assert d is not None and d.estimate is not None and not d.disagrees
    assert d.estimate["gpu"]["name"] == "NVIDIA H20 141GB"
    fig = d.derived["figures"]["total"]
    assert fig["provenance"] == "derived" and "without its size" in fig["how"]
    assert d.estimate["memory"]["kv_cache_bytes"] / GiB == pytest.approx(48.66, abs=0.01)
    # the same paste on a card whose only size cannot hold it: the named card stays
    assert diagnose(text.replace("H20", "L40S"), offline=True).estimate["gpu"]["name"] == "NVIDIA L40S"


SMI = """|   0  NVIDIA GeForce RTX 4060 Ti     Off |   00000000:01:00.0 Off |                  N/A |
|  0%   33C    P8              9W /  160W |    3578MiB /   8188MiB |      0%      Default |
python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-0.5B-Instruct --gpu_memory_utilization 0.4
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


@pytest.mark.parametrize("total_mib,expected_gib", [
    (8188, (8188 - 480) / 1024),     # no catalog card shows 8,188 MiB: the usual ~480 MiB reservation
    (24564, 23.64),                  # the RTX 4090's nvidia-smi total; torch's 23.64 GiB was observed
])
def test_nvidia_smi_total_is_not_torchs(total_mib, expected_gib):
    """vLLM budgets from torch's total; nvidia-smi's MiB total includes the driver's reservation.
    Before, 8,188 MiB was used as an 8.00 GiB torch total (0.19 GiB more budget at 0.4)."""
    d = diagnose(SMI.replace("8188MiB", f"{total_mib}MiB"), offline=True, explain=True)
    fig = d.derived["figures"]["total"]
    assert fig["provenance"] == "derived" and "nvidia-smi" in fig["how"]
    assert fig["value"] / GiB == pytest.approx(expected_gib, abs=0.01)
    assert d.estimate["gpu"]["total_bytes"] == fig["value"]


def test_slack_leads_with_vllms_numbers_when_the_state_disagrees():
    from estimator.render import render_slack

    text = ("ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available "
            "memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n"
            "$ vllm serve Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8 -dp 8 --enable-expert-parallel\nGPU: 8x L40S\n")
    d = diagnose(text, offline=True)
    blocks = [b["text"]["text"] for b in render_slack(d)["blocks"] if b.get("type") == "section"]
    first_fix = next(i for i, t in enumerate(blocks) if t.startswith("*1.*"))
    own = next(i for i, t in enumerate(blocks) if t.startswith("*From vLLM's own numbers:*"))
    assert own < first_fix and "--max-model-len 204800" in blocks[own]
    # the disagreement itself is said in Slack too, not only in the markdown reply
    assert any(t.startswith("*Checks:*") and t.rstrip().endswith(".") for t in blocks)


# vllm#13061's shape: V0, TP=2, the user quotes a memory line whose KV figure (8.69 GiB) is more than
# the capacity in the error. DeepSeek-R1-Distill-Qwen-14B is built on Qwen2.5-14B (48 layers, 8 KV
# heads × 128, vocab 152,064), which is in the catalog.
V0_TP2 = """vllm serve --tensor_parallel_size 2 --gpu_memory_utilization=0.98 Qwen/Qwen2.5-14B-Instruct
(VllmWorkerProcess pid=1786) INFO 02-11 07:40:45 model_runner.py:1115] Loading model weights took 13.9476 GB
(VllmWorkerProcess pid=1786) INFO 02-11 07:40:47 worker.py:267] Memory profiling takes 1.9 seconds
the current vLLM instance can use total_gpu_memory (23.55GiB) x gpu_memory_utilization (0.98) = 23.08GiB
model weights take 13.95GiB; non_torch_memory takes 0.25GiB; PyTorch activation peak memory takes 0.19GiB; the rest of the memory reserved for KV Cache is 8.69GiB.
ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (81536). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""


def test_a_v0_workers_memory_line_is_not_the_drivers_pool():
    """V0 gathers the logits to TP rank 0 and only that driver samples, so its pool is smaller and
    the executor gives every worker its block count; the line quoted is rank 1's."""
    d = diagnose(V0_TP2, offline=True, explain=True, vllm_version="0.7.2")
    assert d is not None and d.estimate is not None
    per_block = 48 * (8 // 2) * 128 * 2 * 2 * 16                # 1,572,864 B = 1.5 MiB on each TP2 rank
    blocks = 81536 // 16                                         # 5,096: the capacity in the error
    fig = d.derived["figures"]["kv_pool"]
    assert fig["provenance"] == "derived" and fig["value"] == blocks * per_block        # 7.46 GiB
    assert "the 8.69 GiB printed is another worker's" in fig["how"]
    # rank 1 printed 8.69 GiB = 5,933 blocks; the driver is 837 blocks (1.23 GiB) short: its sampler
    # (256 rows × 152,064 × 40 B) less the forward pass rank 1 also has (V0: 2,048 tokens ×
    # (3 × 13,824 / 2 + 3 × 5,120) × 2 B, the MLP's live set)
    extra = 256 * 152064 * 40 - 2048 * (3 * 13824 // 2 + 3 * 5120) * 2
    assert f"≈{extra / GiB:.2f} GiB modelled" in " ".join(d.notes)
    assert "smallest worker's block count" in " ".join(d.notes)
    act = d.derived["figures"]["activation"]
    assert act["provenance"] == "derived" and act["value"] > GiB and "0.19 GiB printed is another worker's" in act["how"]
    # the fix fits the driver's 81,536 tokens, not rank 1's 94,928
    first = d.suggestions[0]
    assert first["flags"].startswith("--max-model-len ") and first["fits"]
    assert first["max_model_len"] <= first["kv_cache_tokens"] <= 81536
    assert not any("MiB per block" in c for c in d.checks)


def test_a_single_gpu_mismatch_stays_a_layout_check():
    """Without TP every rank is the driver: a printed pool larger than the capacity is a model /
    dtype mismatch, and the reply says so instead of blaming another worker. (One GPU: no worker
    process prefixes either — V0 starts VllmWorkerProcess only beside a driver.)"""
    text = V0_TP2.replace("--tensor_parallel_size 2 ", "").replace("13.9476", "27.5").replace("13.95GiB", "27.5GiB")
    text = text.replace("(VllmWorkerProcess pid=1786) ", "")
    d = diagnose(text, offline=True, explain=True, vllm_version="0.7.2")
    assert d is not None and d.estimate is not None
    assert d.derived["figures"]["kv_pool"]["provenance"] == "read"
    assert not any("another worker" in n for n in d.notes)


def _v1_error(need_gib: str, fit: int) -> str:
    return ("$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072 --gpu-memory-utilization 0.9   # RTX 4090, vLLM 0.10.1\n"
            f"ValueError: To serve at least one request with the models's max seq len (131072), ({need_gib} GiB KV cache is "
            "needed, which is larger than the available KV cache memory (4.69 GiB). Based on the available memory, the "
            f"estimated maximum model length is {fit}. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.\n")


def test_vllms_printed_need_tests_the_models_kv_layout():
    """Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 × 2 B = 131,072 B per token, so 131,072 tokens
    need 16.00 GiB and 4.69 GiB hold 2,401 whole 16-token blocks = 38,416 tokens."""
    assert 32 * 8 * 128 * 2 * 2 * 131072 == 16 * GiB and int(4.69 * GiB) // (131072 * 16) * 16 == 38416
    agree = diagnose(_v1_error("16.00", 38416), offline=True, explain=True)
    assert not agree.disagrees and not any("layout" in c for c in agree.checks)
    # a need twice the model's (a cache layout the model does not know) → vLLM's numbers lead
    other = diagnose(_v1_error("32.00", 19200), offline=True, explain=True)
    assert other.disagrees
    assert any("need 32.00 GiB of KV; the model's layout gives 16.00 GiB" in c for c in other.checks)
    assert "vLLM says 131,072 tokens need 32.00 GiB of KV" in other.summary
    assert "Likely fix: `--max-model-len" in other.summary and "19,200" in other.summary


def test_no_blocks_where_the_model_leaves_room_is_a_disagreement_not_a_fix():
    """Qwen3-8B at 0.4 of an 80 GB card leaves the model ≈15 GiB of KV, yet vLLM found none: the
    memory went to something the model does not see; fixes re-checked on a state that already fits
    would change nothing, so none is offered and nvidia-smi is asked for."""
    text = ("$ vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.4   # A100 80GB, vLLM 0.10.1\n"
            "ERROR 04-30 10:20:36 [core.py:396] ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "no_cache_blocks" and d.disagrees and d.suggestions == []
    assert any("found no memory for the KV cache, but the model leaves" in c and "nvidia-smi" in c for c in d.checks)
    assert "disagree with vLLM's" in d.summary


def test_v0_064_charges_other_processes_to_this_instance():
    """vllm#10533's shape: 0.6.4's initial_memory_usage (total − free when profiling starts) holds
    this instance's weights and CUDA context too: 68.01 − 9.30 − 0.45 = 58.26 GiB belong to the
    other instance, and 0.6.4 counts them against this one's 0.2 × 79.15 GiB = 15.83 GiB."""
    text = ("python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-14B-Instruct --gpu-memory-utilization 0.20 "
            "--max-model-len=16384\n"
            "INFO 11-21 01:02:00 model_runner.py:1077] Loading model weights took 9.3000 GB\n"
            "INFO 11-21 01:02:03 worker.py:232] Memory profiling results: total_gpu_memory=79.15GiB "
            "initial_memory_usage=68.01GiB peak_torch_memory=10.90GiB memory_usage_post_profile=69.02GiB "
            "non_torch_memory=59.01GiB kv_cache_size=-54.08GiB gpu_memory_utilization=0.20\n"
            "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine.\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "no_cache_blocks"
    assert "Other processes hold 58.26 GiB of this GPU, and vLLM 0.6.4 charges" in d.summary
    assert "15.83 GiB budget" in d.summary
    assert any("from 0.6.5 each instance's utilization is its own share" in n for n in d.notes)
    # the 0.6.4 torch peak counts the weights: 10.90 − 9.30 = 1.60 GiB of activation
    act = d.derived["figures"]["activation"]
    assert act["provenance"] == "derived" and act["value"] == round(1.60 * GiB)
    # within 0.6.4, the second instance's utilization has to cover the first's memory as well
    fix = d.suggestions[0]
    assert fix["flags"].startswith("--gpu-memory-utilization") and "has to cover theirs too" in fix["why"]
    # the line cut after initial_memory_usage (the dev excerpt): the non-torch row says whose it mostly is
    cut = text.split(" peak_torch_memory")[0] + "\nValueError: No available memory for the cache blocks.\n"
    nt = diagnose(cut, offline=True, explain=True).derived["figures"]["non_torch"]
    assert nt["provenance"] == "estimated" and "plus the 58.26 GiB other processes hold" in nt["how"]


def test_v0_without_chunked_prefill_is_offered_it():
    """vllm#10517: Llama-3.1-8B on a 3090 at 29,000 tokens fails (23,648) while 35,000 starts —
    above 32K V0 turns chunked prefill on, and the profile run shrinks from 29,000 tokens to 512."""
    text = ("$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 29000   # RTX 3090\n"
            "Loading model weights took 14.9888 GB\n"
            "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB "
            "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n"
            "# GPU blocks: 1478, # CPU blocks: 2048\n"
            "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache "
            "(23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    d = diagnose(text, offline=True, explain=True)
    # 15.34 − 14.99 − 0.45 < 0.1 GiB: nobody else on the card
    assert not any("other processes hold" in n for n in d.notes)
    chunked = next(s for s in d.suggestions if s["flags"] == "--enable-chunked-prefill")
    assert chunked["fits"] and chunked["max_model_len"] == 29000 and "over 512" in chunked["why"]
    # the measured activation (17.98 − 14.99 = 2.99 GiB at 29,000 tokens) falls to the model's 512-token forward
    assert chunked["kv_cache_tokens"] > 23648 * 1.5


def test_graph_memory_from_the_equivalent_utilization_line():
    """0.21+: U' = U − graphs ÷ total, so graphs = (U − U') × total. A public GB10 log (119.63 GiB)
    printed "Estimated CUDA graph memory: 1.94 GiB total" beside this line: (0.92 − 0.9038) × 119.63
    = 1.938 GiB."""
    from estimator.derive import graph_from_facts
    from estimator.paste import read_paste

    line = ("(EngineCore pid=492078) INFO 08-23 09:39:41 [gpu_worker.py:578] CUDA graph memory profiling is enabled "
            "(default since v0.21.0). The current --gpu-memory-utilization=0.9200 is equivalent to "
            "--gpu-memory-utilization=0.9038 without CUDA graph memory profiling. To maintain the same effective KV "
            "cache size as before, increase --gpu-memory-utilization to 0.9362.\n")
    facts = read_paste(line)
    graphs, how = graph_from_facts(facts, int(119.63 * 2**30))
    assert abs(graphs / 2**30 - 1.94) < 0.005
    assert "0.9200 − 0.9038" in how
    # the estimate printed outright wins over the back-solved one
    assert graph_from_facts(read_paste(line + "INFO 08-23 09:39:41 [gpu_model_runner.py:6806] Estimated CUDA graph "
                                       "memory: 1.94 GiB total\n"), 2**36) is None
    # ... but what a capture took does not: Model Runner V2 (0.30) prints its profile-only capture
    # (FULL graphs sampled, then extrapolated) before sizing the KV cache with the estimate. A Kaggle T4
    # log (14.56 GiB): "took 0.28 GiB", then 0.8500 "equivalent to" 0.8265 → 0.0235 × 14.56 = 0.342 GiB
    took = ("(EngineCore pid=691) INFO 10-01 22:41:33 [model_runner.py:1066] Graph capturing finished in 10 secs, "
            "took 0.28 GiB\n(EngineCore pid=691) INFO 10-01 22:41:34 [gpu_worker.py:655] CUDA graph memory profiling "
            "is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.8500 is equivalent to "
            "--gpu-memory-utilization=0.8265 without CUDA graph memory profiling.\n")
    graphs, how = graph_from_facts(read_paste(took), int(14.56 * 2**30))
    assert abs(graphs / 2**30 - 0.342) < 0.001 and "took 0.28 GiB" in how


def test_v0_064_with_tensor_parallelism_makes_no_other_process_claim():
    """vllm#10702 (0.6.4, TP 8 on 141 GB cards): initial_memory_usage 19.65 GiB is 3.19 GiB beyond the
    16.46 GiB of weights, but with several GPUs NCCL and custom all-reduce buffers are in it too, and
    the paste does not separate them from other processes: no "other processes hold" claim."""
    text = ("INFO 11-27 02:01:37 api_server.py:585] vLLM API server version 0.6.4.post1\n"
            "(VllmWorkerProcess pid=351) INFO 11-27 02:03:09 custom_all_reduce_utils.py:242] reading GPU P2P access "
            "cache from /root/.cache/vllm/gpu_p2p_access_cache_for_0,1,2,3,4,5,6,7.json\n"
            "(VllmWorkerProcess pid=354) INFO 11-27 02:16:23 worker.py:232] Memory profiling results: "
            "total_gpu_memory=139.72GiB initial_memory_usage=19.65GiB peak_torch_memory=16.53GiB "
            "memory_usage_post_profile=22.18GiB non_torch_memory=5.68GiB kv_cache_size=110.52GiB "
            "gpu_memory_utilization=0.95\n")
    d = diagnose(text, model="meta-llama/Llama-3.1-70B-Instruct", offline=True, explain=True)
    assert d.estimate["settings"]["tensor_parallel_size"] == 8
    assert d.estimate["memory"]["other_process_bytes"] == 0
    assert not any("other processes hold" in n.lower() for n in d.notes)


def test_the_estimate_vllm_subtracted_outranks_the_capture_printed_later():
    """A 0.27.1 log prints "Estimated CUDA graph memory: 1.94 GiB total" before sizing the KV cache
    and, after capture, "CUDA graph pool memory: 0.94 GiB (actual), 1.94 GiB (estimated)" and
    "Actual usage is … 0.94 GiB for CUDAGraph memory": the budget split takes the 1.94 GiB."""
    from estimator.paste import read_paste

    text = ("(EngineCore pid=492078) INFO 08-23 09:39:41 [gpu_model_runner.py:6806] Estimated CUDA graph memory: 1.94 GiB total\n"
            "(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_model_runner.py:6913] Graph capturing finished in 26 secs, took 0.94 GiB\n"
            "(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_worker.py:726] CUDA graph pool memory: 0.94 GiB (actual), "
            "1.94 GiB (estimated), difference: 1.01 GiB (107.2%).\n"
            "(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_worker.py:789] Free memory on device (112.26/119.63 GiB) on "
            "startup. Desired GPU memory utilization is (0.92, 110.06 GiB). Actual usage is 55.99 GiB for consumed memory "
            "(weights + non-torch), 3.78 GiB for peak activation, and 0.94 GiB for CUDAGraph memory.\n")
    assert read_paste(text).get("cuda_graph_gib") == 1.94


def test_v2_runner_log_says_whether_its_graphs_were_set_aside():
    from estimator.derive import graphs_after_kv_from_facts as _graphs_after_kv_from_facts
    from estimator.paste import read_paste

    # PR48601: 72.78 − 7.39 − 1.54 − 0.60 = 63.25 = the KV in use: the 2.04 GiB came on top
    on_top = read_paste("(Worker_TP2 pid=1) INFO 07-14 09:50:23 [gpu_worker.py:855] Free memory on device (77.57/79.11 "
                        "GiB) on startup. Desired GPU memory utilization is (0.92, 72.78 GiB). Actual usage is 7.39 GiB "
                        "for weight, 1.54 GiB for peak activation, 0.6 GiB for non-torch memory, and 2.04 GiB for "
                        "CUDAGraph memory. Current kv cache memory in use is 63.25 GiB.\n")
    assert _graphs_after_kv_from_facts(on_top) is True
    # 0.26.1 V2-runner build: the "is equivalent to" line means the estimate was subtracted
    aside = read_paste("(Worker_TP0 pid=400) INFO 08-01 04:19:35 [gpu_worker.py:690] CUDA graph memory profiling is "
                       "enabled (default since v0.21.0). The current --gpu-memory-utilization=0.9750 is equivalent to "
                       "--gpu-memory-utilization=0.9683 without CUDA graph memory profiling.\n"
                       "(Worker_TP0 pid=400) INFO 08-01 04:19:35 [model_runner.py:1314] Estimated MRV2 CUDA graph memory: "
                       "0.64 GiB total (0.31 GiB retained in the reusable pool)\n")
    assert _graphs_after_kv_from_facts(aside) is False
    assert aside.get("cuda_graph_gib") == 0.64
    assert _graphs_after_kv_from_facts(read_paste("Available KV cache memory: 8.28 GiB\n")) is None


def test_without_a_model_the_remainder_is_non_torch_not_unexplained():
    """0.27.1 on a GB10 (public log), model not available: 110.06 − 50.29 KV − 51.35 weights − 3.78
    activation − 1.94 graphs = 2.70 GiB. Nothing estimates non-torch memory without the model, so
    the reply says what the remainder holds instead of calling it unexplained."""
    text = ("(EngineCore pid=1) INFO 08-23 09:38:06 [gpu_model_runner.py:5405] Model loading took 51.35 GiB memory and 341.6 seconds\n"
            "(EngineCore pid=1) INFO 08-23 09:39:41 [gpu_model_runner.py:6806] Estimated CUDA graph memory: 1.94 GiB total\n"
            "(EngineCore pid=1) INFO 08-23 09:39:41 [gpu_worker.py:563] Available KV cache memory: 50.29 GiB\n"
            "(EngineCore pid=1) INFO 08-23 09:40:11 [gpu_worker.py:789] Free memory on device (112.26/119.63 GiB) on "
            "startup. Desired GPU memory utilization is (0.92, 110.06 GiB). Actual usage is 55.99 GiB for consumed "
            "memory (weights + non-torch), 3.78 GiB for peak activation, and 0.94 GiB for CUDAGraph memory.\n"
            "vllm serve some-org/not-a-real-model-xyz --gpu-memory-utilization 0.92\n")
    d = diagnose(text, offline=True, explain=True)
    assert not any("does not explain" in c for c in d.checks)
    assert any("2.70 GiB beyond the weights, activation peak and CUDA graphs it prints. That is non-torch" in n
               for n in d.notes)


def test_without_a_model_the_remainder_names_the_parts_the_paste_does_not_print():
    """guqiong96/Lvllm#35 (a vLLM fork, A40, --gpu-memory-utilization 0.95): the log prints the weights
    and the KV pool only. 44.52 GiB (an A40 as torch reports it) × 0.95 = 42.29; − 12.57 KV − 11.55
    weights = 18.17 GiB, which holds the profile run's activation peak and the graphs too: the note
    must not say the paste printed them."""
    text = ("(EngineCore_DP0 pid=15098) INFO 02-12 08:33:42 [gpu_model_runner.py:4216] Model loading took 11.55 GiB "
            "memory and 1940.360672 seconds\n"
            "(EngineCore_DP0 pid=15098) INFO 02-12 08:34:25 [gpu_worker.py:360] Available KV cache memory: 12.57 GiB\n"
            "(EngineCore_DP0 pid=15098) INFO 02-12 08:34:25 [kv_cache_utils.py:1307] GPU KV cache size: 53,136 tokens\n"
            "NVIDIA A40, gpu-memory-utilization: 0.95\n")
    d = diagnose(text, offline=True, explain=True)
    note = next(n for n in d.notes if "beyond the" in n)
    assert note.startswith("The figures in the paste leave 18.17 GiB beyond the weights it prints. That is what it "
                           "does not print (the profile run's activation peak and the CUDA graphs"), note


def test_without_a_model_or_weights_line_the_consumed_figure_is_shown_as_printed():
    """club-3090#1139's two worker lines (0.27): "Actual usage is 15.25 GiB for consumed memory (weights +
    non-torch)" and no model id, no "Model loading took": the reply shows the 15.25 GiB as vLLM's one
    figure for weights and non-torch, read, rather than leaving it out of the breakdown."""
    text = ("(Worker_TP0 pid=150) INFO 09-02 13:12:19 [gpu_worker.py:789] Free memory on device (23.15/23.56 GiB) on "
            "startup. Desired GPU memory utilization is (0.92, 21.67 GiB). Actual usage is 15.25 GiB for consumed "
            "memory (weights + non-torch), 1.66 GiB for peak activation, and 0.14 GiB for CUDAGraph memory. "
            "Current kv cache memory in use is 4.76 GiB.\n")
    d = diagnose(text, offline=True, explain=True)
    fig = d.state.figures["consumed"]
    assert (round(fig.value / 2**30, 2), fig.provenance) == (15.25, "read")
    assert "Weights + non-torch (vLLM's consumed memory) | 15.25 | read" in render_markdown(d)


def test_printed_weights_far_from_the_checkpoint_are_checked():
    """vLLM printed 7.52 GiB of weights for what the paste calls Llama-3.1-8B in bf16, whose checkpoint
    vLLM loads as 14.99 GiB (vllm#10517: "Loading model weights took 14.9888 GB"): a different
    checkpoint, quantization or TP, which the reply says. The printed figure still sizes the state;
    the check compares it with the model's own."""
    text = ("$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072   # one H100\n"
            "INFO 04-12 08:21:19 [worker.py:267] Memory profiling takes 4.0 seconds\n"
            "the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB\n"
            "model weights take 7.52GiB; non_torch_memory takes 0.15GiB; PyTorch activation peak memory takes "
            "1.22GiB; the rest of the memory reserved for KV Cache is 62.38GiB.\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.estimate["memory"]["weights_bytes"] == round(7.52 * GiB)
    check = " ".join(d.checks)
    assert "the paste says the weights take 7.52 GiB per GPU" in check and "would take 14.99 GiB" in check
    # the same paste with the checkpoint's own figure draws no such check
    same = diagnose(text.replace("7.52GiB", "14.99GiB").replace("62.38GiB", "54.91GiB"), offline=True, explain=True)
    assert not any("the paste says the weights take" in c for c in same.checks)


def test_graphs_read_from_the_equivalent_utilization_follow_the_implied_card():
    """club-3090#104's log (Qwen3.6-27B, 0.88 "equivalent to 0.8592") names no card: the graphs are
    (0.8800 − 0.8592) × the card's total, so they are re-read for each size the KV figure implies,
    not kept at the first assumed card's (an H100: 1.65 GiB)."""
    text = ("(Worker_TP0 pid=99) INFO 05-07 20:28:11 [gpu_worker.py:460] Available KV cache memory: 9.84 GiB\n"
            "(Worker_TP0 pid=99) INFO 05-07 20:28:11 [gpu_worker.py:475] CUDA graph memory profiling is enabled "
            "(default since v0.21.0). The current --gpu-memory-utilization=0.8800 is equivalent to "
            "--gpu-memory-utilization=0.8592 without CUDA graph memory profiling. To maintain the same effective KV "
            "cache size as before, increase --gpu-memory-utilization to 0.9008.\n"
            "(Worker_TP1 pid=100) INFO 05-07 20:28:11 [gpu_worker.py:475] CUDA graph memory profiling is enabled.\n"
            "(EngineCore pid=90) INFO 05-07 20:28:11 [kv_cache_utils.py:1710] GPU KV cache size: 619,202 tokens\n"
            "(EngineCore pid=90) INFO 05-07 20:28:11 [kv_cache_utils.py:1711] Maximum concurrency for 262,144 "
            "tokens per request: 2.36x\n")
    d = diagnose(text, model="Qwen/Qwen3.6-27B", offline=True, explain=True)
    total = d.derived["figures"]["total"]
    assert total["provenance"] == "derived" and "no GPU in the paste" in total["how"]
    assert abs(d.estimate["memory"]["cuda_graph_bytes"] - (0.8800 - 0.8592) * total["value"]) < 2**20


def test_a_negative_block_count_bounds_the_pool_and_a_zero_only_caps_it():
    """vLLM 0.1 printed its unclamped floor division (vllm#184: "# GPU blocks: -1" for vicuna-7b on
    a T4): the pool lay within one block below zero, so the parts the paste leaves out are solved to
    fill the budget. Later versions clamp the count at 0 (worker.py `max(num_gpu_blocks, 0)`): a 0
    says less than one block was left, not how much less, so the model's own peak stands."""
    neg = ("llm = LLM(model=\"lmsys/vicuna-7b-v1.3\") on an AWS g4dn.xlarge (T4)\n"
           "INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: -1, # CPU blocks: 512\n"
           "RuntimeError: Trying to create tensor with negative dimension -1: [-1, 32, 16, 16, 8]\n")
    d = diagnose(neg, offline=True)
    fig = d.derived["figures"]
    block = 16 * 32 * 2 * 32 * 128 * 2                    # 16 tokens × 32 layers × K,V × 32 heads × 128 × 2 B
    assert fig["kv_pool"]["value"] == -block
    # budget − weights − non-torch − (−1 block) is what the profile run took
    assert fig["activation"]["provenance"] == "derived"
    assert fig["activation"]["value"] == fig["budget"]["value"] - fig["weights"]["value"] \
        - fig["non_torch"]["value"] + block
    zero = ("vllm serve meta-llama/Llama-3.1-8B-Instruct on my RTX 3090, vllm 0.5.0\n"
            "INFO 06-21 10:00:18 gpu_executor.py:83] # GPU blocks: 0, # CPU blocks: 2048\n"
            "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine.\n")
    d = diagnose(zero, offline=True)
    fig = d.derived["figures"]
    # V0 without chunked prefill profiles 131,072 tokens: (3 × 14,336 + 3 × 4,096) × 2 B each, and 0.5.0
    # measures that with PyTorch's cached blocks still reserved (memory.V0_CLASSIC_CACHED_EXCESS)
    assert fig["activation"]["provenance"] == "estimated"
    assert fig["activation"]["value"] == 131072 * (3 * 14336 + 3 * 4096) * 2 + int(0.49 * 2**30)
    assert fig["kv_pool"]["value"] < 0 and "clamps the count at 0" in fig["kv_pool"]["how"]


def test_a_printed_total_beyond_its_rounding_replaces_the_catalogs():
    """vllm#16570: an A100-PCIE-40GB printed total_gpu_memory 39.38 GiB; the catalog only assumes
    the SXM4's 39.39 for it. 0.013 GiB is more than the 2-decimal rounding, so vLLM's figure sizes
    the budget: 39.38 × 0.95 − 34.43 − 0.43 − 2.51 = 0.04 GiB, the KV vLLM printed."""
    text = ("vllm serve Qwen/Qwen2.5-VL-72B-Instruct --tensor-parallel-size 4 --gpu_memory_utilization 0.95 "
            "--max_num_seqs 2 --max_model_len 8192 on 4x NVIDIA A100-PCIE-40GB, vLLM 0.8.3\n"
            "INFO 04-15 00:05:58 [worker.py:267] the current vLLM instance can use total_gpu_memory (39.38GiB) x "
            "gpu_memory_utilization (0.95) = 37.41GiB\n"
            "INFO 04-15 00:05:58 [worker.py:267] model weights take 34.43GiB; non_torch_memory takes 0.43GiB; "
            "PyTorch activation peak memory takes 2.51GiB; the rest of the memory reserved for KV Cache is 0.04GiB.\n")
    d = diagnose(text, offline=True, explain=True)
    e = d.estimate
    assert e["gpu"]["total_bytes"] == round(39.38 * 2**30)
    assert e["memory"]["kv_cache_bytes"] / 2**30 == pytest.approx(0.04, abs=0.002)


def test_the_0_2_attention_kernels_shared_memory_limit_is_not_a_memory_shortage():
    """vllm#1267 (0.2.0, RTX 6000 Ada): vLLM checks the context padded to the block, one float each
    — (65,536 + 15) × 4 B — against the GPU's 101,376 B of shared memory per block (its message adds a
    512-float buffer: (65,536 + 15 + 512) × 4 = 264,252 B, as printed). At most 101,376 / 4 − 15 =
    25,329 tokens pass, whatever the KV cache holds (48,448 here); 24,576 also leaves the buffer."""
    text = ("INFO 10-05 12:28:40 llm_engine.py:205] # GPU blocks: 3028, # CPU blocks: 512\n"
            "RuntimeError: vLLM cannot currently support max_model_len=65536 with block_size=16 on GPU with compute "
            "capability (8, 9) (required shared memory 264252.0 > available shared memory 101376). This will be "
            "fixed in a future release.\n")
    assert (65536 + 15 + 512) * 4 == 264252
    from estimator.advice import shared_memory_max_len

    assert shared_memory_max_len(101376, 16) == 25329
    assert (25329 + 15) * 4 <= 101376 < (25330 + 15) * 4
    d = diagnose("llm = LLM(model=\"Open-Orca/LlongOrca-7B-16k\") on 1 x RTX 6000 Ada\n" + text, offline=True)
    assert d.error_kind == "other"          # the contract's kinds have no name for it
    assert d.suggestions[0]["flags"] == "--max-model-len 24576"
    assert "Not a GPU-memory shortage" in d.summary
    assert any("0.2.2" in n and "PagedAttention V2" in n for n in d.notes)
    # no model: the same fix from the printed numbers alone, and the upgrade
    bare = diagnose(text, offline=True)
    assert [u["flags"] for u in bare.unchecked] == ["--max-model-len 24576", ""]


def test_the_kv_formula_of_an_mla_model_before_0_7_1_shows_k_and_v_per_head():
    """vLLM before 0.7.1 cached MLA models' K and V for every head (qk_nope 128 + rope 64 = 192
    dims, padded to 256 up to 0.6.6 — config.py get_head_size: FlashAttention head sizes): DeepSeek-Coder-V2
    at TP 8 keeps 128 / 8 = 16 heads per GPU — 60 × 16 × 256 × 2 × 2 B on 0.5.4."""
    from estimator.api import load_model
    from estimator.derive import kv_formula
    from estimator.memory import estimate
    from estimator.vllm import EngineSettings

    spec = load_model("deepseek-ai/DeepSeek-Coder-V2-Instruct", offline=True).spec
    e = estimate(spec, gpu_total_bytes=80 * 2**30,
                 settings=EngineSettings(vllm_version="0.5.4", tensor_parallel_size=8, max_model_len=16000))
    assert e.layout.kv_bytes_per_token == 60 * 16 * 256 * 2 * 2 == 983_040
    assert kv_formula(e).startswith("60 layers × 16 KV heads per GPU × 256 head_dim × 2 (K,V)")
    # an MLA model with linear-attention layers (Kimi-Linear) says its per-request state too
    kimi = load_model("moonshotai/Kimi-Linear-48B-A3B-Instruct", offline=True).spec
    k = estimate(kimi, gpu_total_bytes=24 * 2**30,
                 settings=EngineSettings(vllm_version="0.11.0", tensor_parallel_size=2))
    assert kv_formula(k).startswith("7 MLA layers") and "fixed state per request" in kv_formula(k)


def test_a_size_further_on_is_not_the_named_cards():
    """"it works in GPU T4 and only takes ~10GB/15GB": the 10 GB is the usage, not a 10 GB T4; a size
    right after the name ("RTX 4090 with 48GB", "A100 (80GB)") still names the variant."""
    from estimator.diagnosis import gpu_ref

    def ref(text):
        return gpu_ref(read_paste(text), None)

    assert ref("When I run 2 containers it works in GPU T4 and only takes ~10GB/15GB of it") == "T4"
    assert ref("serving on an RTX 4090 with 48GB of VRAM").endswith(" 48GB")
    assert ref("on an A100 (80GB) card").endswith(" 80GB")
    assert ref("my A100 is 40GB, vllm 0.6") .endswith(" 40GB")
    assert ref("one A100 using 35GB of it") == "A100"
    # several cards' total is not one card's size
    assert ref("**Hardware**: A10*4, 96GB VRAM") == "A10"


def test_vllm_0_2_5s_profiler_is_named_when_tp_leaves_memory_unexplained():
    """vllm#2136: the same CodeLlama-13B command printed 1,464 blocks on 0.2.3/0.2.4 and 112 on 0.2.5,
    whose profiler counts the GPU's used memory after the profile run (vllm PR #2031), PyTorch's cache of
    all-reduced activations included: up to 2 × 40 layers × 16,384 tokens × 5,120 × 2 B = 12.5 GiB,
    against the ≈ 7.8 GiB the paste leaves unexplained; the check says so."""
    text = ("vLLM 0.2.5, 2x RTX 4090\npython -m vllm.entrypoints.openai.api_server --model=TheBloke/CodeLlama-13B-Instruct-fp16 "
            "--max-model-len=16384 --max-num-seqs=16 --tensor-parallel-size=2 --gpu-memory-utilization=0.95 "
            "--swap-space=8\n"
            "INFO 12-15 10:00:00 llm_engine.py:223] # GPU blocks: 112, # CPU blocks: 1310\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.disagrees
    assert any("vLLM 0.2.5 with tensor parallelism" in c and "up to 12.5 GiB" in c for c in d.checks)
    # on one GPU the all-reduce cache is not the explanation offered. One GPU prints 655 CPU blocks (8 GiB of
    # swap ÷ 13,107,200 B, a whole CodeLlama-13B block: 40 layers × 40 heads × 128 × 2 × 2 B × 16); the 1,310
    # printed are blocks split 2 ways, which tell the tensor-parallel size where the flag is gone
    # (anchoring.tp_from_cpu_blocks; the issue's own command has --swap-space=8)
    unflagged = text.replace("--tensor-parallel-size=2 ", "")
    one = diagnose(unflagged.replace("# CPU blocks: 1310", "# CPU blocks: 655"), offline=True, explain=True)
    assert not any("all-reduced" in c for c in one.checks)
    assert any("all-reduced" in c for c in diagnose(unflagged, offline=True, explain=True).checks)


_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "23.57 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 22.44 GiB memory in "
        "use. Of the allocated memory 21.80 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch "
        "but unallocated.\n")


def test_one_or_several_torch_oom_messages_give_their_read_figures():
    """One OOM message is kept as one record, several as a list: both are read (a single message's
    figures used to be skipped, and two messages crashed the load-OOM fixes)."""
    from estimator.derive import derive

    for text in (_OOM, _OOM + "retry\n" + _OOM.replace("2.00 GiB. GPU 0", "1.00 GiB. GPU 0")):
        figures = derive(read_paste(text), None).figures
        assert figures["oom_request"].value == 2 * 2**30 and figures["oom_request"].provenance == "read"
        assert figures["oom_free"].value == round(1.12 * 2**30)
        d = diagnose(text, offline=True, explain=True)
        assert d.error_kind.startswith("cuda_oom")


def test_consumed_memory_fixes_the_weights_and_non_torch_together():
    """From 0.27 the "Actual usage" line prints the weights and the non-torch memory as one figure
    (club-3090#1087, Qwen3.8-27B FP8 on 2× RTX 5090, TP 2: "15.03 GiB for consumed memory (weights +
    non-torch), 1.59 GiB for peak activation"): the weights are that less the non-torch estimate,
    0.15 + 0.06 × 2 = 0.27 GiB — 14.76 GiB, labelled as derived from the printed figure, and the
    KV figure is not reconciled by moving them."""
    text = ("vllm serve Qwen/Qwen3.8-27B-FP8 --tensor-parallel-size 2 --gpu-memory-utilization 0.92\n"
            "(Worker_TP0 pid=223) INFO 08-22 04:42:13 [gpu_worker.py:789] Free memory on device (30.27/31.4 GiB) on "
            "startup. Desired GPU memory utilization is (0.92, 28.88 GiB). Actual usage is 15.03 GiB for consumed memory "
            "(weights + non-torch), 1.59 GiB for peak activation, and 0.09 GiB for CUDAGraph memory. Replace "
            "gpu_memory_utilization config with `--kv-cache-memory=12917635953` (12.03 GiB) to fit into requested "
            "memory, or `--kv-cache-memory=14405811712` (13.42 GiB) to fully utilize gpu memory. Current kv cache "
            "memory in use is 12.26 GiB.\n")
    d = diagnose(text, gpu="RTX 5090", offline=True, explain=True)
    mem = d.estimate["memory"]
    assert mem["non_torch_bytes"] == int(0.15 * GiB) + 2 * int(0.06 * GiB)
    assert abs(mem["weights_bytes"] - (int(15.03 * GiB) - mem["non_torch_bytes"])) <= 1   # 14.76 GiB
    assert "consumed memory 15.03 GiB in the paste (weights + non-torch)" in render_markdown(d)
    assert "weights" not in " ".join(a for a in d.estimate["assumptions"] if "solved for" in a)


def test_a_negative_graph_figure_is_read_and_explained():
    """0.11's capture_model reports free memory before capture − free memory after it, which can
    be negative; a restatement of that breakdown keeps the sign and the reply says why."""
    text = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 16000\n"
            "- **Available KV cache memory:** 51.38 GiB\n- **Weight memory:** 14.99 GiB\n"
            "- **Peak activation memory:** 4.76 GiB\n- **Non-torch memory:** 0.13 GiB\n"
            "- **CUDAGraph memory:** -0.45 GiB\n")
    d = diagnose(text, offline=True, explain=True)
    assert d is not None
    fig = d.derived["figures"]["cuda_graphs"]
    assert fig["provenance"] == "read" and abs(fig["value"] - (-0.45 * GiB)) < 0.01 * GiB
    assert "change in free memory across graph capture" in fig["how"]
    assert d.derived["figures"]["non_torch"]["provenance"] == "read"


def test_a_large_solved_for_activation_is_called_unexplained():
    """96 tokens of KV for Llama-2-70B GPTQ on two 24 GB cards at 0.97 leaves the profile run several GiB
    more than the model's activation estimate: the table shows the solved figure, and a check says that
    most of it is memory the model does not explain. The seed post, whose solved activation moves by
    0.08 GiB, gets no such check."""
    text = ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-2-70b-chat-hf -q gptq --dtype float16 "
            "-tp 2 --max-model-len 4096 --gpu-memory-utilization 0.97 --enforce-eager --kv-cache-dtype fp8_e5m2\n"
            "2x RTX 3090\nValueError: The model's max seq len (4096) is larger than the maximum number of tokens that "
            "can be stored in KV cache (96). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            "when initializing the engine.\n")
    d = diagnose(text, offline=True, explain=True)
    act = d.derived["figures"]["activation"]
    assert act["provenance"] == "derived"
    check = next(c for c in d.checks if "memory the model does not explain" in c)
    own = float(check.split("model's estimate (")[1].split(" GiB")[0])
    assert act["value"] / GiB - own >= 1.0 and act["value"] / GiB >= 2 * own
    assert "a checkpoint larger than its config says" in check      # no weights were printed
    seed = diagnose((Path(__file__).resolve().parents[1] / "examples" / "seed-post.txt").read_text(), offline=True)
    assert not any("does not explain" in c for c in seed.checks)


def test_solving_for_vllms_pool_does_not_take_a_third_of_the_weights_away():
    """A README names Llama-3.1-8B for one 3090 and Llama-3.1-70B for four A6000s, then the 70B run's
    error (kilian-group/phantom-wiki): 106,848 tokens × 128 KiB = 13.04 GiB of KV beside 21.32 GiB of
    budget leaves 8.28 GiB for everything else, less than the 8B's 14.99 GiB of weights. Solving for
    the parts had made the weights 8.23 GiB (activation 0); now the weights fall at most to 90% of the
    checkpoint's figure (anchoring.WEIGHTS_FLOOR), so the reconciliation fails, the table keeps the
    model's own 14.99, and a check says the budget cannot hold vLLM's pool. (The caller names the 8B
    here: left to itself the reply now reads the error as the 70B's, named right before it —
    test_diagnose.py's test_the_setup_named_right_before_the_error_is_its_run….)"""
    from estimator.anchoring import WEIGHTS_FLOOR

    text = ("- `meta-llama/Llama-3.1-8B-Instruct`: >= one 3090\n"
            "- `meta-llama/Llama-3.1-70B-Instruct`: >= four A6000s\n"
            "With four A6000s:\n```\n[rank0]: ValueError: The model's max seq len (131072) is larger than the maximum "
            "number of tokens that can be stored in KV cache (106848). Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n```\n")
    assert round(106_848 * 131_072 / GiB, 2) == 13.04 and round(23.69 * 0.9 - 13.04, 2) == 8.28
    d = diagnose(text, model="meta-llama/Llama-3.1-8B-Instruct", offline=True, explain=True)
    weights = d.derived["figures"]["weights"]
    assert weights["provenance"] == "estimated" and round(weights["value"] / GiB, 2) == 14.99
    assert 14.99 * WEIGHTS_FLOOR > 8.28
    assert any("more than the budget" in c for c in d.checks)


def test_of_two_utilizations_a_post_gives_the_one_vllms_figures_fit_is_read():
    """A Korean blog (sirzzang) shows its Kubernetes manifest's baseline (--gpu-memory-utilization 0.9)
    and the change of its failing scenario (0.5), then that run's error on an A10G (22.06 GiB): the
    reader keeps neither value. At 0.9 the budget is 19.85 GiB and vLLM's 0.18 GiB pool would leave
    19.67 GiB for Qwen2.5-14B AWQ's ~10 GiB of weights, activation and the rest: no state of the model
    does that. At 0.5 the budget is 11.03 GiB, 10.85 of it for the rest: within reach (the activation
    peak solved for). So the run read is the 0.5 one, and a note says so."""
    text = ("| GPU 노드 | g5.xlarge × 2, NVIDIA A10G 23,028 MiB |\n"
            "          image: vllm/vllm-openai:v0.19.1\n          args:\n            - --model\n"
            "            - Qwen/Qwen2.5-14B-Instruct-AWQ\n            - --gpu-memory-utilization\n"
            "            - \"0.9\"\n            - --max-model-len\n            - \"4096\"\n"
            "```yaml\nargs:\n  - --gpu-memory-utilization\n  - \"0.5\"       # 0.9 → 0.5\n"
            "  - --max-model-len\n  - \"16384\"\n```\n"
            "(EngineCore pid=81) INFO 04-19 10:59:54 [gpu_worker.py:436] Available KV cache memory: 0.18 GiB\n"
            "(EngineCore pid=81) ValueError: To serve at least one request with the models's max seq len (16384), "
            "(3.0 GiB KV cache is needed, which is larger than the available KV cache memory (0.18 GiB). Based on "
            "the available memory, the estimated maximum model length is 976.\n")
    assert read_paste(text).get("gpu_memory_utilization") is None      # two values, neither kept
    d = diagnose(text, offline=True, explain=True)
    assert d.estimate["settings"]["gpu_memory_utilization"] == 0.5
    assert round(d.derived["figures"]["budget"]["value"] / GiB, 2) == 11.03
    assert any("gives gpu_memory_utilization as 0.9, 0.5; vLLM's KV figures fit 0.5" in a for a in d.assumptions)
    assert not any("too far apart" in a for a in d.assumptions)


def test_the_estimated_maximum_length_pins_the_pool_to_the_block():
    """V1's error prints the pool to 2 decimals and the longest request it fits: vLLM's binary search
    took the largest N whose need (⌈N ÷ 16⌉ blocks) fits the available memory, so that memory holds
    ⌈N ÷ 16⌉ whole blocks and not one more. Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 × 2 B × 16
    tokens = 2 MiB per block; 1.50 GiB is 768 blocks (12,288 tokens), but anything from 1.495 GiB
    (765.4 blocks) prints so — vLLM's 12,256 says 766 blocks: the fixes must not offer 12,288."""
    text = ("INFO [gpu_worker.py:298] Available KV cache memory: 1.50 GiB\n"
            "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (1.50 GiB). Based on the available memory, "
            "the estimated maximum model length is {n}. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.\n")

    def run(n):
        d = diagnose(text.format(n=n), model="meta-llama/Llama-3.1-8B-Instruct", gpu="L4", vllm_version="0.10.1",
                     offline=True, explain=True)
        return d.estimate

    pinned = run(12256)
    assert pinned["gpu_blocks"] == 766 and pinned["max_model_len_fit"] == 12256
    assert 766 * 2**21 <= pinned["memory"]["kv_cache_bytes"] < 767 * 2**21
    alone = [s for s in pinned["suggestions"] if s["flags"].startswith("--max-model-len ") and " --" not in s["flags"]]
    assert alone and all(int(s["flags"].split()[1]) <= 12256 for s in alone)
    # a length the printed GiB cannot hold (770.6 blocks at most) leaves the GiB figure as read
    loose = run(13000)
    assert loose["gpu_blocks"] == 768


def _graph_hint_log(graph: str, util: str, equiv: str) -> str:
    return ("vllm serve Qwen/Qwen2.5-VL-3B-Instruct-AWQ --max-model-len 4096 --gpu-memory-utilization 0.7\n"
            f"(EngineCore pid=208) INFO 06-17 11:30:46 [gpu_model_runner.py:6517] Estimated CUDA graph memory: {graph} GiB total\n"
            "(EngineCore pid=208) INFO 06-17 11:30:47 [gpu_worker.py:480] Available KV cache memory: -2.14 GiB\n"
            "(EngineCore pid=208) INFO 06-17 11:30:47 [gpu_worker.py:495] CUDA graph memory profiling is enabled (default "
            f"since v0.21.0). The current --gpu-memory-utilization={util} is equivalent to --gpu-memory-utilization={equiv} "
            "without CUDA graph memory profiling.\n")


def test_the_card_size_vllms_graph_hint_implies_where_no_card_is_named():
    """0.21+ prints U' = U − G ÷ total, so total = G ÷ (U − U'): a WSL RTX 3050 laptop run (InvoiceVLM's
    log) 0.74 ÷ (0.7000 − 0.5760) = 5.97 GiB. A named card stands; a hint too coarse to name one (0.43 GiB
    at 0.9000 → 0.8964: 116–122 GiB at the printed precision) is not used."""
    assert round(0.74 / (0.7000 - 0.5760), 2) == 5.97
    d = diagnose(_graph_hint_log("0.74", "0.7000", "0.5760"), offline=True, explain=True)
    fig = d.derived["figures"]["total"]
    assert fig["provenance"] == "derived" and abs(fig["value"] / GiB - 5.97) < 0.01
    named = diagnose(_graph_hint_log("0.74", "0.7000", "0.5760"), gpu="RTX 3060", offline=True, explain=True)
    assert named.derived["figures"]["total"]["provenance"] == "assumed"
    assert abs(named.derived["figures"]["total"]["value"] / GiB - 5.97) > 1
    coarse = diagnose(_graph_hint_log("0.43", "0.9000", "0.8964"), offline=True, explain=True)
    assert "÷ (0.9000 − 0.8964)" not in str(coarse.derived["figures"].get("total", {}).get("how"))


def test_a_decode_context_parallel_runs_tokens_are_dcp_times_its_pool():
    """vllm PR's DCP test plan (Qwen3-235B-A22B, TP 8, DCP 2): 4 KV heads over 8 ranks is one head a
    rank, 94 × 1 × 128 × 2 × 2 = 48,128 B a token; the 1,723,584 tokens vLLM printed are 2 × 861,792
    tokens of one rank's pool: 861,792 × 48,128 B = 38.63 GiB, not twice that."""
    text = ("vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507 --gpu-memory-utilization 0.9 --tensor-parallel-size 8 "
            "--decode-context-parallel-size 2\n"
            "[kv_cache_utils.py:859] Multiplying the GPU KV cache size by the dcp_world_size 2.\n"
            "[kv_cache_utils.py:864] GPU KV cache size: 1,723,584 tokens\n"
            "[kv_cache_utils.py:868] Maximum concurrency for 262,144 tokens per request: 6.57x\n")
    assert 1_723_584 // 2 * 48_128 / GiB == pytest.approx(38.63, abs=0.01)
    assert round(1_723_584 / 262_144, 2) == 6.57
    d = diagnose(text, offline=True, explain=True)
    assert d.estimate["settings"]["decode_context_parallel_size"] == 2
    pool = d.derived["figures"]["kv_pool"]["value"]
    assert pool / GiB == pytest.approx(38.63, rel=0.01)
    assert "262,144 tokens ÷ 2 decode-context-parallel ranks × 48,128 B" in d.derived["figures"]["kv_needed"]["how"]
    # the test plan's lines are 0.10.2's (kv_cache_utils.py 859/864/868: log_sites), whose "GPU KV cache
    # size" is blocks × 16 × dcp (no concurrency × max_model_len yet): the same pool, read that way
    assert d.estimate["settings"]["vllm_version"] == "0.10.2"
    assert "1,723,584 tokens ÷ 2 decode-context-parallel ranks ÷ 16 per block" in d.derived["figures"]["kv_pool"]["how"]
    newest = diagnose(text, offline=True, explain=True, vllm_version=NEWEST)
    assert newest.derived["figures"]["kv_pool"]["value"] / GiB == pytest.approx(38.63, rel=0.01)


def test_a_total_is_torchs_own_only_where_a_template_or_pytorchs_oom_prints_it():
    """derive.printed_torch_total_gib: any message template with a total (vLLM's V0 budget line, Unsloth's
    banner) and PyTorch's OOM message give torch's figure; nvidia-smi's MiB total does not."""
    from estimator.derive import printed_torch_total_gib

    v0 = read_paste("the current vLLM instance can use total_gpu_memory (39.50GiB) x gpu_memory_utilization (0.90) "
                    "= 35.55GiB")
    assert printed_torch_total_gib(v0) == 39.5
    unsloth = read_paste("NVIDIA GeForce RTX 3090. Num GPUs = 1. Max memory: 23.684 GB. Platform: Linux.")
    assert printed_torch_total_gib(unsloth) == 23.684
    oom = read_paste("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 23.54 GiB of which 1.02 GiB is free.")
    assert printed_torch_total_gib(oom) == 23.54
    smi = read_paste("|   0  NVIDIA GeForce RTX 3090  Off | 00000000:01:00.0 Off | N/A |\n"
                     "| 30%   40C    P8    20W / 350W |      1MiB / 24576MiB |      0%      Default |")
    assert smi.values["total_gpu_memory_gib"].source == "nvidia_smi_total"
    assert printed_torch_total_gib(smi) is None


# -- vLLM 0.34: the KV cache sized after warmup. Llama-3.1-8B: 131,072 B per token, 2 MiB per 16-token
# block; an RTX 4090 as torch reports it, 23.64 GiB; --gpu-memory-utilization unset = 1.0 there.

_034_START = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192   (vllm 0.34.0, RTX 4090)\n"
              "(EngineCore pid=1) INFO 11-20 10:00:00 [gpu_worker.py:400] Available KV cache memory: 6.50 GiB\n")


def test_034_available_kv_cache_memory_is_the_profile_runs_pool_not_the_kv_caches():
    d = diagnose(_034_START + "(EngineCore pid=1) INFO 11-20 10:00:05 [kv_cache_utils.py:1300] GPU KV cache size: "
                 "25,088 tokens\n", offline=True)
    fig = d.state.figures
    assert fig["reserved_pool"].value == int(6.5 * GiB) and fig["reserved_pool"].provenance == "read"
    # the KV cache is what the token count says: 25,088 / 16 = 1,568 blocks × 2 MiB = 3.0625 GiB
    assert fig["kv_pool"].value == 1568 * 2 * 2**20 and fig["kv_pool"].provenance == "derived"
    # the budget (1.0 × 23.64) splits into the parts and what warmup keeps free, with nothing unexplained
    parts = sum(fig[k].value for k in ("weights", "activation", "non_torch", "cuda_graphs", "warmup_reserve"))
    assert abs(parts - fig["non_kv"].value) < 0.01 * GiB
    assert not any("does not explain" in c for c in d.checks)
    # 6.50 is not the pool the model reproduces beside 3.06 GiB of KV: a check says so
    assert any("profile-run pool (6.50 GiB" in c for c in d.checks)
    # the same line from 0.33 is the KV cache itself
    d33 = diagnose(_034_START.replace("0.34.0", "0.33.0"), offline=True)
    assert d33.state.figures["kv_pool"].value == int(6.5 * GiB) and "reserved_pool" not in d33.state.figures


def test_034_only_the_profile_runs_pool_printed_is_reproduced_as_that_pool():
    d = diagnose(_034_START, offline=True)
    m = d.estimate["memory"]
    # budget − weights − activation − non-torch − graphs = 6.50 GiB, the activation solved for it
    reserved = m["budget_bytes"] - m["weights_bytes"] - m["activation_bytes"] - m["non_torch_bytes"] \
        - m["cuda_graph_bytes"]
    assert abs(reserved - 6.5 * GiB) <= 2 * 2**20
    assert d.state.figures["activation"].provenance == "derived"
    assert m["kv_cache_bytes"] < reserved          # warmup keeps its margin and headroom out of it


def test_034_error_after_warmup_names_the_release_and_its_pool_is_reproduced():
    text = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072\nGPU: RTX 4090\n"
            "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (3.50 GiB). Based on the available memory, "
            "the estimated maximum model length is 28672. The extensible KV cache already takes all device memory "
            "left after the model, its activations, CUDA graphs and warmup; decrease `max_model_len` or "
            "`max_num_seqs`, or the model needs a device with more memory.")
    # only 0.34's hint speaks of the extensible KV cache (kv_cache_planning.py _more_kv_cache_memory_hint);
    # the same error with the earlier hint is any release from 0.22 ("model's", no longer "models's")
    assert read_paste(text).extra.get("version_hint") == ("0.34.0", None)
    earlier = text.split(" The extensible")[0] + " Try increasing `gpu_memory_utilization` when initializing the engine."
    assert read_paste(earlier).extra.get("version_hint") == ("0.22.0", None)
    d = diagnose(text, offline=True)
    assert d.estimate["settings"]["vllm_version"] == "0.34.0"
    assert d.estimate["settings"]["gpu_memory_utilization"] == 1.0
    # the activation peak moves 1.75× faster than the pool past the margin's floor: solved all the same,
    # to the printed 3.50 GiB (+ the null block the check holds back, 0.29+)
    assert abs(d.estimate["memory"]["kv_cache_bytes"] - (3.5 * GiB + 2 * 2**20)) <= 2 * 2**20
    assert not d.disagrees and not any("does not explain" in c for c in d.checks)


def test_a_hybrid_models_0_17_figures_are_explained_not_taken_for_a_shortage():
    """vLLM 0.14–0.18 check only the first KV group's need, and 0.9.1–0.20.0 print a hybrid model's "GPU KV
    cache size" as blocks ÷ groups × block size: Qwen3.5-27B at 262,144 tokens on 0.17.1 reads as 0.05 GiB
    needed and 124,656 tokens, which users take for a failure (a Qwen3.5-2B deployment note asks why the
    size is half of max_model_len). By hand: pages of 784 tokens × 4 KV heads × 256 × 2 (K,V) × 2 B =
    3,211,264 B; 16 layers a group → 51,380,224 B a block; 30.58 GiB ÷ that = 639 blocks; 639 // 4 groups
    × 784 = 124,656 tokens. One request: ⌈262,144 / 784⌉ = 335 attention blocks + 3 Mamba groups × 1 state =
    338 blocks = 17,366,515,712 B = 16.17 GiB, so 639 / 338 = 1.89×; the check counts the first (Mamba)
    group's one block: 51,380,224 B = 0.05 GiB."""
    text = ("`vllm/vllm-openai:v0.17.1` serving `Qwen/Qwen3.5-27B` at bf16 on an RTX PRO 6000 Blackwell, "
            "`--max-model-len 262144`.\n\nAvailable KV cache memory: 30.58 GiB\nGPU KV cache size: 124,656 tokens\n"
            "Maximum concurrency for 262,144 tokens per request: 1.89x\n")
    from estimator import load_model, parse_flags, run_estimate

    out = diagnose(text, offline=True, explain=True).to_json()
    est, reply = out["estimate"], out["reply"]
    assert (est["gpu_blocks"], est["kv_cache_tokens"], est["kv_needed_bytes"]) == (639, 124_656, 51_380_224)
    assert "counts only the first of its 4 KV groups" in reply and "holds 16.17 GiB" in reply
    assert "The concurrency line vLLM printed is the one to read: 1.89× at 262,144 tokens, so whole requests fit" in reply
    # the same run asked about before it started: the 124,656 tokens are the model's, not a line vLLM printed,
    # so they are not quoted as vLLM's message
    asked = diagnose(text.split("\n\n")[0] + " How many requests fit?\n", offline=True, explain=True).to_json()
    assert asked["estimate"]["kv_cache_tokens"] == 124_656
    assert "\"GPU KV cache size: 124,656 tokens\"" not in asked["reply"]
    assert ("The \"GPU KV cache size\" vLLM prints (by the model's arithmetic, 124,656 tokens) is below max_model_len "
            "(262,144) but is no shortage") in asked["reply"]
    assert "(by the model's arithmetic, 1.89× at 262,144 tokens), so whole requests fit" in asked["reply"]
    # what 0.20.1 on prints for the same pool: int(639 / 338 × 262,144) = int(495,591.76) (vllm#43308 compared
    # Gemma 4 on 0.20.0 and 0.21.0: ~55k → ~525k tokens, the pool unchanged)
    assert "From 0.20.1 vLLM prints that concurrency × max_model_len instead: about 495,591 tokens" in asked["reply"]
    spec = load_model("Qwen/Qwen3.5-27B", offline=True).spec
    flags = ["--max-model-len", "262144"]
    old = run_estimate(spec, "RTX PRO 6000", parse_flags(flags + ["--vllm-version", "0.17.1"]))
    assert (old.kv_needed_bytes, old.request_kv_bytes) == (51_380_224, 17_366_515_712)
    from estimator.render import estimate_text

    assert "counts only the first of its 4 KV groups" in estimate_text(old)      # `kvdoctor estimate` says it too
    # from 0.19 the check counts every group: what one request holds is what it needs
    new = run_estimate(spec, "RTX PRO 6000", parse_flags(flags + ["--vllm-version", "0.19.1"]))
    assert new.kv_needed_bytes == new.request_kv_bytes == 17_366_515_712


def test_the_budget_vllm_printed_refines_the_utilization_it_rounded():
    """V0's memory_profiling line prints the utilization to 2 decimals and its budget to 2 (worker/worker.py):
    an Unsloth run on a 48 GB RTX 4090 handed vLLM 0.7828, printed "(47.50GiB) x gpu_memory_utilization (0.78) =
    37.18GiB". 47.50 × 0.78 = 37.05 GiB, 0.13 GiB short of what vLLM sized the KV cache from; 37.18 ÷ 47.50 =
    0.78274, and 0.783 is further from it than the budget's own rounding allows ((0.005 + 0.005 × 0.78) ÷ 47.50 =
    0.00019), so 0.7827. The read figure stays 0.78. A 0.90 whose budget says 0.8999 (71.28 of 79.21 GiB) is
    0.90 to the budget's rounding and stays."""
    line = ("INFO 08-12 22:32:11 [worker.py:295] the current vLLM instance can use total_gpu_memory ({t}GiB) x "
            "gpu_memory_utilization ({u}) = {b}GiB\n"
            "INFO 08-12 22:32:11 [worker.py:295] model weights take 0.52GiB; non_torch_memory takes 0.08GiB; PyTorch "
            "activation peak memory takes 1.78GiB; the rest of the memory reserved for KV Cache is {kv}GiB.\n"
            "Initializing a V0 LLM engine (v0.10.0) with config: model='Qwen/Qwen2.5-0.5B-Instruct', "
            "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1\n")
    text = line.format(t="47.50", u="0.78", b="37.18", kv="34.81")
    f = read_paste(text)
    assert f.get("gpu_memory_utilization") == 0.78 and f.extra["utilization_from_budget"] == 0.7827
    d = diagnose(text, offline=True, explain=True)
    figures = d.derived["figures"]
    assert figures["utilization"]["provenance"] == "derived" and figures["utilization"]["value"] == 0.7827
    assert round(figures["budget"]["value"] / GiB, 2) == 37.18 and figures["budget"]["how"] == "47.50 GiB × 0.7827"
    assert d.estimate["settings"]["gpu_memory_utilization"] == 0.7827
    exact = read_paste(line.format(t="79.21", u="0.90", b="71.28", kv="68.90"))
    assert "utilization_from_budget" not in exact.extra and exact.get("gpu_memory_utilization") == 0.9


def test_a_free_memory_error_of_an_earlier_attempt_does_not_bind_the_later_one():
    """A Chinese deployment note for MiniMax-M2 on 4× A800 (TP 4) shows two attempts: one stopped by the
    start-up check (37.95 of 79.25 GiB free, 71.33 asked), and the next one's length error (9.38 GiB of
    KV cache at 0.9). The check stops an attempt before loading, so the attempt that sized a KV cache had
    the 71.33 GiB free: the 41.30 GiB the first attempt found taken are not this run's, and the fixes are
    re-checked on the card as vLLM's own figures leave it."""
    text = ("4张A800 (A800-SXM4-80GB)\n"
            "vllm serve /home/x/.cache/huggingface/hub/models--MiniMaxAI--MiniMax-M2/snapshots/f62f643a \\\n"
            "--tensor-parallel-size 4 --trust-remote-code\n\n"
            "ValueError: Free memory on device (37.95/79.25 GiB) on startup is less than desired GPU memory "
            "utilization (0.9, 71.33 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.\n\n"
            "ValueError: To serve at least one request with the models's max seq len (196608), (11.62 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (9.38 GiB). Based on the available "
            "memory, the estimated maximum model length is 158560. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n")
    f = read_paste(text)
    assert f.get("error_kind") == "kv_capacity_v1" and f.get("free_memory_gib") is None
    assert f.extra["earlier_attempt_free_gib"] == 37.95 and f.get("total_gpu_memory_gib") == 79.25
    d = diagnose(text, offline=True, explain=True)
    assert "held_by_others" not in d.derived["figures"] and not d.unchecked
    assert d.suggestions and d.suggestions[0]["flags"] == "--max-model-len 157696"
    # the card as the user named it, beside the catalog's card it is sized as
    assert any(n.startswith("GB vs GiB: this A800 (NVIDIA A100-SXM4-80GB to the catalog) has 79.25 GiB") for n in d.notes)
    # the check's error alone is the run's: its free memory binds
    alone = read_paste(text.split("\n\nValueError: To serve")[0])
    assert alone.get("error_kind") == "free_memory_startup" and alone.get("free_memory_gib") == 37.95


_FIXED_POOL_LOG = (
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-memory-bytes 2G --max-model-len 32768  # one RTX 4090, "
    "vLLM 0.11.0\n"
    "(EngineCore_DP0 pid=123) INFO 10-20 10:00:00 [gpu_worker.py:276] Initial free memory 23.09 GiB, reserved 2.00 "
    "GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does "
    "not respect the gpu_memory_utilization config.\n"
    "(EngineCore_DP0 pid=123) ERROR 10-20 10:00:05 [core.py:708] ValueError: To serve at least one request with the "
    "model's max seq len (32768), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory "
    "(2.00 GiB). Based on the available memory, the estimated maximum model length is 16384. Try increasing "
    "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")


def test_a_fixed_kv_pool_is_no_share_of_the_budget():
    """With --kv-cache-memory-bytes vLLM reserves the pool asked for and skips its profile run: "budget − KV
    pool" is nobody's memory, so it is not shown, nor is a pool "larger than the budget leaves" a finding;
    the budget stays, as what the start-up free-memory check asks for (0.9 × 23.64 GiB = 21.28 GiB)."""
    d = diagnose(_FIXED_POOL_LOG, offline=True, explain=True)
    st = d.state
    assert "non_kv" not in st.figures and st.get("kv_pool") == 2 * 2**30
    assert "only the start-up check" in st.figures["budget"].how
    assert not any("budget" in c and "leaves" in c for c in st.checks), st.checks
    assert "going to everything else" not in d.summary
    assert "--kv-cache-memory-bytes 4G" in d.summary          # 32,768 × 131,072 B = 4 GiB
    assert not d.full_context        # that fix serves the whole context: no "more GPUs" plan beside it


def test_without_a_model_graphs_the_printed_parts_add_up_without_were_captured_after():
    """A Ray-served vLLM's report (ray-project/ray#65486): 71.26 requested − 15.31 weights − 1.29 activation −
    0.22 non-torch = 54.44 ≈ the 54.45 GiB KV in use, so the 1.00 GiB of graphs came after the KV cache was
    sized. Counting them in the split made a check say the pool was 1.01 GiB more than the budget leaves."""
    text = ("(ServeReplica:anthropic-direct:LLMServer pid=28488) (EngineCore pid=29087) (RayWorkerProc pid=29271) "
            "(Worker pid=29271) INFO 08-19 18:00:26 [gpu_worker.py:857] Free memory on device (78.66/79.18 GiB) on "
            "startup. Desired GPU memory utilization is (0.9, 71.26 GiB). Actual usage is 15.31 GiB for weight, "
            "1.29 GiB for peak activation, 0.22 GiB for non-torch memory, and 1.0 GiB for CUDAGraph memory. "
            "Replace gpu_memory_utilization config with `--kv-cache-memory=57229567898` (53.3 GiB) to fit into "
            "requested memory. Current kv cache memory in use is 54.45 GiB.\n")
    d = diagnose(text, offline=True, explain=True)
    assert not any("more than the budget" in c for c in d.checks), d.checks
    assert d.derived["figures"]["cuda_graphs"]["how"].endswith("(captured after the KV cache was sized: not set "
                                                               "aside from the budget)")


_HYBRID_LOG = (
    "$ vllm serve Qwen/Qwen3.6-27B --tensor-parallel-size 2 --kv-cache-dtype fp8_e5m2 --max-model-len 262144 "
    "--max-num-seqs 2   # 2x RTX A6000, vLLM 0.27.0\n"
    "(EngineCore pid=153) INFO 05-02 10:00:01 [interface.py:912] Setting attention block size to {bs} tokens to "
    "ensure that attention page size is >= mamba page size.\n"
    "(Worker_TP0 pid=346) INFO 05-02 10:01:07 [gpu_worker.py:440] Available KV cache memory: 15.00 GiB\n")


def test_the_attention_block_size_vllm_prints_for_a_hybrid_model_checks_its_pages():
    """Qwen3.6-27B at TP 2 with an fp8 cache: a GDN state per rank is 3 conv rows × 5,120 channels × 2 B +
    24 × 128 × 128 × 4 B = 1,603,584 B, an attention page 2 KV heads × 256 × 2 × 1 B = 1,024 B a token, so
    vLLM raises the block to 16 × ⌈1,603,584 / 16,384⌉ = 1,568 tokens and says so. That line agrees with the
    model's pages; another size (a drafter's wider conv rows, a cache format the model does not know) is a
    check on them."""
    assert 16 * -(-(3 * 5120 * 2 + 24 * 128 * 128 * 4) // (16 * 1024)) == 1568
    facts = read_paste(_HYBRID_LOG.format(bs="1,568"))
    assert facts.extra["attention_block_size"] == 1568
    agree = diagnose(_HYBRID_LOG.format(bs="1568"), offline=True, explain=True)
    assert agree.estimate is not None and not agree.disagrees
    assert not any("attention block size" in c for c in agree.checks)
    other = diagnose(_HYBRID_LOG.format(bs="2000"), offline=True, explain=True)
    said = [c for c in other.checks if "attention block size" in c]
    assert len(said) == 1 and "2,000 tokens" in said[0] and "give 1,568" in said[0] and other.disagrees
    assert "speculative decoding" in said[0]      # the paste names no drafter: a setting it may not show
