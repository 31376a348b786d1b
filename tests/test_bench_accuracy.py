"""bench/accuracy.py reads a corpus case the way vLLM saw it (the harness itself, not timings)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from estimator.units import GiB
from estimator.vllm import EngineSettings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def accuracy():
    before = os.environ.get("HF_HUB_OFFLINE")
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "bench" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # the bench runs offline; the tests after this one talk to the fake hub
    if before is None:
        os.environ.pop("HF_HUB_OFFLINE", None)
    else:
        os.environ["HF_HUB_OFFLINE"] = before
    return mod


@pytest.fixture(scope="module")
def extraction():
    spec = importlib.util.spec_from_file_location("bench_extraction", ROOT / "bench" / "extraction.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_corpus_total_taken_from_nvidia_smi_is_converted(accuracy):
    """qevos's 47.99 GiB is nvidia-smi's 49,140 MiB (its notes say so), not what torch sees. Named, the
    card is sized as `diagnose` sizes it: a 48 GB RTX 4090 is the 4090's 23.64 GiB + 24 GiB = 47.64 GiB,
    the 4090's own reservation below the 49,140 MiB. Unnamed, or named as a card of another size, the
    figure goes through the cards that show 49,140 MiB: RTX A6000 47.54 GiB, RTX 6000 Ada 47.40 (with
    ECC off) — within 1%, so the lower, 47.40 GiB, not 47.99."""
    from estimator.gpus import lookup_gpu

    case = {"gpu": "NVIDIA GeForce RTX 4090 48GB (modded; 49,140 MiB)",
            "observed": {"total_gpu_memory_gib": 47.99},
            "notes": "Failed at 262,144 by 0.04 GiB. total_gpu_memory_gib derived from 49,140 MiB."}
    assert accuracy.smi_total_mib(case) == 49140
    assert accuracy.gpu_for(case) == case["gpu"]
    assert lookup_gpu(case["gpu"]).total_bytes == round(23.64 * 2**30) + 24 * 2**30
    assert accuracy.printed_total(case, case["gpu"]) is None       # 47.99 is no torch figure
    for gpu in ("", "NVIDIA A100 40GB"):                            # no name; a name of another size
        assert accuracy.gpu_for(dict(case, gpu=gpu)) == "49140MiB"
    assert lookup_gpu("49140MiB").total_bytes == pytest.approx(47.40 * 2**30, abs=1)
    # a total vLLM printed itself is used as it is
    printed = {"gpu": "NVIDIA L40S 48GB", "observed": {"total_gpu_memory_gib": 44.42}, "notes": "TP2 run."}
    assert accuracy.smi_total_mib(printed) is None
    # notes naming another MiB figure than the total do not convert it
    other = dict(case, notes="total_gpu_memory_gib is the sum of 16303 MiB and 32607 MiB.")
    assert accuracy.smi_total_mib(other) is None


def test_settings_a_case_leaves_empty_come_from_its_paste(accuracy):
    """A case whose fields leave TP, utilization and the card empty while its paste states them
    (club-3090's Qwen3.6 logs: `--tensor-parallel-size 2` in the command, the card in nvidia-smi)
    is run as the paste says, not with the defaults (one GPU, 0.9, an assumed H100); a field that
    is set still wins over the paste."""
    paste = ("$ vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --gpu-memory-utilization 0.8 "
             "--max-model-len 32768\n"
             "|   0  NVIDIA GeForce RTX 3090        On  | 00000000:01:00.0 Off |                  N/A |\n"
             "| 30%   40C    P8    20W / 350W |      1MiB / 24576MiB |      0%      Default |\n")
    case = {"paste": paste, "date": "2025-09-01", "tensor_parallel_size": None,
            "gpu_memory_utilization": None, "max_model_len": None, "gpu": None, "observed": {}}
    s = accuracy.settings_for(case)
    assert (s.tensor_parallel_size, s.gpu_memory_utilization, s.max_model_len) == (2, 0.8, 32768)
    assert "3090" in accuracy.gpu_for(case)
    s = accuracy.settings_for(dict(case, gpu_memory_utilization=0.95, tensor_parallel_size=1))
    assert (s.tensor_parallel_size, s.gpu_memory_utilization) == (1, 0.95)


def test_llm_keyword_arguments_in_the_notes_are_read_both_ways(accuracy):
    """`LLM(enable_chunked_prefill=False, …)` recorded in a case's other_flags turns chunked prefill
    off (V0 then profiles max_model_len tokens); it used to be dropped, leaving vLLM's default."""
    s = accuracy.settings_for({"paste": "", "other_flags": "LLM(enable_chunked_prefill=False, enforce_eager=True, "
                                                           "block_size=32)"})
    assert (s.enable_chunked_prefill, s.enforce_eager, s.block_size) == (False, True, 32)


def test_media_limits_in_the_notes_are_read_in_each_spelling(accuracy):
    """The dummy profile run encodes only the modalities the limits leave on: a case records them
    as an LLM() keyword's dict, a quoted JSON flag or bare pairs; words without a count say nothing."""
    def limits(other):
        return accuracy.settings_for({"paste": "", "other_flags": other}).limit_mm_per_prompt

    assert limits("limit_mm_per_prompt={'image': 1, 'video': 0}; V0 engine (VLLM_USE_V1=0)") == {"image": 1, "video": 0}
    assert limits("limit-mm-per-prompt '{\"video\": 0}' --max-model-len 32K") == {"video": 0}
    assert limits("limit_mm_per_prompt image=0/audio=0, enable_prefix_caching False") == {"image": 0, "audio": 0}
    assert not limits("limit_mm_per_prompt (encoder profiled with 1 video item, budget 153600 tokens)")
    assert not limits("limit_mm_per_prompt={'image': num_frames} (16 video frames in this run)")


def test_the_attention_backend_in_the_notes_is_read_by_its_name(accuracy):
    """A case's notes name the backend in prose or as a flag without dashes; only a backend's own name
    counts, and a speculative config's backend is the drafter's, not the model's."""
    def backend(other):
        return accuracy.settings_for({"paste": "", "other_flags": other}).attention_backend

    assert backend("MTP num_speculative_tokens=3; attention backend B12X_MLA_SPARSE; MoE backend b12x") \
        == "B12X_MLA_SPARSE"
    assert backend("--trust-remote-code; attention-backend flash_attn") == "FLASH_ATTN"
    assert backend("V2 model runner; TRITON_MLA attention backend; FlashInfer CUTLASS MoE backend") == "TRITON_MLA"
    assert backend("ROCm build, Triton attention backend, TRITON Fp8 MoE backend") is None
    assert backend("Attention backend (flash_attn unsupported on SM75)") is None
    assert backend("speculative_config {method: dflash, num_speculative_tokens: 15, attention_backend: "
                   "flash_attn}; enable_prefix_caching") is None


def test_a_flag_size_written_apart_from_its_unit_is_that_size(accuracy):
    """A case's notes write "--kv-cache-memory 6 GiB (explicit KV pool …)": 6 GiB, not the 6 bytes
    (vLLM's argparse takes --kv-cache-memory for --kv-cache-memory-bytes) it had been run as, with no KV
    pool at all; a value with no unit after it stays as written."""
    s = accuracy.settings_for({"paste": "", "other_flags": "--kv-cache-memory 6 GiB (explicit KV pool); ROCm"})
    assert s.kv_cache_memory_bytes == 6 * GiB
    s = accuracy.settings_for({"paste": "", "other_flags": "--kv-cache-memory-bytes 6442450944 --enforce-eager"})
    assert s.kv_cache_memory_bytes == 6 * GiB and s.enforce_eager


def test_a_printed_total_wins_over_a_nominal_card_size(accuracy):
    """vllm#13882 printed total_gpu_memory 8.00 GiB for an "RTX 4060 (8 GB)", a card the catalog does
    not have: its "8 GB" is only a nominal size (6.98 GiB by the decimal rule), so the printed total
    is what vLLM saw and what the bench sizes."""
    case = {"gpu": "RTX 4060 (8 GB)", "observed": {"total_gpu_memory_gib": 8.0}, "notes": ""}
    card = accuracy.gpu_for(case)
    assert card == "8.0GiB" or accuracy.printed_total(case, card) == 8 * 2**30


def test_a_card_read_from_a_longer_label_keeps_its_name(accuracy, tmp_path, capsys):
    """A label that names the card among other words ("8x AMD Instinct MI300X 192GB (gfx942; …)") is read
    from the text (the lookup says so in `assumed`); with a printed total that agrees, the card keeps
    its name — its vendor and architecture decide rules a bare "191.98GiB" loses: ROCm 0.6.4 on
    MI300X holds hipBLASLt's 2.1 GiB and RCCL's 0.72 GiB per rank outside torch (non_torch.py). Only a
    nominal size ("80GB-class GPU") still runs on the printed total alone."""
    import json

    label = "8x AMD Instinct MI300X 192GB (gfx942; named in the notebook's collect_env output)"
    case = {"id": "mi300", "model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": label, "vllm_version": "0.6.4",
            "tensor_parallel_size": 8, "gpu_memory_utilization": 0.9, "paste": "",
            "observed": {"total_gpu_memory_gib": 191.98, "weights_gib": 1.9028, "non_torch_gib": 8.02}}
    assert accuracy.gpu_for(case) == "AMD Instinct MI300X"
    assert accuracy.gpu_for({"gpu": "80GB-class GPU, 79.25GiB per vLLM", "notes": "",
                             "observed": {"total_gpu_memory_gib": 79.25}}) == "79.25GiB"
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(case) + "\n")
    assert accuracy.main([str(path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("mi300 ") and "non_torch" in line)
    # 0.6.4 counts the CUDA context (0.45) and, on AMD, 0.06 GiB for each of the 8 ranks (0.48; no cap at 4
    # as for PCIe cards), then hipBLASLt 2.1 and RCCL 8 × 0.72 = 5.76: 8.79 GiB (the log printed 8.02;
    # the bare size gave 0.69)
    assert float(row.split()[-2]) == 8.79


def test_a_known_card_keeps_its_name_and_takes_the_printed_total(accuracy, tmp_path, capsys):
    """A log that prints its total (79.25 GiB) on an A100-SXM4-80GB: the bench ran it as a bare
    "79.25GiB" card, so vLLM's A100 defaults (engine/arg_utils.py: 2,048 batched tokens for a server,
    not the 8,192 of other 70 GiB+ cards) were lost. It now runs the named card on the printed total,
    as `diagnose` does. Qwen3-Coder-30B-A3B on 0.26 with max_num_seqs 16 printed 13.84 GiB of KV."""
    import json

    case = {"id": "a100", "model": "Qwen/Qwen3-Coder-30B-A3B-Instruct", "gpu": "NVIDIA A100-SXM4-80GB",
            "date": "2026-08-05", "vllm_version": "0.26.1rc1.dev156+g0eec856cc", "max_model_len": 131072,
            "max_num_seqs": 16, "gpu_memory_utilization": 0.9, "tensor_parallel_size": 1, "paste": "",
            "observed": {"total_gpu_memory_gib": 79.25, "weights_gib": 56.93, "kv_available_gib": 13.84}}
    assert accuracy.gpu_for(case) == "NVIDIA A100-SXM4-80GB"
    assert accuracy.printed_total(case, "NVIDIA A100-SXM4-80GB") == int(79.25 * 2**30)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(case) + "\n")
    assert accuracy.main([str(path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("a100 ") and "kv_cache_gib" in line)
    # with the A100's 2,048-token batch the MoE forward is a quarter of the 8,192-token one: within 2%
    # of the 13.84 GiB printed (the bare 79.25 GiB card's 8,192 tokens gave 12.99, 6% short)
    assert abs(float(row.split()[-2]) - 13.84) / 13.84 < 0.02


def test_a_v0_workers_memory_line_is_compared_with_that_worker(accuracy):
    """vllm#13061 (V0, TP 2, R1-Distill-Qwen-14B): the memory line the user quoted (KV 8.69 GiB,
    activation 0.19) is a non-driver worker's — 81,536 tokens × 96 KiB per token per rank is only
    7.46 GiB — while vLLM sized both GPUs by the driver, which also samples. The bench compares that
    line with the worker (driver pool + sampler, activation − sampler), the capacity with the driver."""
    from estimator.api import load_model

    spec = load_model("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", offline=True).spec
    s = EngineSettings(vllm_version="0.7.2", engine="v0", tensor_parallel_size=2,
                       gpu_memory_utilization=0.98)
    est = accuracy.run_estimate(spec, "RTX 4090", s)
    # V0 sampler on 256 dummy rows of the full 152,064 vocab (40 B per element) vs one layer's
    # forward over 2,048 tokens (chunked prefill above 32K): (3 × 13,824 / 2 + 3 × 5,120) × 2 B each.
    sampler, forward = 256 * 152064 * 40, 2048 * (3 * 13824 // 2 + 3 * 5120) * 2
    assert est.activation_bytes == sampler
    observed = {"kv_cache_gib": 8.69, "activation_peak_gib": 0.19, "error_max_tokens_in_kv": 81536}
    worker = accuracy.predicted_values(est, observed)
    assert worker["kv_cache_gib"] * GiB == est.kv_cache_bytes + sampler - forward
    assert worker["activation_peak_gib"] * GiB == forward
    assert worker["kv_tokens"] == est.kv_cache_tokens
    # a pool that the capacity accounts for is the driver's own line: nothing moves
    driver = accuracy.predicted_values(est, {"kv_cache_gib": 81536 * 196608 / 2 / GiB,
                                             "error_max_tokens_in_kv": 81536})
    assert driver["kv_cache_gib"] * GiB == est.kv_cache_bytes


def test_vllm_use_v1_0_in_the_notes_runs_the_v0_engine(accuracy):
    """vllm#16199 forced V0 on 0.8.3 (`VLLM_USE_V1=0 vllm serve …`): its budget and profile run are
    V0's even where the case's era field says v1."""
    s = accuracy.settings_for({"paste": "", "era": "v1", "vllm_version": "0.8.3 (VLLM_USE_V1=0)",
                               "other_flags": "VLLM_USE_V1=0 --distributed-executor-backend ray"})
    assert (s.vllm_version, s.engine) == ("0.8.3", "v0")


def test_the_engine_that_printed_the_paste_wins_over_other_attempts_in_the_notes(accuracy):
    """vllm#16128's notes mention "other attempts with VLLM_USE_V1=0", but the figures come from a V1
    log (EngineCore, "GPU KV cache size"): the run is V1's. A paste with no engine-specific line leaves
    the notes' VLLM_USE_V1=0 in charge (the test above)."""
    v1_log = ("INFO 04-07 09:54:39 [kv_cache_utils.py:578] GPU KV cache size: 35,392 tokens\n"
              "INFO 04-07 09:54:39 [kv_cache_utils.py:581] Maximum concurrency for 4,096 tokens per request: 8.64x\n")
    case = {"paste": v1_log, "era": "v1", "vllm_version": "0.8.3",
            "other_flags": "--distributed-executor-backend ray; other attempts with VLLM_USE_V1=0"}
    assert accuracy.settings_for(case).engine == "v1"
    assert accuracy.settings_for(dict(case, paste="")).engine == "v0"


def test_an_unreadable_vllm_use_v1_value_leaves_the_engine_alone():
    """`VLLM_USE_V1=${USE_V1}` (a template) or an empty value says nothing about the engine."""
    from estimator.vllm import parse_flags

    assert parse_flags(["VLLM_USE_V1=${USE_V1}"], EngineSettings(vllm_version="0.8.3")).engine is None
    assert parse_flags(["VLLM_USE_V1=1"], EngineSettings(vllm_version="0.8.3")).engine == "v1"


def test_a_card_named_without_its_size_is_the_one_that_held_the_printed_weights(accuracy):
    """A blog's "A100" run printed `Model loading took 48.5 GiB`: the 40 GB card (what the bare alias
    means in gpus.csv, 39.39 GiB to torch) cannot hold that, so the bench sizes the family's 80 GB
    card (79.15 GiB), as `diagnose` does; a name with its size, or weights that fit, stay as named."""
    case = {"gpu": "NVIDIA A100", "observed": {"weights_gib": 48.5, "kv_cache_gib": 21.5}, "notes": ""}
    assert accuracy.gpu_for(case) == "NVIDIA A100-SXM4-80GB"
    assert accuracy.gpu_for(dict(case, observed={"weights_gib": 13.72})) == "NVIDIA A100"
    assert accuracy.gpu_for(dict(case, gpu="NVIDIA A100 40GB")) == "NVIDIA A100 40GB"
    # the KV pool vLLM allocated sat on the card too (anchoring.card_from_pool, as diagnose reads it): 13.72 GiB of
    # weights beside a 36.56 GiB pool is 50.28 GiB, more than the 40 GB card's 39.39 GiB
    assert accuracy.gpu_for(dict(case, observed={"weights_gib": 13.72, "kv_cache_gib": 36.56})) \
        == "NVIDIA A100-SXM4-80GB"
    assert accuracy.gpu_for(dict(case, observed={"kv_available_gib": 69.66})) == "NVIDIA A100-SXM4-80GB"
    # a negative pool (vLLM's "-2.14 GiB available") allocates nothing
    assert accuracy.gpu_for(dict(case, observed={"weights_gib": 13.72, "kv_cache_gib": -2.14})) == "NVIDIA A100"


def test_a_plus_in_a_card_labels_reasoning_joins_no_cards(accuracy):
    """Mixed cards are joined by "+" ("RTX 5070 Ti 16GB + RTX 5090 D 32GB"), and run_estimate sizes
    each stage on its own; a label whose reasoning has a "+" ("… + 62.52 GiB KV per GPU beside …")
    names one card, which was run as a 62.52 GiB card (the smaller "part")."""
    label = ('4x 80GB-class NVIDIA Ampere (A100/A800 80GB) - not named; inferred: SymmMem warning '
             '"Device capability 8.0" + 62.52 GiB KV per GPU beside 3.74 GiB weights')
    case = {"gpu": label, "observed": {"weights_gib": 3.74, "kv_available_gib": 62.52}, "notes": ""}
    assert accuracy.gpu_for(case) == "NVIDIA A100-SXM4-80GB"
    mixed = dict(case, gpu="NVIDIA GeForce RTX 5070 Ti 16GB + NVIDIA GeForce RTX 5090 D 32GB (heterogeneous)")
    assert accuracy.gpu_for(mixed) == "NVIDIA GeForce RTX 5070 Ti 16GB + NVIDIA GeForce RTX 5090 D 32GB"


def test_a_card_label_too_long_for_a_name_is_read_outside_its_brackets(accuracy):
    """A label whose bracketed reasoning runs past the 200 characters a card name may have is read by
    the words outside the brackets, not skipped."""
    label = ("NVIDIA H200 NVL 141GB (nvidia-smi 143771 MiB), 8 per node (" + "topology notes, " * 12
             + "NVLink bridge in pairs)")
    assert len(label) > 200
    assert accuracy.gpu_for({"gpu": label, "observed": {"kv_cache_gib": 88.0}}) == "NVIDIA H200"


def test_a_case_with_no_card_anywhere_is_skipped_not_run_on_a_default(accuracy, tmp_path, capsys):
    """vLLM's example output (no card named, no total printed) cannot be predicted forward: the
    bench skips it instead of comparing vLLM's 16.20 GiB with a default card's pool."""
    import json

    case = {"id": "no-card", "model": "Qwen/Qwen2.5-0.5B-Instruct", "gpu": None, "date": "2025-07-03",
            "paste": "INFO 07-03 07:12:56 [gpu_worker.py:232] Available KV cache memory: 16.20 GiB",
            "observed": {"kv_cache_gib": 16.2}}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(case) + "\n")
    assert accuracy.gpu_for(case) == ""
    assert accuracy.main([str(path), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "no-card" in out and "skipped: no GPU" in out
    assert "cases evaluated: 0" in out


@pytest.mark.parametrize("text,word", [
    ("awq (AutoRound int4 sym)", "awq"),                 # the leading method word is what vLLM loads
    ("compressed-tensors W8A16 (int8 weights)", "w8a16"),
    ("gguf (Q4_K_M)", "gguf_q4_k_m"),
    ("4-bit (unspecified; ~20 GB weights)", "int4"),
    ("fp8 (Marlin weight-only fallback on Ampere)", "fp8"),
    ("none", None),
    # vLLM's own method names: a word ends at anything but a letter or digit
    ("awq_marlin", "awq"), ("gptq_marlin", "gptq"), ("modelopt_fp4", "nvfp4"), ("fbgemm_fp8", "fp8"),
    ("int4 AWQ", "awq"),                                 # a method word wins over a bits word
    # an fp8 that is the KV cache's is not the weights'
    ("none (fp8 KV cache)", None), ("bf16; kv fp8", None), ("fp8 KV cache", None),
    ("experts_int8", None),                              # online int8 for MoE experts only
])
def test_a_quantization_field_in_words_is_read(accuracy, text, word):
    assert accuracy.quant_word(text) == word


def test_a_checkpoint_format_in_the_description_is_read_but_not_a_kv_dtype(accuracy):
    """club-3090#104 names the base repo (Qwen/Qwen3.6-27B) with "AutoRound int4 checkpoint" in its
    flags text and no quantization field: 16-bit weights would not even fit two 3090s' budget. An
    "fp8_e5m2 KV" in the same text is the cache's dtype, not the weights'."""
    case = {"paste": "", "model": "Qwen/Qwen3.6-27B", "quantization": None,
            "other_flags": "AutoRound int4 checkpoint of Qwen3.6-27B (per title); PCIe x8"}
    assert accuracy.settings_for(case).quantization == "auto_round"
    kv_only = dict(case, other_flags="--kv-cache-dtype fp8_e5m2; fp8 KV cache")
    assert accuracy.settings_for(kv_only).quantization is None


def test_a_draft_models_name_in_the_notes_is_not_the_checkpoints_format(accuracy):
    """senpai's notes carry the MTP draft's name ("speculative_config={'model': 'google/gemma-4-E4B-it-qat-
    q4_0-unquantized-assistant', …}"): its q4_0 is not the served bf16 model's GGUF format."""
    case = {"paste": "", "model": "google/gemma-4-E4B-it", "quantization": None,
            "other_flags": "speculative_config={'model': 'google/gemma-4-E4B-it-qat-q4_0-unquantized-assistant', "
                           "'num_speculative_tokens': 6} (method resolved to 'mtp'); VLLM_BATCH_INVARIANT=1"}
    assert accuracy.settings_for(case).quantization is None
    assert accuracy.settings_for(dict(case, other_flags="a GGUF Q4_K_M export")).quantization == "gguf_q4_k_m"


def test_a_quantization_field_that_says_none_is_not_overridden_by_the_description(accuracy):
    """A BF16 baseline whose description names the run it is compared with ("of an NVFP4-vs-BF16
    comparison"): the field's "none" stands; without it the description's format is read."""
    case = {"paste": "", "model": "deepseek-ai/DeepSeek-V2-Lite", "quantization": "none (BF16 baseline)",
            "other_flags": "offline LLM() (BF16 baseline of an NVFP4-vs-BF16 comparison)"}
    assert accuracy.settings_for(case).quantization is None
    assert accuracy.settings_for(dict(case, quantization=None)).quantization == "nvfp4"


def test_a_weights_figure_read_at_fewer_decimals_is_the_same_figure(extraction):
    """vLLM prints the weights as "took 5.2032 GiB" and as "weights take 5.20GiB": either is the label's."""
    assert extraction.same("weights_gib", 5.2032, 5.2)
    assert extraction.same("weights_gib", 14.9595, 14.96)
    assert not extraction.same("weights_gib", 5.2032, 5.21)
    assert not extraction.same("weights_gib", 5.2, 5.2032)     # a finer reading must match exactly


def test_a_malformed_corpus_line_is_skipped_not_a_traceback(accuracy, tmp_path, capsys):
    """A line that is not JSON, a JSON list, a figure recorded as text and a case without an id:
    the bench reports and goes on (the case without an id is named by its line)."""
    import json

    good = {"model": "Qwen/Qwen2.5-0.5B-Instruct", "gpu": "NVIDIA A10", "observed": {"kv_cache_gib": 5}}
    lines = ["not json", "[1, 2]", json.dumps({"id": "text-figure", "observed": {"kv_cache_gib": "n/a"}}),
             json.dumps(good)]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert accuracy.main([str(path)]) == 0
    captured = capsys.readouterr()
    assert "line 1: not JSON" in captured.err
    assert "line 4" in captured.out and "cases evaluated: 1, skipped" in captured.out
    assert "text-figure" not in captured.out


def test_a_toolkit_name_takes_the_format_the_served_path_names(accuracy):
    """club-3090#612: `'quantization': 'modelopt'` serving `~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4`
    (case model: the base repo). ModelOpt exports come as FP8 or NVFP4 and the checkpoint decides;
    the served path says NVFP4 (FP8 weights, 34 GiB, would not even load on the 32 GB card)."""
    paste = ("(APIServer pid=1) INFO 07-06 22:50:34 [api_utils.py:273] non-default args: {'model_tag': "
             "'~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4', 'model': '~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4', "
             "'max_model_len': 131072, 'quantization': 'modelopt', 'kv_cache_dtype': 'fp8'}\n")
    case = {"paste": paste, "model": "Qwen/Qwen3.6-35B-A3B", "quantization": "modelopt", "other_flags": ""}
    assert accuracy.settings_for(case).quantization == "nvfp4"


def test_odd_field_types_cost_the_field_not_the_run(accuracy, tmp_path, capsys):
    """A hand-made record with a card written as a number, a model as a list, a figure as text, a
    card as an object, or a TP size of 0: the bench reads what it can, ignores the rest, and
    finishes (before, a list model and a text total were tracebacks and TP 0 a division by zero)."""
    import json

    lines = [
        {"id": "number-card", "model": ["Qwen/Qwen2.5-0.5B-Instruct"], "gpu": 4090, "observed": {"kv_cache_gib": 5}},
        {"id": "object-card", "model": "Qwen/Qwen2.5-0.5B-Instruct", "gpu": {"name": "A10"},
         "observed": {"kv_cache_gib": 5}},
        {"id": "text-total", "model": "Qwen/Qwen2.5-0.5B-Instruct", "gpu": "NVIDIA A10",
         "observed": {"kv_cache_gib": 5, "total_gpu_memory_gib": "22"}},
        {"id": "tp-zero", "model": "Qwen/Qwen2.5-0.5B-Instruct", "gpu": "NVIDIA A10", "tensor_parallel_size": 0,
         "gpu_memory_utilization": 1.5, "observed": {"kv_cache_gib": 5}},
        {"id": "observed-list", "model": "Qwen/Qwen2.5-0.5B-Instruct", "gpu": "NVIDIA A10", "observed": [5]},
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in lines))
    assert accuracy.main([str(path), "--verbose"]) == 0
    out, err = capsys.readouterr()
    assert "line 2: field 'gpu' is not text" in err and "line 5: field 'observed' is not an object" in err
    assert "object-card" in out and "skipped: no GPU" in out
    rows = {line.split()[0] for line in out.splitlines() if "kv_cache_gib" in line and not line.startswith("kv")}
    assert {"number-card", "text-total", "tp-zero"} <= rows
    # the rejected TP 0 and utilization 1.5 leave the defaults: the same pool as the plain case
    pool = {line.split()[0]: line.split()[3] for line in out.splitlines() if "kv_cache_gib" in line}
    assert pool["tp-zero"] == pool["text-total"]


@pytest.mark.parametrize(("other", "expected"), [
    ("docker compose (vllm-openai v0.8.5), 4 VllmWorker ranks", True),
    ("--enable-prefix-caching; docker image vllm/vllm-openai:v0.6.4.post1", True),
    ("vllm-backport image lazymio/vllm-backport:latest-sm89", False),
    ("pip install vllm==0.10.1", False),
])
def test_the_official_image_recorded_in_the_notes_is_read(accuracy, other, expected):
    """A case whose notes record vLLM's docker image ran with FlashInfer installed (the V1 sampler
    of 0.8–0.11.0 then uses it: vllm.image_flashinfer_sampler)."""
    s = accuracy.settings_for({"paste": "", "era": "v1", "vllm_version": "0.8.5", "other_flags": other})
    assert s.official_image is expected


def test_a_total_torch_printed_in_the_paste_sizes_the_card_the_case_field_leaves_out(accuracy):
    """A case whose observed numbers lack total_gpu_memory_gib but whose paste shows vLLM's (or PyTorch's)
    own total is sized by it, as `diagnose` does: kvcache-lab's RTX 4080 (15.99 GiB, a card the catalog
    sizes by the 16,376 MiB it shares with the 4070 Ti SUPER: 15.60 GiB). An nvidia-smi MiB total or a size
    in prose is not torch's and stays out."""
    paste = "Free memory on device cuda:0 (13.88/15.99 GiB) on startup ..."
    case = {"gpu": "NVIDIA GeForce RTX 4080", "paste": paste, "observed": {"kv_available_gib": 3.46}}
    assert accuracy.printed_total(case, "NVIDIA GeForce RTX 4080") == int(15.99 * 2**30)
    prose = {"gpu": "NVIDIA GeForce RTX 5090", "paste": "my 32 GB GPU runs out of KV cache",
             "observed": {"kv_available_gib": 18.96}}
    assert accuracy.printed_total(prose, "NVIDIA GeForce RTX 5090") is None
