"""Lint rules for Claude Code's `.mcp.json` (shape: see `checkrein.config.importers.claude`)."""

from __future__ import annotations

from typing import Any

from checkrein.config.importers.claude import SERVER_KEYS
from checkrein.config.importers.collect import unknown_keys
from checkrein.config.importers.jsonc import key_line, read_jsonc
from checkrein.config.problems import close_matches

from .common import check_inline_secrets, string_list, string_map
from .model import Report

__all__ = ["lint_claude"]

_TOP_KEYS = frozenset({"mcpServers", "$schema"})
_STDIO_ONLY = ("command", "args", "env", "cwd")
_HTTP_ONLY = ("url", "headers", "headersHelper", "oauth")


def lint_claude(report: Report, text: str) -> None:
    parsed = read_jsonc(text)
    rule_of = {"comment": "claude.comment", "trailing_comma": "claude.trailing-comma", "duplicate_key": "claude.duplicate-key", "syntax": "file.syntax", "bom": "file.bom"}
    for issue in parsed.issues:
        report.add(rule_of[issue.kind], issue.line, issue.message)
    doc = parsed.value
    if doc is None:
        return
    if not isinstance(doc, dict):
        report.add("claude.no-servers", 1, "the file is not a JSON object")
        return
    body = parsed.text
    servers: Any = doc.get("mcpServers")
    if servers is None:
        flat = bool(doc) and all(isinstance(v, dict) and ("command" in v or "url" in v) for v in doc.values())
        if not flat:
            report.add("claude.no-servers", 1, "no `mcpServers` object")
            return
        servers, prefix = doc, []
    else:
        prefix = ["mcpServers"]
        for key in sorted(set(doc) - _TOP_KEYS):
            report.add("file.unknown-key", key_line(body, [key]), f"unknown top-level key {key!r} (Claude ignores it)")
        if not isinstance(servers, dict):
            report.add("claude.no-servers", key_line(body, ["mcpServers"]), "`mcpServers` is not an object")
            return
    for name, spec in servers.items():
        _lint_server(report, body, prefix + [name], name, spec)


def _lint_server(report: Report, body: str, path: list[str], name: str, spec: Any) -> None:
    here = key_line(body, path)

    def at(key: str) -> int | None:
        return key_line(body, [*path, key]) or here

    if not isinstance(spec, dict):
        report.add("claude.server-shape", here, f"server {name!r} is not an object")
        return
    for key, hint in unknown_keys(spec, SERVER_KEYS):
        report.add("claude.unknown-server-key", at(key), f"server {name!r}: unknown key {key!r}{hint}",
                   f"Rename `{key}` to `{close_matches(key, SERVER_KEYS)[0]}`." if hint else None)
    kind = spec.get("type")
    if kind not in (None, "stdio", "http", "sse"):
        report.add("claude.server-shape", at("type"), f"server {name!r}: unknown type {kind!r} (stdio, http or sse)")
        return
    if kind is None and "command" not in spec and "url" not in spec:
        report.add("claude.server-shape", here, f"server {name!r} has neither `command` (stdio) nor `url` (http/sse)")
        return
    is_stdio = kind == "stdio" or (kind is None and "command" in spec)
    if is_stdio:
        if not isinstance(spec.get("command"), str) or not spec.get("command"):
            report.add("claude.server-shape", here, f"server {name!r}: a stdio server needs a `command` string")
        if "args" in spec and not (isinstance(spec["args"], list) and all(isinstance(a, str) for a in spec["args"])):
            report.add("claude.server-shape", at("args"), f"server {name!r}: `args` must be a list of strings")
        wrong = [k for k in _HTTP_ONLY if k in spec]
    else:
        if not isinstance(spec.get("url"), str) or not spec.get("url"):
            report.add("claude.server-shape", here, f"server {name!r}: an {kind or 'http'} server needs a `url`")
        elif kind is None:
            report.add("claude.server-shape", at("url"), f'server {name!r}: a URL server needs "type": "http" or "sse"')
        wrong = [k for k in _STDIO_ONLY if k in spec]
    for key in wrong:
        report.add("claude.transport-fields", at(key), f"server {name!r}: `{key}` means nothing for a {'stdio' if is_stdio else kind or 'http'} server")
    check_inline_secrets(
        report,
        name,
        line=at,
        env=string_map(spec.get("env")),
        headers=string_map(spec.get("headers")),
        args=string_list(spec.get("args")),
        url=spec.get("url") if isinstance(spec.get("url"), str) else None,
    )
