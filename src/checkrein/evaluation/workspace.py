"""A fresh working directory per scenario: bundled servers' state, the gateway config, the audit.

The config written here is an ordinary checkrein config (`checkrein serve --config` runs it), so
a scenario's setup can be reproduced by hand from its `checkrein.toml`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checkrein.config.importers.toml_text import toml_key, toml_value

from .scenario import Scenario

__all__ = ["BUNDLED_SERVERS", "TOOL_RULES", "write_workspace"]

# name -> (module, {env var: path relative to the workdir})
BUNDLED_SERVERS: dict[str, tuple[str, dict[str, str]]] = {
    "sandbox": ("checkrein.servers.sandbox", {"CHECKREIN_SANDBOX_DIR": "sandbox"}),
    "knowledge": ("checkrein.servers.knowledge", {"CHECKREIN_KB_PATH": "kb.sqlite"}),
    "monitor": ("checkrein.servers.monitor", {"CHECKREIN_MONITOR_AUDIT": "monitor-audit.jsonl"}),
    "echo": ("checkrein.testing.echo_server", {"ECHO_SERVER_STATE": "echo-state.json"}),
}
DEFAULT_SERVERS = ("sandbox", "knowledge", "monitor")

# The operator's review of the bundled tools: risk, and what each argument is.
TOOL_RULES: dict[str, dict[str, Any]] = {
    "sandbox__get_weather": {"risk": "low"},
    "sandbox__get_forecast": {"risk": "low"},
    "sandbox__read_file": {"risk": "medium", "args": {"filename": {"kind": "path", "roots": ["."]}}},
    "sandbox__write_file": {"risk": "medium", "args": {"filename": {"kind": "path", "roots": ["."]}}},
    "sandbox__delete_file": {"risk": "high", "args": {"filename": {"kind": "path", "roots": ["."]}}},
    "sandbox__execute_command": {
        "risk": "critical",
        "args": {"command": {"kind": "command"}},
        "commands": ["ls", "pwd", "echo", "date", "whoami", "cat"],
    },
    "knowledge__search_documents": {"risk": "low", "args": {"query": {"kind": "text", "max_length": 500}}},
    "knowledge__add_document": {"risk": "medium"},
    "knowledge__list_sources": {"risk": "low"},
    "monitor__get_incident_snapshot": {"risk": "low"},
    "echo__*": {"risk": "low"},
}


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(dict(out[k]), v)
        else:
            out[k] = v
    return out


def write_workspace(scenario: Scenario, workdir: Path, *, python: str | None = None) -> Path:
    """Create ``workdir`` for ``scenario`` and return the path of its `checkrein.toml`."""
    workdir.mkdir(parents=True, exist_ok=True)
    exe = python or sys.executable
    servers = [*DEFAULT_SERVERS, *scenario.extra_servers]
    lines = [
        "# Written by checkrein's scenario runner for scenario " + toml_value(scenario.name),
        "[gateway]",
        'name = "checkrein-demo"',
        "",
    ]
    for name in servers:
        module, env = BUNDLED_SERVERS[name]
        lines += [
            "[[servers]]",
            f"name = {toml_value(name)}",
            'transport = "stdio"',
            f"command = {toml_value(exe)}",
            f"args = {toml_value(['-m', module])}",
            f"env = {toml_value({k: str(workdir / v) for k, v in env.items()})}",
            f"cwd = {toml_value(str(workdir))}",
            "timeout_s = 20.0",
            "",
        ]
    policy = _merge({"template": scenario.template}, {k: v for k, v in scenario.policy.items() if k != "tools"})
    tools = _merge(TOOL_RULES, scenario.policy.get("tools", {}))
    lines += ["[policy]"] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in policy.items()] + [""]
    for name, rule in tools.items():
        lines.append(f"[policy.tools.{toml_key(name)}]")
        lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in rule.items()]
        lines.append("")
    if scenario.approval:
        lines += ["[approval]"] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in scenario.approval.items()] + [""]
    lines += ["[audit]", 'dir = "audit"', 'durability = "durable"', ""]
    path = workdir / "checkrein.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
