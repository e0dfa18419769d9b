"""Lint rules for Codex's `config.toml` (keys: see `checkrein.config.importers.codex`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkrein.config._locate import locate
from checkrein.config.importers.codex import SERVER_KEYS
from checkrein.config.importers.collect import unknown_keys
from checkrein.config.problems import close_matches

from .common import check_inline_secrets, string_list, string_map
from .model import Report

__all__ = ["lint_codex"]

_STDIO_ONLY = ("command", "args", "env", "env_vars", "cwd")
_HTTP_ONLY = ("url", "bearer_token_env_var", "http_headers", "env_http_headers", "oauth", "scopes", "oauth_resource")


def _locate_server(text: str, name: str, *key: str) -> int | None:
    """Line of server ``name`` (or its ``key``), written as ``[mcp_servers.<name>]`` (the usual
    Codex form, one dotted header per server) or inside an ``[mcp_servers]`` table."""
    return locate(text, [f"mcp_servers.{name}", *key]) or locate(text, ["mcp_servers", name, *key])


def _variables(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, variable name) of every environment variable the server reads by name."""
    out = [("env_vars", v) for v in string_list(spec.get("env_vars"))]
    out += [("env_http_headers", v) for v in string_map(spec.get("env_http_headers")).values()]
    if isinstance(spec.get("bearer_token_env_var"), str):
        out.append(("bearer_token_env_var", spec["bearer_token_env_var"]))
    return out


def lint_codex(report: Report, text: str, data: dict[str, Any], env: Mapping[str, str]) -> None:
    """Codex rules; ``env`` is what variables named by ``env_vars``, ``env_http_headers`` and
    ``bearer_token_env_var`` are looked up in (Codex names variables instead of ``${VAR}``)."""
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        report.add("codex.server-shape", locate(text, ["mcp_servers"]), "`mcp_servers` must be a table")
        return
    for name, spec in servers.items():
        def at(key: str, _name: str = name) -> int | None:
            return _locate_server(text, _name, key) or _locate_server(text, _name)

        here = _locate_server(text, name)
        if not isinstance(spec, dict):
            report.add("codex.server-shape", here, f"server {name!r} is not a table")
            continue
        for key, hint in unknown_keys({k: v for k, v in spec.items() if k != "bearer_token"}, SERVER_KEYS):
            report.add("codex.unknown-server-key", at(key), f"server {name!r}: unknown key {key!r}{hint}",
                       f"Rename `{key}` to `{close_matches(key, SERVER_KEYS)[0]}`." if hint else None)
        if "bearer_token" in spec:
            report.add("codex.inline-bearer-token", at("bearer_token"), f"server {name!r}: inline `bearer_token`")
        for key in ("command", "url"):
            if key in spec and not isinstance(spec[key], str):
                report.add("codex.server-shape", at(key), f"server {name!r}: `{key}` must be a string, not {type(spec[key]).__name__}")
        has_cmd, has_url = "command" in spec, "url" in spec
        if has_cmd == has_url:
            which = "both `command` and `url`" if has_cmd else "neither `command` nor `url`"
            report.add("codex.server-shape", here, f"server {name!r} has {which}")
        elif has_cmd:
            for key in _HTTP_ONLY:
                if key in spec:
                    report.add("codex.transport-fields", at(key), f"server {name!r}: `{key}` means nothing for a stdio server")
        else:
            for key in _STDIO_ONLY:
                if key in spec:
                    report.add("codex.transport-fields", at(key), f"server {name!r}: `{key}` means nothing for a URL server")
        for key in ("startup_timeout_sec", "tool_timeout_sec", "startup_timeout_ms"):
            value = spec.get(key)
            if key in spec and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
                report.add("codex.timeout", at(key), f"server {name!r}: `{key}` = {value!r} is not a positive number")
        for key, variable in _variables(spec):
            if variable not in env:
                report.add("env.unset", at(key), f"server {name!r}: `{key}` names {variable}, which is not set in this environment")
        enabled = spec.get("enabled_tools")
        disabled = spec.get("disabled_tools")
        if isinstance(enabled, list) and isinstance(disabled, list):
            both = sorted({t for t in enabled if isinstance(t, str)} & {t for t in disabled if isinstance(t, str)})
            if both:
                report.add("codex.tool-lists-overlap", at("disabled_tools"), f"server {name!r}: {both} are both enabled and disabled")

        def field_line(field: str, _at: Any = at) -> int | None:
            line: int | None = _at({"headers": "http_headers"}.get(field, field))
            return line

        check_inline_secrets(
            report,
            name,
            line=field_line,
            env=string_map(spec.get("env")),
            headers=string_map(spec.get("http_headers")),
            args=string_list(spec.get("args")),
            url=spec.get("url") if isinstance(spec.get("url"), str) else None,
        )
