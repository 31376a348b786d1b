"""Signs that a paste comes from vLLM's CPU backend, and the figures it prints about its KV space.

Why apart from the GPU readers: on the CPU backend the KV cache is not what is left of a card after
the weights. Its size is a setting (VLLM_CPU_KVCACHE_SPACE, GiB) or, from 0.20, a fraction of the
NUMA node's RAM, so a reply that reads the paste as a GPU's (a derived "GPU memory", tensor
parallelism, --gpu-memory-utilization) sends the user the wrong way. The messages differ by era,
which also dates the paste:

- 0.4.0–0.9.2 (V0 worker, vllm/worker/cpu_worker.py _validate_num_cpu_blocks): "… Try increasing
  `VLLM_CPU_KVCACHE_SPACE` or decreasing `max_model_len` …" and "No available memory for the cache
  blocks. Try increasing `VLLM_CPU_KVCACHE_SPACE` …".
- to 0.12.x (vllm/platforms/cpu.py): "Environment variable VLLM_CPU_KVCACHE_SPACE (GB|GiB) for CPU
  backend is not set, using 4 by default."
- 0.13.0–0.19.x (vllm/platforms/cpu.py get_device_total_memory): "VLLM_CPU_KVCACHE_SPACE not set.
  Using X GiB for KV cache." (half the host's RAM per NUMA node).
- 0.20.0+ (vllm/v1/worker/cpu_worker.py determine_available_memory): "Auto set (X/T) GiB for KV cache
  on node N, with R GiB requested memory for the worker. C GiB memory was consumed by non-kv
  usages." or "Explicitly set (X/T) GiB for KV cache on node N."; the node-RAM errors "Available memory
  on node N (A/T GiB) on startup …" (to 0.32) and "… on kv cache allocation …", and from 0.33 "The
  worker already uses C GiB (model weights and runtime), more than the R GiB of CPU memory reserved …".

Each pattern is anchored on a literal phrase and bounded, and runs under the paste's time budget.
"""

from __future__ import annotations

import regex

from estimator.paste_text import search as _search

_NUM = r"(\d{1,7}(?:\.\d{1,4})?)"
_V0_MESSAGE = regex.compile(r"Try[ \n]+increasing[ \n`]+VLLM_CPU_KVCACHE_SPACE\b")     # the reader turns ` into spaces
_FOUR_BY_DEFAULT = regex.compile(r"VLLM_CPU_KVCACHE_SPACE[ ]\(Gi?B\)[ ]+for[ ]+CPU[ ]+backend[ ]+is[ ]+not[ ]+set,"
                                 r"[ ]+using[ ]+(\d{1,4})[ ]+by[ ]+default")
_HALF_HOST = regex.compile(r"VLLM_CPU_KVCACHE_SPACE[ ]+not[ ]+set\.[ ]+Using[ ]+" + _NUM + r"[ ]+GiB[ ]+for[ ]+KV[ ]+cache")
_NODE_SET = regex.compile(r"(Auto|Explicitly)[ ]+set[ ]+\(" + _NUM + r"/" + _NUM + r"\)[ ]+GiB[ ]+for[ ]+KV[ ]+cache[ ]+"
                          r"on[ ]+node[ ]+\d{1,3}(?:,[ ]+with[ ]+" + _NUM + r"[ ]+GiB[ ]+requested[ ]+memory[ ]+for[ ]+the"
                          r"[ ]+worker\.[ ]+" + _NUM + r"[ ]+GiB[ ]+memory[ ]+was[ ]+consumed)?")
# 0.20+ (v1/worker/cpu_worker.py): the node has less RAM available than the share asked for, at start-up
# (u × node RAM) or when the KV cache is allocated (that share less what the worker holds, which can be ≤ 0)
_NODE_SHORT = regex.compile(r"Available[ ]+memory[ ]+on[ ]+node[ ]+\d{1,3}[ ]+\(" + _NUM + r"/" + _NUM + r"[ ]+GiB\)[ ]+on[ ]+"
                            r"(?:startup[ ]+is[ ]+less[ ]+than[ ]+desired[ ]+CPU[ ]+memory[ ]+utilization[ ]+\("
                            + _NUM + r",[ ]+" + _NUM + r"[ ]+GiB\)|kv[ ]+cache[ ]+allocation[ ]+is[ ]+less[ ]+than[ ]+"
                            r"requested[ ]+memory[ ]+for[ ]+kv[ ]+\((-?" + _NUM[1:-1] + r")(?:/" + _NUM + r")?[ ]+GiB\))")
# 0.33+ (v1/worker/cpu_worker.py): the worker's own RAM already fills the share, no room for the KV cache
_WORKER_USES = regex.compile(r"The[ ]+worker[ ]+already[ ]+uses[ ]+" + _NUM + r"[ ]+GiB[ ]+\(model[ ]+weights[ ]+and[ ]+"
                             r"runtime\),[ ]+more[ ]+than[ ]+the[ ]+" + _NUM + r"[ ]+GiB[ ]+of[ ]+CPU[ ]+memory[ ]+reserved")
# where the platform alone is said: vLLM's platform detection, the V0 block line ("# cpu blocks: N"),
# the engine config's device, the CPU worker's own log lines, a build for the CPU
_PLATFORM = regex.compile(r"Automatically[ ]+detected[ ]+platform[ ]+cpu\b|\#[ ]*cpu[ ]+blocks:|device_config=cpu\b"
                          r"|--device[ =]cpu\b|/v1/worker/cpu_worker\.py|\[cpu_worker\.py:\d|VLLM_TARGET_DEVICE=cpu\b")
# a run on a GPU: its platform, V0's GPU block line, a CUDA allocator error, nvidia-smi. vLLM's CPU messages
# and log lines above are the CPU's own; the weaker signs (a setting, the platform words) yield to these
_GPU_RUN = regex.compile(r"Automatically[ ]+detected[ ]+platform[ ]+(?:cuda|rocm|xpu|tpu)\b|\#[ ]*GPU[ ]+blocks:"
                         r"|CUDA[ ]+out[ ]+of[ ]+memory|NVIDIA-SMI[ ]+\d|HIP[ ]+out[ ]+of[ ]+memory")


def read_cpu_backend(text: str, low: str, env: dict) -> tuple[dict, list[tuple[str, str | None]]]:
    """(extra facts, version ranges) for a paste from the CPU backend; ({}, []) for any other.
    `low`: the text lower-cased (the reader has it); `env`: the environment settings the reader took
    from the run's commands (flags.scan_env: export, -e, compose, os.environ forms).

    Keys: platform "cpu"; cpu_kv_space_gib, the KV space the user set (VLLM_CPU_KVCACHE_SPACE, whole
    GiB, with cpu_kv_space_env; or the size 0.20+ logs as explicitly set); cpu_kv_default_gib, the
    space vLLM chose when it was unset (4 to 0.12, the printed half of the host's RAM 0.13–0.19); from
    0.20 cpu_kv_pool_gib, cpu_node_total_gib and, when vLLM sized it itself, cpu_requested_gib and
    cpu_consumed_gib (the worker's RAM beside the KV cache); for the node-RAM errors cpu_short (which
    message), cpu_node_short (its span, for the error kind), cpu_node_available_gib, cpu_share_asked,
    cpu_kv_requested_gib."""
    if "VLLM_CPU_KVCACHE_SPACE" not in text and "cpu" not in low and "on node" not in text \
            and "worker already uses" not in text:
        return {}, []
    extra: dict = {}
    hints: list[tuple[str, str | None]] = []
    if "VLLM_CPU_KVCACHE_SPACE" in text:
        if _search(_V0_MESSAGE, text) is not None:
            hints.append(("0.4.0", "0.10.0"))           # the V0 CPU worker's messages; gone in 0.10.0
            extra["platform"] = "cpu"
        m = _search(_FOUR_BY_DEFAULT, text)
        if m is not None:
            hints.append(("0.4.0", "0.13.0"))
            extra["platform"], extra["cpu_kv_default_gib"] = "cpu", float(m.group(1))
        m = _search(_HALF_HOST, text)
        if m is not None:
            hints.append(("0.13.0", "0.20.0"))
            extra["platform"], extra["cpu_kv_default_gib"] = "cpu", float(m.group(1))
        space = str(env.get("VLLM_CPU_KVCACHE_SPACE") or "")
        if space.isdigit() and int(space) > 0:
            # the user's setting says CPU only where the run shows no GPU (a template's env list may carry it)
            extra["cpu_kv_space_gib"], extra["cpu_kv_space_env"] = float(space), True
    if "for KV cache on node" in text:
        m = _search(_NODE_SET, text)
        if m is not None:
            hints.append(("0.20.0", None))
            extra["platform"] = "cpu"
            extra["cpu_kv_pool_gib"], extra["cpu_node_total_gib"] = float(m.group(2)), float(m.group(3))
            if m.group(1) == "Explicitly":
                extra.setdefault("cpu_kv_space_gib", float(m.group(2)))
            elif m.group(4) is not None:
                extra["cpu_requested_gib"], extra["cpu_consumed_gib"] = float(m.group(4)), float(m.group(5))
    if "The worker already uses" in text:
        m = _search(_WORKER_USES, text)
        if m is not None:
            hints.append(("0.33.0", None))
            extra["platform"], extra["cpu_node_short"], extra["cpu_short"] = "cpu", (m.start(), m.end()), "worker"
            extra["cpu_consumed_gib"], extra["cpu_requested_gib"] = float(m.group(1)), float(m.group(2))
    if "Available memory on node" in text:
        m = _search(_NODE_SHORT, text)
        if m is not None:
            # at start-up 0.20–0.32 (0.33 checks only at the KV cache's allocation); at allocation 0.20+
            hints.append(("0.20.0", "0.33.0" if m.group(3) is not None else None))
            extra["platform"], extra["cpu_node_short"] = "cpu", (m.start(), m.end())
            extra["cpu_node_available_gib"], extra["cpu_node_total_gib"] = float(m.group(1)), float(m.group(2))
            if m.group(3) is not None:      # at start-up: the share asked for
                extra["cpu_short"] = "startup"
                extra["cpu_share_asked"], extra["cpu_requested_gib"] = float(m.group(3)), float(m.group(4))
            else:                           # at the KV cache's allocation: the share less what the worker holds
                extra["cpu_short"] = "allocation"
                extra["cpu_kv_requested_gib"] = float(m.group(5))
                if m.group(6) is not None:
                    extra["cpu_requested_gib"] = float(m.group(6))
    if "platform" not in extra and ("cpu_kv_space_env" in extra or _search(_PLATFORM, text) is not None) \
            and _search(_GPU_RUN, text) is None:
        extra["platform"] = "cpu"
    if "platform" not in extra:
        return {}, []
    return extra, hints
