"""The activation peak of vLLM's profile run (P): the forward pass, the sampler's dummy run, the
encoders, LoRA and other buffers the run allocates, as each version measures it.
"""

from __future__ import annotations

import dataclasses

from estimator.attention_backend import FLASHMLA_SPARSE
from estimator.forward import (
    bnb_dequant_bytes,
    forward_bytes,
    marlin_input_copy_bytes,
    marlin_moe_unchunked,
    unchunked_batch,
)
from estimator.gpus import cc_number
from estimator.multimodal_profile import (
    dummy_item,
    encoder_profile,
    media_per_prompt,
    v0_dummy_pixel_bytes,
    v0_pixel_copies,
    vision_tower_skipped,
)
from estimator.spec import MLA, ModelSpec
from estimator.units import GiB, MiB
from estimator.vllm import (
    FLASHINFER_SAMPLER_ANY_FROM,
    FLASHINFER_SAMPLER_OPT_IN_FROM,
    SAMPLER_BYTES_FLASHINFER,
    SAMPLER_BYTES_V0,
    V1_SAMPLER_PROFILED_FROM,
    EngineSettings,
    Profile,
    ceil_div,
    native_sampler_bytes,
    sampler_bytes,
    v0_text_only_dummy,
    v2_sampler_bytes,
)

# V1's dummy sampler run with speculative decoding (gpu_model_runner.py _dummy_sampler_run): after the
# sampler, the rejection sampler runs on torch.randn logits of one draft row and one bonus row per request
# (2R × V in the model dtype) and samples the bonus tokens from its own copy of the bonus rows with the
# same sampler, so the peak is the sampler's plus 3 × dtype bytes per R × V element. The earlier form
# (R draft rows, bonus token ids given) stays under the sampler's own peak. 0.10's code has the earlier
# form, the current code the later; 0.11.0 is taken as the boundary, not checked release by release.
V1_REJECTION_BONUS_FROM = (0, 11, 0)
# Model Runner V2's profile peak above the code's forward and sampler: torch.compile's first compile
# runs inside the profiled forward. One setup measured it: Qwen3-8B on an RTX 4090 with 0.27.1 printed
# a 1.18 GiB peak with a cold compile cache and 0.19 GiB with a warm one (0.99 GiB apart); warm-cache V2
# logs print the code's figures (vllm PR48601's Qwen3.6-27B TP 4: 1.54 GiB = its 1,024-row sampler, an
# RTX PRO 6000 Qwen3-32B TP 2 on 0.27.1: 1.38 GiB). A paste seldom says which, and most are first runs:
# scanned from 0.6 to 1.5 GiB over the 78 V2-runner KV figures of the collected public logs (not
# dev.jsonl, where PR48601 is the only one), every value from 0.75 to 1.0 beats V1's fitted 29 B sampler
# (since refitted to 16 B on V1-runner logs) that V2 took before; 0.9 GiB is the best: the 68 figures of logs with a version or a date go from a
# 5.0% to a 2.7% median (38 → 50 within 5%), while 10 undated ones — modelled as the newest release,
# though most ran V1's runner — lose (4 → 1 within 5%). Not with --enforce-eager (nothing compiles), nor where the
# log shows a warm cache ("Directly load the compiled graph(s) … from the cache", paste.py).
# dev.jsonl's PR48601: 7.6% → 0.8%.
V2_FIRST_COMPILE = int(0.9 * GiB)


def activation_peak(spec: ModelSpec, profile: Profile, s: EngineSettings, model_dtype_bytes: int,
                    assumptions: list[str], samples: bool = True, max_len: int | None = None) -> int:
    """Torch peak increase of the profile run (docs §1.10, §6): max(forward(Tb), sampler(S')), in V1 with
    the dummy encoder outputs and the dummy media's pixels held beside them, or the vision encoder's own
    peak (with those pixels) if larger.

    `samples` False: a rank that runs no sampler (a V0 worker other than the driver)."""
    tp = s.tensor_parallel_size
    tb, seqs = s.max_num_batched_tokens or 2048, s.max_num_seqs or 256
    encoder, mm_tokens, outputs, pixels, pixel_copy = encoder_profile(spec, profile, s, model_dtype_bytes,
                                                                      assumptions, max_len)
    encoder += pixels + pixel_copy
    tokens = tb
    if profile.engine == "v0" and mm_tokens and v0_text_only_dummy(profile.version, spec.model_type, mm_tokens, tb):
        assumptions.append(f"V0 profile run: one dummy prompt's {mm_tokens:,} media tokens exceed "
                           f"max_num_batched_tokens {tb:,}, so vLLM {profile.release} profiles a text-only prompt of "
                           f"{tb:,} tokens (\"too short to hold the multi-modal embeddings\" in its log): the vision "
                           "encoder's peak is not set aside, and the first large image must find room at run time")
        encoder = mm_tokens = 0
        seqs = 1
    if profile.engine == "v0" and mm_tokens:
        # V0 profiles multimodal models with fewer, media-carrying dummy sequences:
        # max_num_seqs → min(S, Tb // max_mm_tokens), at least 1 (vllm/worker/model_runner.py), and a
        # dummy prompt is never cut to Tb // S: when the media tokens do not fit, V0 only warns
        # ("The sequence length used for profiling … is too short to hold the multi-modal embeddings")
        # and runs the whole prompt (vllm/multimodal/profiling.py get_decoder_dummy_data).
        seqs = max(1, min(seqs, tb // mm_tokens))
        tokens = seqs * max(tb // seqs, mm_tokens)
        if tokens > tb:
            assumptions.append(f"V0 profile run: {seqs} dummy prompt(s) of {mm_tokens:,} media tokens, "
                               f"{tokens:,} tokens through the language model (more than "
                               f"max_num_batched_tokens {tb:,})")
    marlin = marlin_input_copy_bytes(spec, profile, s, tokens, model_dtype_bytes)
    forward = forward_bytes(spec, s, tokens, model_dtype_bytes, profile) \
        + bnb_dequant_bytes(spec, profile, s, model_dtype_bytes) + marlin
    if marlin:
        assumptions.append(f"Marlin (the AWQ/GPTQ kernel) copies the MLP down projection's input in the profile "
                           f"run before vLLM 0.9: {marlin / GiB:.2f} GiB in the forward's peak")
    if profile.engine == "v0" and mm_tokens and not spec.model_type.startswith("mllama"):
        # the dummy media's pixels stay on the GPU through the tower and then the LLM, and the tower
        # encodes a model-dtype copy of them (v0_dummy_pixel_bytes); Llama-3.2-Vision's V0 path is
        # its own fit (_mllama_v0_encoder_peak)
        kept, copy = v0_dummy_pixel_bytes(spec, profile, model_dtype_bytes, seqs,
                                          *media_per_prompt(s, dummy_item(spec).video))
        forward += kept
        encoder += kept + copy
        twice = ", twice: the batch and the copy the model's input check concatenates" \
            if v0_pixel_copies(spec, profile) > 1 else ""
        assumptions.append(f"V0 keeps the dummy media's pixels on the GPU through the whole profile run{twice} "
                           f"({kept / GiB:.2f} GiB" + (", float32 as the image processor gives them, and the "
                                                        f"tower's {copy / GiB:.2f} GiB model-dtype copy" if copy else "")
                           + ")")
    rows = min(seqs, tb)
    vocab = spec.vocab_size
    if profile.engine == "v0":
        per_elem = SAMPLER_BYTES_V0
    elif profile.version >= V1_SAMPLER_PROFILED_FROM:
        # the release's sampler for these rows, or the one the log (or VLLM_USE_FLASHINFER_SAMPLER)
        # names: FlashInfer's kernel samples without sorting the vocabulary (≈ 10 B), the PyTorch-native
        # path sorts it (≈ 38 B) or, from 0.17, masks it with a Triton kernel (14 B; ≈ 16 B measured
        # from 0.21, where it runs twice); see vllm.py
        per_elem = sampler_bytes(profile.version, s.flashinfer_sampler, rows)
    else:
        per_elem = 0        # V1 0.7.x: the logits alone (below)
    sampler = rows * vocab * per_elem
    if s.pp_stage is not None and s.pp_stage != s.pipeline_parallel_size - 1 or not samples:
        sampler = 0     # logits and the sampler run on the last pipeline stage only
    if sampler and profile.engine == "v1" and s.speculative_method and profile.version >= V1_REJECTION_BONUS_FROM:
        sampler += rows * vocab * 3 * model_dtype_bytes     # the rejection sampler's dummy run (above)
    if sampler and _v2_profiled(spec, profile, s):
        # Model Runner V2 (by default from 0.22, vllm.py default_model_runner_v2) samples its dummy
        # batch with its own sampler: the code's bytes (vllm.v2_sampler_bytes), not V1's fitted ones;
        # its first compile adds to the forward (V2_FIRST_COMPILE)
        sampler = int(rows * vocab * v2_sampler_bytes(profile.version, tp))
    if v2_first_compile(spec, profile, s):
        forward += V2_FIRST_COMPILE
        assumptions.append(f"Model Runner V2: the profile peak includes {V2_FIRST_COMPILE / GiB:.1f} GiB for "
                           "torch.compile's first compile (a cold compile cache, as on a first start; with a "
                           "warm cache vLLM measures up to that much less and the KV cache gets it)")
    if profile.logits_all_tokens:
        sampler = max(sampler, tb * vocab * 2 * 2)  # bf16 logits + fp32 upcast for all Tb tokens
    elif profile.engine == "v1" and profile.version < V1_SAMPLER_PROFILED_FROM:
        sampler = rows * vocab * 4
    if s.runner == "pooling":
        sampler = 0     # a pooling model ends its profile run in the pooler: no logits, no sampler
    if profile.engine == "v1" and spec.deepseek_v4_layers:
        return deepseek_v4_profile_peak(spec, profile, s, tb, max_len or s.max_model_len or 0, sampler)
    routed = unchunked_batch(spec, profile, s, tokens)
    if routed:
        # other releases chunk (forward.FUSED_MOE_CHUNKS): say so where the batch is wider than their chunks
        kernel = "the experts run on Marlin (fused_marlin_moe), whose workspaces" \
            if marlin_moe_unchunked(spec, profile, s) else "the fused MoE kernel's workspaces"
        assumptions.append(f"{kernel} hold all {routed:,} tokens at once in this release, not a chunk of them")
    # V1 holds the dummy encoder outputs and the dummy media's pixels while the language model and the
    # sampler run (gpu_model_runner.py profile_run: encoder_cache["tmp"] and batched_dummy_mm_inputs);
    # Model Runner V2 moves the pixels to the GPU inside the encoder's call (encoder_runner.py
    # execute_mm_encoder), so there they count only in the encoder's peak
    if s.model_runner_v2:
        pixels = 0
    peak = max(max(forward, sampler) + outputs + pixels, encoder)
    if profile.engine == "v0" and spec.state_layers:
        # V0 allocates the Mamba state for max_num_seqs inside the first forward (docs §1.10).
        peak += seqs * sum(lk.state_bytes(tp, model_dtype_bytes) for lk in spec.state_layers)
    return peak


# The smallest profile-peak difference between V1's two samplers worth a note: under it the
# forward, not the sampler, sets the peak and which sampler ran hardly moves the KV cache.
SAMPLER_NOTE_MIN = 256 * MiB


def unnamed_sampler_note(spec: ModelSpec, profile: Profile, s: EngineSettings, model_dtype_bytes: int,
                          act: int, max_len: int | None, assumptions: list[str]) -> None:
    """0.9.0–0.11.0 sample with FlashInfer wherever it is importable (vllm.installed_flashinfer_sampler):
    a pip install without it runs the PyTorch-native sampler, which this estimate counts, and one with
    it measures a smaller peak. A run that does not say which gets the difference named: a vLLM
    0.10.1.1 Qwen2-7B on A100s (dennislee22/vLLM-benchmarking) printed 11.03 GiB of KV where its log
    says "FlashInfer is not available" (the native peak: 0.7% from this estimate) and about 1 GiB
    more than the native peak leaves on cards whose log says "Using FlashInfer for top-p & top-k
    sampling"."""
    if s.flashinfer_sampler is not None or profile.engine != "v1" \
            or not FLASHINFER_SAMPLER_ANY_FROM <= profile.version < FLASHINFER_SAMPLER_OPT_IN_FROM:
        return
    rows = min(s.max_num_seqs or 256, s.max_num_batched_tokens or 2048)
    if rows * spec.vocab_size * (native_sampler_bytes(profile.version, rows) - SAMPLER_BYTES_FLASHINFER) \
            < SAMPLER_NOTE_MIN:
        return      # the samplers cannot differ by that much: no second profile estimate
    alt = activation_peak(spec, profile, dataclasses.replace(s, flashinfer_sampler=True), model_dtype_bytes, [],
                          max_len=max_len)
    if act - alt >= SAMPLER_NOTE_MIN:
        assumptions.append(
            f"the profile peak counts vLLM's PyTorch-native top-k/top-p sampler (a pip install without FlashInfer); "
            f"where FlashInfer is installed (the vllm/vllm-openai image has it; `pip install flashinfer-python` adds it) "
            f"vLLM {profile.release} samples with it, measures about {(act - alt) / GiB:.2f} GiB less and gives that "
            "to the KV cache — the log's \"Using FlashInfer for top-p & top-k sampling\" or \"FlashInfer is not "
            "available\" line says which ran")


def _v2_profiled(spec: ModelSpec, profile: Profile, s: EngineSettings) -> bool:
    """Model Runner V2's own profile run (its sampler, its first compile); DeepSeek-V4 keeps the peak its
    own model was checked with (deepseek_v4_profile_peak)."""
    return profile.engine == "v1" and bool(s.model_runner_v2) and not spec.deepseek_v4_layers


def v2_first_compile(spec: ModelSpec, profile: Profile, s: EngineSettings) -> bool:
    """Does the profile peak hold Model Runner V2's first-compile allowance (V2_FIRST_COMPILE)?"""
    return _v2_profiled(spec, profile, s) and not s.enforce_eager and not s.compile_cache_warm


def deepseek_v4_load_buffers(spec: ModelSpec, s: EngineSettings, profile: Profile) -> int:
    """Buffers DeepSeek-V4 builds with the model, so inside vLLM's "Model loading took" figure
    (models/deepseek_v4/nvidia/model.py): the MTP hidden-state buffer [Tb, hc_mult × hidden] bf16 — on the
    last pipeline stage, with or without speculative decoding — and the indexer's top-k indices
    [Tb, index_topk] int32; in 0.27–0.28 also the eager scratch pool (models/deepseek_v4/eager_scratch.py:
    Tb × (padded heads × a latent row in bf16 + 4.5 KiB)). Its fp32 RoPE caches are in
    params.rope_cache_bytes."""
    t, tb = spec.text or {}, s.max_num_batched_tokens or 2048
    last = s.pp_stage is None or s.pp_stage == s.pipeline_parallel_size - 1
    hc = int(t.get("hc_mult") or 1)
    out = (tb * hc * spec.hidden_size * 2 if last else 0) + tb * int(t.get("index_topk") or 0) * 4
    if (0, 27, 0) <= profile.version < (0, 29, 0):
        _heads, padded, row, _flashmla = _deepseek_v4_attention_kernel(spec, s)
        out += tb * (padded * row + 4608)
    return out


# DeepSeek-V3.2-style sparse MLA (DSA: DeepSeek-V3.2, GLM-5) with a quantized KV cache on FlashMLA's sparse
# backend reserves its prefill workspace while the model is built (v1/attention/backends/mla/
# flashmla_sparse.py FlashMLASparseImpl.__init__ → v1/worker/workspace.py get_simultaneous): the fp8 cache
# is upconverted to bf16 rows for the prefill kernel, get_prefill_workspace_size = 5 × max_model_len rows
# of kv_lora_rank + rope (576) bf16 values. It came with vllm#27532 (the global workspace manager; the PR it
# replaced, #26152, was marked superseded on 2025-11-25), taken as 0.12.0 — not checked release by release.
SPARSE_MLA_WORKSPACE_FROM = (0, 12, 0)
SPARSE_MLA_PREFILL_ROWS_PER_TOKEN = 5
# the cache formats that take the upconvert path (flashmla_sparse.py QUANTIZED_DS_MLA_CACHE_FORMATS; "fp8" is
# vLLM's alias for fp8_ds_mla on this backend)
SPARSE_MLA_QUANTIZED_KV = ("fp8", "fp8_ds_mla", "nvfp4_ds_mla")
# FlashMLASparseBackend.get_supported_head_sizes: the DeepSeek-V3.2 latent, 512 + 64 rope; a rope-free 512
# model (GLM-5.3-Flash) with a quantized cache falls through to FlashInfer's SM90 backend (vllm#55385)
FLASHMLA_SPARSE_HEAD_SIZES = (576,)
# v1/worker/workspace.py get_simultaneous: every piece starts on a 256-byte boundary
WORKSPACE_ALIGN = 256
# how a reply names this workspace (memory.py's assumption, advice.py's reason for a shorter context)
SPARSE_MLA_WORKSPACE_WORDS = ("FlashMLA's sparse prefill workspace (5 × max_model_len rows of the bf16 latent, "
                              "and the query concat)")


def _aligned(n: int) -> int:
    return ceil_div(n, WORKSPACE_ALIGN) * WORKSPACE_ALIGN


def sparse_mla_load_buffers(spec: ModelSpec, s: EngineSettings, profile: Profile, max_len: int) -> tuple[int, int]:
    """Buffers a DSA model (an MLA model with a lightning indexer: `index_topk` in its config; DeepSeek-V4
    has deepseek_v4_load_buffers) builds with the model, so inside vLLM's "Model loading took" figure:
    the indexer's top-k indices [Tb, index_topk] int32 shared by every layer (models/deepseek_v2.py
    DeepseekV2Model.topk_indices_buffer) and, with an fp8 KV cache on Hopper (FLASHMLA_SPARSE, the only
    sparse backend there that takes one, for its 576-wide latent), the shared workspace FlashMLASparseImpl reserves: the query
    concat [Tb, local heads, 576] and the bf16 prefill rows (SPARSE_MLA_WORKSPACE_FROM), each 256-B
    aligned. GLM-5.3 FP8 on 8 × H200 (recipes#893, 1,048,576 tokens): 5.76 GiB, which brings the weights
    to 94.31 GiB against the 94.46 printed (88.55 without).

    Not modelled: in the profile run the MoE experts' workspaces are drawn from the same buffer
    (modular_kernel.py), so where they fit in it they add nothing to the activation peak, which the
    forward estimate still counts (recipes#893 spent 0.57 GiB more on the profile and graphs than
    estimated even so); the query-concat buffer joined the reservation after vllm#27532, in a release not
    pinned here (0.07 GiB in that case), and with a bf16 cache it is reserved alone, its heads padded to
    the prefill kernel's 64 (Hopper) or 128 (Blackwell) — not sized, as the release is not known;
    Blackwell prefers FlashInfer's sparse backend for an fp8 cache (platforms/cuda.py
    _get_backend_priorities), which reserves none of this. Returns (top-k indices, FlashMLA workspace) in bytes."""
    t = spec.text or {}
    topk = int(t.get("index_topk") or 0)
    if profile.engine != "v1" or not topk or not spec.uses_mla or spec.deepseek_v4_layers:
        return 0, 0
    tb = s.max_num_batched_tokens or 2048
    workspace = 0
    cc = cc_number(s.compute_capability) or 0.0
    kv = (s.kv_cache_dtype or "auto").lower()
    mla = next(lk for lk in spec.layers if isinstance(lk, MLA))
    head = mla.kv_lora_rank + mla.rope_dim
    # (a backend the user or the log named other than FlashMLA's reserves none of it)
    if profile.version >= SPARSE_MLA_WORKSPACE_FROM and 9.0 <= cc < 10.0 and kv in SPARSE_MLA_QUANTIZED_KV \
            and head in FLASHMLA_SPARSE_HEAD_SIZES and s.attention_backend in (None, FLASHMLA_SPARSE):
        row = head * 2
        heads = max(1, spec.num_attention_heads // max(1, s.tensor_parallel_size))
        workspace = _aligned(tb * heads * row) + _aligned(SPARSE_MLA_PREFILL_ROWS_PER_TOKEN * max_len * row)
    return tb * topk * 4, workspace


# --enable-lora's defaults (vllm/config LoRAConfig): one adapter slot of rank 16
LORA_DEFAULT_MAX_LORAS = 1
LORA_DEFAULT_RANK = 16


# V0 releases whose budget leaves the adapter slots out: worker/model_runner.py load_model creates the
# LoRA manager after DeviceMemoryProfiler has measured the weights ("Loading model weights took"), and
# worker.py resets the peak statistics before the profile run, whose memory_profiling (the snapshot form
# of 0.7.0) takes non-torch memory as CUDA's less torch's reserved — so the slots are in no figure.
# 0.6.6's memory_profiling takes everything beyond the baseline and the weights as non-torch, so
# the slots land there; 0.8.0 moves the LoRA manager inside the measured block (V1 has it there from
# 0.7.3). Public T4 logs of unsloth/meta-llama-3.1-8b-instruct-bnb-4bit with LoRA rank 32 (0.7.1, 0.7.2,
# collected corpus) print 5.35 GiB of weights — the 4-bit weights alone, 5.34 — and KV pools 0.11–0.17
# GiB above what subtracting the slots' 0.16 GiB left.
LORA_UNCOUNTED_V0 = ((0, 7, 0), (0, 8, 0))


def lora_budget_place(profile: Profile | None) -> str:
    """Where the release's budget counts the LoRA slots: "weights" (inside the measured weights: V1, V0
    from 0.8.0), "beside" (counted, but not in the printed weights: V0 before 0.7.0), "nowhere" (V0
    0.7.0–0.7.3) — LORA_UNCOUNTED_V0."""
    if profile is None or profile.engine != "v0" or profile.version >= LORA_UNCOUNTED_V0[1]:
        return "weights"
    return "nowhere" if profile.version >= LORA_UNCOUNTED_V0[0] else "beside"


def lora_buffer_bytes(spec: ModelSpec, s: EngineSettings, dtype_b: int, assumptions: list[str],
                      profile: Profile | None = None) -> int:
    """The adapter slots --enable-lora allocates beside the model's weights (inside vLLM's "Model loading
    took" from 0.8.0 — V1 from 0.7.3 —, after it in older V0, whose budget counts them all the same up to
    0.6.6: memory.estimate adds them beside a printed figure): vllm/lora/layers.py create_lora_weights
    stacks, for each adapted linear and each of its slices,
    A = max_loras × rank × input and B = max_loras × output × rank in the model dtype — the column-
    parallel q/k/v and gate/up split their outputs over TP, the row-parallel o and down their inputs.
    Counted for dense standard-attention models; the embedding / lm_head slots (vocabulary × rank) and
    MoE experts' or other layers' adapters are not (said). 0 where the release's budget leaves them
    out (LORA_UNCOUNTED_V0)."""
    if not s.enable_lora:
        return 0
    loras = s.max_loras or LORA_DEFAULT_MAX_LORAS
    r = s.max_lora_rank or LORA_DEFAULT_RANK
    if spec.moe is not None or spec.uses_mla or spec.is_hybrid_state or not spec.intermediate_size:
        assumptions.append(f"--enable-lora: vLLM also allocates adapter slots (rank {r}) at load for this "
                           "architecture's layers; kvdoctor does not size them here, so the weights can be larger")
        return 0
    tp = max(1, s.tensor_parallel_size)
    h, inter = spec.hidden_size, spec.intermediate_size
    q_out, kv_out = spec.num_attention_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    a = 3 * h + q_out // tp + 2 * h + inter // tp                 # qkv, o, gate_up, down: rank × input each
    b = (q_out + 2 * kv_out) // tp + h + 2 * inter // tp + h      # output × rank each
    layers = max(1, spec.num_layers // max(1, s.pipeline_parallel_size))
    total = loras * r * (a + b) * layers * dtype_b
    if lora_budget_place(profile) == "nowhere":
        assumptions.append(f"--enable-lora: {loras} adapter slot(s) of rank {r} take {total / GiB:.2f} GiB at load, "
                           f"but vLLM {profile.release} (V0) allocates them after measuring the weights and before "
                           "its profile run, so its budget counts them nowhere: the KV cache is sized as if they "
                           "were not there (0.8.0 counts them with the weights)")
        return 0
    assumptions.append(f"--enable-lora: {loras} adapter slot(s) of rank {r} on q/k/v/o/gate/up/down take "
                       f"{total / GiB:.2f} GiB at load (vllm/lora/layers.py), counted with the weights; the "
                       "embedding and lm_head slots are not")
    return total


def deepstack_buffer_bytes(spec: ModelSpec, s: EngineSettings, profile: Profile, dtype_b: int) -> int:
    """Qwen3-VL's deepstack buffers (qwen3_vl.py, 0.11.0–0.33 alike): one [max_num_batched_tokens, text
    hidden] tensor per deepstack level, made with the model in its dtype and so inside vLLM's "Model
    loading took" figure; none when the vision tower is not loaded."""
    levels = len((spec.vision or {}).get("deepstack_visual_indexes") or ())
    if not levels or profile.engine != "v1" or vision_tower_skipped(spec, s, profile):
        return 0
    return levels * (s.max_num_batched_tokens or 2048) * spec.hidden_size * dtype_b


def _deepseek_v4_attention_kernel(spec: ModelSpec, s: EngineSettings) -> tuple[int, int, int, bool]:
    """(query heads per rank, as the attention kernel pads them, bytes of one latent row in bf16,
    FlashMLA or not): FlashMLA (SM90/SM100) pads the heads to 64 (nvidia/flashmla.py); on SM120
    FlashInfer's sparse kernel takes them as they are."""
    cc = cc_number(s.compute_capability) or 9.0
    flashmla = 9.0 <= cc < 11.0
    heads = spec.num_attention_heads // max(1, s.tensor_parallel_size)
    return heads, max(heads, 64) if flashmla else heads, spec.deepseek_v4_layers[0].head_dim * 2, flashmla


def deepseek_v4_profile_peak(spec: ModelSpec, profile: Profile, s: EngineSettings, tb: int, max_len: int,
                             sampler: int) -> int:
    """DeepSeek-V4's profile-run peak: a shared, grow-only workspace W (v1/worker/workspace.py) sized by
    its largest user, plus the largest transient moment — one layer's attention, the lightning indexer's
    (with its 512 MiB dummy logits, VLLM_SPARSE_INDEXER_MAX_LOGITS_MB) or the sampler — plus the SM120
    FlashInfer backend's fixed 128 MiB workspace. From the code of vLLM 0.22–0.26 (models/deepseek_v4/,
    model_executor/layers/sparse_attn_indexer.py, fused_moe/experts/marlin_moe.py and deep_gemm_moe.py,
    nvidia/flashmla.py, nvidia/flashinfer_sparse.py). Checked on a 0.25 RTX PRO 6000 run (10.33 GiB of KV
    against the 10.29 printed); a second one with 1,024 sequences comes out 2 GiB short, where the sampler
    took V1's fitted figure of then (29 B per row × vocab, now 16) against the code's ≈14 B; two GH200 runs (a 0.22 LLM() run, a 0.26 source build) leave 0.5–2 GiB vLLM spent beyond it."""
    t, h = spec.text or {}, spec.hidden_size
    tp = s.tensor_parallel_size
    heads, padded, head_b, flashmla = _deepseek_v4_attention_kernel(spec, s)
    hd = head_b // 2
    ihd = int(t.get("index_head_dim") or 128)
    qr = int(t.get("q_lora_rank") or 1024)
    hc = int(t.get("hc_mult") or 1)
    cc = cc_number(s.compute_capability) or 9.0
    # W: the indexer's K gather (0.32+: 264 × f × L, f = 5 up to 256K, else 2), FlashMLA's prefill gather
    # (4 × (L/4 + window + Tb) latent rows in bf16), the MoE experts' workspace for top_k × Tb rows
    # (Marlin on Hopper: (max(I, h) + max(2I, h)) bf16; DeepGEMM FP4 on Blackwell: 2 × h bf16 per row plus
    # alignment padding of up to 127 rows per local expert)
    per_token = 264 * (5 if max_len <= 262144 else 2) if profile.version >= (0, 32, 0) else 1320
    ws = [per_token * max_len + 2**20]
    if flashmla:
        ws.append(4 * (ceil_div(max_len, 4) + 128 + tb) * head_b)
    if spec.moe:
        k, inter = spec.moe.experts_per_tok, spec.moe.expert_intermediate // (1 if s.enable_expert_parallel else tp)
        if cc < 10.0:
            ws.append(k * tb * (max(inter, h) + max(2 * inter, h)) * 2)
        else:
            local = spec.moe.num_experts // (tp * s.data_parallel_size if s.enable_expert_parallel else 1)
            ws.append(2 * (k * tb + min(k * tb, local) * 127) * h * 2)
    # one layer's live set per token: the hc_mult residual streams, the layer's input and previous output,
    # q_lora + latent rows (before and after their norms), the compressor's and the indexer's fp32 scores
    fixed = hc * h * 2 + 2 * h * 2 + 2 * (qr + hd) * 2 + 2 * 2 * hd * 4 + 4 * ihd * 4
    attn = tb * (fixed + padded * head_b + heads * head_b + (padded * head_b if padded > heads else 0))
    indexer = tb * (fixed + padded * head_b + 8448) + 512 * 2**20
    extra = 0 if flashmla else 128 * 2**20
    return max(ws) + max(attn, indexer, sampler) + extra
