"""Claude Code's `.mcp.json`: read its servers, write servers in its shape.

The shape (Claude Code docs, "MCP" page, project scope): ``{"mcpServers": {NAME: SERVER}}`` where
SERVER is ``{"type": "stdio", "command", "args", "env"}`` (``type`` may be omitted for stdio) or
``{"type": "http" | "sse", "url", "headers"}``. Claude expands ``${VAR}`` and ``${VAR:-default}``
in command, args, env, url and headers, so references written here keep working in Claude.
A plugin's `.mcp.json` may be "flat" (servers at the top level); both are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from checkrein.config.problems import raise_problems
from checkrein.errors import ConfigError

from .collect import ImportCollector, require_string_map, require_strings, unknown_keys
from .jsonc import key_line, read_jsonc
from .model import ImportedServer, ImportResult

__all__ = ["SERVER_KEYS", "read_claude", "render_claude"]

SERVER_KEYS = frozenset({"type", "command", "args", "env", "url", "headers", "cwd", "timeout", "oauth", "headersHelper"})
"""Keys Claude Code understands in one server entry."""


def server_table(value: Any) -> tuple[dict[str, Any], bool]:
    """The ``{name: server}`` mapping of a parsed `.mcp.json` and whether it was wrapped in
    ``mcpServers`` (``False``: flat plugin format). Raises ``ConfigError`` when there is none."""
    if not isinstance(value, dict):
        raise ConfigError("a Claude MCP config is a JSON object")
    wrapped = value.get("mcpServers")
    if isinstance(wrapped, dict):
        return wrapped, True
    if "mcpServers" in value:
        raise ConfigError("`mcpServers` must be an object of servers", key="mcpServers")
    if value and all(isinstance(v, dict) and ("command" in v or "url" in v) for v in value.values()):
        return value, False
    raise ConfigError("no `mcpServers` object found (not a Claude MCP config?)")


def read_claude(text: str, *, source: str = "<claude>") -> ImportResult:
    """Servers of a Claude `.mcp.json`. Tolerates comments, trailing commas and a BOM (use
    `checkrein lint` to see them); raises ``ConfigError`` when the JSON cannot be read at all or a
    server is malformed."""
    parsed = read_jsonc(text)
    if parsed.value is None:
        bad = next(i for i in parsed.issues if i.kind == "syntax")
        raise ConfigError(bad.message, file=source, line=bad.line)
    try:
        servers, _wrapped = server_table(parsed.value)
    except ConfigError as exc:
        raise ConfigError(exc.message, file=source, key=exc.key) from exc
    out = ImportCollector(source, "claude")
    problems: list[ConfigError] = []
    for name, spec in servers.items():
        where = f"mcpServers.{name}" if _wrapped else name
        line = key_line(parsed.text, [*(["mcpServers"] if _wrapped else []), name])
        try:
            if not isinstance(spec, dict):
                raise ConfigError("a server entry must be an object")
            _read_one(out, name, spec)
        except ConfigError as exc:
            problems.append(ConfigError(exc.detail, file=source, line=line, key=where, fix=exc.fix))
    if problems:
        raise_problems(problems, file=source)
    return out.result()


def _read_one(out: ImportCollector, name: str, spec: Mapping[str, Any]) -> None:
    kind = spec.get("type")
    unknown = unknown_keys(spec, SERVER_KEYS)
    for key, hint in unknown:
        out.note(name, f"ignored key {key!r}{hint or ' (not a Claude MCP server key)'}")
    if kind in (None, "stdio") and "command" in spec:
        if not isinstance(spec["command"], str) or not spec["command"]:
            raise ConfigError("`command` must be a non-empty string")
        if spec.get("url"):
            out.note(name, "both `command` and `url` given; Claude uses `command`, so does checkrein")
        out.add(
            name,
            transport="stdio",
            command=spec["command"],
            args=require_strings(spec.get("args", []), "`args`"),
            env=require_string_map(spec.get("env", {}), "`env`"),
            cwd=spec.get("cwd") if isinstance(spec.get("cwd"), str) else None,
        )
        return
    if kind in ("http", "sse", "streamable-http", None) and isinstance(spec.get("url"), str):
        if kind is None:
            out.note(name, "no `type` given for a URL server; read as Streamable HTTP (`\"type\": \"http\"`)")
        if "headersHelper" in spec or "oauth" in spec:
            out.note(name, "`headersHelper`/`oauth` cannot be carried over; set `headers` in checkrein instead")
        out.add(
            name,
            transport="sse" if kind == "sse" else "streamable-http",
            url=spec["url"],
            headers=require_string_map(spec.get("headers", {}), "`headers`"),
        )
        return
    if kind not in (None, "stdio", "http", "sse"):
        raise ConfigError(f"unknown server type {kind!r} (expected stdio, http or sse)")
    hints = "".join(f"; `{k}` is not a Claude key{h}" for k, h in unknown if h)
    raise ConfigError(f"a server needs `command` (stdio) or `url` (http/sse){hints}")


def server_entry(server: ImportedServer) -> dict[str, Any]:
    """One server in Claude's shape (``cwd`` and timeouts have no Claude field and are left out)."""
    if server.transport == "stdio":
        entry: dict[str, Any] = {"type": "stdio", "command": server.command, "args": list(server.args)}
        if server.env:
            entry["env"] = dict(server.env)
        return entry
    entry = {"type": "sse" if server.transport == "sse" else "http", "url": server.url}
    if server.headers:
        entry["headers"] = dict(server.headers)
    return entry


def render_claude(servers: Iterable[ImportedServer]) -> str:
    """A complete `.mcp.json` holding ``servers`` (disabled ones are left out: Claude has no switch)."""
    doc = {"mcpServers": {s.name: server_entry(s) for s in servers if s.enabled}}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
