"""DeepSeek-V4's KV cache as vLLM plans it (model_type "deepseek_v4", DeepseekV4ForCausalLM).

Why a module of its own: a DeepSeek-V4 layer does not keep one cache but up to five — a compressed
latent cache (one row per 4 or per 128 tokens), a 128-token sliding-window cache, the compressor's
fp32 state, and for the 4× layers a lightning-indexer key cache with its own compressor state — and
vLLM packs them into one block pool with rules of their own that changed in almost every release
from 0.22 to 0.29. The per-request reservation of the windowed caches (window + the tokens in flight)
is several GiB and does not depend on the context length, so "GPU KV cache size" (concurrency ×
max_model_len) is not a storage count and the usual "bytes per token × tokens" answer is wrong by
orders of magnitude. Everything is per rank: the caches have one KV head and the indexer and
compressor are replicated, so tensor parallelism splits none of it.

Mirrors, per release (vllm/ of each wheel):
- models/deepseek_v4/attention.py (DeepseekV4Attention / DeepseekV4IndexerCache .get_kv_cache_spec,
  _resolve_dsv4_kv_cache_dtype), models/deepseek_v4/compressor.py (CompressorStateCache),
  v1/attention/backends/mla/sparse_swa.py (DeepseekV4SWACache: block 64, window = sliding_window),
  v1/kv_cache_interface.py (MLAAttentionSpec compress_ratio, 584-byte fp8_ds_mla rows,
  _apply_alignment_padding; SlidingWindowSpec max_admission_blocks_per_request),
- v1/core/kv_cache_utils.py: the DeepSeek-V4 grouping (_get_kv_cache_groups_uniform_groups with
  _approximate_gcd to 0.28, _get_packed_kv_cache_groups from 0.29), the pool's bytes per block
  (0.22 _get_kv_cache_config_deepseek_v4; 0.23–0.26 _bucket_layers_by_page_size; 0.27+
  _get_packed_kv_cache_layout, the largest group), get_max_concurrency_for_kv_cache_config (page-
  weighted to 0.26, a plain sum from 0.27), _max_memory_usage_bytes_from_groups (the "needed" figure)
  and _estimate_max_model_len_from_groups.
Checked against six real logs of 0.22–0.26 (2× GH200, 2× H20, 2× RTX PRO 6000): printed token
counts, concurrency, the "needed" figure and the estimated maximum length reproduced exactly (four of
them in tests/test_kv_deepseek_v4.py). The multi-module-MTP window extension of 0.28+ is in memory.estimate.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from estimator.spec import DeepseekV4Layer, SlidingWindow

# fp8_ds_mla (v1/kv_cache_interface.py, DeepSeek-V4): 448 B fp8 NoPE + 128 B bf16 RoPE + 8 B of
# UE8M0 scales per latent row, pages padded to FlashMLA's 576-byte packing.
DS_MLA_ROW_BYTES = 584
DS_MLA_ALIGN = 576
SWA_BLOCK = 64                  # DeepseekV4SWACache's own block size (sparse_swa.py), whatever --block-size
STATE_BLOCK = {4: 4, 128: 8}    # CompressorStateCache block per compress ratio (compressor.py)
DEFAULT_BLOCK = 256             # DeepseekSparseSWABackend.get_preferred_block_size, every release
DRAFT_LAYERS_DSPARK = 3         # DSpark drafter: getattr(config, "n_mtp_layers", None) or 3 (dspark.py)


@dataclass(frozen=True)
class Rules:
    """What one release does; see the module docstring for the functions each field mirrors."""

    plain_align: tuple[int | None, int | None, int | None]  # (main/SWA, indexer, state) padding without fp8_ds_mla
    packing: str            # "tuple" (0.22) | "bucket" (0.23–0.26) | "dense" (0.27+)
    pad_state_pages: bool   # window/state pages padded to the next latent page size (to 0.26)
    weighted: bool          # blocks per request weighted by page bytes (to 0.26) or a plain sum
    needed_tuple: bool      # the "needed" figure in layer-tuple bytes (to 0.28) or pool bytes
    packed_groups: bool     # 0.29+: _get_packed_kv_cache_groups
    stride_align: bool      # 0.32+: MLA specs MultipleOf(256): stride a multiple of the 256-token pages
    plain_ok: bool = True   # 0.22 asserts fp8 (fp8_ds_mla) only


def rules_for(version: tuple[int, int, int]) -> Rules:
    v = version
    if v < (0, 23, 0):
        return Rules((None, 576, 576), "tuple", True, True, True, False, False, plain_ok=False)
    if v < (0, 25, 0):
        return Rules((None, 576, None), "bucket", True, True, True, False, False)
    if v < (0, 27, 0):
        return Rules((512, 512, 512), "bucket", True, True, True, False, False)
    return Rules((512, 512, 512), "dense", False, False, v < (0, 29, 0), v >= (0, 29, 0), v >= (0, 32, 0))


@dataclass(frozen=True)
class Cache:
    """One cache a layer registers: a latent-style cache ("mla", block = --block-size) or a windowed
    one ("swa", its own block size and window)."""

    kind: str
    block: int
    page: int
    window: int = 0


def _round_up(x: int, a: int | None) -> int:
    return x if not a else -(-x // a) * a


def layer_caches(layers: list[DeepseekV4Layer], rules: Rules, block_size: int, ds_mla: bool,
                 elem_bytes: int) -> list[Cache]:
    """Every cache the given layers register, with page bytes as vLLM pads them."""
    if ds_mla:
        row, a_main, a_idx, a_state = DS_MLA_ROW_BYTES, DS_MLA_ALIGN, DS_MLA_ALIGN, DS_MLA_ALIGN
    else:
        a_main, a_idx, a_state = rules.plain_align
        row = 0
    out: list[Cache] = []
    for lk in layers:
        main_row = row or lk.head_dim * elem_bytes
        cr = lk.compress_ratio
        if cr == 4:
            # DeepseekV4IndexerCache: index_head_dim fp8 + one fp32 scale per 128 values, B/4 rows;
            # its compressor state: fp32, 2 × 2 × index_head_dim per row, block 4, window 8
            idx_row = lk.index_head_dim + lk.index_head_dim // 128 * 4
            out.append(Cache("mla", block_size, _round_up(block_size // 4 * idx_row, a_idx)))
            out.append(Cache("swa", 4, _round_up(4 * 4 * lk.index_head_dim * 4, a_state), 8))
        out.append(Cache("swa", SWA_BLOCK, _round_up(SWA_BLOCK * main_row, a_main), lk.window))
        if cr > 1:
            coff = 2 if cr == 4 else 1
            out.append(Cache("mla", block_size, _round_up(block_size // cr * main_row, a_main)))
            sb = STATE_BLOCK.get(cr, 8)
            out.append(Cache("swa", sb, _round_up(sb * 2 * coff * lk.head_dim * 4, a_state), coff * cr))
    return out


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """kv_cache_utils._approximate_gcd: the divisor ≥ lower_bound needing the least padding (ties:
    the larger)."""
    lo, hi = max(1, lower_bound), max(values)
    if lo > hi:
        return lo
    best, best_pad = lo, None
    for d in range(lo, hi + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


@dataclass
class Group:
    kind: str
    block: int
    window: int
    pages: list[int]

    @property
    def bytes(self) -> int:
        return sum(self.pages)

    def tuples(self) -> int:
        return max(Counter(self.pages).values())


def _by_page(caches: list[Cache], page_of) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for c in caches:
        p = page_of(c.page)
        out.setdefault(p, []).append(p)
    return out


def _split(d: dict[int, list[int]], n: int, kind: str, block: int, window: int) -> list[Group]:
    """Round-robin split of a bucket's layer tuples (one layer of each page size) into n groups."""
    tuples = list(zip(*d.values(), strict=True))
    return [Group(kind, block, window, [p for t in tuples[i::n] for p in t]) for i in range(n)]


def build_groups(caches: list[Cache], rules: Rules) -> list[Group]:
    full = [c for c in caches if c.kind == "mla"]
    buckets: dict[tuple[int, int], list[Cache]] = {}
    for c in caches:
        if c.kind == "swa":
            buckets.setdefault((c.block, c.window), []).append(c)
    latent = Group("mla", full[0].block, 0, [c.page for c in full])
    if not rules.packed_groups:
        # to 0.28: tuples of T layers, T the approximate gcd of the per-bucket layer counts
        counts = [latent.tuples()] + [max(Counter(c.page for c in cs).values()) for cs in buckets.values()]
        t = _approximate_gcd(counts, lower_bound=counts[0])
        full_pages = sorted(set(latent.pages))
        groups = [latent]
        for (block, window), cs in buckets.items():
            if rules.pad_state_pages:
                def page_of(p: int) -> int:
                    return min((x for x in full_pages if x >= p), default=p)
            else:
                def page_of(p: int) -> int:
                    return p
            d = _by_page(cs, page_of)
            n_per = max(len(v) for v in d.values())
            groups += _split(d, -(-n_per // t), "swa", block, window)
        return groups
    # 0.29+: balanced buckets split by the approximate gcd of their layer counts
    allb = [("mla", latent.block, 0, _by_page(full, int))] + \
        [("swa", b, w, _by_page(cs, int)) for (b, w), cs in buckets.items()]
    balanced = [len({len(v) for v in d.values()}) == 1 for *_, d in allb]
    min_rep = max((max(len(v) for v in d.values()) for (*_, d), ok in zip(allb, balanced, strict=True) if ok and len(d) > 1),
                  default=0)
    rep = _approximate_gcd([max(len(v) for v in d.values()) for (*_, d), ok in zip(allb, balanced, strict=True) if ok],
                           lower_bound=min_rep) if min_rep else None
    groups = []
    for (kind, block, window, d), ok in zip(allb, balanced, strict=True):
        n = -(-max(len(v) for v in d.values()) // rep) if ok and rep else 1
        groups += [Group(kind, block, window, [p for v in d.values() for p in v])] if n == 1 else \
            _split(d, n, kind, block, window)
    return groups


def bytes_per_block(groups: list[Group], rules: Rules, layers: list[DeepseekV4Layer], block_size: int,
                    ds_mla: bool, elem_bytes: int) -> int:
    """The pool's stride: bytes one block id costs across every group (num_blocks = pool // this)."""
    if rules.packing == "tuple":
        return max(g.tuples() for g in groups) * sum(set(groups[0].pages))
    if rules.packing == "bucket":
        need: Counter = Counter()
        for g in groups:
            for p, n in Counter(g.pages).items():
                need[p] = max(need[p], n)
        return sum(p * n for p, n in need.items())
    bpb = max(g.bytes for g in groups)
    if rules.stride_align:
        kernel = 256 if block_size % 256 == 0 else block_size
        if kernel != block_size:
            small = [c.page for c in layer_caches(layers, rules, kernel, ds_mla, elem_bytes) if c.kind == "mla"]
            bpb = _round_up(bpb, math.lcm(*small))
    return bpb


@dataclass
class Plan:
    """The layout on one rank: the groups (their block sizes and windows), the pool's stride, the
    bytes one block costs in the admission check, and how blocks per request are counted."""

    groups: list[Group]
    bytes_per_block: int
    needed_block_bytes: int
    weighted: bool
    ds_mla: bool

    @property
    def latent_bytes_per_token(self) -> int:
        """Marginal KV per token of context: the latent group's page bytes per block token."""
        return self.groups[0].bytes // self.groups[0].block


def draft_layers(spec, method: str | None) -> int:
    """SWA-only layers a speculative drafter adds (each one DeepseekV4SWACache): the checkpoint's MTP
    layers for MTP (num_nextn_predict_layers; k adds none), three for DSpark."""
    m = (method or "").lower()
    if m.endswith("mtp"):
        return int((spec.text or {}).get("num_nextn_predict_layers") or 0)
    if m == "dspark":
        return int((spec.text or {}).get("n_mtp_layers") or DRAFT_LAYERS_DSPARK)
    return 0


def plan(layers: list[DeepseekV4Layer], version: tuple[int, int, int], block_size: int | None,
         kv_cache_dtype: str, draft: int, assumptions: list[str]) -> Plan:
    """vLLM's DeepSeek-V4 block pool for these layers (one rank or pipeline stage) plus `draft`
    speculative layers (each keeps only a sliding-window cache)."""
    rules = rules_for(version)
    dtype = (kv_cache_dtype or "auto").lower()
    # _resolve_dsv4_kv_cache_dtype: the default backends (FlashMLA; FlashInfer on SM120) take only the
    # fp8_ds_mla layout — any fp8 flag becomes it — and assert on anything else; bf16 rows need the
    # opt-in FLASHINFER_MLA_SPARSE_DSV4 backend on SM100 (and 0.22 has no bf16 rows at all)
    ds_mla = dtype.startswith("fp8") or dtype == "auto" or not rules.plain_ok
    elem = 1 if dtype.startswith("fp8") else 2
    if dtype == "auto":
        assumptions.append("DeepSeek-V4: vLLM's default attention backends need --kv-cache-dtype fp8 (they stop "
                           "on 'auto'); modelled with fp8 (fp8_ds_mla, 584 B per latent row)")
    elif not ds_mla:
        assumptions.append(f"DeepSeek-V4 with a {dtype} KV cache: plain rows, which only the FlashInfer sparse "
                           "backend on SM100 (FLASHINFER_MLA_SPARSE_DSV4) takes; the default backends stop on it")
    if version < (0, 22, 0):
        assumptions.append("DeepSeek-V4's KV planning before vLLM 0.22 is modelled with 0.22's rules")
    bs = block_size or DEFAULT_BLOCK
    extra = [DeepseekV4Layer(compress_ratio=1, head_dim=layers[0].head_dim, index_head_dim=layers[0].index_head_dim,
                             window=layers[0].window)] * draft if layers else []
    caches = layer_caches(list(layers) + extra, rules, bs, ds_mla, elem)
    groups = build_groups(caches, rules)
    bpb = bytes_per_block(groups, rules, list(layers), bs, ds_mla, elem)
    needed = max(g.tuples() for g in groups) * sum(set(groups[0].pages)) if rules.needed_tuple else bpb
    return Plan(groups, bpb, needed, rules.weighted, ds_mla)


def blocks_per_request(p: Plan, length: int, in_flight: int, extra_tokens: int = 0) -> int:
    """Blocks one request of `length` tokens reserves: the latent group the whole context, each windowed
    group its window + the tokens in flight (SlidingWindowSpec.max_admission_blocks_per_request); to
    0.26 the groups' counts are weighted by their bytes per block against the latent group's."""
    counts = [group_blocks(g, length, in_flight, extra_tokens) for g in p.groups]
    if p.weighted:
        return -(-sum(n * g.bytes for n, g in zip(counts, p.groups, strict=True)) // p.groups[0].bytes)
    return sum(counts)


def group_blocks(g: Group, length: int, in_flight: int, extra_tokens: int = 0) -> int:
    if g.kind == "mla":
        return -(-length // g.block)
    return -(-min(g.window - 1 + extra_tokens + in_flight, length) // g.block) + 1


def window_spec(g: Group) -> SlidingWindow:
    """A stand-in layer for a windowed group (its window), as kv_layout.KVGroup expects one."""
    return SlidingWindow(kv_heads=1, head_dim=1, window=g.window)
