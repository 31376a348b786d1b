"""Bot configuration from environment variables, validated once at start-up.

Why one object: every surface (Slack, Discourse, web) and every replica must read the same
settings the same way, and a misconfiguration must fail at start with one clear sentence,
not at the first event. Secrets are kept out of `repr()` so they never reach a log line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from estimator.errors import KvdoctorError


class SettingsError(KvdoctorError):
    """A setting is missing or malformed; the message names the variable."""


def _bool(value: str | None, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    # Slack
    slack_bot_token: str | None = field(default=None, repr=False)
    slack_signing_secret: str | None = field(default=None, repr=False)
    slack_app_token: str | None = field(default=None, repr=False)
    slack_client_id: str | None = None
    slack_client_secret: str | None = field(default=None, repr=False)
    slack_api_url: str = "https://slack.com/api/"
    slack_auto_reply_channels: tuple[str, ...] = ()
    # Discourse
    discourse_url: str | None = None
    discourse_api_key: str | None = field(default=None, repr=False)
    discourse_api_username: str | None = None
    discourse_webhook_secret: str | None = field(default=None, repr=False)
    discourse_categories: tuple[str, ...] = ()
    discourse_dry_run: bool = False
    # Estimator
    hf_token: str | None = field(default=None, repr=False)
    offline: bool = False
    hub_timeout: float = 5.0
    workers: int = 4
    # Server and web page (bot/server.py, bot/web.py)
    host: str = "127.0.0.1"
    port: int = 8080
    web_enabled: bool = True
    max_body_bytes: int = 1_048_576
    rate_limit_per_minute: int = 30
    forwarded_allow_ips: str = "127.0.0.1"
    log_level: str = "INFO"

    @property
    def slack_enabled(self) -> bool:
        return bool(self.slack_signing_secret)

    @property
    def slack_oauth_enabled(self) -> bool:
        return bool(self.slack_client_id and self.slack_client_secret)

    @property
    def discourse_enabled(self) -> bool:
        return bool(self.discourse_url)

    def secrets(self) -> list[str]:
        """Values that must never be logged (used by the log redaction filter)."""
        return [
            str(getattr(self, f.name))
            for f in fields(self)
            if not f.repr and getattr(self, f.name)
        ]

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env

        def csv(name: str) -> tuple[str, ...]:
            return tuple(x.strip() for x in (e.get(name) or "").split(",") if x.strip())

        try:
            hub_timeout = float(e.get("KVDOCTOR_HUB_TIMEOUT") or 5.0)
            workers = int(e.get("KVDOCTOR_WORKERS") or 4)
        except ValueError as exc:
            raise SettingsError(f"KVDOCTOR_HUB_TIMEOUT / KVDOCTOR_WORKERS must be numbers ({exc})") from None

        def integer(name: str, default: int) -> int:
            raw = e.get(name)
            try:
                return int(raw) if raw not in (None, "") else default
            except ValueError:
                raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
        settings = cls(
            database_url=e.get("KVDOCTOR_DATABASE_URL") or None,
            slack_bot_token=e.get("SLACK_BOT_TOKEN") or None,
            slack_signing_secret=e.get("SLACK_SIGNING_SECRET") or None,
            slack_app_token=e.get("SLACK_APP_TOKEN") or None,
            slack_client_id=e.get("SLACK_CLIENT_ID") or None,
            slack_client_secret=e.get("SLACK_CLIENT_SECRET") or None,
            slack_api_url=e.get("SLACK_API_URL") or "https://slack.com/api/",
            slack_auto_reply_channels=csv("SLACK_AUTO_REPLY_CHANNELS"),
            discourse_url=(e.get("DISCOURSE_URL") or "").rstrip("/") or None,
            discourse_api_key=e.get("DISCOURSE_API_KEY") or None,
            discourse_api_username=e.get("DISCOURSE_API_USERNAME") or None,
            discourse_webhook_secret=e.get("DISCOURSE_WEBHOOK_SECRET") or None,
            discourse_categories=csv("DISCOURSE_CATEGORIES"),
            discourse_dry_run=_bool(e.get("DISCOURSE_DRY_RUN")),
            hf_token=e.get("HF_TOKEN") or None,
            offline=_bool(e.get("KVDOCTOR_OFFLINE")) or _bool(e.get("HF_HUB_OFFLINE")),
            hub_timeout=hub_timeout,
            workers=max(1, workers),
            host=e.get("KVDOCTOR_HOST") or "127.0.0.1",
            port=integer("KVDOCTOR_PORT", 8080),
            web_enabled=_bool(e.get("KVDOCTOR_WEB"), default=True),
            max_body_bytes=integer("KVDOCTOR_MAX_BODY_BYTES", 1_048_576),
            rate_limit_per_minute=integer("KVDOCTOR_RATE_LIMIT", 30),
            forwarded_allow_ips=e.get("KVDOCTOR_FORWARDED_ALLOW_IPS") or "127.0.0.1",
            log_level=(e.get("KVDOCTOR_LOG_LEVEL") or "INFO").upper(),
        )
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.slack_enabled and not (self.slack_bot_token or self.slack_oauth_enabled):
            raise SettingsError(
                "SLACK_SIGNING_SECRET is set but neither SLACK_BOT_TOKEN nor "
                "SLACK_CLIENT_ID/SLACK_CLIENT_SECRET (OAuth) is: set one of them."
            )
        if self.discourse_enabled and not (self.discourse_api_key and self.discourse_api_username):
            raise SettingsError("DISCOURSE_URL is set: DISCOURSE_API_KEY and DISCOURSE_API_USERNAME are required too.")
        if not self.slack_api_url.startswith(("http://", "https://")):
            raise SettingsError(f"SLACK_API_URL must be an http(s) URL, got {self.slack_api_url!r}")
        if not 0 < self.port < 65536:
            raise SettingsError(f"KVDOCTOR_PORT must be a TCP port (1-65535), got {self.port}")
        if self.max_body_bytes < 1024:
            raise SettingsError(f"KVDOCTOR_MAX_BODY_BYTES must be at least 1024, got {self.max_body_bytes}")
        if self.rate_limit_per_minute < 0:
            raise SettingsError(f"KVDOCTOR_RATE_LIMIT must be 0 (off) or a positive number per minute, got {self.rate_limit_per_minute}")
        if self.log_level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise SettingsError(f"KVDOCTOR_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {self.log_level!r}")
