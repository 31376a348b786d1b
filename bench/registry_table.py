"""Rebuild estimator/data/vllm_architectures.json: the first and last vLLM release whose model
registry lists each architecture.

usage: python bench/registry_table.py [--cache DIR]   (needs PyPI; not run by CI or the tests)

Why: a release can only serve the architectures its registry lists, so a paste that ran a model
on an unnamed release ran one at least as new as the model's first, and an estimate for an older
release describes a run vLLM would refuse. The registry is read from each release's source as
published on PyPI (its sdist, else a wheel): the architecture dictionaries of
vllm/model_executor/models/registry.py (from 0.6.3), models/__init__.py (0.2–0.6.2) or
`_MODEL_REGISTRY` in vllm/model_executor/model_loader.py (0.1.x). Names in
`_PREVIOUSLY_SUPPORTED_MODELS` (removed models, kept to word the error) are not counted.
Releases are those of estimator.vllm.RELEASES.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.release_sources import published, release_sources  # noqa: E402
from estimator.vllm import RELEASES  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "estimator" / "data" / "vllm_architectures.json"
REGISTRY_FILES = ("vllm/model_executor/models/registry.py", "vllm/model_executor/models/__init__.py",
                  "vllm/model_executor/model_loader.py")
_ENTRY = re.compile(r'^\s*"(\w+)"\s*:\s*\(', re.M)               # "LlamaForCausalLM": ("llama", …)
_OLD_REGISTRY = re.compile(r"_MODEL_REGISTRY\s*=\s*\{(.*?)\}", re.S)  # 0.1.x: "Name": Class,
_REMOVED = re.compile(r"_PREVIOUSLY_SUPPORTED_MODELS\s*=\s*\{.*?\n\}", re.S)


def architectures(sources: dict[str, str]) -> set[str]:
    names: set[str] = set()
    for name, text in sources.items():
        if name not in REGISTRY_FILES:
            continue
        if name.endswith("model_loader.py"):
            m = _OLD_REGISTRY.search(text)
            names |= set(re.findall(r'"(\w+)"\s*:', m.group(1))) if m else set()
        else:
            names |= set(_ENTRY.findall(_REMOVED.sub("", text)))
    return names


def main(argv: list[str]) -> int:
    cache = Path(argv[argv.index("--cache") + 1]) if "--cache" in argv else None
    releases = published()
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    read = []
    for version, _day in RELEASES:
        hit = cache / f"{version}.json" if cache else None
        if hit and hit.exists():
            sources = json.loads(hit.read_text())
        else:
            sources = release_sources(releases.get(version) or [], lambda name: name in REGISTRY_FILES)
            if hit:
                hit.write_text(json.dumps(sources))
        names = architectures(sources)
        if not names:
            print(f"{version}: no registry found", file=sys.stderr)
            continue
        read.append(version)
        for n in names:
            first.setdefault(n, version)
            last[n] = version
    table = {n: [first[n], None if last[n] == read[-1] else last[n]] for n in sorted(first)}
    about = ("First and last vLLM release whose model registry lists each architecture (null: still listed by "
             "the newest release read). Built by bench/registry_table.py from the releases' published sources; "
             "a few names are missing from some releases in between.")
    rows = ",\n".join(f"  {json.dumps(n)}: {json.dumps(span)}" for n, span in table.items())
    OUT.write_text(f'{{\n "about": {json.dumps(about)},\n "releases_read": {json.dumps(read)},\n'
                   f' "architectures": {{\n{rows}\n }}\n}}\n')
    print(f"{len(table)} architectures over {len(read)} releases ({read[0]}–{read[-1]}) → {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
