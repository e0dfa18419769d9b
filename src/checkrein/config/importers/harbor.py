"""Harbor's `task.toml`: read `[[environment.mcp_servers]]`, write servers in that shape.

Harbor's model (`harbor.models.task.config.MCPServerConfig`, read for Harbor 0.25/0.26):
``name`` (required), ``transport`` = ``"sse"`` (default) | ``"streamable-http"`` | ``"stdio"``
(``"http"`` is normalized to ``"streamable-http"``), ``url`` (required for the HTTP transports),
``command`` (required for stdio), ``args``, and since 0.25 ``headers`` (HTTP only). Harbor's
models ignore unknown keys, so ``env`` or ``timeout`` are silently dropped there: `checkrein lint`
reports them; the importer carries over what Harbor would actually use and notes the rest.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from checkrein.errors import ConfigError

from .collect import ImportCollector, require_string_map, require_strings
from .model import ImportedServer, ImportResult
from .toml_text import read_toml, toml_key, toml_value

__all__ = ["SERVER_KEYS", "is_loopback", "normalize_transport", "read_harbor", "render_harbor"]

SERVER_KEYS = frozenset({"name", "transport", "url", "command", "args", "headers"})
"""Keys Harbor's `MCPServerConfig` reads (everything else is dropped by Harbor)."""


def normalize_transport(value: object) -> Literal["stdio", "sse", "streamable-http"] | None:
    """Harbor's transport value as checkrein names it; ``None`` when Harbor would not accept it."""
    if value is None:
        return "sse"
    if value == "http":
        return "streamable-http"
    if value in ("stdio", "sse", "streamable-http"):
        return value
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` names the local machine; in a Harbor task that is the agent's own container."""
    h = host.strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def read_harbor(text: str, *, source: str = "<task.toml>") -> ImportResult:
    """Servers of a Harbor `task.toml`; raises ``ConfigError`` on malformed TOML or a server that
    Harbor itself would reject."""
    data = read_toml(text, source=source)
    env = data.get("environment", {})
    servers = env.get("mcp_servers", []) if isinstance(env, dict) else []
    if not isinstance(servers, list):
        raise ConfigError("`environment.mcp_servers` must be an array of tables", file=source)
    out = ImportCollector(source, "harbor")
    last = {spec.get("name"): i for i, spec in enumerate(servers) if isinstance(spec, dict)}
    for i, spec in enumerate(servers):
        where = f"environment.mcp_servers[{i}]"
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ConfigError("an MCP server needs a `name`", file=source, key=where)
        if last[spec["name"]] != i:
            # Harbor keeps the last server of a name; import what the agent would really get.
            out.note(spec["name"], f"{where} is declared again later; Harbor keeps only the last one, so this one is not imported")
            continue
        try:
            _read_one(out, spec)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=source, key=where) from exc
    return out.result()


def _read_one(out: ImportCollector, spec: Mapping[str, Any]) -> None:
    name: str = spec["name"]
    dropped = sorted(set(spec) - SERVER_KEYS)
    if dropped:
        out.note(name, f"Harbor ignores keys {dropped}; they are not carried over")
    transport = normalize_transport(spec.get("transport"))
    if transport is None:
        raise ConfigError(f"unknown transport {spec.get('transport')!r} (stdio, sse or streamable-http)")
    args = require_strings(spec.get("args", []), "`args`")
    headers = require_string_map(spec.get("headers", {}), "`headers`")
    if transport == "stdio":
        if not isinstance(spec.get("command"), str) or not spec["command"]:
            raise ConfigError("'command' is required for transport 'stdio'")
        out.add(name, transport="stdio", command=spec["command"], args=args)
        return
    if not isinstance(spec.get("url"), str) or not spec["url"]:
        raise ConfigError(f"'url' is required for transport '{transport}'")
    out.add(name, transport=transport, url=spec["url"], headers=headers)


def server_table(server: ImportedServer) -> dict[str, Any]:
    """One server as the keys of its `[[environment.mcp_servers]]` entry."""
    table: dict[str, Any] = {"name": server.name, "transport": server.transport}
    if server.transport == "stdio":
        table["command"] = server.command
        if server.args:
            table["args"] = list(server.args)
    else:
        table["url"] = server.url
        if server.headers:
            table["headers"] = dict(server.headers)
    return table


def render_harbor(servers: Iterable[ImportedServer]) -> str:
    """`[[environment.mcp_servers]]` entries for ``servers``, to paste into a `task.toml`.

    Harbor has no per-server env, cwd or timeout: servers that need them say so in a comment."""
    blocks: list[str] = []
    for server in servers:
        lines: list[str] = []
        if server.env or server.cwd:
            lines.append("# Harbor has no per-server env or cwd: set them in the environment's image.")
        if server.headers:
            lines.append("# `headers` needs Harbor >= 0.25.")
        if not server.enabled:
            lines.append("# (disabled in the source config)")
        lines.append("[[environment.mcp_servers]]")
        lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in server_table(server).items())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
