"""Lint findings and the catalog of rules.

Every rule has a stable id (``<area>.<what>``), a severity and a default fix; `checkrein lint
--rules` prints this catalog. A finding is a value: rule, severity, where, what, how to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RULES", "LintFinding", "Report", "Rule", "Severity"]

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    title: str
    fix: str


@dataclass(frozen=True, slots=True)
class LintFinding:
    """One problem found in one file. ``line`` is 1-based, ``None`` when it has no single line."""

    rule: str
    severity: Severity
    file: str
    line: int | None
    message: str
    fix: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "location": self.location,
            "message": self.message,
            "fix": self.fix,
        }


def _r(id: str, severity: Severity, title: str, fix: str) -> Rule:
    return Rule(id, severity, title, fix)


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        # Any file.
        _r("file.too-large", "error", "file larger than the lint limit", "Point lint at the real config; configs are small."),
        _r("file.not-utf8", "error", "file is not UTF-8", "Save the file as UTF-8."),
        _r("file.bom", "warning", "UTF-8 byte order mark", "Save without a BOM; strict JSON readers (Node's JSON.parse) reject it."),
        _r("file.syntax", "error", "file does not parse", "Fix the syntax at the line shown."),
        _r("file.unknown-key", "warning", "unknown top-level key", "Remove or rename the key; the reader ignores it."),
        _r("env.unset", "warning", "environment reference is not set", "Export the variable before starting the client, or give a default with ${VAR:-value}."),
        _r("secret.inline", "error", "secret written inline", "Replace the value with a ${VAR} reference and set VAR in the environment (`checkrein import` does this)."),
        # Claude `.mcp.json`.
        _r("claude.comment", "warning", "comment in JSON", "Remove the comment: `.mcp.json` is JSON, and strict readers reject comments."),
        _r("claude.trailing-comma", "warning", "trailing comma in JSON", "Remove the comma before the closing bracket."),
        _r("claude.duplicate-key", "warning", "duplicate key", "Keep one entry per key; the last one silently wins."),
        _r("claude.no-servers", "error", "no `mcpServers` object", 'Put servers under {"mcpServers": {"name": {...}}}.'),
        _r("claude.server-shape", "error", "server entry Claude cannot use", 'Give stdio servers `command` (and `args`, `env`); give HTTP servers `"type": "http"` and `url`.'),
        _r("claude.unknown-server-key", "warning", "unknown key in a server", "Remove it; Claude ignores keys it does not know."),
        _r("claude.transport-fields", "warning", "field meaningless for the server's type", "stdio servers use command/args/env; http/sse servers use url/headers."),
        # Codex `config.toml`.
        _r("codex.server-shape", "error", "server Codex cannot start", "Give a server either `command` (stdio) or `url` (Streamable HTTP), not both, not neither."),
        _r("codex.unknown-server-key", "warning", "unknown key in a server", "Remove or rename it; see the Codex MCP config reference."),
        _r("codex.inline-bearer-token", "error", "inline `bearer_token`", "Use `bearer_token_env_var = \"VAR\"` and export VAR; Codex rejects inline tokens."),
        _r("codex.transport-fields", "warning", "field meaningless for the server's transport", "stdio servers use command/args/env/env_vars/cwd; URL servers use url/bearer_token_env_var/http_headers/env_http_headers."),
        _r("codex.tool-lists-overlap", "warning", "tool both enabled and disabled", "List each tool in only one of enabled_tools / disabled_tools."),
        _r("codex.timeout", "error", "timeout is not a positive number", "Use a positive number of seconds."),
        # Harbor `task.toml`.
        _r("harbor.server-name", "error", "MCP server without `name`", "Give every [[environment.mcp_servers]] a `name`."),
        _r("harbor.transport", "error", "unknown transport", 'Use transport = "stdio", "sse" or "streamable-http".'),
        _r("harbor.transport-alias", "info", '`transport = "http"` is read as "streamable-http"', 'Write "streamable-http" to say what Harbor will do.'),
        _r("harbor.url-required", "error", "HTTP transport without `url`", "Add `url` (a compose sidecar is addressed by its service name, e.g. http://mcp:8000/mcp)."),
        _r("harbor.command-required", "error", "stdio transport without `command`", "Add `command` (and `args`)."),
        _r("harbor.unknown-server-key", "error", "key Harbor silently drops", "Remove it: Harbor's MCPServerConfig has only name, transport, url, command, args, headers."),
        _r("harbor.duplicate-server", "error", "duplicate MCP server name", "Rename one: Harbor keeps the last entry with a name and drops the others silently."),
        _r("harbor.transport-fields", "warning", "field meaningless for the transport", "stdio servers use command/args; sse/streamable-http servers use url/headers."),
        _r("harbor.headers-version", "error", "`headers` needs Harbor >= 0.25", "Require Harbor 0.25 or later, or drop the headers."),
        _r("harbor.header-secret", "error", "credential header is not a plain ${VAR} reference", "Write the header as \"Bearer ${VAR}\" / \"${VAR}\" without a :- default, and set VAR on the host."),
        _r("harbor.allowed-hosts-invalid", "error", "invalid `allowed_hosts` entry", "Use a hostname, a leading *. wildcard, an IP address or a strict CIDR; no scheme, port or path."),
        _r("harbor.allowed-hosts-mode", "error", "`allowed_hosts` without network_mode = \"allowlist\"", 'Set network_mode = "allowlist" next to allowed_hosts.'),
        _r("harbor.mcp-unreachable", "error", "MCP server host blocked by the network policy", "Add the host to allowed_hosts, or run the server as a compose sidecar."),
        _r("harbor.loopback-url", "error", "loopback MCP URL", "Address a compose sidecar by its service name (http://<service>:<port>/...): loopback is the agent's own container."),
        _r("harbor.sidecar-network", "error", "compose service escapes the egress control", "Remove `networks`/`network_mode` from the service so it stays on the task's default network."),
        _r("harbor.artifact", "error", "malformed artifact entry", "Use an absolute path, or { source = \"/abs/path\", destination = \"rel/path\", service = \"name\" }."),
        _r("harbor.collect", "error", "malformed [[verifier.collect]] entry", "Give each hook `command` (and `service` for a sidecar)."),
        _r("harbor.judge-codex-sse", "error", "Codex judge with an SSE server", "Codex speaks Streamable HTTP only: use transport = \"streamable-http\" or a claude-code judge."),
        _r("harbor.judge-unknown-server-key", "error", "key a judge's MCP server does not read", "Judge servers take the task's MCP server keys plus `allowed_tools`."),
        # checkrein's own config.
        _r("checkrein.invalid", "error", "checkrein config does not load", "Change the key named at the start of the message; examples/checkrein.toml shows every key."),
        _r("checkrein.default-allow", "warning", "policy allows tools by default", 'Use default = "deny" and allow tools by name.'),
        _r("checkrein.plain-http", "warning", "remote upstream over plain HTTP", "Use https:// for servers that are not on loopback."),
        _r("checkrein.audit-disabled", "warning", "the audit is turned off", "Remove `enabled = false` from [audit]: an audit gateway records every call in a verifiable log."),
    )
}


class Report:
    """Collects the findings for one file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.findings: list[LintFinding] = []

    def add(
        self, rule_id: str, line: int | None, message: str, fix: str | None = None, *, file: str | None = None
    ) -> None:
        """Record a finding of rule ``rule_id`` (which must be in `RULES`; a ``KeyError`` otherwise),
        located in this report's file unless ``file`` names another (a task's compose file)."""
        rule = RULES[rule_id]
        self.findings.append(LintFinding(rule.id, rule.severity, file or self.file, line, message, fix or rule.fix))
