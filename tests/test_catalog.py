"""The bundled offline catalog (estimator/catalog/ + index.json): complete, faithful to the shared
research copies except for the keys it says it dropped, and honest about provenance."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import pytest

from estimator import catalog
from estimator.errors import ModelNotFound
from estimator.hub import catalog_ids, clear_cache, resolve_model

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "models"
KINDS = {"OFFICIAL", "DUPLICATE", "GITHUB COPY", "PROXY"}


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    clear_cache()
    yield
    clear_cache()


def _index() -> dict:
    return json.loads(resources.files("estimator").joinpath("catalog", "index.json").read_text())["models"]


def _drop(cfg: dict, path: str) -> None:
    *parents, last = path.split(".")
    for p in parents:
        cfg = cfg[p]
    del cfg[last]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/models not present")
def test_every_shared_config_is_bundled_minus_exactly_the_dropped_keys():
    index = _index()
    shared = sorted(SHARED.glob("*.config.json"))
    assert len(shared) >= 60
    for path in shared:
        org, name = path.name[: -len(".config.json")].split("__", 1)
        entry = index[f"{org}/{name}"]
        original = json.loads(path.read_text())
        expected = copy.deepcopy(original)
        for key in (entry.get("dropped") or {}).get("keys", {}):
            _drop(expected, key)
        for key in entry.get("truncated") or {}:
            _drop(expected, key)
        for key, value in (entry.get("completed") or {}).get("keys", {}).items():
            # a truncated copy completed from verbatim copies of the file: the keys it lacked, set
            node = expected
            *parents, last = key.split(".")
            for p in parents:
                node = node[p]
            assert last not in node, f"{path.name}: completed key {key} was in the shared copy"
            node[last] = value
        for key, change in (entry.get("corrected") or {}).get("keys", {}).items():
            # a value the official card contradicts: the shared copy holds the index's "copy" value
            # (so the correction is recorded, not silent), the bundled file the official one
            assert original[key] == change["copy"] != change["official"], (path.name, key)
            expected[key] = change["official"]
        _, bundled, _ = catalog.lookup(f"{org}/{name}")
        assert bundled == expected, path.name
        # the index keeps the dropped values, so nothing is lost
        for key, value in (entry.get("dropped") or {}).get("keys", {}).items():
            node = original
            for p in key.split("."):
                node = node[p]
            assert node == value
    companions = sorted(SHARED.glob("*.hf_quant_config.json"))
    assert companions
    for path in companions:
        org, name = path.name[: -len(".hf_quant_config.json")].split("__", 1)
        _, _, comps = catalog.lookup(f"{org}/{name}")
        assert comps["hf_quant_config.json"] == json.loads(path.read_text())


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/models not present")
def test_index_provenance_matches_params_jsonl():
    rows = {}
    for line in (SHARED / "params.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows[r["model"]] = r
    for repo_id, entry in _index().items():
        assert entry["kind"] in KINDS, repo_id
        if "added" in entry:
            continue    # researched for the catalog, not a shared research copy (next test)
        assert entry["source_url"] == rows[repo_id]["config_source_url"]
        assert entry["notes"] == rows[repo_id]["notes"]
        # a PROXY row in the research notes is a PROXY here
        assert (entry["kind"] == "PROXY") == ("PROXY" in rows[repo_id]["notes"]), repo_id


def test_configs_added_beyond_the_shared_copies_say_where_they_come_from():
    """Entries the project researched itself (not in ../shared/data/models) carry their source, their
    kind, the keys dropped or set from an official view, and only those changes."""
    added = {rid: e for rid, e in _index().items() if "added" in e}
    assert len(added) >= 60
    for repo_id, entry in added.items():
        assert entry["kind"] in KINDS and entry["source_url"] and entry["notes"], repo_id
        assert (entry["kind"] == "PROXY") == entry["notes"].startswith("CONFIG: PROXY"), repo_id
        _, cfg, comps = catalog.lookup(repo_id)
        assert set(comps) == set(entry.get("companions") or {}), repo_id      # every companion file ships
        for key in (entry.get("dropped") or {}).get("keys", {}):
            assert key not in cfg, (repo_id, key)
        for key, change in (entry.get("corrected") or {}).get("keys", {}).items():
            assert cfg[key] == change["official"] != change["copy"], (repo_id, key)
    # CodeLlama's fine-tune copy said float16; the official commit 173c00e shows bfloat16
    _, code, _ = catalog.lookup("codellama/CodeLlama-13b-Instruct-hf")
    assert code["torch_dtype"] == "bfloat16" and "_name_or_path" not in code
    assert catalog.entry("deepseek-ai/DeepSeek-Coder-V2-Instruct")["trimmed"]


def test_added_models_resolve_with_the_architecture_their_sources_show():
    """Figures read from the source copies (see index notes), not from the code."""
    from estimator.api import load_model
    from estimator.memory import estimate
    from estimator.params import count_params
    from estimator.vllm import EngineSettings

    def est(repo_id, version="0.7.2"):
        spec = load_model(repo_id, offline=True).spec
        return estimate(spec, gpu_total_bytes=80 * 2**30, settings=EngineSettings(vllm_version=version))

    # 48 layers × 8 KV heads × head_dim 5120 / 40 = 128 × K and V × 2 B; max_position_embeddings 131072
    r1 = est("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
    assert (r1.layout.kv_bytes_per_token, r1.max_model_len) == (48 * 8 * 128 * 2 * 2, 131072)
    code = est("codellama/CodeLlama-13b-Instruct-hf")
    assert (code.layout.kv_bytes_per_token, code.max_model_len) == (40 * 40 * 128 * 2 * 2, 16384)  # MHA
    orca = est("Open-Orca/LlongOrca-7B-16k", "0.2.0")
    assert orca.max_model_len == 16384 * 4                  # linear rope factor 4 (vllm#1267: 65536)
    coder = load_model("deepseek-ai/DeepSeek-Coder-V2-Instruct", offline=True)
    assert any("TRIMMED" in a for a in coder.spec.assumptions)
    # the printed Qwen2Config of Qwen2-7B-Instruct: 28 layers × 4 KV heads × 128 × K and V × 2 B, a
    # 32,768-token context (the base model's is 131,072); 7,615,616,512 parameters = 2 × 152,064 × 3,584
    # (untied embeddings) + 28 × (3,584 × (3,584 + 2 × 512) + 3,584 + 2 × 512 [q/k/v with biases]
    # + 3,584 × 3,584 [o] + 3 × 3,584 × 18,944 [mlp] + 2 × 3,584 [norms]) + 3,584 [final norm]
    qwen2 = est("Qwen/Qwen2-7B-Instruct", "0.10.1")
    assert (qwen2.layout.kv_bytes_per_token, qwen2.max_model_len) == (28 * 4 * 128 * 2 * 2, 32768)
    assert count_params(load_model("Qwen/Qwen2-7B-Instruct", offline=True).spec).params_total == 7_615_616_512


def test_derivative_keys_are_dropped_and_real_quantization_kept():
    _, qwen15, _ = catalog.lookup("Qwen/Qwen2.5-1.5B-Instruct")
    assert "quantization" not in qwen15 and "quantization_config" not in qwen15  # MLX 4-bit proxy
    _, l405, _ = catalog.lookup("meta-llama/Llama-3.1-405B-Instruct")
    assert "quip_params" not in l405  # QTIP proxy
    _, small, _ = catalog.lookup("mistralai/Mistral-Small-24B-Instruct-2501")
    assert "unsloth_fixed" not in small
    _, coder, _ = catalog.lookup("Qwen/Qwen3-Coder-30B-A3B-Instruct")
    assert "torch_dtype" not in coder  # float32 came from a derivative's re-save
    _, v03, _ = catalog.lookup("mistralai/Mistral-7B-Instruct-v0.3")
    assert "max_length" not in v03 and v03["max_position_embeddings"] == 32768  # to_dict() default gone
    # real quantization configs stay
    for fp8 in ("Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-30B-A3B-FP8", "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b"):
        _, cfg, _ = catalog.lookup(fp8)
        assert "quantization_config" in cfg, fp8
    _, _, comps = catalog.lookup("nvidia/Llama-3.1-70B-Instruct-FP8")
    assert comps["hf_quant_config.json"]["quantization"]["quant_algo"] == "FP8"


def test_truncated_copy_is_flagged_in_index_and_assumptions():
    entry = catalog.entry("mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    assert "vision_config._TRUNCATED" in entry["truncated"]
    src = resolve_model("mistralai/Mistral-Small-3.1-24B-Instruct-2503", offline=True)
    assert "_TRUNCATED" not in src.config["vision_config"]
    assert any("TRUNCATED" in a for a in src.assumptions)
    scout = resolve_model("meta-llama/Llama-4-Scout-17B-16E-Instruct", offline=True)
    assert any("TRIMMED" in a for a in scout.assumptions)


def test_a_truncated_copy_completed_from_verbatim_copies_says_so_and_counts_its_tower():
    """The shared Mistral Small 3.1 copy stops inside vision_config; the bundled one carries the keys it
    lacked (depth 24, MLP 4096, 16 heads, patch 14, model_type pixtral …) with where they came from, so
    the 0.44 B-parameter vision tower is counted (it was left out: "vision_config lacks depth")."""
    entry = catalog.entry("mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    assert entry["completed"]["keys"]["vision_config.num_hidden_layers"] == 24
    src = resolve_model("mistralai/Mistral-Small-3.1-24B-Instruct-2503", offline=True)
    said = [a for a in src.assumptions if "TRUNCATED" in a]
    assert said and "COMPLETED" in said[0] and "vision_config.patch_size" in said[0]
    from estimator.params import count_params
    from estimator.spec import spec_from_config

    assert count_params(spec_from_config(src.config)).params_by_part["vision"] == 438_958_080


def test_catalog_lookup_is_case_insensitive_and_says_where_it_came_from():
    src = resolve_model("QWEN/qwen2.5-14b-instruct-1m", offline=True)
    assert src.model_id == "Qwen/Qwen2.5-14B-Instruct-1M" and src.origin == "catalog"
    # the seed case of issue 2: 48 layers, 8 KV heads, head_dim 5120 / 40 = 128
    assert (src.config["num_hidden_layers"], src.config["num_key_value_heads"]) == (48, 8)
    assert src.config["hidden_size"] // src.config["num_attention_heads"] == 128
    assert src.assumptions[0].startswith("config from the bundled offline catalog (OFFICIAL copy")
    proxy = resolve_model("Qwen/Qwen2.5-1.5B-Instruct", offline=True)
    assert any("dropped from the catalog copy: quantization, quantization_config" in a for a in proxy.assumptions)
    assert src.safetensors_bytes_by_dtype is None  # the catalog holds configs, not weight headers


def test_catalog_ids_and_near_names():
    ids = catalog_ids()
    assert ids == sorted(ids) and "meta-llama/Llama-3.1-8B-Instruct" in ids
    assert catalog.near_names("meta-llama/Llama-3.1-8B-Instrct")[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "meta-llama/Llama-3.1-8B-Instruct" in catalog.near_names("meta/Llama-3.1-8B-Instruct")
    assert catalog.near_names("zzzz/qqqq") == []


@pytest.mark.parametrize("asked, other", [
    ("OpenGVLab/internvl3-78b", "OpenGVLab/InternVL2-8B"),                         # 78B is not 8B
    ("OpenBMB/MiniCPM5-1B", "openbmb/MiniCPM-V-4_5"),                              # a 1B LLM, not the 8B VLM
    ("deepseek-ai/DeepSeek-Coder-V2-Lite-Base", "deepseek-ai/DeepSeek-Coder-V2-Instruct"),       # Lite: 16B, not 236B
    ("Qwen/Qwen3-Omni-30B-A3B-Instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct"),       # Omni is not VL
    ("zai-org/GLM-5.3-Flash", "zai-org/GLM-5.3"),                                  # Flash is the small one
    ("mistralai/Mixtral-8x7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3"),     # 8 experts of 7B, not one
    ("meta-llama/Llama2-7B", "meta-llama/Llama-2-70b-hf"),
])
def test_did_you_mean_offers_no_model_of_another_size_or_variant(asked, other):
    """difflib alone found these close spellings (the last stop's note: InternVL2-8B for internvl3-78b,
    MiniCPM-V-4_5 for MiniCPM5-1B): another model, whose numbers would mislead. A name that states a size
    is offered only that size, and a family's variant word (Lite, Flash, Omni, VL …) must agree."""
    assert catalog.canonical_id(asked) is None and catalog.canonical_id(other) == other
    assert other not in catalog.near_names(asked)


def test_did_you_mean_still_offers_the_same_model_spelled_otherwise():
    assert catalog.near_names("meta-llama/Llama2-7B")[0] == "meta-llama/Llama-2-7b-hf"
    assert catalog.near_names("Qwen/QwQ-32B-Preview") == ["Qwen/QwQ-32B"]
    assert catalog.near_names("mistralai/Mixtral-8x7B-Instruct")[0] == "mistralai/Mixtral-8x7B-Instruct-v0.1"
    assert catalog.near_names("qwen/Qwen2___5-3B") == ["Qwen/Qwen2.5-3B"]


def test_catalog_copies_are_independent():
    a = resolve_model("Qwen/Qwen3-8B", offline=True)
    a.config["num_hidden_layers"] = 1
    clear_cache()
    assert resolve_model("Qwen/Qwen3-8B", offline=True).config["num_hidden_layers"] == 36


def test_an_export_resolves_to_its_base_and_says_what_it_cannot_know():
    """A quantized export not in the catalog takes its base model's architecture and the format
    its name says; a bitsandbytes export (unsloth's dynamic 4-bit ones or any other) also says its
    16-bit modules are not known."""
    from estimator.api import load_model

    plain = load_model("someone/QwQ-32B-AWQ", offline=True).spec
    assert plain.quantization["quant_method"] == "awq"
    assert not any("llm_int8_skip_modules" in a for a in plain.assumptions)
    for ref in ("unsloth/QwQ-32B-unsloth-bnb-4bit", "someone/QwQ-32B-bnb-4bit"):
        dynamic = load_model(ref, offline=True).spec
        assert dynamic.quantization["quant_method"] == "bitsandbytes"
        assert any("may keep some modules in 16-bit" in a for a in dynamic.assumptions)


def test_a_16_bit_re_upload_resolves_to_the_meta_hf_repo_it_copies():
    """vllm#2136 served TheBloke/CodeLlama-13B-Instruct-fp16, a 16-bit re-upload of Meta's
    codellama/CodeLlama-13b-Instruct-hf: the architecture is the catalog's, nothing is quantized."""
    from estimator.api import base_model_candidate, load_model

    assert base_model_candidate("TheBloke/CodeLlama-13B-Instruct-fp16") == ("codellama/CodeLlama-13b-Instruct-hf", None)
    assert base_model_candidate("TheBloke/Llama-2-70B-fp16") == ("meta-llama/Llama-2-70b-hf", None)
    # exports that keep Meta's old Llama 3.1 names, and NVIDIA's precision siblings of one model
    assert base_model_candidate("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit") == \
        ("meta-llama/Llama-3.1-8B-Instruct", "bitsandbytes")
    assert base_model_candidate("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8") == ("meta-llama/Llama-3.1-70B-Instruct", "fp8")
    # and exports that drop the "Meta-" of Llama 3's own name (casperhansen's widely served AWQ)
    assert base_model_candidate("casperhansen/llama-3-70b-instruct-awq") == ("meta-llama/Meta-Llama-3-70B-Instruct", "awq")
    assert base_model_candidate("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8") == \
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "fp8")
    spec = load_model("TheBloke/CodeLlama-13B-Instruct-fp16", offline=True).spec
    assert spec.quantization is None and spec.num_layers == 40
    assert any("used the config of its base model codellama/CodeLlama-13b-Instruct-hf (same architecture)" in a
               for a in spec.assumptions)


def test_another_organizations_upload_under_a_catalog_name_takes_that_models_config():
    """unsloth/Llama-3.2-3B-Instruct (Unsloth's notebooks serve it) and NousResearch/Meta-Llama-3-8B-Instruct
    are uploads of catalog models under another organization, without a format suffix: offline they
    take the named model's architecture and say so; the catalog's own id, or a name two catalog
    models share, does not go through this."""
    from estimator.api import base_model_candidate, load_model

    assert base_model_candidate("unsloth/Llama-3.2-3B-Instruct") == ("meta-llama/Llama-3.2-3B-Instruct", None)
    assert base_model_candidate("NousResearch/Meta-Llama-3-8B-Instruct") == ("meta-llama/Meta-Llama-3-8B-Instruct", None)
    assert base_model_candidate("meta-llama/Llama-3.2-3B-Instruct") is None      # the catalog's own
    assert base_model_candidate("unsloth/Llama-3.2-3B-Instruct-Base-v9") is None  # no such name
    loaded = load_model("unsloth/Llama-3.2-3B-Instruct", offline=True).spec
    assert loaded.model_id == "unsloth/Llama-3.2-3B-Instruct"
    assert loaded.num_layers == 28 and loaded.num_kv_heads == 8 and loaded.quantization is None
    assert any("used the config of meta-llama/Llama-3.2-3B-Instruct, the model it is named after" in a
               for a in loaded.assumptions)
    with pytest.raises(ModelNotFound):
        load_model("unsloth/No-Such-Model-7B", offline=True)


def test_a_base_or_chat_variant_takes_its_catalogued_siblings_config():
    """meta-llama/Meta-Llama-3-70B is not in the catalog, its -Instruct is; "Qwen/Qwen3-VL-30B-A3B" (a
    shorthand without -Instruct/-Thinking) likewise: base and chat weights share one architecture, so the
    sibling's config is used and said; a name with no single sibling still fails."""
    from estimator.api import base_model_candidate, load_model

    assert base_model_candidate("meta-llama/Meta-Llama-3-70B") == ("meta-llama/Meta-Llama-3-70B-Instruct", None)
    assert base_model_candidate("Qwen/Qwen3-VL-30B-A3B") == ("Qwen/Qwen3-VL-30B-A3B-Instruct", None)
    assert base_model_candidate("other-org/Meta-Llama-3-70B") is None       # not the same organization
    # the variant word before a version suffix: Mistral-7B-v0.3 beside the catalog's -Instruct-v0.3
    assert base_model_candidate("mistralai/Mistral-7B-v0.3") == ("mistralai/Mistral-7B-Instruct-v0.3", None)
    assert base_model_candidate("mistralai/Mistral-7B-v0.2") == ("mistralai/Mistral-7B-Instruct-v0.2", None)
    assert base_model_candidate("mistralai/Mistral-7B-Instruct-v0.1") is None      # the catalog's own copy
    assert base_model_candidate("mistralai/Mistral-7B-v0.4") is None
    # another organization's upload of a variant (its own variant word in the name): the catalog's sibling,
    # the -Instruct of several, under Meta's new Llama 3.1 names
    assert base_model_candidate("unsloth/Qwen3-4B-Base") == ("Qwen/Qwen3-4B", None)
    assert base_model_candidate("unsloth/Meta-Llama-3.1-8B-Instruct") == ("meta-llama/Llama-3.1-8B-Instruct", None)
    assert base_model_candidate("foo/bar-Instruct") is None
    spec = load_model("meta-llama/Meta-Llama-3-70B", offline=True).spec
    assert spec.model_id == "meta-llama/Meta-Llama-3-70B" and spec.num_layers == 80 and spec.num_kv_heads == 8
    assert any("the same release's other variant" in a for a in spec.assumptions)
    # a sibling may ship another format (Kimi-K2-Thinking's int4 beside K2-Instruct's FP8): said, not assumed away
    assert any("checkpoint format may differ" in a for a in spec.assumptions)
    with pytest.raises(ModelNotFound):
        load_model("meta-llama/Meta-Llama-3-71B", offline=True)


def test_a_dated_revision_takes_the_config_of_the_model_it_revises():
    """DeepSeek-V4-Flash-0731 revises the catalog's DeepSeek-V4-Flash (vllm#51041: same compress_ratios,
    window and layers); Qwen's -Thinking-2507 pairs with the catalog's -Instruct-2507 of the same date,
    not the undated release; a base model of an undated release with an -Instruct-2507 sibling takes the
    undated one. The note says it is a revision; a date of no catalog family still fails."""
    from estimator.api import base_model_candidate, load_model

    assert base_model_candidate("deepseek-ai/DeepSeek-V4-Flash-0731") == ("deepseek-ai/DeepSeek-V4-Flash", None)
    assert base_model_candidate("deepseek-ai/DeepSeek-V3-0324") == ("deepseek-ai/DeepSeek-V3", None)
    assert base_model_candidate("Qwen/Qwen3-30B-A3B-Thinking-2507") == ("Qwen/Qwen3-30B-A3B-Instruct-2507", None)
    assert base_model_candidate("Qwen/Qwen3-30B-A3B-Base") == ("Qwen/Qwen3-30B-A3B", None)
    assert base_model_candidate("Qwen/Qwen3-VL-32B") == ("Qwen/Qwen3-VL-32B-Instruct", None)
    assert base_model_candidate("deepseek-ai/DeepSeek-V5-0731") is None
    assert base_model_candidate("other-org/DeepSeek-V4-Flash-0731") is None
    spec = load_model("deepseek-ai/DeepSeek-V4-Flash-0731", offline=True).spec
    assert spec.model_id == "deepseek-ai/DeepSeek-V4-Flash-0731" and spec.num_layers == 43
    assert any("used the config of deepseek-ai/DeepSeek-V4-Flash, a revision of the same model" in a
               for a in spec.assumptions)


def test_a_qat_name_says_how_the_weights_were_trained_not_stored():
    """Google's "-qat-w4a16-ct" exports are int4 compressed-tensors of the catalogued -it model; its
    "-qat-q4_0-unquantized" ones are 16-bit (no format to take from "q4_0"); a QAT name whose format word
    is not recognised ("-qat-autoawq") is not guessed."""
    from estimator.api import base_model_candidate

    assert base_model_candidate("google/gemma-4-E4B-it-qat-w4a16-ct") == ("google/gemma-4-E4B-it", "w4a16")
    assert base_model_candidate("google/gemma-3-27b-it-qat-q4_0-unquantized") == ("google/gemma-3-27b-it", None)
    assert base_model_candidate("cyankiwi/gemma-4-26B-A4B-it-qat-AWQ-INT4") == ("google/gemma-4-26B-A4B", "awq")
    assert base_model_candidate("gaunernst/gemma-3-12b-it-qat-autoawq") is None


def test_a_quantized_export_of_the_other_variant_takes_the_catalogued_variants_config():
    """RedHatAI/gemma-4-26B-A4B-it-FP8-Dynamic is an export of the -it model; the catalog holds the base
    google/gemma-4-26B-A4B (and NVIDIA's NVFP4 of it, a quantized sibling the unquantized one wins over):
    one architecture, said in the note, with the export's format from its name. A stem of no catalog
    family still fails."""
    from estimator.api import base_model_candidate, load_model

    assert base_model_candidate("RedHatAI/gemma-4-26B-A4B-it-FP8-Dynamic") == ("google/gemma-4-26B-A4B", "fp8")
    assert base_model_candidate("RedHatAI/gemma-4-26B-A4B-it-NVFP4") == ("google/gemma-4-26B-A4B", "nvfp4")
    assert base_model_candidate("RedHatAI/gemma-4-27B-A4B-it-FP8-Dynamic") is None
    # an export of a dated variant (-Thinking-2507) stands on the catalogued variant of its date, as the
    # variant itself does (test_a_dated_revision_…): -Instruct-2507's 262,144 positions, not the undated
    # Qwen3-30B-A3B's 40,960 (both catalog copies state them); an undated export keeps the undated model
    assert base_model_candidate("cpatonn/Qwen3-30B-A3B-Thinking-2507-AWQ-4bit") == \
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "awq")
    assert base_model_candidate("someone/Qwen3-30B-A3B-AWQ") == ("Qwen/Qwen3-30B-A3B", "awq")
    # a publisher that puts its own name first: the rest is the model's name (openai/gpt-oss-20b's mxfp4
    # export, abliterated); a name with the publisher's word and no catalogued model after it still fails
    assert base_model_candidate("huihui-ai/Huihui-gpt-oss-20b-mxfp4-abliterated-v2") == ("openai/gpt-oss-20b", "mxfp4")
    assert base_model_candidate("huihui-ai/Huihui-gpt-oss-21b-mxfp4-abliterated-v2") is None
    assert base_model_candidate("Qwen/Qwen-7B-Chat") is None
    thinking = load_model("cpatonn/Qwen3-30B-A3B-Thinking-2507-AWQ-4bit", offline=True).spec
    assert thinking.text["max_position_embeddings"] == 262144 and thinking.quantization["quant_method"] == "awq"
    spec = load_model("RedHatAI/gemma-4-26B-A4B-it-FP8-Dynamic", offline=True).spec
    assert spec.model_id == "RedHatAI/gemma-4-26B-A4B-it-FP8-Dynamic" and spec.quantization["quant_method"] == "fp8"
    assert any("google/gemma-4-26B-A4B, the same release's other variant" in a and "fp8 weights from the name" in a
               for a in spec.assumptions)
    # an export of the catalog's own variant keeps the plain note
    note = [a for a in load_model("unsloth/Qwen3.8-27B-NVFP4", offline=True).spec.assumptions if "base model" in a]
    assert note and "other variant" not in note[0]


def test_deepseek_coder_v2_lite_stands_on_the_v2_lite_chat_config_it_was_trained_from():
    """A PROXY entry (index notes): V2-Lite-Chat's config as transformers printed it. Figures by hand from
    that printout: 27 layers, 16 heads, MLA latent 512 + rope 64, q/k head 128 + 64, v 128;
    vocab 102,400 × hidden 2,048; the first layer dense (intermediate 10,944), 26 MoE layers of
    64 experts × 1,408 + 2 shared × 1,408, gate 64 × 2,048."""
    from estimator.api import load_model
    from estimator.memory import estimate
    from estimator.params import count_params
    from estimator.vllm import EngineSettings

    spec = load_model("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", offline=True).spec
    assert any(a.startswith("config from the bundled offline catalog (PROXY") for a in spec.assumptions)

    def est(version, tp=1):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=tp, dtype="float16")
        return estimate(spec, gpu_total_bytes=80 * 2**30, settings=s)

    # vLLM 0.5.1 (vllm#6211's release) has no MLA cache: K and V of 16 / 2 heads per rank, padded to 256;
    # its error printed "max seq len (163840)": yarn's original 4,096 × factor 40
    old = est("0.5.1", tp=2)
    assert (old.layout.kv_bytes_per_token, old.max_model_len) == (27 * 8 * 256 * 2 * 2, 163840)
    # with the MLA cache, one latent per token and layer, whole on every rank
    assert est("0.10.1", tp=2).layout.kv_bytes_per_token == 27 * (512 + 64) * 2
    embed = 102_400 * 2_048
    attention = 2_048 * 16 * 192 + 2_048 * (512 + 64) + 512 + 512 * 16 * (128 + 128) + 16 * 128 * 2_048
    moe = 64 * 3 * 2_048 * 1_408 + 3 * 2_048 * 2 * 1_408 + 64 * 2_048
    total = 2 * embed + 27 * (attention + 2 * 2_048) + 3 * 2_048 * 10_944 + 26 * moe + 2_048
    assert count_params(spec).params_total == total == 15_706_484_224


def test_laguna_layers_have_their_own_head_counts_and_an_output_gate():
    """poolside/Laguna-S-2.1-FP8 (aiconfigurator's copy): laguna.py gives each layer the query heads
    num_attention_heads_per_layer lists (48 in the 12 full-attention layers, 72 in the 36 sliding-window
    ones), a per-head g_proj, q/k norms of head_dim, and every MoE layer a shared expert without a gate
    and an e_score_correction_bias. By hand, from the config: vocab 100,352, hidden 3,072, 8 KV heads of 128,
    layer 0 dense (12,288), 47 MoE layers of 256 experts × 1,024 and one shared expert of 1,024. The card
    says 118B parameters."""
    from estimator.api import load_model
    from estimator.memory import estimate
    from estimator.params import count_params, layer_heads
    from estimator.vllm import EngineSettings

    spec = load_model("poolside/Laguna-S-2.1-FP8", offline=True).spec
    assert not any("not one kvdoctor knows" in a for a in spec.assumptions)
    assert [layer_heads(spec, i) for i in range(4)] == [48, 72, 72, 72]
    h = 3_072
    full = 2 * h * 48 * 128 + 2 * h * 8 * 128 + h * 48         # q, o; k, v; g_proj
    sliding = 2 * h * 72 * 128 + 2 * h * 8 * 128 + h * 72
    moe = 256 * 3 * h * 1_024 + 3 * h * 1_024 + 256 * h + 256      # experts, shared expert, router, its bias
    total = 2 * 100_352 * h + 12 * full + 36 * sliding + 48 * (2 * h + 2 * 128) + h + 3 * h * 12_288 + 47 * moe
    assert count_params(spec).params_total == total == 117_561_977_600
    # the KV cache: 8 heads of 128 in every layer, in fp8 as the checkpoint's kv_cache_scheme asks (auto
    # follows it from 0.15); the 36 sliding layers keep 512 tokens (+ the batch) of a long request
    est = estimate(spec, gpu_total_bytes=140 * 2**30, settings=EngineSettings(vllm_version="0.25.1",
                                                                             max_model_len=262_144))
    assert est.layout.kv_bytes_per_token == 48 * 8 * 128 * 2 * 1
    assert 12 * 8 * 128 * 2 * 262_144 < est.kv_needed_bytes < 48 * 8 * 128 * 2 * 262_144 // 3


def test_a_renamed_repo_is_found_under_its_new_id():
    """Meta renamed the Llama 3.1 repos in July 2024 (the old ids redirect): a paste from before names
    meta-llama/Meta-Llama-3.1-8B-Instruct, the catalog has meta-llama/Llama-3.1-8B-Instruct."""
    src = resolve_model("meta-llama/Meta-Llama-3.1-8B-Instruct", offline=True)
    assert src.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert src.assumptions[0] == ("meta-llama/Meta-Llama-3.1-8B-Instruct is now meta-llama/Llama-3.1-8B-Instruct "
                                  "on the Hub (the repo was renamed)")
    # a name the catalog holds under its old spelling stays itself
    assert resolve_model("meta-llama/Meta-Llama-3.1-8B", offline=True).model_id == "meta-llama/Meta-Llama-3.1-8B"


def test_a_renamed_local_copy_takes_its_base_models_config():
    """`vllm serve ~/hf_cache/models--Qwen--Qwen3.6-27B-local`: a cache dir renamed with "-local" is read
    as the repo Qwen/Qwen3.6-27B-local, which no hub or catalog has; it is the catalog's Qwen3.6-27B,
    unquantized (a "-AWQ-local" copy keeps the AWQ its name says)."""
    from estimator.api import load_model

    local = load_model("Qwen/Qwen3.6-27B-local", offline=True)
    assert local.spec.num_layers == 64 and not local.spec.quantization
    assert load_model("Qwen/Qwen3.6-27B-AWQ-local", offline=True).spec.quantization["quant_method"] == "awq"


def test_qwen38_27b_stands_on_qwen36_27bs_config_and_says_so():
    """No copy of Qwen/Qwen3.8-27B's config.json is public; its official safetensors index declares
    55,562,855,904 B = 27,781,427,952 BF16 parameters, exactly Qwen/Qwen3.6-27B's count, so that
    config stands in (DERIVED) — and the architecture it gives reproduces the figure: the parameters
    vLLM loads plus the MTP layer it leaves out without speculative decoding."""
    from estimator.api import load_model
    from estimator.params import count_params

    model = load_model("Qwen/Qwen3.8-27B", offline=True)
    assert any("DERIVED" in a for a in model.spec.assumptions)
    parts = count_params(model.spec)
    assert parts.params_total + parts.params_by_part["mtp"] == 55_562_855_904 // 2


def test_a_w4a16_name_is_compressed_tensors_and_a_qat_one_keeps_groups_of_32():
    """"w4a16" is llm-compressor's scheme: compressed-tensors, symmetric (no zero points), groups of 128 by
    its preset — RedHatAI/Qwen3-8B-quantized.w4a16's MLP (36 layers × 3 × 4,096 × 12,288 = 5,435,817,984
    weights) takes 0.5 + 2/128 B a weight: 2,802,843,648 B; GPTQ's layout would add 0.5/128 B of zero points.
    Google's QAT checkpoints are trained on an int4 grid with groups of 32, which google/gemma-4-E4B-it-qat-
    w4a16-ct keeps: 0.5 + 2/32 = 9/16 B a weight. An explicit GPTQ name keeps its zero points."""
    from estimator.api import load_model
    from estimator.params import count_params, weight_bytes, weight_format

    redhat = load_model("RedHatAI/Qwen3-8B-quantized.w4a16", offline=True).spec
    assert redhat.quantization["quant_method"] == "compressed-tensors"
    assert weight_bytes(redhat).bytes_by_part["mlp"] == 5_435_817_984 * 33 // 64 == 2_802_843_648
    qat = load_model("google/gemma-4-E4B-it-qat-w4a16-ct", offline=True).spec
    assert qat.quantization["config_groups"]["group_0"]["weights"]["group_size"] == 32
    assert weight_bytes(qat).bytes_by_part["mlp"] == count_params(qat).params_by_part["mlp"] * 9 // 16
    assert any("groups of 32" in a for a in qat.assumptions)
    # the bits word a paste reader takes from the same name ("int4") is no vLLM method: the name's fuller
    # reading stands; a real method flag (gptq) replaces a format that was only read from the name
    assert weight_format(qat, "int4").name == "int4-g32"
    assert weight_format(qat, "gptq").name == "gptq-int4"
    assert load_model("cyankiwi/gemma-4-26B-A4B-it-qat-AWQ-INT4", offline=True).spec.quantization["group_size"] == 32
    gptq = load_model("Qwen/Qwen3-8B-GPTQ-Int4", offline=True).spec
    assert weight_bytes(gptq).bytes_by_part["mlp"] == 5_435_817_984 * 133 // 256   # 0.5 + 2/128 + 0.5/128
    assert not any("groups of 32" in a for a in gptq.assumptions)


def test_gemma3_qat_awq_conversions_carry_the_qat_group_of_32():
    """gau-nernst/gemma3-int4: Gemma 3's QAT checkpoints are INT4 symmetric with groups of 32; its AWQ
    conversions keep them. vllm#16199 (0.8.3) printed 'Model loading took 17.61 GiB' for the 27B one,
    which AWQ's usual group of 128 (16.05 GiB) misses by 9%."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    loaded = load_model("gaunernst/gemma-3-27b-it-int4-awq", offline=True)
    assert loaded.spec.quantization["group_size"] == 32
    assert any("DERIVED" in a for a in loaded.spec.assumptions + list(getattr(loaded, "assumptions", [])))
    w = weight_bytes(loaded.spec).bytes_total / 2**30
    assert abs(w - 17.61) / 17.61 < 0.01
    for size in ("4b", "12b"):
        assert load_model(f"gaunernst/gemma-3-{size}-it-int4-awq", offline=True).spec.quantization["group_size"] == 32


def test_cyankiwi_kimi_linear_awq_is_the_w4a16_group_32_a_deployment_note_records():
    """No copy of cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit's config.json is public; a deployment note
    records its format (compressed-tensors int4, group 32, symmetric, weight-only), and the catalog derives
    the entry from the base model's config with it. By hand, one expert (gate, up, down: 3 × 2,304 × 1,024 =
    7,077,888 weights) takes 7,077,888 / 2 = 3,538,944 B of packed int4 and 7,077,888 / 32 × 2 = 442,368 B
    of bf16 scales, no zero points: 3,981,312 B; 26 MoE layers × 256 experts = 26,499,612,672 B.
    AWQ's usual group of 128 with zeros would give 3,677,184 B per expert."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    loaded = load_model("cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit", offline=True)
    q = loaded.spec.quantization
    assert q["quant_method"] == "compressed-tensors"
    assert q["config_groups"]["group_0"]["weights"]["group_size"] == 32
    assert any("DERIVED" in a for a in loaded.spec.assumptions + list(getattr(loaded, "assumptions", [])))
    experts = weight_bytes(loaded.spec).bytes_by_part["experts"]
    assert experts == 26 * 256 * (7_077_888 // 2 + 7_077_888 // 32 * 2) == 26_499_612_672


def test_qwen25_72b_awq_has_the_padded_mlp_of_the_export():
    """Qwen/Qwen2.5-72B-Instruct-AWQ's config, as a public fixture quotes it, pads intermediate_size to
    29,696 (the base model's is 29,568). By hand, one layer's MLP (gate and up 2 × 29,696 × 8,192, down
    8,192 × 29,696 = 729,808,896 weights) takes 364,904,448 B of packed int4, 729,808,896 / 128 × 2 =
    11,403,264 B of fp16 scales and 729,808,896 / 128 / 2 = 2,850,816 B of packed zero points:
    379,158,528 B; × 80 layers = 30,332,682,240 B. With the base model's 29,568 it would be
    130,744,320 B less (3 × 128 × 8,192 weights × 0.51953125 B × 80)."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    loaded = load_model("Qwen/Qwen2.5-72B-Instruct-AWQ", offline=True)
    assert loaded.spec.text["intermediate_size"] == 29_696
    assert loaded.spec.quantization["quant_method"] == "awq"
    assert any("DERIVED" in a for a in loaded.spec.assumptions)
    assert weight_bytes(loaded.spec).bytes_by_part["mlp"] == 80 * (364_904_448 + 11_403_264 + 2_850_816)
    assert weight_bytes(loaded.spec).bytes_by_part["mlp"] == 30_332_682_240
    base = load_model("Qwen/Qwen2.5-72B-Instruct", offline=True).spec
    assert weight_bytes(base, quantization="awq").bytes_by_part["mlp"] == 30_332_682_240 - 130_744_320


def test_kimi_k26_is_k25s_architecture_with_its_native_int4_experts():
    """No copy of moonshotai/Kimi-K2.6's config.json is public; the catalog derives it from K2.5's, which
    NVIDIA's K2.6 re-export (nvidia/Kimi-K2.6-NVFP4, a copy in the catalog) matches in every architecture
    field, and whose native int4 (compressed-tensors, group 32, symmetric) the K2.6 card says it keeps. By
    hand, one routed expert (gate, up, down: 3 × 7,168 × 2,048 = 44,040,192 weights) takes 22,020,096 B of
    packed int4 and 44,040,192 / 32 × 2 = 2,752,512 B of bf16 scales: 24,772,608 B; 60 MoE layers × 384
    experts = 570,760,888,320 B. NVFP4 (group 16, fp8 scales) would give a different figure."""
    import dataclasses

    from estimator.api import load_model
    from estimator.params import weight_bytes

    k26 = load_model("moonshotai/Kimi-K2.6", offline=True).spec
    nvfp4 = load_model("nvidia/Kimi-K2.6-NVFP4", offline=True).spec
    assert any("DERIVED" in a for a in k26.assumptions)
    differing = {f.name for f in dataclasses.fields(k26) if getattr(k26, f.name) != getattr(nvfp4, f.name)}
    # the NVIDIA export renames the text model type and carries its own quantization; nothing else differs
    assert differing <= {"model_id", "model_type", "quantization", "vision", "config", "text", "companions",
                         "assumptions"}
    assert k26.num_layers == nvfp4.num_layers == 61
    assert weight_bytes(k26).bytes_by_part["experts"] == 60 * 384 * (44_040_192 // 2 + 44_040_192 // 32 * 2)
    assert weight_bytes(k26).bytes_by_part["experts"] == 570_760_888_320


def test_kimi_k2_thinking_is_int4_and_twice_k2_instructs_length():
    """Kimi-K2-Thinking: aiconfigurator's trimmed copy gives K2-Instruct's architecture at 262,144 positions;
    its checkpoint is the native int4 that K2.5 and K2.6 keep ("the same native int4 quantization method as
    Kimi-K2-Thinking", K2.6's card): 384 experts × 60 MoE layers × 24,772,608 B (see the K2.6 test) =
    570,760,888,320 B of experts, about half of K2-Instruct's FP8 ones, which the catalog used before."""
    from estimator.api import load_model
    from estimator.params import weight_bytes

    thinking = load_model("moonshotai/Kimi-K2-Thinking", offline=True).spec
    instruct = load_model("moonshotai/Kimi-K2-Instruct", offline=True).spec
    assert any("DERIVED" in a for a in thinking.assumptions) and any("TRIMMED" in a for a in thinking.assumptions)
    assert thinking.text["max_position_embeddings"] == 2 * instruct.text["max_position_embeddings"] == 262_144
    assert (thinking.num_layers, thinking.kv_bytes_per_token()) == (instruct.num_layers, instruct.kv_bytes_per_token())
    assert weight_bytes(thinking).bytes_by_part["experts"] == 60 * 384 * 24_772_608 == 570_760_888_320
    assert weight_bytes(instruct).bytes_by_part["experts"] > 1.7 * weight_bytes(thinking).bytes_by_part["experts"]


def test_later_releases_keep_their_predecessors_shapes_but_not_always_their_length():
    """GLM-4.7 (92 layers, 160 experts + 1 shared, 96 / 8 heads) has GLM-4.5's shapes and a longer
    max_position_embeddings (202,752 against 131,072), which sets the default max_model_len; MiniMax-M2
    is MiniMax-M2.5's architecture and block-FP8 checkpoint. Each copy is its own release's file, so the
    length is the release's own."""
    import dataclasses

    from estimator.api import load_model

    for new, old in (("zai-org/GLM-4.7", "zai-org/GLM-4.5"), ("MiniMaxAI/MiniMax-M2", "MiniMaxAI/MiniMax-M2.5")):
        a, b = load_model(new, offline=True).spec, load_model(old, offline=True).spec
        for f in ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "head_dim", "vocab_size", "moe"):
            assert getattr(a, f) == getattr(b, f), (new, f)
        assert a.kv_bytes_per_token() == b.kv_bytes_per_token()
        assert dataclasses.asdict(a)["quantization"] == dataclasses.asdict(b)["quantization"]
    assert load_model("zai-org/GLM-4.7", offline=True).spec.text["max_position_embeddings"] == 202_752
    assert load_model("zai-org/GLM-4.5", offline=True).spec.text["max_position_embeddings"] == 131_072


def test_qwen2_vl_towers_are_sized_by_embed_dim_not_the_mergers_output():
    """Qwen2-VL's vision_config keeps hidden_size for the merger's output (the LLM's 1,536 in the 2B) and
    names the ViT width embed_dim (1,280). By hand (qwen2_vl.py): patch embed Conv3d 3 × 2 × 14 × 14 ×
    1,280, no bias = 1,505,280; 32 blocks of two LayerNorms (4 × 1,280), qkv 1,280 × 3,840 + 3,840,
    proj 1,280² + 1,280, fc1 1,280 × 5,120 + 5,120, fc2 5,120 × 1,280 + 1,280 = 19,677,440 each;
    merger ln_q 2 × 1,280, 5,120² + 5,120, 5,120 × 1,536 + 1,536 = 34,087,936: 665,271,296. With the
    language model's 1,543,714,304 (tied embeddings): 2,208,985,600, the Hub's count."""
    from estimator.api import load_model
    from estimator.params import count_params

    block = 4 * 1280 + (1280 * 3840 + 3840) + (1280 * 1280 + 1280) + (1280 * 5120 + 5120) + (5120 * 1280 + 1280)
    vision = 3 * 2 * 14 * 14 * 1280 + 32 * block + 2 * 1280 + (5120 * 5120 + 5120) + (5120 * 1536 + 1536)
    assert vision == 665_271_296
    counted = count_params(load_model("Qwen/Qwen2-VL-2B-Instruct", offline=True).spec)
    assert counted.params_by_part["vision"] == vision
    assert counted.params_total == 2_208_985_600


def test_models_added_in_december_resolve_with_their_sources_figures():
    """Figures read from the source copies (index notes), not from the code."""
    from estimator.api import load_model
    from estimator.memory import estimate
    from estimator.params import count_params
    from estimator.vllm import EngineSettings

    def est(repo_id, version="0.10.1"):
        spec = load_model(repo_id, offline=True).spec
        return estimate(spec, gpu_total_bytes=80 * 2**30, settings=EngineSettings(vllm_version=version))

    # deepseek-coder-6.7b: MHA, 32 layers × 32 KV heads × 4096 / 32 = 128 × K,V × 2 B; linear rope factor 4
    # over 16,384 positions (vLLM multiplies the length by a linear factor)
    coder = est("deepseek-ai/deepseek-coder-6.7b-instruct")
    assert (coder.layout.kv_bytes_per_token, coder.max_model_len) == (32 * 32 * 128 * 2 * 2, 16384 * 4)
    # granite-3.0-3b-a800m: 32 layers × 8 KV heads × 1536 / 24 = 64 × 2 × 2 B; 4,096 positions
    granite = est("ibm-granite/granite-3.0-3b-a800m-instruct")
    assert (granite.layout.kv_bytes_per_token, granite.max_model_len) == (32 * 8 * 64 * 2 * 2, 4096)
    # Qwen2.5-Coder-14B-Instruct: 48 layers × 8 KV heads × 5120 / 40 = 128 × 2 × 2 B; 32,768 positions
    q14 = est("Qwen/Qwen2.5-Coder-14B-Instruct")
    assert (q14.layout.kv_bytes_per_token, q14.max_model_len) == (48 * 8 * 128 * 2 * 2, 32768)
    # Bamba-9B (3 attention layers of 32; the card's 9.78B parameters):
    # embed + lm_head 2 × 128,256 × 4,096 = 1,050,673,152, final norm 4,096;
    # every layer: MLP 3 × 4,096 × 14,336 = 176,160,768 + 2 norms × 4,096;
    # attention (3): q, o 2 × 4,096² + k, v 2 × 4,096 × 1,024 = 41,943,040;
    # Mamba-2 (29): in_proj 4,096 × (2 × 8,192 + 2 × 128 + 128) = 68,681,728, conv (8,448 × 4 + 8,448 bias)
    # = 42,240, dt_bias, A, D 3 × 128, gated norm 8,192, out_proj 8,192 × 4,096 = 33,554,432 → 102,286,976
    bamba = load_model("ibm-fms/Bamba-9.8b-1.8T-hf", offline=True).spec
    assert count_params(bamba).params_total == (1_050_673_152 + 4_096 + 32 * (176_160_768 + 2 * 4_096)
                                                + 3 * 41_943_040 + 29 * 102_286_976) == 9_780_235_392
