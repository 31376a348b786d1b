"""Logs of other inference engines. A paste from vllm.rs, SGLang, llama.cpp … that shows nothing of
vLLM is not a vLLM run: its numbers follow that engine's own memory accounting, and the flags it
shares with vLLM (--max-model-len, --max-num-seqs) or a PyTorch out-of-memory error it prints would
otherwise be answered with vLLM's arithmetic and vLLM fixes that do not apply to it."""

from __future__ import annotations

import regex

from estimator.paste_text import search

# (name, its article, what it is, the signs its own logs and command lines carry: never its name in prose
# alone, so "it works in SGLang but not in vLLM" is not one)
ENGINES: tuple[tuple[str, str, str, regex.Pattern], ...] = (
    ("vllm.rs", "a", "a separate Rust engine (guoqingbao/vllm.rs) that borrows vLLM's name and flag names",
     regex.compile(r"\bvllm_rs::|(?<![\w.-])vllm[-_]rs[ ]+(?:--|serve\b)|-m[ ]+vllm_rs\b")),
    ("vllm.cpp", "a", "a separate C++ engine (mudler/vllm.cpp) that borrows vLLM's name and flag names",
     regex.compile(r"(?<![\w.-])vllm-server[ ]+--model\b")),
    ("SGLang", "an", "a separate inference engine",
     regex.compile(r"\bsglang\.(?:launch_server|srt)\b|-m[ ]+sglang\b|\bsglang[ ]+serve\b"
                   r"|KV[ ]Cache[ ]is[ ]allocated\.[ ]\#tokens|--mem-fraction-static\b|mem_fraction_static=")),
    ("llama.cpp", "a", "a separate inference engine (GGUF models)",
     regex.compile(r"\bllama_(?:kv_cache\w*|model_load\w*|new_context_with_model|init_from_model)\b|\bggml_cuda_\w+"
                   r"|\bllama-(?:server|cli)\b")),
    ("Ollama", "an", "a separate inference engine (built on llama.cpp)",
     regex.compile(r"\bollama[ ]+(?:run|serve|pull)\b|level=(?:INFO|WARN|ERROR|DEBUG)[ ]source=[\w/]+\.go:\d+")),
    ("Text Generation Inference", "a", "Hugging Face's separate inference server",
     regex.compile(r"\btext[-_]generation[-_](?:launcher|router|inference|server)\b")),
    ("LMDeploy", "an", "a separate inference engine",
     regex.compile(r"\blmdeploy[ ]+(?:serve|chat)\b|\blmdeploy\.(?:serve|turbomind|pytorch)\b")),
    ("MLC LLM", "an", "a separate inference engine (models compiled with TVM)",
     regex.compile(r"\bmlc_llm(?:\.serve|\.cli)?\b|\bmlc[-_]llm[ ]+(?:serve|chat|compile)\b")),
    ("TensorRT-LLM", "a", "NVIDIA's separate inference engine",
     regex.compile(r"\[TRT-LLM\]|\[TensorRT-LLM\]|\btrtllm-(?:serve|build|bench)\b|\btensorrt_llm\.")),
)
_PREFILTER = ("vllm_rs", "vllm-rs", "vllm-server", "sglang", "kv cache is allocated", "mem-fraction", "mem_fraction", "llama_",
              "ggml_cuda", "llama-server", "llama-cli", "ollama", "source=", "text-generation", "text_generation",
              "lmdeploy", "mlc", "trt-llm", "tensorrt", "trtllm")

# What shows vLLM: its log lines' "LEVEL MM-DD hh:mm:ss [file.py:N]" head (older releases without the
# bracket), its engine-core process, or the word itself anywhere (its commands, imports, tracebacks through its
# package, its image, its VLLM_* variables, a post that compares the two engines and so is vLLM's to answer),
# where the word is not part of another engine's name (vllm_rs::, vllm-rs, vllm.cpp, vllm-server)
_VLLM_SHOWN = regex.compile(
    r"(?:INFO|WARNING|ERROR|DEBUG)[ ]+\d\d-\d\d[ ]+\d\d:\d\d:\d\d(?:\.\d+)?[ ]+\[?[\w.]+\.py:\d+\]"
    r"|\bEngineCore(?:_DP\d+)?\b|(?i:(?<![\w.-])vllm(?!_rs\b|[-.](?:rs|cpp|server)\b|[a-z0-9])"
    # ... or its own settings, which the other engines name otherwise (SGLang's --mem-fraction-static)
    r"|gpu[-_]memory[-_]utilization|--enforce[-_]eager)")


def foreign_engine(text: str, vllm_message: bool) -> tuple[str, str, str] | None:
    """(name, its article, what it is) of the other engine whose logs or commands the paste holds, where nothing in
    it shows vLLM running; None otherwise: a comparison of both engines is read as vLLM's, and so is a bare
    message of vLLM's (`vllm_message`: the reader matched one of its templates) beside another engine's
    command ("llama-server runs it, but vLLM says: ValueError: The model's max seq len …"). `text` keeps the
    log lines' prefixes ("(EngineCore_DP0 pid=1)"), which name vLLM's processes."""
    if vllm_message:
        return None
    low = text.lower()
    if not any(word in low for word in _PREFILTER):
        return None
    found = next((row[:3] for row in ENGINES if search(row[3], text) is not None), None)
    if found is None or search(_VLLM_SHOWN, text) is not None:
        return None
    return found
