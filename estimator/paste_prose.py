"""What people say around the log: the model (repo id, HF link, local path), the GPU (prose,
nvidia-smi, collect_env), how many GPUs, the vLLM version, and claims worth correcting.

Why rules and not a list of pastes: the same few shapes recur ("2x 4090", "on an RTX A6000
(49.1 GB VRAM)", "vLLM 0.8.5", `/models/Qwen2.5-7B-Instruct-AWQ`). Known names come from data:
the GPU catalog (`estimator/data/gpus.csv`, aliases column) and a small table of model families
→ Hugging Face organisations. A guessed value is marked so a reply can say it was guessed.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path

import regex

from estimator.catalog import canonical_id, match_local_name
from estimator.paste_text import budget, expired, finditer

TIMEOUT = 0.25


@dataclass(frozen=True)
class Hit:
    key: str
    value: object
    start: int           # logical-text offsets
    end: int
    source: str
    priority: int
    guess: bool = False
    norm: str | None = None     # comparison key (e.g. GPU family) when values are spelled differently


_iter = partial(finditer, seconds=TIMEOUT)     # the paste's budgeted finditer at this module's timeout


# ---------------------------------------------------------------------------------------------
# GPU catalog (package data, with the shared checkout as a development fallback)


@lru_cache(maxsize=1)
def gpu_aliases() -> tuple[tuple[str, str], ...]:
    """(alias lower-case, canonical name) pairs from gpus.csv; empty when the file is missing."""
    text = None
    try:
        text = (resources.files("estimator") / "data" / "gpus.csv").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, OSError, TypeError):
        text = None
    if text is None:
        fallback = Path(__file__).resolve().parents[2] / "shared" / "data" / "gpus.csv"
        try:
            text = fallback.read_text(encoding="utf-8")
        except OSError:
            return ()
    out = []
    try:
        for row in csv.DictReader(io.StringIO(text)):
            canon = (row.get("canonical_name") or "").strip()
            if not canon:
                continue
            for alias in (row.get("aliases") or "").split(";"):
                alias = alias.strip().lower()
                if _usable_alias(alias):
                    out.append((alias, canon))
    except csv.Error:
        return ()
    out.sort(key=lambda p: -len(p[0]))
    return tuple(out)


def _usable_alias(alias: str) -> bool:
    """Aliases that name a GPU unambiguously in prose. Short or generic ones ('v4', 'mac',
    'orin', 'xpu', '4090') are left to the explicit GPU pattern, which checks context."""
    if len(alias) < 4 or alias.isdigit():
        return False
    if regex.fullmatch(r"(?:v\d\w*|m\d.*|mac\w*|apple.*|mps|xpu|hpu|pvc|lumi|frontier|aurora|orin|trillium|"
                       r"g\d|p\d|g\d\w?|p\d\w?|a\d|ct\d\w*|v\d+-\d+|tpu.*|.*[ _-]v\d+|gpu_\w+)", alias):
        return False
    return any(c.isdigit() for c in alias) or " " in alias


_SEP = str.maketrans({"-": " ", "_": " "})


def _alias_hits(text: str, skip: list[tuple[int, int]], limit: int = 300) -> list[tuple[int, int, str, str]]:
    """(start, end, alias as written, canonical) of catalog aliases in `text`. Plain substring
    search per alias (fast in C; a 300-way regex alternation is not), '-'/'_' read as spaces."""
    low = text.lower().translate(_SEP)
    out: list[tuple[int, int, str, str]] = []
    covered: list[tuple[int, int]] = []
    for alias, canon in gpu_aliases():
        if expired():
            break
        a = alias.translate(_SEP)
        pos = low.find(a)
        while pos >= 0 and len(out) < limit:
            end = pos + len(a)
            before = low[pos - 1] if pos else " "
            after = low[end] if end < len(low) else " "
            if not (before.isalnum() or before == ".") and not after.isalnum() \
                    and not any(s <= pos < e for s, e in covered) and not _inside(pos, skip):
                out.append((pos, end, text[pos:end], canon))
                covered.append((pos, end))
            pos = low.find(a, pos + 1)
    return out


def canonical_gpu(name: str) -> str | None:
    """Catalog canonical name for a GPU string, by its longest alias inside it."""
    low = " ".join(name.lower().replace("-", " ").split())
    for alias, canon in gpu_aliases():
        a = alias.replace("-", " ")
        if regex.search(r"(?<![\w])" + regex.escape(a) + r"(?![\w])", low):
            return canon
    return None


# The explicit GPU pattern (works without the catalog). Named families only: a bare
# letter+digits token (A3B, T5) is far more often part of a model name than a GPU.
_GPU = regex.compile(
    r"""(?ix)
    (?=[ABGHIJKLMNPQRTVDabghijklmnpqrtvd0-9])
    (?<![A-WYZa-wyz0-9./-])
    (?<![A-Za-z][Xx])                # "2xT4" is a count, "EXT4" (a file system) no card
    (?<!Atlas[ ]+\d{3,4}[A-Za-z]?[ ]+)  # Huawei's Ascend servers ("Atlas 800I A2", "Atlas 800T A2"), not NVIDIA's A2
    (?P<name>
      (?:NVIDIA[ ]+|AMD[ ]+|Intel[ ]+)?(?:GeForce[ ]+|Quadro[ ]+|Tesla[ ]+|Instinct[ ]+|Radeon[ ]+)?
      (?:
        RTX[ ]?PRO[ ]?\d{4}(?:[ ]+Blackwell)?(?:[ ]+(?:Max-Q[ ]+)?(?:Workstation|Server)[ ]+Edition|[ ]+Max-Q)?
      | RTX[ ]?\d{4}[ ]?Ada(?:[ ]+Generation)?
      | RTX[ ]?A\d{4}
      | (?:RTX|GTX)[ ]?\d{4}(?:[ ]?(?:Ti|SUPER|D)\b)*(?:[ ]?Laptop)?
      | (?:GH200|GB200|GB300|B200|B300|B100|H100|H200|H800|H20|A800|A100|L40S|L40|L20|A10G|A10|A30|A40|A16|A2|L4|T4|V100S?|P100|P40|K80|GB10
         |A[2-6]000|A[45]500)
        (?:[ -]?(?:SXM\d?|PCIE|PCIe|NVL|HBM3e?|MIG|\d{2,3}[ ]?G[Bi]?B?)(?![\w]))*
      | Jetson[ ]+(?:AGX[ ]+)?Orin(?:[ ]+(?:NX|Nano))?(?:[ ]+\d+G[Bi]?B?)?
      | DGX[ ]+Spark
      | MI\d{3}X?
      | (?:Arc[ ]+(?:Pro[ ]+)?)?B[567]0     # Intel's Arc Pro B50 / B60 / B70 (vLLM's XPU backend)
      | (?:Ascend[ ]?)?910[BC][1-3]?(?![A-Za-z0-9])  # Huawei's NPUs (vLLM through the vllm-ascend plugin)
      | \d{4}(?:[ ]?Ti\b)?(?=s?\b|[\u4e00-\u9fff])(?![ ]*(?:tokens?|MiB|GiB|MB|GB|blocks?|secs?|seconds|ms|x\b|rows?|steps?|%))
      )
    )
    (?=s?\b|[^\w]|_|[\u4e00-\u9fff])
    (?!-(?:high|mega|ultra|edge)gpu)     # a Google Cloud machine type (a2-highgpu-1g holds an A100), not the A2
    """)
# a size written before the name: "32GB显存V100", "80GB H100"
_HAS_SIZE = regex.compile(r"\d{2,3}[ ]?G")
_SIZE_BEFORE = regex.compile(r"(?i)(?<![0-9.])(?<![A-WYZa-wyz])(?P<n>\d{2,3})[ ]?G(?:i?B)?[ ]*(?:显存|VRAM)?[ ]*\Z")
# ... or right after it, as the modded cards are sold: "2080ti 22G", "RTX 4090 48GB" (not the host's RAM:
# "RTX 3090 64GB RAM", "4090 128G内存")
_SIZE_AFTER = regex.compile(r"(?i)\G[ ]?(?P<n>\d{2,3})[ ]?G(?:i?B)?(?![A-Za-z0-9.])(?![ ]*(?:RAM|DDR|system|host|内存))")


def _card_size(name: str, gb: int) -> bool:
    """Can `gb` be the memory of a `name` card? Not below the family's smallest variant: "a 14GB
    4090" is a model's size, "80GB A100" and a modded "48GB 4090" are the card's."""
    from estimator.gpus import family_variants

    sizes = [g.total_bytes / 2**30 for g in family_variants(name)]
    return not sizes or gb >= 0.9 * min(sizes)
# "on 4A10", "8H100": a data-centre GPU name with a count glued on (the space or 'x' eaten)
_GPU_GLUED = regex.compile(
    r"(?<![\w.,/-])(?P<n>[1-8])(?P<name>(?:GH200|GB300|GB200|B200|B300|H100|H200|H800|H20|A800|A100|L40S|L40|A10G|A10|A30|A40|L4|T4|V100)"
    r"(?:[ -]?(?:SXM\d?|PCIe|NVL|\d{2,3}[ ]?G[Bi]?B?)(?![\w]))*)(?![\w-])(?![ ]*(?:[KMGT]i?B|tokens?)\b)")
_CONSUMER_NUMBERS = frozenset({"1080", "2060", "2070", "2080", "3050", "3060", "3070", "3080", "3090",
                               "4060", "4070", "4080", "4090", "5060", "5070", "5080", "5090", "7900"})
# the priority of a prose GPU given with its memory (between a bare name, 20, and a labelled one, 25)
GPU_SIZED_PRIORITY = 22
# a GPU named with a memory size in parentheses right after: "RTX A6000 (49.1 GB VRAM)", "H20 (SM90, 95 GiB)"
_GPU_SIZE_AFTER = regex.compile(r"\G[^\n()]{0,12}\([^()\n]{0,30}?(?P<n>\d+(?:\.\d+)?)[ ]?(?P<u>GiB|GB|G)\b[^()\n]{0,30}\)")
_FAMILY = regex.compile(
    r"(?i)(rtx[ ]?pro[ ]?\d{4}|rtx[ ]?\d{4}[ ]?ada|rtx[ ]?a\d{4}|(?:rtx|gtx)?[ ]?\d{4}(?:[ ]?ti)?|gh200|gb200|gb300|b200|b300|b100|"
    r"h100|h200|h800|h20|a800|a100|l40s|l40|a10g|a10|a30|a40|a16|a2|l4|t4|v100|p100|p40|k80|gb10|jetson[ ]+(?:agx[ ]+)?orin(?:[ ]+(?:nx|nano))?|"
    r"dgx[ ]+spark|mi\d{3}x?|910[bc])")


def gpu_family(name: str) -> str:
    m = _FAMILY.search(name)
    if not m:
        return name.lower()
    fam = regex.sub(r"[ ]", "", m.group(1).lower())
    return regex.sub(r"^(?:rtx|gtx)(?=\d)", "", fam)


_NUM_WORDS = {"one": 1, "single": 1, "a": 1, "an": 1, "two": 2, "dual": 2, "double": 2, "three": 3, "four": 4,
              "quad": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "sixteen": 16,
              "一": 1, "单": 1, "两": 2, "二": 2, "双": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8}
_COUNT_BEFORE = regex.compile(
    # a count before the name ("2x 4090", "2 A100"), not nvidia-smi's row index ("|   1  Tesla T4")
    r"(?ix)(?:(?<![\w.,])(?P<n>\d{1,2})(?:[ ]*[x*][ ]*|(?<!\|[ ]{0,8}\d{1,2})[ ]+)|"
    r"\b(?P<w>one|single|two|dual|double|three|four|quad|five|six|seven|eight|sixteen)[ ]+|(?P<cn>\d{1,2})[ ]*[张块台卡][^\s张块台卡]{0,10}?|(?P<zh>[一单两二双三四五六七八])[ ]*[张块台卡]"
    # (no other counted word between the count and the card: "两台机器每台八张910B" is eight cards a machine)
    r"[^\s张块台卡]{0,10}?)"
    r"(?:\d{1,3}[ ]?G[Bi]?B?[ ]+)?\Z")
# "H20 8 nodes", "A100 x 2"
_COUNT_AFTER = regex.compile(r"(?i)\G[ ]*(?:[x*][ ]*(?P<n>\d{1,2})\b|(?P<m>\d{1,2})[ ]+(?:nodes|GPUs|cards)\b)")
# "2 GPUs", "a single 96 GB card", "two cards"
_COUNT_NOUN = regex.compile(
    r"(?i)(?<![\w.,=:])(?:(?P<n>\d{1,2})(?![ ]?(?:G|GB|GiB|MB|MiB|TB|k|K)\b)|(?P<w>one|single|two|dual|three|four|quad|eight))[ ]+"
    r"(?:(?!(?:on|in|of|with|for|per|at|to|by|from|and|or|the)\b)[\w.]+[ ]+){0,2}?(?:GPUs?|cards?)\b")
# a count given under its own label: a dashboard's "GPU count = 2", a config's "num_gpus: 4" or
# "nvidia.com/gpu: 8", "Number of GPUs: 2" (0 and device lists like "0,1" are not counts)
_COUNT_LABEL = regex.compile(
    r"(?i)(?<![\w.-])(?:GPU[ _-]?count|num[ _-]?gpus|number[ ]+of[ ]+GPUs|nvidia\.com/gpu)[ *\"']*[:=][ *\"']*"
    r"(?P<n>[1-9]\d?)(?![\d.,]|[ ]*[-,][ ]*\d)")
# a GPU given only by its size: "on 2×24GB GPUs", "a 48 GB card" (a named GPU elsewhere wins)
_GPU_BY_SIZE = regex.compile(
    r"(?i)(?<![\w.,])(?:(?P<n>\d{1,2})[ ]*[x×*][ ]*)?(?P<size>\d{1,3})[ ]?GB[ ]+(?:GPUs?|cards?|graphics[ ]+cards?)\b")
_GPU_LABEL = regex.compile(r"(?im)(?:^|[\-*•]\s*)(?:GPU(?:[ ]?type|[ ]?model|s)?|Hardware|HW|Device|Graphics card)[ ]*[:=][ ]*\Z")


def find_gpus(text: str, skip: list[tuple[int, int]]) -> list[Hit]:
    """GPU names in prose with their family, plus counts said with them ("2x 4090")."""
    out: list[Hit] = []
    for m in _iter(_GPU, text, limit=400):
        if _inside(m.start(), skip):
            continue
        name = " ".join(m.group("name").split())
        if name.isdigit() or regex.fullmatch(r"\d{4}(?: ?Ti)?", name, regex.I):
            core = name[:4]
            before = text[max(0, m.start() - 12): m.start()]
            if core not in _CONSUMER_NUMBERS or regex.search(r"[\d.,:/=$#-]\s*$|port\s*$", before, regex.I):
                continue
        end = m.end()
        after = _SIZE_AFTER.match(text, end, timeout=budget(TIMEOUT))
        sized = _SIZE_BEFORE.search(text[max(0, m.start() - 12): m.start()]) or after
        if sized and not _HAS_SIZE.search(name) and _card_size(name, int(sized.group("n"))):
            name = f"{name} {int(sized.group('n'))}GB"
            end = after.end() if sized is after else end
        prio = 20
        before = text[max(0, m.start() - 60): m.start()]
        if _GPU_LABEL.search(before):
            prio = 25
        fam = gpu_family(name)
        sm = _GPU_SIZE_AFTER.match(text, m.end(), timeout=budget(TIMEOUT))
        if sm and prio < GPU_SIZED_PRIORITY:
            # "MI300X (191.98 GiB)": a card given with its memory is the one the author has, more surely
            # than one named in passing ("targeting B200/B300")
            prio = GPU_SIZED_PRIORITY
        out.append(Hit("gpu", name, m.start(), end, "prose_gpu", prio, norm=fam))
        cm = _COUNT_BEFORE.search(text[max(0, m.start() - 24): m.start()])
        if cm:
            n = int(cm.group("n") or cm.group("cn") or 0) or _NUM_WORDS.get((cm.group("w") or cm.group("zh") or "").lower(), 0)
            if cm.group("w") and cm.group("w").lower() in ("a", "an"):
                n = 0
            if 0 < n <= 64:
                s = m.start() - len(cm.group(0))
                out.append(Hit("gpu_count", n, s, end, "prose_gpu_count", 30))
        am = _COUNT_AFTER.match(text, end, timeout=budget(TIMEOUT))
        if am and not cm:
            out.append(Hit("gpu_count", int(am.group("n") or am.group("m")), m.start(), am.end(), "prose_gpu_count", 30))
        if sm and sm.group("u") == "GiB":
            out.append(Hit("total_gpu_memory_gib", float(sm.group("n")), sm.start("n"), sm.end("u"), "prose_gpu_size", 20))
    for m in _iter(_GPU_GLUED, text, limit=50):
        if _inside(m.start(), skip):
            continue
        # the name only: a digit glued on is less sure to be a count than "4x A10"
        name = m.group("name")
        out.append(Hit("gpu", name, m.start("name"), m.end("name"), "prose_gpu", 20, norm=gpu_family(name)))
    for m in _iter(_COUNT_NOUN, text, limit=100):
        if _inside(m.start(), skip):
            continue
        n = int(m.group("n")) if m.group("n") else _NUM_WORDS.get(m.group("w").lower(), 0)
        if 0 < n <= 64 and not any(h.key == "gpu_count" and h.start <= m.start() < h.end for h in out):
            out.append(Hit("gpu_count", n, m.start(), m.end(), "prose_gpu_count", 30))
    for m in _iter(_COUNT_LABEL, text, limit=20):
        if not _inside(m.start(), skip) and int(m.group("n")) <= 64:
            out.append(Hit("gpu_count", int(m.group("n")), m.start(), m.end(), "prose_gpu_count", 30))
    for m in _iter(_GPU_BY_SIZE, text, limit=50):
        if _inside(m.start(), skip) or not 4 <= int(m.group("size")) <= 288:
            continue
        out.append(Hit("gpu", f"{int(m.group('size'))}GB", m.start("size"), m.end(), "prose_gpu_size_only", 15))
        n = int(m.group("n") or 0)
        if 0 < n <= 64 and not any(h.key == "gpu_count" and h.start <= m.start() < h.end for h in out):
            out.append(Hit("gpu_count", n, m.start(), m.end(), "prose_gpu_count", 30))
    for start, end, written, canon in _alias_hits(text, skip):
        instance = bool(regex.search(r"[._]|^(?:g\d|p\d|a\d-|nd|nc|standard)", written.lower()))
        out.append(Hit("gpu", canon if instance else written, start, end,
                       "catalog_alias", 10 if instance else 19, guess=instance, norm=gpu_family(canon)))
    return out


# nvidia-smi table rows, `nvidia-smi --query-gpu` lines and collect_env / torch "GPU 0: NAME".
_SMI_ROW = regex.compile(
    r"\|[ ]+(?P<idx>\d{1,2})[ ]+(?P<name>(?:NVIDIA|Tesla|Quadro|GeForce|AMD|Radeon)[^|\n]*?)[ ]+(?:On|Off)[ ]*\|")
_SMI_MEM = regex.compile(r"(?P<used>\d{1,7})[ ]*MiB[ ]*/[ ]*(?P<total>\d{1,7})[ ]*MiB")
_SMI_PROC = regex.compile(
    r"\|[ ]+(?P<gpu>\d{1,2})[ ]+(?:N/A[ ]+N/A[ ]+)?(?P<pid>\d{1,9})[ ]+(?P<type>C\+G|C|G)[ ]+(?P<name>\S{1,200})[ ]+(?P<mem>\d{1,7})[ ]*MiB[ ]*\|")
_QUERY_ROW = regex.compile(r"(?m)^[ ]*(?P<idx>\d{1,2})[ ]*[:,][ ]*(?P<name>(?:NVIDIA|Tesla|Quadro|AMD)[^\n,]*?)[ ]*,?[ ]*(?P<total>\d{3,7})[ ]*MiB")
_ENV_GPU = regex.compile(r"(?m)^[ ]*GPU[ ]+(?P<idx>\d{1,2}):[ ]+(?P<name>(?:NVIDIA|Tesla|Quadro|AMD|Radeon)[^\n(]*?)[ ]*(?:\(UUID[^\n]*)?$")


@dataclass
class SmiInfo:
    gpus: dict[int, tuple[str, int, int]]            # index → (name, name_start, name_end)
    memory: list[tuple[int | None, int, int, int, int]]   # (index, used MiB, total MiB, start, end of total)
    processes: list[dict]
    query_totals: dict[int, int]


def find_smi(text: str) -> SmiInfo:
    info = SmiInfo({}, [], [], {})
    last_idx = None
    for m in _iter(_SMI_ROW, text, limit=64):
        idx = int(m.group("idx"))
        info.gpus.setdefault(idx, (" ".join(m.group("name").split()), m.start("name"), m.end("name")))
        last_idx = idx
        mm = _SMI_MEM.search(text, m.end(), min(len(text), m.end() + 400), timeout=budget(TIMEOUT))
        if mm:
            info.memory.append((idx, int(mm.group("used")), int(mm.group("total")), mm.start("total"), mm.end("total")))
    if last_idx is None:
        for mm in _iter(_SMI_MEM, text, limit=16):
            if regex.search(r"\|\s*$", text[max(0, mm.start() - 6): mm.start()]):
                info.memory.append((None, int(mm.group("used")), int(mm.group("total")), mm.start("total"), mm.end("total")))
    for m in _iter(_SMI_PROC, text, limit=64):
        info.processes.append({"gpu": int(m.group("gpu")), "pid": int(m.group("pid")), "type": m.group("type"),
                               "name": m.group("name"), "mib": int(m.group("mem"))})
    for pat in (_QUERY_ROW, _ENV_GPU):
        for m in _iter(pat, text, limit=64):
            idx = int(m.group("idx"))
            if idx not in info.gpus:
                info.gpus[idx] = (" ".join(m.group("name").split()), m.start("name"), m.end("name"))
            if pat is _QUERY_ROW:
                info.query_totals[idx] = int(m.group("total"))
    return info


# ---------------------------------------------------------------------------------------------
# vLLM version

_VER = r"v?(?P<v>\d+\.\d+\.\d+(?:\.?(?:post|dev|rc|a|b)\d+)*(?:\+[A-Za-z0-9]+(?:\.(?!cu\d|cp\d|rocm|cpu\b)[A-Za-z0-9]+)*)?" \
       r"|\d+\.\d+(?:\.?(?:dev|rc)\d+)+(?:\+[A-Za-z0-9]+(?:\.(?!cu\d|cp\d)[A-Za-z0-9]+)*)?)(?![\d])"
_VERSION_FORMS: tuple[tuple[regex.Pattern, int, str], ...] = (
    (regex.compile(r"(?i)\bvllm[ ]*==[ ]*" + _VER), 50, "pip"),
    # `vllm --version`'s answer: the next line, or the first line of its own after the start-up log lines
    # the command prints first ("Automatically detected platform cuda.")
    (regex.compile(r"(?i)\bvllm[ ]+--version[ ]*\n(?:[ ]*" + _VER + r"|(?:[^\n]{0,200}\b(?:platform|plugin|detected)\b[^\n]{0,200}"
                   r"\n){1,3}[ ]*" + _VER + r"[ ]*(?=\n|$))"), 50, "vllm_version_cmd"),
    (regex.compile(r"(?i)\bvLLM[ ]+Version[ ]*:[ ]*" + _VER), 50, "collect_env"),
    (regex.compile(r"(?i)\bvllm-(?=\d)" + _VER + r"(?=[.+-](?:cu\d|cp\d|py\d)|-)"), 45, "wheel"),
    (regex.compile(r"(?i)\bvllm(?:-openai)?:" + _VER), 40, "docker_tag"),
    # a markdown table row of the setup: "| **vLLM** | **0.26.0** |"
    (regex.compile(r"(?im)^[ ]*\|[ ]*\*{0,2}vLLM\*{0,2}[ ]*\|[ ]*\*{0,2}" + _VER), 40, "table_version"),
    # a bug report is about the version where it fails ("Tested OK on 0.2.4. The test fails on 0.2.5")
    # ("I can run this with vllm 0.7.3, but can't with vllm 0.8.0": the one it cannot)
    (regex.compile(r"(?i)\b(?:fails|failed|failing|breaks|broke|crash(?:es|ed)|can'?t|cannot|couldn'?t"
                   r"|(?:doesn'?t|does[ ]not|won'?t)[ ]work)[ ]+(?:(?:run|start|load|serve|it|this|that)[ ]+){0,2}"
                   r"(?:again[ ]+)?(?:on|with|in|since)[ ]+(?:vLLM[ ]+|(?=v?0\.\d))" + _VER), 35, "prose_version_failing"),
    # "Unable to run … in v0.6.4.post1 version", "on 0.6.4 version": a 0.x release named as the version
    (regex.compile(r"(?i)\b(?:in|on|with|using|since|to|after)[ ]+v?(?=0\.\d)" + _VER + r"[ ]+(?:version|release)\b"),
     25, "prose_version_named"),
    # Chinese posts name it with 版本 (version) or 是 (is): "vllm是0.18", "vLLM版本：0.11.0" — a release, written
    # with two parts too, as no utilization is introduced that way
    (regex.compile(r"(?i)\bvllm[ ]*的?[ ]*(?:版本号?[ ]*(?:是|为|[:：=])?|是|用的是)[ ]*v?"
                   r"(?P<v>\d+\.\d+(?:\.\d+)?(?:\.?(?:post|dev|rc)\d+)*)(?![\d]|\.\d)"), 30, "prose_version_zh"),
    (regex.compile(r"(?i)\bvllm(?:[ ]*(?:[-_:,=]|version|engine|openai|docker|container|image|release|nightly|wheel|tag|"
                   r"server|api|is|was|on|of|at|the|stock|from|build|main)[ ]*){0,5}[ ]*" + _VER), 30, "prose_version"),
)


def find_versions(text: str, skip: list[tuple[int, int]]) -> list[Hit]:
    out: list[Hit] = []
    taken: set[int] = set()
    for pat, prio, src in _VERSION_FORMS:
        for m in _iter(pat, text, limit=50):
            s = m.start("v")
            if s in taken or _inside(m.start(), skip):
                continue
            taken.add(s)
            out.append(Hit("vllm_version", m.group("v"), s, m.end("v"), src, prio))
    return out


# ---------------------------------------------------------------------------------------------
# Model ids

#: model-name family prefix → Hugging Face organisation (official uploads)
FAMILY_ORGS: tuple[tuple[str, str], ...] = (
    (r"qwen|qwq", "Qwen"), (r"meta-llama|llama-?[234]|llama-guard", "meta-llama"),
    (r"mistral|mixtral|ministral|codestral|magistral|devstral|pixtral", "mistralai"),
    (r"deepseek", "deepseek-ai"), (r"gemma|codegemma|paligemma", "google"), (r"phi-?\d", "microsoft"),
    (r"kimi", "moonshotai"), (r"glm", "zai-org"), (r"internvl", "OpenGVLab"), (r"minimax", "MiniMaxAI"),
    (r"falcon", "tiiuae"), (r"yi-", "01-ai"), (r"granite", "ibm-granite"), (r"olmo", "allenai"),
    (r"gpt-oss", "openai"), (r"nemotron", "nvidia"), (r"internlm", "internlm"), (r"baichuan", "baichuan-inc"),
)
#: uploaders whose name usually appears inside their repo names ("QwQ-32B-unsloth-bnb-4bit")
UPLOADERS = ("unsloth", "TheBloke", "bartowski", "casperhansen", "neuralmagic", "RedHatAI", "ModelCloud")
KNOWN_ORGS = frozenset(o.lower() for _, o in FAMILY_ORGS) | frozenset(u.lower() for u in UPLOADERS) | frozenset({
    "thudm", "lmsys", "open-orca", "nousresearch", "huggingfaceh4", "huggingfacetb", "facebook", "eleutherai", "bigscience",
    "mosaicml", "stabilityai", "tencent", "baai", "intfloat", "sentence-transformers", "bigcode", "codellama",
    "teknium", "cognitivecomputations", "upstage", "databricks", "snowflake", "ai21labs", "cohereforai", "coherelabs",
    "xai-org", "stepfun-ai", "rednote-hilab", "opea", "intel", "amd", "ibm", "apple", "llava-hf", "liuhaotian",
    "mlx-community", "solidrust", "hugging-quants", "nm-testing", "qwenlm",
})
_NOT_ORGS = frozenset({"vllm", "vllm-project", "docker", "library", "pytorch", "nvcr.io", "github", "issues", "pull",
                       "blob", "tree", "usr", "home", "root", "tmp", "data", "models", "model", "mnt", "opt", "var",
                       "workspace", "path", "to", "src", "lib", "bin", "etc", "dustynv", "lmcache", "sglang", "wildguard"})
# directories that hold models without naming their organisation ("~/ai-models/weights/llama-7b"); mount
# points ("disk1", "nvme0", "mnt") are _MOUNT_DIR's
_STORE_DIRS = _NOT_ORGS | {"weights", "checkpoints", "checkpoint", "ckpt", "ckpts", "hf", "huggingface", "hub", "cache",
                           "ai-models", "llm", "llms", "hf_models", "hf-models", "pretrained", "output", "outputs",
                           "merged", "downloads", "download", "share", "shared", "storage", "models_cache",
                           "modelscope", "snapshots", "local", "users", "user", "kaggle", "input", "content",
                           "srv", "app", "apps", "code", "repo", "repos", "project", "projects", "work", "workdir",
                           "scratch", "nas", "gpfs", "lustre", "dev", "shm", "volumes", "private", "public"}
_MOUNT_DIR = regex.compile(r"(?i)(?:disk|nvme|ssd|hdd|vol|volume|data|drive|sd[a-z]|mnt|raid|nfs)\d*")
# (ASCII word characters, as the Hub allows: Chinese written up against an id ends it, "Qwen/Qwen3-8B部署报错")
_REPO = regex.compile(
    r"(?<![\w./~-])(?P<org>[A-Za-z0-9][\w.-]{0,38}[A-Za-z0-9]|[A-Za-z0-9])/(?P<name>[A-Za-z0-9][\w.-]{0,95})(?![\w/-]|\.\w)",
    regex.A)
_HF_URL = regex.compile(r"(?i)huggingface\.co/(?!datasets/|spaces/|docs/|blog/)(?P<org>[\w.-]+)/(?P<name>[\w.-]+)", regex.A)
_HF_CACHE = regex.compile(r"models--(?P<org>[\w.-]+?)--(?P<name>[\w.-]+)", regex.A)
# ModelScope's model pages mirror the Hub's ids (modelscope.cn/models/Qwen/Qwen3.6-35B-A3B-FP8/summary)
_MS_URL = regex.compile(r"(?i)modelscope\.cn/models/(?P<org>[\w.-]+)/(?P<name>[\w.-]+)", regex.A)
_SIZE_TOKEN = regex.compile(r"(?i)(?<![a-z])\d+(?:\.\d+)?[bm](?![a-z])|\d+x\d+b")
_FILE_EXT = regex.compile(r"(?i)\.(?:py|json|jsonl|txt|md|yaml|yml|toml|sh|log|csv|html|jinja|j2|gguf|bin|pt|safetensors"
                          r"|whl|png|jpg)$")


# A download into a local directory: `hf download ORG/NAME --local-dir DIR` (huggingface-cli, modelscope's
# `--model ORG/NAME --local_dir DIR`) and huggingface_hub's snapshot_download(repo_id=…, local_dir=…)
_DOWNLOAD = regex.compile(
    r"(?i)(?:(?:huggingface-cli|hf|modelscope)[ ]+download[ ]+(?:--model[ ]+)?['\"]?(?P<repo>[\w.-]+/[\w.-]+)['\"]?"
    r"[^\n]{0,300}?--local[-_]dir[ =]+['\"]?(?P<dir>[^\s'\"]+)"
    r"|snapshot_download\((?:[ ]*repo_id[ ]*=)?[ ]*['\"](?P<repo2>[\w.-]+/[\w.-]+)['\"][^)\n]{0,300}?local_dir[ ]*=[ ]*"
    r"[rf]?['\"](?P<dir2>[^'\"\n]+)['\"])")


def downloaded_models(text: str, served_paths: list[str]) -> list[Hit]:
    """The repo a served local directory holds, where the paste downloads it there: an Arm tutorial's
    `hf download TheBloke/Mistral-7B-Instruct-v0.2-GPTQ --local-dir ~/models/mistral-7b` and then
    `vllm serve /models/mistral-7b` (the directory mounted into a container) — the same last path
    component, so the repo, not the family the directory's name spells."""
    names = {_leaf(p) for p in served_paths} - {""}
    out = []
    for m in _iter(_DOWNLOAD, text, limit=20):
        repo, where = (m.group("repo"), m.group("dir")) if m.group("repo") else (m.group("repo2"), m.group("dir2"))
        if _leaf(where) in names:
            g = "repo" if m.group("repo") else "repo2"
            out.append(Hit("model", repo, m.start(g), m.end(g), "download_local_dir", 45))
    return out


def _leaf(path: str) -> str:
    return regex.split(r"[/\\]", str(path).strip().strip("'\"").rstrip("/\\"))[-1].lower()


def model_from_value(value: str) -> tuple[str, bool] | None:
    """A model given as `--model` / positional / `model=`: (repo id, guessed?) or None.
    Repo ids pass through; local paths are read back to a repo id when the path holds the
    organisation (…/Qwen/Qwen2.5-7B-Instruct, HF cache dirs) or the name starts with a known
    family (guessed organisation)."""
    v = value.strip().strip("'\"").rstrip("/")
    if not v:
        return None
    m = _HF_CACHE.search(v)
    if m:
        return f"{m.group('org')}/{m.group('name').split('/')[0]}", False
    m = _HF_URL.search(v)
    if m:
        return f"{m.group('org')}/{m.group('name')}", False
    # (a shell variable starts a path too: "${MODELS}/MiniMax-M2.7" in a launch script)
    is_path = v.startswith(("/", "./", "../", "~", ".\\", "$")) or regex.match(r"[A-Za-z]:\\", v) is not None \
        or v.count("/") > 1
    parts = [p for p in regex.split(r"[/\\]", v) if p not in ("", ".", "..", "~")]
    if not parts:
        return None
    if is_path:
        # ModelScope's download cache spells a repo name's dots "___" (modelscope/hub/file_download.py:
        # name.replace('.', '___')): ".../models/qwen/Qwen2___5-3B" holds qwen/Qwen2.5-3B
        parts[-1] = regex.sub(r"(?<=[A-Za-z0-9])___(?=[A-Za-z0-9])", ".", parts[-1])
    if not is_path and len(parts) == 2 and _looks_like_repo(parts[0], parts[1], strict=False):
        return f"{parts[0]}/{parts[1]}", False
    if not is_path and len(parts) == 1 and "/" in (legacy := canonical_id(v) or ""):
        # a Hub legacy id without an organisation ("gpt2"), which the Hub redirects to its repo
        return legacy, False
    name = parts[-1]
    if _FILE_EXT.search(name):
        gguf = name.lower().endswith(".gguf")
        name = _FILE_EXT.sub("", name)
        if gguf:      # "Qwen2-7B-Instruct.Q4_K_M.gguf" names the base model
            name = regex.sub(r"(?i)[.-](?:I?Q\d(?:_[\dKSML]+)*|F16|BF16|F32)$", "", name)
        if not name:
            return None
    if len(parts) >= 2 and parts[-2].lower() in KNOWN_ORGS:
        return f"{parts[-2]}/{name}", True
    guess = guess_repo(name)
    if guess:
        return guess, True
    if is_path and len(parts) >= 2 and parts[-2].lower() not in _STORE_DIRS and name == parts[-1] \
            and not _MOUNT_DIR.fullmatch(parts[-2]) and _looks_like_repo(parts[-2], name, strict=True) \
            and match_local_name(name) is None:
        # (a name that spells a catalog model another way is read as that model: diagnosis._model_of_path)
        # a store laid out as the Hub's ORG/NAME (".../weights/ybelkada/llava-1.5-7b-hf-awq"), where the
        # name spells no known family: the Hub's repo of that spelling, a guess
        return f"{parts[-2]}/{name}", True
    return None


def guess_repo(name: str) -> str | None:
    """'Qwen2.5-7B-Instruct-AWQ' → 'Qwen/Qwen2.5-7B-Instruct-AWQ' when the family says the org."""
    name = name.strip()
    m = regex.match(r"(?P<org>[A-Za-z][\w-]{1,30})_(?P<rest>[A-Za-z].*)", name)
    if m and m.group("org").lower() in KNOWN_ORGS and _family_org(m.group("rest")):
        return f"{m.group('org')}/{m.group('rest')}"
    for cut in (i for i, c in enumerate(name[:32]) if c == "-"):
        # the repo id flattened with a hyphen ("Qwen-Qwen2.5-72B-Instruct-GPTQ-Int4",
        # "meta-llama-Llama-3.1-8B"): the organisation, then a name its own family publishes under it
        org, rest = name[:cut], name[cut + 1:]
        if org.lower() in KNOWN_ORGS and (_family_org(rest) or "").lower() == org.lower():
            return f"{org}/{rest}"
    if "-" not in name or not any(c.isdigit() for c in name) or "_" in name.split("-")[0]:
        return None
    for up in UPLOADERS:
        if regex.search(r"(?i)(?:^|-)" + up + r"(?:-|$)", name):
            return f"{up}/{name}"
    org = _family_org(name)
    if org == "meta-llama":
        # Llama 3's repos carry Meta's prefix (meta-llama/Meta-Llama-3-70B-Instruct); Llama 2's and 3.1+'s
        # do not (Llama-2-7b-hf, Llama-3.1-8B)
        name = regex.sub(r"(?i)^llama-?3-(?=\d)", "Meta-Llama-3-", name)
    return f"{org}/{name}" if org else None


def _family_org(name: str) -> str | None:
    for pat, org in FAMILY_ORGS:
        if regex.match(r"(?i)(?:" + pat + r")(?=[\d.-]|$|[a-z]*[-\d])", name):
            return org
    return None


def _looks_like_repo(org: str, name: str, strict: bool = True) -> bool:
    # a chat template ("examples/tool_chat_template_gemma4.jinja") or a tokenizer-only repo (vLLM V0's hint
    # "consider using 'hf-internal-testing/llama-tokenizer'") serves no model
    if org.lower() in _NOT_ORGS or _FILE_EXT.search(name) or name.lower() in ("main", "master") \
            or name.lower().endswith("tokenizer"):
        return False
    if org.lower() in KNOWN_ORGS:
        return True
    if strict:
        return bool(_SIZE_TOKEN.search(name)) and bool(regex.search(r"[A-Za-z]", org))
    return True


def find_models(text: str, skip: list[tuple[int, int]]) -> list[Hit]:
    out: list[Hit] = []
    for m in _iter(_HF_URL, text, limit=50):
        name = regex.sub(r"\.git$", "", m.group("name"))
        out.append(Hit("model", f"{m.group('org')}/{name}", m.start("org"), m.end("name"), "hf_url", 30))
    for m in _iter(_HF_CACHE, text, limit=50):
        out.append(Hit("model", f"{m.group('org')}/{m.group('name')}", m.start("org"), m.end("name"), "hf_cache", 25))
    for m in _iter(_MS_URL, text, limit=50):
        out.append(Hit("model", f"{m.group('org')}/{m.group('name')}", m.start("org"), m.end("name"), "ms_url", 28))
    for m in _iter(_REPO, text, limit=400):
        if _inside(m.start(), skip):
            continue
        before = text[max(0, m.start() - 30): m.start()]
        if regex.search(r"(?i)(?:https?://|www\.|\.com/|\.io/|\.org/|huggingface\.co/|github\.com/)[\w./-]*$", before):
            continue
        org, name = m.group("org"), m.group("name").rstrip(".")
        quoted = text[m.start() - 1: m.start()] in ("'", '"') if m.start() else False
        if _looks_like_repo(org, name, strict=True) or (quoted and _looks_like_repo(org, name, strict=False)):
            prio = 22 if org.lower() in KNOWN_ORGS else 18
            out.append(Hit("model", f"{org}/{name}", m.start(), m.start() + len(org) + 1 + len(name), "prose_model", prio))
    return out


# A recipe / config file named after the model it serves ("recipes/minimax-m2.7-awq.yaml").
_CONFIG_FILE = regex.compile(r"(?<![\w.-])(?:[\w.-]+/){0,6}(?P<stem>[A-Za-z][\w.-]{2,80}?)\.(?:ya?ml|json|toml)(?![\w.])")


def config_file_models(text: str) -> list[str]:
    """Stems of config files named after a known model family: they say the checkpoint's
    quantization when nothing else does (used for that inference only, never as the model)."""
    out = []
    for m in _iter(_CONFIG_FILE, text, limit=50):
        stem = m.group("stem")
        if _family_org(stem) and any(c.isdigit() for c in stem) and "-" in stem:
            out.append(stem)
    return out


# ---------------------------------------------------------------------------------------------
# quantization named in a model id

# In order of preference: a format/method beats a bit width ("…-int4-AutoRound-awq-sym" is AWQ).
# Format words, most specific first: the method vLLM loads (its own names included: awq_marlin,
# modelopt_fp4, fbgemm_fp8), then the weight bits. A word ends at anything but a letter or digit.
_QUANT_IN_NAME = tuple(
    (regex.compile(r"(?<![a-z0-9])(?:" + pat + r")(?![a-z0-9])"), q) for pat, q in (
        (r"gguf|q[2-8]_k(?:_[sml])?|q8_0|q4_0", "gguf"), (r"awq", "awq"), (r"gptq", "gptq"),
        (r"nvfp4|modelopt[-_]fp4", "nvfp4"), (r"mxfp4", "mxfp4"), (r"fp8", "fp8"), (r"bnb|bitsandbytes", "bitsandbytes"),
        (r"autoround|auto[-_ ]round", "auto_round"), (r"w8a16", "w8a16"), (r"w8a8|int8|8-?bit", "int8"),
        (r"int4|w4a16|4-?bit", "int4"),
    ))
# the weight-bits words above: a count of bits, not a method
QUANT_BITS_WORDS = ("w8a16", "int8", "int4")


# Unsloth's (and transformers') `load_in_4bit = True` / `load_in_8bit=True`: a bitsandbytes
# checkpoint (Unsloth's fast_inference hands vLLM quantization="bitsandbytes"); set False it names
# no format at all — its "4bit" is not the checkpoint's
_LOAD_IN_BITS = regex.compile(r"(?i)\bload_in_(?:4|8)bit[ \t]*[=:][ \t]*(?P<on>True|False)\b")


def quantization_in_name(name: str) -> str | None:
    """Quantization a model id (or a word about a checkpoint) names ('…-AWQ', '…-FP8',
    '….Q4_K_M.gguf', 'awq_marlin')."""
    low = name.lower()
    if "load_in_" in low:
        on = [m.group("on") == "true" for m in _LOAD_IN_BITS.finditer(low, timeout=budget(0.1))]
        if any(on):
            return "bitsandbytes"
        low = _LOAD_IN_BITS.sub(" ", low, timeout=budget(0.1))
    for pattern, q in _QUANT_IN_NAME:
        if pattern.search(low, timeout=budget(0.1)):
            return q
    return None


# ---------------------------------------------------------------------------------------------
# Claims people make ("weights ~14GB"), kept so a reply can correct them

_CLAIM = (
    regex.compile(r"(?i)\b(?P<about>weights?|VRAM|KV[ -]?cache|memory|parameters)\b[^.\n!?]{0,80}?~?[ ]?(?P<n>\d+(?:\.\d+)?)"
                  r"[ ]?(?P<u>GB|GiB|G)\b"),
    regex.compile(r"(?i)~?(?P<n>\d+(?:\.\d+)?)[ ]?(?P<u>GB|GiB|G)\b[^.\n!?]{0,30}?\b(?P<about>weights?|VRAM|KV[ -]?cache|memory)\b"),
)
# A sentence ends at ".", "!" or "?" before a space or the end, or at a line break — not at the
# decimal point of "0.25GiB".
_SENTENCE_END = regex.compile(r"[.!?](?=\s|$)|\n")
# A figure for something beside the weights ("~1.0 GiB beyond weights + KV", "weights plus KV ~30 GB")
# is no claim about the weights.
_NOT_THE_THING = regex.compile(r"(?i)\b(?:beyond|besides|on[ ]+top[ ]+of|above|outside|apart[ ]+from|except|excluding"
                               r"|without|plus|minus|more[ ]+than|other[ ]+than)\b|\+")
# a size that names the card ("weights on a 95 GiB card"), not the weights
_A_CARD_SIZE = regex.compile(r"(?i)[ -]*(?:cards?|GPUs?(?![ ]+memory)|graphics[ ]+cards?|device)\b")
_HEDGE = regex.compile(r"(?i)\b(?:should|would|think|thought|expect|assum|understand|believe|about|approx|roughly|only)|~")


def find_claims(text: str, skip: list[tuple[int, int]]) -> list[dict]:
    out = []
    seen: set[int] = set()
    for pat in _CLAIM:
        for m in _iter(pat, text, limit=30):
            if _inside(m.start("n"), skip):
                continue
            ends = [x.start() for x in _iter(_SENTENCE_END, text[max(0, m.start() - 200):m.start()], limit=200)]
            s = max(0, m.start() - 200) + ends[-1] + 1 if ends else max(0, m.start() - 200)
            nxt = next(iter(_iter(_SENTENCE_END, text[m.end():m.end() + 200], limit=1)), None)
            e = m.end() + nxt.start() if nxt else m.end()
            sent = text[s:e]
            if s in seen or not _HEDGE.search(sent):
                continue
            between = text[min(m.end("about"), m.end("u")):max(m.start("about"), m.start("n"))]
            if _NOT_THE_THING.search(between, timeout=budget(0.1)) or _A_CARD_SIZE.match(text, m.end("u"), timeout=budget(0.1)):
                continue
            seen.add(s)
            out.append({"about": m.group("about").lower(), "gb": float(m.group("n")), "unit": m.group("u"),
                        "text": " ".join(sent.split()), "start": s, "end": e})
    return out


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    for s, e in spans:
        if s <= pos < e:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Numbers people restate in prose or summaries ("Weights 31.18 GiB", "KV cache 1,563,739 tokens",
# "TP=2", "leaving 25.94 GiB of KV"). Only shapes that cannot mean anything else: a label and a
# unit next to each other; vague ones ("~20 GB", "about 14GB") are left to `claims`.

_N = r"(?P<n>\d{1,3}(?:,\d{3})+(?!\d)|\d+)"
_F = r"(?P<f>\d+(?:\.\d+)?)"
_VALUE_RULES: tuple[tuple[str, regex.Pattern, str], ...] = (
    ("tensor_parallel_size", regex.compile(r"(?<![\w-])TP[ ]?(?:=|:|[ ]?size[ ]?[=:]?)?[ ]?(?P<n>\d{1,2})\b"), "prose_tp"),
    ("pipeline_parallel_size", regex.compile(r"(?<![\w-])PP[ ]?(?:=|:|[ ]?size[ ]?[=:]?)?[ ]?(?P<n>\d{1,2})\b"), "prose_pp"),
    ("weights_gib", regex.compile(r"(?i)\b(?:model[ ]+)?weights?(?:/GPU|[ ]+per[ ]+(?:GPU|rank))?(?:[ ]+(?:take|takes|took|use|used"
                                  r"|uses|=|:|of|is|are|at))?[ ]*[:=]?[ ]*(?:\*\*)?" + _F + r"[ ]?GiB\b"), "prose_weights"),
    # vLLM's "Model loading took X GiB memory and Y seconds" retold ("model loading took **53.62 GiB and
    # 315.3 s**"): lower case, the figure in bold, its tail or the sentence's end after the unit
    ("weights_gib", regex.compile(r"(?i)\bmodel[ ]+loading[ ]+took[ ]+(?:\*\*)?" + _F
                                  + r"[ ]?GiB(?=\**(?:[ ]+memory)?\**(?:[ ]+and\b|[ ]*[;,.)]|[ ]*$))", regex.M), "prose_weights"),
    ("kv_tokens_capacity", regex.compile(r"(?i)\bKV[ ]+cache(?:[ ]+size)?(?:[ ]+(?:is|of|=|:|holds))?[ ]*[:=]?[ ]*" + _N
                                         + r"[ ]+tok(?:en)?s\b"), "prose_kv_tokens"),
    ("kv_tokens_capacity", regex.compile(r"(?i)(?<![\d,.])" + _N + r"-token[ ]+KV[ ]+(?:pool|cache)\b"), "prose_kv_tokens"),
    # (what one request needs is not the pool: "required about 36 GiB of KV cache", "4.5 GiB KV cache is
    # needed" broken over two lines — vLLM's admission check retold, read by _NEED_AVAIL)
    ("kv_cache_gib", regex.compile(r"(?i)(?<![\d.])(?<!\b(?:need(?:s|ed)?|requir(?:e|es|ed|ing))[ ]+(?:(?:about|roughly|around"
                                   r"|approximately|nearly|almost)[ ]+|~)?)" + _F
                                   + r"[ ]?GiB(?:[ ]+of[ \n]+|[ ]*\n[ ]*of[ ]+|[ ]+for[ \n]+|[ ]*\n[ ]*for[ ]+|[ ]+)(?:the[ ]+)?KV(?:[ ]+cache)?\b"
                                   r"(?![ \n]{1,3}(?:(?:is|cache[ \n]{1,3}is)[ \n]{1,3})?needed)"), "prose_kv_gib"),
    ("block_size", regex.compile(r"(?i)\bblock[ _-]?size[ ]+(?:of|is|=)[ ]+(?P<n>\d{1,4})\b"), "prose_block_size"),
    # "0.95 GPU util", and the flag named in words with its value ("raising `gpu-memory-utilization`
    # to 0.95", "gpu_memory_utilization at 0.8"); a proposal ("try raising … to 0.95") is skipped below
    ("gpu_memory_utilization", regex.compile(r"(?i)(?<![\d.])(?P<f>0?\.\d{1,4})[ ]+(?:gpu[ _-]?)?(?:mem(?:ory)?[ _-]?)?util(?:ization)?\b"
                                             r"|(?<![\w-])`?(?:--)?gpu[_-]memory[_-]utilization`?[ ]+(?:at|of|to|is|was)[ ]+"
                                             r"(?P<f>0?\.\d{1,4})(?![\d.])"),
     "prose_util"),
    ("estimated_max_model_len", regex.compile(r"(?i)\bestimat(?:es|ed|ing)[ ]+(?:the[ ]+)?max(?:imum)?(?:[ ]+model)?(?:[ ]+len(?:gth)?)?"
                                              r"(?:[ ]+(?:is|of|at|as))?[ ]+" + _N + r"\b"), "prose_estimate"),
    ("total_gpu_memory_gib", regex.compile(r"(?i)\btotal[ _]gpu[ _]memory[ ]*[:=(]?[ ]*" + _F + r"[ ]?GiB"), "prose_total"),
    ("activation_peak_gib", regex.compile(r"(?i)\bpeak[ ]+activations?(?:[ ]+memory)?[ ]*[:=]?[ ]*" + _F + r"[ ]?GiB"), "prose_activation"),
    ("max_concurrency", regex.compile(r"(?i)\bConcurrency[ ]*[:=]?[ ]*" + _F + r"[ ]?x\b"), "prose_concurrency"),
    # "786,432 tokens / 3.0x": vLLM's "GPU KV cache size: N tokens" + "Maximum concurrency …: F x" retold
    ("kv_tokens_capacity", regex.compile(r"(?i)(?<![\d,.])" + _N + r"[ ]+tok(?:en)?s[ ]*/[ ]*\d+(?:\.\d+)?[ ]?x\b"), "prose_kv_tokens"),
    ("max_concurrency", regex.compile(r"(?i)(?<![\d,.])\d{1,3}(?:,\d{3})+[ ]+tok(?:en)?s[ ]*/[ ]*" + _F + r"[ ]?x\b"), "prose_concurrency"),
    # "156.9x vs 20.43x max concurrency", "(1.24x concurrency)": the first figure is the run the sentence is about
    # (decimals as vLLM prints them: "2x concurrency" is more often a relative gain)
    ("max_concurrency", regex.compile(r"(?i)(?<![\d.])(?P<f>\d+\.\d+)[ ]?x(?:[ ]+(?:vs\.?|versus)[ ]+\d+(?:\.\d+)?[ ]?x)?[ ]+"
                                      r"(?:max(?:imum)?[ ]+)?concurrency\b"), "prose_concurrency"),
    # "KV 0.78 GiB / 31,129 tokens", "12 GiB/rank serves 786,432 tokens": a KV pool and what it holds
    ("kv_tokens_capacity", regex.compile(r"(?i)\bKV(?:[ ]+cache|[ ]+pool)?[ ]*[:=]?[ ]*\d+(?:\.\d+)?[ ]?GiB[ ]*[/,][ ]*" + _N
                                         + r"[ ]+tok(?:en)?s\b"
                                         r"|(?<![\d.])\d+(?:\.\d+)?[ ]?GiB(?:[ ]*/[ ]*(?:rank|GPU)|[ ]+per[ ]+(?:rank|GPU))?[ ]+"
                                         r"(?:serves|holds|stores|fits)[ ]+" + _N.replace("<n>", "<n2>") + r"[ ]+tok(?:en)?s\b"
                                         # "(38.43 GiB KV cache, 3,511,589 tokens, …)"
                                         r"|(?<![\d.])\d+(?:\.\d+)?[ ]?GiB[ ]+(?:of[ ]+)?KV(?:[ ]+cache)?[ ]*,[ ]*"
                                         + _N.replace("<n>", "<n3>") + r"[ ]+tok(?:en)?s\b"),
     "prose_kv_tokens"),
    ("kv_cache_gib", regex.compile(r"(?i)\bKV(?:[ ]+cache|[ ]+pool)?[ ]*[:=]?[ ]*" + _F + r"[ ]?GiB[ ]*[/,][ ]*\d{1,3}(?:,\d{3})*[ ]+tok(?:en)?s\b"),
     "prose_kv_gib"),
    # "168 blocks of ~193 available": the GPU's block count
    ("gpu_blocks", regex.compile(r"(?i)\bblocks[ ]+of[ ]+~?" + _N + r"[ ]+(?:available|free|in[ ]+total|total)\b"), "prose_blocks"),
    ("max_model_len", regex.compile(r"(?i)(?:\bat[ ]+|\bwith[ ]+)" + _N + r"[ ]+(?:tokens?[ ]+(?:of[ ]+)?)?context\b"
                                    r"|\bContext(?:[ ]+(?:length|window))?[ ]*[:=]?[ ]*" + _N.replace("<n>", "<n2>") + r"[ ]+tok"
                                    r"|(?<![\d,.])" + _N.replace("<n>", "<n3>") + r"-token[ ]+context\b"
                                    r"|\bmax[_-]model[_-]len[ ]+(?:at|of|to|is)[ ]+~?" + _N.replace("<n>", "<n4>") + r"\b"
                                    # "with 128k context", "a 32K context window", "context length of 64k": a
                                    # context in thousands, as model cards count them (128K = 131,072)
                                    r"|(?:\b(?:at|with|a|an|need|want|of|for)[ ]+)(?P<k>\d{1,4})[ ]?[kK][ ]+(?:tokens?[ ]+(?:of[ ]+)?)?"
                                    r"context\b(?![ ]*(?:model|version|variant))"
                                    r"|\bcontext[ ]+(?:length|window)[ ]+(?:of[ ]+)?(?P<k2>\d{1,4})[ ]?[kK]\b"),
     "prose_context"),
)


# "need 8.33 GiB, only 8.29 GiB", "5.98 GiB KV needed vs 1.82 avail": the V1 admission check retold
_NEED_AVAIL = regex.compile(
    r"(?i)\bneed(?:s|ed)?[ ]+(?P<need>\d+(?:\.\d+)?)[ ]?GiB(?:[ ]+(?:of[ ]+)?KV(?:[ ]+cache)?)?[ ]*[,;]?[ ]+(?:but[ ]+|vs\.?[ ]+|while[ ]+)?"
    r"(?:only[ ]+)?(?P<avail>\d+(?:\.\d+)?)[ ]?(?:GiB)?(?:[ ]+(?:avail(?:able)?|free|left))?"
    r"|(?P<need2>\d+(?:\.\d+)?)[ ]?GiB[ ]+(?:of[ ]+)?KV(?:[ ]+cache)?[ ]+(?:is[ ]+)?needed[ ]*[,;]?[ ]+(?:but[ ]+|vs\.?[ ]+|while[ ]+)?"
    r"(?:(?:only[ ]+)?(?P<avail2>\d+(?:\.\d+)?)[ ]?(?:GiB[ ]+)?(?:avail(?:able)?|free|left)\b"
    # vLLM's message shortened: "1.75 GiB KV cache is needed, available 0.13 GiB"
    r"|(?:avail(?:able)?|free|left)(?:[ ]+(?:is|was))?(?:[ ]+only)?[ ]+(?P<avail3>\d+(?:\.\d+)?)[ ]?GiB\b)")
# "2 x 4.99 = 9.98 GiB pool": a pool summed over GPUs; vLLM reports the per-GPU figure
_POOL_SPLIT = regex.compile(
    r"(?i)(?<![\w.])(?P<c>\d{1,2})[ ]*[x*][ ]*(?P<f>\d+\.\d+)(?:[ ]?GiB)?[ ]*=[ ]*(?P<t>\d+(?:\.\d+)?)[ ]?GiB[ ]+"
    r"(?:of[ ]+)?(?:KV[ ]+)?(?:cache[ ]+)?pool\b")
# vLLM ≥0.20's "The current --gpu-memory-utilization=0.8 is equivalent to --gpu-memory-utilization=0.758
# without CUDA graph profiling" retold: "makes 0.80 effectively 0.758"
_GMU_EQUIVALENT = regex.compile(
    r"(?i)\bCUDA[ -]?graph[^\n]{0,80}?\b(?:makes|turns)[ ]+(?P<f>0?\.\d{1,4})[ ]+(?:effectively|equivalent[ ]+to)[ ]+0?\.\d{1,4}\b")
# A weight-only method named on its own ("(AWQ + external MTP …)"), or any quantization right after
# a parameter count ("Gemma 4 31B INT4"). FP8/INT8 alone may be a KV-cache dtype, so they need the count.
_QUANT_WORD = regex.compile(
    r"(?i)(?<![\w./-])(?P<q>AWQ|GPTQ|AutoRound)(?![\w/-]|\.\w)"
    r"|(?<![\w.])\d{1,4}(?:\.\d+)?B(?:-A\d+(?:\.\d+)?B)?[ ]+(?P<q2>INT4|INT8|FP8|AWQ|GPTQ|NVFP4|MXFP4|W4A16|W8A8)(?![\w-])")
# "FP8 weights", "the AWQ checkpoint": a quantization named as what the weights are — not vLLM's
# kv_cache.py warning "… make sure Q/prob scaling factors are available in the fp8 checkpoint", which any
# checkpoint with attention scales prints (vllm#17327's w4a16 one)
_QUANT_PROSE = regex.compile(r"(?i)\b(?<!scaling[ ]factors[ ]are[ ]available[ ]in[ ]the[ ])"
                             r"(?P<q>FP8|AWQ|GPTQ|NVFP4|MXFP4|GGUF|bitsandbytes|bnb)[ ]+(?:weights|checkpoint|quantized|quantization)\b")


# vLLM's fused-MoE tuning file it looked for names the weight format the kernel runs:
# "Config file not found at …/E=128,N=768,device_name=NVIDIA_GeForce_RTX_3090,dtype=int4_w4a16.json"
_MOE_CONFIG_DTYPE = regex.compile(r"device_name=[\w-]{1,80},dtype=(?P<q>int4_w4a16|int8_w8a16|fp8_w8a8|int8_w8a8)"
                                  r"(?:,block_shape=\[\d+,[ ]?\d+\])?\.json")
_MOE_DTYPE_FORMAT = {"int4_w4a16": "int4", "int8_w8a16": "int8", "fp8_w8a8": "fp8", "int8_w8a8": "int8"}


# a command or config that sets the length: "--max-model-len $max_model_len", "max_model_len=4096"
_SETS_LENGTH = regex.compile(r"--max[-_]model[-_]len\b|\bmax_model_len[ ]*[=:]")


def find_values(text: str, skip: list[tuple[int, int]], suggestion) -> list[Hit]:
    out: list[Hit] = []
    for m in _iter(_MOE_CONFIG_DTYPE, text, limit=5):
        out.append(Hit("quantization", _MOE_DTYPE_FORMAT[m.group("q")], m.start("q"), m.end("q"), "moe_config_dtype", 11))
    for m in _iter(_NEED_AVAIL, text, limit=20):
        if _inside(m.start(), skip) or suggestion(text, m.start()):
            continue
        ng, ag = ("need", "avail") if m.group("need") else ("need2", "avail2" if m.group("avail2") else "avail3")
        need, avail = float(m.group(ng)), float(m.group(ag))
        if need > avail:
            out.append(Hit("kv_needed_gib", need, m.start(ng), m.end(ng), "prose_need_avail", 20))
            out.append(Hit("kv_available_gib", avail, m.start(ag), m.end(ag), "prose_need_avail", 20))
            # V1 hands the KV cache exactly the available KV memory (gpu_worker.determine_available_memory)
            out.append(Hit("kv_cache_gib", avail, m.start(ag), m.end(ag), "prose_need_avail", 18))
    for m in _iter(_POOL_SPLIT, text, limit=20):
        if _inside(m.start(), skip):
            continue
        count, per, total = int(m.group("c")), float(m.group("f")), float(m.group("t"))
        # the arithmetic must hold to the printed precision, else it is not a per-GPU split
        if 1 < count <= 64 and abs(count * per - total) <= 0.006 * count:
            out.append(Hit("kv_cache_gib", per, m.start("f"), m.end("f"), "prose_pool_split", 20))
    for m in _iter(_GMU_EQUIVALENT, text, limit=10):
        if not _inside(m.start(), skip):
            # a retold vLLM notice, not a proposal, even on a line that also suggests a fix
            out.append(Hit("gpu_memory_utilization", float(m.group("f")), m.start("f"), m.end("f"), "prose_util_equivalent", 20))
    for m in _iter(_QUANT_WORD, text, limit=20):
        if not _inside(m.start(), skip):
            q = (m.group("q") or m.group("q2")).lower()
            g = "q" if m.group("q") else "q2"
            out.append(Hit("quantization", {"bnb": "bitsandbytes", "w4a16": "int4", "w8a8": "int8",
                                            "autoround": "auto_round"}.get(q, q),
                           m.start(g), m.end(g), "prose_quant_word", 9, guess=True))
    for m in _iter(_LOAD_IN_BITS, text, limit=5):
        if m.group("on").lower() == "true" and not _inside(m.start(), skip):
            out.append(Hit("quantization", "bitsandbytes", m.start(), m.end(), "prose_load_in_bits", 12))
    for m in _iter(_QUANT_PROSE, text, limit=20):
        if not _inside(m.start(), skip):
            q = m.group("q").lower()
            out.append(Hit("quantization", {"bnb": "bitsandbytes"}.get(q, q), m.start("q"), m.end("q"), "prose_quant", 12))
    # One number is one fact: "Weights 31.18 GiB" is not also a KV pool because the next row of a
    # summary starts with "KV cache". The first rule that claims a number keeps it.
    claimed: dict[tuple[int, int], str] = {}
    sets_length: bool | None = None     # does a command or config set the length (searched once, when asked)
    for key, pat, src in _VALUE_RULES:
        for m in _iter(pat, text, limit=100):
            grp = next((g for g in ("n", "n2", "n3", "n4", "f", "k", "k2") if g in m.groupdict() and m.group(g)), None)
            if grp is None or _inside(m.start(), skip) or suggestion(text, m.start()):
                continue
            if claimed.setdefault(m.span(grp), key) != key:
                continue
            if grp in ("k", "k2"):
                if sets_length is None:
                    sets_length = _SETS_LENGTH.search(text) is not None
                if sets_length:
                    continue    # a context in thousands retells a run whose command sets it (vllm#33155's "85K")
            raw = m.group(grp).replace(",", "")
            value: object = float(raw) if grp == "f" else int(raw) * 1024 if grp in ("k", "k2") else int(raw)
            if key in ("tensor_parallel_size", "pipeline_parallel_size") and not 1 <= int(value) <= 64:
                continue
            out.append(Hit(key, value, m.start(grp), m.end(grp), src, 20))
            if key == "kv_cache_gib" and regex.search(r"(?i)avail|leav|left|only", text[max(0, m.start() - 40): m.start()]):
                out.append(Hit("kv_available_gib", value, m.start(grp), m.end(grp), src, 20))
    return out


# Model names written without their organisation ("The model used is Qwen3.6-27B-FP8").
# (ASCII word characters: a Hub name has none else, and Chinese written up against it ends it: "部署GLM-5.1多节点")
_BARE_MODEL = regex.compile(
    r"(?<![\w/.-])(?P<name>(?:Qwen|QwQ|Llama|Meta-Llama|Mistral|Mixtral|Ministral|Codestral|Devstral|DeepSeek|gemma|Phi|Kimi|GLM|"
    r"InternVL|MiniMax|Falcon|granite|gpt-oss|Nemotron)[\w.-]*?\d(?:[\w.-]*?[\w])?)"
    # an Ollama-style tag: the size after a colon ("qwen3.5:9b", "qwen3:30b-a3b"), the Hub's "-9B"
    r"(?::(?P<tag>\d+(?:\.\d+)?b(?:-a\d+(?:\.\d+)?b)?)(?!\w|\.\w))?(?![\w/-]|[.:]\w)"
    # the size written apart ("Llama-3 70B", "Qwen2.5 7B"): the Hub's "-70B"
    r"(?:[ ](?P<size>\d+(?:\.\d+)?b)(?:[ -](?P<act>a\d+(?:\.\d+)?b))?(?![\w/-]|[.:]\w))?", regex.I | regex.A)


# ... and names written as words ("Gemma 4 31B INT4", "Llama 3.1 8B Instruct", "Mistral 7B", "Qwen 2.5 72B"):
# the family, a space, an optional version and the size, each apart. The Hub joins them with hyphens, except
# where the family glues its version on (Qwen2.5-7B): both spellings are tried, the catalog's wins.
_SPACED_MODEL = regex.compile(
    r"(?<![\w/.-])(?P<fam>Qwen|Llama|Mistral|Mixtral|Ministral|Devstral|Gemma|Phi|Falcon|Granite|GLM|Nemotron|OLMo)"
    r"[ ](?:(?P<ver>\d{1,2}(?:\.\d{1,2})?)[ ])?(?P<size>(?:\d[xX])?\d{1,3}(?:\.\d)?B)(?:[ -](?P<act>A\d{1,2}(?:\.\d)?B))?"
    r"(?:[ ](?P<var>Instruct|Chat|it|Base))?(?![\w/-]|[.:]\w)", regex.I | regex.A)
# families whose Hub names glue the version on (Qwen2.5, Qwen3) rather than hyphenating it (gemma-4, Llama-3.1)
_GLUED_VERSION = ("qwen",)
# ... and the large MoE families named by a version alone ("MiniMax M2.7", "Kimi K2.5", "DeepSeek V3.2 Exp",
# "GLM 4.6 Air"): the Hub joins the words with hyphens (MiniMaxAI/MiniMax-M2.7, zai-org/GLM-4.6)
_VERSIONED_MODEL = regex.compile(
    r"(?<![\w/.-])(?P<fam>MiniMax|Kimi|DeepSeek|GLM)[ ](?P<ver>[KMRV]?\d{1,2}(?:\.\d{1,2})?)"
    r"(?:[ ](?P<var>Flash|Pro|Air|Lite|Exp|Thinking|Instruct))?(?![\w/-]|[.:]\w)", regex.I | regex.A)


def _spaced_name(m) -> str | None:
    """The repo a name written as words spells, or None when the version is not a model's."""
    fam, ver, size = m.group("fam"), m.group("ver"), m.group("size")[:-1].lower() + "B"
    tail = f"-{size}" + (f"-{m.group('act').upper()}" if m.group("act") else "") + \
        (f"-{m.group('var')}" if m.group("var") and m.group("var").lower() != "base" else "")
    stems = [fam] if not ver else [f"{fam}-{ver}", f"{fam}{ver}"]
    if fam.lower() in _GLUED_VERSION:
        stems.reverse()
    # a version that is a model of its own ("Phi 4 14B" is microsoft/phi-4) keeps the catalog's id
    return _catalog_first([stem + tail for stem in stems] + (stems if ver else []))


def _catalog_first(names: list[str], fallback: str | None = None) -> str | None:
    """The repo the first of `names` the catalog knows spells; else `fallback`'s guess, or the first
    name's guess when no fallback is given."""
    repos = [guess_repo(n) for n in names]
    known = next((r for r in repos if r and canonical_id(r)), None)
    if known:
        return known
    if fallback is not None:
        return guess_repo(fallback)
    return next((r for r in repos if r), None)


def find_bare_models(text: str, skip: list[tuple[int, int]]) -> list[Hit]:
    out = []
    for m in _iter(_SPACED_MODEL, text, limit=100):
        repo = None if _inside(m.start(), skip) else _spaced_name(m)
        if repo:
            out.append(Hit("model", repo, m.start(), m.end(), "prose_model_name", 8, guess=True))
    for m in _iter(_VERSIONED_MODEL, text, limit=100):
        stem = f"{m.group('fam')}-{m.group('ver')}"
        repo = None if _inside(m.start(), skip) else _catalog_first(
            ([f"{stem}-{m.group('var')}"] if m.group("var") else []) + [stem])
        if repo:
            out.append(Hit("model", repo, m.start(), m.end(), "prose_model_name", 8, guess=True))
    for m in _iter(_BARE_MODEL, text, limit=100):
        name = m.group("name") + (f"-{m.group('tag').upper()}" if m.group("tag") else "")
        size = m.group("size") and m.group("size") + (f"-{m.group('act').upper()}" if m.group("act") else "")
        sized = f"{name}-{size}" if size and not m.group("tag") \
            and not _SIZE_TOKEN.search(name) else ""
        if _inside(m.start(), skip) or "-" not in (sized or name):
            continue
        # a name that is a model of its own ("phi-4 14B" is microsoft/phi-4) keeps its catalog id; else
        # the size written apart completes it
        if sized:
            repo = _catalog_first([name] if "-" in name else [], fallback=sized)
        else:
            repo = guess_repo(name)
        if repo:
            out.append(Hit("model", repo, m.start("name"), m.end(), "prose_model_name", 8, guess=True))
    return out
