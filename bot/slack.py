"""The Slack surface: a slack-bolt App served over HTTP (/slack/events) or Socket Mode.

Listeners are thin (design.md §6): they read the trigger, enqueue a job on the bounded worker
pool of `bot/slack_worker.py` and return, so Slack gets its ack at once; the job calls
`estimator.diagnose` and posts the rendered reply in the thread, exactly once.

Why `process_before_response=True` although this is no FaaS: our listeners never do slow work
(they only enqueue), so running them inline lets a listener answer 503 when the pool is full
(Slack then re-sends the event later) and skips Bolt's own 5-thread listener executor and its
10 ms ack polling (slack_bolt/listener/thread_runner.py).

Why the sync `App` under Starlette through a thread: slack_bolt's Starlette adapter calls the
sync `App.dispatch` on the event loop (integrations.md §1.1), and `AsyncApp` needs aiohttp. We
reuse the adapter's request/response converters and run `dispatch` in a worker thread.

Triggers: app_mention (its text, or the thread's parent when the mention is bare), direct
messages, channels with auto-reply on (only when a memory error is recognised), the message
shortcut "Explain this vLLM error", `/kvdoctor` (ephemeral, with a Share button), edits
(message_changed → chat.update of our reply), and the feedback buttons.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from slack_bolt import App, BoltResponse
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_bolt.authorization.authorize import InstallationStoreAuthorize
from slack_bolt.error import BoltError
from slack_bolt.oauth.oauth_settings import OAuthSettings
from slack_sdk import WebClient
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from bot.settings import Settings, SettingsError
from bot.slack_worker import (
    ACTION_HELPED,
    ACTION_SHARE,
    ACTION_WRONG,
    HELP,
    ChannelSettings,
    SlackReplier,
    Source,
    WorkerPool,
    classify,
    rate_limited_retry_handlers,
)
from bot.store import Store
from estimator import diagnose, render_markdown, render_slack

log = logging.getLogger("kvdoctor.slack")

SHORTCUT_ID = "explain_vllm_error"
COMMAND = "/kvdoctor"
EVENTS_PATH = "/slack/events"
INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
# Bot scopes; keep in sync with deploy/slack-manifest.yaml.
BOT_SCOPES = [
    "app_mentions:read",
    "channels:history",
    "groups:history",
    "im:history",
    "mpim:history",
    "chat:write",
    "commands",
    "files:read",
    "files:write",
]
# Message subtypes that carry a human's new text; everything else (joins, deletions, bot
# messages, ...) is acked and dropped. message_changed is handled as an edit.
MESSAGE_SUBTYPES = {None, "file_share", "thread_broadcast", "message_changed"}
MAX_BODY_BYTES = 1024 * 1024
QUEUE_PER_WORKER = 64


def validate_slack_settings(settings: Settings, *, socket_mode: bool = False) -> None:
    """Fail at start with one sentence per problem, naming the environment variable."""
    problems = []
    bot_token = settings.slack_bot_token
    if socket_mode:
        if not settings.slack_app_token:
            problems.append("Socket Mode needs SLACK_APP_TOKEN (an app-level token, xapp-…)")
        elif not settings.slack_app_token.startswith("xapp-"):
            problems.append("SLACK_APP_TOKEN must be an app-level token starting with xapp-")
        if not bot_token:
            problems.append("Socket Mode needs SLACK_BOT_TOKEN (xoxb-…)")
    else:
        if not settings.slack_signing_secret:
            problems.append("HTTP mode needs SLACK_SIGNING_SECRET (Basic Information → Signing Secret)")
        if not (bot_token or settings.slack_oauth_enabled):
            problems.append("set SLACK_BOT_TOKEN, or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET for OAuth")
    if bot_token and not bot_token.startswith(("xoxb-", "xoxe.xoxb-")):
        problems.append("SLACK_BOT_TOKEN must be a bot token starting with xoxb-")
    if bool(settings.slack_client_id) != bool(settings.slack_client_secret):
        problems.append("set both SLACK_CLIENT_ID and SLACK_CLIENT_SECRET, or neither")
    if not settings.slack_api_url.startswith(("http://", "https://")):
        problems.append(f"SLACK_API_URL must be an http(s) URL, got {settings.slack_api_url!r}")
    if problems:
        raise SettingsError("Slack configuration: " + "; ".join(problems) + ".")


def estimator_processes(settings: Settings, env: dict[str, str] | None = None) -> int:
    """KVDOCTOR_SLACK_PROCESSES: processes that run the (CPU-bound) estimator for the Slack
    workers; 0 runs it in the worker threads. Default: one per CPU, at most KVDOCTOR_WORKERS."""
    raw = (os.environ if env is None else env).get("KVDOCTOR_SLACK_PROCESSES")
    if raw in (None, ""):
        return min(settings.workers, os.cpu_count() or 1)
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise SettingsError(f"KVDOCTOR_SLACK_PROCESSES must be 0 or a positive whole number, got {raw!r}")
    return value


def api_base_url(settings: Settings) -> str:
    url = settings.slack_api_url
    return url if url.endswith("/") else url + "/"


class SlackBot:
    """The Bolt app, its worker pool and its reply jobs, for one process."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        socket_mode: bool = False,
        diagnose_fn=diagnose,
        render_fn=render_slack,
        markdown_fn=render_markdown,
        queue_size: int | None = None,
        processes: int | None = None,
    ) -> None:
        validate_slack_settings(settings, socket_mode=socket_mode)
        processes = estimator_processes(settings) if processes is None else processes
        self.settings = settings
        self.store = store
        self.socket_mode = socket_mode
        self.channels = ChannelSettings(settings, store)
        self.pool = WorkerPool(settings.workers, queue_size or settings.workers * QUEUE_PER_WORKER)
        self.replier = SlackReplier(settings, store, self.channels, diagnose_fn=diagnose_fn,
                                    render_fn=render_fn, markdown_fn=markdown_fn, processes=processes)
        try:
            self.app = self._build_app()
        except SettingsError:
            self.pool.close(timeout=1)
            raise
        except BoltError as exc:  # auth.test refused the token, or SLACK_API_URL unreachable
            self.pool.close(timeout=1)
            raise SettingsError(f"Slack start-up check (auth.test at {api_base_url(settings)}) failed: {exc}") from None
        except Exception as exc:
            self.pool.close(timeout=1)
            raise SettingsError(
                f"Slack start-up check (auth.test at {api_base_url(settings)}) failed: {type(exc).__name__}: {exc}"
            ) from None
        self._register()

    # -- construction -------------------------------------------------------------------
    def _build_app(self) -> App:
        s = self.settings
        oauth = s.slack_oauth_enabled and not self.socket_mode
        client = WebClient(
            token=None if oauth else s.slack_bot_token,
            base_url=api_base_url(s),
            timeout=15,
            retry_handlers=rate_limited_retry_handlers(),
        )
        common: dict[str, Any] = {
            "name": "kvdoctor",
            "signing_secret": s.slack_signing_secret or "",
            "client": client,
            "process_before_response": True,
            "request_verification_enabled": not self.socket_mode,
        }
        if not oauth:
            # The only network call at start-up: auth.test against SLACK_API_URL.
            return App(**common)
        try:
            from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
            from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
        except ImportError as exc:  # SQLAlchemy 2.1's asyncio module needs greenlet
            raise SettingsError(
                f"Slack OAuth (SLACK_CLIENT_ID) needs slack_sdk's SQLAlchemy stores, which failed to import: {exc}"
            ) from None

        installations = SQLAlchemyInstallationStore(client_id=s.slack_client_id, engine=self.store.engine)
        states = SQLAlchemyOAuthStateStore(expiration_seconds=600, engine=self.store.engine)
        for table_owner in (installations, states):
            try:
                table_owner.create_tables()
            except Exception:  # another replica created them at the same moment
                log.debug("OAuth tables already exist")
        app = App(
            **common,
            installation_store=installations,
            # cache: without it Bolt calls auth.test on every request (integrations.md §1.9)
            authorize=InstallationStoreAuthorize(
                logger=logging.getLogger("kvdoctor.slack.oauth"),
                installation_store=installations,
                client_id=s.slack_client_id,
                client_secret=s.slack_client_secret,
                cache_enabled=True,
                client=client,
            ),
            oauth_settings=OAuthSettings(
                client_id=s.slack_client_id,
                client_secret=s.slack_client_secret,
                scopes=BOT_SCOPES,
                installation_store=installations,
                state_store=states,
                install_path=INSTALL_PATH,
                redirect_uri_path=REDIRECT_PATH,
            ),
        )
        app.enable_token_revocation_listeners()
        return app

    def _register(self) -> None:
        app = self.app
        app.middleware(self._gate)
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.message_shortcut(SHORTCUT_ID)(self._on_shortcut)
        app.command(COMMAND)(self._on_command)
        app.action(ACTION_SHARE)(self._on_share)
        app.action(ACTION_HELPED)(self._on_feedback)
        app.action(ACTION_WRONG)(self._on_feedback)

    def close(self) -> None:
        self.pool.close()
        self.replier.close()

    # -- middleware ---------------------------------------------------------------------
    def _gate(self, body: dict, context, next):  # noqa: A002 (Bolt's argument name)
        """Never answer bots (any bot_id, subtype bot_message) or ourselves; drop message
        subtypes that carry no new human text. Runs after Bolt's signature check."""
        if body.get("type") == "event_callback":
            event = body.get("event") or {}
            subject = (event.get("message") if event.get("subtype") == "message_changed" else event) or {}
            me = context.bot_user_id
            if (
                event.get("bot_id")
                or subject.get("bot_id")
                or "bot_message" in (event.get("subtype"), subject.get("subtype"))
                or (me and (event.get("user") == me or subject.get("user") == me))
                or (event.get("type") == "message" and event.get("subtype") not in MESSAGE_SUBTYPES)
            ):
                return BoltResponse(status=200, body="")
        return next()

    # -- listeners: read the trigger, enqueue, return -----------------------------------
    def _enqueue_event(self, fn, *args) -> BoltResponse | None:
        if self.pool.submit(fn, *args):
            return None
        log.warning("worker pool full: answering 503 so that Slack re-sends the event")
        return BoltResponse(status=503, body="busy")

    def _on_mention(self, body: dict, event: dict, context, client: WebClient):
        src = Source(channel=event.get("channel", ""), ts=event.get("ts", ""), text=event.get("text", ""),
                     mode="mention", thread_ts=event.get("thread_ts"), user=event.get("user"),
                     files=event.get("files") or [], event_id=body.get("event_id"))
        if self.channels.muted(src.channel, cached=True):
            return None
        return self._enqueue_event(self.replier.answer, src, client, context.bot_user_id)

    def _on_message(self, body: dict, event: dict, context, client: WebClient):
        if event.get("subtype") == "message_changed":
            return self._enqueue_event(self.replier.on_edit, event, body.get("event_id"), client, context.bot_user_id)
        mode = classify(event, context.bot_user_id, self.channels)
        if mode is None or self.channels.muted(event.get("channel", ""), cached=True):
            return None
        src = Source(channel=event.get("channel", ""), ts=event.get("ts", ""), text=event.get("text", ""),
                     mode=mode, thread_ts=event.get("thread_ts"), user=event.get("user"),
                     files=event.get("files") or [], event_id=body.get("event_id"))
        return self._enqueue_event(self.replier.answer, src, client, context.bot_user_id)

    def _on_shortcut(self, ack, shortcut: dict, context, client: WebClient) -> None:
        ack()
        msg = shortcut.get("message") or {}
        src = Source(channel=(shortcut.get("channel") or {}).get("id", ""), ts=msg.get("ts", ""),
                     text=msg.get("text", ""), mode="shortcut", thread_ts=msg.get("thread_ts"),
                     user=(shortcut.get("user") or {}).get("id"), files=msg.get("files") or [],
                     response_url=shortcut.get("response_url"))
        if not self.pool.submit(self.replier.answer, src, client, context.bot_user_id):
            self._busy(src.response_url)

    def _on_command(self, ack, command: dict) -> None:
        words = (command.get("text") or "").strip().lower().split()
        what = " ".join(words)
        if what in ("", "help"):
            ack(text=HELP)
            return
        if what in ("mute", "unmute", "autoreply on", "autoreply off"):
            ok = self.pool.submit(self.replier.set_channel, command, what)
        else:
            ok = self.pool.submit(self.replier.answer_command, command)
        if ok:
            ack()
        else:
            ack(text="kvdoctor is busy right now; try again in a minute.")

    def _on_share(self, ack, body: dict, action: dict, client: WebClient) -> None:
        ack()
        if not self.pool.submit(self.replier.share, action.get("value", ""), (body.get("user") or {}).get("id"),
                                (body.get("channel") or {}).get("id"), body.get("response_url"), client):
            self._busy(body.get("response_url"))

    def _on_feedback(self, ack, body: dict, action: dict) -> None:
        ack()
        verdict = "helped" if action.get("action_id") == ACTION_HELPED else "wrong"
        if not self.pool.submit(self.replier.feedback, action.get("value", ""), (body.get("user") or {}).get("id"),
                                verdict, body.get("response_url")):
            self._busy(body.get("response_url"))

    def _busy(self, response_url: str | None) -> None:
        threading.Thread(target=self.replier.respond, args=(response_url,), daemon=True,
                         kwargs={"text": "kvdoctor is busy right now; try again in a minute.",
                                 "response_type": "ephemeral", "replace_original": False}).start()


class SlackEndpoint:
    """ASGI endpoint for /slack/events (+ the OAuth pages).

    Single-workspace, Bolt's dispatch runs on the event loop itself: it only checks the
    signature, reads cached state and enqueues (no network, a database read at most every few
    seconds per channel), and each hop to another thread costs a GIL hand-over, which is what
    made the ack slow while the workers were busy (bench/speed.py slack_ack). With OAuth,
    authorisation may read the installation store and call auth.test, so dispatch runs in a
    thread there."""

    def __init__(self, bot: SlackBot) -> None:
        self.bot = bot
        self.inline = bot.app.oauth_flow is None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            response = PlainTextResponse("payload too large", status_code=413)
        elif request.method == "POST" and request.url.path == EVENTS_PATH:
            bolt_req = to_bolt_request(request, body)
            if self.inline:
                bolt_resp = self.bot.app.dispatch(bolt_req)
            else:
                bolt_resp = await run_in_threadpool(self.bot.app.dispatch, bolt_req)
            response = to_starlette_response(bolt_resp)
        elif request.method == "GET" and self.bot.app.oauth_flow is not None:
            flow = self.bot.app.oauth_flow
            handler = flow.handle_installation if request.url.path == INSTALL_PATH else flow.handle_callback
            response = to_starlette_response(await run_in_threadpool(handler, to_bolt_request(request, body)))
        else:
            response = PlainTextResponse("Not found", status_code=404)
        await response(scope, receive, send)


def slack_routes(settings: Settings, store: Store, *, bot: SlackBot | None = None) -> list[BaseRoute]:
    """Routes for bot/server.py: /slack/events, and the OAuth pages when OAuth is configured."""
    bot = bot or SlackBot(settings, store)
    endpoint = SlackEndpoint(bot)
    routes: list[BaseRoute] = [Route(EVENTS_PATH, endpoint, methods=["POST"])]
    if bot.app.oauth_flow is not None:
        routes += [Route(INSTALL_PATH, endpoint, methods=["GET"]), Route(REDIRECT_PATH, endpoint, methods=["GET"])]
    return routes


def find_bot(app) -> SlackBot | None:
    """The SlackBot behind an assembled Starlette app (tests, benchmarks, shutdown hooks)."""
    for route in getattr(app, "routes", []):
        endpoint = getattr(route, "endpoint", None)
        if isinstance(endpoint, SlackEndpoint):
            return endpoint.bot
    return None


def run_socket_mode(settings: Settings, *, store: Store | None = None, block: bool = True):
    """`kvdoctor slack --socket-mode`: the same app over a WebSocket (no public URL needed).

    Run one replica per app token (Slack splits events between connections at random;
    dedupe still holds). Returns the connected handler when `block` is False."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    validate_slack_settings(settings, socket_mode=True)
    store = store or Store(settings.database_url)
    bot = SlackBot(settings, store, socket_mode=True)
    handler = SocketModeHandler(bot.app, settings.slack_app_token)
    handler.bot = bot  # type: ignore[attr-defined]
    if not block:
        handler.connect()
        return handler
    log.info("kvdoctor Slack bot connected in Socket Mode")
    handler.start()  # blocks
    return handler
