"""vLLM's CPU backend: its KV cache is a space of host RAM (VLLM_CPU_KVCACHE_SPACE, or from 0.20 a share
of the NUMA node's RAM), so a CPU paste gets that arithmetic and no GPU advice.

The messages and defaults are vLLM's, read in the wheels (vllm/worker/cpu_worker.py to 0.9.2,
vllm/platforms/cpu.py, vllm/v1/worker/cpu_worker.py); the arithmetic is worked by hand in each test.
"""

from __future__ import annotations

import pytest

from estimator.diagnosis import diagnose
from estimator.paste import read_paste
from estimator.paste_cpu import read_cpu_backend
from estimator.vllm import NEWEST

# the V0 CPU worker's message (vllm/worker/cpu_worker.py _validate_num_cpu_blocks); the model is the
# one the public report (opea-project/GenAIExamples#1762) served
V0_CPU = ("When running deepseek-ai/DeepSeek-R1-Distill-Qwen-14B with vllm on CPU:\n"
          "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
          "stored in KV cache (21840). Try increasing `VLLM_CPU_KVCACHE_SPACE` or decreasing `max_model_len` "
          "when initializing the engine.\n")

V0_CPU_SET = """$ VLLM_CPU_KVCACHE_SPACE=8 vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072
INFO 03-02 10:11:12 __init__.py:207] Automatically detected platform cpu.
INFO 03-02 10:11:40 executor_base.py:111] # cpu blocks: 4096, # CPU blocks: 4096
ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (65536). Try increasing `VLLM_CPU_KVCACHE_SPACE` or decreasing `max_model_len` when initializing the engine.
"""

# 0.10–0.12: V1's generic message, the CPU platform's 4 GiB default
V1_CPU_SETTING = """vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072
INFO 10-02 10:11:12 [__init__.py:216] Automatically detected platform cpu.
WARNING 10-02 10:11:15 [cpu.py:117] Environment variable VLLM_CPU_KVCACHE_SPACE (GiB) for CPU backend is not set, using 4 by default.
(EngineCore_DP0 pid=123) ValueError: To serve at least one request with the models's max seq len (131072), (7.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.00 GiB). Based on the available memory, the estimated maximum model length is 74880. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""

# 0.20+: the KV memory is ceil(node RAM × utilization) − what the worker holds
V1_CPU_NODE = """vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072
INFO 06-02 10:11:12 [__init__.py:216] Automatically detected platform cpu.
(EngineCore pid=123) INFO 06-02 10:11:30 [cpu_worker.py:208] Auto set (1.51/125.0) GiB for KV cache on node 0, with 112.5 GiB requested memory for the worker. 110.99 GiB memory was consumed by non-kv usages.
(EngineCore pid=123) ValueError: To serve at least one request with the model's max seq len (131072), (7.00 GiB KV cache is needed, which is larger than the available KV cache memory (1.51 GiB). Based on the available memory, the estimated maximum model length is 28160. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.
"""


def _cpu(text: str):
    """read_cpu_backend as the reader calls it: with the environment settings it took from the paste."""
    return read_cpu_backend(text, text.lower(), read_paste(text).extra.get("env", {}))


def _fixes(d) -> dict[str, dict]:
    return {s["flags"]: s for s in d.suggestions}


def test_reader_finds_the_cpu_backend_and_dates_it():
    extra, hints = _cpu(V0_CPU)
    assert extra == {"platform": "cpu"} and hints == [("0.4.0", "0.10.0")]
    facts = read_paste(V0_CPU)
    assert facts.extra["platform"] == "cpu" and facts.extra["version_hint"][1] == "0.9.2"
    extra, hints = _cpu(V1_CPU_SETTING)
    assert extra["cpu_kv_default_gib"] == 4.0 and ("0.4.0", "0.13.0") in hints
    half = "WARNING [cpu.py:137] VLLM_CPU_KVCACHE_SPACE not set. Using 62.5 GiB for KV cache."
    assert _cpu(half) == ({"platform": "cpu", "cpu_kv_default_gib": 62.5}, [("0.13.0", "0.20.0")])
    extra, hints = _cpu(V1_CPU_NODE)
    assert extra == {"platform": "cpu", "cpu_kv_pool_gib": 1.51, "cpu_node_total_gib": 125.0,
                     "cpu_requested_gib": 112.5, "cpu_consumed_gib": 110.99} and hints == [("0.20.0", None)]
    explicit = "INFO [cpu_worker.py:208] Explicitly set (40.00/251.50) GiB for KV cache on node 1."
    assert _cpu(explicit)[0] == {"platform": "cpu", "cpu_kv_pool_gib": 40.0, "cpu_node_total_gib": 251.5,
                                             "cpu_kv_space_gib": 40.0}


@pytest.mark.parametrize("line, space", [
    ("export VLLM_CPU_KVCACHE_SPACE=40", 40.0),
    ("docker run -e VLLM_CPU_KVCACHE_SPACE=16 vllm-cpu-env --model x", 16.0),
    ('    environment:\n      VLLM_CPU_KVCACHE_SPACE: "24"', 24.0),
    ('os.environ["VLLM_CPU_KVCACHE_SPACE"] = "12"', 12.0),
])
def test_reader_takes_the_space_the_user_set(line, space):
    assert _cpu(line)[0] == {"platform": "cpu", "cpu_kv_space_gib": space, "cpu_kv_space_env": True}


@pytest.mark.parametrize("text", [
    "INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 256",
    "vllm serve Qwen/Qwen2.5-7B-Instruct --cpu-offload-gb 8 --swap-space 4",
    "I have 64 GB of CPU RAM and an RTX 4090; cpu usage is 100%",
])
def test_gpu_pastes_that_mention_the_cpu_are_not_read_as_the_cpu_backend(text):
    assert _cpu(text) == ({}, [])
    assert "platform" not in read_paste(text).extra


def test_v0_cpu_space_to_set_and_length_that_fits():
    d = diagnose(V0_CPU, offline=True)
    assert d.error_kind == "kv_capacity_v0"
    # 48 layers × 8 KV heads × 128 × 2 (K,V) × 2 B = 196,608 B per token; a block of 16 tokens is
    # 3 MiB, so the default 4 GiB holds 4096 // 3 = 1,365 blocks = 21,840 tokens, vLLM's figure
    assert d.kv_formula == ("48 layers × 8 KV heads per worker × 128 head_dim × 2 (K,V) × 2 B (bf16/fp16) "
                            "= 196,608 B per token")
    assert any("1,365 blocks × 16 tokens = 21,840 tokens" in n for n in d.notes)
    # 131,072 tokens = 8,192 blocks × 3 MiB = 24 GiB exactly
    fixes = _fixes(d)
    space = fixes["VLLM_CPU_KVCACHE_SPACE=24"]
    assert space["fits"] and space["kv_cache_tokens"] == 131_072 and space["max_concurrency"] == 1.0
    assert space["command"] == "VLLM_CPU_KVCACHE_SPACE=24 vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"
    # the largest round length ≤ 21,840: 21 × 1024
    assert fixes["--max-model-len 21504"]["kv_cache_tokens"] == 21_840
    assert list(fixes)[0] == "VLLM_CPU_KVCACHE_SPACE=24"
    reply = d.to_json()["reply"]
    for gpu_word in ("tensor-parallel", "gpu-memory-utilization", "nvidia-smi", "GPU memory (torch)", "--quantization"):
        assert gpu_word not in reply
    assert d.missing == ["how much RAM the host has (`free -g`), so the space can be checked against it"]
    # the explain JSON labels each figure: the default space assumed, the need derived (24 GiB)
    figures = d.to_json()["derived"]["figures"]
    assert figures["kv_pool"]["value"] == 4 * 2**30 and figures["kv_pool"]["provenance"] == "assumed"
    assert figures["kv_needed"]["value"] == 24 * 2**30 and figures["kv_needed"]["provenance"] == "derived"


def test_v0_cpu_space_from_the_command_replaces_it_in_the_fix():
    d = diagnose(V0_CPU_SET, offline=True)
    # 32 layers × 8 × 128 × 2 × 2 B = 131,072 B per token, 2 MiB a block: 8 GiB = 4,096 blocks = 65,536
    # tokens (the paste's own figure); 131,072 tokens need 8,192 blocks = 16 GiB
    assert any("8 GiB (set by VLLM_CPU_KVCACHE_SPACE=8 in the paste) → 4,096 blocks" in n for n in d.notes)
    fix = _fixes(d)["VLLM_CPU_KVCACHE_SPACE=16"]
    assert fix["kv_cache_tokens"] == 131_072
    assert fix["command"] == "VLLM_CPU_KVCACHE_SPACE=16 vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072"
    assert _fixes(d)["--max-model-len 65536"]["command"].startswith("VLLM_CPU_KVCACHE_SPACE=8 vllm serve")


def test_v0_cpu_without_the_model_bounds_the_token_cost_from_vllms_figures():
    text = V0_CPU.replace("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "my local model")
    d = diagnose(text, offline=True)
    # 1,365 blocks of 16 tokens in 4 GiB: at most 4,294,967,296 // 21,840 = 196,656 B per token
    # (21,840 × 196,656 = 4,294,967,040), so 131,072 × 196,656 B = 24.006 GiB → 25 GiB surely holds them
    assert "at most 196,656 B per token" in d.kv_formula
    assert "VLLM_CPU_KVCACHE_SPACE=25" in _fixes(d)
    assert "the model id (your `vllm serve …` command)" in d.missing


def test_v1_cpu_before_0_20_says_utilization_does_not_size_it():
    d = diagnose(V1_CPU_SETTING, offline=True)
    assert d.error_kind == "kv_capacity_v1"
    # 28 layers × 4 KV heads × 128 × 2 × 2 B = 57,344 B per token; 131,072 tokens = 1,024 blocks of 128
    # = 7,516,192,768 B = 7 GiB exactly, which rounds to vLLM's 7.00: a space of 7 GiB holds it.
    # 74,880 → the round length 65,536 (a power of two within 15%)
    fixes = _fixes(d)
    assert list(fixes) == ["VLLM_CPU_KVCACHE_SPACE=7", "--max-model-len 65536"]
    assert "1,024 blocks × 128 tokens × 57,344 B" in fixes["VLLM_CPU_KVCACHE_SPACE=7"]["why"]
    assert "does not change it" in d.summary and "--gpu-memory-utilization" in d.summary
    assert not any("--gpu-memory-utilization" in f for f in fixes)


def test_v1_cpu_from_0_20_raises_the_node_share():
    d = diagnose(V1_CPU_NODE, offline=True)
    fixes = _fixes(d)
    # the need is 7 GiB exactly (as above); vLLM's log rounds to 2 decimals (format_gib), so at worst
    # (7 + 110.99 + 0.005) / (125.0 − 0.005) = 0.94400 → 0.95: 0.95 × 125 − 110.99 = 7.76 GiB ≥ 7
    assert list(fixes) == ["--gpu-memory-utilization 0.95", "--kv-cache-memory-bytes 7G", "--max-model-len 27648"]
    # the share the run had: 112.5 / 125.0 = 0.9 (the command sets none; 0.92 is 0.22's default)
    assert any("1.51 GiB of KV cache = 0.9 × 125.00 GiB of node RAM − 110.99 GiB" in n for n in d.notes)
    assert fixes["--kv-cache-memory-bytes 7G"]["command"] == (
        "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072 --kv-cache-memory-bytes 7G")


def test_a_gpu_paste_keeps_the_gpu_reply():
    gpu = V1_CPU_NODE.replace("Automatically detected platform cpu.", "Automatically detected platform cuda.") \
        .replace("(EngineCore pid=123) INFO 06-02 10:11:30 [cpu_worker.py:208] Auto set (1.51/125.0) GiB for KV cache "
                 "on node 0, with 112.5 GiB requested memory for the worker. 110.99 GiB memory was consumed by "
                 "non-kv usages.\n", "")
    d = diagnose(gpu, offline=True)
    assert "CPU backend" not in d.summary and d.estimate is not None


def test_cpu_startup_log_is_explained_without_fixes():
    text = ("INFO 03-02 __init__.py:207] Automatically detected platform cpu.\n"
            "INFO 03-02 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: "
            "model='meta-llama/Llama-3.1-8B-Instruct', device_config=cpu\n"
            "INFO 03-02 executor_base.py:111] # cpu blocks: 2048, # CPU blocks: 2048\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.suggestions == [] and "holds 32,768 tokens" in d.summary      # 2,048 blocks × 16
    # 4 GiB / (16 × 131,072 B) = 2,048 blocks: the default space and the model agree, no disagreement note
    assert not any("not the" in n for n in d.notes)
    assert d.to_json()["estimate"] is None


def test_a_public_report_without_a_log_line_of_the_platform():
    # vllm#29233 (2025-11-22): the V1 message alone, and a build for the CPU; Qwen3-0.6B, which
    # `vllm bench throughput` serves by default, needs 28 × 8 × 128 × 2 × 2 = 114,688 B per token,
    # 40,960 × 114,688 B = 4.375 GiB → vLLM's "4.38"; the default space is 4 GiB before 0.13
    text = ("If a user tries to run a model with a decent max_model_len, they're very likely to run into memory "
            "issues allocating enough kv cache space since the default value is 4GB (too small) for the CPU backend\n"
            "```\n(EngineCore_DP0 pid=64528) ERROR 11-18 13:44:09 [core.py:842] ValueError: To serve at least one "
            "request with the models's max seq len (40960), (4.38 GiB KV cache is needed, which is larger than the "
            "available KV cache memory (4.00 GiB). Based on the available memory, the estimated maximum model length "
            "is 37376. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
            "engine.\n```\n### Reproducer:\n- build vllm on CPU: `VLLM_TARGET_DEVICE=cpu python3 setup.py "
            "bdist_wheel`\n- then run: `vllm bench throughput --input_len 32`\n")
    d = diagnose(text, offline=True, posted="2025-11-22")
    assert d.facts["vllm_version"] is None and d.error_kind == "kv_capacity_v1"
    assert any("4 GiB, assumed" in n for n in d.notes)
    # without the model: vLLM's 4.38 GiB at the top of its rounding, 4.385 GiB → 5 whole GiB
    assert [s["flags"] for s in d.suggestions] == ["VLLM_CPU_KVCACHE_SPACE=5", "--max-model-len 32768"]
    assert d.missing == ["the model id (your `vllm serve …` command)"]
    d = diagnose(text, model="Qwen/Qwen3-0.6B", offline=True, posted="2025-11-22")
    # with it: 320 blocks × 128 tokens × 114,688 B = 4.375 GiB, still 5 whole GiB
    assert "320 blocks × 128 tokens × 114,688 B" in d.suggestions[0]["why"]


STARTUP_SHORT = """vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768
INFO 06-02 10:11:12 [__init__.py:216] Automatically detected platform cpu.
(EngineCore pid=123) ValueError: Available memory on node 0 (10.2/15.5 GiB) on startup is less than desired CPU memory utilization (0.92, 14.26 GiB). On the CPU backend, the `--gpu-memory-utilization` flag controls the fraction of CPU memory reserved (despite its name). To resolve: decrease `--gpu-memory-utilization` (e.g. `--gpu-memory-utilization 0.5`) or reduce CPU memory used by other processes.
"""


def test_node_ram_short_at_start_up():
    # a node of 63.5 GiB with 30.2 available (figures as format_gib prints them)
    text = STARTUP_SHORT.replace("(10.2/15.5 GiB)", "(30.2/63.5 GiB)").replace("(0.92, 14.26 GiB)", "(0.92, 58.42 GiB)")
    d = diagnose(text, offline=True)
    assert d.error_kind == "free_memory_startup"
    assert "other processes hold 33.30 GiB" in d.summary          # 63.5 − 30.2
    fixes = _fixes(d)
    # the largest share whose ceil(63.5 GiB × u) 30.2 GiB covers, at the rounding's worst:
    # (30.2 − 0.005) / (63.5 + 0.005) = 0.4755 → 0.47 (0.47 × 63.5 = 29.85 ≤ 30.2; 0.48 × 63.5 = 30.48 is not)
    # — a change that passes the start-up check, whether the context then fits depends on the worker's RAM,
    # which the paste does not give: unchecked, and said so —
    # and a KV cache of its own size, which skips the check: 256 blocks × 128 × 57,344 B = 1.75 GiB → 2G
    assert [u["flags"] for u in d.unchecked] == ["--gpu-memory-utilization 0.47"]
    assert "pass vLLM's start-up check; whether max_model_len then fits" in d.to_json()["reply"]
    assert list(fixes) == ["--kv-cache-memory-bytes 2G"]
    assert "256 blocks × 128 tokens × 57,344 B" in fixes["--kv-cache-memory-bytes 2G"]["why"]


def test_node_ram_short_for_the_weights_themselves():
    # 10.2 GiB available on the node: Qwen2.5-7B's 7,615,616,512 parameters × 2 B + the 8 MiB rotary
    # cache = 15,239,621,632 B = 14.19 GiB do not fit, whatever the share: no fix, the reason said
    d = diagnose(STARTUP_SHORT, offline=True)
    assert "other processes hold 5.30 GiB" in d.summary          # 15.5 − 10.2
    assert "The weights take about 14.19 GiB" in d.summary and "no share fits" in d.summary
    assert d.suggestions == [] and d.unchecked == []


def test_node_ram_short_when_the_weights_take_the_share():
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.5\n"
            "INFO [__init__.py:216] Automatically detected platform cpu.\n"
            "ValueError: Available memory on node 0 (14.9/31.2 GiB) on kv cache allocation is less than requested "
            "memory for kv (-1.07/15.6 GiB). Reduce CPU memory used by other processes.\n")
    d = diagnose(text, offline=True)
    # the worker holds 15.6 − (−1.07) = 16.67 GiB; with the 1.75 GiB of 32,768 tokens:
    # (16.67 + 1.75 + 0.005) / (31.2 − 0.005) = 0.5906 → 0.60, and 0.60 × 31.2 − 16.67 = 2.05 GiB ≥ 1.75
    assert "already holds 16.67 GiB" in d.summary
    # or a KV cache of its own size, 2 GiB, which the 14.9 GiB available holds
    assert [s["flags"] for s in d.suggestions] == ["--gpu-memory-utilization 0.60", "--kv-cache-memory-bytes 2G"]


def test_node_ram_short_for_an_explicit_kv_cache():
    text = ("Automatically detected platform cpu.\n"
            "ValueError: Available memory on node 1 (3.0/251.5 GiB) on kv cache allocation is less than requested "
            "memory for kv (40.0 GiB). Decrease --kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU "
            "memory used by other processes.\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "free_memory_startup"
    assert "asks for a 40 GiB KV cache, but only 3 GiB" in d.summary and "other processes hold 248.50 GiB" in d.summary
    assert d.suggestions == []           # no model: no need to size a smaller cache by


def test_the_oom_killer_on_a_cpu_run_weighs_the_kv_space():
    text = ("$ VLLM_CPU_KVCACHE_SPACE=40 vllm serve Qwen/Qwen2.5-14B-Instruct --max-model-len 32768\n"
            "INFO 10-02 10:11:12 [__init__.py:216] Automatically detected platform cpu.\n"
            "Killed\n")
    # "[__init__.py:216] Automatically detected platform" is 0.10.2–0.11.0's line (log_sites); the
    # newest release's words first, then the paste's own release's
    d = diagnose(text, offline=True, vllm_version=NEWEST)
    assert d is not None and d.error_kind == "other"
    # 14,770,033,664 parameters × 2 B + the 8 MiB rotary cache = 29,548,455,936 B = 27.52 GiB beside 40 GiB
    assert "27.52 GiB of weights" in d.summary and "a 40 GiB KV cache (set by VLLM_CPU_KVCACHE_SPACE)" in d.summary
    own = diagnose(text, offline=True)
    assert "a 40 GiB KV cache (set by VLLM_CPU_KVCACHE_SPACE=40 in the paste)" in own.summary
    assert own.suggestions[0]["flags"] == "VLLM_CPU_KVCACHE_SPACE=6"
    # 48 layers × 8 × 128 × 2 × 2 B = 196,608 B per token; 256 blocks × 128 × 196,608 B = 6 GiB for 32,768
    fix = d.suggestions[0]
    assert fix["flags"] == "VLLM_CPU_KVCACHE_SPACE=6" and "frees 34 GiB" in fix["why"]
    assert fix["command"] == "VLLM_CPU_KVCACHE_SPACE=6 vllm serve Qwen/Qwen2.5-14B-Instruct --max-model-len 32768"
    assert "nvidia-smi" not in d.to_json()["reply"]


def test_a_cpu_setting_in_a_gpu_run_does_not_make_it_a_cpu_run():
    # an env list that carries the variable beside a CUDA run: the GPU's figures answer it
    text = ("docker run --gpus all -e VLLM_CPU_KVCACHE_SPACE=40 vllm/vllm-openai --model Qwen/Qwen2.5-7B-Instruct\n"
            "INFO 06-02 10:11:12 [__init__.py:216] Automatically detected platform cuda.\n")
    assert "platform" not in read_paste(text).extra
    assert _cpu(text) == ({}, [])
    # vLLM's own CPU lines are the CPU's whatever else the paste holds
    assert _cpu(text + V0_CPU)[0]["platform"] == "cpu"


def test_worker_fills_its_share_from_0_33():
    # 0.33+ prints no node figures: the node's RAM is the share over u, 15.6 / 0.5 = 31.2 GiB; the
    # worker holds 16.67 GiB; (16.67 + 1.75 + 0.005) / (31.2 − 0.005) = 0.5906 → 0.60, as before
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.5\n"
            "(EngineCore pid=123) ValueError: The worker already uses 16.67 GiB (model weights and runtime), more than "
            "the 15.6 GiB of CPU memory reserved for it on node 0, leaving none for the KV cache. On the CPU backend, "
            "the `--gpu-memory-utilization` flag controls the fraction of CPU memory reserved (despite its name). To "
            "resolve: increase `--gpu-memory-utilization` to more than 0.54, or set the KV cache size explicitly with "
            "`--kv-cache-memory-bytes` or VLLM_CPU_KVCACHE_SPACE.\n")
    facts = read_paste(text)
    assert facts.error_kind == "free_memory_startup" and facts.extra["version_hint"][0] == "0.33.0"
    d = diagnose(text, offline=True)
    assert "about 31.20 GiB (derived: 15.6 / 0.5)" in d.summary
    total = d.to_json()["derived"]["figures"]["total"]
    assert total["provenance"] == "derived" and abs(total["value"] - 31.2 * 2**30) < 1
    assert [s["flags"] for s in d.suggestions] == ["--gpu-memory-utilization 0.60", "--kv-cache-memory-bytes 2G"]


@pytest.mark.parametrize("old, new", [
    ("(10.2/15.5 GiB)", "(0.0/0.0 GiB)"),            # a node of no RAM
    ("(10.2/15.5 GiB)", "(-10.2/15.5 GiB)"),         # an available figure no node prints
    ("(0.92, 14.26 GiB)", "(0.92, 0 GiB)"),
    ("--max-model-len 32768", "--max-model-len 0"),
    ("Automatically detected platform cpu.", "Automatically detected platform cpu. vLLM 1348267.-3"),
])
def test_absurd_node_figures_give_no_traceback_and_no_share_outside_0_1(old, new):
    d = diagnose(STARTUP_SHORT.replace(old, new), offline=True, explain=True)
    assert d.summary
    for s in d.suggestions:
        if s["flags"].startswith("--gpu-memory-utilization"):
            assert 0 < float(s["flags"].split()[1]) <= 1


@pytest.mark.parametrize("uses, reserved", [("3.0", "15.6"), ("16.67", "0"), ("0", "0")])
def test_a_worker_message_with_figures_no_run_prints_gives_no_traceback(uses, reserved):
    text = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.5\n"
            f"ValueError: The worker already uses {uses} GiB (model weights and runtime), more than the {reserved} GiB "
            "of CPU memory reserved for it on node 0, leaving none for the KV cache.\n")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind == "free_memory_startup" and d.summary
    for s in d.suggestions:
        if s["flags"].startswith("--gpu-memory-utilization"):
            assert 0.5 < float(s["flags"].split()[1]) <= 1


def test_v0_cpu_formula_counts_windowed_layers_at_full_length():
    # V0's CPU cache engine gives every layer the whole context: Gemma 2's sliding layers are no
    # cheaper there, so the formula shows no window and the per-token cost sums all 42 layers
    # (42 × 8 KV heads × 256 × 2 × 2 B = 344,064 B)
    text = V0_CPU.replace("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "google/gemma-2-9b-it")
    d = diagnose(text, offline=True)
    assert d.kv_formula.startswith("42 layers × 8 KV heads per worker × 256 head_dim") and "window" not in d.kv_formula
    assert "344,064 B per token" in d.kv_formula


def test_a_cpu_capacity_of_zero_tokens_gives_no_traceback():
    d = diagnose(V0_CPU.replace("(21840)", "(0)"), offline=True)
    assert d.error_kind == "kv_capacity_v0" and d.summary
