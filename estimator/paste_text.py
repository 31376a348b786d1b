"""Text as people paste it → one plain "logical" text the templates can read, with a map back to
the original offsets.

Why a separate stage: a vLLM line arrives wrapped in Slack entities (`&gt;`, `<url|text>`),
Discourse cooked HTML, ANSI colour codes, markdown quotes, and each log line carries a prefix
(`(Worker_TP1 pid=95) INFO 06-26 22:47:13 [gpu_worker.py:466] `) that both hides the message
from a template and tells which GPU rank printed it. Cleaning first keeps every template simple;
the offset maps keep every value's span pointing into what the user pasted.
"""

from __future__ import annotations

import bisect
import html
import time
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field

import regex

TIMEOUT = 0.3
# Deadline of the paste being read, on the reading thread's own CPU clock (time.thread_time()); every
# regex call's timeout is cut to what is left, so a hostile or huge paste returns on time with what
# was found so far. CPU time, not wall time: a server answers several posts at once, and the other
# threads' turns under the GIL are not this paste's cost. Each regex call's own timeout (the `regex`
# package's, against catastrophic backtracking) is wall-clock, though: under load one call's CPU
# second takes several wall seconds, and a template match cut short by the wall clock loses the
# error line (a CI run on two busy cores once saw one of four Discourse replicas racing on the seed
# post decide "no problem"). So a call's timeout is its CPU allowance scaled by how much slower than
# CPU time the wall clock has run for this paste so far (`_load`), at most _MAX_LOAD times.
_DEADLINE: ContextVar[tuple[float, float, float] | None] = ContextVar("kvdoctor_paste_deadline", default=None)
cpu_clock = time.thread_time    # the clock of the paste's budgets (paste.py too)
wall_clock = time.perf_counter  # the clock the `regex` package's timeouts run on
_MAX_LOAD = 8.0                 # a paste's wall/CPU ratio beyond this is a stall, not load
_SETTLE_S = 0.02                # both clocks' first instants carry no ratio worth scaling by


def start_clock(seconds: float):
    """Start the paste's CPU budget; the token is for stop_clock."""
    cpu = cpu_clock()
    return _DEADLINE.set((cpu + seconds, cpu, wall_clock()))


def stop_clock(token) -> None:
    _DEADLINE.reset(token)


def _load(start_cpu: float, start_wall: float) -> float:
    """How many wall seconds one of this thread's CPU seconds has taken since the paste began (≥ 1)."""
    ratio = (wall_clock() - start_wall + _SETTLE_S) / (cpu_clock() - start_cpu + _SETTLE_S)
    return min(_MAX_LOAD, max(1.0, ratio))


def search(pat, text: str, seconds: float = 0.15):
    """pat.search under the paste's budget (`budget(seconds)`); None when it times out, as when it
    finds nothing: hostile input costs a missed fact, never a traceback."""
    try:
        return pat.search(text, timeout=budget(seconds))
    except TimeoutError:
        return None


def finditer(pat, text: str, pos: int = 0, endpos: int | None = None, *, limit: int = 500,
             seconds: float = TIMEOUT):
    """pat.finditer under the paste's budget (`budget(seconds)`), at most `limit` matches: on a
    timeout the matches found so far, as `search` gives None — hostile input costs missed facts,
    never a traceback, and a paste of repeated lines cannot yield unbounded work downstream."""
    try:
        it = pat.finditer(text, pos, len(text) if endpos is None else endpos, timeout=budget(seconds))
        for k, m in enumerate(it):
            if k >= limit:
                return
            yield m
    except TimeoutError:
        return


def budget(default: float = TIMEOUT) -> float:
    """Wall-clock timeout for the next regex call: `default` CPU seconds, or what is left of the
    paste's CPU deadline when less, scaled by the load this paste has run under."""
    d = _DEADLINE.get()
    if d is None:
        return default
    deadline, start_cpu, start_wall = d
    left = deadline - cpu_clock()
    if left <= 0:
        return 0.001
    return max(0.001, min(default, left) * _load(start_cpu, start_wall))


def expired() -> bool:
    d = _DEADLINE.get()
    return d is not None and cpu_clock() >= d[0]
MAX_CHARS = 1_200_000      # read at most this much of a paste (the rest is never a log we need)
MAX_LINE = 20_000          # a longer line is cut: no vLLM message is that long
MAX_CLEANINGS = 40_000     # entity/tag/ANSI replacements; past that the rest is read as it is
MAX_PREFIXED_LINES = 40_000

_CLEAN = regex.compile(
    r"""(?x)
      (?P<ansi>\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\n]{0,200}\x07|(?<![\w\]])\[(?:\d{1,3};)*\d{1,3}m)
    | (?P<entity>&(?:gt|lt|amp|quot|apos|nbsp|\#\d{1,6}|\#x[0-9a-fA-F]{1,5});)
    | (?P<slack><(?:https?://|mailto:)[^|>\s]{1,500}\|(?P<slack_text>[^>\n]{0,500})>)
    | (?P<slackurl><(?P<url>https?://[^|>\s]{1,500})>)
    | (?P<blocktag></?(?:p|div|br|li|tr|pre|h[1-6]|blockquote|ul|ol|table|thead|tbody|details|summary|aside)\b[^<>\n]{0,500}>)
    | (?P<tag></?(?:span|code|strong|em|b|i|a|td|th|img|kbd|sup|sub|mark|del|s)\b[^<>\n]{0,500}>)
    | (?P<similar>\[\s*(?:\.\.\.|…)?\s*\d+\s+similar\s+messages?\s*(?:\.\.\.|…)?\s*\])
    | (?P<crlf>\r\n?)
    | (?P<zw>[\u200b\u200c\u200d\u2060\ufeff])
    """,
)
# one-for-one replacements that keep offsets exact
_SAME_LEN = str.maketrans({
    "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ", "\t": " ",
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": " ", "\u00d7": "x",
    "\uff08": "(", "\uff09": ")", "\uff1a": ":", "\uff0c": ",",
})

# Log-line prefixes, possibly several in a row: markdown/Slack quote bars, process tags
# (`(VllmWorkerProcess pid=3280379)`, `(Worker_TP0 pid=26347)`, `(VllmWorker rank=1 pid=254)`, and a Ray
# worker on another node `(RayWorkerWrapper pid=1463574, ip=192.168.10.60)`),
# torchrun's `[rank0]:`, the level+time+file of vLLM's logger (≤0.7.3 `file.py:N]`, 0.8+
# `[file.py:N]`), uvicorn-style `INFO:     `, container timestamps (a bare `05:17:26` too — Modal's — before
# a process tag or a level), docker compose's service column
# (`qwen3-1  | ` — only before one of the others, so a table row's first cell is never taken), and a
# bare level padded as Python's `%(levelname)-8s` pads it (`INFO     Loading weights took …`, a log whose
# time and file the poster cut: two or more spaces, so a sentence opening "ERROR on start" keeps its word).
_PREFIX = regex.compile(
    r"""(?xm)^(?:
        [ ]{0,8}(?:[>▎┃│][ ]?)+
      | [\w.-]{1,40}[ ]+\|[ ]+(?=\(|(?:INFO|WARNING|ERROR|DEBUG)[ ]|\[rank\d|\d{4}-\d\d-\d\d)
      | [ ]{0,8}\(?[ ]?(?:(?P<proc>[A-Za-z_][\w-]{0,40}(?:[ ](?:PP\d{1,3}(?:_TP\d{1,3})?|TP\d{1,3}))?)[ ]+)?(?:rank=(?P<rank>\d{1,4})[ ]+)?pid=(?P<pid>\d{1,10})(?:,[ ]?ip=[\w.:-]{1,64})?\)[ ]*
      | [ ]{0,8}\[rank(?P<rank2>\d{1,4})\]:?[ ]*
      | [ ]{0,8}(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)[ ]+\d\d-\d\d[ ]+\d\d:\d\d:\d\d(?:\.\d+)?[ ]+(?:\[[^\]\n]{1,80}\]|[\w.-]{1,60}:\d{1,6}\])[ ]?
      | [ ]{0,8}(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):[ ]+
      | [ ]{0,8}\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?[ ]+(?:(?:INFO|WARNING|ERROR|DEBUG)[ ]+)?
      | [ ]{0,8}\d\d:\d\d:\d\d(?:[.,]\d+)?[ ]+(?=\([A-Za-z_][\w-]{0,40}[ ]pid=|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)[ ])
      | [ ]{0,8}(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)[ ]{2,8}(?=[^\s\d])
    )+""")
# V1 worker names: `Worker_TP1`, `Worker_PP1_TP0`, `Worker_DP0_PP1` (0.10.2+), `VllmWorker TP1`,
# `VllmWorker PP0_TP1` (0.10.1); each tag only when its size is above one (multiproc_executor.py)
_PROC_RANK = regex.compile(r"(?:(?<![A-Za-z])PP(?P<pp>\d+)_)?(?<![A-Za-z])TP(?P<tp>\d+)|(?<![A-Za-z])PP(?P<pp2>\d+)")


@dataclass
class _Map:
    """Piecewise map from a derived text back to its source text."""

    starts: list[int] = field(default_factory=list)     # start of each piece in the derived text
    src: list[int] = field(default_factory=list)        # start of each piece in the source text
    src_len: list[int] = field(default_factory=list)    # source length of the piece
    exact: list[bool] = field(default_factory=list)     # piece copied verbatim (offsets shift 1:1)

    def add(self, start: int, src: int, src_len: int, exact: bool) -> None:
        self.starts.append(start)
        self.src.append(src)
        self.src_len.append(src_len)
        self.exact.append(exact)

    def to_src(self, pos: int, end: bool = False) -> int:
        if not self.starts:
            return pos
        i = bisect.bisect_right(self.starts, pos) - 1
        if end and i > 0 and self.starts[i] == pos:
            i -= 1           # an end offset belongs to the piece before the boundary
        i = max(i, 0)
        off = pos - self.starts[i]
        if self.exact[i]:
            return self.src[i] + min(off, self.src_len[i])
        return self.src[i] + (self.src_len[i] if (end and off > 0) or off >= 1 else 0)


@dataclass
class LineInfo:
    """A prefixed log line of the logical text: where its body starts and who printed it."""

    start: int
    rank: tuple | None         # None = driver / engine / unprefixed; ("tp", n) … see rank_key
    proc: str


@dataclass
class PasteText:
    original: str
    clean: str
    logical: str
    clean_map: _Map
    logical_map: _Map
    lines: list[LineInfo]
    line_starts: list[int]
    truncated: bool

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Logical offsets → offsets in the original text."""
        cs = self.logical_map.to_src(start)
        ce = self.logical_map.to_src(end, end=True)
        return (self.clean_map.to_src(cs), self.clean_map.to_src(ce, end=True))

    def _line_at(self, pos: int) -> LineInfo | None:
        """The prefixed log line holding `pos`, if it is one."""
        i = bisect.bisect_right(self.line_starts, pos) - 1
        if i < 0:
            return None
        info = self.lines[i]
        nl = self.logical.find("\n", info.start)
        return info if nl == -1 or pos <= nl else None

    def rank_at(self, pos: int) -> tuple | None:
        info = self._line_at(pos)
        return info.rank if info else None

    def proc_at(self, pos: int) -> str:
        """The process name of the line's prefix ("EngineCore_DP0", "Worker_TP1"), "" where none."""
        info = self._line_at(pos)
        return info.proc if info else ""


def rank_key(proc: str | None, rank: str | None, pid: str | None) -> tuple | None:
    """Which GPU rank printed a line. None = the driver / engine core / a single worker (what a
    user reads as "the" value); ("rank", n) for numbered ranks; ("pid", n) for V0 worker
    processes, which are never the driver (rank 0 logs without a prefix)."""
    if rank is not None:
        return None if int(rank) == 0 else ("rank", int(rank))
    if proc:
        m = _PROC_RANK.search(proc)
        if m and (m.group("tp") is not None or m.group("pp2") is not None):
            tp = int(m.group("tp") or 0)
            pp = int(m.group("pp") or m.group("pp2") or 0)
            return None if tp == 0 and pp == 0 else ("rank", pp * 1000 + tp)
        if proc.startswith(("VllmWorkerProcess", "RayWorkerWrapper", "RayWorker")):
            return ("pid", int(pid or 0))
    return None


def worker_grid(lines: list[LineInfo]) -> tuple[int, int, str] | None:
    """(tensor, pipeline, how) parallel sizes the workers' own line prefixes show, or None.

    V1 names its workers `Worker_TP1` / `Worker_PP1_TP0` ("names": both sizes read); older V1
    `VllmWorker rank=3` and torch's `[rank3]:` give the global rank ("ranks": the world is max
    rank + 1); V0's `(VllmWorkerProcess pid=…)` gives only distinct processes beside the driver
    ("pids": at least that many + 1). A paste may leave lines out, so all are lower bounds."""
    tp = pp = world = 0
    pids: set[int] = set()
    named = False
    for li in lines:
        m = _PROC_RANK.search(li.proc) if li.proc else None
        if not li.rank and not (m and li.proc.startswith(("Worker_", "VllmWorker "))):
            continue        # rank 0's lines count only for the V1 worker names (`Worker_TP0`)
        if li.rank and li.rank[0] == "pid":
            pids.add(li.rank[1])
            continue
        if m and (m.group("tp") is not None or m.group("pp2") is not None):
            named = True
            # vllm/v1/executor/multiproc_executor.py names a worker `_TP{rank}` only when
            # tensor_parallel_size > 1 and `_PP{rank}` only when pipeline_parallel_size > 1:
            # a lone `Worker_TP0` line already says at least two
            tp = max(tp, int(m.group("tp") or 0) + 1, 2 if m.group("tp") is not None else 1)
            pp = max(pp, int(m.group("pp") or m.group("pp2") or 0) + 1,
                     2 if (m.group("pp") or m.group("pp2")) is not None else 1)
        else:
            world = max(world, li.rank[1] + 1)
    if named:
        return max(tp, 1), max(pp, 1), "names"
    if world > 1:
        return world, 1, "ranks"
    if pids:
        return len(pids) + 1, 1, "pids"
    return None


def decode(data: str | bytes | bytearray | None) -> str:
    """A paste's text from its bytes: UTF-16 where a byte-order mark says so (Windows PowerShell 5's
    `>` and Out-File write captured logs that way), else UTF-8 with undecodable bytes replaced."""
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray)):
        raw = bytes(data)
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            try:
                return raw.decode("utf-16")
            except UnicodeDecodeError:
                pass
        return raw.decode("utf-8", errors="replace")
    return str(data)


def prepare(text: str) -> PasteText:
    """Clean `text` and strip log prefixes; never raises."""
    truncated = len(text) > MAX_CHARS
    work = text[:MAX_CHARS]
    clean, cmap = _clean(work)
    logical, lmap, lines = _strip_prefixes(clean)
    return PasteText(text, clean, logical, cmap, lmap, lines, [li.start for li in lines], truncated)


# A terminal wraps long lines at its width: several lines of exactly that length cut mid-word,
# the next one going on in lower case ("… (4.26 GiB KV cach" / "e is needed, …").
_WRAP_MIN = 60
# Only terminal output is cut that way: a log or traceback line, not prose an editor wrapped at a space.
_LOG_START = regex.compile(r"[ \t]*(?:\(|\[|INFO|WARNING|ERROR|DEBUG|CRITICAL|File[ ]\"|Traceback|\w+(?:Error|Exception)\b|\d\d[-:/])")


def _wrap_breaks(text: str) -> list[int]:
    """Offsets of the newlines a terminal inserted: after lines of the paste's most common long
    length (seen at least twice) that end inside a word, before a line going on in lower case."""
    cands: list[tuple[int, int]] = []       # (line length, offset of its newline)
    start = 0
    for _ in range(MAX_PREFIXED_LINES):
        nl = text.find("\n", start)
        if nl < 0:
            break
        line_len = nl - start
        nxt = text[nl + 1:nl + 2]
        if line_len >= _WRAP_MIN and (text[nl - 1].isalnum() or text[nl - 1] == "_") \
                and (nxt.islower() or nxt.isdigit() or nxt == "_") and _LOG_START.match(text, start, nl):
            cands.append((line_len, nl))
        start = nl + 1
    if len(cands) < 2:
        return []
    width, n = Counter(w for w, _ in cands).most_common(1)[0]
    return [p for w, p in cands if w == width] if n >= 2 else []


def _clean(text: str) -> tuple[str, _Map]:
    out: list[str] = []
    cmap = _Map()
    pos = 0            # in source
    cpos = 0           # in output

    def copy(upto: int) -> None:
        nonlocal pos, cpos
        if upto > pos:
            chunk = text[pos:upto].translate(_SAME_LEN).replace("**", "  ")
            cmap.add(cpos, pos, upto - pos, True)
            out.append(chunk)
            cpos += len(chunk)
            pos = upto

    def replace(start: int, end: int, new: str) -> None:
        nonlocal pos, cpos
        copy(start)
        if new:
            cmap.add(cpos, start, end - start, False)
            out.append(new)
            cpos += len(new)
        pos = end

    wraps = _wrap_breaks(text)
    w = 0
    try:
        for k, m in enumerate(_CLEAN.finditer(text, timeout=budget())):
            if k >= MAX_CLEANINGS:
                break
            while w < len(wraps) and wraps[w] < m.start():
                if wraps[w] >= pos:
                    replace(wraps[w], wraps[w] + 1, "")
                w += 1
            kind = m.lastgroup
            if kind in ("slack_text", "url"):
                kind = "slack" if m.group("slack") else "slackurl"
            s, e = m.span()
            if kind == "entity":
                replace(s, e, html.unescape(m.group(0)).replace("\u00a0", " "))
            elif kind == "slack":
                ts, te = m.span("slack_text")
                replace(s, ts, "")
                copy(te)
                replace(te, e, "")
            elif kind == "slackurl":
                us, ue = m.span("url")
                replace(s, us, "")
                copy(ue)
                replace(ue, e, "")
            elif kind == "blocktag":
                replace(s, e, "\n")
            elif kind == "crlf":
                replace(s, e, "\n")
            else:
                replace(s, e, "")
    except TimeoutError:
        pass
    for p in wraps[w:]:
        if p >= pos:
            replace(p, p + 1, "")
    copy(len(text))
    return "".join(out), cmap


def _strip_prefixes(clean: str) -> tuple[str, _Map, list[LineInfo]]:
    out: list[str] = []
    lmap = _Map()
    lines: list[LineInfo] = []
    pos = 0
    lpos = 0
    try:
        matches = _PREFIX.finditer(clean, timeout=budget())
        for k, m in enumerate(matches):
            if k >= MAX_PREFIXED_LINES:
                break
            s, e = m.span()
            if e == s:
                continue
            if s > pos:
                chunk = clean[pos:s]
                lmap.add(lpos, pos, s - pos, True)
                out.append(chunk)
                lpos += len(chunk)
            proc = m.captures("proc")
            ranks = m.captures("rank") + m.captures("rank2")
            pids = m.captures("pid")
            rk = rank_key(proc[-1] if proc else None, ranks[-1] if ranks else None, pids[-1] if pids else None)
            lines.append(LineInfo(lpos, rk, proc[-1] if proc else ""))
            pos = e
    except TimeoutError:
        pass
    if pos < len(clean):
        lmap.add(lpos, pos, len(clean) - pos, True)
        out.append(clean[pos:])
    logical = "".join(out)
    if MAX_LINE and len(logical) > MAX_LINE:
        logical = _cut_long_lines(logical)
    return logical, lmap, lines


def _cut_long_lines(text: str) -> str:
    """Blank out everything past MAX_LINE characters on a line (same length: spans stay exact)."""
    parts = text.split("\n")
    if all(len(p) <= MAX_LINE for p in parts):
        return text
    return "\n".join(p if len(p) <= MAX_LINE else p[:MAX_LINE] + " " * (len(p) - MAX_LINE) for p in parts)
