"""Rebuild estimator/data/vllm_log_sites.json.gz: where each vLLM release logs what, by file and line.

usage: python bench/log_sites_table.py [--cache DIR] [--sources DIR]   (needs PyPI unless every
release is in --sources or --cache; not run by CI or the tests)

Why: vLLM's log prefix names the file and line of the logging call ("[gpu_worker.py:298]", before
0.8 "worker.py:267]"), and those lines move from release to release. A paste that does not say its
release still says which releases could have printed it (estimator/log_sites.py). The table holds,
for every logging call in each release's package — `logger.info(…)`, `.warning_once(…)` and the
other levels — the file's name, the line the call starts on (the line Python's logging reports for
it: a 0.8.4 log prints `[vision.py:93]` for a `logger.warning_once(` on line 93 whose text is on
line 94), and the start of its message up to its first placeholder (log_sites.message_key), with
the releases that have it. Releases are those of estimator.vllm.RELEASES; `--sources DIR` reads an unpacked
release from DIR/<version>/vllm/, `--cache DIR` keeps each release's sites in DIR/<version>.json.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.release_sources import published, release_sources  # noqa: E402
from estimator.log_sites import message_key  # noqa: E402
from estimator.vllm import RELEASES  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "estimator" / "data" / "vllm_log_sites.json.gz"
LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                    "debug_once", "info_once", "warning_once", "error_once"})


def _leading_text(node: ast.AST) -> str:
    """The literal start of a message argument: a string, an f-string's text before its first
    field, a concatenation's literal start, a %-format's template."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = ""
        for part in node.values:
            if not isinstance(part, ast.Constant):
                return out + "{"        # a field: message_key stops here
            out += str(part.value)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _leading_text(node.left)
        return left if "{" in left or "%" in left else left + _leading_text(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _leading_text(node.left)
    return ""


def log_sites(source: str) -> list[tuple[int, str]]:
    """(line, message key) of each logging call in one file. A message passed as a variable
    (`logger.info(msg)`, vLLM's memory report) takes the literal start of the variable's last
    assignment before the call in the same function."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LEVELS
                and node.args and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "warnings")):
            continue
        message = node.args[0]
        if isinstance(message, ast.Name):
            message = _assigned(message.id, node.lineno, scopes, tree) or message
        out.append((node.lineno, message_key(_leading_text(message))))
    return sorted(out)


def _assigned(name: str, line: int, scopes: list, tree: ast.Module) -> ast.AST | None:
    """The value last assigned to `name` before `line` in the innermost function holding that line."""
    scope = min((f for f in scopes if f.lineno <= line <= (f.end_lineno or f.lineno)),
                key=lambda f: (f.end_lineno or f.lineno) - f.lineno, default=tree)
    values = [(a.lineno, a.value) for a in ast.walk(scope)
              if isinstance(a, (ast.Assign, ast.AnnAssign)) and a.value is not None and a.lineno < line
              and any(isinstance(t, ast.Name) and t.id == name for t in (a.targets if isinstance(a, ast.Assign)
                                                                         else [a.target]))]
    return max(values, key=lambda v: v[0])[1] if values else None


def release_sites(version: str, files: list[dict], sources: Path | None, memo: dict) -> list[tuple[str, int, str]]:
    """(file name, line, message key) of every logging call in one release's vllm package."""
    root = sources / version / "vllm" if sources else None
    if root and root.is_dir():
        texts = {str(p.relative_to(root.parent)): p.read_text("utf-8", "replace") for p in root.rglob("*.py")}
    else:
        texts = release_sources(files, lambda n: n.startswith("vllm/") and n.endswith(".py"))
    out = []
    for path, text in texts.items():
        digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()
        if digest not in memo:
            memo[digest] = log_sites(text)      # most files are unchanged from one release to the next
        name = path.rsplit("/", 1)[-1]
        out.extend((name, line, key) for line, key in memo[digest])
    return out


def _runs(indices: list[int]) -> list:
    """[0, 1, 2, 5] → [[0, 2], 5]: runs of consecutive release indices."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [a if a == b else [a, b] for a, b in runs]


def main(argv: list[str]) -> int:
    cache = Path(argv[argv.index("--cache") + 1]) if "--cache" in argv else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    sources = Path(argv[argv.index("--sources") + 1]) if "--sources" in argv else None
    releases: dict[str, list[dict]] | None = None
    memo: dict[str, list[tuple[int, str]]] = {}
    table: dict[str, dict[int, dict[str, list[int]]]] = {}
    read = []
    for version, _day in RELEASES:
        hit = cache / f"{version}.json" if cache else None
        if hit and hit.exists():
            sites = [tuple(s) for s in json.loads(hit.read_text())]
        else:
            if not (sources and (sources / version / "vllm").is_dir()) and releases is None:
                releases = published()
            sites = release_sites(version, (releases or {}).get(version) or [], sources, memo)
            if hit and sites:
                hit.write_text(json.dumps(sites))
        if not sites:
            print(f"{version}: no sources found", file=sys.stderr)
            continue
        index = len(read)
        read.append(version)
        for name, line, key in set(sites):
            table.setdefault(name, {}).setdefault(line, {}).setdefault(key, []).append(index)
    about = ("Where each vLLM release logs what: file name -> (a JSON text of) line of the logging call -> "
             "[[message start, release indices into releases_read, runs as [first, last]], ...]. Built by "
             "bench/log_sites_table.py from the releases' published sources.")
    # each file's lines as a JSON text of their own: a paste names a few files, and decoding only those
    # keeps the first lookup of a process at milliseconds
    files = {name: json.dumps({str(line): [[key, _runs(idx)] for key, idx in sorted(keys.items())]
                               for line, keys in sorted(lines.items())}, separators=(",", ":"))
             for name, lines in sorted(table.items())}
    payload = json.dumps({"about": about, "releases_read": read, "files": files}, separators=(",", ":"))
    OUT.write_bytes(gzip.compress(payload.encode(), mtime=0))
    print(f"{sum(len(v) for v in table.values())} logging lines in {len(files)} files over {len(read)} releases "
          f"({read[0]}–{read[-1]}) → {OUT} ({OUT.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
