"""Which releases can serve an architecture: estimator/data/vllm_architectures.json (vLLM's model
registry per release, built by bench/registry_table.py) and what the estimate and the paste dating
do with it."""

from __future__ import annotations

import json
from importlib import resources

from test_memory import load

from estimator.diagnosis import diagnose
from estimator.memory import estimate
from estimator.render import render_text
from estimator.units import GiB
from estimator.vllm import (
    NEWEST,
    RELEASES,
    EngineSettings,
    registry_span,
    release_serving,
    unlisted_architecture_note,
)

KIMI_LINEAR_LOG = (
    "vllm serve cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit --gpu-memory-utilization 0.95 --max_model_len 120000 "
    "--tensor_parallel 2 --max_num_batched_tokens 64000 --max-num-seqs 8 --trust-remote-code\n"
    "GPUs: 2x RTX 3090\n"
    "(Worker_TP0 pid=26347) INFO 11-06 10:51:48 [gpu_worker.py:349] Available KV cache memory: 2.30 GiB\n"
    "(EngineCore_DP0 pid=26283) INFO 11-06 10:51:48 [kv_cache_utils.py:1229] GPU KV cache size: 75,840 tokens\n")


def test_the_table_covers_every_release_kvdoctor_knows():
    # a release added to RELEASES without re-running bench/registry_table.py would be judged on the
    # previous release's registry
    table = json.loads(resources.files("estimator").joinpath("data/vllm_architectures.json").read_text())
    assert table["releases_read"] == [v for v, _day in RELEASES]


def test_spans_agree_with_vllms_own_history():
    # Gemma 3 came out on 2025-03-12 and 0.8.0 (2025-03-18) brought it; Qwen3 came with 0.8.4;
    # DeepSeek-V4 with 0.20.0 (memory.py's DeepSeek-V4 layout starts there); the last releases of
    # Mllama and Phi-3-small are the ones vLLM's own _PREVIOUSLY_SUPPORTED_MODELS names (0.10.2, 0.9.2)
    assert registry_span("Gemma3ForConditionalGeneration") == ("0.8.0", None)
    assert registry_span("Qwen3ForCausalLM") == ("0.8.4", None)
    assert registry_span("DeepseekV4ForCausalLM") == ("0.20.0", None)
    assert registry_span("MllamaForConditionalGeneration") == ("0.6.2", "0.10.2")
    assert registry_span("Phi3SmallForCausalLM")[1] == "0.9.2"
    assert registry_span("LlamaForCausalLM") == ("0.0.1", None)
    assert registry_span("MyRemoteCodeForCausalLM") is None


def test_release_serving_is_the_nearest_release_that_lists_the_model():
    assert release_serving("Qwen3ForCausalLM", (0, 6, 4)) == "0.8.4"
    assert release_serving("Qwen3ForCausalLM", (0, 8, 4)) is None
    assert release_serving("MllamaForConditionalGeneration", (0, 11, 0)) == "0.10.2"
    assert release_serving("MllamaForConditionalGeneration", (0, 10, 2)) is None
    assert release_serving("MyRemoteCodeForCausalLM", (0, 6, 4)) is None      # unknown: nothing claimed


def test_the_note_says_whether_that_release_refuses_or_falls_back_to_transformers():
    # 0.7.2 is the first release with the Transformers backend (TransformersModel in its registry)
    old = unlisted_architecture_note("Qwen3ForCausalLM", (0, 7, 1), "0.7.1")
    assert "vLLM 0.7.1 does not list Qwen3ForCausalLM in its model registry (listed from 0.8.4)" in old
    assert "refuses the model" in old and "Transformers" not in old
    newer = unlisted_architecture_note("Qwen3ForCausalLM", (0, 8, 3), "0.8.3")
    assert "only through its Transformers backend" in newer
    gone = unlisted_architecture_note("MllamaForConditionalGeneration", (0, 11, 0), "0.11.0")
    assert "(listed from 0.6.2 to 0.10.2)" in gone
    assert unlisted_architecture_note("Qwen3ForCausalLM", (0, 8, 4), "0.8.4") is None


def test_an_estimate_at_a_release_that_cannot_serve_the_model_says_so():
    spec = load("Qwen/Qwen3-8B")
    old = estimate(spec, gpu_total_bytes=int(23.64 * GiB), settings=EngineSettings(vllm_version="0.6.4"))
    assert any("vLLM 0.6.4 does not list Qwen3ForCausalLM" in a for a in old.assumptions)
    new = estimate(spec, gpu_total_bytes=int(23.64 * GiB), settings=EngineSettings(vllm_version="0.8.4"))
    assert not any("Qwen3ForCausalLM" in a for a in new.assumptions)


def test_an_undated_log_of_a_model_newer_than_the_assumed_release_is_modelled_at_its_first_release():
    # posted 2025-11-06: the newest release then was 0.11.0 (2025-10-02), whose registry has no
    # KimiLinearForCausalLM; 0.11.1 (2025-11-18) is the first that has it: the author ran main. The log's
    # own lines (gpu_worker.py:349, kv_cache_utils.py:1229) are 0.11.1–0.11.2's and would say so first
    # (log_sites): moved to a line no release logs at, the registry alone dates it.
    from test_paste import unlined

    lined = diagnose(KIMI_LINEAR_LOG, offline=True, explain=True, posted="2025-11-06")
    assert lined.estimate["settings"]["vllm_version"] == "0.11.1"
    assert any("match vLLM 0.11.1–0.11.2's code" in a for a in lined.assumptions)
    d = diagnose(unlined(KIMI_LINEAR_LOG), offline=True, explain=True, posted="2025-11-06")
    assert d.estimate["settings"]["vllm_version"] == "0.11.1"
    note = ("version not stated; vLLM's model registry lists KimiLinearForCausalLM from 0.11.1: modelled as 0.11.1, "
            "the first release that can serve the model")
    assert d.assumptions[0] == note
    assert note in render_text(d)             # among the assumptions a reply shows
    assert not any("does not list" in a for a in d.assumptions)


def test_a_stated_release_is_kept_and_told_it_cannot_serve_the_model():
    d = diagnose("vLLM API server version 0.11.0\n" + KIMI_LINEAR_LOG, offline=True, explain=True, posted="2025-11-06")
    assert d.estimate["settings"]["vllm_version"] == "0.11.0"
    assert any("vLLM 0.11.0 does not list KimiLinearForCausalLM in its model registry (listed from 0.11.1)" in a
               for a in d.assumptions)


def test_with_no_release_asked_for_a_dropped_model_is_estimated_at_the_last_release_that_served_it():
    # Mllama left vLLM after 0.10.2 (encoder-decoder models went with V0): the newest release would
    # only describe a run vLLM refuses
    spec = load("meta-llama/Llama-3.2-11B-Vision-Instruct")
    est = estimate(spec, gpu_total_bytes=int(79.25 * GiB), settings=EngineSettings())
    assert est.settings.vllm_version == "0.10.2"
    assert ("vLLM version not given: assumed 0.10.2, the last release whose model registry lists "
            "MllamaForConditionalGeneration") in est.assumptions
    assert not any("does not list" in a for a in est.assumptions)
    listed = estimate(load("Qwen/Qwen3-8B"), gpu_total_bytes=int(79.25 * GiB), settings=EngineSettings())
    assert listed.settings.vllm_version == NEWEST


ARCH_ERROR = ("ValueError: Model architectures ['{}'] are not supported for now. Supported architectures: "
              "dict_keys(['AquilaModel', 'AquilaForCausalLM', 'LlamaForCausalLM'])\n")


def test_the_registry_error_is_read_with_its_architecture_names():
    from estimator.paste import read_paste

    assert read_paste(ARCH_ERROR.format("Qwen3ForCausalLM")).extra["unsupported_architectures"] == ["Qwen3ForCausalLM"]
    two = "Model architectures ['LlavaQwenForCausalLM', \"Qwen2ForCausalLM\"] are not supported for now."
    assert read_paste(two).extra["unsupported_architectures"] == ["LlavaQwenForCausalLM", "Qwen2ForCausalLM"]
    assert "unsupported_architectures" not in read_paste("Model architectures [] are not supported").extra


def test_a_model_newer_than_the_release_gets_the_release_to_upgrade_to_and_the_bots_stay_silent():
    text = "INFO 05-01 10:00:00 api_server.py:981] vLLM API server version 0.6.4.post1\n" + \
        ARCH_ERROR.format("Qwen3ForCausalLM")
    d = diagnose(text, offline=True, explain=True)
    assert d.error_kind is None and d.estimate is None and d.missing == []
    assert d.summary.startswith("**Not a memory problem**: vLLM 0.6.4.post1 does not have the model's architecture "
                                "(`Qwen3ForCausalLM`) in its model registry")
    assert "lists `Qwen3ForCausalLM` from 0.8.4. Fix: upgrade to vLLM 0.8.4 or newer" in d.summary
    assert diagnose(text, offline=True) is None        # not a memory problem: no bot reply


def test_a_dropped_model_gets_the_last_release_that_had_it():
    d = diagnose(ARCH_ERROR.format("MllamaForConditionalGeneration"), offline=True, explain=True)
    assert "from 0.6.2 to 0.10.2; later releases dropped it" in d.summary
    assert "`pip install vllm==0.10.2`" in d.summary


def test_a_name_no_release_lists_and_a_release_that_lists_it_are_told_apart():
    unknown = diagnose(ARCH_ERROR.format("FooBarForCausalLM"), offline=True, explain=True)
    assert f"No vLLM release up to {NEWEST} lists it" in unknown.summary
    listed = diagnose("vLLM API server version 0.9.2\n" + ARCH_ERROR.format("Qwen3ForCausalLM"), offline=True,
                      explain=True)
    assert "from 0.8.4, 0.9.2 included: the message likely comes from another vLLM installation" in listed.summary


def test_every_catalog_model_is_one_some_vllm_release_serves():
    # a bundled config whose architectures no release lists would be estimated for a run vLLM refuses
    catalog = resources.files("estimator").joinpath("catalog")
    unserved = []
    for entry in catalog.iterdir():
        if entry.name.endswith(".config.json"):
            archs = json.loads(entry.read_text()).get("architectures") or []
            if archs and not any(registry_span(a) for a in archs):
                unserved.append((entry.name, archs))
    assert unserved == []


def test_a_release_newer_than_any_kvdoctor_has_read_is_said_to_be_modelled_with_the_newest_rules():
    spec = load("Qwen/Qwen3-8B")
    major, minor, _patch = (int(x) for x in NEWEST.split("."))
    later = f"{major}.{minor + 1}.0"
    est = estimate(spec, gpu_total_bytes=int(23.64 * GiB), settings=EngineSettings(vllm_version=later))
    assert (f"vLLM {later} is newer than the newest release kvdoctor has read ({NEWEST}): modelled with {NEWEST}'s "
            "rules") in est.assumptions
    same = estimate(spec, gpu_total_bytes=int(23.64 * GiB), settings=EngineSettings(vllm_version=NEWEST))
    assert not any("is newer than the newest release" in a for a in same.assumptions)


def test_latest_and_nightly_are_read_as_the_newest_release():
    spec = load("Qwen/Qwen3-8B")
    for word in ("latest", "nightly", "Main"):
        est = estimate(spec, gpu_total_bytes=int(23.64 * GiB), settings=EngineSettings(vllm_version=word))
        assert est.settings.vllm_version == NEWEST
        assert f"vLLM {word!r} read as {NEWEST}, the newest release kvdoctor has read" in est.assumptions


def test_a_release_the_message_formats_rule_out_is_not_modelled_even_if_it_lists_the_model():
    # "GPU KV cache size: …, Maximum concurrency …" on one line is 0.28+; Mllama left after 0.10.2:
    # the run went through something kvdoctor does not see, so the formats' release stays and the
    # estimate says that release does not list the model
    paste = ("vllm serve meta-llama/Llama-3.2-11B-Vision-Instruct --max-model-len 131072\nGPU: H100 80GB\n"
             "(EngineCore pid=1) INFO 11-01 10:00:00 [kv_cache_utils.py:1300] GPU KV cache size: 88,000 tokens, "
             "Maximum concurrency for 131,072 tokens per request: 0.67x\n")
    d = diagnose(paste, offline=True, explain=True, posted="2026-11-01")
    assert d.estimate["settings"]["vllm_version"] == "0.32.0"      # the newest release of that day
    assert any("vLLM 0.32.0 does not list MllamaForConditionalGeneration" in a for a in d.assumptions)
    assert not any("the last release that served the model" in a for a in d.assumptions)


def test_the_kv_need_dating_skips_releases_that_cannot_serve_the_model():
    # the need vLLM printed agrees only with releases before 0.8.4, none of which lists Qwen3: no release
    # is chosen from them (without the registry, 0.8.3 — the newest of them — would be)
    from types import SimpleNamespace

    from estimator.paste import read_paste
    from estimator.release_choice import release_from_need
    from estimator.vllm import parse_version

    facts = read_paste("ValueError: To serve at least one request with the models's max seq len (40960), (99.00 GB KV "
                       "cache is needed, which is larger than the available KV cache memory (3.00 GB).")
    est = estimate(load("Qwen/Qwen3-8B"), gpu_total_bytes=int(23.64 * GiB), settings=EngineSettings(vllm_version="0.9.2"))
    printed = SimpleNamespace(kv_needed_bytes=99 * GiB, max_model_len=40960)
    tried = []

    def run(version):
        tried.append(version)
        return printed if parse_version(version) < (0, 8, 4) else est

    assert release_from_need(facts, est, "0.9.2", run) is None
    assert tried and all(parse_version(v) >= (0, 8, 4) for v in tried)


def test_the_derived_qwen3_next_instruct_config_says_it_is_derived():
    from estimator.api import load_model

    spec = load_model("Qwen/Qwen3-Next-80B-A3B-Instruct", offline=True).spec
    assert spec.architecture == "Qwen3NextForCausalLM"
    assert any("DERIVED, not official" in a for a in spec.assumptions)


def test_a_start_up_log_without_its_version_is_dated_by_the_kv_cache_size_it_printed():
    """Gemma-4-31B at TP 2, 163,840 tokens, 8,192 batched tokens; per rank a token takes 50 sliding layers ×
    8 KV heads × 256 × 2 (K,V) × 2 B = 409,600 B and 10 full layers × 2 × 512 × 2 × 2 B = 40,960 B. On the
    Intel cards vLLM's FlashAttention takes 64-token blocks (0.20+). One request holds 2,560 blocks × 64 ×
    40,960 B = 6.25 GiB in the full layers and, in the sliding ones, its 1,023-token window plus the tokens
    in flight, in whole blocks and one more: one batch to 0.25 (9,215 tokens: 145 blocks × 64 × 409,600 B;
    9.79 GiB in all, so 10.12 GiB holds 1.034 of them — vLLM's 169,314 tokens, where the 16-token blocks'
    9.77 GiB would need a pool of 10.10 GiB, below the printed 10.12's rounding), two from 0.26 (17,407
    tokens: 273 blocks, 12.915 GiB in all, 0.78: 128,382 tokens). The 0.21+ format allows up to 0.27.1; the
    printed size is 0.22–0.25's arithmetic, so the newest of those is modelled, and said. A size that 0.27.1
    gives keeps 0.27.1."""
    from estimator import diagnose

    log = ("vllm serve RedHatAI/gemma-4-31B-it-FP8-Dynamic --tensor-parallel-size 2 --enforce-eager "
           "--max-model-len 163840 --gpu-memory-utilization 0.95 --max-num-seqs 16 --max-num-batched-tokens 8192\n"
           "2x Intel Arc Pro B70 (32 GB)\n"
           "Available KV cache memory: 10.12 GiB\nGPU KV cache size: {tokens} tokens\n"
           "Maximum concurrency for 163,840 tokens per request: {x}x\n")
    d = diagnose(log.format(tokens="169,314", x="1.03"), offline=True, explain=True)
    assert d.estimate["settings"]["vllm_version"] == "0.25.1"
    assert any("the KV cache size vLLM printed (169,314 tokens in 10.12 GiB) is vLLM 0.25.1's arithmetic, not "
               "0.27.1's: modelled as 0.25.1" in a for a in d.assumptions)
    assert abs(d.estimate["kv_needed_bytes"] / GiB - 9.79) < 0.02
    assert not d.disagrees
    kept = diagnose(log.format(tokens="128,382", x="0.78"), offline=True, explain=True)
    assert kept.estimate["settings"]["vllm_version"] == "0.27.1"
    assert abs(kept.estimate["kv_needed_bytes"] / GiB - 12.915) < 0.02
    assert not any("'s arithmetic, not" in a for a in kept.assumptions)
