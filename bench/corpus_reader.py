"""Reading a corpus jsonl for the benchmarks: one case per line, each a JSON object.

Why its own module: both benchmarks read corpora that people assemble by hand, and a stray line
(a comment, a truncated object, a list) should cost that line, not the run."""

from __future__ import annotations

import json
import math
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
        yield str(case.get("id") or f"line {number}"), _normalised(case, number)


# The corpus schema's free-text fields; a hand-made record may hold a number ("gpu": 4090) or a list
# (["Qwen/Qwen2.5-7B"]) where the schema has text.
TEXT_FIELDS = ("id", "model", "gpu", "notes", "paste", "other_flags", "vllm_version", "date", "era", "dtype",
               "kv_cache_dtype", "quantization", "source_url")


def _normalised(case: dict, number: int) -> dict:
    """The case with every text field as text (a number or a list of scalars written out, anything
    else dropped with a note on stderr) and `observed` a mapping, so that one odd record costs its
    odd fields, not the run."""
    out = dict(case)
    for key in TEXT_FIELDS:
        v = out.get(key)
        if v is None or isinstance(v, str):
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[key] = str(v)
        elif isinstance(v, list) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
            out[key] = " ".join(str(x) for x in v)
        else:
            print(f"line {number}: field {key!r} is not text; ignored", file=sys.stderr)
            out[key] = None
    if out.get("observed") is not None and not isinstance(out["observed"], dict):
        print(f"line {number}: field 'observed' is not an object; ignored", file=sys.stderr)
        out["observed"] = {}
    if isinstance(out.get("observed"), dict):
        # a figure is a finite number; "n/a", true or "80" is no figure to compare with
        out["observed"] = {k: v for k, v in out["observed"].items()
                           if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    return out
