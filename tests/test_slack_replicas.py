"""Two app instances (two ASGI apps, two uvicorn servers, two engines) sharing one store answer
each message once: the store's claim is the arbiter across processes (SQLite file, PostgreSQL
when KVDOCTOR_TEST_POSTGRES_URL is set — conftest's `store_url` fixture)."""

from __future__ import annotations

import threading

from fakeslack import AppServer, FakeSlack, SlackSender
from test_slack import AUTO, SECRET, make_settings, mention, message, seed_text

from bot.server import create_app
from bot.slack import find_bot
from bot.store import Store


def test_two_instances_sharing_a_store_answer_once(store_url, monkeypatch):
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KVDOCTOR_SLACK_PROCESSES", "0")
    fake = FakeSlack().start()
    stores, servers, senders, bots = [], [], [], []
    try:
        for _ in range(2):
            settings = make_settings(fake, store_url)
            store = Store(store_url)
            app = create_app(settings, store)
            server = AppServer(app).start()
            stores.append(store)
            servers.append(server)
            bots.append(find_bot(app))
            senders.append(SlackSender(server.url, SECRET))
        seed = seed_text()
        ts = "1712000200.000100"
        event = mention(seed, ts=ts, channel=AUTO)
        twin = message(seed, ts=ts, channel=AUTO)
        # Each replica gets the app_mention (first delivery + a retry) and the message twin, all at once.
        jobs = [(s, event, "EvREPLICA1", retry) for s in senders for retry in (None, 1)]
        jobs += [(s, twin, "EvREPLICA2", None) for s in senders]
        statuses: list[int] = []
        barrier = threading.Barrier(len(jobs))

        def deliver(sender, ev, event_id, retry):
            barrier.wait()
            statuses.append(sender.event(ev, event_id=event_id, retry=retry).status_code)

        threads = [threading.Thread(target=deliver, args=job) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert statuses == [200] * len(jobs)
        fake.wait_for("chat.postMessage")
        for bot in bots:
            assert bot.pool.wait_idle(20)
        posts = fake.calls("chat.postMessage")
        assert len(posts) == 1
        assert posts[0].body["thread_ts"] == ts
    finally:
        for sender in senders:
            sender.close()
        for server in servers:
            server.stop()
        for bot in bots:
            bot.close()
        for store in stores:
            store.dispose()
        fake.stop()
