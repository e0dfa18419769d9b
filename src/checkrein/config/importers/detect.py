"""Which kind of config a file is, from its name and its content."""

from __future__ import annotations

import tomllib
from pathlib import PurePath
from typing import Literal

from checkrein.errors import ConfigError

__all__ = ["ConfigKind", "detect_kind"]

ConfigKind = Literal["claude", "codex", "harbor", "harbor-judge", "checkrein"]
"""What `lint` can read: the three client formats, a Harbor Reward Kit judge file, checkrein's own."""


def detect_kind(path: str, text: str) -> ConfigKind:
    """Guess the kind of ``text`` (read from ``path``). Raises ``ConfigError`` when it is none
    of the known kinds, suggesting ``--format``."""
    name = PurePath(path).name.lower()
    body = text.removeprefix("\ufeff").lstrip()
    if name.endswith(".json") or body.startswith(("{", "//", "/*")):
        return "claude"
    try:
        data = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError:
        data = None
    if data is None:
        # Unreadable TOML: the file name is all there is to go by (lint will report the syntax).
        if name == "task.toml":
            return "harbor"
        if name == "config.toml" and ".codex" in PurePath(path).parts:
            return "codex"
        if "checkrein" in name:
            return "checkrein"
        raise ConfigError("cannot tell which kind of config this is; pass --format", file=path)
    if "mcp_servers" in data and "environment" not in data:
        return "codex"
    if isinstance(data.get("judge"), dict):
        return "harbor-judge"
    if any(k in data for k in ("environment", "verifier", "task", "schema_version", "steps")) or name == "task.toml":
        return "harbor"
    if any(k in data for k in ("servers", "gateway", "policy", "audit", "identities", "budgets", "approval")):
        return "checkrein"
    if name == "config.toml":
        return "codex"
    raise ConfigError("cannot tell which kind of config this is; pass --format", file=path)
