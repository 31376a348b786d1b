"""Print computed vs exact parameter counts and checkpoint bytes for ../shared/data/models.

Usage: python bench/params.py [path/to/models]
Columns: model, computed logical params, stored params (what an HF total counts: + MTP, FP8
scales; tied models also shown with a second vocab × hidden copy when that matches better),
exact Hub params, % error, computed checkpoint bytes, bytes known from the source (safetensors
total or the per-dtype breakdown), % error.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimator.params import checkpoint_bytes, count_params, stored_params  # noqa: E402
from estimator.spec import spec_from_config  # noqa: E402

SIZE = {"F8_E4M3": 1.0, "BF16": 2.0, "F16": 2.0, "F32": 4.0, "I8": 1.0, "U8": 0.5 + 1 / 32}


def known_bytes(row: dict) -> int | None:
    if row.get("safetensors_bytes"):
        return int(row["safetensors_bytes"])
    parts = re.findall(r"\b(F8_E4M3|BF16|F16|F32|U8|I8)\s+(\d{6,})", row.get("weights_dtype") or "")
    return int(sum(int(n) * SIZE[d] for d, n in parts)) if parts else None


def main(models: Path, *, quiet: bool = False) -> str:
    """Print the table (unless quiet); return the summary line."""
    out = (lambda *_a, **_k: None) if quiet else print
    rows = [json.loads(x) for x in (models / "params.jsonl").read_text().splitlines() if x.strip()]
    hdr = f"{'model':44} {'computed':>17} {'stored':>17} {'exact':>17} {'err%':>7} {'ckpt GB':>9} {'known GB':>9} {'err%':>6}"
    out(hdr)
    out("-" * len(hdr))
    n = ok = nb = okb = 0
    worst = (0.0, "")
    for r in rows:
        cf = r.get("config_file")
        if not cf or not (models / cf).exists():
            continue
        comp = {}
        q = models / cf.replace(".config.json", ".hf_quant_config.json")
        if q.exists():
            comp["hf_quant_config.json"] = json.loads(q.read_text())
        s = spec_from_config(json.loads((models / cf).read_text()), r["model"], comp)
        logical = count_params(s).params_total
        stored, _ = stored_params(s)
        exact = r.get("params_total")
        err = ""
        if exact:
            cands = [stored] + ([stored + s.vocab_size * s.hidden_size] if s.tie_word_embeddings else [])
            best = min(cands, key=lambda c: abs(c - exact))
            e = (best - exact) / exact * 100
            err = f"{e:+.3f}" + ("²" if best != stored else "")
            n += 1
            ok += abs(e) < 0.5
            if abs(e) > abs(worst[0]):
                worst = (e, r["model"])
        cb = checkpoint_bytes(s)
        kb = known_bytes(r)
        berr = ""
        if kb:
            be = (cb - kb) / kb * 100
            berr = f"{be:+.2f}"
            nb += 1
            okb += abs(be) < 2
        out(f"{r['model'][:44]:44} {logical:>17,} {stored:>17,} {(exact or 0):>17,} {err:>7} "
              f"{cb / 1e9:>9.2f} {(kb or 0) / 1e9:>9.2f} {berr:>6}")
    out("-" * len(hdr))
    out("² = tied model whose checkpoint stores the shared embedding twice (stored + vocab × hidden)")
    summary = (f"SUMMARY: params within 0.5% for {ok}/{n} models with an exact Hub count "
               f"(worst {worst[0]:+.3f}% {worst[1]}); checkpoint bytes within 2% for {okb}/{nb} with known bytes")
    out(summary)
    return summary


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "models"
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    if not (path / "params.jsonl").exists():
        print(f"no params.jsonl under {path}", file=sys.stderr)
        sys.exit(2)
    main(path)
    sys.exit(0)
