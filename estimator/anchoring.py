"""Anchoring the forward estimate on the figures vLLM printed.

A paste gives some of vLLM's own numbers — a token capacity, a block count, the KV pool in GiB, the
weights, sometimes the whole breakdown — and the model estimates the rest. These functions make the
estimate agree with them: the setting a printed capacity implies (KV dtype, prefix caching, block size,
speculative tokens), the tensor- or pipeline-parallel size the printed weights imply, the card size
a printed pool implies when the paste names none, a printed total, and finally the estimated parts
solved so that the state reproduces vLLM's pool (within what a checkpoint's weights can be). What
cannot be solved is left for `derive` to report.
"""

from __future__ import annotations

from estimator.errors import KvdoctorError
from estimator.kv_layout import window_tokens, windows_hold_batch
from estimator.memory import Estimate
from estimator.memory import rerun as rerun_with
from estimator.units import HALF_HUNDREDTH, PRINTED_SLACK, GiB

# How close a re-run must come to the capacity vLLM printed for `capacity_settings` to take its
# setting: vLLM prints the token count exactly, but the pool to 2 decimals of a GiB, so the block
# count behind it is known to ±0.005 GiB (one 1.5 MiB block in 4.99 GiB is 0.03%); 0.2% leaves room
# for that and nothing for a setting that changes a request's blocks by one in ~170 (a Mamba state
# or a speculative block: 0.6% on the talos#1995 / club-3090#487 pools, dev.jsonl).
CAPACITY_MATCH = 0.002
# num_speculative_tokens tried when the paste names the method but not the count (vLLM's default
# is 1 for MTP; recipes and compose files use up to 7).
_SPEC_TOKENS_TRIED = range(1, 8)


def capacity_settings(facts, est: Estimate, rerun) -> tuple[Estimate, str]:
    """Read back settings the paste cuts off from what vLLM printed about its KV cache.

    With the pool printed (GiB, to 2 decimals) the block count is known, and what vLLM says those
    blocks hold depends on the layout: V1's "GPU KV cache size" (v1/core/kv_cache_utils.py: tokens
    per block, and from 0.21 int(blocks / blocks per request × max_model_len)), V0's "# GPU blocks:
    N" (worker.py / executor), else its capacity, blocks × block size. V1's start-up error prints,
    pool or not, the KV one max_model_len request needs ("X GiB KV cache is needed",
    KVCacheSpec.max_memory_usage_bytes). Things a truncated `non-default args` line or a compose
    file often hides change those figures and nothing else the paste prints:
    - the KV cache dtype: an fp8 cache holds twice the tokens in the same pool, a request needs half;
    - for a sliding-window or chunked-local model, max_num_batched_tokens: such a layer holds the
      tokens in flight beside its window (`window_tokens`);
    - for a hybrid (Mamba / linear-attention) model, the blocks one request takes: its attention
      blocks plus, per Mamba group, 1 state block, 2 with prefix caching ("align" mode) and 1 more
      per speculative token (vllm/v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes).
    Only settings the paste does not state are tried, and only when the assumed ones miss a printed
    figure; a single combination that reproduces every printed figure (`CAPACITY_MATCH`, or the
    GiB figure's rounding) is taken, with a note saying so — none or several, and the estimate
    stays as it was. `rerun(adjust)` is the paste's anchored estimate with those settings. Returns
    the estimate and the flags of the settings read back (for the user's command; "" when none)."""
    from itertools import product

    f = facts.get
    s = est.settings
    v0 = est.profile.engine == "v0"
    targets = _printed_kv_targets(facts, est)
    # the KV one request needs is the layout's arithmetic alone (bytes per token and per state ×
    # max_model_len): a state that reproduces no printed pool — weights estimated for a checkpoint the
    # run did not load — still tells the layout that reproduces it
    need_only = all(what == "need" for what, *_ in targets)
    if not targets or (est.reconciliation.failed and not need_only):
        return est, ""

    def reproduces(e: Estimate) -> bool:
        return all(abs(get(e) - value) <= tol for _what, value, get, tol, _say in targets) \
            and (need_only or not e.reconciliation.failed)

    if reproduces(est):
        return est, ""
    options: dict[str, list] = {"kv_cache_dtype": [None] + (_kv_dtypes_tried(est) if f("kv_cache_dtype") is None else [])}
    if v0 and f("block_size") is None and any(what == "concurrency" for what, *_ in targets):
        # V0 prints the pool in GiB and in blocks, whose ratio is the bytes per block, and the
        # concurrency, blocks × block size ÷ L: together the block size (--block-size, which frameworks
        # set for their own reasons — Dynamo's KV routing used 64). Without the concurrency a block
        # size and a KV dtype can fill the pool with as many blocks (fp8 in 16s, bf16 in 8s): the
        # dtype alone is tried then.
        options["block_size"] = [None, *_BLOCK_SIZES_TRIED]
    if (not v0 and f("max_num_batched_tokens") is None and not est.layout.state_bytes_per_request
            and windows_hold_batch(est.layout, est.profile, est.max_model_len)):
        # a sliding-window (or chunked-local) layer holds window − 1 + the tokens in flight per request
        # (kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes): the batch a compose file
        # sets decides the need and what a request takes of the pool. Not beside the Mamba settings
        # below: their product with the batch would be hundreds of re-runs, and rarely one match
        options["max_num_batched_tokens"] = [None, *(n for n in _BATCH_TOKENS_TRIED
                                                     if n != s.max_num_batched_tokens)]
    if not v0 and est.layout.state_bytes_per_request:
        if s.enable_prefix_caching is None and not s.mamba_cache_mode:
            options["enable_prefix_caching"] = [None, True, False]
        if s.speculative_method and not s.num_speculative_tokens:
            options["num_speculative_tokens"] = [None, *_SPEC_TOKENS_TRIED]
    matches = []
    for values in product(*options.values()):
        adjust = {key: v for key, v in zip(options, values, strict=True) if v is not None}
        if not adjust:
            continue
        try:
            e = rerun(adjust)
        except KvdoctorError:
            continue
        if reproduces(e):
            matches.append((adjust, e))
    # a setting tried at the value the run resolves it to anyway (prefix caching on where the release
    # turns it on for this model) gives the same state as leaving it out: one reading, not two
    def state(e: Estimate) -> tuple:
        return e.layout, e.kv_cache_tokens, e.gpu_blocks, e.kv_needed_bytes

    matches = [(adjust, e) for adjust, e in matches
               if not any(other.items() < adjust.items() and state(o) == state(e) for other, o in matches)]
    if len(matches) != 1:
        return est, ""
    adjust, out = matches[0]
    said = []
    if "kv_cache_dtype" in adjust:
        said.append(_KV_DTYPE_WORDS[adjust["kv_cache_dtype"]])
    if "enable_prefix_caching" in adjust:
        said.append("prefix caching " + (f"on (Mamba cache mode '{out.layout.mamba_mode}')" if adjust["enable_prefix_caching"]
                                         else "off"))
    if "num_speculative_tokens" in adjust:
        said.append(f"{adjust['num_speculative_tokens']} speculative tokens per step")
    if "block_size" in adjust:
        said.append(f"{adjust['block_size']}-token blocks (`--block-size {adjust['block_size']}`)")
    if "max_num_batched_tokens" in adjust:
        said.append(f"`--max-num-batched-tokens {adjust['max_num_batched_tokens']}` (a windowed layer holds its window "
                    f"and the {window_tokens(out.settings, out.profile):,} tokens in flight of each request)")
    printed = "; ".join(say(out, True) for *_, say in targets)
    assumed = "; ".join(say(est, False) for *_, say in targets)
    out.assumptions.insert(0, (
        f"the paste does not show {' or '.join(_SETTING_WORDS[k] for k in adjust)}; of the settings tried, only "
        f"{' and '.join(said)} {'reproduce' if len(said) > 1 else 'reproduces'} vLLM's printed figures ({printed}) — "
        f"the assumed settings give {assumed} —, so the estimate uses {'them' if len(said) > 1 else 'it'}"))
    # as flags for the user's command (the speculative count lives inside --speculative-config's
    # JSON, which the note states instead)
    # (an 8-bit per-token-head cache is int8 or fp8 alike, byte for byte: the note names both)
    flags = [f"--kv-cache-dtype {adjust['kv_cache_dtype']}"] if "kv_cache_dtype" in adjust else []
    if "enable_prefix_caching" in adjust:
        flags.append("--enable-prefix-caching" if adjust["enable_prefix_caching"] else "--no-enable-prefix-caching")
    if "block_size" in adjust:
        flags.append(f"--block-size {adjust['block_size']}")
    if "max_num_batched_tokens" in adjust:
        flags.append(f"--max-num-batched-tokens {adjust['max_num_batched_tokens']}")
    return out, " ".join(flags)


def _printed_kv_targets(facts, est: Estimate) -> list[tuple]:
    """The KV figures vLLM printed that the settings `capacity_settings` tries decide:
    (what, printed value, the estimate's own, tolerance, how to say it — the printed figure for the
    estimate that reproduces it, else the estimate's)."""
    f = facts.get
    v0 = est.profile.engine == "v0"
    out: list[tuple] = []
    if f("kv_cache_gib") is not None or f("kv_available_gib") is not None:
        if v0 and f("gpu_blocks") is not None and int(f("gpu_blocks")) > 0:
            n = int(f("gpu_blocks"))
            out.append(("blocks", n, lambda e: e.gpu_blocks, CAPACITY_MATCH * n,
                        lambda e, ok: f"{(n if ok else e.gpu_blocks):,} blocks"))
            x = f("max_concurrency")
            if x and float(x) > 0 and f("max_model_len") in (None, est.max_model_len):
                # V0's "Maximum concurrency for L tokens per request: X" = blocks × block size ÷ L
                # (executor_base.py initialize_cache, 2 decimals): with the blocks it tells a block
                # size from a KV dtype that would fill the same pool with as many blocks
                out.append(("concurrency", float(x), lambda e: e.max_concurrency, max(PRINTED_SLACK, CAPACITY_MATCH * float(x)),
                            lambda e, ok: f"{(float(x) if ok else e.max_concurrency):.2f}× concurrency"))
        else:
            tokens = (f("error_max_tokens_in_kv") or f("kv_tokens_capacity")) if v0 else f("kv_tokens_capacity")
            if tokens and int(tokens) > 0:
                n = int(tokens)

                def held(e: Estimate, ok: bool, n: int = n) -> str:
                    text = f"{(n if ok else e.kv_cache_tokens):,} tokens in {e.gpu_blocks:,} blocks"
                    if not v0 and e.layout.state_bytes_per_request and e.max_concurrency:
                        text += (f": one {e.max_model_len:,}-token request "
                                 f"{'took' if ok else 'takes'} {round(e.gpu_blocks / e.max_concurrency):,} blocks")
                    return text
                out.append(("tokens", n, lambda e: e.kv_cache_tokens, CAPACITY_MATCH * n, held))
    need = f("kv_needed_gib")
    if not v0 and need and float(need) > 0 and f("max_model_len") in (None, est.max_model_len):
        printed = float(need) * GiB
        # printed to 2 decimals of a GiB, and the need is the layout's own arithmetic: its rounding is all
        # the slack (0.2% of Gemma 4's 5.98 GiB would also pass an 8-bit cache with twice the batch)
        out.append(("need", printed, lambda e: e.kv_needed_bytes, PRINTED_SLACK * GiB,
                    lambda e, ok: f"{(float(need) if ok else e.kv_needed_bytes / GiB):.2f} GiB of KV for one "
                                  f"{e.max_model_len:,}-token request"))
    return out


def _kv_dtypes_tried(est: Estimate) -> list[str]:
    """KV cache dtypes a paste may hide: fp8 everywhere; where the release has them (V1, 0.20+) an 8-bit
    per-token-head cache (int8 and fp8 take the same bytes: one stands for both) and, on Blackwell's
    SM 10.x where FlashInfer runs it, NVFP4 (kv_layout.packed_kv_content)."""
    from estimator.vllm import kv_dtype_exists

    if est.profile.engine != "v1":
        return ["fp8"]
    cc = est.settings.compute_capability
    blackwell = cc is not None and 10.0 <= cc < 11.0
    return ["fp8"] + [d for d in ("int8_per_token_head", "nvfp4") if kv_dtype_exists(d, est.profile.version)
                      and (d != "nvfp4" or blackwell)]


_KV_DTYPE_WORDS = {
    "fp8": "an fp8 KV cache (`--kv-cache-dtype fp8`: 1 byte per value)",
    "int8_per_token_head": "an 8-bit KV cache with per-token-head scales (`--kv-cache-dtype int8_per_token_head` "
                           "or `fp8_per_token_head`, the same bytes)",
    "nvfp4": "an NVFP4 KV cache (`--kv-cache-dtype nvfp4`: fp4 values and an fp8 scale per 16)",
}
_SETTING_WORDS = {"kv_cache_dtype": "the KV cache dtype", "enable_prefix_caching": "whether prefix caching was on",
                  "num_speculative_tokens": "num_speculative_tokens", "block_size": "the block size",
                  "max_num_batched_tokens": "max_num_batched_tokens"}
# V0's --block-size values besides the default 16 that frameworks set (config.py BlockSize, 0.8.x:
# 1, 8, 16, 32, 64, 128; a 1-token block is for other platforms)
_BLOCK_SIZES_TRIED = (8, 32, 64, 128)
# --max-num-batched-tokens values tried for a windowed model whose paste does not show it: vLLM's
# defaults (2,048 and 8,192 for the API server, 16,384 for LLM(...) by card; engine/arg_utils.py) and
# the powers of two compose files and recipes set around them.
_BATCH_TOKENS_TRIED = (512, 1024, 2048, 4096, 8192, 16384, 32768)


# Where a lower bound on the tensor-parallel size came from the workers' lines (paste.py).
_LOWER_BOUND_SOURCES = ("worker_processes", "worker_ranks")


def tp_from_weights(facts, spec, settings) -> None:
    """Sharpen a tensor-parallel size read as a lower bound from worker lines with the weights each
    rank printed: vllm#15039 shows one V0 worker process beside the driver (≥ 2) and 32.95 GiB of
    weights per rank, which is Llama-3.3-70B split 4 ways. The smallest power of two at or above
    the bound whose modelled weights are within 10% of the printed figure wins."""
    from estimator.params import weight_bytes

    fact = facts.values.get("tensor_parallel_size")
    printed = facts.get("weights_gib")
    if fact is None or fact.source not in _LOWER_BOUND_SOURCES or not printed or settings.pipeline_parallel_size > 1:
        return
    target = float(printed) * GiB
    for tp in (1, 2, 4, 8, 16, 32):
        if tp < settings.tensor_parallel_size or spec.num_attention_heads % tp:
            continue
        try:
            got = weight_bytes(spec, dtype=settings.dtype, quantization=settings.quantization, tp=tp).bytes_total
        except ValueError:
            return
        if abs(got - target) <= 0.1 * target:
            if tp != settings.tensor_parallel_size:
                settings.tensor_parallel_size = tp
                facts.extra.setdefault("tp_from_weights", tp)
            return


# V0 sizes its CPU swap pool per GPU rank: num_cpu_blocks = int(swap_space // cache_block_size), the bytes
# of one block on one rank (vllm/worker/worker.py determine_num_available_blocks, CacheEngine.
# get_cache_block_size: the rank's KV heads and layers), swap_space 4 GiB unless --swap-space says
# otherwise (vllm/config.py CacheConfig; engine/arg_utils.py).
V0_SWAP_SPACE_DEFAULT = 4 * GiB


def tp_from_cpu_blocks(facts, est: Estimate) -> int | None:
    """The tensor-parallel size a V0 paste does not state (or states only as a lower bound, from worker
    lines), from its "# CPU blocks": the swap space (--swap-space, else 4 GiB) holds that many of one
    rank's blocks, which fixes how many ways the KV heads are split (OpenRLHF#336: 1,638 CPU blocks are
    4 GiB of Llama-3-70B blocks of 2.5 MiB, its 5 MiB split 2 ways; vllm#2136's 1,310 are 8 GiB of
    CodeLlama-13B's 12.5 MiB split 2 ways). None where the run's own split already gives the count, none
    gives it exactly, the pipeline split is the paste's, or Unsloth started vLLM (it sets a swap space of
    its own). Pipeline stages, or an fp8 KV cache the paste does not show, would shrink a block as well:
    tensor parallelism is assumed, as for worker ranks, and the note says so."""
    x, s = facts.extra, est.settings
    cpu, fact = x.get("cpu_blocks"), facts.values.get("tensor_parallel_size")
    swap = v0_swap_bytes(facts)
    if est.profile.engine != "v0" or not isinstance(cpu, (int, float)) or cpu <= 0 or swap <= 0 \
            or x.get("launcher") == "unsloth" or (fact is not None and fact.source not in _LOWER_BOUND_SOURCES) \
            or s.pipeline_parallel_size > 1 or facts.values.get("pipeline_parallel_size") is not None:
        return None

    def counted(e: Estimate) -> bool:
        return e.layout.bytes_per_block > 0 and swap // e.layout.bytes_per_block == int(cpu)

    if counted(est):
        return None
    for tp in (2, 4, 8, 16):
        if tp > s.tensor_parallel_size and not est.spec.num_attention_heads % tp \
                and counted(rerun_with(est, tensor_parallel_size=tp)):
            return tp
    return None


# The GPUs of one node: vLLM's distributed-serving guide splits a model by tensor parallelism within a
# node and by pipeline stages across nodes, so beyond 8 GPUs the split is no longer the count alone.
_NODE_GPUS = 8


def tp_from_gpu_count(facts, est: Estimate, gpu_count: int | None) -> int | None:
    """The tensor-parallel size a paste does not state, from the GPUs it shows, where one GPU cannot
    have been the run: vLLM printed KV figures, so it had loaded the weights (loading precedes the
    profile run and KV sizing, v1/worker/gpu_worker.py and worker/worker.py alike), and on one of its
    cards they exceed the whole budget. A model split over the GPUs a post shows ("With four A6000s",
    RunPod's "GPU count: 2") is split over all of them: TP = the count (per data-parallel replica),
    where the attention heads divide it (vLLM refuses other splits), up to a node's 8. None where the
    paste states a parallel size (or a lower bound from its workers), shows one GPU or more than a
    node, prints V0's CPU blocks (one rank's: `tp_from_cpu_blocks` reads the split from them) or no KV
    figure — a run that stopped while loading may well have been on one GPU. The caller keeps the
    split only where it lets the weights fit (else the reading is wrong elsewhere: the model, the card).
    Pipeline stages would also split the weights: the note says so."""
    from estimator.derive import kv_pool_from_facts

    s = est.settings
    split = (gpu_count or 0) // max(1, s.data_parallel_size)     # the GPUs of one data-parallel replica
    if not 2 <= split <= _NODE_GPUS or facts.extra.get("cpu_blocks") \
            or any(facts.values.get(k) is not None for k in ("tensor_parallel_size", "pipeline_parallel_size")) \
            or s.tensor_parallel_size * s.pipeline_parallel_size > 1 or est.weights_bytes <= est.budget_bytes \
            or not est.spec.num_attention_heads or est.spec.num_attention_heads % split:
        return None
    printed = kv_pool_from_facts(facts, est) is not None or facts.get("kv_needed_gib") is not None
    return split if printed else None


def v0_swap_bytes(facts) -> int:
    """V0's CPU swap space per GPU: --swap-space (GiB) where the paste sets it, else the default."""
    swap = facts.extra.get("swap_space")
    return int(float(swap) * GiB) if isinstance(swap, (int, float)) else V0_SWAP_SPACE_DEFAULT


def pp_from_weights(facts, spec, settings) -> None:
    """The pipeline-parallel size a paste cuts, from the weights each rank printed: vllm#15598 runs
    DeepSeek-R1 with TP 8 on four 8-GPU machines, its `--pipeline-parallel-s[...]` cut, and every
    rank printed 20.64 GiB of weights — a quarter of the model's 83.78 GiB at TP 8, so PP 4. Only where
    the paste shows a pipeline-parallel flag without its value (a smaller figure alone may as well be
    a quantized checkpoint); the smallest size one of whose stages is within 5% of the figure wins."""
    from estimator.flags import command_cut
    from estimator.params import weight_bytes

    printed = facts.get("weights_gib")
    if facts.values.get("pipeline_parallel_size") is not None or settings.pipeline_parallel_size > 1 \
            or not printed or command_cut(facts.text)[1] != "pipeline_parallel_size":
        return
    target = float(printed) * GiB
    for pp in (2, 3, 4, 6, 8, 16):
        if pp > spec.num_layers:
            return
        try:
            stages = [weight_bytes(spec, dtype=settings.dtype, quantization=settings.quantization,
                                   tp=settings.tensor_parallel_size, pp=pp, pp_rank=r).bytes_total for r in range(pp)]
        except ValueError:
            return
        if any(abs(b - target) <= 0.05 * target for b in stages):
            settings.pipeline_parallel_size = pp
            facts.extra.setdefault("pp_from_weights", pp)
            return


# The smallest gap between vLLM's KV pool and the model's that is read as another card size where the
# paste names none (or no size): above the printed figures' rounding (0.005 GiB each) and the spread of
# the small parts, so a paste that states nearly every part is not moved to an odd size by noise.
CARD_GAP_FLOOR = 1 * GiB
# How far from every other catalog card the size vLLM's figures imply must be for `card_from_pool` to
# take the one card near it (by name: its defaults and kernels) rather than a card of that size alone.
# The implied size carries the estimated parts' error: eight DGX Spark logs without the card's name
# (collected corpus) imply 117.9–122.8 GiB for the GB10's 119.63 (−1.4% to +2.6%), while a 4× RTX PRO
# 6000 log implies 89.60 GiB (5.7% below its 94.97, 3.9% below an H100 NVL's 93.09) and RTX 3090
# logs 24.74–24.93 GiB (4–5% above 23.69, within 4% of an RX 7900 XTX only): 8% leaves no other card.
CARD_ALONE = 0.08


def card_from_pool(est: Estimate, pool: int, spec, settings, gpu_count, overrides: dict, named: bool,
                    graph_frac: float | None = None, printed_pool: bool = False) -> Estimate:
    """The card size vLLM's KV figure implies, when the paste leaves it open.

    vLLM's budget = non-KV + KV pool = utilization × total, so when the pool is too far from the
    model's for a detail to explain, it says how big the card was. A pool larger than the assumed
    card's budget leaves beside the parts vLLM printed (its weights, activation, non-torch and graph
    figures: its own, not estimates) cannot be explained by the estimated parts at all — it is
    larger by more than all of them, and than CARD_GAP_FLOOR — where the pool too is printed
    (`printed_pool`: a pool from a token or block count rests on the modelled layout); otherwise
    (and for a smaller pool, which has many causes: other processes, a lower utilization) the gap
    must exceed half the non-KV memory. With
    no card in the paste (`named` False) the reply works on a card of that size rather than on a
    default the user does not have — settled over a few passes, because V1's defaults follow the
    card (max_num_seqs 1024 / 8,192 batched tokens from 70 GiB, 256 / 2,048 below), so the size
    implied with the default card's sampler is not the one whose own defaults reproduce the pool.
    With a card named without its size ("H20", "A100", "V100"), a variant of the same family
    within 6% of it is taken, else the named card stays and `derive` reports the disagreement."""
    from estimator.api import run_estimate
    from estimator.gpus import cards_near, family_variants

    util = est.settings.gpu_memory_utilization or 0.9
    implied = int((est.non_kv_bytes + pool) / util)
    printed = sum(getattr(est, k) for k in ("weights_bytes", "activation_bytes", "non_torch_bytes",
                                            "cuda_graph_bytes") if overrides.get(k) is not None)
    gap = pool - est.kv_cache_bytes
    explained = 0.5 * max(est.non_kv_bytes, 1)
    if gap > 0 and printed_pool:
        explained = min(explained, max(est.non_kv_bytes - printed, CARD_GAP_FLOOR))
    if abs(gap) <= explained or implied <= 0:
        return est
    kw = {k: v for k, v in overrides.items() if v is not None}

    def run(card: str, total: int) -> Estimate:
        if graph_frac is not None:
            kw["cuda_graph_bytes"] = int(round(graph_frac * total))
        return run_estimate(spec, card, settings, gpu_count=gpu_count, **kw)

    def arithmetic(non_kv: int, total: int) -> str:
        return f"({non_kv / GiB:.2f} GiB non-KV + {pool / GiB:.2f} GiB KV) ÷ {util:g} = {total / GiB:.2f} GiB"

    if named:
        # by distance only: two variants of one size (A100 SXM / PCIe 80GB) tie, and Gpu has no order
        near = sorted(((abs(g.total_bytes - implied) / implied, g) for g in family_variants(est.gpu_name)
                       if g.total_bytes != est.gpu_total_bytes), key=lambda t: t[0])
        if not near or near[0][0] > 0.06:
            return est
        card = near[0][1]
        how = f"{card.name}: the paste names the {est.gpu_name.replace('NVIDIA ', '')} family without its size"
        sums = arithmetic(est.non_kv_bytes, implied)
        note = (f"the paste names an {est.gpu_name} without its size; the {est.gpu_total_bytes / GiB:.2f} GiB version "
                f"cannot hold vLLM's KV figure, which implies {sums}: modelled as the {card.name} "
                f"({card.total_bytes / GiB:.2f} GiB) — say the size if that is wrong")
        out = run(card.name, card.total_bytes)
    else:
        non_kv = est.non_kv_bytes
        for _ in range(4):
            out = run(f"{implied / GiB:.2f}GiB", implied)
            again = int((out.non_kv_bytes + pool) / util)
            if abs(again - implied) <= 0.01 * implied:
                break
            implied, non_kv = again, out.non_kv_bytes
        else:
            out = run(f"{implied / GiB:.2f}GiB", implied)   # not settled: the figures at the size said
        sums = arithmetic(non_kv, implied)
        implies = f"no GPU in the paste: vLLM's KV figure with the model's other parts implies {sums} of GPU memory (torch)"
        near = cards_near(implied)
        if len(near) == 1 and cards_near(implied, CARD_ALONE) == near:
            # vLLM's defaults follow the card's name as well as its size (engine/arg_utils.py: a GB10 or
            # an A100 keeps the small max_num_seqs / max_num_batched_tokens however large it is), and so
            # do its kernels: a size only one card has is modelled as that card
            card = near[0]
            out = run(card.name, card.total_bytes)
            how = f"no GPU in the paste; the only card of that size: {card.name}"
            note = (f"{implies}, the size of one card only: modelled as the {card.name} "
                    f"({card.total_bytes / GiB:.2f} GiB) — name the card (or paste `nvidia-smi`) if that is wrong")
        else:
            names = [g.name for g in near][:3]
            how = "no GPU in the paste" + (f"; cards of that size: {', '.join(names)}" if names else "")
            note = f"{implies}; the figures use that size — name the card (or paste `nvidia-smi`) to confirm"
    out.reconciliation.card_implied = f"{how}; implied by vLLM's KV figure: {sums}"
    out.assumptions.append(note)
    return out


def card_from_free(est: Estimate, free: int, spec, settings, gpu_count, overrides: dict) -> Estimate:
    """The card's least size where the paste names none but vLLM printed the memory it found free at
    start-up ("Initial free memory 93.88 GiB", v1/worker/gpu_worker.py): measured after vLLM made its CUDA
    context, so the card holds at least free + that context. Where the card assumed by default is smaller,
    the reply works on that least size rather than on a card that could not have had so much free — the
    card itself where only one catalog card near that size holds it (as `card_from_pool`)."""
    from estimator.api import run_estimate
    from estimator.gpus import cards_near
    from estimator.non_torch import CUDA_CONTEXT

    least = free + CUDA_CONTEXT
    if est.gpu_total_bytes >= least:
        return est
    kw = {k: v for k, v in overrides.items() if v is not None and k != "other_process_bytes"}
    near = [g for g in cards_near(least) if g.total_bytes >= least]
    said = (f"no GPU in the paste: vLLM found {free / GiB:.2f} GiB free at start-up, after its CUDA context (about "
            f"{CUDA_CONTEXT / GiB:.2f} GiB), more than the {est.gpu_total_bytes / GiB:.2f} GiB of the {est.gpu_name} "
            f"assumed otherwise")
    if len(near) == 1:
        card = near[0]
        out = run_estimate(spec, card.name, settings, gpu_count=gpu_count, **kw)
        how = f"no GPU in the paste; the only card near {least / GiB:.2f} GiB that holds it: {card.name}"
        note = (f"{said}: modelled as the {card.name} ({card.total_bytes / GiB:.2f} GiB), the only card of about that "
                "size — name the card (or paste `nvidia-smi`) if that is wrong")
    else:
        out = run_estimate(spec, f"{least / GiB:.2f}GiB", settings, gpu_count=gpu_count, **kw)
        names = ", ".join(g.name for g in near[:3])
        how = "no GPU in the paste" + (f"; cards of about that size: {names}" if names else "")
        note = (f"{said}: modelled as a card of {least / GiB:.2f} GiB, the least that holds it"
                + (f" ({names})" if names else "") + " — name the card (or paste `nvidia-smi`) to confirm")
    out.reconciliation.card_implied = (f"{how}; implied by the free memory vLLM found at start-up: "
                                       f"{free / GiB:.2f} + {CUDA_CONTEXT / GiB:.2f} GiB of CUDA context")
    out.assumptions.append(note)
    return out


# How far below the checkpoint's own figure solving for vLLM's pool may take the weights. Largest
# falls the corpus needs: 5.9% (club-3090#446, an AutoRound export whose kept-16-bit parts are
# not all in its config); 0.7–1.0% for three others. Beyond 10% every case was a wrong model, card or
# setting (the 29.9–47.3% falls of vllm#33263's unnamed 24 GB card, OpenRLHF#336's 70B with no card).
WEIGHTS_FLOOR = 0.9


def anchor_to_pool(est: Estimate, pool: int, read: dict, reserved: bool = False) -> Estimate:
    """Make the model reproduce vLLM's printed KV pool by solving for the parts the paste did not state.

    The gap goes to the activation peak first (the least certain estimate), then to the weights
    (checkpoint details the config does not show), then to non-torch; a part never goes below 0, and
    the weights never below WEIGHTS_FLOOR of the checkpoint's own figure: a config that shows every
    tensor's shape leaves room for small details (a tied head, padding), not for a third of the model
    gone — vLLM's pool beside 8.23 of Llama-3.1-8B's 14.99 GiB is another model's, card's or setting's
    (a README's 70B run on four A6000s read as the 8B on its 3090). Each part moved is named in
    `assumptions`; if the gap cannot be closed, a check says so. `reserved`: the figure is 0.34's
    profile-run pool ("Available KV cache memory", Estimate.reserved_pool_bytes), not the KV cache's.
    """
    def kv(e: Estimate) -> int:
        return e.reserved_pool_bytes if reserved and e.reserved_pool_bytes is not None else e.kv_cache_bytes

    gap = kv(est) - pool          # > 0: vLLM had less KV than modelled → more non-KV
    bpb = max(est.layout.bytes_per_block, 1)
    if abs(gap) < bpb and kv(est) // bpb == pool // bpb:
        return est                           # already reproduced, to the block
    # less than a block apart but across a block boundary (a V0 block count printed beside its GiB):
    # the part moved is the rounding of the printed figures, not worth a note
    rounding = abs(gap) < bpb
    non_kv = est.non_kv_bytes
    if abs(gap) > 0.5 * max(non_kv, 1):
        # Half the non-KV memory unexplained: a different card, checkpoint or setting, not a detail.
        est.assumptions.append(f"vLLM's KV figure ({pool / GiB:.2f} GiB) and the model's ({kv(est) / GiB:.2f} "
                               "GiB) are too far apart to reconcile: check the GPU, model id and settings; the advice "
                               "starts from the model's own state")
        est.reconciliation.failed = True
        return est
    inputs = dict(est.inputs)
    moved: list[str] = []
    keys: list[str] = []
    for key in ("activation_bytes", "weights_bytes", "non_torch_bytes"):
        if not gap or read.get(key) is not None:
            continue
        current = getattr(est, key)
        new = max(int(WEIGHTS_FLOOR * current) if key == "weights_bytes" else 0, current + gap)
        gap -= new - current
        inputs[key] = new
        keys.append(key)
        moved.append(f"{key.replace('_bytes', '').replace('_', '-')} {current / GiB:.2f} → {new / GiB:.2f} GiB")
    if not moved:
        # every part was printed, each to 2 decimals (±0.005 GiB): the pool vLLM printed to the block
        # (or more finely than its parts) is met by moving the activation peak within that rounding
        # (vllm PR #12126: 71.30 − 19.86 − 36.63 − 0.16 GiB leaves 5,999 blocks; vLLM printed 6,001)
        key = "activation_bytes"
        if not gap or est.activation_bytes is None or abs(gap) > 3 * HALF_HUNDREDTH * GiB:
            return est
        inputs[key] = max(0, est.activation_bytes + gap)
        keys.append(key)
        out = estimate_with(est, inputs)
        out.reconciliation.solved = keys
        return out
    out = estimate_with(est, inputs)
    if est.reserved_pool_bytes is not None and not reserved and "activation_bytes" in keys:
        # 0.34+ (vllm.EXTENSIBLE_KV_CACHE_FROM): the activation peak is also in the headroom and, past
        # its floor, in the margin (0.75 of it) that warmup keeps free, so a byte of it can take up to
        # 1.75 from the KV cache: step along the pool's own slope (a secant) until it meets vLLM's
        prev = est
        for _ in range(4):
            left = out.kv_cache_bytes - pool
            moved_act = out.activation_bytes - prev.activation_bytes
            if abs(left) <= out.layout.bytes_per_block or not moved_act:
                break
            slope = (prev.kv_cache_bytes - out.kv_cache_bytes) / moved_act
            if slope <= 0:
                break
            prev = out
            inputs["activation_bytes"] = max(0, out.activation_bytes + int(left / slope))
            out = estimate_with(est, inputs)
        moved[0] = f"activation {est.activation_bytes / GiB:.2f} → {out.activation_bytes / GiB:.2f} GiB"
    out.reconciliation.solved = keys
    if abs(kv(out) - pool) <= max(out.layout.bytes_per_block, int(0.01 * pool)):
        if not rounding:
            out.assumptions.append("to reproduce the KV figure vLLM printed, the parts the paste does not state were "
                                   "solved for: " + "; ".join(moved))
        return out
    # Not even zero activation and non-torch memory leave room for vLLM's pool: the budget itself
    # (the card's size or gpu_memory_utilization) is not what was assumed. Keep the model's own
    # state (a table of zeros would explain nothing); `derive` says which number to check.
    est.assumptions.append(f"vLLM's KV figure ({pool / GiB:.2f} GiB) could not be reproduced by solving for the parts "
                           "the paste does not state; the table shows the model's own estimates")
    est.reconciliation.failed = True
    return est


def estimate_with(est: Estimate, inputs: dict, same_parts: bool = False) -> Estimate:
    """Re-run `est` on other inputs. What the diagnosis added to the first run (a derived card size)
    still holds for the re-run. So do the first run's notes on parts the re-run takes as measured or
    solved (how the modelled profile peak was made up) — unless `same_parts`: a re-run that models
    every part again (only the card size changed) says afresh all that still holds, and a note it
    drops (free memory against the other size) is stale."""
    from estimator.memory import EXTENSIBLE_NOTE, estimate

    out = estimate(est.spec, **inputs)
    out.params, out.gpu = est.params, est.gpu
    out.reconciliation.card_implied = est.reconciliation.card_implied
    stale = est.own_assumptions if same_parts else ()
    restated = any(EXTENSIBLE_NOTE in a for a in out.assumptions)     # its own arithmetic, redone
    out.assumptions += [a for a in est.assumptions if a not in out.assumptions and a not in stale
                        and not (restated and EXTENSIBLE_NOTE in a)]
    return out


def with_printed_total(est: Estimate, total: int) -> Estimate:
    """Re-run on the card size vLLM printed, where it differs from the card's beyond the printed
    figure's rounding (2 decimals): vLLM's own total is the better evidence (vllm#16570: an
    A100-PCIE-40GB printed 39.38 GiB; the catalog assumes the SXM4's 39.39). What the lookup
    assumed about the size goes."""
    if abs(total - est.gpu_total_bytes) <= PRINTED_SLACK * GiB:
        return est
    inputs = dict(est.inputs)
    inputs["gpu_total_bytes"] = total
    stale = getattr(est.gpu, "assumed", None)
    if stale:
        est.assumptions = [a for a in est.assumptions if a != stale]
    return estimate_with(est, inputs, same_parts=True)
