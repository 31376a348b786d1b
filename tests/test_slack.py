"""Slack bot over real HTTP: the real ASGI app under uvicorn, real v0= signatures, the real
slack_sdk WebClient talking to a fake Slack Web API on 127.0.0.1 (tests/fakeslack.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakeslack import (  # noqa: F401
    BOT_ID,
    BOT_USER_ID,
    AppServer,
    FakeSlack,
    SlackSender,
    _no_slack_env,
    fake,
    slack_escape,
)

from bot.server import create_app
from bot.settings import Settings
from bot.slack import SlackBot, find_bot, slack_routes
from bot.store import Store

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TOKEN = "xoxb-test-token"
AUTO = "CAUTOREPLY"
QUIET = "CQUIET"
REPO = Path(__file__).resolve().parents[1]
SEED_PATHS = [REPO / "examples" / "seed-post.txt", REPO.parent / "shared" / "corpus" / "seed-post.txt"]
# The seed paste is vLLM's V0 capacity error: "The model's max seq len (1010000) is larger than
# the maximum number of tokens that can be stored in KV cache (73792)". The reply must quote that
# capacity, 73,792 tokens, and a --max-model-len fix that fits it, i.e. a value <= 73792.
SEED_CAPACITY = 73792


@dataclass
class Env:
    fake: FakeSlack
    store: Store
    server: AppServer
    slack: SlackSender
    bot: SlackBot
    settings: Settings

    def idle(self) -> None:
        assert self.bot.pool.wait_idle(10), "worker pool did not drain"


def make_settings(fake: FakeSlack, db: str, **over) -> Settings:
    base = dict(database_url=db, slack_bot_token=TOKEN, slack_signing_secret=SECRET,
                slack_api_url=fake.api_url, slack_auto_reply_channels=(AUTO,), workers=2, offline=True)
    base.update(over)
    return Settings(**base)


@pytest.fixture
def env(fake, tmp_path):
    settings = make_settings(fake, f"sqlite:///{tmp_path / 'kvd.sqlite'}")
    store = Store(settings.database_url)
    app = create_app(settings, store)
    bot = find_bot(app)
    server = AppServer(app).start()
    slack = SlackSender(server.url, SECRET)
    yield Env(fake, store, server, slack, bot, settings)
    slack.close()
    server.stop()
    bot.close()
    store.dispose()


def seed_text(path: Path = SEED_PATHS[0]) -> str:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path.read_text()


def mention(text: str, *, ts: str = "1712000000.000100", channel: str = "CGENERAL", **extra) -> dict:
    return {"type": "app_mention", "user": "UHUMAN", "text": f"<@{BOT_USER_ID}> {slack_escape(text)}",
            "ts": ts, "channel": channel, "event_ts": ts, **extra}


def message(text: str, *, ts: str = "1712000000.000200", channel: str = AUTO, **extra) -> dict:
    ctype = "im" if channel.startswith("D") else "channel"
    return {"type": "message", "user": "UHUMAN", "text": slack_escape(text), "ts": ts, "channel": channel,
            "channel_type": ctype, "event_ts": ts, **extra}


def visible_text(call) -> str:
    """Everything a reader sees: fallback text and every text in the blocks."""
    parts = [call.body.get("text") or ""]

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "text" and isinstance(v, str):
                    parts.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(call.body.get("blocks") or [])
    return "\n".join(parts)


def max_model_len_values(text: str) -> list[int]:
    values = []
    for chunk in text.split("--max-model-len")[1:]:
        digits = "".join(ch for ch in chunk.strip(" =`*")[:12] if ch.isdigit() or ch == ",").replace(",", "")
        if digits:
            values.append(int(digits))
    return values


def assert_seed_answer(call) -> None:
    text = visible_text(call)
    assert "73,792" in text or "73792" in text
    assert "--max-model-len" in text
    values = max_model_len_values(text)
    assert values and min(values) <= SEED_CAPACITY, values


# -- start-up ------------------------------------------------------------------------------------
def test_startup_calls_only_auth_test(env):
    assert [c.method for c in env.fake.calls()] == ["auth.test"]
    assert env.fake.calls()[0].headers["authorization"] == f"Bearer {TOKEN}"


# -- mentions --------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEED_PATHS, ids=["examples", "shared-corpus"])
def test_mention_with_seed_paste_gets_one_threaded_reply(env, seed):
    event = mention(seed_text(seed), ts="1712000001.000100")
    started = time.monotonic()
    resp = env.slack.event(event)
    assert resp.status_code == 200
    posts = env.fake.wait_for("chat.postMessage")
    env.idle()
    posts = env.fake.calls("chat.postMessage")
    assert len(posts) == 1
    post = posts[0]
    assert post.body["channel"] == "CGENERAL"
    assert post.body["thread_ts"] == "1712000001.000100"
    assert post.body["text"]  # plain-text fallback next to the blocks
    assert post.body["blocks"]
    assert_seed_answer(post)
    # feedback buttons come with every reply
    actions = [b for b in post.body["blocks"] if b.get("type") == "actions"]
    assert {e["action_id"] for a in actions for e in a["elements"]} >= {"kvd_feedback_helped", "kvd_feedback_wrong"}
    assert time.monotonic() - started < 5


def test_estimator_in_a_process_pool(fake, tmp_path, monkeypatch):
    """Production default: the CPU-bound estimator runs in processes, not in the worker threads
    (keeps the GIL free for the ack path; bench/speed.py slack_ack)."""
    monkeypatch.setenv("KVDOCTOR_SLACK_PROCESSES", "1")
    settings = make_settings(fake, f"sqlite:///{tmp_path / 'kvd.sqlite'}")
    store = Store(settings.database_url)
    app = create_app(settings, store)
    bot = find_bot(app)
    assert bot.replier.processes == 1
    server = AppServer(app).start()
    slack = SlackSender(server.url, SECRET)
    try:
        slack.event(mention(seed_text(), ts="1712000004.000100"))
        post = fake.wait_for("chat.postMessage", timeout=60)[0]
        assert_seed_answer(post)
        assert bot.replier._procs is not None  # the answer came from the process pool
    finally:
        slack.close()
        server.stop()
        bot.close()
        store.dispose()


def test_bare_mention_in_thread_explains_the_parent(env):
    seed = seed_text()
    env.fake.threads[("CGENERAL", "1712000002.000100")] = [
        {"type": "message", "user": "UHUMAN", "text": slack_escape(seed), "ts": "1712000002.000100"}]
    event = {"type": "app_mention", "user": "UOTHER", "text": f"<@{BOT_USER_ID}>", "ts": "1712000002.000900",
             "thread_ts": "1712000002.000100", "channel": "CGENERAL", "event_ts": "1712000002.000900"}
    assert env.slack.event(event).status_code == 200
    post = env.fake.wait_for("chat.postMessage")[0]
    replies = env.fake.calls("conversations.replies")
    assert replies and replies[0].body["ts"] == "1712000002.000100"
    assert post.body["thread_ts"] == "1712000002.000100"  # the parent, never the reply's ts
    assert_seed_answer(post)


def test_a_message_from_july_2025_is_answered_with_a_vllm_of_its_day(env):
    """The message's ts (2025-07-22 12:00 UTC) bounds the version: at most vLLM 0.9.2 (PyPI:
    0.10.0 came on 2025-07-25), though newer releases print the same error lines."""
    paste = ("`vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072` on one RTX 4090:\n"
             "ValueError: To serve at least one request with the models's max seq len (131072), (7.0 GiB KV cache "
             "is needed, which is larger than the available KV cache memory (3.98 GiB). Based on the available "
             "memory, the estimated maximum model length is 74528.")
    env.slack.event(mention(paste, ts="1753185600.000100"))
    post = env.fake.wait_for("chat.postMessage")[0]
    assert "modelled as 0.9.2" in visible_text(post)


def test_mention_without_an_error_gets_a_hint(env):
    env.slack.event(mention("how much memory does a 7B model need?", ts="1712000003.000100"))
    post = env.fake.wait_for("chat.postMessage")[0]
    assert post.body["thread_ts"] == "1712000003.000100"
    assert "paste" in post.body["text"].lower()


ARCH_REFUSED = ("vLLM API server version 0.6.4.post1\n"
                "ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now.")


WEIGHTS_MISSING = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768\n"
                   "(EngineCore pid=149) ERROR 04-02 12:18:35 [core.py:1108] EngineCore failed to start.\n"
                   "ValueError: Following weights were not initialized from checkpoint:\n"
                   "{'model.layers.16.input_layernorm.weight'}\n")


@pytest.mark.parametrize(("paste", "said"), [
    # a model the release does not know: the release to install
    pytest.param(ARCH_REFUSED, ("Not a memory problem", "0.8.4"), id="refused-model"),
    # an engine that failed on weights its checkpoint lacks: the exception, named
    pytest.param(WEIGHTS_MISSING, ("Not a memory error", "Following weights were not initialized"), id="engine-failure"),
])
def test_a_failure_that_is_no_memory_problem_is_answered_when_asked_and_not_in_auto_reply_channels(env, paste, said):
    env.slack.event(message(paste, ts="1712000050.000100"))
    env.idle()
    assert env.fake.calls("chat.postMessage") == []
    env.slack.event(mention(paste, ts="1712000050.000200"))
    post = env.fake.wait_for("chat.postMessage")[0]
    assert post.body["thread_ts"] == "1712000050.000200"
    assert all(words in visible_text(post) for words in said)


# -- exactly once ------------------------------------------------------------------------------------
def test_retries_and_double_delivery_give_one_reply(env):
    seed = seed_text()
    ts = "1712000010.000100"
    event = mention(seed, ts=ts, channel=AUTO)
    for retry in (None, 1, 2):  # the original delivery and two retries: same event id
        assert env.slack.event(event, event_id="EvMENTION1", retry=retry).status_code == 200
    # the same human message as a `message` event (another event id), with and without the
    # mention token (the app_mention/message double delivery, integrations.md §1.3)
    twin = message(seed, ts=ts, channel=AUTO)
    twin["text"] = event["text"]
    assert env.slack.event(twin, event_id="EvMESSAGE1").status_code == 200
    assert env.slack.event(message(seed, ts=ts, channel=AUTO), event_id="EvMESSAGE2").status_code == 200
    env.fake.wait_for("chat.postMessage")
    env.idle()
    assert len(env.fake.calls("chat.postMessage")) == 1
    assert env.store.is_claimed("slack-msg", f"{AUTO}:{ts}")


def test_bad_signature_and_stale_timestamp_get_401_and_no_reply(env):
    body = env.slack.event_body(mention(seed_text(), ts="1712000020.000100"))
    bad = env.slack.post(body, "application/json", signature="v0=" + "0" * 64)
    assert bad.status_code == 401
    stale_ts = int(time.time()) - 600  # Slack's window is 5 minutes
    stale = env.slack.post(body, "application/json", timestamp=stale_ts)  # correctly signed, but old
    assert stale.status_code == 401
    tampered_sig = env.slack.verifier.generate_signature(timestamp=str(int(time.time())), body=body)
    tampered = env.slack.post(body.replace("UHUMAN", "UEVIL"), "application/json", signature=tampered_sig)
    assert tampered.status_code == 401
    env.idle()
    assert env.fake.calls("chat.postMessage") == []
    assert env.bot.pool.pending() == 0


def test_bot_messages_and_our_own_get_no_reply(env):
    seed = seed_text()
    events = [
        message(seed, ts="1712000030.000100", channel="DDIRECT", bot_id="BOTHER", subtype="bot_message"),
        message(seed, ts="1712000030.000200", channel=AUTO, bot_id="BOTHER"),  # bot_id without subtype
        mention(seed, ts="1712000030.000300", bot_id="BOTHER"),
        message(seed, ts="1712000030.000400", channel="DDIRECT", user=BOT_USER_ID, bot_id=BOT_ID),
        {"type": "message", "subtype": "message_changed", "channel": AUTO, "channel_type": "channel",
         "event_ts": "1712000030.000600", "ts": "1712000030.000600",
         "message": {"type": "message", "text": slack_escape(seed), "ts": "1712000030.000500", "bot_id": "BOTHER"},
         "previous_message": {"type": "message", "text": "x", "ts": "1712000030.000500", "bot_id": "BOTHER"}},
    ]
    for event in events:
        assert env.slack.event(event).status_code == 200
    env.idle()
    assert env.fake.calls("chat.postMessage") == []


def test_auto_reply_channel_answers_errors_only(env):
    env.slack.event(message("anyone up for lunch? also vllm is great", ts="1712000040.000100"))
    env.slack.event(message(seed_text(), ts="1712000040.000200", channel=QUIET))  # not an auto-reply channel
    env.idle()
    assert env.fake.calls("chat.postMessage") == []
    env.slack.event(message(seed_text(), ts="1712000040.000300"))  # control: an error in AUTO
    post = env.fake.wait_for("chat.postMessage")[0]
    assert post.body["channel"] == AUTO and post.body["thread_ts"] == "1712000040.000300"
    env.idle()
    assert len(env.fake.calls("chat.postMessage")) == 1


def test_direct_message_gets_an_answer_in_thread(env):
    env.slack.event(message(seed_text(), ts="1712000045.000100", channel="DDIRECT"))
    post = env.fake.wait_for("chat.postMessage")[0]
    assert post.body["channel"] == "DDIRECT" and post.body["thread_ts"] == "1712000045.000100"
    assert_seed_answer(post)


# -- rate limits ------------------------------------------------------------------------------------
def test_429_is_retried_after_retry_after_and_posts_once(env):
    env.fake.fail("chat.postMessage", status=429, retry_after=1)
    env.slack.event(mention(seed_text(), ts="1712000050.000100"))
    env.fake.wait_for("chat.postMessage", timeout=10)
    env.idle()
    attempts = env.fake.calls("chat.postMessage")
    assert [c.status for c in attempts] == [429, 200]
    assert attempts[1].at - attempts[0].at >= 1.0  # waited Retry-After: 1 second
    assert len(env.fake.calls("chat.postMessage", ok_only=True)) == 1


# -- edits ------------------------------------------------------------------------------------------
def test_edit_updates_the_reply_instead_of_posting_again(env):
    seed = seed_text()
    ts = "1712000060.000100"
    env.slack.event(mention(seed, ts=ts))
    first = env.fake.wait_for("chat.postMessage")[0]
    env.idle()
    # The user corrects the paste: now vLLM reported 65,536 tokens of KV capacity.
    edited = seed.replace("(73792)", "(65536)")
    assert edited != seed
    env.slack.event({
        "type": "message", "subtype": "message_changed", "channel": "CGENERAL", "channel_type": "channel",
        "hidden": True, "event_ts": "1712000061.000000", "ts": "1712000061.000000",
        "message": {"type": "message", "user": "UHUMAN", "text": f"<@{BOT_USER_ID}> {slack_escape(edited)}",
                    "ts": ts, "edited": {"user": "UHUMAN", "ts": "1712000061.000000"}},
        "previous_message": {"type": "message", "user": "UHUMAN", "ts": ts,
                             "text": f"<@{BOT_USER_ID}> {slack_escape(seed)}"},
    })
    update = env.fake.wait_for("chat.update")[0]
    env.idle()
    assert update.body["ts"] == first.response["ts"] and update.body["channel"] == "CGENERAL"
    text = visible_text(update)
    assert "65,536" in text or "65536" in text
    assert len(env.fake.calls("chat.postMessage")) == 1


# -- slash command, share, feedback, shortcut, kill switch ---------------------------------------------
def command(env, text: str, channel: str = "CGENERAL") -> tuple:
    url = env.fake.response_url("cmd")
    resp = env.slack.form({"command": "/kvdoctor", "text": text, "user_id": "UHUMAN", "user_name": "h",
                           "channel_id": channel, "team_id": "T0KVD", "response_url": url,
                           "trigger_id": "1.2.3", "token": "legacy"})
    return resp, url


def webhook_calls(env, url: str):
    return [c for c in env.fake.calls("webhook") if url.endswith(c.path)]


def test_slash_command_answers_ephemerally_with_a_share_button(env):
    resp, url = command(env, seed_text())
    assert resp.status_code == 200
    env.fake.wait_for("webhook")
    env.idle()
    (answer,) = webhook_calls(env, url)
    assert answer.body.get("response_type", "ephemeral") == "ephemeral"
    assert_seed_answer(answer)
    assert env.fake.calls("chat.postMessage") == []  # nothing in the channel yet
    share = [e for b in answer.body["blocks"] if b.get("type") == "actions" for e in b["elements"]
             if e["action_id"] == "kvd_share"]
    assert len(share) == 1
    # Share: the answer goes to the channel once, the ephemeral one is deleted.
    click_url = env.fake.response_url("share")
    payload = {"type": "block_actions", "team": {"id": "T0KVD"}, "user": {"id": "UHUMAN"},
               "channel": {"id": "CGENERAL"}, "response_url": click_url, "trigger_id": "1.2.4",
               "container": {"type": "message", "is_ephemeral": True},
               "actions": [{"action_id": "kvd_share", "block_id": "kvd_share", "value": share[0]["value"],
                            "type": "button"}]}
    assert env.slack.interaction(payload).status_code == 200
    assert env.slack.interaction(payload).status_code == 200  # a double click
    post = env.fake.wait_for("chat.postMessage")[0]
    env.idle()
    assert len(env.fake.calls("chat.postMessage")) == 1
    assert post.body["channel"] == "CGENERAL"
    assert_seed_answer(post)
    assert "<@UHUMAN>" in visible_text(post)
    assert any(c.body.get("delete_original") for c in webhook_calls(env, click_url))


def test_slash_command_help_is_answered_in_the_ack(env):
    resp, _ = command(env, "help")
    assert resp.status_code == 200 and "kvdoctor" in resp.text


def test_feedback_buttons_are_recorded_once_per_user(env):
    ts = "1712000070.000100"
    env.slack.event(mention(seed_text(), ts=ts))
    post = env.fake.wait_for("chat.postMessage")[0]
    env.idle()
    helped = next(e for b in post.body["blocks"] if b.get("type") == "actions" for e in b["elements"]
                  if e["action_id"] == "kvd_feedback_helped")

    def click(user: str, action_id: str = "kvd_feedback_helped"):
        return env.slack.interaction({
            "type": "block_actions", "team": {"id": "T0KVD"}, "user": {"id": user},
            "channel": {"id": "CGENERAL"}, "response_url": env.fake.response_url("fb"),
            "container": {"type": "message", "message_ts": post.response["ts"]},
            "actions": [{"action_id": action_id, "block_id": "kvd_feedback", "value": helped["value"],
                         "type": "button"}]})

    assert click("UA").status_code == 200
    assert click("UA").status_code == 200  # same user again: not counted twice
    assert click("UB", "kvd_feedback_wrong").status_code == 200
    env.idle()
    assert env.store.feedback_counts("slack") == {"helped": 1, "wrong": 1}


def test_message_shortcut_explains_in_the_thread(env):
    payload = {"type": "message_action", "callback_id": "explain_vllm_error", "trigger_id": "1.2.5",
               "team": {"id": "T0KVD"}, "user": {"id": "UHUMAN"}, "channel": {"id": "CGENERAL"},
               "response_url": env.fake.response_url("sc"),
               "message": {"type": "message", "user": "UOTHER", "ts": "1712000080.000100",
                           "text": slack_escape(seed_text())}}
    assert env.slack.interaction(payload).status_code == 200
    post = env.fake.wait_for("chat.postMessage")[0]
    assert post.body["thread_ts"] == "1712000080.000100"
    assert_seed_answer(post)


def test_kill_switch_per_channel(env):
    resp, url = command(env, "mute", channel="CGENERAL")
    assert resp.status_code == 200
    env.fake.wait_for("webhook")
    env.idle()
    env.slack.event(mention(seed_text(), ts="1712000090.000100"))
    env.slack.event(mention(seed_text(), ts="1712000090.000200", channel="COTHER"))  # other channels unaffected
    env.fake.wait_for("chat.postMessage")
    env.idle()
    assert [c.body["channel"] for c in env.fake.calls("chat.postMessage")] == ["COTHER"]
    command(env, "unmute", channel="CGENERAL")
    env.idle()
    env.slack.event(mention(seed_text(), ts="1712000090.000300"))
    env.fake.wait_for("chat.postMessage", 2)


# -- Slack's limits ---------------------------------------------------------------------------------
def _long_render(diag) -> dict:
    section = "\n".join(f"line {i:04d} of the KV-cache breakdown " + "x" * 40 for i in range(120))  # ~10 k chars
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": "H" * 200}}]
    blocks += [{"type": "section", "text": {"type": "mrkdwn", "text": section}}]
    blocks += [{"type": "section", "text": {"type": "mrkdwn", "text": f"detail {i}"}} for i in range(80)]
    return {"text": "KV cache holds 73,792 tokens; use --max-model-len 73792", "blocks": blocks}


def test_long_reply_fits_slack_limits_and_moves_detail_to_a_file(fake, tmp_path):
    from starlette.applications import Starlette

    settings = make_settings(fake, f"sqlite:///{tmp_path / 'kvd.sqlite'}")
    store = Store(settings.database_url)
    bot = SlackBot(settings, store, render_fn=_long_render, markdown_fn=lambda d: "# full\n" + "y" * 50_000)
    server = AppServer(Starlette(routes=slack_routes(settings, store, bot=bot))).start()
    slack = SlackSender(server.url, SECRET)
    try:
        slack.event(mention(seed_text(), ts="1712000100.000100"))
        fake.wait_for("files.completeUploadExternal")
        assert bot.pool.wait_idle(10)
        (post,) = fake.calls("chat.postMessage")
        blocks = post.body["blocks"]
        assert len(blocks) <= 50
        for b in blocks:
            if b["type"] == "section":
                assert len(b["text"]["text"]) <= 3000
            if b["type"] == "header":
                assert len(b["text"]["text"]) <= 150
        assert len(post.body["text"]) <= 40_000
        assert blocks[-1]["type"] == "actions"  # our feedback buttons survive the cut
        (ask,) = fake.calls("files.getUploadURLExternal")
        (upload,) = fake.calls("upload")
        assert int(ask.body["length"]) == len(upload.raw) == len("# full\n") + 50_000
        (done,) = fake.calls("files.completeUploadExternal")
        assert done.body["channel_id"] == "CGENERAL" and done.body["thread_ts"] == "1712000100.000100"
    finally:
        slack.close()
        server.stop()
        bot.close()
        store.dispose()


def test_snippet_paste_is_read_with_the_bot_token(env):
    env.fake.files["paste.txt"] = seed_text().encode()
    event = message("here is my log", ts="1712000110.000100", channel="DDIRECT", subtype="file_share",
                    files=[{"id": "F1", "mimetype": "text/plain", "filetype": "text", "size": 2000,
                            "url_private": f"{env.fake.url}/files/paste.txt"}])
    env.slack.event(event)
    post = env.fake.wait_for("chat.postMessage")[0]
    assert env.fake.calls("files")[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert_seed_answer(post)


def test_a_utf16_snippet_is_read_as_its_text(env):
    """A log captured by Windows PowerShell 5 (`> log.txt`, UTF-16 with a byte-order mark) and shared as
    a snippet reads as the same paste."""
    env.fake.files["log16.txt"] = seed_text().encode("utf-16")
    event = message("here is my log", ts="1712000111.000100", channel="DDIRECT", subtype="file_share",
                    files=[{"id": "F2", "mimetype": "text/plain", "filetype": "text", "size": 4000,
                            "url_private": f"{env.fake.url}/files/log16.txt"}])
    env.slack.event(event)
    assert_seed_answer(env.fake.wait_for("chat.postMessage")[0])


def test_url_verification_challenge(env):
    body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "legacy"})
    resp = env.slack.post(body, "application/json")
    assert resp.status_code == 200 and "abc123" in resp.text
