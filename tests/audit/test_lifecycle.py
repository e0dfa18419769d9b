"""Lifecycle events: names, the config digest, and redaction of their fields."""

from __future__ import annotations

import json
from pathlib import Path

from checkrein.audit import LifecycleRecord
from checkrein.audit.lifecycle import GATEWAY_START, config_digest, gateway_start_fields
from checkrein.config import parse_config

from .helpers import read_lines, write_log


def test_config_digest_is_stable_and_ignores_the_file_path() -> None:
    a = parse_config("[audit]\ndir = 'x'\n", source="/a/checkrein.toml")
    b = parse_config("[audit]\ndir = 'x'\n", source="/b/checkrein.toml")
    c = parse_config("[audit]\ndir = 'y'\n", source="/a/checkrein.toml")
    assert config_digest(a) == config_digest(b) != config_digest(c)


def test_lifecycle_fields_are_redacted_and_recorded(tmp_path: Path) -> None:
    cfg = parse_config("", source=str(tmp_path / "checkrein.toml"))
    fields = gateway_start_fields(cfg, "sha256:abc", env={"API_TOKEN": "tok-very-secret-1"})
    d = tmp_path / "audit"
    write_log(d, [LifecycleRecord(GATEWAY_START, fields), LifecycleRecord("Upstream Crash!", {"server": "fs"})])
    events = [json.loads(x) for x in read_lines(d)]
    start = next(e for e in events if e.get("event") == "gateway.start")
    assert start["fields"]["config_digest"] == config_digest(cfg)
    assert start["fields"]["env"]["API_TOKEN"] == "[REDACTED]"
    assert "/fields/env/API_TOKEN" in start["redactions"]
    assert any(e.get("event") == "upstream_crash_" for e in events)  # names are normalized, never rejected
    assert b"tok-very-secret-1" not in b"".join(read_lines(d))
