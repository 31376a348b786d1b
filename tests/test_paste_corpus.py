"""Table-driven test over every case of ../shared/corpus/dev.jsonl: each settings/observed value
the case states AND the paste itself shows (bench/extraction.py `shows`: the value as printed
stands in the paste) is read back exactly, to the printed precision.

Values the reader does not read yet are listed in KNOWN_GAPS with the reason; they run as strict
xfails, so reading one makes the test fail until it is taken off the list. Nothing the paste does
not show is asserted (that would be faking), and nothing is special-cased in the reader.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from estimator.paste import read_paste

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "dev.jsonl"

_spec = importlib.util.spec_from_file_location("kvdoctor_bench_extraction", ROOT / "bench" / "extraction.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

# (case id, field) → why the reader does not read it (yet). Every entry is a real limitation.
KNOWN_GAPS: dict[tuple[str, str], str] = {
    ("vllm2136-2x4090-codellama13b-v025", "vllm_version"): "three versions compared; not guessed between",
    ("vllm2136-2x4090-codellama13b-v025", "gpu_blocks"): "three block counts compared; not guessed between",
    ("aphrodite262-a6000-4090-mistral7b-blocks", "gpu_blocks"): "prose '(1227 blocks)' among four counts",
    ("aphrodite1320-48gb-pixtral-profile", "kv_tokens_capacity"): "Aphrodite's own 'Maximum sequence length allowed' line",
    ("club3090-pr323-qwen-35b-a3b-single3090-v022", "gpu_memory_utilization"): "0.92, 0.94 and 0.95 all stated",
    ("club3090-pr323-qwen-35b-a3b-single3090-v022", "kv_tokens_capacity"): "'KV 0.78 GiB / 31,129 tokens' prose",
    ("vllm-16128-mistral-small31-awq-24gb-v1-kvalloc-oom", "gpu"): "'4A10' (count glued to the name)",
    ("recipes-810-qwen38-27b-fp8-2x5090-tp2", "quantization"): "markdown table row label",
    ("recipes-810-qwen38-27b-fp8-2x5090-tp2", "weights_gib"): "markdown table with two rows",
    ("qevos-qwen36-27b-fp8-4090-48gb-262k", "max_model_len"): "markdown table row",
    ("recipes-831-qwen38-27b-rtxpro6000-mamba-blocks", "quantization"): "markdown table row label",
    ("spark-vllm-docker-396-minimax-m27-awq-2xdgxspark", "gpu_memory_utilization"): "'makes 0.80 effectively 0.758' prose",
    ("spark-vllm-docker-396-minimax-m27-awq-2xdgxspark", "quantization"): "only in a recipe file name",
    ("vllm-51041-dsv4flash-0731-2xh20-56bytes", "kv_cache_gib"): "column-oriented markdown table",
    ("vllm-51041-dsv4flash-0731-2xh20-56bytes", "kv_tokens_capacity"): "column-oriented markdown table",
    ("vllm-51041-dsv4flash-0731-2xh20-56bytes", "max_concurrency"): "column-oriented markdown table",
    ("glm53flash-4xdgxspark-786k-16kib", "kv_tokens_capacity"): "'12 GiB/rank serves 786,432 tokens' prose",
    ("glm53flash-4xdgxspark-786k-16kib", "max_concurrency"): "'786,432 tokens / 3.0x' prose",
    ("talos-1995-qwen38-27b-fp8-2x3090-262k", "max_num_seqs"): "before/after markdown table",
    ("talos-1995-qwen38-27b-fp8-2x3090-262k", "kv_cache_gib"): "'2 x 4.99 = 9.98 GiB pool' arithmetic",
    ("talos-1995-qwen38-27b-fp8-2x3090-262k", "gpu_blocks"): "'~193 available' prose",
    ("club3090-pr334-gemma4-26b-a4b-awq-3090-42k", "quantization"): "'(AWQ + external MTP …)' prose",
    ("club3090-pr334-gemma4-26b-a4b-awq-3090-42k", "kv_cache_gib"): "'1.82 avail' is read as available only",
    ("vllm-39133-gemma4-31b-int4-2x24gb-25200tok", "quantization"): "'Gemma 4 31B INT4' (name with spaces)",
    ("recipes-762-dsv4flash-0731-8xb200-dp8-vs-tp8", "max_concurrency"): "'(156.9x vs 20.43x max concurrency' prose",
}
KNOWN_KIND_GAPS = {
    "club3090-pr323-qwen-35b-a3b-single3090-v022": "'OOMs at the KV-cache check' is prose, read as other",
}


def _cases() -> list[dict]:
    if not CORPUS.exists():
        return []
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


CASES = _cases()


def _field_params():
    out = []
    for case in CASES:
        for key, expected in bench.shown_fields(case).items():
            marks = ()
            if (case["id"], key) in KNOWN_GAPS:
                marks = (pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[(case["id"], key)]),)
            out.append(pytest.param(case["id"], key, expected, marks=marks, id=f"{case['id']}:{key}"))
    return out


_FACTS: dict[str, object] = {}


def _facts(case_id: str):
    if case_id not in _FACTS:
        case = next(c for c in CASES if c["id"] == case_id)
        _FACTS[case_id] = read_paste(case["paste"])
    return _FACTS[case_id]


pytestmark = pytest.mark.skipif(not CASES, reason="../shared/corpus/dev.jsonl not present")


@pytest.mark.parametrize("case_id,key,expected", _field_params() or [pytest.param("-", "-", None, id="no-corpus")])
def test_shown_value_read_back(case_id, key, expected):
    got = _facts(case_id).get(key)
    assert bench.same(key, expected, got), f"{key}: expected {expected!r}, read {got!r}"


def _kind_params():
    out = []
    for case in CASES:
        has, kind = bench.expected_kind(case)
        if has:
            marks = (pytest.mark.xfail(strict=True, reason=KNOWN_KIND_GAPS[case["id"]]),) if case["id"] in KNOWN_KIND_GAPS else ()
            out.append(pytest.param(case["id"], kind, marks=marks, id=case["id"]))
    return out


@pytest.mark.parametrize("case_id,kind", _kind_params() or [pytest.param("-", None, id="no-corpus")])
def test_error_kind(case_id, kind):
    assert _facts(case_id).error_kind == kind


def test_nothing_wrong_is_read():
    """Precision: over every shown field, a value that is read is the right one."""
    wrong = []
    for case in CASES:
        facts = _facts(case["id"])
        for key, expected in bench.shown_fields(case).items():
            got = facts.get(key)
            if got is not None and not bench.same(key, expected, got):
                wrong.append((case["id"], key, expected, got))
    assert wrong == []


def test_shows_helper_is_strict():
    # the helper's own rules, checked by hand
    assert bench.shows("capacity (73,792)", "kv_tokens_capacity", 73792)
    assert not bench.shows("0.95", "gpu_memory_utilization", 0.9)          # 0.9 is not inside 0.95
    assert bench.shows("-gmu .97", "gpu_memory_utilization", 0.97)
    assert bench.shows("(62.00 GiB KV cache", "kv_needed_gib", 62.0)
    assert not bench.shows("[-1, 32, 16, 16, 8]", "block_size", 16)         # a bare 16 is no block size
    assert bench.shows("the block size of 16", "block_size", 16)
    assert not bench.shows("dimension -1", "tensor_parallel_size", 1)
    assert bench.shows("on two 4090s", "gpu_count", 2)
    assert not bench.shows("'kv_cache_dtype': 'fp8'", "quantization", "fp8")
    assert bench.shows("Qwen3-235B-A22B-FP8", "quantization", "fp8")
    assert bench.shows("dtype=torch.bfloat16", "dtype", "bfloat16")
    assert not bench.shows("kv_cache_dtype=auto", "dtype", "auto")
