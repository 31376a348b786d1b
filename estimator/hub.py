"""Model metadata without weights: config.json, quantization companions, safetensors bytes by dtype.

Why: users name any of a million Hub repos (fine-tunes, quantized exports); kvdoctor needs their
config.json and the exact bytes of the weights as stored, fast, without downloading a single
weight, and a one-sentence reason when it cannot (gated, typo, offline, hub down).

Resolution order of `resolve_model(ref)` (first hit wins):

1. **Local directory** — `ref` names a directory holding config.json: read it, its companions and
   the safetensors headers found there (header bytes only; sharded checkpoints via
   model.safetensors.index.json). Never cached: the files may change under us.
2. **In-process cache** — an LRU with a TTL keyed by (endpoint, repo id, revision, token
   fingerprint); origin "memory-cache". A burst of questions about one model costs one lookup.
3. **HF cache on disk** (`cache_dir`, else HF_HUB_CACHE, else HF_HOME/hub) — the standard
   `models--org--name/snapshots/<commit>/` layout, revision via `refs/<rev>`. Used as the answer
   when offline, or when it also holds the safetensors files (so it is complete); otherwise it is
   kept as the fallback should the Hub fail.
4. **The Hub** (`endpoint`, else HF_ENDPOINT, else huggingface.co), unless offline (`offline=True`,
   HF_HUB_OFFLINE=1 or TRANSFORMERS_OFFLINE=1, read at call time). One `model_info` request with
   `expand=[sha, siblings, safetensors, gated, gguf, baseModels]` gives the commit, the file list
   and the per-dtype element counts (one request, where `get_safetensors_metadata` needs 2 + N);
   then config.json and the companions present (`hf_quant_config.json`, `quantize_config.json`,
   `quant_config.json`, `params.json`) through `hf_hub_download` into the HF cache. Only when the
   Hub did not compute safetensors counts (or reports a dtype of unknown width) are the headers read
   with Range requests. Every request has a timeout; timeouts, connection errors, 429 and 5xx are
   retried a bounded number of times with backoff, and the whole lookup has a deadline, so nothing
   hangs a bot worker. Concurrent lookups of the same model share one fetch (single-flight).
5. **The bundled catalog** (`estimator/catalog/`, see `estimator.catalog`) — when offline and not
   cached, or when the Hub failed (gated, not found on a mirror, unreachable); `assumptions` say so
   and why.

Settings are read at call time, not at import (huggingface_hub reads HF_ENDPOINT/HF_HUB_OFFLINE/
HF_HOME when *it* is imported), and endpoint/token/cache_dir are passed explicitly on every call.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import hashlib
import json
import math
import os
import re
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from estimator import catalog as _catalog
from estimator.errors import HubUnavailable, ModelGated, ModelNotFound, ModelUnavailable

__all__ = [
    "ModelSource",
    "resolve_model",
    "catalog_ids",
    "clear_cache",
    "read_safetensors_header",
    "safetensors_from_dir",
    "DTYPE_BITS",
]

# ---------------------------------------------------------------------------------------------
# Tunables. Sources: timeouts follow huggingface_hub's own defaults (HF_HUB_ETAG_TIMEOUT = 10 s);
# retries/backoff mirror the spirit of its http_backoff (retry 408/429/5xx and network errors) but
# far fewer attempts, because a bot reply waits on us. The TTL is ours: repo metadata of a given
# revision rarely changes within an hour; fallbacks (hub down) are kept one minute only.
# ---------------------------------------------------------------------------------------------
HUB_RETRIES = 2  # extra attempts after the first one
BACKOFF_BASE_S = 0.1  # 0.1 s, 0.2 s, 0.4 s ... capped below
BACKOFF_MAX_S = 2.0
MEMO_MAXSIZE = 256
MEMO_TTL_S = 3600.0
FALLBACK_TTL_S = 60.0
MAX_HEADER_BYTES = 100 * 1024 * 1024  # huggingface_hub's SAFETENSORS_MAX_HEADER_LENGTH is 25 MB

# sentence_bert_config.json: a Sentence Transformers repo, which vLLM serves with its pooling runner
# (memory.pooling_runner) whatever its architecture says
COMPANION_FILES = ("hf_quant_config.json", "quantize_config.json", "quant_config.json", "params.json",
                   "sentence_bert_config.json")
SAFETENSORS_SINGLE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"

# Width in bits of each safetensors dtype string (safetensors' Dtype enum; F4/F6 are sub-byte).
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "E8M0": 8,
    "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class ModelSource:
    """Everything kvdoctor learned about a model without loading it."""

    model_id: str  # repo id (or the local dir path)
    config: dict  # config.json as loaded (catalog copies cleaned)
    companions: dict[str, dict] = field(default_factory=dict)  # e.g. {"hf_quant_config.json": {...}}
    safetensors_bytes_by_dtype: dict[str, int] | None = None  # exact stored bytes per dtype
    safetensors_params_by_dtype: dict[str, int] | None = None  # stored element counts per dtype
    origin: str = "hub"  # "local-dir" | "memory-cache" | "hf-cache" | "hub" | "catalog"
    revision: str | None = None  # commit sha when known
    assumptions: list[str] = field(default_factory=list)  # human sentences


# =============================================================================================
# Settings, read at call time
# =============================================================================================
OFFLINE_NOTE = "offline mode: the Hub was not contacted"


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in {"1", "on", "yes", "true"}


def is_offline(offline: bool | None) -> bool:
    """The caller's choice, else the environment's (read now, not when huggingface_hub was imported)."""
    if offline is not None:
        return bool(offline)
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE")):
        return True
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)  # set at its import; requests would fail anyway


def _endpoint(endpoint: str | None) -> str:
    if endpoint:
        return endpoint.rstrip("/")
    env = os.environ.get("HF_ENDPOINT")
    if env:
        return env.rstrip("/")
    return "https://huggingface.co"


def _cache_dir(cache_dir: str | os.PathLike | None) -> str:
    if cache_dir:
        return os.path.expanduser(str(cache_dir))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return os.path.expanduser(os.environ[var])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "huggingface", "hub")


def _token(token: str | None) -> str | None:
    """Explicit token, else HF_TOKEN now; None lets huggingface_hub use the saved login token."""
    if token:
        return token
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def _token_fp(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12] if token else "-"


def _host(endpoint: str) -> str:
    return urlparse(endpoint).netloc or endpoint


# =============================================================================================
# Reference parsing
# =============================================================================================
def _as_local_dir(ref: str) -> Path | None:
    """A path to a directory, or None when `ref` is not a local directory at all."""
    p = Path(os.path.expanduser(ref))
    try:
        if p.is_dir():
            return p
    except OSError:
        pass        # a name the file system cannot hold (ENAMETOOLONG, a 100,000-character paste) is no directory
    if ref.startswith(("http://", "https://")):
        return None
    head = ref.split("@", 1)[0]  # revisions may hold slashes: org/name@refs/pr/7
    if ref.startswith(("/", "./", "../", "~", ".\\")) or "\\" in head or head.count("/") > 1:
        raise ModelNotFound(f"No such directory: {ref} (a local model directory must hold config.json).")
    return None


def _parse_ref(ref: str, revision: str | None) -> tuple[str, str | None]:
    """'org/name', 'org/name@rev' or a Hub URL -> (repo id, revision)."""
    r = ref.strip()
    if r.startswith(("http://", "https://")):
        path = unquote(urlparse(r).path).strip("/")
        parts = path.split("/")
        if len(parts) >= 4 and parts[2] in ("tree", "blob", "resolve"):
            revision = revision or parts[3]
        r = "/".join(parts[:2])
    elif "@" in r:
        r, _, rev = r.partition("@")
        if rev and not revision:
            revision = rev
    r = r.strip().strip("/")
    if not _REPO_ID_RE.match(r) or ".." in r or r.endswith((".", "-")):
        raise ModelNotFound(
            f"'{ref}' is neither a local directory nor a Hugging Face repo id (expected org/name, e.g. "
            "Qwen/Qwen3-8B, optionally @revision)."
        )
    return r, (revision or None)


# =============================================================================================
# Safetensors headers (local files)
# =============================================================================================
def read_safetensors_header(path: str | os.PathLike) -> dict:
    """The JSON header of a .safetensors file, reading only 8 + header-length bytes."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
        (n,) = struct.unpack("<Q", head)
        size = os.fstat(f.fileno()).st_size
        if n > MAX_HEADER_BYTES or n > size - 8:
            raise ValueError(f"{path}: implausible safetensors header length {n}")
        return json.loads(f.read(n))


def _tally(header: dict, by_bytes: dict[str, int], by_params: dict[str, int]) -> None:
    for name, t in header.items():
        if name == "__metadata__" or not isinstance(t, dict):
            continue
        dtype = str(t.get("dtype"))
        start, end = t.get("data_offsets", (0, 0))
        by_bytes[dtype] = by_bytes.get(dtype, 0) + int(end) - int(start)
        by_params[dtype] = by_params.get(dtype, 0) + math.prod(int(x) for x in t.get("shape", []))


def _weight_files(names: set[str], index: dict | None) -> list[str]:
    """Which safetensors files make up the checkpoint (index first; never double-count
    `consolidated.safetensors` of Mistral-format repos next to HF-format shards)."""
    if index is not None:
        return sorted(set(index.get("weight_map", {}).values()))
    if SAFETENSORS_SINGLE in names:
        return [SAFETENSORS_SINGLE]
    st = sorted(n for n in names if n.endswith(".safetensors") and "/" not in n)
    non_consolidated = [n for n in st if not n.startswith("consolidated")]
    return non_consolidated or st


def safetensors_from_dir(d: str | os.PathLike) -> tuple[dict[str, int], dict[str, int]] | None:
    """(bytes by dtype, elements by dtype) of the checkpoint in directory `d`, or None if it has no
    complete safetensors checkpoint. Reads header bytes only."""
    d = Path(d)
    index = None
    if (d / SAFETENSORS_INDEX).is_file():
        try:
            index = json.loads((d / SAFETENSORS_INDEX).read_text())
        except (OSError, ValueError):
            index = None
    names = {p.name for p in d.glob("*.safetensors")}
    files = _weight_files(names, index)
    if not files or any(not (d / f).is_file() for f in files):
        return None
    by_bytes: dict[str, int] = {}
    by_params: dict[str, int] = {}
    for f in files:
        _tally(read_safetensors_header(d / f), by_bytes, by_params)
    return by_bytes, by_params


def _read_json_file(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _companions_from_dir(d: Path) -> dict[str, dict]:
    out = {}
    for name in COMPANION_FILES:
        data = _read_json_file(d / name) if (d / name).is_file() else None
        if data is not None:
            out[name] = data
    return out


# =============================================================================================
# 1. Local directory
# =============================================================================================
def _from_local_dir(d: Path) -> ModelSource:
    cfg_path = d / "config.json"
    if not cfg_path.is_file():
        hint = " It holds params.json only (Mistral format); paste config.json instead." if (
            d / "params.json"
        ).is_file() else ""
        raise ModelNotFound(f"Directory {d} has no config.json.{hint}")
    config = _read_json_file(cfg_path)
    if config is None:
        raise ModelNotFound(f"{cfg_path} is not a readable JSON object.")
    assumptions: list[str] = [f"config read from the local directory {d}"]
    try:
        st = safetensors_from_dir(d)
    except (OSError, ValueError) as e:
        st = None
        assumptions.append(f"could not read the safetensors headers in {d} ({e}); weight bytes are computed")
    if st is None and any(d.glob("*.gguf")):
        assumptions.append("GGUF weights: their bytes are estimated, not read from the GGUF files")
    return ModelSource(
        model_id=str(d), config=config, companions=_companions_from_dir(d),
        safetensors_bytes_by_dtype=st[0] if st else None, safetensors_params_by_dtype=st[1] if st else None,
        origin="local-dir", revision=None, assumptions=assumptions,
    )


# =============================================================================================
# 2. In-process cache (LRU + TTL) and single-flight
# =============================================================================================
class _Memo:
    def __init__(self, maxsize: int) -> None:
        self._d: OrderedDict[tuple, tuple[float, ModelSource]] = OrderedDict()
        self._lock = threading.Lock()
        self.maxsize = maxsize

    def get(self, key: tuple) -> ModelSource | None:
        with self._lock:
            item = self._d.get(key)
            if item is None:
                return None
            expires, src = item
            if expires < time.monotonic():
                del self._d[key]
                return None
            self._d.move_to_end(key)
            return src

    def put(self, key: tuple, src: ModelSource, ttl: float) -> None:
        with self._lock:
            self._d[key] = (time.monotonic() + ttl, src)
            self._d.move_to_end(key)
            while len(self._d) > self.maxsize:
                self._d.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()


_MEMO = _Memo(MEMO_MAXSIZE)
_INFLIGHT: dict[tuple, cf.Future] = {}
_INFLIGHT_LOCK = threading.Lock()
# Hub lookups run here so that a caller can stop waiting at the deadline even when a request inside
# huggingface_hub ignores our timeout (its HEAD retry uses a 60 s timeout, its GET 10 s).
_HUB_POOL = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="kvdoctor-hub")
# Per-file work inside one lookup (config + companions + shard headers in parallel).
_IO_POOL = cf.ThreadPoolExecutor(max_workers=16, thread_name_prefix="kvdoctor-hub-io")


def clear_cache() -> None:
    """Forget the in-process cache (tests, benchmarks, a long-running bot after an outage)."""
    _MEMO.clear()


def _copy(src: ModelSource, origin: str | None = None) -> ModelSource:
    out = copy.deepcopy(src)
    if origin:
        out.origin = origin
    return out


# =============================================================================================
# 3. HF cache on disk
# =============================================================================================
def _cache_repo_folder(repo_id: str, cache_dir: str) -> str | None:
    """The cached folder name of `repo_id`, matched case-insensitively (the Hub is case-insensitive,
    the cache is not)."""
    want = "models--" + repo_id.replace("/", "--")
    if os.path.isdir(os.path.join(cache_dir, want)):
        return repo_id
    try:
        entries = os.listdir(cache_dir)
    except OSError:
        return None
    for e in entries:
        if e.lower() == want.lower():
            return e[len("models--"):].replace("--", "/", 1)
    return None


def _from_hf_cache(repo_id: str, revision: str | None, cache_dir: str) -> ModelSource | None:
    from huggingface_hub import try_to_load_from_cache

    cached_id = _cache_repo_folder(repo_id, cache_dir)
    if cached_id is None:
        return None
    try:
        path = try_to_load_from_cache(cached_id, "config.json", cache_dir=cache_dir, revision=revision)
    except (OSError, ValueError):
        return None
    if not isinstance(path, str):
        return None  # not cached, or cached as "does not exist"
    snap = Path(path).parent
    config = _read_json_file(Path(path))
    if config is None:
        return None
    assumptions = [f"config from the Hugging Face cache ({snap})"]
    try:
        st = safetensors_from_dir(snap)
    except (OSError, ValueError):
        st = None
    return ModelSource(
        model_id=cached_id, config=config, companions=_companions_from_dir(snap),
        safetensors_bytes_by_dtype=st[0] if st else None, safetensors_params_by_dtype=st[1] if st else None,
        origin="hf-cache", revision=snap.name if _HEX40.match(snap.name) else None, assumptions=assumptions,
    )


# =============================================================================================
# 4. The Hub
# =============================================================================================
def _is_transient(exc: BaseException) -> bool:
    """Timeouts, connection trouble, 408/429/5xx, also when wrapped by huggingface_hub."""
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import httpx as hx

    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 8:
        if isinstance(e, hx.TransportError | TimeoutError | ConnectionError):
            return True
        if isinstance(e, HfHubHTTPError):
            code = getattr(getattr(e, "response", None), "status_code", None)
            if code in (408, 429) or (code is not None and code >= 500):
                return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def _retry_after(exc: BaseException) -> float | None:
    resp = getattr(exc, "response", None)
    try:
        return float(resp.headers.get("Retry-After")) if resp is not None else None
    except (TypeError, ValueError):
        return None


def _short(exc: BaseException) -> str:
    from huggingface_hub.utils import httpx as hx

    e: BaseException | None = exc
    while e is not None:
        if isinstance(e, hx.TimeoutException | TimeoutError):
            return "timed out"
        if isinstance(e, hx.TransportError | ConnectionError):
            return "connection failed"
        code = getattr(getattr(e, "response", None), "status_code", None)
        if code:
            return f"HTTP {code}"
        e = e.__cause__ or e.__context__
    return type(exc).__name__


def _gated_message(repo_id: str, endpoint: str, with_token: bool) -> str:
    page = f"{endpoint}/{repo_id}"
    who = (
        "the token kvdoctor used has no access to it"
        if with_token
        else "kvdoctor was given no token with access to it"
    )
    return (
        f"Model '{repo_id}' is gated on the Hugging Face Hub and {who}, so its config.json can't be read. "
        f"Accept the licence on {page} while logged in, then set HF_TOKEN (or --hf-token) to a token of "
        "that account — or paste the model's config.json."
    )


def _not_found_message(repo_id: str, endpoint: str, revision: str | None, what: str = "repo") -> str:
    if what == "revision":
        return f"Revision '{revision}' of '{repo_id}' was not found on {_host(endpoint)}."
    if what == "config":
        at = f" at revision '{revision}'" if revision else ""
        return (
            f"'{repo_id}' on {_host(endpoint)} has no config.json{at}, so its architecture can't be read; "
            "name the base model or paste its config.json."
        )
    msg = f"Model '{repo_id}' was not found on {_host(endpoint)}."
    near = _catalog.near_names(repo_id)
    if near:
        msg += " Did you mean " + " or ".join(near) + "?"
    msg += " Check the spelling (org/name); a private repo needs HF_TOKEN (or --hf-token)."
    return msg


def _base_model_ids(info) -> list[str]:
    raw = getattr(info, "base_models", None)
    out: list[str] = []
    if isinstance(raw, dict):
        raw = raw.get("models")
    for m in raw or []:
        mid = m.get("id") if isinstance(m, dict) else m
        if isinstance(mid, str) and _REPO_ID_RE.match(mid):
            out.append(mid)
    return out


@dataclass
class _HubCtx:
    endpoint: str
    token: str | None
    timeout: float
    cache_dir: str


def _download_json(ctx: _HubCtx, repo_id: str, filename: str, revision: str | None) -> dict:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(
        repo_id, filename, revision=revision, cache_dir=ctx.cache_dir, token=ctx.token,
        endpoint=ctx.endpoint, etag_timeout=ctx.timeout,
    )
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{filename} of {repo_id} is not a JSON object")
    return data


def _headers_from_hub(ctx: _HubCtx, repo_id: str, sha: str | None, revision: str | None,
                      siblings: set[str]) -> tuple[dict[str, int], dict[str, int]] | None:
    """Read safetensors headers with Range requests (index: 1 download + one or two GETs per shard)."""
    from huggingface_hub import HfApi

    index = None
    if SAFETENSORS_INDEX in siblings:
        index = _download_json(ctx, repo_id, SAFETENSORS_INDEX, revision)
    files = _weight_files(siblings, index)
    if not files:
        return None
    api = HfApi(endpoint=ctx.endpoint, token=ctx.token)
    futures = [
        _IO_POOL.submit(api.parse_safetensors_file_metadata, repo_id, f, revision=sha or revision,
                        token=ctx.token, timeout=ctx.timeout)
        for f in files
    ]
    by_bytes: dict[str, int] = {}
    by_params: dict[str, int] = {}
    for fut in futures:
        meta = fut.result()
        for t in meta.tensors.values():
            start, end = t.data_offsets
            by_bytes[t.dtype] = by_bytes.get(t.dtype, 0) + int(end) - int(start)
            by_params[t.dtype] = by_params.get(t.dtype, 0) + int(t.parameter_count)
    return by_bytes, by_params


def _fetch_once(ctx: _HubCtx, repo_id: str, revision: str | None, _depth: int = 0) -> ModelSource:
    """One attempt: model_info + config/companions (+ headers if needed). Raises hf errors."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RemoteEntryNotFoundError

    api = HfApi(endpoint=ctx.endpoint, token=ctx.token)
    info = api.model_info(
        repo_id, revision=revision, timeout=ctx.timeout,
        expand=["sha", "siblings", "safetensors", "gated", "gguf", "baseModels"],
    )
    canonical = getattr(info, "id", None) or repo_id
    sha = getattr(info, "sha", None)
    siblings_known = info.siblings is not None
    siblings = {s.rfilename for s in (info.siblings or [])}
    assumptions: list[str] = [f"config from the Hugging Face Hub ({_host(ctx.endpoint)}, commit {sha or '?'})"]
    gguf_files = sorted(n for n in siblings if n.endswith(".gguf"))
    gguf_note = None
    if gguf_files or info.gguf:
        g = info.gguf or {}
        detail = ""
        if g.get("total"):
            detail = f" (the Hub reports {int(g['total']):,} parameters, architecture {g.get('architecture', '?')})"
        gguf_note = f"GGUF repo: weight bytes are estimated from the GGUF quantization, not read from the files{detail}"

    if siblings_known and "config.json" not in siblings:
        bases = _base_model_ids(info)
        if (gguf_files or info.gguf) and bases and _depth == 0:
            base = _fetch_once(ctx, bases[0], None, _depth=1)
            base.model_id = canonical
            base.safetensors_bytes_by_dtype = base.safetensors_params_by_dtype = None
            base.assumptions = [
                f"'{canonical}' has no config.json; config taken from its base model {bases[0]}",
                *base.assumptions,
            ]
            if gguf_note:
                base.assumptions.append(gguf_note)
            base.revision = sha
            return base
        raise ModelNotFound(_not_found_message(canonical, ctx.endpoint, revision, "config"))

    wanted = ["config.json"] + [c for c in COMPANION_FILES if (c in siblings if siblings_known else True)]
    futs = {name: _IO_POOL.submit(_download_json, ctx, canonical, name, revision) for name in wanted}

    # Safetensors: the Hub's server-side count of stored elements per dtype costs no extra request;
    # bytes follow from the dtype widths. Headers are read (in this thread, while the JSON files
    # download) only when the Hub gave no counts or a dtype of unknown width.
    st_bytes = st_params = None
    st = info.safetensors
    if st is not None and st.parameters and all(d in DTYPE_BITS for d in st.parameters):
        st_params = {d: int(n) for d, n in st.parameters.items()}
        st_bytes = {d: n * DTYPE_BITS[d] // 8 for d, n in st_params.items()}
    elif any(n.endswith(".safetensors") for n in siblings):
        res = _headers_from_hub(ctx, canonical, sha, revision, siblings)
        if res is not None:
            st_bytes, st_params = res

    config: dict | None = None
    companions: dict[str, dict] = {}
    for name, fut in futs.items():
        try:
            data = fut.result()
        except RemoteEntryNotFoundError:
            if name == "config.json":
                raise ModelNotFound(_not_found_message(canonical, ctx.endpoint, revision, "config")) from None
            continue
        except ValueError as e:
            if name == "config.json":
                raise ModelNotFound(f"config.json of '{canonical}' is not valid JSON ({e}).") from None
            assumptions.append(f"ignored {name}: not valid JSON")
            continue
        if name == "config.json":
            config = data
        else:
            companions[name] = data

    if gguf_note and st_bytes is None:
        assumptions.append(gguf_note)
    return ModelSource(
        model_id=canonical, config=config or {}, companions=companions,
        safetensors_bytes_by_dtype=st_bytes, safetensors_params_by_dtype=st_params,
        origin="hub", revision=sha, assumptions=assumptions,
    )


def _translate(exc: BaseException, ctx: _HubCtx, repo_id: str, revision: str | None, attempts: int) -> ModelUnavailable:
    from huggingface_hub.errors import (
        DisabledRepoError,
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, ModelUnavailable):
        return exc
    if isinstance(exc, GatedRepoError):  # subclass of RepositoryNotFoundError: must come first
        return ModelGated(_gated_message(repo_id, ctx.endpoint, ctx.token is not None))
    if isinstance(exc, RevisionNotFoundError):
        return ModelNotFound(_not_found_message(repo_id, ctx.endpoint, revision, "revision"))
    if isinstance(exc, DisabledRepoError):
        return ModelNotFound(f"Model '{repo_id}' has been disabled on {_host(ctx.endpoint)}.")
    if isinstance(exc, RepositoryNotFoundError):
        return ModelNotFound(_not_found_message(repo_id, ctx.endpoint, revision))
    if isinstance(exc, OfflineModeIsEnabled):
        return HubUnavailable(
            f"huggingface_hub is in offline mode (HF_HUB_OFFLINE was set when it was imported), so '{repo_id}' "
            "could not be fetched."
        )
    if isinstance(exc, HfHubHTTPError):
        code = getattr(exc.response, "status_code", None)
        if code in (401, 403):
            return ModelGated(_gated_message(repo_id, ctx.endpoint, ctx.token is not None))
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return HubUnavailable(
        f"Could not get '{repo_id}' from the Hugging Face Hub at {_host(ctx.endpoint)} ({_short(exc)}{tries}). "
        "Try again later, use --offline (bundled catalog / HF cache), or paste config.json."
    )


def _fetch_with_retries(ctx: _HubCtx, repo_id: str, revision: str | None, retries: int,
                        deadline: float) -> ModelSource:
    attempt = 0
    while True:
        attempt += 1
        try:
            return _fetch_once(ctx, repo_id, revision)
        except BaseException as exc:  # noqa: BLE001 - translated below, never leaks a traceback
            if not isinstance(exc, Exception):
                raise
            pause = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (attempt - 1))
            ra = _retry_after(exc)
            if ra is not None:
                pause = min(BACKOFF_MAX_S, max(pause, ra))
            transient = _is_transient(exc)
            if not transient or attempt > retries or time.monotonic() + pause >= deadline:
                raise _translate(exc, ctx, repo_id, revision, attempt) from exc
            time.sleep(pause)


def _hub_lookup(key: tuple, ctx: _HubCtx, repo_id: str, revision: str | None, retries: int) -> ModelSource:
    """Single-flight around the Hub fetch, bounded by a deadline for every waiting caller."""
    budget = ctx.timeout * (retries + 1) + sum(
        min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2**i) for i in range(retries)
    ) + 1.0
    with _INFLIGHT_LOCK:
        fut = _INFLIGHT.get(key)
        if fut is None:
            deadline = time.monotonic() + budget
            fut = _HUB_POOL.submit(_fetch_with_retries, ctx, repo_id, revision, retries, deadline)
            _INFLIGHT[key] = fut

            def _done(f: cf.Future, key: tuple = key) -> None:
                with _INFLIGHT_LOCK:
                    if _INFLIGHT.get(key) is f:
                        del _INFLIGHT[key]
                if not f.cancelled() and f.exception() is None:
                    _MEMO.put(("online", *key), f.result(), MEMO_TTL_S)

            fut.add_done_callback(_done)
    try:
        return fut.result(timeout=budget)
    except cf.TimeoutError:
        raise HubUnavailable(
            f"The Hugging Face Hub at {_host(ctx.endpoint)} did not answer for '{repo_id}' within "
            f"{budget:.0f} s. Try again later, use --offline (bundled catalog / HF cache), or paste config.json."
        ) from None


# =============================================================================================
# 5. Bundled catalog
# =============================================================================================
def _from_catalog(repo_id: str, revision: str | None) -> ModelSource | None:
    hit = _catalog.lookup(repo_id)
    if hit is None:
        return None
    cid, config, companions = hit
    assumptions = _catalog.describe(cid)
    if cid.lower() != repo_id.strip().lower():
        assumptions.insert(0, f"{repo_id.strip()} is now {cid} on the Hub (the repo was renamed)")
    if revision:
        assumptions.append(f"revision '{revision}' was asked for, but the catalog copy is not tied to a revision")
    return ModelSource(model_id=cid, config=config, companions=companions, origin="catalog",
                       revision=None, assumptions=assumptions)


def catalog_ids() -> list[str]:
    """Repo ids in the bundled catalog."""
    return _catalog.catalog_ids()


# =============================================================================================
# Entry point
# =============================================================================================
# The longest model reference read: Linux's PATH_MAX for a local directory (a Hub repo id has at most 96
# characters, huggingface_hub's validate_repo_id).
MAX_REF_CHARS = 4096


def resolve_model(ref: str, *, revision: str | None = None, offline: bool | None = None,
                  token: str | None = None, endpoint: str | None = None, timeout: float = 10.0,
                  cache_dir: str | None = None, retries: int | None = None) -> ModelSource:
    """Find config.json (+ companions, + safetensors bytes by dtype) for `ref`; see the module doc
    for the order. `ref` is a local directory, `org/name`, `org/name@revision` or a Hub URL.
    Raises ModelNotFound / ModelGated / HubUnavailable (subclasses of ModelUnavailable) with a
    sentence fit for the user."""
    if not isinstance(ref, str) or not ref.strip():
        raise ModelNotFound("No model given: name a Hugging Face repo (org/name) or a local directory.")
    ref = ref.strip()
    if len(ref) > MAX_REF_CHARS:
        # not echoed: a reply would carry it whole
        raise ModelNotFound(f"The model reference is {len(ref):,} characters long: a Hugging Face repo id (org/name) "
                            f"or a local path has at most {MAX_REF_CHARS:,}.")
    local = _as_local_dir(ref)
    if local is not None:
        return _from_local_dir(local)
    repo_id, revision = _parse_ref(ref, revision)
    offline_now = is_offline(offline)
    ep = _endpoint(endpoint)
    cdir = _cache_dir(cache_dir)
    tok = _token(token)
    n_retries = HUB_RETRIES if retries is None else max(0, int(retries))
    key = (ep, repo_id.lower(), revision or "main", _token_fp(tok))

    hit = _MEMO.get(("online", *key)) or (_MEMO.get(("offline", *key)) if offline_now else None)
    if hit is not None:
        return _copy(hit, "memory-cache")

    cached = _from_hf_cache(repo_id, revision, cdir)
    if offline_now:
        src = cached or _from_catalog(repo_id, revision)
        if src is None:
            msg = (
                f"Model '{repo_id}' is not available offline: not a local directory, not in the Hugging Face "
                f"cache ({cdir}) and not in kvdoctor's bundled catalog."
            )
            near = _catalog.near_names(repo_id)
            if near:
                msg += " Did you mean " + " or ".join(near) + "?"
            msg += " Run once with network access, or paste config.json."
            raise ModelNotFound(msg)
        src.assumptions.append(OFFLINE_NOTE)
        _MEMO.put(("offline", *key), src, MEMO_TTL_S)
        return _copy(src)
    if cached is not None and cached.safetensors_bytes_by_dtype is not None:
        _MEMO.put(("online", *key), cached, MEMO_TTL_S)
        return _copy(cached)

    ctx = _HubCtx(endpoint=ep, token=tok, timeout=float(timeout), cache_dir=cdir)
    try:
        src = _hub_lookup(key, ctx, repo_id, revision, n_retries)
    except ModelUnavailable as exc:
        fallback = cached or _from_catalog(repo_id, revision)
        if fallback is None:
            raise
        fallback.assumptions.append(f"the Hub could not be used: {exc}")
        _MEMO.put(("online", *key), fallback, FALLBACK_TTL_S)
        return _copy(fallback)
    # The worker's done-callback memoises too, but may run after we got the result: put it here as
    # well so that the very next lookup is a hit.
    _MEMO.put(("online", *key), src, MEMO_TTL_S)
    return _copy(src)
