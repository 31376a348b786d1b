"""Discourse assistant, unit level: signature, text extraction, reply composition, the HTTP client.

The client tests talk to the fake forum over real HTTP (tests/fakediscourse.py).
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from bot.discourse import (
    HEADER,
    AmbiguousWrite,
    DiscourseClient,
    DiscourseError,
    DiscourseOptions,
    RateLimited,
    ask_line,
    compose_reply,
    cooked_to_text,
    post_text,
    read_marker,
    strip_quotes,
    verify_signature,
)
from bot.settings import SettingsError
from estimator import Diagnosis

try:
    from fakediscourse import SEED_POST, FakeDiscourse, cook, fake  # noqa: F401
except ImportError:  # tests/ imported as a package
    from tests.fakediscourse import SEED_POST, FakeDiscourse, cook, fake  # noqa: F401

FAST = DiscourseOptions(request_interval=0, backoff_base=0.01, backoff_cap=0.05, max_wait=5.0, timeout=10)


@pytest.fixture
def client(fake):
    c = DiscourseClient(fake.url, fake.api_key, fake.api_username, options=FAST)
    yield c
    c.close()


# -- webhook signature -------------------------------------------------------------------------

def test_signature_known_answer_from_discourse_spec():
    # Discourse's own spec (emit_web_hook_event_spec.rb, integrations.md §2.4): this secret and
    # this 13-byte body give exactly this header.
    secret, body = "my_lovely_secret_for_web_hook", b'{"ping":"OK"}'
    header = "sha256=162f107f6b5022353274eb1a7197885cfd35744d8d08e5bcea025d309386b7d6"
    assert verify_signature(secret, body, header)
    assert not verify_signature(secret, body + b" ", header)          # the raw bytes, not re-serialised JSON
    assert not verify_signature("another secret", body, header)
    assert not verify_signature(secret, body, header.removeprefix("sha256="))  # prefix required
    assert not verify_signature(secret, body, None)
    assert not verify_signature("", body, header)                       # no secret: nothing verifies


# -- text: raw, quotes, cooked -----------------------------------------------------------------

def test_strip_quotes_removes_nested_quote_blocks_and_keeps_the_rest():
    raw = ('Before\n[quote="bob, post:1, topic:7"]outer [quote="carol"]inner[/quote] still outer[/quote]\n'
           "After [QUOTE]shouting quote[/QUOTE] end")
    assert strip_quotes(raw) == "Before\n\nAfter  end"


def test_strip_quotes_leaves_unclosed_and_lookalike_tags():
    assert strip_quotes("a [quote] never closed") == "a [quote] never closed"
    assert strip_quotes("[quotes] are not quotes [/quote]") == "[quotes] are not quotes [/quote]"


def test_cooked_to_text_drops_quote_asides_and_unescapes():
    cooked = ('<p>Mine: max seq len (10) &gt; KV (5)</p>\n'
              '<aside class="quote no-group" data-username="bob"><div class="title">bob:</div>'
              "<blockquote><p>his error</p></blockquote></aside>\n"
              "<pre><code>line one\nline &amp; two</code></pre>")
    text = cooked_to_text(cooked)
    assert "Mine: max seq len (10) > KV (5)" in text
    assert "line one\nline & two" in text
    assert "his error" not in text and "bob:" not in text


def test_post_text_prefers_raw_and_falls_back_to_cooked():
    raw = '[quote="bob"]quoted[/quote]own words'
    assert post_text({"raw": raw, "cooked": "<p>ignored</p>"}) == "own words"
    assert post_text({"cooked": cook(raw)}) == "own words"
    assert post_text({}) is None


def test_fake_cooker_quote_round_trip():
    # The fake forum's cooker produces the markup the fallback parser must skip.
    cooked = cook('[quote="bob, post:1, topic:2"]\nsecret error\n[/quote]\nhello')
    assert '<aside class="quote' in cooked and cooked_to_text(cooked) == "hello"


# -- reply composition ---------------------------------------------------------------------------

def _diag(**kw) -> Diagnosis:
    base = {"error_kind": "kv_capacity_v0", "summary": "KV cache holds 73,792 tokens; use `--max-model-len 73792`.",
            "specific": True}
    return Diagnosis(**{**base, **kw})


def test_reply_says_it_is_automated_and_how_to_reach_a_human():
    text = compose_reply(_diag(), {"answered": 5, "version": 1, "sig": "abc"})
    assert text.startswith(HEADER)
    assert "automated assistant" in text
    assert "To reach a human" in text
    assert "--max-model-len 73792" in text
    assert read_marker(text) == {"p": 5, "v": 1, "s": "abc"}


def test_ask_line_names_only_what_is_missing():
    # facts say null for what the paste did not state (design.md §4)
    only_model = ask_line(_diag(facts={"model": None, "gpu": "RTX A6000"}))
    assert only_model is not None and "model id" in only_model and "GPU" not in only_model
    both = ask_line(_diag(facts={"model": None, "gpu": None}))
    assert both is not None and "model id" in both and "GPU" in both and both.count("\n") == 0
    assert ask_line(_diag(facts={"model": "Qwen/Qwen2.5-14B-Instruct-1M", "gpu": "RTX A6000"})) is None
    # the estimator's own `missing` entries count too
    assert "GPU" in (ask_line(_diag(missing=["the GPU (`nvidia-smi` output)"])) or "")
    # ...but max_model_len is not "the model"
    assert ask_line(_diag(missing=["max_model_len"])) is None


def test_ask_line_not_repeated_when_the_rendered_reply_already_asks():
    d = _diag(facts={"model": None}, missing=["the model id (your `vllm serve …` command)"])
    body = "...\n**To be more precise, paste:** the model id (your `vllm serve …` command)."
    assert ask_line(d, body) is None
    assert ask_line(d, "a reply that does not ask") is not None


def test_options_from_env_parses_and_rejects():
    o = DiscourseOptions.from_env({"DISCOURSE_IGNORE_USERS": "CI-Bot, helper ", "DISCOURSE_POLL_INTERVAL": "60",
                                   "DISCOURSE_MAX_REPLIES_PER_HOUR": "5", "DISCOURSE_MAX_POST_AGE_HOURS": "2"})
    assert o.ignore_users == ("ci-bot", "helper")
    assert (o.poll_interval, o.max_replies_per_hour, o.max_post_age) == (60.0, 5, 7200.0)
    with pytest.raises(SettingsError, match="DISCOURSE_POLL_INTERVAL"):
        DiscourseOptions.from_env({"DISCOURSE_POLL_INTERVAL": "soon"})
    with pytest.raises(SettingsError, match="DISCOURSE_MAX_REPLIES_PER_HOUR"):
        DiscourseOptions.from_env({"DISCOURSE_MAX_REPLIES_PER_HOUR": "-1"})


# -- the HTTP client against the fake forum ----------------------------------------------------

def test_client_sends_api_key_and_username(fake, client):
    fake.create_topic("alice", "t", SEED_POST)
    assert [p["id"] for p in client.latest_posts()] == [1]
    sent = fake.requests[-1].headers
    assert sent["Api-Key"] == fake.api_key and sent["Api-Username"] == fake.api_username
    wrong = DiscourseClient(fake.url, "bad-key", fake.api_username, options=FAST)
    with pytest.raises(DiscourseError) as err:
        wrong.latest_posts()
    wrong.close()
    assert err.value.status == 403


def test_client_waits_out_429_retry_after(fake, client):
    fake.create_topic("alice", "t", "hello")
    fake.fail("GET", "/posts.json", "429", retry_after="1")
    assert len(client.latest_posts()) == 1
    first, second = fake.requests_to("GET", "/posts.json")
    assert second.at - first.at >= 0.95  # Retry-After: 1 second, honoured


def test_client_waits_out_429_extras_wait_seconds(fake, client):
    # No Retry-After header: Discourse's JSON body says extras.wait_seconds.
    fake.create_topic("alice", "t", "hello")
    fake.fail("POST", "/posts.json", "429", wait_seconds=1)
    created = client.create_post(1, "a reply", reply_to_post_number=1)
    assert created["post_number"] == 2
    first, second = fake.requests_to("POST", "/posts.json")
    assert second.at - first.at >= 0.95
    assert len(fake.our_posts()) == 1


def test_client_gives_up_on_429_longer_than_max_wait(fake):
    fake.fail("GET", "/posts.json", "429", retry_after="3600")
    c = DiscourseClient(fake.url, fake.api_key, fake.api_username, options=replace(FAST, max_wait=2))
    t0 = time.monotonic()
    with pytest.raises(RateLimited):
        c.latest_posts()
    c.close()
    assert time.monotonic() - t0 < 2  # did not sit out the hour


def test_client_retries_5xx_and_dropped_reads_with_bounded_attempts(fake, client):
    fake.create_topic("alice", "t", "hello")
    fake.fail("GET", "/t/1.json", "503", times=2)
    assert client.get_topic(1)["id"] == 1
    assert len(fake.requests_to("GET", "/t/1.json")) == 3
    fake.fail("GET", "/posts/1.json", "drop_before")
    assert client.get_post(1)["id"] == 1
    fake.fail("GET", "/posts/1.json", "500", times=FAST.max_attempts)
    with pytest.raises(DiscourseError) as err:
        client.get_post(1)
    assert err.value.status == 500


def test_client_never_resends_a_post_that_may_have_landed(fake, client):
    fake.create_topic("alice", "t", "hello")
    fake.fail("POST", "/posts.json", "drop_after")
    with pytest.raises(AmbiguousWrite):
        client.create_post(1, "a reply")
    assert len(fake.requests_to("POST", "/posts.json")) == 1
    assert len(fake.our_posts()) == 1  # it did land: resending would have doubled it
    fake.fail("POST", "/posts.json", "502")
    with pytest.raises(AmbiguousWrite):
        client.create_post(1, "another")
    assert len(fake.requests_to("POST", "/posts.json")) == 2


def test_client_edit_and_topic_posts_beyond_first_chunk(fake, client):
    topic = fake.create_topic("alice", "t", "first")
    for i in range(30):
        fake.reply(topic["topic_id"], "bob", f"reply {i}")
    mine = client.create_post(topic["topic_id"], "ours")
    _, posts = client.topic_posts(topic["topic_id"])
    assert len(posts) == 32 and posts[-1]["id"] == mine["id"]  # 20 from /t/{id}.json + 12 by post_ids[]
    edited = client.edit_post(mine["id"], "ours, edited")
    assert edited["version"] == 2 and fake.posts[mine["id"]]["raw"] == "ours, edited"
