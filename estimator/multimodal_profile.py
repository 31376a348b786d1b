"""Multimodal inputs in vLLM's profile run: the dummy images and videos each version builds, what
the vision (and audio) towers hold while they encode them, and when a tower is not loaded at all.
"""

from __future__ import annotations

from typing import NamedTuple

from estimator.forward import V0_FORWARD_FACTOR
from estimator.params import vision_mlp_gated, vision_width
from estimator.spec import ModelSpec
from estimator.units import GiB
from estimator.vllm import (
    MM_PREFIX_FLOOR_FROM,
    V2_RUNNER_ENCODER_PROFILED_FROM,
    EngineSettings,
    Profile,
    ceil_div,
)

# Image processors' default largest image for dynamic-resolution ViTs (Qwen2-VL / Qwen2.5-VL /
# Qwen3-VL `max_pixels` = 16384 merged tokens): the profile run uses the largest image allowed.
MAX_DYNAMIC_IMAGE_TOKENS = 16384
# Config keys that fix the LLM tokens one image becomes (Gemma 3 / Gemma 4 / others).
_TOKENS_PER_IMAGE_KEYS = ("mm_tokens_per_image", "vision_soft_tokens_per_image", "image_seq_length")


def qwen2_vl_video_tokens(frame_tokens: int, budget: int, *, videos: int = 1, start_frames: int = 1) -> int:
    """LLM tokens of the longest video Qwen2-VL / Qwen2.5-VL build for a token budget
    (vllm/model_executor/models/qwen2_vl.py get_num_frames_with_most_features): as many frames of
    the largest size as the budget holds (_get_max_video_frames, counting from `start_frames`),
    shared by `videos`, at most _MAX_FRAMES_PER_VIDEO = 14 and at least 1 per video, two frames per
    temporal patch. A 0.23 log (max_model_len 128,000): "Encoder cache will be initialized with a
    budget of 114688 tokens, and profiled with 1 video items" = 7 × 16,384."""
    frames = start_frames
    while ceil_div(frames + 1, 2) * frame_tokens <= budget:
        frames += 1
    per_video = max(1, min(frames // max(1, videos), QWEN2_VL_MAX_FRAMES))
    return ceil_div(per_video, 2) * frame_tokens


# Releases where V1's profiler changed how it sizes Qwen2-VL's dummy video (the wheels):
# multimodal/registry.py get_max_tokens_per_item_by_modality passes the per-prompt limits as the
# item counts up to 0.8.3 (999 when unset, config get_limit_per_prompt) and {modality: 1} from 0.8.4;
# qwen2_vl.py takes the images' tokens out of the frames' budget up to 0.10.1 and counts frames
# from 0 up to 0.10.2, from 1 after; gpu_model_runner.py builds the dummy batch it encodes with
# seq_len = max_num_batched_tokens up to 0.10.2, with max_model_len from 0.11.0.
V1_MM_COUNTS_ONE_FROM = (0, 8, 4)
V1_VIDEO_NO_IMAGE_SHARE_FROM = (0, 10, 2)
V1_FRAMES_FROM_ONE_FROM = (0, 11, 0)
V1_DUMMY_AT_MAX_LEN_FROM = (0, 11, 0)
V1_UNSET_MM_LIMIT = 999


def qwen2_vl_dummy_video(profile: Profile, s: EngineSettings, frame_tokens: int, max_len: int,
                         tb: int) -> tuple[int, int]:
    """(tokens of the largest video item, tokens of the video the profile run encodes) for V1.

    The first decides whether the video is profiled and how many items the encoder budget holds;
    the second is what the ViT runs on. Up to 0.10.2 they differ: a default 128,000-token run on
    0.10.1 sizes the budget for a 98,304-token video but encodes one built for the 2,048-token batch
    — a single 16,384-token frame pair."""
    v = profile.version
    limits = s.limit_mm_per_prompt or {}
    one = v >= V1_MM_COUNTS_ONE_FROM
    images = 1 if one else int(limits.get("image", V1_UNSET_MM_LIMIT))
    videos = 1 if one else int(limits.get("video", V1_UNSET_MM_LIMIT))
    start = 1 if v >= V1_FRAMES_FROM_ONE_FROM else 0
    share = frame_tokens * images if v < V1_VIDEO_NO_IMAGE_SHARE_FROM else 0
    largest = qwen2_vl_video_tokens(frame_tokens, max_len - share, videos=videos, start_frames=start)
    if v >= V1_DUMMY_AT_MAX_LEN_FROM:
        return largest, largest
    # the dummy batch: {video: 1} from 0.8.4 (no images beside it); up to 0.8.3 the whole dummy
    # prompt with the limits' counts
    run = qwen2_vl_video_tokens(frame_tokens, tb - (0 if one else share), videos=videos, start_frames=start)
    return largest, run


QWEN2_VL_MAX_FRAMES = 14
# Architectures whose vLLM processor runs qwen2_vl.py's dummy-video rule (Qwen2.5-VL reuses its processing
# info). Qwen3-VL has its own (qwen3_vl.py): below.
_QWEN2_VL_TYPES = ("qwen2_vl", "qwen2_5_vl")
# Qwen3-VL's largest video (qwen3_vl.py get_max_video_tokens, the 0.11.0–0.33 wheels): however many frames
# the dummy gets, video_smart_resize keeps all of them within the video processor's size.longest_edge
# (25,165,824 pixels in the released video_preprocessor_config.json) — 12,288 tokens, fewer than the
# 16,384-token image, which is therefore the item profiled — except in 0.11.0–0.12.0, where the count is
# multiplied by 12.5 for the "<t seconds>" text and the vision start/end tokens each video token brings
# and the video wins. A 0.11.0 log (Qwen3-VL-30B-A3B, sipeed wiki): "Encoder cache will be initialized with
# a budget of 153600 tokens, and profiled with 1 video items" = 12,288 × 12.5.
_QWEN3_VL_TYPES = ("qwen3_vl", "qwen3_vl_moe")
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
QWEN3_VL_VIDEO_TOKEN_FACTOR = 12.5
QWEN3_VL_TIMESTAMPED_VIDEO = ((0, 11, 0), (0, 13, 0))
# gpu_model_runner.py profile_run 0.11.0–0.12.0: an encoder output shorter than its padded length is copied
# into zeros of that length (`output.new_zeros((encoder_budget, hidden))`), kept through the LLM's dummy
# run — up to 0.11.2 the whole encoder budget max(Tb, item), in 0.12.0 the item's own token count; 0.13.0
# keeps the outputs as they are.
V1_ENCODER_OUTPUT_PADDED = ((0, 11, 0), (0, 13, 0))
V1_ENCODER_OUTPUT_PADDED_TO_BUDGET_UNTIL = (0, 12, 0)
# Vision towers whose encoder keeps the embeddings it was given alive through all of its layers: vLLM's
# siglip.py SiglipEncoder.forward(inputs_embeds) and clip.py CLIPEncoder.forward(inputs_embeds) loop on
# `hidden_states = inputs_embeds`, and the caller (SiglipVisionTransformer / CLIPVisionTransformer.forward)
# still holds the same tensor in its own `hidden_states` (CLIP's also in `hidden_states_pool`), so from the
# second layer on one more hidden-width tensor is live beside the block's own (encoder_profile). Qwen's
# ViTs reassign one variable in their block loop and free it.
EMBEDDINGS_KEPT_TOWERS = ("siglip_vision_model", "clip_vision_model")
# What vLLM's gemma3_mm.py counts as one image's tokens (Gemma3ProcessingInfo.get_num_image_tokens, read in
# the 0.8.0–0.8.5 wheels): 0.8.0 encodes the whole replacement text, "\n\n<start_of_image>" + the
# mm_tokens_per_image soft tokens + "<end_of_image>\n\n" (260 for 256: "\n\n" is one token); 0.8.1–0.8.3
# its features, the same without the newlines (258); from 0.8.4 (num_crops + 1) × image_seq_length (256).
# The count sizes the profile run: V0 gives min(max_num_seqs, Tb // count) dummy prompts an image each
# (worker/model_runner.py profile_run), V1's encoder budget holds max(Tb, count) // count images.
GEMMA3_IMAGE_MARKER_TOKENS = ((((0, 8, 0), (0, 8, 1)), 4), (((0, 8, 1), (0, 8, 4)), 2))


def _in(version: tuple, releases: tuple) -> bool:
    return releases[0] <= version < releases[1]


def image_marker_tokens(spec: ModelSpec, version: tuple) -> int:
    """Tokens beyond the soft tokens that the release counts for one of the model's images
    (GEMMA3_IMAGE_MARKER_TOKENS)."""
    if spec.config.get("model_type") != "gemma3":
        return 0
    return next((extra for releases, extra in GEMMA3_IMAGE_MARKER_TOKENS if _in(version, releases)), 0)


# The Qwen ViTs' attention (qwen2_vl.py Qwen2VisionAttention; qwen2_5_vl.py Qwen2_5_VisionAttention, which
# Qwen3-VL's blocks reuse) rotates q and k in float32 before 0.12.0: apply_rotary_pos_emb_vision takes
# `t_ = t.float()` and casts the rotated copy back with `type_as`. From 0.12.0 it rotates in the model dtype.
QWEN_VIT_FP32_ROTARY_UNTIL = (0, 12, 0)
# Up to 0.8.5 the rotation is apply_rotary_emb_torch (four float32 temporaries live at once) unless the
# ViT runs on the upstream flash-attn package, which vLLM's own install lacks (vision.py get_vit_attn_backend:
# "Current `vllm-flash-attn` has a bug inside vision module, so we use xformers backend instead"); from
# 0.9.0 CUDA always takes vllm_flash_attn's out-of-place Triton kernel.
QWEN_VIT_TRITON_ROTARY_FROM = (0, 9, 0)
# 0.11.0 rotates q and k as one concatenated copy (`torch.cat([q, k])`) beside the contiguous q, k, v; 0.11.1
# drops the contiguous copies (qwen2_5_vl.py rotates a view of qkv; qwen2_vl.py still concatenates).
QWEN_VIT_CONCAT_ROTARY_FROM = (0, 11, 0)
QWEN_VIT_QKV_VIEWS_FROM = (0, 11, 1)
# Qwen2-VL's split_qkv all-gathers the heads at TP > 1 from 0.7.0 (`all_gather_interleave`; 0.6.x splits
# its local heads); Qwen2.5-VL (0.7.2) and Qwen3-VL (0.11.0) were added with it.
QWEN_VIT_GATHER_FROM = (0, 7, 0)


def qwen_vit_attention_bytes(spec: ModelSpec, version: tuple, hv: int, tp: int, dtype_b: int) -> int | None:
    """Bytes per patch live at the peak of a Qwen ViT block's attention half in the releases that rotate
    in float32 (QWEN_VIT_FP32_ROTARY_UNTIL), read from each release's forward (u = H/tp values):
    the block's input and norm1's output (2·H, replicated), the local qkv (3u), before 0.11.1 the
    contiguous q, k, v copies (3u) — then one of:
    - ≤ 0.8.5, q then k alone through apply_rotary_emb_torch: the float32 copy, x·cos, rotate_half's
      concatenation and its ·sin (4 × 2u in model-dtype units);
    - 0.9.0–0.10.2, q then k through the Triton kernel: the float32 copy and output (2u each) and the cast (u);
    - 0.11+, q and k together (their concatenation, 2u, where it is a copy): float32 copy and output (4u
      each) and the cast (2u);
    or, at TP > 1 where split_qkv all-gathers the heads (Qwen2-VL from 0.7.0; the others until 0.11.1), the
    gathered 3·H beside the local qkv and the copies made from it (from 0.11.1 q, k and v are views of
    it, so it stays through the rotation). None for other towers and releases."""
    model_type = spec.config.get("model_type")
    if version >= QWEN_VIT_FP32_ROTARY_UNTIL or model_type not in _QWEN2_VL_TYPES + _QWEN3_VL_TYPES:
        return None
    u = hv // max(1, tp)
    views = version >= QWEN_VIT_QKV_VIEWS_FROM
    gathers = tp > 1 and version >= QWEN_VIT_GATHER_FROM and (model_type == "qwen2_vl" or not views)
    base = (2 * hv + 3 * u + (0 if views else 3 * u)) * dtype_b
    if gathers and views:
        base += 3 * hv * dtype_b    # q, k, v are views of the gathered heads, which stay
    if version < QWEN_VIT_TRITON_ROTARY_FROM:
        rotary = 4 * u * 4                                  # four float32 tensors of q's size
    elif version < QWEN_VIT_CONCAT_ROTARY_FROM:
        rotary = 2 * u * 4 + u * dtype_b
    else:
        concat = 0 if views and model_type != "qwen2_vl" else 2 * u * dtype_b
        rotary = concat + 2 * (2 * u * 4) + 2 * u * dtype_b
    gather = 3 * hv * dtype_b if gathers and not views else 0      # beside the copies made from it
    return base + max(rotary, gather)


def qwen3_vl_dummy_video(spec: ModelSpec, profile: Profile) -> tuple[int, int] | None:
    """(tokens of Qwen3-VL's largest video as the encoder budget counts them, its vision tokens), or None
    for other models (QWEN3_VL_VIDEO_MAX_PIXELS)."""
    if profile.engine != "v1" or spec.config.get("model_type") not in _QWEN3_VL_TYPES:
        return None
    v = spec.vision or {}
    patch, merge = int(v.get("patch_size") or 16), int(v.get("spatial_merge_size") or 2)
    soft = QWEN3_VL_VIDEO_MAX_PIXELS // (patch * patch * int(v.get("temporal_patch_size") or 2) * merge * merge)
    if _in(profile.version, QWEN3_VL_TIMESTAMPED_VIDEO):
        return int(soft * QWEN3_VL_VIDEO_TOKEN_FACTOR), soft
    return soft, soft


def encoder_output_width(spec: ModelSpec) -> int:
    """Values per token of the embeddings the encoder hands the language model: its hidden size, or for
    Qwen3-VL the merger's output and one per deepstack level beside it (qwen3_vl.py:
    out_hidden_size × (1 + len(deepstack_visual_indexes)))."""
    v = spec.vision or {}
    out = int(v.get("out_hidden_size") or spec.hidden_size)
    return out * (1 + len(v.get("deepstack_visual_indexes") or ()))


class DummyItem(NamedTuple):
    """The largest dummy image vLLM profiles (dummy_item)."""
    tokens: int         # LLM tokens it becomes
    patches: int        # ViT patches
    video: bool         # the model also takes video (a dynamic-resolution ViT with a video_token_id)
    values: int         # pixel values the processor hands over: patches × patch² × channels (× temporal patch)


def llava_next_largest_image(spec: ModelSpec) -> tuple[int, int] | None:
    """(LLM tokens, tower tiles) of LLaVA-NeXT's largest image, None for another model. vLLM's
    llava_next.py (get_image_size_with_most_features) tries each of the config's image_grid_pinpoints
    and keeps the one with the most features (get_num_image_tokens): the base tile's patches (less the
    CLS token under the "default" feature strategy), the anyres grid's patches (an image of the
    pinpoint's own size needs no unpadding) and one image_newline per row of them. The tower encodes
    the base tile and each tile of the grid. llava-v1.6's 672 × 672: 576 + 48 × 48 + 48 = 2,928 tokens
    from 5 tiles of 336 px, which is why vLLM 0.10.2 profiles 5 of them in a 16,384-token budget."""
    v = spec.vision or {}
    pins = spec.config.get("image_grid_pinpoints")
    size, patch = int(v.get("image_size") or 0), int(v.get("patch_size") or 14)
    if spec.config.get("model_type") != "llava_next" or not isinstance(pins, list) or not size:
        return None
    side = size // patch
    base = side * side + (1 if spec.config.get("vision_feature_select_strategy") == "full" else 0)
    best = (0, 0)
    for pin in pins:
        if not (isinstance(pin, (list, tuple)) and len(pin) == 2):
            continue
        grid_h, grid_w = int(pin[0]) // size, int(pin[1]) // size
        feats = base + (side * grid_h) * (side * grid_w) + side * grid_h
        best = max(best, (feats, 1 + grid_h * grid_w))
    return best if best[0] else None


def dummy_item(spec: ModelSpec) -> DummyItem:
    """A fixed-size tower's image (its image_size, or the tokens its config fixes), else a
    dynamic-resolution ViT's largest image (MAX_DYNAMIC_IMAGE_TOKENS), beside which a model with a
    `video_token_id` also gets a video of the same size. Qwen2-VL's processors flatten each patch
    with its temporal_patch_size frames (a still image duplicated)."""
    v = spec.vision or {}
    patch = int(v.get("patch_size") or 14)
    merge = int(v.get("spatial_merge_size") or spec.config.get("spatial_merge_size") or 1)
    pool = int(v.get("pooling_kernel_size") or 1)
    fixed = next((int(spec.config[k]) for k in _TOKENS_PER_IMAGE_KEYS if spec.config.get(k)), 0)
    fixed = fixed or int(v.get("default_output_length") or 0)
    video = False
    if (anyres := llava_next_largest_image(spec)) is not None:
        tokens, patches = anyres[0], anyres[1] * (int(v["image_size"]) // patch) ** 2
    elif v.get("image_size"):
        patches = (int(v["image_size"]) // patch) ** 2
        tokens = fixed or max(1, patches // (merge * merge))
    elif fixed:
        tokens, patches = fixed, fixed * max(merge * merge, pool * pool)
        # Gemma 4 takes video as frames through the same tower (gemma4_mm.py), sized in encoder_profile
        video = spec.config.get("model_type") == "gemma4" and bool(spec.config.get("video_token_id"))
    else:
        tokens, patches = MAX_DYNAMIC_IMAGE_TOKENS, MAX_DYNAMIC_IMAGE_TOKENS * merge * merge
        video = bool(spec.config.get("video_token_id"))
    channels = int(v.get("num_channels") or v.get("in_channels") or v.get("in_chans") or 3)
    values = patches * patch * patch * channels * int(v.get("temporal_patch_size") or 1)
    return DummyItem(tokens, patches, video, values)


def media_per_prompt(s: EngineSettings, video: bool) -> tuple[int, int]:
    """(images, videos) of one dummy prompt: --limit-mm-per-prompt, vLLM's default 1 of each."""
    limits = s.limit_mm_per_prompt or {}
    return max(0, int(limits.get("image", 1))), max(0, int(limits.get("video", 1))) if video else 0


class EncoderProfile(NamedTuple):
    """What the profile run's multimodal dummy inputs cost (encoder_profile)."""
    peak: int       # the vision encoder's activation peak
    media: int      # LLM tokens of one dummy prompt's media
    kept: int = 0   # bytes of encoder outputs V1 holds through the LLM's dummy run and the sampler
    pixels: int = 0  # bytes of the dummy media's inputs V1 holds on the GPU through the whole profile run
    pixel_copy: int = 0  # the tower's model-dtype copy of them, beside its peak (float32 inputs, ≤ 0.8.5)


# vllm/model_executor/models/gemma4_mm.py _VIDEO_MAX_FRAMES / _VIDEO_MAX_SOFT_TOKENS
GEMMA4_VIDEO_FRAMES = 32
GEMMA4_VIDEO_SOFT_TOKENS = 70
# get_mm_max_tokens_per_item's video: each frame's soft tokens plus boi, eoi and about 6 timestamp tokens
GEMMA4_VIDEO_ITEM_TOKENS = GEMMA4_VIDEO_FRAMES * (GEMMA4_VIDEO_SOFT_TOKENS + 2 + 6)
# From 0.22 Gemma 4's tower encodes images, and a video's frames, in batches (vllm PR #43169) of
# `_encoder_chunk` items: min(free // 2, total // 10) of GPU memory over GEMMA4_ONE_HOT_COST_FACTOR ×
# patches × position_embedding_size × 8 bytes per item (PR #43296; gemma4_mm.py). Before, one image or
# frame per call.
GEMMA4_ENCODER_CHUNKED_FROM = (0, 22, 0)
GEMMA4_ONE_HOT_COST_FACTOR = 4
# transformers' Gemma4VisionPatchEmbedder._position_embeddings built the position embeddings from
# F.one_hot(positions, position_embedding_size): (batch, patches, 2, P) int64 and its cast to the table's
# dtype, alive together — the tower's peak, which is why vLLM sizes the batch by it. transformers#46176
# (merged 2026-05-28) replaced it with two F.embedding look-ups. Evidence for the window: nine 0.22.0 logs
# of Gemma-4-E4B on an A10G (gemma-challenge-senpai, June 2026: one seq, 512–2,048 batched tokens,
# bf16 and W4A16, with and without a drafter) leave 0.72–0.73 GiB more outside the KV cache than the
# tower's activations, and an 11-frame one-hot is 0.73 GiB more (1.32 GiB); 0.25.1 logs of Gemma-4-26B-A4B
# (L40S, two GB10) and Gemma-4-31B (RTX PRO 6000) fit without it. 0.23–0.24 were not seen: modelled as 0.25.
GEMMA4_ONE_HOT_UNTIL = (0, 23, 0)


def gemma4_encoder_call(spec: ModelSpec, profile: Profile, s: EngineSettings, units: int, unit_patches: int,
                        dtype_b: int) -> tuple[int, int]:
    """(patches one call of Gemma 4's vision tower encodes, the position embeddings' one-hot bytes beside
    them) for `units` dummy images or video frames of `unit_patches` patches each (gemma4_mm.py
    _process_image_input / _process_video_input, _encoder_chunk); (units × unit_patches, 0) for other
    models or where the free memory at the profile run is not known."""
    v = spec.vision or {}
    classes = int(v.get("position_embedding_size") or 0)
    if spec.config.get("model_type") != "gemma4" or profile.engine != "v1" or not classes or units <= 0:
        return units * unit_patches, 0
    if profile.version < GEMMA4_ENCODER_CHUNKED_FROM:
        chunk = 1
    elif s.gpu_memory_at_profile is None:
        return units * unit_patches, 0
    else:
        total, free = s.gpu_memory_at_profile
        budget = min(free // 2, total // 10)
        chunk = max(1, budget // (unit_patches * GEMMA4_ONE_HOT_COST_FACTOR * classes * 8))
    chunk = min(chunk, units)
    one_hot = chunk * unit_patches * 2 * classes * (8 + dtype_b) if profile.version < GEMMA4_ONE_HOT_UNTIL else 0
    return chunk * unit_patches, one_hot


def vision_encoder_peak(spec: ModelSpec, profile: Profile, s: EngineSettings, dtype_b: int,
                        assumptions: list[str], max_len: int | None = None) -> tuple[int, int]:
    """(activation peak of the vision encoder in the profile run, LLM tokens of one dummy prompt's media):
    encoder_profile's first two figures."""
    return encoder_profile(spec, profile, s, dtype_b, assumptions, max_len)[:2]


def encoder_profile(spec: ModelSpec, profile: Profile, s: EngineSettings, dtype_b: int,
                    assumptions: list[str], max_len: int | None = None) -> EncoderProfile:
    """The vision encoder's activation peak in the profile run, the LLM tokens of one dummy prompt's
    media, the encoder outputs V1 keeps meanwhile (items × their rows × encoder_output_width, padded
    in 0.11–0.12: V1_ENCODER_OUTPUT_PADDED) and V1's dummy pixels (v1_dummy_pixel_bytes), which
    activation_peak adds beside the tower and the language model.

    vLLM profiles a multimodal model with max-size dummy items (V0: each dummy prompt carries
    `--limit-mm-per-prompt` items per modality, one by default; V1: as many items of the largest
    modality as the encoder budget max(Tb, tokens per item) holds, docs §1.10; none when every
    limit is 0). Dynamic-resolution models that take video (a `video_token_id` in the config) get
    a video of the image's maximum size too: vLLM's own warning reports e.g. {'image': 16384,
    'video': 16384} for Qwen2.5-VL. One ViT block on all the patches of one modality is the peak,
    in whichever of its two halves holds more (qwen2_5_vl.py / qwen3_vl.py vision blocks, the
    encoders vLLM builds from column/row-parallel linears):
    - the MLP: the column-parallel output (gate and up, 2·I, for a gated MLP — Qwen2.5-VL, Pixtral,
      Gemma 4, params.vision_mlp_gated; fc1, I, for a plain GELU one — SigLIP, Qwen2-VL, Qwen3-VL)
      and the activation (I),
      split by TP, beside the block's input, the residual sum and the norm (3·H) replicated, and the
      embeddings a SigLIP or CLIP encoder keeps from its first layer on (EMBEDDINGS_KEPT_TOWERS, H);
    - the attention: the block's input and its norm (2·H), the local qkv (3·H/tp), which
      Qwen2_5_VisionAttention.split_qkv all-gathers at TP > 1 (3·H replicated), and the rotated
      q/k copies and the output (≈ 5·H/tp). This half is why a tower's peak shrinks far less
      than 1/tp.
    Gemma 4 encodes its items (a video's frames) a batch at a time and its position embeddings once held
    a one-hot per patch, which can be the larger figure (gemma4_encoder_call).
    At factor 1 (V0_FORWARD_FACTOR) in every release: vLLM runs the tower eagerly on both engines
    (compile_mm_encoder is an opt-in from 0.12), so V1's forward factor, fitted on the language model's
    compiled graphs and attention-backend buffers, does not apply to it (activation_peak adds the dummy
    media's pixels beside it: V0's v0_dummy_pixel_bytes, V1's v1_dummy_pixel_bytes). An estimate, said as
    one. Over the 59 public logs of bench/corpus/collected-2026-12.jsonl whose profile peak is the tower's
    (Qwen3.5 / 3.6 / 3.8 at TP 1–8 on 0.17–0.33 most of them), modelled minus implied overhead goes from
    a median of +0.19 GiB (quartiles 0.00 / +0.60) at V1's 1.3 to +0.01 (−0.29 / +0.25) at 1; their KV
    median from 2.7% to 2.4% of the 570 figures. One rig's four Qwen3.5 logs (4 × RTX 3090, 0.19, TP 4,
    three eager: the tower and non-torch memory are all their overhead) go from 0.42–0.63 GiB over to
    0.12–0.34 — as much as its text-only Qwen2.5-32B log (0.18.1, eager) is over without a tower. One Qwen2.5-VL-7B log profiling a 114,688-token video on 0.23 (solved 15.34 GiB with
    the video's 1.0 GiB of pixels) wants more: 13.05 modelled at 1, 16.66 at 1.3. The Qwen3.6 image at
    TP 1 / 2 / 4 with its 0.19 GiB of bf16 pixels: 1.66 / 1.45 / 1.17 GiB.
    Before 0.12 the Qwen ViTs' attention half is read from each release's code instead
    (qwen_vit_attention_bytes: q and k rotated in float32), at factor 1, as eagerly as the encoder runs:
    Qwen2.5-VL on an L4, 0.9.0.1 (KV 1.81 GiB printed: 1.53 → 1.74 modelled) and 0.11.0 (Ray's docs,
    9.26 GiB printed: 10.43 → 9.55).
    """
    v = spec.vision or {}
    hv = vision_width(v)
    if not spec.is_multimodal or not hv:
        if spec.is_multimodal:
            assumptions.append("the vision encoder's size is not in the config: its profile-run activation "
                               "is not counted")
        return EncoderProfile(0, 0)
    tp = max(1, s.tensor_parallel_size)
    iv = int(v.get("intermediate_size") or 4 * hv)
    tokens, patches, video, item_values = dummy_item(spec)
    patch_values = item_values // max(1, patches)   # pixel values per patch, whatever the item's size
    merge2 = patches // tokens
    tokens += image_marker_tokens(spec, profile.version)
    tb, seqs = s.max_num_batched_tokens or 2048, s.max_num_seqs or 256
    # a Qwen2-VL video: tokens of the largest item (which picks the modality and the item count)
    # and of the item the profile run actually encodes (qwen2_vl_dummy_video)
    video_tokens = video_run = tokens
    if video and profile.engine == "v1" and max_len and spec.model_type in _QWEN2_VL_TYPES:
        video_tokens, video_run = qwen2_vl_dummy_video(profile, s, tokens, max_len, tb)
    elif video and (qwen3 := qwen3_vl_dummy_video(spec, profile)):
        video_tokens, video_run = qwen3
    elif video and profile.engine == "v1" and spec.config.get("model_type") == "gemma4":
        # gemma4_mm.py get_mm_max_tokens_per_item: a video is _VIDEO_MAX_FRAMES (32) frames of
        # _VIDEO_MAX_SOFT_TOKENS (70) soft tokens and 8 marker tokens each, 2,496 — more than an image's
        # 280 — so the profile run encodes the dummy video, as many as the encoder budget holds of 2,496:
        # 32 frames, each padded to 70 × pooling² patches, through the tower (2,240 rows out)
        video_tokens, video_run = GEMMA4_VIDEO_ITEM_TOKENS, GEMMA4_VIDEO_FRAMES * GEMMA4_VIDEO_SOFT_TOKENS
    n_img, n_vid = media_per_prompt(s, video)
    if n_img + n_vid == 0:
        assumptions.append("--limit-mm-per-prompt allows no images or videos: no multimodal dummy inputs in "
                           "the profile run")
        return EncoderProfile(0, 0)
    if s.model_runner_v2 and profile.version < V2_RUNNER_ENCODER_PROFILED_FROM and not s.encoder_profile:
        # Model Runner V2's profile_run before 0.27 (v1/worker/gpu/model_runner.py) runs the language
        # model and the sampler only: no dummy media, so the encoder's peak is not in the budget and
        # limiting media frees nothing there (vllm PR48601's Qwen3.6-27B TP 4 log on V2: 1.54 GiB of
        # peak activation printed, the LLM forward and sampler alone)
        assumptions.append(f"Model Runner V2 in vLLM {profile.release} does not profile the vision encoder "
                           "(from 0.27 it does): its peak is not set aside, so the first large image or video "
                           "must find room outside the KV cache at run time")
        return EncoderProfile(0, 0)
    media = tokens * (n_img + n_vid)
    per_prompt = max(n_img, n_vid)
    what = "image(s)" + (" and as many videos" if n_vid and n_img and profile.engine == "v0" else "")
    profiled_video = not n_img      # the dummy items the tower encodes are videos
    if profiled_video:
        what = "video(s)"
    if profile.engine == "v0" and spec.model_type.startswith("mllama"):
        return EncoderProfile(_mllama_v0_encoder_peak(spec, v, seqs * n_img, tp, dtype_b, assumptions), media)
    kept = pixels = pixel_copy = 0
    if profile.engine == "v0":
        items = max(1, min(seqs, tb // media)) * per_prompt
    else:
        run = tokens
        logged = s.encoder_profile if s.encoder_profile and s.encoder_profile[1] > 0 else None
        if (logged and logged[0] == "video" and n_vid) or \
                (not logged and n_vid and (video_tokens > tokens or not n_img)):
            # V1 profiles the modality whose largest item has the most tokens (a tie keeps the
            # image, listed first) — here the video; or the log says so
            tokens, run, what, profiled_video = video_tokens, video_run, "video(s)", True
        # items: the encoder budget max(Tb, largest item) over the largest item (vllm/v1/worker/
        # gpu_model_runner.py profile_run; utils compute_encoder_budget)
        items = max(1, min(max(tb, tokens) // tokens, seqs * per_prompt))
        if logged:
            # the log says what V1 profiled: its modality and item count stand; each item is the
            # size the release's dummy builder makes (above)
            items, what, profiled_video = logged[1], f"{logged[0]}(s)", logged[0] == "video"
        if video:
            patches = run * merge2              # a dynamic-resolution item: its tokens × the merge²
        # the outputs stay in the encoder cache through the LLM's dummy run and the sampler, padded
        # with zeros in 0.11.0–0.12.0 (V1_ENCODER_OUTPUT_PADDED) to the encoder budget max(Tb, item)
        # up to 0.11.2 and to the item's token count in 0.12.0
        rows = run
        if _in(profile.version, V1_ENCODER_OUTPUT_PADDED):
            budget = profile.version < V1_ENCODER_OUTPUT_PADDED_TO_BUDGET_UNTIL
            rows = max(run, max(tb, tokens) if budget else tokens)
        kept = items * rows * encoder_output_width(spec) * dtype_b
        if kept >= GiB // 4:
            assumptions.append(f"the dummy encoder outputs stay on the GPU through the language model's profile "
                               f"run: {kept / GiB:.2f} GiB ({items} × {rows:,} rows × "
                               f"{encoder_output_width(spec):,} values"
                               + (", zero-padded as vLLM 0.11–0.12 do" if rows > run else "") + ")")
        tokens = run
        pixels, pixel_copy = v1_dummy_pixel_bytes(profile, dtype_b, items * patches * patch_values)
        if pixels >= GiB // 4:
            assumptions.append(f"the dummy media's pixels stay on the GPU through the whole profile run: "
                               f"{pixels / GiB:.2f} GiB ({items * patches:,} patches)")
    kept_embeddings = hv if v.get("model_type") in EMBEDDINGS_KEPT_TOWERS else 0
    mlp = (3 if vision_mlp_gated(spec) else 2) * iv // tp + 3 * hv + kept_embeddings
    attention = (2 * hv + kept_embeddings + (3 * hv if tp > 1 else 0) + 8 * hv // tp) * dtype_b
    # both engines run the tower eagerly (above): V1's forward factor is for the language model's graphs
    factor = V0_FORWARD_FACTOR
    if (exact := qwen_vit_attention_bytes(spec, profile.version, hv, tp, dtype_b)) is not None:
        # a release whose ViT attention is read from its code: that live set, as eagerly as every
        # release runs the encoder (compile_mm_encoder is an opt-in from 0.12)
        attention, factor = exact, V0_FORWARD_FACTOR
    # the patches one call of the tower encodes: all of them, except where the model batches its calls
    frames = GEMMA4_VIDEO_FRAMES if video and profiled_video and spec.config.get("model_type") == "gemma4" else 1
    encoded, one_hot = gemma4_encoder_call(spec, profile, s, items * frames, patches // frames, dtype_b)
    peak = max(int(factor * encoded * max(mlp * dtype_b, attention)), one_hot)
    rotation = ", whose attention rotates q and k in float32 in this release" if exact and exact > mlp * dtype_b else ""
    assumptions.append(f"profile run includes {items} max-size dummy {what} of {tokens:,} tokens "
                       f"({patches:,} patches) through the vision encoder{rotation} (estimate)")
    if encoded < items * patches:
        unit = "frame" if frames > 1 else "image"
        assumptions.append(f"Gemma 4's vision tower encodes them {encoded // (patches // frames)} {unit}(s) at a time"
                           + (f" (vLLM {profile.release} sizes the batch by the GPU's free memory)"
                              if profile.version >= GEMMA4_ENCODER_CHUNKED_FROM else
                              f" (vLLM {profile.release} encodes one per call)"))
    if one_hot:
        assumptions.append(f"the tower's position embeddings are built from a one-hot of "
                           f"{int(v.get('position_embedding_size')):,} classes per patch (int64, and its cast): "
                           f"{one_hot / GiB:.2f} GiB at the profile run's peak (transformers' Gemma 4 of vLLM "
                           f"{profile.release}'s time; transformers#46176 replaced it with a look-up)")
    return EncoderProfile(peak, media, kept, pixels, pixel_copy)


# From this release vLLM casts a processor's floating-point outputs to the model dtype on the CPU
# (inputs/registry.py call_hf_processor `maybe_cast_dtype`: absent in the 0.9.0 wheel, present in
# 0.9.1's); before it, the image processors' float32 pixels went to the GPU as they were.
MM_INPUTS_CAST_FROM = (0, 9, 1)


def v0_dummy_pixel_bytes(spec: ModelSpec, profile: Profile, dtype_b: int, prompts: int, images: int,
                         videos: int) -> tuple[int, int]:
    """(pixels of every dummy item, the model-dtype copy of one modality's) in V0's profile run.

    V0's model runner passes the batch's multimodal inputs as keyword arguments of the model's
    forward (worker/model_runner.py execute_model, `MultiModalKwargs.as_kwargs`), so the pixels
    of all `prompts` dummy prompts stay on the GPU while the tower and then the LLM run. Each
    item is its patches × patch² × channels values (× temporal_patch_size for Qwen2-VL's
    flattened patches, a video frame pair or a duplicated image): 4 B each as the image
    processors emit them up to 0.9.0, the model dtype from 0.9.1 (MM_INPUTS_CAST_FROM). Before
    then the tower converts its input first (gemma3_mm.py `pixel_values.to(dtype=…)`,
    qwen2_5_vl.py `.type(self.visual.dtype)`): a copy of the encoded modality's items beside it.
    vllm#16199 (Gemma 3 27B, 0.8.3 V0: 19 dummy prompts of one 896² image of 258 tokens,
    GEMMA3_IMAGE_MARKER_TOKENS; 174.6 MiB of float32 pixels) printed 17.61 GiB of weights and 224
    blocks at utilization 0.98 of 21.99 GiB — 2.24 GiB of activation and non-torch memory; the eager
    SigLIP block with the embeddings its encoder keeps (1.92 GiB) and these pixels (0.26) with 0.05 of
    non-torch memory give 2.22."""
    item = dummy_item(spec).values
    kept, copy = _pixels_with_copy(profile, dtype_b, prompts * (images + videos) * item,
                                   prompts * max(images, videos) * item)
    return kept * v0_pixel_copies(spec, profile), copy


# V0's Qwen2-VL and Qwen2.5-VL check their pixels with `torch.concat(list(pixel_values))`
# (qwen2_vl.py / qwen2_5_vl.py _validate_and_reshape_mm_tensor): V0 hands the model each modality as a
# 3-D batch (multimodal/inputs.py MultiModalKwargs.batch, `unsqueeze(0)` for one prompt), and
# concatenating its rows allocates a second copy, held in `image_input` / `video_input`, locals of the
# model's forward, while the language model runs. Read in the 0.6.4, 0.7.3, 0.8.0, 0.8.4, 0.9.2 and
# 0.10.1 wheels (every V0 release with these models, 0.6.1–0.10.x, validates them so).


def v0_pixel_copies(spec: ModelSpec, profile: Profile) -> int:
    """How many copies of the dummy media's pixels V0's forward holds: two for Qwen2-VL and Qwen2.5-VL
    (the concatenated copy above), one for the others."""
    return 2 if profile.engine == "v0" and spec.model_type in _QWEN2_VL_TYPES else 1


# V1's profile run moves its dummy batch to the GPU in the model dtype from this release
# (gpu_model_runner.py profile_run: `MultiModalKwargs.as_kwargs(..., dtype=self.model_config.dtype, ...)`
# in the 0.9.0 wheel; 0.7.3–0.8.5 pass only the device, and the processors' pixels are float32).
V1_MM_INPUTS_CAST_FROM = (0, 9, 0)


def v1_dummy_pixel_bytes(profile: Profile, dtype_b: int, values: int) -> tuple[int, int]:
    """(the dummy batch's pixels, the tower's model-dtype copy of them) in V1's profile run, for `values`
    pixel values in all. profile_run keeps the batch (`batched_dummy_mm_inputs`, a local of the function
    in every V1 release, 0.7.3–0.33) until it returns, so the pixels sit beside the tower and then beside
    the language model's dummy run and the sampler (Model Runner V2, from 0.27: beside the tower only,
    activation_peak); each patch is patch² × channels values (× the temporal patch for Qwen2-VL's
    flattened frames), 4 B each before V1_MM_INPUTS_CAST_FROM (_pixels_with_copy), when the tower
    converts them first (qwen2_5_vl.py `.type(self.visual.dtype)`). vllm PR #25631's 0.11-era log
    (Qwen2.5-VL-3B, A100-40GB): its default 114,688-token dummy video is 458,752 patches, 1.0 GiB of bf16 pixels, and
    the KV cache printed 5.26 GiB (6.41 modelled without them, 5.40 with)."""
    return _pixels_with_copy(profile, dtype_b, values, values)


def _pixels_with_copy(profile: Profile, dtype_b: int, kept: int, copied: int) -> tuple[int, int]:
    """(bytes of `kept` pixel values on the GPU, bytes of the tower's model-dtype copy of `copied` of them,
    made only where the pixels are not already in the model dtype): the one rule both engines share. A
    value is the image processors' float32 until the release casts it to the model dtype — on the CPU
    from MM_INPUTS_CAST_FROM (both engines), in V1's runner already from V1_MM_INPUTS_CAST_FROM."""
    cast_from = V1_MM_INPUTS_CAST_FROM if profile.engine == "v1" else MM_INPUTS_CAST_FROM
    value_b = 4 if profile.version < cast_from else dtype_b
    return kept * value_b, (copied * dtype_b if value_b != dtype_b else 0)


def _mllama_v0_encoder_peak(spec: ModelSpec, v: dict, images: int, tp: int, dtype_b: int,
                            assumptions: list[str]) -> int:
    """Llama-3.2-Vision on V0: the encoder-decoder runner gives each of max_num_seqs dummy prompts its
    images (worker/enc_dec_model_runner.py profile_run: no max_num_batched_tokens cap, unlike
    model_runner.py), and the vision tower encodes them in one batch (mllama.py MllamaVisionModel).
    Per image of T = tiles × (patches + CLS, padded to 8) tokens, what is live in its last layers: the
    4-D aspect-ratio attention mask (T × T in the model dtype, built for every image and kept through
    all layers), the intermediate hidden states it collects (intermediate_layers_indices) beside the
    running one, and the MLP's fc1 output and GELU (2 × I/tp). vllm PR #12126's log (128 images of
    4 × 1,608 tokens, H100) prints 36.63 GiB of peak activation; this gives 37.3."""
    hv, iv = int(v.get("hidden_size") or 1280), int(v.get("intermediate_size") or 5120)
    patches = (int(v.get("image_size") or 560) // int(v.get("patch_size") or 14)) ** 2 + 1
    t = int(v.get("max_num_tiles") or 4) * (-(-patches // 8) * 8)
    kept = len(v.get("intermediate_layers_indices") or ())
    per_image = (t * t + (kept + 1) * t * hv + 2 * t * iv // tp) * dtype_b
    assumptions.append(f"profile run encodes {images} dummy images of {t:,} vision tokens in one batch (V0 "
                       "encoder-decoder runner: one per dummy prompt), with the vision tower's attention mask")
    return images * per_image


# Model types whose vLLM class sets supports_encoder_tp_data (vllm/model_executor/models: qwen2_5_vl.py,
# qwen3_vl.py with qwen3_vl_moe.py and the Qwen3.5 / 3.6 classes built on it, glm4_1v.py, step3_vl.py,
# dots_ocr.py): with --mm-encoder-tp-mode data their vision tower is replicated on every TP rank. vLLM
# falls back to "weights" for a model without it (vllm/config/model.py).
ENCODER_TP_DATA_TYPES = ("qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "glm4v", "glm4v_moe",
                         "step3_vl", "dots_ocr")


def vision_replicated(spec: ModelSpec, s: EngineSettings, assumptions: list[str] | None = None) -> bool:
    """Whether each tensor-parallel rank holds the whole vision tower: --mm-encoder-tp-mode data on a
    model that supports it (the images are then split between the ranks instead of the weights)."""
    if s.mm_encoder_tp_mode != "data" or s.tensor_parallel_size <= 1 or not spec.vision:
        return False
    if spec.config.get("model_type") in ENCODER_TP_DATA_TYPES:
        return True
    if assumptions is not None:
        assumptions.append(f"--mm-encoder-tp-mode data is counted as weights for {spec.config.get('model_type')} (the "
                           "vision tower split between the ranks): vLLM falls back to it for a model that does not "
                           "support data mode, and kvdoctor does not know this one to")
    return False


# vllm/model_executor/models/interfaces.py _mark_tower_model (0.15.0+): a tower whose modalities are
# all limited to 0 is replaced by a placeholder and its weights are not loaded.
TOWER_SKIP_FROM = (0, 15, 0)


def vision_tower_skipped(spec: ModelSpec, s: EngineSettings, profile: Profile) -> bool:
    """Whether vLLM leaves the vision tower out: every modality it serves (image, and video where the
    config has a video token) limited to 0, from 0.15. Unlisted modalities keep vLLM's default
    (non-zero) limit, so `image=0` alone keeps a Qwen-VL tower for video."""
    limits = s.limit_mm_per_prompt
    if not (spec.is_multimodal and limits) or profile.version < TOWER_SKIP_FROM:
        return False
    # the tower's modalities as each model file marks them: {"image", "video"} for Qwen-VL, InternVL,
    # MiniCPM-V, GLM-4.1V, Gemma 4 … (whatever the config says about video), "image" for these
    modalities = ["image"] if spec.config.get("model_type") in _IMAGE_ONLY_TOWERS else ["image", "video"]
    return all(int(limits.get(m, 1) or 0) == 0 for m in modalities)


def audio_tower_skipped(spec: ModelSpec, s: EngineSettings, profile: Profile) -> bool:
    """Whether vLLM leaves an audio tower out: the audio limit 0 (--limit-mm-per-prompt, or
    --language-model-only's every modality at 0), from 0.15 as for vision towers."""
    limits = s.limit_mm_per_prompt
    return bool(spec.is_multimodal and limits) and profile.version >= TOWER_SKIP_FROM \
        and int(limits.get("audio", 1) or 0) == 0


def mm_prefix_item_tokens(spec: ModelSpec, s: EngineSettings, profile: Profile) -> int:
    """The largest media item of a multimodal prefix-LM model, as its processing info reports it
    (get_mm_max_tokens_per_item) — Gemma 4 with bidirectional vision attention (transformers_utils/
    model_arch_config_convertor.py Gemma4ModelArchConfigConvertor): an image's soft tokens
    (vision_config.default_output_length) or a video of 32 frames × (70 soft tokens + 8 markers)
    (model_executor/models/gemma4_mm.py). 0 for other models, before 0.27, or when every modality is
    off (vLLM then serves it as text only and the model is not prefix-LM)."""
    if profile.engine != "v1" or profile.version < MM_PREFIX_FLOOR_FROM or not spec.is_multimodal:
        return 0
    if spec.config.get("model_type") != "gemma4" or (spec.text or {}).get("use_bidirectional_attention") != "vision":
        return 0
    if s.language_model_only or vision_tower_skipped(spec, s, profile):
        return 0
    image = int((spec.vision or {}).get("default_output_length") or 280)
    return max(image, GEMMA4_VIDEO_ITEM_TOKENS)


# model types whose vision tower vLLM marks for "image" alone (gemma3_mm.py, mistral3.py, pixtral.py,
# llava.py, mllama4.py, kimi_vl.py in 0.33)
_IMAGE_ONLY_TOWERS = ("gemma3", "mistral3", "pixtral", "llava", "llama4", "kimi_vl")
