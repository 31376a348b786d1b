"""Discourse forum assistant: answers threads that carry a vLLM memory error, once, politely.

Why this shape (integrations.md §2):
- Two ways in, usable together. The webhook (`POST /discourse/webhook`) gives low latency: it
  checks the HMAC over the raw body, dedupes on `X-Discourse-Event-Id`, answers 2xx at once and
  does the work after the response. The poller (`run_poller`, `kvdoctor discourse poll`) follows
  `/posts.json` from a cursor kept in the store, for forums without webhooks, and doubles as the
  safety net: every post it sees is handled or kept in its retry list, none is skipped.
- Exactly one reply per topic across restarts and replicas. Every write to a topic happens under
  a per-topic claim in the store (an INSERT the database's unique key arbitrates: claim before
  post). Before posting a new reply we look for our own posts in the topic (reconcile), so a
  crash between "reply posted" and "state saved" adopts the existing reply instead of posting a
  second one. A claim left by a dead process is taken over only after a lease (compare-and-swap
  in `Store.reclaim`), longer than any live holder can take, so a slow replica is never doubled.
- Thin: the text goes to `estimator.diagnose`; the estimator's Discourse markdown is the reply.
  This module only adds the assistant header/footer and a one-line ask for a missing model/GPU.

State (namespaces in the store; dry run uses `discourse-dry-*` so it never touches live state):
  claims  discourse-event/<event id>       webhook deliveries seen
          discourse-post/<post id>:<ver>   posts we decided on (a reply was due): dedupe
          discourse-topic-lock/<topic id>  the per-topic write claim (released when done)
          discourse-rate/<window>:<slot>   the global reply budget (one row per reply or edit)
  replies discourse-topic/<topic id>       our reply (and at most one follow-up) in that topic
  cursors discourse-poller:<forum hash>    {"last": post id, "pending": {post id: first seen}}
  flags   discourse-category/<id or slug>  "off" = kill switch for that category
          discourse/all                    "off" = stop posting everywhere
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import json
import logging
import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs

import httpx
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from bot import metrics
from bot.settings import Settings, SettingsError
from bot.store import Store
from estimator import diagnose, render_markdown
from estimator.errors import BadInput, KvdoctorError, ModelUnavailable

log = logging.getLogger(__name__)

# Users that are never answered whatever the configuration: Discourse's own system accounts.
SYSTEM_USERNAMES = frozenset({"system", "discobot"})

# Discourse's default max_post_length is 32000 characters; stay under it.
MAX_REPLY_CHARS = 30_000

HEADER = (
    "*I'm an automated assistant (kvdoctor): I read the vLLM memory error in this post and redid "
    "vLLM's own arithmetic for it.*"
)
FOOTER = (
    "<small>I'm a bot and can be wrong. To reach a human, just reply in this topic (people still "
    "read it), or flag this post for the moderators.</small>"
)
_MARKER = "<!-- kvdoctor "


# -- options -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DiscourseOptions:
    """Tunables beyond the required settings; defaults follow integrations.md §2.5 and §2.7."""

    request_interval: float = 1.0   # seconds between API calls: ≤ 1 req/s steady per API key (§2.5)
    timeout: float = 20.0           # per HTTP request
    max_attempts: int = 4           # per API call, for 429 / 5xx / network errors
    backoff_base: float = 1.0       # 5xx / network backoff: base·2^(n-1) with jitter, capped
    backoff_cap: float = 30.0
    max_wait: float = 120.0         # the longest 429 wait honoured; longer → give up this cycle
    poll_interval: float = 30.0     # §2.5: polling interval ≥ 30 s
    max_pages: int = 200            # /posts.json windows walked back per cycle (50 ids each)
    max_post_age: float = 24 * 3600.0  # never answer older posts (no backfill burst on first start)
    max_replies_per_hour: int = 30  # the global budget of posts + edits, shared by all replicas
    rate_window: float = 3600.0
    max_edits_per_reply: int = 5
    # A topic claim older than this is a dead holder's and may be taken over. It must exceed
    # the longest a live holder can take: max_attempts × (max_wait + timeout) = 4 × 140 s.
    lease: float = 900.0
    lock_wait: float = 20.0         # how long a webhook worker waits for a busy topic
    pending_max: int = 500          # posts kept for retry in the poller's cursor
    max_text_chars: int = 200_000   # text handed to the estimator
    ignore_users: tuple[str, ...] = ()  # other bots / automation accounts (lower-case usernames)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> DiscourseOptions:
        """Optional DISCOURSE_* variables (docs/discourse.md); bad values fail with the name."""
        e = os.environ if env is None else env

        def num(name: str, default: float, kind: Callable[[str], float] = float) -> Any:
            value = (e.get(name) or "").strip()
            if not value:
                return default
            try:
                result = kind(value)
            except ValueError:
                raise SettingsError(f"{name} must be a number, got {value!r}") from None
            if result < 0:
                raise SettingsError(f"{name} must not be negative, got {value!r}")
            return result

        ignore = tuple(u.strip().lower() for u in (e.get("DISCOURSE_IGNORE_USERS") or "").split(",") if u.strip())
        return cls(
            request_interval=num("DISCOURSE_REQUEST_INTERVAL", cls.request_interval),
            poll_interval=num("DISCOURSE_POLL_INTERVAL", cls.poll_interval),
            max_post_age=num("DISCOURSE_MAX_POST_AGE_HOURS", cls.max_post_age / 3600) * 3600,
            max_replies_per_hour=num("DISCOURSE_MAX_REPLIES_PER_HOUR", cls.max_replies_per_hour, int),
            ignore_users=ignore,
        )


# -- errors --------------------------------------------------------------------------------------

class DiscourseError(KvdoctorError):
    """The forum refused a request or could not be reached after bounded retries."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RateLimited(DiscourseError):
    """429 for longer than we are willing to wait (or too many times in a row)."""


class AmbiguousWrite(DiscourseError):
    """A POST whose fate is unknown (connection lost, 5xx): it may or may not have been created."""


# -- HTTP client ---------------------------------------------------------------------------------

def verify_signature(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """`X-Discourse-Event-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`, constant time."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    key = secret.encode() if isinstance(secret, str) else secret
    expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.strip())


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait from `Retry-After` (seconds or HTTP date), else `extras.wait_seconds`."""
    header = response.headers.get("retry-after")
    if header:
        try:
            return max(0.0, float(header))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(header)
                return max(0.0, when.timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    try:
        extras = response.json().get("extras") or {}
        return max(0.0, float(extras["wait_seconds"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _errors_of(response: httpx.Response) -> str:
    try:
        data = response.json()
        errors = data.get("errors") if isinstance(data, dict) else None
        if errors:
            return "; ".join(str(x) for x in errors)[:300]
    except ValueError:
        pass
    return response.reason_phrase or ""


class DiscourseClient:
    """The few Discourse API calls the assistant needs, with polite retries.

    Retries: 429 waits `Retry-After` (fallback `extras.wait_seconds`) up to `max_wait`; 5xx and
    network errors back off exponentially with jitter; all bounded by `max_attempts`. A POST is
    not idempotent, so one that may have reached the forum (5xx, lost connection) is never
    resent here: it raises `AmbiguousWrite` and the caller reconciles with the topic.
    """

    def __init__(self, base_url: str, api_key: str, api_username: str, *,
                 options: DiscourseOptions | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.options = options or DiscourseOptions()
        self.username = api_username
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Api-Key": api_key, "Api-Username": api_username,
                     "Accept": "application/json", "User-Agent": "kvdoctor-discourse"},
            timeout=self.options.timeout,
        )
        self._throttle_lock = threading.Lock()
        self._next_request = 0.0

    def close(self) -> None:
        self._http.close()

    # -- transport ---------------------------------------------------------------------------
    def _throttle(self) -> None:
        interval = self.options.request_interval
        if interval <= 0:
            return
        with self._throttle_lock:
            now = time.monotonic()
            wait = self._next_request - now
            self._next_request = max(now, self._next_request) + interval
        if wait > 0:
            self._sleep(wait)

    def _backoff(self, attempt: int) -> float:
        o = self.options
        return min(o.backoff_cap, o.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    def request(self, method: str, path: str, *, params: Any = None, json_body: Any = None,
                idempotent: bool = True) -> Any:
        o = self.options
        where = f"{method} {path}"
        for attempt in range(1, o.max_attempts + 1):
            last = attempt == o.max_attempts
            self._throttle()
            try:
                response = self._http.request(method, path, params=params, json=json_body)
            except httpx.TransportError as exc:
                # A failed connect never reached the forum; anything later might have.
                reached = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if reached and not idempotent:
                    raise AmbiguousWrite(f"Discourse {where}: connection lost ({exc.__class__.__name__})") from None
                if last:
                    raise DiscourseError(f"Discourse {where}: {exc.__class__.__name__} after {attempt} tries") from None
                metrics.record_error("discourse_api")
                self._sleep(self._backoff(attempt))
                continue
            status = response.status_code
            if status == 429:
                metrics.record_error("rate_limited")
                wait = _retry_after(response)
                wait = self._backoff(attempt) if wait is None else wait
                if last or wait > o.max_wait:
                    raise RateLimited(f"Discourse {where}: rate limited (wait {wait:.0f} s)", status=429)
                log.warning("discourse rate limited; waiting", extra={"request": where, "wait_s": round(wait, 2)})
                self._sleep(wait)
                continue
            if status >= 500:
                metrics.record_error("discourse_api")
                if not idempotent:
                    raise AmbiguousWrite(f"Discourse {where}: HTTP {status}", status=status)
                if last:
                    raise DiscourseError(f"Discourse {where}: HTTP {status} after {attempt} tries", status=status)
                self._sleep(self._backoff(attempt))
                continue
            if status >= 400:
                raise DiscourseError(f"Discourse {where}: HTTP {status} {_errors_of(response)}".rstrip(), status=status)
            try:
                return response.json()
            except ValueError:
                raise DiscourseError(f"Discourse {where}: the answer is not JSON", status=status) from None
        raise DiscourseError(f"Discourse {where}: no attempt made")  # max_attempts < 1

    # -- API ---------------------------------------------------------------------------------
    def latest_posts(self, before: int | None = None) -> list[dict]:
        """`GET /posts.json[?before=N]`: the public posts with id in (N-50, N], newest first."""
        data = self.request("GET", "/posts.json", params={"before": before} if before else None)
        return list(data.get("latest_posts") or [])

    def get_post(self, post_id: int) -> dict:
        return self.request("GET", f"/posts/{int(post_id)}.json")

    def get_topic(self, topic_id: int) -> dict:
        return self.request("GET", f"/t/{int(topic_id)}.json")

    def topic_posts(self, topic_id: int) -> tuple[dict, list[dict]]:
        """The topic and all its posts (first chunk from /t/{id}.json, the rest by post_ids[])."""
        topic = self.get_topic(topic_id)
        stream = topic.get("post_stream") or {}
        posts = list(stream.get("posts") or [])
        have = {p.get("id") for p in posts}
        rest = [i for i in stream.get("stream") or [] if i not in have]
        for start in range(0, len(rest), 20):
            chunk = rest[start:start + 20]
            data = self.request("GET", f"/t/{int(topic_id)}/posts.json", params={"post_ids[]": chunk})
            posts += list((data.get("post_stream") or {}).get("posts") or [])
        return topic, posts

    def categories(self) -> list[dict]:
        data = self.request("GET", "/categories.json", params={"include_subcategories": "true"})
        found: list[dict] = []
        for cat in (data.get("category_list") or {}).get("categories") or []:
            found.append(cat)
            found += list(cat.get("subcategory_list") or [])
        return found

    def create_post(self, topic_id: int, raw: str, *, reply_to_post_number: int | None = None) -> dict:
        body: dict[str, Any] = {"topic_id": int(topic_id), "raw": raw}
        if reply_to_post_number:
            body["reply_to_post_number"] = int(reply_to_post_number)
        return self.request("POST", "/posts.json", json_body=body, idempotent=False)

    def edit_post(self, post_id: int, raw: str, *, edit_reason: str | None = None) -> dict:
        post: dict[str, Any] = {"raw": raw}
        if edit_reason:
            post["edit_reason"] = edit_reason
        data = self.request("PUT", f"/posts/{int(post_id)}.json", json_body={"post": post})
        return data.get("post", data) if isinstance(data, dict) else {}


# -- text: raw first, cooked as the fallback, quotes removed ------------------------------------

def strip_quotes(raw: str) -> str:
    """Remove `[quote…]…[/quote]` blocks (nested too): quoted text is someone else's words.

    A plain scan rather than a regex so nesting is handled and no input can make it slow; an
    unclosed `[quote` is left as text, as Discourse renders it.
    """
    low = raw.lower()
    events: list[tuple[int, int, bool]] = []  # (start, end, is_open)
    pos = 0
    while (pos := low.find("[quote", pos)) != -1:
        if low[pos + 6:pos + 7] in ("]", "=", " "):
            events.append((pos, pos + 6, True))
        pos += 6
    pos = 0
    while (pos := low.find("[/quote]", pos)) != -1:
        events.append((pos, pos + 8, False))
        pos += 8
    events.sort()
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    for start, end, is_open in events:
        if is_open:
            stack.append(start)
        elif stack:
            opened = stack.pop()
            if not stack:
                spans.append((opened, end))
    if not spans:
        return raw
    out, cursor = [], 0
    for start, end in spans:
        out.append(raw[cursor:start])
        cursor = end
    out.append(raw[cursor:])
    return "".join(out)


_BLOCK_TAGS = frozenset({"p", "div", "br", "pre", "li", "ul", "ol", "tr", "table", "blockquote",
                         "h1", "h2", "h3", "h4", "h5", "h6", "hr", "details", "summary"})


class _CookedText(HTMLParser):
    """Cooked HTML → plain text: entities unescaped, block tags → newlines, quotes dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0  # >0 inside <aside class="quote"> (tracks nested asides)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "aside":
            classes = (dict(attrs).get("class") or "").split()
            if self._skip_depth or "quote" in classes:
                self._skip_depth += 1
                return
        if not self._skip_depth and tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "aside" and self._skip_depth:
            self._skip_depth -= 1
            return
        if not self._skip_depth and tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(data)


def cooked_to_text(cooked: str) -> str:
    parser = _CookedText()
    parser.feed(cooked or "")
    parser.close()
    lines = "".join(parser.parts).splitlines()
    return "\n".join(line.rstrip() for line in lines).strip()


def post_text(post: dict) -> str | None:
    """The author's own words: `raw` without quotes, else `cooked` as text; None if neither."""
    raw = post.get("raw")
    if isinstance(raw, str):
        return strip_quotes(raw)
    cooked = post.get("cooked")
    if isinstance(cooked, str):
        return cooked_to_text(cooked)
    return None


# -- the reply -----------------------------------------------------------------------------------

def diagnosis_signature(diag: Any) -> str:
    """Identifies what a diagnosis says; a later post with the same signature brings nothing new."""
    payload = json.dumps({"kind": diag.error_kind, "facts": diag.facts, "summary": diag.summary},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _missing_named(diag: Any, key: str) -> list[str]:
    """The estimator's own "what to paste next" entries about `key` ("model" or "gpu")."""
    out = []
    for item in diag.missing or []:
        low = str(item).strip().lower()
        if low == key or low.startswith((key + " ", "the " + key, "your " + key)):
            out.append(str(item))
    return out


def _wants(diag: Any) -> list[tuple[str, str]]:
    """Which of model / GPU the post did not say: (key, phrase) pairs.

    Facts hold them as null when the paste does not say them (design.md §4), and the
    estimator's `missing` list names them.
    """
    facts = diag.facts or {}
    wants = []
    for key, phrase in (("model", "the model id (as passed to `vllm serve`)"),
                        ("gpu", "the GPU (the `nvidia-smi` line)")):
        if (key in facts and not facts[key]) or _missing_named(diag, key):
            wants.append((key, phrase))
    return wants


def ask_line(diag: Any, body: str = "") -> str | None:
    """One short line asking for the model / GPU the post lacks; None when nothing is missing
    or when the rendered reply (`body`) already asks for exactly those."""
    wants = _wants(diag)
    if not wants:
        return None
    if body and all(_missing_named(diag, key) and all(m in body for m in _missing_named(diag, key))
                    for key, _ in wants):
        return None
    return "**To make this exact, please also paste** " + " and ".join(p for _, p in wants) + "."


def _marker(entry: dict) -> str:
    data = {"p": entry.get("answered"), "v": entry.get("version"), "s": entry.get("sig")}
    return _MARKER + json.dumps(data, separators=(",", ":")) + " -->"


def read_marker(raw: str | None) -> dict | None:
    """The hidden marker in one of our replies: which post (and version) it answers."""
    if not raw or _MARKER not in raw:
        return None
    start = raw.index(_MARKER) + len(_MARKER)
    end = raw.find(" -->", start)
    try:
        data = json.loads(raw[start:end])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def compose_reply(diag: Any, entry: dict, *, intro: str | None = None) -> str:
    """Header, the estimator's Discourse markdown, the ask line, the footer, a hidden marker."""
    body = render_markdown(diag, flavour="discourse").strip()
    head = [HEADER] + ([intro] if intro else [])
    ask = ask_line(diag, body)
    tail = ([ask] if ask else []) + ["---", FOOTER, _marker(entry)]
    room = MAX_REPLY_CHARS - len("\n\n".join(head + tail)) - 100
    if len(body) > room:
        body = body[:max(0, room)].rstrip() + "\n\n*(cut to fit the forum's post length)*"
    return "\n\n".join(head + [body] + tail)


# -- decisions -----------------------------------------------------------------------------------

REPLIED = "replied"            # first reply posted in the topic
FOLLOWED_UP = "followed_up"    # the one follow-up posted
UPDATED = "updated"            # our reply or follow-up edited with the newer analysis
ADOPTED = "adopted"            # found our earlier reply in the topic (crash recovery) and recorded it
DRY_RUN = "dry_run"            # would have posted/edited; logged instead
ALREADY = "already_answered"   # nothing new for a topic we answered
DUPLICATE = "duplicate"        # this post version was handled before
IGNORED = "ignored"            # author, post type, category, age, kill switch, closed topic
NO_PROBLEM = "no_problem"      # no vLLM memory problem in the text: stay silent
NOT_SPECIFIC = "not_specific"  # recognised, but too little to say something specific
BUSY = "busy"                  # another worker holds the topic: retry later
RATE_LIMITED = "rate_limited"  # global budget spent: retry later
ERROR = "error"                # the forum failed us: retry later
REJECTED = "rejected"          # the forum refused for good (404/410/422): give up on this post

_RETRY = frozenset({BUSY, RATE_LIMITED, ERROR})


@dataclass(frozen=True)
class Outcome:
    decision: str
    post_id: int | None = None
    topic_id: int | None = None
    reply_post_id: int | None = None
    detail: str = ""

    @property
    def final(self) -> bool:
        """True when the post needs no more work (False: keep it for a retry)."""
        return self.decision not in _RETRY


class _KeepClaim(Exception):
    """A write whose fate is unknown: the topic claim must stay until its lease runs out."""


class DiscourseBot:
    """The reply policy; shared by the webhook route and the poller. Thread-safe."""

    def __init__(self, settings: Settings, store: Store, options: DiscourseOptions | None = None, *,
                 client: DiscourseClient | None = None) -> None:
        if not settings.discourse_enabled:
            raise SettingsError("DISCOURSE_URL is not set: the Discourse assistant has no forum to talk to.")
        self.settings = settings
        self.store = store
        self.options = options or DiscourseOptions.from_env()
        self.username = (settings.discourse_api_username or "").lower()
        self.client = client or DiscourseClient(
            settings.discourse_url or "", settings.discourse_api_key or "",
            settings.discourse_api_username or "", options=self.options)
        self.dry_run = settings.discourse_dry_run
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        ns = "discourse-dry" if self.dry_run else "discourse"
        self.ns_event = f"{ns}-event"
        self.ns_post = f"{ns}-post"
        self.ns_lock = f"{ns}-topic-lock"
        self.ns_topic = f"{ns}-topic"
        self.ns_rate = f"{ns}-rate"
        forum = hashlib.sha256((settings.discourse_url or "").encode()).hexdigest()[:12]
        self.cursor_name = f"{ns}-poller:{forum}"
        self._ignore = SYSTEM_USERNAMES | {self.username} | set(self.options.ignore_users)
        self._allowed = {c.lower() for c in settings.discourse_categories}
        self._categories: dict[int, dict] = {}
        self._categories_at = 0.0
        self._topic_category: dict[int, int | None] = {}
        self._inflight = 0
        self._idle = threading.Condition()

    def close(self) -> None:
        self.client.close()

    # -- entry points ------------------------------------------------------------------------
    def handle_post(self, post: dict, *, source: str = "poller", lock_wait: float = 0.0) -> Outcome:
        """Decide and act on one post (a webhook payload or a /posts.json entry)."""
        try:
            pid, tid = int(post["id"]), int(post["topic_id"])
        except (KeyError, TypeError, ValueError):
            return Outcome(IGNORED, detail="not a post")
        reason = self._ignored(post)
        if reason:
            outcome = Outcome(IGNORED, pid, tid, detail=reason)
        else:
            try:
                outcome = self._decide(post, pid, tid, lock_wait)
            except DiscourseError as exc:
                # 404/410/422: the post or topic is gone, or the forum refuses this reply for
                # good (too short, too similar, closed); anything else may pass on a retry.
                final = exc.status in (404, 410, 422)
                outcome = Outcome(REJECTED if final else ERROR, pid, tid, detail=str(exc))
        level = logging.WARNING if not outcome.final else logging.INFO
        log.log(level, "discourse post %s", outcome.decision, extra={
            "surface": "discourse", "source": source, "post_id": pid, "topic_id": tid,
            "decision": outcome.decision, "detail": outcome.detail, "reply_post_id": outcome.reply_post_id})
        return outcome

    def process_webhook_post(self, post: dict) -> Outcome | None:
        try:
            return self.handle_post(post, source="webhook", lock_wait=self.options.lock_wait)
        except Exception:  # a background task must not die silently
            log.exception("discourse webhook processing failed", extra={"post_id": post.get("id")})
            metrics.record_error("internal")
            return None
        finally:
            with self._idle:
                self._inflight -= 1
                self._idle.notify_all()

    def _begin(self) -> None:
        with self._idle:
            self._inflight += 1

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no webhook work is queued or running (tests, graceful shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    # -- filters -----------------------------------------------------------------------------
    def _ignored(self, post: dict) -> str | None:
        username = str(post.get("username") or "").lower()
        if username == self.username:
            return "own post"
        if username in self._ignore:
            return "bot or system user"
        user_id = post.get("user_id")
        if isinstance(user_id, int) and user_id <= 0:  # system and bot users have ids ≤ 0
            return "bot or system user"
        if post.get("post_type") not in (None, 1):     # 1 = regular; not whispers or small actions
            return "not a regular post"
        if post.get("hidden") or post.get("deleted_at") or post.get("user_deleted"):
            return "hidden or deleted"
        if (post.get("topic_archetype") or post.get("archetype")) == "private_message":
            return "private message"
        created = _parse_time(post.get("created_at"))
        if created is not None and time.time() - created > self.options.max_post_age:
            return "too old"
        return None

    def _category_names(self, post: dict, tid: int) -> set[str]:
        """The post's category as ids and slugs, its parent's too (lower-case strings)."""
        cat_id = post.get("category_id")
        if cat_id is None:
            if tid not in self._topic_category:  # e.g. /posts/{id}.json has no category_id
                self._topic_category[tid] = self.client.get_topic(tid).get("category_id")
            cat_id = self._topic_category[tid]
        if cat_id is None:
            return set()
        names = {str(cat_id)}
        if post.get("category_slug"):
            names.add(str(post["category_slug"]).lower())
        cat = self._category(int(cat_id))
        if cat.get("slug"):
            names.add(str(cat["slug"]).lower())
        parent = cat.get("parent_category_id")
        if parent:
            names.add(str(parent))
            if self._category(int(parent)).get("slug"):
                names.add(str(self._category(int(parent))["slug"]).lower())
        return names

    def _kill_switch(self, names: set[str]) -> str | None:
        """Read only when about to write, so the switch takes effect at once on every replica."""
        if self.store.get_flag("discourse", "all") == "off":
            return "kill switch: all"
        for name in sorted(names):
            if self.store.get_flag("discourse-category", name) == "off":
                return f"kill switch: category {name}"
        return None

    def _category(self, cat_id: int) -> dict:
        """id → category (slug, parent), from /categories.json, refreshed every 10 minutes."""
        now = time.monotonic()
        age = now - self._categories_at
        if not self._categories_at or age > 600 or (cat_id not in self._categories and age > 60):
            try:
                self._categories = {int(c["id"]): c for c in self.client.categories() if "id" in c}
            except DiscourseError as exc:
                log.warning("discourse categories unavailable", extra={"detail": str(exc)})
            self._categories_at = now
        return self._categories.get(cat_id, {})

    # -- the decision ------------------------------------------------------------------------
    def _decide(self, post: dict, pid: int, tid: int, lock_wait: float) -> Outcome:
        names: set[str] | None = None
        if self._allowed:
            names = self._category_names(post, tid)
            if not names & self._allowed:
                return Outcome(IGNORED, pid, tid, detail="category not watched")
        text = post_text(post)
        if text is None:  # neither raw nor cooked: fetch the post with its markdown
            fetched = self.client.get_post(pid)
            post = {**fetched, **{k: v for k, v in post.items() if v is not None}}
            text = post_text(fetched) or ""
        if int(post.get("post_number") or 0) == 1 and post.get("topic_title"):
            text = f"{post['topic_title']}\n\n{text}"
        text = text[:self.options.max_text_chars]
        try:
            with metrics.estimator_timer("discourse"):
                # the post's own date: an old thread found by a backfill is not answered with rules
                # of a vLLM released after it was written
                diag = diagnose(text, offline=self.settings.offline or None,
                                posted=str(post.get("created_at") or "")[:10] or None)
        except ModelUnavailable as exc:  # the hub is down or slow: worth another try later
            return Outcome(ERROR, pid, tid, detail=f"estimator: {exc}")
        except BadInput:
            return Outcome(NO_PROBLEM, pid, tid, detail="unreadable text")
        except KvdoctorError as exc:
            return Outcome(NOT_SPECIFIC, pid, tid, detail=str(exc))
        except Exception:  # an estimator bug must not stop the forum assistant
            log.exception("estimator failed on a discourse post", extra={"post_id": pid})
            metrics.record_error("internal")
            return Outcome(NOT_SPECIFIC, pid, tid, detail="estimator error")
        if diag is None or diag.not_memory:
            return Outcome(NO_PROBLEM, pid, tid)
        if not diag.specific:
            return Outcome(NOT_SPECIFIC, pid, tid)
        # Only posts we would answer touch the store: processed post ids, kill switch, the topic.
        done_key = f"{pid}:{int(post.get('version') or 1)}"
        if self.store.is_claimed(self.ns_post, done_key):
            return Outcome(DUPLICATE, pid, tid)
        reason = self._kill_switch(self._category_names(post, tid) if names is None else names)
        if reason:
            outcome = Outcome(IGNORED, pid, tid, detail=reason)
        else:
            outcome = self._act(post, pid, tid, diag, lock_wait)
        if outcome.final:
            self.store.claim(self.ns_post, done_key, self.owner)
        return outcome

    def _acquire(self, tid: int, wait: float) -> bool:
        deadline = time.monotonic() + wait
        while True:
            if self.store.claim(self.ns_lock, str(tid), self.owner):
                return True
            if self.store.reclaim(self.ns_lock, str(tid), self.owner, older_than=self.options.lease):
                log.warning("took over a stale topic claim", extra={"topic_id": tid})
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(0.1, left))

    def _act(self, post: dict, pid: int, tid: int, diag: Any, lock_wait: float) -> Outcome:
        if not self._acquire(tid, lock_wait):
            return Outcome(BUSY, pid, tid, detail="another worker holds the topic")
        keep_claim = False
        try:
            return self._act_locked(post, pid, tid, diag)
        except _KeepClaim as exc:
            keep_claim = True
            return Outcome(ERROR, pid, tid, detail=str(exc))
        finally:
            if not keep_claim:
                self.store.release(self.ns_lock, str(tid))

    def _act_locked(self, post: dict, pid: int, tid: int, diag: Any) -> Outcome:
        version = int(post.get("version") or 1)
        sig = diagnosis_signature(diag)
        rec = self.store.get_reply(self.ns_topic, str(tid))
        meta = dict(rec.meta) if rec else None
        if meta is None:
            meta, closed = self._reconcile(tid, None)
            if meta is not None:
                return self._after_adopt(meta, pid, tid, version, sig, diag, post)
            if closed:
                return Outcome(IGNORED, pid, tid, detail="topic closed or archived")
            entry = {"answered": pid, "answered_number": post.get("post_number"), "version": version, "sig": sig}
            return self._post(tid, {"main": None, "followup": None}, "main", entry, diag, post)
        main, followup = meta.get("main") or {}, meta.get("followup")
        # An edit of a post we answered: update that reply, never add one.
        for slot, entry in (("main", main), ("followup", followup)):
            if entry and entry.get("answered") == pid:
                if version <= int(entry.get("version") or 0) or sig == entry.get("sig"):
                    return Outcome(ALREADY, pid, tid, reply_post_id=entry.get("post_id"))
                return self._edit(tid, meta, slot, pid, post, version, sig, diag)
        # A later post in the topic: only new logs earn a (single) follow-up, then edits of it.
        if sig in {main.get("sig"), (followup or {}).get("sig")}:
            return Outcome(ALREADY, pid, tid, detail="nothing new", reply_post_id=main.get("post_id"))
        if pid < int(main.get("answered") or 0) or (followup and pid < int(followup.get("answered") or 0)):
            return Outcome(ALREADY, pid, tid, detail="older than what we answered")
        if followup:
            return self._edit(tid, meta, "followup", pid, post, version, sig, diag)
        seen, closed = self._reconcile(tid, meta)
        if seen is not None and seen.get("followup"):
            return self._after_adopt(seen, pid, tid, version, sig, diag, post)
        if closed:
            return Outcome(IGNORED, pid, tid, detail="topic closed or archived")
        entry = {"answered": pid, "answered_number": post.get("post_number"), "version": version, "sig": sig}
        return self._post(tid, meta, "followup", entry, diag, post)

    def _after_adopt(self, meta: dict, pid: int, tid: int, version: int, sig: str, diag: Any,
                     post: dict) -> Outcome:
        """We found our own earlier post(s) in the topic; recorded them; now is this post covered?"""
        for entry in (meta.get("main"), meta.get("followup")):
            if entry and entry.get("answered") == pid and int(entry.get("version") or 0) >= version:
                return Outcome(ADOPTED, pid, tid, reply_post_id=entry.get("post_id"))
        # Covered by a reply to another post: decide again from the recorded state.
        return self._act_locked(post, pid, tid, diag)

    def _reconcile(self, tid: int, meta: dict | None) -> tuple[dict | None, bool]:
        """Look for our own posts in the topic; record any the state lacks. → (meta, closed)."""
        topic, posts = self.client.topic_posts(tid)
        closed = bool(topic.get("closed") or topic.get("archived"))
        ours = sorted((p for p in posts if str(p.get("username") or "").lower() == self.username),
                      key=lambda p: int(p.get("post_number") or 0))
        known = {(meta or {}).get(k, {}).get("post_id") for k in ("main", "followup") if (meta or {}).get(k)}
        if not ours or all(p.get("id") in known for p in ours[:2]):
            return (meta if meta and ours else None), closed
        by_number = {int(p.get("post_number") or 0): p for p in posts}
        entries = [self._entry_from_existing(p, by_number) for p in ours[:2]]
        adopted = {"main": entries[0], "followup": entries[1] if len(entries) > 1 else None}
        self.store.save_reply(self.ns_topic, str(tid), str(entries[0]["post_id"]), adopted)
        log.warning("adopted our existing reply in the topic", extra={
            "topic_id": tid, "reply_post_id": entries[0]["post_id"], "posts_found": len(ours)})
        return adopted, closed

    def _entry_from_existing(self, ours: dict, by_number: dict[int, dict]) -> dict:
        raw = ours.get("raw")
        if raw is None:
            try:
                raw = self.client.get_post(int(ours["id"])).get("raw")
            except DiscourseError:
                raw = None
        mark = read_marker(raw) or {}
        answered = mark.get("p")
        number = ours.get("reply_to_post_number")
        if answered is None and number:
            answered = (by_number.get(int(number)) or {}).get("id")
        return {"post_id": ours.get("id"), "post_number": ours.get("post_number"), "answered": answered,
                "answered_number": number, "version": mark.get("v") or 1, "sig": mark.get("s"), "edits": 0}

    def _take_rate_slot(self) -> bool:
        """One unit of the global reply budget, shared by all replicas through the claims table: N slots,
        each taken again (a compare-and-swap, store.reclaim) only once its last use is a whole window
        old, so no rolling hour holds more than N replies. Clock-aligned hours let 2N through across a
        boundary, and answered "rate limited" or not by when in the hour the calls fell."""
        for slot in range(self.options.max_replies_per_hour):
            key = f"slot:{slot}"
            if self.store.claim(self.ns_rate, key, self.owner) \
                    or self.store.reclaim(self.ns_rate, key, self.owner, older_than=self.options.rate_window):
                return True
        return False

    def _post(self, tid: int, meta: dict, slot: str, entry: dict, diag: Any, post: dict) -> Outcome:
        pid = entry["answered"]
        intro = None
        if slot == "followup":
            intro = f"**Update for post #{post.get('post_number')}** (new details since my first reply):"
        body = compose_reply(diag, entry, intro=intro)
        if not self._take_rate_slot():
            return Outcome(RATE_LIMITED, pid, tid, detail="global reply budget spent")
        decision = REPLIED if slot == "main" else FOLLOWED_UP
        if self.dry_run:
            log.info("dry run: would post this reply\n%s", body, extra={
                "topic_id": tid, "post_id": pid, "decision": decision})
            meta = {**meta, slot: {**entry, "post_id": None, "post_number": None, "edits": 0}}
            self.store.save_reply(self.ns_topic, str(tid), None, meta)
            return Outcome(DRY_RUN, pid, tid, detail=decision)
        try:
            created = self.client.create_post(tid, body, reply_to_post_number=post.get("post_number"))
        except AmbiguousWrite as exc:
            # It may be there: look, and adopt it if so; otherwise hold the claim until the
            # lease runs out (the request may still land) and let a retry reconcile again.
            seen, _ = self._reconcile(tid, meta if slot == "followup" else None)
            if seen is not None and seen.get(slot):
                return Outcome(ADOPTED, pid, tid, reply_post_id=seen[slot].get("post_id"))
            raise _KeepClaim(str(exc)) from None
        record = {**entry, "post_id": created.get("id"), "post_number": created.get("post_number"), "edits": 0}
        meta = {**meta, slot: record}
        main = meta["main"] or record
        self.store.save_reply(self.ns_topic, str(tid), str(main.get("post_id")), meta)
        metrics.record_reply("discourse")
        return Outcome(decision, pid, tid, reply_post_id=created.get("id"))

    def _edit(self, tid: int, meta: dict, slot: str, pid: int, post: dict, version: int, sig: str,
              diag: Any) -> Outcome:
        current = dict(meta[slot])
        if int(current.get("edits") or 0) >= self.options.max_edits_per_reply:
            return Outcome(ALREADY, pid, tid, detail="edit limit reached", reply_post_id=current.get("post_id"))
        entry = {**current, "answered": pid, "answered_number": post.get("post_number"),
                 "version": version, "sig": sig, "edits": int(current.get("edits") or 0) + 1}
        same_post = current.get("answered") == pid
        intro = (f"**Updated for the edited post #{post.get('post_number')}.**" if same_post
                 else f"**Update for post #{post.get('post_number')}** (new details in this topic):")
        body = compose_reply(diag, entry, intro=intro)
        if not self._take_rate_slot():
            return Outcome(RATE_LIMITED, pid, tid, detail="global reply budget spent")
        meta = {**meta, slot: entry}
        if self.dry_run or current.get("post_id") is None:
            log.info("dry run: would edit our reply to\n%s", body, extra={"topic_id": tid, "post_id": pid})
            self.store.save_reply(self.ns_topic, str(tid), None, meta)
            return Outcome(DRY_RUN, pid, tid, detail=UPDATED)
        self.client.edit_post(int(current["post_id"]), body,
                              edit_reason=f"kvdoctor: new details in post #{post.get('post_number')}")
        main = meta.get("main") or entry
        self.store.save_reply(self.ns_topic, str(tid), str(main.get("post_id")), meta)
        metrics.record_reply("discourse")
        return Outcome(UPDATED, pid, tid, reply_post_id=current.get("post_id"))


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- webhook -------------------------------------------------------------------------------------

def _post_payload(body: bytes, content_type: str) -> dict | None:
    """The `post` object of a webhook body (JSON, or form-encoded `payload=<json>`)."""
    try:
        if "form" in content_type:
            body = (parse_qs(body.decode()).get("payload") or [""])[0].encode()
        post = json.loads(body).get("post")
        if int(post["id"]) > 0 and int(post["topic_id"]) > 0:
            return post
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError):
        pass
    return None


def discourse_routes(settings: Settings, store: Store, *, options: DiscourseOptions | None = None,
                     bot: DiscourseBot | None = None) -> list[BaseRoute]:
    """`POST /discourse/webhook` (server.create_app adds it when DISCOURSE_URL is set)."""
    bot = bot or DiscourseBot(settings, store, options)
    secret = settings.discourse_webhook_secret

    async def webhook(request: Request) -> JSONResponse:
        body = await request.body()  # the raw bytes: the signature is over exactly these
        if not secret:
            log.error("discourse webhook refused: DISCOURSE_WEBHOOK_SECRET is not set")
            return JSONResponse({"error": "webhook secret not configured"}, status_code=401)
        if not verify_signature(secret, body, request.headers.get("x-discourse-event-signature")):
            metrics.record_error("bad_signature")
            return JSONResponse({"error": "bad signature"}, status_code=401)
        event = request.headers.get("x-discourse-event", "")
        if event == "ping" or request.headers.get("x-discourse-event-type") == "ping":
            return JSONResponse({"status": "pong"})
        if event not in ("post_created", "post_edited"):
            return JSONResponse({"status": "ignored", "event": event})
        post = _post_payload(body, request.headers.get("content-type", ""))
        if post is None:
            return JSONResponse({"error": "expected a post event payload"}, status_code=400)
        event_id = request.headers.get("x-discourse-event-id")
        if event_id and not await run_in_threadpool(store.claim, bot.ns_event, event_id, bot.owner):
            return JSONResponse({"status": "duplicate"})
        bot._begin()
        return JSONResponse({"status": "queued"}, status_code=202,
                            background=BackgroundTask(bot.process_webhook_post, post))

    route = Route("/discourse/webhook", webhook, methods=["POST"])
    route.kvdoctor_bot = bot  # type: ignore[attr-defined]  # reachable for tests and shutdown
    return [route]


# -- poller --------------------------------------------------------------------------------------

@dataclass
class PollStats:
    processed: int = 0      # posts handled this cycle (new and retried)
    new: int = 0
    retried: int = 0
    pending: int = 0        # left for the next cycle
    decisions: dict[str, int] = field(default_factory=dict)


class Poller:
    """Follows /posts.json from the stored cursor; posts that could not be finished are retried.

    The cursor is {"last": highest post id handled, "pending": {post id: first seen}}: the
    cursor moves past a post only when it is done or kept in `pending`, so nothing is skipped,
    and a busy topic does not hold up the rest of the forum.
    """

    def __init__(self, bot: DiscourseBot) -> None:
        self.bot = bot
        self.client = bot.client
        self.options = bot.options

    def _load(self) -> tuple[int | None, dict[int, float]]:
        raw = self.bot.store.get_cursor(self.bot.cursor_name)
        if not raw:
            return None, {}
        try:
            data = json.loads(raw)
        except ValueError:
            return None, {}
        if isinstance(data, int):
            return data, {}
        last = data.get("last")
        pending = {int(k): float(v) for k, v in (data.get("pending") or {}).items()}
        return (int(last) if last is not None else None), pending

    def _save(self, last: int | None, pending: dict[int, float]) -> None:
        if len(pending) > self.options.pending_max:
            for pid in sorted(pending, key=pending.__getitem__)[:len(pending) - self.options.pending_max]:
                log.warning("discourse retry list full; dropping a post", extra={"post_id": pid})
                del pending[pid]
        value = json.dumps({"last": last, "pending": {str(k): v for k, v in sorted(pending.items())}})
        self.bot.store.set_cursor(self.bot.cursor_name, value)

    def fetch_new(self, last: int | None) -> list[dict]:
        """Posts newer than `last`, oldest first, walking /posts.json windows back to the cursor.

        Discourse answers `before=N` with the visible posts whose id is in (N-50, N]; the next
        window starts at the lowest id seen (a repeat is harmless), or 50 lower when a window
        shows nothing new (all private or deleted). Without a cursor, the walk stops at posts
        older than `max_post_age`.
        """
        oldest_wanted = time.time() - self.options.max_post_age
        found: dict[int, dict] = {}
        before: int | None = None
        for _ in range(self.options.max_pages):
            page = self.client.latest_posts(before)
            ids = [int(p["id"]) for p in page if "id" in p]
            fresh = [p for p in page if int(p.get("id", 0)) not in found]
            for p in fresh:
                if last is None or int(p["id"]) > last:
                    found[int(p["id"])] = p
            if before is None and not ids:
                break  # an empty forum
            lowest = min(ids) if ids else None
            if last is not None and ((lowest is not None and lowest <= last + 1)
                                     or (before is not None and before - 50 <= last)):
                break  # reached the cursor
            times = [t for t in (_parse_time(p.get("created_at")) for p in fresh) if t is not None]
            if times and min(times) < oldest_wanted:
                break  # the rest is older than we would answer
            nxt = lowest if lowest is not None and (before is None or lowest < before) else (before or 0) - 50
            if nxt <= 1:
                break
            before = nxt
        else:
            log.warning("discourse backlog exceeds max_pages; older posts are not read this cycle",
                        extra={"max_pages": self.options.max_pages})
        return [found[i] for i in sorted(found)]

    def cycle(self) -> PollStats:
        stats = PollStats()
        last, pending = self._load()
        now = time.time()

        def count(outcome: Outcome) -> None:
            stats.processed += 1
            stats.decisions[outcome.decision] = stats.decisions.get(outcome.decision, 0) + 1

        for pid in sorted(pending):
            if now - pending[pid] > self.options.max_post_age:
                log.warning("discourse retry expired", extra={"post_id": pid})
                del pending[pid]
                continue
            try:
                post = self.client.get_post(pid)
            except DiscourseError as exc:
                if exc.status in (403, 404, 410):  # deleted or hidden since
                    del pending[pid]
                continue
            outcome = self.bot.handle_post(post, source="poller-retry")
            count(outcome)
            stats.retried += 1
            if outcome.final:
                del pending[pid]
        try:
            new = self.fetch_new(last)
        finally:
            self._save(last, pending)
        for n, post in enumerate(new, start=1):
            outcome = self.bot.handle_post(post, source="poller")
            count(outcome)
            stats.new += 1
            if not outcome.final:
                pending[int(post["id"])] = now
            last = int(post["id"])
            if n % 50 == 0:
                self._save(last, pending)
        self._save(last, pending)
        stats.pending = len(pending)
        return stats


def run_poller(settings: Settings, *, once: bool = False, store: Store | None = None,
               options: DiscourseOptions | None = None, stop: threading.Event | None = None) -> int:
    """`kvdoctor discourse poll [--once]`: follow the forum until stopped; returns posts handled.

    With `once`, one cycle and a forum error is raised (a `KvdoctorError`: one line, exit 2);
    otherwise errors are logged and the next cycle tries again. SIGTERM/SIGINT stop it cleanly.
    """
    if not settings.discourse_enabled:
        raise SettingsError("DISCOURSE_URL is not set: nothing to poll.")
    own_store = store is None
    store = store or Store(settings.database_url)
    bot = DiscourseBot(settings, store, options)
    poller = Poller(bot)
    stop = stop or threading.Event()
    restore: dict[int, Any] = {}
    if not once and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            restore[sig] = signal.signal(sig, lambda *_: stop.set())
    total = 0
    log.info("discourse poller started", extra={"forum": settings.discourse_url, "dry_run": bot.dry_run})
    try:
        while not stop.is_set():
            try:
                stats = poller.cycle()
                total += stats.processed
                if stats.processed:
                    log.info("discourse poll cycle", extra={"processed": stats.processed,
                                                            "pending": stats.pending, **stats.decisions})
            except DiscourseError as exc:
                if once:
                    raise
                log.warning("discourse poll failed; will retry", extra={"detail": str(exc)})
            except Exception:  # a long-running poller outlives one bad cycle (the store, a bug)
                if once:
                    raise
                log.exception("discourse poll cycle failed; will retry")
                metrics.record_error("internal")
            if once or stop.wait(bot.options.poll_interval):
                break
    finally:
        for sig, handler in restore.items():
            signal.signal(sig, handler)
        bot.close()
        if own_store:
            store.dispose()
    return total


def set_category_enabled(store: Store, category: str | int, enabled: bool) -> None:
    """The per-category kill switch (`category` is an id or a slug); "all" stops every category."""
    if str(category).lower() == "all":
        store.set_flag("discourse", "all", None if enabled else "off")
    else:
        store.set_flag("discourse-category", str(category).lower(), None if enabled else "off")


__all__ = [
    "AmbiguousWrite", "DiscourseBot", "DiscourseClient", "DiscourseError", "DiscourseOptions",
    "Outcome", "Poller", "RateLimited", "compose_reply", "cooked_to_text", "discourse_routes",
    "post_text", "run_poller", "set_category_enabled", "strip_quotes", "verify_signature",
]
