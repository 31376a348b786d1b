"""bot/store.py on a real database: SQLite file and PostgreSQL (when KVDOCTOR_TEST_POSTGRES_URL).

Every test runs once per database (`store_url` fixture) so the two behave the same. The
concurrency tests use real threads and real processes: the database's unique constraint is
the only arbiter of "exactly once", so that is what they exercise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from sqlalchemy import func, select

from bot.store import MIGRATIONS, Store, schema_version

ROOT = Path(__file__).resolve().parent.parent


def test_migrate_creates_schema_once(store_url):
    store = Store(store_url)
    assert store.version() == len(MIGRATIONS)
    assert store.ping()
    again = Store(store_url)  # a second replica starting later: nothing to do
    assert again.migrate() == len(MIGRATIONS)
    with store.engine.connect() as conn:
        rows = conn.execute(select(func.count()).select_from(schema_version)).scalar()
    assert rows == len(MIGRATIONS)  # one row per migration, not one per start
    store.dispose()
    again.dispose()


def test_claim_is_first_writer_wins(store_url):
    store = Store(store_url)
    assert store.claim("slack-event", "Ev1", owner="a") is True
    assert store.claim("slack-event", "Ev1", owner="b") is False
    assert store.is_claimed("slack-event", "Ev1")
    # Same key in another namespace is a different claim.
    assert store.claim("discourse-post", "Ev1") is True
    assert not store.is_claimed("slack-event", "Ev2")
    # Released (processing failed before posting): a retry may claim it again, once.
    store.release("slack-event", "Ev1")
    assert not store.is_claimed("slack-event", "Ev1")
    assert store.claim("slack-event", "Ev1") is True
    assert store.claim("slack-event", "Ev1") is False
    store.dispose()


def test_keys_longer_than_the_column_behave_the_same(store_url):
    """PostgreSQL refuses >255 characters in VARCHAR(255); SQLite would store them. Both must agree."""
    store = Store(store_url)
    long_a = "C0123:" + "a" * 400
    long_b = "C0123:" + "a" * 399 + "b"  # same first 255 characters, different key
    assert store.claim("slack-msg", long_a) is True
    assert store.claim("slack-msg", long_a) is False
    assert store.claim("slack-msg", long_b) is True
    store.save_reply("slack", long_a, "ts-1", {"n": 1})
    reply = store.get_reply("slack", long_a)
    assert reply is not None and reply.reply_ref == "ts-1" and reply.key == long_a
    assert store.get_reply("slack", long_b) is None
    store.dispose()


def test_replies_cursors_flags_feedback(store_url):
    store = Store(store_url)
    assert store.get_reply("discourse", "topic-7") is None
    store.save_reply("discourse", "topic-7", "post-70", {"post_number": 3, "edited": False})
    store.save_reply("discourse", "topic-7", "post-71", {"post_number": 4})
    reply = store.get_reply("discourse", "topic-7")
    assert (reply.reply_ref, reply.meta) == ("post-71", {"post_number": 4})

    assert store.get_cursor("discourse-posts") is None
    store.set_cursor("discourse-posts", "1200")
    store.set_cursor("discourse-posts", "1234")
    assert store.get_cursor("discourse-posts") == "1234"

    store.set_flag("channel", "C1", "off")
    assert store.get_flag("channel", "C1") == "off"
    store.set_flag("channel", "C1", None)
    assert store.get_flag("channel", "C1") is None

    store.record_feedback("slack", "ts-1", "U1", "helpful")
    store.record_feedback("slack", "ts-2", "U2", "helpful")
    store.record_feedback("discourse", "p-1", None, "wrong")
    assert store.feedback_counts() == {"helpful": 2, "wrong": 1}
    assert store.feedback_counts("slack") == {"helpful": 2}
    store.dispose()


def test_claims_from_many_threads_win_once(store_url):
    store = Store(store_url)
    keys = [f"ev-{i}" for i in range(60)]
    wins: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def worker(n: int) -> None:
        barrier.wait()
        for key in keys[n::1] + keys[:n]:
            if store.claim("slack-event", key, owner=f"t{n}"):
                with lock:
                    wins.append(key)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == sorted(keys)  # every key won, none twice
    store.dispose()


def test_concurrent_upserts_do_not_fail(store_url):
    store = Store(store_url)
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def worker(n: int) -> None:
        barrier.wait()
        try:
            for i in range(15):
                store.save_reply("slack", "C1:1700000000.1", f"ts-{n}-{i}", {"writer": n})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    reply = store.get_reply("slack", "C1:1700000000.1")
    assert reply is not None and reply.reply_ref.endswith("-14")  # some writer's last write
    store.dispose()


# -- several processes -----------------------------------------------------------------------------
_CHILD = r"""
import json, os, random, sys, time
from bot.store import Store
url, go, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
store = Store(url)                      # every process migrates: the race is part of the test
while not os.path.exists(go):           # start claiming together
    time.sleep(0.005)
keys = [f"post-{i}" for i in range(n)]
random.Random(seed).shuffle(keys)
won = [k for k in keys if store.claim("discourse-post", k, owner=str(os.getpid()))]
print(json.dumps({"version": store.version(), "won": won}))
"""


def _run_processes(url: str, tmp_path: Path, procs: int, n: int) -> list[dict]:
    go = tmp_path / "go"
    children = [
        subprocess.Popen([sys.executable, "-c", _CHILD, url, str(go), str(n), str(seed)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for seed in range(procs)
    ]
    time.sleep(1.0)  # let them import, connect and migrate concurrently
    go.write_text("go")
    results = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_processes_racing_on_a_fresh_database_claim_each_key_once(store_url, tmp_path):
    """Four processes start on an EMPTY database at once (migrations race), then all claim the
    same 150 keys in different orders: every key is won by exactly one process."""
    results = _run_processes(store_url, tmp_path, procs=4, n=150)
    assert all(r["version"] == len(MIGRATIONS) for r in results)
    won = [k for r in results for k in r["won"]]
    assert len(won) == 150  # no key won twice (4 x 150 = 600 attempts, 150 wins)
    assert set(won) == {f"post-{i}" for i in range(150)}
    store = Store(store_url, migrate=False)
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schema_version)).scalar() == len(MIGRATIONS)
    store.dispose()


def test_ping_is_false_when_the_server_is_not_there(free_port, tmp_path):
    # Nothing listens on free_port: a PostgreSQL URL pointing there is "database down".
    down = Store(f"postgresql+psycopg://kvdoctor@127.0.0.1:{free_port}/kvdoctor", migrate=False)
    assert down.ping() is False
    down.dispose()
    missing_dir = Store(f"sqlite:///{tmp_path / 'no-such-dir' / 'db.sqlite'}", migrate=False)
    assert missing_dir.ping() is False
    missing_dir.dispose()
