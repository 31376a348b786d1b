"""bench/accuracy.py reads a corpus case the way vLLM saw it (the harness itself, not timings)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def accuracy():
    before = os.environ.get("HF_HUB_OFFLINE")
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "bench" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # the bench runs offline; the tests after this one talk to the fake hub
    if before is None:
        os.environ.pop("HF_HUB_OFFLINE", None)
    else:
        os.environ["HF_HUB_OFFLINE"] = before
    return mod


def test_a_corpus_total_taken_from_nvidia_smi_is_converted(accuracy):
    """qevos's 47.99 GiB is nvidia-smi's 49,140 MiB (its notes say so); torch sees that less the
    driver's reservation: the cards showing 49,140 MiB disagree on it (RTX A6000, RTX 6000 Ada), so
    the usual 480 MiB: (49,140 − 480) / 1,024 = 47.52 GiB, not 47.99."""
    case = {"gpu": "NVIDIA GeForce RTX 4090 48GB (modded; 49,140 MiB)",
            "observed": {"total_gpu_memory_gib": 47.99},
            "notes": "Failed at 262,144 by 0.04 GiB. total_gpu_memory_gib derived from 49,140 MiB."}
    assert accuracy.smi_total_mib(case) == 49140
    assert accuracy.gpu_for(case) == "49140MiB"
    from estimator.gpus import lookup_gpu

    assert lookup_gpu("49140MiB").total_bytes == (49140 - 480) * 2**20
    # a total vLLM printed itself is used as it is
    printed = {"gpu": "NVIDIA L40S 48GB", "observed": {"total_gpu_memory_gib": 44.42}, "notes": "TP2 run."}
    assert accuracy.smi_total_mib(printed) is None
    # notes naming another MiB figure than the total do not convert it
    other = dict(case, notes="total_gpu_memory_gib is the sum of 16303 MiB and 32607 MiB.")
    assert accuracy.smi_total_mib(other) is None


def test_settings_a_case_leaves_empty_come_from_its_paste(accuracy):
    """A case whose fields leave TP, utilization and the card empty while its paste states them
    (club-3090's Qwen3.6 logs: `--tensor-parallel-size 2` in the command, the card in nvidia-smi)
    is run as the paste says, not with the defaults (one GPU, 0.9, an assumed H100); a field that
    is set still wins over the paste."""
    paste = ("$ vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --gpu-memory-utilization 0.8 "
             "--max-model-len 32768\n"
             "|   0  NVIDIA GeForce RTX 3090        On  | 00000000:01:00.0 Off |                  N/A |\n"
             "| 30%   40C    P8    20W / 350W |      1MiB / 24576MiB |      0%      Default |\n")
    case = {"paste": paste, "date": "2025-09-01", "tensor_parallel_size": None,
            "gpu_memory_utilization": None, "max_model_len": None, "gpu": None, "observed": {}}
    s = accuracy.settings_for(case)
    assert (s.tensor_parallel_size, s.gpu_memory_utilization, s.max_model_len) == (2, 0.8, 32768)
    assert "3090" in accuracy.gpu_for(case)
    s = accuracy.settings_for(dict(case, gpu_memory_utilization=0.95, tensor_parallel_size=1))
    assert (s.tensor_parallel_size, s.gpu_memory_utilization) == (1, 0.95)


def test_llm_keyword_arguments_in_the_notes_are_read_both_ways(accuracy):
    """`LLM(enable_chunked_prefill=False, …)` recorded in a case's other_flags turns chunked prefill
    off (V0 then profiles max_model_len tokens); it used to be dropped, leaving vLLM's default."""
    s = accuracy.settings_for({"paste": "", "other_flags": "LLM(enable_chunked_prefill=False, enforce_eager=True, "
                                                           "block_size=32)"})
    assert (s.enable_chunked_prefill, s.enforce_eager, s.block_size) == (False, True, 32)


def test_a_printed_total_wins_over_a_nominal_card_size(accuracy):
    """vllm#13882 printed total_gpu_memory 8.00 GiB for an "RTX 4060 (8 GB)", a card the catalog does
    not have: its "8 GB" is only a nominal size (6.98 GiB by the decimal rule), so the printed total
    is what vLLM saw and what the bench sizes."""
    case = {"gpu": "RTX 4060 (8 GB)", "observed": {"total_gpu_memory_gib": 8.0}, "notes": ""}
    assert accuracy.gpu_for(case) == "8.0GiB"
