"""Pooling models (embedding, reranking, reward): vLLM's pooling runner loads no lm_head and ends its
profile run in the pooler instead of the sampler (v1/worker/gpu_model_runner.py profile_run,
model_executor/models/adapters.py), and captures PIECEWISE CUDA graphs only."""

import pytest

from estimator.api import load_model, run_estimate
from estimator.flags import runner_word
from estimator.paste import read_paste
from estimator.vllm import EngineSettings, parse_flags

GIB = 2**30


@pytest.mark.parametrize("argv,runner", [
    (["--runner", "pooling"], "pooling"),
    (["--task", "embed"], "pooling"),           # 0.5–0.10 spelling
    (["--task=score"], "pooling"),
    (["--convert", "embed"], "pooling"),        # 0.10.2+ spelling
    (["--runner", "generate"], "generate"),
    (["--task", "generate"], "generate"),
    (["--runner", "auto"], None),               # vLLM decides
])
def test_runner_task_and_convert_flags_say_the_runner(argv, runner):
    assert parse_flags(argv).runner == runner


def test_runner_words():
    assert runner_word("'embed'") == "pooling" and runner_word("classify") == "pooling"
    assert runner_word("none") is None and runner_word("auto") is None and runner_word("banana") is None


@pytest.mark.parametrize("text,runner", [
    ("vllm serve BAAI/bge-m3 --task embed", "pooling"),
    ("... served_model_name=x, pooler_config=PoolerConfig(pooling_type='LAST', normalize=True), compilation_config={}",
     "pooling"),
    ("WARNING 12-22 14:22:10 [vllm.py:693] Pooling models do not support full cudagraphs. Overriding cudagraph_mode "
     "to PIECEWISE.", "pooling"),
    ("... served_model_name=x, pooler_config=None, compilation_config={}", None),    # a generative run's dump
    # V0's engine config line (0.6–0.9) prints the task
    ("INFO 10-01 12:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
     "model='intfloat/e5-mistral-7b-instruct', speculative_config=None, task=embed, dtype=torch.float16", "pooling"),
    ("INFO 10-01 12:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
     "model='meta-llama/Llama-3.1-8B', task=generate, dtype=torch.float16", "generate"),
])
def test_the_paste_says_a_pooling_run(text, runner):
    assert read_paste(text).extra.get("runner") == runner


def test_an_embedding_model_has_no_lm_head_and_no_sampler_in_its_profile():
    """Qwen3-Embedding-8B (Qwen3ForCausalLM in its config, a Sentence Transformers repo) on an H100, vLLM
    0.12.0, max_model_len 8,192: a public log (VideoCuttingAgent's Qwen3Embedding_vllm-server.out) prints
    "Model loading took 14.1062 GiB" and "Available KV cache memory: 56.24 GiB". Its untied lm_head is
    151,680 (151,665 padded to 64) × 4,096 × 2 B = 1.157 GiB that the pooling model does not load, and the
    generate runner's
    sampler (1,024 rows × 151,665 vocab on an H100) is not in its profile run."""
    spec = load_model("Qwen/Qwen3-Embedding-8B", offline=True).spec
    settings = dict(vllm_version="0.12.0", max_model_len=8192, dtype="bfloat16")
    pooled = run_estimate(spec, "H100 80GB", EngineSettings(**settings))
    generated = run_estimate(spec, "H100 80GB", EngineSettings(runner="generate", **settings))
    assert pooled.settings.runner == "pooling" and any("pooling model" in a for a in pooled.assumptions)
    # the lm_head (1,185 MiB) and the 1 MiB its 1,186 MiB segment keeps (params.allocator_slack)
    assert generated.weights_bytes - pooled.weights_bytes == 151680 * 4096 * 2 + 2**20
    assert abs(pooled.weights_bytes / GIB - 14.1062) < 0.01
    assert generated.activation_bytes - pooled.activation_bytes > 1024 * 151665 * 4     # at least the fp32 logits
    assert abs(pooled.kv_cache_bytes / GIB / 56.24 - 1) < 0.02
    assert abs(generated.kv_cache_bytes / GIB / 56.24 - 1) > 0.05


def test_a_generative_model_stays_generative_unless_told():
    spec = load_model("Qwen/Qwen2.5-7B-Instruct", offline=True).spec
    est = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.12.0", max_model_len=8192))
    assert est.settings.runner == "generate"
    told = run_estimate(spec, "RTX 4090", EngineSettings(vllm_version="0.12.0", max_model_len=8192, runner="pooling"))
    # its untied lm_head (1,039.5 MiB) and the 0.5 MiB its 1,040 MiB segment keeps (params.allocator_slack)
    assert told.weights_bytes == est.weights_bytes - 152064 * 3584 * 2 - 2**19
    assert told.kv_cache_bytes > est.kv_cache_bytes


def test_a_sentence_transformers_repo_on_the_hub_is_a_pooling_model(tmp_path):
    """vLLM runs a Sentence Transformers repo with its pooling runner even when config.json names a
    *ForCausalLM (vllm/config/model.py: "Some Sentence Transformers models use *ForCausalLM archs"): the
    repo's sentence_bert_config.json, fetched from the (fake) Hub beside config.json, says so."""
    import json

    from fakehub import FakeHub

    from estimator.hub import resolve_model
    from estimator.memory import estimate
    from estimator.spec import spec_from_config

    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1024,
              "intermediate_size": 2816, "num_hidden_layers": 4, "num_attention_heads": 16,
              "num_key_value_heads": 16, "vocab_size": 32000, "max_position_embeddings": 4096,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    files = {"config.json": json.dumps(config).encode()}
    with FakeHub() as hub:
        hub.add_repo("kvtest/plain-lm", dict(files))
        hub.add_repo("kvtest/st-embedder", {**files, "sentence_bert_config.json": b'{"max_seq_length": 4096}'})
        plain = resolve_model("kvtest/plain-lm", endpoint=hub.url, cache_dir=str(tmp_path), timeout=5)
        st = resolve_model("kvtest/st-embedder", endpoint=hub.url, cache_dir=str(tmp_path), timeout=5)
    assert st.companions == {"sentence_bert_config.json": {"max_seq_length": 4096}}
    settings = EngineSettings(vllm_version="0.12.0", max_model_len=4096)
    a = estimate(spec_from_config(plain.config, plain.model_id, plain.companions), gpu_total_bytes=24 * GIB,
                 settings=settings.replace())
    b = estimate(spec_from_config(st.config, st.model_id, st.companions), gpu_total_bytes=24 * GIB,
                 settings=settings.replace())
    assert (a.settings.runner, b.settings.runner) == ("generate", "pooling")
    assert a.weights_bytes - b.weights_bytes == 32000 * 1024 * 2          # its lm_head


def test_a_pooling_model_captures_piecewise_graphs_only():
    """vLLM (config/vllm.py) turns a pooling model's cudagraph mode to PIECEWISE ("Pooling models do not
    support full cudagraphs"): where the estimate is budgeted (0.20+), the same captures without the FULL
    decode graphs — here as many FULL sizes as PIECEWISE ones, so half the graph memory."""
    from estimator.vllm import cuda_graph_sizes, full_graph_sizes

    spec = load_model("Qwen/Qwen3-Embedding-8B", offline=True).spec
    graphs = {r: run_estimate(spec, "H100 80GB", EngineSettings(vllm_version="0.22.0", max_model_len=8192,
                                                                runner=r, model_runner_v2=False))
              for r in ("generate", "pooling")}
    g = graphs["generate"].settings
    sizes = cuda_graph_sizes(graphs["generate"].profile, g.max_num_seqs, g.max_num_batched_tokens, 0)
    assert len(full_graph_sizes(sizes, g.max_num_seqs, 0)) == len(sizes)
    assert graphs["pooling"].cuda_graph_bytes * 2 == graphs["generate"].cuda_graph_bytes > 0
