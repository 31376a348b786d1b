"""Numbers people put in tables: markdown / pipe tables and "Label: value" summary rows.

Why a stage of its own: write-ups restate vLLM's figures in tables ("| KV pool | 7.71 GiB |",
"| FP8 | 377,456 | 14.28 GiB |", "| `--max-num-seqs` | 2 | **3** |"), and a table often compares
several runs. A cell is read only when its label (the row's first cell, or the column header)
names a known quantity AND the cell holds a number in that quantity's unit — a bare number
under an unknown label is never read. When the table compares runs, one run is picked by a
rule, never by position alone:

- columns headed "Before"/"Current"/… against "After"/"Proposed"/… → the "before" column (what
  the user runs; the rest is a proposal);
- columns headed by model names → the column naming the model the paste is about;
- rows that are runs (a header of quantities, several data rows) → the one row that holds the
  error message, or a value the paste also states outside the table for the same quantity.

Anything else with more than one candidate run is left unread (the paste does not say which).
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from estimator import flags as _flags
from estimator.paste_prose import Hit, quantization_in_name
from estimator.paste_text import budget

TIMEOUT = 0.2
MAX_TABLE_LINES = 400      # a paste's tables together; more is a log dump, not a summary
MAX_ROWS = 60              # rows of one table we read
PRIORITY = 22              # above prose restatements (20), below flags, logs and errors
PRIORITY_SUMMARY = 21      # "Label: value" lines outside a table

_SEP_CELL = regex.compile(r"[ ]*:?-{2,}:?[ ]*")
_BOX_RULE = regex.compile(r"[ ]*\+[-=+]+\+?[ ]*$")        # nvidia-smi box rules
_WORD = regex.compile(r"[\w.-]+")
_LABEL_SEP = str.maketrans({"`": " ", "*": " ", "_": " ", "-": " ", "/": " "})
_NUM_INT = r"(?P<n>\d{1,3}(?:,\d{3})+(?![\d])|\d+)(?![\d]|\.\d)"
_NUM_F = r"(?P<n>\d+(?:\.\d+)?|\.\d+)"
_APPROX = regex.compile(r"[~≈<>≤≥]|\babout\b|\bapprox", regex.I)

# Value shapes by unit kind (matched at the start of a cleaned cell).
# vLLM prints negative GiB figures ("Available KV cache memory: -1.05 GiB", 0.11's "-0.45 GiB for CUDAGraph
# memory"), and restatements keep the sign
_NUM_SIGNED = r"(?P<n>-?\d+(?:\.\d+)?|-?\.\d+)"
_V_GIB = regex.compile(r"\A" + _NUM_SIGNED + r"[ ]?GiB\b")
_V_TOKENS = regex.compile(r"\A" + _NUM_INT + r"(?:[ ]+tok(?:en)?s\b)?(?![ ]*(?:[A-Za-z%]|\.\d))")
_V_TOKENS_STRICT = regex.compile(r"\A" + _NUM_INT + r"[ ]+tok(?:en)?s\b")
_V_INT = regex.compile(r"\A" + _NUM_INT + r"(?![ ]*(?:[A-Za-z%]|\.\d))")
_V_FRAC = regex.compile(r"\A(?P<n>0?\.\d{1,4}|1(?:\.0{1,4})?)(?![\d%])")
_V_X = regex.compile(r"\A" + _NUM_F + r"[ ]?x\b")
_INLINE_CONCURRENCY = regex.compile(r"\(" + _NUM_F + r"[ ]?x[ ]+(?:max(?:imum)?[ ]+)?concurrency\)", regex.I)

# Normalised label (lower case; '-', '_', '/' read as spaces) → (key, value kind).
_LABELS: tuple[tuple[regex.Pattern, str, str], ...] = tuple((regex.compile(p), k, u) for p, k, u in (
    (r"(?:gpu )?kv(?: cache)?(?: (?:size|capacity|pool))?(?: \(?tokens?\)?)?", "kv_tokens_capacity", "tokens"),
    (r"(?:gpu )?kv(?: cache)?(?: (?:size|pool|memory))?(?: \(?gib\)?)?|reserved for kv cache", "kv_cache_gib", "gib"),
    (r"available kv cache(?: memory)?(?: \(?gib\)?)?", "kv_available_gib", "gib"),
    (r"(?:model )?weights?(?: memory)?(?: (?:gpu|per gpu|per rank))?(?: \(?gib\)?)?", "weights_gib", "gib"),
    (r"max(?:imum)? model len(?:gth)?(?: that fits)?|max(?:imum)? context(?: length)?|context(?: length| window)?",
     "max_model_len", "int"),
    (r"max num seqs", "max_num_seqs", "int"),
    (r"max num batched tokens", "max_num_batched_tokens", "int"),
    (r"gpu mem(?:ory)? util(?:ization)?|mem(?:ory)? util(?:ization)?|gmu", "gpu_memory_utilization", "frac"),
    (r"(?:max(?:imum)? )?concurrency", "max_concurrency", "x"),
    (r"(?:gpu |available |num gpu |# ?gpu )?blocks", "gpu_blocks", "int"),
    (r"tp(?: size)?|tensor parallel(?: size)?", "tensor_parallel_size", "int"),
    (r"pp(?: size)?|pipeline parallel(?: size)?", "pipeline_parallel_size", "int"),
    (r"total gpu memory", "total_gpu_memory_gib", "gib"),
    (r"peak activations?(?: memory)?(?: \(?gib\)?)?", "activation_peak_gib", "gib"),
    # vLLM 0.11+'s start-up breakdown restated ("Non-torch memory: 0.13 GiB", "| CUDAGraph Memory (GiB) |")
    (r"non torch(?: memory)?(?: \(?gib\)?)?", "non_torch_gib", "gib"),
    (r"cuda ?graphs?(?: memory| pool)?(?: \(?gib\)?)?", "cuda_graph_gib", "gib"),
    (r"precision|quantization|quant|variant|weights? (?:format|dtype|precision)", "quantization", "quant"),
))
# A label may match two rules ("KV cache | 7.71 GiB" vs "KV cache | 150,992 tokens"): the cell's
# unit picks one (tokens need the word "tokens" in the cell or the label). A label that names the unit
# ("Model Weight (GiB)") lets its cells give bare numbers ("64.38").
_LABEL_GIB = regex.compile(r"\(gib\)\Z")
_V_BARE = regex.compile(r"\A" + _NUM_SIGNED + r"(?![ ]*[A-Za-z%]|[\d.,])")

_BEFORE = regex.compile(r"(?i)\A(?:before|current|currently|old|baseline|main|master|original|existing|today|was)\b")
_AFTER = regex.compile(r"(?i)\A(?:after|new|proposed|pr|this pr|patched|with (?:this|the) (?:pr|patch|fix)|now|fixed|target)\b")

_SUMMARY = regex.compile(r"(?m)^[ ]*(?:[-*•+][ ]+)?(?P<label>[A-Za-z][\w /().#-]{1,40}?)[ ]*:[ ]+(?P<cell>[^\n]{1,80})$")


@dataclass
class _Row:
    cells: list[tuple[str, int, int]]     # (text, start, end) in the logical text
    start: int
    end: int


def _norm_label(text: str) -> str:
    t = text.strip().strip("*_` ").lower()
    t = t.translate(_LABEL_SEP)
    return " ".join(t.split())


def label_keys(label: str) -> list[tuple[str, str]]:
    """(key, value kind) pairs a cell label can name; a flag spelling ('--max-num-seqs') too."""
    raw = label.strip().strip("*_` ")
    if raw.startswith("-"):
        key = _flags.flag_key(raw.split()[0].strip("`*"))
        if key in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size",
                   "pipeline_parallel_size", "block_size"):
            return [(key, "int")]
        if key == "gpu_memory_utilization":
            return [(key, "frac")]
        return []
    low = _norm_label(label)
    if not low or len(low) > 48:
        return []
    return [(k, u) for pat, k, u in _LABELS if pat.fullmatch(low, timeout=budget(TIMEOUT))]


def _clean_cell(text: str) -> tuple[str, int]:
    """Cell text without markdown emphasis/backticks and leading space; offset of what is left."""
    lead = len(text) - len(text.lstrip(" *_`"))
    return text[lead:].replace("*", " ").replace("`", " "), lead


def read_cell(text: str, kind: str) -> tuple[object, int, int] | None:
    """(value, start, end) of the value a cell states in `kind`'s unit, offsets inside `text`."""
    body, lead = _clean_cell(text)
    if not body or _APPROX.match(body, timeout=budget(TIMEOUT)):
        return None
    if kind == "quant":
        q = quantization_in_name(body.split("(")[0].strip().replace(" ", "-"))
        if q is None:
            return None
        word = _WORD.match(body, timeout=budget(TIMEOUT))
        return q, lead, lead + (word.end() if word else len(body))
    pat = {"gib": _V_GIB, "gib_bare": _V_BARE, "tokens": _V_TOKENS, "int": _V_INT, "frac": _V_FRAC, "x": _V_X}[kind]
    m = pat.match(body, timeout=budget(TIMEOUT))
    if not m:
        return None
    raw = m.group("n").replace(",", "")
    if kind == "gib_bare" and not raw.strip("0."):
        return None
    value: object = int(raw) if kind in ("tokens", "int") else float(raw)
    return value, lead + m.start("n"), lead + m.end("n")


def _cell_hits(key: str, kind: str, cell: tuple[str, int, int], src: str, prio: int,
               label_says_tokens: bool = False, label_says_gib: bool = False) -> list[Hit]:
    text, s, _e = cell
    if kind == "tokens" and not label_says_tokens:
        got = None
        m = _V_TOKENS_STRICT.match(_clean_cell(text)[0], timeout=budget(TIMEOUT))
        if m:
            got = read_cell(text, "tokens")
    else:
        got = read_cell(text, kind)
        if got is None and kind == "gib" and label_says_gib:
            got = read_cell(text, "gib_bare")
    out: list[Hit] = []
    if got is not None:
        v, a, b = got
        out.append(Hit(key, v, s + a, s + b, src, prio))
        if key == "kv_available_gib":
            # V1 gives the KV cache exactly the available KV memory (gpu_worker.determine_available_memory)
            out.append(Hit("kv_cache_gib", v, s + a, s + b, src, prio - 2))
    for m in _INLINE_CONCURRENCY.finditer(text, timeout=budget(TIMEOUT)):
        out.append(Hit("max_concurrency", float(m.group("n")), s + m.start("n"), s + m.end("n"), src, prio))
    return out


def _hits_for(label: str, cell: tuple[str, int, int], src: str, prio: int) -> list[Hit]:
    keys = label_keys(label)
    tokens_label = "token" in label.lower()
    gib_label = bool(_LABEL_GIB.search(_norm_label(label), timeout=budget(TIMEOUT)))
    out: list[Hit] = []
    for key, kind in keys:
        out += _cell_hits(key, kind, cell, src, prio, tokens_label, gib_label)
    # the inline "(1.24x concurrency)" is read once even when two label rules matched
    seen: set = set()
    uniq = []
    for h in out:
        k = (h.key, h.value, h.start)
        if k not in seen:
            seen.add(k)
            uniq.append(h)
    return uniq


# ---------------------------------------------------------------------------------------------


def _tables(text: str) -> list[list[_Row]]:
    """Runs of adjacent lines with at least two '|'-separated cells."""
    tables: list[list[_Row]] = []
    cur: list[_Row] = []
    seen_lines = 0
    pos = 0
    n = len(text)
    while pos < n and seen_lines < MAX_TABLE_LINES:
        bar = text.find("|", pos)
        if bar < 0:
            break
        ls = text.rfind("\n", 0, bar) + 1
        le = text.find("\n", bar)
        le = n if le < 0 else le
        row = _split_row(text, ls, le)
        if row is not None:
            if cur and cur[-1].end + 1 != ls:
                tables.append(cur)
                cur = []
            cur.append(row)
            seen_lines += 1
        pos = le + 1
    if cur:
        tables.append(cur)
    return [t for t in tables if len(t) >= 2]


def _split_row(text: str, ls: int, le: int) -> _Row | None:
    line = text[ls:le]
    if len(line) > 2000 or line.count("|") > 40:
        return None
    if _BOX_RULE.match(line, timeout=budget(TIMEOUT)):
        return None                    # nvidia-smi box rules
    cells: list[tuple[str, int, int]] = []
    start = 0
    body = line
    lead = len(body) - len(body.lstrip(" "))
    if body[lead:lead + 1] == "|":
        start = lead + 1
    stop = len(body.rstrip(" "))
    if stop > start and body[stop - 1] == "|":
        stop -= 1
    i = start
    while i <= stop:
        j = body.find("|", i, stop)
        if j < 0:
            j = stop
        cells.append((body[i:j], ls + i, ls + j))
        i = j + 1
    if len(cells) < 2:
        return None
    return _Row(cells, ls, le)


def _is_sep(row: _Row) -> bool:
    return all(_SEP_CELL.fullmatch(c[0], timeout=budget(TIMEOUT)) or not c[0].strip() for c in row.cells) \
        and any("-" in c[0] for c in row.cells)


def find_table_values(text: str, model: str | None, anchors: list[tuple[str, object, int]],
                      error_positions: list[int]) -> list[Hit]:
    """Values stated in tables and summary rows. `model`: the repo id the paste is about (picks a
    column headed by model names); `anchors`: (key, value, pos) read elsewhere in the paste (pick
    the row that restates one); `error_positions`: where error messages were read (pick the row
    that holds one)."""
    out: list[Hit] = []
    spans: list[tuple[int, int]] = []
    try:
        tables = _tables(text)
    except TimeoutError:
        return out
    for rows in tables:
        spans.append((rows[0].start, rows[-1].end))
        header = None
        body = rows
        if len(rows) >= 2 and _is_sep(rows[1]):
            header, body = rows[0], rows[2:]
        body = [r for r in body if not _is_sep(r)][:MAX_ROWS]
        out += _row_labelled(header, body if header else rows, model)
        out += _column_labelled(header or rows[0], body if header else rows[1:], anchors, error_positions)
    out += _summary_rows(text, spans)
    return out


def _pick_column(header: _Row | None, width: int, model: str | None) -> int | None:
    """Which value column of a row-labelled table is the paste's own run."""
    if width == 2:
        return 1
    if header is None or len(header.cells) != width:
        return None
    heads = [_clean_cell(c[0])[0].strip() for c in header.cells]
    before = [j for j in range(1, width) if _BEFORE.match(heads[j])]
    after = [j for j in range(1, width) if _AFTER.match(heads[j])]
    if len(before) == 1 and after:
        return before[0]
    if model:
        name = model.rsplit("/", 1)[-1].lower()
        named = [j for j in range(1, width) if _names(heads[j].lower(), name)]
        if len(named) == 1:
            return named[0]
    return None


def _names(head: str, name: str) -> bool:
    """`name` stands in `head` as a whole token (not inside a longer model name)."""
    i = head.find(name)
    while i >= 0:
        before = head[i - 1] if i else " "
        after = head[i + len(name): i + len(name) + 2] + "  "
        if not (before.isalnum() or before in "-_./") and not (after[0].isalnum() or after[0] in "-_"
                                                                or (after[0] == "." and after[1].isalnum())):
            return True
        i = head.find(name, i + 1)
    return False


def _row_labelled(header: _Row | None, rows: list[_Row], model: str | None) -> list[Hit]:
    """Tables whose first column names the quantity: "| KV pool | 7.01 GiB | 7.71 GiB |"."""
    out: list[Hit] = []
    for row in rows:
        label = row.cells[0][0]
        if not label_keys(label):
            continue
        col = _pick_column(header, len(row.cells), model)
        if col is None:
            continue
        out += _hits_for(label, row.cells[col], "table_row", PRIORITY)
    return out


def _column_labelled(header: _Row, rows: list[_Row], anchors: list[tuple[str, object, int]],
                     error_positions: list[int]) -> list[Hit]:
    """Tables whose header names the quantities and whose rows are runs."""
    labels = [c[0] for c in header.cells]
    keyed = [j for j, lab in enumerate(labels) if label_keys(lab)]
    if not keyed or not rows:
        return []
    rows = [r for r in rows if len(r.cells) == len(labels)]
    if not rows:
        return []
    if len(rows) == 1:
        pick = rows[0]
    else:
        chosen = []
        for r in rows:
            holds_error = any(r.start <= p < r.end for p in error_positions)
            restated = False
            for j in keyed:
                for h in _hits_for(labels[j], r.cells[j], "table_column", PRIORITY):
                    if any(k == h.key and _same(v, h.value) and not (r.start <= p < r.end) for k, v, p in anchors):
                        restated = True
            if holds_error or restated:
                chosen.append(r)
        if len(chosen) != 1:
            return []
        pick = chosen[0]
    out: list[Hit] = []
    for j in keyed:
        out += _hits_for(labels[j], pick.cells[j], "table_column", PRIORITY)
    return out


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < 1e-9
    return str(a).lower() == str(b).lower()


def _summary_rows(text: str, table_spans: list[tuple[int, int]]) -> list[Hit]:
    """"KV pool: 7.71 GiB" / "- Max concurrency: 1.24x" lines: a known label, a value in its unit."""
    out: list[Hit] = []
    if ":" not in text:
        return out
    try:
        it = _SUMMARY.finditer(text, timeout=budget(TIMEOUT))
        for k, m in enumerate(it):
            if k > 2000:
                break
            if any(s <= m.start() < e for s, e in table_spans):
                continue
            label = m.group("label")
            if not label_keys(label):
                continue
            cell = (m.group("cell"), m.start("cell"), m.end("cell"))
            out += _hits_for(label, cell, "summary_row", PRIORITY_SUMMARY)
    except TimeoutError:
        pass
    return out
