"""The `[audit]` section."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .fleet import PostgresAuditSettings

__all__ = ["DEFAULT_AUDIT_DIR", "AuditSettings", "WitnessSettings"]

DEFAULT_AUDIT_DIR = "checkrein-audit"
"""Where the audit goes when `[audit] dir` is not set: this directory beside the config file."""


class WitnessSettings(BaseModel):
    """`[audit.witness]`: C2SP tlog-witness submission prefixes each checkpoint is pushed to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    urls: tuple[str, ...] = ()
    quorum: int | None = Field(None, ge=0)
    """Cosignatures a checkpoint should get (default 1 when urls are set); fewer is counted."""
    timeout_s: float = Field(10.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> WitnessSettings:
        for url in self.urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"witness url {url!r} must start with http:// or https://")
        if self.quorum is not None and self.quorum > len(self.urls):
            raise ValueError(f"quorum {self.quorum} is more than the {len(self.urls)} witness url(s)")
        return self

    @property
    def needed(self) -> int:
        return self.quorum if self.quorum is not None else min(1, len(self.urls))


class AuditSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    """`false`: no audit trail at all (every start says so, and `lint` warns). There is no other
    way to turn it off."""
    dir: str | None = None
    """Directory of the chained JSONL segments and the SQLite index; relative to the config file.
    Unset: `checkrein-audit` next to the config file."""
    durability: Literal["batch", "durable"] = "batch"
    """`batch`: a call is answered once its event is queued (fsync once per batch). `durable`: only
    after its event is fsynced."""
    on_failure: Literal["deny", "allow"] = "deny"
    """What calls do while the log cannot be written. `allow` is counted and audited on every use."""
    checkpoint_every: int = Field(1000, ge=1)
    checkpoint_interval_s: float = Field(60.0, gt=0)
    segment_max_bytes: int = Field(64 * 1024 * 1024, ge=4096)
    signing_key: str | bool | None = None
    """Path of an Ed25519 private key (PEM, e.g. from `checkrein audit keygen`); unset or `true`:
    `<config stem>.audit-key` beside the config, created on first serve; `false`: unsigned."""
    origin: str | None = None
    """The C2SP checkpoint origin (and note key name); default `checkrein/<host>/<log id>`."""
    witness: WitnessSettings = WitnessSettings()
    sqlite: bool = True
    preview_chars: int = Field(512, ge=0, le=65_536)
    """Longest string kept (after redaction) in an argument preview or result summary."""
    redact_keys: tuple[str, ...] = ()
    """Extra key names (matched case-insensitively, ignoring `_-. `, as substrings) whose values are
    always masked, in addition to the built-in password/token/secret/... list."""
    max_queue: int = Field(65_536, ge=1)
    """Events waiting for the writer. When full, calls are denied (`deny`) or the event is dropped
    and counted (`allow`)."""
    batch_max: int = Field(4096, ge=1)
    group_commit_ms: float = Field(2.0, ge=0, le=1000)
    """`durable` mode's group commit: when the writer wakes for a new event it waits this long
    (bounded by a full batch) so that one fsync covers every event queued meanwhile. Not for a lone
    `durable` caller (the last fsync acknowledged no other caller), whom waiting would only delay.
    0: off. (`batch` mode uses `batch_window_ms`.)"""
    batch_window_ms: float = Field(10.0, ge=0, le=1000)
    """`batch` mode's window: a batch is written and fsynced once its oldest event has waited this
    long (or the batch is full, or the trail closes), so calls arriving one at a time share one
    write + fsync instead of paying one each. An answered call's event is on disk within this
    window plus one batch write; a crash can lose the events of that span (as `batch` always
    could lose the queued ones). 0: write as soon as the writer wakes."""
    retry_interval_s: float = Field(0.5, gt=0)
    """How often a failing writer retries."""
    close_timeout_s: float = Field(5.0, ge=0)
    """How long closing waits for a failing log to become writable before giving up (counted)."""
    postgres: PostgresAuditSettings | None = None
    """`[audit.postgres]`: ship every event to Postgres too (the local log stays the source of truth)."""
