"""Socket Mode, OAuth (multi-workspace) and start-up validation of the Slack bot."""

from __future__ import annotations

import json
import re

import pytest
from fakeslack import AppServer, FakeSlack, SlackSender, _no_slack_env, fake  # noqa: F401
from slack_bolt import BoltRequest
from test_slack import SECRET, assert_seed_answer, make_settings, mention, seed_text

from bot.server import create_app
from bot.settings import SettingsError
from bot.slack import SlackBot, find_bot, run_socket_mode, validate_slack_settings
from bot.store import Store


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'kvd.sqlite'}"


# -- Socket Mode ---------------------------------------------------------------------------------
def test_socket_mode_dispatch_answers_once_across_retries(fake, db):
    """Socket Mode envelopes go through the same Bolt app (no signature check); a redelivery
    carries retry_attempt, which Bolt maps to x-slack-retry-num (integrations.md §1.7)."""
    settings = make_settings(fake, db, slack_signing_secret=None, slack_app_token="xapp-1-test")
    store = Store(db)
    bot = SlackBot(settings, store, socket_mode=True)
    try:
        body = json.loads(SlackSender("http://unused", "x").event_body(
            mention(seed_text(), ts="1712000300.000100"), event_id="EvSOCKET1"))
        first = bot.app.dispatch(BoltRequest(body=body, mode="socket_mode"))
        again = bot.app.dispatch(BoltRequest(body=body, mode="socket_mode", headers={"x-slack-retry-num": "1"}))
        assert first.status == again.status == 200
        fake.wait_for("chat.postMessage")
        assert bot.pool.wait_idle(10)
        (post,) = fake.calls("chat.postMessage")
        assert post.body["thread_ts"] == "1712000300.000100"
        assert_seed_answer(post)
    finally:
        bot.close()
        store.dispose()


def test_socket_mode_over_a_real_websocket(fake, db):
    """`kvdoctor slack --socket-mode`: apps.connections.open on SLACK_API_URL with the xapp-
    token, a WebSocket to the URL it returns, envelopes acked, one threaded reply."""
    settings = make_settings(fake, db, slack_signing_secret=None, slack_app_token="xapp-1-test")
    store = Store(db)
    handler = run_socket_mode(settings, store=store, block=False)
    try:
        opened = fake.wait_for("apps.connections.open")[0]
        assert opened.headers["authorization"] == "Bearer xapp-1-test"
        body = json.loads(SlackSender("http://unused", "x").event_body(
            mention(seed_text(), ts="1712000310.000100"), event_id="EvSOCKET2"))
        for attempt, envelope_id in ((0, "env-1"), (1, "env-2")):  # a delivery and its redelivery
            fake.socket_send({"envelope_id": envelope_id, "type": "events_api", "payload": body,
                              "accept_response_payload": False, "retry_attempt": attempt,
                              "retry_reason": "timeout" if attempt else ""})
        acks = fake.wait_for("socket_ack", 2)
        assert {a.body["envelope_id"] for a in acks} == {"env-1", "env-2"}
        post = fake.wait_for("chat.postMessage")[0]
        assert handler.bot.pool.wait_idle(10)
        assert len(fake.calls("chat.postMessage")) == 1
        assert post.body["thread_ts"] == "1712000310.000100"
        assert_seed_answer(post)
    finally:
        handler.close()
        handler.bot.close()
        store.dispose()


# -- start-up validation ---------------------------------------------------------------------------
def test_bad_configuration_fails_with_a_clear_message_and_no_network(fake, db):
    store = Store(db)
    try:
        with pytest.raises(SettingsError, match="SLACK_BOT_TOKEN must be a bot token"):
            SlackBot(make_settings(fake, db, slack_bot_token="xoxp-user-token"), store)
        with pytest.raises(SettingsError, match="SLACK_APP_TOKEN"):
            validate_slack_settings(make_settings(fake, db), socket_mode=True)
        with pytest.raises(SettingsError, match="SLACK_CLIENT_ID and SLACK_CLIENT_SECRET"):
            validate_slack_settings(make_settings(fake, db, slack_client_id="1.2"))
        assert fake.calls() == []  # validation happens before any network call
        # a token Slack refuses: exactly one auth.test, then a sentence naming it
        with pytest.raises(SettingsError, match="auth.test"):
            SlackBot(make_settings(fake, db, slack_bot_token="xoxb-revoked"), store)
        assert [c.method for c in fake.calls()] == ["auth.test"]
    finally:
        store.dispose()


def test_unreachable_slack_api_url_fails_at_start(db):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = FakeSlack()  # not started: only used for its settings shape
    dead.api_url = f"http://127.0.0.1:{port}/api/"
    store = Store(db)
    try:
        with pytest.raises(SettingsError, match="SLACK_API_URL|auth.test"):
            SlackBot(make_settings(dead, db), store)
    finally:
        store.dispose()
        dead.server.server_close()


# -- OAuth -----------------------------------------------------------------------------------------
def test_oauth_install_then_answer_with_the_installed_token(fake, db):
    fake.valid_tokens.add("xoxb-oauth-token")
    settings = make_settings(fake, db, slack_bot_token=None, slack_client_id="111.222",
                             slack_client_secret="oauth-secret")
    store = Store(db)
    app = create_app(settings, store)
    assert fake.calls() == []  # OAuth mode: no token to check at start, so no network at all
    server = AppServer(app).start()
    slack = SlackSender(server.url, SECRET)
    try:
        page = slack.http.get("/slack/install")
        assert page.status_code == 200
        state = re.search(r"state=([\w-]+)", page.text).group(1)
        assert "client_id=111.222" in page.text
        cookie = page.headers["set-cookie"].split(";")[0]
        done = slack.http.get("/slack/oauth_redirect", params={"code": "c0de", "state": state},
                              headers={"Cookie": cookie})
        assert done.status_code == 200
        assert fake.calls("oauth.v2.access")[0].body["code"] == "c0de"
        slack.event(mention(seed_text(), ts="1712000400.000100"), team="T0OAUTH")
        post = fake.wait_for("chat.postMessage")[0]
        assert post.headers["authorization"] == "Bearer xoxb-oauth-token"
        assert_seed_answer(post)
    finally:
        slack.close()
        server.stop()
        find_bot(app).close()
        store.dispose()


def test_manifest_matches_the_code():
    """deploy/slack-manifest.yaml is what an admin pastes: its scopes, events, command and
    shortcut must be the ones bot/slack.py listens to."""
    from pathlib import Path

    import yaml

    from bot import slack

    manifest = yaml.safe_load((Path(__file__).resolve().parents[1] / "deploy" / "slack-manifest.yaml").read_text())
    assert manifest["oauth_config"]["scopes"]["bot"] == slack.BOT_SCOPES
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == [slack.COMMAND]
    assert [s["callback_id"] for s in manifest["features"]["shortcuts"]] == [slack.SHORTCUT_ID]
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    assert "app_mention" in events and "message.im" in events and "message.channels" in events
    for url in (manifest["settings"]["event_subscriptions"]["request_url"],
                manifest["settings"]["interactivity"]["request_url"]):
        assert url.endswith(slack.EVENTS_PATH)
    assert manifest["oauth_config"]["redirect_urls"][0].endswith(slack.REDIRECT_PATH)
