"""GPU catalog: what torch.cuda.mem_get_info()[1] reports for a card, found from what users type.

Why torch's figure: vLLM budgets `total_gpu_memory × gpu_memory_utilization` with the total that
torch reports (vllm/v1/worker/gpu_worker.py, `torch.cuda.mem_get_info`), which is below the
marketing size and below nvidia-smi's MiB. The catalog (`estimator/data/gpus.csv`, a copy of
`../shared/data/gpus.csv`) keeps the observed torch totals; where only nvidia-smi's MiB or the
marketed size is known, the torch-visible total is derived and the Gpu says so in `assumed`.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import regex

from estimator.errors import KvdoctorError, UnknownGpu
from estimator.paste_text import budget

GIB = 2**30
MIB = 2**20

# nvidia-smi total − torch total, in MiB: the median over the 25 catalog rows that have both
# figures (256–869 MiB; 480.5 median; the RTX 6000 Ada row was left out: the shared catalog's torch
# figure is an ECC-on observation against an ECC-off smi figure). Driver/context reservation.
SMI_RESERVED_MIB = 480


# Wall-clock limit of a regex over a GPU reference. lookup_gpu takes names of at most 200 characters; the
# paste reader's calls (mig_profile) get what is left of the paste's deadline, scaled by its load
# (paste_text.budget). 0.1 s without that scaling timed out on a 9-character name when four bot
# threads shared a 2-core CI machine, and the post was left unanswered as an estimator error.
_TIMEOUT = 1.0

@dataclass(frozen=True)
class Gpu:
    name: str
    total_bytes: int
    compute_capability: str | None
    bf16: bool
    fp8: bool
    assumed: str | None = None  # a sentence when the size was nominal, derived or assumed
    unified: bool = False       # the CPU and the OS use the same memory (Jetson): vLLM's budget is their RAM
    vendor: str = ""            # the catalog row's ("NVIDIA", "AMD", "Intel"); "" for a size alone
    # the product the user named where the catalog sizes it as this card (an A800 as the A100-SXM4-80GB):
    # vLLM's checks of the device name ("a100", "h100", "gb10") see that product, not the catalog's card
    product: str = ""

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB


@dataclass(frozen=True)
class _Row:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    marketed_gb: float | None
    smi_mib: int | None
    torch_bytes: int | None
    cc: str | None
    bf16: bool
    fp8: bool
    unified: bool = False


def _norm(s: str) -> str:
    s = s.lower().replace("_", " ").replace("-", " ").replace("(", " ").replace(")", " ").replace(",", " ")
    return " ".join(s.split())


_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "quadro", "amd", "radeon", "instinct", "intel", "gpu", "google"}


def _strip_vendor(s: str) -> str:
    return " ".join(w for w in s.split() if w not in _VENDOR_WORDS)


def _num(v: str) -> float | None:
    try:
        return float(v) if v.strip() else None
    except ValueError:
        return None


@lru_cache(maxsize=1)
def _rows() -> tuple[_Row, ...]:
    text = resources.files("estimator").joinpath("data/gpus.csv").read_text(encoding="utf-8")
    out = []
    for r in csv.DictReader(io.StringIO(text)):
        tb = _num(r.get("torch_total_bytes", ""))
        tg = _num(r.get("torch_total_gib", ""))
        torch_bytes = int(tb) if tb else (round(tg * GIB) if tg else None)
        smi = _num(r.get("nvidia_smi_total_mib", ""))
        out.append(_Row(
            name=r["canonical_name"].strip(),
            aliases=tuple(a.strip() for a in r.get("aliases", "").split(";") if a.strip()),
            vendor=r.get("vendor", "").strip(),
            marketed_gb=_num(r.get("marketed_memory_gb", "")),
            smi_mib=int(smi) if smi else None,
            torch_bytes=torch_bytes,
            cc=(r.get("compute_capability") or "").strip() or None,
            bf16=r.get("bf16", "").strip().lower() == "yes",
            fp8=r.get("fp8", "").strip().lower() == "yes",
            # the catalog's notes open with "Unified …" for boards whose one memory the CPU and GPU
            # share (Jetson, Apple); GH200's note only mentions the Grace memory beside its own HBM
            unified=(r.get("notes") or "").strip().lower().startswith("unified"),
        ))
    return tuple(out)


# Words that name no card once a vendor is stripped from an alias ("intel gpu max" → "max"): "Pro Max",
# "Max-Q" and "max_model_len" are everywhere in pastes.
_GENERIC_KEYS = {"max", "pro", "gpu", "ultra", "plus", "super", "mini", "data center", "workstation"}


@lru_cache(maxsize=1)
def _index() -> dict[str, _Row]:
    return {k: row for k, (row, _spelled) in _keys().items()}


@lru_cache(maxsize=1)
def _keys() -> dict[str, tuple[_Row, str]]:
    """Every lookup key (a name or alias normalised, with and without vendor words and spaces) → its
    row and the catalog's own spelling of it ("a800-sxm4-80gb"), which a reply quotes."""
    keys: dict[str, tuple[_Row, str]] = {}
    for row in _rows():
        for key in (row.name, *row.aliases):
            for k in (_norm(key), _strip_vendor(_norm(key))):
                if k and k not in _GENERIC_KEYS:
                    keys.setdefault(k, (row, key))
                    keys.setdefault(k.replace(" ", ""), (row, key))
    return keys


def _to_gpu(row: _Row) -> Gpu:
    """Torch-visible total: observed if the catalog has it, else derived from nvidia-smi or the marketed size."""
    assumed = None
    if row.torch_bytes:
        total = row.torch_bytes
    elif row.smi_mib and (twin := next((r for r in _rows() if r.smi_mib == row.smi_mib and r.torch_bytes
                                        and (r.vendor, r.cc) == (row.vendor, row.cc)), None)):
        # the same nvidia-smi total as a card of the same architecture whose torch total was
        # observed: the same board memory and driver reservation (H100 PCIe / SXM, RTX 5070 Ti / 5080)
        total = twin.torch_bytes
        assumed = (f"torch-visible memory of the {row.name} not observed; nvidia-smi shows {row.smi_mib:,} MiB, "
                   f"as for the {twin.name}, whose torch total is {total / GIB:.2f} GiB")
    elif row.smi_mib:
        total = (row.smi_mib - SMI_RESERVED_MIB) * MIB
        assumed = (f"torch-visible memory of the {row.name} not observed; derived from nvidia-smi's "
                   f"{row.smi_mib:,} MiB minus the usual ~{SMI_RESERVED_MIB} MiB reservation = {total / GIB:.2f} GiB")
    elif row.marketed_gb:
        total = int(row.marketed_gb * 1024 - SMI_RESERVED_MIB) * MIB
        assumed = (f"only the marketed size of the {row.name} is known ({row.marketed_gb:g} GB); assumed "
                   f"{row.marketed_gb:g} GiB minus ~{SMI_RESERVED_MIB} MiB reservation = {total / GIB:.2f} GiB")
    else:
        raise UnknownGpu(f"{row.name} has no fixed memory size (unified memory); give the size, e.g. --gpu 64GB")
    return Gpu(row.name, total, row.cc, row.bf16, row.fp8, assumed, row.unified, row.vendor)


_SIZE = regex.compile(r"^\s*(\d+(?:\.\d+)?)\s*(gib|gb|g|mib|mb|m|tib|tb|t|b|bytes)?\s*$", regex.IGNORECASE)


@lru_cache(maxsize=1)
def _catalog() -> tuple[tuple[_Row, Gpu], ...]:
    """Every catalog row with a fixed memory size, as a Gpu (converted once: searches by size or
    family go through all of them)."""
    out = []
    for r in _rows():
        try:
            out.append((r, _to_gpu(r)))
        except UnknownGpu:
            continue
    return tuple(out)


# the names _parse_size, _from_smi_mib and _from_nominal_gb give a card known only by its size
_SIZE_NAME = regex.compile(r"[\d.,]+ (?:GiB|TiB|GB|MiB|B) GPU")


def names_a_card(text: str) -> bool:
    """Does `text` name a card (a catalog row or an alias in it), not only a memory size ("62.52 GiB
    KV per GPU" reads as a 62.52 GiB card)?"""
    try:
        return not _SIZE_NAME.fullmatch(lookup_gpu(text).name)
    except UnknownGpu:
        return False


# The catalog's cards that come on NVSwitch baseboards (HGX / DGX: every GPU linked to every other):
# SXM modules, and the rows whose catalog name is the SXM part (H200, H20, B200, GB200, B300). Their
# PCIe and NVL versions (pairs or fours over bridges) are rows of their own (H100 PCIe, H100 NVL) —
# except the H200 NVL, which the catalog reads as the H200. A MIG slice is no board's GPU.
_NVSWITCH_NAME = regex.compile(r"\bSXM\d?\b|^NVIDIA (?:H200|H20|B200|GB200|B300)\b")


def on_nvswitch_board(name: str) -> bool:
    """Is the card (a catalog name, as `lookup_gpu` gives it) one that sits on an NVSwitch board?
    Why: NCCL's buffers under tensor parallelism follow the links between the GPUs (non_torch.non_torch)."""
    return bool(_NVSWITCH_NAME.search(name or "")) and "MIG" not in name    # a short catalog name, not user text


def is_size_only(text: str) -> bool:
    """Is `text` a bare memory size ("79.25GiB", "49140MiB", "24GB"), not a card's name?"""
    try:
        m = _SIZE.match(text or "", timeout=budget(_TIMEOUT))
    except TimeoutError:
        return False
    return bool(m and m.group(2))


def _parse_size(text: str) -> Gpu | None:
    try:
        m = _SIZE.match(text, timeout=budget(_TIMEOUT))
    except TimeoutError:
        return None
    if not m or not m.group(2):
        return None
    x, unit = float(m.group(1)), m.group(2).lower()
    if x <= 0:
        raise UnknownGpu(f"GPU memory size must be positive, got {text.strip()!r}")
    if unit in ("gib", "tib"):
        total = round(x * (GIB if unit == "gib" else 1024 * GIB))
        return Gpu(f"{x:g} {unit.replace('ib', 'iB').upper().replace('IB', 'iB')} GPU", total, None, True, False, None)
    if unit in ("b", "bytes"):
        # a byte count is a card's only from a gigabyte up: "910B" is Huawei's NPU, not 910 bytes
        return Gpu(f"{int(x):,} B GPU", int(x), None, True, False, None) if x >= GIB else None
    if unit in ("mib", "mb", "m"):
        return _from_smi_mib(int(x))
    # GB / G / TB: a nominal (marketing / decimal) size.
    gb = x * (1000 if unit in ("tb", "t") else 1)
    return _from_nominal_gb(gb)


def _from_smi_mib(mib: int) -> Gpu:
    """A MiB figure is what nvidia-smi prints: map to the card that shows it, else subtract the reservation."""
    # a unified-memory board (Jetson) is never named by a bare size: its advice is its own
    cands = [r for r in _rows() if r.smi_mib == mib and r.torch_bytes and not r.unified]
    totals = sorted({r.torch_bytes for r in cands})
    if cands and totals[-1] - totals[0] <= 0.01 * totals[-1]:
        r = min(cands, key=lambda r: r.torch_bytes or 0)
        g = _to_gpu(r)
        names = ", ".join(c.name for c in cands)
        return Gpu(f"{mib:,} MiB GPU", g.total_bytes, g.compute_capability, g.bf16, g.fp8,
                   f"{mib:,} MiB is what nvidia-smi shows for {names}; used its torch-visible total "
                   f"{g.total_bytes / GIB:.2f} GiB")
    total = (mib - SMI_RESERVED_MIB) * MIB
    extra = f" (cards showing {mib:,} MiB: {', '.join(c.name for c in cands)})" if cands else ""
    return Gpu(f"{mib:,} MiB GPU", total, None, True, False,
               f"{mib:,} MiB read as nvidia-smi's total; torch sees about {SMI_RESERVED_MIB} MiB less = "
               f"{total / GIB:.2f} GiB{extra}")


def _from_nominal_gb(gb: float) -> Gpu:
    """"24GB": what the catalog's cards marketed at that size show to torch.

    Why not 24 × 10^9 bytes: cards carry binary-sized memory (a "24 GB" card has 24 GiB of chips;
    ECC and the driver's reservation take some back), so the decimal reading falls below every real
    card of the size (24GB: 21.88 GiB against 21.99–23.98; 32GB: 29.33 against 31.37–31.74). Where
    the catalog's cards agree within 1% their total is used; where they differ (ECC data-centre
    cards against GeForce), the middle one's (the lower of two middles), with the range said; with
    no card of that size, the binary size less the usual reservation."""
    # a row whose torch total is a fraction of its marketed size describes one die of a multi-die
    # board (MI250X "per GCD": 64 GiB of a 128 GB card) — not what a bare "128GB" means
    gpus = sorted((g for r, g in _catalog() if r.marketed_gb == gb and r.vendor in ("NVIDIA", "AMD")
                   and not r.unified and g.total_bytes >= 0.8 * gb * GIB), key=lambda g: g.total_bytes)
    if gpus:
        lo, hi = gpus[0].total_bytes, gpus[-1].total_bytes
        names = ", ".join(x.name for x in gpus)
        if hi - lo <= 0.01 * hi:
            g = gpus[0]
            return Gpu(f"{gb:g} GB GPU", g.total_bytes, g.compute_capability, g.bf16, g.fp8,
                       f"{gb:g}GB is a nominal size; catalog cards of that size ({names}) show "
                       + (f"{lo / GIB:.2f} GiB" if lo == hi else f"{lo / GIB:.2f}–{hi / GIB:.2f} GiB")
                       + f" to torch; used {g.total_bytes / GIB:.2f} GiB")
        mid = gpus[(len(gpus) - 1) // 2]
        listed = "; ".join(f"{g.name} {g.total_bytes / GIB:.2f} GiB" for g in gpus)
        return Gpu(f"{gb:g} GB GPU", mid.total_bytes, None, True, False,
                   f"{gb:g}GB is a nominal size and cards sold as {gb:g}GB differ ({listed}); used the middle "
                   f"one, {mid.total_bytes / GIB:.2f} GiB — name the card for an exact figure")
    if gb != int(gb):
        # "49.1 GB": a figure someone read off a tool, not a size cards are sold in — decimal bytes
        total = int(gb * 1e9) - SMI_RESERVED_MIB * MIB
        return Gpu(f"{gb:g} GB GPU", total, None, True, False,
                   f"{gb:g}GB read as {gb:g} × 10^9 bytes minus the usual ~{SMI_RESERVED_MIB} MiB reservation = "
                   f"{total / GIB:.2f} GiB")
    total = int(gb * GIB) - SMI_RESERVED_MIB * MIB
    return Gpu(f"{gb:g} GB GPU", total, None, True, False,
               f"{gb:g}GB read as {gb:g} GiB of memory chips minus the usual ~{SMI_RESERVED_MIB} MiB reservation = "
               f"{total / GIB:.2f} GiB (no catalog card of that size; name the card for an exact figure)")


# "RTX 4090 48GB", "16303MiB": a GPU reference that states its size
_SIZE_IN_TEXT = regex.compile(r"(?i)\d\s*(?:GB|GiB|MiB)\b")


def states_its_size(ref: str | None) -> bool:
    """Whether a GPU reference says how big the card is ("A100 80GB", "16303MiB"): only then is a
    family's size left to the evidence (weights loaded, KV pool) when it is not."""
    return bool(ref) and _SIZE_IN_TEXT.search(str(ref)) is not None


# A MIG slice of a card (NVIDIA's Multi-Instance GPU): nvidia-smi and CUDA call it "NVIDIA
# A100-SXM4-40GB MIG 1g.5gb", Kubernetes "nvidia.com/mig-1g.5gb", GKE "gpu-partition-size=1g.5gb". The
# profile <compute slices>g.<memory>gb names its share of the card's memory (the MIG user guide's
# "Fraction of Memory": 1g.5gb is 1/8 of an A100-40GB), and the slice is all a process on it sees.
MIG_PROFILE = regex.compile(r"(?i)(?:\bMIG[ -]?(?:(?:slice|instance|partition)[ ]+)?|\bmig-|partition-size[= ]+)"
                            r"(?P<profile>[1-7]g\.(?P<gb>\d{1,3})gb)\b")


def mig_profile(text: str):
    """The MIG profile a text names (a match: `profile` "1g.5gb", `gb` its memory), or None."""
    try:
        return MIG_PROFILE.search(text, timeout=budget(_TIMEOUT))
    except TimeoutError:
        return None


def _mig_slice(text: str, m) -> Gpu:
    """The slice as vLLM sees it: the parent card's torch total × the profile's share of its marketed
    memory (1g.5gb of an A100-40GB: 39.39 × 5/40 = 4.92 GiB; a published torch figure for that slice is
    4.75 GiB), said as an estimate; the parent's compute capability and formats. Without a parent named,
    the profile's nominal size."""
    profile, gb = m.group("profile").lower(), int(m.group("gb"))
    rest = (text[:m.start()] + " " + text[m.end():]).strip(" ,")
    try:
        parent = lookup_gpu(rest) if rest else None
    except UnknownGpu:
        parent = None
    row = _index().get(_norm(parent.name)) if parent is not None else None
    if parent is None or row is None or not row.marketed_gb or gb > row.marketed_gb:
        g = _from_nominal_gb(gb)
        return dataclasses.replace(g, name=f"MIG {profile} slice",
                                   assumed=f"a MIG {profile} slice of an unnamed card: {gb} GB nominal ({g.assumed})")
    total = round(parent.total_bytes * gb / row.marketed_gb)
    return dataclasses.replace(
        parent, name=f"{parent.name} MIG {profile}", total_bytes=total,
        assumed=(f"a MIG {profile} slice of the {parent.name}: {gb} of its {row.marketed_gb:g} GB, about "
                 f"{total / GIB:.2f} GiB as torch reports it (an estimate: paste the memory nvidia-smi or torch "
                 "shows for the slice)"))


# A Windows host, native or WSL2, named beside the card ("RTX 4080 (WSL2)", "RTX 3090 on Windows 11").
# There the NVIDIA driver runs in WDDM mode and reports the card's whole memory to CUDA:
# cudaMemGetInfo's total, which torch and vLLM print, is nvidia-smi's MiB figure, where the Linux
# driver keeps 350–500 MiB back (SMI_RESERVED_MIB). Evidence, every one the smi figure ÷ 1024:
# vLLM's own totals — RTX 4080 under WSL2 15.99 GiB (16,376 MiB; an 0.10.2 and an 0.26.0 log, against
# 15.60 for the 4070 Ti SUPER's 16,376 MiB on Linux), an RTX 3050 6GB Laptop under WSL2 6.00, two
# RTX 3090 on native Windows 24.0 (collected-2026-12.jsonl), vllm#13882's RTX 4060 under WSL 8.00 —
# and Windows torch OOM messages in the catalog's notes (RTX 4070 SUPER 11.99, 4080 SUPER 15.99,
# TITAN RTX 24.00, V100 16.00).
_WINDOWS_HOST = regex.compile(r"(?i)(?<![\w-])(?:wsl2?|(?:native\s+)?windows(?:\s+1[01])?|win1[01])(?![\w-])")
_SIZED_NAME = regex.compile(r"(\d[\d,]*(?:\.\d+)?) (GB|MiB) GPU")
_HOST_LEFTOVER = regex.compile(r"(?i)(?:\(\s*[,;]?\s*\)|\s(?:on|under|in|via)\s*(?=$|[,;)]))")


# What a reply calls the two hosts ("wsl" / "windows", paste.py's extra["windows_host"]), and who
# holds the rest of a card there: nvidia-smi inside WSL lists no processes (microsoft/WSL#7162)
HOST_LABELS = {"wsl": "WSL2", "windows": "Windows"}
WINDOWS_HOLDERS = ("Windows' own programs (the desktop, a browser, games): nvidia-smi inside WSL does not list "
                   "them, Task Manager does")


# ... and what Windows' own programs take or give back while vLLM profiles lands in its non-torch
# figure, which no estimate can foresee: WSL2 logs print −1.25 GiB (an RTX 4080, vLLM 0.10.2) and
# −0.51 GiB (an RTX 3050 6GB Laptop, 0.7.3) (collected-2026-12.jsonl)
_WDDM_NOISE = ("; Windows' own programs share the card, and what they take or give back while vLLM "
               "profiles shows in its non-torch figure (WSL2 logs print −1.25 and −0.51 GiB)")


def windows_total(gpu: Gpu) -> Gpu:
    """`gpu` as a Windows host (native or WSL2) sees it: nvidia-smi's whole MiB figure as the total
    (see _WINDOWS_HOST); a card known only by nvidia-smi's MiB or a marketed size, that size. A
    total as torch reports it (GiB) and a card the catalog does not list are unchanged: the first
    is already what CUDA said, and the second has no figure to go by."""
    row = next((r for r in _rows() if r.name == gpu.name), None)
    sized = _SIZED_NAME.fullmatch(gpu.name) if row is None else None
    if sized is not None:
        # a card known only by a size: nvidia-smi's MiB ("16,376 MiB GPU", _from_smi_mib) is the total
        # itself; a marketed size ("6 GB GPU", _from_nominal_gb) is its chips' binary size (an RTX 3050
        # 6GB Laptop under WSL2 printed 6.00 GiB)
        x = float(sized.group(1).replace(",", ""))
        mib = int(x if sized.group(2) == "MiB" else x * 1024)
        return dataclasses.replace(gpu, total_bytes=mib * MIB, assumed=(
            f"{sized.group(0).removesuffix(' GPU')} under WSL2/Windows: the NVIDIA driver (WDDM) reports the "
            f"card's whole memory to CUDA, {mib:,} MiB = {mib * MIB / GIB:.2f} GiB" + _WDDM_NOISE))
    if row is None or row.unified or row.vendor != "NVIDIA" or not (row.smi_mib or row.marketed_gb):
        return gpu
    mib = row.smi_mib or int(row.marketed_gb * 1024)
    source = ("nvidia-smi's figure" if row.smi_mib else
              f"its marketed {row.marketed_gb:g} GB as binary MiB; nvidia-smi's figure is not in the catalog")
    said = (f"under WSL2/Windows the NVIDIA driver (WDDM) reports the card's whole memory to CUDA: "
            f"{mib:,} MiB ({source}) = {mib * MIB / GIB:.2f} GiB, where a Linux driver leaves torch "
            f"{gpu.total_bytes / GIB:.2f} GiB" + (" (that figure itself derived)" if gpu.assumed and not gpu.product else "")
            + _WDDM_NOISE)
    return dataclasses.replace(gpu, total_bytes=mib * MIB, assumed=said)


def with_host(ref: str | None, host: str | None) -> str | None:
    """A card reference with the Windows host a paste shows ("wsl" / "windows", paste.py) written
    beside it, for lookup_gpu; a total as torch reports it (GiB, bytes), or a reference that already
    says its host, is left."""
    if not ref or host not in HOST_LABELS or _WINDOWS_HOST.search(ref, timeout=budget(_TIMEOUT)):
        return ref
    m = _SIZE.match(ref, timeout=budget(_TIMEOUT))
    if m and (m.group(2) or "").lower() in ("gib", "tib", "b", "bytes"):
        return ref
    label = HOST_LABELS[host]
    # mixed cards, one per pipeline stage ("RTX 5070 Ti + RTX 5090"): each on the same host
    return " + ".join(f"{card.strip()} ({label})" for card in ref.split("+"))


def find_gpu(text: str | None) -> Gpu | None:
    """lookup_gpu, or None where the text names no card the catalog knows: for the callers to whom a card
    is an extra (a size for a budget, a unified board's caveat), not what they were asked about."""
    try:
        return lookup_gpu(str(text)) if text else None
    except KvdoctorError:
        return None


def sized_gpu(text: str | None) -> Gpu | None:
    """find_gpu where the name fixes the card's size: it states it ("A100 80GB") or every card of its
    family holds the same (within 1%: "RTX 4090"); not "A100" (40 or 80 GB), "H100" (80 or 94 GB) or
    "Jetson Orin" (8 to 64 GB). For arithmetic on vLLM's printed figures without a model to check the
    size against, where a guessed size would change the figures themselves."""
    gpu = find_gpu(text)
    if gpu is None or states_its_size(text):
        return gpu
    sizes = [g.total_bytes for g in family_variants(gpu.name)] or [gpu.total_bytes]
    return gpu if max(sizes) <= 1.01 * min(sizes) else None


def lookup_gpu(text: str) -> Gpu:
    """A GPU from a name/alias ("RTX A6000", "a100-80gb", "4090") or a size ("47.54GiB", "24GB", "81559MiB"),
    or a MIG slice of one ("A100-SXM4-40GB MIG 1g.5gb"); a Windows host beside the name ("RTX 4080
    (WSL2)") gives the total that host reports (windows_total)."""
    if not isinstance(text, str) or not text.strip():
        raise UnknownGpu("no GPU given; name one (e.g. \"RTX A6000\") or give its memory (e.g. 47.54GiB)")
    if len(text) > 200:
        raise UnknownGpu("GPU name too long; name the card (e.g. \"H100 SXM\") or give its memory (e.g. 80GB)")
    try:
        host = _WINDOWS_HOST.search(text, timeout=budget(_TIMEOUT))
    except TimeoutError:
        host = None
    if host is not None:
        rest = _HOST_LEFTOVER.sub(" ", _WINDOWS_HOST.sub(" ", text, timeout=budget(_TIMEOUT)), timeout=budget(_TIMEOUT))
        rest = regex.sub(r"\s+", " ", rest).strip(" ,;")
        if rest:
            return windows_total(lookup_gpu(rest))
    mig = mig_profile(text)
    if mig is not None:
        return _mig_slice(text, mig)
    size = _parse_size(text)
    if size is not None:
        return size
    idx = _index()
    key = _norm(text)
    for k in (key, _strip_vendor(key), key.replace(" ", ""), _strip_vendor(key).replace(" ", "")):
        if k in idx:
            return _as_named(_to_gpu(idx[k]), k, text.strip())
    # "NVIDIA A100-SXM4-80GB, 81920 MiB" style lines: try the text before a comma.
    if "," in text:
        try:
            return lookup_gpu(text.split(",")[0])
        except UnknownGpu:
            pass
    found = _alias_in_text(key)
    if found is not None:
        return found
    close = difflib.get_close_matches(_strip_vendor(key), list(dict.fromkeys(
        k for k in idx if " " in k or len(k) > 4)), n=3, cutoff=0.6)
    names = list(dict.fromkeys(idx[c].name for c in close))
    hint = f"; did you mean {', '.join(names)}?" if names else ""
    raise UnknownGpu(f"unknown GPU {text.strip()[:60]!r}{hint} (or give its memory, e.g. 24GB or 47.54GiB)")


def _model_token(name: str) -> str:
    """A card's model number without a series prefix written into it ("rtx4090" → "4090")."""
    return regex.sub(r"^(?:rtx|gtx)", "", family(name))


def _as_named(gpu: Gpu, alias: str, said: str) -> Gpu:
    """`gpu` looked up by `alias`; where the alias is another product the catalog sizes as this card
    (an A800 as the A100-SXM4-80GB, an H800 as the H100 SXM, an MI300 as the MI300X), the reply says
    so: a user who named an A800 should not wonder why kvdoctor speaks of an A100."""
    named, own = _model_token(alias), _model_token(gpu.name)
    words = set(regex.split(r"[\s\-_/()]+", gpu.name.lower()))
    if not named or not regex.fullmatch(r"[a-z]{0,3}\d{2,4}[a-z]?", named) or named in words \
            or named.startswith(own) or own.startswith(named):
        return gpu
    return dataclasses.replace(gpu, product=said, assumed=gpu.assumed or (
        f"the {said} is sized as the {gpu.name} (the catalog's card of the same memory)"))


def _family_row_of_size(row: _Row, stated_gb: float) -> _Row | None:
    """The catalog card of `row`'s family marketed at `stated_gb` (within 5%), the first listed on
    a tie (the SXM card before its PCIe twin, as the bare alias goes to the first)."""
    fam = family(row.name)
    near = [r for r in _rows() if r is not row and r.marketed_gb and family(r.name) == fam
            and abs(r.marketed_gb - stated_gb) / stated_gb <= 0.05]
    return min(near, key=lambda r: abs(r.marketed_gb - stated_gb)) if near else None


_COUNT_PREFIX = regex.compile(r"^\s*(\d{1,4})\s*[x×]\s*")
# "A6000 x 4", "L40S ×2": a count after the name needs its own word ("RX 6800" is a model number)
_COUNT_SUFFIX = regex.compile(r"\s[x×]\s*(\d{1,4})\s*$")


def card_count(text: str | None) -> int | None:
    """How many cards a GPU argument names ("2x L40S", "8 × H100", "A6000 x 4"); None where it names
    one card, or several different ones ("RTX 5070 Ti + RTX 5090", counted by the caller). Why: the
    advice offers tensor parallelism within the GPUs the user has, and a count in the name is that."""
    if not isinstance(text, str) or "+" in text or len(text) > 200:
        return None
    m = _COUNT_PREFIX.match(text) or _COUNT_SUFFIX.search(text)
    n = int(m.group(1)) if m else 0
    return n or None


# Words that make another product of a model number: a Ti / SUPER / D / Laptop card is not its base
# card (often other memory: 3080 Ti 12 GB against 10, 3060 Ti 8 against 12, 4090 Laptop 16 against 24)
_VARIANT_WORDS = "ti|super|d|laptop|mobile|max-q|xt|xtx"
_VARIANT_AFTER = regex.compile(r" (?:" + _VARIANT_WORDS + r")\b")
# ... and the generation words that tell cards of one model number apart (Quadro RTX 6000, RTX 6000 Ada)
_PRODUCT_MARKS = regex.compile(r"(?<![\w-])(?:" + _VARIANT_WORDS + r"|ada|blackwell|quadro|titan)(?![\w-])")
_REPORTED = regex.compile(r"(\d+(?:\.\d+)?)\s*gib\b")
_SMI = regex.compile(r"(?<![\d.])(\d{4,6})\s*mib\b")
# "80GB", and "80G" as Chinese-language posts write it ("A100 80G", "4090 24G")
_NOMINAL = regex.compile(r"(?|(?<![\d.])(\d{1,3}(?:\.\d+)?)\s*gb\b|(?<![\w.])(\d{2,3})\s*g\b)")


def _alias_in_text(key: str) -> Gpu | None:
    """A known card named inside longer text ("2x NVIDIA RTX 3090 24GB", "H20 (95 GiB reported)").

    The longest alias found as whole words wins (so "h100 nvl" beats "h100"); with none, a
    "NN GiB" figure in the text is taken as the torch-reported size.
    """
    # "A100/A800 80GB": a slash lists alternatives, each a name of its own
    text = " " + _COUNT_PREFIX.sub("", key).replace("(", " ").replace(")", " ").replace(";", " ").replace("/", " ") + " "
    best: tuple[int, _Row, str] | None = None
    for alias, row in _index().items():
        if len(alias) < 3 or alias.isdigit() and len(alias) < 4:
            continue
        at = text.find(f" {alias} ")
        if at < 0 or (best is not None and len(alias) <= best[0]):
            continue
        if _VARIANT_AFTER.match(text, at + len(alias) + 1):     # "rtx 3080 ti" is not the "rtx 3080" row
            continue
        best = (len(alias), row, alias)
    if best is not None:
        _n, row, key = best
        gpu = _to_gpu(row)
        alias = _keys()[key][1]
        m = _NOMINAL.search(text, timeout=budget(_TIMEOUT))
        stated = float(m.group(1)) if m else None
        if stated and row.marketed_gb and abs(stated - row.marketed_gb) / row.marketed_gb > 0.25:
            sibling = _family_row_of_size(row, stated)
            if sibling is not None:
                # "A100 (numbers imply 80GB)": the family's own card of that size, with the total
                # torch reports for it, not the 40 GB card's total plus 40 GiB
                return dataclasses.replace(_to_gpu(sibling), assumed=f"read the GPU as {sibling.name} from the "
                                           f"text ({row.name.replace('NVIDIA ', '')} family, {stated:g} GB)")
            # A variant the catalog does not list (a 48 GB modded 4090, the 141 GB H20): the stated
            # size wins; the name still gives compute capability and dtype support. Memory comes in
            # binary sizes (a "24 GB" card carries 24 GiB of chips) and the driver's reservation
            # does not grow with it, so the difference is added in GiB: 4090 23.64 + 24 = 47.64 GiB
            # (a modded 48 GB card shows 49,140 MiB = 47.99 GiB in nvidia-smi, qevos).
            total = int(gpu.total_bytes + (stated - row.marketed_gb) * GIB)
            return dataclasses.replace(
                gpu, name=f"{row.name} ({stated:g} GB variant)", total_bytes=total,
                assumed=f"{row.name} with {stated:g} GB as stated (the catalog's card has {row.marketed_gb:g} GB): "
                        f"its torch-visible memory {gpu.total_bytes / GIB:.2f} GiB + {stated - row.marketed_gb:g} GiB "
                        f"= {total / GIB:.2f} GiB")
        other = _as_named(gpu, alias, alias.upper())
        return other if other is not gpu else \
            dataclasses.replace(gpu, assumed=gpu.assumed or f"read the GPU as {gpu.name} from the text")
    m = _REPORTED.search(text, timeout=budget(_TIMEOUT))
    if m:
        return _parse_size(f"{m.group(1)}GiB")
    m = _SMI.search(text, timeout=budget(_TIMEOUT))  # "RTX 5070 Ti 16303MiB": nvidia-smi's total for an unlisted card
    if m:
        return _from_smi_mib(int(m.group(1)))
    m = _NOMINAL.search(text, timeout=budget(_TIMEOUT))  # "RTX 5070 Ti 16GB": an unknown card of a stated size
    return _parse_size(f"{m.group(1)}GB") if m else None


def gpu_names() -> list[str]:
    return [r.name for r in _rows()]


def cards_near(total_bytes: int, tolerance: float = 0.04) -> list[Gpu]:
    """Catalog cards whose torch-visible memory is within `tolerance` of `total_bytes`, closest
    first. Why: when a paste has vLLM's figures but not the card, those figures imply the card's
    size, and a user is better served by "a 24 GB card such as the RTX 3090" than by a default."""
    out: list[tuple[float, Gpu]] = []
    for r, g in _catalog():
        off = abs(g.total_bytes - total_bytes) / max(1, total_bytes)
        if r.vendor in ("NVIDIA", "AMD") and off <= tolerance:
            out.append((off, g))
    return [g for _o, g in sorted(out, key=lambda t: (not t[1].name.startswith("NVIDIA"), t[0]))]


# the vendor words and the series words before a model number ("NVIDIA RTX PRO 6000", "Intel Arc B580")
_FAMILY_NOISE = _VENDOR_WORDS | {"rtx", "gtx", "pro", "ai", "arc"}


def family(name: str) -> str:
    """The model token of a card's name ("NVIDIA A100-SXM4-40GB" → "a100", "NVIDIA H20" → "h20"):
    cards of one family differ in memory size and form factor, not in architecture."""
    for word in regex.split(r"[\s\-_/()]+", name.lower()):
        if word and word not in _FAMILY_NOISE:
            return word
    return ""


def family_variants(name: str) -> list[Gpu]:
    """Every catalog card of the same family as `name` (all sizes and form factors), the same product:
    an RTX 4090's variants are not the 4090 D or the 4090 Laptop GPU."""
    fam, marks = family(name), set(_PRODUCT_MARKS.findall(name.lower()))
    return [g for r, g in _catalog() if fam and family(r.name) == fam
            and set(_PRODUCT_MARKS.findall(r.name.lower())) == marks]


def family_card_holding(text: str, loaded_bytes: int) -> Gpu | None:
    """The smallest card of the family `text` names that holds `loaded_bytes`, when the card the
    name resolves to cannot; None when it can, or no card of the family can.

    Why: vLLM printed the weights it had loaded on one GPU, so that GPU held them. "A100" resolves to
    the 40 GB card (gpus.csv's alias), but an A100 that loaded 48.5 GiB of weights was an 80 GB one.
    A name that states its size is not second-guessed here (the caller checks)."""
    try:
        named = lookup_gpu(text)
    except UnknownGpu:
        return None
    if named.total_bytes > loaded_bytes:
        return None
    bigger = [g for g in family_variants(named.name) if g.total_bytes > loaded_bytes]
    return min(bigger, key=lambda g: g.total_bytes) if bigger else None


def cc_number(compute_capability: str | None) -> float | None:
    """NVIDIA compute capability as a number ("8.6" → 8.6); None for other vendors ("gfx942")."""
    try:
        return float(compute_capability) if compute_capability else None
    except (TypeError, ValueError):
        return None


@lru_cache(maxsize=64)     # asked once per estimate, and a diagnosis re-checks each fix with one
def is_xpu_card(name: str | None) -> bool:
    """An Intel GPU, which vLLM runs as its XPU platform (Arc, Data Center GPU Max): the catalog's Intel rows
    but Gaudi, an HPU that runs through its own vllm-gaudi plugin."""
    gpu = find_gpu(name)
    return gpu is not None and gpu.vendor == "Intel" and "gaudi" not in gpu.name.lower()


def is_rocm_target(compute_capability: str | None) -> bool:
    """An AMD card: the catalog gives every AMD row its ROCm target ("gfx942") where NVIDIA rows have
    a compute capability, and the ROCm builds of vLLM account memory in their own ways."""
    return str(compute_capability or "").startswith("gfx")
