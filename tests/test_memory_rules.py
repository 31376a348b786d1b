"""Hand-checked tests for rules added after the first memory-model tests.

Each test writes its arithmetic out; the inputs that are estimates in real use (weights,
activation, non-torch, graphs) are given explicitly or a pool is fixed, so only vLLM's exact
rules are under test.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_memory import cdiv, load  # the same catalog loader and ceil-div as the first memory tests

from estimator import diagnose
from estimator.advice import suggest
from estimator.gpus import lookup_gpu
from estimator.kv_layout import window_tokens
from estimator.memory import estimate
from estimator.params import weight_bytes
from estimator.vllm import EngineSettings, parse_flags, profile_for

GiB = 2**30
MiB = 2**20


def test_014_to_016_check_all_pp_stages_against_one_stage():
    """docs §1.11: 0.14.0–0.16.x compare the KV need of ALL stages with one stage's memory."""
    spec = load("Qwen/Qwen3-Coder-30B-A3B-Instruct")    # 48 layers × 4 KV heads × 128
    per_token_all = 48 * 4 * 128 * 2 * 2                # 98,304 B
    pool = 3 * GiB

    def fit(version):
        s = EngineSettings(vllm_version=version, pipeline_parallel_size=2, max_model_len=262144,
                           kv_cache_memory_bytes=pool)
        return estimate(spec, gpu_total_bytes=32 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                        non_torch_bytes=0, cuda_graph_bytes=0).max_model_len_fit

    # 0.15: the whole model's need per token against 3 GiB: 16 × floor(3 GiB / (16 × 98,304)) tokens.
    assert fit("0.15.0") == 16 * (pool // (16 * per_token_all))          # 32,768
    # 0.17+: each stage's own 24 layers, half the bytes per token → twice the length.
    assert fit("0.17.0") == 16 * (pool // (16 * per_token_all // 2))    # 65,536


def test_expert_parallel_holds_whole_experts_per_rank():
    """--enable-expert-parallel: ep = tp × dp ranks each hold num_experts/ep whole experts."""
    spec = load("Qwen/Qwen3-30B-A3B")                   # 48 layers, 128 experts of 3 × 2048 × 768
    tp8 = weight_bytes(spec, tp=8)
    ep8 = weight_bytes(spec, tp=1, ep=8)
    per_expert = 3 * 2048 * 768 * 2                     # bf16 gate/up/down of one expert
    # Experts: TP splits every expert 8 ways, EP keeps 128/8 = 16 whole experts per rank: the same bytes.
    assert tp8.bytes_by_part["experts"] == ep8.bytes_by_part["experts"] == 48 * 16 * per_expert
    # …but with DP+EP (tp=1) attention and embeddings are whole on every rank, as at tp=1.
    whole = weight_bytes(spec, tp=1)
    assert ep8.bytes_by_part["attention"] == whole.bytes_by_part["attention"]
    assert ep8.bytes_by_part["embed"] == whole.bytes_by_part["embed"]


def test_estimate_uses_expert_parallel_flag():
    spec = load("Qwen/Qwen3-30B-A3B")
    base = dict(gpu_total_bytes=80 * GiB, activation_bytes=0, non_torch_bytes=0, cuda_graph_bytes=0)
    plain = estimate(spec, settings=parse_flags(["--data-parallel-size", "8", "--vllm-version", "0.10.1"]), **base)
    ep = estimate(spec, settings=parse_flags(["--data-parallel-size", "8", "--enable-expert-parallel",
                                              "--vllm-version", "0.10.1"]), **base)
    # 128 experts → 16 per rank: the expert share of the weights drops 8×.
    experts_all = 48 * 128 * 3 * 2048 * 768 * 2
    assert plain.weights_bytes - ep.weights_bytes == experts_all - experts_all // 8


def test_mamba_prefix_caching_keeps_two_state_blocks_per_request():
    """Hybrid models with prefix caching ('align'): 2 blocks per Mamba group per request."""
    spec = load("Qwen/Qwen3.6-27B")                     # 16 full + 48 gated-DeltaNet layers
    common = dict(vllm_version="0.21.0", max_model_len=262144, kv_cache_dtype="fp8",
                  kv_cache_memory_bytes=8 * GiB)
    kw = dict(gpu_total_bytes=48 * GiB, weights_bytes=0, activation_bytes=0, non_torch_bytes=0, cuda_graph_bytes=0)
    off = estimate(spec, settings=EngineSettings(**common), **kw)
    on = estimate(spec, settings=EngineSettings(enable_prefix_caching=True, **common), **kw)
    # attention block size 1568 (16 × cdiv(3,207,168 B state, 16 × 2,048 B)), 4 groups of 16 layers.
    assert off.layout.block_size == on.layout.block_size == 1568
    full_blocks = cdiv(262144, 1568)                    # 168
    bpb = 16 * 1568 * 2048                              # 16 layers × one 1,568-token fp8 page
    assert off.kv_needed_bytes == bpb * (full_blocks + 3)        # one block per Mamba group
    assert on.kv_needed_bytes == bpb * (full_blocks + 3 * 2)     # two with prefix caching
    assert on.kv_needed_bytes / GiB == pytest.approx(8.33, abs=0.01)  # what vLLM printed (qevos)


def test_v1_token_capacity_anchors_the_pool():
    """A V1 start-up log with only 'GPU KV cache size: N tokens' still pins the KV pool (0.21+: N = int(c × L))."""
    paste = (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.9\n"
        "INFO 09-01 10:00:00 [kv_cache_utils.py:1000] GPU KV cache size: 409,600 tokens\n"
        "INFO 09-01 10:00:00 [kv_cache_utils.py:1001] Maximum concurrency for 32,768 tokens per request: 12.50x\n"
        "RuntimeError: CUDA out of memory while serving\n"
    )
    d = diagnose(paste, gpu="H100", vllm_version="0.25.0", offline=True, explain=True)
    # One full-attention group: blocks per request = 32768/16 = 2048; 12.5× → 25,600 blocks of 2 MiB.
    assert d.estimate["gpu_blocks"] == 25_600
    assert d.estimate["memory"]["kv_cache_bytes"] == 25_600 * 2 * MiB
    assert d.estimate["kv_cache_tokens"] == 409_600


def test_stated_gpu_variant_and_smi_size():
    # A 48 GB RTX 4090 (modded): the catalog's 24 GB card plus 24 GiB of memory chips (the driver's
    # reservation does not double): 23.64 + 24 = 47.64 GiB.
    g = lookup_gpu("NVIDIA GeForce RTX 4090 with 48GB of VRAM")
    assert g.total_bytes == int(lookup_gpu("RTX 4090").total_bytes + 24 * 2**30)
    # nvidia-smi's MiB: the catalog maps 16,303 MiB to the torch total it observed for a card of
    # that size (the RTX 5080's 15.47 GiB) ...
    assert lookup_gpu("16303MiB").total_bytes == lookup_gpu("RTX 5080").total_bytes == round(15.47 * 2**30)
    # ... and the RTX 5070 Ti, whose torch total nobody has printed but whose nvidia-smi total is the
    # same 16,303 MiB (vllm#34076), gets that observed figure, not smi − 480 MiB (15.45 GiB).
    ti = lookup_gpu("NVIDIA GeForce RTX 5070 Ti")
    assert ti.name == "NVIDIA GeForce RTX 5070 Ti" and ti.total_bytes == lookup_gpu("RTX 5080").total_bytes
    assert "RTX 5080" in ti.assumed
    assert lookup_gpu("NVIDIA GeForce RTX 5070 Ti 16303MiB").total_bytes == lookup_gpu("16303MiB").total_bytes
    # The name wins when the stated size agrees (49.1 GB ≈ the A6000's 48 GB).
    assert lookup_gpu("NVIDIA RTX A6000 (49.1 GB VRAM)").name == "NVIDIA RTX A6000"


def test_utilization_fix_is_the_smallest_that_fits_plus_margin():
    """V1 0.25, Llama-3.1-8B on an 80 GiB card, pool just short of one 131,072-token request."""
    spec = load("meta-llama/Llama-3.1-8B")
    T, W = 80 * GiB, 40 * GiB
    # Budget 0.60 × 80 = 48 GiB; KV = 48 − 40 = 8 GiB < 16 GiB needed (131,072 × 131,072 B).
    s = EngineSettings(vllm_version="0.25.0", gpu_memory_utilization=0.60, max_model_len=131072)
    est = estimate(spec, gpu_total_bytes=T, settings=s, weights_bytes=W, activation_bytes=0,
                   non_torch_bytes=0, cuda_graph_bytes=0)
    assert not est.fits
    util = [x for x in suggest(est) if x.flags.startswith("--gpu-memory-utilization")]
    # Needs 16 GiB of KV: u ≥ 56/80 = 0.70 exactly; 0.70 fits → suggest 0.71 (one point of margin).
    assert util and util[0].flags == "--gpu-memory-utilization 0.71"


def test_facts_only_fixes_when_the_model_is_unknown():
    """No config to re-check with: the fix comes from vLLM's own numbers and is labelled unchecked."""
    paste = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can "
             "be stored in KV cache (16816). Try increasing `gpu_memory_utilization` or decreasing "
             "`max_model_len` when initializing the engine.")
    d = diagnose(paste, model="some-org/not-in-the-catalog", offline=True)
    assert d.suggestions == [] and d.estimate is None
    # 16,816 tokens fit; the largest power of two under it (≥ 85% of it) is 16,384.
    assert d.unchecked[0]["flags"] == "--max-model-len 16384" and d.unchecked[0]["checked"] is False
    assert "config.json" in " ".join(d.missing)


def test_free_memory_error_without_a_model_says_who_holds_the_gpu():
    paste = ("ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory "
             "utilization (0.9, 125.75 GiB). Decrease GPU memory utilization or reduce GPU memory used by "
             "other processes.")
    d = diagnose(paste, offline=True)
    assert d.error_kind == "free_memory_startup"
    # 139.72 − 7.34 = 132.38 GiB held elsewhere.
    assert "132.38 GiB" in d.unchecked[0]["why"]


# ---- profile-run activation: multimodal and data-parallel rules ---------------------------------


def _act(spec, **settings):
    from estimator.activation import activation_peak
    from estimator.vllm import profile_for

    s = EngineSettings(**settings)
    notes: list[str] = []
    return activation_peak(spec, profile_for(s.vllm_version, s.engine), s, 2, notes), notes


def test_v0_065_profile_of_a_long_prefill_without_chunking():
    """vllm#11251 (0.6.5, Llama-3.1-8B fp16, TP2, 15.77 GiB cards at 0.90, max_model_len 40,000,
    `--enable-chunked-prefill False`) printed weights 7.51, non-torch 0.39, activation 2.53 and
    3.76 GiB of KV. By hand: V0 profiles one batch of Tb = 40,000 tokens; its peak is the MLP's live
    set, 40,000 × (3 × 14,336 / 2 + 3 × 4,096) × 2 B = 2.52 GiB; 0.6.5 measures non-torch after
    emptying torch's cache, so it is 0.15 + 0.06 × 2 = 0.27 GiB, not that plus the activation."""
    spec = load("meta-llama/Llama-3.1-8B-Instruct")
    s = parse_flags(["--tensor-parallel-size", "2", "--dtype", "float16", "--max-model-len", "40000",
                     "--enable-chunked-prefill", "False", "--gpu-memory-utilization", "0.90"],
                    EngineSettings(vllm_version="0.6.5"))
    e = estimate(spec, gpu_total_bytes=int(15.77 * GiB), settings=s, weights_bytes=int(7.51 * GiB))
    act = 40000 * (3 * 14336 // 2 + 3 * 4096) * 2
    assert e.settings.max_num_batched_tokens == 40000
    assert e.activation_bytes == act
    assert e.non_torch_bytes == int(0.15 * GiB) + 2 * int(0.06 * GiB)
    kv = int(0.90 * 15.77 * GiB) - int(7.51 * GiB) - act - e.non_torch_bytes
    assert abs(e.kv_cache_bytes - kv) <= 2 * MiB
    assert abs(e.kv_cache_bytes / GiB - 3.76) / 3.76 < 0.05        # printed 3.76, model 3.90


def test_v0_multimodal_dummy_prompt_is_not_cut_to_the_batch():
    """vllm/multimodal/profiling.py (V0): a dummy prompt longer than Tb // S only warns; the whole
    prompt — one max-size image (16,384 tokens) and one video (16,384) — goes through the LLM."""
    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")          # h 3584, I 18944, 28 heads, 4 KV, d 128
    act, notes = _act(spec, vllm_version="0.8.4", engine="v0", max_num_batched_tokens=8192,
                      max_num_seqs=256)
    # S' = max(1, min(256, 8192 // 32768)) = 1; tokens = 1 × max(8192, 32768) = 32,768, each with
    # V0's MLP live set 3 × 18,944 + 3 × 3,584 = 67,584 elements of 2 B.
    per_token = 3 * 18944 + 3 * 3584
    # Beside them, the dummy image's and video's float32 pixels (0.8.4 does not cast them) stay on
    # the GPU as the forward's keyword arguments: 65,536 patches × 14² × 3 channels × 2 (temporal
    # patch) = 77,070,336 values each, 4 B — twice: V0 hands each modality over as a [1, N, 1,176]
    # batch and qwen2_5_vl.py's _validate_and_reshape_mm_tensor keeps torch.concat(list(batch)), a
    # new tensor, in image_input / video_input while the language model runs.
    pixels = 2 * 65536 * 14 * 14 * 3 * 2 * 4
    assert act == 32768 * per_token * 2 + 2 * pixels        # 4.125 + 2 × 0.574 GiB (1.03 for 8,192 tokens)
    assert any("32,768 tokens through the language model" in n for n in notes)
    assert any("twice: the batch and the copy the model's input check concatenates" in n for n in notes)
    # gpustack#1800 (0.8.x V0, RTX 3090) left 2,400 tokens of KV (0.13 GiB) after 15.48 GiB of
    # weights: ≈ 5.4–5.6 GiB of activation + non-torch if its utilization was 0.9 (not in the paste),
    # about 0.3 GiB above this model (0.9 GiB before the concatenated copy was counted).
    assert 5.2 * GiB < act < 5.3 * GiB


def test_v0_070_to_082_profile_a_text_only_prompt_when_the_media_do_not_fit():
    """vllm/multimodal/profiling.py 0.7.0–0.8.2 (V0): a dummy prompt whose media exceed its sequence
    length is replaced by a text-only one of that length (the "too short to hold the multi-modal
    embeddings" warning) — no media, no encoder. A LLaMA-Factory A800 log (Qwen2.5-VL-7B, 0.8.2, TP 4,
    Tb 5,120) printed 0.32 GiB of activation; 0.8.3 and later keep the media (test above)."""
    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")          # h 3584, I 18944, vocabulary 152,064
    kw = dict(engine="v0", max_num_batched_tokens=5120, max_num_seqs=256)
    act, notes = _act(spec, vllm_version="0.8.2", **kw)
    # media 16,384 + 16,384 > Tb 5,120 → S' = 1 prompt of 5,120 text tokens through V0's MLP live set
    # (3 × 18,944 + 3 × 3,584 = 67,584 values of 2 B each), and one sampler row of 152,064 × 40 B
    forward = 5120 * (3 * 18944 + 3 * 3584) * 2          # 0.645 GiB
    assert act == max(forward, 1 * 152064 * 40)
    assert any("text-only prompt of 5,120 tokens" in n for n in notes)
    # a model whose dummy data 0.7.0 still built with its own factory (internvl_chat) is outside the rule
    from estimator.vllm import v0_text_only_dummy

    assert v0_text_only_dummy((0, 7, 0), "qwen2_vl", 32768, 5120)
    assert not v0_text_only_dummy((0, 7, 0), "internvl_chat", 32768, 5120)
    assert v0_text_only_dummy((0, 7, 3), "internvl_chat", 32768, 5120)
    assert not v0_text_only_dummy((0, 8, 3), "qwen2_5_vl", 32768, 5120)
    assert not v0_text_only_dummy((0, 8, 2), "qwen2_5_vl", 5120, 5120)   # fits exactly: media kept
    whole, _ = _act(spec, vllm_version="0.8.3", **kw)
    assert whole > 4 * act


def test_v0_gemma3_profile_encodes_every_dummy_image_eagerly_beside_their_pixels():
    """vllm#16199 (gaunernst/gemma-3-27b-it-int4-awq, 0.8.3 V0, --dtype float16, 21.99 GiB at 0.98,
    max_model_len 4,096) printed 17.61 GiB of weights and 224 blocks of 16 × 507,904 B: 21.55 − 17.61
    − 1.70 = 2.24 GiB of activation and non-torch memory. By hand: V0's Tb = max(4096, 5120) = 5,120
    (multimodal); 0.8.3's gemma3_mm.py counts an image as "<start_of_image>" + 256 soft tokens +
    "<end_of_image>" = 258 tokens, so 5,120 // 258 = 19 dummy prompts of one 896² image each; SigLIP
    encodes the 19 × 4,096 patches at once, eagerly: fc1 + GELU (2 × 4,304) beside the block's input,
    residual and norm and the embeddings SiglipEncoder keeps (4 × 1,152) = 13,216 values per patch,
    1.92 GiB; the 19 images' float32 pixels (3 × 896² × 4 B each, 0.17 GiB) stay on the GPU as the
    forward's arguments and the tower encodes their fp16 copy (0.09 GiB): 2.17 GiB, + 0.05 non-torch
    (a 22 GiB card) = 2.22."""
    from estimator.activation import activation_peak
    from estimator.multimodal_profile import v0_dummy_pixel_bytes
    from estimator.vllm import profile_for

    spec = load("gaunernst/gemma-3-27b-it-int4-awq")
    s = EngineSettings(vllm_version="0.8.3", engine="v0", max_model_len=4096, max_num_batched_tokens=5120,
                       dtype="float16")
    profile = profile_for("0.8.3", "v0")
    pixels = 19 * 3 * 896 * 896 * 4
    assert v0_dummy_pixel_bytes(spec, profile, 2, 19, 1, 0) == (pixels, pixels // 2)
    encoder = 19 * 4096 * (2 * 4304 + 4 * 1152) * 2 + pixels + pixels // 2
    assert encoder == 2_331_607_040
    notes: list[str] = []
    act = activation_peak(spec, profile, s, 2, notes)
    assert act == encoder                                   # over the LLM's 5,120 tokens and the sampler
    assert any("19 max-size dummy image(s) of 258 tokens (4,096 patches)" in n for n in notes)
    assert abs((act + int(0.05 * GiB)) / GiB - 2.24) < 0.03
    # from 0.9.1 vLLM casts the processor's outputs to the model dtype on the CPU: 2 B, no copy
    assert v0_dummy_pixel_bytes(spec, profile_for("0.9.1", "v0"), 2, 20, 1, 0) == (20 * 3 * 896 * 896 * 2, 0)


def test_gemma3_image_token_count_follows_the_release():
    """gemma3_mm.py's get_num_image_tokens in the wheels: 0.8.0 encodes "\n\n<start_of_image>" + 256 soft
    tokens + "<end_of_image>\n\n" (260), 0.8.1–0.8.3 the same without the newlines (258), 0.8.4 on
    (num_crops + 1) × image_seq_length (256). At Tb 5,120 V0 profiles 5,120 // 260 = 19, // 258 = 19 and
    // 256 = 20 images; SigLIP's 4,096 patches each hold 2 × 4,304 + 4 × 1,152 values in bf16."""
    from estimator.multimodal_profile import encoder_profile, image_marker_tokens
    from estimator.vllm import profile_for

    gemma = load("google/gemma-3-27b-it")
    per_image = 4096 * (2 * 4304 + 4 * 1152) * 2
    for version, media, images in (("0.8.0", 260, 19), ("0.8.1", 258, 19), ("0.8.3", 258, 19),
                                   ("0.8.4", 256, 20), ("0.10.1", 256, 20)):
        s = EngineSettings(vllm_version=version, engine="v0", max_model_len=4096, max_num_batched_tokens=5120)
        out = encoder_profile(gemma, profile_for(version, "v0"), s, 2, [], max_len=4096)
        assert (out.media, out.peak) == (media, images * per_image), version
    # other models keep their own count
    assert image_marker_tokens(load("Qwen/Qwen2.5-VL-7B-Instruct"), (0, 8, 3)) == 0


def test_siglip_and_clip_towers_keep_their_input_embeddings_through_the_layers():
    """siglip.py / clip.py: the encoder loops on `hidden_states = inputs_embeds` while the caller still holds
    the embeddings, so one more hidden-width tensor is live beside the block's. LLaVA-NeXT's CLIP-L/14-336
    (hidden 1,024, MLP 4,096) on V0 0.8.3: one dummy image of 2,928 tokens (the 672² anyres pinpoint) from
    5 tiles of 576 patches; the MLP half 2 × 4,096 + 4 × 1,024 = 12,288 values per patch beats the
    attention half (2 + 1 + 8) × 1,024 = 11,264: 2,880 × 12,288 × 2 B."""
    from estimator.multimodal_profile import encoder_profile
    from estimator.vllm import profile_for

    llava = load("llava-hf/llava-v1.6-mistral-7b-hf")
    s = EngineSettings(vllm_version="0.8.3", engine="v0", max_model_len=8192, max_num_batched_tokens=5120)
    out = encoder_profile(llava, profile_for("0.8.3", "v0"), s, 2, [], max_len=8192)
    assert (out.media, out.peak) == (2928, 2880 * 12_288 * 2)


def test_gemma3_local_layers_get_their_own_rope_cache():
    """Gemma 3's official configs omit rope_local_base_freq; transformers' Gemma3TextConfig defaults it to
    10,000 and vLLM's gemma3.py builds the sliding layers' rotary embedding from it — a second cos/sin
    cache (131,072 positions × head_dim 128 × 2 B = 32 MiB) beside the global layers' linear-scaled one
    (× 8 = 256 MiB)."""
    from estimator.params import rope_cache_bytes

    spec = load("google/gemma-3-27b-it")
    assert "rope_local_base_freq" not in spec.config["text_config"]
    assert rope_cache_bytes(spec, 2)[0] == (131072 * 8 + 131072) * 128 * 2


def test_llava_next_profiles_its_largest_anyres_image():
    """llava-v1.6-mistral-7b-hf (llava_next.py get_image_size_with_most_features): of the pinpoints
    336×672, 672×336, 672×672, 1008×336 and 336×1008, 672×672 has the most features — the base tile's
    24² = 576 (CLS dropped by the default strategy), the 2 × 2 grid's 48 × 48 = 2,304 and 48 newlines:
    2,928 tokens from 5 tiles of 336 px (2,880 patches through CLIP); 1×3 grids give 576 + 1,728 + 24
    or + 72. vLLM 0.10.2's log for it: "Encoder cache will be initialized with a budget of 16384
    tokens, and profiled with 5 image items of the maximum feature size" (16,384 // 2,928 = 5)."""
    from estimator.multimodal_profile import dummy_item, llava_next_largest_image

    spec = load("llava-hf/llava-v1.6-mistral-7b-hf")
    assert llava_next_largest_image(spec) == (576 + 48 * 48 + 48, 5)
    item = dummy_item(spec)
    assert (item.tokens, item.patches) == (2928, 5 * 576)
    assert 16384 // item.tokens == 5
    # LLaVA-1.5 has no anyres grid: one 336 px tile, 576 tokens
    assert llava_next_largest_image(load("llava-hf/llava-1.5-7b-hf")) is None
    assert dummy_item(load("llava-hf/llava-1.5-7b-hf")).tokens == 576


def test_vision_encoder_activation_is_split_by_tensor_parallelism():
    """A ViT block's peak is its larger half: the MLP (split by TP) or the attention, whose qkv
    Qwen2_5_VisionAttention all-gathers at TP > 1 — so the peak shrinks far less than 1/tp."""
    spec = load("Qwen/Qwen3.6-27B")                     # vision h 1152, I 4304, gelu (plain MLP), merge 2
    from estimator.multimodal_profile import vision_encoder_peak
    from estimator.vllm import profile_for

    def enc(tp):
        s = EngineSettings(vllm_version="0.33", tensor_parallel_size=tp, max_num_batched_tokens=8192)
        return vision_encoder_peak(spec, profile_for("0.33"), s, 2, [])

    patches = 16384 * 2 * 2                             # one max-size image: 16,384 tokens × merge²
    # TP1: MLP fc1 + act 2·4304 + 3·1152 = 12,064 over the attention's 2·1152 + 8·1152 = 11,520.
    # Second value: a V0 dummy prompt's media tokens — image + video (video_token_id in the config).
    assert enc(1) == (patches * 12064 * 2, 2 * 16384)
    # TP2: MLP 4304 + 3456 = 7,760 < attention 2304 + 3456 (gathered qkv) + 4608 = 10,368.
    assert enc(2)[0] == patches * 10368 * 2
    # TP4: MLP 2152 + 3456 = 5,608 < attention 2304 + 3456 + 2304 = 8,064.
    assert enc(4)[0] == patches * 8064 * 2
    # No V1 forward factor: vLLM runs the tower eagerly (compile_mm_encoder is opt-in). With the image's
    # bf16 pixels beside it (16² × 3 × 2 values per patch: 65,536 × 1,536 × 2 B = 0.1875 GiB;
    # v1_dummy_pixel_bytes): 1.4727 + 0.1875 / 1.2656 + 0.1875 / 0.9844 + 0.1875 GiB
    pixels = patches * 16 * 16 * 3 * 2 * 2
    assert pixels == 0.1875 * GiB
    assert [round((enc(tp)[0] + pixels) / GiB, 2) for tp in (1, 2, 4)] == [1.66, 1.45, 1.17]


def test_gated_vision_mlp_keeps_gate_and_up():
    """Qwen2.5-VL's vision MLP is SiLU-gated (gate/up 2·I + activation I); its config copy may omit
    hidden_act, whose class default is silu."""
    from estimator.multimodal_profile import vision_encoder_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")          # vision h 1280, I 3420, silu
    s = EngineSettings(vllm_version="0.13.0", max_num_batched_tokens=2048)
    peak, _ = vision_encoder_peak(spec, profile_for("0.13.0"), s, 2, [])
    # one 16,384-token image = 65,536 patches; MLP 3·3420 + 3·1280 = 14,100 over attention 12,800
    assert peak == 65536 * 14100 * 2
    # its copy has neither hidden_act nor spatial_merge_size: silu and 2×2 by the class defaults
    no_act = load("Qwen/Qwen2.5-VL-32B-Instruct")
    raw = no_act.config["vision_config"]
    assert "hidden_act" not in raw and "spatial_merge_size" not in raw
    assert (no_act.vision["hidden_act"], no_act.vision["spatial_merge_size"]) == ("silu", 2)
    peak32, _ = vision_encoder_peak(no_act, profile_for("0.13.0"), s, 2, [])
    assert peak32 == 65536 * (3 * 3456 + 3 * 1280) * 2


@pytest.mark.parametrize("version,tp,values", [
    # Qwen2.5-VL-7B's tower: H 1280, so u = 1280/tp values; the MLP is 3·3420/tp + 3·1280 (14,100 at TP 1)
    # ≤ 0.8.5: q alone through apply_rotary_emb_torch — its float32 copy, x·cos, rotate_half's concatenation
    # and its ·sin, four float32 tensors of 1280 (8·1280 in 2-byte values) — beside the block input and
    # norm (2·1280), qkv (3·1280) and the contiguous q, k, v (3·1280): 16·1280
    ("0.8.4", 1, 16 * 1280),
    # 0.9.0–0.10.2: q alone through the Triton kernel: float32 copy and output (2·1280 each) and the cast
    ("0.9.0", 1, 13 * 1280),
    ("0.10.2", 1, 13 * 1280),
    # 0.11.0: q and k concatenated (2·1280), its float32 copy and output (4·1280 each), the cast (2·1280)
    ("0.11.0", 1, 20 * 1280),
    # 0.11.1: no contiguous copies and no concatenation (a view of qkv is rotated): 2 + 3 + 4 + 4 + 2
    ("0.11.1", 1, 15 * 1280),
    # TP 2, 0.11.0 (u = 640): 2·1280 + 6·640 + the rotation's 2·640 + 8·640 + 2·640 = 14,080 — more than
    # the all-gathered 3·1280 beside the copies (2·1280 + 6·640 + 3·1280 = 10,240) and the MLP (8,970)
    ("0.11.0", 2, 2 * 1280 + 18 * 640),
    # TP 2, 0.11.1: heads stay local, q/k a view: 2·1280 + 3·640 + 10·640
    ("0.11.1", 2, 2 * 1280 + 13 * 640),
    # TP 2, 0.8.4: the gather (2·1280 + 6·640 + 3·1280 = 10,240) is under the rotation (2·1280 + 14·640)
    ("0.8.4", 2, 2 * 1280 + 14 * 640),
])
def test_qwen_vit_rotates_q_and_k_in_float32_before_0_12(version, tp, values):
    """qwen2_vl.py apply_rotary_pos_emb_vision rotates `t.float()` and casts back with `type_as` up to
    0.11.2 (the 0.7.3–0.11.2 wheels; 0.12.0 rotates in the model dtype): read from each release's
    forward, the attention half's live set outgrows the MLP's, and the tower runs eagerly (factor 1).
    Two logs: an L4 on 0.9.0.1 printed 1.81 GiB of KV after 15.63 GiB of Qwen2.5-VL-7B weights (the
    1.3 × MLP peak, 2.24 GiB, left 1.53; 13·1280 values, 2.03 GiB, leave 1.74), and Ray's docs' L4 on 0.11.0
    (Qwen2.5-VL-3B, the same tower) printed 9.26 GiB (below)."""
    from estimator.multimodal_profile import vision_encoder_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    s = EngineSettings(vllm_version=version, tensor_parallel_size=tp, max_num_batched_tokens=2048)
    peak, _ = vision_encoder_peak(spec, profile_for(version), s, 2, [], max_len=8192)
    assert peak == 65_536 * values * 2


def test_qwen2_vl_gathers_its_heads_from_0_7():
    """qwen2_vl.py 0.6.x splits each rank's own heads; from 0.7.0 split_qkv all-gathers them at TP > 1
    (all_gather_interleave), so at TP 4 the gathered 3·H outweighs ≤ 0.8.5's float32 rotation of q.
    Qwen2-VL's tower: H 1280, u = 320; block input and norm (2·1280) + qkv and its contiguous copies (6·320)
    = 8,960 B, then the rotation's four float32 tensors of 320 (5,120 B) or the gathered 3·1280 (7,680 B)."""
    import dataclasses as dc

    from estimator.multimodal_profile import qwen_vit_attention_bytes

    base = load("Qwen/Qwen2.5-VL-7B-Instruct")
    qwen2 = dc.replace(base, config={**base.config, "model_type": "qwen2_vl"})
    assert qwen_vit_attention_bytes(qwen2, (0, 6, 6), 1280, 4, 2) == 8960 + 5120
    assert qwen_vit_attention_bytes(qwen2, (0, 7, 0), 1280, 4, 2) == 8960 + 7680
    # 0.11.1: Qwen2-VL still gathers (and concatenates q and k); its q, k, v are views of the gathered heads
    assert qwen_vit_attention_bytes(qwen2, (0, 11, 1), 1280, 4, 2) == \
        (2 * 1280 + 3 * 320 + 3 * 1280) * 2 + 2 * 320 * 2 + 2 * (2 * 320 * 4) + 2 * 320 * 2
    assert qwen_vit_attention_bytes(qwen2, (0, 12, 0), 1280, 4, 2) is None


def test_qwen_vit_float32_rotation_in_a_0_11_log():
    """Ray's batch-inference docs, a committed notebook's 0.11.0 log: Qwen2.5-VL-3B on an L4, Tb 2,048,
    max_model_len 8,192, "Model loading took 7.1550 GiB", "Available KV cache memory: 9.26 GiB". 22.05 GiB
    × 0.90 − 7.155 − the tower's 65,536 patches × 20·1280 values × 2 B (3.125 GiB) − non-torch memory
    leaves ≈ 9.5 GiB (10.43 with the 1.3 × MLP peak, 12.7% over); Qwen2-VL rotates a concatenation in 0.11.1
    too (qwen2_vl.py still cats q and k there)."""
    from estimator.multimodal_profile import vision_encoder_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-3B-Instruct")
    g = lookup_gpu("L4")
    settings = EngineSettings(vllm_version="0.11.0", max_model_len=8192, max_num_batched_tokens=2048,
                              dtype="bfloat16")
    peak, _ = vision_encoder_peak(spec, profile_for("0.11.0"), settings, 2, [], max_len=8192)
    assert peak == 65_536 * 20 * 1280 * 2
    est = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability,
                   weights_bytes=int(7.155 * GiB), settings=settings)
    assert est.activation_bytes >= peak
    assert 9.26 * GiB < est.kv_cache_bytes < 9.26 * 1.05 * GiB


def test_v1_keeps_the_dummy_pixels_through_the_profile_run():
    """gpu_model_runner.py profile_run holds its dummy batch (`batched_dummy_mm_inputs`) until it returns,
    so the pixels sit beside the tower and then beside the language model's run. vllm PR #25631's log
    (Qwen2.5-VL-3B, A100-40GB, a 0.11-era main): "Available KV cache memory: 5.26 GiB" by default — the
    dummy is a 114,688-token video, 458,752 patches of 14² × 3 × 2 = 1,176 bf16 values, 1.0 GiB — and
    25.05 GiB with '{"image": 1, "video": 0}' (65,536 patches, 0.14 GiB). Without the pixels the model said
    6.41 and 25.16."""
    from estimator.multimodal_profile import encoder_profile
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-3B-Instruct")
    g = lookup_gpu("A100 40GB")

    def run(**kw):
        settings = EngineSettings(vllm_version="0.11.0", **kw)
        out = encoder_profile(spec, profile_for("0.11.0"), settings, 2, [], max_len=128_000)
        est = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability,
                       settings=settings)
        return out, est

    out, est = run()
    assert (out.pixels, out.pixel_copy) == (458_752 * 1176 * 2, 0)
    assert est.activation_bytes >= out.peak + out.pixels
    assert abs(est.kv_cache_bytes / (5.26 * GiB) - 1) < 0.05
    out, est = run(limit_mm_per_prompt={"image": 1, "video": 0})
    assert out.pixels == 65_536 * 1176 * 2
    assert abs(est.kv_cache_bytes / (25.05 * GiB) - 1) < 0.02


@pytest.mark.parametrize("version,value_bytes,copy", [
    ("0.8.5", 4, True),      # as_kwargs(device=...) only: the processor's float32, and the tower's bf16 copy
    ("0.9.0", 2, False),     # as_kwargs(dtype=model dtype, ...)
    ("0.13.0", 2, False),
])
def test_v1_dummy_pixels_are_float32_before_0_9(version, value_bytes, copy):
    from estimator.multimodal_profile import encoder_profile
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    s = EngineSettings(vllm_version=version, max_num_batched_tokens=2048, limit_mm_per_prompt={"video": 0})
    out = encoder_profile(spec, profile_for(version), s, 2, [], max_len=8192)
    assert out.pixels == 65_536 * 1176 * value_bytes
    assert out.pixel_copy == (65_536 * 1176 * 2 if copy else 0)


def test_model_runner_v2_frees_the_pixels_before_the_language_model_runs():
    """V2's encoder_runner.execute_mm_encoder moves each batch to the GPU inside its call, so from 0.27
    (when V2 profiles media) the pixels are not beside the language model's run, while V1's are. With a
    large batch the language model's side is the peak: the encoder budget max(Tb, item) = 65,536 holds four
    16,384-token images, and images on against images off differs by their kept outputs (4 × 16,384 ×
    3,584 × 2 B) under V2, and by those and their pixels (4 × 65,536 × 1,176 × 2 B) under V1."""
    from estimator.activation import activation_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")

    def diff(v2):
        kw = dict(vllm_version="0.27.0", max_num_batched_tokens=65536, max_num_seqs=1024, enforce_eager=True,
                  model_runner_v2=v2)
        on = activation_peak(spec, profile_for("0.27.0"), EngineSettings(
            limit_mm_per_prompt={"image": 1, "video": 0}, **kw), 2, [], max_len=131072)
        off = activation_peak(spec, profile_for("0.27.0"), EngineSettings(
            limit_mm_per_prompt={"image": 0, "video": 0}, **kw), 2, [], max_len=131072)
        return on - off

    kept, pixels = 4 * 16_384 * 3584 * 2, 4 * 65_536 * 1176 * 2
    assert diff(True) == kept
    assert diff(False) == kept + pixels


def test_v2_runner_profiles_no_media_before_027():
    """Model Runner V2's profile_run (v1/worker/gpu/model_runner.py) encodes dummy media only from
    0.27 (encoder_runner.profile_encoder_cache); 0.22–0.26 run the language model and the sampler
    alone, so the tower's peak is not set aside and no media limit frees budget there."""
    from estimator.multimodal_profile import vision_encoder_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    one_image = 65536 * 14100 * 2                       # test_gated_vision_mlp_keeps_gate_and_up

    def enc(version, v2, **kw):
        s = EngineSettings(vllm_version=version, max_num_batched_tokens=2048, model_runner_v2=v2, **kw)
        notes: list[str] = []
        return vision_encoder_peak(spec, profile_for(version), s, 2, notes, max_len=4096), notes

    (peak, tokens), notes = enc("0.26.0", True)
    assert (peak, tokens) == (0, 0)
    assert any("does not profile the vision encoder" in n for n in notes)
    assert enc("0.26.0", False)[0][0] == one_image        # the V1 runner of 0.26 does
    assert enc("0.27.0", True)[0][0] == one_image         # and V2 from 0.27
    # a log that prints the encoder-cache profile line shows the encoder ran: it stands
    assert enc("0.26.0", True, encoder_profile=("image", 1))[0][0] == one_image
    # through the whole estimate (V2 is 0.26's default for this dense model): the activation is the
    # same as with every media limit at 0, and no --limit-mm-per-prompt fix is offered
    def act(**kw):
        s = EngineSettings(vllm_version="0.26.0", max_num_batched_tokens=2048, max_num_seqs=4,
                           max_model_len=4096, **kw)
        return estimate(spec, gpu_total_bytes=80 * GiB, settings=s).activation_bytes
    assert act() == act(limit_mm_per_prompt={"image": 0, "video": 0})
    assert act(model_runner_v2=False) > act()


def test_fixed_size_image_tokens_come_from_the_config():
    """Gemma 4: 280 soft tokens per image (vision_soft_tokens_per_image), pooled 3×3 from patches; a
    video is 32 frames of 70 soft tokens (gemma4_mm.py get_mm_max_tokens_per_item: 2,240, more than an
    image), so V1 profiles the dummy video unless videos are limited to 0."""
    from estimator.multimodal_profile import vision_encoder_peak
    from estimator.vllm import profile_for

    spec = load("nvidia/Gemma-4-31B-IT-NVFP4")          # vision h 1152, I 4304
    # Gemma's own tower has a gated MLP (params.vision_mlp_gated, as its weights are counted):
    # gate/up + act 3·4304 + 3·1152 = 16,368 over the attention's 10·1152 at TP1
    per_patch = (3 * 4304 + 3 * 1152) * 2
    notes: list[str] = []
    s = EngineSettings(vllm_version="0.33", max_num_batched_tokens=4096)
    peak, _ = vision_encoder_peak(spec, profile_for("0.33"), s, 2, notes)
    # encoder budget max(Tb, 2,240) → one video: 32 frames × 70 tokens × 9 patches = 20,160 patches
    assert peak == 1 * 2240 * 9 * per_patch
    assert "1 max-size dummy video(s) of 2,240 tokens (20,160 patches)" in notes[-1]
    images = s.replace(limit_mm_per_prompt={"image": 1, "video": 0})
    peak, tokens = vision_encoder_peak(spec, profile_for("0.33"), images, 2, notes)
    assert tokens == 280
    items = 4096 // 280                                 # V1 encoder budget max(Tb, 280) → 14 images
    assert peak == items * 280 * 9 * per_patch
    assert "14 max-size dummy image(s) of 280 tokens (2,520 patches)" in notes[-1]


def test_data_parallel_moe_gathers_every_ranks_tokens():
    """With DP the MoE layers gather all DP ranks' hidden states (naive all2all `naive_multicast`);
    fused_moe sizes its workspace for one 32,768-token chunk (VLLM_FUSED_MOE_CHUNK_SIZE)."""
    spec = load("Qwen/Qwen3-Coder-480B-A35B-Instruct")  # h 6144, 96 q / 8 KV heads × 128, top-8 of I 2560
    tb = 8192
    act1, _ = _act(spec, vllm_version="0.10.1", max_num_batched_tokens=tb, max_num_seqs=1,
                   data_parallel_size=1)
    act8, _ = _act(spec, vllm_version="0.10.1", max_num_batched_tokens=tb, max_num_seqs=1,
                   data_parallel_size=8, enable_expert_parallel=True)
    per_token = 8 * (3 * 2560 + 6144)                   # 110,592 expert elements per routed token
    attn = (96 + 2 * 8) * 128 + 3 * 6144                # 32,768 qkv + residual elements per token
    assert act1 == int(1.3 * (tb * per_token + tb * attn) * 2)
    # DP 8: 65,536 routed tokens, workspace for min(65,536, 32,768); gather + combine 2 × 65,536 × h.
    assert act8 == int(1.3 * (32768 * per_token + tb * attn) * 2 + 2 * 8 * tb * 6144 * 2)
    # recipes#12 (0.10.1, 8×H20-141G, DP8+EP, util 0.9): vLLM left 48.66 GiB of KV; the estimate
    # now leaves ≈ 47 GiB (it left ≈ 57 GiB when the gathered tokens were not counted).
    s = EngineSettings(vllm_version="0.10.1", data_parallel_size=8, enable_expert_parallel=True,
                       gpu_memory_utilization=0.9, max_model_len=262144, quantization="fp8")
    est = estimate(spec, gpu_total_bytes=int(139.8 * GiB), settings=s)
    assert abs(est.kv_cache_bytes / GiB - 48.66) / 48.66 < 0.05


def test_marlin_experts_hold_every_routed_token_before_0_12():
    """AWQ experts on an Ampere card run fused_marlin_moe, called directly before 0.12: its
    intermediate caches are sized for all M tokens, not one 32,768-token chunk as fused_experts' are.
    Qwen3-30B-A3B (h 2048, 32 q / 4 KV heads × 128, top-8 of I 768) at 64,000 batched tokens: the AWQ
    export's workspace is the unquantized one's plus (64,000 − 32,768) routed tokens' worth; a T4
    (no Marlin) and 0.12 keep the chunk."""
    from estimator.api import load_model

    awq = load_model("Qwen/Qwen3-30B-A3B-AWQ", offline=True).spec
    plain = load("Qwen/Qwen3-30B-A3B")
    per_token = 8 * (3 * 768 + 2048)                    # 34,816 expert elements per routed token
    tb = 64000
    kw = dict(vllm_version="0.11.1", max_num_batched_tokens=tb, max_num_seqs=1)
    a_awq, notes = _act(awq, compute_capability=8.6, **kw)
    a_plain, _ = _act(plain, compute_capability=8.6, **kw)
    assert a_awq - a_plain == pytest.approx(1.3 * (tb - 32768) * per_token * 2, abs=4)
    assert any("fused_marlin_moe" in n and "64,000 tokens at once" in n for n in notes)
    assert _act(awq, compute_capability=7.5, **kw)[0] == _act(plain, compute_capability=7.5, **kw)[0]
    kw12 = dict(kw, vllm_version="0.12.0")
    assert _act(awq, compute_capability=8.6, **kw12)[0] == _act(plain, compute_capability=8.6, **kw12)[0]


def test_diagnosis_applies_data_and_expert_parallelism_from_the_command():
    """`-dp=8 --enable-expert-parallel` change the per-GPU weights: without them the 480B model
    would be charged whole to one GPU (≈449 GiB) and the paste's 48.66 GiB of KV could not be read."""
    text = ("8×H20 141GB\n`vllm serve Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8 -dp=8 --enable-expert-parallel`\n"
            "ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available "
            "memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.")
    d = diagnose(text, offline=True)
    s = d.estimate["settings"]
    assert s["data_parallel_size"] == 8 and s["enable_expert_parallel"] is True
    # Per GPU: 160 routed experts / 8 = 20 each, attention and embeddings whole (TP 1): ≈ 67.6 GiB.
    assert 60 * GiB < d.estimate["memory"]["weights_bytes"] < 75 * GiB
    assert d.estimate["memory"]["kv_cache_bytes"] / GiB == pytest.approx(48.66, abs=0.01)


# ---- speculative decoding -----------------------------------------------------------------------


def test_mtp_drafter_adds_its_layer_to_the_kv_pool_and_its_weights():
    """DeepSeek-V3 + `--speculative-config '{"method":"deepseek_mtp","num_speculative_tokens":1}'`:
    the MTP layer (num_nextn_predict_layers = 1) gets an MLA cache of its own, 576 latent values/token."""
    spec = load("deepseek-ai/DeepSeek-V3")             # 61 MLA layers, kv_lora_rank 512 + rope 64
    base = EngineSettings(vllm_version="0.11.0", tensor_parallel_size=8, max_model_len=32768)
    mtp = parse_flags(["--speculative-config", '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'],
                      base.replace())
    assert (mtp.speculative_method, mtp.num_speculative_tokens) == ("deepseek_mtp", 1)
    total = 150 * GiB
    e0 = estimate(spec, gpu_total_bytes=total, settings=base)
    e1 = estimate(spec, gpu_total_bytes=total, settings=mtp)
    assert e0.layout.kv_bytes_per_token == 61 * 576 * 2           # MLA is not split by TP
    assert e1.layout.kv_bytes_per_token == 62 * 576 * 2
    assert any("1 MTP layer(s) loaded" in a for a in e1.assumptions)
    assert e1.weights_bytes > e0.weights_bytes


def test_nemotron_mtp_step_caches_kv_for_its_attention_layers_only():
    """Nemotron-3-Super's MTP step is "*E" (nemotron_h_mtp.py): its attention layer gets a KV cache in the
    pool, its MoE layer none. A step listing two attention layers would cache two."""
    import copy

    from estimator.catalog import lookup
    from estimator.spec import spec_from_config

    cid, config, companions = lookup("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    s = EngineSettings(vllm_version="0.20.0", tensor_parallel_size=4, max_model_len=32768,
                       kv_cache_dtype="bfloat16")
    mtp = s.replace(speculative_method="mtp")
    spec = spec_from_config(config, cid, companions)
    per_layer = 1 * 128 * 2 * 2               # 2 KV heads < TP 4: each rank holds one, K and V, bf16
    base = estimate(spec, gpu_total_bytes=80 * GiB, settings=s).layout.kv_bytes_per_token
    one = estimate(spec, gpu_total_bytes=80 * GiB, settings=mtp).layout.kv_bytes_per_token
    assert one - base == per_layer
    doubled = copy.deepcopy(config)
    doubled["mtp_hybrid_override_pattern"] = "**E"
    spec2 = spec_from_config(doubled, cid, companions)
    two = estimate(spec2, gpu_total_bytes=80 * GiB, settings=mtp).layout.kv_bytes_per_token
    assert two - base == 2 * per_layer


def test_mtp_weights_are_the_counted_mtp_parameters_without_embedding_copies():
    from estimator.params import count_params

    spec = load("Qwen/Qwen3.6-27B")                     # bf16, one MTP layer, embeddings shared
    mtp_params = count_params(spec).params_by_part["mtp"]
    assert mtp_params == 424_699_392
    w0 = weight_bytes(spec).bytes_total
    w1 = weight_bytes(spec, with_mtp=True)
    assert w1.bytes_total - w0 == mtp_params * 2
    assert any("MTP-layer parameters are loaded" in n for n in w1.assumptions)


def test_hybrid_models_keep_one_state_block_per_speculative_token():
    """MambaSpec.max_memory_usage_bytes: (2 + k) pages per Mamba group with prefix caching ("align"),
    (1 + k) without; the MTP attention layer joins the attention group (17 layers per group)."""
    spec = load("Qwen/Qwen3.6-27B")                     # 48 GDN + 16 full-attention layers
    pool = int(10.85 * GiB)

    def est(k, prefix):
        s = EngineSettings(vllm_version="0.27", tensor_parallel_size=2, kv_cache_dtype="fp8_e5m2",
                           dtype="float16", max_model_len=262144, max_num_seqs=2, max_num_batched_tokens=8192,
                           kv_cache_memory_bytes=pool, enable_prefix_caching=prefix,
                           speculative_method="mtp" if k else None, num_speculative_tokens=k or None)
        return estimate(spec, gpu_total_bytes=int(23.57 * GiB), settings=s)

    e0, e3, e3n = est(0, True), est(3, True), est(3, False)
    # GDN state per TP2 rank: conv (4 − 1 + k) rows × 5,120 channels × 2 B; recurrent 24 × 128 × 128 × 4 B.
    # The attention block grows until its page (2 KV heads × 256 × 2 × 1 B = 1,024 B/token) holds it.
    assert e0.layout.block_size == 16 * cdiv(3 * 5120 * 2 + 24 * 128 * 128 * 4, 16 * 1024) == 1568
    assert e3.layout.block_size == 16 * cdiv(6 * 5120 * 2 + 24 * 128 * 128 * 4, 16 * 1024) == 1600
    assert [g.layers for g in e0.layout.groups] == [16, 16, 16, 16]
    assert [g.layers for g in e3.layout.groups] == [17, 17, 17, 17]   # 3 padding layers on the GDN side
    assert e0.max_concurrency == pytest.approx(e0.gpu_blocks / (cdiv(262144, 1568) + 3 * 2))
    assert e3.max_concurrency == pytest.approx(e3.gpu_blocks / (cdiv(262144, 1600) + 3 * (2 + 3)))
    assert e3n.max_concurrency == pytest.approx(e3n.gpu_blocks / (cdiv(262144, 1600) + 3 * (1 + 3)))
    assert e3.gpu_blocks == pool // (17 * e3.layout.groups[0].page_bytes)


def test_nemotron_h_mamba2_conv_states_widen_by_the_speculative_tokens_from_0_17():
    """mamba_utils.py mamba2_state_shape takes num_spec from 0.17.0 and nemotron_h.py passes the speculative
    tokens, as GDN's shape does: Nemotron-3-Super's conv state has 4 − 1 + k rows. Per Mamba layer (TP 1):
    conv channels 128 heads × 64 + 2 × 8 groups × 128 = 10,240 in bf16, the SSM state 128 × 64 × 128 in
    float32 (its config's mamba_ssm_cache_dtype) = 4,194,304 B; an fp8 attention page is 2 KV heads × 128
    × 2 × 1 B = 512 B a token. A public 0.19.2 dev log with 3 MTP tokens printed "Setting attention block
    size to 8432 tokens"; 0.16 kept 3 rows."""
    spec = load("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4")

    def block(version, k):
        s = EngineSettings(vllm_version=version, kv_cache_dtype="fp8", max_model_len=131072, max_num_seqs=20,
                           speculative_method="mtp" if k else None, num_speculative_tokens=k or None,
                           enable_prefix_caching=False)
        return estimate(spec, gpu_total_bytes=int(119.63 * GiB), settings=s).layout.block_size

    ssm = 128 * 64 * 128 * 4
    assert block("0.19.1", 3) == 16 * cdiv(6 * 10_240 * 2 + ssm, 16 * 512) == 8432
    assert block("0.19.1", 0) == block("0.16.0", 3) == 16 * cdiv(3 * 10_240 * 2 + ssm, 16 * 512) == 8320


def test_ngram_needs_no_memory_and_a_foreign_drafter_is_said_to_be_missing():
    """n-gram drafting loads nothing and keeps no KV of its own; like every speculative method, its profile
    run adds the rejection sampler's dummy run (activation.V1_REJECTION_BONUS_FROM): randn logits of 2 rows per
    request and a copy of the bonus rows in bf16, 3 × 2 B per row × vocab, on top of the sampler — here
    1,024 rows (an 80 GiB card's default max_num_seqs) × 128,256 vocab × 6 B = 788,004,864 B."""
    spec = load("meta-llama/Llama-3.1-8B-Instruct")
    base = EngineSettings(vllm_version="0.11.0", max_model_len=8192)
    e0 = estimate(spec, gpu_total_bytes=80 * GiB, settings=base)
    ng = estimate(spec, gpu_total_bytes=80 * GiB, settings=parse_flags(
        ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 5}'], base.replace()))
    assert ng.weights_bytes == e0.weights_bytes and ng.layout.kv_bytes_per_token == e0.layout.kv_bytes_per_token
    assert e0.kv_cache_bytes - ng.kv_cache_bytes == 1024 * 128_256 * 6 == 788_004_864
    # the older dummy run (R draft rows, bonus token ids given) stays under the sampler's own peak
    old = EngineSettings(vllm_version="0.10.2", max_model_len=8192)
    assert estimate(spec, gpu_total_bytes=80 * GiB, settings=parse_flags(
        ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 5}'], old.replace())).kv_cache_bytes \
        == estimate(spec, gpu_total_bytes=80 * GiB, settings=old).kv_cache_bytes
    ea = estimate(spec, gpu_total_bytes=80 * GiB, settings=parse_flags(
        ["--speculative-config", '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}'],
        base.replace()))
    # an EAGLE head: one layer of the target's KV shape is counted, its weights are said to be missing
    assert ea.layout.kv_bytes_per_token == e0.layout.kv_bytes_per_token * 33 // 32
    assert ea.weights_bytes == e0.weights_bytes
    assert any("eagle3 speculative decoding" in a and "weights" in a and "not counted" in a for a in ea.assumptions)
    # a separate drafter (DFlash, or any draft model) is named as missing, not asked for: its id is in the
    # settings already, and kvdoctor reads no second config
    df = estimate(spec, gpu_total_bytes=80 * GiB, settings=parse_flags(
        ["--speculative-config", '{"model": "z-lab/Llama-3.1-8B-DFlash", "num_speculative_tokens": 8}'],
        base.replace()))
    assert df.settings.speculative_method == "dflash" and df.weights_bytes == e0.weights_bytes
    note = [a for a in df.assumptions if "speculative method 'dflash'" in a]
    assert note and "(z-lab/Llama-3.1-8B-DFlash)" in note[0] and "not counted" in note[0] and "paste" not in note[0]


def test_a_gemma4_target_drafts_with_its_assistant_whose_weights_count_and_whose_kv_is_shared():
    """Gemma 4 has no MTP layers; vLLM's Gemma 4 MTP loads google/gemma-4-26B-A4B-it-assistant (4 layers,
    hidden 1024, MLP 8192, 16 heads of 256 — 512 on the full layer — tied 262,144 × 1024 embeddings,
    projections from / to the target's 2,816). Parameters: 268,435,456 embeddings + 4 × 3 × 1024 × 8192
    = 100,663,296 MLP + 2 × 1024 × 16 × (3 × 256 + 512) = 41,943,040 q/o + 3 × 2816 × 1024 = 8,650,752
    projections = 419,692,544 (the model card: ~0.4 B). Its attention reads the target's KV cache, so the
    pool per token is unchanged; in bf16 it takes 839,385,088 B = 0.78 GiB beside the weights. The
    same method on a model with MTP layers, or no speculative decoding, keeps the old accounting."""
    from estimator.drafters import GEMMA4_ASSISTANTS

    a = GEMMA4_ASSISTANTS[2816]
    assert a.params == 268_435_456 + 100_663_296 + 41_943_040 + 8_650_752 == 419_692_544
    assert round(GEMMA4_ASSISTANTS[1536].params / 1e6) == 78 and round(GEMMA4_ASSISTANTS[5376].params / 1e9, 1) == 0.5
    spec = load("google/gemma-4-26B-A4B")
    base = EngineSettings(vllm_version="0.22.1", max_model_len=32768)
    mtp = parse_flags(["--speculative-config", '{"model": "google/gemma-4-26B-A4B-it-assistant", '
                                               '"num_speculative_tokens": 4, "method": "mtp"}'], base.replace())
    e0 = estimate(spec, gpu_total_bytes=80 * GiB, settings=base)
    e1 = estimate(spec, gpu_total_bytes=80 * GiB, settings=mtp)
    assert e1.weights_bytes - e0.weights_bytes == 2 * 419_692_544
    assert e1.layout.kv_bytes_per_token == e0.layout.kv_bytes_per_token
    assert any("gemma-4-26B-A4B-it-assistant" in x and "no KV of its own" in x for x in e1.assumptions)
    assert not any("no draft memory counted" in x for x in e1.assumptions)
    # tensor parallelism splits all but the projections (replicated): 2 × (411,041,792 / 2 + 8,650,752)
    tp2 = estimate(spec, gpu_total_bytes=80 * GiB, settings=mtp.replace(tensor_parallel_size=2))
    tp2_base = estimate(spec, gpu_total_bytes=80 * GiB, settings=base.replace(tensor_parallel_size=2))
    assert tp2.weights_bytes - tp2_base.weights_bytes == 2 * (411_041_792 // 2 + 8_650_752)
    # pipeline parallelism: the assistant drafts on the last stage and is loaded there only
    for stage, extra in ((0, 0), (1, 2 * 419_692_544)):
        pp = base.replace(pipeline_parallel_size=2, pp_stage=stage)
        with_mtp = estimate(spec, gpu_total_bytes=80 * GiB, settings=mtp.replace(pipeline_parallel_size=2, pp_stage=stage))
        assert with_mtp.weights_bytes - estimate(spec, gpu_total_bytes=80 * GiB, settings=pp).weights_bytes == extra
    # a Qwen3.6 target's own MTP layer is still the drafter
    q = load("Qwen/Qwen3.6-27B")
    qm = estimate(q, gpu_total_bytes=80 * GiB, settings=base.replace(speculative_method="mtp"))
    assert any("MTP layer(s) loaded" in x for x in qm.assumptions)


def test_limit_mm_per_prompt_shrinks_the_v0_dummy_prompt():
    """--limit-mm-per-prompt '{"image": 1, "video": 0}': the V0 dummy prompt holds one 16,384-token
    image only; '{"image": 0, "video": 0}': no media, the profile run is the text model's."""
    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    per_token = 3 * 18944 + 3 * 3584                         # 67,584 elements, as above
    img, _ = _act(spec, vllm_version="0.8.4", engine="v0", max_num_batched_tokens=8192, max_num_seqs=256,
                  limit_mm_per_prompt={"image": 1, "video": 0})
    # S' = 1, max(8192, 16,384) tokens through the LLM (2.06 GiB) beside the image's float32 pixels
    # twice (65,536 × 1,176 values, 0.29 GiB, and the forward's concatenated copy: 2.64 GiB); the peak is
    # the vision encoder's eager pass over its 65,536 patches — 0.8.4's attention half rotating q in
    # float32 through apply_rotary_emb_torch, 16·1280 values per patch
    # (test_qwen_vit_rotates_q_and_k_in_float32_before_0_12; the gated MLP's 14,100 is less), 2.5 GiB —
    # beside both float32 copies (made before the tower runs) and the bf16 copy it encodes (0.14 GiB)
    pixels = 65536 * 1176 * 4
    encoder = 65536 * 16 * 1280 * 2 + 2 * pixels + pixels // 2
    assert img == max(16384 * per_token * 2 + 2 * pixels, encoder) == encoder
    text, notes = _act(spec, vllm_version="0.8.4", engine="v0", max_num_batched_tokens=8192, max_num_seqs=256,
                       limit_mm_per_prompt={"image": 0, "video": 0})
    forward = 8192 * per_token * 2
    sampler = 256 * 152064 * 40                              # V0 sampler on 256 dummy prompts
    assert text == max(forward, sampler)
    assert any("no images or videos" in n for n in notes)


def test_multimodal_fix_is_offered_first_and_rechecked():
    """A gpustack#1800-like state (V0, RTX 3090, 8,192 tokens, utilization 0.85): 0.85 × 23.69 =
    20.14 GiB − 15.48 weights − 0.15 non-torch − 5.27 activation (an image and a video, 32,768
    tokens, and two copies of their float32 pixels) leaves nothing for the 0.44 GiB one 8,192-token
    request needs; without the dummy video the peak is the tower's eager pass over one image, its
    float32 rotation included, beside that image's pixels twice and their bf16 copy (3.22 GiB) and it
    fits."""
    from estimator.advice import suggest

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    gpu = lookup_gpu("RTX 3090")
    s = EngineSettings(vllm_version="0.8.4", engine="v0", max_model_len=8192, gpu_memory_utilization=0.85)
    est = estimate(spec, gpu_total_bytes=gpu.total_bytes, settings=s, gpu_name=gpu.name)
    assert not est.fits
    fixes = suggest(est)
    # 0.8.4 parses KEY=VALUE pairs (vllm/engine/arg_utils.py nullable_kvs; JSON from 0.10)
    assert fixes[0].flags == "--limit-mm-per-prompt image=1,video=0"
    again = estimate(spec, gpu_total_bytes=gpu.total_bytes, gpu_name=gpu.name,
                     settings=parse_flags(["--limit-mm-per-prompt", "image=1,video=0"], s.replace()))
    assert again.fits and again.kv_cache_tokens == fixes[0].estimate.kv_cache_tokens


# ---- pipeline stages of different sizes -------------------------------------------------------


def test_layer_partition_sizes_each_stage_and_keeps_the_fewest_blocks():
    """VLLM_PP_LAYER_PARTITION=16,32 on two equal cards: stage 1 holds twice the layers, so its
    blocks (each covering 32 layers) are the fewest; vLLM gives every stage that count."""
    spec = load("Qwen/Qwen3-Coder-30B-A3B-Instruct")    # 48 layers × 4 KV heads × 128, bf16
    s = parse_flags(["VLLM_PP_LAYER_PARTITION=16,32", "-pp", "2"],
                    EngineSettings(vllm_version="0.17.0", max_model_len=32768))
    assert s.pp_layer_partition == [16, 32]
    total = 40 * GiB
    e = estimate(spec, gpu_total_bytes=total, settings=s, weights_bytes=0, activation_bytes=0,
                 non_torch_bytes=0, cuda_graph_bytes=0)
    budget = int(total * 0.9)
    page = 16 * 4 * 128 * 2 * 2                          # one 16-token block of one layer
    assert e.layout.kv_bytes_per_token == 32 * 4 * 128 * 2 * 2
    assert e.gpu_blocks == min(budget // (16 * page), budget // (32 * page)) == budget // (32 * page)
    assert any("stage 1 (" in a and "layers 16–47" in a for a in e.assumptions)


def test_mixed_cards_put_the_tightest_stage_on_the_small_card():
    """vllm#34076's layout: 16 layers on a 15.47 GiB card, 32 on a 31.37 GiB one. Each stage is
    profiled on its own card; the sampler runs only on the last stage."""
    spec = load("Qwen/Qwen3-Coder-30B-A3B-Instruct")
    s = EngineSettings(vllm_version="0.15.2", pipeline_parallel_size=2, pp_layer_partition=[16, 32],
                       max_model_len=262144, quantization="fp8", max_num_seqs=256, max_num_batched_tokens=2048)
    small, big = int(15.47 * GiB), int(31.37 * GiB)
    e = estimate(spec, gpu_total_bytes=small, settings=s, stage_gpus=[("small", small), ("big", big)])
    assert e.gpu_name == "small" and e.gpu_total_bytes == small
    assert e.layout.kv_bytes_per_token == 16 * 4 * 128 * 2 * 2
    # Stage 0 runs no sampler: its activation is the forward alone, below the last stage's.
    last = estimate(spec, gpu_total_bytes=big, settings=s.replace(pp_stage=1))
    sampler = 256 * 151936 * 38                          # V1 0.8–0.19: 256 rows × vocab × 38 B
    assert e.activation_bytes < sampler <= last.activation_bytes
    assert e.gpu_blocks < last.gpu_blocks
    # vLLM printed 3.18 GiB for this stage; the estimate is within 10% (its activation is a fit).
    assert abs(e.kv_cache_bytes / GiB - 3.18) / 3.18 < 0.10
    # Re-running a change keeps the mixed cards.
    assert rerun_keeps_stages(e)


def rerun_keeps_stages(e) -> bool:
    from estimator.memory import rerun

    r = rerun(e, gpu_memory_utilization=0.95)
    return r.gpu_name == "small" and r.kv_cache_bytes > e.kv_cache_bytes


def test_a_partition_that_does_not_fit_the_model_is_said_to_be_refused():
    spec = load("Qwen/Qwen3-8B")                        # 36 layers
    s = parse_flags(["VLLM_PP_LAYER_PARTITION=10,30", "-pp", "2"], EngineSettings(vllm_version="0.17.0"))
    e = estimate(spec, gpu_total_bytes=24 * GiB, settings=s)
    assert any("does not give 2 stages summing to the model's 36 layers" in a for a in e.assumptions)
    assert e.layout.kv_bytes_per_token == 18 * 8 * 128 * 2 * 2     # vLLM's own split: 18 + 18


def test_gemma4_k_eq_v_layers_keep_k_and_v_in_the_cache():
    """vllm#43308 (Gemma-4-31B AWQ, bf16 KV, A100 80GB, same ≈50 GB pool): 0.20 printed ~55k tokens,
    0.21 ~525k (≈9.5×). vLLM's Gemma4Attention is a standard Attention whose V slot holds K
    (gemma4.py), so the global layers cost 4 heads × 512 × 2 (K,V) × 2 B = 8,192 B per token."""
    spec = load("nvidia/Gemma-4-31B-IT-NVFP4")           # 50 sliding (16 × 256) + 10 global (4 × 512) layers
    pool = 50 * GiB

    def est(version):
        s = EngineSettings(vllm_version=version, kv_cache_dtype="bfloat16", max_model_len=262144,
                           max_num_batched_tokens=2048, kv_cache_memory_bytes=pool)
        return estimate(spec, gpu_total_bytes=int(79.15 * GiB), settings=s, weights_bytes=0, activation_bytes=0,
                        non_torch_bytes=0, cuda_graph_bytes=0)

    e20, e21 = est("0.20.0"), est("0.21.0")
    # 6 groups of 10 layers; one page = 16 tokens × 16 heads × 256 × 2 × 2 B = 262,144 B per sliding
    # layer; the global layers (8,192 B per token) get 32-token blocks of the same page size.
    assert e21.layout.kv_bytes_per_token == 50 * 16 * 256 * 2 * 2 + 10 * 4 * 512 * 2 * 2 == 901_120
    blocks = pool // (10 * 262_144)
    assert e20.gpu_blocks == e21.gpu_blocks == blocks == 20_480
    assert e20.kv_cache_tokens == blocks // 6 * 16 == 54_608                    # "~55k"
    # 0.21: int(concurrency × max_model_len); one request = 262,144 / 32 global blocks + 5 sliding
    # groups × (cdiv(1,023 + 2,048, 16) + 1).
    per_request = 262_144 // 32 + 5 * (cdiv(1023 + 2048, 16) + 1)
    assert per_request == 9_157
    assert e21.kv_cache_tokens == int(blocks / per_request * 262_144) == 586_295
    # ≈10.7× against the reported ≈9.5×; one K=V state (64-token global blocks) would give
    # 20,480 / (4,096 + 965) × 262,144 ≈ 1.06M tokens, ≈19×.
    assert 8 < e21.kv_cache_tokens / e20.kv_cache_tokens < 12


def test_windowed_layers_reserve_every_batch_in_flight_from_0_26():
    """vllm/v1/kv_cache_interface.py 0.26.0: a sliding-window request holds min(W − 1 + F, L) tokens,
    F = VllmConfig.max_in_flight_tokens = max_concurrent_batches × max_num_batched_tokens; async
    scheduling (default on; off for n-gram / draft-model speculation or --no-async-scheduling) makes it
    2 batches at PP 1. 0.25.0 still holds one batch."""
    spec = load("nvidia/Gemma-4-31B-IT-NVFP4")           # 50 sliding (W 1,024) + 10 global layers
    pool = 50 * GiB

    def est(version, **kw):
        s = EngineSettings(vllm_version=version, kv_cache_dtype="bfloat16", max_model_len=262144,
                           max_num_batched_tokens=2048, kv_cache_memory_bytes=pool, **kw)
        return estimate(spec, gpu_total_bytes=int(79.15 * GiB), settings=s, weights_bytes=0, activation_bytes=0,
                        non_torch_bytes=0, cuda_graph_bytes=0)

    blocks = pool // (10 * 262_144)
    one_batch = 262_144 // 32 + 5 * (cdiv(1023 + 2048, 16) + 1)            # 9,157 blocks per request
    two_batches = 262_144 // 32 + 5 * (cdiv(1023 + 2 * 2048, 16) + 1)      # 9,797
    assert (one_batch, two_batches) == (9_157, 9_797)
    assert est("0.25.0").kv_cache_tokens == int(blocks / one_batch * 262_144) == 586_295
    e26 = est("0.26.0")
    assert e26.gpu_blocks == blocks
    assert e26.kv_cache_tokens == int(blocks / two_batches * 262_144) == 547_995
    assert est("0.26.0", async_scheduling=False).kv_cache_tokens == 586_295
    assert est("0.26.0", speculative_method="ngram", num_speculative_tokens=3).kv_cache_tokens == 586_295
    # max_concurrent_batches: EAGLE keeps async scheduling on; PP 3 holds 3 batches, 4 under the V2 runner
    prof = est("0.26.0").profile
    base = EngineSettings(max_num_batched_tokens=2048)
    assert window_tokens(base.replace(speculative_method="eagle"), prof) == 2 * 2048
    assert window_tokens(base.replace(pipeline_parallel_size=3), prof) == 3 * 2048
    assert window_tokens(base.replace(pipeline_parallel_size=3, model_runner_v2=True), prof) == 4 * 2048
    assert window_tokens(base.replace(pipeline_parallel_size=3, async_scheduling=False,
                                      model_runner_v2=True), prof) == 3 * 2048
    flags = parse_flags(["--no-async-scheduling"], EngineSettings())
    assert flags.async_scheduling is False


def test_kv_shared_layers_hold_no_cache_but_keep_their_weights():
    """gemma-3n / gemma-4 E-models: the last num_kv_shared_layers layers read an earlier layer's
    cache (vLLM skips layers with kv_sharing_target_layer_name in get_kv_cache_spec). The 31B
    config with 20 shared layers keeps layers 0–39: 34 sliding × 16 × 256 × 2 × 2 B + 6 global ×
    4 × 512 × 2 × 2 B = 606,208 B per token, down from 901,120; the parameter count is unchanged."""
    import json

    from estimator.catalog import lookup
    from estimator.params import count_params
    from estimator.spec import spec_from_config

    cid, config, companions = lookup("nvidia/Gemma-4-31B-IT-NVFP4")
    shared = json.loads(json.dumps(config))
    shared["text_config"]["num_kv_shared_layers"] = 20
    base, e_model = spec_from_config(config, cid, companions), spec_from_config(shared, cid, companions)
    types = config["text_config"]["layer_types"][:40]
    assert (types.count("sliding_attention"), types.count("full_attention")) == (34, 6)
    per_token = sum(lk.bytes_per_token(1, 2) for lk in e_model.layers)
    assert per_token == 34 * 16 * 256 * 2 * 2 + 6 * 4 * 512 * 2 * 2 == 606_208
    assert sum(lk.bytes_per_token(1, 2) for lk in base.layers) == 901_120
    assert count_params(e_model).params_total == count_params(base).params_total
    s = EngineSettings(vllm_version="0.21.0", kv_cache_dtype="bfloat16", max_model_len=32768, kv_cache_memory_bytes=8 * GiB)
    e = estimate(e_model, gpu_total_bytes=80 * GiB, settings=s, weights_bytes=0, activation_bytes=0, non_torch_bytes=0,
                 cuda_graph_bytes=0)
    # groups of min(34, 6) = 6 layers: 1 global group, cdiv(34, 6) = 6 sliding groups (2 padding slots)
    assert e.layout.kv_bytes_per_token == 606_208
    assert sorted((g.kind, g.layers) for g in e.layout.groups) == [("full", 6)] + [("sliding", 6)] * 6


@pytest.mark.parametrize("version,cc,named,backend", [
    ("0.19.0", "8.0", None, "Marlin"),            # Ampere: triton_kernels needs SM90–SM100
    ("0.19.0", "12.0", None, "Marlin"),           # consumer Blackwell (SM120) likewise
    ("0.10.1", "9.0", None, "Marlin"),            # Hopper before triton_kernels shipped (vllm#23278)
    ("0.11.2", "9.0", None, "Marlin"),            # the 0.11.x wheels carry no triton_kernels …
    ("0.12.0", "9.0", None, "Triton"),            # … 0.12.0's vendors it (vllm/third_party/triton_kernels)
    ("0.14.1", "9.0", None, "Triton"),            # vllm#33155: "[mxfp4.py:165] Using Triton backend"
    ("0.19.0", "10.0", None, "FlashInfer SM100"),
    ("0.10.0", "8.6", None, "unpadded"),          # the gpt-oss launch build: no Marlin MXFP4 MoE yet
    ("0.19.0", "9.0", "Marlin", "Marlin"),        # a log line (or VLLM_MXFP4_USE_MARLIN=1) wins
])
def test_mxfp4_backend_by_card_and_version(version, cc, named, backend):
    from estimator.memory import mxfp4_backend
    from estimator.vllm import profile_for

    assert mxfp4_backend(profile_for(version, None), cc, named) == backend


def test_gpt_oss_weights_follow_the_mxfp4_backend_layout():
    """gpt-oss-20b: 24 layers × 32 experts; Marlin pads I 2880 → 2944 and h 2880 → 3072.

    Real logs: 13.72 GiB on an A100 with 0.19.0 (Marlin), 12.88 GiB on a 3090 with the launch
    build (unpadded). The difference between the two layouts is the padding alone."""
    spec = load("openai/gpt-oss-20b")

    def w(version, gpu):
        g = lookup_gpu(gpu)
        return estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability,
                        settings=EngineSettings(vllm_version=version)).weights_bytes

    def experts(i, h):      # e2m1 + e8m0 scales (17/32 B per weight) + bf16 biases
        return 24 * 32 * (3 * i * h * 17 // 32 + (2 * i + h) * 2)

    marlin, unpadded = w("0.19.0", "A100 80GB"), w("0.10.0", "RTX 3090")
    assert marlin - unpadded == experts(2944, 3072) - experts(2880, 2880)
    assert abs(marlin / GiB - 13.72) / 13.72 < 0.01
    assert abs(unpadded / GiB - 12.88) / 12.88 < 0.01


def test_paste_names_the_mxfp4_backend():
    from estimator.paste import read_paste

    triton = read_paste("(EngineCore_DP0 pid=1) INFO 01-27 00:31:44 [mxfp4.py:165] Using Triton backend\n")
    assert triton.extra["mxfp4_backend"] == "Triton"
    marlin = read_paste("WARNING 08-20 18:04:08 [marlin_utils_fp4.py:196] Your GPU does not have native support "
                        "for FP4 computation but FP4 quantization is being used. Weight-only FP4 compression will "
                        "be used leveraging the Marlin kernel.\n")
    assert marlin.extra["mxfp4_backend"] == "Marlin"
    assert parse_flags(["VLLM_MXFP4_USE_MARLIN=1"]).mxfp4_backend == "Marlin"


@pytest.mark.parametrize("max_len,tokens", [
    (128_000, 7 * 16_384),       # 14 frames (the cap) = 7 temporal patches of 16,384 tokens: the 0.23 log's budget
    (8_192, 16_384),             # one frame, padded to a temporal patch, even beyond max_model_len
    (40_000, 2 * 16_384),        # 4 frames: 3 × 16,384 = 49,152 would exceed 40,000
    (1_000_000, 7 * 16_384),     # never more than 14 frames
])
def test_qwen2_vl_longest_dummy_video(max_len, tokens):
    from estimator.multimodal_profile import qwen2_vl_video_tokens

    assert qwen2_vl_video_tokens(16_384, max_len) == tokens


def test_v1_profiles_qwen25_vl_with_its_longest_video():
    """vLLM 0.23 log: "Encoder cache will be initialized with a budget of 114688 tokens, and profiled
    with 1 video items of the maximum feature size" — Qwen2.5-VL-7B at max_model_len 128,000. The
    ViT then sees 114,688 × 2 × 2 = 458,752 patches; with videos off it is one 16,384-token image."""
    from estimator.activation import activation_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")      # ViT: hidden 1280, intermediate 3420
    s = EngineSettings(vllm_version="0.23.0", max_num_seqs=256, max_num_batched_tokens=2048)
    notes: list[str] = []
    peak = activation_peak(spec, profile_for("0.23.0"), s, 2, notes, max_len=128_000)
    # the tower's peak, eager (no V1 forward factor), and beside it the video's bf16 pixels (14² × 3 × 2 =
    # 1,176 values per patch, v1_dummy_pixel_bytes): 12.05 + 1.00 GiB, where a 0.23 log of this model
    # solved to 15.34 GiB for this one video (the Qwen3.5 / 3.6 image logs want the eager tower; see
    # multimodal_profile.encoder_profile)
    assert peak == 458_752 * (3 * 3420 + 3 * 1280) * 2 + 458_752 * 1176 * 2
    assert any("1 max-size dummy video(s) of 114,688 tokens" in n for n in notes)
    s_img = EngineSettings(vllm_version="0.23.0", max_num_seqs=256, max_num_batched_tokens=2048,
                           limit_mm_per_prompt={"image": 1, "video": 0})
    assert activation_peak(spec, profile_for("0.23.0"), s_img, 2, [], max_len=128_000) == \
        65_536 * (3 * 3420 + 3 * 1280) * 2 + 65_536 * 1176 * 2


def test_a_log_naming_the_v1_sampler_sets_its_memory():
    """V1 logs "Using FlashInfer for top-p & top-k sampling." (no vocabulary sort: ≈10 B per row ×
    vocab element) or falls back to the PyTorch-native path (sort: ≈38 B). 256 rows × 151,936 vocab."""
    from estimator.activation import activation_peak
    from estimator.paste import read_paste
    from estimator.vllm import profile_for

    fi = read_paste("INFO 05-01 10:00:00 [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k sampling.\n")
    native = read_paste("WARNING 06-18 08:55:01 [topk_topp_sampler.py:52] FlashInfer is available, but it is not "
                        "enabled. Falling back to the PyTorch-native implementation of top-p & top-k sampling. For "
                        "the best performance, please set VLLM_USE_FLASHINFER_SAMPLER=1.\n")
    assert fi.extra["flashinfer_sampler"] is True and native.extra["flashinfer_sampler"] is False
    spec = load("Qwen/Qwen3-8B")        # vocab 151,936; a 2,048-token forward is far below either sampler

    def act(flag):
        s = EngineSettings(vllm_version="0.9.2", max_num_seqs=256, max_num_batched_tokens=2048,
                           flashinfer_sampler=flag)
        return activation_peak(spec, profile_for("0.9.2"), s, 2, [])

    # forward: 1.3 × 2,048 × (3 × 12,288 + 48 × 128 + 3 × 4,096) × 2 B = 294 MB, under either sampler
    assert act(True) == 256 * 151_936 * 10
    assert act(False) == 256 * 151_936 * 38 == act(None)


def test_the_align_warning_says_a_hybrid_model_runs_with_prefix_caching():
    """0.29 turns prefix caching on for hybrid models by default and says so: "Mamba cache mode is set to
    'align' … when prefix caching is enabled". Align mode keeps 2 state blocks per request per Mamba group.
    Qwen3.6-27B (16 full-attention + 48 GDN layers, 4 KV cache groups, 784-token blocks of 49 MiB):
    31.24 GiB → 652 blocks; one 8,192-token request takes cdiv(8,192, 784) = 11 attention blocks + 3 × 2
    state blocks = 17 → 652 / 17 = 38.35× → int(38.35… × 8,192) = 314,187 tokens (a 0.29.0 log's figure;
    without the align reading: 3 × 1 state blocks, 14 per request, 381,513)."""
    text = ("$ vllm serve Qwen/Qwen3.6-27B --dtype bfloat16 --tensor-parallel-size 1 --max-model-len 8192 "
            "--max-num-seqs 256 --gpu-memory-utilization 0.90\n"
            "(APIServer pid=1) WARNING 08-20 10:00:00 [config.py:355] Mamba cache mode is set to 'align' for "
            "Qwen3_5ForConditionalGeneration by default when prefix caching is enabled\n"
            "(EngineCore pid=1) INFO 08-20 10:01:00 [gpu_worker.py:480] Available KV cache memory: 31.24 GiB\n"
            "(EngineCore pid=1) INFO 08-20 10:01:00 [kv_cache_utils.py:1733] GPU KV cache size: 314,187 tokens\n")
    d = diagnose(text, offline=True, explain=True, vllm_version="0.29.0", gpu="RTX PRO 6000")
    assert d.estimate["settings"]["enable_prefix_caching"] is True
    assert d.estimate["gpu_blocks"] == 652
    assert d.estimate["kv_cache_tokens"] == int(652 / 17 * 8192) == 314_187


def test_an_eagle_head_adds_one_layer_of_the_targets_kv():
    """A 0.9 log with EAGLE on Llama-3.1-8B: 51.63 GiB held 410,128 tokens — 33 layers' worth per token
    (32 × 8 KV heads × 128 × 2 × 2 B = 131,072 B, plus one more layer for the head: 135,168 B), at 16-token
    blocks: floor(51.63 GiB / (16 × 135,168)) × 16 = 410,128; without the head 422,944."""
    spec = load("meta-llama/Llama-3.1-8B-Instruct")
    pool = int(51.63 * GiB)

    def tokens(method):
        s = EngineSettings(vllm_version="0.9.2", max_model_len=131072, speculative_method=method,
                           num_speculative_tokens=3 if method else None)
        return estimate(spec, gpu_total_bytes=200 * GiB, settings=s, weights_bytes=180 * GiB - pool,
                        activation_bytes=0, non_torch_bytes=0, cuda_graph_bytes=0).kv_cache_tokens

    assert tokens("eagle") == pool // (16 * 135_168) * 16 == 410_128
    assert tokens(None) == pool // (16 * 131_072) * 16 == 422_944


def test_mtp_graph_sizes_use_the_default_token_count():
    """`--speculative-config '{"method": "mtp"}'` without a token count runs as many speculative
    tokens as the config has MTP layers (1 for Qwen3.6-27B): graph sizes are multiples of
    q = 1 + 1, exactly as when the count is given, not those of plain decoding."""
    from estimator.cuda_graphs import cuda_graph_memory
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen3.6-27B")
    p = profile_for("0.22.0")
    implicit = cuda_graph_memory(spec, p, EngineSettings(vllm_version="0.22.0", speculative_method="mtp"))
    given = cuda_graph_memory(spec, p, EngineSettings(vllm_version="0.22.0", speculative_method="mtp",
                                                      num_speculative_tokens=1))
    plain = cuda_graph_memory(spec, p, EngineSettings(vllm_version="0.22.0"))
    assert implicit == given != plain


# ---- Mamba prefix caching modes ---------------------------------------------------------------


def _nano(version, **kw):
    """Nemotron-3-Nano (23 Mamba-2 + 6 attention layers, chunk_size 128) on a fixed 10 GiB pool."""
    s = EngineSettings(vllm_version=version, max_model_len=262144, max_num_seqs=8,
                       kv_cache_memory_bytes=10 * GiB, **kw)
    return estimate(load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), gpu_total_bytes=80 * GiB, settings=s,
                    weights_bytes=0, activation_bytes=0, non_torch_bytes=0, cuda_graph_bytes=0)


def test_hybrid_prefix_caching_default_and_mamba_cache_modes():
    """Prefix caching is opt-in for hybrid models until 0.27 and on by default from 0.28
    (engine/arg_utils.py); with it Nemotron-H (SupportsMambaPrefixCaching) takes the "all" mode
    0.15–0.32, which aligns the attention block to the Mamba chunk and keeps a state per block
    (MambaSpec.max_memory_usage_bytes: cdiv(L, bs) pages); 0.33 has only "align" (2 states).
    Mamba-2 state per layer: conv (4 − 1) × (4,096 + 2 × 8 × 128) × 2 B + 64 heads × 64 × 128 × 4 B
    = 2,134,016 B = 2,084 tokens of one attention layer (2 KV heads × 128 × 2 × 2 B = 1,024 B)."""
    state = 3 * (4096 + 2 * 8 * 128) * 2 + 64 * 64 * 128 * 4
    assert state == 2_134_016 and cdiv(state, 1024) == 2_084
    none_bs, all_bs = 16 * cdiv(state, 16 * 1024), 128 * cdiv(2_084, 128)
    assert (none_bs, all_bs) == (2_096, 2_176)
    L = 262144
    e26, e28, e33 = _nano("0.26.0"), _nano("0.28.0"), _nano("0.33.0")
    # 29 layers → groups of 6: 1 attention + 4 Mamba groups
    assert e26.layout.num_groups == 5
    assert e26.layout.block_size == none_bs and e26.max_concurrency == pytest.approx(
        e26.gpu_blocks / (cdiv(L, none_bs) + 4 * 1))                           # 126 + 4
    assert e28.layout.block_size == all_bs and e28.max_concurrency == pytest.approx(
        e28.gpu_blocks / (5 * cdiv(L, all_bs)))                                # 5 × 121
    assert e28.gpu_blocks == 10 * GiB // (6 * all_bs * 1024)
    assert e33.layout.block_size == none_bs and e33.max_concurrency == pytest.approx(
        e33.gpu_blocks / (cdiv(L, none_bs) + 4 * 2))                           # 126 + 8
    # the flags decide: prefix caching off, or the align mode asked for
    off = _nano("0.28.0", enable_prefix_caching=False)
    assert off.layout.block_size == none_bs and off.max_concurrency == pytest.approx(off.gpu_blocks / 130)
    align = _nano("0.29.0", mamba_cache_mode="align")
    assert align.layout.block_size == none_bs and align.max_concurrency == pytest.approx(align.gpu_blocks / 134)
    # 0.11.2–0.14: with the flag a supporting model keeps a state per block; before 0.11.2, one state
    e14 = _nano("0.14.0", enable_prefix_caching=True)
    assert e14.layout.block_size == all_bs
    # (before 0.13 vLLM kept Nemotron-H's SSM state in the model dtype: (18,432 + 524,288) × 2 B per layer)
    bf16_state = (3 * (4096 + 2 * 8 * 128) + 64 * 64 * 128) * 2
    assert bf16_state == 1_085_440
    assert _nano("0.11.0", enable_prefix_caching=True).layout.block_size == 16 * cdiv(bf16_state, 16 * 1024) == 1072


def test_nemotron_h_ssm_state_dtype_per_version():
    """models/config.py NemotronHForCausalLMConfig: from 0.13 the config's mamba_ssm_cache_dtype, else
    float16; float32 from 0.20; before 0.13 the model dtype. Nemotron-H-56B (no such key) at TP 4:
    conv 3 × (16,384 + 2 × 8 × 256) / 4 = 15,360 elements × 2 B, SSM 256/4 heads × 64 × 256 elements."""
    spec = load("nvidia/Nemotron-H-56B-Base-8K")

    def state(version):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=4, max_model_len=8192,
                           kv_cache_memory_bytes=8 * GiB)
        e = estimate(spec, gpu_total_bytes=80 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                     non_torch_bytes=0, cuda_graph_bytes=0)
        return e.layout.state_bytes_per_request // 54

    conv, ssm = 15_360, 64 * 64 * 256
    assert state("0.12.0") == state("0.14.0") == conv * 2 + ssm * 2 == 2_127_872
    assert state("0.22.0") == conv * 2 + ssm * 4 == 4_225_024


def test_models_without_mamba_prefix_caching_use_align_or_none():
    """Qwen3-Next has no SupportsMambaPrefixCaching: "align" with prefix caching from 0.15 (0.28's
    default), and 0.11.2–0.14 turn prefix caching off for it (MambaModelConfig)."""
    spec = load("Qwen/Qwen3-Next-80B-A3B-Thinking")

    def est(version, **kw):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=4, max_model_len=262144,
                           max_num_batched_tokens=8192, kv_cache_memory_bytes=16 * GiB, **kw)
        return estimate(spec, gpu_total_bytes=80 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                        non_torch_bytes=0, cuda_graph_bytes=0)

    per_attn = cdiv(262144, 272)                        # 964 blocks of 272 tokens (TP 4)
    e28 = est("0.28.0")
    assert e28.layout.block_size == 272 and e28.layout.mamba_mode == "align"
    assert e28.max_concurrency == pytest.approx(e28.gpu_blocks / (per_attn + 3 * 2))
    e14 = est("0.14.0", enable_prefix_caching=True)
    assert e14.layout.mamba_mode == "none"
    assert e14.max_concurrency == pytest.approx(e14.gpu_blocks / (per_attn + 3 * 1))


def test_sparse_mla_cache_format_per_version_and_card():
    """DeepSeek-V3.2 (61 MLA layers, 132 B of indexer cache each): FlashMLA's sparse "fp8_ds_mla" format is
    656 B per token per layer — in 0.11.0 whatever the dtype (models/config.py sets it for "auto" too),
    from 0.11.2 for an fp8 cache, the checkpoint's as well as the flag's (NVIDIA's NVFP4 export quantizes
    its KV cache); on Blackwell from 0.19 the FlashInfer sparse backend keeps plain fp8, 576 B."""
    def bpt(model, gpu, version, **kw):
        spec = load(model)
        g = lookup_gpu(gpu)
        s = EngineSettings(vllm_version=version, tensor_parallel_size=8, max_model_len=32768, **kw)
        return estimate(spec, gpu_total_bytes=g.total_bytes, gpu_name=g.name, compute_capability=g.compute_capability,
                        settings=s).layout.kv_bytes_per_token

    assert bpt("deepseek-ai/DeepSeek-V3.2", "H200", "0.11.0") == 61 * (656 + 132) == 48_068
    assert bpt("deepseek-ai/DeepSeek-V3.2", "H200", "0.11.2") == 61 * (576 * 2 + 132) == 78_324
    assert bpt("nvidia/DeepSeek-V3.2-NVFP4", "H200", "0.22.0") == 48_068
    assert bpt("deepseek-ai/DeepSeek-V3.2", "B200", "0.22.0", kv_cache_dtype="fp8") == 61 * (576 + 132) == 43_188
    assert bpt("deepseek-ai/DeepSeek-V3.2", "B200", "0.18.0", kv_cache_dtype="fp8") == 48_068


def test_the_named_sparse_mla_backend_decides_the_fp8_layout():
    """mla_attention.py MLAAttention: FLASHMLA_SPARSE packs an fp8 cache as fp8_ds_mla (656 B per token
    per layer), FLASHINFER_MLA_SPARSE keeps standard fp8 (576 B), whatever the card prefers; the b12x
    fork's B12X_MLA_SPARSE packs (its GLM-5.1 logs: 341,504 tokens in 19.55 GiB = 61,464 B per token).
    GLM-5.1: 78 MLA layers, each with its own 132 B indexer key; DeepSeek-V3.2: 61."""
    def bpt(model, gpu, version, backend):
        spec, g = load(model), lookup_gpu(gpu)
        s = EngineSettings(vllm_version=version, tensor_parallel_size=8, max_model_len=32768,
                           kv_cache_dtype="fp8", attention_backend=backend)
        return estimate(spec, gpu_total_bytes=g.total_bytes, gpu_name=g.name, compute_capability=g.compute_capability,
                        settings=s).layout.kv_bytes_per_token

    # RTX PRO 6000 (SM 12.0) at 0.20: FlashInfer's plain rows unless a packing backend is named
    assert bpt("zai-org/GLM-5.1", "RTX PRO 6000 Blackwell", "0.20.1", None) == 78 * (576 + 132) == 55_224
    assert bpt("zai-org/GLM-5.1", "RTX PRO 6000 Blackwell", "0.20.1", "B12X_MLA_SPARSE") == 78 * (656 + 132) == 61_464
    assert bpt("zai-org/GLM-5.1", "RTX PRO 6000 Blackwell", "0.20.1", "FLASHMLA_SPARSE") == 61_464
    assert 19.55 * GiB // 61_464 // 64 * 64 == 341_504       # the fork's printed capacity, from its pool
    # B200 packs with FlashMLA named; H200 keeps plain rows with FlashInfer named
    assert bpt("deepseek-ai/DeepSeek-V3.2", "B200", "0.22.0", "FLASHMLA_SPARSE") == 61 * (656 + 132) == 48_068
    assert bpt("deepseek-ai/DeepSeek-V3.2", "H200", "0.22.0", "FLASHINFER_MLA_SPARSE") == 61 * (576 + 132) == 43_188
    assert bpt("deepseek-ai/DeepSeek-V3.2", "H200", "0.22.0", None) == 48_068


def test_lightning_attention_state_is_in_the_model_dtype():
    """mamba_utils.py linear_attention_state_dtype (0.10.2+): MiniMax-Text-01's lightning-attention state
    is kept in the cache dtype, the model's bf16 — not fp32. 64 heads / TP 8 × 128 × 128 × 2 B per layer."""
    from estimator.spec import spec_from_config

    cfg = {"architectures": ["MiniMaxText01ForCausalLM"], "model_type": "minimax_text_01", "hidden_size": 6144,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 80,
           "attn_type_list": ([0] * 7 + [1]) * 10, "intermediate_size": 9216, "num_local_experts": 32,
           "num_experts_per_tok": 2, "vocab_size": 200064, "max_position_embeddings": 10240000,
           "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rotary_dim": 64}
    spec = spec_from_config(cfg, "synthetic/minimax-text-01")
    s = EngineSettings(vllm_version="0.11.0", tensor_parallel_size=8, max_model_len=32768,
                       kv_cache_memory_bytes=8 * GiB)
    e = estimate(spec, gpu_total_bytes=80 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                 non_torch_bytes=0, cuda_graph_bytes=0)
    assert e.layout.state_bytes_per_request == 70 * 8 * 128 * 128 * 2 == 18_350_080


def test_mllama_runs_v0_and_caches_its_cross_attention_layers_there():
    """Llama-3.2-11B-Vision: mllama.py is SupportsV0Only through 0.9, and V0's cache engine pages all 40
    decoder layers (32 self + 8 cross-attention): 40 × 8 × 128 × 2 × 2 B = 163,840 B per token."""
    spec = load("meta-llama/Llama-3.2-11B-Vision-Instruct")
    for version in ("0.6.3", "0.9.2"):
        e = estimate(spec, gpu_total_bytes=80 * GiB, settings=EngineSettings(vllm_version=version, max_model_len=8192))
        assert e.profile.engine == "v0"
        assert e.layout.kv_bytes_per_token == 40 * 8 * 128 * 2 * 2 == 163_840


def test_kda_conv_state_takes_speculative_rows_from_0_27():
    """mamba_utils.py kda_state_shape uses num_spec from 0.27 (ignored before): Kimi-Linear at TP 2 with
    3 speculative tokens keeps 3 × (4 − 1 + 3) × 2,048 × 2 B of conv state + 16 × 128 × 128 × 4 B."""
    spec = load("moonshotai/Kimi-Linear-48B-A3B-Instruct")

    def kda(version):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=2, max_model_len=32768,
                           speculative_method="ngram", num_speculative_tokens=3, kv_cache_memory_bytes=4 * GiB)
        e = estimate(spec, gpu_total_bytes=24 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                     non_torch_bytes=0, cuda_graph_bytes=0)
        return e.layout.state_bytes_per_request // 20

    assert kda("0.22.0") == 3 * 3 * 2048 * 2 + 16 * 128 * 128 * 4 == 1_085_440
    assert kda("0.27.0") == 3 * 6 * 2048 * 2 + 16 * 128 * 128 * 4 == 1_122_304


def test_language_model_only_leaves_the_vision_tower_out_from_0_15():
    """`--language-model-only` sets every modality's limit to 0 (vllm/config/multimodal.py); from 0.15
    `_mark_tower_model` then skips the vision tower's weights. Qwen3.6-27B's tower by hand
    (qwen3_vl.py, vision_config: depth 27, hidden 1152, MLP 4304, patch 16 × 16 × 2, 2304 positions,
    merger 4 × 1152 → 5120): patch embed 3·2·16·16·1152 + 1152 = 1,770,624; positions 2304 × 1152 =
    2,654,208; a block = norms 2 × 2,304 + qkv 1152·3456 + 3456 + proj 1152² + 1152 + fc1 1152·4304 + 4304
    + fc2 4304·1152 + 1152 = 15,239,504, × 27 = 411,466,608; merger norm 2,304 + 4608² + 4608 +
    4608·5120 + 5120 = 44,838,656 → 460,730,096 parameters = 921,460,192 B in bf16. The 0.20.1 log
    of such a run printed 50.22 GiB of weights (MASS_delivery qwen36 setup; modelled 50.13)."""
    from estimator.api import load_model, run_estimate

    spec = load_model("Qwen/Qwen3.6-27B", offline=True).spec
    # expandable segments: no allocator blocks beyond the tensors, so the difference is the tower's bytes
    base = EngineSettings(vllm_version="0.20.1", max_model_len=32768, expandable_segments=True)
    full = run_estimate(spec, "A100 80GB", base)
    text = run_estimate(spec, "A100 80GB", parse_flags(["--language-model-only"], base.replace()))
    assert full.weights_bytes - text.weights_bytes == 921_460_192
    assert text.activation_bytes < full.activation_bytes       # no dummy image in the profile run either
    # before 0.15 the tower is built whatever the limits
    old = EngineSettings(vllm_version="0.14.0", max_model_len=32768, expandable_segments=True)
    assert run_estimate(spec, "A100 80GB", parse_flags(["--language-model-only"], old)).weights_bytes \
        == run_estimate(spec, "A100 80GB", old.replace()).weights_bytes
    # image=0 alone keeps it: the same tower serves video
    img0 = run_estimate(spec, "A100 80GB", parse_flags(["--limit-mm-per-prompt", "image=0"], base.replace()))
    assert img0.weights_bytes == full.weights_bytes
    # the flag wins over a --limit-mm-per-prompt in either order (get_limit_per_prompt checks it first)
    for argv in (["--language-model-only", "--limit-mm-per-prompt", '{"image": 2}'],
                 ["--limit-mm-per-prompt", '{"image": 2}', "--language-model-only"]):
        assert parse_flags(argv).limit_mm_per_prompt == {"image": 0, "video": 0, "audio": 0}
    # before 0.17 vLLM does not know the flag: the reply says so
    assert any("0.17+" in a for a in run_estimate(spec, "A100 80GB", parse_flags(["--language-model-only"],
               EngineSettings(vllm_version="0.16.0", max_model_len=32768))).assumptions)


def test_language_model_only_is_read_from_a_paste():
    from estimator.diagnosis import settings_from_facts
    from estimator.paste import read_paste

    facts = read_paste("non-default args: {'model': 'Qwen/Qwen3.6-27B', 'language_model_only': True}\n")
    assert settings_from_facts(facts, "0.20.1", "v1").limit_mm_per_prompt == {"image": 0, "video": 0, "audio": 0}
    off = read_paste("vllm serve Qwen/Qwen3.6-27B --max-model-len 32768\n")
    assert settings_from_facts(off, "0.20.1", "v1").limit_mm_per_prompt is None


def test_mm_encoder_tp_mode_data_keeps_the_whole_vision_tower_on_every_rank():
    """`--mm-encoder-tp-mode data` builds a supporting model's vision tower with disable_tp (qwen3_vl.py and
    the Qwen3.5 / 3.6 classes on it): every TP rank holds all of it — Qwen3.6-27B's 921,460,192 B in bf16
    (by hand in the --language-model-only test above) — and the images are split instead. A TP 2 / 4 / 8
    curve of Qwen3.6-35B-A3B logs (nanoserve-mini, 0.20.0, data mode) prints 34.06 / 17.54 / 9.29 GiB of
    weights: 0.52 / 0.72 / 0.83 GiB above the split tower's figures, 0.10–0.11 GiB above the whole
    tower's (the one-GPU run of that curve is 0.11 above too). A model whose class lacks supports_encoder_tp_data falls back to weights mode."""
    from estimator.api import load_model, run_estimate
    from estimator.diagnosis import settings_from_facts
    from estimator.errors import BadInput
    from estimator.paste import read_paste

    spec = load_model("Qwen/Qwen3.6-27B", offline=True).spec
    assert weight_bytes(spec, tp=4, vision_replicated=True).bytes_by_part["vision"] == 921_460_192
    split = weight_bytes(spec, tp=4).bytes_by_part["vision"]
    assert split < 921_460_192 / 3
    # expandable segments: no allocator blocks beyond the tensors, so the difference is the tower's bytes
    base = EngineSettings(vllm_version="0.20.1", max_model_len=32768, tensor_parallel_size=4,
                          expandable_segments=True)
    weights_mode = run_estimate(spec, "A100 80GB", base)
    data_mode = run_estimate(spec, "A100 80GB", parse_flags(["--mm-encoder-tp-mode", "data"], base.replace()))
    assert data_mode.weights_bytes - weights_mode.weights_bytes == 921_460_192 - split
    assert any("--mm-encoder-tp-mode data" in a for a in data_mode.assumptions)
    # one rank: nothing to replicate
    one = EngineSettings(vllm_version="0.20.1", max_model_len=32768)
    assert run_estimate(spec, "A100 80GB", parse_flags(["--mm-encoder-tp-mode", "data"], one)).weights_bytes \
        == run_estimate(spec, "A100 80GB", one.replace()).weights_bytes
    # a model without data mode: counted as weights, and the reply says why
    gemma = load_model("google/gemma-3-27b-it", offline=True).spec
    g2 = EngineSettings(vllm_version="0.20.1", max_model_len=8192, tensor_parallel_size=2)
    g_data = run_estimate(gemma, "A100 80GB", parse_flags(["--mm-encoder-tp-mode", "data"], g2.replace()))
    assert g_data.weights_bytes == run_estimate(gemma, "A100 80GB", g2).weights_bytes
    assert any("counted as weights" in a for a in g_data.assumptions)
    # the flag's values, and the setting read from a log's non-default args
    with pytest.raises(BadInput):
        parse_flags(["--mm-encoder-tp-mode", "pipeline"])
    facts = read_paste("non-default args: {'model': 'Qwen/Qwen3.6-27B', 'tensor_parallel_size': 4, "
                       "'mm_encoder_tp_mode': 'data'}\n")
    assert settings_from_facts(facts, "0.20.1", "v1").mm_encoder_tp_mode == "data"


def test_a_multimodal_rope_caches_four_times_its_positions_from_072():
    """MRotaryEmbedding (rotary_embedding.py, from 0.7.2 with Qwen2.5-VL) builds its cos/sin cache over
    cache_max_position_num = 4 × max_position_embeddings, "related to the duration of the input video".
    Qwen2.5-VL-7B (128,000 positions, rotary dim 128, bf16): 128,000 × 128 × 2 B = 32,768,000 B before,
    131,072,000 B from 0.7.2, 98,304,000 B more weights. Qwen3.6-27B's partial rotary (0.25 × 256 = 64
    dims over 262,144 positions): 33,554,432 → 134,217,728 B. A text model's cache is not scaled. Logs of
    Qwen3.6-35B-A3B (TP 1/2/4/8, 0.20.0), Qwen3-VL-30B-A3B (TP 2 / 4, 0.11–0.12) and Qwen3.5 print the
    weights to within 0.1 GiB with it; without it they were 0.1–0.2 GiB over the model."""
    from estimator.api import load_model, run_estimate
    from estimator.params import rope_cache_bytes

    vl = load_model("Qwen/Qwen2.5-VL-7B-Instruct", offline=True).spec
    assert rope_cache_bytes(vl, 2) == (32_768_000, [])
    assert rope_cache_bytes(vl, 2, 4) == (131_072_000, [])
    before = run_estimate(vl, "A100 80GB", EngineSettings(vllm_version="0.7.1", max_model_len=8192))
    after = run_estimate(vl, "A100 80GB", EngineSettings(vllm_version="0.7.2", max_model_len=8192))
    assert after.weights_bytes - before.weights_bytes == 98_304_000
    q = load_model("Qwen/Qwen3.6-27B", offline=True).spec
    assert rope_cache_bytes(q, 2, 4)[0] == 4 * rope_cache_bytes(q, 2)[0] == 134_217_728
    llama = load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec
    assert rope_cache_bytes(llama, 2, 4) == rope_cache_bytes(llama, 2) == (131_072 * 128 * 2, [])


def test_gemma4s_proportional_rope_caches_the_whole_head():
    """rotary_embedding/gemma4_rope.py Gemma4RotaryEmbedding sets rotary_dim = head_size: the full-attention
    layers' "proportional" RoPE (partial_rotary_factor 0.25 of a 512-wide global head) keeps cos/sin for
    all 512 columns, the non-rotated pairs at zero frequency. Gemma 4 E4B (131,072 positions, bf16):
    sliding 131,072 × 256 × 2 = 67,108,864 B + full 131,072 × 512 × 2 = 134,217,728 B = 201,326,592 B
    (the full cache would be 33,554,432 B over 128 columns). Five E4B logs (0.19–0.22, bf16 and QAT) print
    their weights within 0.1% with it, 0.7–1.1% under without."""
    from estimator.api import load_model
    from estimator.params import rope_cache_bytes

    e4b = load_model("google/gemma-4-E4B-it", offline=True).spec
    assert rope_cache_bytes(e4b, 2) == (131_072 * 256 * 2 + 131_072 * 512 * 2, [])
    assert rope_cache_bytes(e4b, 2)[0] == 201_326_592


def test_v1_native_sampler_peak_matches_gpt_oss_on_an_h100():
    """vllm#23278 (0.10.1, gpt-oss-120b on one H100, defaults): 'Model loading took 65.9651 GiB',
    'Available KV cache memory: -2.14 GiB'. On an ≥ 70 GiB card V1 runs 1,024 sequences, and the
    dummy sampler over 1,024 × 201,088 vocabulary elements at 38 B (SAMPLER_BYTES_NATIVE) is
    7,824,801,792 B = 7.29 GiB, far above the 8,192-token forward. By hand: 0.9 × 79.18 = 71.26 GiB
    − 65.91 (Marlin MXFP4 weights) − 7.29 − 0.15 non-torch = −2.09 GiB (printed −2.14; at 32 B the
    sampler would be 6.14 GiB and the pool −0.94). This run is one of the four the 38 B rests on: the
    test pins the arithmetic, it is not an independent check of the constant."""
    from estimator.api import load_model, run_estimate

    spec = load_model("openai/gpt-oss-120b", offline=True).spec
    est = run_estimate(spec, "H100", EngineSettings(vllm_version="0.10.1"))
    assert est.settings.max_num_seqs == 1024
    assert est.activation_bytes == 1024 * 201_088 * 38
    assert abs(est.kv_cache_bytes / GiB - (-2.14)) < 0.1


@pytest.mark.parametrize("version,limits,tokens,what", [
    # 0.8.2 V1 passed the per-prompt limits (999 when unset) as item counts: 128,000 − 999 images'
    # tokens leaves no frames → 1 frame per video = one 16,384-token temporal patch, a tie with the
    # image, and the image is profiled: the QwenLM/Qwen3-VL#1057 log on 0.8.2 says "profiled with 1
    # image items of the maximum feature size"
    ("0.8.2", None, 16_384, "image(s)"),
    # 0.8.4–0.10.1: one item per modality; the largest video is what 128,000 − 16,384 = 111,616 holds,
    # 12 frames counting from 0 (13 frames = 7 patches = 114,688 is over) = 98,304 > 16,384, so the
    # video is profiled — but the item encoded is built for the 2,048-token batch: one frame pair,
    # 16,384 tokens (gpu_model_runner.py seq_len=self.max_num_tokens)
    ("0.10.1", None, 16_384, "video(s)"),
    ("0.10.1", {"image": 1, "video": 1}, 16_384, "video(s)"),
    # 0.11.0+: no image share, frames from 1, and the dummy built for max_model_len: 14 frames
    # (the cap) = 7 patches = 114,688 — the 0.23 log's budget
    ("0.11.0", None, 114_688, "video(s)"),
    ("0.11.2", {"image": 1, "video": 1}, 114_688, "video(s)"),
])
def test_v1_qwen25_vl_dummy_video_per_release(version, limits, tokens, what):
    from estimator.activation import activation_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    s = EngineSettings(vllm_version=version, max_num_seqs=256, max_num_batched_tokens=2048,
                       limit_mm_per_prompt=limits)
    notes: list[str] = []
    activation_peak(spec, profile_for(version), s, 2, notes, max_len=128_000)
    assert any(f"1 max-size dummy {what} of {tokens:,} tokens" in n for n in notes), notes


def test_the_logged_encoder_profile_decides_what_the_vision_encoder_ran():
    """V1 logs "Encoder cache will be initialized with a budget of N tokens, and profiled with K
    <modality> items of the maximum feature size": the profile the ViT actually ran. A Qwen2.5-VL run
    that logged one 16,384-token image (QwenLM/Qwen3-VL#1057, its limits 10/10 not in the paste) is
    sized by that image's 65,536 patches even where the release rule would pick a 7-patch video."""
    from estimator.activation import activation_peak
    from estimator.paste import read_paste
    from estimator.vllm import profile_for

    line = ("INFO 04-03 09:07:49 [gpu_model_runner.py:1456] Encoder cache will be initialized with a budget of "
            "16384 tokens, and profiled with 1 image items of the maximum feature size.\n")
    assert read_paste(line).extra["encoder_profile"] == ("image", 1, 16384)
    spec = load("Qwen/Qwen2.5-VL-7B-Instruct")
    s = EngineSettings(vllm_version="0.23.0", max_num_seqs=256, max_num_batched_tokens=2048,
                       encoder_profile=("image", 1, 16384))
    notes: list[str] = []
    peak = activation_peak(spec, profile_for("0.23.0"), s, 2, notes, max_len=128_000)
    # the image's tower peak and its bf16 pixels beside it (1,176 values per patch)
    assert peak == 65_536 * (3 * 3420 + 3 * 1280) * 2 + 65_536 * 1176 * 2
    assert any("1 max-size dummy image(s) of 16,384 tokens" in n for n in notes)


def test_an_image_only_tower_goes_with_image_zero_a_video_tower_needs_both():
    """gemma3_mm.py marks its SigLIP tower for "image" alone, qwen2_5_vl.py for {"image", "video"}
    (0.33): `image=0` drops Gemma 3's tower, not Qwen2.5-VL's (video keeps its default limit).
    Gemma-3-27B's tower by hand (siglip: 27 layers of hidden 1152, MLP 4304, 896² images in 14²
    patches): a layer = 4 × (1152² + 1152) + 1152·4304 + 4304 + 4304·1152 + 1152 + 2 × 2,304
    = 15,239,504, × 27 = 411,466,608; patch embed 3·14·14·1152 + 1152 = 678,528; 4,096 positions ×
    1152 = 4,718,592; post norm 2,304; projector 1152 × 5376 + 1152 = 6,194,304 → 423,060,336
    parameters = 846,120,672 B in bf16."""
    from estimator.api import load_model, run_estimate

    gemma = load_model("google/gemma-3-27b-it", offline=True).spec
    # expandable segments: no allocator blocks beyond the tensors, so the difference is the tower's bytes
    base = EngineSettings(vllm_version="0.20.1", max_model_len=8192, expandable_segments=True)
    full = run_estimate(gemma, "H100", base)
    no_img = run_estimate(gemma, "H100", parse_flags(["--limit-mm-per-prompt", "image=0"], base.replace()))
    assert full.weights_bytes - no_img.weights_bytes == 846_120_672
    qwen = load_model("Qwen/Qwen2.5-VL-7B-Instruct", offline=True).spec
    q_full = run_estimate(qwen, "H100", base.replace())
    q_img0 = run_estimate(qwen, "H100", parse_flags(["--limit-mm-per-prompt", "image=0"], base.replace()))
    assert q_img0.weights_bytes == q_full.weights_bytes


@pytest.mark.parametrize("version,env,per_elem", [
    ("0.10.1", None, 38),     # FlashInfer only where installed: the native sort stays the cautious default
    ("0.16.0", None, 38),     # 0.11.2–0.16: FlashInfer opt-in (envs.py: unset = None), native sort
    # 0.17–0.20: the native path masks with topk_topp_triton.py, no sort: bf16 logits 2 + fp32 copy 4
    # + softmax probs 4 + exponential noise 4 = 14 B (0.17.1 logs of Llama-3.1-8B / Qwen2.5-7B ≈ 16 B)
    ("0.17.0", None, 14),
    ("0.20.1", None, 14),
    # 0.21+: FlashInfer by default (unset = True), then the native path warmed with a generator ("Also
    # warm forward_native", gpu_model_runner.py) after the first call's temporaries are freed: near the
    # code's 14 B, 16 B as seven V1-runner logs of 0.21–0.26 solve it (vllm.SAMPLER_BYTES_TRITON_WARMED)
    ("0.21.0", None, 16),
    ("0.26.0", "1", 16),
    ("0.26.0", "0", 16),      # turned off: the Triton path twice, one after the other
    ("0.14.0", "1", 10),      # opted in before 0.21: FlashInfer's alone
])
def test_v1_sampler_per_release_and_env(version, env, per_elem):
    """The dummy sampler's bytes per row × vocab element as each release picks the sampler
    (v1/sample/ops/topk_topp_sampler.py and envs.py in the wheels); 256 rows × 151,936 vocab."""
    from estimator.activation import activation_peak
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen3-8B")
    s = EngineSettings(vllm_version=version, max_num_seqs=256, max_num_batched_tokens=2048)
    if env is not None:
        s = parse_flags([f"VLLM_USE_FLASHINFER_SAMPLER={env}"], s)
    assert activation_peak(spec, profile_for(version), s, 2, []) == 256 * 151_936 * per_elem


@pytest.mark.parametrize("version,per_elem", [("0.20.0", 38), ("0.30.0", 16)])
def test_v1_native_sampler_below_eight_rows(version, per_elem):
    """0.17–0.29 mask with the Triton kernel only for 8 rows or more (topk_topp_sampler.py
    `logits.shape[0] >= 8`) and sort below; from 0.30 the Triton path takes any batch.
    4 rows × 151,936 vocab; the forward over 2,048 tokens is larger, so compare the sampler alone."""
    from estimator.vllm import sampler_bytes

    assert sampler_bytes(tuple(int(x) for x in version.split(".")), None, 4) == per_elem


def test_v1_0_17_sampler_peak_matches_a_printed_pool():
    """TheBuccaneer/vllm-offload-profiles, vLLM 0.17.1 on an RTX 3090, Llama-3.1-8B-Instruct,
    --gpu-memory-utilization 0.7 --max-model-len 8192: "Model loading took 14.99 GiB", "Available KV
    cache memory: 0.95 GiB". Budget ⌈23.69 × 0.7⌉ = 16.58 GiB (0.14+ rounds the request up); the
    dummy sampler 256 rows × 128,256 vocab × 14 B (bf16 logits, fp32 copy, probs, noise) = 0.43 GiB
    is above the 2,048-token forward; non-torch 0.15 → 16.58 − 14.99 − 0.43 − 0.15 = 1.01 GiB, within
    0.1 of what vLLM printed (29 B per element, the 0.21+ figure, would leave 0.56)."""
    from estimator.api import load_model, run_estimate

    spec = load_model("meta-llama/Llama-3.1-8B-Instruct", offline=True).spec
    s = EngineSettings(vllm_version="0.17.1", gpu_memory_utilization=0.7, max_model_len=8192)
    est = run_estimate(spec, "RTX 3090", s)
    assert est.activation_bytes == 256 * 128_256 * 14
    assert abs(est.weights_bytes / GiB - 14.99) < 0.01
    assert abs(est.kv_cache_bytes / GiB - 0.95) < 0.1


def test_mla_matrix_absorption_weights_in_0_7_1_to_0_7_3():
    """vLLM 0.7.1–0.7.3 precompute MLA decode matrices at load (VLLM_MLA_PERFORM_MATRIX_ABSORPTION,
    vllm/attention/backends/mla/utils.py; dropped in 0.8.0), counted in "Loading model weights took".
    DeepSeek-R1 (FP8, 128 × 128 blocks) at TP 8, 16 heads per rank, per layer: W_Q_UK 1,536 × 8,192
    FP8 + 12 × 64 fp32 scales = 12,582,912 + 3,072 B; W_UV_O 8,192 × 7,168 FP8 + 64 × 56 scales =
    58,720,256 + 14,336 B; W_QR 1,536 × (16 × 64) bf16 = 3,145,728 B → 74,466,304 B × 61 layers.
    A 0.7.3 log of DeepSeek-R1 at TP 8 on H200 (hexoblog) printed "Loading model weights took 83.88 GB":
    79.55 GiB modelled without them, 83.78 with; vllm PR12676's 8× H200 run printed 30,218 blocks, which
    leaves 14.6 GiB beside the weights where 3.3 GiB had been modelled — 4.2 GiB of it is this."""
    from estimator.api import load_model, run_estimate

    spec = load_model("deepseek-ai/DeepSeek-R1", offline=True).spec

    def weights(version):
        return run_estimate(spec, "H200", EngineSettings(vllm_version=version, engine="v0", tensor_parallel_size=8,
                                                           max_model_len=16384)).weights_bytes

    per_layer = (12_582_912 + 3_072) + (58_720_256 + 14_336) + 3_145_728
    assert per_layer == 74_466_304
    assert weights("0.7.3") - weights("0.8.0") == 61 * per_layer
    assert weights("0.7.1") == weights("0.7.3") and weights("0.7.0") == weights("0.8.0")


def test_rope_cache_per_attention_layer_up_to_0_2_2():
    """vLLM 0.2.0–0.2.2 (model_executor/layers/rotary_embedding.py) register a cos/sin cache buffer in
    every attention layer; 0.2.3 shares one per setup (get_rope's _ROPE_DICT). LlongOrca-7B-16k (linear
    RoPE scaling 4 over 16,384 positions): 65,536 × 128 × 2 B = 16,777,216 B per layer, 32 layers — 31
    more copies on 0.2.2. vllm#1267 (0.2.0, RTX 6000 Ada) printed 3,028 blocks: 3,143 modelled with one
    cache, 3,081 with 32."""
    from estimator.api import load_model, run_estimate

    spec = load_model("Open-Orca/LlongOrca-7B-16k", offline=True).spec

    def weights(version):
        return run_estimate(spec, "RTX 6000 Ada", EngineSettings(vllm_version=version)).weights_bytes

    assert 65536 * 128 * 2 == 16_777_216
    assert weights("0.2.2") - weights("0.2.3") == 31 * 16_777_216
    assert weights("0.2.0") == weights("0.2.2")


def test_bitsandbytes_4bit_adds_its_dequantized_shard_until_028():
    """layers/quantization/bitsandbytes.py: a prefill matmul dequantizes its 4-bit weight one shard at
    a time (matmul_4bit), so the forward holds the largest shard in 16 bits; from 0.10.1 a MoE layer
    dequantizes w13 and w2 of every local expert at once (_apply_4bit_dequnt). 0.28 dropped it."""
    from estimator.forward import bnb_dequant_bytes
    from estimator.vllm import profile_for

    llama = load("meta-llama/Llama-3.1-8B")             # h 4096, I 14336, 32 heads × 128

    def dq(spec, version, **kw):
        return bnb_dequant_bytes(spec, profile_for(version), EngineSettings(vllm_version=version, **kw), 2)

    # gate (or up, or down): I × h = 14,336 × 4,096 × 2 B, above q's 4,096 × 4,096
    assert dq(llama, "0.20.0", quantization="bitsandbytes") == 14336 * 4096 * 2       # 112 MiB
    assert dq(llama, "0.20.0", quantization="bitsandbytes", tensor_parallel_size=2) == 7168 * 4096 * 2
    assert dq(llama, "0.8.5", engine="v0", quantization="bitsandbytes") == 14336 * 4096 * 2
    assert dq(llama, "0.28.0", quantization="bitsandbytes") == 0          # no bitsandbytes in 0.28
    assert dq(llama, "0.20.0") == dq(llama, "0.20.0", quantization="fp8") == 0
    moe = load("Qwen/Qwen3-30B-A3B")                    # 128 experts × I 768, h 2048, no dense layers
    assert dq(moe, "0.20.0", quantization="bitsandbytes") == 128 * 3 * 768 * 2048 * 2   # 1.125 GiB
    # before its MoE method only the attention's shards: q is 32 × 128 rows of h (no dense MLP layers)
    assert dq(moe, "0.10.0", quantization="bitsandbytes") == 4096 * 2048 * 2
    # through the estimate: the forward of a 2,048-token profile run grows by the shard
    def act(q):
        s = EngineSettings(vllm_version="0.20.0", max_num_seqs=1, max_num_batched_tokens=2048,
                           max_model_len=4096, quantization=q)
        return estimate(llama, gpu_total_bytes=80 * GiB, settings=s).activation_bytes
    assert act("bitsandbytes") - act(None) == 14336 * 4096 * 2


@pytest.mark.parametrize("quantization,version,says", [
    ("bitsandbytes", "0.27.1", False), ("bitsandbytes", "0.28.0", True), ("bitsandbytes", "0.33.0", True),
    ("gguf", "0.23.0", False), ("gguf", "0.24.0", True), ("awq", "0.33.0", False),
])
def test_a_release_without_the_weights_format_says_it_cannot_load_them(quantization, version, says):
    """QUANTIZATION_METHODS in each wheel: GGUF is gone from 0.24 and bitsandbytes from 0.28, and
    config/model.py stops with "Unknown quantization method"; the estimate says so."""
    from estimator.vllm import last_release_before

    spec = load("meta-llama/Llama-3.1-8B")
    s = EngineSettings(vllm_version=version, quantization=quantization, max_model_len=4096)
    e = estimate(spec, gpu_total_bytes=80 * GiB, settings=s)
    assert any(f"cannot load {quantization} weights" in a for a in e.assumptions) == says
    assert last_release_before((0, 28, 0)) == "0.27.1" and last_release_before((0, 24, 0)) == "0.23.0"


def test_gemma4_prefix_lm_raises_the_default_batch_to_one_video_from_025():
    """engine/arg_utils.py: a multimodal prefix-LM model (Gemma 4, use_bidirectional_attention 'vision')
    cannot chunk a media item, so a defaulted max_num_batched_tokens is raised to its largest item: a
    video of 32 frames × (70 soft tokens + 2 + 6 markers) = 2,496 tokens (gemma4_mm.py) — the figure a
    kvllm write-up quotes for gemma-4 on an RTX 5090 (2,048 raised to 2,496). A 0.25.1 log shows it
    (vllm.MM_PREFIX_FLOOR_FROM), a 0.21.0 log not."""
    spec = load("google/gemma-4-26B-A4B")
    card = lookup_gpu("RTX 5090").total_bytes

    def batch(version, *flags):
        s = parse_flags(list(flags), EngineSettings(vllm_version=version, max_model_len=16384))
        return estimate(spec, gpu_total_bytes=card, settings=s, gpu_name="NVIDIA GeForce RTX 5090").settings \
            .max_num_batched_tokens

    assert batch("0.28.0") == 32 * (70 + 2 + 6) == 2496
    assert batch("0.25.1") == 2496
    assert batch("0.21.0") == 2048                      # before the rule: the API server's 2,048 on this card
    assert batch("0.28.0", "--language-model-only") == 2048     # text only: not a prefix-LM run
    assert batch("0.28.0", "--max-num-batched-tokens", "1024") == 1024   # a value the user set stays


def test_a_negative_cuda_graph_estimate_vllm_printed_is_kept_when_a_fix_is_rechecked():
    """A GB10 log (unified memory) printed 'Estimated CUDA graph memory: -4.74 GiB total': free memory grew
    while vLLM measured, and it subtracted the negative figure. A fix re-checked from that state keeps
    the printed figure (vLLM measures the same way again) — it had been clamped to 0, so raising the
    utilization from 0.92 to 0.94 seemed to shrink the pool by 4.74 − 0.02 × total."""
    from estimator.memory import rerun

    spec = load("Qwen/Qwen3-8B")
    total = int(119.7 * GiB)
    s = EngineSettings(vllm_version="0.21.0", gpu_memory_utilization=0.92, max_model_len=65536)
    est = estimate(spec, gpu_total_bytes=total, settings=s, cuda_graph_bytes=int(-4.74 * GiB))
    more = rerun(est, gpu_memory_utilization=0.94)
    assert more.cuda_graph_bytes == est.cuda_graph_bytes == int(-4.74 * GiB)
    # budget = utilization × total (0.21 memory_profiling): the pool grows by the 2% of the card
    assert more.kv_cache_bytes - est.kv_cache_bytes == more.budget_bytes - est.budget_bytes
    assert abs((more.budget_bytes - est.budget_bytes) - 0.02 * total) < 2


def test_a_single_gpus_non_torch_figure_follows_the_cards_generation():
    """Where vLLM measures non-torch memory after the CUDA context (0.6.5+ V0, V1 0.9.1+), public
    single-GPU logs print 0.13–0.16 GiB on H100/H200, about 0.09 on A100 and 0.02–0.08 on other cards
    (non_torch.NON_TORCH_SINGLE*). One of them, Unsloth's V0 0.10.0 on an RTX 3090 (RLDecisionAgent's
    ART notes): total 23.68 × 0.78 = 18.47 GiB; weights 0.52, non_torch 0.06, activation 1.61, KV
    16.29 GiB (18.47 − 0.52 − 0.06 − 1.61 = 16.28). Tensor parallelism keeps its own fit; a card of
    unknown generation (but for one under 32 GiB, which no Hopper or A100 is), an era that counts the
    context too, or a release after 0.12 (no printed figure; test_v1_0_17_sampler_peak_matches_a_printed_pool)
    keeps the Hopper figure."""
    from estimator.non_torch import (
        CUDA_CONTEXT,
        NON_TORCH_PER_TP_RANK,
        NON_TORCH_SINGLE,
        NON_TORCH_SINGLE_A100,
        NON_TORCH_SINGLE_SMALL,
        non_torch,
    )
    from estimator.vllm import profile_for

    assert round(23.68 * 0.78, 2) == 18.47 and round(18.47 - 0.52 - 0.06 - 1.61, 2) == 16.28
    p = profile_for("0.10.0")

    def nt(cc, **kw):
        return non_torch(p, EngineSettings(vllm_version="0.10.0", compute_capability=cc, **kw), 0)

    assert nt("9.0") == NON_TORCH_SINGLE == int(0.15 * GiB)
    assert nt("10.0") == NON_TORCH_SINGLE and nt("gfx942") == NON_TORCH_SINGLE and nt(None) == NON_TORCH_SINGLE
    assert nt("8.0") == NON_TORCH_SINGLE_A100 == int(0.09 * GiB)
    for cc in ("7.5", "8.6", "8.9", "12.0"):
        assert nt(cc) == NON_TORCH_SINGLE_SMALL == int(0.05 * GiB)
    assert nt("8.6", tensor_parallel_size=2) == NON_TORCH_SINGLE + 2 * NON_TORCH_PER_TP_RANK
    # a card known only by the total vLLM printed: under 32 GiB it is no Hopper or A100
    s = EngineSettings(vllm_version="0.10.0")
    assert non_torch(p, s, 0, int(7.75 * GiB)) == NON_TORCH_SINGLE_SMALL
    assert non_torch(p, s, 0, int(79.18 * GiB)) == NON_TORCH_SINGLE
    assert non_torch(profile_for("0.13.0"), EngineSettings(vllm_version="0.13.0", compute_capability="8.6"),
                     0) == NON_TORCH_SINGLE
    one_083 = EngineSettings(vllm_version="0.8.3", compute_capability="8.6")
    assert non_torch(profile_for("0.8.3"), one_083, 0) == CUDA_CONTEXT + NON_TORCH_SINGLE

    # end to end with the printed weights and activation peak: the pool is the printed 16.29 GiB
    # (18.47 − 0.5151 − 0.05 − 1.61 = 16.295; Hopper's 0.15 would give 16.195)
    spec = load("Qwen/Qwen2.5-0.5B-Instruct")
    card = lookup_gpu("RTX 3090")
    est = estimate(spec, gpu_total_bytes=card.total_bytes, compute_capability=card.compute_capability,
                   settings=EngineSettings(vllm_version="0.10.0", engine="v0", gpu_memory_utilization=0.78,
                                           max_model_len=32768),
                   weights_bytes=int(0.5151 * GiB), activation_bytes=int(1.61 * GiB))
    assert est.non_torch_bytes == NON_TORCH_SINGLE_SMALL
    assert est.kv_cache_bytes / GiB == pytest.approx(16.29, abs=0.03)


def test_064_non_torch_is_the_cuda_context_alone():
    """0.6.4 (vllm/worker/worker.py): non_torch_memory = (total − free) − torch's allocated bytes after
    the profile run, against an empty card — the CUDA context and what the run loaded beside it. A
    vllm#10517 log (Llama-3.1-8B, RTX 3090, 0.6.4, --max-model-len 20000, u 0.9) prints:
    total 23.58, initial_memory_usage 15.34, peak_torch_memory 17.06, non_torch 0.35, KV 3.81 GiB,
    weights 14.9888 GiB. So KV = 23.58 × 0.9 − 17.06 − 0.35 = 21.222 − 17.41 = 3.81, and before the
    profile run the card already held 15.34 − 14.99 = 0.35 GiB beyond the weights: the whole
    non-torch figure was there before the run (the context), nothing more came with it."""
    from estimator.non_torch import CUDA_CONTEXT, NON_TORCH_PER_TP_RANK, NON_TORCH_SINGLE, non_torch
    from estimator.vllm import profile_for

    assert round(23.58 * 0.9 - 17.06 - 0.35, 2) == 3.81
    one = EngineSettings(vllm_version="0.6.4")
    # 0.6.4: the context alone (0.45 GiB; the six 0.6.4 logs print 0.35–0.73, median 0.44)
    assert non_torch(profile_for("0.6.4"), one, 0) == CUDA_CONTEXT
    # with TP the NCCL / custom all-reduce buffers still come on top of it
    tp2 = EngineSettings(vllm_version="0.6.4", tensor_parallel_size=2)
    assert non_torch(profile_for("0.6.4"), tp2, 0) == CUDA_CONTEXT + 2 * NON_TORCH_PER_TP_RANK
    # V1 ≤ 0.9.0 and 0.2.5–0.3.0 keep the workspaces beside the context; 0.6.5+ V0 has no context in it
    assert non_torch(profile_for("0.8.3"), EngineSettings(vllm_version="0.8.3"), 0) == CUDA_CONTEXT + NON_TORCH_SINGLE
    assert non_torch(profile_for("0.2.7"), EngineSettings(vllm_version="0.2.7"), 0) == CUDA_CONTEXT + NON_TORCH_SINGLE
    assert non_torch(profile_for("0.6.5"), EngineSettings(vllm_version="0.6.5"), 0) == NON_TORCH_SINGLE

    # end to end on that log's card and settings: the pool within 3% of the printed 3.81 GiB
    spec = load("meta-llama/Llama-3.1-8B-Instruct")
    est = estimate(spec, gpu_total_bytes=int(23.58 * GiB), settings=EngineSettings(
        vllm_version="0.6.4", gpu_memory_utilization=0.9, max_model_len=20000))
    assert est.non_torch_bytes == CUDA_CONTEXT
    assert abs(est.kv_cache_bytes / GiB - 3.81) / 3.81 < 0.03


def test_marlin_copies_the_down_projections_input_until_090():
    """gptq_marlin.cu up to 0.8.x: every Marlin GEMM allocates a_tmp = M × K in the input's dtype; at the
    MLP's down projection K = I/tp, beside the gate/up (2I), activation (I) and 3h the eager MLP holds.
    From 0.9.0 (g_idx/perm Optional in _custom_ops.py) only act-order GPTQ checkpoints (desc_act) keep it.
    A weisser-zwerg.dev log (Qwen2.5-72B-Instruct-AWQ, 2 × A40, 0.7.2 V0, TP 2, no chunked prefill:
    32,768 profile tokens) prints a 5.66 GiB activation peak: (3 × 14,784 + 3 × 8,192) × 32,768 × 2 B
    = 4.21 GiB without the copy, + 32,768 × 14,784 × 2 B = 0.90 GiB with it = 5.11."""
    from estimator.forward import marlin_input_copy_bytes
    from estimator.vllm import profile_for

    qwen = load("Qwen/Qwen2.5-72B-Instruct")          # h 8192, I 29568
    assert (qwen.hidden_size, qwen.intermediate_size) == (8192, 29568)
    awq = dataclasses.replace(qwen, quantization={"quant_method": "awq", "bits": 4, "group_size": 128})
    gptq = dataclasses.replace(qwen, quantization={"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                   "desc_act": False})
    gptq_act = dataclasses.replace(gptq, quantization={**gptq.quantization, "desc_act": True})

    def copy(spec, version, cc, tp=2, tokens=32768):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=tp)
        s.compute_capability = cc
        return marlin_input_copy_bytes(spec, profile_for(version, "v0" if version < "0.8" else None), s, tokens, 2)

    assert copy(awq, "0.7.2", 8.6) == 32768 * 14784 * 2 == 968_884_224
    assert copy(gptq, "0.6.4", 8.6, tp=1, tokens=8192) == 8192 * 29568 * 2
    assert copy(awq, "0.7.2", 9.0) == 32768 * 14784 * 2      # AWQ runs Marlin on Hopper too …
    assert copy(gptq, "0.7.2", 9.0) == 0                     # … GPTQ runs Machete there
    assert copy(awq, "0.7.2", 7.5) == 0                      # no Marlin below compute capability 8.0
    assert copy(awq, "0.9.0", 8.6) == copy(gptq, "0.9.0", 8.6) == 0
    assert copy(gptq_act, "0.9.0", 8.6) == 32768 * 14784 * 2  # act order still reorders into a_tmp
    assert copy(qwen, "0.7.2", 8.6) == 0                     # 16-bit weights: cuBLAS

    # through the estimate on that log's setup: the activation peak within 10% of the printed 5.66 GiB
    s = EngineSettings(vllm_version="0.7.2", engine="v0", tensor_parallel_size=2, max_model_len=32768,
                       dtype="float16", quantization="awq_marlin")
    g = lookup_gpu("A40")
    est = estimate(awq, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability, settings=s)
    assert abs(est.activation_bytes / GiB - 5.66) / 5.66 < 0.10
    assert any("Marlin" in a and "0.90 GiB" in a for a in est.assumptions)     # and the reply says so


def test_v0_pads_an_mla_latent_to_256_bytes_in_072_and_073():
    """worker/cache_engine.py of the 0.7.2 and 0.7.3 wheels: get_cache_block_size aligns an MLA token's
    entry (kv_lora_rank + rope = 576 values) to 256 bytes of the 16-bit model dtype, 640 values, and
    allocates the pages so; 0.7.1 had no padding and 0.8.0 dropped it. vllm PR #13109's log of
    DeepSeek-Coder-V2-Lite (27 layers) between those releases: 59.75 GiB / (116,023 blocks × 16) / 27
    = 1,280 B per token per layer = 640 × 2."""
    assert round(59.75 * GiB / (116_023 * 16) / 27) == 1280 == 640 * 2
    spec = load("deepseek-ai/DeepSeek-Coder-V2-Instruct")     # 60 MLA layers, latent 512 + 64

    def per_token(version, kv=None):
        s = EngineSettings(vllm_version=version, engine="v0", max_model_len=4096,
                           kv_cache_dtype=kv or "auto", kv_cache_memory_bytes=GiB)
        return estimate(spec, gpu_total_bytes=80 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                        non_torch_bytes=0, cuda_graph_bytes=0).layout.kv_bytes_per_token

    assert per_token("0.7.3") == per_token("0.7.2") == 60 * 640 * 2 == 76_800
    assert per_token("0.7.1") == per_token("0.8.0") == 60 * 576 * 2 == 69_120
    assert per_token("0.7.3", "fp8") == 60 * 640 * 1      # aligned in the model dtype, stored in fp8


@pytest.mark.parametrize("version,eager,error,capped", [
    ("0.17.0", False, None, False),            # nothing checks it
    ("0.19.0", False, None, True),             # adjust_cudagraph_sizes_for_mamba_cache caps the graphs
    ("0.20.0", False, "mamba_blocks", False),  # ValueError "max_num_seqs (N) exceeds available Mamba cache blocks"
    ("0.20.0", True, None, False),             # only when FULL CUDA graphs are captured
])
def test_max_num_seqs_above_the_mamba_blocks_stops_vllm_from_020(version, eager, error, capped):
    """config/compilation.py in the wheels: 0.17 has neither the cap nor the check, 0.18–0.19 cap the
    CUDA-graph capture sizes at the Mamba blocks, 0.20+ raise when cudagraph_mode has FULL graphs."""
    spec = load("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    s = EngineSettings(vllm_version=version, max_model_len=8192, max_num_seqs=256, kv_cache_memory_bytes=2 * GiB,
                       enforce_eager=eager)
    e = estimate(spec, gpu_total_bytes=80 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                 non_torch_bytes=0, cuda_graph_bytes=0)
    assert 0 < e.gpu_blocks < 256
    assert e.error_kind == error and e.fits == (error is None)
    assert any("caps its CUDA-graph sizes" in a for a in e.assumptions) == capped


def test_v1_keeps_the_dummy_encoder_outputs_through_the_language_model_run():
    """gpu_model_runner.py profile_run (every V1 release; V2's encoder_runner from 0.27) puts the dummy
    encoder outputs in the encoder cache and clears it only after the LLM's dummy run and the sampler,
    so they add to that part of the peak. Qwen3-VL hands the LLM its merger's output and one per
    deepstack level: 2,048 × (1 + 3) = 8,192 values per token for Qwen3-VL-30B-A3B. On 0.13 (no padding)
    one 16,384-token image: 16,384 × 8,192 × 2 B = 256 MiB; the peak is max(max(forward, sampler) +
    those, the tower's own)."""
    from estimator.multimodal_profile import encoder_output_width, encoder_profile
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen3-VL-30B-A3B-Instruct")
    assert encoder_output_width(spec) == 2048 * 4
    s = EngineSettings(vllm_version="0.13.0", tensor_parallel_size=4, max_num_batched_tokens=2048)
    out = encoder_profile(spec, profile_for("0.13.0"), s, 2, [], max_len=65536)
    assert out.kept == 16384 * 8192 * 2
    # V0 runs the tower inside the model's forward: nothing is cached beside it
    assert encoder_profile(spec, profile_for("0.8.3", "v0"), s, 2, [], max_len=65536).kept == 0
    # a model without deepstack hands over its LLM width: Qwen3.6-27B, 5,120
    assert encoder_output_width(load("Qwen/Qwen3.6-27B")) == 5120


def test_qwen3_vl_video_of_0_11_counts_its_timestamps_and_is_padded():
    """qwen3_vl.py 0.11.0–0.12.0 multiplies the largest video's 12,288 tokens (25,165,824 pixels of video
    in 16² patches, 2 frames per temporal patch, 2×2 merged) by 12.5, and profile_run 0.11.x pads each
    dummy output with zeros to the encoder budget max(Tb, item) — the sipeed wiki's 0.11.0 log of
    Qwen3-VL-30B-A3B on 4 × RTX 3090: "Encoder cache will be initialized with a budget of 153600
    tokens, and profiled with 1 video items", "Available KV cache memory: 2.31 GiB" (the model said
    5.00 before). The tower encodes 12,288 × 4 = 49,152 patches; the LLM runs beside 153,600 × 8,192
    × 2 B = 2.34 GiB of padded outputs."""
    from estimator.multimodal_profile import encoder_profile
    from estimator.vllm import profile_for

    spec = load("Qwen/Qwen3-VL-30B-A3B-Instruct")
    s = EngineSettings(vllm_version="0.11.0", tensor_parallel_size=4, max_num_batched_tokens=2048)
    notes: list[str] = []
    out = encoder_profile(spec, profile_for("0.11.0"), s, 2, notes, max_len=65536)
    # TP 4 (u = 1152/4 = 288 values): 0.11.0's attention (qwen_vit_attention_bytes) holds the block input
    # and its norm (2·1152), the local qkv and its contiguous q, k, v (3·288 + 3·288), and then the
    # all-gathered heads (3·1152) — as much as the float32 rotation of q and k together (their
    # concatenation 2·288, its float32 copy and output 2 × 2·288 × 2, the cast 2·288, in 2-byte values) —
    # 7,488 values, over the MLP's 2·4304/4 + 3·1152 = 5,608; the eager tower, at factor 1
    assert out.peak == 49_152 * 7488 * 2
    assert out.kept == 153_600 * 8192 * 2
    assert any("1 max-size dummy video(s) of 12,288 tokens (49,152 patches)" in n for n in notes), notes
    # 0.12.0 pads to the item's count (the same 153,600 here); 0.13.0 drops the factor: the image wins
    assert encoder_profile(spec, profile_for("0.12.0"), dataclasses.replace(s, vllm_version="0.12.0"), 2, [],
                           max_len=65536).kept == 153_600 * 8192 * 2
    assert encoder_profile(spec, profile_for("0.13.0"), dataclasses.replace(s, vllm_version="0.13.0"), 2, [],
                           max_len=65536).kept == 16_384 * 8192 * 2
    # with images off, 0.13+ profiles that video as it is: 12,288 tokens, 49,152 patches, nothing padded
    videos = dataclasses.replace(s, vllm_version="0.20.0", limit_mm_per_prompt={"image": 0})
    notes = []
    out = encoder_profile(spec, profile_for("0.20.0"), videos, 2, notes, max_len=65536)
    assert out.kept == 12_288 * 8192 * 2
    assert any("1 max-size dummy video(s) of 12,288 tokens (49,152 patches)" in n for n in notes), notes
    # the whole log: 23.69 GiB × 0.90 − the 14.77 GiB of weights it printed − the LLM's run beside the kept
    # outputs and the video's pixels (49,152 patches × 16² × 3 × 2 values in bf16, 0.14 GiB) − non-torch
    # memory leaves 2.30 GiB of KV against the 2.31 printed (5.00 without the padded outputs and the video
    # rule, 2.44 without the pixels)
    g = lookup_gpu("RTX 3090")
    est = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability, gpu_count=4,
                   weights_bytes=int(14.7708 * GiB),
                   settings=EngineSettings(vllm_version="0.11.0", tensor_parallel_size=4, max_model_len=65536,
                                           max_num_batched_tokens=2048, dtype="bfloat16"))
    assert out.pixels == 49_152 * 16 * 16 * 3 * 2 * 2
    assert est.activation_bytes >= out.kept + out.pixels
    assert abs(est.kv_cache_bytes / (2.31 * GiB) - 1) < 0.02


@pytest.mark.parametrize("version,rows", [
    ("0.11.0", 8192),     # each of the 32 images padded to the whole encoder budget
    ("0.11.2", 8192),
    ("0.12.0", 256),      # to the item's own count: Gemma 3's 256 tokens, nothing added
    ("0.13.0", 256),
])
def test_0_11_pads_every_dummy_output_to_the_encoder_budget(version, rows):
    """profile_run 0.11.0–0.11.2 copies every dummy output shorter than the encoder budget into zeros of
    the budget's length (`output.new_zeros((encoder_budget, hidden))`); 0.12.0 pads to the modality's
    tokens per item, 0.13.0 not at all. Gemma-3-27B at Tb 8,192: 8,192 // 256 = 32 images, each 256 rows
    of the LLM's 5,376 values — 32 × 8,192 × 5,376 × 2 B = 2.69 GiB on 0.11, 84 MiB after."""
    from estimator.multimodal_profile import encoder_profile
    from estimator.vllm import profile_for

    spec = load("google/gemma-3-27b-it")
    s = EngineSettings(vllm_version=version, max_num_batched_tokens=8192)
    out = encoder_profile(spec, profile_for(version), s, 2, [], max_len=32768)
    assert out.kept == 32 * rows * 5376 * 2


def test_qwen3_vl_deepstack_buffers_are_loaded_with_the_model():
    """qwen3_vl.py builds one [max_num_batched_tokens, text hidden] buffer per deepstack level with the
    model (so in "Model loading took"): Qwen3-VL-30B-A3B at Tb 2,048, 3 levels × 2,048 × 2,048 × 2 B =
    24 MiB; none without deepstack (Qwen3.6) or without the tower (every modality limited to 0, 0.15+)."""
    from estimator.activation import deepstack_buffer_bytes
    from estimator.vllm import profile_for

    vl, p = load("Qwen/Qwen3-VL-30B-A3B-Instruct"), profile_for("0.13.0")
    s = EngineSettings(vllm_version="0.13.0", max_num_batched_tokens=2048)
    assert deepstack_buffer_bytes(vl, s, p, 2) == 3 * 2048 * 2048 * 2
    assert deepstack_buffer_bytes(load("Qwen/Qwen3.6-27B"), s, p, 2) == 0
    text_only = EngineSettings(vllm_version="0.20.0", max_num_batched_tokens=2048,
                               limit_mm_per_prompt={"image": 0, "video": 0})
    assert deepstack_buffer_bytes(vl, text_only, profile_for("0.20.0"), 2) == 0


def test_dsa_sparse_prefill_workspace_is_loaded_with_the_model():
    """A DSA model (MLA + lightning indexer) builds the indexer's top-k indices [Tb, index_topk] int32
    (deepseek_v2.py) and, with an fp8 cache on Hopper, FlashMLASparseImpl reserves its workspace while
    the model is built (flashmla_sparse.py → workspace.py, 256-B aligned pieces): GLM-5.3 (64 heads,
    index_topk 2,048, latent 512 + rope 64) at TP 8, Tb 8,192, max_model_len 1,048,576:
    top-k 8,192 × 2,048 × 4 = 67,108,864 B; query concat 8,192 × 8 heads × 576 × 2 = 75,497,472 B;
    prefill rows 5 × 1,048,576 × 576 × 2 = 6,039,797,760 B (both multiples of 256 already)."""
    from estimator.activation import sparse_mla_load_buffers

    glm, p = load("zai-org/GLM-5.3"), profile_for("0.28.0")

    def settings(**kw):
        base = dict(vllm_version="0.28.0", max_num_batched_tokens=8192, tensor_parallel_size=8,
                    kv_cache_dtype="fp8", compute_capability=9.0)
        return EngineSettings(**{**base, **kw})

    assert sparse_mla_load_buffers(glm, settings(), p, 1_048_576) == (67_108_864, 75_497_472 + 6_039_797_760)
    # a bf16 cache takes no upconvert workspace; Blackwell's sparse backends are not sized
    assert sparse_mla_load_buffers(glm, settings(kv_cache_dtype="auto"), p, 1_048_576) == (67_108_864, 0)
    assert sparse_mla_load_buffers(glm, settings(compute_capability=10.0), p, 1_048_576) == (67_108_864, 0)
    # FlashInfer's sparse backend, named on Hopper, keeps plain fp8 rows and reserves none of it
    assert sparse_mla_load_buffers(glm, settings(attention_backend="FLASHINFER_MLA_SPARSE"), p,
                                   1_048_576) == (67_108_864, 0)
    assert sparse_mla_load_buffers(glm, settings(attention_backend="FLASHMLA_SPARSE"), p, 1_048_576) \
        == (67_108_864, 75_497_472 + 6_039_797_760)
    # before the global workspace manager (vllm#27532, taken as 0.12.0) only the indices
    assert sparse_mla_load_buffers(glm, settings(vllm_version="0.11.0"), profile_for("0.11.0"),
                                   1_048_576) == (67_108_864, 0)
    # an odd size is padded to the workspace's 256-B boundary: DeepSeek-V3.2 at TP 8 (16 heads),
    # Tb 2,048, 100,001 tokens: 5 × 100,001 × 1,152 = 576,005,760 B → 576,005,888 B; the concat
    # 2,048 × 16 × 1,152 = 37,748,736 B
    v32 = load("deepseek-ai/DeepSeek-V3.2")
    assert sparse_mla_load_buffers(v32, settings(max_num_batched_tokens=2048), p, 100_001) == \
        (2048 * 2048 * 4, 37_748_736 + 576_005_888)
    # a rope-free 512-wide latent (GLM-5.3-Flash's NoPE MLA) is not a FlashMLA sparse head size: with a
    # quantized cache vLLM takes FlashInfer's SM90 backend (vllm#55385), which reserves none of this
    nope = dataclasses.replace(glm, layers=[dataclasses.replace(lk, rope_dim=0) if hasattr(lk, "rope_dim") else lk
                                            for lk in glm.layers])
    assert sparse_mla_load_buffers(nope, settings(), p, 1_048_576) == (67_108_864, 0)
    # no indexer (DeepSeek-V3), or no MLA: nothing
    assert sparse_mla_load_buffers(load("deepseek-ai/DeepSeek-V3"), settings(), p, 1_048_576) == (0, 0)
    assert sparse_mla_load_buffers(load("meta-llama/Llama-3.1-8B"), settings(), p, 1_048_576) == (0, 0)


def test_dsa_fp8_workspace_is_in_the_estimated_weights_and_said():
    """The estimate's weights hold the workspace (vLLM prints it in "Model loading took"): GLM-5.3 at
    TP 8 on a Hopper card with max_model_len 131,072 weighs 5 × 131,072 × 1,152 + 8,192 × 8 × 1,152 =
    830,472,192 B more with an fp8 cache than with a bf16 one, and the reply says why."""
    spec = load("zai-org/GLM-5.3")
    base = dict(gpu_total_bytes=140 * GiB, compute_capability="9.0", activation_bytes=0, non_torch_bytes=0,
                cuda_graph_bytes=0)
    flags = ["--vllm-version", "0.28.0", "-tp", "8", "--max-model-len", "131072", "--max-num-batched-tokens",
             "8192"]
    fp8 = estimate(spec, settings=parse_flags(flags + ["--kv-cache-dtype", "fp8"]), **base)
    bf16 = estimate(spec, settings=parse_flags(flags), **base)
    assert fp8.weights_bytes - bf16.weights_bytes == 5 * 131_072 * 1152 + 8192 * 8 * 1152 == 830_472_192
    assert any("sparse prefill workspace (5 × max_model_len rows of the bf16 latent, and the query concat), "
               "0.77 GiB" in a for a in fp8.assumptions)
    assert not any("sparse prefill workspace" in a for a in bf16.assumptions)


def test_dsa_fix_at_a_shorter_length_shrinks_a_printed_weights_figure():
    """A printed "Model loading took" holds the workspace sized for the old max_model_len, so a fix
    re-checked at another length scales it by the modelled weights (memory.rerun): GLM-5.3 FP8 TP 8 on
    a Hopper card, printed 94.46 GiB at 1,048,576 tokens; at 131,072 the modelled weights lose
    5 × (1,048,576 − 131,072) × 1,152 B = 5,284,823,040 B and the printed figure the same share."""
    from estimator.memory import rerun

    spec = load("zai-org/GLM-5.3")
    flags = ["--vllm-version", "0.28.0", "-tp", "8", "--max-model-len", "1048576", "--max-num-batched-tokens",
             "8192", "--kv-cache-dtype", "fp8", "--quantization", "fp8"]
    base = dict(gpu_total_bytes=140 * GiB, compute_capability="9.0", activation_bytes=0, non_torch_bytes=0,
                cuda_graph_bytes=0)
    modelled = estimate(spec, settings=parse_flags(flags), **base)
    printed = int(94.46 * GiB)
    est = estimate(spec, settings=parse_flags(flags), weights_bytes=printed, **base)
    short = rerun(est, max_model_len=131072)
    shrink = 5 * (1_048_576 - 131_072) * 1152
    assert shrink == 5_284_823_040
    expected = printed * (modelled.weights_bytes - shrink) / modelled.weights_bytes
    assert abs(short.weights_bytes - expected) <= 1
    assert short.weights_bytes < printed - 0.9 * shrink


def test_lora_adapter_slots_are_counted_with_the_weights():
    """--enable-lora (vllm/lora/layers.py create_lora_weights): per adapted linear and slice,
    A = max_loras × rank × input and B = max_loras × output × rank, model dtype. Llama-3.2-3B (hidden
    3,072, 24 × 128 q, 8 × 128 k/v, MLP 8,192, 28 layers) at rank 64: A per layer 64 × (3 × 3,072 + 3,072 +
    2 × 3,072 + 8,192) = 1,703,936, B 64 × (3,072 + 2 × 1,024 + 3,072 + 2 × 8,192 + 3,072) = 1,769,472, × 28
    layers × 2 B = 194,510,848 B (0.18 GiB) — an Unsloth notebook's run (rank 64, A100) printed 6.2473 GiB
    where the checkpoint alone is 6.02. Under TP 2 the column outputs and row inputs halve; MoE models
    are said, not sized."""
    from estimator.activation import lora_buffer_bytes

    spec = load("meta-llama/Llama-3.2-3B-Instruct")
    per_layer = 64 * (3 * 3072 + 3072 + 2 * 3072 + 8192) + 64 * (3072 + 2 * 1024 + 3072 + 2 * 8192 + 3072)
    assert per_layer * 28 * 2 == 194_510_848
    notes: list[str] = []
    s = EngineSettings(vllm_version="0.8.1", enable_lora=True, max_lora_rank=64)
    assert lora_buffer_bytes(spec, s, 2, notes) == 194_510_848
    assert "rank 64" in notes[0] and "0.18 GiB" in notes[0]
    assert lora_buffer_bytes(spec, EngineSettings(vllm_version="0.8.1"), 2, []) == 0
    tp2 = 64 * (3 * 3072 + 1536 + 2 * 3072 + 4096) + 64 * (2560 + 3072 + 8192 + 3072)
    assert lora_buffer_bytes(spec, s.replace(tensor_parallel_size=2), 2, []) == tp2 * 28 * 2
    # two slots of the default rank 16
    assert lora_buffer_bytes(spec, EngineSettings(enable_lora=True, max_loras=2), 2, []) == 2 * 16 * per_layer // 64 * 28 * 2
    moe_notes: list[str] = []
    assert lora_buffer_bytes(load("Qwen/Qwen3-30B-A3B"), s, 2, moe_notes) == 0 and "does not size them" in moe_notes[0]
    base = estimate(spec, gpu_total_bytes=int(39.56 * GiB), settings=EngineSettings(
        vllm_version="0.8.1", engine="v0", dtype="bfloat16", max_model_len=2048))
    lora = estimate(spec, gpu_total_bytes=int(39.56 * GiB), settings=EngineSettings(
        vllm_version="0.8.1", engine="v0", dtype="bfloat16", max_model_len=2048, enable_lora=True, max_lora_rank=64))
    assert lora.weights_bytes - base.weights_bytes == 194_510_848
    assert abs(lora.weights_bytes / GiB - 6.2473) < 0.06


def test_v0_of_0_7_counts_the_lora_slots_nowhere():
    """vLLM 0.7.0–0.7.3's V0 runner creates the LoRA manager after it has measured the weights and resets
    the peak statistics before the profile run, whose memory_profiling takes non-torch memory as CUDA's
    less torch's reserved: the slots are in no part of the budget (activation.LORA_UNCOUNTED_V0). 0.8.0
    creates them inside the measured block. Llama-3.1-8B at rank 32, one slot, 2 B: A per layer
    32 × (3 × 4,096 + 4,096 + 2 × 4,096 + 14,336) = 1,245,184, B 32 × (4,096 + 2 × 1,024 + 4,096 +
    2 × 14,336 + 4,096) = 1,376,256, × 32 layers × 2 B = 167,772,160 B (0.16 GiB). Public T4 logs of
    unsloth/meta-llama-3.1-8b-instruct-bnb-4bit with that adapter (0.7.1 and 0.7.2, collected corpus) print
    weights 5.35, activation 0.74 and non-torch 0.05 GiB — none of them holding the slots."""
    from estimator.activation import lora_buffer_bytes
    from estimator.api import load_model
    from estimator.vllm import profile_for

    spec = load_model("unsloth/meta-llama-3.1-8b-instruct-bnb-4bit", offline=True).spec
    slots = 32 * (3 * 4096 + 4096 + 2 * 4096 + 14336) + 32 * (4096 + 2 * 1024 + 4096 + 2 * 14336 + 4096)
    assert slots * 32 * 2 == 167_772_160
    s = EngineSettings(vllm_version="0.7.2", engine="v0", enable_lora=True, max_lora_rank=32, dtype="float16",
                       max_model_len=512, gpu_memory_utilization=0.6)
    notes: list[str] = []
    assert lora_buffer_bytes(spec, s, 2, notes, profile_for("0.7.2", "v0")) == 0
    assert "counts them nowhere" in notes[0]
    assert lora_buffer_bytes(spec, s, 2, [], profile_for("0.7.0", "v0")) == 0
    assert lora_buffer_bytes(spec, s, 2, [], profile_for("0.7.3", "v0")) == 0
    assert lora_buffer_bytes(spec, s, 2, [], profile_for("0.8.0", "v0")) == 167_772_160
    assert lora_buffer_bytes(spec, s, 2, [], profile_for("0.7.3", "v1")) == 167_772_160
    assert lora_buffer_bytes(spec, s, 2, [], profile_for("0.6.6", "v0")) == 167_772_160
    g = lookup_gpu("T4")
    old = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability, settings=s)
    new = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability,
                   settings=s.replace(vllm_version="0.8.0"))
    assert new.weights_bytes - old.weights_bytes == 167_772_160
    assert old.weights_bytes / GiB == pytest.approx(5.35, abs=0.02)
    # 0.6.6 creates them after measuring the weights too, but its memory_profiling puts them in non-torch
    # memory: beside a printed weights figure (which lacks them) the KV cache still loses their bytes
    printed = int(5.35 * GiB)
    v066 = s.replace(vllm_version="0.6.6")
    with_lora = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability,
                         settings=v066, weights_bytes=printed)
    without = estimate(spec, gpu_total_bytes=g.total_bytes, compute_capability=g.compute_capability,
                       settings=v066.replace(enable_lora=False), weights_bytes=printed)
    assert with_lora.non_torch_bytes - without.non_torch_bytes == 167_772_160
    assert without.kv_cache_bytes - with_lora.kv_cache_bytes == 167_772_160
    assert any("not in the weights vLLM 0.6.6 printed" in a for a in with_lora.assumptions)


def test_decode_context_parallelism_spreads_a_requests_tokens_over_the_dcp_ranks():
    """--decode-context-parallel-size (0.10.2+): each of dcp ranks keeps every dcp-th token. A rank's
    pool holds dcp × its blocks' tokens ("Multiplying the GPU KV cache size by the dcp_world_size"), and
    one request needs cdiv(cdiv(L, dcp), block) blocks (FullAttentionSpec.max_memory_usage_bytes).
    DeepSeek-V3's MLA latent (576 values, 1 B fp8 + the 656-byte row vLLM pads to) in a fixed pool."""
    spec = load("deepseek-ai/DeepSeek-V3")
    pool = 40 * GiB

    def run(version, dcp):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=8, decode_context_parallel_size=dcp,
                           max_model_len=131072, kv_cache_memory_bytes=pool)
        return estimate(spec, gpu_total_bytes=140 * GiB, settings=s, weights_bytes=0, activation_bytes=0,
                        non_torch_bytes=0, cuda_graph_bytes=0)

    one, eight = run("0.11.0", 1), run("0.11.0", 8)
    assert eight.gpu_blocks == one.gpu_blocks
    bs = eight.layout.block_size
    assert one.kv_cache_tokens == one.gpu_blocks * bs                 # one KV group: blocks × block size
    assert eight.kv_cache_tokens == 8 * one.gpu_blocks * bs
    need_one, need_eight = cdiv(131072, bs), cdiv(cdiv(131072, 8), bs)
    assert eight.max_concurrency == pytest.approx(eight.gpu_blocks / need_eight)
    assert one.max_concurrency == pytest.approx(one.gpu_blocks / need_one)
    assert eight.kv_needed_bytes == one.kv_needed_bytes // 8
    assert any("decode context parallelism 8" in a for a in eight.assumptions)
    # before the flag existed: modelled without it, and said
    old = run("0.10.1", 8)
    assert old.kv_cache_tokens == run("0.10.1", 1).kv_cache_tokens
    assert any("not in vLLM 0.10.1" in a for a in old.assumptions)


def test_the_decode_context_parallel_size_is_read_from_flags_and_vllms_args():
    assert parse_flags(["-tp", "8", "-dcp", "4"]).decode_context_parallel_size == 4
    assert parse_flags(["--decode-context-parallel-size", "8"]).decode_context_parallel_size == 8
    from estimator.paste import read_paste
    line = ("(APIServer pid=1) INFO 05-15 05:33:37 [utils.py:240] non-default args: {'model': "
            "'deepseek-ai/DeepSeek-V3', 'tensor_parallel_size': 8, 'decode_context_parallel_size': 8}")
    assert read_paste(line).extra.get("decode_context_parallel_size") == 8


def test_hopper_nvswitch_boards_hold_more_outside_torch_under_tp():
    """HGX/DGX Hopper boards under tensor parallelism: NCCL's NVLink buffers (non_torch.NVSWITCH_NCCL_*).
    A public 8× H100 log (DaisukeTakai/eval_dataset vllm_predict.log, vLLM 0.10.0, Qwen3-32B, TP 8,
    fp8 KV, --max-model-len 32768, u 0.9) prints weights 7.6871 GiB and "Available KV cache memory:
    55.71 GiB" on a 79.18 GiB card: 0.9 × 79.18 = 71.26 GiB, so activation + non-torch = 71.26 − 7.69 −
    55.71 = 7.86 GiB, of which the general fit's 0.15 + 0.06 × 8 = 0.63 leaves 7.23 for the profile's
    activation (1,024 sequences × 151,936 logits through the native sampler, ~4 GiB, and the forward):
    the pool came out 1.8 GiB over. With the board's 1.16 + 0.44 × log2(8) = 2.48 GiB it is within 1%.
    The same card over PCIe, an A100 board, TP 1, and Hopper at TP 2 or 4 before 0.9 keep the general fit
    (test_nccl_sets_up_its_buffers_at_start_up_before_0_9 has the rest of that window); from 0.11 the
    board holds 0.60 GiB."""
    from estimator.api import load_model, run_estimate
    from estimator.gpus import on_nvswitch_board
    from estimator.non_torch import NON_TORCH_PER_TP_RANK, NON_TORCH_SINGLE, non_torch
    from estimator.vllm import profile_for

    for card in ("H100 SXM", "H800", "NVIDIA H100 80GB HBM3", "H200", "H20", "A100-SXM4-80GB", "B200"):
        assert on_nvswitch_board(lookup_gpu(card).name), card
    for card in ("H100 PCIe", "H100 NVL", "RTX 4090", "L40S", "80GB", "79.18GiB", "A100 80GB PCIe"):
        assert not on_nvswitch_board(lookup_gpu(card).name), card

    def nt(version, tp, cc="9.0", board=True):
        s = EngineSettings(vllm_version=version, compute_capability=cc, tensor_parallel_size=tp)
        return non_torch(profile_for(version), s, 0, None, board) / GiB

    general = (NON_TORCH_SINGLE + 4 * NON_TORCH_PER_TP_RANK) / GiB
    assert nt("0.9.2", 2) == pytest.approx(1.60, abs=0.01)
    assert nt("0.9.2", 4) == pytest.approx(2.04, abs=0.01)      # vLLM PR21429's 4× H200-class debug log prints 2.04
    assert nt("0.10.2", 8) == pytest.approx(2.48, abs=0.01)
    assert nt("0.11.0", 4) == nt("0.33.0", 2) == pytest.approx(0.60, abs=0.01)
    assert nt("0.9.2", 4, board=False) == nt("0.9.2", 4, cc="8.0") == pytest.approx(general, abs=1e-6)
    assert nt("0.8.5", 4) == nt("0.8.5", 4, board=False)       # 0.8.5 counts the CUDA context beside it
    assert nt("0.10.0", 1) == NON_TORCH_SINGLE / GiB

    spec = load_model("Qwen/Qwen3-32B", offline=True).spec
    s = parse_flags(["--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8", "--max-model-len", "32768"],
                    EngineSettings(vllm_version="0.10.0"))
    board = run_estimate(spec, "H100 SXM", s.replace())
    pcie = run_estimate(spec, "H100 PCIe", s.replace())
    assert board.kv_cache_bytes / GiB == pytest.approx(55.71, rel=0.01)
    # over PCIe: the general fit, capped at four ranks (0.15 + 0.06 × 4 = 0.39)
    assert (pcie.kv_cache_bytes - board.kv_cache_bytes) / GiB == pytest.approx(2.48 - 0.39, abs=0.02)
    assert any("NVSwitch" in a for a in board.assumptions)
    assert not any("NVSwitch" in a for a in pcie.assumptions)


def test_nccl_sets_up_its_buffers_at_start_up_before_0_9():
    """PyTorch 2.5–2.6 (vLLM 0.6.5–0.8.x) ship NCCL 2.21, which allocates every channel's buffers when the
    communicator starts; vLLM's baseline precedes that (worker.py init_device), so an NVSwitch board's
    printed non_torch_memory holds them: 1.54 GiB (2× A100-SXM4-40GB, 0.7.2) and 1.39 (4× A800, 0.8.2) →
    1.46 for Ampere; 7.16 (8× H200, 0.7.3) at TP 8. PCIe cards, 0.6.4 (measured otherwise) and 0.9+ (NCCL 2.26:
    lazy) are untouched; so is Hopper at TP 2 or 4, of which no log tells. A log outside the fit, llm-tracker's
    16× H100 DeepSeek-V3 (0.6.6, TP 8 × PP 2), printed 2,889 blocks: 4,019 without the rule, 3,220 with it."""
    from estimator.api import run_estimate
    from estimator.non_torch import NON_TORCH_PER_TP_RANK, NON_TORCH_SINGLE, non_torch

    def nt(version, tp, cc, board=True, engine="v0"):
        s = EngineSettings(vllm_version=version, compute_capability=cc, tensor_parallel_size=tp)
        return non_torch(profile_for(version, engine), s, 0, None, board) / GiB

    assert nt("0.7.2", 2, "8.0") == nt("0.8.2", 4, "8.0") == pytest.approx(1.46, abs=0.005)
    # V1 0.8.x measures from the same baseline, and counts the CUDA context beside it (non_torch.CUDA_CONTEXT)
    assert nt("0.8.5", 8, "9.0", engine="v1") == pytest.approx(7.16 + 0.45, abs=0.005)
    assert nt("0.7.3", 8, "9.0") == pytest.approx(7.16, abs=0.005)
    general = (NON_TORCH_SINGLE + 2 * NON_TORCH_PER_TP_RANK) / GiB
    assert nt("0.7.2", 2, "8.0", board=False) == pytest.approx(general, abs=1e-6)       # 2× A100 PCIe
    assert nt("0.7.3", 2, "9.0") == pytest.approx(general, abs=1e-6)                    # no log: general
    assert nt("0.10.1", 2, "8.0") == pytest.approx(general, abs=1e-6)                   # NCCL 2.26's lazy buffers
    # what the reply says, and the pool it leaves: Qwen2.5-14B on 2× A100-SXM4-40GB, 0.7.2 (daxgc's log
    # printed 17.24 GiB of KV, and 1.54 of non-torch)
    spec = load("Qwen/Qwen2.5-14B-Instruct")
    s = EngineSettings(vllm_version="0.7.2", tensor_parallel_size=2, max_model_len=32768)
    board, pcie = run_estimate(spec, "A100-SXM4-40GB", s.replace()), run_estimate(spec, "A100 40GB PCIe", s.replace())
    assert (pcie.kv_cache_bytes - board.kv_cache_bytes) / GiB == pytest.approx(1.46 - general, abs=0.01)
    assert any("NCCL 2.21" in a and "1.46 GiB" in a for a in board.assumptions)


def test_non_torch_stops_growing_past_four_pcie_ranks():
    """NCCL's ring over PCIe keeps two peers and a few channels whatever its length: logs of eight and
    more such cards print 0.18 (8× L40S, 0.10.2), 0.28 (L40S TP 8, 0.7.3), 0.36 (8× L40S, 0.6.6) and
    0.20 GiB (16× RTX 3090), all below the 4-rank fit 0.15 + 0.06 × 4 = 0.39, which TP 8 and 16 keep
    (non_torch.NON_TORCH_RANKS_CAP). NVSwitch boards and AMD's boards are not capped: 0.15 + 0.06 × 8 = 0.63
    (8× H200 0.7.3 prints 7.16, 8× MI300X 0.6.4 8.02 — more, not less)."""
    from estimator.non_torch import non_torch
    from estimator.vllm import profile_for

    def nt(tp, cc="8.9", **kw):
        s = EngineSettings(vllm_version="0.10.2", compute_capability=cc, tensor_parallel_size=tp)
        return round(non_torch(profile_for("0.10.2"), s, 0, None, **kw) / GiB, 2)

    assert (nt(2), nt(4), nt(8), nt(16)) == (0.27, 0.39, 0.39, 0.39)
    assert nt(8, cc=None, arch="gfx942") == 0.63
    assert nt(8, cc="8.0", nvswitch=True) == 0.63       # an A100 board (no NVSwitch figure from 0.9): uncapped

    # end to end: the 8× L40S log (aiplatform, Qwen3-235B-A22B-Instruct-2507-FP8, TP 8, EP) prints
    # non_torch 0.18 GiB; the estimate's own figure is the capped 0.39, not 0.63
    spec = load("Qwen/Qwen3-235B-A22B-Instruct-2507")
    est = estimate(spec, gpu_total_bytes=lookup_gpu("L40S").total_bytes, compute_capability="8.9",
                   gpu_name=lookup_gpu("L40S").name,
                   settings=EngineSettings(vllm_version="0.10.2", tensor_parallel_size=8, max_model_len=32768))
    assert est.non_torch_bytes / GiB == pytest.approx(0.39, abs=0.005)


def test_early_rocm_builds_add_hipblaslt_and_rccl_on_mi300():
    """MI300-class cards (gfx942) in vLLM 0.5.5–0.6.4's ROCm builds (non_torch.ROCM_MI300_*): hipBLASLt holds
    2.1 GiB outside torch, RCCL 0.72 GiB per tensor-parallel rank on top. llm-tracker's MI300X notes
    (vLLM 0.6.3.dev, Llama-2-7b-chat-hf fp16, u 0.9, 4,096 tokens) print 20,186 blocks; the same run with
    hipBLASLt off 20,406 — 220 blocks of 16 × 32 layers × 32 heads × 128 × 2 × 2 B = 8 MiB, 1.72 GiB.
    The fit alone gives 20,446 blocks, with hipBLASLt's 2.1 GiB (268.8 blocks) 20,177: 0.04% from the
    printed figure. The ROCm blog's Llama-3-8B-Instruct run (its log line "gpu_executor.py:121] # GPU blocks:
    78897" is 0.5.5's, 0.6.x print it at line 122; dated 08-29, six days after 0.5.5) has blocks of
    16 × 32 layers × 8 heads × 128 × 2 × 2 B = 2 MiB: hipBLASLt's 2.1 GiB is 1,075 of them, which the fit
    alone would hand to the KV cache (80,104 blocks, 1.5% over). A W7900 (gfx1100), releases before 0.5.5
    and from 0.6.5 keep the fit."""
    from estimator.non_torch import NON_TORCH_PER_TP_RANK, NON_TORCH_SINGLE, non_torch
    from estimator.vllm import profile_for

    def nt(version, tp=1, arch="gfx942"):
        s = EngineSettings(vllm_version=version, tensor_parallel_size=tp)
        return non_torch(profile_for(version), s, 0, None, arch=arch)

    assert nt("0.6.3") == NON_TORCH_SINGLE + int(2.1 * GiB)
    assert nt("0.6.3", tp=8) == NON_TORCH_SINGLE + 8 * NON_TORCH_PER_TP_RANK + int(2.1 * GiB) + 8 * int(0.72 * GiB)
    assert nt("0.6.3", arch="gfx1100") == nt("0.6.5") == nt("0.5.4") == NON_TORCH_SINGLE
    assert nt("0.5.5") == NON_TORCH_SINGLE + int(2.1 * GiB)
    assert round(2.1 * GiB / (16 * 32 * 8 * 128 * 2 * 2)) == 1075
    assert round(2.1 * GiB / (16 * 32 * 32 * 128 * 2 * 2), 1) == 268.8

    spec = load("meta-llama/Llama-2-7b-chat-hf")
    s = EngineSettings(vllm_version="0.6.3", dtype="float16", gpu_memory_utilization=0.9)
    from estimator.api import run_estimate

    est = run_estimate(spec, "MI300X", s)
    assert est.gpu_blocks == pytest.approx(20_186, rel=0.005)
    assert any("MI300-class card: hipBLASLt add about 2.1 GiB" in a for a in est.assumptions)
    assert run_estimate(spec, "MI300X", s.replace(vllm_version="0.6.5")).non_torch_bytes < int(0.5 * GiB)
    llama3 = load("meta-llama/Meta-Llama-3-8B-Instruct")
    blog = run_estimate(llama3, "MI300X", EngineSettings(vllm_version="0.5.5", gpu_memory_utilization=0.9))
    assert blog.gpu_blocks == pytest.approx(78_897, rel=0.005)


def test_gemma4_e2b_profile_mlp_is_its_double_wide_one():
    """The profile run's MLP peak is the widest layer's: E2B's KV-shared layers run 2 × 6,144. The
    text-only LLM forward over Tb tokens: 1.3 × Tb × (3 × 12,288 + qkv (8 + 2 × 1) × 256 + 3 × 1,536) × 2 B."""
    from estimator.api import load_model
    from estimator.forward import forward_bytes

    sp = load_model("google/gemma-4-E2B-it", offline=True).spec
    s = EngineSettings(vllm_version="0.22.0", max_num_batched_tokens=8192)
    assert forward_bytes(sp, s, 8192, 2, profile_for("0.22.0")) == \
        int(1.3 * 8192 * (3 * 12288 + 10 * 256 + 3 * 1536) * 2)


@pytest.mark.parametrize("version,chunk", [
    ("0.4.3", None),        # fused_moe.py without chunks: every token's caches at once
    ("0.5.4", 65536),       # envs.py VLLM_FUSED_MOE_CHUNK_SIZE "65536"
    ("0.11.0", 32768),      # "32768" from 0.6.0
    ("0.17.1", 16384),      # str(16 * 1024) from 0.12.0
    ("0.18.0", None),       # 0.18.0's fused_experts_impl: M = num_tokens, no chunk loop, no env var
    ("0.33.0", None),
])
def test_fused_moe_workspaces_hold_the_chunk_each_release_sets(version, chunk):
    """Qwen3-30B-A3B over 65,536 profiled tokens (TP 1): each routed token keeps top-8 × (gate/up 2 × 768 +
    activation 768 + down 2,048) = 34,816 values of the experts' caches for at most one chunk, beside
    the qkv (32 + 2 × 4) × 128 = 5,120 and 3 × 2,048 per token of the layer (× 1.3 in V1; V0 runs
    eagerly: × 1.0 and no qkv term)."""
    from estimator.forward import forward_bytes

    sp = load("Qwen/Qwen3-30B-A3B")
    p = profile_for(version)
    s = EngineSettings(vllm_version=version, max_num_batched_tokens=65536)
    held = 65536 if chunk is None else chunk
    factor, attn = (1.0, 0) if p.engine == "v0" else (1.3, 5120)
    assert forward_bytes(sp, s, 65536, 2, p) == int(factor * (held * 34816 + 65536 * (attn + 3 * 2048)) * 2)
    said = any("hold all 65,536 tokens at once" in a for a in estimate(sp, gpu_total_bytes=80 * GiB, settings=s).assumptions)
    assert said == (chunk is None)


def test_gemma4_sliding_groups_hold_the_raised_batch_in_the_concurrency():
    """A 0.25.1 log (an L40S, Gemma 4 26B-A4B FP8, max_model_len 32,768, the docker image's defaults)
    prints 12.75 GiB of KV, 321,600 tokens and 9.81× concurrency. Per request the full-attention group
    needs 32,768 / 32 = 1,024 blocks (its 2 KV heads × 512 pages padded to the sliding layers' 16-token
    page: 32-token blocks) and each of the 5 sliding-window groups cdiv(1,023 + 2,496, 16) + 1 = 221:
    2,129 blocks, not the 1,989 a 2,048-token batch gives (10.46×)."""
    spec = load("google/gemma-4-26B-A4B")
    est = estimate(spec, gpu_total_bytes=lookup_gpu("L40S").total_bytes, gpu_name="NVIDIA L40S",
                   settings=EngineSettings(vllm_version="0.25.1", max_model_len=32768,
                                           gpu_memory_utilization=0.92, quantization="fp8"))
    assert est.settings.max_num_batched_tokens == 2496
    per_request = 32768 // 32 + 5 * (-(-(1023 + 2496) // 16) + 1)
    assert per_request == 2129
    assert abs(est.max_concurrency - est.gpu_blocks / per_request) < 0.01
    # within 3% of the printed 9.81 (the pool is 2.2% under the log's once the weights count the caching
    # allocator's blocks; the per-request block count is what this test checks)
    assert abs(est.max_concurrency / 9.81 - 1) < 0.03


def test_gemma4_on_a_gb10_holds_the_small_default_batch_in_the_concurrency():
    """The GB10 gets vLLM's small defaults (NVML cannot size its memory), so a 0.25.1 server batches
    2,048 tokens, raised to Gemma 4's 2,496-token video. A DGX Spark log (Gemma 4 26B-A4B NVFP4,
    max_model_len 262,144, 32 sequences, util 0.85) prints 84.68 GiB of KV and 3,912,140 tokens:
    84.68 GiB / (5 layers × 131,072 B) = 138,739 blocks; per request 262,144 / 32 = 8,192 full-attention
    blocks and 5 × (cdiv(1,023 + 2,496, 16) + 1) = 1,105 sliding ones, 9,297 in all; 138,739 / 9,297 ×
    262,144 = 3,911,971 tokens (0.01% off). The large defaults' 8,192-token batch would need 11,077 blocks (3.28M)."""
    spec = load("google/gemma-4-26B-A4B")
    gb10 = lookup_gpu("GB10")
    est = estimate(spec, gpu_total_bytes=gb10.total_bytes, gpu_name=gb10.name,
                   settings=EngineSettings(vllm_version="0.25.1", max_model_len=262144, max_num_seqs=32,
                                           gpu_memory_utilization=0.85))
    assert est.settings.max_num_batched_tokens == 2496
    per_request = 262144 // 32 + 5 * (-(-(1023 + 2496) // 16) + 1)
    assert per_request == 9297
    assert abs(est.max_concurrency - est.gpu_blocks / per_request) < 0.01
    blocks_printed = int(84.68 * 2**30 // (5 * 131072))
    assert blocks_printed == 138739
    assert abs(blocks_printed / per_request * 262144 / 3912140 - 1) < 0.001


def test_gemma4_tower_batches_frames_by_free_memory_and_022_adds_the_one_hot():
    """gemma4_mm.py from 0.22 (vllm PRs #43169, #43296): the tower encodes a video's frames `_encoder_chunk`
    at a time, min(free // 2, total // 10) over 630 patches × 4 × 10,240 position classes × 8 B each, and
    transformers' patch embedder of the time (before transformers#46176) builds an int64 one-hot of
    (frames, 630, 2, 10,240) beside its bf16 cast. Before 0.22 one frame per call; 0.25 logs fit without
    the one-hot."""
    from estimator.multimodal_profile import gemma4_encoder_call
    from estimator.vllm import profile_for

    spec = load("google/gemma-4-E4B-it")            # vision: 10,240 position classes; 70 × 3² patches a frame
    assert spec.vision["position_embedding_size"] == 10240
    frame = 70 * 3 * 3                              # 630 patches
    per_frame_cost = frame * 4 * 10240 * 8          # 206,438,400 B: vLLM's cost model per frame
    total = lookup_gpu("A10G").total_bytes          # 22.06 GiB
    free = total - int(15.09 * GiB)                 # the bf16 weights loaded

    def call(version, mem):
        s = EngineSettings(vllm_version=version, gpu_memory_at_profile=mem)
        return gemma4_encoder_call(spec, profile_for(version), s, 32, frame, 2)

    # total // 10 binds (free // 2 ≈ 3.5 GiB): 2,368,… B // 206,438,400 B = 11 frames at a time
    chunk = min(free // 2, total // 10) // per_frame_cost
    assert chunk == 11
    one_hot = 11 * frame * 2 * 10240 * (8 + 2)      # int64 + bf16 cast: 1,419,264,000 B = 1.32 GiB
    assert call("0.22.0", (total, free)) == (11 * frame, one_hot)
    # a nearly full card: free // 2 binds — (1 GiB // 2) // 206,438,400 = 2 frames
    assert call("0.22.0", (total, GiB)) == (2 * frame, 2 * frame * 2 * 10240 * 10)
    # 0.25: the same batching, no one-hot (transformers' look-up)
    assert call("0.25.1", (total, free)) == (11 * frame, 0)
    # 0.21: one frame per call, the one-hot of one frame
    assert call("0.21.0", (total, free)) == (frame, frame * 2 * 10240 * 10)
    # a card with room encodes all 32 frames at once (H100: 79 GiB // 10 over 206 MB = 41 ≥ 32)
    h100 = lookup_gpu("H100").total_bytes
    assert call("0.25.1", (h100, h100 // 2)) == (32 * frame, 0)
    # other models are not batched this way
    assert gemma4_encoder_call(load("Qwen/Qwen2.5-VL-7B-Instruct"), profile_for("0.22.0"),
                               EngineSettings(gpu_memory_at_profile=(total, free)), 1, 65536, 2) == (65536, 0)


def test_gemma4_e4b_on_an_a10g_at_022_matches_its_pool_with_the_one_hot():
    """gemma-challenge-senpai's 0.22.0 log: Gemma-4-E4B-it bf16 on an A10G, util 0.9, one sequence, 512
    batched tokens, eager: weights 15.09 GiB, 3.31 GiB of KV. The profile peak is the tower's one-hot
    (1.32 GiB, above) and the dummy video's pixels; the pool is 0.9 × 22.06 − 15.09 − 1.35 − 0.15 ≈ 3.37 GiB
    (1.8% over; it was 4.13 before the one-hot, 25% over)."""
    spec = load("google/gemma-4-E4B-it")
    s = EngineSettings(vllm_version="0.22.0", gpu_memory_utilization=0.9, max_model_len=4096, max_num_seqs=1,
                       max_num_batched_tokens=512, enforce_eager=True, dtype="bfloat16")
    est = estimate(spec, gpu_total_bytes=lookup_gpu("A10G").total_bytes, settings=s,
                   weights_bytes=int(15.09 * GiB), gpu_name="NVIDIA A10G")
    one_hot = 11 * 630 * 2 * 10240 * 10
    assert one_hot <= est.activation_bytes < one_hot + 64 * MiB
    assert abs(est.kv_cache_bytes / (3.31 * GiB) - 1) < 0.03
    assert any("11 frame(s) at a time" in a for a in est.assumptions)
    assert any("one-hot of 10,240 classes" in a for a in est.assumptions)


def test_gemma4_profiles_as_many_videos_as_the_budget_holds_of_2496_tokens():
    """gemma4_mm.py get_mm_max_tokens_per_item: a video is 32 frames × (70 soft tokens + boi + eoi + ~6
    timestamp tokens) = 2,496 tokens, so a 16,384-token encoder budget holds 16,384 // 2,496 = 6 dummy
    videos (not the 7 that 2,240 soft tokens would give); each still encodes 32 × 70 = 2,240 rows."""
    spec = load("google/gemma-4-26B-A4B")
    s = EngineSettings(vllm_version="0.25.1", max_model_len=32768, max_num_batched_tokens=16384,
                       quantization="fp8")
    est = estimate(spec, gpu_total_bytes=lookup_gpu("L40S").total_bytes, gpu_name="NVIDIA L40S", settings=s)
    assert 16384 // (32 * (70 + 2 + 6)) == 6
    assert any("includes 6 max-size dummy video(s) of 2,240 tokens" in a for a in est.assumptions)
