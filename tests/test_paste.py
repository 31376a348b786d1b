"""Paste reader: hand-checked facts from real and realistic pastes (templates of
../shared/docs/vllm-memory.md §4), every error_kind of design.md §4, text damage, spans."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from estimator.paste import ERROR_KINDS, FACT_KEYS, Fact, Facts, read_paste


def unlined(text: str) -> str:
    """The paste with its log prefixes moved to line 1, where no release logs anything: what its wording
    alone dates, without the file:line evidence (estimator/log_sites.py) of the lines it quotes."""
    return re.sub(r"(\.py):\d+\]", r"\1:1]", text)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SEED = SHARED / "corpus" / "seed-post.txt"


def at(text: str, facts: Facts, key: str) -> str:
    """The original text a fact was read from."""
    s, e = facts.values[key].span
    return text[s:e]


# --- contract --------------------------------------------------------------------------------

def test_fact_keys_are_design_contract():
    design = SHARED / "docs" / "design.md"
    if not design.exists():
        pytest.skip("../shared/docs/design.md not present")
    block = re.search(r"`facts` uses exactly these keys.*?:\s*(.*?)\.\s*\n", design.read_text(), re.S).group(1)
    keys = tuple(k.strip(" `\n") for k in block.replace("\n", " ").split(","))
    assert FACT_KEYS == keys
    kinds_block = re.search(r"`error_kind` is one of:(.*?)or\s*`null`", design.read_text(), re.S).group(1)
    kinds = tuple(k.strip(" `\n,") for k in kinds_block.replace("\n", " ").split(",") if k.strip(" `\n,"))
    assert ERROR_KINDS == kinds


def test_to_dict_has_every_key_and_nulls():
    f = read_paste("")
    d = f.to_dict()
    assert tuple(d) == FACT_KEYS
    assert all(v is None for v in d.values())
    assert f.error_kind is None and f.spans() == {} and f.get("model", "x") == "x"


# --- the seed post (acceptance) --------------------------------------------------------------

def test_seed_post_acceptance():
    if not SEED.exists():
        pytest.skip("../shared/corpus/seed-post.txt not present")
    text = SEED.read_text()
    f = read_paste(text)
    assert f.get("error_max_tokens_in_kv") == 73792
    assert f.get("max_model_len") == 1010000
    assert f.get("model") == "Qwen/Qwen2.5-14B-Instruct-1M"
    assert "RTX A6000" in f.get("gpu")
    assert f.get("dtype") == "auto"
    assert f.error_kind == "kv_capacity_v0"
    # spans point at the printed text
    assert at(text, f, "error_max_tokens_in_kv") == "73792"
    assert at(text, f, "max_model_len") == "1010000"
    assert at(text, f, "model") == "Qwen/Qwen2.5-14B-Instruct-1M"
    # V0 wording → engine v0; the V0 check existed 0.4.0 … 0.10.x (V0 removed in 0.11)
    assert f.extra["engine"] == "v0"
    assert f.extra["version_hint"] == ("0.4.0", "0.10.2")     # inclusive: the last V0 release read
    # the user's claim "weights should take ~14GB" is kept for a correction
    assert any(c["about"] == "weights" and c["gb"] == 14.0 for c in f.extra["claims"])
    # the markdown-eaten backticks ("gpu_memory_utilizationor") do not become a setting
    assert f.get("gpu_memory_utilization") is None


# --- every error_kind ------------------------------------------------------------------------

V0_CAPACITY = """INFO 02-11 07:40:45 model_runner.py:1115] Loading model weights took 13.9476 GB
ERROR 02-11 07:40:49 engine.py:366] ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (81536). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."""

V1_CAPACITY = """(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len (262144), (24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory, the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."""

NO_BLOCKS = """INFO 01-14 12:36:51 worker.py:240] the current vLLM instance can use total_gpu_memory (8.00GiB) x gpu_memory_utilization (0.70) = 5.60GiB
INFO 01-14 12:36:51 worker.py:240] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch activation peak memory takes 1.42GiB; the rest of the memory reserved for KV Cache is -1.05GiB.
INFO 01-14 12:36:51 executor_base.py:110] # cuda blocks: 0, # CPU blocks: 4681
INFO 01-14 12:36:51 executor_base.py:115] Maximum concurrency for 4096 tokens per request: 0.00x
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."""

FREE_MEMORY = """(EngineCore_0 pid=1810465) ERROR 09-03 11:03:37 [core.py:712] ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory utilization (0.9, 125.75 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."""

OOM_LOAD = """INFO 03-19 07:26:40 [model_runner.py:1110] Starting to load model meta-llama/Llama-3.1-70B-Instruct...
[rank0]:   File "/usr/local/lib/python3.12/site-packages/vllm/model_executor/model_loader/loader.py", line 441, in load_model
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of 79.14 GiB of which 512.31 MiB is free. Including non-PyTorch memory, this process has 78.62 GiB memory in use. Of the allocated memory 78.11 GiB is allocated by PyTorch, and 9.21 MiB is reserved by PyTorch but unallocated."""

OOM_PROFILE = """INFO 10-24 18:12:26 model_runner.py:1067] Loading model weights took 19.8557 GB
INFO 10-24 18:12:26 enc_dec_model_runner.py:301] Starting profile run for multi-modal models.
  File "/opt/vllm/vllm/worker/enc_dec_model_runner.py", line 301, in profile_run
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 37.50 GiB. GPU 0 has a total capacity of 93.10 GiB of which 30.02 GiB is free. Process 4242 has 63.07 GiB memory in use. Of the allocated memory 62.30 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated."""

OOM_GRAPH = """INFO 10-24 18:12:39 gpu_executor.py:122] # GPU blocks: 2252, # CPU blocks: 1638
INFO 10-24 18:12:41 model_runner.py:1395] Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model is not static.
  File "/opt/vllm/vllm/worker/model_runner.py", line 1420, in capture_model
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.69 GiB of which 3.56 MiB is free. Process 17 has 23.68 GiB memory in use."""

OOM_RUNTIME = """INFO 06-26 22:47:13 [kv_cache_utils.py:1733] GPU KV cache size: 612,157 tokens
INFO 06-26 22:48:01 [api_server.py:1024] Application startup complete.
INFO 06-26 22:51:40 [loggers.py:116] Avg prompt throughput: 8812.4 tokens/s, Avg generation throughput: 12.0 tokens/s
ERROR 06-26 22:51:41 [core.py:588] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.26 GiB. GPU 0 has a total capacity of 23.56 GiB of which 1.02 GiB is free. Process 95 has 22.53 GiB memory in use."""

TP_DIV = """ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3)."""

BF16 = """ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in CLI, for example: --dtype=half."""

DERIVED = """ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"""

MAMBA = """ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (939).
Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot
proceed. Please lower max_num_seqs to at most 939 or increase gpu_memory_utilization."""

STARTUP_OK = """(Worker_TP0 pid=26347) INFO 11-06 10:51:48 [gpu_worker.py:349] Available KV cache memory: 2.30 GiB
(EngineCore_DP0 pid=26283) INFO 11-06 10:51:48 [kv_cache_utils.py:1229] GPU KV cache size: 75,840 tokens
(EngineCore_DP0 pid=26283) INFO 11-06 10:51:48 [kv_cache_utils.py:1234] Maximum concurrency for 120,000 tokens per request: 2.48x"""

OTHER = """INFO 01-23 07:32:42 model_runner.py:1071] Loading model weights took 4.3752 GB
INFO 01-23 07:34:26 gpu_executor.py:122] # GPU blocks: 11836, # CPU blocks: 4681
Killed"""


@pytest.mark.parametrize("text,kind", [
    (V0_CAPACITY, "kv_capacity_v0"), (V1_CAPACITY, "kv_capacity_v1"), (NO_BLOCKS, "no_cache_blocks"),
    (FREE_MEMORY, "free_memory_startup"), (OOM_LOAD, "cuda_oom_load"), (OOM_PROFILE, "cuda_oom_profile"),
    (OOM_GRAPH, "cuda_oom_graph"), (OOM_RUNTIME, "cuda_oom_runtime"), (TP_DIV, "tp_divisibility"),
    (BF16, "bf16_compute_capability"), (DERIVED, "max_model_len_derived"), (MAMBA, "mamba_blocks"),
    (STARTUP_OK, "startup_log_ok"), (OTHER, "other"),
])
def test_every_error_kind(text, kind):
    assert read_paste(text).error_kind == kind


def test_error_kinds_cover_design():
    # the parametrised table above names every kind of design.md §4
    assert set(ERROR_KINDS) == {"kv_capacity_v0", "kv_capacity_v1", "no_cache_blocks", "free_memory_startup",
                                "cuda_oom_load", "cuda_oom_profile", "cuda_oom_graph", "cuda_oom_runtime",
                                "tp_divisibility", "bf16_compute_capability", "max_model_len_derived",
                                "mamba_blocks", "startup_log_ok", "other"}


@pytest.mark.parametrize("text", [
    "",
    "   \n\n",
    "hey team, is anyone around for lunch? the new office coffee machine is great",
    """Traceback (most recent call last):
  File "/srv/app/views.py", line 42, in get
    return self.cache[key]
KeyError: 'user:17'""",
    "We benchmarked SGLang and TensorRT-LLM last week; numbers in the sheet.",
    "MemoryError: unable to allocate 3.2 GiB for an array with shape (20000, 20000) and data type float64",
])
def test_no_vllm_memory_problem_is_none(text):
    assert read_paste(text).error_kind is None


# --- numbers per template --------------------------------------------------------------------

def test_v0_profiling_block_numbers():
    f = read_paste(NO_BLOCKS)
    assert f.get("total_gpu_memory_gib") == 8.00
    assert f.get("gpu_memory_utilization") == 0.70
    assert f.get("weights_gib") == 5.20
    assert f.get("non_torch_gib") == 0.03
    assert f.get("activation_peak_gib") == 1.42
    assert f.get("kv_cache_gib") == -1.05        # 5.60 − 5.20 − 0.03 − 1.42 = −1.05: KV may be negative
    assert f.get("gpu_blocks") == 0
    assert f.get("max_model_len") == 4096
    assert f.get("max_concurrency") == 0.00
    assert f.extra["cpu_blocks"] == 4681.0
    # '# cuda blocks' lower-case: 0.7.3 … 0.10.x; the `worker.py:240]` prefix (no brackets) is ≤0.7.3
    # → together exactly 0.7.3
    assert f.extra["version_hint"] == ("0.7.3", "0.7.3")


def test_v1_capacity_numbers_and_hint():
    f = read_paste(V1_CAPACITY)
    assert (f.get("max_model_len"), f.get("kv_needed_gib"), f.get("kv_available_gib"),
            f.get("estimated_max_model_len")) == (262144, 24.0, 3.18, 34736)
    assert f.extra["engine"] == "v1"
    # "models's" + estimate + docs link → 0.13.0 … 0.21.x; "24.0", not "24.00", is format_gib's
    # (0.14+; to 0.13 the figures were `:.2f`): 0.14.0 … 0.21.x (vllm#34076 ran 0.15.2rc1)
    assert f.extra["version_hint"] == ("0.14.0", "0.21.0")


def test_v1_capacity_error_figures_and_end_date_the_release():
    """The error's GiB figures were `{:.2f}` to 0.13 ("36.00") and format_gib's from 0.14 ("36.0"); from
    0.13 the message ends with a docs link. A whole message without the link is 0.9.1–0.12 (a jishuzhan.net
    post; vllm's kv_cache_utils.py before the link), one with a trailing-zero figure at most 0.13."""
    msg = ("ValueError: To serve at least one request with the models's max seq len (262144), (36.00 GiB KV cache "
           "is needed, which is larger than the available KV cache memory (7.84 GiB). Based on the available "
           "memory, the estimated maximum model length is 57104. Try increasing `gpu_memory_utilization` or "
           "decreasing `max_model_len` when initializing the engine.")
    assert read_paste(msg + "\nraise RuntimeError(\n").extra["version_hint"] == ("0.9.1", "0.12.0")
    # cut before its last words: the end says nothing, the "36.00" still caps it at 0.13
    cut = msg.split(" Try increasing")[0]
    assert read_paste(cut).extra["version_hint"] == ("0.9.1", "0.13.0")
    # the link there, even with its address left out, and a one-decimal figure: 0.14+
    linked = msg.replace("36.00", "36.0") + " See [documentation URL omitted] for more details."
    assert read_paste(linked).extra["version_hint"] == ("0.14.0", "0.21.0")
    # figures with a nonzero second decimal fit both formats
    both = cut.replace("36.00", "36.02")
    assert read_paste(both).extra["version_hint"] == ("0.9.1", "0.21.0")
    # re-wrapped over lines by its poster and closing their excerpt (a 0.19.1 blog, sirzzang): the link may
    # have been dropped, so only the "3.0" dates it; the same re-wrapped message with the log going on after
    # it had no link
    wrapped = ("(EngineCore pid=81) ValueError: To serve at least one request with the models's max seq len\n"
               "  (16384), (3.0 GiB KV cache is needed, which is larger than the available KV cache memory\n"
               "  (0.18 GiB). Based on the available memory, the estimated maximum model length is 976.\n"
               "  Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing\n"
               "  the engine.\n```\n")
    assert read_paste(wrapped).extra["version_hint"] == ("0.14.0", "0.21.0")
    goes_on = wrapped.replace("3.0 GiB", "3.00 GiB").replace("```", "(EngineCore pid=81) ERROR engine failed")
    assert read_paste(goes_on).extra["version_hint"] == ("0.9.1", "0.12.0")


def test_available_kv_figure_dates_the_release():
    """gpu_worker.py printed "Available KV cache memory: %.2f GiB" to 0.13 and format_gib's figure from 0.14
    (the 0.13.0 and 0.14.0 wheels): "48.6" (a Qwen3.6-27B-NVFP4 start-up log) is 0.14+, "12.20" (a 0.10.0
    Colab log) at most 0.13, and "8.64" either. A figure never overrules a message's wording: 0.34's hint
    with two-decimal figures stays 0.34 (test_derive's 0.34 error)."""
    line = "(EngineCore_DP0 pid=1) INFO 07-02 22:04:55 [gpu_worker.py:515] Available KV cache memory: {} GiB"
    assert read_paste(line.format("48.6")).extra["version_hint"] == ("0.14.0", None)
    assert read_paste(line.format("12.20")).extra["version_hint"] == ("0.9.1", "0.13.0")
    assert read_paste(line.format("8.64")).extra["version_hint"] == ("0.9.1", None)


def test_no_cache_blocks_message_dates_the_release():
    """"No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the
    engine." ends there up to 0.12 (V0's worker.py, V1's kv_cache_utils.py), adds " See https://docs.vllm.ai/…
    for more details." from 0.13 and "(this flag also controls CPU memory reservation on the CPU backend,
    despite its name)" from 0.22 (the 0.12.0, 0.13.0, 0.21.0 and 0.22.0 wheels). A message cut at its advice,
    or broken over lines by its poster and closing their excerpt, says nothing: the rest may have been dropped."""
    head = ("(EngineCore_DP0 pid=1) ERROR 07-27 16:21:40 [core.py:1100] ValueError: No available memory for the "
            "cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine")
    link = " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.\n"
    assert read_paste(head + ".\nnext line\n").extra["version_hint"] == ("0.8.0", "0.12.0")
    assert read_paste(head + "." + link).extra["version_hint"] == ("0.13.0", "0.21.0")
    cpu = " (this flag also controls CPU memory reservation on the CPU backend, despite its name)." + link
    assert read_paste(head + cpu).extra["version_hint"] == ("0.22.0", None)
    # on one line as vLLM prints it, with nothing after: the line ended without a link
    assert read_paste(head + ".").extra["version_hint"] == ("0.8.0", "0.12.0")
    # broken over lines by the poster and closing the excerpt: it may have been cut, so no sign
    rewrapped = head.replace(" Try increasing", "\nTry increasing") + ".\n```\n"
    assert read_paste(rewrapped).extra["version_hint"] == ("0.8.0", None)      # the V1 prefix alone


def test_the_engine_start_up_time_line_dates_the_release():
    """"init engine (profile, create kv cache, warmup model) took 11.33 seconds" is V0's and V1's wording to
    0.19.1; from 0.20.0 V1 writes "took 140.65 s", with "(compilation: 13.01 s)" after it where it compiled
    (engine/core.py, the 0.14.0–0.27.0 wheels). Over the 476 corpus pastes the hint changes 27 ranges, each
    still holding the release the paste states. The line says nothing about memory: no start-up log alone."""
    old = "INFO 08-12 22:32:20 [llm_engine.py:424] init engine (profile, create kv cache, warmup model) took 11.33 seconds\n"
    new = "(EngineCore pid=1) INFO 09-01 10:00:00 [core.py:337] init engine (profile, create kv cache, warmup model) took {}\n"
    assert read_paste(unlined(old)).extra["version_hint"] == ("0.8.0", "0.19.1")
    assert read_paste(unlined(new.format("140.65 s"))).extra["version_hint"] == ("0.20.0", None)
    assert read_paste(unlined(new.format("212.68 s (compilation: 13.01 s)"))).extra["version_hint"] == ("0.20.0", None)
    # with its line: llm_engine.py logs it at 424 in 0.10.0 only (447 in 0.8.0, 428 in 0.9.2, 417 in 0.10.1)
    assert read_paste(old).extra["version_hint"] == ("0.10.0", "0.10.0")
    assert read_paste(old).get("error_kind") is None


def test_actual_usage_report_dates_the_release():
    """gpu_worker.py's "Actual usage" report, as the wheels write it: 0.10.2 quotes its suggestions and the
    pool in bytes alone (an 8×L40S Qwen3-235B-FP8 log, vLLM 0.10.2), 0.11.0 adds "(X GiB)" after each and
    the pool in GiB; INFO in 0.10.2 and from 0.26.0, DEBUG in 0.11.0–0.25.1; one "consumed memory" figure
    from 0.27. The hints are inclusive: (first, last) release."""
    head = ("(Worker_TP2_EP2 pid=2080) {level} 09-24 20:54:35 [gpu_worker.py:391] Free memory on device "
            "(43.93/44.42 GiB) on startup. Desired GPU memory utilization is (0.9, 39.98 GiB). Actual usage is ")
    parts = ("27.72 GiB for weight, 1.4 GiB for peak activation, 0.21 GiB for non-torch memory, and 3.45 GiB "
             "for CUDAGraph memory. ")
    in_bytes = ("Replace gpu_memory_utilization config with `--kv-cache-memory=7564378828` to fit into requested "
                "memory, or `--kv-cache-memory=11809093120` to fully utilize gpu memory. Current kv cache memory "
                "in use is 11423138508 bytes.")
    in_gib = ("Replace gpu_memory_utilization config with `--kv-cache-memory=7564378828` (7.04 GiB) to fit into "
              "requested memory, or `--kv-cache-memory=11809093120` (11.0 GiB) to fully utilize gpu memory. "
              "Current kv cache memory in use is 10.64 GiB.")

    def hint(text):
        return read_paste(unlined(text)).extra.get("version_hint")

    # with its line: the 0.10.2 wheel's gpu_worker.py logs the report (`logger.info(msg)`, msg = f"Free memory
    # on device …") at line 391, which dates even the excerpt cut after the parts
    assert read_paste(head.format(level="INFO") + parts).extra["version_hint"] == ("0.10.2", "0.10.2")
    assert hint(head.format(level="INFO") + parts + in_bytes) == ("0.10.2", "0.10.2")
    f = read_paste(head.format(level="INFO") + parts + in_bytes)
    assert round(f.get("kv_cache_gib"), 2) == 10.64              # 11,423,138,508 B / 2^30
    assert hint(head.format(level="INFO") + parts + in_gib) == ("0.26.0", "0.26.0")
    assert hint(head.format(level="DEBUG") + parts + in_gib) == ("0.11.0", "0.25.1")
    # the level cut with the prefix: any release with these parts and units
    assert hint(head.format(level="INFO").split("] ", 1)[1] + parts + in_gib) == ("0.11.0", "0.26.0")
    # cut after the parts: INFO is 0.10.2 or 0.26, so only the parts' wording dates it
    assert hint(head.format(level="INFO") + parts) == ("0.10.2", "0.26.0")
    consumed = "10.7 GiB for consumed memory (weights + non-torch), 1.54 GiB for peak activation, and 0.5 GiB " \
               "for CUDAGraph memory. "
    assert hint(head.format(level="INFO") + consumed + in_gib) == ("0.27.0", None)


def test_v1_capacity_wrapped_over_lines():
    text = """ValueError: To serve at least one request with the model's max seq len (1048576),
22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).
Based on the available memory, the estimated maximum model length is 810208."""
    f = read_paste(text)
    assert (f.get("max_model_len"), f.get("kv_needed_gib"), f.get("kv_available_gib"),
            f.get("estimated_max_model_len")) == (1048576, 22.5, 17.39, 810208)
    assert f.extra["version_hint"] == ("0.22.0", None)   # "model's" (fixed typo) is 0.22+


def test_v1_capacity_error_shortened_by_the_poster():
    """olmOCR#269 retells vLLM's error as "1.75 GiB KV cache is needed, available 0.13 GiB": the same two
    figures, the availability word before its number; a need below the availability is no such error."""
    f = read_paste("On RTX 4090 / 24 GB the default pipeline fails at start-up:\n"
                   "ValueError: 1.75 GiB KV cache is needed, available 0.13 GiB\n")
    assert (f.get("kv_needed_gib"), f.get("kv_available_gib")) == (1.75, 0.13)
    f = read_paste("about 1.75 GiB KV cache is needed, free 3.5 GiB on the card")
    assert f.get("kv_needed_gib") is None and f.get("kv_available_gib") is None


def test_v064_results_line():
    text = ("INFO 11-20 10:00:00 worker.py:232] Memory profiling results: total_gpu_memory=23.58GiB "
            "initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35Gib "
            "non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90")
    f = read_paste(text)
    # 23.58 × 0.9 − 17.06 − 0.35 = 3.812 → printed 3.81
    assert (f.get("total_gpu_memory_gib"), f.get("non_torch_gib"), f.get("kv_cache_gib"),
            f.get("gpu_memory_utilization")) == (23.58, 0.35, 3.81, 0.90)
    assert f.extra["peak_torch_memory_gib"] == 17.06 and f.extra["initial_memory_usage_gib"] == 15.34
    assert f.extra["version_hint"] == ("0.6.4", "0.6.4")
    assert f.error_kind == "startup_log_ok"


def test_actual_usage_line():
    text = ("(Worker_TP2 pid=3264437) INFO 07-14 09:50:23 [gpu_worker.py:855] Free memory on device (77.57/79.11 GiB) on "
            "startup. Desired GPU memory utilization is (0.92, 72.78 GiB). Actual usage is 7.39 GiB for weight, 1.54 GiB "
            "for peak activation, 0.6 GiB for non-torch memory, and 2.04 GiB for CUDAGraph memory. Replace "
            "gpu_memory_utilization config with `--kv-cache-memory=65565989131` (61.06 GiB) to fit into requested memory, "
            "or `--kv-cache-memory=70712017408` (65.86 GiB) to fully utilize gpu memory. Current kv cache memory in use is 63.25 GiB.")
    f = read_paste(text)
    assert f.get("free_memory_gib") == 77.57 and f.get("total_gpu_memory_gib") == 79.11
    assert f.get("gpu_memory_utilization") == 0.92
    assert (f.get("weights_gib"), f.get("activation_peak_gib"), f.get("non_torch_gib"), f.get("cuda_graph_gib")) == \
        (7.39, 1.54, 0.6, 2.04)
    assert f.get("kv_cache_gib") == 63.25 and f.get("kv_available_gib") == 63.25   # the V1 pool
    assert f.error_kind == "startup_log_ok"


def test_actual_usage_line_with_the_pool_in_bytes():
    """0.10.2–0.11 print the pool in bytes ("Current kv cache memory in use is 59212694937 bytes."):
    59,212,694,937 / 2^30 = 55.146 GiB, the "Available KV cache memory: 55.15 GiB" of the same log,
    which is the figure quoted where both are pasted."""
    line = ("(EngineCore_DP0 pid=3021) INFO 09-23 18:12:39 [gpu_worker.py:391] Free memory on device (78.66/79.19 GiB) "
            "on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual usage is 14.08 GiB for weight, "
            "1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and 0.67 GiB for CUDAGraph memory. Replace "
            "gpu_memory_utilization config with `--kv-cache-memory=58333988249` to fit into requested memory, or "
            "`--kv-cache-memory=66273897472` to fully utilize gpu memory. Current kv cache memory in use is "
            "59212694937 bytes.\n")
    f = read_paste(line)
    assert f.get("kv_available_gib") == pytest.approx(59_212_694_937 / 2**30) == pytest.approx(55.146, abs=1e-3)
    assert f.get("kv_cache_gib") == f.get("kv_available_gib")
    both = read_paste("(EngineCore_DP0 pid=3021) INFO 09-23 18:12:33 [gpu_worker.py:298] Available KV cache memory: "
                      "55.15 GiB\n" + line)
    assert both.get("kv_available_gib") == 55.15 and both.get("kv_cache_gib") == 55.15
    assert "kv_cache_gib" not in (both.extra.get("alternatives") or {})


def test_a_concurrency_line_cut_after_its_length_still_gives_max_model_len():
    """A DGX Spark compose log pasted with "Maximum concurrency for 65,536 tokens [...]": the length is
    vLLM's max_model_len even without the concurrency figure; a question in words is no such line."""
    f = read_paste("vllm_gb10_server  | (EngineCore pid=194) INFO 04-29 12:01:07 [kv_cache_utils.py:1718] "
                   "Maximum concurrency for 65,536 tokens [...]\n")
    assert f.get("max_model_len") == 65536 and f.get("max_concurrency") is None
    assert read_paste("what is the maximum concurrency for 32768 tokens?").get("max_model_len") is None


def test_a_concurrency_line_retold_without_per_request_is_read():
    """A GB10 report retelling 0.28+'s merged line without its "per request" ("GPU KV cache size:
    412,004 tokens, Maximum concurrency for 32,768 tokens: 12.57x"): both figures and the length are
    still vLLM's, and so is the older two-line form shortened the same way."""
    merged = read_paste("Available KV cache memory: 8.22 GiB\n"
                        "GPU KV cache size: 412,004 tokens, Maximum concurrency for 32,768 tokens: 12.57x\n")
    assert merged.get("kv_tokens_capacity") == 412_004 and merged.get("max_concurrency") == 12.57
    assert merged.get("max_model_len") == 32_768
    alone = read_paste("INFO [kv_cache_utils.py:1234] Maximum concurrency for 120,000 tokens: 2.48x\n")
    assert alone.get("max_concurrency") == 2.48 and alone.get("max_model_len") == 120_000
    # a sentence that only asks about concurrency gives no figure
    assert read_paste("what is the maximum concurrency for 32768 tokens: is it 2x?").get("max_concurrency") is None


def test_a_v1_capacity_message_cut_after_its_need_keeps_the_need():
    """vllm#53961 quoted the message up to "which is larger t[...]": the need and the length are read and
    the error is V1's capacity check; nothing is read for the memory the paste cut off. A need followed
    by other words (no cut) is not enough."""
    f = read_paste("  ValueError: To serve at least one request with the model's max seq len (1048576),\n"
                   "  23.32 GiB KV cache is needed, which is larger t[...]")
    assert f.get("kv_needed_gib") == 23.32 and f.get("max_model_len") == 1_048_576
    assert f.error_kind == "kv_capacity_v1" and f.get("kv_available_gib") is None
    loose = read_paste("To serve at least one request with the model's max seq len (8192), 2.00 GiB KV cache is "
                       "needed, says my calculator")
    assert loose.get("kv_needed_gib") is None


def test_unsloths_banner_gives_the_gpus_torch_sees():
    """Unsloth's banner prints torch.cuda.device_count() beside the card ("NVIDIA GeForce RTX 4090 D. Num GPUs
    = 2. Max memory: 23.546 GB."): the machine's GPU count, read with torch's total in GiB."""
    f = read_paste("   \\\\   /|    NVIDIA GeForce RTX 4090 D. Num GPUs = 2. Max memory: 23.546 GB. Platform: Linux.\n")
    assert (f.get("gpu_count"), f.get("total_gpu_memory_gib")) == (2, 23.546)
    assert read_paste("Max memory: 14.741 GB. Platform: Linux.").get("gpu_count") is None


def test_weights_lines_all_versions():
    assert read_paste("Loading model weights took 30.7098 GB").get("weights_gib") == 30.7098
    assert read_paste("Model loading took 17.6110 GiB and 12.273077 seconds").get("weights_gib") == 17.611
    # "GiB memory and" from 0.11.1 (the 0.11.0 and 0.11.1 wheels' gpu_model_runner.py), "%.4f" to 0.13 and
    # format_gib's figure ("14.28") from 0.14 (the 0.13.0 and 0.14.0 wheels)
    f = read_paste("Model loading took 14.28 GiB memory and 31.2 seconds")
    assert f.get("weights_gib") == 14.28 and f.extra["version_hint"] == ("0.14.0", None)
    f = read_paste("Model loading took 14.2800 GiB memory and 31.2 seconds")
    assert f.get("weights_gib") == 14.28 and f.extra["version_hint"] == ("0.11.1", "0.13.0")
    # a Ray worker's line quoted without its tail (" and 3.1 seconds") still gives the weights; words
    # running on after the unit are not that line
    cut = "(EngineCore_0 pid=1257) (RayWorkerWrapper pid=1384) INFO 09-03 04:41:48 [gpu_model_runner.py:2007] "
    assert read_paste(cut + "Model loading took 7.1217 GiB\n").get("weights_gib") == 7.1217
    assert read_paste("Model loading took 7.1217 GiB longer than I hoped").get("weights_gib") is None


def test_graph_and_chunked_lines():
    f = read_paste("INFO [model_runner.py:729] Graph capturing finished in 15 secs, took 2.04 GiB\n"
                   "INFO [scheduler.py:1] Chunked prefill is enabled with max_num_batched_tokens=2048.")
    assert f.get("cuda_graph_gib") == 2.04
    assert f.get("max_num_batched_tokens") == 2048


def test_torch_oom_details():
    f = read_paste(OOM_LOAD)
    oom = f.extra["torch_oom"]
    assert oom["tried_to_allocate_gib"] == round(896 / 1024, 4)        # 896.00 MiB = 0.875 GiB
    assert oom["total_capacity_gib"] == 79.14
    assert oom["free_gib"] == round(512.31 / 1024, 4)
    assert oom["this_process_in_use_gib"] == 78.62
    assert oom["allocated_by_pytorch_gib"] == 78.11
    assert f.get("total_gpu_memory_gib") == 79.14
    assert read_paste(OOM_PROFILE).extra["torch_oom"]["process_in_use_gib"] == [63.07]


def test_torch_oom_private_pools_means_graphs_existed():
    text = ("(VllmWorker rank=1 pid=2978) ERROR 03-19 07:27:53 [multiproc_executor.py:375] torch.OutOfMemoryError: CUDA out of "
            "memory. Tried to allocate 1.74 GiB. GPU 1 has a total capacity of 23.57 GiB of which 605.88 MiB is free. Process "
            "133288 has 22.97 GiB memory in use. Of the allocated memory 20.21 GiB is allocated by PyTorch, with 128.00 MiB "
            "allocated in private pools (e.g., CUDA Graphs), and 185.98 MiB is reserved by PyTorch but unallocated.")
    f = read_paste(text)
    assert f.error_kind == "cuda_oom_graph"
    assert f.extra["torch_oom"]["private_pools_gib"] == 0.125
    assert f.get("total_gpu_memory_gib") == 23.57


def test_rocm_torchs_hip_oom_is_the_same_message():
    """PyTorch built for ROCm prints its allocator's OOM with "HIP" for "CUDA" (a KlimtechRAG traceback:
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 978.00 MiB. GPU 0 has a total capacity of
    15.98 GiB of which 630.00 MiB is free. …"): the card's total and the OOM's figures are read alike."""
    text = ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 978.00 MiB. GPU 0 has a total capacity of "
            "15.98 GiB of which 630.00 MiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes "
            "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
    f = read_paste("vllm serve Qwen/Qwen2.5-7B-Instruct\n" + text)
    assert f.extra["torch_oom"]["total_capacity_gib"] == 15.98
    assert f.extra["torch_oom"]["tried_to_allocate_gib"] == round(978 / 1024, 4)
    assert f.get("total_gpu_memory_gib") == 15.98
    assert f.error_kind == "cuda_oom_load"


def test_a_traceback_cut_to_initialize_kv_caches_is_placed_by_the_kv_lines_before_it():
    """The engine's `_initialize_kv_caches` runs the profile run, then sizes the cache, then captures graphs; a
    traceback the paste cuts to that frame (a Colab T4 log, vLLM 0.19.1: Inductor's autotuning OOM under it) is
    the profile run where no line sized the KV cache before it, and graph capture where one did."""
    head = ("(EngineCore pid=42887) INFO 04-26 12:04:51 [gpu_model_runner.py:4820] Model loading took 14.25 GiB memory "
            "and 53.543025 seconds\n[...]\n")
    tail = ("(EngineCore pid=42887) ERROR 04-26 12:05:05 [core.py:1108]     kv_cache_config = self._initialize_kv_caches("
            "vllm_config)\n[...]\n(EngineCore pid=42887) ERROR 04-26 12:05:05 [core.py:1108] torch._inductor.exc."
            "InductorError: RuntimeError: Failed to run autotuning code block: CUDA out of memory. Tried to allocate "
            "1.02 GiB. GPU 0 has a total capacity of 14.56 GiB of which 111.81 MiB is free.\n")
    assert read_paste(head + tail).error_kind == "cuda_oom_profile"
    sized = "(EngineCore pid=42887) INFO 04-26 12:05:01 [gpu_worker.py:436] Available KV cache memory: 0.6 GiB\n"
    assert read_paste(head + sized + tail).error_kind == "cuda_oom_graph"


def test_old_torch_oom_format():
    text = ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity; 21.03 GiB "
            "already allocated; 1.12 GiB free; 21.40 GiB reserved in total by PyTorch) vllm")
    f = read_paste(text)
    assert f.extra["torch_oom"]["total_capacity_gib"] == 23.69
    assert f.error_kind == "cuda_oom_load"


def test_vllms_warning_that_oom_may_happen_is_no_oom():
    # an MI300X start-up (AUGMXNT/MI300-testing, 0.6.4): arg_utils.py's long-context warning, then the
    # blocks vLLM sized — a healthy start-up, not an OOM in the profile run
    text = ("WARNING 10-29 03:09:06 arg_utils.py:963] The model has a long context length (131072). This may cause "
            "OOM errors during the initial memory profiling phase, or result in low performance due to small KV "
            "cache space. Consider setting --max-model-len to a smaller value.\n"
            "INFO 10-29 03:09:31 gpu_executor.py:113] # GPU blocks: 80942, # CPU blocks: 2048\n")
    assert read_paste(text).error_kind == "startup_log_ok"
    assert read_paste("I got OOM errors during the profile run of vllm").error_kind == "cuda_oom_profile"


def test_tp_and_bf16_details():
    f = read_paste(TP_DIV)
    assert f.get("tensor_parallel_size") == 3 and f.extra["num_heads"] == 40.0
    f = read_paste(BF16)
    assert f.get("gpu") == "Tesla T4" and f.extra["compute_capability"] == 7.5


def test_mamba_numbers():
    f = read_paste(MAMBA)
    assert f.get("max_num_seqs") == 1024 and f.get("gpu_blocks") == 939


# --- per-rank values -------------------------------------------------------------------------

def test_per_rank_v1_workers_kept():
    text = """(Worker_TP1 pid=96) INFO 06-26 22:47:13 [gpu_worker.py:466] Available KV cache memory: 10.71 GiB
(Worker_TP0 pid=95) INFO 06-26 22:47:13 [gpu_worker.py:466] Available KV cache memory: 10.85 GiB
(EngineCore pid=85) INFO 06-26 22:47:13 [kv_cache_utils.py:1733] GPU KV cache size: 612,157 tokens"""
    f = read_paste(text)
    assert f.get("kv_available_gib") == 10.85           # rank 0 is "the" value
    assert f.extra["per_rank"]["kv_available_gib"] == [10.85, 10.71]
    assert f.get("kv_tokens_capacity") == 612157


def test_per_rank_v0_driver_unprefixed():
    text = """(VllmWorkerProcess pid=126555) INFO 04-15 00:05:58 [worker.py:267] model weights take 34.43GiB; non_torch_memory takes 0.34GiB; PyTorch activation peak memory takes 2.51GiB; the rest of the memory reserved for KV Cache is 0.13GiB.
INFO 04-15 00:05:58 [worker.py:267] model weights take 34.43GiB; non_torch_memory takes 0.43GiB; PyTorch activation peak memory takes 2.51GiB; the rest of the memory reserved for KV Cache is 0.04GiB.
(VllmWorkerProcess pid=126553) INFO 04-15 00:05:58 [worker.py:267] model weights take 34.43GiB; non_torch_memory takes 0.38GiB; PyTorch activation peak memory takes 2.51GiB; the rest of the memory reserved for KV Cache is 0.09GiB."""
    f = read_paste(text)
    assert f.get("kv_cache_gib") == 0.04 and f.get("non_torch_gib") == 0.43     # driver = rank 0
    assert f.extra["per_rank"]["kv_cache_gib"] == [0.04, 0.13, 0.09]


# --- text as people paste it -----------------------------------------------------------------

def test_slack_entities_and_links():
    text = ("&gt; ValueError: The model&#39;s max seq len (32768) is larger than the maximum number of tokens that can be "
            "stored in KV cache (7344). Try increasing\nrunning <https://huggingface.co/Qwen/Qwen3-8B|Qwen/Qwen3-8B> on an "
            "<https://www.nvidia.com/l4|L4>")
    f = read_paste(text)
    assert f.get("error_max_tokens_in_kv") == 7344 and f.get("max_model_len") == 32768
    assert f.get("model") == "Qwen/Qwen3-8B" and f.get("gpu") == "L4"
    assert at(text, f, "error_max_tokens_in_kv") == "7344"


def test_discourse_cooked_html():
    text = ("<p>I get this:</p>\n<pre><code class=\"lang-auto\">INFO 04-07 09:54:39 [kv_cache_utils.py:578] GPU KV cache "
            "size: 35,392 tokens\nINFO 04-07 09:54:39 [kv_cache_utils.py:581] Maximum concurrency for 4,096 tokens per "
            "request: 8.64x\n</code></pre>\n<p>on a <strong>RTX 4090</strong></p>")
    f = read_paste(text)
    assert f.get("kv_tokens_capacity") == 35392 and f.get("max_model_len") == 4096 and f.get("max_concurrency") == 8.64
    assert f.get("gpu") == "RTX 4090"
    assert at(text, f, "kv_tokens_capacity") == "35,392"


def test_ansi_codes_and_similar_messages():
    text = ("\x1b[1;36m(Worker_TP0 pid=9)\x1b[0;0m INFO 05-01 10:00:00 [gpu_worker.py:276] Available KV cache memory: "
            "\x1b[1m5.63 GiB\x1b[0m\n[... 3 similar messages ...]\n")
    f = read_paste(text)
    assert f.get("kv_available_gib") == 5.63
    assert at(text, f, "kv_available_gib") == "5.63"


def test_non_english_around_the_log():
    text = ("我使用vllm启动模型，但是总是提示显存不足，我用的是2张24G显存的RTX 3090\n启动指令：\n"
            "vllm serve Qwen2.5-32B-Instruct-INT8-W8A16 --tensor-parallel-size 2 --gpu-memory-utilization 0.9 "
            "--max-model-len 4096 --enforce-eager\n报错内容：\nERROR 04-27 11:08:32 [core.py:340] ValueError: No available "
            "memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
    f = read_paste(text)
    assert f.error_kind == "no_cache_blocks"
    assert (f.get("tensor_parallel_size"), f.get("gpu_memory_utilization"), f.get("max_model_len"),
            f.get("enforce_eager")) == (2, 0.9, 4096, True)
    assert f.get("gpu") == "RTX 3090" and f.get("gpu_count") == 2       # "2张…RTX 3090": two cards
    assert f.get("model") == "Qwen/Qwen2.5-32B-Instruct-INT8-W8A16" and f.values["model"].guess


def test_bytes_and_bad_utf8():
    f = read_paste(b"\xff\xfe\x00garbage \x80\x81 ValueError: No available memory for the cache blocks. vllm")
    assert isinstance(f, Facts)
    f = read_paste(b"# GPU blocks: 4612, # CPU blocks: 1365")
    assert f.get("gpu_blocks") == 4612


# --- settings, model, GPU, version in prose ------------------------------------------------

def test_model_guessed_from_local_path():
    f = read_paste("vllm serve /models/Qwen2.5-7B-Instruct-AWQ --max-model-len 8192")
    assert f.get("model") == "Qwen/Qwen2.5-7B-Instruct-AWQ"
    assert f.values["model"].guess is True
    assert f.get("quantization") == "awq" and f.values["quantization"].guess is True
    assert f.extra["model_path"] == "/models/Qwen2.5-7B-Instruct-AWQ"
    # an unknown family is not guessed
    f = read_paste("vllm serve /data/my-finetune-v3 --max-model-len 8192")
    assert f.get("model") is None and f.extra["model_path"] == "/data/my-finetune-v3"


@pytest.mark.parametrize("path", ["$BGFS_ROOT/models/MiniMax-M2.7", '"$BGFS_ROOT/models/MiniMax-M2.7"',
                                  "${MODELS}/MiniMax-M2.7"])
def test_a_path_that_starts_at_a_shell_variable_is_the_commands_model(path):
    """A launch script's `vllm serve "$BGFS_ROOT/models/MiniMax-M2.7" --tensor-parallel-size 4 …`: the path
    is the model (its leaf names the catalog's MiniMax-M2.7), and the line is the user's command, which the
    fixes are written into. A bare variable (`vllm serve $MODEL`) names no model."""
    from estimator.flags import user_command

    text = f"vllm serve {path} --tensor-parallel-size 4 --max-model-len 131072\n"
    f = read_paste(text)
    assert f.get("model") == "MiniMaxAI/MiniMax-M2.7" and f.values["model"].guess is True
    assert f.extra["model_path"] == path.strip('"')
    assert f.get("tensor_parallel_size") == 4
    assert user_command(text)[:3] == ["vllm", "serve", path.strip('"')]
    assert read_paste("vllm serve $MODEL --tensor-parallel-size 4\n").get("model") is None


def test_model_repo_in_command_is_not_a_guess():
    f = read_paste("python -m vllm.entrypoints.openai.api_server --model TheBloke/CodeLlama-13B-Instruct-fp16 -tp 2")
    assert f.get("model") == "TheBloke/CodeLlama-13B-Instruct-fp16" and not f.values["model"].guess
    assert f.get("tensor_parallel_size") == 2

def test_the_path_vllm_loads_is_the_model_path_and_modelscope_names_are_read():
    # a LLaMA-Factory run (the script's own argument names the path, vLLM's log line too); ModelScope's
    # cache writes "Qwen2.5" as "Qwen2___5"
    text = ("CUDA_VISIBLE_DEVICES=4,5,6,7 python -u scripts/vllm_infer.py --model_name_or_path "
            "/data/modelscope/Qwen2___5-VL-7B-Instruct\n"
            "INFO 07-09 12:57:22 [model_runner.py:1110] Starting to load model "
            "/data/modelscope/Qwen2___5-VL-7B-Instruct...\n")
    f = read_paste(text)
    assert f.extra["model_path"] == "/data/modelscope/Qwen2___5-VL-7B-Instruct"
    from estimator import diagnose

    d = diagnose(text + "INFO 07-09 12:57:45 [worker.py:267] the current vLLM instance can use total_gpu_memory "
                 "(79.33GiB) x gpu_memory_utilization (0.90) = 71.39GiB\n", offline=True)
    assert d.estimate is not None and d.estimate["model"]["id"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    # ModelScope's model pages name the repo as the Hub does
    f = read_paste("LLM model : Qwen3.6-35B-A3B-FP8, from <https://www.modelscope.cn/models/Qwen/Qwen3.6-35B-A3B-FP8/summary>")
    assert f.get("model") == "Qwen/Qwen3.6-35B-A3B-FP8" and not f.values["model"].guess


def test_a_speculative_draft_model_is_not_the_served_model():
    # vllm#46462: the drafter is named first, the served model second, the command serves ${MODEL_PATH}
    text = ("DFlash model：Qwen3.6-35B-A3B-Dflash, from <https://modelscope.cn/models/z-lab/Qwen3.6-35B-A3B-DFlash/summary>\n"
            "LLM model : Qwen3.6-35B-A3B-FP8, from <https://www.modelscope.cn/models/Qwen/Qwen3.6-35B-A3B-FP8/summary>\n"
            "vllm serve ${MODEL_PATH} --max-model-len 8192 --speculative-config "
            "'{\"method\": \"dflash\", \"model\": \"/data/xxx/models/Qwen3.6-35B-A3B-Dflash/\", \"num_speculative_tokens\": 6}'\n")
    assert read_paste(text).get("model") == "Qwen/Qwen3.6-35B-A3B-FP8"
    # the draft a speculative config loads, by name, without a drafter's word in it
    text = ("I serve meta-llama/Llama-3.1-70B-Instruct with meta-llama/Llama-3.2-1B-Instruct as draft: "
            "--speculative-config '{\"model\": \"meta-llama/Llama-3.2-1B-Instruct\", \"num_speculative_tokens\": 5}'")
    assert read_paste(text).get("model") == "meta-llama/Llama-3.1-70B-Instruct"
    # RWKV's Eagle is a base model where nothing decodes speculatively; a drafter alone stays the model
    assert read_paste("vllm serve RWKV/v5-Eagle-7B-HF --max-model-len 4096").get("model") == "RWKV/v5-Eagle-7B-HF"
    assert read_paste("vllm serve z-lab/Qwen3.6-35B-A3B-DFlash").get("model") == "z-lab/Qwen3.6-35B-A3B-DFlash"



@pytest.mark.parametrize("text,model", [
    ("Finally got vllm to work with qwen3.5:9b:", "Qwen/Qwen3.5-9B"),        # intel/llm-scaler#339's words
    ("qwen3:30b-a3b runs fine in Ollama, not in vLLM", "Qwen/Qwen3-30B-A3B"),
    ("the Qwen3.5:9B.", "Qwen/Qwen3.5-9B"),
    ("image qwen3.5:latest", None),              # a tag that is no size names no checkpoint
    ("at 12:30 I restarted vllm", None),
])
def test_an_ollama_style_size_tag_is_the_hub_names_size(text, model):
    """Ollama writes a model's size as a tag after a colon; the Hub writes it after a hyphen."""
    got = read_paste(text).get("model")
    assert (got.lower() if got else None) == (model.lower() if model else None)


@pytest.mark.parametrize("text,model", [
    ("I was trying to run Llama-3 70B PPO", "meta-llama/Meta-Llama-3-70B"),   # OpenRLHF#336's words
    ("Qwen2.5 7B on a 3090", "Qwen/Qwen2.5-7B"),
    ("Llama-3.1 8B with vllm", "meta-llama/Llama-3.1-8B"),
    ("I run Llama-3-70B-Instruct", "meta-llama/Meta-Llama-3-70B-Instruct"),  # Llama 3 carries Meta's prefix
    ("phi-4 14B", "microsoft/phi-4"),           # a catalog model of its own keeps its id
    ("Qwen3-30B-A3B 4bit", "Qwen/Qwen3-30B-A3B"),  # a size already in the name takes no other
    ("Qwen3 30B-A3B on one card", "Qwen/Qwen3-30B-A3B"),     # the active size with the total
    # names written as words (vllm#39133's title; vllm#7593's "Gemma 2 9b on 8xL4")
    ("[Bug]: Gemma 4 31B INT4 on 2×24GB GPUs (TP=2)", "google/gemma-4-31B"),
    ("Gemma 2 9b on 8xL4(24gb) says cuda oom", "google/gemma-2-9B"),
    ("Llama 3.1 8B Instruct on a 4090", "meta-llama/Llama-3.1-8B-Instruct"),
    ("Qwen 2.5 7B Instruct", "Qwen/Qwen2.5-7B-Instruct"),     # Qwen glues its version on
    ("Phi 4 14B", "microsoft/phi-4"),                          # the catalog's own id
    ("Mixtral 8x7B Instruct", "mistralai/Mixtral-8x7B-Instruct"),
])
def test_a_model_size_written_apart_completes_the_name(text, model):
    """People write the size apart from the family ("Llama-3 70B"); the Hub joins it with a hyphen."""
    got = read_paste(text).get("model")
    assert got and got.lower() == model.lower()


def test_the_v0_error_without_its_first_word_is_still_read():
    """An issue title that quotes vLLM's V0 error from "model's max seq len" on (OpenRLHF#336)."""
    f = read_paste("(issue title) vLLM related: model's max seq len (8192) is larger than the maximum number of "
                   "tokens that can be stored in KV cache (6048).")
    assert f.error_kind == "kv_capacity_v0"
    assert f.get("error_max_tokens_in_kv") == 6048 and f.get("max_model_len") == 8192


@pytest.mark.parametrize("text,gpu,count", [
    ("I run it on an NVIDIA RTX A6000 (49.1 GB VRAM) with vllm", "NVIDIA RTX A6000", None),
    ("GPUs: 2x 4090 (2x24GB)", "4090", 2),
    ("vllm on one H100 80GB card", "H100 80GB", 1),
    ("launched on 4xH100 GPUs with vLLM", "H100", 4),
    ("two NVIDIA A100 GPUs (80GB each)", "NVIDIA A100", 2),
])
def test_gpu_in_prose(text, gpu, count):
    f = read_paste(text)
    assert f.get("gpu") == gpu
    assert f.get("gpu_count") == count


def test_gpu_memory_said_in_gib_next_to_name():
    f = read_paste("- GPU: 2x H20 (SM90, 95 GiB), TP=2")
    assert (f.get("gpu"), f.get("gpu_count"), f.get("total_gpu_memory_gib"), f.get("tensor_parallel_size")) == \
        ("H20", 2, 95.0, 2)
    # "49.1 GB VRAM" is marketing GB, not what torch reports: not a total_gpu_memory_gib
    assert read_paste("NVIDIA RTX A6000 (49.1 GB VRAM)").get("total_gpu_memory_gib") is None


def test_a_gpu_given_with_its_memory_beats_one_named_in_passing():
    """vllm#53961: "a tier … commented as targeting B200/B300 … so MI300X (191.98 GiB) also falls into
    it": the card given with its memory is the author's, and the size read is that card's. Without a
    size, the first card named still wins."""
    text = ("#51726 added a device_memory >= 160 * GiB_bytes tier, commented as targeting B200/B300. The branch "
            "gates on raw capacity, so MI300X (191.98 GiB) also falls into it.\n")
    f = read_paste(text)
    assert (f.get("gpu"), f.get("total_gpu_memory_gib")) == ("MI300X", 191.98)
    assert read_paste("It targets B200/B300, so MI300X also falls into it.").get("gpu") == "B200"


NVIDIA_SMI = """+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
| N/A   31C    P0             71W /  700W |   66004MiB /  81559MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |
| N/A   30C    P0             70W /  700W |       4MiB /  81559MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|=========================================================================================|
|    0   N/A  N/A     12345      C   python3                                     66000MiB |
+-----------------------------------------------------------------------------------------+"""


def test_nvidia_smi_table():
    f = read_paste(NVIDIA_SMI)
    assert f.get("gpu") == "NVIDIA H100 80GB HBM3"
    assert f.extra["gpus"] == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]
    assert f.get("total_gpu_memory_gib") == round(81559 / 1024, 2)      # 79.65: smi MiB, not torch's figure
    assert f.extra["nvidia_smi_memory_mib"][0] == {"gpu": 0, "used": 66004, "total": 81559}
    assert f.extra["gpu_processes"] == [{"gpu": 0, "pid": 12345, "type": "C", "name": "python3", "mib": 66000}]
    assert f.error_kind is None                     # a table alone is no vLLM problem


def test_collect_env():
    text = """PyTorch version: 2.6.0+cu124
Is CUDA available: True
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB
Nvidia driver version: 550.54.15
vLLM Version: 0.8.5.post1
vLLM Build Flags:"""
    f = read_paste(text)
    assert f.get("vllm_version") == "0.8.5.post1"
    assert f.get("gpu") == "NVIDIA A100-SXM4-80GB"
    assert f.get("gpu_count") == 2 and f.values["gpu_count"].guess


@pytest.mark.parametrize("text,version", [
    ("INFO 03-19 07:26:22 [api_server.py:977] vLLM API server version 0.8.0", "0.8.0"),
    ("$ pip install vllm==0.6.3.post1", "0.6.3.post1"),
    ("docker run --gpus all vllm/vllm-openai:v0.9.2 --model x", "0.9.2"),
    ("running vLLM 0.21.0 with CUDA 13.2", "0.21.0"),
    ("vllm version: `v0.10.1.dev101+gbda9d0535`", "0.10.1.dev101+gbda9d0535"),
    ("vllm-0.15.2rc1.dev93+g11a4c9d30.cu128-cp312-cp312-linux_x86_64.whl", "0.15.2rc1.dev93+g11a4c9d30"),
    ("INFO 04-02 10:20:30 llm_engine.py:232] Initializing a V0 LLM engine (v0.7.1) with config: model='x', dtype=torch.bfloat16, max_seq_len=10000, tensor_parallel_size=2", "0.7.1"),
    ("$ vllm --version\n0.9.1", "0.9.1"),
    # a log that cut the engine's config line after its version (Modal's condensed output)
    ("05:18:14 (EngineCore pid=75) Initializing a V1 LLM engine (v0.18.0)\n", "0.18.0"),
])
def test_vllm_version_forms(text, version):
    assert read_paste(text).get("vllm_version") == version


def test_version_not_taken_from_unrelated_numbers():
    f = read_paste("CUDA graph memory profiling is enabled (default since v0.21.0). torch 2.6.0, CUDA 12.4.1")
    assert f.get("vllm_version") is None


def test_config_dump_settings():
    text = ("INFO 04-02 10:20:30 llm_engine.py:232] Initializing a V0 LLM engine (v0.7.1) with config: "
            "model='../models/qwen25_32b_instruct_HF/', speculative_config=None, dtype=torch.bfloat16, max_seq_len=10000, "
            "tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
            "chunked_prefill_enabled=False")
    f = read_paste(text)
    assert (f.get("dtype"), f.get("max_model_len"), f.get("tensor_parallel_size"), f.get("pipeline_parallel_size"),
            f.get("enforce_eager"), f.get("kv_cache_dtype"), f.get("quantization")) == \
        ("bfloat16", 10000, 2, 1, False, "auto", None)
    assert f.extra["engine"] == "v0" and f.extra["enable_chunked_prefill"] is False


def test_nondefault_args_dict():
    text = ("(APIServer pid=1) INFO 06-26 22:44:18 [utils.py:278] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
            "'dtype': 'float16', 'max_model_len': 262144, 'quantization': 'auto_round', 'tensor_parallel_size': 2, "
            "'kv_cache_dtype': 'fp8_e5m2', 'max_num_batched_tokens': 8192, 'max_num_seqs': 2, 'speculative_config': {'method': 'mtp'}}")
    f = read_paste(text)
    assert (f.get("model"), f.get("dtype"), f.get("max_model_len"), f.get("quantization"), f.get("tensor_parallel_size"),
            f.get("kv_cache_dtype"), f.get("max_num_batched_tokens"), f.get("max_num_seqs")) == \
        ("Qwen/Qwen3-8B", "float16", 262144, "auto_round", 2, "fp8_e5m2", 8192, 2)
    # The nested dict is kept as its text; the speculative method is read from it.
    assert f.extra["non_default_args"]["speculative_config"] == "{'method': 'mtp'}"
    assert f.extra["speculative_config"] == "{'method': 'mtp'}"


def test_two_runs_focus_on_the_failing_one():
    # two instances on one GPU: the failing second command's settings are the facts
    text = """python3 -m vllm.entrypoints.openai.api_server --model /models/Qwen2.5-72B-Instruct-GPTQ-Int4 --gpu-memory-utilization 0.75
python3 -m vllm.entrypoints.openai.api_server --model /models/Qwen2.5-14B-Instruct-GPTQ-Int4 --gpu-memory-utilization 0.20
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."""
    f = read_paste(text)
    assert f.get("gpu_memory_utilization") == 0.20
    assert f.get("model") == "Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4"


def test_a_flag_missing_from_the_failing_command_is_vllms_default():
    # recipes#12: two attempts, each followed by its error; the first (no utilization flag, so 0.9)
    # is the focal run. Its KV figure must not be paired with the second attempt's 0.95.
    cmd = ("vllm serve /tmp/model/Qwen3-Coder-480B-A35B-Instruct-FP8 -dp=8  --enable-expert-parallel "
           "--tool-call-parser qwen3_coder")
    err = ("ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache "
           "is needed, which is larger than the available KV cache memory ({kv} GiB). Based on the available "
           "memory, the estimated maximum model length is {n}. Try increasing `gpu_memory_utilization` or "
           "decreasing `max_model_len` when initializing the engine.")
    text = (f"```\n# {cmd}\n\n{err.format(kv='48.66', n=205728)}\n```\n\n"
            f"```\n# {cmd} --gpu-memory-utilization 0.95\n\n{err.format(kv='55.65', n=235296)}\n```")
    f = read_paste(text)
    assert f.get("kv_available_gib") == 48.66
    assert f.get("gpu_memory_utilization") is None          # the first command's (vLLM's default)
    assert f.extra["data_parallel_size"] == 8                # `-dp=8`: argparse's short form with `=`
    assert f.extra["enable_expert_parallel"] is True


def test_a_command_echoed_without_flags_does_not_hide_the_real_ones():
    # The log echoes `vllm serve MODEL` after the docker command: that is not a second attempt
    # (no error of its own before it), so the docker command's flag still applies.
    text = ("docker run --gpus all vllm/vllm-openai:latest --model Qwen/Qwen2.5-7B-Instruct "
            "--gpu-memory-utilization 0.8\n"
            "(APIServer pid=1) INFO 01-01 [utils.py:1] vllm serve Qwen/Qwen2.5-7B-Instruct\n"
            "ValueError: To serve at least one request with the models's max seq len (32768), (1.75 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (1.2 GiB). Based on the available memory, "
            "the estimated maximum model length is 22000. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine.")
    assert read_paste(text).get("gpu_memory_utilization") == 0.8


def test_vllms_own_kv_cache_memory_proposal_is_not_a_setting():
    # vllm PR48601's log proposes a value; the user did not pass it.
    text = ("INFO [gpu_worker.py:855] Free memory on device (77.57/79.11 GiB) on startup. Desired GPU memory "
            "utilization is (0.92, 72.78 GiB). Actual usage is 7.39 GiB for weight, 1.54 GiB for peak activation, "
            "0.6 GiB for non-torch memory, and 2.04 GiB for CUDAGraph memory. Replace gpu_memory_utilization config "
            "with `--kv-cache-memory=65565989131` (61.06 GiB) to fit into requested memory, or "
            "`--kv-cache-memory=70712017408` (65.86 GiB) to fully utilize gpu memory. Current kv cache memory in "
            "use is 63.25 GiB.")
    assert "kv_cache_memory_bytes" not in read_paste(text).extra


@pytest.mark.parametrize("text, method, k", [
    ("""vllm serve Qwen/Qwen3.6-27B --speculative-config '{"method": "mtp", "num_speculative_tokens": 2}'""", "mtp", 2),
    ("INFO 09-01 llm_engine.py:232] Initializing a V1 LLM engine (v0.11.0) with config: model='deepseek-ai/DeepSeek-V3', "
     "speculative_config=SpeculativeConfig(method='deepseek_mtp', model='deepseek-ai/DeepSeek-V3', num_spec_tokens=1), "
     "tokenizer_mode=auto, enforce_eager=False, kv_cache_dtype=auto", "deepseek_mtp", 1),
    ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-70B --speculative-model [ngram] "
     "--num-speculative-tokens 5", "ngram", 5),
    # a draft model named like an EAGLE head runs as one (vllm/config/speculative.py)
    ("""vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{"model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", """
     """"num_speculative_tokens": 3}'""", "eagle", 3),
    # and one named like a DFlash drafter as DFlash (from 0.20; the Laguna log's engine line says
    # SpeculativeConfig(method='dflash', …) for this command), DSpark likewise (0.25)
    ("""vllm serve poolside/Laguna-S-2.1-INT4 --speculative-config '{"model": "poolside/Laguna-S-2.1-DFlash-INT4", """
     """"num_speculative_tokens": 15}'""", "dflash", 15),
    ("""vllm serve Qwen/Qwen3-8B --speculative-config '{"model": "deepseek-ai/dspark_qwen3_8b_block7", """
     """"num_speculative_tokens": 7}'""", "dspark", 7),
])
def test_speculative_decoding_settings(text, method, k):
    from estimator.flags import read_speculative

    f = read_paste(text)
    got = read_speculative(f.extra.get("speculative_config") or f.extra.get("speculative_model"))
    assert got[0] == method
    assert (got[1] or f.extra.get("num_speculative_tokens")) == k


def test_conflicting_values_are_not_guessed_between():
    text = "- vLLM 0.2.3: `# GPU blocks: 1464, # CPU blocks: 1310`\n- vLLM 0.2.5: `# GPU blocks: 112, # CPU blocks: 1310`"
    f = read_paste(text)
    assert f.get("gpu_blocks") is None and f.extra["alternatives"]["gpu_blocks"] == [1464, 112]
    assert f.get("vllm_version") is None


def test_suggested_flags_are_not_settings():
    text = ("ValueError: To serve at least one request with the model's max seq len (196608), (23.25 GiB KV cache is needed, "
            "which is larger than the available KV cache memory (22.5 GiB).\n"
            "--gpu-memory-utilization 0.85 fixes it.")
    assert read_paste(text).get("gpu_memory_utilization") is None


def test_fact_type():
    f = read_paste(V0_CAPACITY)
    fact = f.values["error_max_tokens_in_kv"]
    assert isinstance(fact, Fact) and fact.source == "v0_capacity_error" and fact.guess is False
    assert at(V0_CAPACITY, f, "error_max_tokens_in_kv") == "81536"
    assert f.get("weights_gib") == 13.9476


def test_version_hint_is_inclusive():
    # '# GPU blocks: N, # CPU blocks: M' is V0 ≤0.6.6
    assert read_paste("# GPU blocks: 4612, # CPU blocks: 1365").extra["version_hint"] == ("0.1.0", "0.6.6")


@pytest.mark.parametrize("text,kept", [
    ("A second vLLM instance costs ~1.0 GiB beyond weights + KV.", False),   # the cost beside the weights
    ("I think weights plus KV should be ~30 GB.", False),                    # a sum, not the weights
    ("I expect the weights after quantization ~ 8 GB.", True),               # still the weights
    ("~16GB for the weights, I assume.", True),
    ("I think the weights take about 20 GB VRAM.", True),                     # what they take of the VRAM
    ("I thought the weights would fit a 24GB GPU.", False),                  # the card's size
])
def test_a_figure_for_something_beside_the_weights_is_no_weights_claim(text, kept):
    claims = read_paste(text).extra.get("claims") or []
    assert any(c["about"] == "weights" for c in claims) is kept, claims


def test_a_card_size_after_the_weights_is_not_their_size():
    """"about 110 GiB of weights on a 95 GiB card": the claim is 110 GiB (the card's 95 is its size)."""
    claims = read_paste("Then we tried 2 GPUs, which puts about 110 GiB of weights on a 95 GiB card.").extra["claims"]
    assert [(c["about"], c["gb"]) for c in claims] == [("weights", 110.0)]


@pytest.mark.parametrize("text,model", [
    # a chat template beside the model in vLLM's non-default args
    ("INFO [api_utils.py:273] non-default args: {'model_tag': '/opt/models/gemma-4-31B-it', 'chat_template': "
     "'examples/tool_chat_template_gemma4.jinja', 'max_model_len': 262144}", "google/gemma-4-31B-it"),
    # vLLM V0's hint for LLaMA V1 tokenizers names a tokenizer-only repo
    ("INFO 09-15 12:33:59 llm_engine.py:72] Initializing an LLM engine with config: model='/data/llama2-70b', "
     "tokenizer='/data/llama2-70b', tensor_parallel_size=8\n"
     "INFO 09-15 12:33:59 tokenizer.py:30] For some LLaMA V1 models, initializing the fast tokenizer may take a long "
     "time. To reduce the initialization time, consider using 'hf-internal-testing/llama-tokenizer' instead of the "
     "original tokenizer.", "llama2-70b"),
])
def test_a_chat_template_or_a_tokenizer_repo_is_no_model(text, model):
    # the model is a local directory, read by its name (the org from the family); the template and the
    # tokenizer repo are not it
    assert (read_paste(text).get("model") or "").endswith(model)


def test_a_claim_is_quoted_to_its_sentence_end_not_to_a_decimal_point():
    text = ("As I can find in the log, the model weights only take 13.9476 GB, non_torch_memory takes 0.25GiB; "
            "activation 0.19GiB. Why is the KV cache only 8.69GiB?")
    claims = read_paste(text).extra["claims"]
    weights = next(c for c in claims if c["about"] == "weights")
    assert weights["text"].endswith("non_torch_memory takes 0.25GiB; activation 0.19GiB")
    assert weights["text"].startswith("As I can find")


@pytest.mark.parametrize("text,gpu,count", [
    ("Gemma 4 31B INT4 on 2×24GB GPUs (TP=2): GPU KV cache size is 25,200 tokens", "24GB", 2),
    ("running on a 48GB GPU", "48GB", None),
    ("I have 4x 80GB GPUs", "80GB", 4),
    ("RTX 4090 24GB GPU", "RTX 4090 24GB", None),       # a named card wins over its size (kept with it, as before the name)
    ("my 24GB GPU is an RTX 3090", "RTX 3090", None),
])
def test_a_gpu_given_only_by_its_size(text, gpu, count):
    f = read_paste(text)
    assert f.get("gpu") == gpu and f.get("gpu_count") == count


COMPOSE_V0 = """[Bug]: Unable to run Qwen2.5-0.5B-Instruct model in v0.6.4.post1 version, Error: No available memory for the cache blocks
vllm-1  | ERROR 11-18 18:07:28 engine.py:366]   File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker.py", line 493, in raise_if_cache_size_invalid
vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def test_a_compose_prefixed_v0_traceback_and_a_named_version():
    f = read_paste(COMPOSE_V0)
    assert f.error_kind == "no_cache_blocks" and f.get("vllm_version") == "0.6.4.post1"
    # the same said without the "v"
    assert read_paste("Unable to run Qwen2.5 model in 0.6.4.post1 version, error below\n").get("vllm_version") == "0.6.4.post1"
    assert f.extra.get("engine") == "v0"                      # vllm/worker/worker.py is V0's worker
    # the "INFO 11-18 18:07:28 file.py:N]" prefix
    assert read_paste(unlined(COMPOSE_V0)).extra.get("version_hint") == ("0.1.0", "0.7.3")
    # and its line: multiprocessing/engine.py logs `logger.exception(e)` at 366 in 0.6.4–0.6.6 (the title's 0.6.4)
    assert f.extra.get("version_hint") == ("0.6.4", "0.6.6")


def test_the_failing_tracebacks_engine_outranks_another_commands_env():
    text = ("success: VLLM_USE_V1=0 python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B\n"
            "error case: python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B\n"
            'ERROR 04-30 10:20:36 [core.py:396]   File "/x/site-packages/vllm/v1/engine/core.py", line 387, in run_engine_core\n'
            "ERROR 04-30 10:20:36 [core.py:396] ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.\n")
    assert read_paste(text).extra.get("engine") == "v1"


@pytest.mark.parametrize("line", ['os.environ["VLLM_USE_V1"] = "0"', "os.environ['VLLM_USE_V1']='0'",
                                  'llm = LLM(model="x", env={"VLLM_USE_V1": "0"})'])
def test_an_environment_setting_in_python_is_read(line):
    # the quoted key of Python's os.environ or an env dict is the same setting as VLLM_USE_V1=0
    facts = read_paste(line)
    assert facts.extra.get("env") == {"VLLM_USE_V1": "0"} and facts.extra.get("engine") == "v0"


# A terminal 120 columns wide cut these lines mid-word (intel-arc-pro-b70-inference-cookbook#4).
WRAPPED = """```
(EngineCore pid=316)   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py", line 758, in _chec
k_enough_kv_cache_memory
(EngineCore pid=316)     raise ValueError(
(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach
e is needed, which is larger than the available KV cache memory (4.25 GiB). Based on the avai
"""


def test_lines_a_terminal_wrapped_mid_word_are_joined():
    lines = WRAPPED.split("\n")
    assert len(lines[1]) == len(lines[4]) == 119           # the terminal's width, twice, cut inside a word
    f = read_paste(WRAPPED)
    assert f.error_kind == "kv_capacity_v1" and f.get("max_model_len") == 100000
    assert f.get("kv_needed_gib") == 4.26 and f.get("kv_available_gib") == 4.25
    from estimator.paste_text import prepare

    assert "KV cache is needed" in prepare(WRAPPED).logical
    # lines cut at different lengths are prose: their line breaks stay
    prose = ("the weights take about 14 GB of the card and the whole\nrest goes to the KV cache, or so I thought at first\n"
             "and then it failed with an error about the maximum seq len\nwhich I did not understand at all")
    assert prepare(prose).logical == prose


def test_a_v1_error_cut_before_its_estimate_still_gives_a_length():
    from estimator.diagnosis import diagnose

    d = diagnose(WRAPPED, offline=True, explain=True)
    assert "needs **4.26 GiB** of KV cache but vLLM has **4.25 GiB**" in d.summary
    # 100,000 × 4.25 / 4.26 = 99,765 → the round length 99,328 (a multiple of 1,024)
    assert d.unchecked[0]["flags"] == "--max-model-len 99328"


@pytest.mark.parametrize("text,gpu,count", [
    ("报这个错是什么原因，用的是32GB显存V100", "V100 32GB", None),   # a size before the name, "显存" (VRAM) between
    ("两张4090跑不起来", "4090", 2),                               # CJK right after the number; "two cards"
    ("8卡A800", "A800", 8),
    ("双卡3090", "3090", 2),
    ("on an 80GB H100", "H100 80GB", None),
    ("on 4x80GB A100 nodes", "A100 80GB", 4),                     # a count and a size: the 'x' is no letter
    ("a modded 48GB 4090", "4090 48GB", None),                     # bigger than the catalog's card: modded
    ("I loaded a 14GB 4090", "4090", None),                        # below any 4090: the model's size, not the card's
    ("weights take 16 GB A100", "A100", None),
])
def test_gpus_in_chinese_posts_and_sizes_before_the_name(text, gpu, count):
    f = read_paste(text)
    assert f.get("gpu") == gpu and f.get("gpu_count") == count


@pytest.mark.parametrize("text,gpu,count,gib", [
    # vllm#35854's title: modded 22 GB cards; the 11 GB card's 10.76 GiB + 11 GiB of chips = 21.76
    ("[Bug]: 4 * 2080ti 22G Qwen3.5-35B-A3B Fail", "2080ti 22GB", 4, 21.76),
    ("4张2080ti 22G显存", "2080ti 22GB", 4, 21.76),                     # 显存: the card's memory
    ("Running on 2x RTX 4090 48GB", "RTX 4090 48GB", 2, 47.64),        # 23.64 + 24
    ("RTX 4090 48G x2", "RTX 4090 48GB", 2, 47.64),                    # the count after the size
    ("RTX 3090 24GB VRAM", "RTX 3090 24GB", None, 23.69),              # the card's own size: the catalog's card
    ("RTX 3090 64GB RAM", "RTX 3090", None, 23.69),                    # the host's memory, not the card's
    ("4090 128G内存", "4090", None, 23.64),                            # 内存: system memory (显存 is the card's)
    ("RTX 4090 14GB model", "RTX 4090", None, 23.64),                  # below any 4090: not the card's size
])
def test_a_card_size_written_after_the_name(text, gpu, count, gib):
    from estimator.gpus import lookup_gpu

    f = read_paste(text)
    assert (f.get("gpu"), f.get("gpu_count")) == (gpu, count)
    assert round(lookup_gpu(f.get("gpu")).total_bytes / 2**30, 2) == gib


@pytest.mark.parametrize("flag", ["-dp 4", "--data-parallel-size 4", "--data_parallel_size=16", "data_parallel_size: 16"])
def test_worker_ranks_under_data_parallelism_are_not_a_tensor_split(flag):
    """Four `VllmWorker rank=N` lines are a 4-way tensor split only when no data-parallel size owns
    the ranks: the flag, in any spelling vLLM accepts, must be read before the ranks are counted."""
    lines = "".join(f"(VllmWorker rank={r} pid=1{r}) INFO 01-01 00:00:00 [gpu_model_runner.py:1] Model loading took "
                    "15.27 GiB\n" for r in range(4))
    f = read_paste(f"vllm serve Qwen/Qwen3-8B {flag}\n" + lines)
    assert f.get("tensor_parallel_size") is None and f.extra["data_parallel_size"] > 1
    assert read_paste("vllm serve Qwen/Qwen3-8B\n" + lines).get("tensor_parallel_size") == 4


def test_a_later_attempts_flags_do_not_describe_the_run_that_printed_the_numbers():
    """vllm PR10511: a TP 1 run prints its whole memory split, then `vllm serve … -tp 2` prints a
    truncated one. The numbers are the first run's, so its settings are too: no TP 2 from the
    second command (the weights, 14.96 GiB, are the whole Llama-3-8B)."""
    text = ("$ vllm serve meta-llama/Meta-Llama-3-8B\n"
            "INFO 12-13 19:54:18 worker.py:243] Memory profiling results:\n"
            "INFO 12-13 19:54:18 worker.py:243] total_gpu_memory     79.22GiB\n"
            "INFO 12-13 19:54:18 worker.py:243] model weights take   14.96GiB\n"
            "INFO 12-13 19:54:18 worker.py:243] available_kv_cache_memory    53.29GiB\n\n"
            "$ vllm serve meta-llama/Meta-Llama-3-8B -tp 2\n"
            "INFO 12-13 19:55:25 worker.py:243] Memory profiling results:\n"
            "INFO 12-13 19:55:25 worker.py:243] model weights take   7.48GiB\n")
    f = read_paste(text)
    assert (f.get("weights_gib"), f.get("kv_cache_gib")) == (14.96, 53.29)
    assert f.get("tensor_parallel_size") is None


def test_a_concurrency_line_a_user_joined_to_another_figure_is_read():
    """A forum bullet retelling two log lines on one ("==> Available KV cache memory: 4.53 GiB, Maximum
    concurrency for 262,144 tokens per request: 0.56x"): the concurrency and its length are read. Only
    0.28+'s own merged line ("GPU KV cache size: N tokens, Maximum concurrency …") is left to the
    template that reads both of its figures."""
    f = read_paste("  • max-num-batched-tokens=80K ==> Available KV cache memory: 4.53 GiB, Maximum concurrency "
                   "for 262,144 tokens per request: 0.56x (nvidia-smi shows 14628MiB / 24576MiB)\n")
    assert f.get("max_concurrency") == 0.56 and f.get("max_model_len") == 262_144
    assert f.get("kv_available_gib") == 4.53
    merged = read_paste("INFO 08-20 10:01:00 [kv_cache_utils.py:1733] GPU KV cache size: 314,187 tokens, Maximum "
                        "concurrency for 8,192 tokens per request: 38.35x\n")
    assert merged.values["max_concurrency"].source == "kv_cache_size_merged"
    assert merged.get("kv_tokens_capacity") == 314_187


def test_capacity_and_concurrency_that_disagree_date_the_paste_before_0_21():
    """From 0.21 "GPU KV cache size" is int(concurrency × max_model_len), so the two agree; a hybrid
    model's older figure (blocks ÷ groups × block size) need not: vllm#28228 printed 75,840 tokens
    beside 2.48× at 120,000 (0.63×) — before 0.21, whatever the newest format allows."""
    lines = ("(EngineCore_DP0 pid=26283) INFO 11-06 10:51:48 [kv_cache_utils.py:1229] GPU KV cache size: {n} tokens\n"
             "(EngineCore_DP0 pid=26283) INFO 11-06 10:51:48 [kv_cache_utils.py:1234] Maximum concurrency for "
             "120,000 tokens per request: {c}x\n")
    from estimator.vllm import parse_version

    hybrid = read_paste(unlined(lines.format(n="75,840", c="2.48"))).extra.get("version_hint")
    assert hybrid is not None and hybrid[1] is not None and parse_version(hybrid[1]) < (0, 21, 0)
    agree = read_paste(unlined(lines.format(n="297,600", c="2.48"))).extra.get("version_hint")
    assert agree is None or agree[1] is None or parse_version(agree[1]) >= (0, 21, 0)
    # the lines themselves (kv_cache_utils.py 1229 and 1234) are 0.11.1–0.11.2's, whatever the figures
    assert read_paste(lines.format(n="297,600", c="2.48")).extra.get("version_hint") == ("0.11.1", "0.11.2")
    # int() truncation at a short context: 6,429 / 64 = 100.45 beside 100.46× is 0.21+'s own rounding
    short = ("INFO [kv_cache_utils.py:1229] GPU KV cache size: 6,429 tokens\n"
             "INFO [kv_cache_utils.py:1234] Maximum concurrency for 64 tokens per request: 100.46x\n")
    hint = read_paste(unlined(short)).extra.get("version_hint")
    assert hint is None or hint[1] is None or parse_version(hint[1]) >= (0, 21, 0)


def test_a_triton_model_json_names_the_model_and_a_cut_blocks_line_still_counts():
    """triton-inference-server#7562: the vLLM backend's model.json gives `"model": "/models/gemma-2b-it/"`
    (the family names the organisation), and the log line was cut after "# GPU blocks: 260, #"."""
    text = ('model.json config.\n```\n{\n    "model":"/models/gemma-2b-it/",\n    "gpu_memory_utilization": 0.47,\n'
            '    "enforce_eager": true,\n    "max_model_len": 64\n}\n```\n'
            "INFO 08-22 15:08:23 model_runner.py:732] Loading model weights took 4.7384 GB\n"
            "INFO 08-22 15:08:24 gpu_executor.py:102] # GPU blocks: 260, #\n")
    f = read_paste(text)
    assert f.get("model") == "google/gemma-2b-it"
    assert f.get("gpu_blocks") == 260
    # prose is not a JSON key, a placeholder is not a model, and an API request names the served alias
    assert read_paste("my model: the 7B one, gpu_memory_utilization: 0.9").get("model") is None
    assert read_paste('{"model": "${MODEL_ID}", "max_model_len": 64}').get("model") is None
    assert read_paste('{"model": "None", "max_model_len": 64}').get("model") is None
    body = read_paste('curl localhost:8000/v1/chat/completions -d \'{"model": "my-alias", '
                      '"messages": [{"role": "user", "content": "hi"}]}\'')
    assert body.get("model") is None


def test_async_scheduling_is_read_from_the_log_line_and_the_flag():
    """0.26+ logs "Asynchronous scheduling is enabled/disabled." (vllm/config/vllm.py); the flag
    --no-async-scheduling says the same. Either sets how many batches a sliding window holds."""
    log = ("(EngineCore pid=12) INFO 08-01 10:00:00 [vllm.py:1111] Asynchronous scheduling is disabled.\n"
           "ValueError: To serve at least one request with the models's max seq len (131072), (19.5 GiB KV "
           "cache is needed, which is larger than the available KV cache memory (13.57 GiB).")
    assert read_paste(log).extra["async_scheduling"] is False
    assert read_paste(log.replace("disabled", "enabled")).extra["async_scheduling"] is True
    cmd = "vllm serve google/gemma-3-27b-it --no-async-scheduling\n" + log.split("\n", 1)[1]
    assert read_paste(cmd).extra["async_scheduling"] is False
    assert "async_scheduling" not in read_paste(log.split("\n", 1)[1]).extra


def test_mamba_cache_mode_line_is_read():
    """vllm/model_executor/models/config.py MambaModelConfig logs the mode it picked; the estimate sizes
    the Mamba states per request from it (2 for 'align', one per block for 'all')."""
    line = ("WARNING 08-30 10:00:00 [config.py:560] Mamba cache mode is set to 'all' for "
            "NemotronHForCausalLM by default when prefix caching is enabled\n")
    assert read_paste(line).extra["mamba_cache_mode"] == "all"
    assert read_paste(line.replace("'all'", "'align'")).extra["mamba_cache_mode"] == "align"
    assert "mamba_cache_mode" not in read_paste("vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16\n").extra


def test_quantization_is_not_taken_from_a_model_the_run_did_not_serve():
    """A blog comparing runs: `vllm serve Qwen/Qwen3-14B` with "Qwen3-14B-AWQ" elsewhere in the text
    served the 16-bit model (it printed 27.52 GiB of weights); and an engine config dump's
    `quantization=None` means vLLM resolved no quantization, whatever model names a loop lists."""
    served = read_paste("측정 환경: vLLM 0.28.0 · Qwen3-14B / Qwen3-14B-AWQ\n\nvllm serve Qwen/Qwen3-14B --disable-log-stats\n"
                        "Model loading took 27.52 GiB and 6.27 seconds\n")
    assert served.get("model") == "Qwen/Qwen3-14B" and served.get("quantization") is None
    assert read_paste("vllm serve Qwen/Qwen3-14B-AWQ --max-model-len 4096\n").get("quantization") == "awq"
    looped = read_paste("for M in Qwen/Qwen2.5-7B-Instruct \\\n         Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 ; do\n"
                        "  hf download \"$M\"\ndone\n[bf16]        quantization=None\n"
                        "[bf16]        Model loading took 14.2488 GiB\n")
    assert looped.get("quantization") is None


def test_a_weights_line_quoted_without_its_tail_is_read():
    """A setup guide quotes "Model loading took 50.22 GiB memory" (0.11.2+ wording) without the
    "and N seconds" that follows in the log: still vLLM's figure."""
    assert read_paste("Model loading took 50.22 GiB memory\nGPU KV cache size: 262,872 tokens\n").get("weights_gib") == 50.22
    assert read_paste("Model loading took 50.22 GiB memory usage is high\n").get("weights_gib") is None


@pytest.mark.parametrize("workers,rows,cvd,tp", [
    (1, 8, None, 2),       # one worker beside the driver on an 8-GPU host: 2, not every GPU listed
    (3, 8, None, 4),       # a lower bound of 4 is a power of two already
    (4, 8, None, 8),       # vllm#6746: a bound of 5 → the next power of two, 8, which the host has
    (1, 8, "0,1", 2),
    (4, 0, None, None),    # 5 and no GPU list to say 8 fits: not guessed
])
def test_v0_worker_processes_give_a_power_of_two_the_host_can_hold(workers, rows, cvd, tp):
    text = ("" if cvd is None else f"CUDA_VISIBLE_DEVICES={cvd} python -m vllm.entrypoints.openai.api_server --model m\n")
    text += "".join(f"GPU {i}: NVIDIA H100 80GB HBM3\n" for i in range(rows))
    text += "".join(f"(VllmWorkerProcess pid={100 + p}) INFO 07-24 14:07:31 model_runner.py:692] Loading model weights "
                    "took 7.5 GB\n" for p in range(workers))
    assert read_paste(text).get("tensor_parallel_size") == tp


def test_the_api_servers_args_are_not_the_config_dump():
    """0.4–0.8's api_server logs `args: Namespace(… quantization=None …)` — the flag, before vLLM reads
    the checkpoint's own method — so an AWQ repo stays AWQ; a served path's guessed repo does not
    overrule a quantized model named in the prose."""
    args = ("INFO 01-01 00:00:00 api_server.py:178] args: Namespace(host=None, model='TheBloke/Llama-2-7B-Chat-AWQ', "
            "quantization=None, max_model_len=4096)\n")
    assert read_paste(args).get("quantization") == "awq"
    assert read_paste("Model: Qwen3-14B-AWQ\nvllm serve /models/qwen3-14b\n").get("quantization") == "awq"


def test_v1_per_worker_capacity_lines_read_as_ranks():
    """V1 up to 0.10 logs one "GPU KV cache size" / "Maximum concurrency" pair per worker in rank
    order, before unifying the blocks to the smallest (vllm#16692: TP 16 on two 8×H800 nodes):
    rank 0's figures are read, every rank's kept; two runs whose figures differ widely are not merged."""
    lines = [(305216, 9.31), (304704, 9.30), (305216, 9.31)]
    text = "INFO 04-16 10:29:53 [core.py:61] Initializing a V1 LLM engine (v0.8.4) with config: model='deepseek-ai/DeepSeek-V3'\n"
    text += "".join(f"INFO 04-16 10:31:19 [kv_cache_utils.py:634] GPU KV cache size: {t:,} tokens\n"
                    f"INFO 04-16 10:31:19 [kv_cache_utils.py:637] Maximum concurrency for 32,768 tokens per request: {c:.2f}x\n"
                    for t, c in lines)
    f = read_paste(text)
    assert f.get("kv_tokens_capacity") == 305216 and f.get("max_concurrency") == 9.31
    assert f.extra["per_rank"]["kv_tokens_capacity"] == [305216, 304704, 305216]
    # 305,216 vs 150,000: a change between two runs, not per-rank free memory (≤ 5% apart)
    two = text.replace("304,704", "150,000")
    assert read_paste(two).get("kv_tokens_capacity") is None


def test_a_quantization_word_about_another_model_is_not_the_served_ones():
    """A write-up that served the fp16 model in its YAML args and names the AWQ copy it switched to
    ("serving `TheBloke/…-AWQ` via AWQ 4-bit quantization"): the served model is 16-bit."""
    text = ("vLLM pod serving `TheBloke/Mistral-7B-Instruct-v0.2-AWQ` via AWQ 4-bit quantization.\n"
            "Before:\n```yaml\nargs:\n  - \"--model\"\n  - \"mistralai/Mistral-7B-Instruct-v0.2\"\n"
            "  - \"--dtype\"\n  - \"half\"\n```\n"
            "ValueError: The model's max seq len (2048) is larger than the maximum number of tokens that can "
            "be stored in KV cache (1936).\n")
    f = read_paste(text)
    assert f.get("model") == "mistralai/Mistral-7B-Instruct-v0.2"
    assert f.get("quantization") is None
    # the same word beside the served AWQ model is its format
    assert read_paste(text.replace('"mistralai/Mistral-7B-Instruct-v0.2"', '"TheBloke/Mistral-7B-Instruct-v0.2-AWQ"')
                      ).get("quantization") == "awq"


def test_of_several_cards_named_the_one_holding_vllms_printed_total_is_the_run_s():
    """A notebook headed "RTX 4090 48GB" whose Unsloth banner and vLLM log ran on an RTX 3090: vLLM's
    printed total (23.68 GiB) is the 3090's torch total (23.69), not the 4090's (23.64) — and so is the
    banner's own "Max memory: 23.684 GB" without vLLM's line; where the printed total is the first-named
    card's, or none is printed, the first-named card stays."""
    def paste(total: str | None) -> str:
        return ("# RTX 4090 48GB\n[...]\n==((====))==  Unsloth 2025.8.4: Fast Qwen2 patching. vLLM: 0.10.0.\n"
                "   \\\\   /|    NVIDIA GeForce RTX 3090. Num GPUs = 1. Max memory: 23.684 GB. Platform: Linux.\n"
                + (f"INFO 08-16 20:01:30 [worker.py:295] the current vLLM instance can use total_gpu_memory "
                   f"({total}GiB) x gpu_memory_utilization (0.78) = 18.47GiB\n" if total else ""))

    # (the header's card is read with the size written after it, "RTX 4090 48GB")
    assert read_paste(paste("23.68")).get("gpu") == "NVIDIA GeForce RTX 3090"
    assert read_paste(paste("23.68")).extra["alternatives"]["gpu"] == ["RTX 4090 48GB"]
    assert read_paste(paste("23.64")).get("gpu") == "RTX 4090 48GB"
    assert read_paste(paste(None)).get("gpu") == "NVIDIA GeForce RTX 3090"
    no_total = paste(None).replace(" Max memory: 23.684 GB.", "")
    assert read_paste(no_total).get("total_gpu_memory_gib") is None
    assert read_paste(no_total).get("gpu") == "RTX 4090 48GB"


def test_the_card_holding_the_printed_total_within_the_drivers_spread_is_the_run_s():
    """ART's notebook comments "To run on a T4" above a log whose Unsloth banner and vLLM line ran on an
    H100 PCIe printing 79.10 GiB — the catalog's 79.18 for that board is a driver's spread away (H100s
    print 79.10–79.21), the T4's 14.56 is not: the H100 PCIe. A printed total no named card is near
    keeps the first-named one."""
    def paste(total: str) -> str:
        return ("    # To run on a T4, we need to override some config defaults.\n[...]\n"
                "==((====))==  Unsloth 2025.3.19: Fast Qwen2 patching. Transformers: 4.51.1. vLLM: 0.7.3.\n"
                "   \\\\   /|    NVIDIA H100 PCIe. Num GPUs = 1. Max memory: 79.097 GB. Platform: Linux.\n"
                f"INFO 04-15 01:57:17 worker.py:267] the current vLLM instance can use total_gpu_memory "
                f"({total}GiB) x gpu_memory_utilization (0.57) = 45.09GiB\n")

    assert read_paste(paste("79.10")).get("gpu") == "NVIDIA H100 PCIe"
    assert read_paste(paste("78.50")).get("gpu") == "T4"


def test_the_fused_moe_config_file_names_the_weight_format_and_the_kv_scale_warning_does_not():
    """vllm#17327 served a w4a16 export from a local path: vLLM's kv_cache.py warning ("… scaling factors are
    available in the fp8 checkpoint", printed for any checkpoint with attention scales) is not an fp8
    checkpoint; the MoE tuning file vLLM looked for ("…,dtype=int4_w4a16.json") names the int4 weights.
    vLLM's own "Detected fp8 checkpoint" still reads as fp8."""
    kv_warning = ("WARNING 05-07 22:17:23 [kv_cache.py:128] Using Q scale 1.0 and prob scale 1.0 with fp8 attention. "
                  "This may cause accuracy issues. Please make sure Q/prob scaling factors are available in the fp8 "
                  "checkpoint.\n")
    moe = ("WARNING 05-07 22:17:24 [fused_moe.py:668] Using default MoE config. Performance might be sub-optimal! "
           "Config file not found at [...]/E=128,N=768,device_name=NVIDIA_GeForce_RTX_3090,dtype=int4_w4a16.json\n")
    assert read_paste(kv_warning).get("quantization") is None
    assert read_paste(kv_warning + moe).get("quantization") == "int4"
    assert read_paste(moe.replace("int4_w4a16", "fp8_w8a8")).get("quantization") == "fp8"
    assert read_paste("WARNING 05-07 [fp8.py:60] Detected fp8 checkpoint. Please note that the format is "
                      "experimental and subject to change.").get("quantization") == "fp8"


def test_a_kv_pool_retold_with_its_token_count():
    """recipes#906's "(38.43 GiB KV cache, 3,511,589 tokens, full 1M context at 3.35x concurrency)": the
    pool, vLLM's token count and its concurrency; a size with no pool word is not a token count."""
    f = read_paste("With it the server comes up (38.43 GiB KV cache, 3,511,589 tokens, full 1M context at 3.35x "
                   "concurrency) and answers normally.")
    assert (f.get("kv_cache_gib"), f.get("kv_tokens_capacity"), f.get("max_concurrency")) == (38.43, 3511589, 3.35)
    assert read_paste("It used 38.43 GiB of RAM, 3,511,589 tokens in the dataset.").get("kv_tokens_capacity") is None


def test_the_draft_model_of_a_speculative_config_is_not_the_served_model():
    """A senpai log served a local int4 build with Gemma 4's assistant as the MTP draft: vLLM's printed
    args and its engine config dump name the draft (`'speculative_config': {'model': 'google/…-assistant'}`,
    `SpeculativeConfig(method='mtp', model='google/…-assistant', …)`) and the target only by its path —
    the model is unknown (the path is kept), never the draft."""
    text = ("INFO 06-20 18:02:02 [utils.py:278] non-default args: {'max_model_len': 4096, 'speculative_config': "
            "{'model': 'google/gemma-4-E4B-it-qat-q4_0-unquantized-assistant', 'num_speculative_tokens': 6}, "
            "'model': '/workspace/gemma_build/int4_g32_lmhead'}\n"
            "INFO 06-20 18:02:37 [core.py:112] Initializing a V1 LLM engine (v0.22.0) with config: "
            "model='/workspace/gemma_build/int4_g32_lmhead', speculative_config=SpeculativeConfig(method='mtp', "
            "model='google/gemma-4-E4B-it-qat-q4_0-unquantized-assistant', num_spec_tokens=6), "
            "tokenizer='/workspace/gemma_build/int4_g32_lmhead', skip_tokenizer_init=False, "
            "quantization=compressed-tensors, enforce_eager=True, kv_cache_dtype=auto\n")
    f = read_paste(text)
    assert f.get("model") is None and f.extra["model_path"] == "/workspace/gemma_build/int4_g32_lmhead"
    assert "gemma-4-E4B-it-qat-q4_0-unquantized-assistant" in str(f.extra["speculative_config"])
    # the engine dump alone: its SpeculativeConfig's model= is not the engine's
    dump_only = read_paste(text.split("\n", 1)[1])
    assert dump_only.get("model") is None
    # a served Hub model beside the draft is the model
    served = read_paste(text.replace("/workspace/gemma_build/int4_g32_lmhead", "google/gemma-4-E4B-it"))
    assert served.get("model") == "google/gemma-4-E4B-it"
    # an MTP head inside the served checkpoint: the speculative config names the served repo itself
    mtp = read_paste("INFO 05-15 05:08:32 [utils.py:240] non-default args: {'model': 'lukealonso/GLM-5.1-NVFP4-MTP', "
                     "'served_model_name': ['GLM-5'], 'tensor_parallel_size': 8, 'speculative_config': {'model': "
                     "'lukealonso/GLM-5.1-NVFP4-MTP', 'method': 'mtp', 'num_speculative_tokens': 3}}\n")
    assert mtp.get("model") == "lukealonso/GLM-5.1-NVFP4-MTP"
    # a dump without a draft: a later call in the line (DecodingConfig(…)) hides none of its settings
    plain = read_paste("INFO 01-02 03:04:05 [core.py:112] Initializing a V1 LLM engine (v0.9.2) with config: "
                       "model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B', "
                       "skip_tokenizer_init=False, dtype=torch.bfloat16, max_seq_len=8192, "
                       "decoding_config=DecodingConfig(backend='auto'), enforce_eager=False\n")
    assert plain.get("model") == "Qwen/Qwen3-8B" and plain.get("dtype") == "bfloat16"


def test_a_file_systems_name_is_not_a_card():
    """vLLM 0.22's weight_utils line "Filesystem type for checkpoints: EXT4. Checkpoint size: 14.89 GiB"
    names no T4 (senpai's A10G logs); "2xT4" still counts two T4s."""
    line = ("(EngineCore pid=19713) INFO 06-13 14:02:11 [weight_utils.py:922] Filesystem type for checkpoints: "
            "EXT4. Checkpoint size: 14.89 GiB. Available RAM: 726.06 GiB.\n")
    assert read_paste(line).get("gpu") is None
    two = read_paste("Kaggle 2xT4\n" + line)
    assert (two.get("gpu"), two.get("gpu_count")) == ("T4", 2)


def test_unslooths_load_in_4bit_says_bitsandbytes_only_when_true():
    """Unsloth's `FastLanguageModel.from_pretrained(..., load_in_4bit = True, fast_inference = True)`
    hands vLLM a bitsandbytes checkpoint; `load_in_4bit = False` (its 16-bit LoRA notebooks) names no
    format, and its "4bit" must not read as int4 — not in a paste, not in a case's free text."""
    from estimator.paste_prose import quantization_in_name

    call = ('model, tokenizer = FastLanguageModel.from_pretrained(\n    model_name = "meta-llama/Llama-3.2-3B-Instruct",\n'
            "    max_seq_length = 2048,\n    load_in_4bit = {on}, # False for LoRA 16bit\n    fast_inference = True,\n)\n")
    assert read_paste(call.format(on="True")).get("quantization") == "bitsandbytes"
    assert read_paste(call.format(on="False")).get("quantization") is None
    assert quantization_in_name("Unsloth from_pretrained(load_in_4bit=False, fast_inference=True)") is None
    assert quantization_in_name("load_in_8bit: True") == "bitsandbytes"
    # the name's own format still counts beside a False flag
    assert quantization_in_name("unsloth/Llama-3.2-3B-Instruct-bnb-4bit, load_in_4bit=False") == "bitsandbytes"


def test_a_quantized_model_in_a_later_table_row_is_not_the_first_models_format():
    """A results table (a benchmark harness's CSV) names the BF16 model in its first rows and an AWQ
    copy in later ones: the model read is the first, so its format is not the other row's AWQ."""
    text = ("run_id,config,model,weight_dtype,kv_cache_tokens\n"
            "m1-llama-bf16,llama-bf16,NousResearch/Meta-Llama-3.1-8B-Instruct,BF16,41648\n"
            "m1-llama-awq,llama-awq,hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4,AWQ-INT4,120320\n")
    f = read_paste(text)
    assert f.get("model") == "NousResearch/Meta-Llama-3.1-8B-Instruct"
    assert f.get("quantization") is None
    # named first, the AWQ copy is the model read, and its name gives the format
    swapped = text.replace("m1-llama-bf16,llama-bf16,NousResearch/Meta-Llama-3.1-8B-Instruct,BF16,41648\n", "") \
        + "m1-llama-bf16,llama-bf16,NousResearch/Meta-Llama-3.1-8B-Instruct,BF16,41648\n"
    assert read_paste(swapped).get("quantization") == "awq"


def test_the_change_a_failing_run_was_started_with_is_its_setting():
    """"Later, after reducing `max-model-len` to 2048 and raising `gpu-memory-utilization` to 0.95:"
    over the error it got tells that run's settings; the later of two different errors is the one
    diagnosed (its figures are the ones read). A proposal ("try raising … to 0.95") stays unread."""
    text = ("Logs showed:\n```\nValueError: No available memory for the cache blocks.\n```\n"
            "Later, after reducing `max-model-len` to 2048 and raising `gpu-memory-utilization` to 0.95:\n"
            "```\nValueError: The model's max seq len (2048) is larger than the maximum number of\n"
            "tokens that can be stored in KV cache (1936).\n```\n")
    f = read_paste(text)
    assert f.get("gpu_memory_utilization") == 0.95
    assert f.get("error_kind") == "kv_capacity_v0" and f.get("error_max_tokens_in_kv") == 1936
    proposal = text.replace("Later, after reducing", "Try reducing")
    assert read_paste(proposal).get("gpu_memory_utilization") is None
    # a value stated as the setting in use is read wherever the line is
    assert read_paste("My gpu_memory_utilization is 0.85 and vLLM says: ValueError: No available memory for the "
                      "cache blocks.").get("gpu_memory_utilization") == 0.85


def test_the_0_11_plus_version_banner_is_read():
    """From 0.11 the API server logs its version beside the vLLM logo (vllm/entrypoints/utils.py
    log_version_and_model), or as "vLLM server version X, serving model Y" with the logo disabled —
    the only version line such a start-up log has."""
    logo = ("(APIServer pid=1) INFO 07-02 21:27:15 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  "
            "version 0.23.1rc1.dev531+ga65f93fb2\n"
            "(APIServer pid=1) INFO 07-02 21:27:15 [api_utils.py:339]   █▄█▀ █     █     █     █  model   "
            "nvidia/Qwen3.6-27B-NVFP4\n")
    assert read_paste(logo).get("vllm_version") == "0.23.1rc1.dev531+ga65f93fb2"
    plain = "INFO 02-19 17:09:29 [utils.py:325] vLLM server version 0.15.1, serving model Qwen/Qwen3-8B\n"
    assert read_paste(plain).get("vllm_version") == "0.15.1"
    assert read_paste("INFO 08-31 08:01:29 [api_server.py:1413] vLLM API server version 0.9.0.1\n").get(
        "vllm_version") == "0.9.0.1"


def test_namespace_arguments_and_v0s_long_context_warning_say_chunked_prefill_is_off():
    """vLLM's benchmark scripts and the 0.4–0.8 api_server print their argparse `Namespace(…)`; V0's
    engine args warn "The model has a long context length (N). This may cause OOM errors during the
    initial memory profiling phase" only when chunked prefill stays off for a context over 32K
    (vllm/engine/arg_utils.py) — then the profile run covers the whole context. An MI300X log of
    Llama-3.1-8B at 131,072 on 0.6.4 printed 71,538 blocks: modelled with chunked prefill on (the
    default above 32K) it was 79,858; off, 73,572."""
    from estimator.diagnosis import settings_from_facts

    ns = ("Namespace(backend='vllm', model='meta-llama/Llama-3.1-8B-Instruct', tensor_parallel_size=1, "
          "max_model_len=None, gpu_memory_utilization=0.9, enforce_eager=False, enable_chunked_prefill=False, "
          "max_num_batched_tokens=None)\n")
    s = settings_from_facts(read_paste(ns), "0.6.4", "v0")
    assert s.enable_chunked_prefill is False and s.enforce_eager is False and s.max_num_batched_tokens is None
    warn = ("WARNING 10-30 19:10:24 arg_utils.py:963] The model has a long context length (131072). This may cause "
            "OOM errors during the initial memory profiling phase, or result in low performance due to small KV "
            "cache space. Consider setting --max-model-len to a smaller value.\n")
    assert settings_from_facts(read_paste(warn), "0.6.4", "v0").enable_chunked_prefill is False
    assert settings_from_facts(read_paste("vllm serve meta-llama/Llama-3.1-8B-Instruct\n"), "0.6.4",
                               "v0").enable_chunked_prefill is None


def test_the_model_runner_a_log_names_is_read():
    """gpu_worker.py's "Using V2 Model Runner" and config/vllm.py's fallback warning say which runner
    ran; V0's worker/model_runner.py load line (0.8–0.10 "Model loading took … GiB and …") is no sign."""
    v2 = "(Worker_TP0 pid=7) INFO 09-12 10:00:00 [gpu_worker.py:500] Using V2 Model Runner\n"
    v1 = ("(EngineCore pid=5) WARNING 09-12 10:00:00 [vllm.py:620] Model Runner V2 does not yet support "
          "ngram/ngram_gpu speculative decoding; using the V1 model runner instead.\n")
    v0 = "INFO 05-01 10:00:00 [model_runner.py:1203] Model loading took 14.9888 GiB and 3.451223 seconds\n"
    assert read_paste(v2).extra["model_runner_v2"] is True
    assert read_paste(v1).extra["model_runner_v2"] is False
    assert "model_runner_v2" not in read_paste(v0).extra


def test_vllms_own_kv_cache_memory_suggestion_quoted_is_not_a_setting():
    """vLLM prints "Replace gpu_memory_utilization config with `--kv-cache-memory=N` (X GiB)"; a user
    quoting it (akiyax/kvcache-lab: "日志中也提示了 `--kv-cache-memory=7911991092`（7.37 GiB）才是…")
    did not run with it. The flag on a command line is read."""
    quoted = "日志中也提示了\n`--kv-cache-memory=7911991092`（7.37 GiB）才是「恰好符合请求」的值。\n"
    assert "kv_cache_memory_bytes" not in read_paste(quoted).extra
    assert "kv_cache_memory_bytes" not in read_paste("the log says `--kv-cache-memory=7911991092` (7.37 GiB)\n").extra
    assert read_paste("vllm serve Qwen/Qwen3-8B --kv-cache-memory=7911991092\n").extra["kv_cache_memory_bytes"] == 7911991092


def test_a_setup_table_row_gives_the_version():
    # "| **vLLM** | **0.26.0** |": the markdown table a blog lists its setup in
    assert read_paste("| GPU | RTX 4080 |\n| **vLLM** | **0.26.0** |\n").get("vllm_version") == "0.26.0"
    assert read_paste("| vLLM | 0.11.2 |\n").get("vllm_version") == "0.11.2"


def test_performance_mode_is_read_from_a_command_or_the_non_default_args():
    assert read_paste("vllm serve Qwen/Qwen3-8B --performance-mode throughput\n").extra["performance_mode"] == "throughput"
    line = "INFO [utils.py:253] non-default args: {'model': 'Qwen/Qwen3-8B', 'performance_mode': 'interactivity'}\n"
    assert read_paste(line).extra["performance_mode"] == "interactivity"


def test_the_v1_runners_load_line_says_the_runner_and_its_wording_the_release():
    """v1/worker/gpu_model_runner.py printed "Model loading took X GiB and …" up to 0.11.0 and
    "… GiB memory and …" from 0.11.1, X to 4 decimals to 0.13 and as format_gib's figure from 0.14 (the
    wheels); a line from that file is the V1 runner whatever the release."""
    old = ("(EngineCore_DP0 pid=643458) INFO 09-10 13:29:14 [gpu_model_runner.py:2235] Model loading took "
           "1.1201 GiB and 0.596228 seconds\n")
    f = read_paste(old)
    assert f.extra["model_runner_v2"] is False
    assert f.extra["version_hint"] == ("0.8.3", "0.11.0")
    new = ("(EngineCore pid=9) INFO 05-10 13:29:14 [gpu_model_runner.py:4100] Model loading took "
           "15.27 GiB memory and 3.5 seconds\n")
    f = read_paste(new)
    assert f.extra["model_runner_v2"] is False and f.extra["version_hint"][0] == "0.14.0"
    f = read_paste(new.replace("15.27 GiB", "15.2700 GiB"))
    assert f.extra["model_runner_v2"] is False and f.extra["version_hint"] == ("0.11.1", "0.13.0")


def test_a_kv_cache_dtype_told_in_prose_is_read_unless_it_is_advice():
    # "`fp8_e4m3` KV at default" (a list of what a run kept) is what ran; "consider an fp8 KV cache" is not
    ran = "Deliberately unchanged: `Qwen3.8-27B-FP8` checkpoint, `fp8_e4m3` KV at default (uncalibrated, scale 1.0)\n"
    assert read_paste(ran).get("kv_cache_dtype") == "fp8_e4m3"
    assert read_paste("KV cache dtype: fp8\n").get("kv_cache_dtype") == "fp8"
    for advice in ("Consider using fp8 KV cache.\n", "You could try an fp8 KV cache to double the tokens\n",
                   "fp8 KV halves the memory\n"):
        assert read_paste(advice).get("kv_cache_dtype") is None, advice
    # a flag outranks the words
    assert read_paste("vllm serve x --kv-cache-dtype auto\nwith fp8 KV it was faster\n").get("kv_cache_dtype") == "auto"
    # the packed formats of 0.20+ (kv_layout.packed_kv_content) are dtypes too
    assert read_paste("running with an nvfp4 KV cache on two B200s\n").get("kv_cache_dtype") == "nvfp4"
    assert read_paste("KV cache: turboquant_k8v4\n").get("kv_cache_dtype") == "turboquant_k8v4"
    assert read_paste("`fp8_per_token_head` KV, 2 GPUs\n").get("kv_cache_dtype") == "fp8_per_token_head"
    assert read_paste("consider an nvfp4 KV cache\n").get("kv_cache_dtype") is None
    # the value right after the words, as a run sheet lists it (a 2× V100 Qwen3.8-27B run)
    sheet = "- Hardware / Serving: 2x V100 16GB TP2 shared, KV `fp8_e5m2`, context 131,072, `temperature=0`\n"
    assert read_paste(sheet).get("kv_cache_dtype") == "fp8_e5m2"
    assert read_paste("KV cache fp8 on both cards\n").get("kv_cache_dtype") == "fp8"
    # one side of a comparison is not what ran
    assert read_paste("KV fp8 vs bf16: the same answers\n").get("kv_cache_dtype") is None


def test_an_llm_class_call_is_read_as_the_offline_usage_context():
    # user code's LLM(...) runs under UsageContext.LLM_CLASS, whose V1 defaults batch more tokens than
    # `vllm serve` (engine/arg_utils.py); a paste showing the API server is not the LLM class
    code = 'llm = LLM(\n    model="Qwen/Qwen3-8B",\n    max_model_len=30_000,\n)\n'
    assert read_paste(code).extra.get("usage") == "llm"
    served = code + "(APIServer pid=1) INFO vLLM API server version 0.11.0\n"
    assert read_paste(served).extra.get("usage") is None
    assert read_paste("vllm serve Qwen/Qwen3-8B --max-model-len 30000").extra.get("usage") is None
    assert read_paste("our LLM (a 7B one) ran out of memory").extra.get("usage") is None


def test_the_llm_class_default_batch_reaches_the_estimate():
    from test_memory import load

    from estimator.diagnosis import settings_from_facts
    from estimator.memory import estimate
    from estimator.vllm import EngineSettings

    facts = read_paste('llm = LLM(model="Qwen/Qwen3-8B", max_model_len=30000)\n')
    s = settings_from_facts(facts, "0.22.0", "v1")
    assert s.usage == "llm"
    spec = load("Qwen/Qwen3-8B")
    h100 = int(79.19 * 2**30)
    offline = estimate(spec, gpu_total_bytes=h100, settings=s, gpu_name="NVIDIA H100 80GB HBM3")
    server = estimate(spec, gpu_total_bytes=h100, settings=EngineSettings(vllm_version="0.22.0", max_model_len=30000),
                      gpu_name="NVIDIA H100 80GB HBM3")
    # vllm/engine/arg_utils.py: on an H100-class card the LLM class defaults to 16,384 batched tokens,
    # the API server to 8,192
    assert offline.settings.max_num_batched_tokens == 16384
    assert server.settings.max_num_batched_tokens == 8192


def test_a_mig_slice_and_a_cloud_machine_type_are_read_as_such():
    """GKE's "gpu-partition-size=1g.5gb", nvidia-smi's "MIG 1g.5gb Device 0", CUDA's "NVIDIA
    A100-SXM4-40GB MIG 1g.5gb": the run had a slice of the card (diagnosis sizes it from the profile).
    A Google Cloud machine type "a2-highgpu-1g" holds an A100: it is not the NVIDIA A2, nor is Huawei's
    "Atlas 800I A2" server."""
    from estimator.diagnosis import gpu_ref

    gke = read_paste('gcloud container node-pools create p --machine-type=a2-highgpu-1g \\\n'
                     '  --accelerator="type=nvidia-tesla-a100,count=1,gpu-partition-size=1g.5gb"\n'
                     "INFO [gpu_worker.py:276] Available KV cache memory: -2.16 GiB\n")
    assert gke.get("gpu") == "a100" and gke.extra["mig_profile"] == "1g.5gb"
    assert gpu_ref(gke, None) == "a100 MIG 1g.5gb"
    smi = read_paste("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5c8)\n  MIG 2g.10gb Device 0: (UUID: MIG-GPU-5c8/7/0)\n"
                     "INFO Available KV cache memory: 1.00 GiB\n")
    assert gpu_ref(smi, None) == "NVIDIA A100-SXM4-40GB MIG 2g.10gb"
    assert "mig_profile" not in read_paste("INFO Available KV cache memory: 1.00 GiB on an A100").extra
    assert read_paste("I run it on an A2 card").get("gpu") == "A2"
    # nor is a Huawei Ascend server, "Atlas 800I A2" / "Atlas 800T A2": its NPUs (vllm-ascend's), which the
    # catalog has, Huawei's and never NVIDIA's A2
    from estimator.gpus import lookup_gpu

    for text, server in (("vllm-ascend on an Atlas 800I A2, Qwen2.5-7B-Instruct", "Atlas 800I A2"),
                         ("Atlas 800T A2 with 8 NPUs", "Atlas 800T A2")):
        atlas = read_paste(text).get("gpu")
        assert atlas == server and lookup_gpu(atlas).vendor == "Huawei"


def test_unsloths_batch_line_is_the_batch_vllm_was_given():
    """Unsloth's load_vllm (unsloth_zoo/vllm_utils.py) prints "Chunked prefill tokens = N. Num Sequences =
    M" and passes them as max_num_batched_tokens and max_num_seqs: its runs do not use vLLM's defaults."""
    f = read_paste("Unsloth: vLLM loading unsloth/qwen2.5-3b-instruct-unsloth-bnb-4bit with actual GPU utilization = "
                   "49.66%\nUnsloth: Your GPU has CUDA compute capability 7.5 with VRAM = 14.74 GB.\n"
                   "Unsloth: Using conservativeness = 1.0. Chunked prefill tokens = 1024. Num Sequences = 160.\n"
                   "Unsloth: vLLM's KV Cache can use up to 4.01 GB. Also swap space = 2 GB.\n")
    assert f.get("max_num_batched_tokens") == 1024 and f.get("max_num_seqs") == 160
    assert f.values["max_num_seqs"].source == "unsloth_batch"


def test_unsloths_vision_launch_is_one_sequence_one_image_and_its_own_batch():
    """unsloth_zoo's load_vllm for a vision model ("Vision model detected, setting approx_max_num_seqs to 1"):
    one sequence, max_num_batched_tokens = max(8192, max_seq_length) and limit_mm_per_prompt image 1 / video 0;
    the "Chunked prefill tokens = 2048" it prints beside is not vLLM's batch (the Qwen2.5-VL GRPO notebook's
    own log: "Chunked prefill is enabled with max_num_batched_tokens=16384"). A text model keeps the line's
    batch; the engine settings follow the launch."""
    from estimator.diagnosis import settings_from_facts

    banner = ("Unsloth: Vision model detected, setting approx_max_num_seqs to 1\n"
              "Unsloth: vLLM loading unsloth/qwen2.5-vl-7b-instruct-unsloth-bnb-4bit with actual GPU utilization = "
              "76.93%\nUnsloth: Using conservativeness = 1.0. Chunked prefill tokens = 2048. Num Sequences = 1.\n"
              "INFO 09-15 15:37:43 [config.py:1472] Using max model len 16384\n")
    f = read_paste(banner)
    assert f.extra["unsloth_vision"] is True and f.get("max_num_seqs") == 1
    assert f.get("max_num_batched_tokens") is None
    s = settings_from_facts(f, "0.9.2", "v0")
    assert (s.max_num_batched_tokens, s.max_num_seqs, s.limit_mm_per_prompt) == (16384, 1, {"image": 1, "video": 0})
    short = settings_from_facts(read_paste(banner.replace("16384", "4096")), "0.9.2", "v0")
    assert short.max_num_batched_tokens == 8192
    # the user's FastVisionModel call with fast_inference says the same without the banner
    call = read_paste("model, tokenizer = FastVisionModel.from_pretrained(\n    model_name = \"unsloth/Qwen2.5-VL-7B-Instruct\",\n"
                      "    max_seq_length = 16384,\n    fast_inference = True,\n)\n")
    assert call.extra.get("unsloth_vision") is True
    text = read_paste(banner.replace("Unsloth: Vision model detected, setting approx_max_num_seqs to 1\n", ""))
    assert "unsloth_vision" not in text.extra and text.get("max_num_batched_tokens") == 2048


def test_unsloths_own_text_batch_by_its_release_when_the_batch_line_is_not_shown():
    """unsloth_zoo load_vllm sizes a text model's batch by the memory it leaves the KV cache ("vLLM's KV
    Cache can use up to 3.27 GB"): up to November 2025 128 … 400 sequences (≤ 4 GB: 160) with the batch
    max_seq_length (from 2025-09-16 vLLM's 2048, whatever "Chunked prefill tokens" says), from 2025-11-29
    (2048, 16) at ≤ 4 GB; × 1.05 with float8_kv_cache, × conservativeness. A release month that straddles a
    change is not guessed; without the banner a vLLM before 0.10.2 places the run before the changes."""
    from estimator.diagnosis import settings_from_facts
    from estimator.flags import unsloth_text_batch

    assert unsloth_text_batch((2025, 5, 4), 3.27) == (None, 160)
    assert unsloth_text_batch((2025, 10, 1), 3.27) == (2048, 160)
    assert unsloth_text_batch((2025, 12, 3), 3.27) == (2048, 16)
    assert unsloth_text_batch((2025, 12, 3), 90.0) == (8192, 256)
    assert unsloth_text_batch((2025, 5, 4), 3.27, fp8_kv=True, conservativeness=0.5) == (None, 84)
    assert unsloth_text_batch((2025, 9, 4), 3.27) is None and unsloth_text_batch(None, 3.27) is None

    def paste(banner: str, batch_line: str = "") -> str:
        return (banner + "Unsloth: vLLM loading unsloth/Qwen3-4B-Base with actual GPU utilization = 69.34%\n"
                + batch_line + "Unsloth: vLLM's KV Cache can use up to 3.27 GB. Also swap space = 0 GB.\n"
                "INFO 05-26 00:49:01 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5.post1) with config: "
                "model='unsloth/Qwen3-4B-Base', dtype=torch.float16, max_seq_len=2048, enforce_eager=False\n")

    may = settings_from_facts(read_paste(paste("==((====))==  Unsloth 2025.5.4: Fast Qwen3 patching.\n")), "0.8.5", "v0")
    assert (may.max_num_batched_tokens, may.max_num_seqs) == (2048, 160)
    bare = settings_from_facts(read_paste(paste("")), "0.8.5", "v0")             # no banner, vLLM 0.8.5
    assert (bare.max_num_batched_tokens, bare.max_num_seqs) == (2048, 160)
    october = paste("==((====))==  Unsloth 2025.10.2: Fast Qwen3 patching.\n",
                    "Unsloth: Using conservativeness = 1.0. Chunked prefill tokens = 4096. Num Sequences = 160.\n")
    s = settings_from_facts(read_paste(october.replace("max_seq_len=2048", "max_seq_len=4096")), "0.10.2", "v1")
    assert (s.max_num_batched_tokens, s.max_num_seqs) == (2048, 160)
    september = settings_from_facts(read_paste(paste("==((====))==  Unsloth 2025.9.1: x\n")), "0.10.1", "v1")
    assert september.max_num_seqs is None


def test_a_variable_vllms_own_log_line_names_is_not_the_runs_environment():
    """0.19's "To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1" and 0.21's "To disable, set
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0" are advice in vLLM's log; the same words before a command
    are the user's environment."""
    log = ("(EngineCore pid=2) INFO 04-17 02:01:15 [gpu_worker.py:470] In v0.19, CUDA graph memory profiling will "
           "be enabled by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts for "
           "CUDA graph memory during KV cache allocation. To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 "
           "and increase --gpu-memory-utilization from 0.9000 to 0.9616 to maintain the same effective KV cache size.\n")
    assert "env" not in read_paste(log).extra
    user = read_paste("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 vllm serve Qwen/Qwen3-8B\n" + log)
    assert user.extra["env"] == {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}
    # that opt-in line is 0.18.0–0.19.1's: the 0.19.1 wheel's gpu_worker.py still prints it, 0.20.0 does not;
    # so is the line of a run that opted in, while "is equivalent to" alone is any release from 0.18
    assert read_paste(unlined(log)).extra["version_hint"] == ("0.18.0", "0.19.1")
    # with its line: the 0.19.x wheels' gpu_worker.py log "In v0.19, …" at 470, 0.18.x's at 490
    assert read_paste(log).extra["version_hint"] == ("0.19.0", "0.19.1")
    equivalent = ("The current --gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8384 without "
                  "CUDA graph memory profiling. To maintain the same effective KV cache size as before, increase "
                  "--gpu-memory-utilization to 0.9616.")
    opted_in = ("INFO 04-17 02:01:15 [gpu_worker.py:472] CUDA graph memory profiling is enabled "
                "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1). This will become the default in v0.19. " + equivalent)
    assert read_paste(unlined(opted_in)).extra["version_hint"] == ("0.18.0", "0.19.1")
    # "CUDA graph memory profiling is enabled" is logged at 472 by 0.18.x's gpu_worker.py (452 by 0.19.x)
    assert read_paste(opted_in).extra["version_hint"] == ("0.18.0", "0.18.1")
    assert read_paste(equivalent).extra["version_hint"] == ("0.18.0", None)


def test_unsloths_lines_give_vllms_utilization_and_the_cards_total():
    """Unsloth hands vLLM its own utilization ("Unsloth: vLLM loading … with actual GPU utilization =
    55.0%"), not the gpu_memory_utilization = 0.6 of the user's from_pretrained call; vLLM's own line, where
    pasted, says it to two places. Its banner's "Max memory: 23.684 GB" is torch's total in GiB (vLLM's
    line beside it prints 23.68 GiB)."""
    call = ('model, tokenizer = FastLanguageModel.from_pretrained(\n    model_name = "meta-llama/Llama-3.1-8B-Instruct",\n'
            "    fast_inference = True,\n    gpu_memory_utilization = 0.6,\n)\n")
    banner = "   \\\\   /|    NVIDIA GeForce RTX 3090. Num GPUs = 1. Max memory: 23.684 GB. Platform: Linux.\n"
    loading = "Unsloth: vLLM loading meta-llama/Llama-3.1-8B-Instruct with actual GPU utilization = 55.0%\n"
    f = read_paste(call + banner + loading)
    assert f.get("gpu_memory_utilization") == 0.55 and f.get("total_gpu_memory_gib") == 23.684
    assert f.extra["launcher"] == "unsloth" and f.extra["unsloth_gpu_memory_utilization"] == 0.6
    budget = ("INFO 03-21 09:46:02 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.68GiB) x "
              "gpu_memory_utilization (0.55) = 13.02GiB\n")
    g = read_paste(call + banner + loading + budget)
    assert g.values["gpu_memory_utilization"].source == "v0_budget" and g.get("total_gpu_memory_gib") == 23.68
    # without Unsloth's loading line the call's value is all there is
    assert read_paste(call).get("gpu_memory_utilization") == 0.6


def test_v1s_engine_initialized_line_gives_the_block_count():
    """0.10–0.11's stat logger prints the blocks once the engine is up ("Engine 000: vllm cache_config_info
    with initialization after num_gpu_blocks is: 1546", v1/metrics/loggers.py): DeepSeek-R1-Distill-Qwen-32B
    on an L40S, 6.04 GiB = 1,546 blocks × 16 tokens × 262,144 B (64 layers × 8 KV heads × 128 × 2 × 2 B)."""
    assert round(1546 * 16 * 262_144 / 2**30, 2) == 6.04
    f = read_paste("(EngineCore_DP0 pid=239442) INFO 06-21 08:43:20 [gpu_worker.py:298] Available KV cache memory: "
                   "6.04 GiB\n(APIServer pid=238615) INFO 06-21 08:43:35 [loggers.py:147] Engine 000: vllm "
                   "cache_config_info with initialization after num_gpu_blocks is: 1546\n")
    assert f.get("gpu_blocks") == 1546 and f.get("kv_cache_gib") == 6.04


def test_lora_settings_are_read_from_flags_and_from_unsloths_call():
    """`--enable-lora --max-lora-rank 64 --max-loras 2` on a command line; Unsloth's from_pretrained serves
    LoRA adapters with the max_lora_rank it passes — a number, a name the paste assigns (`lora_rank = 32`),
    else its default 64 (said as assumed)."""
    f = read_paste("vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-lora --max-lora-rank 64 --max-loras 2\n")
    assert (f.extra["enable_lora"], f.extra["max_lora_rank"], f.extra["max_loras"]) == (True, 64, 2)
    cell = ("lora_rank = 32 # Larger rank = smarter, but slower\nmodel, tokenizer = FastLanguageModel.from_pretrained(\n"
            '    model_name = "unsloth/Qwen3-4B-Base",\n    fast_inference = True,\n    max_lora_rank = lora_rank,\n)\n')
    g = read_paste(cell)
    assert (g.extra["enable_lora"], g.extra["max_lora_rank"]) == (True, 32) and "lora_rank_assumed" not in g.extra
    h = read_paste(cell.replace("lora_rank = 32 # Larger rank = smarter, but slower\n", ""))
    assert (h.extra["max_lora_rank"], h.extra["lora_rank_assumed"]) == (64, True)
    assert "enable_lora" not in read_paste("vllm serve meta-llama/Llama-3.1-8B-Instruct\n").extra


def _served_log(path: str) -> str:
    """vLLM's own lines of a run serving `path` (a focal run: the paste's prose repo ids are not its model)."""
    return (f"(APIServer pid=1) INFO 01-23 15:48:29 [utils.py:233] non-default args: {{'model_tag': '{path}', "
            f"'model': '{path}', 'dtype': 'float16'}}\n"
            "(EngineCore_DP0 pid=1) INFO 01-23 15:49:00 [gpu_worker.py:298] Available KV cache memory: 10.56 GiB\n")


@pytest.mark.parametrize("text,model", [
    # learn.arm.com's DGX Spark tutorial: downloaded to ~/models/mistral-7b, served as /models/mistral-7b
    ("hf download TheBloke/Mistral-7B-Instruct-v0.2-GPTQ --local-dir ~/models/mistral-7b\n"
     "docker run --gpus all -v ~/models:/models vllm/vllm-openai:latest \\\n  vllm serve /models/mistral-7b \\\n"
     "  --quantization gptq --dtype float16\n" + _served_log("/models/mistral-7b"), "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"),
    ("from huggingface_hub import snapshot_download\n"
     "snapshot_download(repo_id=\"Qwen/Qwen2.5-7B-Instruct-AWQ\", local_dir=\"/data/qwen7b\")\n"
     "vllm serve /data/qwen7b --max-model-len 8192\n" + _served_log("/data/qwen7b"), "Qwen/Qwen2.5-7B-Instruct-AWQ"),
    ("modelscope download --model Qwen/Qwen2.5-14B-Instruct --local_dir /mnt/q14\n"
     "vllm serve /mnt/q14/ --max-model-len 8192\n" + _served_log("/mnt/q14/"), "Qwen/Qwen2.5-14B-Instruct"),
])
def test_a_local_directory_the_paste_downloads_a_repo_into_is_that_repo(text, model):
    f = read_paste(text)
    assert f.get("model") == model and f.values["model"].source == "download_local_dir"


def test_a_download_into_another_directory_does_not_name_the_served_one():
    text = ("hf download TheBloke/Mistral-7B-Instruct-v0.2-GPTQ --local-dir ~/models/other\n"
            "vllm serve /models/mistral-7b --dtype float16\n" + _served_log("/models/mistral-7b"))
    f = read_paste(text)
    assert f.get("model") != "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ" and f.extra.get("model_path") == "/models/mistral-7b"


def test_an_nvidia_smi_row_index_is_no_gpu_count():
    """A Kaggle notebook's two-T4 nvidia-smi rows ("|   1  Tesla T4 …") under a TP 2 run: the row's
    index is no "1 Tesla T4" — the run had 2 GPUs. A count in a table cell still counts."""
    text = ("|   0  Tesla T4                       Off |   00000000:00:04.0 Off |                    0 |\n"
            "|   1  Tesla T4                       Off |   00000000:00:05.0 Off |                    0 |\n"
            "python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B --tensor-parallel-size 2\n")
    assert read_paste(text).get("gpu_count") == 2
    assert read_paste("| GPU | 2 x RTX 4090 |").get("gpu_count") == 2


def test_free_memory_error_names_its_device_from_014():
    """The start-up check's error names the device from 0.14 (v1/worker/utils.py request_memory: "Free memory
    on device cuda:0 (…)"); gpu_worker.py to 0.13 wrote "Free memory on device (…)" (0.12.0–0.14.0 wheels).
    A Chinese deployment note's 37.95/79.25 GiB error without it is at most 0.13, not the newest release."""
    err = ("ValueError: Free memory on device {dev}(37.95/79.25 GiB) on startup is less than desired GPU memory "
           "utilization (0.9, 71.33 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")
    assert read_paste(err.format(dev="")).extra["version_hint"] == ("0.9.1", "0.13.0")
    # 0.34 runs the check only with its extensible KV cache off, which CUDA and ROCm have on by default
    # (v1/worker/utils.py in the 0.34.0 wheel): on "cuda:0" the error is 0.14–0.33, on Intel's "xpu:0" any 0.14+
    assert read_paste(err.format(dev="cuda:0 ")).extra["version_hint"] == ("0.14.0", "0.33.0")
    assert read_paste(err.format(dev="xpu:0 ")).extra["version_hint"] == ("0.14.0", None)
    assert read_paste(FREE_MEMORY).extra["version_hint"] == ("0.9.1", "0.13.0")


def test_free_memory_checked_on_each_gpu_is_the_tightest():
    """V1 workers each check their own GPU (a medqa TP 4 run: 54.34, 53.76, 54.49, 54.11 GiB free of
    79.18): a utilization that fits must fit cuda:3's 53.76 GiB; every figure is kept per rank."""
    line = ("(Worker pid={pid}) ERROR 07-01 09:41:21 [multiproc_executor.py:888] ValueError: Free memory on device "
            "cuda:{dev} ({free}/79.18 GiB) on startup is less than desired GPU memory utilization (0.92, 72.84 GiB). "
            "Decrease GPU memory utilization or reduce GPU memory used by other processes.\n")
    text = "".join(line.format(pid=60651 + i, dev=d, free=f)
                   for i, (d, f) in enumerate([(0, "54.34"), (3, "53.76"), (1, "54.49"), (2, "54.11")]))
    f = read_paste(text)
    assert f.error_kind == "free_memory_startup"
    assert f.get("free_memory_gib") == 53.76
    assert f.extra["per_rank"]["free_memory_gib"] == [54.34, 53.76, 54.49, 54.11]


@pytest.mark.parametrize("path,repo", [
    ("/home/stewa/ai-models/weights/ybelkada/llava-1.5-7b-hf-awq", "ybelkada/llava-1.5-7b-hf-awq"),
    ("/home/u/weights/TheBloke/zephyr-7B-beta-AWQ", "TheBloke/zephyr-7B-beta-AWQ"),
    ("/data/models/llama-7b", None),             # a store directory is no organisation
    ("/mnt/disk1/foo-7b", None),                  # nor a mount point
])
def test_a_store_laid_out_as_org_and_name_is_read_as_that_repo(path, repo):
    """A local model store kept as the Hub's ORG/NAME, where the name spells no known family: a guess."""
    from estimator.paste_prose import model_from_value
    got = model_from_value(path)
    assert (got[0] if got else None) == repo and (got is None or got[1])


def test_a_modelscope_download_path_spells_the_repo_names_dots_as_three_underscores():
    """ModelScope's download cache writes a repo name's dots as "___" (modelscope/hub/file_download.py); an
    AutoDL log serving /root/autodl-tmp/models/qwen/Qwen2___5-3B ran Qwen2.5-3B, which the catalog has."""
    text = ("(APIServer pid=17544) INFO 09-29 00:28:54 [utils.py:328] non-default args: {'model_tag': "
            "'/root/autodl-tmp/models/qwen/Qwen2___5-3B', 'model': '/root/autodl-tmp/models/qwen/Qwen2___5-3B', "
            "'dtype': 'float16', 'max_model_len': 4096}\n")
    assert read_paste(text).get("model") == "qwen/Qwen2.5-3B"
    from estimator.diagnosis import diagnose

    d = diagnose(text + "(EngineCore_DP0 pid=1) INFO 09-29 00:29:40 [gpu_worker.py:298] Available KV cache memory: "
                 "15.31 GiB\n", offline=True, explain=True, gpu="RTX 4090")
    assert d.estimate is not None and d.estimate["model"]["id"] == "Qwen/Qwen2.5-3B"


@pytest.mark.parametrize("text,model,path", [
    ('llm = LLM("gpt2", gpu_memory_utilization=0.5)', "openai-community/gpt2", None),
    # a notebook names the model in a variable above the call; the last assignment is the one it runs
    ('model_name = "facebook/opt-125m"\nmodel_name = "gpt2"  # Replace with your desired model\n[...]\n'
     'llm = LLM(model_name, gpu_memory_utilization = 0.5)', "openai-community/gpt2", None),
    ('MODEL = "gpt2"\nllm = LLM(model=MODEL)', "openai-community/gpt2", None),
    ("vllm serve gpt2 --max-model-len 1024", "openai-community/gpt2", None),
    ("vllm serve ./gpt2 --max-model-len 1024", None, "./gpt2"),     # a directory of that name is a local path
])
def test_a_hub_legacy_id_without_organisation_is_read_as_its_repo(text, model, path):
    """The Hub redirects its legacy ids ("gpt2") to their organisation's repo (openai-community/gpt2);
    vLLM downloads them as such. A path spelled as one ("./gpt2") stays a local path. `LLM(...)`'s first
    parameter is the model, given as a literal or a variable."""
    f = read_paste(text)
    assert f.get("model") == model
    assert f.extra.get("model_path") == path


@pytest.mark.parametrize("text", [
    "I have 2 GPUs with 24 GB each",
    "Llama 3 is great, Qwen 2.5 too",          # a family and version without a size name no checkpoint
    "Gemma 4 31 GB of memory",
])
def test_words_without_a_size_name_no_model(text):
    assert read_paste(text).get("model") is None


def test_a_free_memory_line_cut_after_on_startup_still_gives_the_cards_total():
    """kvcache-lab's notes quote vLLM's start-up line as "Free memory on device cuda:0 (13.88/15.99 GiB)
    on startup ..." — cut before either ending (the error's "is less than desired …", the 0.10.2+ report's
    ". Desired GPU memory utilization is …"). Free and total are still vLLM's own figures; nothing else
    (no error, no utilization) is read from the cut line, and the whole lines keep their templates."""
    f = read_paste("Free memory on device cuda:0 (13.88/15.99 GiB) on startup ...")
    assert f.get("total_gpu_memory_gib") == 15.99 and f.get("free_memory_gib") == 13.88
    assert f.values["total_gpu_memory_gib"].source == "free_memory_cut"
    assert f.get("gpu_memory_utilization") is None and f.error_kind != "free_memory_startup"
    whole = read_paste("ValueError: Free memory on device cuda:0 (13.88/15.99 GiB) on startup is less than desired "
                       "GPU memory utilization (0.9, 14.39 GiB). Decrease GPU memory utilization")
    assert whole.values["total_gpu_memory_gib"].source == "free_memory_startup"
    assert whole.get("gpu_memory_utilization") == 0.9


@pytest.mark.parametrize("text,host", [
    ("WARNING 09-30 23:37:32 [interface.py:391] Using 'pin_memory=False' as WSL is detected. "
     "This may slow down the performance.", "wsl"),
    ("Linux DESKTOP-1 5.15.167.4-microsoft-standard-WSL2 #1 SMP x86_64", "wsl"),
    ("| 系统 | Windows 11 + WSL2 Ubuntu 24.04.1 |", "wsl"),
    ("INFO  Windows detected, skipping ulimit adjustment.", "windows"),
    ("I run vLLM on Windows 11 with an RTX 3090", "windows"),
    ("|   0  NVIDIA GeForce RTX 3090      WDDM  |   00000000:01:00.0  On |                  N/A |", "windows"),
    ("    Driver Model\n        Current                           : WDDM\n", "windows"),
    ("Gemma 3 interleaves sliding windows 10 times; the context windows grow", None),
    ("ssh user-wsl@host and /home/wsl-data/models", None),
])
def test_windows_host(text, host):
    assert read_paste(text).extra.get("windows_host") == host


def test_what_one_request_needs_is_not_read_as_the_kv_pool():
    """Blog posts retell vLLM's admission check: "required about 36 GiB of KV cache" and "4.5 GiB KV
    cache is / needed" (its message broken over two lines) are one request's need, not the pool the
    cache got; a pool stated in the same words ("leaving 25.94 GiB of KV") still is one."""
    for need in ('vLLM refused to start at `--max-model-len 32768` with *"4.5 GiB KV cache is\nneeded"*\n',
                 "the requested 262K context required about 36 GiB of KV cache, exceeding the memory\n",
                 "it needs 24 GiB of KV cache for 128K\n", "would require roughly 36 GiB KV cache\n"):
        assert read_paste(need).get("kv_cache_gib") is None, need
    assert read_paste("leaving 25.94 GiB of KV for the cache\n").get("kv_cache_gib") == 25.94
    assert read_paste("The pool is 9.86 GiB of KV cache at 262K\n").get("kv_cache_gib") == 9.86


def test_the_start_up_report_printed_one_sentence_per_line_is_read_whole():
    """A log whose formatter pads the level and drops time and file (Python's `%(levelname)-8s`, as
    some Windows builds print vLLM's lines) splits the 0.27+ start-up report into one sentence per line:
    each line's level is a prefix, and the KV pool on the line after the usage is the report's own."""
    f = read_paste("INFO  Free memory on device (22.6/24.0 GiB) on startup.\n"
                   "INFO  Desired GPU memory utilization is (0.7, 16.8 GiB).\n"
                   "INFO  Actual usage is 10.7 GiB for consumed memory (weights + non-torch), 1.54 GiB for peak "
                   "activation, and 0.54 GiB for CUDAGraph memory.\n"
                   "INFO  Current kv cache memory in use is 4.55 GiB.\n")
    assert (f.get("gpu_memory_utilization"), f.get("activation_peak_gib"), f.get("cuda_graph_gib"),
            f.get("kv_available_gib")) == (0.7, 1.54, 0.54, 4.55)
    # a sentence that starts with a level word and one space keeps it
    assert read_paste("ERROR on start: CUDA out of memory").text.startswith("ERROR")


def test_a_start_up_report_cut_after_its_parts_keeps_them():
    """Posters shorten the 0.10.2+ report's long line ("… 1.84 GiB for non-torch memory, and..."): the
    weights, peak and non-torch figures printed before the cut are vLLM's own and are read; the graph
    figure the cut removed is not invented."""
    f = read_paste("worker.py:391] Free memory on device (78.6/79.2 GiB) on startup. Desired GPU memory utilization "
                   "is (0.9, 71.28 GiB). Actual usage is 37.99 GiB for weight, 4.71 GiB for peak activation, 1.84 GiB "
                   "for non-torch memory, and...")
    assert (f.get("weights_gib"), f.get("activation_peak_gib"), f.get("non_torch_gib")) == (37.99, 4.71, 1.84)
    assert f.get("cuda_graph_gib") is None


def test_graph_profiling_turned_off_gives_the_utilization_and_keeps_graphs_out_of_the_budget():
    """vLLM 0.20+ run with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 warns "… Consider re-enabling it (the
    default as of v0.21.0) and increasing --gpu-memory-utilization from 0.9200 to 0.9285.": 0.92 is the
    utilization in use, and the graphs were not set aside before the KV cache was sized."""
    from estimator.diagnosis import diagnose

    text = ("WARNING 04-24 20:42:43 [gpu_worker.py:498] CUDA graph memory profiling is disabled "
            "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, CUDA graph memory is not accounted for during "
            "KV cache allocation, which may require lowering --gpu-memory-utilization to avoid OOM. Consider "
            "re-enabling it (the default as of v0.21.0) and increasing --gpu-memory-utilization from 0.9200 to 0.9285.\n"
            "INFO 04-24 20:42:43 [gpu_worker.py:440] Available KV cache memory: 3.98 GiB\n")
    f = read_paste(text)
    assert f.get("gpu_memory_utilization") == 0.92 and f.extra.get("unprofiled_utilization") == 0.9285
    # 0.20.1 runs the V1 model runner, which sets the graph estimate aside when profiling is on
    run = "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.92 on an RTX 4090, vLLM 0.20.1\n"
    assert diagnose(run, explain=True).estimate["memory"]["cuda_graph_bytes"] > 0
    assert diagnose(text + run, explain=True).estimate["memory"]["cuda_graph_bytes"] == 0


def test_vllms_debug_line_gives_the_free_memory_at_start_up():
    """0.9.1+'s DEBUG "Initial free memory: F GiB, free memory: F' GiB, requested GPU memory: R GiB"
    (gpu_worker.py determine_available_memory): F is the card's free memory when vLLM started."""
    f = read_paste("(VllmWorker rank=2 pid=1608647) DEBUG 07-22 20:09:04 [gpu_worker.py:239] Initial free memory: "
                   "139.12 GiB, free memory: 81.52 GiB, requested GPU memory: 69.86 GiB\n")
    assert f.get("free_memory_gib") == 139.12 and f.extra.get("requested_gib") == 69.86


@pytest.mark.parametrize("text,key,value", [
    ("WARNING 02-13 15:00:42 arg_utils.py:1326] Setting max_num_batched_tokens to 2048 for OPENAI_API_SERVER "
     "usage context.", "max_num_batched_tokens", 2048),
    ("DEBUG 07-05 08:50:01 [arg_utils.py:1910] Defaulting max_num_seqs to 256 for openai-api-server usage context.",
     "max_num_seqs", 256),
    ("WARNING 01-10 10:00:00 arg_utils.py:1100] Setting max_num_seqs to 1024 for LLM_CLASS usage context.",
     "max_num_seqs", 1024),
])
def test_the_defaults_vllm_fills_in_are_read(text, key, value):
    assert read_paste(text).get(key) == value


@pytest.mark.parametrize("text,version", [
    ("$ vllm --version\nINFO 09-24 19:55:02 [__init__.py:216] Automatically detected platform cuda.\n0.10.2\n", "0.10.2"),
    ("$ vllm --version\n0.9.2\n", "0.9.2"),
    # a number on a later line that is not the command's answer
    ("$ vllm --version\nerror: no such option\nI then ran 0.10.2 of something else\n", None),
])
def test_vllm_version_commands_answer(text, version):
    assert read_paste(text).get("vllm_version") == version


def test_a_negative_available_kv_share_is_v1s_no_cache_blocks_failure():
    """V1 raises "No available memory for the cache blocks" for a KV share ≤ 0 right after printing it
    (kv_cache_utils.check_enough_kv_cache_memory); vllm#23278's log stops at "-2.14 GiB" and "EngineCore
    failed to start". A printed 0.00 may be a few MiB above zero, which that check lets through."""
    from estimator.paste import read_paste

    log = ("(EngineCore_0 pid=5839) INFO 08-20 18:04:10 [gpu_model_runner.py:2007] Model loading took 65.9651 GiB and "
           "12.799889 seconds\n"
           "(EngineCore_0 pid=5839) INFO 08-20 18:04:22 [gpu_worker.py:276] Available KV cache memory: {kv} GiB\n"
           "(EngineCore_0 pid=5839) ERROR 08-20 18:04:22 [core.py:700] EngineCore failed to start.\n")
    f = read_paste(log.format(kv="-2.14"))
    assert f.error_kind == "no_cache_blocks" and f.get("kv_available_gib") == -2.14
    assert read_paste(log.format(kv="0.00")).error_kind != "no_cache_blocks"


def test_an_error_after_two_detached_containers_belongs_to_neither_by_position():
    """Two `docker run -dit` containers start side by side (an LLM at TP 4 and 0.85, an embedding model
    with --task embed at 0.15); the error pasted after them is `docker logs` of one of them, not the
    second command's output. No run is the log's by position: the model named first is read, and its own
    command line sets the run's settings (0.85, TP 4); the embedding container's --task does not make the
    LLM a pooling run. Started in the foreground, the second command is the run that printed the error."""
    text = ("docker run -dit --rm --gpus '\"device=0,1,2,3\"' --ipc host \\\n"
            "    --name serve-vllm-llm vllm/vllm-openai:latest \\\n"
            "    --model /workspace/models/Qwen3-235B-A22B-Instruct-2507-FP8 \\\n"
            "    --tensor-parallel-size 4 --gpu-memory-utilization 0.85 --port 8000\n\n"
            "docker run -dit --rm --gpus '\"device=0\"' --ipc host \\\n"
            "    --name serve-vllm-embed vllm/vllm-openai:latest \\\n"
            "    --model /workspace/models/Qwen3-Embedding-8B \\\n"
            "    --task embed --gpu-memory-utilization 0.15 --port 8010\n\n"
            "ValueError: To serve at least one request with the models's max seq len (262144),\n"
            "(11.75 GiB KV cache is needed, which is larger than the available KV cache memory (8.03 GiB).\n")
    f = read_paste(text)
    assert f.get("model") == "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8" and f.get("tensor_parallel_size") == 4
    assert f.get("gpu_memory_utilization") == 0.85 and f.get("max_model_len") == 262144
    assert "gpu_memory_utilization" not in f.extra.get("alternatives", {})
    assert f.extra.get("runner") is None
    foreground = read_paste(text.replace("docker run -dit --rm", "docker run --rm -it"))
    assert foreground.get("model") == "Qwen/Qwen3-Embedding-8B" and foreground.get("gpu_memory_utilization") == 0.15
    assert foreground.extra.get("runner") == "pooling"


def test_the_line_that_introduces_the_log_names_its_model():
    """A post that tells of two models shows the log of the one named on the line that introduces it
    (llm-scaler#339: the 27B would not start, "Finally got vllm to work with qwen3.5:9b:" and the 9B's
    start-up log). The subject stays the model named first; the other is kept for the reply to weigh
    against vLLM's figures (diagnosis._other_named_model)."""
    log = ("(EngineCore_DP0 pid=524) INFO 03-31 18:58:06 [kv_cache_utils.py:1308] GPU KV cache size: 124,160 tokens\n"
           "(EngineCore_DP0 pid=524) INFO 03-31 18:58:06 [kv_cache_utils.py:1313] Maximum concurrency for 8,192 "
           "tokens per request: 53.62x\n")
    told = read_paste("Arc B70: impossible to get qwen3.5-27b running.\n[...]\nFinally got vllm to work with qwen3.5:9b:\n\n" + log)
    assert told.get("model") == "Qwen/qwen3.5-27b" and told.extra["log_intro_model"] == "Qwen/qwen3.5-9B"
    # the introducing line names no model, or two: no model is the log's by it
    listed = read_paste("- `Qwen/Qwen3.5-27B`: two cards\n- `Qwen/Qwen3.5-9B`: one card\n\nWith one B70:\n```\n" + log)
    both = read_paste("Qwen/Qwen3.5-27B and Qwen/Qwen3.5-9B on one B70:\n" + log)
    assert "log_intro_model" not in listed.extra and "log_intro_model" not in both.extra
    # it names the subject itself: nothing to weigh
    assert "log_intro_model" not in read_paste("qwen3.5:9b (not qwen3.5-27b) on a B70:\n" + log).extra

def test_vllms_model_loading_line_retold_in_prose_gives_the_weights():
    """"vLLM's own accounting, from launch.log: model loading took **53.62 GiB and 315.3 s**" is vLLM's
    "Model loading took 53.62 GiB memory and 315.3 seconds" retold: lower case, the figure in bold."""
    told = "vLLM's own accounting, from `launch.log`:\nmodel loading took **53.62 GiB and 315.3 s**; key-value cache 1.54 GiB."
    assert read_paste(told).get("weights_gib") == 53.62
    assert read_paste("The model weights take **14.25 GiB** per GPU.").get("weights_gib") == 14.25
    # the time it took is no weights figure
    assert read_paste("model loading took 315.3 s").get("weights_gib") is None


def test_intels_arc_pro_cards_and_models_named_by_version_are_read_in_prose():
    """"MiniMax M2.7 AutoRound on the 4x B70 vLLM/XPU setup": Intel's Arc Pro B-series (vLLM's XPU backend)
    with its count, and a large MoE family named by its version alone, which the Hub hyphenates."""
    f = read_paste("MiniMax M2.7 AutoRound on the 4x B70 vLLM/XPU setup")
    assert (f.get("gpu"), f.get("gpu_count"), f.get("model")) == ("B70", 4, "MiniMaxAI/MiniMax-M2.7")
    assert f.get("quantization") == "auto_round"      # the export named beside it
    assert read_paste("two Intel Arc Pro B70 cards").get("gpu") == "Intel Arc Pro B70"
    assert read_paste("Serving DeepSeek V3.2 on 8x H200").get("model") == "deepseek-ai/DeepSeek-V3.2"
    assert read_paste("DeepSeek V4 Flash, TP 2").get("model") == "deepseek-ai/DeepSeek-V4-Flash"
    assert read_paste("Kimi K2.5 on 8x H20").get("model") == "moonshotai/Kimi-K2.5"
    # a name glued to something else is not one ("model-B70", "DeepSeek V3.2-style")
    assert read_paste("model-B70").get("gpu") is None
    assert read_paste("a DeepSeek V3.2-style sparse attention").get("model") is None


def test_the_cuda_graph_profilers_minimal_kv_cache_is_not_the_runs_block_count():
    """From 0.18 the CUDA-graph memory profiler sizes a minimal KV cache for 0 bytes with the largest
    capture size as its block override (gpu_model_runner._init_minimal_kv_cache_for_profiling, the 0.19.0
    wheel), so every such log says "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512" right
    before "Profiling CUDA graph memory": 512 is no block count of the run (199,136 tokens of a 65,536
    context are not 512 blocks of anything). A user's override of a computed count still is."""
    log = ("(EngineCore pid=426304) INFO 03-28 13:09:15 [kv_cache_utils.py:826] Overriding num_gpu_blocks=0 with "
           "num_gpu_blocks_override=512\n"
           "(EngineCore pid=426304) INFO 03-28 13:09:15 [gpu_model_runner.py:5607] Profiling CUDA graph memory: "
           "PIECEWISE=51 (largest=512), FULL=35 (largest=256)\n"
           "(EngineCore pid=426304) INFO 03-28 13:09:19 [gpu_worker.py:456] Available KV cache memory: 48.8 GiB\n"
           "(EngineCore pid=426304) INFO 03-28 13:09:19 [kv_cache_utils.py:1319] GPU KV cache size: 199,136 tokens\n")
    assert read_paste(log).get("gpu_blocks") is None
    assert read_paste(log).get("kv_tokens_capacity") == 199_136
    user = "INFO 03-28 13:09:15 [kv_cache_utils.py:826] Overriding num_gpu_blocks=4913 with num_gpu_blocks_override=512\n"
    assert read_paste(user).get("gpu_blocks") == 512


def test_a_modal_log_whose_placeholder_cache_ran_out_of_memory():
    """Modal prints a bare `04:51:03` before vLLM's process tag: still a log line, so the markers on it place
    the OOM. The OOM came right after the graph profiler's placeholder ("Overriding num_gpu_blocks=0 with
    num_gpu_blocks_override=512", its own allocation of 512 blocks): after the profile run, in the graph phase,
    and 512 is no block count of the run (Qwen3.5-9B on an L4, vLLM 0.18.0)."""
    log = ("04:47:21 (EngineCore pid=57) Model loading took 17.66 GiB memory and 26.80 seconds\n"
           "04:50:47 (EngineCore pid=57) Initial profiling/warmup run took 126.05 s\n"
           "04:51:03 (EngineCore pid=57) Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512\n"
           "04:51:03 torch.OutOfMemoryError: CUDA out of memory.\n"
           "  Tried to allocate 1.03 GiB. GPU 0 has a total capacity of 22.03 GiB of which 875.12 MiB is free.\n")
    f = read_paste(log)
    assert f.get("gpu_blocks") is None and f.get("weights_gib") == 17.66
    assert f.error_kind == "cuda_oom_graph"


def test_an_engine_start_that_failed_on_a_non_memory_exception_names_it():
    """"EngineCore failed to start" is vLLM's generic failure; the exception the traceback ends with says
    what failed. One that speaks of no memory (weights a checkpoint lacks) is kept as the cause; any
    exception of memory (OutOfMemoryError, no cache blocks, an allocation) leaves none."""
    weights = ("(EngineCore pid=149) ERROR 04-02 12:18:35 [core.py:1108] EngineCore failed to start.\n"
               "ValueError: Following weights were not initialized from checkpoint:\n"
               "{'model.layers.16.input_layernorm.weight'}\n")
    f = read_paste(weights)
    assert f.get("error_kind") == "other"
    assert f.extra["root_exception"] == "ValueError: Following weights were not initialized from checkpoint:"
    # a kernel's crash is no memory shortage, whatever its words
    illegal = read_paste(weights.replace("ValueError: Following weights were not initialized from checkpoint:",
                                         "RuntimeError: CUDA error: an illegal memory access was encountered"))
    assert illegal.extra["root_exception"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    # vLLM's wrapper around the failure is no cause: with nothing else, none is named
    wrapper = ("(APIServer pid=1) ERROR 10-01 [core.py:708] EngineCore failed to start.\n"
               "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    assert read_paste(wrapper).get("error_kind") == "other" and "root_exception" not in read_paste(wrapper).extra
    assert "root_exception" not in read_paste(wrapper.replace(
        "Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "Worker failed with error 'CUDA error: out of memory', please check the stack trace above")).extra
    for memory in ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
                   "ValueError: No available memory for the cache blocks.",
                   "RuntimeError: CUDA error: out of memory"):
        f = read_paste(weights.replace("ValueError: Following weights were not initialized from checkpoint:", memory))
        assert "root_exception" not in f.extra, memory


def test_vllms_own_eager_mode_instruction_is_no_setting_of_the_run():
    """V0's worker/model_runner.py prints, before every capture, "To run the model in eager mode, set
    'enforce_eager=True' or use '--enforce-eager' in the CLI." — how to turn graphs off, said to every
    run that captures them; the run itself was not eager. The flag in the user's own command still is."""
    capture = ("(VllmWorkerProcess pid=13109) INFO 08-19 07:51:12 model_runner.py:1024] Capturing the model for CUDA "
               "graphs. This may lead to unexpected consequences if the model is not static. To run the model in "
               "eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.\n")
    assert read_paste(capture).get("enforce_eager") is None
    assert read_paste("vllm serve google/gemma-2-9b --enforce-eager\n" + capture).get("enforce_eager") is True
    # "consider" proposes as "try" does: vLLM 0.5's "If you are running out of memory, consider decreasing …"
    assert read_paste("Consider --max-model-len 8192 for this card.\n").get("max_model_len") is None


def test_an_oom_the_text_denies_is_no_failure():
    """"leaves room for draft-model overhead without OOM under load" says no OOM happened: a start-up log
    around it stays a start-up log. The same words without the denial are a serving OOM."""
    log = ("Available KV cache memory: 10.12 GiB\nGPU KV cache size: 169,314 tokens\n"
           "Maximum concurrency for 163,840 tokens per request: 1.03x\n")
    denied = "160k is a clean number that leaves room for prefix caching and draft-model overhead without OOM under load.\n"
    assert read_paste(denied + log).error_kind == "startup_log_ok"
    said = "With 200k it started, but then it hit OOM under load.\n"
    assert read_paste(said + log).error_kind == "cuda_oom_runtime"


@pytest.mark.parametrize("text,length", [
    ("Can I run Qwen/Qwen3-32B with 128k context on 2x RTX 4090?", 131_072),      # 128 × 1024, as cards count it
    ("I want a 32K context window for Qwen/Qwen3-32B", 32_768),
    ("what fits with a context length of 64k on an L40S?", 65_536),
    ("I run it at 200000 context", 200_000),                                       # the existing whole-number form
    ("the 128k context model is too big", None),                                   # the model's, not a wish
    ("a 128k context model on one GPU", None),
    # a command that sets the length wins; the thousands retell another run (vllm#33155's "85K" beside
    # max_model_len=$((5 * 1024)))
    ("I ran it with 85K context length.\nvllm serve X --max-model-len $max_model_len", None),
])
def test_a_context_in_thousands_is_the_length_asked_for(text, length):
    assert read_paste(text).get("max_model_len") == length


_RANGE_LOAD = "INFO 01-27 00:32:06 [backends.py:226] Directly load the compiled graph(s) for compile range ({}, {}) from the cache, took 0.808 s"
_RANGE_COMPILE = "INFO 04-24 10:21:30 [backends.py:390] Compiling a graph for compile range ({}, {}) takes 19.40 s"


@pytest.mark.parametrize("lines, expected", [
    # i33155 (0.14.1, one H100, --max-num-seqs 1 --max-model-len 5120): the engine core's own worker, one range
    ([("(EngineCore_DP0 pid=70073) ", _RANGE_LOAD, 1, 5120)], 5120),
    # a worker of several: the first range ends at the all-reduce fusion threshold, the second at the batch
    ([("(Worker_TP0 pid=9) ", _RANGE_COMPILE, 1, 256), ("(Worker_TP0 pid=9) ", _RANGE_COMPILE, 257, 8192)], 8192),
    # ... which alone says nothing about the batch
    ([("(Worker_TP0 pid=9) ", _RANGE_COMPILE, 1, 256)], None),
    # no prefix: who printed it is unknown
    ([("", _RANGE_COMPILE, 1, 2048)], None),
    # a compile size is a one-token range, not the batch
    ([("(EngineCore pid=258) ", _RANGE_COMPILE, 1, 2048), ("(EngineCore pid=258) ", _RANGE_COMPILE, 16384, 16384)], 2048),
])
def test_the_batch_is_read_from_the_last_compile_range(lines, expected):
    """vLLM 0.13+ ends its last compile range at max_num_batched_tokens (config/vllm.py _set_compile_ranges);
    earlier ranges end at fusion thresholds, which only a worker of a tensor-parallel group has on CUDA."""
    facts = read_paste("\n".join(prefix + tpl.format(s, e) for prefix, tpl, s, e in lines))
    assert facts.get("max_num_batched_tokens") == expected
    if expected is not None:
        assert facts.values["max_num_batched_tokens"].source == "compile_range"


_VLLM_RS = ("2026-01-20T15:24:43.340468Z  WARN vllm_rs::utils::kvcache_allocator: GPU 0: total 94.97 GB, free 30.17 GB, "
            "kv_fraction 95%, Max usable for KVCache 28.67 GB\n"
            "vllm-rs-med0  | 2026-01-20T15:24:43.340496Z ERROR vllm_rs::utils::kvcache_allocator: KVCache allocation "
            "failed: Insufficient GPU memory for KVCache allocation.\n"
            "When using `--max-num-seqs 2 --max-model-len 262144` on a `Qwen/Qwen3-VL-32B-Thinking-FP8`")


@pytest.mark.parametrize("text, engine", [
    (_VLLM_RS, "vllm.rs"),                                                     # guoqingbao/xinfer#195
    ("[2025-03-01 10:00:06 TP0] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB", "SGLang"),
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --context-length 32768\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB.", "SGLang"),
    ("llama_kv_cache_init:      CUDA0 KV buffer size =  1024.00 MiB\nllama-server -m qwen.gguf -c 32768", "llama.cpp"),
    ('time=2025-01-01T10:00:00.000Z level=INFO source=server.go:104 msg="system memory" total="31.3 GiB"', "Ollama"),
    ("2024-05-01T10:00:00.000000Z  INFO text_generation_launcher: Args { max_total_tokens: 32768 }",
     "Text Generation Inference"),
    ("lmdeploy serve api_server internlm/internlm2_5-7b-chat --cache-max-entry-count 0.8", "LMDeploy"),
    ("[TensorRT-LLM][INFO] Memory usage when calculating max tokens in paged kv cache: total: 79.10 GiB", "TensorRT-LLM"),
    # mlc-ai/mlc-llm#2026
    ("python -m mlc_llm.serve.server --model dist/Llama-2-7b-chat-hf-q4f16_1-MLC --device opencl:0\n"
     '[2024-03-25 15:35:00] INFO engine.py:238: Estimated KVCacheConfig "max_total_sequence_length": 21275.', "MLC LLM"),
    # mudler/vllm.cpp#357 (Jetson AGX Thor)
    ("vllm-server --model <dir> --host 127.0.0.1 --port 30899 --max-model-len 1024 --max-num-seqs 8", "vllm.cpp"),
    # vLLM's image run under a container of that name
    ("docker run --name vllm-server --gpus all vllm/vllm-openai:latest --model Qwen/Qwen2.5-7B-Instruct\n"
     "torch.OutOfMemoryError: CUDA out of memory.", None),
    # vLLM ran too (its command and log), or vLLM's own message is there: vLLM's paste
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct\nvllm serve Qwen/Qwen2.5-7B-Instruct\n"
     "Available KV cache memory: 8.11 GiB", None),
    ("llama-server runs it, but vLLM says: ValueError: The model's max seq len (32768) is larger than the maximum "
     "number of tokens that can be stored in KV cache (7344).", None),
    ("(EngineCore_DP0 pid=1) INFO 03-03 17:01:34 [gpu_worker.py:276] model loaded; --mem-fraction-static is SGLang's", None),
    # another engine named in prose only
    ("It works in SGLang and Ollama but not in vLLM: torch.OutOfMemoryError: CUDA out of memory.", None),
    # a post comparing the two engines, and one whose only sign of vLLM is its variables or its own flag
    ("SGLang holds twice the KV of vLLM here.\npython3 -m sglang.launch_server --model-path X --tp 4", None),
    ("export VLLM_USE_DEEP_GEMM=0\npython3 -m sglang.launch_server --model-path X", None),
    ("--gpu-memory-utilization 0.95 --max-model-len 8192\n[2025-03-01 10:00:06 TP0] KV Cache is allocated. #tokens: 9", None),
])
def test_another_engines_log_is_recognised(text, engine):
    assert read_paste(text).extra.get("foreign_engine") == engine


@pytest.mark.parametrize("text, expected", [
    # TRL's GRPOConfig hands these to its colocated vLLM engine (trl/trainer/grpo_config.py)
    ('GRPOConfig(use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.3, vllm_max_model_length=4096, '
     'vllm_tensor_parallel_size=2)', {"gpu_memory_utilization": 0.3, "max_model_len": 4096, "tensor_parallel_size": 2}),
    # OpenRLHF's flags for its vLLM engines (each engine TP 2)
    ("deepspeed --module openrlhf.cli.train_ppo_ray --vllm_num_engines 2 --vllm_tensor_parallel_size 2 "
     "--vllm_gpu_memory_utilization 0.5", {"gpu_memory_utilization": 0.5, "tensor_parallel_size": 2}),
    # a word that only ends in the prefix is no framework's setting
    ("myvllm_gpu_memory_utilization=0.5", {"gpu_memory_utilization": None}),
    ("a-vllm_gpu_memory_utilization=0.5", {"gpu_memory_utilization": None}),
])
def test_a_training_frameworks_vllm_settings_are_read(text, expected):
    f = read_paste(text)
    assert {k: f.get(k) for k in expected} == expected


def test_a_chinese_post_on_ascend_npus():
    """vllm-ascend#9099: "两台机器每台八张910B的卡，vllm是0.18，部署多节点GLM5.1" — two machines of eight 910B
    NPUs each, vLLM 0.18. The model name glued to the Chinese after it ("GLM-5.1多节点") ends at the
    Chinese; the count is the one before the card (八张, eight), not the machines' (两台)."""
    f = read_paste("两台机器每台八张910B的卡，vllm是0.18，部署多节点GLM-5.1多节点部署权重加载完会报错kv cache不足")
    assert (f.get("gpu"), f.get("gpu_count"), f.get("vllm_version")) == ("910B", 8, "0.18")
    assert f.get("model") == "zai-org/GLM-5.1"
    assert read_paste("Qwen/Qwen3-8B部署报错").get("model") == "Qwen/Qwen3-8B"
    assert read_paste("我用的是2张24G显存的RTX 3090，请问").get("gpu_count") == 2
    assert read_paste("vLLM版本：0.11.0").get("vllm_version") == "0.11.0"


def test_vllm_ascends_actual_usage_report_is_read():
    """vllm-ascend's NPU worker words vLLM's report its own way ("Actual usage: … for weights, … for NPU graph
    memory. … Current KV cache memory: 54.98 GiB."). Its parts add up without the graphs, captured after the KV
    cache was sized (56.37 − 54.98 = 1.39 = 1.14 + 0.22 + 0.03): the graph figure is not vLLM's profiled one."""
    f = read_paste(
        "(EngineCore pid=75652) INFO 05-27 11:41:12 [worker.py:546] Free memory on device (60.89/61.27 GiB) on "
        "startup. Desired GPU memory utilization is (0.92, 56.37 GiB). Actual usage: 1.14 GiB for weights, 0.22 GiB "
        "for peak activation, 0.03 GiB for non-torch memory, 0.09 GiB for NPU graph memory. Replace "
        "gpu_memory_utilization with `--kv-cache-memory=58786898124` (54.75 GiB) to fit into requested memory, or "
        "`--kv-cache-memory=63643382784` (59.27 GiB) to fully utilize NPU free memory. Current KV cache memory: "
        "54.98 GiB.")
    got = {k: f.get(k) for k in ("total_gpu_memory_gib", "gpu_memory_utilization", "weights_gib", "activation_peak_gib",
                                 "non_torch_gib", "kv_available_gib", "cuda_graph_gib")}
    assert got == {"total_gpu_memory_gib": 61.27, "gpu_memory_utilization": 0.92, "weights_gib": 1.14,
                   "activation_peak_gib": 0.22, "non_torch_gib": 0.03, "kv_available_gib": 54.98, "cuda_graph_gib": None}


def test_an_engine_core_log_is_v1_whatever_another_command_set():
    """vllm#17431: "VLLM_USE_V1=0 … --gpu-memory-utilization 0.4" is the run that worked; the error case's
    command sets nothing and its log is V1's engine core ("[core.py:396] EngineCore failed to start")."""
    text = ("### success case\nVLLM_USE_V1=0 python -m vllm.entrypoints.openai.api_server --model /models/Qwen3-8B "
            "--gpu-memory-utilization 0.4 --port 8001\n### error case\npython -m vllm.entrypoints.openai.api_server "
            "--model /models/Qwen3-8B --gpu-memory-utilization 0.4 --port 8001\n"
            "ERROR 04-30 10:20:36 [core.py:396] EngineCore failed to start.\n"
            "ERROR 04-30 10:20:36 [core.py:396] ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.\n")
    assert read_paste(text).extra.get("engine") == "v1"
    assert read_paste(text.replace("EngineCore failed to start.", "Engine failed to start.")).extra.get("engine") == "v0"
