"""A fake Hugging Face Hub: a real HTTP server on 127.0.0.1 that the real `huggingface_hub` client
talks to (pass `endpoint=hub.url`), so tests exercise the actual requests, headers and error
mapping with no monkeypatching of HTTP and no internet.

What it speaks (derived from huggingface_hub 2.4's own client code: hf_api.model_info,
file_download.get_hf_file_metadata / hf_hub_download, hf_api.parse_safetensors_file_metadata,
utils/_http.hf_raise_for_status):

* `GET /api/models/{repo}` and `/api/models/{repo}/revision/{rev}` with `expand=`/`expand[]=`:
  JSON with id, sha, gated, siblings, safetensors {parameters, total} (computed from the served
  headers, as the Hub does), gguf, baseModels — restricted to the expanded fields when asked.
* `HEAD|GET /{repo}/resolve/{rev}/{path}`: `X-Repo-Commit`, quoted `ETag`, `Content-Length`,
  `Accept-Ranges`; `Range: bytes=a-b` gives 206 + `Content-Range`.
* Errors as the Hub sends them: missing repo 401 + `X-Error-Code: RepoNotFound`; gated repo without
  an allowed token 401/403 + `X-Error-Code: GatedRepo` (its model info stays public, like the
  Hub's); missing file 404 + `X-Error-Code: EntryNotFound` + `X-Repo-Commit`; unknown revision
  404 + `RevisionNotFound`.
* Scripted faults: `stall_when(pred)` (hold the request until the test ends), `fail_next(n, 503)`,
  `delay_s` (slow answers, for single-flight tests).
* Every request is recorded in `requests` (method, path, query, had_auth) so tests can count them.

Fixture builders: `safetensors_file(tensors)` (header only, no tensor data: a "70B" checkpoint is a
few KB) and `sharded_checkpoint(tensors, n)` (shards + model.safetensors.index.json).

Usage:
    with FakeHub() as hub:
        hub.add_repo("org/name", {"config.json": b"{...}"})
        resolve_model("org/name", endpoint=hub.url, cache_dir=tmp)
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

# bits per element of safetensors dtypes (safetensors' Dtype enum)
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "F4": 4,
}

Tensor = tuple[str, str, list[int]]  # (name, dtype, shape)


def safetensors_file(tensors: Iterable[Tensor], metadata: dict | None = None, pad_to: int = 0) -> bytes:
    """A header-only safetensors file: 8-byte little-endian length + JSON header, no data.
    `pad_to` pads the header with spaces (allowed by the format) to force a long header."""
    hdr: dict = {}
    if metadata:
        hdr["__metadata__"] = metadata
    off = 0
    for name, dtype, shape in tensors:
        n = math.prod(shape) * DTYPE_BITS[dtype] // 8
        hdr[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(hdr, separators=(",", ":")).encode()
    if pad_to > len(raw):
        raw += b" " * (pad_to - len(raw))
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def sharded_checkpoint(tensors: list[Tensor], n_shards: int) -> dict[str, bytes]:
    """Split `tensors` into `n_shards` header-only shards + model.safetensors.index.json."""
    per = math.ceil(len(tensors) / n_shards)
    files: dict[str, bytes] = {}
    weight_map: dict[str, str] = {}
    total = 0
    for i in range(n_shards):
        chunk = tensors[i * per:(i + 1) * per]
        fname = f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors"
        files[fname] = safetensors_file(chunk)
        for name, dtype, shape in chunk:
            weight_map[name] = fname
            total += math.prod(shape) * DTYPE_BITS[dtype] // 8
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    return files


def _header_of(blob: bytes) -> dict:
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n])


@dataclass
class FakeRepo:
    repo_id: str
    commits: dict[str, dict[str, bytes]]  # sha -> files
    refs: dict[str, str]  # "main"/branch/tag -> sha
    gated: bool | str = False
    allowed_tokens: set[str] = field(default_factory=set)
    api_safetensors: bool = True  # does the model-info API report safetensors counts?
    gguf: dict | None = None
    base_models: list[str] | None = None

    def sha_for(self, rev: str | None) -> str | None:
        rev = rev or "main"
        if rev in self.refs:
            return self.refs[rev]
        return rev if rev in self.commits else None


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[dict] = []
        self.delay_s = 0.0
        self._stall: Callable[[str, str], bool] | None = None
        self._fail: list[int] = []
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # ----- scripting ------------------------------------------------------------------------
    def add_repo(self, repo_id: str, files: dict[str, bytes | dict], *, gated: bool | str = False,
                 allowed_tokens: Iterable[str] = (), api_safetensors: bool = True, gguf: dict | None = None,
                 base_models: list[str] | None = None, other_revisions: dict[str, dict] | None = None,
                 ) -> FakeRepo:
        def norm(fs: dict) -> dict[str, bytes]:
            return {k: (json.dumps(v).encode() if isinstance(v, dict) else v) for k, v in fs.items()}

        def sha(fs: dict[str, bytes], salt: str) -> str:
            h = hashlib.sha1(salt.encode())
            for k in sorted(fs):
                h.update(k.encode() + hashlib.sha1(fs[k]).digest())
            return h.hexdigest()

        main = norm(files)
        commits = {sha(main, repo_id): main}
        refs = {"main": next(iter(commits))}
        for rev, fs in (other_revisions or {}).items():
            n = norm(fs)
            s = sha(n, repo_id + rev)
            commits[s] = n
            refs[rev] = s
        repo = FakeRepo(repo_id, commits, refs, gated=gated, allowed_tokens=set(allowed_tokens),
                        api_safetensors=api_safetensors, gguf=gguf, base_models=base_models)
        self.repos[repo_id.lower()] = repo
        return repo

    def stall_when(self, pred: Callable[[str, str], bool] | None) -> None:
        """Hold every request for which pred(method, path) is true until the hub stops."""
        self._stall = pred

    def release(self) -> None:
        """Let held requests go on (answered normally unless the stall predicate still matches)."""
        self._release.set()

    def fail_next(self, n: int, status: int = 503) -> None:
        with self._lock:
            self._fail.extend([status] * n)

    def count(self, contains: str = "", method: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests
                       if contains in r["path"] and (method is None or r["method"] == method))

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()

    # ----- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            fake = hub

        srv = _Server(("127.0.0.1", 0), Handler)
        srv.daemon_threads = True
        srv.block_on_close = False
        self._server = srv
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{srv.server_address[1]}"
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client that gave up (timeout) while we answered: expected in stall tests
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeHub

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without NODELAY, Nagle + delayed ACK add
        # ~40 ms per response on loopback, which would make the cold figures meaningless
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        pass

    # ----- plumbing -------------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head_only: bool = False) -> None:
        self.send_response(status)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        hdrs.setdefault("Content-Length", str(len(body)))
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.end_headers()
        if not head_only and body:
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str, extra: dict | None = None, head: bool = False) -> None:
        body = json.dumps({"error": message}).encode()
        self._send(status, body, {"X-Error-Code": code, "X-Error-Message": message, **(extra or {})}, head)

    def _token_ok(self, repo: FakeRepo) -> tuple[bool, bool]:
        auth = self.headers.get("Authorization", "")
        tok = auth[7:] if auth.startswith("Bearer ") else ""
        return bool(tok), tok in repo.allowed_tokens

    def _handle(self, method: str) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        with fake._lock:
            fake.requests.append({"method": method, "path": path, "query": parts.query,
                                  "had_auth": "Authorization" in self.headers,
                                  "range": self.headers.get("Range")})
            fail = fake._fail.pop(0) if fake._fail else None
        if fake._stall is not None and fake._stall(method, path):
            fake._release.wait(30)
            if fake._stall is not None and fake._stall(method, path):
                self.close_connection = True  # still stalled (the hub stops): drop the connection
                return
        if fake.delay_s:
            time.sleep(fake.delay_s)
        if fail is not None:
            self._error(fail, "", "scripted failure", {"Retry-After": "0"}, head=method == "HEAD")
            return
        if path.startswith("/api/models/") and method == "GET":
            self._model_info(path[len("/api/models/"):], parse_qs(parts.query))
            return
        m = re.match(r"^/(.+?)/resolve/(.+)$", path)
        if m:
            self._resolve(method, m.group(1), m.group(2))
            return
        self._error(404, "", "unknown route", head=method == "HEAD")

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._handle("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._handle("HEAD")

    # ----- routes ---------------------------------------------------------------------------
    def _model_info(self, rest: str, query: dict) -> None:
        rev = None
        if "/revision/" in rest:
            rest, rev = rest.split("/revision/", 1)
        repo = self.fake.repos.get(rest.lower())
        if repo is None:
            self._error(401, "RepoNotFound", "Repository not found")
            return
        sha = repo.sha_for(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", "Invalid rev id: " + str(rev))
            return
        files = repo.commits[sha]
        info: dict = {"_id": "x" * 24, "id": repo.repo_id, "modelId": repo.repo_id, "sha": sha,
                      "private": False, "gated": repo.gated, "disabled": False,
                      "siblings": [{"rfilename": f} for f in sorted(files)]}
        if repo.api_safetensors:
            params: dict[str, int] = {}
            index = files.get("model.safetensors.index.json")
            names = (set(json.loads(index)["weight_map"].values()) if index is not None
                     else {f for f in files if f == "model.safetensors"})
            for f in names:
                for tname, t in _header_of(files[f]).items():
                    if tname != "__metadata__":
                        params[t["dtype"]] = params.get(t["dtype"], 0) + math.prod(t["shape"])
            if params:
                info["safetensors"] = {"parameters": params, "total": sum(params.values())}
        if repo.gguf is not None:
            info["gguf"] = repo.gguf
        if repo.base_models is not None:
            info["baseModels"] = {"relation": "quantized", "models": [{"id": b} for b in repo.base_models]}
        expand = query.get("expand", []) + query.get("expand[]", [])
        if expand:
            info = {k: v for k, v in info.items() if k in expand or k in ("_id", "id")}
        self._send(200, json.dumps(info).encode())

    def _resolve(self, method: str, repo_id: str, rest: str) -> None:
        head = method == "HEAD"
        repo = self.fake.repos.get(repo_id.lower())
        if repo is None:
            self._error(401, "RepoNotFound", "Repository not found", head=head)
            return
        # revision may contain slashes (refs/pr/1): try the longest known revision prefix
        sha, filename = None, None
        for rev in sorted(list(repo.refs) + list(repo.commits), key=len, reverse=True):
            if rest.startswith(rev + "/"):
                sha, filename = repo.sha_for(rev), rest[len(rev) + 1:]
                break
        if sha is None:
            self._error(404, "RevisionNotFound", "Invalid rev id", head=head)
            return
        if repo.gated:
            has_tok, ok = self._token_ok(repo)
            if not ok:
                msg = (f"Access to model {repo.repo_id} is restricted. You must have access to it and be "
                       "authenticated to access it. Please log in.")
                self._error(403 if has_tok else 401, "GatedRepo", msg, head=head)
                return
        files = repo.commits[sha]
        if filename not in files:
            self._error(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": sha}, head=head)
            return
        data = files[filename]
        hdrs = {"X-Repo-Commit": sha, "ETag": '"' + hashlib.sha256(data).hexdigest() + '"',
                "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        rng = self.headers.get("Range")
        m = re.match(r"bytes=(\d+)-(\d*)$", rng or "")
        if m and not head:
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
            if start >= len(data):
                self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                return
            hdrs["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            self._send(206, data[start:end + 1], hdrs)
            return
        hdrs["Content-Length"] = str(len(data))
        self._send(200, data, hdrs, head_only=head)
