"""estimator.hub against a fake Hub over real HTTP (tests/fakehub.py); the real huggingface_hub
client does the talking. No internet, no HTTP monkeypatching."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest
from fakehub import FakeHub, safetensors_file, sharded_checkpoint

from estimator.errors import HubUnavailable, KvdoctorError, ModelGated, ModelNotFound, ModelUnavailable
from estimator.hub import catalog_ids, clear_cache, resolve_model

ENV_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
            "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME")


@pytest.fixture(autouse=True)
def _clean(monkeypatch, tmp_path):
    for v in ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "default-hf-cache"))  # never the developer's cache
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def hub():
    with FakeHub() as h:
        yield h


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "hf-cache"
    d.mkdir()
    return str(d)


# ------------------------------------------------------------------------------------------------
# fixtures: a Llama-3-70B-shaped checkpoint, header only
# ------------------------------------------------------------------------------------------------
HIDDEN, INTER, LAYERS, VOCAB, KV_DIM = 8192, 28672, 80, 128256, 8 * 128
LLAMA70_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
    "intermediate_size": INTER, "num_hidden_layers": LAYERS, "num_attention_heads": 64,
    "num_key_value_heads": 8, "vocab_size": VOCAB, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
}


def llama70_tensors(linear_dtype: str = "BF16", scales: bool = False) -> list[tuple[str, str, list[int]]]:
    """Tensors of a Llama-3-70B: per layer q/k/v/o, gate/up/down, 2 norms; embed, norm, lm_head.
    With `scales`, each Linear also gets a scalar F32 weight_scale and input_scale (ModelOpt FP8 style)."""
    t: list[tuple[str, str, list[int]]] = [("model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN])]
    linears = {
        "self_attn.q_proj": [HIDDEN, HIDDEN], "self_attn.k_proj": [KV_DIM, HIDDEN],
        "self_attn.v_proj": [KV_DIM, HIDDEN], "self_attn.o_proj": [HIDDEN, HIDDEN],
        "mlp.gate_proj": [INTER, HIDDEN], "mlp.up_proj": [INTER, HIDDEN], "mlp.down_proj": [HIDDEN, INTER],
    }
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        for name, shape in linears.items():
            t.append((p + name + ".weight", linear_dtype, shape))
            if scales:
                t.append((p + name + ".weight_scale", "F32", []))
                t.append((p + name + ".input_scale", "F32", []))
        t.append((p + "input_layernorm.weight", "BF16", [HIDDEN]))
        t.append((p + "post_attention_layernorm.weight", "BF16", [HIDDEN]))
    t.append(("model.norm.weight", "BF16", [HIDDEN]))
    t.append(("lm_head.weight", "BF16", [VOCAB, HIDDEN]))
    return t


# Hand arithmetic for the checkpoint above:
#   per-layer Linear elements: q 8192*8192 = 67,108,864; k, v 1024*8192 = 8,388,608 each; o 67,108,864;
#   gate, up, down 28672*8192 = 234,881,024 each
#   -> 2*67,108,864 + 2*8,388,608 + 3*234,881,024 = 855,638,016 per layer; * 80 = 68,451,041,280
#   norms: 80 layers * 2 * 8192 + final 8192 = 1,318,912
#   embed + lm_head: 2 * 128256 * 8192 = 2,101,346,304
#   all-BF16 total = 68,451,041,280 + 1,318,912 + 2,101,346,304 = 70,553,706,496 elements
#   (= the HF count of meta-llama/Llama-3.1-70B-Instruct in ../shared/data/models/params.jsonl)
LINEAR_ELEMS = 68_451_041_280
OTHER_BF16_ELEMS = 1_318_912 + 2_101_346_304  # 2,102,665,216
assert LINEAR_ELEMS + OTHER_BF16_ELEMS == 70_553_706_496


def tiny_config(**over) -> dict:
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "vocab_size": 1000}
    cfg.update(over)
    return cfg


def tiny_repo_files(**over) -> dict:
    # BF16: embed 1000*64 = 64,000 + lm_head 64,000 = 128,000 elements -> 256,000 bytes; F32 norm 64 -> 256 B
    return {
        "config.json": tiny_config(**over),
        "model.safetensors": safetensors_file([
            ("model.embed_tokens.weight", "BF16", [1000, 64]),
            ("lm_head.weight", "BF16", [1000, 64]),
            ("model.norm.weight", "F32", [64]),
        ]),
        "README.md": b"# tiny",
    }


# ------------------------------------------------------------------------------------------------
# the Hub path
# ------------------------------------------------------------------------------------------------
def test_model_not_in_catalog_is_resolved_from_the_fake_hub(hub, cache):
    hub.add_repo("kvtest/tiny-llama", tiny_repo_files())
    assert "kvtest/tiny-llama" not in catalog_ids()
    src = resolve_model("kvtest/tiny-llama", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.origin == "hub"
    assert src.model_id == "kvtest/tiny-llama"
    assert src.config == tiny_config()
    assert src.revision == hub.repos["kvtest/tiny-llama"].refs["main"]
    assert src.safetensors_params_by_dtype == {"BF16": 128_000, "F32": 64}
    assert src.safetensors_bytes_by_dtype == {"BF16": 256_000, "F32": 256}
    # Fewest requests: one model_info (which carried the safetensors counts) + HEAD/GET of
    # config.json; the weights file is never requested, not even its header.
    assert hub.count("/api/models/") == 1
    assert hub.count("/resolve/main/config.json") == 2
    assert hub.count(".safetensors") == 0
    assert hub.count("README") == 0
    # config.json landed in the standard HF cache layout
    snap = os.path.join(cache, "models--kvtest--tiny-llama", "snapshots", src.revision, "config.json")
    assert json.load(open(snap)) == tiny_config()


def test_sharded_70b_headers_give_exact_bytes_per_dtype(hub, cache):
    # FP8 Linear weights + F32 scalar scales; the fake's model-info API gives no safetensors counts,
    # so the client must read the three shard headers with Range requests.
    files = {"config.json": LLAMA70_CONFIG, **sharded_checkpoint(llama70_tensors("F8_E4M3", scales=True), 3)}
    hub.add_repo("kvtest/llama-70b-fp8", files, api_safetensors=False)
    assert all(len(b) < 200_000 for b in files.values() if isinstance(b, bytes))  # "a few KB"
    src = resolve_model("kvtest/llama-70b-fp8", endpoint=hub.url, cache_dir=cache, timeout=5)
    # F8_E4M3: 68,451,041,280 elements * 1 byte; F32 scales: 80 layers * 7 Linears * 2 = 1,120 * 4 B
    # BF16: 2,102,665,216 elements * 2 B = 4,205,330,432 B
    assert src.safetensors_params_by_dtype == {"F8_E4M3": 68_451_041_280, "F32": 1_120, "BF16": 2_102_665_216}
    assert src.safetensors_bytes_by_dtype == {"F8_E4M3": 68_451_041_280, "F32": 4_480, "BF16": 4_205_330_432}
    shard_gets = [r for r in hub.requests if r["path"].endswith(".safetensors")]
    assert len(shard_gets) == 3 and all(r["range"] == "bytes=0-100000" for r in shard_gets)


def test_api_safetensors_counts_give_the_same_bytes(hub, cache):
    # Same BF16 70B checkpoint, counts from the model-info API instead of headers.
    files = {"config.json": LLAMA70_CONFIG, **sharded_checkpoint(llama70_tensors(), 4)}
    hub.add_repo("kvtest/llama-70b", files, api_safetensors=True)
    src = resolve_model("kvtest/llama-70b", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.safetensors_params_by_dtype == {"BF16": 70_553_706_496}
    assert src.safetensors_bytes_by_dtype == {"BF16": 141_107_412_992}  # 70,553,706,496 * 2
    assert hub.count(".safetensors") == 0


def test_long_header_is_read_with_a_second_range_request(hub, cache):
    blob = safetensors_file([("w", "BF16", [3, 5]), ("s", "F8_E4M3", [7])], pad_to=150_000)
    hub.add_repo("kvtest/long-header", {"config.json": tiny_config(), "model.safetensors": blob},
                 api_safetensors=False)
    src = resolve_model("kvtest/long-header", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.safetensors_bytes_by_dtype == {"BF16": 30, "F8_E4M3": 7}  # 15 * 2 B, 7 * 1 B
    ranges = [r["range"] for r in hub.requests if r["path"].endswith("model.safetensors")]
    assert ranges == ["bytes=0-100000", f"bytes=8-{len(blob) - 8 + 7}"]


def test_companion_files_are_fetched_when_present(hub, cache):
    quant = {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}
    gptq = {"bits": 4, "group_size": 128}
    hub.add_repo("kvtest/quant", {**tiny_repo_files(), "hf_quant_config.json": quant,
                                  "quantize_config.json": gptq})
    src = resolve_model("kvtest/quant", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.companions == {"hf_quant_config.json": quant, "quantize_config.json": gptq}
    assert hub.count("params.json") == 0 and hub.count("quant_config.json") == 2  # only hf_quant_config


def test_revision_is_honoured(hub, cache):
    hub.add_repo("kvtest/rev", tiny_repo_files(), other_revisions={"v1": {"config.json": tiny_config(vocab_size=7)}})
    v1_sha = hub.repos["kvtest/rev"].refs["v1"]
    a = resolve_model("kvtest/rev@v1", endpoint=hub.url, cache_dir=cache, timeout=5)
    b = resolve_model("kvtest/rev", revision="v1", endpoint=hub.url, cache_dir=cache, timeout=5)
    main = resolve_model("kvtest/rev", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert a.config["vocab_size"] == b.config["vocab_size"] == 7 and a.revision == v1_sha
    assert a.safetensors_bytes_by_dtype is None  # that revision has no weights
    assert main.config["vocab_size"] == 1000
    with pytest.raises(ModelNotFound, match="Revision 'nope'"):
        resolve_model("kvtest/rev@nope", endpoint=hub.url, cache_dir=cache, timeout=5)


def test_hf_endpoint_env_selects_the_hub(hub, cache, monkeypatch):
    hub.add_repo("kvtest/env", tiny_repo_files())
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    src = resolve_model("kvtest/env", cache_dir=cache, timeout=5)
    assert src.origin == "hub" and hub.count("/api/models/kvtest/env") == 1


# ------------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------------
def test_gated_repo_gives_the_access_message(hub, cache):
    hub.add_repo("kvtest/gated", tiny_repo_files(), gated="manual", allowed_tokens={"hf_allowedTOKEN123"})
    with pytest.raises(ModelGated) as ei:
        resolve_model("kvtest/gated", endpoint=hub.url, cache_dir=cache, timeout=5)
    msg = str(ei.value)
    assert "gated" in msg and f"{hub.url}/kvtest/gated" in msg
    assert "Accept the licence" in msg and "HF_TOKEN" in msg and "--hf-token" in msg and "paste" in msg
    # a token without access: 403 GatedRepo; the message must not echo the token
    with pytest.raises(ModelGated) as ei:
        resolve_model("kvtest/gated", endpoint=hub.url, cache_dir=cache, timeout=5, token="hf_wrongTOKEN999")
    assert "hf_wrongTOKEN999" not in str(ei.value) and "no access" in str(ei.value)
    # with access it works, and the token travelled as a Bearer header
    src = resolve_model("kvtest/gated", endpoint=hub.url, cache_dir=cache, timeout=5, token="hf_allowedTOKEN123")
    assert src.config == tiny_config()
    assert any(r["had_auth"] for r in hub.requests)


def test_missing_repo_gives_not_found_with_near_names(hub, cache):
    with pytest.raises(ModelNotFound) as ei:
        resolve_model("meta-llama/Llama-3.1-8B-Instrct", endpoint=hub.url, cache_dir=cache, timeout=5)
    msg = str(ei.value)
    assert "was not found" in msg and "meta-llama/Llama-3.1-8B-Instruct" in msg
    assert hub.count("/api/models/") == 1  # a 404 is not retried


def test_repo_without_config_json(hub, cache):
    hub.add_repo("kvtest/noconfig", {"README.md": b"hi"})
    with pytest.raises(ModelNotFound, match="has no config.json"):
        resolve_model("kvtest/noconfig", endpoint=hub.url, cache_dir=cache, timeout=5)


def test_stalling_api_is_cut_off_by_the_timeout(hub, cache):
    hub.add_repo("kvtest/slow", tiny_repo_files())
    hub.stall_when(lambda method, path: path.startswith("/api/models/"))
    t0 = time.monotonic()
    with pytest.raises(HubUnavailable) as ei:
        resolve_model("kvtest/slow", endpoint=hub.url, cache_dir=cache, timeout=0.3, retries=1)
    elapsed = time.monotonic() - t0
    # two attempts of 0.3 s + 0.1 s backoff; generous bound for a loaded CI box, far below the stall
    assert elapsed < 5.0
    assert "timed out" in str(ei.value) and "2 attempts" in str(ei.value)
    assert hub.count("/api/models/") == 2  # bounded retries
    _let_background_work_finish(hub)


def test_stalling_file_download_is_cut_off_by_the_deadline(hub, cache):
    # huggingface_hub retries a failed HEAD with its own 60 s timeout; our deadline still holds.
    hub.add_repo("kvtest/slowfile", tiny_repo_files())
    hub.stall_when(lambda method, path: "/resolve/" in path)
    t0 = time.monotonic()
    with pytest.raises(HubUnavailable):
        resolve_model("kvtest/slowfile", endpoint=hub.url, cache_dir=cache, timeout=0.3, retries=0)
    assert time.monotonic() - t0 < 5.0  # budget = 0.3 s + 1 s
    _let_background_work_finish(hub)


def _let_background_work_finish(hub):
    """The abandoned fetch keeps running in a worker thread (bounded by huggingface_hub's own
    timeouts); answer it so it ends here rather than during a later test."""
    from estimator import hub as hubmod

    hub.stall_when(None)
    hub.release()
    deadline = time.monotonic() + 20
    while hubmod._INFLIGHT and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not hubmod._INFLIGHT


def test_5xx_is_retried_with_backoff_then_succeeds(hub, cache):
    hub.add_repo("kvtest/flaky", tiny_repo_files())
    hub.fail_next(2, 503)
    src = resolve_model("kvtest/flaky", endpoint=hub.url, cache_dir=cache, timeout=5, retries=2)
    assert src.origin == "hub" and hub.count("/api/models/") == 3


def test_persistent_5xx_gives_hub_unavailable(hub, cache):
    hub.add_repo("kvtest/down", tiny_repo_files())
    hub.fail_next(10, 502)
    with pytest.raises(HubUnavailable, match="HTTP 502 after 2 attempts"):
        resolve_model("kvtest/down", endpoint=hub.url, cache_dir=cache, timeout=5, retries=1)


def test_bad_references_are_one_line_errors():
    for ref in ("", "   ", "not a repo id!!", "./no/such/dir", "/definitely/not/here"):
        with pytest.raises(ModelNotFound) as ei:
            resolve_model(ref, offline=True)
        assert "\n" not in str(ei.value)
    assert issubclass(ModelNotFound, ModelUnavailable) and issubclass(ModelUnavailable, KvdoctorError)


def test_references_the_file_system_cannot_hold_are_one_line_errors():
    """A path component over 255 characters made Path.is_dir() raise OSError (ENAMETOOLONG), which reached
    the CLI as "internal error"; a 100,000-character reference (a paste in a form's model field) is not
    echoed back whole."""
    with pytest.raises(ModelNotFound) as ei:
        resolve_model("org/" + "x" * 300, offline=True)
    assert "\n" not in str(ei.value)
    with pytest.raises(ModelNotFound) as ei:
        resolve_model("org/" + "1" * 100_000, offline=True)
    assert "100,004 characters" in str(ei.value) and len(str(ei.value)) < 200


# ------------------------------------------------------------------------------------------------
# caching
# ------------------------------------------------------------------------------------------------
def test_second_lookup_is_served_from_memory_without_a_request(hub, cache):
    hub.add_repo("kvtest/memo", tiny_repo_files())
    first = resolve_model("kvtest/memo", endpoint=hub.url, cache_dir=cache, timeout=5)
    n = len(hub.requests)
    second = resolve_model("KVTEST/memo", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert len(hub.requests) == n
    assert second.origin == "memory-cache" and second.config == first.config
    assert second.safetensors_bytes_by_dtype == first.safetensors_bytes_by_dtype
    second.config["vocab_size"] = -1  # callers may mutate what they get without poisoning the cache
    assert resolve_model("kvtest/memo", endpoint=hub.url, cache_dir=cache).config["vocab_size"] == 1000


def test_concurrent_lookups_share_one_request(hub, cache):
    hub.add_repo("kvtest/burst", tiny_repo_files())
    hub.delay_s = 0.2
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        try:
            results.append(resolve_model("kvtest/burst", endpoint=hub.url, cache_dir=cache, timeout=5))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(results) == 8
    assert hub.count("/api/models/") == 1
    assert all(r.config == tiny_config() for r in results)


def test_offline_env_never_touches_the_network(hub, cache, monkeypatch):
    hub.add_repo("Qwen/Qwen3-8B", tiny_repo_files())  # would answer, but must not be asked
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    src = resolve_model("Qwen/Qwen3-8B", endpoint=hub.url, cache_dir=cache)
    assert src.origin == "catalog" and src.config["num_hidden_layers"] == 36
    assert any("bundled offline catalog" in a for a in src.assumptions)
    with pytest.raises(ModelNotFound, match="not available offline"):
        resolve_model("kvtest/unknown", endpoint=hub.url, cache_dir=cache)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(ModelNotFound):
        resolve_model("kvtest/unknown2", endpoint=hub.url, cache_dir=cache, offline=True)
    assert hub.count("") == 0


def _write_hf_cache(root, repo_id: str, rev: str, files: dict[str, bytes | dict], ref: str = "main"):
    """The standard layout: models--org--name/{refs/<ref>, snapshots/<rev>/<file>}."""
    folder = root / ("models--" + repo_id.replace("/", "--"))
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / ref).write_text(rev)
    snap = folder / "snapshots" / rev
    snap.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (snap / name).write_bytes(json.dumps(data).encode() if isinstance(data, dict) else data)
    return snap


def test_hf_cache_on_disk_works_offline(hub, tmp_path, monkeypatch):
    root = tmp_path / "hand-made-cache"
    rev = "0123456789abcdef0123456789abcdef01234567"
    _write_hf_cache(root, "kvtest/Cached-Model", rev, {"config.json": tiny_config(vocab_size=4242),
                                                      "hf_quant_config.json": {"quantization": {}}})
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    src = resolve_model("kvtest/cached-model", endpoint=hub.url)  # case-insensitive, env cache dir
    assert src.origin == "hf-cache" and src.revision == rev and src.model_id == "kvtest/Cached-Model"
    assert src.config["vocab_size"] == 4242 and "hf_quant_config.json" in src.companions
    assert resolve_model(f"kvtest/Cached-Model@{rev}", cache_dir=str(root)).config["vocab_size"] == 4242
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    _write_hf_cache(tmp_path / "home" / "hub", "kvtest/home-model", rev, {"config.json": tiny_config()})
    assert resolve_model("kvtest/home-model").origin == "hf-cache"
    assert hub.count("") == 0


def test_hub_fills_the_hf_cache_which_then_works_offline(hub, cache):
    hub.add_repo("kvtest/fill", tiny_repo_files())
    online = resolve_model("kvtest/fill", endpoint=hub.url, cache_dir=cache, timeout=5)
    clear_cache()
    n = len(hub.requests)
    offline = resolve_model("kvtest/fill", endpoint=hub.url, cache_dir=cache, offline=True)
    assert len(hub.requests) == n
    assert offline.origin == "hf-cache" and offline.config == online.config
    assert offline.revision == online.revision


def test_hf_cache_with_weights_answers_without_the_hub(hub, tmp_path):
    root = tmp_path / "c"
    rev = "89abcdef0123456789abcdef0123456789abcdef"
    _write_hf_cache(root, "kvtest/full", rev, {"config.json": tiny_config(),
                                               **{k: v for k, v in tiny_repo_files().items() if k != "config.json"}})
    src = resolve_model("kvtest/full", endpoint=hub.url, cache_dir=str(root))
    assert src.origin == "hf-cache" and src.safetensors_bytes_by_dtype == {"BF16": 256_000, "F32": 256}
    assert hub.count("") == 0


def test_local_directory(tmp_path, hub):
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA70_CONFIG))
    (d / "hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "FP8"}}))
    for name, blob in sharded_checkpoint(llama70_tensors("F8_E4M3", scales=True), 2).items():
        (d / name).write_bytes(blob)
    (d / "consolidated.safetensors").write_bytes(safetensors_file([("x", "BF16", [10**6])]))  # not counted
    src = resolve_model(str(d), endpoint=hub.url)
    assert src.origin == "local-dir" and src.model_id == str(d)
    assert src.config == LLAMA70_CONFIG and src.companions["hf_quant_config.json"]["quantization"]
    assert src.safetensors_bytes_by_dtype == {"F8_E4M3": 68_451_041_280, "F32": 4_480, "BF16": 4_205_330_432}
    assert hub.count("") == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelNotFound, match="has no config.json"):
        resolve_model(str(empty))


def test_single_file_local_directory(tmp_path):
    d = tmp_path / "single"
    d.mkdir()
    for name, data in tiny_repo_files().items():
        (d / name).write_bytes(json.dumps(data).encode() if isinstance(data, dict) else data)
    src = resolve_model(str(d))
    assert src.safetensors_params_by_dtype == {"BF16": 128_000, "F32": 64}


# ------------------------------------------------------------------------------------------------
# catalog fallback
# ------------------------------------------------------------------------------------------------
def _dead_endpoint() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def test_catalog_fallback_when_the_hub_is_unreachable_says_so(cache):
    src = resolve_model("meta-llama/Llama-3.1-8B-Instruct", endpoint=_dead_endpoint(), cache_dir=cache,
                        timeout=1, retries=0)
    assert src.origin == "catalog" and src.config["num_key_value_heads"] == 8
    text = " ".join(src.assumptions)
    assert "bundled offline catalog" in text and "Hub could not be used" in text and "connection failed" in text


def test_unreachable_hub_and_unknown_model_raises_hub_unavailable(cache):
    with pytest.raises(HubUnavailable, match="connection failed"):
        resolve_model("kvtest/nowhere", endpoint=_dead_endpoint(), cache_dir=cache, timeout=1, retries=0)


def test_an_export_the_hub_cannot_serve_takes_its_base_from_the_catalog(monkeypatch, cache):
    """vllm#34076 named Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8 (not in the catalog; its base is):
    with the Hub unreachable the reply had no model at all, while --offline found the base. Any
    reason the export is unavailable now leads to the base, and the reason is said."""
    from estimator.api import load_model

    monkeypatch.setenv("HF_ENDPOINT", _dead_endpoint())
    monkeypatch.setenv("HF_HUB_CACHE", cache)
    spec = load_model("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", timeout=1).spec
    assert spec.quantization["quant_method"] == "fp8" and spec.num_layers == 48
    text = " ".join(spec.assumptions)
    assert "connection failed" in text and "base model Qwen/Qwen3-Coder-30B-A3B-Instruct" in text
    assert "offline mode" not in text  # the user did not ask for offline mode
    # no catalog base: the Hub's own reason, not the base lookup's
    with pytest.raises(HubUnavailable, match="kvtest/nowhere-AWQ"):
        load_model("kvtest/nowhere-AWQ", timeout=1)


def test_a_gated_export_takes_its_base_and_says_it_is_gated(hub, cache, monkeypatch):
    from estimator.api import load_model

    hub.add_repo("meta-llama/Llama-3.1-8B-Instruct-FP8", tiny_repo_files(), gated="manual")
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_CACHE", cache)
    spec = load_model("meta-llama/Llama-3.1-8B-Instruct-FP8", timeout=5).spec
    assert spec.hidden_size == 4096 and spec.quantization["quant_method"] == "fp8"
    assert any("gated" in a and "base model meta-llama/Llama-3.1-8B-Instruct" in a for a in spec.assumptions)


def test_catalog_fallback_for_a_gated_repo(hub, cache):
    hub.add_repo("meta-llama/Llama-3.1-8B-Instruct", tiny_repo_files(), gated="manual")
    src = resolve_model("meta-llama/Llama-3.1-8B-Instruct", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.origin == "catalog" and src.config["hidden_size"] == 4096
    assert any("gated" in a and "HF_TOKEN" in a for a in src.assumptions)


def test_gguf_repo_without_config_uses_its_base_model(hub, cache):
    hub.add_repo("kvtest/base", tiny_repo_files())
    hub.add_repo("kvtest/base-GGUF", {"base.Q4_K_M.gguf": b"GGUF\x03\x00\x00\x00"},
                 gguf={"total": 128_064, "architecture": "llama", "context_length": 4096},
                 base_models=["kvtest/base"])
    src = resolve_model("kvtest/base-GGUF", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.model_id == "kvtest/base-GGUF" and src.config == tiny_config()
    assert src.safetensors_bytes_by_dtype is None  # the base's BF16 bytes are not this repo's weights
    text = " ".join(src.assumptions)
    assert "base model kvtest/base" in text and "GGUF" in text and "estimated" in text and "128,064" in text


def test_gguf_repo_with_config_says_weights_are_estimated(hub, cache):
    hub.add_repo("kvtest/with-config-GGUF", {"config.json": tiny_config(), "m.Q8_0.gguf": b"GGUF"})
    src = resolve_model("kvtest/with-config-GGUF", endpoint=hub.url, cache_dir=cache, timeout=5)
    assert src.safetensors_bytes_by_dtype is None
    assert any("GGUF" in a and "estimated" in a for a in src.assumptions)
