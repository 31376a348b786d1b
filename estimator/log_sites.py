"""Which vLLM releases could have printed a paste's log lines, from the file and line each names.

vLLM's log prefix names the source file and the line of the logging call: "INFO 04-17 15:09:36
[model_runner.py:1110] Starting to load model …" (from 0.8.0; "worker.py:267] …" before). Those line
numbers move with nearly every release, so a paste that does not state its release still says which
releases' code has that message at that line. The releases matter: the same paste is arithmetic of
a different memory model in 0.8.0 and 0.8.4 (V0's multimodal profile run, vllm.V0_TEXT_ONLY_DUMMY).

The table (estimator/data/vllm_log_sites.json.gz, built by bench/log_sites_table.py from the
releases' published sources) lists every logging call of every release: file name, line, the start
of its message. A log line votes for the releases whose file of that name logs a message with that
start at that line; the releases with the most votes are the answer. A line no release has (a build
of main, a fork, a plugin's own file) votes for none, so one moved line does not empty the answer; but
a message that those releases do not log anywhere in that file is a build between releases, and then
the lines date nothing.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from importlib import resources

import regex

from estimator.paste_text import budget

_TABLE = "data/vllm_log_sites.json.gz"      # in the package, read as vllm._registry_spans reads its table
# a log prefix's "file.py:N]" — after "[" (0.8.0+) or after the time stamp's space (before 0.8.0;
# 0.11+ may print a shortened path, "v1/worker/gpu_worker.py") — and the message after it
_LOG_LINE = regex.compile(r"(?:(?<=\[)|(?<=\d ))(?P<path>[\w./-]{1,160}\.py):(?P<line>\d{1,6})\]"
                          r"(?:\x1b\[[0-9;]*m)? ?(?P<msg>[^\n]{0,200})")
_ANSI = regex.compile(r"\x1b\[[0-9;]*m")
_CUT = regex.compile(r"\s*(?:\[\s*(?:\.\.\.|…)[^\]\n]{0,40}\]|…|\.\.\.)\s*$")    # "[...truncated]", "…" at a cut
KEY_CHARS = 32          # enough of a message to tell two logging calls of one line apart
MAX_LINES = 300         # log lines read per paste: a release shows in its first few


def message_key(text: str) -> str:
    """A message's literal start as the log shows it, as the table keeps it: up to its first placeholder
    ("%s", "%d", "{…}"; "%%" prints as "%"), whitespace collapsed, at most KEY_CHARS characters."""
    out, i = [], 0
    while i < len(text) and text[i] != "{":
        if text[i] == "%":
            if text[i + 1:i + 2] != "%":
                break
            i += 1
        out.append(text[i])
        i += 1
    return " ".join("".join(out).split())[:KEY_CHARS]


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[str, ...], dict]:
    try:
        data = json.loads(gzip.decompress(resources.files("estimator").joinpath(_TABLE).read_bytes()))
    except (OSError, ValueError):
        return (), {}
    return tuple(data["releases_read"]), data["files"]


def _indices(runs: list) -> set[int]:
    out: set[int] = set()
    for run in runs:
        out.update(range(run[0], run[1] + 1) if isinstance(run, list) else (run,))
    return out


@lru_cache(maxsize=256)
def _file_lines(name: str) -> dict:
    """One file's logging lines, decoded when a paste first names the file, their keys as _plain
    compares them."""
    return {line: [(_plain(key), runs) for key, runs in sites]
            for line, sites in json.loads(_table()[1][name]).items()}


def _plain(text: str) -> str:
    """Whitespace collapsed and backticks dropped: the paste reader's clean text turns a message's
    backticks ("Current `vllm-flash-attn` has a bug") into spaces, as markdown eats them."""
    return " ".join(text.replace("`", " ").split())


def _said(message: str) -> str:
    """What a log line printed, as far as a key can tell it apart (KEY_CHARS)."""
    return _plain(_CUT.sub("", _ANSI.sub("", message)))[:KEY_CHARS]


def _logs(key: str, said: str) -> bool:
    """Does a logging call whose message starts with `key` print `said`? A key as long as the table
    keeps, or the paste's message cut short ("[…truncated]")."""
    return said.startswith(key) or (len(said) >= 12 and key.startswith(said))


@lru_cache(maxsize=256)
def _file_keys(name: str) -> dict[str, frozenset[int]]:
    """One file's messages, each with every release that logs it at some line (messages whose literal
    start is empty — `logger.info("%s", x)` — say nothing here, and are left out)."""
    out: dict[str, set[int]] = {}
    for sites in _file_lines(name).values():
        for key, runs in sites:
            if key:
                out.setdefault(key, set()).update(_indices(runs))
    return {key: frozenset(found) for key, found in out.items()}


def _releases(name: str, said: str, line: str | None = None) -> set[int]:
    """Indices of the releases whose file `name` logs a message starting like `said` at `line`, or
    (`line` None) at any line (_file_keys)."""
    out: set[int] = set()
    if line is None:
        for key, found in _file_keys(name).items():
            if _logs(key, said):
                out |= found
        return out
    for key, runs in _file_lines(name).get(line, ()):
        if _logs(key, said):
            out |= _indices(runs)
    return out


def log_line_releases(text: str) -> tuple[str, str, int, str] | None:
    """(first, last, lines, example) of the releases whose code prints the most of the paste's log lines
    at the file and line their prefixes name: how many lines agree with them, and the first of those
    ("model_runner.py:1110"); None when no line names a line that some release logs its message at, or
    when a line's message is one those releases do not log at all: a build between releases (vLLM PR
    branches print a new message beside old lines), whose code is no release's."""
    if ".py:" not in text:
        return None
    releases, files = _table()
    if not files:
        return None
    tags: list[tuple[str, str, str, set[int]]] = []   # ("file:line", file, message, releases logging it there)
    seen: set[tuple[str, str, str]] = set()
    try:
        for m in _LOG_LINE.finditer(text[:400_000], timeout=budget(0.2)):
            name, line = m.group("path").rsplit("/", 1)[-1], m.group("line")
            said = _said(m.group("msg"))
            if name not in files or (name, line, said) in seen:
                continue
            seen.add((name, line, said))
            tags.append((f"{name}:{line}", name, said, _releases(name, said, line)))
            if len(seen) >= MAX_LINES:
                break
    except TimeoutError:
        pass
    # one vote per file:line, whatever it printed there: a traceback that vLLM logs line by line from one
    # call ("[engine.py:448]   File …" ten times) is one logging call, not ten
    at: dict[str, set[int]] = {}
    for tag, _name, _said_there, found in tags:
        at.setdefault(tag, set()).update(found)
    votes: dict[int, int] = {}
    for found in at.values():
        for i in found:
            votes[i] = votes.get(i, 0) + 1
    if not votes:
        return None
    top = max(votes.values())
    best = sorted(i for i, n in votes.items() if n == top)
    chosen = set(best)
    for _tag, name, said, found in tags:
        if not found & chosen and (known := _releases(name, said)) and not known & chosen:
            return None
    example = next(tag for tag, found in at.items() if best[0] in found)
    return releases[best[0]], releases[best[-1]], top, example
