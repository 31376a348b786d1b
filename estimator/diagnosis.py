"""`diagnose(text)`: the one call every surface makes (Slack, Discourse, web, CLI).

PROVISIONAL: this first version only recognises the capacity errors with one regex so that the
bot surfaces can be built against the final interface; the real pipeline (paste reader →
derivation → advice → render) replaces the body of `diagnose`, not its signature.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

_CAPACITY = regex.compile(
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)"
)


@dataclass
class Diagnosis:
    """Everything a surface needs to reply: facts read, derived state, fixes, the short answer."""

    error_kind: str | None
    summary: str
    facts: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    estimate: dict | None = None
    suggestions: list[dict] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    specific: bool = False

    def to_json(self) -> dict:
        return {
            "facts": self.facts,
            "derived": self.derived,
            "diagnosis": {
                "error_kind": self.error_kind,
                "summary": self.summary,
                "suggestions": self.suggestions,
                "missing": self.missing,
                "specific": self.specific,
            },
            "estimate": self.estimate,
            "reply": self.summary,
        }


def diagnose(text: str, *, model: str | None = None, gpu: str | None = None,
             vllm_version: str | None = None, offline: bool | None = None) -> Diagnosis | None:
    """Read `text`; return None when it holds no vLLM memory problem (bots stay silent)."""
    m = _CAPACITY.search(text or "")
    if not m:
        return None
    need, cap = int(m.group(1)), int(m.group(2))
    summary = (
        f"vLLM's KV cache holds {cap:,} tokens but max_model_len is {need:,}. "
        f"Start with `--max-model-len {cap}` or lower."
    )
    return Diagnosis(
        error_kind="kv_capacity_v0",
        summary=summary,
        facts={"max_model_len": need, "error_max_tokens_in_kv": cap, "error_kind": "kv_capacity_v0"},
        suggestions=[{"flags": f"--max-model-len {cap}", "command": None, "kv_cache_tokens": cap,
                      "max_concurrency": None, "fits": True, "why": "fits the KV pool vLLM reported"}],
        specific=True,
    )


def render_markdown(diag: Diagnosis, *, flavour: str = "cli") -> str:
    """Markdown reply (flavour "discourse" may use [details] blocks)."""
    return diag.summary


def render_text(diag: Diagnosis) -> str:
    return diag.summary


def render_slack(diag: Diagnosis) -> dict:
    """{"text": fallback, "blocks": Block Kit blocks} within Slack's limits."""
    return {"text": diag.summary, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": diag.summary}}]}
