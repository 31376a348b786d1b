"""Reverse derivation: from the numbers in a paste back to what vLLM saw.

Why: a user's error already contains vLLM's measurement (a token capacity, a block count, an
"Available KV cache memory" line, a profiling breakdown). Working back from it (docs §6
"Back-solving") gives the KV pool as an interval and the non-KV remainder exactly, which the
forward model alone can only estimate. Every figure carries its provenance: "read" (from the
paste, with the text), "derived" (with the formula), "assumed" (with the reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator.memory import Estimate, GiB


@dataclass
class Figure:
    name: str
    value: float | int | None          # bytes for memory figures, else the unit in `unit`
    provenance: str                    # "read" | "derived" | "assumed" | "estimated"
    how: str                           # the span text, the formula or the reason
    unit: str = "bytes"
    low: float | None = None           # interval when back-solved
    high: float | None = None

    def to_json(self) -> dict:
        d = {"value": self.value, "provenance": self.provenance, "how": self.how, "unit": self.unit}
        if self.low is not None:
            d["low"], d["high"] = self.low, self.high
        return d


@dataclass
class MemoryState:
    figures: dict[str, Figure] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)      # disagreements between paste and model
    per_rank: dict = field(default_factory=dict)

    def add(self, fig: Figure) -> None:
        self.figures[fig.name] = fig

    def get(self, name: str) -> float | None:
        f = self.figures.get(name)
        return None if f is None else f.value

    def to_json(self) -> dict:
        return {"figures": {k: f.to_json() for k, f in self.figures.items()}, "checks": self.checks,
                "per_rank": self.per_rank}


def _gib(x: float | None) -> int | None:
    return None if x is None else int(round(float(x) * GiB))


def derive(facts, est: Estimate | None) -> MemoryState:
    """Combine paste facts with the forward estimate (may be None when the model is unknown)."""
    st = MemoryState()
    f = facts.get
    read = lambda key: facts.values[key].source if key in facts.values else ""  # noqa: E731

    # ---- the card and the budget ----
    total = _gib(f("total_gpu_memory_gib"))
    if total:
        st.add(Figure("total", total, "read", f"total_gpu_memory {f('total_gpu_memory_gib')} GiB in the paste"))
    elif est is not None:
        total = est.gpu_total_bytes
        st.add(Figure("total", total, "assumed", f"{est.gpu_name} as torch reports it"))
    util = f("gpu_memory_utilization")
    if util is not None:
        st.add(Figure("utilization", util, "read", "gpu_memory_utilization in the paste", unit="fraction"))
    elif est is not None:
        util = est.settings.gpu_memory_utilization
        st.add(Figure("utilization", util, "assumed", f"vLLM {est.profile.era} default", unit="fraction"))
    budget = int(total * util) if total and util else None
    if budget:
        st.add(Figure("budget", budget, "derived", f"{total / GiB:.2f} GiB × {util:.2f}"))
    elif est is None and all(f(k) is not None for k in ("weights_gib", "activation_peak_gib", "non_torch_gib")) \
            and (f("kv_cache_gib") is not None or f("kv_available_gib") is not None):
        parts = [f("weights_gib"), f("activation_peak_gib"), f("non_torch_gib"), f("cuda_graph_gib") or 0,
                 f("kv_cache_gib") if f("kv_cache_gib") is not None else f("kv_available_gib")]
        budget = _gib(sum(float(x) for x in parts))
        st.add(Figure("budget", budget, "derived", "weights + activation + non-torch + graphs + KV, as printed"))

    # ---- KV per token and per block (architecture) ----
    bpb = bs = None
    if est is not None:
        bs = f("block_size") or est.layout.block_size
        st.add(Figure("kv_bytes_per_token", est.layout.kv_bytes_per_token, "derived",
                      _kv_formula(est), unit="bytes/token"))
        bpb = est.layout.bytes_per_block if bs == est.layout.block_size else \
            est.layout.bytes_per_block // est.layout.block_size * bs

    # ---- KV pool: read, or back-solved from blocks/capacity ----
    blocks = f("gpu_blocks")
    cap = f("error_max_tokens_in_kv") or (f("kv_tokens_capacity") if est and est.profile.engine == "v0" else None)
    if blocks is None and cap and bs and est is not None and est.layout.num_groups <= 1:
        pp = est.settings.pipeline_parallel_size if est.profile.engine == "v0" and est.profile.version >= (0, 8, 0) else 1
        blocks = cap // bs * pp
        how = f"{cap:,} tokens ÷ {bs} tokens per block" + (f" × {pp} (V0 0.8+ prints blocks ÷ pipeline stages)"
                                                             if pp > 1 else "")
        st.add(Figure("gpu_blocks", blocks, "derived", how, unit="blocks"))
    elif blocks is not None:
        st.add(Figure("gpu_blocks", blocks, "read", "# GPU blocks in the paste", unit="blocks"))
    kv_read = _gib(f("kv_cache_gib") or f("kv_available_gib"))
    if kv_read is not None:
        st.add(Figure("kv_pool", kv_read, "read", "KV cache memory printed by vLLM"))
    elif blocks is not None and bpb:
        low, high = blocks * bpb, (blocks + 1) * bpb
        st.add(Figure("kv_pool", low, "derived", f"{blocks:,} blocks × {bpb / 2**20:.2f} MiB per block",
                      low=low, high=high))
    elif est is not None:
        st.add(Figure("kv_pool", est.kv_cache_bytes, "estimated", "forward model (no KV figure in the paste)"))

    # ---- the non-KV remainder and its split ----
    kv = st.get("kv_pool")
    if budget and kv is not None and st.figures["kv_pool"].provenance != "estimated":
        st.add(Figure("non_kv", budget - kv, "derived", "budget − KV pool"))
    for key, name in (("weights_gib", "weights"), ("activation_peak_gib", "activation"),
                      ("non_torch_gib", "non_torch"), ("cuda_graph_gib", "cuda_graphs")):
        if f(key) is not None:
            st.add(Figure(name, _gib(f(key)), "read", f"{key.replace('_gib', '')} {f(key)} GiB in the paste"))
        elif est is not None:
            val = {"weights": est.weights_bytes, "activation": est.activation_bytes,
                   "non_torch": est.non_torch_bytes, "cuda_graphs": est.cuda_graph_bytes}[name]
            if f"{name}_bytes" in (getattr(est, "anchored", None) or []) and "kv_pool" in st.figures:
                st.add(Figure(name, val, "derived", "what is left of the non-KV memory after the other parts "
                              "(so that the model reproduces vLLM's KV figure)"))
            else:
                st.add(Figure(name, val, "estimated", _estimate_reason(name, est)))
    if "non_kv" in st.figures:
        parts = ("weights", "activation", "non_torch", "cuda_graphs")
        known = sum(st.get(p) or 0 for p in parts)
        gap = st.get("non_kv") - known
        if abs(gap) > 0.5 * GiB:
            st.checks.append(
                f"the paste's numbers leave {gap / GiB:+.2f} GiB of non-KV memory that the model does not explain "
                "(other processes on the GPU, a different vLLM version, or a different checkpoint/dtype)")

    # ---- needed vs available ----
    if est is not None:
        st.add(Figure("kv_needed", est.kv_needed_bytes, "derived",
                      f"{est.max_model_len:,} tokens × {est.layout.kv_bytes_per_token:,} B (in {bs}-token blocks)"))
    if f("kv_needed_gib") is not None:
        st.add(Figure("kv_needed_printed", _gib(f("kv_needed_gib")), "read", "KV needed, as vLLM printed it"))

    # ---- a PyTorch OOM: what it tried, what was free, what this process held ----
    ooms = facts.extra.get("torch_oom")
    if isinstance(ooms, list) and ooms and isinstance(ooms[0], dict):
        oom = ooms[0]
        where = f" on GPU {oom['gpu_index']}" if oom.get("gpu_index") is not None else ""
        for key, name, how in (("tried_to_allocate_gib", "oom_request", f"the allocation that failed{where}"),
                               ("free_gib", "oom_free", f"free when it failed{where}"),
                               ("allocated_by_pytorch_gib", "oom_allocated", "allocated by PyTorch in that process")):
            if oom.get(key) is not None:
                st.add(Figure(name, _gib(oom[key]), "read", how + " (from the OOM message)"))
    if f("free_memory_gib") is not None and total:
        free = _gib(f("free_memory_gib"))
        st.add(Figure("free_at_start", free, "read", "free memory at start-up, as vLLM printed it"))
        st.add(Figure("held_by_others", max(0, total - free), "derived",
                      "total − free at start-up (other processes, plus this process's CUDA context)"))

    # ---- consistency checks ----
    if est is not None and cap and est.profile.engine == "v0":
        if blocks and kv_read is not None and bpb:
            implied = kv_read / blocks
            if abs(implied - bpb) / bpb > 0.05:
                st.checks.append(f"{blocks:,} blocks in {kv_read / GiB:.2f} GiB means {implied / 2**20:.2f} MiB per block; "
                                 f"the model's layout gives {bpb / 2**20:.2f} MiB (different dtype, TP or model?)")
    if est is not None and f("weights_gib") is not None and est.weights_bytes:
        ratio = _gib(f("weights_gib")) / max(1, _modelled_weights(est))
        if abs(ratio - 1) > 0.15:
            st.checks.append(f"the paste says the weights take {f('weights_gib')} GiB per GPU; the model's checkpoint "
                             f"would take {_modelled_weights(est) / GiB:.2f} GiB — check the model id, quantization and TP")
    per_rank = facts.extra.get("per_rank")
    if isinstance(per_rank, dict) and per_rank:
        st.per_rank = per_rank
    _ = read
    return st


def _modelled_weights(est: Estimate) -> int:
    modelled = getattr(est, "modelled_weights_bytes", None)
    return modelled or est.weights_bytes


def _kv_formula(est: Estimate) -> str:
    spec, s = est.spec, est.settings
    layers = [lk for lk in (est.layout.layers or spec.layers) if lk.bytes_per_token(1, 2)]  # this rank's (PP stage)
    if not layers:
        return "no per-token KV layers"
    first = layers[0]
    kvb = est.layout.kv_bytes_per_token // max(1, sum(1 for _ in layers)) if layers else 0
    if spec.uses_mla:
        return (f"{len(layers)} MLA layers × ({spec.mla['kv_lora_rank']} + {spec.mla['qk_rope_head_dim']}) × "
                f"dtype bytes = {est.layout.kv_bytes_per_token:,} B per token (not split by TP)")
    heads = getattr(first, "heads_per_rank", lambda tp: 1)(s.tensor_parallel_size)
    hd = getattr(first, "head_dim", 0)
    dt = kvb // max(1, 2 * heads * hd) if heads and hd else "?"
    return (f"2 (K,V) × {len(layers)} layers × {heads} KV heads per GPU × {hd} head_dim × {dt} B "
            f"= {est.layout.kv_bytes_per_token:,} B per token")


def _estimate_reason(name: str, est: Estimate) -> str:
    s = est.settings
    return {
        "weights": "parameters × bytes per parameter for this checkpoint format, per GPU rank",
        "activation": f"profile run over {s.max_num_batched_tokens:,} tokens and a {min(s.max_num_seqs or 0, s.max_num_batched_tokens or 0)}"
                      "-row sampler (estimate)",
        "non_torch": "cuBLAS/NCCL workspaces (estimate from public logs)",
        "cuda_graphs": "CUDA-graph pool (estimate)" if est.cuda_graph_bytes else "not counted by this vLLM version",
    }[name]
