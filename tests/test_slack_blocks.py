"""Slack's message limits, enforced on whatever the renderer produced (bot/slack_blocks.py)."""

from __future__ import annotations

from bot.slack_blocks import (
    BLOCK_TEXT_BUDGET,
    MAX_BLOCKS,
    MAX_SECTION_TEXT,
    fit_message,
    split_mrkdwn,
)


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


BUTTONS = {"type": "actions", "elements": [{"type": "button", "action_id": "a", "value": "v",
                                            "text": {"type": "plain_text", "text": "ok"}}]}


def test_split_keeps_every_line_and_the_limit():
    # 70 lines of 99 chars + newline = 7,000 chars: three chunks of at most 3,000.
    text = "\n".join(f"{i:02d}" + "a" * 97 for i in range(70))
    chunks = split_mrkdwn(text)
    assert len(chunks) == 3
    assert all(len(c) <= MAX_SECTION_TEXT for c in chunks)
    assert "\n".join(chunks) == text  # cut at line boundaries only


def test_split_never_leaves_a_code_fence_open():
    body = "\n".join(f"INFO line {i:03d} " + "k" * 50 for i in range(100))  # 100 × 63 chars inside a fence
    text = "Your log:\n```\n" + body + "\n```\nThat's all."
    chunks = split_mrkdwn(text)
    assert len(chunks) >= 3
    for c in chunks:
        assert len(c) <= MAX_SECTION_TEXT
        assert c.count("```") % 2 == 0, c[:80]  # each chunk opens and closes its own fence
    # the log lines survive, in order
    lines = [ln for c in chunks for ln in c.split("\n") if ln.startswith("INFO line")]
    assert lines == body.split("\n")


def test_split_cuts_an_overlong_single_line():
    text = "x" * 7000
    chunks = split_mrkdwn(text)
    assert all(len(c) <= MAX_SECTION_TEXT for c in chunks)
    assert "".join(chunks) == text


def test_small_message_is_untouched():
    rendered = {"text": "KV cache holds 73,792 tokens", "blocks": [section("a"), section("b")]}
    fitted = fit_message(rendered, extra_blocks=[BUTTONS])
    assert not fitted.overflow
    assert fitted.blocks == [section("a"), section("b"), BUTTONS]
    assert fitted.text == "KV cache holds 73,792 tokens"


def test_too_many_blocks_keep_buttons_and_say_where_the_rest_is():
    rendered = {"text": "t", "blocks": [section(f"s{i}") for i in range(80)]}
    fitted = fit_message(rendered, extra_blocks=[BUTTONS])
    # 50 blocks = 48 rendered sections + the "full explanation in the file" note + the buttons
    assert len(fitted.blocks) == MAX_BLOCKS
    assert fitted.blocks[:48] == [section(f"s{i}") for i in range(48)]
    assert fitted.blocks[48]["type"] == "context"
    assert fitted.blocks[49] == BUTTONS
    assert fitted.overflow


def test_block_text_budget():
    # 5 sections of 2,900 chars = 14,500 > 12,000; four (11,600) fit next to the buttons and the note.
    rendered = {"text": "t", "blocks": [section(str(i) * 2900) for i in range(5)]}
    fitted = fit_message(rendered, extra_blocks=[BUTTONS])
    kept = [b for b in fitted.blocks if b["type"] == "section"]
    assert len(kept) == 4 and fitted.overflow
    assert sum(len(b["text"]["text"]) for b in kept) <= BLOCK_TEXT_BUDGET


def test_long_section_is_split_not_lost():
    text = "\n".join("y" * 99 for _ in range(50))  # 4,999 chars → two sections
    fitted = fit_message({"text": "t", "blocks": [section(text)]})
    sections = [b for b in fitted.blocks if b["type"] == "section"]
    assert len(sections) == 2 and not fitted.overflow
    assert "\n".join(b["text"]["text"] for b in sections) == text


def test_header_fields_and_text_limits():
    rendered = {
        "text": "z" * 50_000,
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "H" * 200}},
            # 12 fields (2 over-long): 10 kept, cut to 2,000 chars: 2×2,000 + 8×500 = 8,000 chars
            {"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * (2500 if i < 2 else 500)}
                                           for i in range(12)]},
        ],
    }
    fitted = fit_message(rendered)
    assert len(fitted.blocks[0]["text"]["text"]) <= 150
    fields = fitted.blocks[1]["fields"]
    assert len(fields) == 10 and all(len(f["text"]) <= 2000 for f in fields)
    assert sum(len(f["text"]) for f in fields) <= 8000
    assert len(fitted.text) <= 40_000
    assert fitted.overflow
