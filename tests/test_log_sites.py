"""Which releases printed a paste's log lines (estimator/log_sites.py), and the table behind it
(bench/log_sites_table.py). The releases below were read by hand from the published wheels:
vllm/worker/model_runner.py logs "Starting to load model %s..." at line 1110 in 0.7.0, 0.7.2, 0.7.3
and 0.8.0–0.8.4 (1111 in 0.7.1, 1108 in 0.8.5); vllm/model_executor/models/vision.py's
`logger.warning_once(` for "Current `vllm-flash-attn` has a bug inside vision module" starts on line
93 in 0.8.4 and 0.8.5 (94 in 0.8.0, 97 in 0.8.1–0.8.2, 101 in 0.8.3, 90 in 0.9.0)."""

from __future__ import annotations

import importlib.util
import json
import time
from importlib import resources
from pathlib import Path

import pytest

from estimator.diagnosis import diagnose
from estimator.log_sites import log_line_releases, message_key
from estimator.paste import read_paste
from estimator.vllm import RELEASES

ROOT = Path(__file__).resolve().parents[1]
LOAD = "INFO 04-17 15:09:36 [model_runner.py:1110] Starting to load model /models/Qwen2.5-VL-7B-Instruct...\n"
VISION = ("WARNING 04-17 15:09:36 [vision.py:93] Current `vllm-flash-attn` has a bug inside vision module, so we "
          "use xformers backend instead. You can run `pip install flash-attn` to use flash-attention backend.\n")
V0_ERROR = ("ERROR 04-17 15:10:09 [engine.py:448] ValueError: The model's max seq len (8192) is larger than the "
            "maximum number of tokens that can be stored in KV cache (2400). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")


def test_one_line_names_the_releases_whose_code_logs_it_there():
    first, last, agree, example = log_line_releases(LOAD)
    assert (first, last, agree, example) == ("0.7.0", "0.8.4", 1, "model_runner.py:1110")
    assert log_line_releases(VISION)[:3] == ("0.8.4", "0.8.5", 1)


def test_lines_together_narrow_to_the_releases_most_of_them_agree_with():
    assert log_line_releases(LOAD + VISION)[:3] == ("0.8.4", "0.8.4", 2)


def test_the_message_must_be_the_one_that_line_logs():
    assert log_line_releases("INFO 04-17 15:09:36 [model_runner.py:1110] Loading weights took 3 s\n") is None
    assert log_line_releases("INFO 04-17 15:09:36 [model_runner.py:1109] Starting to load model x...\n") is None
    assert log_line_releases("INFO 04-17 15:09:36 [my_launcher.py:1110] Starting to load model x...\n") is None


def test_old_prefixes_shortened_paths_and_cut_messages_are_read():
    # before 0.8.0 the prefix had no bracket; 0.11+ may print a shortened path; a paste may cut a line
    old = "INFO 01-14 12:36:51 model_runner.py:1110] Starting to load model meta-llama/Llama-3.1-8B...\n"
    assert log_line_releases(old)[:2] == ("0.7.0", "0.8.4")
    assert log_line_releases("INFO [worker/model_runner.py:1110] Starting to load model x\n")[:2] == ("0.7.0", "0.8.4")
    assert log_line_releases("INFO [model_runner.py:1110] Starting to lo[...truncated]")[:2] == ("0.7.0", "0.8.4")


def test_a_line_no_release_has_does_not_outvote_the_rest():
    # a build of main moved one line: the other lines still date it
    moved = "INFO 04-17 15:09:36 [model_runner.py:1234] Starting to load model x...\n"
    assert log_line_releases(moved + LOAD + VISION)[:3] == ("0.8.4", "0.8.4", 2)


def test_a_message_the_voted_releases_never_log_is_a_build_between_releases():
    # "GPU KV cache size" at kv_cache_utils.py:864 is 0.10.2's line; "Auto-fit max_model_len" is logged by
    # that file only from 0.14.0 (the wheels): a log with both ran code of neither, and dates nothing
    size = "INFO [kv_cache_utils.py:864] GPU KV cache size: 1,723,584 tokens\n"
    auto_fit = ("INFO [kv_cache_utils.py:1500] Auto-fit max_model_len: reduced from 262144 to 40960 to fit in "
                "available GPU memory\n")
    assert log_line_releases(size)[:2] == ("0.10.2", "0.10.2")
    assert log_line_releases(size + auto_fit) is None


def test_a_traceback_logged_line_by_line_is_one_vote():
    # multiprocessing/engine.py logs `logger.exception(e)` at 366 in 0.6.4–0.6.6 (448 in 0.8.x): each line
    # of the traceback carries that prefix, but it is one logging call — five of them do not outvote two
    # other lines that agree on 0.8.4
    traceback = "".join(f"ERROR 11-18 18:07:28 [engine.py:366] {part}\n" for part in (
        "Traceback (most recent call last):", '  File "/usr/lib/vllm/engine.py", line 1, in run',
        "    raise ValueError(", "ValueError: no", "  During handling"))
    assert log_line_releases(traceback)[:3] == ("0.6.4", "0.6.6", 1)
    assert log_line_releases(traceback + LOAD + VISION)[:3] == ("0.8.4", "0.8.4", 2)


def test_message_key_stops_at_the_first_placeholder():
    assert message_key("Starting to load model %s...") == "Starting to load model"
    assert message_key("GPU KV cache size: {num_tokens:,} tokens") == "GPU KV cache size:"
    assert message_key("100%% done  %d") == "100% done"
    assert len(message_key("x" * 100)) == 32


def test_hostile_input_costs_little():
    t = time.perf_counter()
    # 299 lines at lines no release logs at, each with a message the file logs elsewhere: every one is
    # checked against the file's messages, once per message (log_sites._file_keys)
    size = "INFO [kv_cache_utils.py:864] GPU KV cache size: 1,723,584 tokens\n"
    moved = "".join(f"INFO [gpu_model_runner.py:{9000 + i}] Model loading took {i} GiB\n" for i in range(299))
    assert log_line_releases(size + moved)[:2] == ("0.10.2", "0.10.2")
    assert log_line_releases("[a.py:1]" * 200_000) is None
    assert log_line_releases(("x.py:1] " + "a" * 300 + "\n") * 5_000) is None
    assert log_line_releases("\x00\xff" * 100_000 + ".py:") is None
    assert time.perf_counter() - t < 5


def test_the_table_covers_every_release_kvdoctor_knows():
    # a release added to RELEASES without re-running bench/log_sites_table.py would date its logs
    # as the newest release the table read
    import gzip

    table = json.loads(gzip.decompress(resources.files("estimator").joinpath("data/vllm_log_sites.json.gz")
                                       .read_bytes()))
    assert table["releases_read"] == [v for v, _day in RELEASES]


def test_the_paste_reader_narrows_the_version_and_diagnose_says_why():
    # GPUStack's Qwen2.5-VL-7B V0 log (gpustack#1800) names no release: the bracketed prefix says ≥ 0.8.0
    # only. Its lines are 0.8.4's, where V0 keeps the dummy media in the profile run; 0.8.0–0.8.2 would
    # profile a text-only prompt (vllm.V0_TEXT_ONLY_DUMMY), a different memory state.
    paste = ("vllm serve Qwen/Qwen2.5-VL-7B-Instruct --max-model-len 8192\nGPU: NVIDIA GeForce RTX 3090\n"
             + LOAD + VISION + V0_ERROR)
    facts = read_paste(paste)
    assert facts.extra["version_hint"] == ("0.8.4", "0.8.4")
    assert facts.extra["log_line_releases"][:2] == ["0.8.4", "0.8.4"]
    text = " ".join(diagnose(paste, offline=True).assumptions)
    assert "modelled as 0.8.4" in text
    assert "[model_runner.py:1110] …) match vLLM 0.8.4's code" in text
    assert "text-only prompt" not in text
    # without the lines the same paste is modelled as the oldest release its format allows
    plain = " ".join(diagnose(paste.replace(LOAD + VISION, ""), offline=True).assumptions)
    assert "modelled as 0.8.0" in plain and "text-only prompt" in plain


def test_slack_links_and_discourse_html_around_the_lines_are_read_through():
    # Slack links "model_runner.py" as a domain (.py is Paraguay's) and sends `<http://…|…>`; Discourse
    # sends HTML with the backticks as <code>: the reader's clean text unwraps both
    slack = LOAD.replace("[model_runner.py:1110]", "[<http://model_runner.py|model_runner.py>:1110]") + \
        VISION.replace("[vision.py:93]", "[<http://vision.py|vision.py>:93]")
    assert read_paste(slack).extra["log_line_releases"][:2] == ["0.8.4", "0.8.4"]
    html = "<p>" + LOAD.strip() + "</p>\n<p>" + VISION.strip().replace("`vllm-flash-attn`",
                                                                         "<code>vllm-flash-attn</code>") + "</p>\n"
    assert read_paste(html).extra["log_line_releases"][:3] == ["0.8.4", "0.8.4", 2]


def test_lines_that_contradict_the_wording_are_dropped():
    # "GPU KV cache size: N tokens, Maximum concurrency …" on one line is 0.28+ wording; a model_runner
    # line of 0.7–0.8 beside it (a fork, a quoted older log) does not move the version
    one_line = ("INFO 11-02 10:00:00 [kv_cache_utils.py:1] GPU KV cache size: 75,840 tokens, Maximum concurrency "
                "for 120,000 tokens per request: 2.48x\n")
    facts = read_paste(one_line + LOAD)
    assert "log_line_releases" not in facts.extra
    assert facts.extra["version_hint"] == read_paste(one_line).extra["version_hint"]


def _builder():
    spec = importlib.util.spec_from_file_location("log_sites_table", ROOT / "bench" / "log_sites_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_builder_takes_the_line_a_call_starts_on_and_its_literal_start():
    source = '\n'.join([
        "import warnings",
        "logger.info(",                                   # 2: a call over three lines
        "    'Starting to load model %s...',",
        "    name)",
        "logger.warning_once(f'Using {backend} backend')",   # 5: an f-string up to its first field
        "logger.debug('a' + 'b %d' % 3)",                 # 6: a concatenation up to its placeholder
        "warnings.warn('not a log line')",                 # 7: not vLLM's logger
        "self.logger.error('Engine %s failed', x)",        # 8
        "def report(free):",
        "    msg = 'nothing yet'",
        "    msg = (f'Free memory on device ({free} GiB) on startup.'",
        "           ' Desired GPU memory utilization')",
        "    logger.info(msg)",                            # 13: the variable's last assignment before it
        "    logger.info(other)",                          # 14: nothing to read: any message
    ])
    assert _builder().log_sites(source) == [(2, "Starting to load model"), (5, "Using"), (6, "ab"),
                                             (8, "Engine"), (13, "Free memory on device ("), (14, "")]
    assert _builder().log_sites("def broken(:\n") == []


@pytest.mark.parametrize("runs, indices", [([[0, 2], 5], {0, 1, 2, 5}), ([3], {3})])
def test_runs_round_trip(runs, indices):
    from estimator.log_sites import _indices

    assert _builder()._runs(sorted(indices)) == runs
    assert _indices(runs) == indices
