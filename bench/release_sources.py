"""The Python sources of a vLLM release as published on PyPI, for the table builders
(bench/registry_table.py, bench/log_sites_table.py). Not run by CI or the tests: it needs PyPI.

Why one reader: both tables are facts about what each release's code says, and both must read the
same published files (the sdist, else the smallest wheel: the Python files are the same in every
wheel of a release) so that their release lists agree.
"""

from __future__ import annotations

import io
import json
import tarfile
import urllib.request
import zipfile
from collections.abc import Callable

INDEX = "https://pypi.org/pypi/vllm/json"


def published() -> dict[str, list[dict]]:
    """PyPI's files of every vLLM release, by version."""
    return json.load(urllib.request.urlopen(INDEX, timeout=120))["releases"]


def release_sources(files: list[dict], wanted: Callable[[str], bool]) -> dict[str, str]:
    """The files of one release whose path inside the package tree ("vllm/worker/worker.py") is
    `wanted`, from its sdist or (when PyPI has none) its smallest wheel; {} when it has neither."""
    if not files:
        return {}
    sdist = [f for f in files if f["packagetype"] == "sdist"]
    chosen = sdist[0] if sdist else min(files, key=lambda f: f["size"])
    data = urllib.request.urlopen(urllib.request.urljoin(INDEX, chosen["url"]), timeout=600).read()
    out = {}
    if sdist:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                name = member.name.split("/", 1)[-1]       # drop the "vllm-0.8.4/" top directory
                if member.isfile() and wanted(name):
                    out[name] = tar.extractfile(member).read().decode("utf-8", "replace")
    else:
        with zipfile.ZipFile(io.BytesIO(data)) as wheel:
            out = {n: wheel.read(n).decode("utf-8", "replace") for n in wheel.namelist() if wanted(n)}
    return out
