"""The bundled offline catalog: config.json copies of well-known models, shipped as package data.

Why: kvdoctor must answer with no network at all (air-gapped clusters, CI, a Hub outage), and the
models people ask about most are a small set. The files in `estimator/catalog/` are copies of the
configs in `../shared/data/models/`, plus configs the project found itself for models its users
paste (entries with an `added` note; an official view of a key may `correct` a derivative's copy, and
verbatim copies of the file may `complete` a truncated one);
`index.json` records for each repo id where the copy came
from (`source_url`, `kind`: OFFICIAL / DUPLICATE / GITHUB COPY / PROXY, the research `notes`), the
keys we DROPPED because they belong to a derivative (e.g. the MLX `quantization_config` block in a
proxy copy) or to a runtime dump (generation defaults such as `max_length: 20`), and markers of
incomplete copies (`truncated`, `trimmed`). A lookup says all of that in `assumptions`, because a
user deserves to know the numbers rest on a copy rather than on the repo itself.

Lookups are case-insensitive on the repo id (`qwen/qwen3-8b` finds `Qwen/Qwen3-8B`).
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

_CATALOG_PKG = "estimator"
_CATALOG_DIR = "catalog"


def _read_json(name: str) -> Any:
    path = resources.files(_CATALOG_PKG).joinpath(_CATALOG_DIR, name)
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _index() -> dict[str, dict]:
    """repo id -> index entry (loaded once per process)."""
    return dict(_read_json("index.json")["models"])


@cache
def _by_lower() -> dict[str, str]:
    return {repo_id.lower(): repo_id for repo_id in _index()}


@cache
def _load_files(repo_id: str) -> tuple[dict, dict[str, dict]]:
    entry = _index()[repo_id]
    config = _read_json(entry["config"])
    if "quantization_config" in entry:
        # a DERIVED entry: another repo's copy (the base model's) with the quantization format that the
        # entry's evidence gives for this repo, kept in the index rather than in a copied file
        config["quantization_config"] = entry["quantization_config"]
    companions = {name: _read_json(fname) for name, fname in entry.get("companions", {}).items()}
    return config, companions


def catalog_ids() -> list[str]:
    """Repo ids in the bundled catalog, sorted."""
    return sorted(_index())


# Repos renamed on the Hub (the old id redirects there): Meta dropped "Meta-" from the Llama 3.1 names
# in July 2024 (meta-llama/Meta-Llama-3.1-8B-Instruct → meta-llama/Llama-3.1-8B-Instruct); the Hub's
# legacy ids without an organisation moved under one in 2024 (gpt2, gpt2-medium … → openai-community/).
_RENAMED = (("meta-llama/meta-llama-3.1-", "meta-llama/llama-3.1-"), ("gpt2", "openai-community/gpt2"))


def canonical_id(repo_id: str) -> str | None:
    """The catalog's spelling of `repo_id` (case-insensitive match, or the id a renamed repo now has),
    or None when absent."""
    want = repo_id.strip().lower()
    hit = _by_lower().get(want)
    if hit is None:
        for old, new in _RENAMED:
            if want.startswith(old):
                hit = _by_lower().get(new + want[len(old):])
    return hit


def entry(repo_id: str) -> dict | None:
    """The provenance entry of `repo_id` (a copy), or None."""
    cid = canonical_id(repo_id)
    return copy.deepcopy(_index()[cid]) if cid else None


def _squash(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


@cache
def _by_squashed() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for repo_id in _index():
        out.setdefault(_squash(repo_id.rsplit("/", 1)[-1]), []).append(repo_id)
    return out


def match_local_name(name: str) -> str | None:
    """The one catalog model whose name a local directory spells another way ("qwen25_32b_instruct_HF"
    is Qwen/Qwen2.5-32B-Instruct): letters and digits alike, case, separators and a trailing "hf" (a
    conversion's suffix) aside. None when no model or more than one matches: a guess must be unique."""
    key = _squash(name)
    for k in (key, key[:-2] if key.endswith("hf") else None):
        hits = _by_squashed().get(k) if k and len(k) >= 6 else None
        if hits and len(hits) == 1:
            return hits[0]
        if hits:
            return None
    return None


# A size in a repo name ("8B", "1.5B", "0.6B", "2.4T", "125M", Mixtral's "8x7B"), not an MoE's active
# count ("A3B"), and the words that name a different model of a family, not a format or a release:
# "did you mean" keeps to names that agree on both, so an unknown InternVL3-78B is not offered InternVL2-8B,
# nor DeepSeek-Coder-V2-Lite the 236B DeepSeek-Coder-V2, nor Qwen3-Omni-30B-A3B Qwen3-VL-30B-A3B.
_SIZE = re.compile(r"(?<![a-z0-9.])(?:\d+x)?\d+(?:\.\d+)?[bmt](?![a-z0-9])")
_VARIANT_WORDS = frozenset({"vl", "omni", "audio", "vision", "ocr", "embedding", "reranker", "guard", "coder", "math",
                            "lite", "mini", "nano", "small", "medium", "large", "flash", "next", "distill", "moe"})


def _name_marks(name: str) -> tuple[frozenset, frozenset]:
    """The sizes and family-variant words a repo name carries (`_SIZE`, `_VARIANT_WORDS`)."""
    low = name.rsplit("/", 1)[-1].lower()
    return (frozenset(m.group(0) for m in _SIZE.finditer(low)),
            frozenset(w for w in re.split(r"[-_.\s]+", low) if w in _VARIANT_WORDS))


def near_names(repo_id: str, n: int = 3) -> list[str]:
    """Catalog ids close to `repo_id` (difflib), for "did you mean" in not-found messages.

    Compares whole ids and, separately, the name after the slash, so a wrong organisation
    (`meta/Llama-3.1-8B-Instruct`) still finds the right model. A close spelling of another size or
    variant is another model (`_name_marks`): where the name states a size, only that size is offered.
    """
    ids = catalog_ids()
    lowered = {i.lower(): i for i in ids}
    want = repo_id.strip().lower()
    sizes, variants = _name_marks(want)
    hits = difflib.get_close_matches(want, list(lowered), n=4 * n, cutoff=0.75)
    name = want.rsplit("/", 1)[-1]
    by_name: dict[str, list[str]] = {}
    for i in ids:
        by_name.setdefault(i.rsplit("/", 1)[-1].lower(), []).append(i)
    for close in difflib.get_close_matches(name, list(by_name), n=4 * n, cutoff=0.8):
        hits.extend(x.lower() for x in by_name[close])
    out: list[str] = []
    for h in hits:
        cid = lowered[h]
        their_sizes, their_variants = _name_marks(h)
        if (sizes and their_sizes != sizes) or their_variants != variants:
            continue
        if cid not in out and cid.lower() != want:
            out.append(cid)
    return out[:n]


def describe(repo_id: str) -> list[str]:
    """Human sentences about the provenance of a catalog copy (for `assumptions`)."""
    e = _index()[repo_id]
    kind = e.get("kind", "?")
    label = f"{kind} copy" if kind == "OFFICIAL" else kind  # "GITHUB COPY of", "PROXY of", ...
    out = [f"config from the bundled offline catalog ({label} of {repo_id}; source: {e.get('source_url')})"]
    if kind == "PROXY":
        out.append(
            "the catalog copy comes from a derivative repo; architecture fields match the original but "
            "metadata keys may not"
        )
    if "CONFIG: RECONSTRUCTED" in (e.get("notes") or ""):
        out.append("the catalog copy was RECONSTRUCTED from a sibling model's copy and matches the official file "
                   "byte for byte (its sha256, see the catalog index notes)")
    if "DERIVED, NOT OFFICIAL" in (e.get("notes") or ""):
        out.append("the catalog copy is DERIVED, not official: it was made from a sibling model's config "
                   "(see the catalog index notes)")
    dropped = e.get("dropped")
    if dropped:
        keys = ", ".join(sorted(dropped["keys"]))
        out.append(f"dropped from the catalog copy: {keys} ({dropped['reason']})")
    completed = e.get("completed")
    for path, text in (e.get("truncated") or {}).items():
        where = path.rsplit(".", 1)[0] if "." in path else "the top level"
        if completed:
            keys = ", ".join(sorted(completed["keys"]))
            out.append(f"the catalog copy was TRUNCATED (in {where}) and has been COMPLETED: {keys} set from "
                       f"{completed['source']}")
        else:
            out.append(f"the catalog copy is TRUNCATED (in {where}): {text}")
    if e.get("trimmed"):
        out.append("the catalog copy is TRIMMED: only part of the official config was kept")
    return out


def lookup(repo_id: str) -> tuple[str, dict, dict[str, dict]] | None:
    """(canonical id, config copy, companions copy) or None. Callers may mutate what they get."""
    cid = canonical_id(repo_id)
    if cid is None:
        return None
    config, companions = _load_files(cid)
    return cid, copy.deepcopy(config), copy.deepcopy(companions)
