"""A fake Discourse forum for the assistant's tests: a real HTTP server on 127.0.0.1.

The real `httpx` client in `bot/discourse.py` talks to it over TCP (CONTRIBUTING: no
monkeypatching of HTTP). It models what the assistant relies on, after integrations.md §2 and
Discourse's PostsController:
- `Api-Key` / `Api-Username` checked on every request (403 otherwise);
- `GET /posts.json?before=N`: the public posts with id in (N-50, N], newest first (`raw`,
  `topic_title`, `category_id` included); private-message posts take ids but are not listed;
- `GET /t/{id}.json` (first 20 posts, `cooked` only, plus the full `stream` of ids),
  `GET /t/{id}/posts.json?post_ids[]=`, `GET /posts/{id}.json` (with `raw`), `GET /categories.json`;
- `POST /posts.json` (a reply by the API user) and `PUT /posts/{id}[.json]` (edit, author only);
- scripted faults: 429 with `Retry-After` and/or `extras.wait_seconds`, 5xx, a dropped
  connection before or after the request took effect, and "hang after": the request takes
  effect and the response is held until the test releases it (to kill a client mid-request);
- the webhook sender: `{"post": {...}}` signed with HMAC-SHA256 over the exact body bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import html
import itertools
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

SEED_POST = (Path(__file__).resolve().parent.parent / "examples" / "seed-post.txt").read_text(encoding="utf-8")
SEED_TITLE = "Estimating VRAM for Qwen2.5-14B-Instruct-1M on an RTX A6000 with vllm serve"

CATEGORIES = [
    {"id": 1, "name": "General", "slug": "general", "parent_category_id": None},
    {"id": 2, "name": "vLLM", "slug": "vllm", "parent_category_id": None},
    {"id": 3, "name": "Off-topic", "slug": "off-topic", "parent_category_id": None},
    {"id": 4, "name": "Memory", "slug": "memory", "parent_category_id": 2},
]


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    at: float  # time.monotonic() when the request arrived


@dataclass
class Fault:
    method: str
    path: str                  # matched as a prefix of the request path
    kind: str                  # "429", "500"/"502"/"503", "drop_before", "drop_after", "hang_after"
    times: int = 1
    retry_after: str | None = None
    wait_seconds: float | None = None
    triggered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ts % 1 * 1000):03d}Z"


# -- a tiny "cooker": enough markdown/BBCode → HTML for the cooked fallback -----------------------

def _matching_close(low: str, start: int) -> int:
    depth, pos = 0, start
    while True:
        nxt_open = low.find("[quote", pos)
        nxt_close = low.find("[/quote]", pos)
        if nxt_close == -1:
            return -1
        if nxt_open != -1 and nxt_open < nxt_close:
            depth += 1
            pos = nxt_open + 6
        else:
            depth -= 1
            if depth == 0:
                return nxt_close
            pos = nxt_close + 8


def _cook_blocks(text: str) -> str:
    out, para, code = [], [], None
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            if code is None:
                if para:
                    out.append("<p>" + "<br>\n".join(html.escape(x) for x in para) + "</p>")
                    para = []
                code = []
            else:
                out.append("<pre><code>" + html.escape("\n".join(code)) + "</code></pre>")
                code = None
        elif code is not None:
            code.append(line)
        elif not line.strip():
            if para:
                out.append("<p>" + "<br>\n".join(html.escape(x) for x in para) + "</p>")
                para = []
        else:
            para.append(line)
    if code is not None:
        out.append("<pre><code>" + html.escape("\n".join(code)) + "</code></pre>")
    if para:
        out.append("<p>" + "<br>\n".join(html.escape(x) for x in para) + "</p>")
    return "\n".join(out)


def cook(raw: str) -> str:
    parts, pos, low = [], 0, raw.lower()
    while (start := low.find("[quote", pos)) != -1:
        head_end = raw.find("]", start)
        close = _matching_close(low, start)
        if head_end == -1 or close == -1:
            break
        parts.append(_cook_blocks(raw[pos:start]))
        user = raw[start + 6:head_end].strip(' ="').split(",")[0]
        parts.append(f'<aside class="quote no-group" data-username="{html.escape(user)}">'
                     f'<div class="title">{html.escape(user)}:</div>'
                     f"<blockquote>{cook(raw[head_end + 1:close])}</blockquote></aside>")
        pos = close + len("[/quote]")
    parts.append(_cook_blocks(raw[pos:]))
    return "\n".join(p for p in parts if p)


# -- the forum -----------------------------------------------------------------------------------

class FakeDiscourse:
    def __init__(self, api_key: str = "test-api-key", api_username: str = "kvdoctor",
                 *, unique_posts: bool = False) -> None:
        self.api_key = api_key
        self.api_username = api_username
        self.unique_posts = unique_posts
        self.lock = threading.RLock()
        self.users: dict[str, int] = {}
        self.posts: dict[int, dict] = {}
        self.topics: dict[int, dict] = {}
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self._post_ids = itertools.count(1)
        self._topic_ids = itertools.count(1)
        self._event_ids = itertools.count(1)
        for name, uid in (("system", -1), ("discobot", -2), (api_username, 10), ("alice", 20), ("bob", 21)):
            self.add_user(name, uid)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeDiscourse:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        for fault in self.faults:
            fault.release.set()
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- forum content -----------------------------------------------------------------------
    def add_user(self, username: str, user_id: int) -> None:
        self.users[username.lower()] = user_id

    def create_topic(self, username: str, title: str, raw: str, *, category_id: int = 2,
                     private: bool = False, created_at: float | None = None) -> dict:
        with self.lock:
            tid = next(self._topic_ids)
            self.topics[tid] = {
                "id": tid, "title": title, "slug": title.lower().replace(" ", "-")[:60],
                "category_id": category_id, "archetype": "private_message" if private else "regular",
                "closed": False, "archived": False, "post_ids": [],
            }
            return self.reply(tid, username, raw, created_at=created_at)

    def reply(self, topic_id: int, username: str, raw: str, *, reply_to_post_number: int | None = None,
              post_type: int = 1, created_at: float | None = None) -> dict:
        with self.lock:
            topic = self.topics[topic_id]
            pid = next(self._post_ids)
            now = time.time() if created_at is None else created_at
            post = {
                "id": pid, "topic_id": topic_id, "post_number": len(topic["post_ids"]) + 1,
                "username": username, "user_id": self.users.get(username.lower(), 99), "raw": raw,
                "cooked": cook(raw), "created_at": iso(now), "updated_at": iso(now),
                "reply_to_post_number": reply_to_post_number, "post_type": post_type, "version": 1,
                "hidden": False, "deleted_at": None,
            }
            self.posts[pid] = post
            topic["post_ids"].append(pid)
            return dict(post)

    def edit(self, post_id: int, raw: str) -> dict:
        with self.lock:
            post = self.posts[post_id]
            post.update(raw=raw, cooked=cook(raw), version=post["version"] + 1, updated_at=iso(time.time()))
            return dict(post)

    def topic_posts(self, topic_id: int) -> list[dict]:
        with self.lock:
            return [dict(self.posts[i]) for i in self.topics[topic_id]["post_ids"]]

    def posts_by(self, username: str, topic_id: int | None = None) -> list[dict]:
        with self.lock:
            return [dict(p) for p in self.posts.values()
                    if p["username"].lower() == username.lower() and (topic_id is None or p["topic_id"] == topic_id)]

    def our_posts(self, topic_id: int | None = None) -> list[dict]:
        return self.posts_by(self.api_username, topic_id)

    def requests_to(self, method: str, path_prefix: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path.startswith(path_prefix)]

    def writes(self) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.method in ("POST", "PUT")]

    # -- faults ------------------------------------------------------------------------------
    def fail(self, method: str, path: str, kind: str, *, times: int = 1, retry_after: str | None = None,
             wait_seconds: float | None = None) -> Fault:
        fault = Fault(method, path, kind, times, retry_after, wait_seconds)
        with self.lock:
            self.faults.append(fault)
        return fault

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and path.startswith(fault.path):
                    fault.times -= 1
                    return fault
        return None

    # -- serialisers -------------------------------------------------------------------------
    def _serialize(self, post: dict, *, raw: bool = True, title: bool = False) -> dict:
        topic = self.topics[post["topic_id"]]
        out = {k: v for k, v in post.items() if k != "raw"}
        out.update(name=post["username"].title(), topic_slug=topic["slug"],
                   yours=post["username"].lower() == self.api_username.lower())
        if raw:
            out["raw"] = post["raw"]
        if title:
            out.update(topic_title=topic["title"], topic_html_title=html.escape(topic["title"]),
                       category_id=topic["category_id"])
        return out

    def webhook_payload(self, post_id: int) -> dict:
        """WebHookPostSerializer-like: the post with raw, topic title, category id and slug."""
        with self.lock:
            post = self.posts[post_id]
            topic = self.topics[post["topic_id"]]
            data = self._serialize(post, raw=True, title=True)
            slug = next((c["slug"] for c in CATEGORIES if c["id"] == topic["category_id"]), None)
            data.update(category_slug=slug, topic_archetype=topic["archetype"],
                        topic_posts_count=len(topic["post_ids"]))
            return {"post": data}

    # -- webhook sender ----------------------------------------------------------------------
    def send_webhook(self, url: str, post_id: int, *, secret: str, event: str = "post_created",
                     event_id: str | None = None, signature: str | None = None,
                     body: bytes | None = None) -> httpx.Response:
        body = body if body is not None else json.dumps(self.webhook_payload(post_id)).encode()
        if signature is None:
            signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-Discourse-Instance": self.url,
            "X-Discourse-Event-Id": event_id or str(next(self._event_ids)),
            "X-Discourse-Event-Type": "post",
            "X-Discourse-Event": event,
        }
        if signature:
            headers["X-Discourse-Event-Signature"] = signature
        return httpx.post(url.rstrip("/") + "/discourse/webhook", content=body, headers=headers, timeout=10)

    # -- request handling --------------------------------------------------------------------
    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        split = urlsplit(h.path)
        path, query = split.path, parse_qs(split.query)
        length = int(h.headers.get("Content-Length") or 0)
        data = h.rfile.read(length) if length else b""
        body: Any = None
        if data:
            if "json" in (h.headers.get("Content-Type") or ""):
                body = json.loads(data)
            else:
                body = {k: v[0] for k, v in parse_qs(data.decode()).items()}
        with self.lock:
            self.requests.append(Recorded(method, path, query, dict(h.headers.items()), body, time.monotonic()))
        if h.headers.get("Api-Key") != self.api_key or h.headers.get("Api-Username") != self.api_username:
            return self._send(h, 403, {"errors": ["You are not permitted to view the requested resource."],
                                       "error_type": "invalid_access"})
        fault = self._take_fault(method, path)
        if fault and fault.kind == "429":
            extras = {"wait_seconds": fault.wait_seconds} if fault.wait_seconds is not None else {}
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return self._send(h, 429, {"errors": ["You've performed this action too many times."],
                                       "error_type": "rate_limit", "extras": extras}, headers)
        if fault and fault.kind.isdigit():
            return self._send(h, int(fault.kind), {"errors": ["Internal Server Error"]})
        if fault and fault.kind == "drop_before":
            return self._drop(h)
        status, payload = self._route(method, path, query, body)
        if fault and fault.kind == "drop_after":
            return self._drop(h)
        if fault and fault.kind == "hang_after":
            fault.triggered.set()
            fault.release.wait(60)
            return self._drop(h)
        return self._send(h, status, payload)

    def _route(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        not_found = (404, {"errors": ["The requested URL or resource could not be found."], "error_type": "not_found"})
        with self.lock:
            if method == "GET" and path == "/posts.json":
                top = max(self.posts, default=0)
                before = int(query.get("before", [top])[0]) or top
                visible = [p for p in self.posts.values()
                           if before - 50 < p["id"] <= before and p["deleted_at"] is None
                           and self.topics[p["topic_id"]]["archetype"] != "private_message"]
                visible.sort(key=lambda p: (p["created_at"], p["id"]), reverse=True)
                return 200, {"latest_posts": [self._serialize(p, title=True) for p in visible]}
            if method == "GET" and len(parts) == 2 and parts[0] == "posts" and parts[1].endswith(".json"):
                post = self.posts.get(_int(parts[1][:-5]))
                return (200, self._serialize(post)) if post else not_found
            if method == "GET" and len(parts) == 2 and parts[0] == "t" and parts[1].endswith(".json"):
                topic = self.topics.get(_int(parts[1][:-5]))
                if not topic:
                    return not_found
                ids = topic["post_ids"]
                return 200, {
                    "id": topic["id"], "title": topic["title"], "slug": topic["slug"],
                    "category_id": topic["category_id"], "archetype": topic["archetype"],
                    "closed": topic["closed"], "archived": topic["archived"], "posts_count": len(ids),
                    "post_stream": {"posts": [self._serialize(self.posts[i], raw=False) for i in ids[:20]],
                                    "stream": list(ids)},
                }
            if method == "GET" and len(parts) == 3 and parts[0] == "t" and parts[2] == "posts.json":
                topic = self.topics.get(_int(parts[1]))
                if not topic:
                    return not_found
                wanted = {_int(x) for x in query.get("post_ids[]", [])}
                posts = [self._serialize(self.posts[i], raw=False) for i in topic["post_ids"] if i in wanted]
                return 200, {"post_stream": {"posts": posts}, "id": topic["id"]}
            if method == "GET" and path == "/categories.json":
                top = [dict(c, subcategory_list=[s for s in CATEGORIES if s["parent_category_id"] == c["id"]])
                       for c in CATEGORIES if c["parent_category_id"] is None]
                return 200, {"category_list": {"categories": top}}
            if method == "POST" and path == "/posts.json":
                return self._create(body or {})
            if method == "PUT" and len(parts) == 2 and parts[0] == "posts":
                return self._update(_int(parts[1].removesuffix(".json")), body or {})
        return not_found

    def _create(self, body: dict) -> tuple[int, Any]:
        raw = str(body.get("raw") or "")
        topic = self.topics.get(_int(body.get("topic_id")))
        if not raw.strip():
            return 422, {"errors": ["Body is too short"], "error_type": "invalid_parameters"}
        if topic is None:
            return 422, {"errors": ["Topic not found"], "error_type": "invalid_parameters"}
        if topic["closed"] or topic["archived"]:
            return 422, {"errors": ["This topic is closed"], "error_type": "invalid_parameters"}
        if self.unique_posts and any(self.posts[i]["raw"] == raw for i in topic["post_ids"]):
            return 422, {"errors": ["Body is too similar to what you recently posted"]}
        reply_to = body.get("reply_to_post_number")
        post = self.reply(topic["id"], self.api_username, raw,
                          reply_to_post_number=int(reply_to) if reply_to else None)
        return 200, self._serialize(self.posts[post["id"]])

    def _update(self, post_id: int, body: dict) -> tuple[int, Any]:
        post = self.posts.get(post_id)
        if post is None:
            return 404, {"errors": ["The requested URL or resource could not be found."]}
        raw = (body.get("post") or {}).get("raw") if isinstance(body.get("post"), dict) else body.get("post[raw]")
        if post["username"].lower() != self.api_username.lower():
            return 403, {"errors": ["You are not permitted to edit this post."], "error_type": "invalid_access"}
        if not raw:
            return 422, {"errors": ["Body is too short"]}
        self.edit(post_id, raw)
        return 200, {"post": self._serialize(self.posts[post_id])}

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _drop(h: BaseHTTPRequestHandler) -> None:
        """Close the connection without a response (the client sees the request fail mid-way)."""
        h.close_connection = True
        with contextlib.suppress(OSError):
            h.connection.shutdown(socket.SHUT_RDWR)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeDiscourse

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib names
        self.fake.handle(self, "GET")

    def do_POST(self) -> None:  # noqa: N802
        self.fake.handle(self, "POST")

    def do_PUT(self) -> None:  # noqa: N802
        self.fake.handle(self, "PUT")

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()


# -- shared fixture (imported by the Discourse test modules) -----------------------------------
import pytest  # noqa: E402


@pytest.fixture
def fake():
    """A fake forum on a loopback port for one test."""
    forum = FakeDiscourse().start()
    yield forum
    forum.stop()
