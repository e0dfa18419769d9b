"""The `[audit]` section."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AuditSettings"]


class AuditSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dir: str | None = None
    """Directory of the chained JSONL segments and the SQLite index; relative to the config file."""
    durability: Literal["batch", "durable"] = "batch"
    on_failure: Literal["deny", "allow"] = "deny"
    checkpoint_every: int = Field(1000, ge=1)
    checkpoint_interval_s: float = Field(60.0, gt=0)
    segment_max_bytes: int = Field(64 * 1024 * 1024, ge=4096)
    signing_key: str | None = None
    """Path of an Ed25519 private key (PEM) written by `checkrein audit keygen`."""
    sqlite: bool = True
    preview_chars: int = Field(512, ge=0, le=65_536)
