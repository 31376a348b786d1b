"""A fake Slack Web API: a real HTTP server on 127.0.0.1 that records every call.

The app's real `slack_sdk.WebClient` talks to it through `base_url` (SLACK_API_URL), so the
tests exercise the real client, its retry handlers and the files.uploadV2 three-step flow
(integrations.md §1.12: bind port 0, record whole requests, script failures such as 429 with
Retry-After). Paths:

  POST /api/<method>          Web API (auth.test, chat.*, conversations.replies, files.*, views.*,
                              oauth.v2.access, apps.connections.open)
  POST /upload/v1/<file_id>   the upload_url handed out by files.getUploadURLExternal
  POST /webhook/<id>          response_url targets (slash commands, shortcuts, buttons)
  GET  /files/<name>          url_private of pasted snippets (needs the bot token)
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

BOT_USER_ID = "UKVDOCTOR"
BOT_ID = "BKVDOCTOR"
TEAM_ID = "T0KVD"


@dataclass
class Call:
    method: str  # "chat.postMessage", "upload", "webhook", "files"
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    status: int
    response: dict[str, Any]
    at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.response.get("ok", True) is not False


class FakeSlack:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._faults: dict[str, list[tuple[int, dict, dict]]] = {}
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self.threads: dict[tuple[str, str], list[dict]] = {}  # conversations.replies data
        self.files: dict[str, bytes] = {}  # url_private contents by name
        self.valid_tokens = {"xoxb-test-token"}
        self._sockets: list[Any] = []  # open Socket Mode WebSocket connections
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.headers.get("Upgrade", "").lower() == "websocket":
                    fake._websocket(self)
                    return
                fake._handle(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake._handle(self, self.rfile.read(length))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_url = f"{self.url}/api/"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- scripting ----------------------------------------------------------------------
    def fail(self, method: str, *, status: int = 429, retry_after: int | None = 1,
             error: str | None = None, times: int = 1) -> None:
        """Make the next `times` calls of `method` fail: HTTP `status` (429 with Retry-After), or
        HTTP 200 with ok:false and `error`."""
        headers = {"Retry-After": str(retry_after)} if status == 429 and retry_after is not None else {}
        body = {"ok": False, "error": error or ("ratelimited" if status == 429 else "internal_error")}
        with self._lock:
            self._faults.setdefault(method, []).extend([(status, headers, body)] * times)

    def socket_send(self, envelope: dict, timeout: float = 5.0) -> None:
        """Push a Socket Mode envelope to the connected client (waits for the connection)."""
        deadline = time.monotonic() + timeout
        while not self._sockets:
            if time.monotonic() > deadline:
                raise AssertionError("no Socket Mode connection")
            time.sleep(0.01)
        conn, lock = self._sockets[-1]
        with lock:
            conn.sendall(_ws_frame(json.dumps(envelope).encode()))

    def response_url(self, name: str = "r") -> str:
        return f"{self.url}/webhook/{name}-{next(self._ids)}"

    # -- assertions ---------------------------------------------------------------------
    def calls(self, method: str | None = None, *, ok_only: bool = False) -> list[Call]:
        with self._lock:
            calls = list(self._calls)
        return [c for c in calls if (method is None or c.method == method) and (c.ok or not ok_only)]

    def wait_for(self, method: str, count: int = 1, *, timeout: float = 5.0, ok_only: bool = True) -> list[Call]:
        """Poll (no fixed sleeps) until `count` matching calls arrived; fail with what did."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.calls(method, ok_only=ok_only)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                seen = [c.method for c in self.calls()]
                raise AssertionError(f"expected {count} × {method}, got {len(found)}; calls: {seen}")
            time.sleep(0.01)

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self._faults.clear()

    # -- server -------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler, raw: bytes) -> None:
        parsed = urlparse(h.path)
        parts = parsed.path.strip("/").split("/")
        headers = {k.lower(): v for k, v in h.headers.items()}
        body = _parse_body(raw, headers.get("content-type", ""))
        body.update({k: v[0] for k, v in parse_qs(parsed.query).items() if k not in body})
        kind = parts[0] if parts else ""
        method = parts[1] if kind == "api" and len(parts) > 1 else kind
        status, extra_headers, payload = 200, {}, {}
        with self._lock:
            faults = self._faults.get(method)
            fault = faults.pop(0) if faults else None
        if fault is not None:
            status, extra_headers, payload = fault
        elif kind == "api":
            payload = self._api(method, body, headers)
        elif kind == "upload":
            payload = {"ok": True, "bytes": len(raw)}
        elif kind == "webhook":
            payload = {"ok": True}
        elif kind == "files":
            auth = headers.get("authorization", "")
            content = self.files.get(parts[-1])
            if content is None or auth.removeprefix("Bearer ") not in self.valid_tokens:
                status, payload = 404, {"ok": False}
            else:
                with self._lock:
                    self._calls.append(Call("files", parsed.path, headers, body, raw, 200, {"ok": True}))
                self._send(h, 200, {"Content-Type": "text/plain"}, content)
                return
        else:
            status, payload = 404, {"ok": False, "error": "unknown_path"}
        with self._lock:
            self._calls.append(Call(method, parsed.path, headers, body, raw, status, payload))
        data = b"ok" if kind == "webhook" and status == 200 else json.dumps(payload).encode()
        content_type = "text/plain" if kind == "webhook" and status == 200 else "application/json"
        self._send(h, status, {"Content-Type": content_type, **extra_headers}, data)

    def _websocket(self, h: BaseHTTPRequestHandler) -> None:
        """A minimal RFC 6455 server for slack_sdk's built-in Socket Mode client: handshake,
        "hello", then record the client's text frames (acks) and answer pings."""
        import base64
        import hashlib

        key = h.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        h.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        h.wfile.flush()
        conn, lock = h.connection, threading.Lock()
        with lock:
            conn.sendall(_ws_frame(json.dumps({"type": "hello", "num_connections": 1}).encode()))
        with self._lock:
            self._sockets.append((conn, lock))
        try:
            while True:
                opcode, payload = _ws_read(h.rfile)
                if opcode is None or opcode == 0x8:  # closed
                    return
                if opcode == 0x9:  # ping → pong
                    with lock:
                        conn.sendall(_ws_frame(payload, opcode=0xA))
                elif opcode == 0x1:
                    body = json.loads(payload.decode())
                    with self._lock:
                        self._calls.append(Call("socket_ack", "/socket", {}, body, payload, 200, {"ok": True}))
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                if (conn, lock) in self._sockets:
                    self._sockets.remove((conn, lock))

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, headers: dict, data: bytes) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def _api(self, method: str, body: dict, headers: dict) -> dict:
        token = headers.get("authorization", "").removeprefix("Bearer ") or body.get("token")
        if method == "oauth.v2.access":
            return {
                "ok": True, "app_id": "AKVD", "authed_user": {"id": "UINSTALLER"},
                "scope": "chat:write,commands", "token_type": "bot", "access_token": "xoxb-oauth-token",
                "bot_user_id": BOT_USER_ID, "team": {"id": "T0OAUTH", "name": "OAuth team"},
                "enterprise": None, "is_enterprise_install": False,
            }
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}
        if token not in self.valid_tokens:
            return {"ok": False, "error": "invalid_auth" if token else "not_authed"}
        if method == "auth.test":
            team = "T0OAUTH" if token == "xoxb-oauth-token" else TEAM_ID
            return {"ok": True, "url": "https://kvd.example/", "team": "kvd", "user": "kvdoctor",
                    "team_id": team, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": False}
        if method == "chat.postMessage":
            ts = self._next_ts()
            return {"ok": True, "channel": body.get("channel"), "ts": ts,
                    "message": {"text": body.get("text"), "ts": ts, "bot_id": BOT_ID}}
        if method == "chat.update":
            return {"ok": True, "channel": body.get("channel"), "ts": body.get("ts"), "text": body.get("text")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "conversations.replies":
            msgs = self.threads.get((body.get("channel"), body.get("ts")), [])
            return {"ok": True, "messages": msgs[: int(body.get("limit") or 100)], "has_more": False}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ids):06d}"
            return {"ok": True, "upload_url": f"{self.url}/upload/v1/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            files = json.loads(body.get("files") or "[]")
            return {"ok": True, "files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}
        if method.startswith("views."):
            return {"ok": True, "view": {"id": "V1"}}
        return {"ok": True}


def _ws_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One unmasked, final server frame."""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 65536:
        head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
    return head + payload


def _ws_read(rfile) -> tuple[int | None, bytes]:
    """One (masked) client frame: (opcode, payload), or (None, b"") at end of stream."""
    head = rfile.read(2)
    if len(head) < 2:
        return None, b""
    opcode, masked, n = head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
    if n == 126:
        n = int.from_bytes(rfile.read(2), "big")
    elif n == 127:
        n = int.from_bytes(rfile.read(8), "big")
    mask = rfile.read(4) if masked else b"\0\0\0\0"
    data = rfile.read(n)
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def _parse_body(raw: bytes, content_type: str) -> dict[str, Any]:
    if not raw:
        return {}
    text = raw.decode("utf-8", "replace")
    if "json" in content_type:
        try:
            data = json.loads(text)
            return data if isinstance(data, dict) else {"_": data}
        except ValueError:
            return {}
    if "x-www-form-urlencoded" in content_type:
        body: dict[str, Any] = {k: v[0] for k, v in parse_qs(text).items()}
        for key in ("blocks", "attachments"):
            if isinstance(body.get(key), str):
                try:
                    body[key] = json.loads(body[key])
                except ValueError:
                    pass
        return body
    return {"_raw": text}


# -- the Slack side of the app's HTTP endpoint -------------------------------------------------
class AppServer:
    """Serve an ASGI app with uvicorn on a free 127.0.0.1 port, in a thread."""

    def __init__(self, app: Any) -> None:
        import socket

        import uvicorn

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_config=None, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self, timeout: float = 10.0) -> AppServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(10)
        self._sock.close()


class SlackSender:
    """Plays Slack: POSTs events, commands and interactions with real v0= signatures."""

    def __init__(self, base_url: str, signing_secret: str) -> None:
        import httpx
        from slack_sdk.signature import SignatureVerifier

        self.http = httpx.Client(base_url=base_url, timeout=10)
        self.verifier = SignatureVerifier(signing_secret)
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.http.close()

    def post(self, body: str, content_type: str, *, timestamp: int | None = None, signature: str | None = None,
             headers: dict | None = None, path: str = "/slack/events"):
        ts = str(int(time.time()) if timestamp is None else timestamp)
        sig = signature if signature is not None else self.verifier.generate_signature(timestamp=ts, body=body)
        h = {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig}
        h.update(headers or {})
        return self.http.post(path, content=body.encode(), headers=h)

    def event_body(self, event: dict, *, event_id: str | None = None, team: str = TEAM_ID) -> str:
        return json.dumps({
            "token": "legacy", "team_id": team, "api_app_id": "AKVD", "type": "event_callback",
            "event_id": event_id or f"Ev{next(self._ids):08d}", "event_time": int(time.time()),
            "authorizations": [{"team_id": team, "user_id": BOT_USER_ID, "is_bot": True}],
            "event": event,
        })

    def event(self, event: dict, *, event_id: str | None = None, retry: int | None = None, team: str = TEAM_ID,
              **kwargs: Any):
        headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
        return self.post(self.event_body(event, event_id=event_id, team=team), "application/json",
                         headers=headers, **kwargs)

    def form(self, fields: dict, **kwargs: Any):
        from urllib.parse import urlencode

        return self.post(urlencode(fields), "application/x-www-form-urlencoded", **kwargs)

    def interaction(self, payload: dict, **kwargs: Any):
        return self.form({"payload": json.dumps(payload)}, **kwargs)


def slack_escape(text: str) -> str:
    """What Slack does to a pasted message's text before it reaches the Events API."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- shared fixtures (imported by the Slack test modules) --------------------------------------
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_slack_env(monkeypatch):
    """Bolt reads SLACK_* from the environment implicitly; a developer's shell must not leak in."""
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET",
                 "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    # the estimator in the worker threads: no process start-up per test (one test covers processes)
    monkeypatch.setenv("KVDOCTOR_SLACK_PROCESSES", "0")


@pytest.fixture
def fake():
    """A fake Slack Web API on a loopback port for one test."""
    server = FakeSlack().start()
    yield server
    server.stop()
