"""vLLM version profiles and engine settings.

Why profiles: the same KV number is computed differently in each vLLM era (budget formula,
reported capacity, defaults). Code asks the profile (`profile_for(version, engine)`), never
`if version < …` scattered around. Era boundaries come from ../shared/docs/vllm-memory.md
(read from the released wheels: vllm/worker/worker.py, vllm/v1/worker/gpu_worker.py,
vllm/v1/core/kv_cache_utils.py, vllm/engine/arg_utils.py, vllm/config/*.py).
"""

from __future__ import annotations

import calendar
import dataclasses
import functools
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources

from estimator.errors import BadInput
from estimator.flags import EXPANDABLE_SEGMENTS, human_int, parse_bool

NEWEST = "0.34.0"
# what people write for the newest release or a build of main instead of a number
NEWEST_WORDS = ("latest", "nightly", "main")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


# Every vLLM release on PyPI with the day its first file was uploaded (https://pypi.org/pypi/vllm/json,
# `upload_time`). Why: a thread's date bounds the version its author can have run — a post from July
# 2025 did not run 0.27 — and most pastes never say the version.
RELEASES: tuple[tuple[str, str], ...] = (
    ("0.0.1", "2023-06-19"),
    ("0.1.0", "2023-06-20"),
    ("0.1.1", "2023-06-22"),
    ("0.1.2", "2023-07-05"),
    ("0.1.3", "2023-08-02"),
    ("0.1.4", "2023-08-25"),
    ("0.1.5", "2023-09-08"),
    ("0.1.6", "2023-09-08"),
    ("0.1.7", "2023-09-11"),
    ("0.2.0", "2023-09-28"),
    ("0.2.1", "2023-10-16"),
    ("0.2.2", "2023-11-19"),
    ("0.2.3", "2023-12-03"),
    ("0.2.4", "2023-12-11"),
    ("0.2.5", "2023-12-14"),
    ("0.2.6", "2023-12-17"),
    ("0.2.7", "2024-01-04"),
    ("0.3.0", "2024-01-31"),
    ("0.3.1", "2024-02-17"),
    ("0.3.2", "2024-02-21"),
    ("0.3.3", "2024-03-01"),
    ("0.4.0", "2024-03-31"),
    ("0.4.1", "2024-04-24"),
    ("0.4.2", "2024-05-05"),
    ("0.4.3", "2024-06-01"),
    ("0.5.0", "2024-06-11"),
    ("0.5.1", "2024-07-06"),
    ("0.5.2", "2024-07-15"),
    ("0.5.3", "2024-07-23"),
    ("0.5.4", "2024-08-05"),
    ("0.5.5", "2024-08-23"),
    ("0.6.0", "2024-09-05"),
    ("0.6.1", "2024-09-11"),
    ("0.6.2", "2024-09-25"),
    ("0.6.3", "2024-10-14"),
    ("0.6.4", "2024-11-15"),
    ("0.6.5", "2024-12-18"),
    ("0.6.6", "2024-12-27"),
    ("0.7.0", "2025-01-27"),
    ("0.7.1", "2025-02-01"),
    ("0.7.2", "2025-02-06"),
    ("0.7.3", "2025-02-20"),
    ("0.8.0", "2025-03-18"),
    ("0.8.1", "2025-03-19"),
    ("0.8.2", "2025-03-25"),
    ("0.8.3", "2025-04-06"),
    ("0.8.4", "2025-04-15"),
    ("0.8.5", "2025-04-28"),
    ("0.9.0", "2025-05-28"),
    ("0.9.0.1", "2025-05-30"),
    ("0.9.1", "2025-06-10"),
    ("0.9.2", "2025-07-08"),
    ("0.10.0", "2025-07-25"),
    ("0.10.1", "2025-08-19"),
    ("0.10.1.1", "2025-08-20"),
    ("0.10.2", "2025-09-13"),
    ("0.11.0", "2025-10-04"),
    ("0.11.1", "2025-11-19"),
    ("0.11.2", "2025-11-20"),
    ("0.12.0", "2025-12-03"),
    ("0.13.0", "2025-12-19"),
    ("0.14.0", "2026-01-20"),
    ("0.14.1", "2026-01-24"),
    ("0.15.0", "2026-01-29"),
    ("0.15.1", "2026-02-05"),
    ("0.16.0", "2026-02-26"),
    ("0.17.0", "2026-03-07"),
    ("0.17.1", "2026-03-11"),
    ("0.18.0", "2026-03-20"),
    ("0.18.1", "2026-03-31"),
    ("0.19.0", "2026-04-03"),
    ("0.19.1", "2026-04-18"),
    ("0.20.0", "2026-04-27"),
    ("0.20.1", "2026-05-03"),
    ("0.20.2", "2026-05-10"),
    ("0.21.0", "2026-05-15"),
    ("0.22.0", "2026-05-29"),
    ("0.22.1", "2026-06-05"),
    ("0.23.0", "2026-06-13"),
    ("0.24.0", "2026-06-30"),
    ("0.25.0", "2026-07-11"),
    ("0.25.1", "2026-07-14"),
    ("0.26.0", "2026-07-25"),
    ("0.27.0", "2026-08-10"),
    ("0.27.1", "2026-08-11"),
    ("0.28.0", "2026-08-26"),
    ("0.29.0", "2026-09-09"),
    ("0.30.0", "2026-09-22"),
    ("0.31.0", "2026-10-05"),
    ("0.32.0", "2026-10-18"),
    ("0.33.0", "2026-11-02"),
    ("0.34.0", "2026-11-16"),
)


def is_main_build(text: str | None) -> bool:
    """A build without a release number: '0.1.dev19754+g3a0914114' (setuptools-scm's fallback for a
    checkout without tags) or '0.0.0+local' (a version pretended for a source tree without git:
    setup.py's VLLM_VERSION_OVERRIDE / SETUPTOOLS_SCM_PRETEND_VERSION). vLLM's first release is 0.0.1
    (RELEASES), so neither names one; the build carries main's code of its day."""
    return bool(text) and re.match(r"\s*v?0\.(?:1\.dev\d|0\.0(?!\d))", str(text)) is not None


# "0.20.1rc1.dev23+gde3da0b97": setuptools-scm's name for main N commits after the x.y.(z)rc0 tag
_PATCH_RC_DEV = re.compile(r"\s*v?(\d+)\.(\d+)\.(\d+)rc\d+\.dev\d+")


def branched_release(text: str | None) -> str | None:
    """The release a main build named 'x.y.(z)rc1.devN' carries the code of: x.y.(z−1), from whose branch
    point the rc0 tag dates — not the patch release cut later on that branch (a GB10 log of
    0.20.1rc1.dev23 prints 0.20.0's "GPU KV cache size", before 0.20.1's vllm#40691). None otherwise."""
    m = _PATCH_RC_DEV.match(str(text or ""))
    if not m or int(m.group(3)) < 1:
        return None
    return f"{m.group(1)}.{m.group(2)}.{int(m.group(3)) - 1}"


def build_name(text: str) -> str:
    """'0.18.2rc1.dev73+gdb7a17ecc' → '0.18.2rc1.dev73': a build's version without its local part (the commit)."""
    return str(text).strip().split("+")[0]


def branched_build_note(build: str, base: str) -> str:
    """What a reply says of a main build it models as the release it branched after (branched_release)."""
    return f"vLLM {build} is a build of main from after {base} branched: modelled as {base}"


def next_minor_release(release: str) -> str | None:
    """The first x.(y+1) release after `release` x.y.z: the branch that ends the main builds named after x.y."""
    v = parse_version(release)[:2]
    later = [name for name, _published in RELEASES if parse_version(name)[:2] > v]
    return min(later, key=parse_version) if later else None


def next_release(release: str) -> str | None:
    """The release after `release` in RELEASES (None after the newest, or for a name not in it)."""
    names = [v for v, _published in RELEASES]
    i = names.index(release) if release in names else len(names)
    return names[i + 1] if i + 1 < len(names) else None


def release_after(day: str | None) -> str | None:
    """The first release published after `day`: the one that shipped main as it was on that day
    (None when no release came later: main then is newer than every profile, i.e. NEWEST)."""
    then = release_at(day)
    return next_release(then) if then else None


def release_day(version: str | None) -> str | None:
    """The day `version` (or the first release at or after it) was published, ISO."""
    want = parse_version(version) if version else None
    if want is None:
        return None
    return next((published for v, published in RELEASES if parse_version(v) >= want), None)


def version_text(version: tuple[int, ...]) -> str:
    """(0, 28, 0) → "0.28.0", as vLLM spells a release."""
    return ".".join(map(str, version))


def last_release_before(version: tuple[int, int, int]) -> str | None:
    """The newest release older than `version` (the last one that still had what `version` dropped)."""
    older = [v for v, _published in RELEASES if parse_version(v) < version]
    return max(older, key=parse_version) if older else None


def removed_quant_method(weight_kind: str, version: tuple[int, int, int]) -> tuple[str, tuple[int, int, int]] | None:
    """(vLLM's method name, the release that dropped it) when `version` cannot load weights of this
    kind (params.weight_format_kind), else None."""
    method = {"bnb4": "bitsandbytes", "bnb8": "bitsandbytes", "gguf": "gguf"}.get(weight_kind)
    if method and version >= QUANT_METHOD_REMOVED[method]:
        return method, QUANT_METHOD_REMOVED[method]
    return None


@functools.cache
def _registry_spans() -> dict[str, tuple[str, str | None]]:
    """estimator/data/vllm_architectures.json (built by bench/registry_table.py from each release's
    vllm/model_executor/models/registry.py, or models/__init__.py and model_loader.py before it): the
    first and last release whose model registry lists an architecture, the last None while listed."""
    text = resources.files("estimator").joinpath("data/vllm_architectures.json").read_text(encoding="utf-8")
    return {name: (span[0], span[1]) for name, span in json.loads(text)["architectures"].items()}


def registry_span(architecture: str) -> tuple[str, str | None] | None:
    """(first, last or None) release whose registry lists `architecture`; None for a name no release
    lists (a remote-code or Transformers-only model, a typo): then nothing is claimed about it."""
    return _registry_spans().get(architecture)


def release_serving(architecture: str, version: tuple[int, int, int]) -> str | None:
    """The release nearest `version` whose registry lists `architecture` — its first when `version` is
    older, its last when `version` came after vLLM dropped it — or None when `version` lists it or the
    name is unknown."""
    span = registry_span(architecture)
    if span is None:
        return None
    if version < parse_version(span[0]):
        return span[0]
    if span[1] is not None and version > parse_version(span[1]):
        return span[1]
    return None


def unlisted_architecture_note(architecture: str, version: tuple[int, int, int], release: str,
                               build: str | None = None) -> str | None:
    """What to tell a user whose release cannot run the model natively: vLLM looks the config's
    architectures up in its registry (vllm/model_executor/models/registry.py ModelRegistry) and, from
    0.7.2 — the first release whose registry has TransformersModel — falls back to the Transformers
    implementation when none is listed (model_loader/utils.py get_model_architecture:
    `not is_vllm_supported` → resolve_transformers_fallback; 0.7.1 has no such branch), a backend whose
    memory kvdoctor does not model; before that the registry refuses the model. A main `build` modelled
    as `release` carries main's code up to the next minor release's branch, so a model first listed by
    that release may already be in it (vllm#40002 served Gemma 4 on 0.18.2rc1.dev73, modelled as 0.18.1)."""
    nearest = release_serving(architecture, version)
    if nearest is None:
        return None
    first, last = _registry_spans()[architecture]
    until = next_minor_release(release) if build else None
    if until and version < parse_version(nearest) <= parse_version(until):
        return (f"vLLM {build}, a build of main from between {release} and {until}, may already have vLLM's own "
                f"implementation of {architecture} (its model registry lists it from {first}): the figures apply "
                f"{release}'s memory accounting to it")
    when = f"from {first}" if parse_version(nearest) > version else f"from {first} to {last}"
    how = ("it would run only through its Transformers backend, if transformers has the model, and that backend's "
           "memory is not modelled here" if version >= parse_version(_registry_spans()["TransformersModel"][0])
           else "it refuses the model (\"Model architectures … are not supported\")")
    return (f"vLLM {release} does not list {architecture} in its model registry (listed {when}): {how}; the "
            f"figures apply {release}'s memory accounting to vLLM's own implementation of the model")


def iso_day(day: str | None) -> str | None:
    """'2025-07-22', an ISO timestamp or a month ('2025-07', read as its last day) → 'YYYY-MM-DD'."""
    m = re.match(r"\s*(\d{4})-(\d{2})(?:-(\d{2}))?", str(day or ""))
    if not m:
        return None
    if m.group(3):
        return f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    return f"{m.group(1)}-{m.group(2)}-{calendar.monthrange(int(m.group(1)), int(m.group(2)))[1]:02d}"


def release_at(day: str | None) -> str | None:
    """The newest release published on or before `day` ('2025-07-22', '2025-07', an ISO timestamp)."""
    key = iso_day(day)
    if not key:
        return None
    newest = None
    for version, published in RELEASES:
        if published <= key:
            newest = version
    return newest


_SERIES = re.compile(r"^\s*v?(\d+)\.(\d+)\.(?:x|\*)\s*$", re.I)


def series_release(text: str | None, day: str | None = None) -> str | None:
    """A version stated as a series ("0.8.x", "0.10.*"): its newest release published by `day` (the
    post's date), else the series' newest; None when `text` is no series or the series has no release
    (by that day)."""
    m = _SERIES.match(str(text or ""))
    if not m:
        return None
    key, prefix = iso_day(day) if day else None, (int(m.group(1)), int(m.group(2)))
    found = [v for v, published in RELEASES if parse_version(v)[:2] == prefix and (not key or published <= key)]
    return found[-1] if found else None


def parse_version(text: str | None) -> tuple[int, int, int]:
    """'0.8.5.dev169+gce17db808' → (0, 8, 5). Builds without a release number ('0.1.dev2…', '0.0.0+local')
    count as newest, and so do the words people use for them or for the newest release ("latest",
    "nightly", "main")."""
    if not text or str(text).strip().lower() in NEWEST_WORDS:
        return parse_version(NEWEST)
    m = _VERSION.search(str(text))
    if not m:
        raise BadInput(f"cannot read vLLM version {_shown(str(text))!r} (expected e.g. 0.7.3)")
    v = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    if v < (0, 2, 0) and "dev" in str(text) or is_main_build(str(text)):
        return parse_version(NEWEST)        # a build without a release number
    return v


@dataclass(frozen=True)
class Profile:
    """What one vLLM era does with memory. Fields are rules, not numbers for one model."""

    era: str
    version: tuple[int, int, int]
    engine: str                      # "v0" | "v1"
    budget_rule: str                 # see memory.estimate
    default_utilization: float
    cuda_graphs_budgeted: bool       # graph memory subtracted before KV sizing (V1 0.20+)
    reserved_block: bool             # one null block subtracted in the admission check (0.29+)
    capacity_rule: str               # "v0" | "v1_blocks" | "v1_groups" | "v1_concurrency"
    hybrid_manager: bool             # per-type KV groups (0.9.1+)
    sliding_spec: bool               # sliding layers get their own spec (V1 0.8.3+)
    chunked_local_spec: bool         # chunked-local layers keep their own spec
    yarn_scales_max_len: bool        # rope yarn factor multiplies derived max len (≤0.29)
    requested_ceil: bool             # requested memory = ceil(T × u) (0.14+)
    context_in_non_torch: bool       # CUDA context + other processes charged (0.6.4 V0, V1 ≤0.9.0)
    free_memory_check: bool          # startup check free ≥ T × u (V1 0.9.1+)
    auto_max_model_len: bool         # --max-model-len auto / -1 (0.14+)
    logits_all_tokens: bool          # V1 0.7.0–0.7.2 computes logits for all Tb tokens
    mla_cache: bool                  # MLA latent cache (0.7.1+); before, K and V per head
    # MLA decode matrices precomputed at load (VLLM_MLA_PERFORM_MATRIX_ABSORPTION, 0.7.1–0.7.3;
    # vllm/attention/backends/mla/utils.py, gone in 0.8.0): params._mla_absorb_bytes
    mla_matrix_absorption: bool
    # a RoPE cos/sin cache in every attention layer (0.2.0–0.2.2 rotary_embedding.py; from 0.2.3
    # get_rope's _ROPE_DICT shares one per setup)
    rope_cache_per_layer: bool
    needed_rule: str                 # admission need: "v0" | "layers" (0.7–0.13) | "first_group" (0.14–0.18) | "groups"
    kv_memory_flag: bool             # --kv-cache-memory-bytes exists (0.10.2+)
    pp_global_check: bool            # 0.14.0–0.16.x: admission check over ALL PP stages' layers
    # Model Runner V2's graphs: `profile_cudagraph_memory()` answers 0 in its releases 0.22–0.28
    # (v1/worker/gpu/model_runner.py, "It is TBD whether we keep this API"), so the KV cache is sized
    # before the graphs and they are captured on top of it; 0.29 estimates them like V1
    # (`_profile_cudagraph_memory`). (Derivative 0.26.1 builds that print "Estimated MRV2 CUDA graph
    # memory" carry the later code.)
    v2_runner_budgets_graphs: bool
    # sliding-window / chunked-local requests reserve for every batch in flight (async scheduling,
    # PP), not one max_num_batched_tokens: vllm/v1/kv_cache_interface.py 0.26.0 (0.25.0 uses Tb)
    window_in_flight: bool = False
    # What the fixes may use. --kv-cache-dtype fp8 (e5m2) came with vllm PR #2279, in 0.3.0
    # (2024-01-31). --quantization fp8 (dynamic W8A8, CUTLASS) came in 0.4.1 and needs compute
    # capability 8.9 (Ada/Hopper); the FP8 Marlin weight-only path opened it to Ampere (8.0) in 0.5.1.
    fp8_kv_cache: bool = True
    fp8_weights_min_cc: float | None = 8.0
    chunked_prefill_flag: bool = True    # --enable-chunked-prefill exists (V0 0.4.0+)

    @property
    def release(self) -> str:
        """The version as vLLM spells it ("0.6.4")."""
        return version_text(self.version)


# V1's dummy sampler per (row × vocab) element by implementation: FlashInfer's kernel, or the
# PyTorch-native top-k/top-p that sorts the vocabulary or, from 0.17, masks it (each value's evidence
# beside it). A log that names the sampler ("Using FlashInfer for top-p & top-k sampling." / "Falling
# back to the PyTorch-native implementation") picks one before 0.21 (sampler_bytes). FlashInfer's: ≤ 8 B
# where a 0.8.5 image (vllm#17327) and a 0.10.1 run named it (they left ≤ 0.3 GiB for 256 rows × 151,936,
# where the native 38 B would take 1.38 GiB); 10 B kept.
SAMPLER_BYTES_FLASHINFER = 10
# V0 runs the full sampler (fp32 upcast, sort, softmax, cumsum, log_softmax, multinomial): ≈ 40 B per
# row × vocab element (docs §6: 256 × 152,064 × 40 B = 1.45 GiB vs 1.42 GiB measured in vllm#13882;
# dev vllm15815 35 B, vllm10511 41 B).
SAMPLER_BYTES_V0 = 40
# V1 samples in the profile run from 0.8 (before, only the logits count: activation.activation_peak)
V1_SAMPLER_PROFILED_FROM = (0, 8, 0)
# The native path's peak, element by element (v1/sample/sampler.py + ops/topk_topp_sampler.py): the
# bf16 logits (2) the caller still holds, their fp32 copy (4), sort's values (4) and int64 indices
# (8), and while it sorts its own int64 index input (8) and radix-sort double buffers (4 + 8) = 38 B.
# Measured: gpt-oss (1,024 rows × 201,088 vocab, H100) peaks at 7.35–7.38 GiB in four runs — llm-d's
# empirical table (120b and 20b alike: 7.38), vllm#23278 (0.10.1) and vllm#27508 (0.11.0) solved
# from their pools — i.e. 38.3–38.5 B per element.
SAMPLER_BYTES_NATIVE = 38
# From 0.17 the native path masks top-k/top-p with a Triton kernel in place for batches of 8 or more
# (v1/sample/ops/topk_topp_triton.py), no sort: the bf16 logits (2), their fp32 copy (4), the softmax
# probs (4) and the exponential noise (4) = 14 B by the code (0.17–0.26 alike). Logs of 0.17–0.20
# agree: TheBuccaneer/vllm-offload-profiles on 0.17.1 (RTX 3090, 256 rows) leaves 0.49 GiB for
# Llama-3.1-8B (128,256 vocab) and 0.59 for Qwen2.5-7B (152,064) beside 0.15 of non-torch, ≈ 16 B;
# tokenkaki's Qwen3-8B on 0.19.1 fits 14 B within 0.2 GiB where 29 B leaves 0.4 too little.
SAMPLER_BYTES_TRITON = 14
# From 0.21 (NATIVE_WARMED_TOO_FROM) the dummy sampler runs twice: FlashInfer's or the native path, then
# the native one again with a generator (gpu_model_runner.py "Also warm forward_native"); the second
# call's temporaries come after the first's are freed, so the peak stays near the code's 14 B. Seven
# V1-runner logs of 0.21–0.26 whose pool rests on the sampler solve to 14.6–18.3 B (median 16.4): an
# A5000 Qwen3-8B (0.21), two L4 spell-check runs (Gemma 3 4B, Gemma 4 E2B; 0.21), an H100 Qwen3.6-27B-FP8
# at 1,024 rows (0.23), an MI300X Gemma 3 4B (0.23), an L40S Gemma 4 26B (0.25.1) and an 80 GB
# Qwen3.5-35B-A3B at TP 4 (0.26). This was 29 B, taken from akiyax/kvcache-lab's 0.26 log,
# which ran on Model Runner V2 (its own sampler: v2_sampler_bytes).
SAMPLER_BYTES_TRITON_WARMED = 16
# The sampler each release runs on CUDA by default (v1/sample/ops/topk_topp_sampler.py, envs.py):
# FlashInfer's when importable up to 0.11.0 (VLLM_USE_FLASHINFER_SAMPLER unset "means True"), the
# native one 0.11.1–0.20 (FlashInfer opt-in: unset reads as None; read in 0.11.1 and 0.11.2),
# FlashInfer again from 0.21 (unset = True) — but from 0.21 the profile run's dummy sampler also warms
# the native path (a second call with a generator, gpu_model_runner.py "Also warm forward_native"), so
# its peak is the native one whatever the sampler: FlashInfer's 10 B only counts before 0.21.
NATIVE_WARMED_TOO_FROM = (0, 21, 0)
TRITON_TOPK_TOPP_FROM = (0, 17, 0)
TRITON_ANY_BATCH_FROM = (0, 30, 0)     # before, the Triton masking only for batches of 8 rows or more


def native_sampler_bytes(version: tuple, rows: int = 8) -> int:
    """Per row × vocab element of the PyTorch-native top-k/top-p sampler in this release."""
    if version >= TRITON_TOPK_TOPP_FROM and (rows >= 8 or version >= TRITON_ANY_BATCH_FROM):
        return SAMPLER_BYTES_TRITON_WARMED if version >= NATIVE_WARMED_TOO_FROM else SAMPLER_BYTES_TRITON
    return SAMPLER_BYTES_NATIVE


# Model Runner V2's dummy sampler (v1/worker/gpu/model_runner.py _dummy_sampler_run), per row × vocab
# element, by the code of gpu/sample/sampler.py: the logits in the model dtype (2 B) and, where
# apply_sampling_params copies them to fp32 for the dummy batch, that copy (4 B): 0.22–0.25 copy always,
# 0.26 works in place, 0.27–0.32 return early when no request needs processing (a dummy batch does
# not); 0.33 adds a warm-up pass with every sampling parameter set (SamplingParams.for_sampler_warmup):
# the fp32 copy and top-k/top-p's probabilities (4 B). Under tensor parallelism the logits are gathered
# (distributed all_gather: the rank's shard, the gathered buffer and its reordered copy, 4 + 2/tp B).
V2_SAMPLER_IN_PLACE_FROM = (0, 26, 0)
V2_SAMPLER_WARMUP_FROM = (0, 33, 0)


def v2_sampler_bytes(version: tuple, tp: int) -> float:
    """Model Runner V2's dummy-sampler bytes per row × vocab element (see above)."""
    if version >= V2_SAMPLER_WARMUP_FROM:
        own = 2 + 4 + 4
    elif version >= V2_SAMPLER_IN_PLACE_FROM:
        own = 2
    else:
        own = 2 + 4
    return max(own, 4 + 2 / tp if tp > 1 else 0)


# The official image (vllm/vllm-openai) installs FlashInfer (docker/Dockerfile: 0.8.x the
# 0.2.1.post2 wheel, 0.9.0 0.2.5, 0.9.2 0.2.6.post1 — x86_64 only, `TARGETPLATFORM != linux/arm64`
# —, then built from source for every platform from 0.10.0: v0.2.8rc1 … v0.3.1 in 0.11.0); a pip
# install leaves it out (setup.py's optional "flashinfer" extra). V1's top-k/top-p sampler uses
# it when importable until 0.11.1 made it opt-in (v1/sample/ops/topk_topp_sampler.py: 0.8.x while
# FlashInfer < 0.2.3, 0.9.0–0.11.0 from 0.2.3 — the image's own version each time). So an image
# run of 0.8.0–0.11.0 samples with FlashInfer unless the log names another sampler.
IMAGE_FLASHINFER_FROM = {"x86_64": (0, 8, 0), "arm64": (0, 10, 0)}
FLASHINFER_SAMPLER_OPT_IN_FROM = (0, 11, 1)
FLASHINFER_SAMPLER_ANY_FROM = (0, 9, 0)     # from here any importable FlashInfer (≥ 0.2.3) samples
# Cards that sit beside an Arm CPU (Grace, DGX Spark, Jetson): their image is the arm64 one
ARM64_HOST_CARDS = ("GH200", "GB200", "GB300", "GB10", "Jetson")


def image_flashinfer_sampler(version: tuple, gpu_name: str) -> bool:
    """Whether vLLM's official image of this release samples with FlashInfer on this card (above)."""
    arch = "arm64" if any(k in gpu_name for k in ARM64_HOST_CARDS) else "x86_64"
    return IMAGE_FLASHINFER_FROM[arch] <= version < FLASHINFER_SAMPLER_OPT_IN_FROM


def installed_flashinfer_sampler(p: Profile, s: EngineSettings, gpu_name: str) -> str | None:
    """Why V1 samples with FlashInfer in a run whose log does not name its sampler, or None: the
    official image installs it (`image_flashinfer_sampler`), or the FlashInfer attention backend ran,
    so it is importable — 0.9.0–0.11.0 sample with any FlashInfer (0.8.x only with one below 0.2.3,
    which a log does not show)."""
    from estimator.attention_backend import FLASHINFER  # (it imports this module)

    if s.flashinfer_sampler is not None or p.engine != "v1" or p.version < V1_SAMPLER_PROFILED_FROM:
        return None
    if s.official_image and image_flashinfer_sampler(p.version, gpu_name):
        return (f"vLLM's docker image of {p.release} installs FlashInfer, and V1 samples with its top-k/top-p "
                "kernel when it is there (no sort of the vocabulary: a smaller profile peak than a pip install's) "
                "— a log line naming the sampler would say otherwise")
    if s.attention_backend == FLASHINFER and FLASHINFER_SAMPLER_ANY_FROM <= p.version < FLASHINFER_SAMPLER_OPT_IN_FROM:
        return (f"the FlashInfer attention backend ran, so FlashInfer is installed, and vLLM {p.release} then "
                "samples with its top-k/top-p kernel (a smaller profile peak than the PyTorch-native sampler's)")
    return None


def sampler_bytes(version: tuple, flashinfer: bool | None, rows: int) -> int:
    """V1's dummy-sampler bytes per row × vocab element: FlashInfer's where it runs alone (before
    0.21, installed up to 0.11.0 or opted in 0.11.1–0.20), else the native path's."""
    # unnamed (None): up to 0.11.0 FlashInfer runs only where installed — the native peak is the cautious one
    if version < NATIVE_WARMED_TOO_FROM and flashinfer:
        return SAMPLER_BYTES_FLASHINFER
    return native_sampler_bytes(version, rows)


# What V0 subtracted from the budget before 0.4 (vllm/worker/worker.py in the wheels): up to 0.2.4
# torch.cuda.max_memory_allocated() after the profile run — torch's own tensors only, no CUDA
# context, NCCL or other processes; 0.2.5–0.3.0 total − free from torch.cuda.mem_get_info() (vllm
# PR #2031: everything on the card, this process's context and other processes included); from 0.3.1
# the free memory at start minus the free memory after profiling (init_gpu_memory), as in 0.4–0.6.3.
V0_TOTAL_FREE_FROM = (0, 2, 5)
V0_INIT_FREE_FROM = (0, 3, 1)

# The first release per engine whose budget no longer charges other processes' memory to this
# instance (0.6.5's memory_profiling, 0.9.1's V1 worker): Profile.context_in_non_torch ends here.
OTHERS_OWN_SHARE_FROM = {"v0": (0, 6, 5), "v1": (0, 9, 1)}

# From 0.34 vLLM sizes the KV cache after warmup and CUDA-graph capture from the memory it then measures,
# the "extensible KV cache" (vllm/config/cache.py enable_extensible_kv_cache: on by default on CUDA and
# ROCm, off with --kv-cache-memory-bytes or --num-gpu-blocks-override; read in the 0.34.0 wheel). The
# profile run still gives the estimate-phase pool, printed as "Available KV cache memory" and used to
# reserve address space for that many blocks; after warmup v1/worker/extensible_kv_cache.py
# measure_kv_cache_bytes commits
#     min(requested − used, free + committed − margin) − headroom
# where used is what the instance holds beside the KV cache (weights, non-torch memory, the captured
# graphs), headroom the profiled transient peak plus the CUDA-graph estimate (gpu_worker.py
# peak_activation_memory, raised by a larger warmup peak) and margin max(KV_MARGIN_FLOOR, 0.75 ×
# headroom); the committed blocks never exceed the reserved ones (kv_cache_planning.py
# finalize_extensible_kv_cache), and the startup check runs again on them. --gpu-memory-utilization
# then defaults to 1.0 (CacheConfig.resolved_gpu_memory_utilization).
EXTENSIBLE_KV_CACHE_FROM = (0, 34, 0)
# From 0.20.1 (not 0.20.0) V1 prints "GPU KV cache size" as int(concurrency × max_model_len)
# (kv_cache_utils.py _report_kv_cache_config, vllm#40691, read in both wheels); before, as blocks × block
# size, ÷ the KV groups from 0.9.1.
CONCURRENCY_CAPACITY_FROM = (0, 20, 1)
KV_MARGIN_FLOOR = 1 << 30           # KV_CACHE_MARGIN_FLOOR_BYTES on CUDA
KV_MARGIN_FLOOR_ROCM = 3 << 30      # … on ROCm, whose runtime maps kernel scratch outside the allocator
KV_MARGIN_FRACTION = 0.75           # KV_CACHE_MARGIN_FRACTION
EXTENSIBLE_UTILIZATION = 1.0


def extensible_kv_cache(profile: Profile, s: EngineSettings, gpu_name: str = "") -> bool:
    """Does this run size its KV cache after warmup (EXTENSIBLE_KV_CACHE_FROM)? Not with a fixed size,
    nor off CUDA and ROCm (an Intel card's XPU platform keeps the profile run's sizing)."""
    return profile.engine == "v1" and profile.version >= EXTENSIBLE_KV_CACHE_FROM and not s.kv_cache_memory_bytes \
        and not str(gpu_name).lower().startswith("intel")


# --quantization methods that quantize a 16-bit checkpoint while loading (vllm/model_executor/
# layers/quantization: fp8 online, the 0.20+ per-tensor/-channel/-block names, bitsandbytes in-flight,
# experts_int8, ptpc_fp8); every other method needs a checkpoint exported in its format
ONLINE_QUANT_METHODS = ("fp8", "fp8_per_tensor", "fp8_per_channel", "fp8_per_block", "bitsandbytes",
                        "experts_int8", "ptpc_fp8")

# V1's admission check counts every KV group's blocks from 0.19; 0.14–0.18 counted only the first group's in
# the multi-group case (kv_layout.kv_needed_bytes, Profile.needed_rule)
NEED_ALL_GROUPS_FROM = (0, 19, 0)

# vLLM 0.11.0 deleted the V0 engine (vllm/engine/llm_engine.py became V1's); earlier releases have both.
V0_REMOVED_FROM = (0, 11, 0)


def profile_for(version: str | None = None, engine: str | None = None) -> Profile:
    v = parse_version(version)
    if engine is None:
        engine = "v0" if v < (0, 8, 0) else "v1"
    if not isinstance(engine, str) or engine.lower() not in ("v0", "v1"):
        raise BadInput(f"engine must be v0 or v1, got {_shown(str(engine))!r}")
    engine = engine.lower()
    if v >= V0_REMOVED_FROM:
        engine = "v1"
    if v < (0, 7, 0) and engine == "v1":
        engine = "v0"  # 0.6.x V1 prototype used the V0-classic formula
    if engine == "v0":
        if v < V0_TOTAL_FREE_FROM:
            era, rule = "V0 max-allocated", "v0_allocated"
        elif v < V0_INIT_FREE_FROM:
            era, rule = "V0 total−free", "v0_total_free"
        elif v < (0, 6, 4):
            era, rule = "V0 classic", "v0_classic"
        elif v < OTHERS_OWN_SHARE_FROM["v0"]:
            era, rule = "V0 0.6.4 non-torch", "v0_nontorch"
        else:
            era, rule = "V0 memory_profiling", "v0_profiling"
    else:
        if v < OTHERS_OWN_SHARE_FROM["v1"]:
            era, rule = "V1 peak+non-torch", "v1_peak"
        elif v < (0, 27, 0):
            era, rule = "V1 memory_profiling", "v1_profiling"
        else:
            era, rule = "V1 total consumed", "v1_total"
        if (0, 18, 0) <= v < (0, 20, 0):
            era += " (CUDA-graph profiling opt-in)"
        elif v >= (0, 20, 0):
            era += " + CUDA-graph profiling"
    if engine == "v0":
        capacity = "v0"
    elif v < (0, 9, 1):
        capacity = "v1_blocks"
    elif v < CONCURRENCY_CAPACITY_FROM:
        capacity = "v1_groups"
    else:
        capacity = "v1_concurrency"
    return Profile(
        era=era, version=v, engine=engine, budget_rule=rule,
        default_utilization=0.92 if (engine == "v1" and v >= (0, 20, 0)) else 0.90,
        cuda_graphs_budgeted=engine == "v1" and v >= (0, 20, 0),
        reserved_block=engine == "v1" and v >= (0, 29, 0),
        capacity_rule=capacity,
        hybrid_manager=engine == "v1" and v >= (0, 9, 1),
        sliding_spec=engine == "v1" and v >= (0, 8, 3),
        # 0.10.0 added the spec; 0.10.1–0.13.x disable the hybrid manager for chunked-local models.
        chunked_local_spec=engine == "v1" and (v == (0, 10, 0) or v >= (0, 14, 0)),
        yarn_scales_max_len=v < (0, 30, 0),
        requested_ceil=engine == "v1" and v >= (0, 14, 0),
        context_in_non_torch=rule in ("v0_total_free", "v0_nontorch", "v1_peak"),
        free_memory_check=engine == "v1" and v >= (0, 9, 1),
        auto_max_model_len=v >= (0, 14, 0),
        logits_all_tokens=engine == "v1" and (0, 7, 0) <= v < (0, 7, 3),
        mla_cache=v >= (0, 7, 1),
        mla_matrix_absorption=(0, 7, 1) <= v < (0, 8, 0),
        rope_cache_per_layer=v < (0, 2, 3),
        needed_rule="v0" if engine == "v0" else (
            "layers" if v < (0, 14, 0) else "first_group" if v < NEED_ALL_GROUPS_FROM else "groups"),
        kv_memory_flag=v >= (0, 10, 2),
        pp_global_check=engine == "v1" and (0, 14, 0) <= v < (0, 17, 0),
        v2_runner_budgets_graphs=v >= V2_RUNNER_GRAPHS_FROM,
        window_in_flight=engine == "v1" and v >= (0, 26, 0),
        fp8_kv_cache=v >= (0, 3, 0),
        fp8_weights_min_cc=None if v < (0, 4, 1) else 8.9 if v < (0, 5, 1) else 8.0,
        chunked_prefill_flag=v >= (0, 4, 0),
    )


@dataclass
class EngineSettings:
    """vLLM engine arguments as the user gave them (None = vLLM's default for the version)."""

    vllm_version: str | None = None
    # a build of main named after a patch release ("0.18.2rc1.dev73"), modelled as the release it branched
    # after (vllm_version): its main code may already have what the next minor release lists
    vllm_build: str | None = None
    engine: str | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | str | None = None        # int, "auto"/-1 (0.14+), or None = derive
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    # --decode-context-parallel-size / -dcp (DCP_FROM): the TP group's ranks each keep 1/dcp of a
    # request's tokens, so one rank's pool holds dcp times the tokens (vllm/v1/core/kv_cache_utils.py)
    decode_context_parallel_size: int = 1
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    enforce_eager: bool = False
    cpu_offload_gb: float = 0.0
    # --swap-space: GiB of pinned CPU memory per GPU for V0's swapped-out KV blocks (vllm/config.py
    # CacheConfig, 4 by default; gone with V0): host memory, read for what it takes from the host
    swap_space: float | None = None
    kv_cache_memory_bytes: int | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    enable_expert_parallel: bool = False
    # --enable-lora / --max-loras (1) / --max-lora-rank (16): the adapter buffers vLLM allocates at load
    enable_lora: bool = False
    max_loras: int | None = None
    max_lora_rank: int | None = None
    async_scheduling: bool | None = None          # --[no-]async-scheduling; None = vLLM's default
    mamba_cache_mode: str | None = None           # --mamba-cache-mode all|align|none (0.15+); None = derived
    # --mm-encoder-tp-mode weights|data: with "data" a vision tower that supports it is replicated on every
    # tensor-parallel rank (its inputs split instead); None = "weights", the default
    mm_encoder_tp_mode: str | None = None
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the run's environment (Unsloth sets it for the vLLM
    # it starts): the caching allocator's blocks keep no 2 MiB-rounded remainder (params.allocator_slack)
    expandable_segments: bool = False
    performance_mode: str | None = None           # --performance-mode balanced|interactivity|throughput (0.17+)
    speculative_method: str | None = None         # "mtp", "deepseek_mtp", "eagle3", "ngram", "draft_model", …
    num_speculative_tokens: int | None = None
    speculative_model: str | None = None          # the draft model a speculative config loads (fixes repeat it)
    limit_mm_per_prompt: dict | None = None       # {"image": 1, "video": 0}; None = 1 per modality
    pp_layer_partition: list[int] | None = None   # VLLM_PP_LAYER_PARTITION ("16,32"): layers per stage
    pp_stage: int | None = None                   # internal: the one PP stage being sized
    hybrid_block_align: int | None = None         # internal: the hybrid block alignment the card imposes
    compute_capability: float | None = None       # internal: the card's, for backend choices in the layout
    # internal: (total, free) bytes torch sees when the profile run starts — the weights loaded, the
    # KV cache not yet; models that size an encoder batch by free memory read it (multimodal_profile.gemma4_encoder_call)
    gpu_memory_at_profile: tuple[int, int] | None = None
    # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, or RoPE scaling set on the command line (--rope-scaling,
    # --hf-overrides): a max_model_len above the config's is accepted
    allow_long_max_model_len: bool = False
    model_runner_v2: bool | None = None           # VLLM_USE_V2_MODEL_RUNNER=0/1; None = the release's default
    mxfp4_backend: str | None = None              # MXFP4 MoE backend a log names, or VLLM_MXFP4_USE_MARLIN=1
    graphs_after_kv: bool | None = None           # a log's own arithmetic says whether graphs were set aside
    flashinfer_sampler: bool | None = None        # the log says which top-k/top-p sampler V1 uses
    official_image: bool = False                  # the paste runs vllm/vllm-openai (FlashInfer installed)
    # --attention-backend (0.13+) or the log's "Using … backend" (enum spelling); None = the one vLLM
    # picks (estimator.attention_backend). VLLM_ATTENTION_BACKEND, read to 0.15, is not: the backend
    # changes memory only from 0.18, where the CUDA-graph estimate counts FlashInfer's workspace.
    attention_backend: str | None = None
    compile_cache_warm: bool | None = None        # the log: torch.compile loaded its graphs from the cache
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (0.18+): 1 subtracts the CUDA-graph estimate before sizing
    # the KV cache where it is still opt-in (0.18–0.19), 0 stops it where it is the default (0.20+)
    graph_profiling: bool | None = None
    # the log's "Encoder cache will be initialized with a budget of N tokens, and profiled with K
    # <modality> items": (modality, items, budget tokens) of V1's encoder dummy batch
    encoder_profile: tuple[str, int, int] | None = None
    language_model_only: bool = False             # --language-model-only (0.17+): every modality limited to 0
    # --runner pooling / --task embed / --convert embed: an embedding, reranking or reward model
    # (memory.pooling_runner); None = what vLLM decides from the model
    runner: str | None = None
    usage: str = "server"                          # "server" (vllm serve) | "llm" (LLM(...) class)
    unknown_flags: list[str] = field(default_factory=list)

    def replace(self, **changes) -> EngineSettings:
        return dataclasses.replace(self, **changes)


# EngineSettings fields a flag can set (flag spellings and value types live in estimator.flags,
# shared with the paste reader; vllm/engine/arg_utils.py is the source of both).
_FIELDS = {
    "gpu_memory_utilization", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size",
    "data_parallel_size", "decode_context_parallel_size", "dtype", "kv_cache_dtype", "quantization", "max_num_seqs",
    "max_num_batched_tokens", "block_size", "cpu_offload_gb", "swap_space", "kv_cache_memory_bytes",
    "enforce_eager", "enable_chunked_prefill", "enable_prefix_caching", "enable_expert_parallel",
    "async_scheduling", "mamba_cache_mode", "mm_encoder_tp_mode", "performance_mode", "attention_backend", "speculative_config", "speculative_model", "num_speculative_tokens", "limit_mm_per_prompt",
    "enable_lora", "max_loras", "max_lora_rank", "runner",
}


# --language-model-only as the limits it sets (vllm/config/multimodal.py get_limit_per_prompt)
TEXT_ONLY_LIMITS = {"image": 0, "video": 0, "audio": 0}


# Environment variables vLLM reads that change memory; parse_flags takes them as `NAME=value` words.
# Environment switches (vllm/envs.py) and the setting each sets: the V2 model runner, the length check's
# override, which top-k/top-p sampler V1 runs, CUDA-graph memory profiling (graphs_budgeted)
_ENV_SWITCHES = {"VLLM_USE_V2_MODEL_RUNNER": "model_runner_v2", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "allow_long_max_model_len",
                 "VLLM_USE_FLASHINFER_SAMPLER": "flashinfer_sampler",
                 "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "graph_profiling"}
ENV_SETTINGS = ("VLLM_PP_LAYER_PARTITION", "VLLM_MXFP4_USE_MARLIN", "PYTORCH_CUDA_ALLOC_CONF", *_ENV_SWITCHES)
# the release whose V1 worker reads VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (v1/worker/gpu_worker.py:
# opt-in in 0.18–0.19, "default since v0.21.0" as its message words it, on from the 0.20.0 wheel)
GRAPH_PROFILING_ENV_FROM = (0, 18, 0)


def graphs_budgeted(p: Profile, s: EngineSettings) -> bool:
    """Does this run subtract the CUDA-graph estimate before sizing the KV cache: the release's default
    (Profile.cuda_graphs_budgeted), or what VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS says where the
    release reads it."""
    if s.graph_profiling is not None and p.engine == "v1" and p.version >= GRAPH_PROFILING_ENV_FROM:
        return bool(s.graph_profiling)
    return p.cuda_graphs_budgeted


def parse_flags(argv: list[str], settings: EngineSettings | None = None) -> EngineSettings:
    """Apply `vllm serve`-style flags to settings, strictly: a known flag with a bad value raises
    BadInput (the CLI exits 2); unknown flags are kept in `unknown_flags` and ignored."""
    from estimator.flags import BOOL_KEYS, DottedValues, dotted_flag, flag_key, normalise

    s = settings or EngineSettings()
    dotted = DottedValues()
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok.startswith("VLLM_PP_LAYER_PARTITION="):
            # the environment variable, written before the command (`VAR=… vllm serve …`)
            raw = tok.partition("=")[2].strip("'\"")
            if not re.fullmatch(r"\d+(?:,\d+)+", raw):
                raise BadInput(f"VLLM_PP_LAYER_PARTITION takes layer counts such as 16,32, got {raw!r}")
            s.pp_layer_partition = [int(x) for x in raw.split(",")]
            continue
        var, eq_sign, raw = tok.partition("=")
        if eq_sign and var in _ENV_SWITCHES:
            b = parse_bool(raw)
            if b is not None:      # an unset or templated value ("${USE_V2}") says nothing
                setattr(s, _ENV_SWITCHES[var], b)
            continue
        if tok.startswith("VLLM_USE_V1="):
            # vLLM 0.8–0.10 ran V0 when told so (vllm/envs.py VLLM_USE_V1); the engine's budget
            # and profile run differ (V0 worker.py vs V1 gpu_worker.py)
            b = parse_bool(tok.partition("=")[2])
            if b is not None:      # an unset or templated value ("${USE_V1}") says nothing
                s.engine = "v1" if b else "v0"
            continue
        if tok.split("=", 1)[0] in ("--rope-scaling", "--rope_scaling", "--hf-overrides", "--hf_overrides"):
            s.allow_long_max_model_len = True      # the config's length is overridden: not checked here
        if tok.startswith("VLLM_MXFP4_USE_MARLIN="):
            if parse_bool(tok.partition("=")[2]):
                s.mxfp4_backend = "Marlin"
            continue
        if tok.startswith("PYTORCH_CUDA_ALLOC_CONF="):
            # the caching allocator's options (a comma-separated list); expandable segments change how much
            # it counts for the weights (params.allocator_slack)
            s.expandable_segments = bool(EXPANDABLE_SEGMENTS.search(tok))
            continue
        if not tok.startswith("-"):
            continue
        name, eq, inline = tok.partition("=")
        if name == "--vllm-version":
            s.vllm_version = inline if eq else (argv[i] if i < len(argv) else None)
            i += 0 if eq else 1
            if not s.vllm_version:
                raise BadInput("--vllm-version needs a value")
            continue
        if dotted_flag(name):
            # `--speculative-config.method mtp`: one key of a dict-valued argument (gathered below)
            if not eq and i < len(argv) and not argv[i].startswith("--"):
                eq, inline = "=", argv[i]
                i += 1
            dotted.add(*dotted_flag(name), inline if eq else "true", (0, 0), tok)
            continue
        negated = name.startswith("--no-")
        key = flag_key("--" + name[5:] if negated else name)
        if key == "language_model_only":
            # vllm/config/multimodal.py (0.17+): every modality's limit is 0 — no dummy media in the
            # profile run and, from 0.15's _mark_tower_model, no vision tower loaded; it wins over
            # --limit-mm-per-prompt wherever that stands (get_limit_per_prompt checks it first)
            on = not negated if not eq else normalise(key, inline)
            if on is None:
                raise BadInput(f"{name} takes true/false, got {inline!r}")
            s.language_model_only = bool(on)
            continue
        if key == "load_format":
            # how the weights are read: no memory of its own, but the bitsandbytes loader quantizes while it
            # loads and goes with --quantization bitsandbytes (which sets it itself from 0.9: engine/arg_utils.py)
            value = inline if eq else (argv[i] if i < len(argv) else "")
            i += 0 if eq else 1
            if not value:
                raise BadInput(f"flag {name} needs a value")
            if value.strip().lower() == "bitsandbytes" and not s.quantization:
                s.quantization = "bitsandbytes"
            continue
        if key not in _FIELDS:
            s.unknown_flags.append(tok)
            continue
        if key in BOOL_KEYS:
            value: object = not negated
            if not (eq or negated) and i < len(argv) and argv[i].strip().lower() in ("true", "false"):
                # V0's StoreBoolean flags took a value word (`--enable-chunked-prefill False`,
                # vllm/engine/arg_utils.py nargs="?")
                eq, inline = "=", argv[i]
                i += 1
            if eq:
                value = normalise(key, inline)
                if value is None:
                    raise BadInput(f"{name} takes true/false, got {inline!r}")
            setattr(s, key, value)
            continue
        if not eq:
            if i >= len(argv):
                raise BadInput(f"flag {name} needs a value")
            inline = argv[i]
            i += 1
        if key in ("limit_mm_per_prompt", "speculative_config", "speculative_model"):
            _apply_dict_flag(s, key, inline, name)
            continue
        setattr(s, key, _value(key, inline, name))
    for gathered in dotted.settings("cmdline"):
        # the dict the keys make, checked as the whole-dict flag is
        _apply_dict_flag(s, gathered.key, gathered.value, gathered.raw)
    if s.language_model_only:
        s.limit_mm_per_prompt = dict(TEXT_ONLY_LIMITS)
    return s


def _apply_dict_flag(s: EngineSettings, key: str, value: str, name: str) -> None:
    """A --limit-mm-per-prompt or speculative value (a whole dict, or one made of dotted keys) into
    `s`, strictly: one that names no modality count or no method is bad input."""
    if key == "limit_mm_per_prompt":
        from estimator.flags import read_mm_limits

        limits = read_mm_limits(value)
        if not limits:
            raise BadInput(f"{name}: expected e.g. '{{\"image\": 1, \"video\": 0}}' or --limit-mm-per-prompt.image 1, "
                           f"got {value!r}")
        s.limit_mm_per_prompt = limits
        return
    apply_speculative(s, value)
    if s.speculative_method in (None, "true", "false"):      # a bare `--speculative-config.method` is "true"
        raise BadInput(f"{name}: no speculative method or draft model in {value!r}")


def apply_speculative(s: EngineSettings, value: object) -> None:
    """Set the speculative method / token count from a --speculative-config (or V0
    --speculative-model) value; a token count given separately is kept."""
    from estimator.flags import read_speculative, speculative_draft

    method, k = read_speculative(value)
    if method:
        s.speculative_method = method
    if k:
        s.num_speculative_tokens = k
    draft = speculative_draft(value)
    if draft:
        s.speculative_model = draft


# The most ranks kvdoctor models along one of TP, PP and DP: far past any deployment (TP stops at an
# NVLink domain, 72 GPUs; PP at the layer count), low enough that a garbled figure (10^20 ranks) cannot
# size per-stage work by it. A bound of this tool, not one of vLLM's.
MAX_PARALLEL = 4096
_PARALLEL_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "decode_context_parallel_size")
# Likewise for token, sequence and block counts (2^40, 10^5 times the longest context any model
# offers), far below where the arithmetic's floats overflow (a 400-digit length did).
MAX_COUNT = 2**40
MAX_BYTES = 2**60       # a byte size (--kv-cache-memory-bytes) past an exbibyte: no card holds it
_COUNT_KEYS = ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size", "num_speculative_tokens")
# GiB amounts whose 0 is vLLM's own default (no weights offloaded, no CPU swap space)
_ZERO_ALLOWED = ("cpu_offload_gb", "swap_space")


def setting_problem(key: str, value: object) -> str | None:
    """What rules out this number for `key` as a setting vLLM ran with, or None: it must be finite and
    positive, a utilization at most 1 (vLLM's CacheConfig rejects more), a parallel size at most
    MAX_PARALLEL, a count at most MAX_COUNT. The CLI refuses with the reason (`_value`); a paste's
    implausible figure is a misreading or a typo, read as not stated (`plausible_setting`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number"
    if key in _ZERO_ALLOWED:
        if value < 0:
            return "is negative"
    elif value <= 0:
        return "is not a positive number"
    if key == "gpu_memory_utilization" and value > 1:
        return "must be in (0, 1]"
    if key in _COUNT_KEYS and value > MAX_COUNT:
        return f"is more than kvdoctor models (at most {MAX_COUNT:,})"
    if key in _PARALLEL_KEYS and value > MAX_PARALLEL:
        return f"is more ranks than kvdoctor models (at most {MAX_PARALLEL:,})"
    return None


def plausible_setting(key: str, value: object) -> bool:
    return setting_problem(key, value) is None


# Every --kv-cache-dtype value some release accepts, with the first release that does (engine/arg_utils.py
# choices, then config.py / config/cache.py CacheDType; read in the sdists of 0.8.0, 0.9.2, 0.10.0–0.12.0 and
# 0.18.0–0.33.0). None: older than the releases read, or not pinned down (float16 came between 0.12 and
# 0.18). vLLM refuses any other word.
KV_CACHE_DTYPE_FROM: dict[str, tuple[int, int, int] | None] = {
    "auto": None, "fp8": None, "fp8_e4m3": None, "fp8_e5m2": None, "float16": None,
    "fp8_inc": (0, 10, 0), "bfloat16": (0, 11, 0), "fp8_ds_mla": (0, 11, 1),
    "int8_per_token_head": (0, 20, 0), "fp8_per_token_head": (0, 20, 0), "nvfp4": (0, 20, 0),
    "turboquant_k8v4": (0, 20, 0), "turboquant_4bit_nc": (0, 20, 0), "turboquant_k3v4_nc": (0, 20, 0),
    "turboquant_3bit_nc": (0, 20, 0),
    "int4_per_token_head": (0, 25, 0), "nvfp4_4over6": (0, 28, 0), "nvfp4_ds_mla": (0, 30, 0),
    "ultraquant_4bit": (0, 32, 0), "octave_k3v4": (0, 33, 0), "octave_k3v3": (0, 33, 0),
    "octave_k3v3_compact": (0, 33, 0),
}


def kv_dtype_exists(kv_cache_dtype: str, version: tuple) -> bool:
    """Whether this release has the --kv-cache-dtype (a word outside the table: not this tool's to refuse)."""
    since = KV_CACHE_DTYPE_FROM.get(kv_cache_dtype)
    return since is None or tuple(version) >= since


def _value(key: str, raw: str, name: str) -> object:
    from estimator.flags import normalise

    text = raw.strip()
    if key == "max_model_len" and text.lower() in ("auto", "-1"):
        return "auto"
    if key == "runner" and text.strip("'\"").lower() in ("auto", "none"):
        return None             # --runner auto / --convert none: vLLM decides
    if key == "kv_cache_memory_bytes":
        try:
            return parse_bytes(text)
        except BadInput as exc:
            raise BadInput(f"{name}: {exc}") from None
    value = normalise(key, text)
    if value is None:
        raise BadInput(f"bad value for {name}: {_shown(text)!r}")
    if key == "kv_cache_dtype" and value not in KV_CACHE_DTYPE_FROM:
        raise BadInput(f"{name} {_shown(text)!r} is not a KV cache dtype vLLM has (auto, fp8, fp8_e4m3, fp8_e5m2, "
                       "bfloat16, int8_per_token_head, nvfp4, turboquant_k8v4, …)")
    problem = setting_problem(key, value)
    if problem:
        raise BadInput(f"{name} {_shown(text)} {problem}")
    return value


def parse_bytes(text: str) -> int:
    """--kv-cache-memory-bytes as vLLM's argparse reads it (engine/arg_utils.py `human_readable_int`, the
    0.15.1 wheel: flags.human_int): '8g' = 8 × 10^9, '8G' = 8 × 2^30, '8589934592'; and kvdoctor's own
    '8GiB' / '8GB' = 8 × 2^30, a unit vLLM's flag does not take but people write."""
    s = str(text).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgGtT])i?[bB]", s)
    if m:
        size: float | None = float(m.group(1)) * 1024 ** ("kmgt".index(m.group(2).lower()) + 1)
    else:
        size = human_int(s) if re.fullmatch(r"\d+(?:\.\d+)?\s*[kKmMgGtT]?", s) else None
        if size is None and re.fullmatch(r"\d+\.\d+\s*[KMGT]", s):
            raise BadInput(f"{_shown(s)}: vLLM refuses a decimal with a binary suffix (K, M, G, T = powers of 1024); "
                           "write a whole number or a decimal suffix (k, m, g, t = powers of 1000)")
        if size is None:
            raise BadInput(f"expected a byte size such as 8G (8 GiB) or 8g (8 × 10^9 bytes), got {_shown(s)!r}")
    if not size < MAX_BYTES:
        raise BadInput(f"{_shown(s)} is more memory than kvdoctor models (at most 1 EiB)")
    return int(size)


def _shown(text: str) -> str:
    """A value for a message: as given, or its first characters when it is too long to read."""
    return f"{text[:12]}… ({len(text)} digits)" if len(text) > 15 and text.isdigit() else text[:40]


# ------------------------------------------------------------------------------------------
# Defaults that depend on version, hardware and usage (docs §5; vllm/engine/arg_utils.py
# _set_default_args / get_batch_defaults).
# ------------------------------------------------------------------------------------------


# Model Runner V2 (vllm/v1/worker/gpu/) as the default runner, VLLM_USE_V2_MODEL_RUNNER unset
# (config/vllm.py `use_v2_model_runner` / `_is_default_v2_model_runner_model` in each wheel):
# 0.22–0.23 the listed architectures when neither MoE nor quantized; 0.24 the listed ones;
# 0.25–0.28 every non-MoE model and the listed MoE ones, hybrid (Mamba / linear-attention) models
# excepted (0.27–0.28: unless listed); from 0.29 every model. A "does not yet support" feature sends
# it back to V1 (ngram and the other unlisted speculative methods until 0.29).
V2_RUNNER_DEFAULT_FROM = (0, 22, 0)
V2_RUNNER_EVERY_MODEL_FROM = (0, 29, 0)
V2_RUNNER_GRAPHS_FROM = (0, 29, 0)
V2_RUNNER_OFFLOAD_FROM = (0, 28, 0)   # the first V2 runner that honours --cpu-offload-gb
# --quantization methods a release no longer has (the QUANTIZATION_METHODS list of
# vllm/model_executor/layers/quantization/__init__.py in each wheel; config/model.py then raises
# "Unknown quantization method: …"): GGUF from 0.24 (gguf_loader.py went with it), bitsandbytes
# from 0.28 (bitsandbytes_loader.py too).
QUANT_METHOD_REMOVED = {"gguf": (0, 24, 0), "bitsandbytes": (0, 28, 0)}
# bitsandbytes' fused-MoE method (BitsAndBytesMoEMethod, which dequantizes every local expert per
# layer): in the 0.10.1 wheel, not in 0.9.2's (0.10.0 not checked, taken as before it); before it
# BitsAndBytesConfig.get_quant_method answered None for MoE layers
BNB_MOE_FROM = (0, 10, 1)
# the first V2 runner whose profile_run encodes dummy media (encoder_runner.profile_encoder_cache);
# 0.22–0.26 profile the language model and the sampler alone
V2_RUNNER_ENCODER_PROFILED_FROM = (0, 27, 0)
# `--speculative-config` (a JSON dict) by the wheels' engine/arg_utils.py: in 0.8.2 (beside the old
# --speculative-model, deprecated there), not in 0.8.0; 0.8.3 keeps only the dict
SPECULATIVE_CONFIG_FROM = (0, 8, 2)
# --decode-context-parallel-size (vllm/engine/arg_utils.py, V1 only): from the release after vllm PR
# #23734 ("Support decode context parallel (DCP) for MLA"); each of the TP group's dcp ranks keeps every
# dcp-th token, kv_cache_utils multiplies "GPU KV cache size" by dcp ("Multiplying the GPU KV cache size
# by the dcp_world_size N") and FullAttentionSpec.max_memory_usage_bytes counts cdiv(max_model_len, dcp)
DCP_FROM = (0, 10, 2)

# V0's profile run, 0.7.0–0.8.2 (vllm/multimodal/profiling.py get_decoder_dummy_data in those wheels): a
# dummy prompt whose media tokens exceed its sequence length — max_num_batched_tokens // max_num_seqs, after
# vllm/worker/model_runner.py cut max_num_seqs to max_num_batched_tokens // the media tokens, at least 1 —
# is replaced by a text-only prompt of that length: no media, no vision encoder in the peak. 0.8.3 keeps
# the media (and only warns). Models whose dummy data still came from their own factory
# (inputs/registry.py dummy_data_for_profiling without a processor) are outside the rule; by the wheels'
# model files (register_dummy_data), per release up to the bound:
V0_TEXT_ONLY_DUMMY = ((0, 7, 0), (0, 8, 3))
_V0_LEGACY_DUMMY_TYPES = (
    ((0, 7, 1), frozenset({"chatglm", "h2ovl_chat", "idefics3", "internvl_chat", "minicpmv", "mllama", "molmo",
                           "NVLM_D", "paligemma", "pixtral", "qwen"})),
    ((0, 7, 2), frozenset({"chatglm", "h2ovl_chat", "idefics3", "internvl_chat", "mllama", "molmo", "NVLM_D",
                           "paligemma", "pixtral"})),
    ((0, 7, 3), frozenset({"chatglm", "mllama", "molmo", "paligemma", "pixtral"})),
    ((0, 8, 0), frozenset({"paligemma", "pixtral"})),
    ((0, 8, 3), frozenset({"phi4mm"})),
)


def v0_text_only_dummy(version: tuple[int, ...], model_type: str, media_tokens: int, batched_tokens: int) -> bool:
    """Does V0 profile this multimodal model with a text-only dummy prompt (V0_TEXT_ONLY_DUMMY)? Its
    sequence length is max_num_batched_tokens // max(1, min(S, max_num_batched_tokens // media)), which is
    at least the media tokens whenever max_num_batched_tokens is: the media do not fit exactly when they
    exceed max_num_batched_tokens. Mllama's encoder-decoder path is its own (multimodal_profile._mllama_v0_encoder_peak)."""
    lo, hi = V0_TEXT_ONLY_DUMMY
    if not lo <= version[:3] < hi or model_type.startswith("mllama") or media_tokens <= batched_tokens:
        return False
    legacy = next((types for until, types in _V0_LEGACY_DUMMY_TYPES if version[:3] < until), frozenset())
    return model_type not in legacy
_V2_RUNNER_ARCHITECTURES = (
    ((0, 22, 0), frozenset({"Qwen3ForCausalLM"})),
    ((0, 23, 0), frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"})),
    ((0, 24, 0), frozenset({"Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM",
                            "GraniteMoeForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"})),
    ((0, 25, 0), frozenset({"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"})),
    ((0, 26, 0), frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
                            "InklingForConditionalGeneration", "LongcatFlashNgramForCausalLM",
                            "Qwen2MoeForCausalLM"})),
    ((0, 27, 0), frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
                            "InklingForConditionalGeneration", "KimiK3ForConditionalGeneration",
                            "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM"})),
    ((0, 28, 0), frozenset({"DeepseekV2ForCausalLM", "DeepseekV4ForCausalLM", "GraniteMoeForCausalLM",
                            "InklingForCausalLM", "InklingForConditionalGeneration",
                            "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
                            "Qwen2MoeForCausalLM"})),
)
# ROCm keeps these on V1 (ROCM_EXCLUDED_V2_MODEL_RUNNER_ARCHITECTURES 0.27–0.28,
# ROCM_DEFAULT_MRV1_ARCHITECTURES from 0.29; 0.30 adds GlmMoeDsa)
_V2_RUNNER_ROCM_V1 = (
    ((0, 27, 0), frozenset({"KimiK3ForConditionalGeneration"})),
    ((0, 29, 0), frozenset({"DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM"})),
    ((0, 30, 0), frozenset({"DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "GlmMoeDsaForCausalLM"})),
)
# speculative methods the V2 runner runs before 0.33 (0.23: eagle, eagle3, mtp; 0.24 dflash;
# 0.25 dspark; 0.29 extract_hidden_states); 0.33 refuses only suffix and custom_class
_V2_RUNNER_SPEC_METHODS = ("eagle", "eagle3", "mtp", "dflash", "dspark", "extract_hidden_states")


def _by_version(table: tuple, v: tuple) -> frozenset:
    found: frozenset = frozenset()
    for since, value in table:
        if v >= since:
            found = value
    return found


def default_model_runner_v2(p: Profile, architecture: str, *, moe: bool, hybrid: bool, quantized: bool,
                            attention_free: bool, speculative_method: str | None, rocm: bool,
                            pipeline_parallel: int = 1) -> bool:
    """Whether this release runs the model on Model Runner V2 when VLLM_USE_V2_MODEL_RUNNER is unset.

    Why it matters: until 0.29 V2 sizes the KV cache before its CUDA graphs, and until 0.28 it ignores
    --cpu-offload-gb, so the same flags leave a different pool than V1 on the same release."""
    v = p.version
    if p.engine != "v1" or v < V2_RUNNER_DEFAULT_FROM:
        return False
    method = (speculative_method or "").lower()
    if method and (method in ("suffix", "custom_class") if v >= (0, 33, 0) else
                   not (method in _V2_RUNNER_SPEC_METHODS or method.endswith("mtp"))):
        return False
    if method == "eagle3" and pipeline_parallel > 1 and v < (0, 30, 0):
        return False        # "EAGLE3 with pipeline parallelism" is on V2's unsupported list to 0.29
    if rocm and architecture in _by_version(_V2_RUNNER_ROCM_V1, v):
        return False
    if v >= V2_RUNNER_EVERY_MODEL_FROM:
        return True
    listed = architecture in _by_version(_V2_RUNNER_ARCHITECTURES, v)
    if v < (0, 25, 0):      # the list alone (none of its models hybrid); 0.22–0.23 neither MoE nor quantized
        return listed and (v >= (0, 24, 0) or not (moe or quantized))
    if attention_free or (hybrid and (v < (0, 27, 0) or not listed)):
        return False
    return listed or not moe


# 0.9+ engine/arg_utils.py gives the larger batch defaults to a card of 70 GiB or more whose name has no
# "a100", reading the size through vllm/platforms/cuda.py get_device_total_memory, which asks NVML
# (nvmlDeviceGetMemoryInfo). On the GB10 (DGX Spark) NVML answers "Not Supported" for its unified memory,
# and arg_utils catches the error as a device of 0 bytes: the small defaults, 2,048 batched tokens and 256
# sequences for the server, whatever the release (0.33 names the GB10 in the check as well). Seen in logs:
# NVIDIA's 0.11.0 build on a DGX Spark prints "Chunked prefill is enabled with max_num_batched_tokens=2048";
# two 0.25.1 logs of Gemma 4 26B on a GB10 (sostrowsk/dgx-spark-local-llm) print a concurrency at
# 262,144 tokens that holds window − 1 + 2,496 tokens per sliding group, 2,048 raised to Gemma 4's
# largest media item (MM_PREFIX_FLOOR_FROM), not 8,192 (0.3% and 2.4% off with it, 15–17% without).
def large_card_defaults(name: str, gib: float) -> bool:
    """Does vLLM 0.9+ give this card the larger max_num_seqs / max_num_batched_tokens defaults."""
    return gib >= 70 and "a100" not in name and "gb10" not in name


def default_max_num_seqs(p: Profile, gpu_total_bytes: int, gpu_name: str = "") -> int:
    v, gib = p.version, gpu_total_bytes / 2**30
    if p.engine == "v0":
        return 256
    name = gpu_name.lower()
    if v < (0, 8, 4):
        return 1024
    if v < (0, 8, 5):
        return 1024 if ("h100" in name or "h200" in name) else 256
    if v < (0, 9, 0):
        return 1024 if gib >= 70 else 256
    big = large_card_defaults(name, gib)
    if v >= (0, 28, 0) and gib >= 160:
        big = True          # engine/arg_utils.py 0.28+: cards of 160 GiB and more
    return 1024 if big else 256


def v0_chunked_prefill(p: Profile, max_model_len: int, spec, settings: EngineSettings) -> bool:
    """V0 turns chunked prefill on by itself for L > 32K (0.5.3+; vllm/engine/arg_utils.py)."""
    if settings.enable_chunked_prefill is not None:
        return settings.enable_chunked_prefill
    if p.version < (0, 5, 3) or max_model_len <= 32768:
        return False
    return not v0_keeps_chunked_prefill_off(p, spec, settings)


def v0_keeps_chunked_prefill_off(p: Profile, spec, settings: EngineSettings) -> bool:
    """The models V0 never chunks by itself (vllm/engine/arg_utils.py): sliding-window ones, runs with
    speculative decoding; in 0.5.x with prefix caching or Mamba-type layers, from 0.6 multimodal
    ones; from 0.8 MLA."""
    if spec.sliding_window is not None or settings.speculative_method:
        return True
    if p.version < (0, 6, 0):
        if settings.enable_prefix_caching or spec.state_layers:
            return True
    elif spec.is_multimodal:
        return True
    return p.version >= (0, 8, 0) and bool(spec.uses_mla)


# engine/arg_utils.py: a multimodal prefix-LM model (Gemma 4 with bidirectional vision attention)
# cannot chunk a media item, so a defaulted max_num_batched_tokens is raised to its largest item. Read
# in 0.27's code; a 0.25.1 log shows it already (an L40S Gemma 4 26B at 32,768 tokens prints 9.81×
# concurrency: its sliding-window groups hold window − 1 + 2,496 tokens per request, where 2,048 would
# give 10.46×), a 0.21.0 log not yet (an L4 Gemma 4 E2B prints what 2,048 gives); 0.22–0.24 not seen.
MM_PREFIX_FLOOR_FROM = (0, 25, 0)


def default_max_num_batched_tokens(p: Profile, settings: EngineSettings, max_model_len: int,
                                   max_num_seqs: int, gpu_total_bytes: int, gpu_name: str,
                                   chunked: bool, multimodal: bool, doubled: bool = False,
                                   mm_item_tokens: int = 0) -> int:
    """`doubled`: --performance-mode throughput doubles the default before the clamps below.
    `mm_item_tokens`: the largest media item of a multimodal prefix-LM model (0 for others)."""
    v = p.version
    if p.engine == "v0":
        if not chunked or v < (0, 4, 1):
            # 0.4.0 added chunked prefill without a default of its own (vllm/config.py
            # SchedulerConfig: max(max_model_len, 2048) either way); 0.4.1 chose 768
            tb = max(max_model_len, 2048)
        elif v < (0, 4, 2):
            tb = 768
        else:
            tb = 512 if v < (0, 6, 5) else 2048
        if multimodal and v >= (0, 6, 0):
            # vllm/config.py SchedulerConfig 0.6.x: multimodal models batch at least 5,120 tokens,
            # chunked or not (_MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS)
            tb = max(tb, 5120 if v >= (0, 6, 3) else 4096)
        return tb
    name, gib = gpu_name.lower(), gpu_total_bytes / 2**30
    if v < (0, 8, 5):
        big = "h100" in name or "h200" in name
    elif v < (0, 9, 0):
        big = gib >= 70
    else:
        big = large_card_defaults(name, gib)
    if v >= (0, 28, 0) and gib >= 160:
        tb = 16384          # engine/arg_utils.py 0.28+: cards of 160 GiB and more (B200/B300)
    elif settings.usage == "llm":
        tb = 16384 if big else 8192
    else:
        tb = 8192 if big else 2048
    if doubled:
        tb *= 2
    if v >= MM_PREFIX_FLOOR_FROM and mm_item_tokens > tb:
        tb = mm_item_tokens
    if v >= (0, 11, 2):
        # engine/arg_utils.py 0.11.2+: without chunked prefill the batch holds a whole prompt; the
        # default then never exceeds max_num_seqs × max_model_len. (Before, V1 set the default
        # ahead of SchedulerConfig, whose clamp and multimodal minimum only ran for an unset value.)
        if settings.enable_chunked_prefill is False:
            tb = max(max_model_len, tb)
        tb = min(tb, max_num_seqs * max_model_len)
    return tb


# --performance-mode (vllm/config/vllm.py PerformanceMode, 0.17+): "throughput" doubles the defaulted
# max_num_batched_tokens and max_num_seqs (engine/arg_utils.py), "interactivity" captures a CUDA
# graph for every batch size up to 32 (_set_cudagraph_sizes)
PERFORMANCE_MODE_FROM = (0, 17, 0)


def performance_mode(p: Profile, s: EngineSettings) -> str:
    return (s.performance_mode or "balanced") if p.engine == "v1" and p.version >= PERFORMANCE_MODE_FROM \
        else "balanced"


def cuda_graph_sizes(p: Profile, max_num_seqs: int, max_num_batched_tokens: int, spec_tokens: int = 0,
                     interactivity: bool = False) -> list[int]:
    """Batch sizes (tokens) vLLM captures graphs for (docs §5 'CUDA graph sizes').

    0.14+ (vllm/config/vllm.py _set_cudagraph_sizes): up to min(max_num_seqs × q × 2, 512,
    max_num_batched_tokens) with q = 1 + speculative tokens; with speculative decoding every size
    is rounded up to a multiple of q and repeats dropped (compilation.py
    adjust_cudagraph_sizes_for_spec_decode). Logs agree: MTP 3 at max_num_seqs 8 printed
    "PIECEWISE=9 (largest=64)", 6 speculative tokens "PIECEWISE=15 (largest=112)"."""
    if p.engine == "v0":
        top = next((8 * k for k in range(1, 33) if 8 * k >= max_num_seqs), 256)
        return [1, 2, 4] + list(range(8, top + 1, 8))
    if p.version < (0, 11, 0):
        return [s for s in [1, 2, 4] + list(range(8, 513, 8)) if s <= max_num_batched_tokens]
    if p.version < (0, 14, 0):
        top = min(2 * max_num_seqs, 512)
        return [1, 2, 4] + list(range(8, top + 1, 8))
    q = 1 + max(0, spec_tokens)
    top = min(2 * max_num_seqs * q, 512, max_num_batched_tokens)
    small = list(range(1, 33)) if interactivity else [1, 2, 4]
    sizes = sorted({s for s in small + list(range(8, 256, 8)) + list(range(256, top + 1, 16)) if s <= top})
    if q > 1:
        sizes = sorted({ceil_div(s, q) * q for s in sizes if ceil_div(s, q) * q <= top}) or ([q] if q <= top else [])
    return sizes


def full_graph_sizes(sizes: list[int], max_num_seqs: int, spec_tokens: int = 0) -> list[int]:
    """The FULL graphs of the default FULL_AND_PIECEWISE mode: uniform decode batches only, so
    sizes up to max_num_seqs × (1 + speculative tokens). Logs: "FULL=35 (largest=256)" beside
    "PIECEWISE=51 (largest=512)" at max_num_seqs 256; 51 and 51 at 1,024."""
    return [s for s in sizes if s <= max_num_seqs * (1 + max(0, spec_tokens))]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def requested_bytes(p: Profile, total_bytes: int, utilization: float) -> int:
    """T × u as vLLM computes it (0.14+: math.ceil in vllm/v1/worker/utils.py request_memory)."""
    x = total_bytes * utilization
    return math.ceil(x) if p.requested_ceil else int(x)
