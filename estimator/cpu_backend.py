"""vLLM's CPU backend: how big its KV cache is, per release, and what to change when it is too small.

Why a model of its own: there is no card and no profile run to subtract. The KV cache is a space the
user sets, or one vLLM takes from the host's RAM, so the GPU arithmetic (budget − weights −
activations) and its fixes (tensor parallelism, --gpu-memory-utilization before 0.20) do not apply.
The eras, read in the wheels:

- to 0.9.2, V0 (vllm/worker/cpu_worker.py determine_num_available_blocks, _validate_num_cpu_blocks):
  blocks = VLLM_CPU_KVCACHE_SPACE GiB // (block_size × KV bytes per token), 4 GiB when unset
  (vllm/platforms/cpu.py), block_size 16; capacity = blocks × block_size.
- 0.10.0–0.19.x, V1 (vllm/v1/worker/cpu_worker.py determine_available_memory): the available KV memory
  is VLLM_CPU_KVCACHE_SPACE; unset, 4 GiB to 0.12.x and from 0.13.0 half the host's RAM per NUMA
  node (platforms/cpu.py get_device_total_memory). vLLM's V1 message still says "increase
  gpu_memory_utilization", which does nothing here.
- 0.20.0+ (vllm/v1/worker/cpu_worker.py): ceil(node RAM × gpu_memory_utilization) minus the worker's
  resident memory, or --kv-cache-memory-bytes (VLLM_CPU_KVCACHE_SPACE is read into it). 0.20–0.32 also
  stop at start-up where the node has less RAM available than that share; from 0.33 a worker whose own
  RAM fills the share gets a message of its own. The share's default is 0.92 (config/cache.py; the
  extensible KV cache of 0.34, which would make it 1.0, is CUDA and ROCm only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from estimator.advice import friendly_len
from estimator.derive import Figure, attention_terms_formula
from estimator.errors import BadInput
from estimator.params import weight_bytes
from estimator.units import HALF_HUNDREDTH, GiB
from estimator.vllm import parse_version, profile_for

CPU_V1_FROM = (0, 10, 0)            # the V0 CPU worker is not in the 0.10.0 wheel
CPU_HALF_HOST_FROM = (0, 13, 0)     # unset space: half the host's RAM per NUMA node (0.12.0: 4 GiB)
CPU_NODE_SHARE_FROM = (0, 20, 0)    # the space is a share of the node's RAM (0.19.0: the setting alone)
CPU_DEFAULT_SPACE_GIB = 4           # platforms/cpu.py before 0.13: "using 4 by default"
V0_CPU_BLOCK_SIZE = 16              # platforms/cpu.py (V0): block_size None → 16
V1_CPU_BLOCK_SIZE = 128             # platforms/cpu.py from 0.12 (0.10–0.11: 128 with IPEX, else 16)
SPACE_VAR = "VLLM_CPU_KVCACHE_SPACE"


@dataclass
class CpuReply:
    """What a reply about the CPU backend says; the surfaces render it like any diagnosis."""

    summary: str
    notes: list[str] = field(default_factory=list)
    # each checked with vLLM's arithmetic: ours from the model's config, or vLLM's own printed figures
    fixes: list[dict] = field(default_factory=list)
    # a change that passes one of vLLM's checks where what follows it cannot be checked from the paste
    unchecked: list[dict] = field(default_factory=list)
    unchecked_header: str = ""
    assumptions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    kv_formula: str = ""
    # the figures with their provenance, for the explain JSON's "derived" (the notes say them in words)
    figures: dict[str, Figure] = field(default_factory=dict)

    def figure(self, name: str, gib_or_bytes: float, provenance: str, how: str, gib: bool = True) -> None:
        value = int(round(gib_or_bytes * GiB)) if gib else int(gib_or_bytes)
        self.figures[name] = Figure(name, value, provenance, how)


def _release(version: str | None) -> tuple[int, int, int] | None:
    """The release tuple, or None where the paste's version cannot be read (the era then is the newest)."""
    try:
        return parse_version(version) if version else None
    except BadInput:
        return None


def _era(version: str | None) -> str:
    v = _release(version)
    if v is None or v >= CPU_NODE_SHARE_FROM:
        return "node_share"
    return "v0" if v < CPU_V1_FROM else "setting"


def _space_words(facts, version: str | None) -> tuple[float | None, str]:
    """(the KV space in GiB, where that figure comes from) before 0.20; None where vLLM chose it from
    the host's RAM and the paste does not say what it chose."""
    extra = facts.extra
    if extra.get("cpu_kv_space_gib"):
        return float(extra["cpu_kv_space_gib"]), f"set by {SPACE_VAR}={extra['cpu_kv_space_gib']:g} in the paste"
    if extra.get("cpu_kv_default_gib"):
        return float(extra["cpu_kv_default_gib"]), f"{SPACE_VAR} unset; vLLM's log gives the size it chose"
    v = _release(version)
    if v is not None and v >= CPU_HALF_HOST_FROM:
        return None, f"{SPACE_VAR} unset: from 0.13 vLLM takes half the host's RAM per NUMA node"
    return float(CPU_DEFAULT_SPACE_GIB), f"assumed: {SPACE_VAR} unset, vLLM's default before 0.13"


def _kv_bytes(facts, spec) -> tuple[int, int] | None:
    """(KV bytes per token on one worker, dtype bytes) from the model's config, as the V0 CPU cache
    engine counts them (CPUCacheEngine.get_cache_block_size: every attention layer, K and V)."""
    if spec is None:
        return None
    kv_dtype = str(facts.get("kv_cache_dtype") or "auto").lower()
    dtype = str(facts.get("dtype") or "auto").lower()
    size = 1 if kv_dtype.startswith("fp8") else 4 if dtype in ("float32", "float") else spec.model_dtype_bytes
    tp = int(facts.get("tensor_parallel_size") or 1)
    per_token = spec.kv_bytes_per_token(tp, size)
    return (per_token, size) if per_token > 0 else None


def _formula(spec, facts, per_token: int) -> str:
    """The per-token KV cost term by term (derive.attention_terms_formula), per worker, and with every
    layer at full length: V0's CPU cache engine keeps the whole context in each."""
    tp = int(facts.get("tensor_parallel_size") or 1)
    layers = [lk for lk in spec.layers if lk.bytes_per_token(tp, 1) and hasattr(lk, "heads_per_rank")]
    if sum(lk.bytes_per_token(tp, 1) for lk in layers) and len(layers) == len(
            [lk for lk in spec.layers if lk.bytes_per_token(tp, 1)]):
        return attention_terms_formula(layers, tp, per_token, rank="per worker", windows=False)
    return f"{per_token:,} B per token, summed over the attention layers (K and V)"


def _exact_need(facts, spec, length: int, v0: bool = False) -> tuple[int, str] | None:
    """(bytes max_model_len needs, how): ceil(L / block) blocks × block × bytes per token. V0's CPU cache
    engine keeps every layer at full length (CPUCacheEngine); V1 only for a model whose every KV layer is
    full attention (kv_cache_interface.py FullAttentionSpec.max_memory_usage_bytes; the CPU block is 128
    from 0.12, platforms/cpu.py, which a 16-token block of 0.10–0.11 without IPEX never exceeds), None
    for the others, whose need vLLM's own figure gives."""
    got = _kv_bytes(facts, spec)
    if got is None or not v0 and (spec.is_hybrid_state or any(
            lk.kind != "full" for lk in spec.layers if lk.bytes_per_token(1, 1))):
        return None
    block = int(facts.get("block_size") or (V0_CPU_BLOCK_SIZE if v0 else V1_CPU_BLOCK_SIZE))
    blocks = math.ceil(length / block)
    return blocks * block * got[0], f"{blocks:,} blocks × {block} tokens × {got[0]:,} B"


def _share_for(gib: float, total: float) -> float | None:
    """The least share (2 decimals) of a node of `total` GiB that covers `gib`, at the worst of the
    printed figures' rounding (vLLM logs GiB to 2 decimals, format_gib); None where no share up to 0.99
    does (or the figures are no node's)."""
    if total <= 2 * HALF_HUNDREDTH or gib < 0:
        return None
    share = math.ceil(round((gib + HALF_HUNDREDTH) / (total - HALF_HUNDREDTH) * 100, 6)) / 100
    return share if 0 < share <= 0.99 else None


def _v1_need(facts, spec, length: int, printed_gib: float) -> tuple[int, str]:
    """(bytes max_model_len needs, how that figure was had) where vLLM printed it: to 2 decimals, so a
    space just above the printed figure is sure to hold it; the model's exact need where it rounds to
    vLLM's figure."""
    exact = _exact_need(facts, spec, length)
    if exact is not None and abs(exact[0] / GiB - printed_gib) <= HALF_HUNDREDTH:
        return exact
    return int((printed_gib + HALF_HUNDREDTH) * GiB), f"vLLM's {printed_gib:.2f} GiB, at the top of its rounding"


def _space_for(need_bytes: int) -> int:
    """The whole GiB VLLM_CPU_KVCACHE_SPACE must be (an int environment variable) to hold need_bytes."""
    return max(1, math.ceil(need_bytes / GiB))


def cpu_reply(facts, spec, version: str | None) -> CpuReply:
    """The CPU backend's KV arithmetic for this paste and the changes that make max_model_len fit."""
    era = _era(version)
    length = int(facts.get("max_model_len") or 0) or None
    reply = CpuReply(summary="")
    reply.assumptions.append("vLLM's CPU backend (the paste's messages and log lines say so): its KV cache is "
                             "held in the host's RAM, so nothing here depends on a GPU; sizes are GiB (2^30 bytes, "
                             f"1 GiB = 1.074 GB), as vLLM prints them and as {SPACE_VAR} counts")
    if facts.extra.get("host_killed"):
        _killed(facts, spec, length, reply, version, era)
    elif era == "v0":
        _v0(facts, spec, length, reply, version)
    elif era == "setting":
        _v1_setting(facts, spec, length, reply, version)
    else:
        _node_share(facts, spec, length, reply, version)
    if not reply.summary:
        tokens = facts.get("kv_tokens_capacity")
        if tokens is None and facts.get("gpu_blocks") is not None and era == "v0":
            tokens = int(facts.get("gpu_blocks")) * int(facts.get("block_size") or V0_CPU_BLOCK_SIZE)
        held = f"; vLLM's KV cache holds {int(tokens):,} tokens (vLLM's figure)" if tokens is not None else ""
        reply.summary = ("This run uses vLLM's CPU backend: its KV cache lives in the host's RAM, sized "
                         + (f"by {SPACE_VAR}" if era != "node_share" else
                            "as a share (--gpu-memory-utilization) of the NUMA node's RAM, or by "
                            "--kv-cache-memory-bytes") + held + ".")
    return reply


def _v0(facts, spec, length: int | None, reply: CpuReply, version: str | None) -> None:
    space, whence = _space_words(facts, version)
    block = int(facts.get("block_size") or V0_CPU_BLOCK_SIZE)
    cap = facts.get("error_max_tokens_in_kv") or facts.get("kv_tokens_capacity")
    printed_blocks = int(cap) // block if cap is not None else facts.get("gpu_blocks")
    got = _kv_bytes(facts, spec)
    space_bytes = int(space * GiB) if space else None
    per_token = None
    if got is not None:
        per_token = got[0]
        reply.kv_formula = _formula(spec, facts, per_token)
        if space_bytes and printed_blocks is not None and space_bytes // (block * per_token) != int(printed_blocks):
            reply.notes.append(
                f"The model's {per_token:,} B per token in a {space:g} GiB space gives "
                f"{space_bytes // (block * per_token):,} blocks, not the {int(printed_blocks):,} vLLM printed: "
                "the space or the model is not what was assumed, so what follows uses vLLM's own numbers")
            per_token = None
    if per_token is None and space_bytes and printed_blocks:
        # vLLM's own figures bound the per-token cost: blocks = space // (block × per token)
        per_token = space_bytes // (int(printed_blocks) * block)
        reply.kv_formula = reply.kv_formula or (f"at most {per_token:,} B per token (derived: the {space:g} GiB space "
                                                f"over the {int(printed_blocks):,} blocks of {block} tokens vLLM made)")
    if space_bytes:
        reply.figure("kv_pool", space_bytes, "assumed" if whence.startswith("assumed") else "read", whence, gib=False)
    if printed_blocks is not None and space_bytes:
        reply.notes.append(f"KV space: {space:g} GiB ({whence}) → {int(printed_blocks):,} blocks × {block} tokens = "
                           f"{int(printed_blocks) * block:,} tokens (vLLM's figure)")
    if facts.error_kind not in ("kv_capacity_v0", "no_cache_blocks"):
        return      # a run that started: the space and what it holds are the answer
    if not (length and per_token and space_bytes and printed_blocks is not None):
        if length and cap:
            reply.summary = (f"vLLM's CPU backend can hold **{int(cap):,} tokens** of KV cache, but max_model_len is "
                             f"**{length:,}**. On the CPU backend the KV cache is {SPACE_VAR} GiB of host RAM; "
                             "--gpu-memory-utilization does not size it.")
            n = friendly_len(int(cap))
            reply.fixes.append(_fix(f"--max-model-len {n}", None, n,
                                    f"vLLM itself said at most {int(cap):,} tokens fit in this space"))
        if spec is None:
            reply.missing.append("the model id (your `vllm serve …` command)")
        return
    need = math.ceil(length / block) * block * per_token
    reply.figure("kv_needed", need, "derived", f"{math.ceil(length / block):,} blocks × {block} tokens × {per_token:,} B",
                 gib=False)
    set_to = _space_for(need)
    blocks = int(set_to * GiB) // (block * per_token)
    reply.summary = (
        f"vLLM's CPU backend can hold **{int(printed_blocks) * block:,} tokens** of KV cache, but max_model_len is "
        f"**{length:,}**, so the engine refuses to start. On the CPU backend the KV cache is not what is left of a "
        f"GPU: it is {SPACE_VAR} GiB of host RAM ({space:g} GiB here). {length:,} tokens need "
        f"{need / GiB:,.2f} GiB. Change to make: `{SPACE_VAR}={set_to}` (fits, {blocks * block:,} tokens).")
    reply.fixes.append(_fix(f"{SPACE_VAR}={set_to}", blocks * block, length,
                            f"an environment variable, in whole GiB: the KV cache takes that much host RAM beside the "
                            f"weights, so the machine needs {set_to} GiB free for it"))
    fit = friendly_len(int(printed_blocks) * block)
    reply.fixes.append(_fix(f"--max-model-len {fit}", int(printed_blocks) * block, fit,
                            f"keeps the {space:g} GiB space; requests longer than {fit:,} tokens are refused"))
    reply.missing.append("how much RAM the host has (`free -g`), so the space can be checked against it")


def _v1_setting(facts, spec, length: int | None, reply: CpuReply, version: str | None) -> None:
    space, whence = _space_words(facts, version)
    need, avail = facts.get("kv_needed_gib"), facts.get("kv_available_gib")
    reply.notes.append(f"On vLLM {version} the CPU backend's KV memory is {SPACE_VAR} "
                       + (f"({space:g} GiB, {whence})" if space else f"({whence})")
                       + "; --gpu-memory-utilization, which vLLM's message suggests, does not change it")
    if need is None or avail is None or not length:
        return
    need_bytes, how = _v1_need(facts, spec, length, float(need))
    _printed_figures(reply, float(avail), need_bytes, how)
    set_to = _space_for(need_bytes)
    reply.summary = (f"{length:,} tokens need **{float(need):.2f} GiB** of KV cache, but vLLM's CPU backend has "
                     f"**{float(avail):.2f} GiB**, so the engine refuses to start. On the CPU backend that memory is "
                     f"{SPACE_VAR} (GiB of host RAM), not a share of a GPU: raising --gpu-memory-utilization, as the "
                     f"message says, does not change it. Change to make: `{SPACE_VAR}={set_to}`.")
    reply.fixes.append(_fix(f"{SPACE_VAR}={set_to}", None, length,
                            f"at least the {need_bytes / GiB:.3f} GiB {length:,} tokens need ({how}), in whole GiB; "
                            "the host needs that much RAM free beside the weights"))
    _shorter(facts, reply)


def _node_share(facts, spec, length: int | None, reply: CpuReply, version: str | None) -> None:
    extra = facts.extra
    need, avail = facts.get("kv_needed_gib"), facts.get("kv_available_gib")
    total, consumed = extra.get("cpu_node_total_gib"), extra.get("cpu_consumed_gib")
    requested = extra.get("cpu_requested_gib")
    # the share: the flag, the one the start-up error prints, the requested RAM over the node's, or the default
    u = float(facts.get("gpu_memory_utilization") or extra.get("cpu_share_asked")
              or (round(float(requested) / float(total), 2) if requested and total else 0)
              or profile_for(version if _release(version) else None, "v1").default_utilization)
    reply.notes.append(f"{f'On vLLM {version}' if version else 'From vLLM 0.20'} the CPU backend's KV memory is "
                       "ceil(the NUMA node's RAM × --gpu-memory-utilization) minus what the worker already holds "
                       f"(weights and buffers), unless --kv-cache-memory-bytes (or {SPACE_VAR}) sets it")
    if consumed is not None:
        reply.figure("consumed", float(consumed), "read", "the worker's resident memory beside the KV cache (vLLM's log)")
    if total is not None and consumed is not None and extra.get("cpu_kv_pool_gib") is not None:
        reply.notes.append(f"vLLM's log: {float(extra['cpu_kv_pool_gib']):.2f} GiB of KV cache = {u:g} × "
                           f"{float(total):.2f} GiB of node RAM − {float(consumed):.2f} GiB the worker holds")
    if facts.error_kind == "free_memory_startup":
        _node_short(facts, spec, length, reply, u)
        return
    if need is None or avail is None or not length:
        return
    need_bytes, how = _v1_need(facts, spec, length, float(need))
    _printed_figures(reply, float(avail), need_bytes, how)
    reply.summary = (f"{length:,} tokens need **{float(need):.2f} GiB** of KV cache, but vLLM's CPU backend has "
                     f"**{float(avail):.2f} GiB**, so the engine refuses to start. On the CPU backend "
                     "--gpu-memory-utilization is the share of the NUMA node's RAM vLLM may use.")
    if total is not None and consumed is not None:
        share = _share_for(need_bytes / GiB + float(consumed), float(total))
        if share is not None:
            reply.fixes.append(_fix(f"--gpu-memory-utilization {share:.2f}", None, length,
                                    f"{share:.2f} × {float(total):.2f} GiB of node RAM less the {float(consumed):.2f} GiB "
                                    f"the worker holds leaves at least the {need_bytes / GiB:.3f} GiB {length:,} tokens "
                                    f"need ({how}); the node must have that much available at start-up"))
    gib = _space_for(need_bytes)
    reply.fixes.append(_fix(f"--kv-cache-memory-bytes {gib}G", None, length,
                            f"sets the KV cache itself (at least the {need_bytes / GiB:.3f} GiB {length:,} tokens need, "
                            f"{how}); the node must have that much RAM available"))
    if not reply.fixes[0]["flags"].startswith("--gpu") and total is None:
        reply.missing.append("vLLM's \"Auto set (…) GiB for KV cache on node …\" log line, which gives the node's RAM")
    _shorter(facts, reply)


def _node_short(facts, spec, length: int | None, reply: CpuReply, u: float) -> None:
    """0.20+: the NUMA node has less RAM available than vLLM asks for (v1/worker/cpu_worker.py): at
    start-up (0.20–0.32), ceil(node RAM × u) > available; at the KV cache's allocation, that share less
    what the worker holds is ≤ 0 (the weights took the share: from 0.33 "The worker already uses …",
    which prints no node figures) or more than is available."""
    extra = facts.extra
    which = extra.get("cpu_short")
    avail, total = extra.get("cpu_node_available_gib"), extra.get("cpu_node_total_gib")
    requested = extra.get("cpu_requested_gib")
    derived = total is None and bool(requested)
    if derived:
        total = float(requested) / u        # the share is ceil(node RAM × u): the node's RAM, to its rounding
    if not total or total <= 0 or (avail is not None and avail < 0):
        return                              # figures no node has: the message's own words stand
    reply.figure("total", total, "derived" if derived else "read",
                 f"the NUMA node's RAM{f': the {float(requested):g} GiB share over {u:g}' if derived else ''}")
    if avail is not None:
        reply.figure("free_at_start", float(avail), "read", "RAM available on the node (vLLM's message)")
    if length is None and spec is not None:
        length = spec.derived_max_len()[0]
    exact = _exact_need(facts, spec, length) if length and length > 0 else None
    others = "" if avail is None else \
        f"other processes hold {total - avail:.2f} GiB of it" if total > avail else "nothing else holds it"
    if which == "startup" and avail is not None and requested:
        # the largest share whose ceil(node RAM × u) the available RAM covers, at the printed figures' worst
        most = math.floor(round((avail - HALF_HUNDREDTH) / (total + HALF_HUNDREDTH) * 100, 6)) / 100
        reply.summary = (f"vLLM's CPU backend asks for {u:g} × {total:g} GiB = {float(requested):g} GiB of the NUMA "
                         f"node's RAM at start-up, but only {avail:g} GiB is available ({others}), so it stops before "
                         "loading. On the CPU backend --gpu-memory-utilization is the share of the node's RAM vLLM "
                         "reserves for the weights and the KV cache together.")
        weights = _weights(facts, spec)
        room = (avail - HALF_HUNDREDTH) * GiB - (weights or 0)
        if weights is not None and room < (exact[0] if exact is not None else 0):
            # the checkpoint alone (or with the context's KV) is more than the node has available: no share helps
            kv = f" and {length:,} tokens of KV {exact[0] / GiB:.2f} GiB" if exact else ""
            reply.summary += (f" The weights take about {weights / GiB:.2f} GiB (estimated from the model's config)"
                              f"{kv}: more than the {avail:g} GiB available, so no share fits. Free the RAM other "
                              "processes hold, or serve a smaller checkpoint.")
            return
        if 0 < most < u:
            reply.unchecked.append({"flags": f"--gpu-memory-utilization {most:.2f}", "checked": False, "why": (
                f"{most:.2f} × {total:g} GiB is at most the {avail:g} GiB available, so the start-up check passes; "
                "the KV cache then gets that share less what the worker holds (the weights), which has to hold "
                "max_model_len")})
            reply.unchecked_header = ("**Likely fixes** (they pass vLLM's start-up check; whether max_model_len "
                                      "then fits depends on the RAM the worker takes, which the paste does not give):")
        if exact is not None and exact[0] <= (avail - HALF_HUNDREDTH) * GiB:
            reply.fixes.append(_fix(f"--kv-cache-memory-bytes {_space_for(exact[0])}G", None, length, (
                f"a KV cache of its own size skips the share's start-up check: {length:,} tokens need "
                f"{exact[0] / GiB:.3f} GiB ({exact[1]}); the weights take RAM beside it")))
        return
    asked = float(extra.get("cpu_kv_requested_gib") or 0)
    if requested and (which == "worker" or asked <= 0):
        held = float(extra["cpu_consumed_gib"]) if which == "worker" else float(requested) - asked
        node = f" of the NUMA node's {'about ' if derived else ''}{total:.2f} GiB" + (
            f" (derived: {float(requested):g} / {u:g})" if derived else "")
        reply.summary = (f"The worker already holds {held:.2f} GiB of RAM (the weights and buffers), more than the "
                         f"{float(requested):g} GiB share{node} that --gpu-memory-utilization {u:g} gives it, so "
                         "nothing is left for vLLM's KV cache on the CPU backend.")
        if exact is not None:
            share = _share_for(held + exact[0] / GiB, total)
            if share is not None and share > u and (avail is None or share * total <= avail + held - HALF_HUNDREDTH):
                reply.fixes.append(_fix(f"--gpu-memory-utilization {share:.2f}", None, length, (
                    f"{share:.2f} × {total:.2f} GiB less the {held:.2f} GiB the worker holds leaves the "
                    f"{exact[0] / GiB:.3f} GiB {length:,} tokens need ({exact[1]})")))
            if avail is None or exact[0] <= (avail - HALF_HUNDREDTH) * GiB:
                reply.fixes.append(_fix(f"--kv-cache-memory-bytes {_space_for(exact[0])}G", None, length, (
                    f"a KV cache of its own size ({length:,} tokens need {exact[0] / GiB:.3f} GiB, {exact[1]}) is "
                    "not a share: the node needs that much RAM free beside the worker's")))
        return
    if avail is None:
        return
    reply.summary = (f"vLLM's CPU backend asks for a {asked:g} GiB KV cache, but only {avail:g} GiB of the NUMA node's "
                     f"{total:g} GiB is available ({others}), so it stops while allocating it.")
    if exact is not None and exact[0] <= (avail - HALF_HUNDREDTH) * GiB:
        reply.fixes.append(_fix(f"--kv-cache-memory-bytes {_space_for(exact[0])}G", None, length, (
            f"{length:,} tokens need {exact[0] / GiB:.3f} GiB ({exact[1]}), which the available RAM holds")))


def _weights(facts, spec) -> int | None:
    """The checkpoint's bytes as loaded (params.weight_bytes), the largest part of the worker's RAM; None
    without the model."""
    if spec is None:
        return None
    return weight_bytes(spec, dtype=str(facts.get("dtype") or "auto"), quantization=facts.get("quantization"),
                        allocator_blocks=False).bytes_total


def _killed(facts, spec, length: int | None, reply: CpuReply, version: str | None, era: str) -> None:
    """The kernel's OOM killer ("Killed"): on the CPU backend the weights and the KV cache are both host
    RAM, so the KV space (or share) the run set is what to weigh against the host, beside the weights."""
    space, whence = _space_words(facts, version) if era != "node_share" else (
        facts.extra.get("cpu_kv_space_gib"), f"set by {SPACE_VAR}" if facts.extra.get("cpu_kv_space_env")
        else "set by --kv-cache-memory-bytes")
    parts = []
    if spec is not None:
        weights = _weights(facts, spec)
        parts.append(f"{weights / GiB:.2f} GiB of weights (estimated from the model's config)")
        reply.figure("weights", weights, "estimated", "parameters × bytes per parameter of this checkpoint", gib=False)
    if space:
        parts.append(f"a {space:g} GiB KV cache ({whence})")
        reply.figure("kv_pool", float(space), "assumed" if whence.startswith("assumed") else "read", whence)
    held = (" The run holds " + " and ".join(parts) + ", beside Python, the tokenizer and the system.") if parts else ""
    reply.summary = ("The kernel killed vLLM's process (Linux's OOM killer): on the CPU backend the weights and the "
                     f"KV cache both live in the host's RAM, and together they did not fit.{held}")
    if length and spec is not None and space:
        need = _exact_need(facts, spec, length, v0=era == "v0")
        if need is not None and _space_for(need[0]) < space:
            # from 0.20 the variable is read into --kv-cache-memory-bytes, over the flag: the one the user set
            flags = f"{SPACE_VAR}={_space_for(need[0])}" if era != "node_share" or facts.extra.get("cpu_kv_space_env") \
                else f"--kv-cache-memory-bytes {_space_for(need[0])}G"
            reply.fixes.append(_fix(flags, None, length, (
                f"{length:,} tokens need {need[0] / GiB:.3f} GiB ({need[1]}): a KV cache of that size frees "
                f"{space - _space_for(need[0]):g} GiB of RAM and serves one request of that length at a time; "
                "more concurrency needs as much again per request")))
    reply.missing.append("how much RAM the host has (`free -g`), so the space can be checked against it")


def _printed_figures(reply: CpuReply, avail_gib: float, need_bytes: int, how: str) -> None:
    reply.figure("kv_pool", avail_gib, "read", "available KV cache memory printed by vLLM")
    reply.figure("kv_needed", need_bytes, "derived" if "blocks" in how else "read", how, gib=False)


def _shorter(facts, reply: CpuReply) -> None:
    fit = facts.get("estimated_max_model_len")
    if fit:
        n = friendly_len(int(fit))
        reply.fixes.append(_fix(f"--max-model-len {n}", None, n,
                                f"vLLM itself said at most {int(fit):,} tokens fit in this KV memory"))


def _fix(flags: str, tokens: int | None, length: int, why: str) -> dict:
    """A fix in the JSON contract's shape (advice.Suggestion.to_json): tokens and concurrency None where
    only vLLM's need, not the pool's token count, is known."""
    return {"flags": flags, "kv_cache_tokens": tokens,
            "max_concurrency": round(tokens / length, 2) if tokens is not None and length else None,
            "max_model_len": length, "fits": True, "why": why}
