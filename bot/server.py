"""One ASGI application for every surface: Slack events, the Discourse webhook, the web page.

Why one app: a deployment runs the same image behind one load balancer; each surface is a set
of routes enabled by its settings (Slack when SLACK_SIGNING_SECRET is set, Discourse when
DISCOURSE_URL is set, the web page unless KVDOCTOR_WEB=0). Surfaces contribute routes through
a `*_routes(settings, store)` function in their own module; this module only assembles them
and adds what every replica needs behind a load balancer:

- GET /healthz  the process is up (liveness: restart me if this fails);
- GET /readyz   settings valid and the database reachable with the schema in place
                (readiness: send me traffic only when this is 200);
- GET /metrics  Prometheus text (bot/metrics.py);
- a middleware that counts and times every request by route template and writes one JSON
  access-log line for it (bot/logs.py scrubs secrets from every line), and one that refuses
  bodies over KVDOCTOR_MAX_BODY_BYTES before any handler reads them.

`serve(host, port)` is what `kvdoctor serve --host H --port P` calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot import metrics
from bot.settings import Settings, SettingsError
from bot.store import MIGRATIONS, Store
from estimator.errors import KvdoctorError

log = logging.getLogger("kvdoctor.server")
access_log = logging.getLogger("kvdoctor.access")

READY_TIMEOUT_S = 5.0
# Probe and scrape routes: counted in metrics, logged only at DEBUG (they come every few seconds).
QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})


class DatabaseUnavailable(KvdoctorError):
    """The database could not be reached at start-up (the message names it, without password)."""


# =============================================================================================
# Middleware (pure ASGI: no buffering of bodies, works for every route kind)
# =============================================================================================
class ObservabilityMiddleware:
    """Count and time each HTTP request by route template; one JSON access-log line per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            status = 500
            metrics.record_error("internal")
            log.exception("unhandled error", extra={"path": scope.get("path")})
            raise
        finally:
            elapsed = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            metrics.HTTP_REQUESTS.inc(method=scope.get("method", ""), route=route, status=str(status))
            metrics.HTTP_SECONDS.observe(elapsed, route=route)
            client = scope.get("client")
            access_log.log(
                logging.DEBUG if route in QUIET_ROUTES else logging.INFO,
                "request",
                extra={
                    "method": scope.get("method"),
                    "path": scope.get("path"),  # never the query string: it may carry codes/tokens
                    "route": route,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                    "client": client[0] if client else None,
                },
            )


class _BodyTooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 for request bodies over `max_bytes`, by Content-Length or while streaming."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                if value.isdigit() and int(value) > self.max_bytes:
                    await self._reject(send)
                    return
                break
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Send) -> None:
        metrics.record_error("too_large")
        body = f'{{"error": "request body over {self.max_bytes} bytes"}}'.encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


# =============================================================================================
# Health, readiness, metrics
# =============================================================================================
async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _database_check(store: Store) -> str | None:
    """None when the database answers and its schema is at least what this code needs."""
    if not store.ping():
        return "database unreachable"
    try:
        version = store.version()
    except Exception:
        return "database unreachable"
    if version < len(MIGRATIONS):
        return f"database schema at version {version}, this code needs {len(MIGRATIONS)}"
    return None


async def readyz(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    store: Store = request.app.state.store
    checks: dict[str, str] = {}
    try:
        settings.validate()
        checks["settings"] = "ok"
    except SettingsError as exc:
        checks["settings"] = str(exc)
    try:
        problem = await asyncio.wait_for(run_in_threadpool(_database_check, store), READY_TIMEOUT_S)
    except TimeoutError:
        problem = f"database did not answer within {READY_TIMEOUT_S:g} s"
    checks["database"] = problem or "ok"
    ready = all(v == "ok" for v in checks.values())
    if not ready:
        log.warning("not ready", extra={"checks": checks})
    return JSONResponse({"status": "ready" if ready else "not ready", "checks": checks},
                        status_code=200 if ready else 503)


async def metrics_endpoint(request: Request) -> Response:
    return PlainTextResponse(metrics.render(), headers={"Content-Type": metrics.CONTENT_TYPE})


# =============================================================================================
# The application
# =============================================================================================
def create_app(settings: Settings | None = None, store: Store | None = None) -> Starlette:
    settings = settings or Settings.from_env()
    store = store or Store(settings.database_url)
    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/readyz", readyz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]
    if settings.slack_enabled:
        from bot.slack import slack_routes

        routes += slack_routes(settings, store)
    if settings.discourse_enabled:
        from bot.discourse import discourse_routes

        routes += discourse_routes(settings, store)
    if settings.web_enabled:
        from bot.web import web_routes

        routes += web_routes(settings, store)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        log.info("started", extra={"surfaces": _surfaces(settings), "database": store.engine.dialect.name})
        yield
        log.info("stopping")
        store.dispose()

    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(ObservabilityMiddleware),
            Middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes),
        ],
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.store = store
    metrics.instrument_hub()
    return app


def _surfaces(settings: Settings) -> list[str]:
    return [name for name, on in (("slack", settings.slack_enabled), ("discourse", settings.discourse_enabled),
                                  ("web", settings.web_enabled)) if on]


def open_store(settings: Settings, wait_s: float = 30.0) -> Store:
    """The store, retrying while the database comes up (compose/k8s start it alongside us)."""
    from sqlalchemy.engine import make_url

    deadline = time.monotonic() + wait_s
    delay = 0.5
    while True:
        try:
            return Store(settings.database_url)
        except Exception as exc:  # driver errors differ per database; all mean "not reachable yet"
            if time.monotonic() >= deadline:
                from bot.store import database_url

                shown = make_url(database_url(settings.database_url)).render_as_string(hide_password=True)
                raise DatabaseUnavailable(
                    f"cannot open the database {shown}: {type(exc).__name__}. "
                    "Check KVDOCTOR_DATABASE_URL and that the server is up."
                ) from None
            log.warning("database not reachable yet; retrying", extra={"error": type(exc).__name__})
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def serve(host: str | None = None, port: int | None = None) -> None:
    """Run the server until SIGTERM/SIGINT: `kvdoctor serve --host H --port P`.

    host/port default to KVDOCTOR_HOST / KVDOCTOR_PORT (127.0.0.1:8080). Raises SettingsError or
    DatabaseUnavailable (both KvdoctorError: one-line message, exit 2) on a bad configuration.
    """
    import uvicorn

    from bot.logs import configure_logging

    settings = Settings.from_env()
    configure_logging(settings.secrets(), settings.log_level)
    app = create_app(settings, open_store(settings))
    uvicorn.run(
        app,
        host=host or settings.host,
        port=port or settings.port,
        log_config=None,  # our JSON handler on the root logger formats uvicorn's lines too
        access_log=False,  # ObservabilityMiddleware writes the access log (without query strings)
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        server_header=False,
        timeout_graceful_shutdown=20,
    )
