"""bot/server.py served for real on 127.0.0.1: health, readiness, metrics, body limit, JSON logs.

Metrics are process-wide counters, so the tests read them before and after and compare the
difference with the number of requests they made.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from bot import metrics
from bot.logs import REDACTED, configure_logging
from bot.server import create_app
from bot.settings import Settings
from bot.store import MIGRATIONS, Store


def _settings(**env: str) -> Settings:
    return Settings.from_env({"KVDOCTOR_OFFLINE": "1", **env})


def scrape(base: str) -> dict[str, float]:
    """/metrics as {'name{labels}': value}; checks the text format on the way."""
    r = httpx.get(base + "/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    values: dict[str, float] = {}
    typed: set[str] = set()
    for line in r.text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_]\w*="(?:[^"\\]|\\.)*",?)*\})? (\S+)', line)
        assert m, f"not Prometheus text: {line!r}"
        base_name = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
        assert m.group(1) in typed or base_name in typed, f"{m.group(1)} has no # TYPE"
        values[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return values


def delta(before: dict[str, float], after: dict[str, float], key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


# -- health and readiness -------------------------------------------------------------------------
def test_healthz_and_readyz_with_a_live_database(store_url, live_server):
    base = live_server(create_app(_settings(), Store(store_url)))
    r = httpx.get(base + "/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})
    r = httpx.get(base + "/readyz")
    assert r.status_code == 200
    assert r.json() == {"status": "ready", "checks": {"settings": "ok", "database": "ok"}}


class TcpProxy:
    """127.0.0.1:port → target; `close()` drops the listener and every connection (database down)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.open:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.open = False
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone doesn't)
        self.listener.close()
        for s in self.conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


@pytest.mark.postgres
def test_readyz_fails_when_postgresql_goes_down(postgres_url, live_server):
    """Ready through a proxy to the real server; the proxy dies → 503; /healthz stays 200."""
    from conftest import postgres_schema
    from sqlalchemy.engine import make_url

    with postgres_schema(postgres_url) as url:
        real = make_url(url)
        proxy = TcpProxy((real.host, real.port))
        store = Store(real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False))
        base = live_server(create_app(_settings(), store))
        assert httpx.get(base + "/readyz").status_code == 200
        proxy.close()
        r = httpx.get(base + "/readyz", timeout=30)
        assert r.status_code == 503
        assert r.json()["checks"]["database"] == "database unreachable"
        assert r.json()["status"] == "not ready"
        assert httpx.get(base + "/healthz").status_code == 200  # alive, just not ready
        store.dispose()


def test_readyz_fails_when_sqlite_file_cannot_be_opened(tmp_path, live_server):
    store = Store(f"sqlite:///{tmp_path / 'gone' / 'db.sqlite'}", migrate=False)
    base = live_server(create_app(_settings(), store))
    r = httpx.get(base + "/readyz")
    assert r.status_code == 503 and r.json()["checks"]["database"] == "database unreachable"


def test_readyz_fails_on_an_unmigrated_database(store_url, live_server):
    base = live_server(create_app(_settings(), Store(store_url, migrate=False)))
    r = httpx.get(base + "/readyz")
    assert r.status_code == 503
    assert r.json()["checks"]["database"] == f"database schema at version 0, this code needs {len(MIGRATIONS)}"


def test_readyz_fails_on_invalid_settings(tmp_path, live_server):
    bad = Settings(port=70000)  # built directly: from_env would have refused it
    base = live_server(create_app(bad, Store(f"sqlite:///{tmp_path / 'db.sqlite'}")))
    r = httpx.get(base + "/readyz")
    assert r.status_code == 503
    assert "KVDOCTOR_PORT" in r.json()["checks"]["settings"]
    assert r.json()["checks"]["database"] == "ok"


# -- metrics -------------------------------------------------------------------------------------
def test_metrics_count_requests_errors_and_latency(tmp_path, live_server):
    base = live_server(create_app(_settings(KVDOCTOR_MAX_BODY_BYTES="2048"),
                                  Store(f"sqlite:///{tmp_path / 'db.sqlite'}")))
    before = scrape(base)
    for _ in range(3):
        httpx.get(base + "/healthz")
    httpx.post(base + "/api/explain", content=b"{not json", headers={"content-type": "application/json"})
    httpx.post(base + "/api/explain", content=b"x" * 4096)  # over the 2048-byte limit
    httpx.get(base + "/no-such-page")
    after = scrape(base)
    assert delta(before, after, 'kvdoctor_http_requests_total{method="GET",route="/healthz",status="200"}') == 3
    assert delta(before, after, 'kvdoctor_http_request_duration_seconds_count{route="/healthz"}') == 3
    assert delta(before, after, 'kvdoctor_http_requests_total{method="POST",route="/api/explain",status="400"}') == 1
    assert delta(before, after, 'kvdoctor_errors_total{kind="bad_input"}') == 1
    assert delta(before, after, 'kvdoctor_errors_total{kind="too_large"}') == 1
    assert delta(before, after, 'kvdoctor_http_requests_total{method="GET",route="unmatched",status="404"}') == 1
    # The previous scrape itself is counted by the time of the second one.
    assert delta(before, after, 'kvdoctor_http_requests_total{method="GET",route="/metrics",status="200"}') == 1
    # Histogram sanity: cumulative buckets, +Inf bucket == count.
    inf = after['kvdoctor_http_request_duration_seconds_bucket{route="/healthz",le="+Inf"}']
    assert inf == after['kvdoctor_http_request_duration_seconds_count{route="/healthz"}']
    buckets = [v for k, v in after.items() if k.startswith('kvdoctor_http_request_duration_seconds_bucket{route="/healthz"')]
    assert buckets == sorted(buckets)


def test_metrics_time_the_estimator_and_count_replies(tmp_path, live_server):
    base = live_server(create_app(_settings(), Store(f"sqlite:///{tmp_path / 'db.sqlite'}")))
    before = scrape(base)
    r = httpx.post(base + "/api/explain", json={"text": "INFO all good, nothing to see"})
    assert r.status_code == 200 and r.json()["diagnosis"] is None
    after = scrape(base)
    assert delta(before, after, 'kvdoctor_estimator_duration_seconds_count{surface="web",op="diagnose"}') == 1
    assert delta(before, after, 'kvdoctor_replies_total{surface="api"}') == 0  # nothing to reply to


def test_hub_latency_is_measured_on_huggingface_hubs_client(live_server):
    """huggingface_hub's own HTTP client, instrumented, talks to a fake hub on 127.0.0.1."""
    from huggingface_hub.utils import get_session
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def ok(request):
        return JSONResponse({"id": "org/model"})

    async def down(request):
        return JSONResponse({"error": "maintenance"}, status_code=503)

    hub = live_server(Starlette(routes=[Route("/api/models/org/model", ok), Route("/down", down)]))
    assert metrics.instrument_hub()
    ok_before = metrics.HUB_SECONDS.count(outcome="ok")
    err_before = metrics.HUB_SECONDS.count(outcome="http_5xx")
    hub_errors = metrics.ERRORS.value(kind="hub")
    session = get_session()
    assert session.get(hub + "/api/models/org/model").status_code == 200
    assert session.get(hub + "/down").status_code == 503
    assert metrics.HUB_SECONDS.count(outcome="ok") == ok_before + 1
    assert metrics.HUB_SECONDS.count(outcome="http_5xx") == err_before + 1
    assert metrics.ERRORS.value(kind="hub") == hub_errors + 1


def test_metrics_exposition_escapes_label_values():
    c = metrics.Counter("t_total", "test", ("kind",))
    c.inc(kind='a"b\\c\nd')
    assert c.render()[-1] == 't_total{kind="a\\"b\\\\c\\nd"} 1'


# -- body limit ----------------------------------------------------------------------------------
def test_body_limit_applies_with_and_without_content_length(tmp_path, live_server):
    base = live_server(create_app(_settings(KVDOCTOR_MAX_BODY_BYTES="2048"),
                                  Store(f"sqlite:///{tmp_path / 'db.sqlite'}")))
    big = json.dumps({"text": "y" * 5000}).encode()
    assert httpx.post(base + "/api/explain", content=big).status_code == 413

    def chunked() -> Iterator[bytes]:  # no Content-Length: the limit must hold while streaming
        for i in range(0, len(big), 512):
            yield big[i:i + 512]

    r = httpx.post(base + "/api/explain", content=chunked())
    assert r.status_code == 413
    small = json.dumps({"text": "nothing here"}).encode()
    assert httpx.post(base + "/api/explain", content=small).status_code == 200


# -- logs ----------------------------------------------------------------------------------------
SECRET_HF = "hf_" + "Q" * 30
SECRET_SIGNING = "s3cr3t-signing-value-123"


def test_json_logs_scrub_configured_secrets_and_token_shapes():
    stream = io.StringIO()
    handler = configure_logging([SECRET_SIGNING, 'we"ird\\secret'], "INFO", stream=stream)
    lg = logging.getLogger("kvdoctor.test")
    lg.info("signing with %s", SECRET_SIGNING, extra={"detail": {"secret": SECRET_SIGNING}})
    lg.warning("user pasted %s and Authorization: Bearer abcdefghijklmnop and xoxb-1234-5678-abcdefgh", SECRET_HF)
    lg.info('odd one: we"ird\\secret')
    try:
        raise RuntimeError(f"boom {SECRET_SIGNING}")
    except RuntimeError:
        lg.exception("failed")
    lines = [json.loads(x) for x in stream.getvalue().splitlines()]
    assert [x["level"] for x in lines] == ["info", "warning", "info", "error"]
    text = stream.getvalue()
    for leaked in (SECRET_SIGNING, SECRET_HF, "abcdefghijklmnop", "xoxb-1234", 'we\\"ird'):
        assert leaked not in text
    assert lines[0]["msg"] == f"signing with {REDACTED}"
    assert lines[0]["detail"] == {"secret": REDACTED}
    assert "boom [REDACTED]" in lines[3]["exc"]
    logging.getLogger().removeHandler(handler)


def test_served_process_writes_json_logs_without_secrets(server_process, tmp_path):
    """`serve()` in its own process: every log line is JSON, no secret appears, no query string."""
    env = {
        "KVDOCTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}",
        "HF_TOKEN": SECRET_HF,
        "DISCOURSE_WEBHOOK_SECRET": SECRET_SIGNING,  # a secret of a surface that is off
        "KVDOCTOR_OFFLINE": "1",
        "KVDOCTOR_LOG_LEVEL": "DEBUG",
    }
    base = server_process(env)
    httpx.get(base + f"/healthz?token={SECRET_HF}")
    httpx.post(base + "/api/explain", json={"text": f"my token is {SECRET_SIGNING} and {SECRET_HF}"})
    httpx.post(base + "/api/explain", content=b"{broken")
    httpx.get(base + "/readyz")
    log_path = server_process.logs[base]
    time.sleep(0.3)  # let the child flush its last lines
    text = log_path.read_text()
    lines = [json.loads(x) for x in text.splitlines() if x.strip()]
    assert lines, "no log lines"
    assert SECRET_HF not in text and SECRET_SIGNING not in text
    access = [x for x in lines if x.get("logger") == "kvdoctor.access"]
    assert {(x["route"], x["status"]) for x in access} >= {("/healthz", 200), ("/api/explain", 200),
                                                            ("/api/explain", 400), ("/readyz", 200)}
    assert all("?" not in x["path"] for x in access)
    assert any(x.get("logger", "").startswith("uvicorn") for x in lines)  # uvicorn's lines are JSON too


# -- several server processes on one database ----------------------------------------------------
def test_two_server_processes_share_one_database(store_url, server_process):
    """Two replicas start at once on an empty database (both migrate) and both become ready."""
    env = {"KVDOCTOR_DATABASE_URL": store_url, "KVDOCTOR_OFFLINE": "1"}
    bases: list[str] = []
    threads = [threading.Thread(target=lambda: bases.append(server_process(env))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(bases) == 2 and bases[0] != bases[1]
    for base in bases:
        r = httpx.get(base + "/readyz")
        assert r.status_code == 200, r.text
    store = Store(store_url, migrate=False)
    assert store.version() == len(MIGRATIONS)
    store.dispose()


@pytest.mark.parametrize("env, message", [
    ({"KVDOCTOR_PORT": "http"}, "KVDOCTOR_PORT must be a whole number"),
    ({"KVDOCTOR_RATE_LIMIT": "-1"}, "KVDOCTOR_RATE_LIMIT must be 0"),
    ({"KVDOCTOR_MAX_BODY_BYTES": "10"}, "KVDOCTOR_MAX_BODY_BYTES must be at least 1024"),
    ({"KVDOCTOR_LOG_LEVEL": "LOUD"}, "KVDOCTOR_LOG_LEVEL must be"),
])
def test_server_settings_are_validated_with_one_sentence(env, message):
    from bot.settings import SettingsError

    with pytest.raises(SettingsError, match=re.escape(message)):
        Settings.from_env(env)
