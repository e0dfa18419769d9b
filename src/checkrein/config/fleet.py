"""The sections a gateway needs to run as one replica of a fleet: `[telemetry]`, `[state]`,
`[audit.postgres]`. Each is optional; without them a gateway is one process, as before.

Values may name environment variables (``${PG_DSN}``): they are expanded where they are used,
so a config file never needs to hold the password.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["PostgresAuditSettings", "StateSettings", "TelemetrySettings"]

_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _http_url(value: str | None, what: str) -> str | None:
    if value is None or "${" in value:
        return value
    if not re.match(r"https?://[^/\s]+", value):
        raise ValueError(f"{what} must be an http:// or https:// URL (got {value!r})")
    return value.rstrip("/")


class TelemetrySettings(_Strict):
    otlp_endpoint: str | None = None
    """OTLP/HTTP collector base URL, e.g. ``http://127.0.0.1:4318``: spans go to ``/v1/traces`` and
    metrics to ``/v1/metrics``. Unset: no OpenTelemetry export (``/metrics`` still works)."""
    service_name: str = "checkrein"
    """``service.name`` of the exported resource."""
    metrics_interval_s: float = Field(10.0, gt=0, le=3600)
    """How often metrics are pushed over OTLP."""
    step_timing: bool = True
    """Observe each pipeline step's self time (``checkrein_step_duration_seconds``)."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return _http_url(v, "otlp_endpoint")


class StateSettings(_Strict):
    url: str | None = None
    """``redis://HOST:PORT/DB`` (or ``rediss://``, ``unix://``): budgets, approval grants, HTTP
    sessions and flow state shared by every replica. Unset: all in process."""
    key_prefix: str = Field("checkrein:", min_length=1, max_length=64)
    """Prefix of every key, so several fleets can share one Redis."""
    timeout_s: float = Field(0.5, gt=0, le=30)
    """A state operation slower than this counts as the backend being unavailable."""
    on_unavailable: Literal["deny", "local"] = "deny"
    """``deny``: calls that need shared state are refused (``state.unavailable``) while Redis is
    down. ``local``: fall back to this replica's in-process state, audited on every use."""

    @field_validator("url")
    @classmethod
    def _scheme(cls, v: str | None) -> str | None:
        if v is not None and "${" not in v and not re.match(r"(rediss?|unix)://", v):
            raise ValueError(f"[state] url must start with redis://, rediss:// or unix:// (got {v!r})")
        return v


class PostgresAuditSettings(_Strict):
    dsn: str = Field(min_length=1)
    """``postgresql://USER:PASS@HOST:PORT/DB`` (or ``${PG_DSN}``)."""
    table: str = "checkrein_audit_events"
    """Table the events are shipped to (created when missing)."""
    batch_max: int = Field(500, ge=1, le=100_000)
    """Events per INSERT transaction."""
    poll_interval_s: float = Field(0.2, gt=0, le=60)
    """How often the shipper looks for new lines when it has caught up."""
    retry_interval_s: float = Field(1.0, gt=0, le=600)
    """How long the shipper waits after Postgres failed before trying again."""

    @field_validator("table")
    @classmethod
    def _ident(cls, v: str) -> str:
        if not _IDENT.match(v):
            raise ValueError("table must be a lowercase SQL identifier (a-z, 0-9, _)")
        return v
