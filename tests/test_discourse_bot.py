"""Discourse assistant end to end: fake forum over HTTP, real store, real estimator, real ASGI server.

Exactly-once tests run on SQLite and, when KVDOCTOR_TEST_POSTGRES_URL is set, on PostgreSQL
(`store_url` from conftest.py). Nothing here patches HTTP: the bot's httpx client talks to the
fake forum on 127.0.0.1, and webhooks are real POSTs to the app served by uvicorn.
"""

from __future__ import annotations

import datetime
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.applications import Starlette

from bot.discourse import (
    ADOPTED,
    ALREADY,
    BUSY,
    DUPLICATE,
    RATE_LIMITED,
    REPLIED,
    DiscourseBot,
    DiscourseOptions,
    Poller,
    discourse_routes,
    run_poller,
    set_category_enabled,
)
from bot.settings import Settings
from bot.store import Store

try:
    from fakediscourse import SEED_POST, SEED_TITLE, FakeDiscourse, fake  # noqa: F401
except ImportError:  # tests/ imported as a package
    from tests.fakediscourse import SEED_POST, SEED_TITLE, FakeDiscourse, fake  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
SECRET = "test-webhook-secret"
FAST = DiscourseOptions(request_interval=0, backoff_base=0.01, backoff_cap=0.05, max_wait=5.0, timeout=10,
                        poll_interval=0.05, lock_wait=5.0)

# A second, different capacity error (same vLLM V0 message template as the seed question).
OTHER_ERROR = (
    "Tried again with `vllm serve Qwen/Qwen2.5-14B-Instruct-1M --max-model-len 200000` on the same A6000:\n\n"
    "ValueError: The model's max seq len (200000) is larger than the maximum number of tokens that can be "
    "stored in KV cache (73792). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
    "when initializing the engine."
)
THIRD_ERROR = OTHER_ERROR.replace("200000", "131072")
NO_ERROR = "How do I turn on streaming output with `vllm serve`? The server starts fine and answers requests."


def has_capacity(text: str) -> bool:
    return "73,792" in text or "73792" in text


@pytest.fixture
def store(store_url):
    s = Store(store_url)
    yield s
    s.dispose()


def make_settings(fake: FakeDiscourse, store_url: str, **kw) -> Settings:
    return Settings(database_url=store_url, discourse_url=fake.url, discourse_api_key=fake.api_key,
                    discourse_api_username=fake.api_username, discourse_webhook_secret=SECRET,
                    offline=True, **kw)


def poll(fake, store, store_url, options=FAST, **kw) -> int:
    return run_poller(make_settings(fake, store_url, **kw), once=True, store=store, options=options)


# -- the seed question ----------------------------------------------------------------------------

def test_seed_topic_gets_exactly_one_reply_with_capacity_and_fix(fake, store, store_url):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    poll(fake, store, store_url)
    poll(fake, store, store_url)  # a second cycle: nothing new to say
    ours = fake.our_posts()
    assert len(ours) == 1
    reply = ours[0]
    # vLLM's own V0 message in the post: "maximum number of tokens that can be stored in KV cache (73792)".
    assert has_capacity(reply["raw"])
    assert "--max-model-len" in reply["raw"]
    assert "automated assistant" in reply["raw"] and "reach a human" in reply["raw"]
    assert reply["topic_id"] == first["topic_id"] and reply["reply_to_post_number"] == 1
    saved = store.get_reply("discourse-topic", str(first["topic_id"]))
    assert saved is not None and saved.reply_ref == str(reply["id"])


def test_a_topic_whose_engine_failed_on_no_memory_error_gets_no_reply(fake, store, store_url):
    """The assistant answers vLLM memory problems: an engine that failed on weights its checkpoint lacks
    is another kind of failure, and the topic is left to people."""
    fake.create_topic("bob", "vLLM fails to start", (
        "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768\n"
        "(EngineCore pid=149) ERROR 04-02 12:18:35 [core.py:1108] EngineCore failed to start.\n"
        "ValueError: Following weights were not initialized from checkpoint:\n"
        "{'model.layers.16.input_layernorm.weight'}\n"))
    poll(fake, store, store_url)
    assert fake.our_posts() == []
    fake.create_topic("alice", SEED_TITLE, SEED_POST)      # control: a memory error in the same forum
    poll(fake, store, store_url)
    assert len(fake.our_posts()) == 1


# -- webhook ---------------------------------------------------------------------------------------

@pytest.fixture
def webhook(fake, store, store_url, live_server):
    """(base URL of the ASGI app on a loopback port, the bot behind it)."""
    bot = DiscourseBot(make_settings(fake, store_url), store, FAST)
    app = Starlette(routes=discourse_routes(bot.settings, store, bot=bot))
    yield live_server(app), bot
    bot.wait_idle()
    bot.close()


def test_webhook_with_valid_signature_replies(fake, webhook):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    response = fake.send_webhook(base, first["id"], secret=SECRET)
    assert response.status_code == 202
    assert bot.wait_idle()
    ours = fake.our_posts(first["topic_id"])
    assert len(ours) == 1 and has_capacity(ours[0]["raw"]) and "--max-model-len" in ours[0]["raw"]


V1_PASTE = ("I run `vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072` on one RTX 4090 and it fails:\n\n"
            "ValueError: To serve at least one request with the models's max seq len (131072), (7.0 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (3.98 GiB). Based on the available "
            "memory, the estimated maximum model length is 74528. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n")


def test_reply_to_an_old_post_models_a_vllm_of_its_day(fake, store, store_url):
    """The post's created_at bounds the version: written 2025-07-22, it ran at most vLLM 0.9.2
    (PyPI: 0.9.2 on 2025-07-08, 0.10.0 on 2025-07-25), though newer releases print the same lines.
    (Old threads are answered only when the operator raises DISCOURSE_MAX_POST_AGE_HOURS.)"""
    old = fake.create_topic("alice", "KV cache too small", V1_PASTE,
                            created_at=datetime.datetime(2025, 7, 22, 12, tzinfo=datetime.UTC).timestamp())
    assert poll(fake, store, store_url, options=replace(FAST, max_post_age=3 * 365 * 86400.0))
    ours = fake.our_posts(old["topic_id"])
    assert len(ours) == 1 and "modelled as 0.9.2" in ours[0]["raw"]


def test_webhook_bad_or_missing_signature_gets_401_and_posts_nothing(fake, webhook):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    assert fake.send_webhook(base, first["id"], secret="not-the-secret").status_code == 401
    assert fake.send_webhook(base, first["id"], secret=SECRET, signature="").status_code == 401
    assert fake.send_webhook(base, first["id"], secret=SECRET, signature="sha256=" + "0" * 64).status_code == 401
    assert bot.wait_idle()
    assert fake.writes() == [] and fake.requests == []  # rejected before any work


def test_same_webhook_delivered_twice_posts_once(fake, webhook):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    one = fake.send_webhook(base, first["id"], secret=SECRET, event_id="77")
    two = fake.send_webhook(base, first["id"], secret=SECRET, event_id="77")  # Discourse's retry
    assert (one.status_code, two.status_code) == (202, 200) and two.json()["status"] == "duplicate"
    # A new delivery id for the same post (e.g. redelivered by hand) is still one reply.
    assert fake.send_webhook(base, first["id"], secret=SECRET, event_id="78").status_code == 202
    assert bot.wait_idle()
    assert len(fake.our_posts()) == 1


def test_webhook_ping_and_other_events_do_no_work(fake, webhook):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    assert fake.send_webhook(base, first["id"], secret=SECRET, event="ping",
                             body=b'{"ping":"OK"}').json() == {"status": "pong"}
    assert fake.send_webhook(base, first["id"], secret=SECRET, event="topic_created").status_code == 200
    assert fake.send_webhook(base, first["id"], secret=SECRET, body=b"not json").status_code == 400
    assert bot.wait_idle()
    assert fake.writes() == []


def test_edit_of_the_answered_post_updates_our_reply_not_a_new_one(fake, webhook):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    fake.send_webhook(base, first["id"], secret=SECRET)
    assert bot.wait_idle()
    fake.edit(first["id"], OTHER_ERROR)
    fake.send_webhook(base, first["id"], secret=SECRET, event="post_edited")
    assert bot.wait_idle()
    ours = fake.our_posts()
    assert len(ours) == 1 and len(fake.requests_to("PUT", "/posts/")) == 1
    assert "200,000" in ours[0]["raw"] or "200000" in ours[0]["raw"]
    # The same edit delivered again changes nothing.
    fake.send_webhook(base, first["id"], secret=SECRET, event="post_edited")
    assert bot.wait_idle()
    assert len(fake.requests_to("PUT", "/posts/")) == 1


def test_later_posts_with_new_logs_get_one_follow_up_not_a_stream(fake, webhook):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    tid = first["topic_id"]
    fake.send_webhook(base, first["id"], secret=SECRET)
    assert bot.wait_idle()
    same = fake.reply(tid, "bob", "Same here:\n\n" + SEED_POST)            # nothing new
    newer = fake.reply(tid, "alice", OTHER_ERROR)                           # new logs → the follow-up
    newest = fake.reply(tid, "alice", THIRD_ERROR)                          # more → edit the follow-up
    for post in (same, newer, newest):
        fake.send_webhook(base, post["id"], secret=SECRET)
        assert bot.wait_idle()
    ours = fake.our_posts(tid)
    assert len(ours) == 2  # the reply and ONE follow-up
    follow = ours[1]
    assert follow["reply_to_post_number"] == newer["post_number"]
    assert "131,072" in follow["raw"] or "131072" in follow["raw"]  # updated for the newest post
    assert len(fake.requests_to("POST", "/posts.json")) == 2 and len(fake.requests_to("PUT", "/posts/")) == 1


def test_cooked_only_payload_is_read_and_quotes_are_skipped(fake, webhook):
    base, bot = webhook
    quoted = fake.create_topic("bob", "Seen this?", '[quote="alice, post:1, topic:9"]\n' + SEED_POST + "\n[/quote]\nSame?")
    plain = fake.create_topic("carol", "My error", SEED_POST)
    import json

    for post in (quoted, plain):
        payload = fake.webhook_payload(post["id"])
        del payload["post"]["raw"]  # only cooked HTML: the fallback path
        fake.send_webhook(base, post["id"], secret=SECRET, body=json.dumps(payload).encode())
        assert bot.wait_idle()
    assert fake.our_posts(quoted["topic_id"]) == []  # the error was only in a quote
    assert len(fake.our_posts(plain["topic_id"])) == 1


def test_webhook_and_poller_together_still_reply_once(fake, webhook, store, store_url):
    base, bot = webhook
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    fake.send_webhook(base, first["id"], secret=SECRET)
    assert bot.wait_idle()
    poll(fake, store, store_url)
    assert len(fake.our_posts()) == 1


def test_server_create_app_wires_the_webhook(fake, store, store_url, live_server):
    from bot.server import create_app

    app = create_app(make_settings(fake, store_url), store)
    base = live_server(app)
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    assert fake.send_webhook(base, first["id"], secret="wrong").status_code == 401
    assert fake.send_webhook(base, first["id"], secret=SECRET, event="ping", body=b'{"ping":"OK"}').status_code == 200


# -- poller: cursor, restarts, paging -------------------------------------------------------------

def test_poller_resumes_from_cursor_without_reanswering_or_skipping(fake, store, store_url):
    a = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    poll(fake, store, store_url)
    assert len(fake.our_posts(a["topic_id"])) == 1

    # While the poller is down: 120 posts, two of them new errors, spread over several
    # /posts.json windows (50 ids each), one error in a private message (never listed).
    chat = fake.create_topic("bob", "Chat", "hello")
    for i in range(60):
        fake.reply(chat["topic_id"], "bob", f"message {i}")
    b = fake.create_topic("carol", "KV cache error", OTHER_ERROR)
    fake.create_topic("carol", "private", OTHER_ERROR, private=True)
    for i in range(60):
        fake.reply(chat["topic_id"], "bob", f"more {i}")
    c = fake.create_topic("dave", "Another KV cache error", THIRD_ERROR)
    fake.reply(c["topic_id"], "bob", "any ideas?")

    # "Restart": a new Store object and a new bot; everything they know comes from the database.
    restarted = Store(store_url)
    before = len(fake.requests)
    poll(fake, restarted, store_url)
    run_two = fake.requests[before:]
    assert len(fake.our_posts(b["topic_id"])) == 1 and len(fake.our_posts(c["topic_id"])) == 1
    assert len(fake.our_posts(a["topic_id"])) == 1                      # not answered again
    assert not any(r.path == f"/t/{a['topic_id']}.json" for r in run_two)  # not even looked at
    assert sum(r.path == "/posts.json" for r in run_two) >= 3             # walked back the windows
    assert len(fake.our_posts()) == 3

    # Next cycle: the only newer posts are our own two replies (seen and ignored), then nothing.
    before = len(fake.requests)
    assert poll(fake, restarted, store_url) == 2
    assert poll(fake, restarted, store_url) == 0
    assert [r.path for r in fake.requests[before:]] == ["/posts.json", "/posts.json"]
    assert len(fake.our_posts()) == 3
    restarted.dispose()


def test_first_start_does_not_backfill_old_posts(fake, store, store_url):
    fake.create_topic("alice", "Old question", SEED_POST, created_at=time.time() - 3 * 86400)
    fresh = fake.create_topic("bob", SEED_TITLE, SEED_POST)
    poll(fake, store, store_url)
    assert [p["topic_id"] for p in fake.our_posts()] == [fresh["topic_id"]]


def test_poller_waits_out_429(fake, store, store_url):
    fake.create_topic("alice", SEED_TITLE, SEED_POST)
    fake.fail("GET", "/posts.json", "429", retry_after="1")
    fake.fail("POST", "/posts.json", "429", wait_seconds=1)
    poll(fake, store, store_url)
    assert len(fake.our_posts()) == 1
    gets, posts = fake.requests_to("GET", "/posts.json"), fake.requests_to("POST", "/posts.json")
    assert gets[1].at - gets[0].at >= 0.95 and posts[1].at - posts[0].at >= 0.95


def test_5xx_on_reads_is_retried(fake, store, store_url):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    fake.fail("GET", f"/t/{first['topic_id']}.json", "503", times=2)
    poll(fake, store, store_url)
    assert len(fake.our_posts()) == 1


# -- exactly once: crashes, lost responses, replicas ---------------------------------------------

def test_crash_between_reply_posted_and_state_saved_does_not_double_post(fake, store, store_url):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    hang = fake.fail("POST", "/posts.json", "hang_after")  # create the post, then hold the answer
    child = textwrap.dedent(f"""
        from bot.discourse import DiscourseOptions, run_poller
        from bot.settings import Settings
        settings = Settings(database_url={store_url!r}, discourse_url={fake.url!r},
                            discourse_api_key={fake.api_key!r}, discourse_api_username={fake.api_username!r},
                            offline=True)
        run_poller(settings, once=True, options=DiscourseOptions(request_interval=0, timeout=60))
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert hang.triggered.wait(60), proc.communicate(timeout=5)[0] if proc.poll() is not None else "no POST"
    finally:
        proc.kill()  # SIGKILL: no cleanup, no "state saved"
        proc.wait()
    hang.release.set()
    assert len(fake.our_posts()) == 1
    tid = str(first["topic_id"])
    assert store.get_reply("discourse-topic", tid) is None  # the crash lost the state

    # Restart while the dead process's claim is inside its lease: nothing is posted.
    posts_before = len(fake.requests_to("POST", "/posts.json"))
    poll(fake, store, store_url, options=replace(FAST, lease=900))
    assert len(fake.requests_to("POST", "/posts.json")) == posts_before
    # Once the lease has run out the claim is taken over, the reply found in the topic, adopted.
    time.sleep(0.3)
    poll(fake, store, store_url, options=replace(FAST, lease=0.2))
    poll(fake, store, store_url, options=replace(FAST, lease=0.2))
    ours = fake.our_posts()
    assert len(ours) == 1 and len(fake.requests_to("POST", "/posts.json")) == posts_before
    assert store.get_reply("discourse-topic", tid).reply_ref == str(ours[0]["id"])
    cursor = Poller(DiscourseBot(make_settings(fake, store_url), store, FAST))._load()
    assert cursor[1] == {}  # nothing left to retry


def test_lost_response_after_post_is_adopted_not_reposted(fake, store, store_url):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    fake.fail("POST", "/posts.json", "drop_after")  # created, then the connection drops
    poll(fake, store, store_url)
    ours = fake.our_posts()
    assert len(ours) == 1 and len(fake.requests_to("POST", "/posts.json")) == 1
    assert store.get_reply("discourse-topic", str(first["topic_id"])).reply_ref == str(ours[0]["id"])


def test_lost_request_before_post_is_retried_after_the_lease(fake, store, store_url):
    fake.create_topic("alice", SEED_TITLE, SEED_POST)
    fake.fail("POST", "/posts.json", "drop_before")  # the forum never saw it
    poll(fake, store, store_url)
    assert fake.our_posts() == []
    poll(fake, store, store_url)  # unknown fate: wait for the lease rather than risk a double
    assert fake.our_posts() == [] and len(fake.requests_to("POST", "/posts.json")) == 1
    time.sleep(0.3)
    poll(fake, store, store_url, options=replace(FAST, lease=0.2))
    assert len(fake.our_posts()) == 1


def test_replicas_racing_on_one_post_reply_once(fake, store_url):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    post = fake.webhook_payload(first["id"])["post"]
    stores = [Store(store_url) for _ in range(4)]
    bots = [DiscourseBot(make_settings(fake, store_url), s, FAST) for s in stores]
    barrier = threading.Barrier(len(bots))
    outcomes = []

    def run(bot):
        barrier.wait()
        outcomes.append(bot.handle_post(dict(post), lock_wait=5.0))

    threads = [threading.Thread(target=run, args=(b,)) for b in bots]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    decisions = sorted(o.decision for o in outcomes)
    assert len(fake.our_posts()) == 1 and len(fake.requests_to("POST", "/posts.json")) == 1
    assert decisions.count(REPLIED) == 1 and set(decisions) <= {REPLIED, ALREADY, DUPLICATE}
    for b, s in zip(bots, stores, strict=True):
        b.close()
        s.dispose()


# -- who and what is never answered ---------------------------------------------------------------

def test_own_system_and_bot_posts_are_ignored(fake, store, store_url):
    fake.add_user("ai-helper", -5)   # plugin bots have negative ids
    fake.add_user("ci-bot", 30)      # an automation account, configured as a bot
    for author in ("kvdoctor", "system", "discobot", "ai-helper", "ci-bot"):
        fake.create_topic(author, f"by {author}", SEED_POST)
    whisper = fake.create_topic("alice", "whispered", "see below")
    fake.reply(whisper["topic_id"], "alice", SEED_POST, post_type=4)
    poll(fake, store, store_url, options=replace(FAST, ignore_users=("ci-bot",)))
    assert fake.writes() == []
    control = fake.create_topic("alice", SEED_TITLE, SEED_POST)  # the same text by a person
    poll(fake, store, store_url, options=replace(FAST, ignore_users=("ci-bot",)))
    assert [r.body["topic_id"] for r in fake.writes()] == [control["topic_id"]]


def test_post_without_a_vllm_error_gets_no_reply(fake, store, store_url):
    fake.create_topic("alice", "Streaming?", NO_ERROR)
    fake.create_topic("bob", "Quoting", '[quote="alice, post:1, topic:1"]\n' + SEED_POST + "\n[/quote]\n+1, same")
    poll(fake, store, store_url)
    assert fake.writes() == []


def test_dry_run_posts_nothing_and_logs_the_reply(fake, store, store_url, caplog):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    with caplog.at_level(logging.INFO, logger="bot.discourse"):
        poll(fake, store, store_url, discourse_dry_run=True)
        poll(fake, store, store_url, discourse_dry_run=True)
    assert fake.writes() == []
    would = [r.getMessage() for r in caplog.records if "would post" in r.getMessage()]
    assert len(would) == 1 and has_capacity(would[0]) and "--max-model-len" in would[0]
    assert store.get_reply("discourse-topic", str(first["topic_id"])) is None  # live state untouched
    poll(fake, store, store_url)  # going live afterwards answers normally
    assert len(fake.our_posts()) == 1


def test_category_allow_list_and_kill_switch(fake, store, store_url):
    general = fake.create_topic("alice", "in general", SEED_POST, category_id=1)
    sub = fake.create_topic("bob", "in vllm/memory", SEED_POST, category_id=4)  # a subcategory of vllm
    poll(fake, store, store_url, discourse_categories=("vllm",))
    assert [p["topic_id"] for p in fake.our_posts()] == [sub["topic_id"]]
    assert fake.our_posts(general["topic_id"]) == []

    set_category_enabled(store, "vllm", False)
    stopped = fake.create_topic("carol", "while stopped", SEED_POST, category_id=2)
    poll(fake, store, store_url, discourse_categories=("vllm",))
    assert fake.our_posts(stopped["topic_id"]) == []
    set_category_enabled(store, "vllm", True)
    again = fake.create_topic("dave", "after", SEED_POST, category_id=2)
    poll(fake, store, store_url, discourse_categories=("vllm",))
    assert len(fake.our_posts(again["topic_id"])) == 1 and fake.our_posts(stopped["topic_id"]) == []


def test_global_rate_limit_defers_and_then_answers(fake, store, store_url):
    one = fake.create_topic("alice", "first", SEED_POST)
    two = fake.create_topic("bob", "second", OTHER_ERROR)
    tight = replace(FAST, max_replies_per_hour=1)
    poll(fake, store, store_url, options=tight)
    assert [p["topic_id"] for p in fake.our_posts()] == [one["topic_id"]]
    bot = DiscourseBot(make_settings(fake, store_url), store, tight)
    assert bot.handle_post(fake.webhook_payload(two["id"])["post"]).decision == RATE_LIMITED
    _, pending = Poller(bot)._load()
    assert two["id"] in pending  # kept for a retry, not skipped
    bot.close()
    poll(fake, store, store_url, options=replace(FAST, max_replies_per_hour=2))  # budget raised
    assert len(fake.our_posts(two["topic_id"])) == 1 and len(fake.our_posts()) == 2


def test_the_reply_budget_is_a_rolling_window_shared_by_replicas(fake, store, store_url):
    """max_replies_per_hour bounds every rolling window, not clock-aligned hours: with 2 replies per 4 s,
    a reply at 0 s and one at 2 s leave none at 2 s, and at 4.5 s only the first slot is free again (the
    second is 2.5 s old). Two replicas draw from one budget. Clock-aligned windows would have freed both
    slots at the next multiple of 4 s, and refused or allowed the third by when the test ran."""
    tight = replace(FAST, max_replies_per_hour=2, rate_window=4.0)
    one, two = (DiscourseBot(make_settings(fake, store_url), store, tight) for _ in range(2))
    try:
        start = time.monotonic()
        assert one._take_rate_slot()
        time.sleep(2.0)
        assert two._take_rate_slot()                       # the other replica takes the second slot
        assert not one._take_rate_slot() and not two._take_rate_slot()
        time.sleep(max(0.0, 4.5 - (time.monotonic() - start)))
        assert two._take_rate_slot()                       # the 0 s slot is a whole window old
        assert not one._take_rate_slot()                   # the 2 s one is not
    finally:
        one.close()
        two.close()


def test_busy_topic_is_retried_not_skipped(fake, store, store_url):
    first = fake.create_topic("alice", SEED_TITLE, SEED_POST)
    bot = DiscourseBot(make_settings(fake, store_url), store, FAST)
    assert store.claim(bot.ns_lock, str(first["topic_id"]), "another-replica")  # a live holder
    assert bot.handle_post(fake.webhook_payload(first["id"])["post"]).decision == BUSY
    store.release(bot.ns_lock, str(first["topic_id"]))
    bot.close()
    poll(fake, store, store_url)
    assert len(fake.our_posts()) == 1
    # and a restart after the reply was recorded finds it already answered
    bot = DiscourseBot(make_settings(fake, store_url), store, FAST)
    decision = bot.handle_post(fake.webhook_payload(first["id"])["post"]).decision
    bot.close()
    assert decision in (DUPLICATE, ALREADY, ADOPTED)
    assert len(fake.our_posts()) == 1
