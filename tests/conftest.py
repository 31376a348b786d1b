"""Shared fixtures: real databases, free ports, real servers on 127.0.0.1.

- `store_url`: a fresh, empty database URL, parametrized over a SQLite file and PostgreSQL
  (a new schema in the server named by KVDOCTOR_TEST_POSTGRES_URL; skipped when unset).
- `postgres_url`: the PostgreSQL URL itself (session), or skip.
- `free_port()` / `free_port` fixture: a TCP port nobody listens on right now.
- `serve_in_thread(app)`: context manager running an ASGI app with uvicorn in a thread,
  yielding its base URL; `live_server(app)` fixture does the same with automatic teardown.
- `server_process(env)`: fixture factory starting `bot.server.serve` in a child PROCESS
  (several replicas sharing a database), waiting for /healthz, stopping it at teardown.
- `chromium`: path of a headless-capable Chromium, or skip.

When KVDOCTOR_REQUIRE_SERVICES names a service (.ci/services sets "postgres chromium"), a
missing service FAILS the test instead of skipping it, so CI cannot pass with them skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def need_service(name: str, reason: str) -> None:
    """Skip (or fail, when CI promised the service) because `name` is not available."""
    required = (os.environ.get("KVDOCTOR_REQUIRE_SERVICES") or "").split()
    if name in required:
        pytest.fail(f"{reason} (KVDOCTOR_REQUIRE_SERVICES says {name} must be available)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(name="free_port")
def free_port_fixture() -> int:
    return free_port()


# -- databases ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def postgres_url() -> str:
    url = os.environ.get("KVDOCTOR_TEST_POSTGRES_URL")
    if not url:
        need_service("postgres", "KVDOCTOR_TEST_POSTGRES_URL is not set (source .ci/services to start PostgreSQL)")
    return url


def _admin_engine(url: str):
    from sqlalchemy import create_engine

    return create_engine(url, isolation_level="AUTOCOMMIT", future=True)


@contextlib.contextmanager
def postgres_schema(base_url: str) -> Iterator[str]:
    """A URL whose connections see only a fresh schema (search_path), dropped afterwards."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    schema = f"kvdt_{uuid.uuid4().hex[:12]}"
    admin = _admin_engine(base_url)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path) -> Iterator[str]:
    """A fresh empty database: a SQLite file, then a PostgreSQL schema (when configured)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kvdoctor-test.sqlite'}"
        return
    base = request.getfixturevalue("postgres_url")
    with postgres_schema(base) as url:
        yield url


# -- servers -------------------------------------------------------------------------------------
@contextlib.contextmanager
def serve_in_thread(app, host: str = "127.0.0.1", port: int | None = None) -> Iterator[str]:
    """Run `app` with uvicorn in a background thread; yield "http://host:port"."""
    import uvicorn

    port = port or free_port()
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture
def live_server() -> Iterator[Callable[..., str]]:
    """`base_url = live_server(app)`: the app served on 127.0.0.1 until the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda app, **kw: stack.enter_context(serve_in_thread(app, **kw))


def wait_http(url: str, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server process exited with {proc.returncode} before {url} answered")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout} s")
        time.sleep(0.1)


@pytest.fixture
def server_process(tmp_path) -> Iterator[Callable[..., str]]:
    """`base_url = server_process({"KVDOCTOR_DATABASE_URL": ...})`: `kvdoctor serve` in a child process.

    The child runs `bot.server.serve("127.0.0.1", port)` with the current environment plus
    `env`, and is stopped (SIGTERM) at teardown. Its JSON log (stdout and stderr) goes to
    `server_process.logs[base_url]`, a file under tmp_path.
    """
    procs: list[tuple[subprocess.Popen, object]] = []
    logs: dict[str, Path] = {}

    def start(env: dict[str, str] | None = None, port: int | None = None) -> str:
        port = port or free_port()
        log_path = tmp_path / f"server-{port}.log"
        fh = open(log_path, "w")  # noqa: SIM115 - closed at teardown
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        code = f"from bot.server import serve; serve('127.0.0.1', {port})"
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=child_env,
                                stdout=fh, stderr=subprocess.STDOUT)
        procs.append((proc, fh))
        base = f"http://127.0.0.1:{port}"
        logs[base] = log_path
        try:
            wait_http(base + "/healthz", proc=proc)
        except RuntimeError as exc:
            fh.flush()
            raise RuntimeError(f"{exc}\n--- server log ---\n{log_path.read_text()[-4000:]}") from None
        return base

    start.logs = logs  # type: ignore[attr-defined]
    yield start
    for proc, fh in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        fh.close()


# -- browser -------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def chromium() -> str:
    path = os.environ.get("KVDOCTOR_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        need_service("chromium", "headless Chromium not installed (Debian package `chromium`)")
    # Debian's /usr/bin/chromium is a sh wrapper that loses the debugging pipe's descriptors;
    # use the real binary behind it when it is there.
    real = Path("/usr/lib/chromium/chromium")
    if Path(path).resolve() == Path("/usr/bin/chromium").resolve() and real.exists():
        return str(real)
    return path


class HeadlessChromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe).

    No WebDriver, no websocket library: commands are JSON objects separated by NUL bytes
    written to the browser's fd 3, answers and events come back on its fd 4. One page
    (`self.session`) is opened at start; `call()` sends a command to it.
    """

    # Flags for root in a container without network (see .ci/services and the machine notes).
    FLAGS = (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-extensions", "--mute-audio", "--no-default-browser-check",
        "--disable-dev-shm-usage", "--window-size=1200,1600",
    )

    def __init__(self, binary: str, profile_dir: Path, timeout: float = 30.0) -> None:
        import json as _json
        import queue

        self._json = _json
        self.timeout = timeout
        import fcntl

        cmd_r, self._cmd_w = os.pipe()
        self._evt_r, evt_w = os.pipe()
        # Move the child's ends above 9 so the shell's `3<&N 4>&M` never clobbers one with the other.
        moved = []
        for fd in (cmd_r, evt_w):
            high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
            os.close(fd)
            moved.append(high)
        cmd_r, evt_w = moved
        script = f'exec "$0" "$@" 3<&{cmd_r} 4>&{evt_w} {cmd_r}<&- {evt_w}>&-'
        self.stderr_path = profile_dir.parent / f"{profile_dir.name}-stderr.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            # bash, not sh: dash's redirections take single-digit descriptors only.
            [shutil.which("bash") or "/bin/bash", "-c", script, binary, *self.FLAGS,
             f"--user-data-dir={profile_dir}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(cmd_r, evt_w), stdout=subprocess.DEVNULL, stderr=self._stderr,
        )
        os.close(cmd_r)
        os.close(evt_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._answers: dict[int, queue.Queue] = {}
        self.events: queue.Queue = queue.Queue()
        self.log: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=None)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain)

    def _read(self) -> None:
        buf = b""
        with os.fdopen(self._evt_r, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\0" in buf:
                    raw, buf = buf.split(b"\0", 1)
                    msg = self._json.loads(raw)
                    if "id" in msg and msg["id"] in self._answers:
                        self._answers[msg["id"]].put(msg)
                    else:
                        if msg.get("method") in ("Log.entryAdded", "Runtime.consoleAPICalled",
                                                 "Runtime.exceptionThrown"):
                            self.log.append(msg)
                        self.events.put(msg)

    def call(self, method: str, params: dict | None = None, session: str | None | bool = True) -> dict:
        import queue

        with self._lock:
            self._next_id += 1
            mid = self._next_id
            self._answers[mid] = queue.Queue()
        msg = {"id": mid, "method": method, "params": params or {}}
        if session is True:
            msg["sessionId"] = self.session
        elif session:
            msg["sessionId"] = session
        os.write(self._cmd_w, self._json.dumps(msg).encode() + b"\0")
        try:
            answer = self._answers[mid].get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"chromium did not answer {method}: {self.stderr_path.read_text()[-2000:]}") from None
        finally:
            self._answers.pop(mid, None)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        import queue

        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} event")
            try:
                msg = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if msg.get("method") == method:
                return msg

    def drain_events(self) -> None:
        import queue

        while True:
            try:
                self.events.get_nowait()
            except queue.Empty:
                return

    def navigate(self, url: str) -> None:
        self.drain_events()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        import base64

        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", session=None)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self._cmd_w)
        self._stderr.close()


@pytest.fixture
def browser(chromium, tmp_path) -> Iterator[HeadlessChromium]:
    """A headless Chromium page (see HeadlessChromium) with a throwaway profile."""
    b = HeadlessChromium(chromium, tmp_path / "chromium-profile")
    try:
        yield b
    finally:
        b.close()
