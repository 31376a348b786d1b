"""Reverse derivation: from the numbers in a paste back to what vLLM saw.

Why: a user's error already contains vLLM's measurement (a token capacity, a block count, an
"Available KV cache memory" line, a profiling breakdown). Working back from it (docs §6
"Back-solving") gives the KV pool as an interval and the non-KV remainder exactly, which the
forward model alone can only estimate. Every figure carries its provenance: "read" (from the
paste, with the text), "derived" (with the formula), "assumed" (with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from estimator.activation import v2_first_compile
from estimator.gpus import HOST_LABELS
from estimator.kv_deepseek_v4 import DS_MLA_ALIGN, DS_MLA_ROW_BYTES
from estimator.kv_layout import (
    TURBOQUANT_PRESETS,
    dcp_ranks,
    turboquant_slot,
    v0_mla_padded_values,
    window_tokens,
)
from estimator.memory import Estimate, graphs_captured_after_kv, v0_capacity_divisor, v0_driver_extra_bytes
from estimator.paste import torch_oom_records
from estimator.paste_templates import TEMPLATES
from estimator.spec import DeepseekV4Layer
from estimator.units import HALF_HUNDREDTH, PRINTED_SLACK, GiB
from estimator.vllm import NEED_ALL_GROUPS_FROM, OTHERS_OWN_SHARE_FROM, version_text

if TYPE_CHECKING:
    from estimator.paste import Facts


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
    notes: list[str] = field(default_factory=list)       # what the figures answer (why they differ)
    disagrees: bool = False                               # vLLM's figures contradict the model's state
    per_rank: dict = field(default_factory=dict)

    def add(self, fig: Figure) -> None:
        self.figures[fig.name] = fig

    def get(self, name: str) -> float | None:
        f = self.figures.get(name)
        return None if f is None else f.value

    def to_json(self) -> dict:
        return {"figures": {k: f.to_json() for k, f in self.figures.items()}, "checks": self.checks,
                "per_rank": self.per_rank}


def _listed(words: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def gib_bytes(x: float | None) -> int | None:
    return None if x is None else int(round(float(x) * GiB))


def graphs_on_top(requested: float, weights: float, activation: float, non_torch: float, graphs: float,
                  kv: float) -> bool:
    """Printed figures (any one unit) that say the CUDA graphs were not subtracted before sizing
    the KV cache: requested − W − P − N is nearer the KV pool than requested − W − P − N − G."""
    rest = requested - weights - activation - non_torch - kv
    return abs(rest) < abs(rest - graphs)


def graphs_after_kv_from_facts(facts) -> bool | None:
    """Whether vLLM captured its CUDA graphs after sizing the KV cache (not set aside), from the log's own
    arithmetic: the "Actual usage" line prints requested, W, P, N, G and the KV in use, and KV = requested −
    W − P − N means the graphs came on top (vllm PR48601, the V2 model runner: 72.78 − 7.39 − 1.54 − 0.60 =
    63.25 with 2.04 GiB of graphs). The "is equivalent to --gpu-memory-utilization" line says they were
    subtracted. None when the paste does not tell."""
    if facts.extra.get("equivalent_utilization") is not None:
        return False
    f = facts.get
    parts = [facts.extra.get("requested_gib"), f("weights_gib"), f("activation_peak_gib"), f("non_torch_gib"),
             f("cuda_graph_gib"), f("kv_cache_gib")]
    if any(not isinstance(x, (int, float)) for x in parts) or float(parts[4]) < 0.05:
        return None
    return graphs_on_top(*(float(x) for x in parts))


def derive(facts, est: Estimate | None) -> MemoryState:
    """Combine paste facts with the forward estimate (may be None when the model is unknown)."""
    st = MemoryState()
    f = facts.get
    read = lambda key: facts.values[key].source if key in facts.values else ""  # noqa: E731

    # ---- the card and the budget ----
    read_total = torch_total_from_facts(facts)
    if read_total is None and facts.get("gpu") is None:
        hint = total_from_graph_hint(facts)
        # the hint's total where the estimate took it (not where the caller named the card)
        read_total = hint if hint and (est is None or est.gpu_total_bytes == hint[0]) else None
    total = read_total[0] if read_total else None
    if read_total:
        st.add(Figure("total", total, read_total[1], read_total[2]))
    elif est is not None and est.reconciliation.card_implied:
        total = est.gpu_total_bytes
        st.add(Figure("total", total, "derived", est.reconciliation.card_implied))
    elif est is not None:
        total = est.gpu_total_bytes
        host = HOST_LABELS.get(facts.extra.get("windows_host"))
        st.add(Figure("total", total, "assumed", f"{est.gpu_name}{f' under {host}' if host else ''} as torch reports it"))
    elif est is None and f("gpu"):
        # no model to estimate with, but the card the paste names still sizes vLLM's budget where the
        # name fixes its size (gpus.sized_gpu: not "A100", 40 or 80 GB)
        from estimator.gpus import sized_gpu

        card = sized_gpu(f("gpu"))
        if card is not None:
            total = card.total_bytes
            st.add(Figure("total", total, "assumed", f"{card.name} as torch reports it"))
    util = f("gpu_memory_utilization")
    finer = facts.extra.get("utilization_from_budget")
    if util is not None and isinstance(finer, float):
        st.add(Figure("utilization", finer, "derived", f"the budget vLLM printed ({facts.extra['budget_gib']:.2f} GiB) ÷ "
                      f"the total; it prints the utilization itself to two decimals ({util:.2f})", unit="fraction"))
        util = finer
    elif util is not None:
        st.add(Figure("utilization", util, "read", "gpu_memory_utilization in the paste", unit="fraction"))
    elif est is not None:
        util = est.settings.gpu_memory_utilization
        st.add(Figure("utilization", util, "assumed", f"vLLM {est.profile.era} default", unit="fraction"))
    budget = int(total * util) if total and util else None
    # --kv-cache-memory-bytes: the pool is the size asked for, not what the budget leaves (vLLM skips its
    # profile run; the budget only sizes the start-up free-memory check, v1/worker/gpu_worker.py)
    fixed_pool = bool(est is not None and est.settings.kv_cache_memory_bytes)
    if budget:
        # the utilization as given: two decimals as vLLM's flag is usually written, more where it has them (0.865)
        shown = f"{util:.2f}" if round(util, 2) == util else f"{util:g}"
        st.add(Figure("budget", budget, "derived", f"{total / GiB:.2f} GiB × {shown}" + (
            " — with --kv-cache-memory-bytes only the start-up check that this much is free uses it"
            if fixed_pool else "")))
    elif est is None and all(f(k) is not None for k in ("weights_gib", "activation_peak_gib", "non_torch_gib")) \
            and (f("kv_cache_gib") is not None or f("kv_available_gib") is not None):
        parts = [f("weights_gib"), f("activation_peak_gib"), f("non_torch_gib"), f("cuda_graph_gib") or 0,
                 f("kv_cache_gib") if f("kv_cache_gib") is not None else f("kv_available_gib")]
        budget = gib_bytes(sum(float(x) for x in parts))
        st.add(Figure("budget", budget, "derived", "weights + activation + non-torch + graphs + KV, as printed"))

    # ---- KV per token and per block (architecture) ----
    bpb = bs = None
    if est is not None:
        bs = f("block_size") or est.layout.block_size
        st.add(Figure("kv_bytes_per_token", est.layout.kv_bytes_per_token, "derived",
                      kv_formula(est), unit="bytes/token"))
        bpb = est.layout.bytes_per_block if bs == est.layout.block_size else \
            est.layout.bytes_per_block // est.layout.block_size * bs

    # ---- KV pool: read, or back-solved from blocks/capacity ----
    blocks = f("gpu_blocks")
    cap = f("error_max_tokens_in_kv") or (f("kv_tokens_capacity") if est and est.profile.engine == "v0" else None)
    if blocks is None and cap and bs and est is not None and est.layout.num_groups <= 1:
        blocks, how = _blocks_from_capacity(est, int(cap), bs)
        st.add(Figure("gpu_blocks", blocks, "derived", how, unit="blocks"))
    elif blocks is not None:
        st.add(Figure("gpu_blocks", blocks, "read", "# GPU blocks in the paste", unit="blocks"))
    solved = kv_pool_from_facts(facts, est) if est is not None else None
    kv_read = gib_bytes(facts.printed_pool_gib)
    if kv_read is not None and reserved_pool_fact(facts, est) is not None:
        # 0.34+: the line is the profile run's pool; the KV cache got what warmup left (kv_pool_from_facts)
        st.add(Figure("reserved_pool", kv_read, "read",
                      "\"Available KV cache memory\" in the paste: the profile run's pool, whose blocks vLLM "
                      "reserves before warmup sizes the KV cache"))
        off = est.reserved_pool_bytes - kv_read
        if abs(off) > max(PRINTED_SLACK * GiB, 0.01 * kv_read):
            # the diagnosis reproduced the KV cache's own figure, where the paste has one, not this
            st.checks.append(
                f"vLLM's profile-run pool ({kv_read / GiB:.2f} GiB, \"Available KV cache memory\") is {-off / GiB:+.2f} "
                f"GiB from the model's ({est.reserved_pool_bytes / GiB:.2f} GiB) beside the KV cache it got: the "
                "CUDA-graph estimate (its \"Estimated CUDA graph memory\" line) or the warmup's own peak is not the "
                "model's")
        kv_read = None
    other = other_worker_pool(facts, est)
    if other is not None:
        st.add(Figure("kv_pool", other.pool, "derived", other.how))
        st.notes.append(
            f"The {other.printed / GiB:.2f} GiB in the memory line you quote is one worker's; vLLM gives every GPU "
            f"the smallest worker's block count. With tensor parallelism V0's driver (rank 0) also gathers the "
            f"full logits and runs the sampler over {est.settings.max_num_seqs:,} dummy sequences × "
            f"{est.spec.vocab_size:,} vocabulary entries (≈{other.extra / GiB:.2f} GiB modelled), so it has "
            f"{other.blocks:,} blocks = {other.pool / GiB:.2f} GiB of KV, {(other.printed - other.pool) / GiB:.2f} GiB "
            "less than the line shows — that is the capacity in the error.")
    elif kv_read is not None:
        st.add(Figure("kv_pool", kv_read, "read", PRINTED_POOL))
    elif blocks == 0 and solved is None and est is not None and bpb:
        # vLLM clamps the count at 0 and the model already leaves less than a block: its remainder stands
        st.add(Figure("kv_pool", est.kv_cache_bytes, "estimated",
                      f"forward model; vLLM printed 0 blocks (it clamps the count at 0: less than one "
                      f"{bpb / 2**20:.2f} MiB block was left, by how much it does not say)"))
    elif blocks is not None and bpb:
        low, high = blocks * bpb, (blocks + 1) * bpb
        st.add(Figure("kv_pool", low, "derived", f"{blocks:,} blocks × {bpb / 2**20:.2f} MiB per block",
                      low=low, high=high))
    elif solved is not None:
        st.add(Figure("kv_pool", solved[0], "derived", solved[1]))
    elif est is not None:
        st.add(Figure("kv_pool", est.kv_cache_bytes, "estimated", "forward model (no KV figure in the paste)"))

    # ---- the non-KV remainder and its split ----
    kv = st.get("kv_pool")
    if budget and kv is not None and st.figures["kv_pool"].provenance != "estimated" and not fixed_pool:
        st.add(Figure("non_kv", budget - kv, "derived", "budget − KV pool"))
    for key, name in (("weights_gib", "weights"), ("activation_peak_gib", "activation"),
                      ("non_torch_gib", "non_torch"), ("cuda_graph_gib", "cuda_graphs")):
        from_peak = activation_from_facts(facts) if name == "activation" else \
            graph_from_facts(facts, total) if name == "cuda_graphs" else None
        if from_peak is not None:
            st.add(Figure(name, from_peak[0], "derived", from_peak[1]))
        elif other is not None and name == "activation" and f(key) is not None:
            solved_here = "activation_bytes" in est.reconciliation.solved
            st.add(Figure(name, est.activation_bytes, "derived" if solved_here else "estimated",
                          "rank 0's, with the sampler" + (" (budget − the other parts − its KV)" if solved_here
                                                          else " (estimate)")
                          + f"; the {f(key)} GiB printed is another worker's, which does not sample"))
        elif f(key) is not None:
            st.add(Figure(name, gib_bytes(f(key)), "read", f"{key.replace('_gib', '')} {f(key)} GiB in the paste"))
        elif est is not None and name == "weights" and facts.extra.get("consumed_gib") is not None:
            # 0.27+: "… GiB for consumed memory (weights + non-torch)" (diagnosis fixes both parts by it)
            st.add(Figure(name, est.weights_bytes, "derived",
                          f"consumed memory {facts.extra['consumed_gib']} GiB in the paste (weights + non-torch) "
                          f"− non-torch {est.non_torch_bytes / GiB:.2f} GiB"))
        elif est is not None:
            val = {"weights": est.weights_bytes, "activation": est.activation_bytes,
                   "non_torch": est.non_torch_bytes, "cuda_graphs": est.cuda_graph_bytes}[name]
            if f"{name}_bytes" in est.reconciliation.solved and "kv_pool" in st.figures:
                st.add(Figure(name, val, "derived", "what is left of the non-KV memory after the other parts "
                              "(so that the model reproduces vLLM's KV figure)"))
            else:
                st.add(Figure(name, val, "estimated", _estimate_reason(name, est)))
    if est is None and "weights" not in st.figures and isinstance(facts.extra.get("consumed_gib"), (int, float)):
        # 0.27+ prints weights and non-torch as one figure; without the model nothing splits it
        st.add(Figure("consumed", gib_bytes(facts.extra["consumed_gib"]), "read",
                      f"consumed memory {facts.extra['consumed_gib']} GiB in the paste (weights + non-torch, which "
                      "vLLM prints as one figure; the model id splits it)"))
    if isinstance(f("cuda_graph_gib"), (int, float)) and f("cuda_graph_gib") < 0 and "cuda_graphs" in st.figures:
        # gpu_model_runner.py capture_model (0.11): free memory before capture − free memory after it,
        # below zero when more memory was freed during the capture than the graphs took
        st.figures["cuda_graphs"].how += (" (vLLM measures the change in free memory across graph capture; below "
                                          "zero when the capture released more cached memory than the graphs took)")
    printed_graphs = facts.values.get("cuda_graph_gib")
    # printed, but this vLLM (the V2 model runner, or a version before graph profiling) captures the graphs
    # after sizing the KV cache: they are not part of the budget split. Without a model, a capture's "took
    # X GiB" (graph_took / graph_pool) came after the KV cache was sized in every release, and so did graphs
    # the printed parts add up without (a Ray-served 0.2x log: 71.26 − 15.31 − 1.29 − 0.22 = 54.44 ≈ 54.45 KV)
    after = (not est.cuda_graph_bytes) if est is not None else printed_graphs is not None and (
        printed_graphs.source in _CAPTURE_TOOK or graphs_after_kv_from_facts(facts) is True)
    if "cuda_graphs" in st.figures and printed_graphs is not None and after:
        st.figures["cuda_graphs"].how += " (captured after the KV cache was sized: not set aside from the budget)"
    if "non_kv" in st.figures and (est is not None or f("weights_gib") is not None):
        set_aside = est.cuda_graph_bytes if est is not None else not after
        parts = ("weights", "activation", "non_torch") + (("cuda_graphs",) if set_aside else ())
        if est is not None and est.reserved_pool_bytes is not None:
            # 0.34+ (vllm.EXTENSIBLE_KV_CACHE_FROM): what the sizing after warmup keeps out of the budget
            # beside those parts, from the parts as the split has them
            parts += ("warmup_reserve",)
            st.add(Figure("warmup_reserve", warmup_reserve_bytes(est), "derived",
                          "the margin, max(1 GiB, 0.75 × (activation peak + CUDA-graph estimate)), and the graph "
                          "estimate once more as headroom; where the free memory binds, also the CUDA context "
                          "and other processes (vLLM sizes the KV cache from what it measures after warmup)"))
        known = sum(st.get(p) or 0 for p in parts)
        gap = st.get("non_kv") - known
        if gap > 0.5 * GiB and est is None and "non_torch" not in st.figures:
            # no model: nothing estimates the non-torch part, so the remainder is not "unexplained"
            # the parts the paste does not print are in the remainder too: a log of "Model loading took" and
            # "Available KV cache memory" alone prints no activation peak
            printed = [w for p, w in (("weights", "weights"), ("activation", "activation peak"),
                                      ("cuda_graphs", "CUDA graphs")) if p in st.figures and p in parts]
            unprinted = [w for p, w in (("activation", "the profile run's activation peak"),
                                        ("cuda_graphs", "the CUDA graphs, where this vLLM sets them aside"))
                         if p not in st.figures and p in parts]
            st.notes.append(
                f"The figures in the paste leave {gap / GiB:.2f} GiB beyond the {_listed(printed)} it prints. That is "
                + (f"what it does not print ({_listed(unprinted)}), " if unprinted else "")
                + "non-torch memory (CUDA context, NCCL, cuBLAS workspaces; usually 0.1–0.6 GiB) and anything else "
                "counted against the budget (other processes' growth on shared or unified memory).")
        elif gap > 0.5 * GiB:
            msg = (f"the paste's numbers leave {gap / GiB:+.2f} GiB of non-KV memory that the model does not explain "
                   "(other processes on the GPU, a different vLLM version, or a different checkpoint/dtype)")
            held = est.cached_all_reduce_bytes if est else 0
            if held:
                # vllm PR #2031 (0.2.5) to 0.6.3: the peak is the used memory after the profile run, PyTorch's
                # cache included (non_torch.cached_all_reduce_bytes)
                msg = (f"the paste's numbers leave {gap / GiB:+.2f} GiB of non-KV memory beyond the model's estimate; "
                       f"vLLM {est.profile.release} with tensor parallelism counts what PyTorch still caches after the "
                       f"profile run, and the all-reduced activations held for NCCL can take up to {held / GiB:.1f} GiB "
                       "here (see the assumptions) — the likely cause")
            st.checks.append(msg)
        elif gap < -0.5 * GiB:
            # vLLM had more KV than the budget leaves: the budget (card or utilization) is not the one assumed,
            # or the weights are not the estimated ones
            assumed = [k for k in ("total", "utilization") if st.figures[k].provenance != "read"] \
                if "total" in st.figures and "utilization" in st.figures else []
            weights, card = st.figures.get("weights"), st.get("total")
            # the weights and the pool vLLM printed overrun the whole card: no utilization explains
            # that, and weights estimated for the checkpoint the model id names point to a smaller one
            # (a quantized copy) that the run loaded
            overrun = weights is not None and card is not None and weights.value + kv > card
            smaller = overrun and weights.provenance == "estimated"
            budget_causes = ["a larger card" if k == "total" else "a higher utilization" for k in assumed
                             if not (overrun and k == "utilization")]
            checkpoint = [f"a smaller checkpoint than the {weights.value / GiB:.2f} GiB of weights per GPU estimated "
                          "for the model id (a quantized copy)"] if smaller else []
            # a card the paste names is less likely the wrong one than a checkpoint it does not
            causes = checkpoint + budget_causes if f("gpu") else budget_causes + checkpoint
            st.checks.append(
                f"vLLM's KV pool ({kv / GiB:.2f} GiB) is {-gap / GiB:.2f} GiB more than the budget ({budget / GiB:.2f} GiB) "
                "leaves after the other parts"
                + (f"; the {' and the '.join('GPU size' if k == 'total' else 'gpu_memory_utilization' for k in assumed)}"
                   + (" were" if len(assumed) > 1 else " was") + " assumed" if assumed else "")
                + (f"; the likely cause{'s are' if len(causes) > 1 else ' is'} {' or '.join(causes)}" if causes else "")
                + ". Paste the `nvidia-smi` output and vLLM's start-up memory lines ("
                + ("\"Model loading took …\", " if smaller else "")
                + "\"Memory profiling takes …\", \"Available KV cache memory …\") to pin it down")

    unexplained = _unexplained_solve(est, weights_read=f("weights_gib") is not None)
    if unexplained:
        st.checks.append(unexplained)

    # ---- needed vs available ----
    if est is not None:
        st.add(Figure("kv_needed", est.kv_needed_bytes, "derived", _needed_how(est, bs)))
    if f("kv_needed_gib") is not None:
        st.add(Figure("kv_needed_printed", gib_bytes(f("kv_needed_gib")), "read", "KV needed, as vLLM printed it"))

    # ---- a PyTorch OOM: what it tried, what was free, what this process held ----
    ooms = torch_oom_records(facts)
    if ooms:
        oom = ooms[0]
        where = f" on GPU {oom['gpu_index']}" if oom.get("gpu_index") is not None else ""
        for key, name, how in (("tried_to_allocate_gib", "oom_request", f"the allocation that failed{where}"),
                               ("free_gib", "oom_free", f"free when it failed{where}"),
                               ("allocated_by_pytorch_gib", "oom_allocated", "allocated by PyTorch in that process")):
            if oom.get(key) is not None:
                st.add(Figure(name, gib_bytes(oom[key]), "read", how + " (from the OOM message)"))
    if f("free_memory_gib") is not None and total:
        free = gib_bytes(f("free_memory_gib"))
        st.add(Figure("free_at_start", free, "read", "free memory at start-up, as vLLM printed it"))
        st.add(Figure("held_by_others", max(0, total - free), "derived",
                      "total − free at start-up (other processes, plus this process's CUDA context)"))

    # ---- consistency checks ----
    if est is not None and cap and est.profile.engine == "v0" and other is None:
        if blocks and kv_read is not None and bpb:
            implied = kv_read / blocks
            if abs(implied - bpb) / bpb > 0.05:
                st.checks.append(f"{blocks:,} blocks in {kv_read / GiB:.2f} GiB means {implied / 2**20:.2f} MiB per block; "
                                 f"the model's layout gives {bpb / 2**20:.2f} MiB (different dtype, TP or model?)")
    if est is not None and f("weights_gib") is not None and est.weights_bytes:
        ratio = gib_bytes(f("weights_gib")) / max(1, est.checkpoint_weights_bytes)
        if abs(ratio - 1) > 0.15:
            st.checks.append(f"the paste says the weights take {f('weights_gib')} GiB per GPU; the model's checkpoint "
                             f"would take {est.checkpoint_weights_bytes / GiB:.2f} GiB — check the model id, quantization and TP")
    others = est.others_charged_bytes if est is not None else 0
    if others:
        fixed = version_text(OTHERS_OWN_SHARE_FROM[est.profile.engine])
        st.notes.append(
            f"vLLM {est.profile.release} counts the {others / GiB:.2f} GiB other processes hold on "
            f"this GPU as its own non-torch memory, so gpu_memory_utilization has to cover theirs too; from {fixed} "
            "each instance's utilization is its own share (upgrade, or raise this instance's utilization by their "
            "share of the card)")
    unmodelled = (f"{est.spec.kv_unmodelled}; the fixes rest on vLLM's own numbers"
                  if est is not None and est.spec.kv_unmodelled else None)
    for check in (layout_disagreement(facts, est), block_size_disagreement(facts, est), no_blocks_disagreement(facts, est),
                  unmodelled):
        if check:
            st.checks.append(check)
            st.disagrees = True
    per_rank = facts.extra.get("per_rank")
    if isinstance(per_rank, dict) and per_rank:
        st.per_rank = per_rank
    _ = read
    return st


def torch_total_from_facts(facts) -> tuple[int, str, str] | None:
    """The GPU's memory as torch reports it (what vLLM budgets from), from the paste: (bytes,
    provenance, how). vLLM's own total is read as is; nvidia-smi's MiB total is not torch's — the
    driver keeps a reservation — so it goes through the catalog (a card showing that total to
    nvidia-smi, whose torch total was observed) or the usual reservation (`gpus.lookup_gpu`).
    Without one, a card the paste does not name may be sized by `total_from_graph_hint`."""
    fact = facts.values.get("total_gpu_memory_gib")
    if fact is None or not fact.value:
        return None
    rows = facts.extra.get("nvidia_smi_memory_mib") or []
    if fact.source == "nvidia_smi_total" and rows:
        from estimator.gpus import find_gpu

        mib = int(rows[0]["total"])
        g = find_gpu(f"{mib}MiB")
        if g is not None:
            return g.total_bytes, "derived", f"nvidia-smi's {mib:,} MiB as torch sees it: {g.assumed}"
    return int(round(float(fact.value) * GiB)), "read", f"total_gpu_memory {fact.value} GiB in the paste"


# the fact sources that are torch's own total as software printed it: every message template with a total
# group, and PyTorch's OOM message (paste.py reads it outside the templates)
_PRINTED_TOTAL_SOURCES = frozenset({t.name for t in TEMPLATES if "total_gpu_memory_gib" in t.pattern.groupindex}
                                   | {"torch_oom"})


def printed_torch_total_gib(facts) -> float | None:
    """Torch's own total, in GiB as printed, where a line the paste holds prints it — a message template with a
    total (vLLM's start-up check and profiling lines, Unsloth's banner) or PyTorch's OOM message —
    else None: nvidia-smi's MiB and a size in prose are not torch's figure (torch_total_from_facts
    converts or trusts those)."""
    fact = facts.values.get("total_gpu_memory_gib")
    if fact is None or not fact.value or fact.source not in _PRINTED_TOTAL_SOURCES:
        return None
    return float(fact.value)


# the spread of a total worked back from the graph hint, at the printed precision, that still names a card
_HINT_TOTAL_SPREAD = 0.03


def total_from_graph_hint(facts) -> tuple[int, str, str] | None:
    """The card's torch total where the paste prints none, from 0.21+'s two graph lines: "Estimated
    CUDA graph memory: G GiB total" and "--gpu-memory-utilization=U is equivalent to …=U' without CUDA
    graph memory profiling", U' = U − G ÷ total (vllm/v1/worker/gpu_worker.py), so total = G ÷ (U − U').
    Only where the printed precision (G to 0.01 GiB, U and U' to 4 decimals) pins it within 3%: a
    6 GB laptop card's 0.74 GiB at 0.7000 → 0.5760 is 5.97 GiB; 0.43 GiB at 0.9000 → 0.8964 is not. Not
    for a named card: a catalog card's total is exact, the hint's only to 3%."""
    graph, util, equiv = facts.values.get("cuda_graph_gib"), facts.get("gpu_memory_utilization"), \
        facts.extra.get("equivalent_utilization")
    if graph is None or graph.source != "graph_estimated" or util is None or not isinstance(equiv, (int, float)):
        return None
    g, delta = float(graph.value), float(util) - float(equiv)
    if g <= HALF_HUNDREDTH or delta <= 0.0001:
        return None
    low, high = (g - HALF_HUNDREDTH) / (delta + 0.0001), (g + HALF_HUNDREDTH) / (delta - 0.0001)
    total = g / delta
    if (high - low) / total > _HINT_TOTAL_SPREAD:
        return None
    return (int(round(total * GiB)), "derived",
            f"{g:.2f} GiB of CUDA graphs ÷ ({float(util):.4f} − {float(equiv):.4f}): vLLM's \"is equivalent to "
            "--gpu-memory-utilization\" line takes the graphs' share of the card")


def _need_counting(est: Estimate) -> str:
    """How this version counts one request's KV need: "all stages" (0.14–0.16 under PP check the
    whole model against one stage), "windowed" (sliding/chunked/Mamba groups keep a window or a
    state) or "per token"."""
    if est.profile.pp_global_check and est.settings.pipeline_parallel_size > 1:
        return "all stages"
    if {g.kind for g in est.layout.groups} & {"sliding", "chunked", "mamba"}:
        return "windowed"
    return "per token"


def first_group_only(est: Estimate) -> str | None:
    """Where this release's admission check counts only the first of several KV groups (0.14–0.18,
    vllm.py needed_rule "first_group"; fixed in 0.19) and so less than the request holds: the words."""
    if est.profile.needed_rule != "first_group" or len(est.layout.groups) < 2 \
            or est.request_kv_bytes <= est.kv_needed_bytes:
        return None
    first = _KIND_WORDS.get(est.layout.groups[0].kind, "full-attention")
    return (f"vLLM {est.profile.release}'s check counts only the first of its {len(est.layout.groups)} KV groups "
            f"({first} layers; fixed in {version_text(NEED_ALL_GROUPS_FROM)}); the request itself holds {est.request_kv_bytes / GiB:,.2f} GiB across all "
            "of them")


def _needed_how(est: Estimate, bs: int | None) -> str:
    """How one max_model_len request's KV was counted: all tokens × bytes per token, except that
    V1's sliding-window and chunked-local groups only keep their window (plus the batches in flight,
    vllm/v1/kv_cache_interface.py max_memory_usage_bytes) and Mamba groups one state."""
    length = est.max_model_len
    counting = _need_counting(est)
    if counting == "all stages":
        return (f"{length:,} tokens over all {est.spec.num_layers} layers of every pipeline stage: vLLM "
                f"{est.settings.vllm_version} checks the whole model's need against one stage's memory")
    cp = dcp_ranks(est.profile, est.settings)
    if counting == "per token":
        if cp > 1:
            # each of the dcp ranks keeps every dcp-th token (FullAttentionSpec.max_memory_usage_bytes)
            return (f"{length:,} tokens ÷ {cp} decode-context-parallel ranks × {est.layout.kv_bytes_per_token:,} B "
                    f"(in {bs}-token blocks)")
        return f"{length:,} tokens × {est.layout.kv_bytes_per_token:,} B (in {bs}-token blocks)"
    tb = window_tokens(est.settings, est.profile)
    if est.layout.dsv4 is not None:
        window = est.spec.deepseek_v4_layers[0].window
        return (f"one {length:,}-token request keeps all {length:,} tokens in the compressed latent and indexer "
                f"caches, and its {window:,}-token window plus {tb:,} tokens in flight in the sliding-window caches "
                "and the compressor states (in whole blocks of each cache's own size)")
    parts = []
    for g in est.layout.groups:
        if g.kind in ("sliding", "chunked"):
            span = getattr(g.spec, "window", None) or getattr(g.spec, "chunk", None) or length
            parts.append(f"at most {min(span - 1 + tb, length):,} tokens in the {_KIND_WORDS[g.kind]} layers")
        elif g.kind == "mamba":
            parts.append(f"one state in the {_KIND_WORDS['mamba']} layers")
        elif cp > 1:
            parts.append(f"its {length:,} tokens ÷ {cp} decode-context-parallel ranks in the full-attention layers")
        else:
            parts.append(f"all {length:,} tokens in the full-attention layers")
    kept = f"one {length:,}-token request keeps " + "; ".join(dict.fromkeys(parts)) + " (in whole blocks)"
    first_only = first_group_only(est)
    return f"{first_only}: {kept}" if first_only else kept


def need_sentence(est: Estimate, length: int) -> str:
    """One sentence: what `length` tokens of context cost in KV, in the way this model counts it."""
    need = est.kv_needed_bytes / GiB
    counting = _need_counting(est)
    if counting == "all stages":
        return (f"{length:,} tokens need {need:,.2f} GiB of KV over all {est.spec.num_layers} layers (vLLM "
                f"{est.settings.vllm_version} checks the whole model's need against one pipeline stage's memory)")
    first_only = first_group_only(est)
    if first_only:
        return f"vLLM counts {need:,.2f} GiB of KV for one {length:,}-token request ({first_only})"
    if counting == "windowed":
        return (f"one {length:,}-token request needs {need:,.2f} GiB of KV (its windowed or linear-attention "
                "layers keep only a window or a state, not every token)")
    return f"at {est.layout.kv_bytes_per_token:,} bytes of KV per token, {length:,} tokens need {need:,.2f} GiB of KV"


def _blocks_from_capacity(est: Estimate, cap: int, bs: int) -> tuple[int, str]:
    """Blocks behind a one-group token capacity: blocks × block size, except that V0 0.8+ prints
    bs × (blocks // pp) (vllm/worker/worker.py raise_if_cache_size_invalid)."""
    pp = v0_capacity_divisor(est.profile, est.settings)
    how = f"{cap:,} tokens ÷ {bs} tokens per block" + (f" × {pp} (V0 0.8+ prints blocks ÷ pipeline stages)"
                                                        if pp > 1 else "")
    return cap // bs * pp, how


@dataclass
class OtherWorker:
    """The printed KV pool is a V0 TP worker's that does not sample; vLLM sized every GPU by the driver's."""

    pool: int            # the driver's pool: the printed block count / capacity × bytes per block
    printed: int         # the pool in the memory line the paste holds
    blocks: int          # the driver's blocks (every worker gets these)
    extra: int           # the modelled logits + sampler memory only the driver holds
    how: str


def other_worker_pool(facts: Facts | Mapping, est: Estimate | None) -> OtherWorker | None:
    """A printed KV pool larger than the block count (or capacity) vLLM printed, by about the sampler.

    V0 with tensor parallelism: every worker profiles and logs its own memory line, but only the
    driver (rank 0) gathers the logits and samples, so the driver's pool is smaller by about the
    sampler's memory, and the executor gives every worker the smallest block count
    (memory.v0_driver_extra_bytes). A line copied from another worker ("(VllmWorkerProcess …)")
    then shows more KV than the engine has: the capacity and the block count are the driver's.
    `facts`: a paste's facts, or any mapping of the same keys (the bench's observed figures).
    """
    f = facts.get
    printed = f("kv_cache_gib")
    if est is None or printed is None or not est.layout.bytes_per_block:
        return None
    extra = v0_driver_extra_bytes(est)
    if not extra:
        return None
    bpb, bs = est.layout.bytes_per_block, est.layout.block_size
    cap = f("error_max_tokens_in_kv") or f("kv_tokens_capacity")
    if f("gpu_blocks") is not None and f("gpu_blocks") > 0:
        blocks, what = int(f("gpu_blocks")), f"{int(f('gpu_blocks')):,} GPU blocks"
    elif cap:
        blocks, how = _blocks_from_capacity(est, int(cap), bs)
        what = f"{how} = {blocks:,} blocks"
    else:
        return None
    printed_bytes = int(float(printed) * GiB)
    deficit = printed_bytes - blocks * bpb
    # the printed GiB has two decimals (±0.005 GiB) and a pool holds whole blocks
    if deficit <= HALF_HUNDREDTH * GiB + bpb or deficit > 1.5 * extra + bpb:
        return None
    pool = blocks * bpb
    how = (f"{what} × {bpb / 2**20:.2f} MiB per block on rank 0, the V0 driver, whose block count every GPU "
           f"gets; the {float(printed):.2f} GiB printed is another worker's")
    return OtherWorker(pool, printed_bytes, blocks, extra, how)


def activation_from_facts(facts) -> tuple[int, str] | None:
    """The profile run's activation peak when the paste prints it only inside another figure:
    0.6.4's "peak_torch_memory" is torch's allocated peak during profiling, weights included
    (vllm/worker/worker.py determine_num_available_blocks), so the peak minus the weights."""
    peak, weights = facts.extra.get("peak_torch_memory_gib"), facts.get("weights_gib")
    if facts.get("activation_peak_gib") is not None or peak is None or weights is None or peak < weights:
        return None
    return (gib_bytes(float(peak) - float(weights)),
            f"peak_torch_memory {peak} GiB − weights {weights} GiB (0.6.4 counts the weights in its torch peak)")


# Lines that print the memory a graph capture took, not what was set aside for it: "Graph capturing
# finished in N secs, took X GiB" (the capture itself — in Model Runner V2 also its profile-only capture
# before the KV cache is sized, whose FULL graphs are then extrapolated: v1/worker/gpu/cudagraph_utils.py
# profile_cudagraph_memory) and "CUDA graph pool memory: X GiB (actual)".
_CAPTURE_TOOK = ("graph_took", "graph_pool")


def graph_from_facts(facts, total: int | None) -> tuple[int, str] | None:
    """The CUDA-graph memory vLLM set aside, from its 0.21+ line "The current
    --gpu-memory-utilization=U is equivalent to --gpu-memory-utilization=U' without CUDA graph
    memory profiling": U' = U − estimate ÷ total (vllm/v1/worker/gpu_worker.py, 4 decimals), so the
    estimate the KV cache was sized with is (U − U') × total — it wins over what a capture took
    (`_CAPTURE_TOOK`). None when the estimate is printed outright or a part is missing."""
    util, equiv = facts.get("gpu_memory_utilization"), facts.extra.get("equivalent_utilization")
    printed = facts.values.get("cuda_graph_gib")
    if printed is not None and printed.source not in _CAPTURE_TOOK or not total \
            or not isinstance(equiv, (int, float)) or util is None or not 0 <= float(util) - float(equiv) < 1:
        return None
    frac = float(util) - float(equiv)
    took = f" (the capture it printed took {printed.value} GiB)" if printed is not None else ""
    return (int(round(frac * total)),
            f"({float(util):.4f} − {float(equiv):.4f}) × {total / GiB:.2f} GiB: vLLM's \"is equivalent to "
            "--gpu-memory-utilization\" line, the estimate the KV cache was sized with" + took)


def layout_disagreement(facts, est: Estimate | None) -> str | None:
    """vLLM's printed KV need ("X GiB KV cache is needed") and estimated maximum length test the
    model's KV layout for this architecture, independently of the memory split. More than 10%
    apart (a layout vLLM builds that the model does not know, e.g. compressed caches): say so."""
    if est is None:
        return None
    f = facts.get
    need, fit = f("kv_needed_gib"), f("estimated_max_model_len")
    if need is not None and float(need) > 0 and f("max_model_len") in (None, est.max_model_len):
        printed = float(need) * GiB
        if abs(est.kv_needed_bytes - printed) > max(0.1 * printed, 0.01 * GiB):
            return (f"vLLM says {est.max_model_len:,} tokens need {float(need):.2f} GiB of KV; the model's layout gives "
                    f"{est.kv_needed_bytes / GiB:.2f} GiB, so its KV layout for this architecture is not vLLM's: "
                    "the fixes it re-checks are less certain than vLLM's own numbers")
    if fit is not None and int(fit) > 0 and est.max_model_len_fit > 0 \
            and abs(est.max_model_len_fit - int(fit)) > 0.1 * int(fit):
        return (f"vLLM estimated that at most {int(fit):,} tokens fit; the model's layout gives "
                f"{est.max_model_len_fit:,} for the same KV pool: the fixes it re-checks are less certain than "
                "vLLM's own numbers")
    # V1's "GPU KV cache size" beside the pool it printed: what the pool holds, per vLLM. The estimate
    # holds that pool (it was anchored to it), so tokens more than 10% apart are a setting the paste
    # does not show that changes what a block holds (anchoring.capacity_settings tries the usual
    # ones) or a layout the model does not know.
    tokens, pool = f("kv_tokens_capacity"), facts.printed_pool_gib
    if tokens and pool and est.profile.engine == "v1" and est.kv_cache_tokens > 0 \
            and est.holds_pool(pool) \
            and abs(est.kv_cache_tokens - int(tokens)) > 0.1 * int(tokens):
        return _layout_differs(facts, est, f"vLLM says its {float(pool):.2f} GiB KV pool holds {int(tokens):,} tokens",
                               f"the model's layout holds {est.kv_cache_tokens:,} in it", "a layout the model does not know",
                               "a layout the model does not know (a drafter's own KV layers, a cache format)", "the fixes")
    return None


def block_size_disagreement(facts, est: Estimate | None) -> str | None:
    """A hybrid model's attention block size, which vLLM prints where it raises it to hold one Mamba state
    per attention page ("Setting attention block size to N tokens …"), tests the model's Mamba state and
    attention page bytes apart from the memory split: a different N is a state or page the model sizes
    otherwise (a setting the paste does not show, or a cache layout it does not know)."""
    printed = facts.extra.get("attention_block_size")
    if est is None or not isinstance(printed, (int, float)) or printed <= 0 or not est.layout.state_bytes_per_request:
        return None
    model = est.layout.block_size
    if int(printed) == model:
        return None
    return _layout_differs(facts, est, f"vLLM set the attention block size to {int(printed):,} tokens so that an "
                           "attention page holds a Mamba state", f"the model's pages give {model:,}",
                           "a state layout the model does not know",
                           "a Mamba state or KV cache layout the model does not know", "the token figures")


def _unshown_layout_settings(facts, est: Estimate) -> list[str]:
    """Settings the paste does not state that change what a KV block holds: the KV cache dtype, and for a
    hybrid model what sizes its Mamba state and the blocks a request takes (MambaSpec: prefix caching's
    cache mode, the speculative tokens' state blocks and conv rows)."""
    s = est.settings
    unshown = ["the KV cache dtype"] if facts.get("kv_cache_dtype") is None else []
    if est.layout.state_bytes_per_request:
        unshown += ["prefix caching"] if s.enable_prefix_caching is None and not s.mamba_cache_mode else []
        unshown += ["speculative decoding"] if not s.speculative_method else \
            ["the number of speculative tokens"] if not s.num_speculative_tokens else []
    return unshown


def _layout_differs(facts, est: Estimate, said: str, ours: str, layout: str, fallback: str, what: str) -> str:
    """One sentence for a KV figure vLLM printed that the model's layout does not reproduce: what vLLM said,
    what the model gives with the settings read and assumed, and what could explain the difference — the
    settings the paste does not show (_unshown_layout_settings), else a layout the model does not know."""
    unshown = _unshown_layout_settings(facts, est)
    shown = ", ".join(unshown[:-1]) + " or " if unshown[:-1] else ""
    why = f"a setting the paste does not show ({shown}{unshown[-1]}) or {layout}" if unshown else fallback
    return f"{said}; with the settings read and assumed {ours} — {why}: {what} it re-checks are less certain than vLLM's own numbers"


def no_blocks_disagreement(facts, est: Estimate | None) -> str | None:
    """vLLM found no memory for the KV cache where the model leaves some: the memory went to
    something the model does not see. 0.6.4 (V0) and V1 before 0.9.1 charge the memory other
    processes hold on the GPU to vLLM's own non-torch memory (docs §1.4; profile
    `context_in_non_torch`), so a second process is the usual culprit there."""
    if est is None or facts.error_kind != "no_cache_blocks" or est.kv_cache_bytes <= est.layout.bytes_per_block:
        return None
    s, p = est.settings, est.profile
    msg = (f"vLLM found no memory for the KV cache, but the model leaves {est.kv_cache_bytes / GiB:.2f} GiB for it "
           f"of the {s.gpu_memory_utilization:g} × {est.gpu_total_bytes / GiB:.2f} GiB budget: something the model "
           "does not see "
           "took that memory — ")
    if p.context_in_non_torch:
        msg += (f"vLLM {p.release} counts the memory other processes hold on the GPU (another vLLM "
                "instance, a notebook) as its own, so they use up its budget; ")
    return msg + ("or the card is smaller, or the profile run needed more than estimated. Paste `nvidia-smi` (with its "
                  "process list) taken just before vLLM starts")


def warmup_reserve_bytes(est: Estimate) -> int:
    """0.34+: the budget less the KV cache and the parts (weights, activation, non-torch, graphs)."""
    return max(0, est.budget_bytes - est.kv_cache_bytes - est.non_kv_bytes)


# The paste templates whose KV figure is, from 0.34 (vllm.EXTENSIBLE_KV_CACHE_FROM), the pool of the
# profile run rather than the KV cache's: "Available KV cache memory" (gpu_worker.py
# determine_available_memory) and the "Actual usage" debug line beside it.
RESERVED_POOL_LINES = ("v1_available_kv", "actual_usage")


def reserved_pool_fact(facts, est: Estimate | None):
    """0.34+: the paste's KV figure when it is the profile run's pool (RESERVED_POOL_LINES), else None."""
    if est is None or est.reserved_pool_bytes is None:
        return None
    fact = facts.values.get("kv_cache_gib" if facts.get("kv_cache_gib") is not None else "kv_available_gib")
    return fact if fact is not None and fact.source in RESERVED_POOL_LINES else None


# How kv_pool_from_facts says the pool is vLLM's own GiB figure (not one derived from tokens or blocks
# through the modelled layout)
PRINTED_POOL = "KV cache memory printed by vLLM"


def kv_pool_from_facts(facts, est: Estimate) -> tuple[int, str] | None:
    """vLLM's KV pool on one rank from what the paste printed: (bytes, how), or None.

    A printed GiB figure is the pool; a block count times the layout's bytes per block; a token
    capacity is inverted through the version's formula for it (docs §2.6: V0 blocks × block size;
    V1 "GPU KV cache size" as blocks × block size, ÷ KV groups, or concurrency × max_model_len).
    A V0 TP worker's memory line that shows more than the driver's blocks is not the pool vLLM
    sized the engine with (`other_worker_pool`).
    """
    f = facts.get
    other = other_worker_pool(facts, est)
    if other is not None:
        return other.pool, other.how
    bpb = est.layout.bytes_per_block
    blocks = f("gpu_blocks")
    for key in ("kv_cache_gib", "kv_available_gib"):
        if f(key) is not None and reserved_pool_fact(facts, est) is not None \
                and facts.values[key].source in RESERVED_POOL_LINES:
            # 0.34+: this line is the profile run's pool, printed before warmup sizes the KV cache
            # (Estimate.reserved_pool_bytes); what the cache got is in the later lines, if pasted
            continue
        if f(key) is not None:
            pool = int(float(f(key)) * GiB)
            # the whole blocks vLLM printed beside the GiB figure (V0: "reserved for KV Cache is 14.65GiB",
            # 2 decimals, and "# CUDA blocks: 6001" = pool // bytes per block), or that its estimated
            # maximum length fills: the finer of the two figures where they agree
            fit = (int(blocks), "it printed") if bpb and blocks is not None and int(blocks) > 0 else \
                _blocks_from_estimated_length(facts, est)
            if fit is not None:
                lo, hi = fit[0] * bpb, (fit[0] + 1) * bpb - 1
                if lo - PRINTED_SLACK * GiB <= pool <= hi + PRINTED_SLACK * GiB:
                    return min(max(pool, lo), hi), f"{PRINTED_POOL}, to the block {fit[1]}"
            return pool, PRINTED_POOL
    if not bpb:
        return None
    mib = f"{bpb / 2**20:.2f} MiB per block"
    if blocks is not None and int(blocks) != 0:
        # a negative count is vLLM 0.1's unclamped floor division (vllm#184: "# GPU blocks: -1"): the
        # budget fell short by less than |count| blocks, as a positive count bounds the pool from below
        return int(blocks) * bpb, f"{int(blocks):,} blocks × {mib}"
    if blocks is not None:
        # 0: vLLM clamps the count (worker.py `max(num_gpu_blocks, 0)`), so it says only that less than
        # one block was left — how far below, it does not say. Where the model agrees, nothing to solve.
        if est.kv_cache_bytes < bpb:
            return None
        return 0, f"0 blocks × {mib} (vLLM clamps the count at 0: less than one block was left)"
    bs = est.layout.block_size
    cap = f("error_max_tokens_in_kv") or (f("kv_tokens_capacity") if est.profile.engine == "v0" else None)
    if cap and est.layout.num_groups <= 1:
        blocks, how = _blocks_from_capacity(est, int(cap), bs)
        return blocks * bpb, f"{how} × {mib}"
    tokens = f("kv_tokens_capacity")
    if not (tokens and est.profile.engine == "v1" and est.layout.groups):
        return None
    rule, groups = est.profile.capacity_rule, est.layout.groups
    # before 0.21 the printed count is the blocks' tokens times the decode-context-parallel ranks
    # (v1/core/kv_cache_utils.py: "Multiplying the GPU KV cache size by the dcp_world_size"), as
    # memory.estimate gives it
    cp = dcp_ranks(est.profile, est.settings)
    per_rank = f" ÷ {cp} decode-context-parallel ranks" if cp > 1 else ""
    if rule == "v1_blocks":
        blocks = int(tokens) // cp // bs
        how = f"{int(tokens):,} tokens{per_rank} ÷ {bs} per block × {mib}"
    elif rule == "v1_groups":
        smallest = min(g.block_size for g in groups)
        blocks = int(tokens) // cp // smallest * len(groups)
        how = f"{int(tokens):,} tokens{per_rank} ÷ {smallest} per block × {len(groups)} KV groups × {mib}"
    else:
        length = est.max_model_len
        # the estimate's own blocks per request (its Mamba states and speculative blocks included)
        per_request = round(est.gpu_blocks / est.max_concurrency) if est.gpu_blocks and est.max_concurrency else \
            sum(g.blocks_per_request(length, window_tokens(est.settings, est.profile), est.profile) for g in groups)
        blocks = -(-int(tokens) * per_request // length) if length else 0
        how = (f"{int(tokens):,} tokens = concurrency × {length:,}; one {length:,}-token request takes {per_request:,} "
               f"blocks, so {blocks:,} blocks × {mib}")
    return (blocks * bpb, how) if blocks > 0 else None


def _blocks_from_estimated_length(facts, est: Estimate) -> tuple[int, str] | None:
    """The whole blocks of a V1 pool from the "estimated maximum model length is N" it printed: vLLM's
    binary search took the largest N whose need fits the available memory (v1/core/kv_cache_utils.py
    estimate_max_model_len), so with one full-attention or MLA group — need(L) = ⌈L ÷ block size⌉
    blocks — the pool holds ⌈N ÷ block size⌉ blocks (+ the null block 0.29+ reserves) and not one more.
    Finer than the GiB figure beside it (2 decimals) where a block is small: llava-1.5-7b at 0.26 GiB
    (8 MiB blocks) is 32 or 33 blocks by the GiB, 32 by "512"."""
    n = facts.get("estimated_max_model_len")
    groups, lay = est.layout.groups, est.layout
    if not n or int(n) <= 0 or est.profile.engine != "v1" or len(groups) != 1 or groups[0].kind not in ("full", "mla") \
            or lay.state_bytes_per_request or lay.dsv4 is not None or est.settings.pipeline_parallel_size > 1:
        return None
    reserved = 1 if est.profile.reserved_block else 0
    return -(-int(n) // lay.block_size) + reserved, f"vLLM's estimated maximum model length ({int(n):,}) fills"


_KIND_WORDS = {"full": "full-attention", "sliding": "sliding-window", "chunked": "chunked-local", "mla": "MLA",
               "mamba": "linear-attention/Mamba"}


def kv_formula(est: Estimate) -> str:
    """The per-token KV cost of this rank, term by term, as the layout sums it.

    Models mix layer kinds (Gemma's sliding + global layers with other head counts,
    MLA latents, linear-attention state), so one "layers × heads × head_dim" product would be
    wrong for them; each distinct layer shape gets its own term, and the dtype bytes are what the
    total implies (an fp8 KV cache, a checkpoint's own KV quantization).
    """
    spec, s = est.spec, est.settings
    tp = s.tensor_parallel_size
    layers = [lk for lk in (est.layout.layers or spec.layers) if lk.bytes_per_token(tp, 2)]  # this rank's (PP stage)
    total = est.layout.kv_bytes_per_token
    states = " (plus a fixed state per request in the linear-attention/Mamba layers)" if est.layout.state_bytes_per_request else ""
    if not layers:
        return "no layer keeps per-token KV" + states
    if est.layout.dsv4 is not None or any(isinstance(lk, DeepseekV4Layer) for lk in layers):
        return _deepseek_v4_formula(est, layers, total)
    # the layers as this version caches them: MLA before 0.7.1 keeps K and V per head (kv_layout.effective_layers)
    if any(lk.kind == "mla" or getattr(lk, "fixed_bytes", 0) or getattr(lk, "indexer_bytes", 0) for lk in layers):
        mla = spec.mla or {}
        idx = [lk for lk in layers if getattr(lk, "indexer_bytes", 0)]
        packed = [lk for lk in layers if getattr(lk, "fixed_bytes", 0)]
        sum_ = f"{mla.get('kv_lora_rank', '?')} + {mla.get('qk_rope_head_dim', '?')}"
        if packed and est.profile.engine == "v0":
            # 0.7.2–0.7.3's cache engine pads the latent to 256 bytes (kv_layout.V0_MLA_ALIGNED)
            padded = v0_mla_padded_values(packed[0])
            latent = f"{len(layers)} MLA layers × ({sum_}, padded to {padded} for 256-byte alignment) × dtype bytes"
        elif packed:
            latent = f"{len(layers)} MLA layers × {packed[0].fixed_bytes} B (fp8_ds_mla: fp8 latent, scales, bf16 rope)"
        else:
            latent = f"{len(layers)} MLA layers × ({sum_}) × dtype bytes"
        indexer = f" + {len(idx)} indexer key caches × {idx[0].indexer_bytes} B" if idx else ""
        return f"{latent}{indexer} = {total:,} B per token (not split by TP){states}"
    if any(getattr(lk, "content_bytes", 0) for lk in layers):
        return _packed_kv_formula(est, layers, total, states)
    return attention_terms_formula(layers, tp, total, states)


def attention_terms_formula(layers: list, tp: int, total: int, states: str = "", rank: str = "per GPU",
                            windows: bool = True) -> str:
    """Layers of one shape grouped into terms × the dtype bytes the total implies. `rank` names where
    the heads are counted ("per GPU", "per worker" on the CPU backend); `windows` False where every layer
    keeps the whole context whatever its window (V0's CPU cache engine)."""
    terms: dict[tuple, int] = {}
    for lk in layers:
        window = (getattr(lk, "window", None) or getattr(lk, "chunk", None)) if windows else None
        key = (lk.kind if windows else "full", lk.heads_per_rank(tp), lk.head_dim, lk.head_dim_v, window)  # type: ignore[attr-defined]
        terms[key] = terms.get(key, 0) + 1
    unit = sum(lk.bytes_per_token(tp, 1) for lk in layers)
    dt = total / unit if unit else 0
    dts = f"{dt:g} B" + (" (fp8)" if dt == 1 else " (bf16/fp16)" if dt == 2 else " (fp32)" if dt == 4 else "")
    parts = []
    for (kind, heads, hd, hd_v, window), n in terms.items():
        if hd_v is not None and hd_v != hd:
            dims = f"({hd} + {hd_v}) K+V head_dims"
        else:
            dims = f"{hd} head_dim × 2 (K,V)"
        what = "layers" if len(terms) == 1 and kind == "full" else (f"{_KIND_WORDS.get(kind, kind)} layers"
                                                                    + (f" (window {window:,})" if window else ""))
        parts.append(f"{n} {what} × {heads} KV head{'s' if heads != 1 else ''} {rank} × {dims}")
    body = " + ".join(parts)
    if len(parts) > 1:
        body = f"[{body}]"
    windowed = any(k[4] for k in terms)
    return (f"{body} × {dts} = {total:,} B per token{states}"
            + ("; windowed (sliding/chunked) layers keep only their window of tokens" if windowed else ""))


def _packed_kv_formula(est: Estimate, layers: list, total: int, states: str) -> str:
    """A KV format that packs scales beside the values (kv_layout.packed_kv_content): each token takes a
    fixed number of bytes per KV head, which the formula shows with what makes it up."""
    dtype = (est.settings.kv_cache_dtype or "").lower()
    tp = est.settings.tensor_parallel_size
    if dtype.startswith("nvfp4"):
        how = "fp4 values (½ B) and an fp8 scale per 16 values, K and V"
    elif dtype in TURBOQUANT_PRESETS:
        how = f"a TurboQuant {dtype.removeprefix('turboquant_')} slot: packed key and value with their norms and scales"
    else:
        how = f"K and V in {'4' if dtype.startswith('int4') else '8'} bits plus an fp32 scale each"
    terms: dict[tuple, int] = {}
    for lk in layers:
        heads = lk.heads_per_rank(tp)
        if not lk.content_bytes:
            what = "K and V as 1-byte values"              # a layer the format leaves plain (sliding)
        elif dtype in TURBOQUANT_PRESETS and lk.content_bytes != turboquant_slot(dtype, lk.head_dim):
            what = "K and V in the model dtype: TurboQuant leaves the first and last layers unquantized"
        else:
            what = how
        key = (lk.kind, heads, lk.head_dim, lk.bytes_per_token(tp, 1) // max(heads, 1), what)
        terms[key] = terms.get(key, 0) + 1
    parts = [f"{n} {_KIND_WORDS.get(kind, kind)} layers × {heads} KV head{'s' if heads != 1 else ''} per GPU × "
             f"{content} B (head_dim {hd}: {what})" for (kind, heads, hd, content, what), n in terms.items()]
    body = " + ".join(parts) if len(parts) == 1 else f"[{' + '.join(parts)}]"
    return f"{body} = {total:,} B per token ({dtype}){states}"


def _deepseek_v4_formula(est: Estimate, layers: list, total: int) -> str:
    """DeepSeek-V4: the compressed latent rows (and 4× layers' indexer keys) per token of context, as
    the latent group's pages hold them; the window caches and compressor states are per request."""
    by_ratio: dict[int, int] = {}
    for lk in layers:
        by_ratio[lk.compress_ratio] = by_ratio.get(lk.compress_ratio, 0) + 1
    plan = est.layout.dsv4
    # a release before DeepSeek-V4's pool (kv_layout._deepseek_v4_layout) has no plan: only the rows count
    ds_mla = plan.ds_mla if plan is not None else (est.settings.kv_cache_dtype or "auto").startswith("fp8")
    row = f"{DS_MLA_ROW_BYTES} B (fp8_ds_mla)" if ds_mla else f"{layers[0].head_dim} × dtype bytes"
    terms = [f"{n} layers × {row} ÷ {r}" + (" + the indexer's 132 B key ÷ 4" if r == 4 else "")
             for r, n in sorted(by_ratio.items())]
    if plan is None:
        return f"[{' + '.join(terms)}] = {total:,} B per token of context (one latent head: not split by TP)"
    padding = f", pages padded to {DS_MLA_ALIGN} B," if ds_mla else ""
    return (f"[{' + '.join(terms)}]{padding} = {total:,} B per token of context in {est.layout.block_size}-token "
            f"blocks (one latent head: not split by TP); besides, every request reserves the {layers[0].window:,}-token "
            "sliding-window caches and the compressor states for its window plus the tokens in flight")


# A part solved for (anchoring.anchor_to_pool) is worth a word when vLLM's figure needs much more of it than the
# model sees: at least this much more, and at least twice the model's own figure (a judgement: the spread
# of the profile-peak estimates over the corpora is well within both).
UNEXPLAINED_SOLVE_MIN = 1 * GiB


def _unexplained_solve(est: Estimate | None, weights_read: bool = False) -> str | None:
    """The check a large solved-for activation peak deserves: the table shows it as derived, but most of it is
    memory the model does not explain, and the fixes assume it stays. With the weights printed, they are not
    the suspect, and the log lines to ask for are already there."""
    rec = est.reconciliation if est is not None else None
    if rec is None or rec.plain is None or "activation_bytes" not in rec.solved:
        return None
    own, solved = rec.plain.activation_bytes, est.activation_bytes
    if solved - own < UNEXPLAINED_SOLVE_MIN or solved < 2 * own:
        return None
    causes = "another process on the GPU or another vLLM version" if weights_read else \
        "another process on the GPU, a checkpoint larger than its config says, or another vLLM version"
    ask = "" if weights_read else \
        "; vLLM's start-up memory lines (\"Model loading took …\", \"Memory profiling takes …\") would say which"
    return (f"vLLM's KV figure leaves {solved / GiB:.2f} GiB for the profile run's peak, {(solved - own) / GiB:.2f} GiB "
            f"more than the model's estimate ({own / GiB:.2f} GiB): memory the model does not explain — {causes}. "
            f"The fixes assume it stays{ask}")


def _estimate_reason(name: str, est: Estimate) -> str:
    s = est.settings
    return {
        "weights": "parameters × bytes per parameter for this checkpoint format, per GPU rank",
        "activation": f"profile run over {s.max_num_batched_tokens:,} tokens and a {min(s.max_num_seqs or 0, s.max_num_batched_tokens or 0)}"
                      "-row sampler" + (", with torch.compile's first compile (Model Runner V2)"
                                        if v2_first_compile(est.spec, est.profile, s) else "") + " (estimate)",
        "non_torch": "BLAS and collective-communication workspaces outside torch (estimate from public logs)" + (
            f", plus the {est.others_charged_bytes / GiB:.2f} GiB other processes hold (vLLM {est.profile.release} "
            "counts it as this instance's)" if est.others_charged_bytes else ""),
        "cuda_graphs": ("CUDA-graph pool (estimate)" + (
            f", with {est.flashinfer_graph_bytes / GiB:.2f} GiB that the FlashInfer attention backend allocates at the "
            "first FULL capture (its workspace and decode wrappers)" if est.flashinfer_graph_bytes else ""))
        if est.cuda_graph_bytes else _graphs_not_counted(est),
    }[name]


def _graphs_not_counted(est: Estimate) -> str:
    """Why the budget holds no CUDA graphs: eager mode, a release before graph profiling, or the V2
    model runner before 0.29, which captures them after sizing the KV cache (cuda_graphs.graphs_after_kv)."""
    if est.settings.enforce_eager:
        return "none: --enforce-eager"
    if graphs_captured_after_kv(est):
        return "captured after the KV cache is sized (Model Runner V2 before 0.29): outside this budget"
    return "not counted by this vLLM version"
