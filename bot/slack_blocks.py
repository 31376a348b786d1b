"""Fit a rendered reply into Slack's message limits; say when detail must go into a file.

Why here and not in the estimator: the estimator renders the whole answer (`render_slack`);
whether it fits is a property of the Slack transport, and Slack rejects (`invalid_blocks`,
`msg_blocks_too_long`) or silently truncates (text above 40,000 chars) what does not. So the
bot enforces the limits itself, on whatever the renderer produced, and moves what does not fit
into a snippet in the thread (files.uploadV2).

Limits (../shared/docs/integrations.md §1.5; slack_sdk/models/blocks/blocks.py):
- 50 blocks per message; section text 3,000 chars; section fields 10 × 2,000;
- header text 150; `markdown` blocks 12,000 chars in total; message `text` 40,000;
- block payloads much above ~13k chars fail with `msg_blocks_too_long` (observed, undocumented),
  so the visible blocks keep to a 12,000-char budget.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 2000
MAX_MARKDOWN_TOTAL = 12000
MAX_MESSAGE_TEXT = 40000
BLOCK_TEXT_BUDGET = 12000
FENCE = "```"
ELLIPSIS = "…"


@dataclass
class FittedMessage:
    """A message Slack accepts. `overflow` is True when something was cut or left out, i.e. the
    caller must post the full detail as a file in the thread."""

    text: str
    blocks: list[dict] = field(default_factory=list)
    overflow: bool = False


def escape_mrkdwn(text: str) -> str:
    """Slack mrkdwn escaping: only &, <, > (https://api.slack.com/docs/attachments/ "escaping")."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def truncate(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` chars, at a line or word boundary when one is near."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(ELLIPSIS))]
    for sep in ("\n", " "):
        pos = cut.rfind(sep)
        if pos >= len(cut) * 0.6:
            cut = cut[:pos]
            break
    return cut.rstrip() + ELLIPSIS


def split_mrkdwn(text: str, limit: int = MAX_SECTION_TEXT) -> list[str]:
    """Split at line boundaries into chunks of at most `limit` chars, never leaving a code fence
    open across a chunk: a cut inside ``` closes the fence and reopens it in the next chunk
    (a truncated fence renders the rest of the message as code)."""
    if len(text) <= limit:
        return [text]
    reserve = len(FENCE) + 1  # room for a closing "\n```"
    chunks: list[str] = []
    current = ""
    in_fence = False  # state at the end of `current`

    def flush() -> None:
        nonlocal current
        if current:
            chunks.append(current + ("\n" + FENCE if in_fence else ""))
            current = FENCE + "\n" if in_fence else ""

    for line in text.split("\n"):
        toggles = line.count(FENCE) % 2 == 1
        while True:
            sep = "\n" if current and current != FENCE + "\n" else ""
            room = limit - reserve - len(current) - len(sep)
            if len(line) <= room:
                current += sep + line
                break
            if current and current != FENCE + "\n":
                flush()
                continue
            # a single line longer than a chunk: cut it hard
            current += line[:room]
            line = line[room:]
            flush()
        if toggles:
            in_fence = not in_fence
    if current and current != FENCE + "\n":
        chunks.append(current + ("\n" + FENCE if in_fence else ""))
    return chunks


def _block_chars(block: dict) -> int:
    """Characters of visible text in a block (what counts toward the payload budget)."""
    total = 0
    stack: list = [block]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "text" and isinstance(value, str):
                    total += len(value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return total


def _normalise(block: dict) -> tuple[list[dict], bool]:
    """One rendered block → blocks within the per-block limits, and whether anything was lost."""
    block = copy.deepcopy(block)
    kind = block.get("type")
    lost = False
    if kind == "section":
        text = block.get("text")
        fields = block.get("fields")
        if isinstance(fields, list):
            if len(fields) > MAX_FIELDS:
                block["fields"], lost = fields[:MAX_FIELDS], True
            for f in block["fields"]:
                if isinstance(f, dict) and len(f.get("text", "")) > MAX_FIELD_TEXT:
                    f["text"], lost = truncate(f["text"], MAX_FIELD_TEXT), True
        if isinstance(text, dict) and len(text.get("text", "")) > MAX_SECTION_TEXT:
            parts = split_mrkdwn(text["text"]) if text.get("type") == "mrkdwn" else [
                text["text"][i : i + MAX_SECTION_TEXT] for i in range(0, len(text["text"]), MAX_SECTION_TEXT)
            ]
            out = []
            for i, part in enumerate(parts):
                piece = {"type": "section", "text": {**text, "text": part}}
                if i == 0:
                    piece = {**block, "text": {**text, "text": part}}
                    piece.pop("block_id", None)
                out.append(piece)
            return out, lost
        return [block], lost
    if kind == "header":
        text = block.get("text") or {}
        if len(text.get("text", "")) > MAX_HEADER_TEXT:
            text["text"], lost = truncate(text["text"], MAX_HEADER_TEXT), True
        return [block], lost
    if kind == "context":
        elements = block.get("elements") or []
        if len(elements) > MAX_CONTEXT_ELEMENTS:
            block["elements"], lost = elements[:MAX_CONTEXT_ELEMENTS], True
        for el in block["elements"]:
            if isinstance(el, dict) and len(el.get("text", "")) > MAX_CONTEXT_TEXT:
                el["text"], lost = truncate(el["text"], MAX_CONTEXT_TEXT), True
        return [block], lost
    return [block], lost


def _plain(blocks: list[dict]) -> str:
    lines = []
    for block in blocks:
        text = block.get("text")
        if isinstance(text, dict) and text.get("text"):
            lines.append(text["text"])
        elif isinstance(text, str):
            lines.append(text)
    return "\n".join(lines)


def fit_message(
    rendered: dict,
    *,
    extra_blocks: list[dict] | None = None,
    overflow_note: str | None = None,
) -> FittedMessage:
    """Fit `{"text", "blocks"}` into Slack's limits, keeping `extra_blocks` (our buttons) at the
    end. When anything is cut, a context block saying so (`overflow_note`) is added and
    `overflow` is set so the caller uploads the full text."""
    extra = list(extra_blocks or [])
    note = overflow_note or "The full explanation is in the file attached in this thread."
    note_block = {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}
    slots = MAX_BLOCKS - len(extra) - 1  # one slot kept for the note
    budget = BLOCK_TEXT_BUDGET - sum(_block_chars(b) for b in extra) - len(note)
    overflow = False
    kept: list[dict] = []
    used = 0
    markdown_used = 0
    full = False  # once one block does not fit, the rest go to the file too (no gaps)
    for raw in rendered.get("blocks") or []:
        if full:
            break
        if not isinstance(raw, dict):
            continue
        pieces, lost = _normalise(raw)
        overflow = overflow or lost
        for piece in pieces:
            size = _block_chars(piece)
            md = size if piece.get("type") == "markdown" else 0
            if len(kept) >= slots or used + size > budget or markdown_used + md > MAX_MARKDOWN_TOTAL:
                overflow = full = True
                break
            kept.append(piece)
            used += size
            markdown_used += md
    text = rendered.get("text") or _plain(kept) or "kvdoctor"
    if len(text) > MAX_MESSAGE_TEXT:
        text, overflow = truncate(text, MAX_MESSAGE_TEXT), True
    if overflow:
        kept.append(note_block)
    return FittedMessage(text=text, blocks=kept + extra, overflow=overflow)
