"""V1's dummy sampler on vLLM's official docker image (vllm.image_flashinfer_sampler).

The image installs FlashInfer (docker/Dockerfile: x86_64 from 0.8.0, arm64 from 0.10.0) and V1's
top-k/top-p sampler uses it when importable until 0.11.1 made it opt-in
(v1/sample/ops/topk_topp_sampler.py). Qwen2-7B-Instruct on an RTX 4090 profiles 256 rows (V1's
max_num_seqs below 70 GiB) × 152,064 vocabulary entries, and the sampler is the larger part of its
peak: FlashInfer's 10 B per element is 389,283,840 B, the PyTorch-native path's 38 B 1,479,278,592 B
(vllm.SAMPLER_BYTES_FLASHINFER / SAMPLER_BYTES_NATIVE).
"""

from __future__ import annotations

import pytest

from estimator.diagnosis import diagnose
from estimator.paste import read_paste
from estimator.vllm import image_flashinfer_sampler

FLASHINFER_PEAK = 256 * 152_064 * 10
NATIVE_PEAK = 256 * 152_064 * 38
IMAGE = "docker run --gpus all vllm/vllm-openai:v{v} --model Qwen/Qwen2-7B-Instruct --max-model-len 8192\n"
PIP = "pip install vllm=={v}\nvllm serve Qwen/Qwen2-7B-Instruct --max-model-len 8192\n"


def _peak(text: str, gpu: str = "RTX 4090") -> tuple[int, list[str]]:
    d = diagnose(text, gpu=gpu, offline=True, explain=True)
    return d.estimate["memory"]["activation_bytes"], d.assumptions


@pytest.mark.parametrize(("version", "arch", "expected"), [
    ("0.7.3", "x86_64", False),      # V1 profiles no sampler before 0.8 (and the image's FlashInfer then is moot)
    ("0.8.0", "x86_64", True), ("0.9.2", "x86_64", True), ("0.11.0", "x86_64", True),
    ("0.11.1", "x86_64", False),     # opt-in from 0.11.1
    ("0.9.2", "arm64", False),       # the arm64 image has no FlashInfer before 0.10.0
    ("0.10.0", "arm64", True),
])
def test_which_image_samples_with_flashinfer(version, arch, expected):
    from estimator.vllm import parse_version

    card = "NVIDIA GH200 144GB (HBM3e)" if arch == "arm64" else "NVIDIA GeForce RTX 4090"
    assert image_flashinfer_sampler(parse_version(version), card) is expected


def test_the_image_samples_with_flashinfer_where_a_pip_install_does_not():
    peak, notes = _peak(IMAGE.format(v="0.10.1"))
    assert peak == FLASHINFER_PEAK
    assert any("docker image of 0.10.1 installs FlashInfer" in n for n in notes)
    peak, notes = _peak(PIP.format(v="0.10.1"))
    assert peak == NATIVE_PEAK
    assert not any("docker image" in n for n in notes)


def test_from_0_11_1_flashinfer_sampling_is_opt_in_even_on_the_image():
    peak, notes = _peak(IMAGE.format(v="0.11.1"))
    assert peak == NATIVE_PEAK
    assert not any("docker image" in n for n in notes)


def test_a_log_that_names_the_native_sampler_wins_over_the_image():
    text = IMAGE.format(v="0.10.1") + (
        "WARNING 08-20 10:00:00 [topk_topp_sampler.py:59] FlashInfer is available, but it is not enabled. Falling "
        "back to the PyTorch-native implementation of top-p & top-k sampling. For the best performance, please set "
        "VLLM_USE_FLASHINFER_SAMPLER=1.\n")
    peak, notes = _peak(text)
    assert peak == NATIVE_PEAK
    assert not any("docker image" in n for n in notes)


def test_the_arm64_image_before_0_10_has_no_flashinfer():
    # GH200: 1,024 rows (V1's max_num_seqs from 70 GiB) × 152,064 × 38 B
    peak, _ = _peak(IMAGE.format(v="0.9.2"), gpu="GH200")
    assert peak == 1024 * 152_064 * 38


@pytest.mark.parametrize(("text", "expected"), [
    ("docker run --runtime nvidia --gpus all vllm/vllm-openai:latest --model x/y", True),
    ("services:\n  vllm:\n    image: docker.io/vllm/vllm-openai:v0.10.1\n", True),
    ("image: vllm-openai:v0.8.5   # the official image, re-tagged locally", True),
    ("image: rocm/vllm:latest", False),
    ("image: ghcr.io/acme/my-vllm-openai-fork:1.0", False),
    ("python -m vllm.entrypoints.openai.api_server --model x/y", False),
])
def test_the_official_image_is_read_from_the_paste(text, expected):
    assert bool(read_paste(text).extra.get("official_image")) is expected


def test_the_flashinfer_attention_backend_in_the_log_means_flashinfer_samples_too():
    """A pip install that logs "Using FlashInfer backend" has FlashInfer importable, and 0.9.0–0.11.0
    sample with it then; 0.8.x only with a FlashInfer below 0.2.3, which the log does not show."""
    line = "INFO 08-20 10:00:00 [cuda.py:240] Using FlashInfer backend on V1 engine.\n"
    peak, notes = _peak(PIP.format(v="0.10.1") + line)
    assert peak == FLASHINFER_PEAK
    assert any("the FlashInfer attention backend ran, so FlashInfer is installed" in n for n in notes)
    assert _peak(PIP.format(v="0.8.5") + line)[0] == NATIVE_PEAK
    assert _peak(PIP.format(v="0.11.1") + line)[0] == NATIVE_PEAK


def test_a_run_that_does_not_say_its_sampler_is_told_what_flashinfer_would_change():
    """A pip install of 0.9.0–0.11.0 with nothing naming the sampler is estimated with the native
    peak, and the reply says what FlashInfer (if installed) would measure instead: (38 − 10) B × 256 ×
    152,064 = 1,090,027,520 B = 1.02 GiB less. A run whose log names either sampler, a release where
    FlashInfer is opt-in (0.11.1+), or one where V1 profiles no sampler (0.7.x) gets no such note."""
    words = "1.02 GiB less"
    assert f"{(NATIVE_PEAK - FLASHINFER_PEAK) / 2**30:.2f} GiB less" == words
    peak, notes = _peak(PIP.format(v="0.10.1"))
    assert peak == NATIVE_PEAK
    assert any(words in n and "Using FlashInfer for top-p & top-k sampling" in n for n in notes)
    named = ("WARNING 09-03 04:38:28 [topk_topp_sampler.py:61] FlashInfer is not available. Falling back to the "
             "PyTorch-native implementation of top-p & top-k sampling. For the best performance, please install "
             "FlashInfer.\n")
    for text in (PIP.format(v="0.10.1") + named, IMAGE.format(v="0.10.1"), PIP.format(v="0.11.1"),
                 PIP.format(v="0.7.3")):
        assert not any(words in n for n in _peak(text)[1]), text
