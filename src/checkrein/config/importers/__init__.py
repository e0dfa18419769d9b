"""Read and write the MCP server configs of Claude Code (`.mcp.json`), Codex (`config.toml`) and
Harbor (`task.toml`), and turn them into checkrein configs.

    read_client_config(path, fmt=None) -> ImportResult      servers, moved secrets, notes
    render_checkrein_config(result) -> str                   commented, default-deny, loads
    render_servers(fmt, servers) -> str                      servers in a client's own shape
    emit_client_config(fmt, config=...) -> str               the one `checkrein` entry for a client
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from checkrein.errors import ConfigError

from .checkrein_toml import render_checkrein_config, write_atomic
from .claude import read_claude, render_claude
from .codex import read_codex, render_codex
from .detect import ConfigKind, detect_kind
from .emit import EmitTransport, checkrein_entry, emit_client_config
from .harbor import read_harbor, render_harbor
from .model import ClientFormat, ImportedServer, ImportNote, ImportResult, MovedSecret

__all__ = [
    "MAX_CONFIG_BYTES",
    "ClientFormat",
    "ConfigKind",
    "EmitTransport",
    "ImportNote",
    "ImportResult",
    "ImportedServer",
    "MovedSecret",
    "checkrein_entry",
    "detect_kind",
    "emit_client_config",
    "read_client_config",
    "read_client_text",
    "read_config_text",
    "render_checkrein_config",
    "render_servers",
    "write_atomic",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Configs larger than this are refused unread: no client config is that big, and reading an
unbounded file into memory is how a linter is made to fall over."""


def read_config_text(path: str | Path) -> str:
    """The text of the config at ``path`` (UTF-8, BOM kept for the readers to report). Raises
    ``ConfigError`` if it cannot be read, is larger than ``MAX_CONFIG_BYTES`` or is not UTF-8."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(p)) from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"file is larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB; refusing to read it", file=str(p),
            code="config.too_large",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError("not valid UTF-8", file=str(p), line=line) from exc


def read_client_text(text: str, fmt: ClientFormat, *, source: str) -> ImportResult:
    """Servers of ``text`` read as ``fmt``; raises ``ConfigError``."""
    if fmt == "claude":
        return read_claude(text, source=source)
    if fmt == "codex":
        return read_codex(text, source=source)
    return read_harbor(text, source=source)


def read_client_config(path: str | Path, fmt: ClientFormat | None = None) -> ImportResult:
    """Servers of the client config at ``path``, its format detected when ``fmt`` is ``None``.

    Raises ``ConfigError`` for unreadable, oversized or malformed files and for files that are
    not one of the three client formats."""
    text = read_config_text(path)
    if fmt is None:
        kind = detect_kind(str(path), text)
        if kind == "claude" or kind == "codex" or kind == "harbor":
            fmt = kind
        else:
            raise ConfigError(f"this looks like a {kind} config, not a client config to import", file=str(path))
    return read_client_text(text, fmt, source=str(path))


def render_servers(fmt: ClientFormat, servers: Iterable[ImportedServer]) -> str:
    """``servers`` written in client format ``fmt``."""
    if fmt == "claude":
        return render_claude(servers)
    if fmt == "codex":
        return render_codex(servers)
    return render_harbor(servers)
