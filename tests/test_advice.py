"""Acceptance tests for estimator/advice.py (issue 5): candidate fixes, each re-checked with the
memory model, ranked, bounded, and only the levers that act on the error at hand.

Hand arithmetic for the seed (Qwen2.5-14B-Instruct-1M on an RTX A6000, docs/vllm-memory.md §7) is
written next to each check.
"""

from __future__ import annotations

import pytest

from estimator.advice import command_with, friendly_len, full_context_plan, suggest
from estimator.api import load_model, run_estimate
from estimator.flags import user_command
from estimator.memory import estimate, rerun
from estimator.units import GiB
from estimator.vllm import EngineSettings

SEED_MODEL = "Qwen/Qwen2.5-14B-Instruct-1M"
WEIGHT_LEVERS = ("tensor_parallel_size", "pipeline_parallel_size", "quantization", "cpu_offload_gb")


@pytest.fixture(scope="module")
def seed_spec():
    return load_model(SEED_MODEL, offline=True).spec


@pytest.fixture(scope="module")
def llama8b():
    return load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec


@pytest.fixture(scope="module")
def seed_est(seed_spec):
    return run_estimate(seed_spec, "RTX A6000", EngineSettings(vllm_version="0.7.3"))


@pytest.mark.parametrize("n,expected", [
    (73_792, 65_536),    # 2^16 = 65,536 ≥ 0.85 × 73,792 = 62,723 → the power of two
    (86_768, 86_016),    # 65,536 < 0.85 × 86,768 = 73,753 → 86,768 // 1024 × 1024 = 84 × 1024
    (147_584, 131_072),  # 2^17 = 131,072 ≥ 0.85 × 147,584 = 125,446
    (29_184, 28_672),    # 16,384 < 24,806 → 28 × 1024
    (1_000, 992),        # under 1024: a multiple of 16 → 62 × 16
    (1_936, 1_792),      # 1,024 < 0.85 × 1,936 = 1,645.6 (as 1 × 1024) → 7 × 256
    (5_000, 4_864),      # 4,096 < 4,250 (power of two and 4 × 1024) → 19 × 256
    (65_536, 65_536),
])
def test_friendly_len(n, expected):
    assert friendly_len(n) == expected
    assert friendly_len(n) <= n


def test_seed_suggestions_are_rechecked_and_ranked(seed_est):
    assert seed_est.fits is False and seed_est.error_kind == "kv_capacity_v0"
    fit = seed_est.max_model_len_fit
    sugs = suggest(seed_est)
    assert sugs
    first = sugs[0]
    assert first.changes == {"max_model_len": friendly_len(fit)}
    assert first.flags == f"--max-model-len {friendly_len(fit)}"
    for s in sugs:
        assert s.fits
        again = rerun(seed_est, **s.changes)
        assert again.fits and again.kv_cache_tokens == s.estimate.kv_cache_tokens
        # The flags say exactly the changes.
        for key, value in s.changes.items():
            assert f"--{key.replace('_', '-')} {value}" in s.flags
        j = s.to_json()
        assert {"flags", "command", "kv_cache_tokens", "max_concurrency", "fits", "why"} <= j.keys()
        assert j["command"] == f"vllm serve {SEED_MODEL} {s.flags}"
    assert len({s.flags for s in sugs}) == len(sugs)


def test_seed_lever_effects(seed_est):
    by = {next(iter(k for k in s.changes if k != "max_model_len"), "max_model_len"): s for s in suggest(seed_est)}
    assert {"max_model_len", "gpu_memory_utilization", "kv_cache_dtype", "tensor_parallel_size"} <= by.keys()
    blocks = seed_est.gpu_blocks
    # Utilization 0.90 → 0.95 adds 0.05 × 47.54 GiB = 2.377 GiB = 811 blocks of 3 MiB (V0: budget = total × u).
    util = by["gpu_memory_utilization"]
    assert util.changes["gpu_memory_utilization"] == 0.95
    assert util.estimate.gpu_blocks == pytest.approx(blocks + 811, abs=1)
    # fp8 KV: a block is 1.5 MiB, the same pool holds twice the blocks (±1 for the floor).
    fp8 = by["kv_cache_dtype"]
    assert fp8.estimate.layout.kv_bytes_per_token == 196_608 // 2
    assert fp8.estimate.gpu_blocks == pytest.approx(2 * blocks, abs=1)
    assert fp8.caveat
    # TP=2: 98,304 B per token per GPU and half the weights on each GPU.
    tp = by["tensor_parallel_size"]
    assert tp.estimate.layout.kv_bytes_per_token == 98_304
    assert tp.estimate.weights_bytes < 0.55 * seed_est.weights_bytes
    assert tp.estimate.kv_cache_tokens > 2 * seed_est.kv_cache_tokens


def test_utilization_is_bounded(seed_spec):
    for u in (0.95, 0.97):
        est = run_estimate(seed_spec, "RTX A6000", EngineSettings(vllm_version="0.7.3", gpu_memory_utilization=u))
        for s in suggest(est):
            assert s.changes.get("gpu_memory_utilization", 0) <= 0.95, s.flags
            assert "gpu_memory_utilization" not in s.changes or s.changes["gpu_memory_utilization"] > u


def test_no_fix_when_it_already_fits(seed_spec):
    # 32,768 tokens × 196,608 B = 6 GiB of KV < 13.5 GiB available.
    est = run_estimate(seed_spec, "RTX A6000", EngineSettings(vllm_version="0.7.3", max_model_len=32768))
    assert est.fits
    assert suggest(est) == []


def test_full_context_plan(seed_est):
    plan = full_context_plan(seed_est)
    # 1,010,000 tokens → cdiv(1,010,000, 16) = 63,125 blocks × 3 MiB = 198,574,080,000 B (184.94 GiB).
    assert plan["blocks"] == 63_125
    assert plan["kv_needed_bytes"] == 63_125 * 3 * 2**20
    assert plan["plans"], "some TP degree (≤ 8) of A6000s holds the whole context"
    p = plan["plans"][0]
    # TP=4 leaves 46.2 GiB of KV per GPU to find on a 47.54 GiB card: only TP=8 (23.1 GiB) can.
    assert p["tensor_parallel_size"] == 8
    assert p["kv_cache_tokens"] >= 1_010_000
    assert rerun(seed_est, tensor_parallel_size=8).fits


def test_weights_oom_gets_weight_levers_only(seed_spec):
    """'raising utilization does not fix a weights-load OOM' — nor does a shorter context or fp8 KV."""
    spec = load_model("meta-llama/Llama-3.1-70B-Instruct", offline=True).spec
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.10.1"))
    sugs = suggest(est, error_kind="cuda_oom_load")
    assert sugs
    for s in sugs:
        assert any(k in s.changes for k in WEIGHT_LEVERS), s.flags
        assert "gpu_memory_utilization" not in s.changes and "kv_cache_dtype" not in s.changes
        assert s.fits


def test_profile_oom_lowers_the_batch(llama8b):
    est = run_estimate(llama8b, "RTX 4090", EngineSettings(vllm_version="0.8.1", max_model_len=8192))
    seqs = est.settings.max_num_seqs
    sugs = suggest(est, error_kind="cuda_oom_profile")
    lowered = [s for s in sugs if "max_num_seqs" in s.changes]
    assert lowered, [s.flags for s in sugs]
    assert lowered[0].changes["max_num_seqs"] < seqs
    assert sugs[0] is lowered[0] or "max_num_batched_tokens" in sugs[0].changes  # the batch lever comes first
    assert lowered[0].estimate.activation_bytes <= est.activation_bytes


def test_graph_oom_offers_enforce_eager_first(llama8b):
    est = run_estimate(llama8b, "H100", EngineSettings(vllm_version="0.33", max_model_len=8192))
    sugs = suggest(est, error_kind="cuda_oom_graph")
    assert sugs[0].changes == {"enforce_eager": True}
    assert sugs[0].estimate.cuda_graph_bytes == 0


@pytest.mark.parametrize("kind", ["cuda_oom_graph", "cuda_oom_runtime"])
def test_oom_outside_the_budget_never_raises_utilization(llama8b, kind):
    est = run_estimate(llama8b, "H100", EngineSettings(vllm_version="0.33", max_model_len=8192,
                                                      gpu_memory_utilization=0.92))
    for s in suggest(est, error_kind=kind):
        assert s.changes.get("gpu_memory_utilization", 0) <= 0.92, s.flags


def test_free_memory_fix_fits_in_what_is_free(llama8b):
    total = int(79.25 * GiB)
    other = 12 * GiB  # another process holds 12 GiB: 67.25 GiB free
    est = estimate(llama8b, gpu_total_bytes=total, settings=EngineSettings(vllm_version="0.9.2"),
                   gpu_name="NVIDIA A100 80GB", compute_capability="8.0", other_process_bytes=other)
    sugs = suggest(est, error_kind="free_memory_startup")
    assert sugs and "gpu_memory_utilization" in sugs[0].changes
    for s in sugs:
        u = s.changes.get("gpu_memory_utilization")
        if u is not None:
            # 67.25 / 79.25 = 0.8486: any share asked for must fit in what is free.
            assert u * total <= total - other
            assert u < 0.9



# -- a fix is shown as the user's own command with the fix applied --------------------------------

def test_fix_replaces_the_flag_in_any_spelling_and_keeps_the_rest():
    base = ["vllm", "serve", "/models/q", "-tp", "4", "--max_model_len=131072", "--enforce-eager",
            "--kv-transfer-config", '{"kv_connector":"X"}']
    assert command_with(base, "--max-model-len 65536") == (
        "vllm serve /models/q -tp 4 --enforce-eager --kv-transfer-config '{\"kv_connector\":\"X\"}' "
        "--max-model-len 65536")
    # -tp 4 is the same setting as --tensor-parallel-size: replaced, not doubled
    assert command_with(base, "--tensor-parallel-size 8").count("4") == 0
    # a negative value is a value, not a flag: "--max-model-len -1" goes as a whole
    assert command_with(["vllm", "serve", "m/x", "--max-model-len", "-1", "--trust-remote-code", "--port", "8000"],
                        "--max-model-len 65536") == "vllm serve m/x --trust-remote-code --port 8000 --max-model-len 65536"
    # a boolean flag takes no value: the word after it is kept
    assert command_with(["vllm", "serve", "m/x", "--enforce-eager", "--dtype", "half"], "--enforce-eager") \
        == "vllm serve m/x --dtype half --enforce-eager"


def test_fix_drops_the_device_list_when_it_changes_the_gpu_count_and_hides_keys():
    base = ["CUDA_VISIBLE_DEVICES=0,1", "vllm", "serve", "m/x", "--tensor-parallel-size", "2",
            "--api-key", "hunter2", "--hf-token=abc"]
    assert command_with(base, "--tensor-parallel-size 4") == \
        "vllm serve m/x --api-key '[redacted]' '--hf-token=[redacted]' --tensor-parallel-size 4"
    assert command_with(base, "--max-model-len 4096").startswith("CUDA_VISIBLE_DEVICES=0,1 vllm serve m/x")
    # settings whose names merely contain "token" are not secrets (vllm#28228's --max_num_batched_tokens 64000)
    kept = ["vllm", "serve", "m/x", "--max_num_batched_tokens", "64000", "--tokenizer", "org/tok",
            "--num-speculative-tokens", "3", "--long-prefill-token-threshold", "4096"]
    assert command_with(kept, "--max-num-seqs 8") == ("vllm serve m/x --max_num_batched_tokens 64000 --tokenizer org/tok "
                                                      "--num-speculative-tokens 3 --long-prefill-token-threshold 4096 "
                                                      "--max-num-seqs 8")
    # argparse takes a unique prefix of a flag: vllm#40691 wrote `--max-num-batched-token 16384`, a
    # setting whose last word is "token" — still a setting, not a secret; an unknown --x-token stays hidden
    prefix = ["vllm", "serve", "m/x", "--max-num-batched-token", "16384", "--my-token", "s3cret"]
    assert command_with(prefix, "--max-num-seqs 8") == \
        "vllm serve m/x --max-num-batched-token 16384 --my-token '[redacted]' --max-num-seqs 8"


def test_user_command_reads_the_run_with_its_environment_and_refuses_prose():
    text = ("I launch it like this:\n```\nCUDA_VISIBLE_DEVICES=0,1 \\\nvllm serve Qwen/Qwen3-32B \\\n"
            "  --tensor-parallel-size 2 \\\n  --max-model-len 40960\n```\n")
    assert user_command(text) == ["CUDA_VISIBLE_DEVICES=0,1", "vllm", "serve", "Qwen/Qwen3-32B",
                                  "--tensor-parallel-size", "2", "--max-model-len", "40960"]
    assert user_command("python -m vllm.entrypoints.openai.api_server --model m/x --dtype half") == \
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m/x", "--dtype", "half"]
    # prose that happens to say "vllm serve": not a command to rebuild
    assert user_command("I run vllm serve with the --dtype auto option. However, it fails") is None
    # a docker image: the flags alone are shown
    assert user_command("docker run --gpus all vllm/vllm-openai:latest --model m/x -tp 2") is None


def test_reply_fixes_are_the_pasted_command_with_the_change():
    from estimator.diagnosis import diagnose

    paste = ("```\nCUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2 "
             "--max-model-len 131072 --trust-remote-code --port 8001\n```\n"
             "ValueError: To serve at least one request with the models's max seq len (131072), (3.5 GiB KV cache "
             "is needed, which is larger than the available KV cache memory (1.2 GiB). Based on the available "
             "memory, the estimated maximum model length is 44832. Try increasing `gpu_memory_utilization` or "
             "decreasing `max_model_len` when initializing the engine.\nGPU: 2x RTX 3060 12GB\n")
    d = diagnose(paste, offline=True)
    assert d is not None and d.suggestions
    for s in d.suggestions:
        cmd = s["command"]
        assert cmd.startswith(("CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen2.5-7B-Instruct",
                               "vllm serve Qwen/Qwen2.5-7B-Instruct")), cmd
        assert "--trust-remote-code" in cmd and "--port 8001" in cmd and cmd.endswith(s["flags"])
        if "--max-model-len" in s["flags"]:
            assert "131072" not in cmd
        if "--tensor-parallel-size" not in s["flags"]:
            assert "--tensor-parallel-size 2" in cmd


# ------------------------------------------------------------------------------------------------
# Pipeline stages on cards of different sizes (vllm#34076: RTX 5070 Ti 16 GB + RTX 5090 D 32 GB)
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_pp():
    from estimator.gpus import lookup_gpu

    spec = load_model("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", offline=True).spec
    cards = [(g.name, g.total_bytes) for g in (lookup_gpu("RTX 5070 Ti"), lookup_gpu("RTX 5090"))]
    s = EngineSettings(vllm_version="0.15.1", engine="v1", pipeline_parallel_size=2, gpu_memory_utilization=0.9,
                       pp_layer_partition=[16, 32])
    return estimate(spec, gpu_total_bytes=cards[0][1], gpu_name=cards[0][0], settings=s, stage_gpus=cards)


def test_pipeline_rebalance_moves_layers_off_the_tight_stage(mixed_pp):
    """Every stage gets the tightest stage's block count, and 0.14–0.16 check the whole model's KV
    need against the smallest stage's memory: layers moved from the 16 GB card to the 32 GB card
    raise the capacity. The fix is the partition where one more move in either direction no
    longer helps, written as the environment variable before `vllm serve`."""
    e0 = mixed_pp
    assert not e0.fits
    sug = next(s for s in suggest(e0) if "pp_layer_partition" in s.changes)
    parts = sug.changes["pp_layer_partition"]
    assert sum(parts) == 48 and parts[0] < 16
    assert sug.flags.startswith(f"VLLM_PP_LAYER_PARTITION={parts[0]},{parts[1]}")
    assert sug.command("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8").startswith(
        f"VLLM_PP_LAYER_PARTITION={parts[0]},{parts[1]} vllm serve Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")

    def fit(p):
        return rerun(e0, pp_layer_partition=p, max_model_len=262144).max_model_len_fit

    assert fit(parts) > fit([16, 32])
    assert fit([parts[0] - 1, parts[1] + 1]) <= fit(parts) >= fit([parts[0] + 1, parts[1] - 1])


def test_measured_parts_follow_each_stage_when_layers_move(mixed_pp):
    """A measured activation (here 0.3 GiB above the model) is an offset on every stage's own
    model: moving a layer off stage 0 frees that layer's weights there, so stage 0 gains KV."""
    anchored = rerun(mixed_pp)
    anchored.inputs["activation_bytes"] = anchored.activation_bytes + int(0.3 * GiB)   # as a paste would
    before = rerun(anchored)
    after = rerun(anchored, pp_layer_partition=[15, 33])
    # with the partition unchanged the measured state is reproduced …
    assert before.activation_bytes == anchored.activation_bytes + int(0.3 * GiB)
    # … and stage 0 holds one layer less: more room, more tokens (it stays the tighter stage or
    # hands that role to the 32 GB card, whose pool is larger)
    assert after.max_model_len_fit > before.max_model_len_fit


def test_command_with_environment_words():
    base = ["VLLM_PP_LAYER_PARTITION=16,32", "CUDA_VISIBLE_DEVICES=0,1", "vllm", "serve", "m/x",
            "--pipeline-parallel-size", "2"]
    assert command_with(base, "VLLM_PP_LAYER_PARTITION=15,33 --max-model-len 65536") == (
        "VLLM_PP_LAYER_PARTITION=15,33 CUDA_VISIBLE_DEVICES=0,1 vllm serve m/x --pipeline-parallel-size 2 "
        "--max-model-len 65536")
    # another stage count: the partition (one entry per stage) and the device list go
    assert command_with(base, "--pipeline-parallel-size 1 --tensor-parallel-size 2") == (
        "vllm serve m/x --pipeline-parallel-size 1 --tensor-parallel-size 2")


def test_a_fix_without_the_users_command_repeats_the_run_it_was_checked_for(mixed_pp):
    """No `vllm serve` line in the paste: the command still carries the run's pipeline split, its
    layer partition and context length, or a copied TP fix would run on 2 GPUs instead of 4."""
    sug = next(s for s in suggest(mixed_pp) if s.changes.get("tensor_parallel_size"))
    tp = sug.changes["tensor_parallel_size"]
    cmd = sug.to_json()["command"]
    assert cmd.startswith("VLLM_PP_LAYER_PARTITION=16,32 vllm serve ")
    assert "--pipeline-parallel-size 2" in cmd and f"--tensor-parallel-size {tp}" in cmd
    assert f"{2 * tp} GPUs in all" in sug.why


def test_rebalance_over_four_unequal_stages():
    """QwQ-32B (Qwen2.5-32B's 64 layers, with 131,072 positions) over 3090 + 3090 + 4090 (24 GB) +
    A6000 (48 GB), PP4: vLLM's even split (16 each) leaves the 24 GB stages the bottleneck, 131,072
    tokens do not fit. The search gives the A6000 the most layers, and the fix keeps the goal."""
    from estimator.gpus import lookup_gpu

    spec = load_model("Qwen/QwQ-32B", offline=True).spec
    cards = [(g.name, g.total_bytes) for g in map(lookup_gpu, ("RTX 3090", "RTX 3090", "RTX 4090", "RTX A6000"))]
    e0 = estimate(spec, gpu_total_bytes=cards[0][1], gpu_name=cards[0][0], stage_gpus=cards,
                  settings=EngineSettings(vllm_version="0.33.0", pipeline_parallel_size=4, max_model_len=131072))
    assert not e0.fits
    sug = next(s for s in suggest(e0) if "pp_layer_partition" in s.changes)
    parts = sug.changes["pp_layer_partition"]
    assert sum(parts) == 64 and parts[3] == max(parts) and parts[3] > 16
    assert sug.keeps_goal and sug.fits and sug.estimate.max_model_len == 131072


def test_a_length_fix_under_both_states_says_why_it_is_shorter():
    """vLLM printed room for 49,152 tokens; the model's own state of Llama-3.1-8B on a 4090 holds
    fewer. The length fix must fit both (what `kvdoctor estimate` says too), and its reason names
    both limits rather than calling the round value "under 49,152"."""
    from estimator.diagnosis import diagnose

    text = ("$ vllm serve meta-llama/Llama-3.1-8B-Instruct   # one RTX 4090, vLLM 0.10.1\n"
            "ERROR 08-01 10:00:00 [core.py:632] ValueError: To serve at least one request with the models's max seq "
            "len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (6.00 "
            "GiB). Based on the available memory, the estimated maximum model length is 49152. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    d = diagnose(text, offline=True, explain=True)
    first = d.suggestions[0]
    assert first["flags"].startswith("--max-model-len ") and first["fits"]
    assert "49,152 tokens by vLLM's figures" in first["why"] and "by the model's own estimate" in first["why"]
    own = int(first["why"].split(" and ")[1].split(" ")[0].replace(",", ""))
    assert first["max_model_len"] <= own < 49152


def test_a_v0_length_fix_without_chunked_prefill_searches_its_own_profile_run():
    """bonito#7 (V0 0.4, Mistral-7B on an A10G): at 32,768 tokens the KV cache holds 16,816. V0 then
    profiles Tb = max_model_len tokens, so a shorter context also shrinks the activation peak: the
    longest context that fits lies above 16,816 (by vLLM's arithmetic ≈ 128 KB of activation per
    token), and the fix says why it exceeds today's capacity."""
    from estimator.diagnosis import diagnose

    text = ("$ vllm serve mistralai/Mistral-7B-v0.1   (one NVIDIA A10G)\n"
            "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
            "stored in KV cache (16816). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n")
    d = diagnose(text, offline=True, explain=True, vllm_version="0.4.0")
    first = d.suggestions[0]
    assert first["flags"].startswith("--max-model-len ") and first["fits"]
    assert 16816 < first["max_model_len"] < 32768
    assert "profiles one forward pass over max_model_len tokens" in first["why"]


def test_a_lever_paired_with_a_v0_length_searches_that_lengths_profile_run_too():
    """Llama-3.1-8B on an A10G, V0 0.4, 32,768 tokens: the plain length fix already counts the smaller
    profile run of a shorter context; a lever that also needs a shorter context (more utilization)
    must too, or it would be paired with a length shorter than cutting the length alone."""
    s = EngineSettings(vllm_version="0.4.0", engine="v0", max_model_len=32768)
    est = run_estimate(load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec, "A10G", s)
    fixes = suggest(est, error_kind="kv_capacity_v0")
    plain = next(x for x in fixes if x.flags.startswith("--max-model-len"))
    util = next(x for x in fixes if x.flags.startswith("--gpu-memory-utilization"))
    assert util.changes["max_model_len"] > plain.changes["max_model_len"] and util.estimate.fits


# dusty-nv/jetson-containers#795's shape: V0 on a Jetson, the shell's "Killed" after start-up.
JETSON = """llm = LLM(model="Qwen/Qwen2-7B", max_model_len=200, max_num_seqs=1)   # Jetson Orin NX 16G, vLLM 0.6.3
INFO 01-23 07:32:42 model_runner.py:1071] Loading model weights took 4.3752 GB
INFO 01-23 07:34:26 gpu_executor.py:122] # GPU blocks: 11836, # CPU blocks: 4681
INFO 01-23 07:34:26 gpu_executor.py:126] Maximum concurrency for 200 tokens per request: 946.88x
Killed
"""


def test_killed_by_the_host_is_not_a_gpu_problem():
    from estimator.paste import read_paste

    f = read_paste(JETSON)
    assert f.error_kind == "other" and f.extra.get("host_killed") and int(f.extra["cpu_blocks"]) == 4681
    assert read_paste(JETSON.replace("Killed\n", "")).extra.get("host_killed") is None


_MMAP_REFUSED = (
    "ERROR 06-02 09:39:03 [core.py:396]     with safe_open(st_file, framework=\"pt\") as f:\n"
    "ERROR 06-02 09:39:03 [core.py:396] RuntimeError: unable to mmap 16933256392 bytes from file </root/.cache/"
    "huggingface/hub/models--Qwen--Qwen3-30B-A3B-GPTQ-Int4/snapshots/9b534e4318b7ebc3c961a839f13eb18b1833f441/"
    "model.safetensors>: Cannot allocate memory (12)\n")


def test_a_checkpoint_file_the_host_refuses_to_map_is_host_memory():
    """vllm#759 (and #2391, #9753): loading, the kernel refused to map a safetensors file (ENOMEM). Without
    "Traceback" or "Killed" the reader found no memory error and the reply said so; the human answer on #2391
    blamed CPU cores. 16,933,256,392 B = 15.77 GiB (÷ 2^30) = 16.9 GB; the GPU is beside the point, so no
    card is asked for and no GPU fix offered."""
    from estimator.diagnosis import diagnose
    from estimator.paste import read_paste

    f = read_paste(_MMAP_REFUSED)
    assert f.error_kind == "other" and f.extra["host_mmap_bytes"] == 16_933_256_392
    assert f.extra["host_mmap_file"].endswith("/model.safetensors") and f.get("model") == "Qwen/Qwen3-30B-A3B-GPTQ-Int4"
    d = diagnose(_MMAP_REFUSED, offline=True)
    assert d.summary.startswith("**Host memory, not GPU memory**: while loading the checkpoint the operating system "
                                "refused to map 16,933,256,392 bytes (15.77 GiB, 16.9 GB) of `model.safetensors`")
    assert "more RAM or swap than the file's size" in d.summary
    assert d.suggestions == [] and not d.four_bit
    assert len(d.missing) == 1 and d.missing[0].startswith("`free -h` and `ulimit -v`")
    # another mmap failure (a missing file) is not a memory one
    assert read_paste(_MMAP_REFUSED.replace("Cannot allocate memory", "No such file or directory")).extra.get(
        "host_mmap_bytes") is None


_CONTAINER_LOG = (
    "(APIServer pid=1) INFO 07-30 07:06:32 [api_utils.py:345]  version 0.26.0\n"
    "(EngineCore pid=79) INFO 07-30 07:07:11 [gpu_model_runner.py:5347] Model loading took 0.88 GiB memory\n"
    "(EngineCore pid=79) INFO 07-30 07:11:00 [gpu_worker.py:560] Available KV cache memory: 13.33 GiB\n"
    "(EngineCore pid=79) INFO 07-30 07:11:00 [kv_cache_utils.py:2177] GPU KV cache size: 2,324,244 tokens\n")


@pytest.mark.parametrize("head,killed", [
    ('out of memory: container "inference" exceeded its 8Gi memory limit and was OOM-killed (exit 137).\n', True),
    ("    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n", True),
    ('docker inspect → RestartCount=3, "OOMKilled": false, StartedAt=2026-09-16T09:26:20Z\n', False),
])
def test_a_container_killed_at_its_memory_limit_is_a_host_ram_problem(head, killed):
    """A container's memory limit is host RAM: Docker / Kubernetes report its kill as OOMKilled (exit code 137)
    after a start-up log that sized the KV cache fine. `docker inspect`'s "OOMKilled": false is no kill."""
    from estimator.diagnosis import diagnose
    from estimator.paste import read_paste

    f = read_paste(head + _CONTAINER_LOG)
    assert bool(f.extra.get("host_killed")) is killed and bool(f.extra.get("container_killed")) is killed
    assert (f.error_kind == "other") is killed
    if killed:
        summary = diagnose(head + _CONTAINER_LOG, offline=True).summary
        assert "killed at its memory limit" in summary and "not GPU memory" in summary
        assert "shell prints `Killed`" not in summary


def test_host_oom_fixes_give_memory_back_to_the_os():
    """On a board whose GPU memory is the system RAM, the fix is less utilization (the smallest that
    still serves max_model_len, + 0.02) and no V0 swap space; raising anything GPU-side is wrong."""
    from estimator.advice import host_memory_fixes

    spec = load_model("Qwen/Qwen2-7B", offline=True).spec
    s = EngineSettings(vllm_version="0.6.3", engine="v0", max_model_len=200, max_num_seqs=1)
    est = run_estimate(spec, "Jetson Orin NX 16GB", s, weights_bytes=int(4.3752 * GiB))
    per_block = 28 * 4 * 128 * 2 * 2 * 16                     # 917,504 B: Qwen2-7B's 28 layers × 4 KV heads × 128
    fixes = host_memory_fixes(est, 4681 * per_block)            # 4,681 CPU blocks = 4.00 GiB pinned
    util, swap = fixes
    u = util.changes["gpu_memory_utilization"]
    assert util.flags == f"--gpu-memory-utilization {u:g}" and u < 0.9 and util.fits
    assert rerun(est, gpu_memory_utilization=u).fits and not rerun(est, gpu_memory_utilization=round(u - 0.03, 2)).fits
    assert swap.flags == "--swap-space 0" and "4.00 GiB" in swap.why
    # a discrete card: the GPU budget is not the host's RAM, only the swap space is
    h100 = run_estimate(spec, "H100", s, weights_bytes=int(4.3752 * GiB))
    assert [x.flags for x in host_memory_fixes(h100, 4 * GiB)] == ["--swap-space 0"]
    # V1 keeps no CPU swap blocks
    v1 = run_estimate(spec, "Jetson Orin NX 16GB", EngineSettings(vllm_version="0.10.1", max_model_len=200))
    assert all(x.flags != "--swap-space 0" for x in host_memory_fixes(v1, 0))


def test_killed_reply_says_what_the_board_had_left():
    from estimator.diagnosis import diagnose

    d = diagnose(JETSON, offline=True, explain=True, gpu="Jetson Orin NX 16GB")
    # 0.9 × 15.03 GiB = 13.53 GiB for vLLM + 4.00 GiB pinned swap = 17.53 GiB of a 15.03 GiB board
    assert "killed by the operating system" in d.summary and "share the same 15.03 GiB" in d.summary
    assert "2.50 GiB more than the board has" in d.summary
    assert d.suggestions[0]["flags"].startswith("--gpu-memory-utilization 0.")


def test_an_unexplained_failure_that_fits_gets_no_capacity_levers():
    """'EngineCore failed to start' with settings that fit by vLLM's arithmetic (Qwen2.5-7B at 4,096
    tokens on an 80 GB card): more KV (TP, fp8, utilization) answers nothing; the reply says the
    capacity check is not what failed and asks for the exception."""
    from estimator.diagnosis import diagnose

    text = ("$ vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 4096   # on an H100 80GB, vLLM 0.10.1\n"
            "ERROR 06-04 12:00:49 [core.py:500] EngineCore failed to start.\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "other" and d.estimate["fits"]
    assert d.suggestions == [] and "not the KV-capacity check" in d.summary
    assert any("exception" in m for m in d.missing)


@pytest.mark.parametrize("version,gpu,model,kv_fp8,weights_fp8", [
    ("0.1.0", "A100 80GB", "Qwen/Qwen2.5-14B-Instruct-1M", False, False),  # fp8 KV: 0.3.0; FP8 weights: 0.4.1
    ("0.4.2", "A100 80GB", "Qwen/Qwen2.5-14B-Instruct-1M", True, False),   # W8A8 needs 8.9 until FP8 Marlin (0.5.1)
    ("0.4.2", "L40S", "Qwen/Qwen2.5-14B-Instruct-1M", True, True),         # 8.9
    ("0.6.3", "A100 80GB", "Qwen/Qwen2.5-14B-Instruct-1M", True, True),    # FP8 Marlin weight-only on Ampere
    ("0.6.3", "Tesla T4", "meta-llama/Llama-3.2-3B-Instruct", True, False),  # 7.5: no FP8 weights at all
])
def test_fp8_fixes_only_where_the_version_and_card_have_them(version, gpu, model, kv_fp8, weights_fp8):
    spec = load_model(model, offline=True).spec
    # the config's whole context (1,010,000 tokens for the 14B-1M; 131,072 for the 3B), chunked prefill
    est = run_estimate(spec, gpu, EngineSettings(vllm_version=version, engine="v0", max_num_batched_tokens=8192,
                                                 enable_chunked_prefill=True))
    flags = [s.flags for s in suggest(est, error_kind="kv_capacity_v0")]
    assert flags and not est.fits
    assert any("--kv-cache-dtype fp8" in f for f in flags) == kv_fp8
    assert any("--quantization fp8" in f for f in flags) == weights_fp8


def test_a_quantized_checkpoint_is_not_offered_fp8_weights():
    spec = load_model("Qwen/Qwen3-32B-FP8", offline=True).spec
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.10.1", max_model_len=32768))
    assert est.spec.quantization and not est.fits
    assert all("--quantization" not in s.flags for s in suggest(est, error_kind="cuda_oom_load"))


def test_a_startup_log_without_an_error_is_not_told_what_to_mend():
    from estimator.diagnosis import diagnose

    text = ("$ vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768   # RTX 4090, vLLM 0.6.3\n"
            "INFO 10-01 12:00:00 model_runner.py:1071] Loading model weights took 14.2487 GB\n"
            "INFO 10-01 12:00:09 gpu_executor.py:122] # GPU blocks: 4000, # CPU blocks: 4681\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "startup_log_ok"
    assert d.summary.startswith("This start-up log shows no error") and "Change to make" not in d.summary


GRAPH_OOM = """[Bug]: torch.OutOfMemoryError for 0.6.4.post1 but 0.6.3.post1 is working
INFO 12-20 20:25:46 worker.py:241] the current vLLM instance can use total_gpu_memory (15.77GiB) x gpu_memory_utilization (0.90) = 14.20GiB
INFO 12-20 20:25:46 worker.py:241] model weights take 7.51GiB; non_torch_memory takes 0.39GiB; PyTorch activation peak memory takes 2.53GiB; the rest of the memory reserved for KV Cache is 3.76GiB.
(VllmWorkerProcess pid=90) INFO 12-20 20:25:49 model_runner.py:1413] Capturing cudagraphs for decoding.
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 5.12 MiB is free.
"""


def test_an_oom_named_in_the_title_does_not_hide_where_the_log_hit():
    from estimator.paste import read_paste

    assert read_paste(GRAPH_OOM).error_kind == "cuda_oom_graph"


def test_graph_capture_oom_without_a_model_still_gets_vllms_levers():
    """(1 − 0.90) × 15.77 GiB = 1.58 GiB was all that was left outside vLLM's budget."""
    from estimator.diagnosis import diagnose

    d = diagnose(GRAPH_OOM, offline=True, explain=True)
    flags = [u["flags"] for u in d.unchecked]
    assert flags[:2] == ["--enforce-eager", "--gpu-memory-utilization 0.85"]
    assert "1.58 GiB was left for them" in d.unchecked[1]["why"]


def test_no_chunked_prefill_fix_where_v0_keeps_it_off():
    """V0 turns chunked prefill off by itself for sliding-window models (Mistral-7B-v0.1's 4,096
    window): the fix is not offered there, while a full-attention model of the same run gets it.
    (0.4.2: chunked prefill batches 512 tokens; 0.4.0's chunked default was max(L, 2048), no help.)"""
    s = EngineSettings(vllm_version="0.4.2", engine="v0", max_model_len=32768)
    mistral = run_estimate(load_model("mistralai/Mistral-7B-v0.1", offline=True).spec, "A10G", s)
    llama = run_estimate(load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec, "A10G", s)
    assert not mistral.fits and not llama.fits
    assert all("--enable-chunked-prefill" not in x.flags for x in suggest(mistral, error_kind="kv_capacity_v0"))
    assert any(x.flags.startswith("--enable-chunked-prefill") for x in suggest(llama, error_kind="kv_capacity_v0"))
    # the user's own --max-num-batched-tokens stays the batch with chunked prefill on: nothing to offer
    own = run_estimate(load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec, "A10G",
                       s.replace(max_num_batched_tokens=32768))
    assert not own.fits
    assert all("--enable-chunked-prefill" not in x.flags for x in suggest(own, error_kind="kv_capacity_v0"))


def test_settings_errors_get_their_standard_fixes_not_memory_levers():
    """tp_divisibility, bf16 on pre-Ampere and a max_model_len above the config are settings errors:
    the fix follows from the numbers vLLM printed, and no memory lever is offered (an R1-Distill-Qwen-7B
    TP8 paste used to get `--gpu-memory-utilization 0.92`)."""
    from estimator.diagnosis import diagnose

    tp = diagnose("$ vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-7B --tensor-parallel-size 8\n"
                  "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).\n",
                  offline=True, explain=True)
    assert tp.error_kind == "tp_divisibility" and tp.suggestions == [] and not tp.missing
    assert "settings error" in tp.summary
    # 4 divides 28 and 8: four-way tensor parallelism, two pipeline stages for the other GPUs
    assert tp.unchecked[0]["flags"] == "--tensor-parallel-size 4 --pipeline-parallel-size 2"
    # with a model in the catalog: no memory table of the TP vLLM refused (2.67 KV heads per GPU)
    qwen = diagnose("vllm serve Qwen/Qwen2.5-14B-Instruct --tensor-parallel-size 3\nValueError: Total number of "
                    "attention heads (40) must be divisible by tensor parallel size (3).\n", offline=True, explain=True)
    assert qwen.estimate is None and qwen.unchecked[0]["flags"] == "--tensor-parallel-size 1 --pipeline-parallel-size 3"
    prime = diagnose("ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).\n"
                     "vllm serve x --tensor-parallel-size 3\n", offline=True, explain=True)
    # no TP above 1 splits 32 heads 3 ways: TP 1 replaces the failing 3 (kept, it would still fail)
    assert prime.unchecked[0]["flags"] == "--tensor-parallel-size 1 --pipeline-parallel-size 3"
    # before 0.5.1 (vllm PR #4412) the engine had no pipeline parallelism: only head splits are offered
    old = diagnose("INFO 05-02 10:00:00 api_server.py:1] vLLM API server version 0.4.2\n"
                   "$ python -m vllm.entrypoints.openai.api_server --model x --tensor-parallel-size 8\n"
                   "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).\n",
                   offline=True, explain=True)
    assert old.unchecked[0]["flags"] == "--tensor-parallel-size 4"
    assert not any("pipeline" in u["flags"] for u in old.unchecked)
    # layers not divisible by the pipeline size, with no tensor parallelism: 30 layers, PP 4 → 3
    pp = diagnose("vllm serve x --pipeline-parallel-size 4\nValueError: Total number of hidden layers (30) must be "
                  "divisible by pipeline parallel size (4).\n", offline=True, explain=True)
    assert pp.error_kind == "tp_divisibility" and pp.unchecked[0]["flags"] == "--pipeline-parallel-size 3"

    bf16 = diagnose("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                    "Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead by explicitly "
                    "setting the`dtype` flag in CLI, for example: --dtype=half.\n", offline=True, explain=True)
    assert bf16.error_kind == "bf16_compute_capability"
    assert bf16.unchecked[0]["flags"] == "--dtype half" and "compute capability 7.0" in bf16.unchecked[0]["why"]

    long = diagnose("ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len "
                    "(max_position_embeddings=32768 or model_max_length=None in model's config.json). This may lead "
                    "to incorrect model outputs or CUDA errors.\n", offline=True, explain=True)
    assert long.error_kind == "max_model_len_derived"
    assert [u["flags"] for u in long.unchecked] == ["--max-model-len 32768", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"]
    assert "(131,072) is longer than the model's config allows (32,768)" in long.summary


def test_a_start_up_log_whose_profile_run_outweighs_the_kv_cache_leads_with_the_batch_lever():
    """vllm#28228's shape: --max-num-batched-tokens 65536 makes the profile run take more memory than
    the KV cache gets (4.7 GiB beside 1.20 GiB here); a start-up log without an error then gets the
    profile-run lever first (a quarter of the batch), and never a larger max_num_seqs than the 8 set."""
    from estimator.diagnosis import diagnose

    text = ("vllm serve Qwen/Qwen3-8B --max-model-len 4096 --max-num-batched-tokens 65536 --max-num-seqs 8 "
            "--gpu-memory-utilization 0.9\non one RTX 4090, vLLM 0.10.1\n"
            "(EngineCore_0 pid=1) INFO 08-01 10:00:00 [gpu_worker.py:276] Available KV cache memory: 1.20 GiB\n"
            "(EngineCore_0 pid=1) INFO 08-01 10:00:00 [kv_cache_utils.py:849] GPU KV cache size: 8,736 tokens\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "startup_log_ok"
    assert d.derived["figures"]["activation"]["value"] > d.derived["figures"]["kv_pool"]["value"]
    first = d.suggestions[0]
    assert first["flags"].startswith("--max-num-batched-tokens 16384")
    assert first["kv_cache_tokens"] > 8736 and first["fits"]
    assert not any("--max-num-seqs" in s["flags"] for s in d.suggestions)
    # a start-up log whose KV cache got more than the profile run took: no profile-run lever first
    calm = text.replace("--max-num-batched-tokens 65536 ", "").replace("1.20 GiB", "4.20 GiB").replace("8,736", "30,576")
    d = diagnose(calm, offline=True, explain=True)
    assert d.derived["figures"]["activation"]["value"] < d.derived["figures"]["kv_pool"]["value"]
    assert not any(s["flags"].startswith("--max-num-batched-tokens") for s in d.suggestions)


def test_a_fix_command_runs_the_configuration_it_was_checked_with(llama8b):
    """A fix's command repeats the user's settings the check used (utilization, max_num_seqs, eager,
    online quantization …): estimating that very command gives the predicted tokens. Without them
    `vllm serve MODEL --max-model-len 45056` would run at 0.90 with 256 sequences and not fit."""
    import shlex

    from estimator.vllm import parse_flags

    base = EngineSettings(vllm_version="0.6.3", gpu_memory_utilization=0.95, max_num_seqs=64,
                          enforce_eager=True, max_model_len=65536)
    est = run_estimate(llama8b, "A10G", base)
    sugs = suggest(est)
    assert sugs
    for sug in sugs:
        words = shlex.split(sug.command("meta-llama/Llama-3.1-8B-Instruct"))
        assert words[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
        again = run_estimate(llama8b, "A10G", parse_flags(words[3:], EngineSettings(vllm_version="0.6.3")))
        assert (again.kv_cache_tokens, again.fits) == (sug.estimate.kv_cache_tokens, sug.estimate.fits), sug.flags
    assert "--gpu-memory-utilization 0.95" in sugs[0].command("m") and "--enforce-eager" in sugs[0].command("m")


def test_online_fp8_names_and_the_16_bit_load_before_0_16(llama8b):
    """--quantization fp8 on a 16-bit checkpoint: later vLLM refuses that name for online quantization
    ("Please use `--quantization fp8_per_tensor`", which exists from 0.20); before 0.16 the 16-bit weights
    are allocated first, so the fix is not offered where they do not fit on the card."""
    def fp8_flags(version, gpu):
        est = run_estimate(llama8b, gpu, EngineSettings(vllm_version=version, max_model_len=131072))
        return [s.flags for s in suggest(est) if "fp8" in str(s.changes.get("quantization"))]

    assert any("--quantization fp8_per_tensor" in f for f in fp8_flags("0.33.0", "L4"))
    assert any(f.startswith("--quantization fp8") and "per_tensor" not in f for f in fp8_flags("0.10.1", "L4"))
    # 8B in bf16 is 14.99 GiB, more than a 12 GB RTX 4070 holds
    assert fp8_flags("0.10.1", "RTX 4070") == []          # the 16-bit load does not fit before 0.16
    assert fp8_flags("0.20.0", "RTX 4070")                # meta-device loading from 0.16


def test_limit_mm_flag_is_written_as_the_version_parses_it():
    """vllm/engine/arg_utils.py: --limit-mm-per-prompt takes KEY=VALUE pairs (nullable_kvs) until 0.9,
    deprecated "in v0.10.0" for JSON; a JSON fix for 0.7.3 would fail at argument parsing."""
    spec = load_model("Qwen/Qwen2.5-VL-7B-Instruct", offline=True).spec

    def mm_flags(version):
        est = run_estimate(spec, "RTX 3090", EngineSettings(vllm_version=version, max_model_len=128000))
        assert not est.fits
        return [s.flags for s in suggest(est) if "limit_mm_per_prompt" in s.changes]

    old, new = mm_flags("0.8.5"), mm_flags("0.10.1")
    assert old and all(f.startswith("--limit-mm-per-prompt image=") and "{" not in f for f in old)
    assert new and all(f.startswith("--limit-mm-per-prompt '{") for f in new)


def test_a_shorter_context_shrinks_v1s_dummy_video():
    """From 0.11 V1 builds Qwen2-VL's dummy video as long as max_model_len holds (gpu_model_runner.py
    _get_mm_dummy_batch with seq_len=max_model_len). Qwen2.5-VL-7B on an RTX 4090 at its 128,000-token
    default: the 114,688-token video's profile leaves no KV at all, so the pool alone names no length;
    under 32,768 tokens the video is one 16,384-token frame pair and 43,680 tokens of KV remain (46,464
    before the multimodal RoPE cache was counted at 4 × 128,000 positions: its 98,304,000 B more are
    1,714.3 tokens of 57,344 B; then 44,736, and the caching allocator's blocks, 60,797,440 B, are
    1,060.2 tokens more; the pool rounds down to 16-token blocks), so every length up to 32,767 fits —
    offered as 31,744, images and videos kept. On 0.10.2 the dummy video is
    sized by the batch, not the context: the plain length fix is the pool's own."""
    spec = load_model("Qwen/Qwen2.5-VL-7B-Instruct", offline=True).spec
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.11.0"))
    assert not est.fits and est.max_model_len_fit <= 0
    fix = [s for s in suggest(est) if s.changes == {"max_model_len": 31744}]
    assert fix and fix[0].fits and fix[0].estimate.kv_cache_tokens == 43_680
    assert "largest context that fits is 32,767 tokens" in fix[0].why
    assert "profile run grows with max_model_len" in fix[0].why
    old = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.10.2"))
    plain = [s for s in suggest(old) if set(s.changes) == {"max_model_len"}]
    assert plain and plain[0].why.startswith(f"the largest context that fits is {old.max_model_len_fit:,} tokens;")


def test_a_limit_that_frees_nothing_is_not_offered():
    """gemma-3-27b on 0.8.5 (V1): the encoder's dummy images are not what limits this run — a
    --limit-mm-per-prompt fix must free a useful amount of KV memory (advice.MM_LIMIT_MIN_GAIN) to be
    offered at all. Without images only what V1 keeps beside the LLM's run goes: the dummy outputs, 32 images
    of 256 tokens × 5,376 values × 2 B (84 MiB), and their pixels, 32 × 896² × 3 values in float32 on 0.8.5
    (294 MiB) — 0.37 GiB, under advice.MM_LIMIT_MIN_GAIN."""
    from estimator.advice import MM_LIMIT_MIN_GAIN

    spec = load_model("google/gemma-3-27b-it", offline=True).spec
    est = run_estimate(spec, "A100-80GB", EngineSettings(vllm_version="0.8.5", max_model_len=131072))
    gain = rerun(est, limit_mm_per_prompt={"image": 0}).kv_cache_bytes - est.kv_cache_bytes
    assert gain == 32 * 256 * 5376 * 2 + 32 * 896 * 896 * 3 * 4
    assert gain < MM_LIMIT_MIN_GAIN
    assert not [s for s in suggest(est) if "limit_mm_per_prompt" in s.changes]


def test_eager_mode_is_no_fix_for_a_runtime_oom_where_graphs_are_budgeted(llama8b):
    """V1 0.20+ subtracts the CUDA graphs before sizing the KV cache: --enforce-eager hands their memory
    to the KV cache and leaves the (1 − u) margin a runtime OOM hit unchanged. Before, it frees memory
    outside the budget — and so does Model Runner V2 before 0.29, which captures its graphs on top of
    the KV cache (Llama runs on V2 by default from 0.23)."""
    def eager(version, kind, v2=None):
        est = run_estimate(llama8b, "L4", EngineSettings(vllm_version=version, max_model_len=8192,
                                                         model_runner_v2=v2))
        return [s.flags for s in suggest(est, error_kind=kind) if s.changes.get("enforce_eager")]

    assert eager("0.27.0", "cuda_oom_runtime", v2=False) == []
    assert eager("0.27.0", "cuda_oom_graph", v2=False) == ["--enforce-eager"]
    assert eager("0.10.1", "cuda_oom_runtime") == ["--enforce-eager"]
    assert eager("0.27.0", "cuda_oom_runtime") == ["--enforce-eager"]      # V2 by default: graphs after KV
    assert eager("0.29.0", "cuda_oom_runtime") == []                        # V2 budgets them from 0.29


def test_a_length_above_the_config_is_refused_unless_overridden():
    """vllm/config/model.py _get_and_verify_max_len: "User-specified max_model_len (131072) is greater
    than the derived max_model_len (max_position_embeddings=32768 …)" unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
    (or RoPE scaling set with --hf-overrides / --rope-scaling). Qwen2.5-7B-Instruct's config has 32,768."""
    from estimator.vllm import parse_flags

    spec = load_model("Qwen/Qwen2.5-7B-Instruct", offline=True).spec

    def est(*flags):
        return run_estimate(spec, "RTX 4090", parse_flags(["--max-model-len", "65536", *flags],
                                                           EngineSettings(vllm_version="0.7.3")))

    refused = est()
    assert (refused.error_kind, refused.fits) == ("max_model_len_derived", False)
    fixes = suggest(refused)
    assert [f.flags for f in fixes] == ["--max-model-len 32768", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"]
    assert fixes[1].command("Qwen/Qwen2.5-7B-Instruct").startswith("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve ")
    assert est("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1").error_kind is None
    assert est("--hf-overrides", '{"rope_scaling": {"rope_type": "yarn", "factor": 4}}').error_kind is None
    assert run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.7.3", max_model_len=32768)).error_kind is None


def test_v0_batch_lever_turns_chunked_prefill_on_in_its_command(llama8b):
    """V0 without chunked prefill refuses max_num_batched_tokens < max_model_len (SchedulerConfig):
    the smaller-batch fix was checked with chunked prefill on, so its command says so."""
    est = run_estimate(llama8b, "A10G", EngineSettings(vllm_version="0.6.3", max_model_len=32768))
    batch = [s for s in suggest(est, error_kind="cuda_oom_profile") if "max_num_batched_tokens" in s.changes]
    assert batch and all("--enable-chunked-prefill" in s.flags for s in batch)


def test_fix_commands_keep_the_users_home_and_variables_expandable():
    """shlex.join would write '~/models' and '$HOME/tpl.jinja' in single quotes, where the shell no longer
    expands them; words with spaces or quotes are still quoted."""
    base = ["vllm", "serve", "m/x", "--download-dir", "~/models", "--chat-template", "$HOME/tpl.jinja",
            "--served-model-name", "my model", "--kv-transfer-config", '{"kv_connector":"X"}']
    assert command_with(base, "--max-model-len 4096") == (
        "vllm serve m/x --download-dir ~/models --chat-template $HOME/tpl.jinja --served-model-name 'my model' "
        "--kv-transfer-config '{\"kv_connector\":\"X\"}' --max-model-len 4096")


def test_no_fp8_kv_fix_where_v1_backends_refuse_it():
    """vllm/v1/attention/backends/mla/flashmla.py and triton_mla.py up to 0.10: "FlashMLA V1 with FP8 KV
    cache not yet supported"; 0.11 takes it. Dense models on V1 0.8+ keep the fix."""
    spec = load_model("deepseek-ai/DeepSeek-V3", offline=True).spec

    def fp8_kv(version):
        est = run_estimate(spec, "H200", EngineSettings(vllm_version=version, tensor_parallel_size=8,
                                                         max_model_len=163840, gpu_memory_utilization=0.66))
        return [s.flags for s in suggest(est) if s.changes.get("kv_cache_dtype")]

    assert fp8_kv("0.10.1") == []
    assert fp8_kv("0.11.0")


@pytest.mark.parametrize("model,gpu,u,length,version,offered", [
    # a dense model on Ampere (CC 8.6 / 8.0): 0.10.2 keeps FlashAttention, whose FA2 refuses an fp8 KV cache;
    # from 0.11.0 vllm/platforms/cuda.py sends it to the Triton backend off SM 9.0
    ("meta-llama/Llama-3.2-3B-Instruct", "RTX 3090", 0.8, None, "0.10.2", False),
    ("meta-llama/Llama-3.2-3B-Instruct", "RTX 3090", 0.8, None, "0.11.0", True),
    ("meta-llama/Llama-3.2-3B-Instruct", "A100 80GB", 0.24, None, "0.11.0", True),
    # an FP8 card (CC 8.9) from 0.8, as before
    ("meta-llama/Llama-3.2-3B-Instruct", "L40S", 0.45, None, "0.8.5", True),
    # Turing: no V1 backend kvdoctor knows takes it there
    ("meta-llama/Llama-3.2-3B-Instruct", "Tesla T4", 0.8, 65536, "0.11.0", False),
    # MLA off Hopper/Blackwell runs Triton MLA: "FP8 Triton MLA not yet supported" to 0.17.1, fp8 from 0.18.0
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "A100 80GB", 0.42, None, "0.17.1", False),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "A100 80GB", 0.42, None, "0.18.0", True),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "L40S", 0.75, None, "0.17.1", False),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "H100", 0.46, None, "0.11.0", True),     # FlashMLA
])
def test_the_fp8_kv_fix_follows_the_v1_backend_the_card_gets(model, gpu, u, length, version, offered):
    """At the config's whole context (131,072 tokens for the 3B: 28 layers × 8 KV heads × 128 × 2 × 2 B =
    112 KiB a token, 14 GiB; 163,840 for V2-Lite: 27 layers × 576 × 2 B, 4.75 GiB; 65,536 on the T4) none
    of these runs fits, and with half the bytes per token each would, so the fix is offered exactly where
    the card's V1 backend takes an fp8 KV cache."""
    spec = load_model(model, offline=True).spec
    est = run_estimate(spec, gpu, EngineSettings(vllm_version=version, gpu_memory_utilization=u,
                                                 max_model_len=length))
    assert not est.fits
    assert rerun(est, kv_cache_dtype="fp8").fits
    flags = [s.flags for s in suggest(est)]
    assert any("--kv-cache-dtype fp8" in f for f in flags) == offered


def test_tp_fix_prefers_keeping_the_context_within_twice_the_gpus():
    """Llama-3.1-70B (131 GiB of bf16) on one H100: TP 2 runs only 5,808 tokens, TP 4 the asked 8,192 —
    the fix offered is TP 4. (The seed, whose 1M context needs TP 8, still gets TP 2 with a shorter one.)"""
    spec = load_model("meta-llama/Llama-3.1-70B-Instruct", offline=True).spec
    est = run_estimate(spec, "H100", EngineSettings(vllm_version="0.8.5", max_model_len=8192))
    assert rerun(est, tensor_parallel_size=2).max_model_len_fit < 8192
    tps = [s for s in suggest(est) if "tensor_parallel_size" in s.changes]
    assert [s.changes for s in tps] == [{"tensor_parallel_size": 4}] and tps[0].keeps_goal


def test_commands_before_0_5_2_start_the_server_module(llama8b):
    """`vllm serve` came with vLLM 0.5.2; a fix for 0.4.x runs python -m vllm.entrypoints.openai.api_server."""
    est = run_estimate(llama8b, "A10G", EngineSettings(vllm_version="0.4.2", max_model_len=131072))
    sug = suggest(est)[0]
    assert sug.command("meta-llama/Llama-3.1-8B-Instruct").startswith(
        "python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct ")


def test_v0_no_cache_blocks_still_gets_the_plain_length_fix():
    """Llama-3.2-11B-Vision on a 4090, V0 0.6.3, 32,768 tokens, --max-num-seqs 2 (with the default 256
    V0 would encode 256 dummy images at once, 74.7 GiB), utilization 0.95 (at 0.90 its 19.9 GiB of
    weights leave no room at any length): no KV block at that length, but V0's profile run shrinks with
    max_model_len, so a shorter context fits with its own profile — the plain length fix is searched
    from 2,048 tokens up (each length re-run with its own profile)."""
    spec = load_model("meta-llama/Llama-3.2-11B-Vision-Instruct", offline=True).spec
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.6.3", max_model_len=32768, max_num_seqs=2,
                                                         gpu_memory_utilization=0.95))
    assert est.error_kind == "no_cache_blocks" and est.max_model_len_fit == 0
    plain = [s for s in suggest(est) if set(s.changes) == {"max_model_len"}]
    assert plain and plain[0].fits
    target = plain[0].changes["max_model_len"]
    assert rerun(est, max_model_len=target).fits and not rerun(est, max_model_len=target + 2048).fits


def test_a_length_above_the_config_whose_config_length_does_not_fit_either():
    """--max-model-len 1,000,000 for Qwen3-8B (its config allows 40,960) on a 4090 at utilization 0.75:
    the config's 40,960 tokens (5.62 GiB of KV) do not fit in what is left beside 15.3 GiB of weights,
    so the fix is the longest length that does, once — the search used to pass max_model_len twice
    (TypeError), and the flags read "--max-model-len 40960 --max-model-len 8192"."""
    spec = load_model("Qwen/Qwen3-8B", offline=True).spec
    s = EngineSettings(vllm_version="0.22.0", max_model_len=1_000_000, gpu_memory_utilization=0.75)
    est = run_estimate(spec, "RTX 4090", s)
    assert est.error_kind == "max_model_len_derived"
    assert not rerun(est, max_model_len=40960).fits
    fixes = suggest(est)
    assert fixes and fixes[0].flags.count("--max-model-len") == 1
    length = fixes[0].changes["max_model_len"]
    assert length < 40960 and fixes[0].fits and rerun(est, max_model_len=length).fits
    assert "config allows 40,960" in fixes[0].why


GRAPH_OOM_019 = (
    "(APIServer pid=1) INFO 04-17 01:54:40 [utils.py:299] vLLM API server version 0.19.0\n"
    "$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192   # one RTX 3090\n"
    "(EngineCore pid=2) INFO 04-17 02:01:15 [gpu_model_runner.py:5955] Estimated CUDA graph memory: 2.36 GiB total\n"
    "(EngineCore pid=2) INFO 04-17 02:01:15 [gpu_worker.py:461] Available KV cache memory: 4.00 GiB\n"
    "(EngineCore pid=2) INFO 04-17 02:01:15 [gpu_worker.py:470] In v0.19, CUDA graph memory profiling will be "
    "enabled by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts for CUDA graph "
    "memory during KV cache allocation. To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase "
    "--gpu-memory-utilization from 0.9000 to 1.0000 to maintain the same effective KV cache size.\n"
    "(EngineCore pid=2) ERROR 04-17 02:01:23 [core.py:949]     cuda_graph_memory_bytes = self.model_runner.capture_model()\n"
    "(EngineCore pid=2) ERROR 04-17 02:01:23 [core.py:949]     self.cuda_graph.capture_end()\n"
    "(EngineCore pid=2) ERROR 04-17 02:01:23 [core.py:949] torch.AcceleratorError: CUDA error: out of memory\n")


def test_a_019_graph_capture_oom_offers_vllms_opt_in_and_a_utilization_that_leaves_the_graphs_room():
    """0.18–0.19 measure the CUDA-graph estimate but subtract it only with VLLM_MEMORY_PROFILER_ESTIMATE_
    CUDAGRAPHS=1 (gpu_worker.py): that opt-in makes the capture fit in the budget, the KV cache giving up
    the 2.36 GiB (4.00 → 1.64 GiB: 2 MiB blocks of Llama-3.1-8B, 2,048 → 839 blocks); a lower utilization
    must leave those 2.36 GiB outside the budget: 0.90 − 2.36 / 23.56 − 0.01 = 0.789… → 0.78."""
    from estimator.diagnosis import diagnose

    d = diagnose(GRAPH_OOM_019, gpu="RTX 3090", offline=True, explain=True)
    assert d.error_kind == "cuda_oom_graph"
    env = [s for s in d.suggestions if s["flags"] == "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1"]
    assert env and env[0]["command"].startswith("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 vllm serve")
    assert env[0]["kv_cache_tokens"] == 839 * 16
    util = [s for s in d.suggestions if s["flags"].startswith("--gpu-memory-utilization")]
    total = d.estimate["gpu"]["total_bytes"]
    assert util and util[0]["flags"] == f"--gpu-memory-utilization {int((0.9 - 2.36 * 2**30 / total - 0.01) * 100) / 100}"


def test_a_fix_for_a_lora_run_keeps_its_adapter_flags():
    """The adapter slots are part of what each fix was checked with (activation.lora_buffer_bytes), so a fix's
    command for a run started with --enable-lora --max-lora-rank 64 repeats them."""
    spec = load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.10.1", max_model_len=131072,
                                                       enable_lora=True, max_lora_rank=64))
    assert not est.fits
    fixes = suggest(est)
    assert fixes and all("--enable-lora" in f.full_flags and "--max-lora-rank 64" in f.full_flags for f in fixes)


@pytest.mark.parametrize(("version", "expect"), [
    ("0.10.1", "--speculative-config '{\"method\":\"eagle3\",\"model\":\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\","
               "\"num_speculative_tokens\":3}'"),
    # 0.8.0's arg_utils.py has no --speculative-config: the draft and its count are flags of their own
    ("0.8.0", "--speculative-model yuhuili/EAGLE3-LLaMA3.1-Instruct-8B --num-speculative-tokens 3"),
])
def test_a_fix_repeats_the_draft_model_the_run_decodes_with(llama8b, version, expect):
    s = EngineSettings(vllm_version=version, max_model_len=131072)
    from estimator.vllm import apply_speculative

    apply_speculative(s, {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3})
    assert s.speculative_model == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    est = run_estimate(llama8b, "RTX 4090", s)
    sugs = suggest(est)
    assert sugs and all(expect in sg.to_json()["command"] for sg in sugs)


def test_a_fix_keeps_the_runs_media_limits():
    """--language-model-only (vllm#41789's Gemma 4 run) and --limit-mm-per-prompt decide whether the vision
    tower loads and what the profile run encodes: a fix's command without them would run another
    configuration than the one its effect was checked for. A fix that changes the limits sets its own."""
    from estimator.vllm import parse_flags

    spec = load_model("Qwen/Qwen2.5-VL-7B-Instruct", offline=True).spec
    text_only = parse_flags(["--language-model-only", "--max-model-len", "131072"], EngineSettings(vllm_version="0.20.1"))
    fixes = suggest(run_estimate(spec, "RTX 4090", text_only))
    assert fixes and all("--language-model-only" in f.full_flags and "--limit-mm-per-prompt" not in f.full_flags
                         for f in fixes)
    limited = parse_flags(["--limit-mm-per-prompt", '{"image": 2, "video": 0}', "--max-model-len", "131072"],
                          EngineSettings(vllm_version="0.20.1"))
    fixes = suggest(run_estimate(spec, "RTX 4090", limited))
    kept = [f for f in fixes if "limit_mm_per_prompt" not in f.changes]
    assert kept and all("--limit-mm-per-prompt '{\"image\": 2, \"video\": 0}'" in f.full_flags for f in kept)
    assert all(f.full_flags.count("--limit-mm-per-prompt") <= 1 for f in fixes)
    # before 0.10 the flag takes KEY=VALUE pairs (vllm/engine/arg_utils.py nullable_kvs)
    old = parse_flags(["--limit-mm-per-prompt", "image=2,video=0", "--max-model-len", "131072"],
                      EngineSettings(vllm_version="0.8.4"))
    kept = [f for f in suggest(run_estimate(spec, "RTX 4090", old)) if "limit_mm_per_prompt" not in f.changes]
    assert kept and all("--limit-mm-per-prompt image=2,video=0" in f.full_flags for f in kept)


def test_a_cut_command_keeps_what_it_shows_and_a_flag_given_twice_its_last_value():
    """vllm#15598's command is cut inside a flag ("--pipeline-parallel-s[...]"): the cut word and a
    flag whose value went with it are no part of a fix's command. A setting read back (PP 4) and a
    fix that changes it: the fix's value, once."""
    text = ("vllm serve deepseek-ai/DeepSeek-R1 --max-model-len 16384 --tensor-parallel-size 8 "
            "--pipeline-parallel-s[...]")
    base = user_command(text)
    assert base == ["vllm", "serve", "deepseek-ai/DeepSeek-R1", "--max-model-len", "16384", "--tensor-parallel-size", "8"]
    cut_value = user_command("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192 --gpu-memory-utilization 0.9…")
    assert cut_value == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "8192"]
    assert command_with(base, "--pipeline-parallel-size 4 --pipeline-parallel-size 8 --enforce-eager") == (
        "vllm serve deepseek-ai/DeepSeek-R1 --max-model-len 16384 --tensor-parallel-size 8 "
        "--pipeline-parallel-size 8 --enforce-eager")


def test_a_free_memory_failure_is_fixed_by_asking_for_less_than_is_free():
    """imageworks' RTX 4080 (WSL, 0.10.2): 13.58 of 15.99 GiB free, 0.85 asks for 13.59. vLLM's free
    figure is after its own CUDA context, so the fix asks for less than 13.58 / 15.99 = 0.849: 0.83,
    re-checked to pass the start-up check and fit the 4,096-token context."""
    from estimator.diagnosis import diagnose
    text = ("(APIServer pid=941339) INFO 09-30 18:28:54 [utils.py:328] non-default args: {'model': "
            "'/home/stewa/ai-models/weights/ybelkada/llava-1.5-7b-hf-awq', 'max_model_len': 4096, "
            "'gpu_memory_utilization': 0.85}\n"
            "(EngineCore_DP0 pid=941609) ERROR 09-30 18:29:03 [core.py:718] ValueError: Free memory on device "
            "(13.58/15.99 GiB) on startup is less than desired GPU memory utilization (0.85, 13.59 GiB). Decrease "
            "GPU memory utilization or reduce GPU memory used by other processes.\n")
    assert int(13.58 / 15.99 * 100 - 1) / 100 == 0.83
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "free_memory_startup"
    first = d.suggestions[0]
    assert first["flags"] == "--gpu-memory-utilization 0.83" and first["fits"]


def test_a_shorter_context_frees_the_dsa_prefill_workspace():
    """A DSA model with an fp8 cache on Hopper reserves FlashMLA's sparse prefill workspace for
    5 × max_model_len rows of 1,152 B while it loads (activation.sparse_mla_load_buffers), so every
    token the context gives up frees 5,760 B besides its KV. GLM-5.3 FP8 at TP 8 (recipes#893's setup,
    its other parts fixed): the pool left at 1,048,576 tokens names one length, and the longest that
    fits once the workspace shrinks with it is longer (it re-checks as fitting, one token more does
    not); the fix offers a round value under it."""
    spec = load_model("zai-org/GLM-5.3", offline=True).spec
    s = EngineSettings(vllm_version="0.28.0", tensor_parallel_size=8, kv_cache_dtype="fp8", quantization="fp8",
                       max_model_len=1_048_576, max_num_batched_tokens=8192, gpu_memory_utilization=0.92)
    est = estimate(spec, gpu_total_bytes=int(139.8 * GiB), settings=s, compute_capability="9.0",
                   activation_bytes=int(2.36 * GiB), non_torch_bytes=int(0.63 * GiB),
                   cuda_graph_bytes=int(4.66 * GiB))
    assert not est.fits and est.max_model_len_fit > 0
    fix = [x for x in suggest(est) if set(x.changes) == {"max_model_len"}]
    assert fix and fix[0].fits
    longest = int(fix[0].why.split("the largest context that fits is ")[1].split(" tokens")[0].replace(",", ""))
    assert longest > est.max_model_len_fit
    assert rerun(est, max_model_len=longest).fits and not rerun(est, max_model_len=longest + 1).fits
    assert fix[0].changes["max_model_len"] == friendly_len(longest)
    # the shorter context's weights are the workspace's rows lighter
    shorter = rerun(est, max_model_len=longest)
    assert est.weights_bytes - shorter.weights_bytes == 5 * (1_048_576 - longest) * 1152
    assert "sparse prefill workspace" in fix[0].why


def test_a_shorter_context_shrinks_deepseek_v4s_profile_workspace():
    """DeepSeek-V4's profile run sizes its shared workspace by max_model_len: the indexer's key gather
    (1,320 B per token of max_model_len in 0.26) outgrows the MoE experts' share on 2 × H20 at 1M tokens,
    so a shorter context frees workspace as well as KV and the fix's reason names that workspace, not
    Qwen2-VL's dummy video or V0's batch."""
    spec = load_model("deepseek-ai/DeepSeek-V4-Flash", offline=True).spec
    est = run_estimate(spec, "H20", EngineSettings(vllm_version="0.26.0", tensor_parallel_size=2, kv_cache_dtype="fp8",
                                                   block_size=256, gpu_memory_utilization=0.95,
                                                   max_model_len=1_048_576))
    assert not est.fits
    fix = [x for x in suggest(est) if set(x.changes) == {"max_model_len"}]
    assert fix and fix[0].fits
    longest = int(fix[0].why.split("the largest context that fits is ")[1].split(" tokens")[0].replace(",", ""))
    assert longest > est.max_model_len_fit
    assert rerun(est, max_model_len=longest).fits and not rerun(est, max_model_len=longest + 1).fits
    assert "DeepSeek-V4's shared workspace" in fix[0].why and "dummy video" not in fix[0].why


def test_034_raises_the_utilization_to_its_default_there_not_to_095(llama8b):
    # 0.34: the extensible KV cache keeps its own margin after warmup and defaults to 1.0
    # (vllm/config/cache.py resolved_gpu_memory_utilization); 0.33 stops at 0.95
    def raise_u(version):
        s = EngineSettings(vllm_version=version, gpu_memory_utilization=0.8, max_model_len=40960)
        est = estimate(llama8b, gpu_total_bytes=int(23.64 * GiB), settings=s)
        return [x for x in suggest(est) if "gpu_memory_utilization" in x.changes]

    new = raise_u("0.34.0")
    assert [x.changes["gpu_memory_utilization"] for x in new] == [1.0]
    assert "sizes the KV cache after warmup" in new[0].why
    old = raise_u("0.33.0")
    assert old and all(x.changes["gpu_memory_utilization"] <= 0.95 for x in old)
    # at 1.0 (0.34's default) there is nothing to raise
    s = EngineSettings(vllm_version="0.34.0", max_model_len=40960)
    est = estimate(llama8b, gpu_total_bytes=int(23.64 * GiB), settings=s)
    assert est.settings.gpu_memory_utilization == 1.0
    assert not [x for x in suggest(est) if "gpu_memory_utilization" in x.changes]


# --- the GPUs the user has ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama70b():
    return load_model("meta-llama/Llama-3.1-70B-Instruct", offline=True).spec


def test_a_count_in_the_gpu_name_keeps_tensor_parallelism_within_it(llama70b):
    """Llama-3.1-70B in 16 bit on 2× L40S (44.42 GiB each as torch reports it): 70.6 B params × 2 B =
    131 GiB, so TP 2 leaves 65.7 GiB per card and FP8 on one card ~66 GiB — neither runs — while TP 2
    with FP8 weights puts ~33 GiB on each. TP 4 runs but needs GPUs the user does not have: last."""
    settings = EngineSettings(max_model_len=32768)
    est = run_estimate(llama70b, "2x L40S", settings)
    assert est.gpu_count == 2
    budget = est.budget_bytes
    assert rerun(est, tensor_parallel_size=2).weights_bytes > budget
    assert rerun(est, quantization="fp8").weights_bytes > budget
    sugs = suggest(est)
    both = [s for s in sugs if s.changes.get("tensor_parallel_size") == 2 and s.changes.get("quantization") == "fp8"]
    assert len(both) == 1 and both[0].fits and both[0].estimate.settings.tensor_parallel_size == 2
    assert "uses 2 of the 2 GPUs" in both[0].to_json()["why"]
    last = sugs[-1]
    assert last.changes == {"tensor_parallel_size": 4} and last.fits and last.keeps_goal
    assert "needs 4 GPUs, more than the 2 of this setup" in last.to_json()["why"]
    # without a count nothing is known to limit the split: the 4-GPU fix is offered in rank order,
    # and no TP 2 + FP8 combination is tried
    plain = suggest(run_estimate(llama70b, "L40S", settings))
    assert [s.flags for s in plain] == ["--tensor-parallel-size 4"]
    assert plain[0].to_json()["why"].endswith("(needs that many GPUs)")


def test_a_split_beyond_the_known_gpus_is_dropped_when_a_fix_on_them_keeps_the_context(llama8b):
    """Llama-3.1-8B at 65,536 tokens on an RTX 4090: 32 layers × 8 KV heads × 128 × 2 × 2 B = 128 KiB per
    token, 8 GiB for the context, more than the pool; an FP8 KV cache halves it and keeps the whole
    context on the one card, so a second GPU the user does not have is not offered."""
    settings = EngineSettings(max_model_len=65536, vllm_version="0.10.1")
    one = suggest(run_estimate(llama8b, "RTX 4090", settings, gpu_count=1))
    assert any(s.changes == {"kv_cache_dtype": "fp8"} and s.keeps_goal and s.fits for s in one)
    assert not any("tensor_parallel_size" in s.changes for s in one)
    two = suggest(run_estimate(llama8b, "RTX 4090", settings, gpu_count=2))
    tp = [s for s in two if s.changes == {"tensor_parallel_size": 2}]
    assert tp and "uses 2 of the 2 GPUs" in tp[0].to_json()["why"]
    unknown = suggest(run_estimate(llama8b, "RTX 4090", settings))
    assert any(s.changes == {"tensor_parallel_size": 2} for s in unknown)


def test_a_count_below_the_runs_own_ranks_is_not_the_users_gpus(llama70b):
    """A paste that runs TP 2 but shows one card's nvidia-smi row has more GPUs than that row: the count
    does not hold the advice to one GPU (Llama-3.1-70B at TP 2 on L40S: 65.7 GiB of weights per card
    does not run; TP 4 does, and how many GPUs there are is not known)."""
    settings = EngineSettings(max_model_len=32768, tensor_parallel_size=2)
    sugs = suggest(run_estimate(llama70b, "L40S", settings, gpu_count=1))
    tp4 = [s for s in sugs if s.changes == {"tensor_parallel_size": 4}]
    assert tp4 and tp4[0].to_json()["why"].endswith("(needs that many GPUs)")


def test_mixed_cards_count_as_the_gpus_the_user_has(seed_spec):
    """"RTX 5070 Ti + RTX 5090": two GPUs, one per pipeline stage; "2x RTX 3090 + RTX 4090": three."""
    pp2 = EngineSettings(pipeline_parallel_size=2, max_model_len=32768)
    assert run_estimate(seed_spec, "RTX 5070 Ti + RTX 5090", pp2).gpu_count == 2
    assert run_estimate(seed_spec, "2x RTX 3090 + RTX 4090", pp2).inputs["gpu_count"] == 3
    assert run_estimate(seed_spec, "RTX 5090", pp2).inputs["gpu_count"] is None


# --- a start-up log that asks for more KV cache ----------------------------------------------------

_STARTUP = ("vllm serve Qwen/Qwen3-8B --max-model-len 8192 --gpu-memory-utilization {u}\n"
            "on one RTX 4090, vLLM {v}\n"
            "(EngineCore_0 pid=1) INFO 08-01 10:00:00 [gpu_worker.py:276] Available KV cache memory: {kv} GiB\n"
            "(EngineCore_0 pid=1) INFO 08-01 10:00:00 [kv_cache_utils.py:849] GPU KV cache size: {tokens} tokens\n")


def test_a_run_that_starts_is_offered_the_utilization_vllm_allows_not_the_least_that_fits():
    """vLLM 0.21 budgets its CUDA graphs, so a run that starts at 0.90 can go to 0.95: 0.05 × 25,383,256,719 B
    (an RTX 4090 as torch reports it) = 1,269,162,836 B more KV; with the printed 4.20 GiB (4,509,715,661 B)
    that is 5,778,878,497 B ÷ 147,456 B per token (Qwen3-8B: 36 layers × 8 KV heads × 128 × 2 × 2 B) =
    39,190 tokens, 39,184 in 16-token blocks. Before, the raise was the least that fits plus 0.01: 0.92."""
    from estimator.diagnosis import diagnose

    d = diagnose(_STARTUP.format(u=0.9, v="0.21.0", kv="4.20", tokens="30,576"), offline=True, explain=True)
    assert d.error_kind == "startup_log_ok"
    first = d.suggestions[0]
    assert first["flags"] == "--gpu-memory-utilization 0.95"
    assert first["kv_cache_tokens"] == 39_184
    assert "For more KV cache: `--gpu-memory-utilization 0.95`" in d.summary


def test_graphs_captured_after_the_kv_cache_stay_outside_the_raised_budget():
    """vLLM 0.10.1 captures its CUDA graphs after sizing the KV cache; the log says they took 0.53 GiB of the
    23.64 GiB card, so the raise stops at 0.95 − 0.53 / 23.64 = 0.9276 → 0.92 (from 0.85, not 0.87)."""
    from estimator.diagnosis import diagnose

    text = _STARTUP.format(u=0.85, v="0.10.1", kv="3.02", tokens="21,984") + (
        "(EngineCore_0 pid=1) INFO 08-01 10:00:10 [gpu_model_runner.py:2567] Graph capturing finished in 5 secs, "
        "took 0.53 GiB\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "startup_log_ok"
    raised = [s for s in d.suggestions if s["flags"].startswith("--gpu-memory-utilization")]
    assert [s["flags"] for s in raised] == ["--gpu-memory-utilization 0.92"]
    # without the graphs' size there is nothing to keep them out with: the least raise, as before
    bare = diagnose(text.rsplit("(EngineCore_0", 1)[0], offline=True, explain=True)
    assert [s["flags"] for s in bare.suggestions if "--gpu-memory-utilization" in s["flags"]] == \
        ["--gpu-memory-utilization 0.87"]


def test_a_unified_memory_board_is_not_raised_to_the_cap():
    """A DGX Spark's GPU memory is the system's: 0.95 of it would starve the OS, so the least raise stays;
    the same run on a discrete card of about that size class goes to 0.95."""
    spec = load_model("Qwen/Qwen3-8B", offline=True).spec
    settings = EngineSettings(vllm_version="0.21.0", max_model_len=8192, gpu_memory_utilization=0.9)
    spark = run_estimate(spec, "DGX Spark", settings)
    assert spark.gpu.unified and spark.fits
    assert suggest(spark, error_kind="startup_log_ok")[0].flags == "--gpu-memory-utilization 0.92"
    # known only by its size (a log without the card's name): GB10's 119.63 GiB may be the board
    sized = run_estimate(spec, "119.63GiB", settings)
    assert not sized.gpu.unified
    assert suggest(sized, error_kind="startup_log_ok")[0].flags == "--gpu-memory-utilization 0.92"
    pro = run_estimate(spec, "RTX PRO 6000", settings)
    assert suggest(pro, error_kind="startup_log_ok")[0].flags == "--gpu-memory-utilization 0.95"


def test_a_utilization_set_below_the_default_is_raised_only_with_its_condition():
    """0.80 of the card is usually a choice (a trainer colocated with vLLM): the raise says so, in the list
    and in the headline. The log is one vLLM could print: Qwen3-8B's 16-bit weights (15.27 GiB) start at
    0.8 of a 4090 (18.91 GiB) and leave 2.19 GiB, 15,936 tokens at 147,456 B per token in 16-token blocks.
    (The 0.30 of this test's first form cannot hold those weights: the model disagreed with that paste,
    which test_a_start_up_log_the_model_does_not_reproduce_gets_vllms_own_arithmetic covers.)"""
    from estimator.advice import SHARED_CARD
    from estimator.diagnosis import diagnose

    d = diagnose(_STARTUP.format(u=0.8, v="0.21.0", kv="2.19", tokens="15,936"), offline=True, explain=True)
    assert not d.disagrees
    raised = [s for s in d.suggestions if s["flags"].startswith("--gpu-memory-utilization")]
    # the release's own default: 0.92 from 0.20 (vllm/config/cache.py, the 0.20.0 wheel), 0.9 before
    assert raised and "0.8 is below vLLM's default 0.92:" in raised[0]["why"] and SHARED_CARD in raised[0]["why"]
    assert f"; {SHARED_CARD})." in d.summary
    older = diagnose(_STARTUP.format(u=0.8, v="0.19.1", kv="2.19", tokens="15,936"), offline=True, explain=True)
    raised = [s for s in older.suggestions + older.unchecked if s["flags"].startswith("--gpu-memory-utilization")]
    assert raised and "0.8 is below vLLM's default 0.9:" in raised[0]["why"]


def test_a_start_up_log_the_model_does_not_reproduce_gets_vllms_own_arithmetic():
    """vLLM says its 4.20 GiB pool holds 45,000 tokens; Qwen3-8B's layout holds 30,576 in it (4.20 GiB ÷
    147,456 B, in 16-token blocks), and no usual setting explains it. The model's token counts are then not
    vLLM's, so the headline's step for more KV comes from vLLM's numbers: 0.21 budgets its CUDA graphs,
    so 0.90 → 0.95 adds 0.05 × 25,383,256,719 B (a 4090 as torch reports it) = 1,269,162,836 B = 1.18 GiB,
    all of it KV: 5.38 GiB, × 1.2814 of the pool → 45,000 × 1.2814 = 57,664, about 57,600 tokens."""
    from estimator.diagnosis import diagnose

    d = diagnose(_STARTUP.format(u=0.9, v="0.21.0", kv="4.20", tokens="45,000"), offline=True, explain=True)
    assert d.disagrees and any("holds 45,000 tokens" in c and "30,576" in c for c in d.checks)
    assert d.unchecked[0]["flags"] == "--gpu-memory-utilization 0.95"
    why = d.unchecked[0]["why"]
    assert "(0.95 − 0.9) × 23.64 GiB = 1.18 GiB" in why and "4.20 GiB pool it printed becomes 5.38 GiB" in why
    assert "about 57,600 tokens (it printed 45,000)" in why
    assert d.summary.count("For more KV cache: `--gpu-memory-utilization 0.95` — vLLM's budget grows") == 1
    assert "The model's figures disagree with vLLM's" in d.summary
    # the 0.30 form (weights larger than its budget): the raise still carries its condition
    from estimator.advice import SHARED_CARD

    low = diagnose(_STARTUP.format(u=0.3, v="0.21.0", kv="0.50", tokens="3,632"), offline=True, explain=True)
    assert low.disagrees and SHARED_CARD in low.summary and "0.3 is below vLLM's default 0.92:" in low.summary


def test_a_v0_start_up_log_the_model_does_not_reproduce_scales_the_blocks_vllm_printed():
    """vLLM 0.6.0 printed 5,000 blocks, more than the model leaves at the assumed 0.9 of a 4090 (the card or
    the utilization is not what was assumed). Its pool is 5,000 × 2,359,296 B (Qwen3-8B: 36 layers × 8 KV heads
    × 128 × 2 × 2 B × 16 tokens) = 11,796,480,000 B = 10.99 GiB; 0.6.0 captures its graphs outside the budget
    and the paste does not size them, so the step is the least one, 0.92: 0.02 × 25,383,256,719 B =
    507,665,134 B = 0.47 GiB more, × 1.04304 of the pool → 80,000 × 1.04304 = 83,443, about 83,400 tokens."""
    from estimator.diagnosis import diagnose

    paste = ("vllm serve Qwen/Qwen3-8B --max-model-len 8192\non one RTX 4090, vLLM 0.6.0\n"
             "INFO 08-01 10:00:00 gpu_executor.py:122] # GPU blocks: 5000, # CPU blocks: 2048\n")
    d = diagnose(paste, offline=True, explain=True)
    assert d.disagrees and d.unchecked[0]["flags"] == "--gpu-memory-utilization 0.92"
    why = d.unchecked[0]["why"]
    assert "the 10.99 GiB pool of the 5,000 blocks it printed (2.25 MiB each) becomes 11.46 GiB" in why
    assert "about 83,400 tokens (now 5,000 blocks × 16 = 80,000)" in why
    assert d.summary.startswith("This start-up log shows no error") and why in d.summary


def test_a_run_the_model_disagrees_with_names_whose_figures_its_headline_gives():
    """At 0.95 there is no step up left; the headline's fix is then the model's own re-check, and it says so:
    its token counts (fp8 KV) rest on a layout that holds 39,168 tokens in the 5.38 GiB vLLM says hold 45,000."""
    from estimator.diagnosis import diagnose

    d = diagnose(_STARTUP.format(u=0.95, v="0.21.0", kv="5.38", tokens="45,000"), offline=True, explain=True)
    assert d.disagrees and not d.unchecked and d.suggestions
    assert (f"For more KV cache: `{d.suggestions[0]['flags']}` (the model's own estimate, which disagrees with "
            "vLLM's figures as Checks says: fits, ") in d.summary


def test_past_tensor_parallel_8_the_layers_are_split_over_pipeline_stages():
    """Llama-3.1-405B in 16 bit on 8× H100 (vLLM 0.6.0): 405.9 B params × 2 B ÷ 8 ≈ 94.5 GiB per card, more
    than its 79.18 GiB, and online FP8 must first load those 16-bit weights (before 0.16), so no fix on the
    eight cards runs; two pipeline stages of 8 halve each card's layers. 16 GPUs: last, said to exceed the
    8 of this setup. Before 0.5.1 vLLM had no pipeline parallelism: nothing is offered."""
    spec = load_model("meta-llama/Llama-3.1-405B-Instruct", offline=True).spec
    settings = EngineSettings(vllm_version="0.6.0", tensor_parallel_size=8, max_model_len=8192)
    est = run_estimate(spec, "8x H100", settings)
    assert not est.fits and est.weights_bytes > est.gpu_total_bytes
    assert rerun(est, pipeline_parallel_size=2).weights_bytes < est.budget_bytes
    sugs = suggest(est)
    assert [s.changes for s in sugs] == [{"pipeline_parallel_size": 2}]
    assert sugs[0].fits and sugs[0].keeps_goal
    assert "over 2 pipeline stages of 8 GPUs (16 GPUs in all)" in sugs[0].why
    assert sugs[0].to_json()["why"].endswith("(needs 16 GPUs, more than the 8 of this setup)")
    assert "--tensor-parallel-size 8" in sugs[0].to_json()["command"]
    old = run_estimate(spec, "8x H100", EngineSettings(vllm_version="0.5.0", tensor_parallel_size=8, max_model_len=8192))
    assert not old.fits and suggest(old) == []


def test_a_split_of_a_data_parallel_run_counts_every_replica(seed_spec):
    """Two data-parallel replicas each split over 2 GPUs take 4: the fix says so (it said "2 GPUs")."""
    est = run_estimate(seed_spec, "RTX A6000", EngineSettings(vllm_version="0.10.1", data_parallel_size=2))
    tp = [s for s in suggest(est) if s.changes.get("tensor_parallel_size") == 2]
    assert tp and "over 2 GPUs per data-parallel replica (4 GPUs in all)" in tp[0].why


def _v1_capacity_error(need: str, avail: str, flags: str = "") -> str:
    return (f"vllm serve ./my-finetune --max-model-len 32768 {flags}\nrunning on one RTX 4090\n"
            "(EngineCore_0 pid=2) ERROR 08-02 10:00:29 [core.py:718] ValueError: To serve at least one request with "
            f"the models's max seq len (32768), ({need} GiB KV cache is needed, which is larger than the available KV "
            f"cache memory ({avail} GiB). Based on the available memory, the estimated maximum model length is 27000. "
            "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")


def test_a_v1_capacity_error_gets_the_utilization_that_closes_its_printed_gap():
    """No model config to re-check with: vLLM's own figures still give the utilization lever. 4.50 − 3.80 GiB,
    plus the two printed figures' rounding (0.005 GiB each), is 0.71 GiB; of an RTX 4090's 25,383,256,719 B
    (23.64 GiB) that is 0.0300…, so 0.04 in steps of 0.01: 0.85 → 0.89."""
    from estimator.diagnosis import diagnose

    d = diagnose(_v1_capacity_error("4.50", "3.80", "--gpu-memory-utilization 0.85"), offline=True, explain=True)
    assert d.estimate is None and d.unchecked[0]["flags"] == "--max-model-len 26624"
    raised = [u for u in d.unchecked if "gpu-memory-utilization" in u["flags"]]
    assert [u["flags"] for u in raised] == ["--gpu-memory-utilization 0.89"]
    assert "the 0.71 GiB more (with the printed figures' rounding) is 0.04 of the 23.64 GiB" in raised[0]["why"]
    assert "(0.85 + 0.04)" in raised[0]["why"]


def test_without_the_runs_utilization_the_step_is_given_with_where_it_is_enough():
    """The same gap where the paste shows no utilization: the step (0.04) and the utilization it must start
    from (0.95 − 0.04 = 0.91); a gap of 26.21 GiB (1.11 of the card) gets nothing; a run already at 0.93
    cannot take 0.04 more within 0.95."""
    from estimator.diagnosis import diagnose

    d = diagnose(_v1_capacity_error("4.50", "3.80"), offline=True, explain=True)
    steps = [u for u in d.unchecked if "--gpu-memory-utilization by" in u["why"]]
    assert len(steps) == 1 and steps[0]["flags"] == ""
    assert steps[0]["why"].startswith("raise --gpu-memory-utilization by 0.04 or more from the run's (enough only "
                                      "where the run's is 0.91 or less")
    wide = diagnose(_v1_capacity_error("30.00", "3.80"), offline=True, explain=True)
    assert not [u for u in wide.unchecked if "utilization" in u["flags"] + u["why"][:40]]
    high = diagnose(_v1_capacity_error("4.50", "3.80", "--gpu-memory-utilization 0.93"), offline=True, explain=True)
    assert not [u for u in high.unchecked if "gpu-memory-utilization" in u["flags"]]


def test_no_cache_blocks_on_a_named_card_gives_the_utilization_that_leaves_kv_memory():
    """V1 prints no total beside "Available KV cache memory: -0.80 GiB"; the RTX 4090 the paste names does:
    0.9 × 23.64 GiB = 21.28 GiB of budget, 0.80 GiB short, so the rest took 22.08 GiB = 0.934 of the card:
    above 0.93 the KV cache gets memory, 0.24 GiB per 0.01. An "A100" (40 or 80 GB) gives no such figure."""
    from estimator.diagnosis import diagnose

    paste = ("vllm serve ./my-finetune --gpu-memory-utilization 0.9\nrunning on one RTX 4090\n"
             "(EngineCore_0 pid=2) INFO 08-02 10:00:28 [gpu_worker.py:276] Available KV cache memory: -0.80 GiB\n"
             "(EngineCore_0 pid=2) ERROR 08-02 10:00:29 [core.py:718] ValueError: No available memory for the cache "
             "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n")
    d = diagnose(paste, offline=True, explain=True)
    assert d.error_kind == "no_cache_blocks" and d.estimate is None
    assert d.unchecked[0]["why"].startswith("vLLM's budget (0.9 × 23.64 GiB = 21.28 GiB) was 0.80 GiB short of what "
                                            "the weights, activations and the rest took (22.08 GiB): a "
                                            "--gpu-memory-utilization above 0.93 (22.08 / 23.64)")
    assert "0.24 GiB for each 0.01 more" in d.unchecked[0]["why"]
    assert diagnose(paste.replace("RTX 4090", "A100"), offline=True, explain=True).unchecked == []


def test_no_chunked_prefill_fix_where_the_smaller_batch_frees_nothing():
    """Llama-3-70B split 2 ways (vLLM 0.5.0, 8,192 tokens): the profile's peak is the sampler's pass over 256
    rows of its 128,256-token vocabulary, not the forward over the batch, so chunked prefill's 512-token batch
    leaves it, and the KV cache, as they were: the fix that says "the rest goes to the KV cache" is not
    offered. Llama-3.1-8B at 32,768 tokens, whose forward over the batch is the peak, keeps it (above)."""
    spec = load_model("meta-llama/Meta-Llama-3-70B-Instruct", offline=True).spec
    est = run_estimate(spec, "H100", EngineSettings(vllm_version="0.5.0", tensor_parallel_size=2,
                                                    max_model_len=8192, gpu_memory_utilization=0.86))
    assert not est.fits
    chunked = rerun(est, enable_chunked_prefill=True)
    assert chunked.settings.max_num_batched_tokens == 512 and chunked.activation_bytes == est.activation_bytes
    assert all("--enable-chunked-prefill" not in x.flags for x in suggest(est, error_kind="kv_capacity_v0"))


def test_a_start_up_log_gets_no_lever_that_leaves_its_kv_cache_as_it_is():
    """ServerlessLLM restores the weights outside vLLM's measured window, so vLLM 0.5.0 printed "Loading model
    weights took 0.0000 GB": FP8 weights cannot free what vLLM never counted, and a start-up log asks for more
    KV cache, so that lever is not offered; every lever that is holds more tokens than the run has."""
    from estimator.diagnosis import diagnose

    paste = ("INFO 10-31 11:05:16 llm_engine.py:161] Initializing an LLM engine (v0.5.0) with config: "
             "model='facebook/opt-1.3b', tokenizer='facebook/opt-1.3b', dtype=torch.float16, max_seq_len=2048, "
             "tensor_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto\n"
             "INFO 10-31 11:05:17 model_runner.py:160] Loading model weights took 0.0000 GB\n"
             "INFO 10-31 11:05:25 gpu_executor.py:83] # GPU blocks: 18509, # CPU blocks: 1365\n"
             "running on an MI250X\n")
    d = diagnose(paste, offline=True, explain=True)
    assert d.error_kind == "startup_log_ok" and d.suggestions
    assert not [s for s in d.suggestions if "--quantization" in s["flags"]]
    assert all(s["kv_cache_tokens"] > d.estimate["kv_cache_tokens"] for s in d.suggestions)


def test_the_capacity_gap_sizes_an_nvidia_smi_card_as_torch_sees_it():
    """nvidia-smi's 24,564 MiB (23.99 GiB) is not what vLLM budgets from: torch sees 23.64 GiB of that card
    (derive.torch_total_from_facts). The 0.71 GiB gap is 0.0296 of the former but 0.0300… of the latter:
    0.04, not 0.03, in steps of 0.01 — 0.85 → 0.89."""
    from estimator.diagnosis import diagnose

    smi = ("|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |\n"
           "|  0%   38C    P8     21W / 450W |     15MiB / 24564MiB |      0%      Default |\n")
    paste = _v1_capacity_error("4.50", "3.80", "--gpu-memory-utilization 0.85").replace("running on one RTX 4090\n", smi)
    d = diagnose(paste, offline=True, explain=True)
    assert d.facts["total_gpu_memory_gib"] == 23.99
    raised = [u for u in d.unchecked if "gpu-memory-utilization" in u["flags"]]
    assert [u["flags"] for u in raised] == ["--gpu-memory-utilization 0.89"]
    assert "is 0.04 of the 23.64 GiB of this GPU" in raised[0]["why"]


@pytest.mark.parametrize("gpu, version, offered", [
    ("T4", "0.6.6", True),          # Turing: no FP8 weights, bitsandbytes runs (compute capability 7.5 ≥ 7.0)
    ("GTX 1080", "0.6.6", False),   # Pascal (6.1): under BitsAndBytesConfig.get_min_capability's 70
    ("T4", "0.28.0", False),        # 0.28 removed the method ("Unknown quantization method: bitsandbytes")
    ("T4", "0.4.3", False),         # before 0.5.0 there was none
])
def test_a_16bit_model_too_big_for_one_card_gets_4bit_weights_where_no_fp8_fix_fits(gpu, version, offered):
    """Mistral-7B-Instruct-v0.2 in fp16 on one T4 at 0.95 (a lumin33r log: 1,936 tokens of KV for 2,048): FP8
    weights need a newer card, so the lever left on that card is 4-bit weights quantized while loading,
    `--quantization bitsandbytes`, re-checked like the others; not where the card or the release lacks it."""
    from estimator.vllm import parse_flags

    spec = load_model("mistralai/Mistral-7B-Instruct-v0.2", offline=True).spec
    est = run_estimate(spec, gpu, parse_flags(["--max-model-len", "2048", "--gpu-memory-utilization", "0.95",
                                               "--dtype", "float16", "--vllm-version", version]))
    assert not est.fits
    fixes = {s.flags: s for s in suggest(est)}
    bnb = fixes.get("--quantization bitsandbytes --load-format bitsandbytes")
    assert (bnb is not None) == offered
    if offered:
        assert bnb.fits and bnb.estimate.weights_bytes < est.weights_bytes / 3
        assert not any("--quantization fp8" in f for f in fixes)


def test_a_fixed_kv_pool_is_raised_to_what_one_request_needs_and_never_by_the_utilization(llama8b):
    """--kv-cache-memory-bytes 2G: vLLM skips profiling and the utilization's budget. Llama-3.1-8B keeps
    32 layers × 8 KV heads × 128 × 2 (K,V) × 2 B = 131,072 B per token, so 32,768 tokens need exactly
    4 GiB: the pool raised to 4G holds 4 × 2^30 ÷ 131,072 = 32,768 tokens, and an RTX 4090 (23.64 GiB)
    has that room beside about 15 GiB of weights. A higher utilization leaves the pool as it is, and
    lighter weights buy nothing that the shorter context alone does not."""
    est = run_estimate(llama8b, "RTX 4090", EngineSettings(vllm_version="0.11.0", max_model_len=32768,
                                                            kv_cache_memory_bytes=2 * GiB))
    assert est.kv_cache_bytes == 2 * GiB and not est.fits and est.error_kind == "kv_capacity_v1"
    sugs = suggest(est)
    assert sugs[0].flags == "--kv-cache-memory-bytes 4G" and sugs[0].changes == {"kv_cache_memory_bytes": 4 * GiB}
    assert sugs[0].estimate.kv_cache_tokens == 32_768 and sugs[0].fits
    assert not any("gpu_memory_utilization" in s.changes for s in sugs), [s.flags for s in sugs]
    lengths = {s.changes.get("max_model_len") for s in sugs if set(s.changes) == {"max_model_len"}}
    assert not any("quantization" in s.changes and s.changes.get("max_model_len") in lengths for s in sugs)


def test_a_fixed_kv_pool_the_card_cannot_hold_beside_the_rest_is_lowered(llama8b):
    """12 GiB of KV beside Llama-3.1-8B's ~15 GiB of weights is more than an RTX 4090's 23.64 GiB less its
    CUDA context (0.45): vLLM allocates the pool asked for and runs out of memory after sizing it. The fix
    is the largest whole-GiB pool that the room beside the rest holds, re-checked to fit."""
    est = run_estimate(llama8b, "RTX 4090", EngineSettings(vllm_version="0.11.0", max_model_len=8192,
                                                            kv_cache_memory_bytes=12 * GiB))
    rest = est.weights_bytes + est.activation_bytes + est.non_torch_bytes + est.cuda_graph_bytes
    room = est.gpu_total_bytes - int(0.45 * GiB) - rest
    assert 12 * GiB > room and not est.fits and est.error_kind == "cuda_oom_runtime"
    sug = suggest(est)[0]
    assert sug.flags == f"--kv-cache-memory-bytes {room // GiB}G" and sug.fits
    assert sug.estimate.kv_cache_bytes + rest <= est.gpu_total_bytes - int(0.45 * GiB)
    # within that room the pool stays as asked
    assert run_estimate(llama8b, "RTX 4090", EngineSettings(vllm_version="0.11.0", max_model_len=8192,
                                                             kv_cache_memory_bytes=4 * GiB)).fits


def test_a_run_with_a_fixed_pool_that_starts_is_offered_the_room_the_card_has(llama8b):
    """A start-up log with --kv-cache-memory-bytes 4G that fits: more KV cache comes from a larger pool, up
    to the room beside the rest less a GiB of headroom, and the other fixes repeat the pool as the user
    wrote it (4G, vLLM's binary suffix) rather than as 4294967296."""
    from estimator.advice import context_flags

    est = run_estimate(llama8b, "RTX 4090", EngineSettings(vllm_version="0.11.0", max_model_len=32768,
                                                            kv_cache_memory_bytes=4 * GiB))
    assert est.fits
    rest = est.weights_bytes + est.activation_bytes + est.non_torch_bytes + est.cuda_graph_bytes
    whole = (est.gpu_total_bytes - int(0.45 * GiB) - rest) // GiB
    first = suggest(est, error_kind="startup_log_ok")[0]
    assert first.flags == f"--kv-cache-memory-bytes {whole - 1}G" and whole - 1 > 4
    assert first.estimate.kv_cache_tokens == (whole - 1) * GiB // 131_072      # 131,072 B per token, 16-token blocks
    assert "--kv-cache-memory-bytes 4G" in context_flags(est, {"kv_cache_dtype"})


def test_a_card_shared_on_purpose_is_offered_a_media_limit_with_the_least_utilization():
    """Qwen2.5-VL-7B at --gpu-memory-utilization 0.22 of an A100 80GB (vLLM 0.23.0, 128,000 tokens): the
    budget (0.22 × 79.15 = 17.41 GiB) barely holds the 15.7 GiB of weights, and the profile run's max-size
    dummy video (114,688 tokens) takes far more than the KV cache. No media limit fits at 0.22, but with no
    videos a smaller utilization serves the whole context than raising it alone does, by more than
    MM_UTILIZATION_SAVING of the card: that pair is offered, ahead of the plain raise."""
    from estimator.advice import MM_UTILIZATION_SAVING

    spec = load_model("Qwen/Qwen2.5-VL-7B-Instruct", offline=True).spec
    est = run_estimate(spec, "A100-SXM4-80GB", EngineSettings(vllm_version="0.23.0", gpu_memory_utilization=0.22,
                                                               max_model_len=128_000))
    assert not est.fits
    sugs = suggest(est, error_kind="no_cache_blocks")
    pair = next(s for s in sugs if set(s.changes) == {"limit_mm_per_prompt", "gpu_memory_utilization"})
    alone = next(s for s in sugs if set(s.changes) == {"gpu_memory_utilization"})
    assert pair.changes["limit_mm_per_prompt"]["video"] == 0 and pair.fits and pair.keeps_goal
    assert pair.changes["gpu_memory_utilization"] <= alone.changes["gpu_memory_utilization"] - MM_UTILIZATION_SAVING
    assert sugs.index(pair) < sugs.index(alone)
    # the pair's utilization is the least that fits with that limit
    lower = rerun(est, limit_mm_per_prompt=pair.changes["limit_mm_per_prompt"],
                  gpu_memory_utilization=round(pair.changes["gpu_memory_utilization"] - 0.01, 2))
    assert not lower.fits


_ORIN_VL = """Jetson AGX Orin dev kit, qwen2.5-vl-7b-instruct-awq, vLLM 0.8.5, gpu_memory_utilization = 0.45:

the current vLLM instance can use total_gpu_memory (29.96GiB) x gpu_memory_utilization (0.45) = 13.48GiB
model weights take 6.59GiB; non_torch_memory takes 2.18GiB; PyTorch activation peak memory takes 4.93GiB; the rest of the memory reserved for KV Cache is -0.22GiB.
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def test_no_fix_adds_costs_to_another_for_nothing_and_a_unified_raise_says_whose_memory_it_takes():
    """A Jetson AGX Orin (its GPU memory the system's RAM) at 0.45 with a VL model (V0): a shorter context,
    a smaller batch and text-only serving all leave the dummy media's profile in place, so "--max-num-batched-
    tokens … --max-model-len L" and "--limit-mm-per-prompt … --max-model-len L" hold no more than
    "--max-model-len L" alone and are not offered beside it; a higher utilization takes the operating
    system's RAM, and the headline says so."""
    from estimator.advice import UNIFIED_RAISE
    from estimator.diagnosis import diagnose

    d = diagnose(_ORIN_VL, offline=True, explain=True)
    sugs = d.suggestions

    def groups(flags: str) -> set[str]:
        return {"--" + g.strip() for g in flags.split("--") if g.strip()}

    for x in sugs:
        for y in sugs:
            if y is not x and groups(y["flags"]) < groups(x["flags"]):
                assert (x["kv_cache_tokens"], x["max_model_len"]) > (y["kv_cache_tokens"], y["max_model_len"]), \
                    (x["flags"], y["flags"])
    plain = [s for s in sugs if s["flags"].startswith("--max-model-len")]
    assert plain and not any(s is not plain[0] and "--max-model-len" in s["flags"]
                             and s["kv_cache_tokens"] <= plain[0]["kv_cache_tokens"] for s in sugs)
    raises = [s for s in sugs if "--gpu-memory-utilization" in s["flags"]]
    assert raises and all(UNIFIED_RAISE in s["why"] for s in raises)
    if "--gpu-memory-utilization" in sugs[0]["flags"]:
        assert UNIFIED_RAISE in d.summary


@pytest.mark.parametrize("version,refused", [("0.16.0", False), ("0.17.0", True), ("0.26.0", True), ("0.27.0", False)])
def test_the_mamba_align_batch_check_is_modelled_where_vllm_has_it(version, refused):
    """Qwen3.6-35B-A3B with an fp8 KV cache: vLLM raises the attention block to 2,096 tokens to match a Mamba
    state's page (the block a 0.20.0 log prints for this model), and with prefix caching ('align' mode) the
    0.17.0–0.26.0 wheels refuse a batch that cannot hold it (config/vllm.py). The fixes then lead with the
    smallest power of two at or above the block, 4,096, and no prefix caching."""
    spec = load_model("Qwen/Qwen3.6-35B-A3B", offline=True).spec
    est = run_estimate(spec, "RTX PRO 6000", EngineSettings(
        vllm_version=version, enable_prefix_caching=True, max_num_batched_tokens=2048, kv_cache_dtype="fp8",
        max_num_seqs=2, max_model_len=8192, quantization="fp8"))
    assert est.layout.block_size == (1072 if version == "0.16.0" else 2096)   # 0.16 aligns the pages otherwise
    assert (est.error_kind == "other" and not est.fits) is refused
    if refused:
        flags = [x.flags for x in suggest(est)][:2]
        assert flags == ["--max-num-batched-tokens 4096", "--no-enable-prefix-caching"]
        assert any("In Mamba cache align mode, block_size (2096)" in a for a in est.assumptions)


@pytest.mark.parametrize("where,unified", [
    ("on my DGX Spark\n", True),
    # no card named: the total vLLM printed is a GB10's alone (advice._card_kind)
    ("INFO 01-23 07:33:10 [worker.py:267] the current vLLM instance can use total_gpu_memory (121.63GiB) x "
     "gpu_memory_utilization (0.90) = 109.47GiB\n", True),
    ("on my RTX 4090\n", False),
    ("", False),
])
def test_a_host_kill_on_a_unified_board_asks_for_less_of_the_card(where, unified):
    """The host's OOM killer after a clean start-up: on a unified board (GB10, Jetson) vLLM's budget is the
    system's RAM, so lowering the utilization gives the host back memory; on a discrete card it would not."""
    from estimator.advice import facts_fixes
    from estimator.paste import read_paste

    f = read_paste(where + "INFO 01-23 07:32:42 [gpu_worker.py:1] Model loading took 15.1 GiB memory\n"
                   "INFO 01-23 07:34:26 [kv_cache_utils.py:1] GPU KV cache size: 400,000 tokens\nKilled\n")
    assert f.extra.get("host_killed")
    whys = [x["why"] for x in facts_fixes(f)]
    assert any(w.startswith("lower --gpu-memory-utilization: this board's GPU memory is the system's RAM")
               for w in whys) is unified


def test_an_eager_run_that_runs_out_after_the_kv_cache_is_not_told_to_run_eager():
    """An OOM after the KV cache was sized is the graph phase (paste._PHASES): capture or warm-up. With
    --enforce-eager nothing is captured, so the reply does not say "while capturing CUDA graphs", and
    "--enforce-eager" — what the run already set — is no fix (advice._with_len drops a change to what
    the run already has); the utilization that leaves more outside the budget still is."""
    from estimator import diagnose
    from estimator.render import render_markdown

    paste = ("vllm serve Qwen/Qwen3-8B --enforce-eager --max-model-len 32768 --gpu-memory-utilization 0.95\n"
             "GPU: RTX 4090, vLLM 0.19.0\n"
             "(EngineCore_DP0 pid=81) INFO 04-10 10:00:00 [gpu_worker.py:400] Available KV cache memory: 5.12 GiB\n"
             "ERROR 04-10 10:05:00 [core.py:900] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 "
             "GiB. GPU 0 has a total capacity of 23.53 GiB of which 512.00 MiB is free.\n")
    d = diagnose(paste, offline=True, explain=True)
    assert d.error_kind == "cuda_oom_graph" and d.estimate["settings"]["enforce_eager"] is True
    flags = [x["flags"] for x in d.suggestions]
    assert flags and not any("--enforce-eager" in x.split() for x in flags)
    assert any(x.startswith("--gpu-memory-utilization 0.9") for x in flags)
    reply = render_markdown(d)
    assert "while capturing CUDA graphs" not in reply
    assert "out of GPU memory after the KV cache was sized**: with --enforce-eager no CUDA graphs are captured" in reply


def test_a_four_bit_checkpoint_is_offered_where_no_flag_frees_the_weights_room():
    """Llama-3.1-8B-Instruct in bf16 on a 16 GB T4 (14.56 GiB to torch) leaves the KV cache nothing, and on
    vLLM 0.30 (no bitsandbytes since 0.28) the only re-checked fix is a second GPU. A 4-bit AWQ export's
    weights by hand: the 32 layers' linears hold 32 × (2 × 4096² + 2 × 1024 × 4096 + 3 × 14336 × 4096) =
    6,979,321,856 parameters at 4 bits plus, per 128 of them, a 16-bit scale and a 4-bit zero point:
    × (0.5 + 2.5 / 128) = 3,625,975,808 B; the embedding and the untied lm_head stay 16-bit, 2 × 128,256 ×
    4096 × 2 = 2,101,346,304 B; the norms (65 × 4096 × 2) 532,480 B: 5,727,854,592 B = 5.33 GiB (the
    allocator's rounding adds a little). A V100 (compute capability 7.0) has no AWQ kernel (awq.py needs
    7.5), a run that fits needs no swap, and an AWQ checkpoint is no smaller."""
    from estimator.diagnosis import diagnose
    from estimator.render import render_markdown

    err = ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
           "initializing the engine.\n")
    d = diagnose("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 on a Tesla T4 (vLLM 0.30.0)\n" + err,
                 offline=True)
    assert [s["flags"] for s in d.suggestions] == ["--tensor-parallel-size 2"]
    weights = float(d.four_bit.split(" takes ")[1].split(" GiB")[0])
    assert 5.727854592e9 / GiB <= weights <= 5.727854592e9 / GiB * 1.01
    assert d.four_bit.startswith("a 4-bit AWQ or GPTQ export of Llama-3.1-8B-Instruct")
    assert "against 14.99 GiB per GPU now" in d.four_bit and "tensor-parallel" not in d.four_bit
    assert "**With a 4-bit checkpoint:** a 4-bit AWQ or GPTQ export" in render_markdown(d)
    # where bitsandbytes still quantizes while loading (0.10.1), that flag keeps the run on one card: no swap
    assert not diagnose("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 on a Tesla T4 (vLLM 0.10.1)\n"
                        + err, offline=True).four_bit
    for run in ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 on a Tesla V100 16GB (vLLM 0.30.0)",
                "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 on an L40S (vLLM 0.30.0)",
                "vllm serve hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 --max-model-len 131072 on a Tesla T4 "
                "(vLLM 0.30.0)"):
        assert not diagnose(run + "\n" + err, offline=True).four_bit, run


def test_a_four_bit_checkpoint_may_be_split_over_the_gpus_the_user_has():
    """"Can I run Qwen/Qwen3-32B on 2x RTX 4090?": 61 GiB of bf16 weights; the re-checked fixes either cut the
    context to 8,192 or need 8 GPUs. A 4-bit export split over the 2 cards holds the whole 40,960 tokens. Its
    weights per rank by hand: the 64 layers' linears, 64 × (2 × 8192 × 5120 + 2 × 1024 × 5120 + 3 × 25600 ×
    5120) = 31,205,621,760 parameters, half per rank, × (0.5 + 2.5 / 128) B = 8,106,147,840 B; the 16-bit
    embedding and lm_head, each split by vocabulary: 151,936 × 5120 × 2 B = 1,555,824,640 B; the norms,
    (64 × (2 × 5120 + 2 × 128) + 5120) × 2 B = 1,353,728 B: 9,663,326,208 B = 9.00 GiB."""
    from estimator.diagnosis import diagnose

    d = diagnose("Can I run Qwen/Qwen3-32B on 2x RTX 4090 with vllm?\n", offline=True, explain=True)
    assert d.estimate["settings"]["tensor_parallel_size"] == 1 and not d.estimate["fits"]
    assert "split with `--tensor-parallel-size 2` over 2 GPUs" in d.four_bit and "at 40,960 tokens" in d.four_bit
    weights = float(d.four_bit.split(" takes ")[1].split(" GiB")[0])
    assert 9_663_326_208 / GiB <= weights <= 9_663_326_208 / GiB * 1.01
    # one RTX 4090 has no second card to split over, and 4-bit weights alone (18 GiB) leave no room for 40,960 tokens
    assert not diagnose("Can I run Qwen/Qwen3-32B on one RTX 4090 with vllm?\n", offline=True, explain=True).four_bit


@pytest.mark.parametrize("rank,fix", [(64, "--max-lora-rank 64"), (48, "--max-lora-rank 64"), (320, "--max-lora-rank 320"),
                                      (1024, None)])
def test_an_adapter_above_max_lora_rank_is_a_settings_error(rank, fix):
    """vLLM refuses an adapter whose rank is above --max-lora-rank (default 16) when it loads it
    (vllm/lora/models.py: "LoRA rank 64 is greater than max_lora_rank 16."): a settings error, fixed by a
    rank it takes at or above the adapter's (8 … 512); above 512 there is none."""
    from estimator.diagnosis import diagnose
    from estimator.paste import read_paste, settings_error

    text = (f"vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-lora --lora-modules sql=/adapters/sql\nGPU: L4\n"
            f"ValueError: LoRA rank {rank} is greater than max_lora_rank 16.\n")
    f = read_paste(text)
    assert f.error_kind == "other" and settings_error(f) and f.extra["lora_rank"] == rank
    d = diagnose(text, offline=True)
    assert d.summary.startswith(f"**A settings error, not a memory one**: the adapter's LoRA rank ({rank:,}) is above "
                                "--max-lora-rank (16;")
    assert [s["flags"] for s in d.suggestions + d.unchecked if s.get("flags")] == ([fix] if fix else [])


@pytest.mark.parametrize("version,rank,why", [
    # LoRAConfig possible_max_ranks in the wheels: 8–64 in 0.5.4, + 128 and 256 in 0.5.5, + 320 and 512 in 0.8.0
    ("0.5.4", 64, "(vLLM 0.5.4 takes 8, 16, 32, 64)"),
    ("0.5.4", 128, "the adapter's rank needs vLLM 0.5.5 or later, the first to take 128; vLLM 0.5.4 takes only 8, 16, 32, 64"),
    ("0.7.3", 300, "the adapter's rank needs vLLM 0.8.0 or later, the first to take 320; vLLM 0.7.3 takes only 8, 16, 32, 64, 128, 256"),
    ("0.8.0", 300, "rounded up to a value vLLM takes (vLLM 0.8.0 takes 8, 16, 32, 64, 128, 256, 320, 512)"),
])
def test_the_lora_rank_fix_follows_the_values_the_release_takes(version, rank, why):
    from estimator.diagnosis import diagnose

    d = diagnose(f"vLLM {version}\nvllm serve meta-llama/Llama-3.1-8B-Instruct --enable-lora\nGPU: L4\n"
                 f"ValueError: LoRA rank {rank} is greater than max_lora_rank 16.\n", offline=True)
    fixes = [s for s in d.suggestions + d.unchecked if s.get("flags")]
    assert len(fixes) == 1 and why in fixes[0]["why"]
