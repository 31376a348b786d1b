"""Tables, summary rows and the looser prose shapes of write-ups: hand-made pastes in the shapes
the dev corpus shows, each value checked by hand, and the near-misses that must stay unread."""

from __future__ import annotations

import pytest

from estimator.paste import read_paste
from estimator.paste_tables import label_keys, read_cell

# --- labels and cells ------------------------------------------------------------------------


def test_labels_name_quantities_and_flags():
    assert ("kv_cache_gib", "gib") in label_keys(" KV pool ")
    assert ("kv_tokens_capacity", "tokens") in label_keys("GPU KV cache size")
    assert label_keys("Available KV cache memory") == [("kv_available_gib", "gib")]
    assert label_keys("weights/GPU") == [("weights_gib", "gib")]
    assert label_keys("`--max-num-seqs`") == [("max_num_seqs", "int")]
    assert label_keys("max_model_len that fits") == [("max_model_len", "int")]
    assert label_keys("MTP acceptance") == []
    assert label_keys("per-token KV") == []


def test_cells_need_the_quantity_unit():
    assert read_cell(" 7.71 GiB ", "gib")[0] == 7.71
    assert read_cell(" 7.71 ", "gib") is None                # no unit: not read as GiB
    assert read_cell(" ~7.2 GiB ", "gib") is None            # approximate
    assert read_cell(" **150,992 tokens** ", "tokens")[0] == 150992
    assert read_cell(" 121,344 (1.24x concurrency) ", "int")[0] == 121344
    assert read_cell(" 12.5 ", "int") is None
    assert read_cell(" NVFP4 (Inferact) ", "quant")[0] == "nvfp4"
    assert read_cell(" BF16 ", "quant") is None             # unquantized is no quantization
    assert read_cell(" default ", "frac") is None


# --- tables ----------------------------------------------------------------------------------


def test_two_column_table_rows():
    f = read_paste("| metric | value |\n|---|---|\n| KV cache | 7.71 GiB |\n| Available KV cache memory | 22.5 GiB |\n")
    assert f.get("kv_available_gib") == 22.5
    # the available-memory row also implies a KV cache of 22.5 GiB (V1 hands the KV cache exactly
    # that), at a lower weight than the row that states the KV cache itself: 7.71 is read
    assert f.get("kv_cache_gib") == 7.71
    assert read_paste("| Available KV cache memory | 22.5 GiB |\n| GPU | H20 |\n").get("kv_cache_gib") == 22.5


def test_unknown_label_or_unitless_cell_is_not_read():
    f = read_paste("| KV cache | 7.71 |\n| Widgets | 3.5 GiB |\n")
    assert f.get("kv_cache_gib") is None and f.get("weights_gib") is None


def test_before_after_columns_read_the_before_run():
    text = ("| Flag | Before | After |\n|---|---:|---:|\n| `--max-model-len` | 131072 | **262144** |\n"
            "| `--max-num-seqs` | 2 | **3** |\n")
    f = read_paste(text)
    assert f.get("max_model_len") == 131072
    assert f.get("max_num_seqs") == 2


def test_columns_headed_by_models_read_the_subjects_column():
    text = ("`acme/Foo-7B-0731` needs more KV than `acme/Foo-7B`.\n\n"
            "| | `Foo-7B` (preview) | `Foo-7B-0731` |\n|---|---|---|\n"
            "| KV pool | 7.01 GiB | 7.71 GiB |\n| GPU KV cache size | **1,009,661 tokens** | **150,992 tokens** |\n"
            "| max_model_len that fits | 912,128 (1.11x concurrency) | 121,344 (1.24x concurrency) |\n")
    f = read_paste(text)
    assert f.get("model") == "acme/Foo-7B-0731"
    assert f.get("kv_cache_gib") == 7.71
    assert f.get("kv_tokens_capacity") == 150992
    assert f.get("max_model_len") == 121344
    assert f.get("max_concurrency") == 1.24


def test_columns_without_a_rule_to_pick_are_not_read():
    f = read_paste("| | run A | run B |\n|---|---|---|\n| KV pool | 7.01 GiB | 7.71 GiB |\n")
    assert f.get("kv_cache_gib") is None


def test_run_rows_pick_the_row_restated_elsewhere():
    text = ("Identical 377,456-token KV pool either way.\n\n| precision | KV tokens | weights/GPU |\n|---|---|---|\n"
            "| FP8 | 377,456 | 14.28 GiB |\n| NVFP4 | 445,875 | 12.02 GiB |\n")
    f = read_paste(text)
    assert f.get("kv_tokens_capacity") == 377456
    assert f.get("weights_gib") == 14.28
    assert f.get("quantization") == "fp8"


def test_run_rows_without_an_anchor_are_not_read():
    text = "| precision | KV tokens | weights/GPU |\n|---|---|---|\n| FP8 | 377,456 | 14.28 GiB |\n| NVFP4 | 445,875 | 12.02 GiB |\n"
    f = read_paste(text)
    assert f.get("weights_gib") is None and f.get("kv_tokens_capacity") is None


def test_run_rows_pick_the_row_holding_the_error():
    text = ("vLLM 0.21.0\nmax-model-len | Server Start | Notes\n261,856 | ok | GPU: 43,707/49,140 MiB\n"
            "262,144 | fail | KV cache OOM (need 8.33 GiB, only 8.29 GiB)\n")
    f = read_paste(text)
    assert f.get("max_model_len") == 262144
    assert f.get("kv_needed_gib") == 8.33 and f.get("kv_available_gib") == 8.29


def test_summary_rows():
    f = read_paste("Results:\n- KV pool: 7.71 GiB\n- Max concurrency: 1.24x\n- Model weights: 14.28 GiB\n")
    assert f.get("kv_cache_gib") == 7.71
    assert f.get("max_concurrency") == 1.24
    assert f.get("weights_gib") == 14.28


# --- loose prose -----------------------------------------------------------------------------


def test_pool_split_over_gpus_gives_the_per_gpu_figure():
    assert read_paste("the measured 2 x 4.99 = 9.98 GiB pool").get("kv_cache_gib") == 4.99     # 2 × 4.99 = 9.98
    assert read_paste("the measured 2 x 4.99 = 12.00 GiB pool").get("kv_cache_gib") is None    # 9.98 ≠ 12.00


def test_capacity_and_concurrency_retold():
    f = read_paste("the current build reports 786,432 tokens / 3.0x, not ~811,800")
    assert f.get("kv_tokens_capacity") == 786432 and f.get("max_concurrency") == 3.0
    assert read_paste("12 GiB/rank serves 786,432 tokens").get("kv_tokens_capacity") == 786432
    f = read_paste("Validated on a single 3090: boots clean, KV 0.78 GiB / 31,129 tokens")
    assert f.get("kv_tokens_capacity") == 31129 and f.get("kv_cache_gib") == 0.78
    assert read_paste("(156.9x vs 20.43x max concurrency at 1M context)").get("max_concurrency") == 156.9
    assert read_paste("DP8 gives 2x concurrency").get("max_concurrency") is None      # a relative gain


def test_blocks_available_in_prose():
    assert read_paste("One request needs 168 blocks of ~193 available, so it fits.").get("gpu_blocks") == 193


def test_need_vs_available_is_the_v1_kv_cache():
    f = read_paste("256K errors (5.98 GiB KV needed vs 1.82 avail)")
    assert f.get("kv_needed_gib") == 5.98 and f.get("kv_available_gib") == 1.82
    assert f.get("kv_cache_gib") == 1.82


def test_graph_profiling_notice_retold():
    text = "vLLM also notes the CUDA-graph memory profiling (default since v0.21) makes 0.80 effectively 0.758, and suggests 0.8417."
    assert read_paste(text).get("gpu_memory_utilization") == 0.8


def test_quantization_words():
    f = read_paste("on 1x 3090 (AWQ + external MTP n=4, bf16 KV, 0.92 util)")
    assert f.get("quantization") == "awq" and f.values["quantization"].guess
    assert read_paste("Gemma 4 31B INT4 on 2x24GB GPUs").get("quantization") == "int4"
    assert read_paste("we run an fp8 KV cache").get("quantization") is None
    assert read_paste("awq_marlin kernels and AutoAWQ").get("quantization") is None
    # the model's own name beats a bare word about something else
    assert read_paste("vllm serve Qwen/Qwen3-8B-FP8 (unlike AWQ builds)").get("quantization") == "fp8"


def test_recipe_file_named_after_the_model():
    f = read_paste("vLLM 0.29.1, run-recipe.py recipes/minimax-m2.7-awq.yaml dies at KV-cache init")
    assert f.get("quantization") == "awq" and f.values["quantization"].guess
    assert f.get("model") is None


def test_gpu_with_a_glued_count():
    f = read_paste("when i load it on 4A10 it took 44.5G")
    assert f.get("gpu") == "A10"
    assert f.get("gpu_count") is None                # a glued digit is not taken as a count
    assert read_paste("a W4A16 checkpoint").get("gpu") is None
    # vllm#53013: "-tp2 -dp4 -ep on 4*4GB300" is GB300s; a size in front of a unit is no card
    assert read_paste("I ran it -tp2 -dp4 -ep on 4*4GB300 and saw").get("gpu") == "GB300"
    assert read_paste("the log was a 4GB300 MiB file").get("gpu") is None


def test_a_gpu_count_under_its_own_label():
    """A dashboard's "GPU count = 2" (a RunPod endpoint), a config's "num_gpus: 4" or a pod's
    "nvidia.com/gpu: 8" say how many GPUs there are; 0 and device lists ("0,1") are no count."""
    assert read_paste("**Solusi:** Endpoint → **GPU count = 2**").get("gpu_count") == 2
    assert read_paste("num_gpus: 4").get("gpu_count") == 4
    assert read_paste('        nvidia.com/gpu: "8"').get("gpu_count") == 8
    assert read_paste("Number of GPUs: 8").get("gpu_count") == 8
    assert read_paste("num_gpus: 0").get("gpu_count") is None
    assert read_paste("gpu_count=0,1").get("gpu_count") is None


def test_aphrodite_cache_capacity_line():
    f = read_paste("INFO:     # GPU blocks: 4314, # CPU blocks: 1638\nINFO:     Maximum sequence length allowed in the cache: 69024")
    assert f.get("gpu_blocks") == 4314
    assert f.get("kv_tokens_capacity") == 69024      # 4314 blocks × 16 tokens = 69024


def test_kv_check_in_prose_follows_the_engine():
    text = "`qwen-a3b` (TP=1) OOMs at the KV-cache check on stock vLLM **v0.22.0**"
    assert read_paste(text).error_kind == "kv_capacity_v1"
    # without a version or engine, which check it was is not known
    assert read_paste("vLLM OOMs at the KV-cache check").error_kind != "kv_capacity_v1"


def test_version_comparison_lines():
    text = ("- vLLM 0.2.3: `# GPU blocks: 1464, # CPU blocks: 1310`\n"
            "- vLLM 0.2.4: `# GPU blocks: 1464, # CPU blocks: 1310`\n"
            "- vLLM 0.2.5 and `main`: `# GPU blocks: 112, # CPU blocks: 1310`\n\n"
            "Tested OK on vLLM 0.2.3 and 0.2.4. The test fails on 0.2.5 if the sequence is long.")
    f = read_paste(text)
    assert f.get("vllm_version") == "0.2.5"
    assert f.get("gpu_blocks") == 112
    # without the failing version the three lines are not guessed between
    g = read_paste(text.split("\n\n")[0])
    assert g.get("gpu_blocks") is None
    assert read_paste("the build fails with 12.4.1 drivers").get("vllm_version") is None


@pytest.mark.parametrize("text,version", [
    # vllm#15092: two releases named, the one that cannot run the command is the report's
    ("I can run this command with vllm 0.7.3,but can't with vllm 0.8.0.", "0.8.0"),
    ("it works with vllm 0.7.3 but does not work with vllm 0.8.2", "0.8.2"),
    ("I cannot run it on vLLM 0.10.1 (0.9.2 was fine)", "0.10.1"),
    ("can't run it with my 12.4.1 drivers", None),       # a driver, not a vLLM release
])
def test_the_release_a_user_cannot_run_is_the_reports(text, version):
    assert read_paste(text).get("vllm_version") == version


# --- vLLM 0.11+'s start-up breakdown restated -------------------------------------------------


def test_breakdown_restated_as_summary_rows():
    """llm-d's write-up of 0.11+ DEBUG logs restates "Actual usage is …" as bullets: every part is
    read, the CUDA-graph figure with its sign (vLLM measures it after capture and it can be < 0)."""
    text = ("- **Model loading took:** 14.99 GiB memory and 20.1 seconds\n"
            "- **Available KV cache memory:** 51.38 GiB\n"
            "- **Weight memory:** 14.99 GiB\n"
            "- **Peak activation memory:** 4.76 GiB\n"
            "- **Non-torch memory:** 0.13 GiB\n"
            "- **CUDAGraph memory:** -0.45 GiB\n")
    f = read_paste(text)
    assert (f.get("weights_gib"), f.get("activation_peak_gib"), f.get("non_torch_gib"), f.get("cuda_graph_gib"),
            f.get("kv_cache_gib")) == (14.99, 4.76, 0.13, -0.45, 51.38)
    # the same labels with a word that is not the figure stay unread
    assert read_paste("- Non-torch memory: small\n- CUDA graph memory: 2 graphs\n").get("non_torch_gib") is None


def test_header_that_names_the_unit_reads_bare_numbers():
    text = ("| Model | Status | Model Weight (GiB) | Peak Activation (GiB) | Non-torch Memory (GiB) | "
            "CUDAGraph Memory (GiB) | Available KV Cache (GiB) | TP Size | Max Model Len |\n"
            "|---|---|---|---|---|---|---|---|---|\n"
            "| gpt-oss-120b | SUCCESS | 64.38 | 7.38 | 0.13 | 1.03 | 3.33 | 1 | 16000 |\n")
    f = read_paste(text)
    assert (f.get("weights_gib"), f.get("activation_peak_gib"), f.get("non_torch_gib"), f.get("cuda_graph_gib"),
            f.get("kv_available_gib"), f.get("tensor_parallel_size"), f.get("max_model_len")) == \
        (64.38, 7.38, 0.13, 1.03, 3.33, 1, 16000)
    # without the unit in the header a bare number is not a GiB figure
    f = read_paste("| Model | Model Weight | KV cache |\n|---|---|---|\n| gpt-oss-120b | 64.38 | 3.33 |\n")
    assert f.get("weights_gib") is None and f.get("kv_cache_gib") is None
    assert read_cell(" 64.38 ", "gib_bare")[0] == 64.38
    assert read_cell(" 64.38 GB ", "gib_bare") is None       # another unit
    assert read_cell(" 1,234 ", "gib_bare") is None          # a count, not GiB
    assert read_cell(" 0 ", "gib_bare") is None
