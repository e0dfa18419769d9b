"""Lint rules for Harbor `task.toml` files and Reward Kit judge files.

Harbor's models (`harbor.models.task.config`, 0.25/0.26) ignore unknown keys, keep the last of
two MCP servers with one name, and accept `headers` only from 0.25 on, so a task can be quietly
different from what its author wrote; these rules make that visible. Server keys and transports
follow `MCPServerConfig`; artifacts and `[[verifier.collect]]` follow Harbor's artifact docs
(entries are an absolute path or ``{source, destination, service}``; hooks are ``{service,
command}``, Harbor PR #1775); judge servers follow Reward Kit's `[[judge.mcp_servers]]` (the
task's keys plus ``allowed_tools``; Codex judges have no SSE, Harbor PR #2008).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from checkrein.config._locate import locate
from checkrein.config.importers.harbor import SERVER_KEYS, normalize_transport
from checkrein.config.importers.secrets import contains_reference, is_credential_key

from .harbor_compose import compose_services, find_compose
from .harbor_network import agent_policy, host_allowed, is_loopback, valid_allowed_host
from .model import Report

__all__ = ["lint_harbor_judge", "lint_harbor_task"]

_TOP_KEYS = frozenset(
    {"schema_version", "version", "task", "metadata", "verifier", "agent", "environment", "solution", "source", "artifacts", "steps", "multi_step_reward_mode"}
)
_ENV_KEYS = frozenset(
    {
        "build_timeout_sec", "docker_image", "cpus", "memory_mb", "storage_mb", "gpus", "gpu_types", "tpus", "tpu_types",
        "allow_internet", "network_mode", "allowed_hosts", "mcp_servers", "env", "skills_dir", "healthcheck", "memory",
        "storage", "os", "workdir",
    }
)
_NETWORK_MODES = ("public", "no-network", "allowlist")
_HEADERS_SINCE = (0, 25)
_PLAIN_REF = re.compile(r"^(?:(?:Bearer|Token|Basic) )?\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def _version(value: str | None) -> tuple[int, int] | None:
    m = re.match(r"^\s*v?(\d+)\.(\d+)", value or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _lint_servers(
    report: Report,
    text: str,
    servers: Any,
    where: list[str | int],
    *,
    extra_keys: frozenset[str] = frozenset(),
    unknown_rule: str = "harbor.unknown-server-key",
    harbor_version: tuple[int, int] | None = None,
) -> list[dict[str, Any]]:
    """Shape checks shared by task and judge servers; returns the well-formed entries."""
    if not isinstance(servers, list):
        report.add("harbor.server-name", locate(text, where), "`mcp_servers` must be an array of tables")
        return []
    seen: dict[str, int] = {}
    good: list[dict[str, Any]] = []
    for i, spec in enumerate(servers):
        def at(key: str | None = None, _i: int = i) -> int | None:
            loc = [*where, _i] if key is None else [*where, _i, key]
            return locate(text, loc) or locate(text, [*where, _i])

        if not isinstance(spec, dict):
            report.add("harbor.server-name", at(), f"entry {i} is not a table")
            continue
        name = spec.get("name")
        label = repr(name) if isinstance(name, str) else f"#{i}"
        if not isinstance(name, str) or not name:
            report.add("harbor.server-name", at(), f"MCP server #{i} has no `name`")
        elif name in seen:
            report.add("harbor.duplicate-server", at("name"), f"server {name!r} is declared again (first at entry {seen[name]}); Harbor keeps only this one")
        else:
            seen[name] = i
        for key in sorted(set(spec) - SERVER_KEYS - extra_keys):
            report.add(unknown_rule, at(key), f"server {label}: Harbor drops unknown key {key!r}")
        raw_transport = spec.get("transport")
        transport = normalize_transport(raw_transport)
        if transport is None:
            report.add("harbor.transport", at("transport"), f"server {label}: unknown transport {raw_transport!r}")
            continue
        if raw_transport == "http":
            report.add("harbor.transport-alias", at("transport"), f'server {label}: "http" is read as "streamable-http"')
        if transport == "stdio":
            if not isinstance(spec.get("command"), str) or not spec.get("command"):
                report.add("harbor.command-required", at(), f"server {label}: stdio needs `command`")
            for key in ("url", "headers"):
                if key in spec:
                    report.add("harbor.transport-fields", at(key), f"server {label}: `{key}` means nothing for stdio")
        else:
            if not isinstance(spec.get("url"), str) or not spec.get("url"):
                shown = f" (transport defaults to {transport!r})" if raw_transport is None else ""
                report.add("harbor.url-required", at(), f"server {label}: {transport} needs `url`{shown}")
            for key in ("command", "args"):
                if key in spec:
                    report.add("harbor.transport-fields", at(key), f"server {label}: `{key}` means nothing for {transport}")
            headers = spec.get("headers")
            if isinstance(headers, dict) and headers:
                if harbor_version is not None and harbor_version < _HEADERS_SINCE:
                    v = ".".join(map(str, harbor_version))
                    report.add("harbor.headers-version", at("headers"), f"server {label}: `headers` is dropped by Harbor {v} (< 0.25)")
                for header, value in headers.items():
                    if not isinstance(value, str) or not (is_credential_key(header) or header.lower() == "authorization"):
                        continue
                    if not contains_reference(value) or not _PLAIN_REF.fullmatch(value):
                        problem = "has a :- default" if ":-" in value else "is not a ${VAR} reference"
                        report.add("harbor.header-secret", at("headers"), f"server {label}: header {header!r} {problem}")
        good.append(spec)
    return good


def _lint_network(report: Report, text: str, data: Mapping[str, Any]) -> None:
    for section in ("environment", "agent", "verifier"):
        table = data.get(section)
        if not isinstance(table, dict):
            continue
        mode = table.get("network_mode")
        if mode is not None and mode not in _NETWORK_MODES:
            report.add("harbor.allowed-hosts-mode", locate(text, [section, "network_mode"]), f"[{section}] network_mode {mode!r} is not one of {list(_NETWORK_MODES)}")
        hosts = table.get("allowed_hosts")
        if hosts is None:
            continue
        line = locate(text, [section, "allowed_hosts"])
        if not isinstance(hosts, list):
            report.add("harbor.allowed-hosts-invalid", line, f"[{section}] allowed_hosts must be an array of strings")
            continue
        for entry in hosts:
            why = valid_allowed_host(entry) if isinstance(entry, str) else "not a string"
            if why:
                report.add("harbor.allowed-hosts-invalid", line, f"[{section}] allowed_hosts entry {entry!r}: {why}")
        if hosts and mode != "allowlist":
            said = "is not set (Harbor infers it; say it)" if mode is None else f"is {mode!r} (Harbor refuses the task)"
            report.add("harbor.allowed-hosts-mode", line, f"[{section}] has allowed_hosts but network_mode {said}")


def _lint_reachability(report: Report, text: str, data: Mapping[str, Any], servers: list[dict[str, Any]], sidecars: set[str]) -> None:
    policy = agent_policy(data)
    for i, spec in enumerate(servers):
        url = spec.get("url")
        if normalize_transport(spec.get("transport")) in (None, "stdio") or not isinstance(url, str):
            continue
        host = urlsplit(url).hostname or ""
        line = locate(text, ["environment", "mcp_servers", i, "url"])
        label = spec.get("name", f"#{i}")
        if not host or contains_reference(host) or host in sidecars:
            continue
        if is_loopback(host):
            if policy.mode == "public":
                report.add("harbor.loopback-url", line, f"server {label!r}: {url} is loopback, i.e. the agent's own container")
            continue
        if policy.mode == "no-network":
            report.add("harbor.mcp-unreachable", line, f"server {label!r}: {host} is unreachable with network_mode = \"no-network\" ([{policy.section}])")
        elif policy.mode == "allowlist" and not host_allowed(host, policy.allowed_hosts):
            report.add("harbor.mcp-unreachable", line, f"server {label!r}: {host} is not in [{policy.section}] allowed_hosts")


def _lint_artifacts(report: Report, text: str, data: Mapping[str, Any]) -> None:
    artifacts = data.get("artifacts")
    if artifacts is not None:
        line = locate(text, ["artifacts"])
        entries = artifacts if isinstance(artifacts, list) else [artifacts]
        for entry in entries:
            if isinstance(entry, str):
                if not entry.startswith("/"):
                    report.add("harbor.artifact", line, f"artifact {entry!r} is not an absolute path")
            elif isinstance(entry, dict):
                unknown = sorted(set(entry) - {"source", "destination", "service", "exclude"})
                src, dest = entry.get("source"), entry.get("destination")
                if unknown:
                    report.add("harbor.artifact", line, f"artifact has unknown keys {unknown}")
                if not isinstance(src, str) or not src.startswith("/"):
                    report.add("harbor.artifact", line, f"artifact source {src!r} is not an absolute path")
                if dest is not None and (not isinstance(dest, str) or dest.startswith("/") or ".." in Path(dest).parts):
                    report.add("harbor.artifact", line, f"artifact destination {dest!r} must be a relative path inside artifacts/")
            else:
                report.add("harbor.artifact", line, f"artifact entry {entry!r} is neither a path nor a table")
    verifier = data.get("verifier")
    hooks = verifier.get("collect") if isinstance(verifier, dict) else None
    if hooks is None:
        return
    if not isinstance(hooks, list):
        report.add("harbor.collect", locate(text, ["verifier", "collect"]), "`verifier.collect` must be an array of tables")
        return
    for i, hook in enumerate(hooks):
        line = locate(text, ["verifier", "collect", i])
        if not isinstance(hook, dict) or not isinstance(hook.get("command"), str) or not hook["command"].strip():
            report.add("harbor.collect", line, f"collect hook #{i} has no `command`")
            continue
        unknown = sorted(set(hook) - {"command", "service", "timeout_sec", "user"})
        if unknown:
            report.add("harbor.collect", line, f"collect hook #{i} has unknown keys {unknown}")


def lint_harbor_task(report: Report, text: str, data: dict[str, Any], *, path: Path | None, harbor_version: str | None) -> None:
    """All task rules; ``path`` locates the compose file beside the task (``None``: no compose)."""
    for key in sorted(set(data) - _TOP_KEYS):
        report.add("file.unknown-key", locate(text, [key]), f"unknown top-level key {key!r} (Harbor drops it)")
    env = data.get("environment", {})
    env = env if isinstance(env, dict) else {}
    for key in sorted(set(env) - _ENV_KEYS):
        report.add("file.unknown-key", locate(text, ["environment", key]), f"unknown key environment.{key!r} (Harbor drops it)")
    meta = data.get("metadata")
    declared = meta.get("harbor_version") if isinstance(meta, dict) else None
    version = _version(harbor_version or (declared if isinstance(declared, str) else None))
    servers = _lint_servers(report, text, env.get("mcp_servers", []), ["environment", "mcp_servers"], harbor_version=version)
    _lint_network(report, text, data)
    compose = find_compose(path) if path is not None else None
    sidecars = set(compose_services(compose, report)) if compose is not None else set()
    all_servers = env.get("mcp_servers", [])
    _lint_reachability(report, text, data, [s if s in servers else {} for s in all_servers] if isinstance(all_servers, list) else [], sidecars)
    _lint_artifacts(report, text, data)


def lint_harbor_judge(report: Report, text: str, data: dict[str, Any]) -> None:
    """Rules for a Reward Kit judge file (``[judge]`` with ``[[judge.mcp_servers]]``)."""
    judge = data.get("judge")
    if not isinstance(judge, dict):
        return
    servers = _lint_servers(
        report, text, judge.get("mcp_servers", []), ["judge", "mcp_servers"],
        extra_keys=frozenset({"allowed_tools"}), unknown_rule="harbor.judge-unknown-server-key",
    )
    backend = str(judge.get("judge", ""))
    if "codex" not in backend.lower():
        return
    for i, spec in enumerate(judge.get("mcp_servers", []) if isinstance(judge.get("mcp_servers"), list) else []):
        if spec in servers and normalize_transport(spec.get("transport")) == "sse":
            shown = "" if "transport" in spec else " (sse is the default transport)"
            report.add("harbor.judge-codex-sse", locate(text, ["judge", "mcp_servers", i]), f"judge {backend!r} cannot use SSE server {spec.get('name')!r}{shown}")
