"""GPU catalog lookups: names as users type them, sizes, and clear errors."""

from __future__ import annotations

import pytest

from estimator.errors import UnknownGpu
from estimator.gpus import SMI_RESERVED_MIB, card_count, gpu_names, lookup_gpu, states_its_size

GIB = 2**30
MIB = 2**20


@pytest.mark.parametrize("text", ["RTX A6000", "rtx a6000", "NVIDIA RTX A6000", "a6000", "A6000 48GB"])
def test_a6000_aliases_give_torch_total(text):
    g = lookup_gpu(text)
    assert g.name == "NVIDIA RTX A6000"
    assert g.total_bytes == round(47.54 * GIB)         # torch_total_gib 47.54 in the catalog
    assert g.compute_capability == "8.6" and g.bf16 and not g.fp8
    assert g.assumed is None


@pytest.mark.parametrize("text,name,gib", [
    ("a100-80gb", "NVIDIA A100-SXM4-80GB", 84987740160 / GIB),      # deviceQuery bytes in the catalog
    ("4090", "NVIDIA GeForce RTX 4090", 23.64),
    ("H100 SXM", "NVIDIA H100 SXM5 80GB (H100 80GB HBM3)", 85017755648 / GIB),
    ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090", 23.69),
    ("nvidia-h200", "NVIDIA H200", 139.80),
    ("NVIDIA A100-SXM4-80GB, 81920 MiB", "NVIDIA A100-SXM4-80GB", 84987740160 / GIB),  # nvidia-smi CSV line
])
def test_aliases(text, name, gib):
    g = lookup_gpu(text)
    assert g.name == name
    assert abs(g.total_bytes / GIB - gib) < 0.005


def test_fp8_flag_follows_catalog():
    assert lookup_gpu("H100 SXM").fp8 and lookup_gpu("4090").fp8
    assert not lookup_gpu("A100 80GB").fp8


def test_size_in_gib_is_taken_as_torch_total():
    g = lookup_gpu("47.54GiB")
    assert g.total_bytes == round(47.54 * GIB) and g.assumed is None
    assert lookup_gpu("23.58 GiB").total_bytes == round(23.58 * GIB)


def test_smi_mib_of_a_known_card_maps_to_it():
    g = lookup_gpu("81559MiB")                    # H100 SXM's nvidia-smi total
    assert g.total_bytes == 85017755648
    assert "nvidia-smi" in g.assumed


def test_smi_mib_unknown_card_subtracts_reservation():
    g = lookup_gpu("30000MiB")
    assert g.total_bytes == (30000 - SMI_RESERVED_MIB) * MIB       # 29520 MiB = 28.83 GiB
    assert g.assumed and "30,000 MiB" in g.assumed


def test_nominal_gb_ambiguous_takes_the_middle_card_of_that_size():
    # "24GB" cards show 21.99 (A10), 22.05 (L4), 22.06 (A10G), 22.38 (P40), 23.42 (RTX PRO 4000), 23.53 (A30
    # and five cards known by their marketed size only), 23.62 (TITAN RTX), 23.64 (4090), 23.65 (Quadro RTX
    # 6000), 23.68 (3090 Ti, RTX A5000), 23.69 (3090) and 23.98 GiB (RX 7900 XTX) to torch: the lower
    # middle of the seventeen is 23.53 GiB (the decimal 24e9 B − 480 MiB = 21.88 GiB is below all of them)
    g = lookup_gpu("24GB")
    assert round(g.total_bytes / GIB, 2) == 23.53
    assert "RTX 3090" in g.assumed and "name the card" in g.assumed
    # no card sold at that size: binary chips less the reservation, 28 GiB − 480 MiB = 27.53 GiB
    assert lookup_gpu("28GB").total_bytes == 28 * GIB - 480 * MIB


def test_nominal_gb_unambiguous_maps_to_card():
    g = lookup_gpu("141GB")                           # only the H200 is sold as 141GB
    assert g.total_bytes == round(139.80 * GIB)
    assert "H200" in g.assumed


def test_decimal_gb_size():
    g = lookup_gpu("49.1 GB")
    assert g.total_bytes == int(49.1e9) - 480 * MIB     # 45.26 GiB
    assert "49.1" in g.assumed


def test_card_without_torch_figure_is_derived_and_says_so():
    g = lookup_gpu("A40")                               # catalog has nvidia-smi 46068 MiB only
    assert g.total_bytes == (46068 - SMI_RESERVED_MIB) * MIB
    assert "derived" in g.assumed


def test_card_without_torch_figure_takes_its_same_architecture_twins_observed_total():
    # H100 PCIe and H100 SXM both show 81,559 MiB in nvidia-smi (compute capability 9.0); torch's
    # total was observed on the SXM (85,017,755,648 B), so the PCIe card gets it, not 81,559 − 480 MiB.
    g = lookup_gpu("H100 PCIe")
    assert g.total_bytes == 85_017_755_648 != (81559 - SMI_RESERVED_MIB) * MIB
    assert "H100 SXM5" in g.assumed and "not observed" in g.assumed
    # The A40 shares 46,068 MiB with the L40S, but not its architecture (8.6 vs 8.9): derived.
    assert lookup_gpu("A40").total_bytes != lookup_gpu("L40S").total_bytes


@pytest.mark.parametrize("text", ["RTX 9999", "a6001", "", "   ", "24", "x" * 500])
def test_unknown_raises_one_line(text):
    with pytest.raises(UnknownGpu) as e:
        lookup_gpu(text)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


def test_unknown_names_close_matches():
    with pytest.raises(UnknownGpu, match="RTX A6000"):
        lookup_gpu("a6001")


def test_unified_memory_machine_asks_for_size():
    with pytest.raises(UnknownGpu, match="give the size"):
        lookup_gpu("apple silicon")


def test_gpu_names_lists_catalog():
    names = gpu_names()
    assert "NVIDIA RTX A6000" in names and "NVIDIA H200" in names and len(names) >= 40


@pytest.mark.parametrize("text,expected_gib", [
    ("RTX 4090 48GB", 23.64 + 24),           # catalog 4090: 23.64 GiB to torch; 24 GiB more chips
    ("Tesla V100 48GB", 15.78 + 32),          # no 48 GB V100: the first V100 row (16 GB) + 32 GiB
])
def test_a_stated_variant_adds_the_extra_memory(text, expected_gib):
    g = lookup_gpu(text)
    assert g.total_bytes / 2**30 == pytest.approx(expected_gib, abs=0.01)
    assert "variant" in g.name


@pytest.mark.parametrize("text,expected_name,expected_gib", [
    # the bare alias is the 40 GB card; a size in the text picks its 80 GB sibling (deviceQuery
    # 84,987,740,160 B = 79.15 GiB in gpus.csv), not 39.39 + 40 = 79.39 GiB
    ("NVIDIA A100 (numbers imply 80GB)", "NVIDIA A100-SXM4-80GB", 79.15),
    # the H20's 141 GB row: 141 × 1024 MiB − 480 MiB = 143,904 MiB = 140.53 GiB, not 94.50 + 45
    ("NVIDIA H20 (memory size not stated; numbers imply the ~141GB variant)", "NVIDIA H20 141GB", 140.53),
])
def test_a_stated_size_picks_the_familys_own_card(text, expected_name, expected_gib):
    g = lookup_gpu(text)
    assert g.name == expected_name and "variant" not in g.name
    assert g.total_bytes / 2**30 == pytest.approx(expected_gib, abs=0.005)


def test_h20_is_known():
    """vllm#51041 and recipes#12 run on H20s; nvidia-smi shows 97,871 MiB (as the GH200 96GB)."""
    g = lookup_gpu("8x H20")
    assert g.name == "NVIDIA H20" and g.compute_capability == "9.0" and g.fp8
    assert g.total_bytes / 2**30 == pytest.approx(94.50, abs=0.01)
    # the HBM3e version is its own (spec-only) row: 141 × 1024 MiB − 480 MiB reservation
    big = lookup_gpu("H20 141GB")
    assert big.name == "NVIDIA H20 141GB"
    assert big.total_bytes == (141 * 1024 - 480) * 2**20


def test_a_bare_size_never_names_a_unified_memory_board():
    """The Jetson Orin Nano is marketed at 8 GB, but "8GB" alone is far more often a discrete card:
    reading it as the Jetson (7.44 GiB, unified) would bring Jetson advice to an RTX user. The
    discrete 8 GB cards (GTX 1070 … RTX 5060: 6.96–7.93 GiB) give the middle figure, the Jetson is
    not among them."""
    g = lookup_gpu("8GB")
    assert not g.unified and "Jetson" not in g.assumed and "RTX 3070" in g.assumed
    assert 6.9 * 2**30 < g.total_bytes < 7.95 * 2**30
    assert lookup_gpu("Jetson Orin Nano").unified


def test_generic_words_and_per_die_rows_name_no_card():
    """"Dell Pro Max GB10" once matched the Intel Max 1550 through its vendor-stripped alias "max" —
    it is the GB10 (DGX Spark-class) board; a bare "128GB" took the MI250X's per-GCD 63.98 GiB (one die
    of a 128 GB board), and names neither that nor the 128 GB unified GB10."""
    dell = lookup_gpu("NVIDIA GB10 (DGX Spark-class Dell Pro Max GB10, unified memory)")
    assert dell.name == "NVIDIA GB10 (DGX Spark)" and dell.unified
    with pytest.raises(UnknownGpu):
        lookup_gpu("Dell Pro Max workstation")
    assert lookup_gpu("intel max 1550").name.startswith("Intel Data Center GPU Max 1550")
    assert lookup_gpu("128GB").total_bytes == 128 * GIB - 480 * MIB       # no whole card of that size


def test_gb10_is_known_with_the_total_vllm_prints():
    """DGX Spark's GB10: vLLM's start-up lines print "Free memory on device (112.26/119.63 GiB) …
    Desired GPU memory utilization is (0.92, 110.06 GiB)" (110.06 / 0.92 = 119.63); its memory is
    the CPU's too (unified), sm_121."""
    for name in ("GB10", "NVIDIA DGX Spark", "2x DGX Spark (GB10, 128 GB unified memory)"):
        g = lookup_gpu(name)
        assert g.name == "NVIDIA GB10 (DGX Spark)" and g.unified and g.compute_capability == "12.1"
        assert g.total_bytes / GIB == pytest.approx(119.63, abs=0.005)
    assert 110.06 / 0.92 == pytest.approx(119.63, abs=0.01)


def test_rtx_6000_ada_is_read_with_ecc_off_unless_named_with_ecc():
    """Two vLLM runs on RTX 6000 Ada fit the ECC-off total: a RunPod log (vLLM 0.15.1, Llama-3.1-8B
    fine-tune, 0.9) prints "VRAM: 47.4 GB" and a 26.43 GiB pool beside 14.99 GiB of weights, a 256 ×
    128,257 × 38 B = 1.16 GiB sampler and 0.15 of non-torch: (26.43 + 14.99 + 1.16 + 0.15) / 0.9 =
    47.48 GiB, where the ECC-on 44.43 GiB would leave 23.7. ECC on (nvidia-smi 46,068 MiB) is its own row."""
    assert (26.43 + 14.99 + 1.16 + 0.15) / 0.9 == pytest.approx(47.48, abs=0.01)
    g = lookup_gpu("NVIDIA RTX 6000 Ada Generation")
    assert g.total_bytes / GIB == pytest.approx(47.4, abs=0.005) and not g.unified
    ecc = lookup_gpu("RTX 6000 Ada ECC")
    assert ecc.name == "NVIDIA RTX 6000 Ada Generation (ECC on)" and ecc.total_bytes / GIB == pytest.approx(44.43, abs=0.005)


def test_a_size_written_with_g_alone_picks_the_variant():
    # Chinese-language posts write "A100 80G", "4090 24G": the A100's 80 GB card (79.15 GiB), not the
    # 40 GB one the bare alias names; a name's own letters ("A10G") are no size
    assert lookup_gpu("NVIDIA A100 80G").name == "NVIDIA A100-SXM4-80GB"
    assert lookup_gpu("8x A100 80G").total_bytes == 84_987_740_160     # the catalog's exact bytes
    assert lookup_gpu("A100 40G").name == "NVIDIA A100-SXM4-40GB"
    assert lookup_gpu("NVIDIA A10G (24 GB)").name == "NVIDIA A10G"


def test_a_ti_super_or_laptop_card_is_not_its_base_models_row():
    # "RTX 3080 Ti" holds the alias "rtx 3080", but the Ti has 12 GB to the 3080's 10: its own row
    # (11.77 GiB seen by torch), and a variant the catalog lacks is unknown rather than the base card
    assert lookup_gpu("NVIDIA GeForce RTX 3080 Ti").name == "NVIDIA GeForce RTX 3080 Ti"
    assert round(lookup_gpu("RTX 3080 Ti").total_bytes / GIB, 2) == 11.77
    assert lookup_gpu("RTX 4070 Ti SUPER").name == "NVIDIA GeForce RTX 4070 Ti SUPER"
    with pytest.raises(UnknownGpu):
        lookup_gpu("RTX 3070 Laptop")
    assert lookup_gpu("RTX 3090").name == "NVIDIA GeForce RTX 3090"


def test_a_reference_states_its_size_only_with_a_unit():
    # a bare family name leaves the size to the evidence (weights loaded, KV pool); a figure with
    # a unit settles it; a model number such as "4090" or "A100" is not a size
    assert states_its_size("A100 80GB")
    assert states_its_size("RTX 5070 Ti 16303MiB")
    assert states_its_size("H200 141 GiB")
    assert not states_its_size("A100")
    assert not states_its_size("RTX 4090")
    assert not states_its_size(None)


def test_a_bare_size_is_told_from_a_card_name():
    """The bench sizes a named card by the total vLLM printed, but not a bare size (it already is
    one): "79.25GiB", "49140MiB" and "24GB" are sizes; a name that contains its size is a card."""
    from estimator.gpus import is_size_only

    assert all(is_size_only(t) for t in ("79.25GiB", "49140MiB", "24GB", " 8 gib "))
    assert not any(is_size_only(t) for t in ("NVIDIA A100-SXM4-80GB", "RTX 4090", "24", ""))


@pytest.mark.parametrize("text", ["Intel Arc Pro B70", "2x B70", "Intel(R) Arc(TM) Pro B70 Graphics"])
def test_arc_pro_b70_is_the_total_vllm_reads_on_xpu(text):
    """vllm PR #53990 prints torch.xpu.mem_get_info's total for the 32 GB card: 30.30 GiB (not the
    32,656 MiB llama.cpp's SYCL backend lists); the B60 stays its own 22.71 GiB row."""
    g = lookup_gpu(text)
    assert g.name == "Intel Arc Pro B70" and g.total_bytes == round(30.30 * GIB)
    assert lookup_gpu("Arc Pro B60").total_bytes == round(22.71 * GIB)


def test_a_mig_slice_is_its_share_of_the_card():
    """NVIDIA's MIG profile <slices>g.<memory>gb names the slice's share of the card's memory (1g.5gb is
    1/8 of an A100-40GB), and the slice is all a process on it sees: the parent's torch total × 5/40
    (39.39 GiB → 4.92), with the parent's compute capability — not the whole 40 GB card. Without a
    parent, the profile's nominal size."""
    whole = lookup_gpu("NVIDIA A100-SXM4-40GB")
    for text in ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "A100 MIG 1g.5gb", "a100 mig-1g.5gb", "A100 40GB MIG slice 1g.5gb"):
        g = lookup_gpu(text)
        assert g.total_bytes == round(whole.total_bytes * 5 / 40), text
        assert g.compute_capability == "8.0" and "MIG 1g.5gb" in g.name and "estimate" in g.assumed
    h = lookup_gpu("NVIDIA H100 80GB HBM3 MIG 3g.40gb")
    assert h.total_bytes == round(lookup_gpu("H100 80GB HBM3").total_bytes / 2)
    alone = lookup_gpu("nvidia.com/mig-1g.5gb")
    assert 4.4 * 2**30 < alone.total_bytes < 5 * 2**30 and "unnamed card" in alone.assumed


@pytest.mark.parametrize("name,card", [
    ("A800", "NVIDIA A100-SXM4-80GB"),
    ("2x NVIDIA A800-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
    ("H800", "NVIDIA H100 SXM5 80GB (H100 80GB HBM3)"),
])
def test_another_product_sized_as_a_catalog_card_is_said(name, card):
    """gpus.csv sizes the A800 as the A100-SXM4-80GB and the H800 as the H100 SXM (the same memory):
    the estimate speaks of the catalog card, so it says which card the user's was taken for."""
    g = lookup_gpu(name)
    assert g.name == card
    assert g.assumed and "is sized as the " + card in g.assumed and name.split()[-1].upper() in g.assumed.upper()


@pytest.mark.parametrize("name", ["RTX 4090", "rtx4090", "A100", "H100", "MI300", "V100S", "p4de"])
def test_a_card_named_by_its_own_alias_gets_no_such_note(name):
    """Spellings of the card itself (a prefix, a suffix letter, an instance type) are no other product."""
    assumed = lookup_gpu(name).assumed or ""
    assert "is sized as" not in assumed


def test_cards_listed_with_a_slash_are_names_of_their_own():
    """"A100/A800 80GB": the slash lists alternatives; without it the text's "62.52 GiB" (a KV figure)
    was taken for the card's size."""
    g = lookup_gpu("4x 80GB-class NVIDIA Ampere (A100/A800 80GB) - inferred from 62.52 GiB KV per GPU")
    assert g.name == "NVIDIA A100-SXM4-80GB"


def test_a_card_name_is_told_from_a_bare_size():
    """gpus.names_a_card: a text that names a card (a catalog row, an alias in prose) versus one that
    only carries a size, which the lookup turns into a card of that size ("… GiB GPU")."""
    from estimator.gpus import names_a_card

    assert names_a_card("NVIDIA GeForce RTX 5070 Ti 16GB") and names_a_card("4x A100/A800 80GB (not named)")
    for text in ("62.52 GiB KV per GPU beside 3.74 GiB weights", "24GB", "16303MiB", "no such card"):
        assert not names_a_card(text), text


def test_rtx_a5000_is_sized_as_observed():
    """nvidia-smi prints 24,564 MiB for an RTX A5000 (vllm#22177's 8-card box) and PyTorch's OOM message
    'GPU 0 has a total capacity of 23.68 GiB' (a public A5000 report): no longer the marketed 24 GB less
    the usual reservation (23.53 GiB), which sized vllm#22177's budget 0.13 GiB short."""
    g = lookup_gpu("RTX A5000")
    assert round(g.total_bytes / GIB, 2) == 23.68 and not g.assumed
    # the same nvidia-smi figure as an RTX 4090's: a size alone names both cards
    assert "NVIDIA RTX A5000" in lookup_gpu("24564MiB").assumed


# ------------------------------------------------------------------------------------------------
# A Windows host (WSL2 or native): the WDDM driver reports the card's whole memory to CUDA
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,mib", [
    ("RTX 4080 (WSL2)", 16376),                     # nvidia-smi's 16,376 MiB; vLLM printed 15.99 GiB under WSL2
    ("NVIDIA GeForce RTX 4080 on WSL", 16376),
    ("RTX 3090 on Windows 11", 24576),              # native Windows logs print 24.0 GiB
    ("rtx 3090, native windows", 24576),
    ("4060 under WSL", 8 * 1024),                   # no smi figure in the catalog: its 8 GB as binary MiB
    ("16376MiB (WSL2)", 16376),                     # nvidia-smi's MiB is the total itself there
    ("6GB (WSL2)", 6 * 1024),                       # an RTX 3050 6GB Laptop under WSL2 printed 6.00 GiB
])
def test_a_windows_host_reports_the_whole_card(text, mib):
    g = lookup_gpu(text)
    assert g.total_bytes == mib * MIB
    assert "WDDM" in (g.assumed or "")


def test_the_same_cards_on_linux_keep_the_drivers_reservation():
    assert lookup_gpu("RTX 4080").total_bytes == round(15.60 * GIB)     # the 4070 Ti SUPER's observed total
    assert lookup_gpu("RTX 3090").total_bytes == round(23.69 * GIB)
    assert lookup_gpu("16376MiB").total_bytes == round(15.60 * GIB)


def test_a_total_as_torch_reports_it_and_unified_boards_are_left_alone():
    assert lookup_gpu("15.99GiB (WSL2)").total_bytes == round(15.99 * GIB)
    assert lookup_gpu("Jetson AGX Orin (WSL)").total_bytes == lookup_gpu("Jetson AGX Orin").total_bytes


def test_with_host_marks_card_names_and_smi_sizes_not_printed_totals():
    from estimator.gpus import with_host

    assert with_host("RTX 4080", "wsl") == "RTX 4080 (WSL2)"
    assert with_host("RTX 3090", "windows") == "RTX 3090 (Windows)"
    assert with_host("RTX 5070 Ti + RTX 5090", "wsl") == "RTX 5070 Ti (WSL2) + RTX 5090 (WSL2)"
    assert with_host("16376MiB", "wsl") == "16376MiB (WSL2)"
    assert with_host("15.99GiB", "wsl") == "15.99GiB"                # vLLM's own figure already
    assert with_host("RTX 4080 (WSL2)", "wsl") == "RTX 4080 (WSL2)"
    assert with_host("RTX 4080", None) == "RTX 4080"


@pytest.mark.parametrize("text,count", [
    ("2x L40S", 2), ("8 × H100", 8), ("4xA100-80GB", 4), ("A6000 x 4", 4), ("RTX 3090 ×2", 2),
    ("L40S", None), ("RTX 4090", None),
    ("RX 6800", None),                       # a model number after "RX" is no count
    ("Radeon RX 7900 XTX", None),
    ("0x H100", None),                       # no cards is no count
    ("RTX 5070 Ti + RTX 5090", None),        # several different cards: counted by the caller
    ("", None), (None, None),
])
def test_card_count_reads_a_count_written_with_the_name(text, count):
    assert card_count(text) == count


def test_a_counted_card_is_still_looked_up_by_its_name():
    assert lookup_gpu("2x L40S").name == lookup_gpu("L40S").name


def test_sized_gpu_only_where_the_name_fixes_the_size():
    """"A100" is a 40 or an 80 GB card, "H100" an 80 GB or a 94 GB NVL, "Jetson Orin" 8 to 64 GB: a size
    for arithmetic on vLLM's figures is only taken from a name that states it or a family of one size."""
    from estimator.gpus import sized_gpu

    assert sized_gpu("A100") is None and sized_gpu("H100") is None and sized_gpu("Jetson Orin") is None
    assert sized_gpu("A100 80GB").total_bytes == lookup_gpu("A100 80GB").total_bytes > 79 * 2**30
    assert sized_gpu("RTX 4090").total_bytes == 25_383_256_719
    assert sized_gpu("no such card") is None and sized_gpu(None) is None


@pytest.mark.parametrize("name", ["910B", "Ascend 910B3", "Atlas 800I A2", "910C"])
def test_ascend_npus(name):
    """Huawei's 910B (A2) and 910C (A3, per die) NPUs, which vLLM runs through vllm-ascend: 64 GB of HBM
    (npu-smi 65536 MB), 61.27 GiB as vllm-ascend prints it ("Free memory on device (60.86/61.27 GiB)",
    vllm-ascend PR #8289). "910B" is no size of 910 bytes."""
    g = lookup_gpu(name)
    assert g.vendor == "Huawei" and round(g.total_bytes / 2**30, 2) == 61.27
    assert lookup_gpu("85017755648B").total_bytes == 85017755648     # a byte count still is one
