"""Speed figures for kvdoctor, one function per section; `main` runs every section available.

    python bench/speed.py            # all sections
    python bench/speed.py hub        # only the named sections

Each section is a function `bench_<name>() -> list[tuple[str, str]]` returning (label, figure)
rows, registered in SECTIONS. A section whose dependencies are missing raises `Skip` and is listed
as skipped. Benchmarks print figures; tests assert behaviour, not timings (CONTRIBUTING.md).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Skip(Exception):
    """A section cannot run here (say why)."""


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def _timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _summary(samples: list[float]) -> str:
    s = sorted(samples)
    p99 = s[min(len(s) - 1, int(len(s) * 0.99))]
    return f"median {_ms(statistics.median(s))}, p99 {_ms(p99)}, n={len(s)}"


# ------------------------------------------------------------------------------------------------
# hub: model metadata resolution (estimator/hub.py) against the fake Hub on loopback
# ------------------------------------------------------------------------------------------------
def bench_hub() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from fakehub import FakeHub, safetensors_file, sharded_checkpoint
    except ImportError as e:  # pragma: no cover
        raise Skip(f"tests/fakehub.py not importable ({e})") from e
    from estimator.hub import clear_cache, resolve_model

    hidden, inter, layers, vocab = 8192, 28672, 80, 128256
    tensors = [("model.embed_tokens.weight", "BF16", [vocab, hidden]), ("lm_head.weight", "BF16", [vocab, hidden])]
    for i in range(layers):
        for name, shape in (("q", [hidden, hidden]), ("k", [1024, hidden]), ("v", [1024, hidden]),
                            ("o", [hidden, hidden]), ("gate", [inter, hidden]), ("up", [inter, hidden]),
                            ("down", [hidden, inter])):
            tensors.append((f"model.layers.{i}.{name}.weight", "BF16", shape))
    config = {"model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers}
    rows: list[tuple[str, str]] = []
    with FakeHub() as hub, tempfile.TemporaryDirectory() as tmp:
        hub.add_repo("bench/api-counts", {"config.json": config, **sharded_checkpoint(tensors, 30)})
        hub.add_repo("bench/headers", {"config.json": config, **sharded_checkpoint(tensors, 30)},
                     api_safetensors=False)
        hub.add_repo("bench/single", {"config.json": config, "model.safetensors": safetensors_file(tensors[:50])})
        resolve_model("bench/single", endpoint=hub.url, cache_dir=f"{tmp}/warmup")  # imports, pools

        def cold(repo: str, n: int) -> list[float]:
            samples = []
            for k in range(n):
                clear_cache()
                cache = f"{tmp}/{repo.replace('/', '_')}-{k}"  # empty HF cache: every file fetched
                t0 = time.perf_counter()
                resolve_model(repo, endpoint=hub.url, cache_dir=cache, timeout=10)
                samples.append(time.perf_counter() - t0)
            return samples

        hub.reset_counts()
        rows.append(("cold, Hub safetensors counts (70B, 30 shards)", _summary(cold("bench/api-counts", 20))))
        rows.append(("  requests per cold lookup", f"{len(hub.requests) / 20:.0f}"))
        hub.reset_counts()
        rows.append(("cold, header Range reads (70B, 30 shards)", _summary(cold("bench/headers", 20))))
        rows.append(("  requests per cold lookup", f"{len(hub.requests) / 20:.0f}"))

        clear_cache()
        cache = f"{tmp}/warm"
        resolve_model("bench/api-counts", endpoint=hub.url, cache_dir=cache)
        hub.reset_counts()
        warm = _timed(lambda: resolve_model("bench/api-counts", endpoint=hub.url, cache_dir=cache), 2000)
        rows.append(("warm (in-process cache)", _summary(warm) + f"; requests {len(hub.requests)}"))
        rows.append(("  warm <= 5 ms", "yes" if statistics.median(warm) <= 0.005 else "NO"))

        clear_cache()
        resolve_model("bench/api-counts", endpoint=hub.url, cache_dir=cache, offline=True)  # fills memo
        clear_cache()
        disk = _timed(lambda: (clear_cache(), resolve_model("bench/api-counts", cache_dir=cache, offline=True)), 200)
        rows.append(("HF cache on disk, offline (memo cleared each time)", _summary(disk)))

    clear_cache()
    first = _timed(lambda: resolve_model("Qwen/Qwen2.5-14B-Instruct-1M", offline=True), 1)
    catalog = _timed(lambda: (clear_cache(), resolve_model("Qwen/Qwen2.5-14B-Instruct-1M", offline=True)), 500)
    rows.append(("catalog, offline, first lookup (loads index)", _ms(first[0])))
    rows.append(("catalog, offline (memo cleared each time)", _summary(catalog)))
    clear_cache()
    return rows

# The load client of bench_slack_ack, run as `python -c _SLACK_CLIENT CONFIG_JSON`.
_SLACK_CLIENT = r"""
import json, sys, time
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["tests"])
from fakeslack import BOT_USER_ID, SlackSender, slack_escape
paste = open(cfg["paste"]).read()
slack = SlackSender(cfg["url"], cfg["secret"])
samples, not_ok = [], 0
for i in range(cfg["first"], cfg["first"] + cfg["count"]):
    ts = f"1712100000.{i:06d}"
    if cfg["kind"] == "command":
        t0 = time.perf_counter()
        status = slack.form({"command": "/kvdoctor", "text": paste, "user_id": "UBENCH", "channel_id": "CBENCH",
                             "team_id": "T0KVD", "response_url": cfg["response_url"]}).status_code
    else:
        if cfg["kind"] == "mention":
            event = {"type": "app_mention", "text": f"<@{BOT_USER_ID}> {slack_escape(paste)}"}
        else:  # a channel message the bot ignores: nothing is enqueued
            event = {"type": "message", "channel_type": "channel", "text": "lunch?"}
        event.update({"user": "UBENCH", "channel": "CBENCH", "ts": ts, "event_ts": ts})
        body = slack.event_body(event, event_id=f"EvBench{i}")
        t0 = time.perf_counter()
        status = slack.post(body, "application/json").status_code
    samples.append(time.perf_counter() - t0)
    not_ok += status != 200
print(json.dumps({"samples": samples, "not_ok": not_ok}))
"""


# ------------------------------------------------------------------------------------------------
# slack_ack: Slack ack latency (signed request in → HTTP 200 out) on loopback, worker pool busy
# ------------------------------------------------------------------------------------------------
def bench_slack_ack() -> list[tuple[str, str]]:
    """Ack latency of /slack/events while every Slack worker is busy with a real diagnosis of
    the seed paste (~80 ms of CPU each, a backlog hundreds deep), with the estimator in the
    worker threads (KVDOCTOR_SLACK_PROCESSES=0) and in a process pool (the default)."""
    import json
    import os
    import subprocess

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from fakeslack import AppServer, FakeSlack
        from starlette.applications import Starlette

        from bot.settings import Settings
        from bot.slack import SlackBot, slack_routes
        from bot.store import Store
    except ImportError as e:  # pragma: no cover
        raise Skip(f"Slack bot dependencies not importable ({e})") from e
    secret, workers, n = "bench-secret", 4, 600
    cpus = os.cpu_count() or 1
    rows: list[tuple[str, str]] = [("machine", f"{cpus} CPUs, {workers} Slack workers, client in its own process")]
    for label, processes in (("estimator in threads", 0), (f"estimator in {min(workers, cpus)} processes",
                                                           min(workers, cpus))):
        with tempfile.TemporaryDirectory() as tmp:
            fake = FakeSlack().start()
            settings = Settings(database_url=f"sqlite:///{tmp}/bench.sqlite", slack_bot_token="xoxb-test-token",
                                slack_signing_secret=secret, slack_api_url=fake.api_url, workers=workers,
                                offline=True)
            store = Store(settings.database_url)
            bot = SlackBot(settings, store, queue_size=n * 4, processes=processes)
            server = AppServer(Starlette(routes=slack_routes(settings, store, bot=bot))).start()

            def timed(kind: str, first: int, count: int, server=server, fake=fake) -> tuple[list[float], int]:
                # In a deployment Slack is the client: a client thread in this process would
                # queue for the GIL with the busy workers and inflate the figures.
                cfg = json.dumps({"url": server.url, "secret": secret, "kind": kind, "first": first,
                                  "count": count, "paste": str(ROOT / "examples" / "seed-post.txt"),
                                  "tests": str(ROOT / "tests"), "response_url": fake.response_url("bench")})
                out = subprocess.run([sys.executable, "-c", _SLACK_CLIENT, cfg], capture_output=True, text=True,
                                     timeout=600, check=True).stdout
                result = json.loads(out)
                return result["samples"], result["not_ok"]

            try:
                timed("mention", 0, 2 * workers)  # warm-up: imports, connections, processes
                assert bot.pool.wait_idle(120)
                idle, _ = timed("chatter", 100, 200)
                busy, not_ok = timed("mention", 1000, n)
                pending = bot.pool.pending()
                cmd, cmd_not_ok = timed("command", 5000, 200)
                p99 = sorted(busy)[min(len(busy) - 1, int(len(busy) * 0.99))]
                rows.append((f"{label}: event ack, nothing enqueued, pool idle", _summary(idle)))
                rows.append((f"{label}: mention ack, pool busy",
                             _summary(busy) + f"; non-200: {not_ok}; backlog at end: {pending}"))
                rows.append((f"{label}:   busy p99 <= 100 ms", "yes" if p99 <= 0.100 else "NO"))
                rows.append((f"{label}: slash command ack, pool busy", _summary(cmd) + f"; non-200: {cmd_not_ok}"))
            finally:
                bot.pool.discard_pending()
                bot.pool.wait_idle(120)
                server.stop()
                bot.close()
                store.dispose()
                fake.stop()
    return rows

# ------------------------------------------------------------------------------------------------
# api_explain: POST /api/explain (bot/web.py) throughput and latency on loopback, seed paste
# ------------------------------------------------------------------------------------------------
def bench_api_explain() -> list[tuple[str, str]]:
    """`kvdoctor serve` in its own process (offline, SQLite, rate limit off); clients in threads."""
    import os
    import socket
    import subprocess
    import threading

    try:
        import httpx

        import bot.server  # noqa: F401 - the server's dependencies must import
    except ImportError as e:  # pragma: no cover
        raise Skip(f"server dependencies not importable ({e})") from e
    seed = (ROOT / "examples" / "seed-post.txt").read_text()
    body = {"text": seed}
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "KVDOCTOR_DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite", "KVDOCTOR_OFFLINE": "1",
               "KVDOCTOR_RATE_LIMIT": "0", "KVDOCTOR_LOG_LEVEL": "WARNING"}
        server = subprocess.Popen([sys.executable, "-c", f"from bot.server import serve; serve('127.0.0.1', {port})"],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise Skip("the server did not become ready")
                time.sleep(0.1)
            with httpx.Client(base_url=url, timeout=30) as client:
                first = client.post("/api/explain", json=body)  # warm-up: imports, catalog, caches
                if first.status_code != 200 or "73,792" not in first.text and "73792" not in first.text:
                    raise Skip(f"/api/explain did not explain the seed paste (HTTP {first.status_code})")
                for _ in range(10):
                    client.post("/api/explain", json=body)
                t0 = time.perf_counter()
                seq = _timed(lambda: client.post("/api/explain", json=body).raise_for_status(), 200)
                seq_wall = time.perf_counter() - t0

            def concurrent(clients: int, per_client: int) -> tuple[list[float], float]:
                samples: list[float] = []
                lock = threading.Lock()

                def worker() -> None:
                    with httpx.Client(base_url=url, timeout=60) as c:
                        mine = _timed(lambda: c.post("/api/explain", json=body).raise_for_status(), per_client)
                    with lock:
                        samples.extend(mine)

                threads = [threading.Thread(target=worker) for _ in range(clients)]
                start = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                return samples, time.perf_counter() - start

            par, par_wall = concurrent(8, 50)
        finally:
            server.terminate()
            server.wait(timeout=30)

    def pct(samples: list[float], q: float) -> float:
        s = sorted(samples)
        return s[min(len(s) - 1, int(len(s) * q))]

    rows.append(("machine", f"{os.cpu_count()} CPUs; server: one uvicorn process; seed paste ({len(seed):,} chars), offline catalog"))
    rows.append(("1 client, sequential", f"{len(seq) / seq_wall:.1f} req/s; p50 {_ms(pct(seq, 0.5))}, "
                                         f"p99 {_ms(pct(seq, 0.99))}, n={len(seq)}"))
    rows.append(("8 clients, concurrent", f"{len(par) / par_wall:.1f} req/s; p50 {_ms(pct(par, 0.5))}, "
                                          f"p99 {_ms(pct(par, 0.99))}, n={len(par)}"))
    return rows


# ------------------------------------------------------------------------------------------------
# discourse_poller: posts handled per second by the Discourse poller (bot/discourse.py) against
# the fake forum on loopback, SQLite store, offline estimator
# ------------------------------------------------------------------------------------------------
def bench_discourse_poller() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from fakediscourse import SEED_POST, FakeDiscourse
    except ImportError as e:  # pragma: no cover
        raise Skip(f"tests/fakediscourse.py not importable ({e})") from e
    from bot.discourse import DiscourseOptions, run_poller
    from bot.settings import Settings
    from bot.store import Store

    n_topics, per_topic, error_every = 100, 20, 20  # 2000 posts; every 20th topic opens with the seed error
    rows: list[tuple[str, str]] = []
    fake = FakeDiscourse().start()
    try:
        for t in range(n_topics):
            first = fake.create_topic("alice", f"topic {t}", SEED_POST if t % error_every == 0 else f"question {t}")
            for i in range(per_topic - 1):
                fake.reply(first["topic_id"], "bob", f"chatter {t}.{i}: the server starts fine, thanks")
        total = len(fake.posts)
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/bench.sqlite"
            settings = Settings(database_url=url, discourse_url=fake.url, discourse_api_key=fake.api_key,
                                discourse_api_username=fake.api_username, offline=True)
            options = DiscourseOptions(request_interval=0)  # the production default is 1 req/s
            store = Store(url)
            t0 = time.perf_counter()
            handled = run_poller(settings, once=True, store=store, options=options)
            elapsed = time.perf_counter() - t0
            replies = len(fake.our_posts())
            rows.append((f"first cycle: {total} posts, {replies} replies, {len(fake.requests)} HTTP requests",
                         f"{handled / elapsed:,.0f} posts/s ({elapsed:.2f} s)"))
            before = len(fake.requests)
            idle = _timed(lambda: run_poller(settings, once=True, store=store, options=options), 20)
            rows.append(("idle cycle (nothing new; 1 request)", _summary(idle[1:])
                         + f"; requests {(len(fake.requests) - before) // 20} per cycle"))
            store.dispose()
    finally:
        fake.stop()
    return rows


# ------------------------------------------------------------------------------------------------
# diagnose: one paste through the whole estimator (read, reverse-derive, re-check every fix, render),
# in process, offline, over every paste of the dev corpus
# ------------------------------------------------------------------------------------------------
def bench_diagnose() -> list[tuple[str, str]]:
    import json

    from estimator.diagnosis import diagnose
    from estimator.render import render_markdown

    corpus = ROOT.parent / "shared" / "corpus" / "dev.jsonl"
    if not corpus.exists():
        raise Skip(f"{corpus} not found")
    pastes = [(c["id"], c["paste"]) for c in map(json.loads, corpus.read_text().splitlines()) if c.get("paste")]
    render_markdown(diagnose(pastes[0][1], offline=True, explain=True))       # load the catalog once
    times: list[tuple[float, str]] = []
    for cid, paste in pastes:
        t0 = time.perf_counter()
        render_markdown(diagnose(paste, offline=True, explain=True))
        times.append((time.perf_counter() - t0, cid))
    slowest = max(times)
    return [("dev pastes, offline", _summary([t for t, _ in times])),
            ("slowest", f"{_ms(slowest[0])} ({slowest[1]})")]


SECTIONS: dict[str, Callable[[], list[tuple[str, str]]]] = {
    "diagnose": bench_diagnose,
    "hub": bench_hub,
    "slack_ack": bench_slack_ack,
    "api_explain": bench_api_explain,
    "discourse_poller": bench_discourse_poller,
}


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        print(f"unknown section(s): {', '.join(unknown)}; available: {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    for name in names:
        print(f"== {name}")
        try:
            rows = SECTIONS[name]()
        except Skip as e:
            print(f"   skipped: {e}")
            continue
        width = max(len(label) for label, _ in rows)
        for label, figure in rows:
            print(f"   {label:<{width}}  {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
