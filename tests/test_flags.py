"""vLLM settings from argv, command lines, kwargs, docker/compose/k8s args, dicts, env vars."""

from __future__ import annotations

import json

import pytest

from estimator.flags import flag_key, human_int, llm_call_with, normalise, parse_argv, scan_text


def settings(text: str) -> dict:
    """key → value of the first setting of each key found (sources ranked by the caller normally)."""
    out: dict = {}
    for s in scan_text(text):
        out.setdefault(s.key, s.value)
    return out


def test_parse_argv_serve():
    argv = ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "32k", "-tp", "2",
            "--gpu-memory-utilization=0.95", "--enforce-eager", "--kv-cache-dtype", "fp8", "--dtype", "half",
            "--unknown-flag", "7", "--block-size", "32", "--max-num-seqs", "64", "--max-num-batched-tokens", "8192"]
    assert parse_argv(argv) == {
        "model": "Qwen/Qwen2.5-7B-Instruct", "max_model_len": 32000,      # vLLM: 'k' = 1000, 'K' = 1024
        "tensor_parallel_size": 2, "gpu_memory_utilization": 0.95, "enforce_eager": True,
        "kv_cache_dtype": "fp8", "dtype": "float16", "block_size": 32, "max_num_seqs": 64,
        "max_num_batched_tokens": 8192,
    }


def test_parse_argv_api_server_and_underscores_and_abbreviation():
    argv = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "meta-llama/Llama-3.1-8B",
            "--tensor_parallel", "4", "--gpu_memory_utilization", "0.9", "-q", "awq", "--no-enable-prefix-caching",
            "--pipeline-parallel-size", "2"]
    assert parse_argv(argv) == {"model": "meta-llama/Llama-3.1-8B", "tensor_parallel_size": 4,
                                "gpu_memory_utilization": 0.9, "quantization": "awq",
                                "enable_prefix_caching": False, "pipeline_parallel_size": 2}


@pytest.mark.parametrize("raw,value", [("32k", 32000), ("32K", 32768), ("1,010,000", 1010000), ("30_000", 30000),
                                       ("25.6k", 25600), ("4096", 4096), ("abc", None), ("1.5", None),
                                       # vLLM refuses a decimal with a binary suffix (argparse_utils.py)
                                       ("1.5M", None), ("0.5K", None), ("1.5m", 1500000),
                                       # t / T as vLLM has them: 10^12, 2^40
                                       ("2t", 2 * 10**12), ("2T", 2 * 2**40)])
def test_human_int(raw, value):
    assert human_int(raw) == value


def test_human_int_long_digit_runs_stay_exact():
    # float("9" * 400) is inf, and int(inf) raised OverflowError
    assert human_int("9" * 400) == int("9" * 400)
    assert human_int("1" + "0" * 30 + "K") == 10**30 * 1024
    assert human_int("9" * 400 + ".5") is None


def test_normalise_drops_non_finite_numbers():
    # a kwargs dict's 1e309 is float inf by the time it is read
    assert normalise("gpu_memory_utilization", float("inf")) is None
    assert normalise("max_model_len", float("nan")) is None
    assert normalise("gpu_memory_utilization", "9" * 400) is None     # float() of it is inf


def test_normalise():
    assert normalise("dtype", "torch.bfloat16") == "bfloat16"
    assert normalise("dtype", "bf16") == "bfloat16"
    assert normalise("gpu_memory_utilization", ".97") == 0.97
    assert normalise("max_model_len", "None") is None
    assert normalise("enforce_eager", "False") is False
    assert normalise("quantization", "AWQ") == "awq"


def test_flag_key_prefixes():
    assert flag_key("--max-model-len") == "max_model_len"
    assert flag_key("--tensor_parallel") == "tensor_parallel_size"     # argparse unique prefix
    assert flag_key("--max-num") is None                                 # ambiguous prefix
    assert flag_key("-tp") == "tensor_parallel_size"


def test_command_line_in_text_with_continuations():
    text = """```bash
vllm serve /model --port 8000 \\
  --trust-remote-code \\
  --enable-chunked-prefill False \\
  --gpu-memory-utilization 0.9 \\
  --tensor-parallel-size 2
```"""
    s = settings(text)
    assert s["gpu_memory_utilization"] == 0.9 and s["tensor_parallel_size"] == 2
    assert s["enable_chunked_prefill"] is False and s["trust_remote_code"] is True
    assert s["model"] == "/model"
    span = next(x.span for x in scan_text(text) if x.key == "gpu_memory_utilization")
    assert text[span[0]:span[1]] == "0.9"


def test_docker_run():
    text = ("docker run --runtime nvidia --gpus all -p 10080:8000 --ipc=host vllm/vllm-openai:latest --trust-remote-code "
            "--model TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ --dtype auto --gpu-memory-utilization 0.5 --max-model-len 4096 "
            "--quantization awq")
    s = settings(text)
    assert (s["model"], s["dtype"], s["gpu_memory_utilization"], s["max_model_len"], s["quantization"]) == \
        ("TheBloke/Mixtral-8x7B-Instruct-v0.1-AWQ", "auto", 0.5, 4096, "awq")


@pytest.mark.parametrize("image", ["vllm/vllm-openai:latest", "10.4.32.48:5000/vllm/vllm-openai:v0.11.0"])
def test_the_model_is_the_first_bare_argument_after_the_image(image):
    """The vllm/vllm-openai image's entrypoint is `vllm serve`, so `docker run … IMAGE MODEL --flags` names the
    model positionally, as `vllm serve MODEL` does — here on the backslash-continued line after the image."""
    text = ("docker run -d --name vllm-tp4 \\\n  --gpus '\"device=1,4,5,6\"' \\\n  -e VLLM_USE_DEEP_GEMM=0 \\\n"
            f"  {image} \\\n    Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 \\\n    --served-model-name qwen3-235b \\\n"
            "    --tensor-parallel-size 4 \\\n    --max-model-len 32768\n")
    s = settings(text)
    assert s["model"] == "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8" and s["tensor_parallel_size"] == 4


def test_docker_run_with_its_image_on_a_continued_line():
    """`docker run -dit … \\` / `--name llm vllm/vllm-openai:latest \\` / `--model …`: the image is a vLLM
    invocation though its own line names no docker, since a backslash continues the docker line; so is
    an image followed by flags on the next line. A bare image name in prose is not."""
    from estimator.flags import command_spans, detached_container

    text = ("docker run -dit --rm --gpus '\"device=0,1,2,3\"' --network host --ipc host \\\n"
            "    --name serve-vllm-llm vllm/vllm-openai:latest \\\n"
            "    --model /workspace/models/Qwen3-235B-A22B-Instruct-2507-FP8 \\\n"
            "    --tensor-parallel-size 4 --gpu-memory-utilization 0.85\n")
    spans = command_spans(text)
    assert len(spans) == 1 and text[spans[0][0]:].startswith("vllm/vllm-openai:latest") and spans[0][2]
    assert detached_container(text, spans[0][0])
    attached = text.replace("run -dit --rm", "run --rm -it")
    assert not detached_container(attached, command_spans(attached)[0][0])
    flags_next = "    --name llm 10.4.32.48:5000/vllm/vllm-openai:v0.11.0 \\\n    --gpu_memory_utilization 0.9\n"
    assert len(command_spans(flags_next)) == 1
    assert command_spans("we pull vllm/vllm-openai:latest every week\nand pin it later\n") == []


def test_compose_and_kubernetes_arg_lists():
    compose = """services:
  vllm:
    image: vllm/vllm-openai:v0.9.2
    command: ["--model", "Qwen/Qwen3-8B", "--max-model-len", "16384", "--gpu-memory-utilization", "0.85"]
"""
    s = settings(compose)
    assert (s["max_model_len"], s["gpu_memory_utilization"]) == (16384, 0.85)
    k8s = """        args:
          - "--tensor-parallel-size"
          - "4"
          - --max-num-seqs=32
          - "--enforce-eager"
"""
    s = settings(k8s)
    assert (s["tensor_parallel_size"], s["max_num_seqs"], s["enforce_eager"]) == (4, 32, True)


def test_helm_extra_args_with_comments():
    text = """extraArgs: [
  # "--enforce-eager", # disable cuda graphs. lowers token/s. reduce memory.
  "--gpu-memory-utilization=0.99",
  "--max-model-len=1000", # context length # reduce kv cache size.
  "--kv-cache-dtype=fp8" #dynamic quantization of the KV cache
 ]"""
    s = settings(text)
    assert (s["gpu_memory_utilization"], s["max_model_len"], s["kv_cache_dtype"]) == (0.99, 1000, "fp8")
    assert "enforce_eager" not in s                                    # commented out


def test_llm_kwargs():
    text = """llm = LLM(
    model="DeepSeek-V4-Flash",
    tensor_parallel_size=2,
    max_model_len=30_000,
    gpu_memory_utilization=0.95,
    kv_cache_dtype="fp8",
    block_size=256,
    compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE", "max_num_seqs": 7},
)"""
    s = {x.key: x.value for x in scan_text(text) if x.source == "kwargs"}
    assert s == {"model": "DeepSeek-V4-Flash", "tensor_parallel_size": 2, "max_model_len": 30000,
                 "gpu_memory_utilization": 0.95, "kv_cache_dtype": "fp8", "block_size": 256}


def test_nondefault_args_both_renderings():
    s = {x.key: x.value for x in scan_text("non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 8192, "
                                             "'enforce_eager': True}") if x.source == "nondefault_args"}
    assert s == {"model": "Qwen/Qwen3-8B", "max_model_len": 8192, "enforce_eager": True}
    s = {x.key: x.value for x in scan_text("non-default args: model=nvidia/Gemma-4-31B-IT-NVFP4 · max_num_batched_tokens=4096")
         if x.source == "nondefault_args"}
    assert s == {"model": "nvidia/Gemma-4-31B-IT-NVFP4", "max_num_batched_tokens": 4096}


def test_env_vars():
    s = {x.key: x.value for x in scan_text("VLLM_USE_V1=0 CUDA_VISIBLE_DEVICES=0,1 vllm serve m-7b") if x.source == "env"}
    assert s == {"VLLM_USE_V1": "0", "CUDA_VISIBLE_DEVICES": "0,1"}


def test_other_servers_flags_ignored():
    text = "python3 -m sglang.launch_server --model /path/to/Qwen3-235B --tp 4 --mem-fraction-static 0.93"
    assert "tensor_parallel_size" not in settings(text)


@pytest.mark.parametrize("command", [
    "vllm-rs --m Qwen/Qwen3-8B --max-model-len 32768 --max-num-seqs 2",       # vllm.rs shares vLLM's flag names
    "vllm-server --model ./qwen --max-model-len 32768 --max-num-seqs 2",      # vllm.cpp
    "mlc_llm serve ./dist/qwen --max-model-len 32768 --max-num-seqs 2",
])
def test_the_flags_of_engines_that_borrow_vllms_names_are_not_vllms(command):
    """The other engines' command lines (paste_engines.FOREIGN_COMMAND) end a vLLM command and are not read."""
    assert settings(f"{command}\nvllm serve Qwen/Qwen3-8B --max-model-len 8192") == {"max_model_len": 8192}


def test_suggestions_are_not_settings():
    assert settings("--gpu-memory-utilization 0.85 fixes it") == {}
    assert settings("try --max-model-len 8192 instead") == {}
    assert settings("I run with --max-model-len 8192") == {"max_model_len": 8192}


def test_key_values_in_prose_and_yaml():
    s = settings("GPU KV cache size is 25,200 tokens at max_model_len=131072, gpu_memory_utilization=0.96, BF16 KV")
    assert s == {"max_model_len": 131072, "gpu_memory_utilization": 0.96}
    s = settings("max_model_len: 8192\ngpu-memory-utilization 0.92\n")
    assert s == {"max_model_len": 8192, "gpu_memory_utilization": 0.92}
    # a Slack message's "with max_model_len 32768 and gpu_memory_utilization 0.9": vLLM's own names, a number after
    s = settings("hey folks, running vllm with max_model_len 32768 and gpu_memory_utilization 0.9 on 2x A100 40GB")
    assert s == {"max_model_len": 32768, "gpu_memory_utilization": 0.9}
    assert settings("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (854)") == {}
    # JSON, as in a Triton vLLM backend's model.json (triton-inference-server#7562)
    s = settings('{\n    "model":"/models/gemma-2b-it/",\n    "gpu_memory_utilization": 0.47,\n'
                 '    "enforce_eager": true,\n    "max_model_len": 64\n}')
    assert s == {"model": "/models/gemma-2b-it", "gpu_memory_utilization": 0.47, "enforce_eager": True,
                 "max_model_len": 64}


def test_a_key_in_arithmetic_is_not_that_setting():
    # V0's multimodal profiling warning (vllm/multimodal/profiling.py 0.8.x, as an A800 log prints it):
    # 5120 is max_num_batched_tokens / max_num_seqs, not max_num_seqs
    text = ("WARNING 07-09 12:57:42 [profiling.py:222] The sequence length used for profiling "
            "(max_num_batched_tokens / max_num_seqs = 5120) is too short to hold the multi-modal embeddings")
    assert "max_num_seqs" not in settings(text)
    assert settings("seq_len = max_model_len * max_num_seqs = 4096") == {}
    assert settings("with max_num_seqs = 16 set") == {"max_num_seqs": 16}


def test_glued_flags_split():
    s = settings("vllm serve cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit --port 8111--gpu-memory-utilization 0.95")
    assert s["gpu_memory_utilization"] == 0.95


def test_prose_serve_does_not_make_a_model():
    s = settings("using vllm serve with the --dtype auto option. However")
    assert s == {"dtype": "auto"}


def test_an_unquoted_json_flag_value_is_read_whole():
    # a compose/args list with `--speculative-config {"method":"mtp",…}` unquoted (club-3090 notes)
    from estimator.paste import read_paste

    f = read_paste('--max-model-len 131072\n--speculative-config {"method":"mtp","num_speculative_tokens":1}\n'
                   '--limit-mm-per-prompt {"image":4,"video":0}\n')
    assert f.extra["speculative_config"] == '{"method":"mtp","num_speculative_tokens":1}'
    assert f.extra["limit_mm_per_prompt"] == '{"image":4,"video":0}'


def test_a_json_flag_value_as_the_next_item_of_an_args_list_is_read_whole():
    """A docker-compose / JSON args list gives each word its own quoted item, so the dict's quotes come
    escaped (vllm#41789: `"--speculative-config", "{\\"model\\":\\"google/gemma-4-26B-A4B-it-assistant\\",…}"`);
    it had been read as the value `{\\`. A Gemma 4 assistant named as the draft is vLLM's MTP path."""
    from estimator.flags import read_speculative
    from estimator.paste import read_paste

    f = read_paste('"--max-model-len", "32768",\n"--speculative-config", '
                   '"{\\"model\\":\\"google/gemma-4-26B-A4B-it-assistant\\",\\"num_speculative_tokens\\":1}",\n'
                   '"--no-enable-prefix-caching",\n')
    assert f.extra["speculative_config"] == '{"model":"google/gemma-4-26B-A4B-it-assistant","num_speculative_tokens":1}'
    assert read_speculative(f.extra["speculative_config"]) == ("mtp", 1)
    assert f.get("max_model_len") == 32768


def test_a_json_flag_value_on_the_next_line_of_a_yaml_command_list_is_read_whole():
    """A docker-compose `command:` list puts the dict on the next `- '…'` line (a Qwen3.6-27B-NVFP4
    DGX Spark log, MTP with 2 tokens); it had been read as the value `{`, so the reply's commands
    dropped the drafter and the Mamba pages were sized without the 2 speculative conv rows."""
    from estimator.flags import read_speculative
    from estimator.paste import read_paste

    f = read_paste('    command:\n      - "--max-model-len"\n      - "262144"\n'
                   '      - "--speculative-config"\n'
                   '      - \'{"method":"mtp","num_speculative_tokens":2}\'\n'
                   '      - "--enable-prefix-caching"\n')
    assert f.extra["speculative_config"] == '{"method":"mtp","num_speculative_tokens":2}'
    assert read_speculative(f.extra["speculative_config"]) == ("mtp", 2)
    assert f.get("max_model_len") == 262144


def test_a_dict_argument_given_one_key_at_a_time_is_read_as_the_dict_vllm_builds():
    """vLLM takes `--speculative-config.method mtp --speculative-config.num_speculative_tokens 2` and
    `--limit-mm-per-prompt.image=10` (FlexibleArgumentParser's "--json-arg.key value"), merging the keys into
    one dict; a Llama-4-Scout report serves with `--limit-mm-per-prompt.image 10`. Read on a command line, in
    a compose list, and by `kvdoctor estimate`'s own flags."""
    from estimator.paste import read_paste
    from estimator.vllm import parse_flags

    cmd = read_paste("vllm serve Qwen/Qwen3-8B --speculative-config.method mtp "
                     "--speculative-config.num_speculative_tokens 2 --limit-mm-per-prompt.image=10 --max-model-len 8192\n")
    assert json.loads(cmd.extra["speculative_config"]) == {"method": "mtp", "num_speculative_tokens": 2}
    assert json.loads(cmd.extra["limit_mm_per_prompt"]) == {"image": 10}
    assert cmd.get("max_model_len") == 8192
    compose = read_paste('    command:\n      - --speculative-config.method\n      - mtp\n'
                         '      - --speculative-config.num_speculative_tokens\n      - "3"\n')
    assert json.loads(compose.extra["speculative_config"]) == {"method": "mtp", "num_speculative_tokens": 3}
    s = parse_flags(["--speculative-config.method", "mtp", "--speculative-config.num_speculative_tokens=2",
                     "--limit-mm-per-prompt.image", "10"])
    assert (s.speculative_method, s.num_speculative_tokens, s.limit_mm_per_prompt) == ("mtp", 2, {"image": 10})
    # the dict they make is checked as the whole-dict flag is: a bad one is bad input, not ignored
    from estimator.errors import BadInput

    for argv in (["--speculative-config.num_speculative_tokens", "2"], ["--speculative-config.method"],
                 ["--limit-mm-per-prompt.image", "abc"]):
        with pytest.raises(BadInput):
            parse_flags(argv)


def test_an_llm_calls_dict_argument_is_read_whole():
    """`LLM(..., speculative_config={"method": "ngram", "num_speculative_tokens": 4})`: the dict, as a flag's."""
    from estimator.paste import read_paste

    f = read_paste('llm = LLM(model="Qwen/Qwen3-8B", max_model_len=8192,\n          speculative_config={"method": '
                   '"ngram", "num_speculative_tokens": 4}, gpu_memory_utilization=0.85)\n')
    assert json.loads(f.extra["speculative_config"]) == {"method": "ngram", "num_speculative_tokens": 4}
    assert (f.get("max_model_len"), f.get("gpu_memory_utilization")) == (8192, 0.85)


@pytest.mark.parametrize("argv, method", [
    (["--speculative-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"], "eagle3"),
    (["--speculative-config", '{"model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'], "eagle"),
    (["--speculative-model", "[ngram]"], "ngram"),
    (["--speculative-model", "meta-llama/Llama-3.2-1B-Instruct"], "draft_model"),
])
def test_draft_name_gives_the_method_in_either_spelling(argv, method):
    """vLLM runs a draft named like an EAGLE head as one, whether the name comes bare or in a dict."""
    from estimator.vllm import parse_flags

    assert parse_flags(argv).speculative_method == method


def test_a_boolean_flag_takes_the_value_word_v0_accepted():
    """V0's StoreBoolean flags took a value word: `--enable-chunked-prefill False` (vllm#11251)
    turned chunked prefill off, and the CLI read it as a bare flag (on) with a stray word."""
    from estimator.vllm import parse_flags

    s = parse_flags(["--enable-chunked-prefill", "False", "--max-model-len", "40000"])
    assert s.enable_chunked_prefill is False and s.max_model_len == 40000
    assert parse_flags(["--enforce-eager", "true"]).enforce_eager is True
    assert parse_flags(["--enable-chunked-prefill", "--max-model-len", "40000"]).enable_chunked_prefill is True
    # the negated spelling takes no value: a following word is not read as one
    assert parse_flags(["--no-enable-prefix-caching", "true"]).enable_prefix_caching is False


def test_keys_inside_a_dict_valued_setting_are_not_the_engines():
    """A draft's "max_model_len" inside --speculative-config is not the served model's; a Triton
    model.json's top-level keys are the engine's."""
    from estimator.paste import read_paste

    draft = ("vllm serve Qwen/Qwen3-8B --speculative-config '{\"model\": \"Qwen/Qwen3-0.6B\", "
             "\"num_speculative_tokens\": 3, \"max_model_len\": 2048}'")
    assert read_paste(draft).get("max_model_len") is None
    assert read_paste("LLM(model='x', hf_overrides={\"max_model_len\": 4096})").get("max_model_len") is None
    triton = '{"model": "/models/x", "gpu_memory_utilization": 0.85, "max_model_len": 16384}'
    f = read_paste(triton)
    assert (f.get("max_model_len"), f.get("gpu_memory_utilization")) == (16384, 0.85)


def test_a_fix_is_written_into_the_users_llm_call():
    one = 'out = LLM(model="Qwen/Qwen3-8B", max_model_len=32768, tensor_parallel_size=1)\nprint(out)'
    # a key the call sets is replaced in place, the rest kept as written
    assert llm_call_with(one, "--max-model-len 16384") == \
        'LLM(model="Qwen/Qwen3-8B", max_model_len=16384, tensor_parallel_size=1)'
    # a new one is appended; a string value is quoted, a switch becomes True
    assert llm_call_with(one, "--kv-cache-dtype fp8 --enforce-eager") == \
        'LLM(model="Qwen/Qwen3-8B", max_model_len=32768, tensor_parallel_size=1, kv_cache_dtype=\'fp8\', ' \
        'enforce_eager=True)'
    many = 'llm = LLM(\n    model="m",\n    block_size=256,\n    compilation_config={\n        "max_model_len": 1\n    }\n)\n'
    # on its own line, indented like the others; a key inside a nested dict is not the call's
    assert llm_call_with(many, "--max-model-len 8192") == \
        'LLM(\n    model="m",\n    block_size=256,\n    compilation_config={\n        "max_model_len": 1\n    },\n' \
        '    max_model_len=8192,\n)'
    assert llm_call_with(many, "VLLM_USE_V1=0 --max-model-len 8192") is None   # no place for an env var
    assert llm_call_with("vllm serve m --max-model-len 4096", "--max-model-len 2048") is None


def test_a_fix_replaces_the_calls_last_argument_too():
    """The last keyword argument ends at the call's closing parenthesis: a fix of that key replaces it
    rather than repeating the keyword (`max_model_len=32768, max_model_len=16384` is a SyntaxError)."""
    assert llm_call_with('llm = LLM(model="m", max_model_len=32768)', "--max-model-len 16384") == \
        'LLM(model="m", max_model_len=16384)'
    assert llm_call_with('llm = LLM(model="m", tensor_parallel_size=2)', "--tensor-parallel-size 4 --enforce-eager") == \
        'LLM(model="m", tensor_parallel_size=4, enforce_eager=True)'


def test_a_fix_appended_after_a_commented_argument_keeps_the_comment_and_the_spacing():
    """The comma after the last argument goes before its trailing comment (after it, it would be part
    of the comment and the appended argument a syntax error), and the call's own `key = value`
    spacing is kept."""
    code = 'llm = LLM(\n    model = "m",\n    max_model_len = 4096 # fits on a T4\n)\n'
    assert llm_call_with(code, "--enforce-eager") == \
        'LLM(\n    model = "m",\n    max_model_len = 4096, # fits on a T4\n    enforce_eager = True,\n)'


def test_a_fix_is_written_in_unsloths_own_arguments():
    """Unsloth's from_pretrained starts vLLM (unsloth_zoo vllm_utils.load_vllm): max_seq_length is
    vLLM's max_model_len, float8_kv_cache = True its fp8 KV cache, and its gpu_memory_utilization
    reaches vLLM scaled (0.9 given, 79.08% handed): vLLM's 0.81 is 0.81 × 0.9 / 0.7908 = 0.9219 of
    Unsloth's. Tensor parallelism, a quantization method or max_num_seqs have no argument there."""
    from estimator.flags import unsloth_call_kwargs, unsloth_call_with, unsloth_given_utilization

    code = ('model, tokenizer = FastLanguageModel.from_pretrained(\n    model_name = "meta-llama/Llama-3.2-3B-Instruct",\n'
            '    max_seq_length = max_seq_length,\n    fast_inference = True, # Enable vLLM fast inference\n'
            '    gpu_memory_utilization = 0.9, # Reduce if out of memory\n)\n')
    assert unsloth_given_utilization(unsloth_call_kwargs(code)) == 0.9
    scale = 0.9 / 0.7908
    assert f"{0.81 * scale:.2f}" == "0.92"
    assert "gpu_memory_utilization = 0.92, # Reduce if out of memory" in unsloth_call_with(
        code, "--gpu-memory-utilization 0.81", scale)
    assert unsloth_call_with(code, "--max-model-len 1024 --kv-cache-dtype fp8", scale).endswith(
        "    max_seq_length = 1024,\n    fast_inference = True, # Enable vLLM fast inference\n"
        "    gpu_memory_utilization = 0.9, # Reduce if out of memory\n    float8_kv_cache = True,\n)")
    for flags in ("--tensor-parallel-size 2", "--quantization fp8", "--max-num-seqs 64"):
        assert unsloth_call_with(code, flags, scale) is None
    assert unsloth_call_with(code, "--gpu-memory-utilization 0.81", None) is None   # no scale known
    # no call in the paste (only Unsloth's banner): a bare one naming the model
    assert unsloth_call_with("Unsloth: vLLM loading x", "--kv-cache-dtype fp8", None, "org/m") == \
        'FastLanguageModel.from_pretrained(model_name = "org/m", fast_inference = True, float8_kv_cache = True)'


def test_langchains_vllm_wrapper_gives_the_model_but_not_the_keywords_it_drops():
    """LangChain's `VLLM(...)` builds vllm.LLM from its model, tensor_parallel_size, trust_remote_code, dtype
    and vllm_kwargs only (langchain_community/llms/vllm.py). vllm#14102 passed `max_model_len=1000` to it
    and vLLM still ran the config's 131,072: the model (through its variable) is read, that keyword is not."""
    from estimator.paste import read_paste

    f = read_paste('from langchain.llms import VLLM\nmodel_path = "/root/commonData/DeepSeek-R1-Distill-Qwen-7B"\n'
                   "llm_local = VLLM(\n    model=model_path,\n    max_model_len=1000,\n    tensor_parallel_size=2,\n"
                   "    temperature=0.8,\n)\n")
    assert f.get("model") == "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"
    assert f.get("tensor_parallel_size") == 2
    assert f.get("max_model_len") is None
    # what it does forward: its vllm_kwargs dict
    f = read_paste('llm = VLLM(model="Qwen/Qwen2.5-7B-Instruct", max_model_len=1000, temperature=0.8,\n'
                   '           vllm_kwargs={"max_model_len": 8192, "gpu_memory_utilization": 0.8})\n')
    assert (f.get("max_model_len"), f.get("gpu_memory_utilization")) == (8192, 0.8)


def test_the_load_format_is_known_and_bitsandbytes_is_that_quantization():
    """`--load-format` reads weights, no memory of its own; `bitsandbytes` is the loader that quantizes while it
    loads, the one --quantization bitsandbytes sets itself from 0.9 (engine/arg_utils.py create_load_config)."""
    from estimator.vllm import parse_flags

    s = parse_flags(["--load-format", "bitsandbytes"])
    assert (s.quantization, s.unknown_flags) == ("bitsandbytes", [])
    s = parse_flags(["--load-format=safetensors", "--quantization", "awq"])
    assert (s.quantization, s.unknown_flags) == ("awq", [])
