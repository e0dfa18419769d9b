"""Codex's `config.toml`: read its `[mcp_servers.<name>]` tables, write servers in its shape.

Keys (Codex docs, "MCP" / config reference): stdio servers have ``command``, ``args``, ``env``
(literal values), ``env_vars`` (names passed through from Codex's environment) and ``cwd``;
Streamable HTTP servers have ``url``, ``bearer_token_env_var``, ``http_headers`` (literal) and
``env_http_headers`` (header -> variable name). Both have ``startup_timeout_sec`` (or
``startup_timeout_ms``), ``tool_timeout_sec``, ``enabled``, ``required``, ``enabled_tools`` and
``disabled_tools``. Codex speaks no legacy SSE and rejects an inline ``bearer_token``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from checkrein.config._locate import locate
from checkrein.config.problems import raise_problems
from checkrein.errors import ConfigError

from .collect import ImportCollector, require_string_map, require_strings, unknown_keys
from .model import ImportedServer, ImportResult
from .toml_text import read_toml, toml_key, toml_value

__all__ = ["SERVER_KEYS", "read_codex", "render_codex"]

SERVER_KEYS = frozenset(
    {
        "command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers",
        "env_http_headers", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled",
        "required", "enabled_tools", "disabled_tools", "oauth", "scopes", "oauth_resource",
    }
)
"""Keys Codex understands in one `[mcp_servers.<name>]` table."""

_WHOLE_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_BEARER_REF = re.compile(r"^Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def read_codex(text: str, *, source: str = "<codex>") -> ImportResult:
    """Servers of a Codex `config.toml`. Raises ``ConfigError`` (with the line) on malformed TOML
    or a malformed server."""
    data = read_toml(text, source=source)
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConfigError("`mcp_servers` must be a table", file=source, key="mcp_servers")
    out = ImportCollector(source, "codex")
    problems: list[ConfigError] = []
    for name, spec in servers.items():
        where = f"mcp_servers.{name}"
        line = locate(text, [where]) or locate(text, ["mcp_servers", name])
        try:
            if not isinstance(spec, dict):
                raise ConfigError("a server entry must be a table")
            _read_one(out, name, spec)
        except ConfigError as exc:
            problems.append(ConfigError(exc.detail, file=source, line=line, key=where, fix=exc.fix))
    if problems:
        raise_problems(problems, file=source)
    return out.result()


def _timeout(spec: Mapping[str, Any]) -> float | None:
    value = spec.get("tool_timeout_sec")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise ConfigError("`tool_timeout_sec` must be a number of seconds in (0, 3600]")
    return float(value)


def _read_one(out: ImportCollector, name: str, spec: Mapping[str, Any]) -> None:
    unknown = unknown_keys({k: v for k, v in spec.items() if k != "bearer_token"}, SERVER_KEYS)
    for key, hint in unknown:
        out.note(name, f"ignored key {key!r}{hint or ' (not a Codex MCP server key)'}")
    for key in ("enabled_tools", "disabled_tools"):
        if key in spec:
            out.note(name, f"`{key}` is not carried over: express it in checkrein's [policy] allow/deny")
    enabled = spec.get("enabled", True) is not False
    if isinstance(spec.get("command"), str):
        env = require_string_map(spec.get("env", {}), "`env`")
        for var in require_strings(spec.get("env_vars", []), "`env_vars`"):
            env.setdefault(var, "${" + var + "}")
        out.add(
            name,
            transport="stdio",
            command=spec["command"],
            args=require_strings(spec.get("args", []), "`args`"),
            env=env,
            cwd=spec.get("cwd") if isinstance(spec.get("cwd"), str) else None,
            timeout_s=_timeout(spec),
            enabled=enabled,
        )
        return
    if isinstance(spec.get("url"), str):
        headers = require_string_map(spec.get("http_headers", {}), "`http_headers`")
        for header, var in require_string_map(spec.get("env_http_headers", {}), "`env_http_headers`").items():
            headers[header] = "${" + var + "}"
        token_var = spec.get("bearer_token_env_var")
        if isinstance(token_var, str) and token_var:
            headers["Authorization"] = "Bearer ${" + token_var + "}"
        if isinstance(spec.get("bearer_token"), str):
            # Codex itself refuses this key; carry it over as a secret to be moved, never as a value.
            headers["Authorization"] = "Bearer " + spec["bearer_token"]
        out.add(name, transport="streamable-http", url=spec["url"], headers=headers, timeout_s=_timeout(spec), enabled=enabled)
        return
    for key in ("command", "url"):
        if key in spec:
            raise ConfigError(f"`{key}` must be a string, not {type(spec[key]).__name__}")
    hints = "".join(f"; `{k}` is not a Codex key{h}" for k, h in unknown if h)
    raise ConfigError(f"a server needs `command` (stdio) or `url` (Streamable HTTP){hints}")


def server_table(server: ImportedServer) -> dict[str, Any]:
    """One server as the keys of its Codex table. References become ``env_vars``,
    ``env_http_headers`` and ``bearer_token_env_var``, which Codex resolves itself."""
    table: dict[str, Any] = {}
    if server.transport == "stdio":
        table["command"] = server.command
        table["args"] = list(server.args)
        passed = [k for k, v in server.env.items() if v == "${" + k + "}"]
        literal = {k: v for k, v in server.env.items() if k not in passed}
        if server.cwd:
            table["cwd"] = server.cwd
        if passed:
            table["env_vars"] = passed
        if literal:
            table["env"] = literal
    else:
        table["url"] = server.url
        literal_headers: dict[str, str] = {}
        env_headers: dict[str, str] = {}
        for header, value in server.headers.items():
            bearer = _BEARER_REF.match(value)
            whole = _WHOLE_REF.match(value)
            if header.lower() == "authorization" and bearer:
                table["bearer_token_env_var"] = bearer.group(1)
            elif whole:
                env_headers[header] = whole.group(1)
            else:
                literal_headers[header] = value
        if literal_headers:
            table["http_headers"] = literal_headers
        if env_headers:
            table["env_http_headers"] = env_headers
    if server.timeout_s is not None:
        table["tool_timeout_sec"] = server.timeout_s
    if not server.enabled:
        table["enabled"] = False
    return table


def render_codex(servers: Iterable[ImportedServer]) -> str:
    """`[mcp_servers.<name>]` tables for ``servers``, ready to paste into `~/.codex/config.toml`."""
    blocks: list[str] = []
    for server in servers:
        lines = []
        if server.transport == "sse":
            lines.append("# Codex speaks Streamable HTTP only; this server was configured as legacy SSE.")
        lines.append(f"[mcp_servers.{toml_key(server.name)}]")
        lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in server_table(server).items())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
