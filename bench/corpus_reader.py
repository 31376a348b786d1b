"""Reading a corpus jsonl for the benchmarks: one case per line, each a JSON object.

Why its own module: both benchmarks read corpora that people assemble by hand, and a stray line
(a comment, a truncated object, a list) should cost that line, not the run."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path


def read_cases(path: Path) -> Iterator[tuple[str, dict | None]]:
    """(name, case) per non-blank line: the case's id (else "line N") and the object, or None for a
    line that is not a JSON object (reported on stderr)."""
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            print(f"line {number}: not JSON ({exc.msg}); skipped", file=sys.stderr)
            yield f"line {number}", None
            continue
        if not isinstance(case, dict):
            print(f"line {number}: not a JSON object; skipped", file=sys.stderr)
            yield f"line {number}", None
            continue
        yield str(case.get("id") or f"line {number}"), case
