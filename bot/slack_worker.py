"""The Slack bot's work off the request path: a bounded worker pool and the reply jobs.

Why a separate pool: Slack wants the HTTP 200 (or the Socket Mode ack) within 3 s and re-sends
the event otherwise, while a diagnosis may wait on the Hugging Face Hub. The listeners in
`bot/slack.py` therefore only enqueue a job here and return; N worker threads (KVDOCTOR_WORKERS)
run the jobs. The queue is bounded: when it is full the listener answers 503 (events: Slack
re-sends later) or "busy" (commands), instead of piling up work or blocking the ack.

Why the claims live in the jobs: Slack delivers at least once (retries with X-Slack-Retry-Num,
the same message as `app_mention` and `message`, several replicas behind one URL). A job first
claims the event id, and claims the message (channel+ts) just before posting, in the shared
store (`bot/store.py`): the database's unique key decides which delivery answers, across
threads, processes and hosts. Keeping the store out of the ack path keeps the ack fast.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import multiprocessing
import queue
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry import default_retry_handlers
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

from bot import metrics
from bot.settings import Settings
from bot.slack_blocks import FittedMessage, escape_mrkdwn, fit_message, truncate
from bot.store import Store
from estimator import KvdoctorError, decode_paste, diagnose, render_markdown, render_slack

log = logging.getLogger("kvdoctor.slack")

# Store namespaces.
NS_EVENT = "slack-event"  # claim: one job per Slack event id
NS_MESSAGE = "slack-msg"  # claim: one reply per message (channel:ts)
NS_REPLY = "slack"  # reply: our answer to channel:ts (reply_ref = our message ts)
NS_SHARE = "slack-share"  # reply: a slash-command answer waiting for its "share" click
NS_SHARED = "slack-shared"  # claim: a share is posted once
NS_FEEDBACK = "slack-feedback"  # claim: one vote per user per answer
FLAG_MUTE = "slack-mute"  # flag: "1" = kill switch on for this channel
FLAG_AUTO = "slack-auto-reply"  # flag: "on"/"off" overrides SLACK_AUTO_REPLY_CHANNELS

ACTION_HELPED = "kvd_feedback_helped"
ACTION_WRONG = "kvd_feedback_wrong"
ACTION_SHARE = "kvd_share"
FILE_NAME = "kvdoctor-explanation.md"
MAX_SNIPPET_BYTES = 512 * 1024
TEXT_FILETYPES = {"text", "log", "python", "shell", "markdown", "json", "yaml", "plain"}
# Statuses worth unsolicited replies in auto-reply channels: a recognised memory problem, not a
# healthy start-up log (design.md §4 error_kind).
QUIET_KINDS = {None, "startup_log_ok"}

HINT = (
    "I couldn't find a vLLM GPU-memory or KV-cache error in that. Paste the whole error, from the "
    "`vllm serve` command line down to the last line of the traceback (the lines with "
    "`GPU KV cache size`, `Available KV cache memory` or `CUDA out of memory` matter most), or "
    "try `/kvdoctor MODEL GPU`."
)
HELP = (
    "*kvdoctor* explains vLLM GPU-memory / KV-cache errors.\n"
    "• Mention me with a pasted error, or mention me in a thread to explain its first message.\n"
    "• Message shortcut *Explain this vLLM error* on any message.\n"
    "• `/kvdoctor <paste>` or `/kvdoctor MODEL GPU` — answers only you; *Share* posts it.\n"
    "• `/kvdoctor mute` / `unmute` — kill switch for this channel. "
    "`/kvdoctor autoreply on|off` — answer recognised errors here without a mention."
)


def rate_limited_retry_handlers() -> list:
    """slack_sdk retries only connection errors by default; 429s must wait Retry-After and retry
    (integrations.md §1.10). The handler sleeps in the calling thread, i.e. in a worker."""
    return default_retry_handlers() + [RateLimitErrorRetryHandler(max_retry_count=4)]


@dataclass
class Explained:
    """What a reply needs from the estimator, as plain data (it crosses process boundaries)."""

    error_kind: str | None
    slack: dict
    markdown: str
    not_memory: bool = False        # the engine failed on no memory error (Diagnosis.not_memory)


def explain(text: str, kwargs: dict) -> Explained | None:
    """diagnose + render, module-level so that a process pool can run it."""
    diag = diagnose(text, **kwargs)
    if diag is None:
        return None
    rendered = render_slack(diag)
    try:
        markdown = render_markdown(diag)
    except Exception:
        log.exception("render_markdown failed")
        markdown = rendered.get("text") or ""
    return Explained(diag.error_kind, rendered, markdown, bool(getattr(diag, "not_memory", False)))


class WorkerPool:
    """N daemon threads over a bounded queue. `submit` never blocks: False means "full"."""

    def __init__(self, workers: int, queue_size: int = 256, name: str = "kvdoctor-slack") -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._threads = [
            threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True) for i in range(max(1, workers))
        ]
        self._closed = False
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        if self._closed:
            return False
        try:
            self._queue.put_nowait((fn, args, kwargs))
            return True
        except queue.Full:
            return False

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                fn, args, kwargs = item
                fn(*args, **kwargs)
            except Exception:  # a job must never kill its worker
                log.exception("slack job failed")
            finally:
                self._queue.task_done()

    def pending(self) -> int:
        return self._queue.unfinished_tasks

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once every submitted job has finished (tests, benchmarks, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def discard_pending(self) -> int:
        """Drop the jobs not started yet (shutdown without draining, benchmarks)."""
        dropped = 0
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return dropped
            self._queue.task_done()
            dropped += 1

    def close(self, timeout: float = 5.0) -> None:
        if self._closed:
            return
        self._closed = True
        for _ in self._threads:
            try:
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                break
        for t in self._threads:
            t.join(timeout)


class ChannelSettings:
    """Per-channel kill switch and auto-reply, from the store with a short in-memory cache.

    The listeners read the cached value (no database round trip on the ack path for every
    channel message); the jobs read the store directly before posting."""

    def __init__(self, settings: Settings, store: Store, ttl: float = 5.0) -> None:
        self.settings = settings
        self.store = store
        self.ttl = ttl
        self._cache: dict[tuple[str, str], tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def _flag(self, ns: str, channel: str, cached: bool) -> str | None:
        now = time.monotonic()
        if cached:
            with self._lock:
                hit = self._cache.get((ns, channel))
            if hit and now - hit[0] < self.ttl:
                return hit[1]
        value = self.store.get_flag(ns, channel)
        with self._lock:
            self._cache[(ns, channel)] = (now, value)
        return value

    def muted(self, channel: str, cached: bool = False) -> bool:
        return bool(channel) and self._flag(FLAG_MUTE, channel, cached) == "1"

    def auto_reply(self, channel: str, cached: bool = False) -> bool:
        value = self._flag(FLAG_AUTO, channel, cached)
        if value is not None:
            return value == "on"
        return channel in self.settings.slack_auto_reply_channels

    def set_muted(self, channel: str, muted: bool) -> None:
        self.store.set_flag(FLAG_MUTE, channel, "1" if muted else None)
        with self._lock:
            self._cache.pop((FLAG_MUTE, channel), None)

    def set_auto_reply(self, channel: str, on: bool) -> None:
        self.store.set_flag(FLAG_AUTO, channel, "on" if on else "off")
        with self._lock:
            self._cache.pop((FLAG_AUTO, channel), None)


@dataclass
class Source:
    """The Slack message a reply answers, and why we answer it."""

    channel: str
    ts: str
    text: str
    mode: str  # "mention" | "dm" | "auto" | "shortcut"
    thread_ts: str | None = None  # the thread the message is in, if any
    user: str | None = None
    files: list[dict] = field(default_factory=list)
    event_id: str | None = None
    response_url: str | None = None

    @property
    def key(self) -> str:
        return f"{self.channel}:{self.ts}"

    @property
    def root(self) -> str:
        """Reply target: the thread's parent, never a reply's own ts (integrations.md §1.4)."""
        return self.thread_ts or self.ts


def unescape(text: str) -> str:
    """Event text is mrkdwn with &, <, > escaped; the paste reader needs the raw characters."""
    return (text or "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and f"<@{user_id}" in (text or "")


def strip_mention(text: str, user_id: str | None) -> str:
    """Remove `<@U123>` / `<@U123|name>` tokens of our bot user from the text."""
    if not user_id:
        return text
    token = f"<@{user_id}"
    out, rest = [], text
    while (start := rest.find(token)) != -1:
        end = rest.find(">", start)
        if end == -1:
            break
        out.append(rest[:start])
        rest = rest[end + 1 :]
    out.append(rest)
    return "".join(out).strip()


def classify(event: dict, bot_user_id: str | None, channels: ChannelSettings) -> str | None:
    """Why a plain `message` event deserves an answer: "dm", "auto", or None (ignore).
    A channel message that mentions us is left to its `app_mention` twin."""
    channel = event.get("channel") or ""
    if event.get("channel_type") == "im" or channel.startswith("D"):
        return "dm"
    if mentions(event.get("text", ""), bot_user_id):
        return None
    if channels.auto_reply(channel, cached=True):
        return "auto"
    return None


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


class SlackReplier:
    """The jobs: read the text, call the estimator, post or update the reply exactly once."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        channels: ChannelSettings,
        *,
        diagnose_fn: Callable[..., Any] = diagnose,
        render_fn: Callable[[Any], dict] = render_slack,
        markdown_fn: Callable[..., str] = render_markdown,
        processes: int = 0,
        owner: str | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.channels = channels
        self.diagnose_fn = diagnose_fn
        self.render_fn = render_fn
        self.markdown_fn = markdown_fn
        custom = (diagnose_fn, render_fn, markdown_fn) != (diagnose, render_slack, render_markdown)
        # The estimator is CPU-bound Python (~80 ms for the seed paste): run in worker threads it
        # holds the GIL that the ack path needs. In a process pool it does not (bench/speed.py
        # slack_ack). Injected functions (tests, benchmarks) run in the worker thread.
        self.processes = 0 if custom else max(0, processes)
        self.job_timeout = max(30.0, settings.hub_timeout * 6)
        self._procs: ProcessPoolExecutor | None = None
        self._procs_lock = threading.Lock()
        self.owner = owner or f"{uuid.uuid4().hex[:12]}"
        self._diag_kwargs = self._diagnose_kwargs(diagnose_fn)
        try:
            params = inspect.signature(diagnose_fn).parameters
        except (TypeError, ValueError):
            params = {}
        self._takes_posted = "posted" in params
        self._takes_refusals = "answer_refusals" in params
        api_host = urlparse(settings.slack_api_url).hostname
        self._file_hosts = {"files.slack.com", api_host} - {None}

    def close(self) -> None:
        with self._procs_lock:
            if self._procs is not None:
                self._procs.shutdown(wait=False, cancel_futures=True)
                self._procs = None

    # -- estimator ----------------------------------------------------------------------
    def _diagnose_kwargs(self, fn: Callable[..., Any]) -> dict:
        """Pass the offline switch and the hub timeout to diagnose() as far as it accepts them,
        so one slow model lookup is bounded by KVDOCTOR_HUB_TIMEOUT, not by Slack."""
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return {}
        kwargs: dict[str, Any] = {}
        if "offline" in params and self.settings.offline:
            kwargs["offline"] = True
        for name in ("hub_timeout", "timeout"):
            if name in params:
                kwargs[name] = self.settings.hub_timeout
                break
        for name in ("hf_token", "token"):
            if name in params and self.settings.hf_token:
                kwargs[name] = self.settings.hf_token
                break
        return kwargs

    def posted(self, ts: str | None) -> dict:
        """{"posted": "YYYY-MM-DD"} from a Slack message ts (epoch seconds): an old message answered
        today (a shortcut, an edit) is not assumed to run a vLLM released after it was written."""
        try:
            day = time.strftime("%Y-%m-%d", time.gmtime(float(ts or "")))
        except (ValueError, OverflowError, OSError):
            return {}
        return {"posted": day} if self._takes_posted else {}

    def asked(self, explicit: bool) -> dict:
        """{"answer_refusals": True} for a person who asked (a mention, a DM, the command): a paste
        where vLLM refused the model before sizing memory is answered then, not in auto-reply channels."""
        return {"answer_refusals": True} if explicit and self._takes_refusals else {}

    def diagnose(self, text: str, **extra: Any) -> tuple[Explained | None, str | None]:
        """(Explained | None, user-facing error sentence | None). Never raises."""
        kwargs = {**self._diag_kwargs, **extra}
        try:
            with metrics.estimator_timer("slack"):
                if self.processes:
                    return self._in_processes(text, kwargs), None
                return self._explain_here(text, kwargs), None
        except KvdoctorError as exc:
            return None, str(exc)
        except FutureTimeout:
            log.warning("diagnose took longer than %s s", self.job_timeout)
            return None, "Looking this up took too long; try again in a minute."
        except Exception:
            log.exception("diagnose failed")  # no paste in the log: it may hold secrets
            return None, "Sorry, I hit an internal error while reading that paste; the maintainers have the log."

    def _explain_here(self, text: str, kwargs: dict) -> Explained | None:
        diag = self.diagnose_fn(text, **kwargs)
        if diag is None:
            return None
        rendered = self.render_fn(diag)
        try:
            markdown = self.markdown_fn(diag)
        except Exception:
            log.exception("render_markdown failed")
            markdown = rendered.get("text") or ""
        return Explained(getattr(diag, "error_kind", None), rendered, markdown, bool(getattr(diag, "not_memory", False)))

    def _in_processes(self, text: str, kwargs: dict) -> Explained | None:
        with self._procs_lock:
            if self._procs is None:
                # spawn, not fork: this process has threads (uvicorn, workers) holding locks
                self._procs = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"))
            procs = self._procs
        try:
            return procs.submit(explain, text, kwargs).result(timeout=self.job_timeout)
        except BrokenProcessPool:
            with self._procs_lock:
                if self._procs is procs:
                    self._procs = None
            raise

    def compose(self, exp: Explained, ref: str, *, extra: list[dict] | None = None,
                note: str | None = None) -> tuple[FittedMessage, str]:
        """The reply within Slack's limits + the full markdown for the overflow file."""
        buttons = extra if extra is not None else [feedback_block(ref)]
        return fit_message(exp.slack, extra_blocks=buttons, overflow_note=note), exp.markdown

    @staticmethod
    def plain(text: str, ref: str | None = None) -> FittedMessage:
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, 3000)}}]
        return FittedMessage(text=truncate(text, 3000), blocks=blocks)

    # -- reading ------------------------------------------------------------------------
    def file_text(self, files: list[dict], token: str | None) -> str:
        """Text of pasted snippets (long pastes become file_share messages). Needs files:read.
        Only Slack's file host (or SLACK_API_URL's host) gets the bot token."""
        out = []
        for f in (files or [])[:3]:
            mimetype = f.get("mimetype") or ""
            if not (mimetype.startswith("text/") or f.get("filetype") in TEXT_FILETYPES):
                continue
            if int(f.get("size") or 0) > MAX_SNIPPET_BYTES:
                continue
            url = f.get("url_private_download") or f.get("url_private")
            if not url or urlparse(url).hostname not in self._file_hosts or not token:
                continue
            try:
                req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
                with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 (host checked above)
                    out.append(decode_paste(resp.read(MAX_SNIPPET_BYTES)))
            except Exception as exc:
                log.warning("could not read snippet %s: %s", f.get("id"), type(exc).__name__)
        return "\n".join(out)

    def source_text(self, src: Source, client: WebClient, bot_user_id: str | None) -> str:
        text = unescape(strip_mention(src.text or "", bot_user_id))
        if src.files:
            text = "\n".join(t for t in (text, self.file_text(src.files, client.token)) if t)
        if not text.strip() and src.mode == "mention" and src.thread_ts and src.thread_ts != src.ts:
            # "@kvdoctor" alone in a thread: explain the thread's parent message.
            try:
                resp = client.conversations_replies(channel=src.channel, ts=src.thread_ts, limit=1, inclusive=True)
                parent = (resp.get("messages") or [{}])[0]
                text = unescape(strip_mention(parent.get("text") or "", bot_user_id))
                if parent.get("files"):
                    text = "\n".join(t for t in (text, self.file_text(parent["files"], client.token)) if t)
            except SlackApiError as exc:
                log.warning("conversations.replies failed: %s", exc.response.get("error"))
        return text

    # -- jobs ---------------------------------------------------------------------------
    def answer(self, src: Source, client: WebClient, bot_user_id: str | None) -> None:
        """A new message (mention, DM, auto-reply channel, shortcut) → at most one reply."""
        if src.event_id and not self.store.claim(NS_EVENT, src.event_id, self.owner):
            return  # another delivery of this event (retry, replica) has it
        if self.channels.muted(src.channel):
            return
        text = self.source_text(src, client, bot_user_id)
        explicit = src.mode != "auto"
        if not text.strip():
            diag, error = None, None
        else:
            diag, error = self.diagnose(text, **self.posted(src.ts), **self.asked(explicit))
        if diag is None or getattr(diag, "error_kind", None) in QUIET_KINDS or getattr(diag, "not_memory", False):
            if not explicit:
                return  # auto-reply channels: silence unless a memory error is recognised
            if diag is None:
                fitted, full = self.plain(error or (HELP if not text.strip() else HINT)), ""
            else:
                fitted, full = self.compose(diag, src.key)
        else:
            fitted, full = self.compose(diag, src.key)
        if not self.store.claim(NS_MESSAGE, src.key, self.owner):
            if src.mode == "shortcut":
                self._ephemeral(client, src, "I've already answered this message in its thread.")
            return  # the app_mention/message twin or another replica answers it
        try:
            ts = self._post(client, src.channel, src.root, fitted, full)
        except SlackApiError as exc:
            self.store.release(NS_MESSAGE, src.key)
            metrics.record_error("slack_api")
            error = exc.response.get("error")
            log.warning("posting the reply failed: %s", error)
            if src.mode == "shortcut" and src.response_url:
                self.respond(src.response_url, text=fitted.text, blocks=fitted.blocks, response_type="ephemeral")
            return
        except Exception:
            self.store.release(NS_MESSAGE, src.key)
            raise
        metrics.record_reply("slack")
        self.store.save_reply(NS_REPLY, src.key, ts, {
            "channel": src.channel, "thread_ts": src.root, "mode": src.mode,
            "text_sha": _text_hash(text), "edit_ts": src.ts,
        })

    def on_edit(self, event: dict, event_id: str | None, client: WebClient, bot_user_id: str | None) -> None:
        """message_changed: regenerate our reply in place (chat.update), or answer an edit that
        now qualifies, never a second reply."""
        msg = event.get("message") or {}
        prev = event.get("previous_message") or {}
        channel = event.get("channel") or ""
        if not msg.get("ts") or (msg.get("text") == prev.get("text") and msg.get("files") == prev.get("files")):
            return  # unfurls, thread metadata: not a text edit
        if event_id and not self.store.claim(NS_EVENT, event_id, self.owner):
            return
        if self.channels.muted(channel):
            return
        key = f"{channel}:{msg['ts']}"
        reply = self.store.get_reply(NS_REPLY, key)
        mode = (reply.meta.get("mode") if reply else None)
        if reply is None:
            synthetic = {**msg, "channel": channel, "channel_type": event.get("channel_type")}
            mode = "mention" if mentions(msg.get("text", ""), bot_user_id) and not channel.startswith("D") \
                else classify(synthetic, bot_user_id, self.channels)
            if mode is None:
                return
            self.answer(Source(channel=channel, ts=msg["ts"], text=msg.get("text", ""), mode=mode,
                               thread_ts=msg.get("thread_ts"), user=msg.get("user"),
                               files=msg.get("files") or []), client, bot_user_id)
            return
        edit_ts = str(event.get("event_ts") or event.get("ts") or "")
        if edit_ts and reply.meta.get("edit_ts") and float(edit_ts) < float(reply.meta["edit_ts"]):
            return  # an older edit arriving late
        src = Source(channel=channel, ts=msg["ts"], text=msg.get("text", ""), mode=mode or "mention",
                     thread_ts=msg.get("thread_ts"), files=msg.get("files") or [])
        text = self.source_text(src, client, bot_user_id)
        if reply.meta.get("text_sha") == _text_hash(text):
            return
        diag, error = self.diagnose(text, **self.posted(src.ts), **self.asked(src.mode != "auto")) \
            if text.strip() else (None, None)
        if diag is None or ((getattr(diag, "error_kind", None) in QUIET_KINDS or getattr(diag, "not_memory", False))
                            and src.mode == "auto"):
            fitted, full = self.plain(error or "After the edit I no longer see a vLLM memory error in this message."), ""
        else:
            fitted, full = self.compose(diag, key)
        client.chat_update(channel=channel, ts=reply.reply_ref, text=fitted.text, blocks=fitted.blocks)
        metrics.record_reply("slack")
        if fitted.overflow and full:
            self._upload(client, channel, reply.meta.get("thread_ts") or src.root, full)
        self.store.save_reply(NS_REPLY, key, reply.reply_ref, {
            **reply.meta, "text_sha": _text_hash(text), "edit_ts": edit_ts or reply.meta.get("edit_ts"),
        })

    def answer_command(self, command: dict) -> None:
        """/kvdoctor <paste | MODEL GPU>: an ephemeral answer with a Share button."""
        url = command.get("response_url")
        text = unescape(command.get("text") or "")
        diag, error = self.diagnose(text, **model_and_gpu(text), **self.asked(True)) if text.strip() else (None, None)
        if diag is None:
            self.respond(url, text=error or HINT, response_type="ephemeral")
            return
        token = uuid.uuid4().hex
        fitted, full = self.compose(diag, f"share:{token}", extra=[],
                                    note="The full explanation is attached when you share this answer.")
        shared = self.compose(diag, f"share:{token}")[0]
        self.store.save_reply(NS_SHARE, token, None, {
            "text": shared.text, "blocks": shared.blocks, "overflow": shared.overflow, "full": full,
            "channel": command.get("channel_id"), "user": command.get("user_id"),
        })
        blocks = fitted.blocks + [share_block(token)]
        self.respond(url, text=fitted.text, blocks=blocks, response_type="ephemeral")

    def share(self, token: str, user: str | None, channel: str | None, response_url: str | None,
              client: WebClient) -> None:
        """The Share button: post the stored answer in the channel once, drop the ephemeral."""
        saved = self.store.get_reply(NS_SHARE, token)
        if saved is None:
            self.respond(response_url, text="That answer has expired; run the command again.",
                         response_type="ephemeral", replace_original=False)
            return
        if not self.store.claim(NS_SHARED, token, self.owner):
            return
        meta = saved.meta
        channel = channel or meta.get("channel")
        byline = {"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"Shared by <@{escape_mrkdwn(user or meta.get('user') or '')}> via /kvdoctor"}]}
        blocks = [byline] + list(meta.get("blocks") or [])
        try:
            resp = client.chat_postMessage(channel=channel, text=meta["text"], blocks=blocks)
            if meta.get("overflow") and meta.get("full"):
                self._upload(client, channel, resp["ts"], meta["full"])
        except SlackApiError:
            # not a member of the channel: the response_url can still post in it
            self.respond(response_url, text=meta["text"], blocks=blocks, response_type="in_channel",
                         replace_original=False)
        self.respond(response_url, delete_original=True)

    def feedback(self, ref: str, user: str | None, verdict: str, response_url: str | None) -> None:
        if not self.store.claim(NS_FEEDBACK, f"{ref}:{user}", self.owner):
            self.respond(response_url, text="You already rated this answer.", response_type="ephemeral",
                         replace_original=False)
            return
        self.store.record_feedback("slack", ref, user, verdict)
        self.respond(response_url, text="Thanks — noted.", response_type="ephemeral", replace_original=False)

    def set_channel(self, command: dict, what: str) -> None:
        channel = command.get("channel_id") or ""
        if what in ("mute", "unmute"):
            self.channels.set_muted(channel, what == "mute")
            msg = "Muted: I won't answer in this channel until `/kvdoctor unmute`." if what == "mute" \
                else "Unmuted: I answer in this channel again."
        else:
            on = what == "autoreply on"
            self.channels.set_auto_reply(channel, on)
            msg = ("Auto-reply on: I answer recognised vLLM memory errors here without a mention."
                   if on else "Auto-reply off: mention me to get an answer.")
        self.respond(command.get("response_url"), text=msg, response_type="in_channel")

    # -- Slack I/O ----------------------------------------------------------------------
    def _post(self, client: WebClient, channel: str, thread_ts: str, fitted: FittedMessage, full: str) -> str:
        try:
            resp = client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=fitted.text,
                                           blocks=fitted.blocks, unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            if exc.response.get("error") not in ("invalid_blocks", "msg_blocks_too_long", "msg_too_long"):
                raise
            # The renderer produced something Slack refuses: text only, detail in the file.
            log.warning("Slack refused the blocks (%s); posting text only", exc.response.get("error"))
            resp = client.chat_postMessage(channel=channel, thread_ts=thread_ts,
                                           text=truncate(fitted.text, 3000), unfurl_links=False)
            fitted.overflow = True
        if fitted.overflow and full:
            self._upload(client, channel, thread_ts, full)
        return resp["ts"]

    def _upload(self, client: WebClient, channel: str, thread_ts: str, full: str) -> None:
        try:
            client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=full, filename=FILE_NAME,
                                   title="kvdoctor: full explanation")
        except Exception as exc:  # the short answer is already posted; the file is a bonus
            log.warning("file upload failed: %s", type(exc).__name__)

    def _ephemeral(self, client: WebClient, src: Source, text: str) -> None:
        if src.response_url:
            self.respond(src.response_url, text=text, response_type="ephemeral", replace_original=False)
        elif src.user:
            client.chat_postEphemeral(channel=src.channel, user=src.user, text=text, thread_ts=src.root)

    def respond(self, url: str | None, **payload: Any) -> None:
        """POST to a response_url (slash commands, shortcuts, buttons)."""
        if not url:
            return
        payload = {k: v for k, v in payload.items() if v is not None}
        resp = WebhookClient(url, retry_handlers=rate_limited_retry_handlers()).send_dict(payload)
        if resp.status_code != 200:
            log.warning("response_url answered %s", resp.status_code)


def feedback_block(ref: str) -> dict:
    return {
        "type": "actions",
        "block_id": "kvd_feedback",
        "elements": [
            {"type": "button", "action_id": ACTION_HELPED, "value": ref,
             "text": {"type": "plain_text", "text": "This helped"}},
            {"type": "button", "action_id": ACTION_WRONG, "value": ref,
             "text": {"type": "plain_text", "text": "This was wrong"}},
        ],
    }


def share_block(token: str) -> dict:
    return {
        "type": "actions",
        "block_id": "kvd_share",
        "elements": [{"type": "button", "action_id": ACTION_SHARE, "value": token, "style": "primary",
                      "text": {"type": "plain_text", "text": "Share in channel"}}],
    }


def model_and_gpu(text: str) -> dict:
    """`/kvdoctor MODEL GPU…` (one short line whose first word is a repo id or path) → the
    model= and gpu= hints for diagnose(); a paste passes no hints."""
    line = text.strip()
    words = line.split()
    if "\n" in line or not 1 <= len(words) <= 4 or "/" not in words[0] or ":" in words[0]:
        return {}
    hints = {"model": words[0]}
    if len(words) > 1:
        hints["gpu"] = " ".join(words[1:])
    return hints
