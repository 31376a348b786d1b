"""The forward memory model: what vLLM of a given version does with one GPU rank's memory.

Steps mirror vLLM's start-up (docs/vllm-memory.md §1.1): load weights (W), profile run
(activation peak P, non-torch N), optional CUDA-graph estimate (G), KV bytes = budget − rest,
blocks from the KV layout (per-layer specs, V1 grouping), reported capacity, concurrency,
the admission check and the largest max_model_len that fits.

Exact parts (vLLM's code): budget formulas, KV page sizes, grouping, blocks, capacity,
max-length search. Estimated parts (no closed form in vLLM; measured at run time): P, N, G —
each fitted constant names the evidence it was fitted on.

This module adds the parts up; each part has its own module: the KV layout (kv_layout), the
activation peak (activation, over forward and multimodal_profile), non-torch memory (non_torch)
and CUDA graphs (cuda_graphs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from estimator import kv_deepseek_v4, params
from estimator.activation import (
    SPARSE_MLA_WORKSPACE_WORDS,
    activation_peak,
    deepseek_v4_load_buffers,
    deepstack_buffer_bytes,
    lora_budget_place,
    lora_buffer_bytes,
    sparse_mla_load_buffers,
    unnamed_sampler_note,
)
from estimator.cuda_graphs import (
    MAMBA_BLOCKS_CHECK_FROM,
    MAMBA_GRAPHS_CAPPED_FROM,
    cuda_graph_parts,
    graphs_after_kv,
    graphs_outside_budget,
)
from estimator.drafters import gemma4_assistant
from estimator.gpus import cc_number, is_rocm_target, is_xpu_card, on_nvswitch_board
from estimator.kv_layout import (
    NVFP4_MLA_REFUSED_FROM,
    TURBOQUANT_HYBRID_FROM,
    TURBOQUANT_PRESETS,
    KVLayout,
    attention_groups,
    dcp_ranks,
    drafter,
    kv_dtype_bytes_for,
    kv_layout,
    kv_needed_bytes,
    mamba_align_refused,
    mtp_layers,
    stage_sizes,
    window_tokens,
)
from estimator.multimodal_profile import (
    audio_tower_skipped,
    mm_prefix_item_tokens,
    vision_replicated,
    vision_tower_skipped,
)
from estimator.non_torch import (
    CUDA_CONTEXT,
    NVSWITCH_NCCL_FROM,
    cached_all_reduce_bytes,
    non_torch,
    nvswitch_nccl,
    rocm_mi300_extra,
)
from estimator.params import Mxfp4Layout
from estimator.spec import ModelSpec, dtype_bytes
from estimator.units import GiB
from estimator.vllm import (
    DCP_FROM,
    EXTENSIBLE_UTILIZATION,
    KV_CACHE_DTYPE_FROM,
    KV_MARGIN_FLOOR,
    KV_MARGIN_FLOOR_ROCM,
    KV_MARGIN_FRACTION,
    NEWEST,
    NEWEST_WORDS,
    V2_RUNNER_OFFLOAD_FROM,
    EngineSettings,
    Profile,
    branched_build_note,
    branched_release,
    build_name,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    default_model_runner_v2,
    extensible_kv_cache,
    graphs_budgeted,
    installed_flashinfer_sampler,
    kv_dtype_exists,
    parse_version,
    performance_mode,
    profile_for,
    release_serving,
    removed_quant_method,
    requested_bytes,
    unlisted_architecture_note,
    v0_chunked_prefill,
    version_text,
)

if TYPE_CHECKING:
    from estimator.gpus import Gpu


# What 0.3.1–0.6.3 V0 subtracts beyond the torch peak the model gives (`v0_classic`): vllm/worker/worker.py
# takes init_gpu_memory − free after the profile run with no empty_cache between, so the caching allocator's
# reserved blocks count, not only the allocated peak (0.6.4 empties the cache first; 0.6.6+ measures the
# allocated peak). Single-GPU NVIDIA runs of those releases leave this much less KV cache than the
# allocated-peak model, whatever the activation: vllm PR #4454's Llama-2-7B-GPTQ and Llama-3-8B on an
# RTX A6000 (0.4.1) 0.58 / 0.68 GiB, two RTX 3090 Llama-3-8B runs (0.4.1, xformers and flash-attn) 0.48 /
# 0.49, Qwen1.5-7B-GPTQ on a 3090 (0.4.0) 0.49, GLM-4-9B on a 4090 (0.6.3, version second-hand) 0.24:
# median 0.49 GiB. ROCm builds are left out: the MI300 fit (non_torch.ROCM_MI300_*) was taken from such runs already.
V0_CLASSIC_CACHED_EXCESS = int(0.49 * GiB)


@dataclass
class Reconciliation:
    """How a diagnosis matched the forward model to the figures vLLM printed (estimator.diagnosis).

    Kept beside the Estimate it produced: the advice re-checks fixes in the model's own state
    too, and the reply labels the parts that were solved for rather than estimated."""

    plain: Estimate | None = None               # the model's own state, before any part was solved for
    solved: list[str] = field(default_factory=list)   # parts moved to reproduce vLLM's KV pool ("activation_bytes", …)
    failed: bool = False                        # no state reproduces vLLM's figures
    card_implied: str | None = None             # the card size vLLM's KV figure implies, and how


# The words of the note an extensible-KV-cache estimate (0.34+) gives its own arithmetic in: a re-run on
# other parts states it afresh (anchoring.estimate_with)
EXTENSIBLE_NOTE = "sizes the KV cache after warmup (the extensible KV cache"


@dataclass
class Estimate:
    spec: ModelSpec
    profile: Profile
    settings: EngineSettings               # resolved settings (defaults filled)
    gpu_name: str
    gpu_total_bytes: int
    gpu_count: int
    compute_capability: str | None
    budget_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    kv_cache_bytes: int
    layout: KVLayout
    gpu_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    max_model_len_fit: int
    kv_needed_bytes: int
    fits: bool
    error_kind: str | None
    assumptions: list[str] = field(default_factory=list)
    suggestions: list[dict] = field(default_factory=list)
    checkpoint_weights_bytes: int = 0           # the model's own weights per rank, whatever was printed
    cached_all_reduce_bytes: int = 0            # V0 0.2.5–0.6.3 with TP: what the profile may leave cached
    flashinfer_graph_bytes: int = 0             # of cuda_graph_bytes: FlashInfer's workspace and decode wrappers
    # 0.34+ (vllm.EXTENSIBLE_KV_CACHE_FROM): the profile run's pool, which "Available KV cache memory"
    # prints and whose blocks vLLM reserves, before warmup sizes kv_cache_bytes; None in other releases
    reserved_pool_bytes: int | None = None
    # what one max_model_len request holds across all KV groups (bytes per block × its blocks): the
    # admission check's kv_needed_bytes counts otherwise where a release did (0.14–0.18: the first group)
    request_kv_bytes: int = 0
    # Not results of the arithmetic: what it was run with, and what the callers learnt about it.
    inputs: dict = field(default_factory=dict, repr=False, compare=False)   # estimate()'s arguments (rerun)
    # what estimate() itself said about these inputs: a re-run on other inputs says it afresh, so a
    # caller carrying its own notes over to the re-run leaves these behind
    own_assumptions: tuple[str, ...] = field(default=(), repr=False, compare=False)
    tightest_stage: int = 0                     # mixed PP stages: the one whose block count all get
    params: int | None = None                   # parameter count (api.run_estimate)
    gpu: Gpu | None = field(default=None, repr=False, compare=False)   # the catalog card (api.run_estimate)
    reconciliation: Reconciliation = field(default_factory=Reconciliation, repr=False, compare=False)

    @property
    def non_kv_bytes(self) -> int:
        return self.weights_bytes + self.activation_bytes + self.non_torch_bytes + self.cuda_graph_bytes

    @property
    def modelled_weights_bytes(self) -> int:
        """The weights of the state vLLM ran with (its printed figure where the paste has one),
        before any part was solved for to reproduce vLLM's pool."""
        return (self.reconciliation.plain or self).weights_bytes

    def holds_pool(self, pool_gib: float) -> bool:
        """Is this estimate's KV pool the one vLLM printed (`pool_gib`, rounded to 0.01 GiB), within a
        block or 1%? Then what the pool holds depends on the layout alone (the estimate was anchored to it)."""
        pool = float(pool_gib) * GiB
        return abs(self.kv_cache_bytes - pool) <= max(self.layout.bytes_per_block, 0.01 * pool)

    @property
    def startup_free_bytes(self) -> int:
        """What vLLM finds free when it starts: the card less the other processes and its own CUDA
        context (estimate()'s startup check; the diagnosis reads `other` as total − free − context)."""
        return self.gpu_total_bytes - (self.inputs.get("other_process_bytes") or 0) - CUDA_CONTEXT

    @property
    def others_charged_bytes(self) -> int:
        """Memory other processes hold that this version charges to this instance's own budget
        (0.6.4 V0 and V1 before 0.9.1: Profile.context_in_non_torch); 0 where it is not charged."""
        return (self.inputs.get("other_process_bytes") or 0) if self.profile.context_in_non_torch else 0

    def to_json(self) -> dict:
        s = self.settings
        return {
            "model": {
                "id": self.spec.model_id, "architecture": self.spec.architecture,
                "params": self.params, "weight_bytes": self.weights_bytes,
                "kv_bytes_per_token": self.layout.kv_bytes_per_token,
                "attention": self.spec.attention_summary(),
            },
            "gpu": {"name": self.gpu_name, "total_bytes": self.gpu_total_bytes, "count": self.gpu_count,
                    "compute_capability": self.compute_capability,
                    # mixed cards: each pipeline stage's (name, torch total); the figures above are the tightest's
                    "stages": [{"name": n, "total_bytes": t} for n, t in
                               (self.inputs.get("stage_gpus") or [])] or None},
            "settings": {
                "vllm_version": s.vllm_version, "engine": self.profile.engine,
                "gpu_memory_utilization": s.gpu_memory_utilization, "max_model_len": self.max_model_len,
                "tensor_parallel_size": s.tensor_parallel_size, "pipeline_parallel_size": s.pipeline_parallel_size,
                "dtype": s.dtype, "kv_cache_dtype": s.kv_cache_dtype, "quantization": s.quantization,
                "max_num_seqs": s.max_num_seqs, "max_num_batched_tokens": s.max_num_batched_tokens,
                "block_size": self.layout.block_size, "enforce_eager": s.enforce_eager,
                "enable_prefix_caching": s.enable_prefix_caching, "enable_chunked_prefill": s.enable_chunked_prefill,
                "data_parallel_size": s.data_parallel_size, "enable_expert_parallel": s.enable_expert_parallel,
                "decode_context_parallel_size": s.decode_context_parallel_size,
                "speculative_method": s.speculative_method, "num_speculative_tokens": s.num_speculative_tokens,
                "pp_layer_partition": s.pp_layer_partition, "model_runner_v2": s.model_runner_v2,
                "usage": s.usage, "expandable_segments": s.expandable_segments,
            },
            "memory": {
                "budget_bytes": self.budget_bytes, "weights_bytes": self.weights_bytes,
                "activation_bytes": self.activation_bytes, "non_torch_bytes": self.non_torch_bytes,
                "cuda_graph_bytes": self.cuda_graph_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "other_process_bytes": self.inputs.get("other_process_bytes") or 0,
            },
            "gpu_blocks": self.gpu_blocks,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": round(self.max_concurrency, 4),
            "max_model_len": self.max_model_len,
            "max_model_len_fit": self.max_model_len_fit,
            "kv_needed_bytes": self.kv_needed_bytes,
            "fits": self.fits,
            "error_kind": self.error_kind,
            "era": self.profile.era,
            "suggestions": self.suggestions,
            "assumptions": self.assumptions,
        }


# ------------------------------------------------------------------------------------------
# Settings resolution
# ------------------------------------------------------------------------------------------


def resolve_dtype(spec: ModelSpec, settings: EngineSettings, profile: Profile,
                  compute_capability: str | None, assumptions: list[str]) -> str:
    """--dtype auto → the checkpoint dtype with vLLM's fp32 / pre-Ampere rules (vllm/config/model.py)."""
    want = (settings.dtype or "auto").lower()
    cfg = str(spec.torch_dtype or "").lower().replace("torch.", "")
    cc = cc_number(compute_capability)
    if want in ("half", "float16", "fp16"):
        return "float16"
    if want in ("bfloat16", "bf16"):
        return "bfloat16"
    if want in ("float32", "float", "fp32"):
        return "float32"
    if cfg in ("bfloat16", "float16"):
        if cfg == "bfloat16" and cc is not None and cc < 8.0 and profile.version >= (0, 9, 1):
            assumptions.append("bf16 checkpoint on a GPU below compute capability 8.0: vLLM ≥0.9.1 falls back to fp16")
            return "float16"
        return cfg
    if not cfg:
        assumptions.append("config has no torch_dtype: vLLM treats it as fp32 and loads fp16/bf16")
    if profile.version >= (0, 9, 1) and (cc is None or cc >= 8.0):
        return "bfloat16"
    return "float16"


def resolve_max_model_len(spec: ModelSpec, settings: EngineSettings, profile: Profile,
                          assumptions: list[str]) -> int:
    """vLLM's `_get_and_verify_max_len` (vllm/config/model.py; docs §3)."""
    derived, rtype = derived_max_model_len(spec, profile, assumptions)
    user = settings.max_model_len
    if user in (None, "auto"):
        # 0.11.2+: LongRoPE defaults to original_max_position_embeddings (vllm/config/model.py); the
        # legacy "su" type is renamed to longrope first (transformers_utils/config.py patch_rope_scaling_dict)
        if rtype in ("longrope", "su") and profile.version >= (0, 11, 2) \
                and spec.text.get("original_max_position_embeddings"):
            return int(spec.text["original_max_position_embeddings"])
        return int(derived)
    return int(user)


def length_over_config(spec: ModelSpec, settings: EngineSettings, profile: Profile) -> int | None:
    """The config's length when the user's max_model_len exceeds it and vLLM refuses to start:
    "User-specified max_model_len (L) is greater than the derived max_model_len …" unless
    model_max_length allows it or VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm/config/model.py
    _get_and_verify_max_len). None when the length is accepted."""
    user = settings.max_model_len
    if not isinstance(user, int) or settings.allow_long_max_model_len:
        return None
    derived, _ = derived_max_model_len(spec, profile, [])
    mml = spec.text.get("model_max_length")
    if user > derived and not (isinstance(mml, int) and mml > 0 and user <= mml):
        return int(derived)
    return None


def derived_max_model_len(spec: ModelSpec, profile: Profile, assumptions: list[str]) -> tuple[int, str]:
    """(the length vLLM derives from the config, the RoPE scaling type) — docs §3."""
    derived, key = spec.derived_max_len()
    if derived is None:
        derived = 2048
        assumptions.append("config has no max-length key: vLLM defaults to 2048")
    mml = spec.text.get("model_max_length")
    if profile.version >= (0, 8, 3) and isinstance(mml, int) and mml > 0:
        derived = mml
    if spec.model_type == "gemma2" and (0, 5, 1) <= profile.version <= (0, 6, 4) and spec.sliding_window:
        # vllm/config.py 0.5.1–0.6.4: Gemma 2's sliding window was unsupported, so vLLM disabled it
        # and capped the length to the window ("capping the max length to the sliding window size");
        # from 0.6.5 only when VLLM_ATTENTION_BACKEND=XFORMERS is set.
        derived = min(derived, spec.sliding_window)
        assumptions.append(f"vLLM {profile.release} caps Gemma 2 at its "
                           f"{spec.sliding_window}-token sliding window")
    rope = spec.rope_scaling or {}
    rtype = str(rope.get("rope_type") or rope.get("type") or "").lower()
    factor = rope.get("factor")
    if rope and rtype not in ("su", "longrope", "llama3", "default", "mrope", "proportional") \
            and not spec.model_type.startswith("gemma3"):
        if rtype in ("yarn", "deepseek_yarn", "deepseek_llama_scaling"):
            if profile.yarn_scales_max_len and factor:
                orig = rope.get("original_max_position_embeddings") or derived
                derived = int(orig * float(factor))
        elif factor:
            derived = int(derived * float(factor))
    return int(derived), rtype


def v0_capacity_divisor(profile: Profile, s: EngineSettings) -> int:
    """V0 0.8+ prints (and checks) a token capacity of block_size × (blocks // pipeline stages)
    (vllm/worker/worker.py raise_if_cache_size_invalid); older V0 and V1 do not divide."""
    return s.pipeline_parallel_size if profile.engine == "v0" and profile.version >= (0, 8, 0) else 1


def v0_driver_extra_bytes(est: Estimate) -> int:
    """What V0's driver worker (TP rank 0) adds to its profile peak over the other TP ranks.

    V0 gathers the logits to rank 0 only (LogitsProcessor._gather_logits, tensor_model_parallel_gather)
    and only the driver samples (vllm/worker/model_runner.py: non-driver workers return before
    sampling), so the driver profiles the sampler too and has the fewest KV blocks; the executor
    gives every worker the minimum (determine_num_available_blocks). 0 where ranks are alike."""
    s, profile = est.settings, est.profile
    if profile.engine != "v0" or s.tensor_parallel_size <= 1:
        return 0
    db = dtype_bytes(resolve_dtype(est.spec, s, profile, est.compute_capability, []), 2)
    return (activation_peak(est.spec, profile, s, db, [])
            - activation_peak(est.spec, profile, s, db, [], samples=False))


def graphs_captured_after_kv(est: Estimate) -> bool:
    """Does vLLM capture CUDA graphs that this budget holds none of (V2 before 0.29: after the KV
    cache is sized), as opposed to capturing none (eager) or not counting them (before 0.20)?"""
    return not est.cuda_graph_bytes and not est.settings.enforce_eager and graphs_budgeted(est.profile, est.settings) \
        and graphs_after_kv(est.profile, est.settings)


# ------------------------------------------------------------------------------------------
# The estimate
# ------------------------------------------------------------------------------------------


# the release whose FlashAttention backend asks an Intel GPU for blocks of 64 (flash_attn.py; not in 0.19.1)
XPU_FLASH_ATTN_BLOCK_FROM = (0, 20, 0)


def estimate(spec: ModelSpec, *, gpu_total_bytes: int, settings: EngineSettings | None = None,
             gpu_name: str = "", device_name: str = "", compute_capability: str | None = None,
             gpu_count: int | None = None, weights_bytes: int | None = None, other_process_bytes: int = 0,
             activation_bytes: int | None = None, non_torch_bytes: int | None = None,
             cuda_graph_bytes: int | None = None, stage_gpus: list[tuple[str, int]] | None = None,
             adjust: dict[str, tuple[str, float]] | None = None) -> Estimate:
    """Forward model for one rank. Overrides (weights/activation/…) come from a paste when read.

    `device_name`: the product vLLM's device query names where the catalog sizes it as `gpu_name`'s card
    (an A800 as the A100-SXM4-80GB); the defaults that test the name (engine/arg_utils.py) read it.
    `stage_gpus`: (name, torch total) of each pipeline stage's GPU when they differ (mixed cards).
    `adjust`: how measured figures differ from the model's, applied to the modelled parts of every
    rank or stage ({"weights_bytes": ("ratio", r), "activation_bytes": ("offset", d), …}); `rerun`
    sets it, so a fix is checked from the user's measured state even when it moves layers between
    pipeline stages of different cards.
    """
    inputs = dict(gpu_total_bytes=gpu_total_bytes, settings=settings, gpu_name=gpu_name, device_name=device_name,
                  compute_capability=compute_capability, gpu_count=gpu_count, weights_bytes=weights_bytes,
                  other_process_bytes=other_process_bytes, activation_bytes=activation_bytes,
                  non_torch_bytes=non_torch_bytes, cuda_graph_bytes=cuda_graph_bytes, stage_gpus=stage_gpus,
                  adjust=adjust)
    base = settings or EngineSettings()
    if base.pp_stage is None and base.pipeline_parallel_size > 1 and (
            base.pp_layer_partition or (stage_gpus and len({t for _n, t in stage_gpus}) > 1)):
        return _tightest_stage(spec, inputs)
    s = base.replace()
    assumptions: list[str] = list(spec.assumptions)
    _settle_release(spec, s, assumptions)
    default = profile_for(s.vllm_version, None) if s.engine is None and spec.model_type.startswith("mllama") else None
    if default is not None and default.engine == "v1" and default.version < (0, 10, 0):
        # mllama.py is SupportsV0Only through 0.9: vLLM runs it on the V0 engine
        s.engine = "v0"
        assumptions.append("Llama-3.2-Vision (mllama) runs on vLLM's V0 engine in this version")
    profile = profile_for(s.vllm_version, s.engine)
    s.engine = profile.engine
    if s.vllm_version is None:
        s.vllm_version = profile.release
        assumptions.append(f"vLLM version not given: assumed {s.vllm_version} ({profile.era})")
    if profile.version > parse_version(NEWEST):
        assumptions.append(f"vLLM {s.vllm_version} is newer than the newest release kvdoctor has read ({NEWEST}): "
                           f"modelled with {NEWEST}'s rules")
    unlisted = unlisted_architecture_note(spec.architecture, profile.version, profile.release, s.vllm_build)
    if unlisted:
        assumptions.append(unlisted)
    extensible = extensible_kv_cache(profile, s, gpu_name)
    utilization_given = s.gpu_memory_utilization is not None
    if s.gpu_memory_utilization is None:
        s.gpu_memory_utilization = EXTENSIBLE_UTILIZATION if extensible else profile.default_utilization
    pooling = pooling_runner(spec, s)
    s.runner = "pooling" if pooling else (s.runner or "generate")
    if pooling:
        assumptions.append(f"pooling model ({pooling}): vLLM loads no lm_head and its profile run ends in the "
                           "pooler, not the sampler; with CUDA graphs, PIECEWISE ones only")
    model_dtype = resolve_dtype(spec, s, profile, compute_capability, assumptions)
    s.dtype = s.dtype or "auto"
    mdb = dtype_bytes(model_dtype)
    kvb = kv_dtype_bytes_for(s, model_dtype, spec, profile, assumptions)
    s.kv_cache_dtype = s.kv_cache_dtype or "auto"
    kv_word = s.kv_cache_dtype.lower()
    since = KV_CACHE_DTYPE_FROM.get(kv_word)
    if not kv_dtype_exists(kv_word, profile.version):
        assumptions.append(f"--kv-cache-dtype {s.kv_cache_dtype} came with vLLM {version_text(since)}: "
                           f"{profile.release} rejects it; modelled with {kvb} byte(s) per value")
    elif kv_word.startswith(("octave_", "ultraquant_")):
        assumptions.append(f"--kv-cache-dtype {s.kv_cache_dtype}: a packed format (octave: ROCm) whose slot kvdoctor "
                           "does not model — counted as 1 byte per value, so the KV figures are rough")
    elif kv_word in TURBOQUANT_PRESETS and spec.is_hybrid_state and profile.version < TURBOQUANT_HYBRID_FROM:
        assumptions.append(f"vLLM {profile.release} refuses TurboQuant KV caches for hybrid (attention + Mamba) models "
                           f"(from {version_text(TURBOQUANT_HYBRID_FROM)} it quantizes their attention layers)")
    elif kv_word in ("nvfp4", "nvfp4_4over6") and spec.uses_mla and profile.version >= NVFP4_MLA_REFUSED_FROM:
        assumptions.append(f"vLLM {profile.release} refuses an nvfp4 KV cache for MLA models (config/vllm.py: "
                           "'nvfp4 KV cache is not supported with MLA')"
                           + ("; its sparse-MLA form is --kv-cache-dtype nvfp4_ds_mla"
                              if kv_dtype_exists("nvfp4_ds_mla", profile.version) else ""))
    auto_len = s.max_model_len == "auto"
    if auto_len and not profile.auto_max_model_len:
        assumptions.append(f"--max-model-len auto / -1 came with vLLM 0.14: {profile.release} rejects it; "
                           "modelled with the config's length (omit the flag for that)")
    max_len = resolve_max_model_len(spec, s, profile, assumptions)
    seqs_defaulted = s.max_num_seqs is None
    vllm_name = device_name or gpu_name     # what vLLM's name checks see
    doubled = performance_mode(profile, s) == "throughput"
    if seqs_defaulted:
        s.max_num_seqs = default_max_num_seqs(profile, gpu_total_bytes, vllm_name) * (2 if doubled else 1)
    chunked = v0_chunked_prefill(profile, max_len, spec, s) if profile.engine == "v0" else True
    if s.max_num_batched_tokens is None:
        item = mm_prefix_item_tokens(spec, s, profile)
        s.max_num_batched_tokens = default_max_num_batched_tokens(
            profile, s, max_len, s.max_num_seqs, gpu_total_bytes, vllm_name, chunked, spec.is_multimodal, doubled,
            mm_item_tokens=item)
        if item and s.max_num_batched_tokens == item:
            assumptions.append(f"vLLM {profile.release} raises the default max_num_batched_tokens to {item:,} for this "
                               "prefix-LM multimodal model: its largest media item (a 32-frame video) must fit in "
                               "one batch")
        if s.usage == "llm" and profile.engine == "v1":
            assumptions.append(f"the offline LLM(...) class: vLLM's default max_num_batched_tokens for it is "
                               f"{s.max_num_batched_tokens:,} (the API server's is smaller)")
    if seqs_defaulted and profile.engine == "v1" and profile.version >= (0, 10, 1):
        # engine/arg_utils.py 0.10.1+: a default max_num_seqs never exceeds max_num_batched_tokens
        s.max_num_seqs = min(s.max_num_seqs, s.max_num_batched_tokens)
    if profile.engine == "v0" and chunked and s.enable_chunked_prefill is None and max_len > 32768:
        assumptions.append(f"V0 turns chunked prefill on for max_model_len > 32K: max_num_batched_tokens "
                           f"{s.max_num_batched_tokens}")

    if s.block_size is None and spec.uses_mla and profile.engine == "v1" and profile.mla_cache \
            and profile.version >= (0, 8, 0) and cc_number(compute_capability):
        # V1 MLA backends force their block size (vllm/v1/attention/backends/mla/): FlashMLA on
        # Hopper 64, CUTLASS MLA on Blackwell 128; Triton MLA elsewhere keeps 16.
        cc = cc_number(compute_capability)
        if 9.0 <= cc < 10.0:
            s.block_size = 64
        elif cc >= 10.0:
            s.block_size = 128
    if s.block_size is None and profile.engine == "v1" and profile.version >= XPU_FLASH_ATTN_BLOCK_FROM \
            and not spec.uses_mla and not spec.is_hybrid_state and s.attention_backend in (None, "FLASH_ATTN") \
            and s.dtype != "float32" and is_xpu_card(gpu_name):
        # v1/attention/backends/flash_attn.py get_preferred_block_size (the 0.20.0 and 0.33.0 wheels): on an
        # Intel GPU vLLM's FlashAttention backend, its default there (platforms/xpu.py) but for MLA and float32,
        # takes blocks of at least 64 tokens ("Setting kv cache block size to 64 for FLASH_ATTN backend")
        s.block_size = 64
    cc = cc_number(compute_capability)
    s.compute_capability = cc
    # models/config.py 0.11.2–0.17: FlashInfer (the default backend there) does not take 16-token
    # blocks with head size 256 on Blackwell (flashinfer#1993): hybrid blocks align to 32
    s.hybrid_block_align = 32 if (profile.engine == "v1" and (0, 11, 2) <= profile.version < (0, 18, 0)
                                  and cc and 10.0 <= cc < 11.0 and not spec.uses_mla
                                  and spec.head_dim == 256) else None
    why_flashinfer = installed_flashinfer_sampler(profile, s, vllm_name)
    if why_flashinfer:
        s.flashinfer_sampler = True
        assumptions.append(why_flashinfer)
    if s.model_runner_v2 is None:
        s.model_runner_v2 = default_model_runner_v2(
            profile, spec.architecture, moe=spec.moe is not None, hybrid=spec.is_hybrid_state,
            # ModelConfig.is_quantized: the checkpoint's own quantization_config (an export kvdoctor
            # read through its base model's config carries one: spec.quantization from its name)
            quantized=bool(spec.quantization),
            attention_free=not spec.attention_layers, speculative_method=s.speculative_method,
            rocm=is_rocm_target(compute_capability),
            pipeline_parallel=s.pipeline_parallel_size)
        if s.model_runner_v2 and not profile.v2_runner_budgets_graphs:
            assumptions.append(f"vLLM {profile.release} runs this model on Model Runner V2 by default "
                               "(VLLM_USE_V2_MODEL_RUNNER unset)")
    if s.kv_cache_memory_bytes and not profile.kv_memory_flag:
        assumptions.append("--kv-cache-memory-bytes exists from vLLM 0.10.2; ignored for this version")
        s.kv_cache_memory_bytes = None
    # the drafter once per estimate: its layers (KV, graphs), its token count (Mamba blocks), its weights
    draft_info = drafter(spec, s, profile, assumptions)
    layout = kv_layout(spec, profile, s, kvb, mdb, assumptions, draft_info)
    if s.block_size is None:
        s.block_size = layout.block_size

    # ---- weights, activation, non-torch, graphs ----
    # the checkpoint's own weights even when a paste gave vLLM's figure: the two are compared
    offload = int(s.cpu_offload_gb * GiB)
    if offload and s.model_runner_v2 and profile.version < V2_RUNNER_OFFLOAD_FROM:
        # Model Runner V2 set no weight offloader until 0.28 (only v1/worker/gpu_model_runner.py
        # calls set_offloader(create_offloader(...)); vllm#51396, fixed by #51413)
        offload = 0
        assumptions.append(f"Model Runner V2 in vLLM {profile.release} ignores --cpu-offload-gb (vllm#51396, fixed "
                           "in 0.28): every weight stays on the GPU (VLLM_USE_V2_MODEL_RUNNER=0 offloads)")
    removed = removed_quant_method(params.weight_format_kind(spec, s.quantization), profile.version)
    if removed:
        method, gone = removed[0], version_text(removed[1])
        assumptions.append(f"vLLM {profile.release} cannot load {method} weights: {gone} removed them (it "
                           f"stops with \"Unknown quantization method: {method}\"); these figures are what they "
                           f"would take — serve them with a release before {gone}, or an AWQ / GPTQ / FP8 "
                           "export of the model")
    model_weights = max(0, _weights(spec, s, profile, model_dtype, assumptions if weights_bytes is None else [],
                                    with_mtp=draft_info[2], compute_capability=compute_capability,
                                    offload=offload) - offload)
    if layout.dsv4 is not None and profile.engine == "v1":
        model_weights += deepseek_v4_load_buffers(spec, s, profile)
    indices, workspace = sparse_mla_load_buffers(spec, s, profile, max_len)
    if workspace and weights_bytes is None:
        assumptions.append(f"sparse attention (DSA) with an fp8 KV cache: {SPARSE_MLA_WORKSPACE_WORDS}, "
                           f"{workspace / GiB:.2f} GiB, is reserved while the model loads, so vLLM's \"Model "
                           "loading took\" and these weights include it")
    model_weights += indices + workspace
    model_weights += deepstack_buffer_bytes(spec, s, profile, mdb)
    assistant = gemma4_assistant(spec.model_type, spec.hidden_size, s.speculative_method, s.speculative_model)
    if assistant is not None and draft_info[1] and not draft_info[2]:    # drafting on this stage (the last)
        model_weights += assistant.bytes_per_rank(mdb, s.tensor_parallel_size)
    lora = lora_buffer_bytes(spec, s, mdb, assumptions if weights_bytes is None else [], profile)
    model_weights += lora
    # V0 before 0.7.0 creates the LoRA slots after measuring the weights, so a printed "Loading model
    # weights took" leaves them out while its budget still counts them (activation.lora_budget_place)
    lora_beside_printed = lora if weights_bytes is not None and lora_budget_place(profile) == "beside" else 0
    # a figure vLLM printed ("Model loading took X GiB") is what the GPU holds, offloaded part already out
    weights_bytes = model_weights if weights_bytes is None else weights_bytes
    # what torch sees free when the profile run starts: the weights, the CUDA context and other processes
    # taken, nothing else yet
    s.gpu_memory_at_profile = (gpu_total_bytes,
                               max(0, gpu_total_bytes - weights_bytes - CUDA_CONTEXT - other_process_bytes))
    act = activation_peak(spec, profile, s, mdb, assumptions, max_len=max_len) if activation_bytes is None \
        else activation_bytes
    if activation_bytes is None:
        unnamed_sampler_note(spec, profile, s, mdb, act, max_len, assumptions)
        if profile.budget_rule == "v0_classic" and not is_rocm_target(compute_capability):
            act += V0_CLASSIC_CACHED_EXCESS
            assumptions.append(f"vLLM {profile.release} measures the profile run as the free memory it took, "
                               "with PyTorch's cached blocks still reserved: about "
                               f"{V0_CLASSIC_CACHED_EXCESS / GiB:.2f} GiB more than the tensors' own peak "
                               "(public 0.4–0.6.3 logs; vLLM 0.6.4+ empties the cache first)")
    nvswitch = on_nvswitch_board(gpu_name)
    nt = non_torch(profile, s, other_process_bytes, None if compute_capability else gpu_total_bytes, nvswitch,
                   arch=str(compute_capability or "")) \
        if non_torch_bytes is None else non_torch_bytes
    if lora_beside_printed and non_torch_bytes is None:
        nt += lora_beside_printed
        assumptions.append(f"--enable-lora: the {lora_beside_printed / GiB:.2f} GiB of adapter slots are not in the "
                           f"weights vLLM {profile.release} printed (it creates them after measuring), but its budget "
                           "counts them: added to the memory outside the profile's torch peak (0.6.5–0.6.6 print "
                           "them in non_torch_memory)")
    board = nvswitch_nccl(profile, s, nvswitch) if non_torch_bytes is None else 0
    context = CUDA_CONTEXT + other_process_bytes if profile.context_in_non_torch else 0
    if board and nt - context == board:      # the board's figure, not the general fit, is the estimate
        logs = ("PyTorch's NCCL 2.21 sets up every channel's buffers at start-up until vLLM 0.9: public logs of "
                "A100/A800 boards print 1.4–1.5 GiB at TP 2–4, of 8 × H200 7.2 GiB" if profile.version < NVSWITCH_NCCL_FROM
                else "public logs of H100/H200 boards print 1.4–2.5 GiB in 0.9–0.10 and about 0.6 GiB from 0.11")
        assumptions.append(f"NCCL over the NVSwitch board's links with tensor parallelism {s.tensor_parallel_size}: "
                           f"{board / GiB:.2f} GiB outside torch per GPU in vLLM {profile.release} ({logs}; an "
                           "estimate — the log's non_torch_memory line gives yours)")
    rocm = rocm_mi300_extra(profile, s, str(compute_capability or "")) if non_torch_bytes is None else 0
    if rocm:
        assumptions.append(f"vLLM {profile.release}'s ROCm build on an MI300-class card: hipBLASLt"
                           f"{' and RCCL (over xGMI)' if s.tensor_parallel_size > 1 else ''} add about "
                           f"{rocm / GiB:.1f} GiB outside torch (public MI300X logs of 0.6.2–0.6.4; a run with hipBLASLt "
                           "turned off had 1.7 GiB more KV cache)")
    held = cached_all_reduce_bytes(spec, profile, s, mdb)
    if held:
        assumptions.append(
            f"vLLM {profile.release} with tensor parallelism counts what PyTorch still caches after the profile "
            f"run, and the all-reduced activations wait on NCCL's stream before they can be reused: up to "
            f"{held / GiB:.1f} GiB (2 per layer × {s.max_num_batched_tokens:,} tokens × hidden) on top of this "
            "estimate, varying from run to run and capped by the free memory — the KV cache can be that much "
            "smaller (vllm PR #2031's Llama-2-70B TP 4: 20,865 blocks where the torch peak allows 31,000). "
            "vLLM 0.6.4+ empties the cache before measuring; a smaller max_num_batched_tokens shrinks it")
    # graphs vLLM captures after sizing the KV cache (before 0.20, or the early V2 runner) are not
    # a budget item even when the log prints their size
    after = graphs_outside_budget(profile, s)
    fi_graph = 0
    if after:
        graphs = 0
    elif cuda_graph_bytes is not None:
        graphs = cuda_graph_bytes
    else:
        graphs, fi_graph, fi_note = cuda_graph_parts(spec, profile, s, draft_info[0], attention_groups(layout))
        graphs += fi_graph
        if fi_note:
            assumptions.append(fi_note)
    if adjust:
        parts = {"weights_bytes": weights_bytes, "activation_bytes": act, "non_torch_bytes": nt, "cuda_graph_bytes": graphs}
        for key, (how, amount) in adjust.items():
            if key in parts and not (key == "cuda_graph_bytes" and after):
                parts[key] = int(parts[key] * amount) if how == "ratio" else int(amount) if how == "value" \
                    else max(0, parts[key] + int(amount))
        weights_bytes, act, nt, graphs = (parts["weights_bytes"], parts["activation_bytes"], parts["non_torch_bytes"],
                                          parts["cuda_graph_bytes"])
    if graphs_after_kv(profile, s) and graphs_budgeted(profile, s) and not s.enforce_eager:
        assumptions.append("V2 model runner: vLLM does not subtract CUDA-graph memory before sizing the KV "
                           "cache (its profile_cudagraph_memory returns 0); graphs are captured on top of it")
    budget = requested_bytes(profile, gpu_total_bytes, s.gpu_memory_utilization)
    if s.kv_cache_memory_bytes:
        kv_pool = s.kv_cache_memory_bytes
        assumptions.append("--kv-cache-memory-bytes set: vLLM skips profiling and ignores gpu_memory_utilization")
    else:
        kv_pool = budget - weights_bytes - act - nt - graphs
    reserved_pool = None
    if extensible:
        # vllm.EXTENSIBLE_KV_CACHE_FROM: the pool above is the estimate phase's ("Available KV cache
        # memory", the blocks reserved); after warmup vLLM commits what it measures, at most those
        reserved_pool = kv_pool
        headroom = act + graphs
        floor = KV_MARGIN_FLOOR_ROCM if is_rocm_target(compute_capability) else KV_MARGIN_FLOOR
        margin = max(floor, int(KV_MARGIN_FRACTION * headroom))
        used = weights_bytes + nt + graphs
        free_after = gpu_total_bytes - other_process_bytes - CUDA_CONTEXT - used
        measured = min(budget - used, free_after - margin) - headroom
        kv_pool = min(kv_pool, measured)
        assumptions.append(
            f"vLLM {profile.release} {EXTENSIBLE_NOTE}; "
            f"--gpu-memory-utilization {s.gpu_memory_utilization}{'' if utilization_given else ', its default there'}): "
            f"min(requested {budget / GiB:.2f} − in use {used / GiB:.2f}, free after warmup {free_after / GiB:.2f} − "
            f"margin {margin / GiB:.2f}) − headroom {headroom / GiB:.2f} = {measured / GiB:.2f} GiB, the margin "
            f"max({floor / GiB:.0f} GiB, 0.75 × headroom), the headroom the activation peak plus the CUDA-graph estimate "
            f"(warmup may raise it); the profile run's pool, {reserved_pool / GiB:.2f} GiB, is what its \"Available KV "
            "cache memory\" line prints")

    # ---- blocks and capacity ----
    bpb = layout.bytes_per_block
    blocks = max(0, kv_pool // bpb) if bpb else 0
    # Mamba prefix caching (vllm/v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes): the
    # "align" mode keeps 2 state blocks per running sequence instead of 1 — dev cases qevos (0.21) and
    # talos#1995 with --enable-prefix-caching match 2 blocks per Mamba group —, the "all" mode one per
    # block of the context (mamba_cache_mode says which, per version and model family).
    mamba_all = layout.mamba_mode == "all"
    mamba_extra = 1 if layout.mamba_mode == "align" else 0
    spec_k = draft_info[1]
    if spec_k and layout.state_bytes_per_request and profile.engine == "v1" and profile.version >= (0, 10, 2) \
            and (not mamba_all or profile.version >= (0, 26, 0)):
        mamba_extra += spec_k   # MambaSpec.num_speculative_blocks = num_speculative_tokens
    if layout.mamba_mode != "none":
        assumptions.append(
            f"prefix caching on ({'vLLM ≥ 0.28 default for hybrid models' if s.enable_prefix_caching is None else 'flag'}):"
            f" Mamba cache mode '{layout.mamba_mode}' keeps "
            + ("a state per block of each request" if mamba_all else "2 states per request per Mamba group"))
    tb = window_tokens(s, profile)
    # 0.28+ (kv_cache_utils extra_retained_tokens): a multi-module MTP drafter keeps k − 1 more tokens
    # in every windowed cache — DeepSeek-V4 checkpoints with more than one MTP layer
    dsv4_extra = spec_k - 1 if layout.dsv4 is not None and profile.version >= (0, 28, 0) \
        and (s.speculative_method or "").lower().endswith("mtp") and min(mtp_layers(spec), spec_k) > 1 else 0

    cp = dcp_ranks(profile, s)
    if s.decode_context_parallel_size > 1:
        if cp > 1:
            assumptions.append(f"decode context parallelism {cp}: each of {cp} ranks keeps every {cp}th token of a "
                               f"request, so a rank's KV cache holds {cp}× the tokens its memory alone would")
        else:
            assumptions.append(f"--decode-context-parallel-size is not in vLLM {profile.release} (V1 from "
                               f"{'.'.join(map(str, DCP_FROM))}): modelled without it")

    def blocks_needed(length: int) -> int:
        if layout.dsv4 is not None:
            return kv_deepseek_v4.blocks_per_request(layout.dsv4, length, tb, dsv4_extra)
        return sum(g.blocks_per_request(length, tb, profile, mamba_extra, mamba_all, cp) for g in layout.groups)

    check_layout = layout
    if profile.pp_global_check and s.pipeline_parallel_size > 1:
        # docs §1.11: 0.14.0–0.16.x checked once with the global (all stages') KV groups against the
        # smallest worker's available memory, over-estimating the need under PP.
        check_layout = kv_layout(spec, profile, s.replace(pipeline_parallel_size=1), kvb, mdb, [])
        assumptions.append("vLLM 0.14–0.16 checks the KV need of all pipeline stages against one stage's memory")

    def check_blocks(length: int) -> int:
        if check_layout.dsv4 is not None:
            # the admission check sums the groups' own counts (_max_memory_usage_bytes_from_groups)
            return sum(kv_deepseek_v4.group_blocks(g, length, tb, dsv4_extra) for g in check_layout.dsv4.groups)
        return sum(g.blocks_per_request(length, tb, profile, mamba_extra, mamba_all, cp) for g in check_layout.groups)

    def needed(length: int) -> int:
        return kv_needed_bytes(check_layout, profile, s, length, check_blocks, kvb, mdb, cp)

    check_pool = kv_pool - (bpb if profile.reserved_block else 0)
    need_blocks = blocks_needed(max_len) if layout.groups else 0
    kv_needed = needed(max_len)
    # an attention-free model (pure Mamba) on V0: vLLM sizes no KV blocks and checks none
    # (vllm/worker/worker.py raise_if_cache_size_invalid skips is_attention_free models; their Mamba
    # states are allocated apart, for max_num_seqs sequences)
    attention_free_v0 = profile.engine == "v0" and spec.kv_bytes_per_token() == 0
    if profile.engine == "v0":
        capacity = layout.block_size * (blocks // v0_capacity_divisor(profile, s))
        # the printed concurrency does not divide by the pipeline stages: blocks × block size / L
        # (vllm/executor/executor_base.py initialize_cache), though the capacity check does
        concurrency = blocks * layout.block_size / max_len if max_len else 0.0
        fits = blocks > 0 and max_len <= capacity
        fit_len = capacity
        if attention_free_v0:
            fits, fit_len = True, max_len
    else:
        concurrency = blocks / need_blocks if need_blocks else 0.0
        if profile.capacity_rule == "v1_blocks":
            capacity = blocks * layout.block_size * cp
            concurrency = capacity / max_len if max_len else 0.0
        elif profile.capacity_rule == "v1_groups":
            capacity = (blocks // max(1, layout.num_groups)) * min(g.block_size for g in layout.groups) * cp \
                if layout.groups else 0
        else:
            capacity = int(concurrency * max_len)
        fit_len = _largest_fitting(needed, check_pool, max_len)
        fits = kv_pool > 0 and kv_needed <= check_pool
    error = None
    # a hybrid model's decoding sequences each hold a Mamba state block: more sequences than blocks
    # (MAMBA_BLOCKS_CHECK_FROM, MAMBA_GRAPHS_CAPPED_FROM) where vLLM captures FULL CUDA graphs
    mamba_short = bool(layout.state_bytes_per_request) and profile.engine == "v1" and not s.enforce_eager \
        and 0 < blocks < s.max_num_seqs
    # free memory when vLLM takes its start-up snapshot: after this process's CUDA context is made
    startup_free = gpu_total_bytes - other_process_bytes - CUDA_CONTEXT
    cap = length_over_config(spec, s, profile)
    if cap is not None:
        # the engine's config check comes before any memory is touched
        error, fits = "max_model_len_derived", False
        assumptions.append(f"vLLM refuses --max-model-len {max_len:,}: the model's config allows {cap:,} tokens "
                           "(set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, or configure RoPE scaling, to go past it); "
                           "the memory figures are for the requested length")
    elif mamba_align_refused(layout, s, profile):
        # a settings check before any memory is touched (kv_layout.MAMBA_ALIGN_BATCH_CHECK)
        error, fits = "other", False
        assumptions.append(f"vLLM {profile.release} refuses this: \"In Mamba cache align mode, block_size "
                           f"({layout.block_size}) must be <= max_num_batched_tokens ({s.max_num_batched_tokens})\" "
                           "(prefix caching on a hybrid model); the memory figures are for these settings")
    elif profile.free_memory_check and not extensible and startup_free < budget:
        # vllm/v1/worker/gpu_worker.py init_device (0.9.1+; v1/worker/utils.py request_memory from
        # 0.14): free memory at start must cover T × u — also with --kv-cache-memory-bytes, and the
        # CUDA context is already out of it (so u ≈ 0.98+ fails on a 24 GB card with nothing else on it).
        # Not with the extensible KV cache (0.34): its budget is only a cap on what warmup measures
        error, fits = "free_memory_startup", False
        assumptions.append(f"only {startup_free / GiB:.2f} GiB is free at start-up (after the CUDA context, about "
                           f"{CUDA_CONTEXT / GiB:.2f} GiB) but vLLM asks for {budget / GiB:.2f} GiB "
                           "(utilization × total): it stops before loading")
    elif s.kv_cache_memory_bytes and kv_pool + weights_bytes + nt + act + graphs > startup_free:
        # --kv-cache-memory-bytes: vLLM skips profiling and allocates the pool asked for whatever the card has
        # left (v1/worker/gpu_worker.py determine_available_memory), so a pool the card cannot hold beside the
        # weights, the warm-up's activations and the CUDA graphs runs out of memory after the sizing
        error, fits = "cuda_oom_runtime", False
        assumptions.append(
            f"the {kv_pool / GiB:.2f} GiB KV pool --kv-cache-memory-bytes asks for, beside the weights, activations, "
            f"non-torch memory and CUDA graphs ({(weights_bytes + nt + act + graphs) / GiB:.2f} GiB), is more than the "
            f"{startup_free / GiB:.2f} GiB free at start-up: vLLM runs out of memory allocating the cache or warming up")
    elif (kv_pool <= 0 or blocks == 0) and not attention_free_v0:
        error = "no_cache_blocks"
    elif mamba_short and profile.version >= MAMBA_BLOCKS_CHECK_FROM:
        # Hybrid (Mamba / linear-attention) models: every decoding sequence holds one state block,
        # so vLLM refuses max_num_seqs above the number of blocks when it captures FULL graphs.
        error, fits = "mamba_blocks", False
    elif not fits:
        error = "kv_capacity_v0" if profile.engine == "v0" else "kv_capacity_v1"
    if mamba_short and MAMBA_GRAPHS_CAPPED_FROM <= profile.version < MAMBA_BLOCKS_CHECK_FROM:
        assumptions.append(f"max_num_seqs {s.max_num_seqs:,} is above the {blocks:,} Mamba state blocks: vLLM "
                           f"{profile.release} caps its CUDA-graph sizes at {blocks:,} and starts (from 0.20 it stops "
                           "with \"max_num_seqs … exceeds available Mamba cache blocks\")")
    if auto_len and profile.auto_max_model_len and error in ("kv_capacity_v0", "kv_capacity_v1") and fit_len > 0:
        # auto-fit only shortens the context: the start-up check and the Mamba-blocks check still fail
        assumptions.append(f"--max-model-len auto: vLLM reduces it from {max_len} to {fit_len}")
        max_len, fits, error = fit_len, True, None
    if layout.note:
        assumptions.append(layout.note)
    est = Estimate(
        spec=spec, profile=profile, settings=s, gpu_name=gpu_name, gpu_total_bytes=gpu_total_bytes,
        gpu_count=gpu_count or s.tensor_parallel_size * s.pipeline_parallel_size * s.data_parallel_size,
        compute_capability=compute_capability, budget_bytes=budget, weights_bytes=weights_bytes,
        activation_bytes=act, non_torch_bytes=nt, cuda_graph_bytes=graphs, kv_cache_bytes=kv_pool,
        layout=layout, gpu_blocks=blocks, kv_cache_tokens=capacity, max_concurrency=concurrency,
        max_model_len=max_len, max_model_len_fit=fit_len, kv_needed_bytes=kv_needed, fits=fits,
        error_kind=error, assumptions=_dedupe(assumptions), checkpoint_weights_bytes=model_weights,
        cached_all_reduce_bytes=held, flashinfer_graph_bytes=fi_graph if graphs else 0,
        reserved_pool_bytes=reserved_pool,
        request_kv_bytes=layout.bytes_per_block * need_blocks if layout.dsv4 is None else kv_needed,
    )
    est.inputs = inputs
    est.own_assumptions = tuple(est.assumptions)
    return est


def _settle_release(spec: ModelSpec, s: EngineSettings, assumptions: list[str]) -> None:
    """The release to model where the settings name a word for the newest ("latest", "nightly") or none
    at all and the newest release no longer serves the model (its registry dropped the architecture):
    then the last release that did. Other unnamed releases are the profile's default (estimate)."""
    if str(s.vllm_version or "").strip().lower() in NEWEST_WORDS:
        assumptions.append(f"vLLM {s.vllm_version!r} read as {NEWEST}, the newest release kvdoctor has read")
        s.vllm_version = NEWEST
    base = branched_release(s.vllm_version)
    if base:        # `kvdoctor estimate --vllm-version 0.20.1rc1.dev23`: as `explain` models that build
        s.vllm_build, s.vllm_version = build_name(s.vllm_version), base
        assumptions.append(branched_build_note(s.vllm_build, base))
    dropped_by = release_serving(spec.architecture, parse_version(NEWEST)) if s.vllm_version is None else None
    if dropped_by:
        s.vllm_version = dropped_by
        assumptions.append(f"vLLM version not given: assumed {dropped_by}, the last release whose model registry "
                           f"lists {spec.architecture}")


def _tightest_stage(spec: ModelSpec, inputs: dict) -> Estimate:
    """Size every pipeline stage on its own GPU and return the one with the fewest blocks.

    vLLM profiles each worker separately (its own layers, its own card; logits and the sampler
    on the last stage only) and gives every stage the minimum block count (docs §1.11;
    vllm/v1/core/kv_cache_utils.py, V0 executor: min over workers). Used when the stages differ
    by more than vLLM's default split: a VLLM_PP_LAYER_PARTITION, or GPUs of different sizes.
    """
    s = inputs["settings"]
    pp = s.pipeline_parallel_size
    gpus = inputs.get("stage_gpus") or []
    profile = profile_for(s.vllm_version, s.engine)
    sizes = stage_sizes(spec, profile, pp, s.pp_layer_partition)
    best: Estimate | None = None
    per_stage = []
    start = 0
    for i in range(pp):
        name, total = gpus[i] if i < len(gpus) else (inputs["gpu_name"], inputs["gpu_total_bytes"])
        stage_inputs = {**inputs, "settings": s.replace(pp_stage=i), "gpu_total_bytes": total, "gpu_name": name,
                        "stage_gpus": None,
                        "device_name": inputs.get("device_name") if name == inputs["gpu_name"] else ""}
        e = estimate(spec, **stage_inputs)
        per_stage.append(f"stage {i} ({name}, layers {start}–{start + sizes[i] - 1}): "
                         f"{e.kv_cache_bytes / GiB:.2f} GiB of KV, {e.gpu_blocks:,} blocks")
        start += sizes[i]
        if best is None or (e.gpu_blocks, e.kv_cache_bytes) < (best.gpu_blocks, best.kv_cache_bytes):
            best = e
    assert best is not None
    part = s.pp_layer_partition
    if part and (len(part) != pp or sum(part) != spec.num_layers):
        best.assumptions.append(f"VLLM_PP_LAYER_PARTITION={','.join(map(str, part))} does not give {pp} stages summing "
                                f"to the model's {spec.num_layers} layers: vLLM refuses to start with it; sized "
                                "with vLLM's own split instead")
    stage = best.settings.pp_stage
    best.assumptions.append(f"pipeline stages sized one by one; vLLM gives every stage the block count of the "
                            f"tightest, stage {stage}: " + "; ".join(per_stage))
    best.settings.pp_stage = None
    best.tightest_stage = stage
    best.inputs = inputs
    best.own_assumptions = tuple(best.assumptions)
    return best


def rerun(est: Estimate, spec: ModelSpec | None = None, **changes) -> Estimate:
    """The same estimate with some settings changed (advice re-checks every fix this way), or with
    another checkpoint of the model (`spec`).

    Figures measured in a paste (weights, activation, non-torch, graphs) are carried over and
    moved by what the model says the change does: weights scale by the modelled ratio (tp,
    quantization), the others shift by the modelled difference (batch sizes, V0's Tb = f(L)).
    Another checkpoint's weights are its own: what the paste measured is the served checkpoint's.
    """
    inputs = dict(est.inputs)
    base = inputs.pop("settings") or EngineSettings()
    new = base.replace(**changes)
    if "tensor_parallel_size" in changes or "pipeline_parallel_size" in changes:
        inputs["gpu_count"] = None
    keys = ("weights_bytes", "activation_bytes", "non_torch_bytes", "cuda_graph_bytes")
    if spec is not None:
        inputs["weights_bytes"] = None
    measured = {k: inputs[k] for k in keys if inputs.get(k) is not None}
    if measured:
        # Measured parts become their difference from the model (a ratio for the weights, an offset
        # for the rest), applied to the changed model on every rank/stage: the model says what the
        # change does, the measurement what the model missed.
        bare = {**inputs, **{k: None for k in keys}, "adjust": None}
        old_model = estimate(est.spec, settings=base, **bare)
        adjust = dict(inputs.get("adjust") or {})
        for k, v in measured.items():
            o = getattr(old_model, k)
            # a negative CUDA-graph estimate is vLLM's own artifact (free memory grew while it measured,
            # unified-memory boards such as GB10): kept as printed, as vLLM would measure it again; so is
            # one the old settings did not subtract (0.18–0.19 without VLLM_MEMORY_PROFILER_ESTIMATE_
            # CUDAGRAPHS), which is no offset from the model's own
            adjust[k] = ("ratio", v / o if o else 1.0) if k == "weights_bytes" else \
                ("value", v) if k == "cuda_graph_bytes" and (v < 0 or not o) else ("offset", v - o)
            inputs[k] = None
        inputs["adjust"] = adjust
    out = estimate(spec or est.spec, settings=new, **inputs)
    out.params, out.gpu = est.params, est.gpu
    return out


def _largest_fitting(needed, available: int, upper: int) -> int:
    """vLLM's binary search for the largest L in [1, upper] with needed(L) ≤ available (0 if none)."""
    if available <= 0 or needed(1) > available:
        return 0
    if needed(upper) <= available:
        return upper
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if needed(mid) <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo


# How each MXFP4 MoE backend holds the experts (vllm/model_executor/layers/quantization/mxfp4.py):
# Marlin pads the per-rank intermediate size to 128 and hidden to 256 (its kernel needs n % 256 and
# k % 128); FlashInfer on SM100 (TRT-LLM / BF16) pads both to 256, its CUTLASS path and the SM90
# FlashInfer path to 128; Triton (triton_kernels) pads the intermediate to 64, swizzles the scales
# into new tensors while the loaded ones stay registered, and upcasts the biases to fp32. Checked
# on gpt-oss: 120b on an H100 with 0.10.1.1 (Marlin warning) printed 65.97 GiB, Marlin layout
# 65.93; 120b with 0.14.1 ("Using Triton backend") 64.38, Triton layout 64.19; 20b on an A100
# with 0.19.0 13.72, Marlin 13.70; 20b on a 3090 with the gpt-oss launch build (before 0.10.1
# brought Marlin MXFP4 MoE) 12.88, unpadded 12.83.
MXFP4_LAYOUTS = {
    "Marlin": Mxfp4Layout("Marlin", 128, 256),
    "Triton": Mxfp4Layout("Triton", 64, 1, scale_copies=2, bias_bytes=4),
    "FlashInfer SM100": Mxfp4Layout("FlashInfer SM100", 256, 256),
    "FlashInfer SM100 CUTLASS": Mxfp4Layout("FlashInfer SM100 CUTLASS", 128, 128),
    "FlashInfer SM90": Mxfp4Layout("FlashInfer SM90", 128, 128),
    "unpadded": Mxfp4Layout("gpt-oss launch build", 1, 1),
}
# Hopper runs Triton once triton_kernels ships with vLLM (utils/import_utils.py has_triton_kernels:
# the `triton_kernels` package or vllm.third_party.triton_kernels), else Marlin. The wheels from 0.10.1
# to 0.11.2 neither carry nor require it; 0.12.0's is the first with vllm/third_party/triton_kernels.
# Logs agree: 0.10.1.1 used Marlin (vllm#23278), 0.14.1 Triton (vllm#33155), and a gpt-oss-120b H100
# log of late October 2025 (0.11.0's line numbers, u 0.95, Tb 1,024) left 1.71 GiB of KV cache:
# Marlin's weights give 1.87, Triton's 3.59.
MXFP4_HOPPER_TRITON_FROM = (0, 12, 0)


def mxfp4_backend(profile: Profile, compute_capability: str | None, named: str | None) -> str:
    """The MXFP4 MoE backend vLLM picks (mxfp4.py get_mxfp4_backend), or the one a log named."""
    if named in MXFP4_LAYOUTS:
        return named
    if profile.version < (0, 10, 1):
        return "unpadded"
    cc = cc_number(compute_capability) or 9.0
    if 10.0 <= cc < 11.0:
        return "FlashInfer SM100"
    if 9.0 <= cc < 10.0:        # triton_kernels: SM90 and SM100 only
        return "Triton" if profile.version >= MXFP4_HOPPER_TRITON_FROM else "Marlin"
    return "Marlin"


# What makes vLLM run a model as a pooling model (embedding, reranking, reward), when no --runner /
# --task / --convert says so (vllm/config/model.py _get_default_runner_type): an architecture its registry
# lists as one, or whose suffix maps to the pooling runner (_SUFFIX_TO_DEFAULTS), or a Sentence
# Transformers repo (a modules.json: Qwen3-Embedding keeps Qwen3ForCausalLM), which the name says here.
POOLING_ARCH_SUFFIXES = ("ForSequenceClassification", "ForTokenClassification", "ForRewardModeling",
                         "RewardModel", "ForProcessRewardModel", "EmbeddingModel", "EmbedModel", "ForTextEncoding",
                         "ClassificationModel", "ForEmbedding")
# decoder backbones the registry serves as embedding models (models/registry.py _EMBEDDING_MODELS)
POOLING_ARCHITECTURES = ("LlamaModel", "MistralModel", "Qwen2Model", "Gemma2Model", "GritLM")
_EMBEDDING_NAME = ("embedding", "-embed-", "_embed_")


def pooling_runner(spec: ModelSpec, s: EngineSettings) -> str | None:
    """Why vLLM runs this model with the pooling runner, or None (the generate runner). A pooling
    model's profile run ends in its pooler, not the sampler (v1/worker/gpu_model_runner.py
    profile_run: _dummy_pooler_run), and it loads no lm_head (model_executor/models/adapters.py deletes
    it); the pooler's own output (one vector per request) is small beside the forward."""
    if s.runner == "pooling":
        return "the run is a pooling (embedding / scoring) run"
    if s.runner == "generate":
        return None
    arch = spec.architecture or ""
    if arch in POOLING_ARCHITECTURES or arch.endswith(POOLING_ARCH_SUFFIXES):
        return f"{arch} is a pooling architecture in vLLM"
    if isinstance((spec.companions or {}).get("sentence_bert_config.json"), dict):
        return "the repo is a Sentence Transformers model (its sentence_bert_config.json), which vLLM serves as one"
    name = (spec.model_id or "").lower().rsplit("/", 1)[-1] + "-"
    if any(w in name for w in _EMBEDDING_NAME):
        return ("the model's name says it is an embedding model (a Sentence Transformers repo, which vLLM serves "
                "with its pooling runner; --runner generate says otherwise)")
    return None


# vllm/model_executor/layers/rotary_embedding.py MRotaryEmbedding (from 0.7.2, the release that added
# Qwen2.5-VL): its cos/sin cache holds 4 × max_position_embeddings positions, for the long position
# indices of videos. A later vLLM can bound it to max_model_len for a model class that certifies its
# positions (vllm/config/model.py mrope_cache_max_position); the release that ships that is not known
# here, so it is not modelled (logs up to 0.27 print the 4 ×).
MROPE_CACHE_FACTOR, MROPE_CACHE_FACTOR_FROM = 4, (0, 7, 2)


def _weights(spec: ModelSpec, s: EngineSettings, profile: Profile, model_dtype: str, assumptions: list[str],
             with_mtp: bool, compute_capability: str | None = None, offload: int = 0) -> int:
    # Advice re-runs the model dozens of times per reply: weights depend only on these inputs.
    st = getattr(spec, "safetensors_bytes_by_dtype", None)
    ep = s.tensor_parallel_size * s.data_parallel_size if (s.enable_expert_parallel and spec.moe) else 1
    pp = s.pipeline_parallel_size
    part = tuple(stage_sizes(spec, profile, pp, s.pp_layer_partition)) if pp > 1 else None
    layout = MXFP4_LAYOUTS[mxfp4_backend(profile, compute_capability, s.mxfp4_backend)]
    vision = not vision_tower_skipped(spec, s, profile)
    audio = not audio_tower_skipped(spec, s, profile)
    if s.language_model_only and profile.version < (0, 17, 0):
        assumptions.append("--language-model-only is a vLLM 0.17+ flag: this release refuses it "
                           "(use --limit-mm-per-prompt with every modality at 0)")
    absorption, rope_per_layer = profile.mla_matrix_absorption, profile.rope_cache_per_layer
    head = s.runner != "pooling"       # adapters.py: a pooling model deletes lm_head and skips its weights
    replicated = vision and vision_replicated(spec, s, assumptions)
    mrope = MROPE_CACHE_FACTOR if profile.version >= MROPE_CACHE_FACTOR_FROM else 1
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set by the user, or by Unsloth for the vLLM it starts):
    # a segment grows page by page and blocks do not keep a 2 MiB-rounded remainder
    slack = not s.expandable_segments
    key = (model_dtype, s.quantization, s.tensor_parallel_size, pp, ep, tuple(sorted(st.items())) if st else None,
           with_mtp, s.pp_stage, part, layout, vision, audio, absorption, rope_per_layer, head, replicated, mrope,
           slack)
    cache = spec.__dict__.setdefault("_weights_cache", {})
    if key not in cache:
        cache[key] = params.weight_bytes(spec, dtype=model_dtype, quantization=s.quantization,
                                         tp=s.tensor_parallel_size, pp=s.pipeline_parallel_size, ep=ep,
                                         safetensors_bytes_by_dtype=st, with_mtp=with_mtp,
                                         pp_rank=s.pp_stage if s.pipeline_parallel_size > 1 else None,
                                         layer_partition=list(part) if part else None, mxfp4_layout=layout,
                                         with_vision=vision, with_audio=audio, mla_absorption=absorption,
                                         rope_per_layer=rope_per_layer, with_lm_head=head,
                                         vision_replicated=replicated, mrope_factor=mrope,
                                         allocator_blocks=slack)
    wb = cache[key]
    assumptions.extend(wb.assumptions)
    blocks = wb.bytes_by_part.get("allocator_blocks", 0)
    if offload and blocks:
        # --cpu-offload-gb moves whole weights to the host: their blocks go with them (in proportion)
        blocks = min(blocks, blocks * offload // max(1, wb.bytes_total - blocks))
        return wb.bytes_total - blocks
    return wb.bytes_total


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for it in items:
        if it not in seen:
            seen.add(it)
            out.append(it)
    return out


__all__ = ["Estimate", "Reconciliation", "estimate", "rerun"]
