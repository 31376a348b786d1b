"""JSON structured logs, one object per line, with secrets scrubbed from every line.

Why in the formatter: whatever a log call contains (the message, its arguments, `extra=`
fields, an exception's traceback, a library's own log line), it is scrubbed after the line is
assembled, just before it is written, so no code path can leak a token. Two scrubs:
- the configured secret values (`Settings.secrets()`: bot tokens, signing/webhook secrets,
  API keys, HF token), as written and as JSON-escaped;
- token shapes, for secrets we were not told about (a user's pasted hf_… token, a Slack xox…
  token, an sk-… key, an Authorization: Bearer header).

Use: `configure_logging(settings)` once at start (the server does it); then plain
`logging.getLogger(__name__).info("replied", extra={"surface": "slack", "channel": c})`.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
from collections.abc import Iterable
from typing import IO

from estimator.render import SECRET_SHAPES

REDACTED = "[REDACTED]"

# Token shapes (hf_…, xox…, sk-…, Bearer …): the estimator's reply redaction pattern, one source.
_TOKEN_SHAPES = SECRET_SHAPES
_REGEX_TIMEOUT_S = 0.25

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class Redactor:
    """Replaces known secret values and token shapes in a string."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            forms.add(secret)
            forms.add(json.dumps(secret)[1:-1])  # as it appears inside a JSON string
        # Longest first so a secret containing another is replaced whole.
        self._secrets = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        try:
            return _TOKEN_SHAPES.sub(REDACTED, text, timeout=_REGEX_TIMEOUT_S)
        except TimeoutError:
            return "[log line withheld: could not be scrubbed in time]"


class JsonFormatter(logging.Formatter):
    """{"ts", "level", "logger", "msg", ...extra fields, "exc"?} on one line, scrubbed."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or Redactor()

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": _dt.datetime.fromtimestamp(record.created, _dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_") and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        line = json.dumps(entry, default=str, ensure_ascii=False)
        return self.redactor(line)


_HANDLER_MARK = "_kvdoctor_handler"


def configure_logging(secrets: Iterable[str] = (), level: str | int = "INFO",
                      stream: IO[str] | None = None) -> logging.Handler:
    """Send every logger's records (ours, uvicorn's, libraries') as scrubbed JSON to `stream`.

    Replaces a handler an earlier call installed (tests call it more than once); leaves other
    handlers alone. Returns the handler.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(Redactor(secrets)))
    setattr(handler, _HANDLER_MARK, True)
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    logging.getLogger("kvdoctor").setLevel(logging.NOTSET)  # the root level governs our loggers
    # uvicorn's loggers: no handlers of their own, so their lines go through ours.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    # httpx logs every request URL at INFO; URLs can carry tokens in query strings.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    return handler
