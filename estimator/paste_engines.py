"""Logs of other inference engines. A paste from vllm.rs, SGLang, llama.cpp … that shows nothing of
vLLM is not a vLLM run: its numbers follow that engine's own memory accounting, and the flags it
shares with vLLM (--max-model-len, --max-num-seqs) or a PyTorch out-of-memory error it prints would
otherwise be answered with vLLM's arithmetic and vLLM fixes that do not apply to it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import regex

from estimator.paste_text import search


@dataclass(frozen=True)
class Engine:
    """Another engine and the signs of it. `command`: its command lines, whose flags are not vLLM's
    (flags.command_spans skips them); `log`: its own log lines and settings. Never its name in prose alone,
    so "it works in SGLang but not in vLLM" is not one."""

    name: str
    article: str
    what: str
    words: tuple[str, ...]      # lowercase literals, one of which any match of `command` or `log` holds
    command: str
    log: str = ""

    @cached_property
    def signs(self) -> regex.Pattern:
        return regex.compile(self.command + (f"|{self.log}" if self.log else ""))


ENGINES: tuple[Engine, ...] = (
    Engine("vllm.rs", "a", "a separate Rust engine (guoqingbao/vllm.rs) that borrows vLLM's name and flag names",
           ("vllm_rs", "vllm-rs"), r"(?<![\w.-])vllm[-_]rs[ ]+(?:--|serve\b)|-m[ ]+vllm_rs\b", r"\bvllm_rs::"),
    Engine("vllm.cpp", "a", "a separate C++ engine (mudler/vllm.cpp) that borrows vLLM's name and flag names",
           ("vllm-server",), r"(?<![\w.-])vllm-server[ ]+--model\b"),
    Engine("SGLang", "an", "a separate inference engine",
           ("sglang", "kv cache is allocated", "mem-fraction", "mem_fraction"), r"\bsglang\.launch_server\b|-m[ ]+sglang\b|\bsglang[ ]+serve\b",
           r"\bsglang\.srt\b|KV[ ]Cache[ ]is[ ]allocated\.[ ]\#tokens|--mem-fraction-static\b|mem_fraction_static="),
    Engine("llama.cpp", "a", "a separate inference engine (GGUF models)",
           ("llama-server", "llama_server", "llama.server", "llama-cli", "llama_", "ggml_cuda"), r"\bllama[-_.]server\b|\bllama-cli\b",
           r"\bllama_(?:kv_cache\w*|model_load\w*|new_context_with_model|init_from_model)\b|\bggml_cuda_\w+"),
    Engine("Ollama", "an", "a separate inference engine (built on llama.cpp)",
           ("ollama", "source="), r"\bollama[ \t]+(?:run|serve|pull)\b", r"level=(?:INFO|WARN|ERROR|DEBUG)[ ]source=[\w/]+\.go:\d+"),
    Engine("Text Generation Inference", "a", "Hugging Face's separate inference server",
           ("text-generation", "text_generation"), r"\btext-generation-launcher\b", r"\btext[-_]generation[-_](?:launcher|router|inference|server)\b"),
    Engine("LMDeploy", "an", "a separate inference engine",
           ("lmdeploy",), r"\blmdeploy[ \t]+(?:serve|chat)\b", r"\blmdeploy\.(?:serve|turbomind|pytorch)\b"),
    Engine("MLC LLM", "an", "a separate inference engine (models compiled with TVM)",
           ("mlc",), r"\bmlc[-_]llm[ ]+(?:serve|chat|compile)\b", r"\bmlc_llm(?:\.serve|\.cli)?\b"),
    Engine("TensorRT-LLM", "a", "NVIDIA's separate inference engine",
           ("trtllm", "trt-llm", "tensorrt"), r"\btrtllm-(?:serve|build|bench)\b", r"\[TRT-LLM\]|\[TensorRT-LLM\]|\btensorrt_llm\."),
)
# Their command lines, in any case, for flags.command_spans (a path into a llama.cpp checkout starts one too),
# and the words without which no engine's command or log line can be there
FOREIGN_COMMAND = regex.compile("(?i)" + "|".join(e.command for e in ENGINES) + r"|\bllama\.cpp\b")
FOREIGN_WORDS = tuple(w for e in ENGINES for w in e.words) + ("llama.cpp",)

# What shows vLLM: its log lines' "LEVEL MM-DD hh:mm:ss [file.py:N]" head (older releases without the
# bracket) or their file tags, its engine (the engine-core process, LLMEngine, LLM(...)), its settings that
# the other engines name otherwise (SGLang's --mem-fraction-static), Aphrodite (a fork with vLLM's accounting),
# or the word itself anywhere: its commands, imports, tracebacks through its package, its image, its VLLM_*
# variables, a post that compares engines. Not where the word is part of another engine's name (vllm_rs::,
# vllm-rs, vllm.cpp, vllm-server). paste._error_kind reads an out-of-memory mention in such a paste as vLLM's.
VLLM_SHOWN = regex.compile(
    r"(?:INFO|WARNING|ERROR|DEBUG)[ ]+\d\d-\d\d[ ]+\d\d:\d\d:\d\d(?:\.\d+)?[ ]+\[?[\w.]+\.py:\d+\]"
    r"|(?i:(?<!\w)vllm(?!_rs\b|[-.](?:rs|cpp|server)\b|[a-z0-9])|\bv?llm[_.-]?engine\b"
    r"|\[(?:gpu_worker|kv_cache_utils|worker|model_runner|core|llm_engine|api_server)\.py:\d+\]"
    r"|gpu[-_]memory[-_]utilization|--enforce[-_]eager|EngineCore|aphrodite)|\bLLM\(")


def foreign_engine(text: str, vllm_message: bool) -> Engine | None:
    """The other engine whose logs or commands the paste holds, where nothing in
    it shows vLLM running; None otherwise: a comparison of both engines is read as vLLM's, and so is a bare
    message of vLLM's (`vllm_message`: the reader matched one of its templates) beside another engine's
    command ("llama-server runs it, but vLLM says: ValueError: The model's max seq len …"). `text` keeps the
    log lines' prefixes ("(EngineCore_DP0 pid=1)"), which name vLLM's processes."""
    if vllm_message:
        return None
    low = text.lower()
    if not any(word in low for word in FOREIGN_WORDS):
        return None
    found = next((e for e in ENGINES if search(e.signs, text) is not None), None)
    if found is None or search(VLLM_SHOWN, text) is not None:
        return None
    return found


def engine_named(name: str) -> Engine | None:
    """The table's engine of that name (facts.extra["foreign_engine"])."""
    return next((e for e in ENGINES if e.name == name), None)
