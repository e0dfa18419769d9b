"""Harbor's network policy as the agent sees it, and whether an MCP URL is reachable under it.

Read from Harbor's `harbor.models.task.config` (0.25/0.26): ``[environment] network_mode`` is
``public`` | ``no-network`` | ``allowlist`` (``allow_internet = false`` is the older spelling of
``no-network``), ``allowed_hosts`` only with ``allowlist``; ``[agent]`` and ``[verifier]`` may
override the environment's baseline for their phase. MCP servers are used by the agent, so the
agent phase's policy is the one that decides whether an MCP URL is reachable. Compose sidecars
sit on the task's own network and are addressed by service name.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkrein.config.importers.harbor import is_loopback

__all__ = ["NetworkPolicy", "agent_policy", "host_allowed", "is_loopback", "valid_allowed_host"]

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    mode: str
    allowed_hosts: tuple[str, ...]
    section: str
    """Where the policy came from: ``agent``, ``environment`` or ``default``."""


def _hostname_ok(value: str) -> bool:
    labels = value.split(".")
    return len(value) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


def valid_allowed_host(entry: str) -> str | None:
    """``None`` when ``entry`` is a hostname, a leading ``*.`` wildcard, an IP literal or a
    strict CIDR; otherwise why not."""
    value = entry.strip().lower().rstrip(".")
    if not value:
        return "empty entry"
    if "://" in value:
        return "a URL, not a host"
    if "/" in value:
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError:
            return "not a strict CIDR (host bits set?), and paths are not allowed"
        return None
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if ":" in value:
        return "ports are not allowed"
    host = value[2:] if value.startswith("*.") else value
    if "*" in host:
        return "only a leading `*.` wildcard is allowed"
    if not _hostname_ok(host):
        return "not a valid hostname"
    return None


def host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """Whether ``host`` matches an allowlist entry (exact, ``*.`` suffix, IP or CIDR)."""
    h = host.strip("[]").lower().rstrip(".")
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(h)
    except ValueError:
        ip = None
    for raw in allowed:
        entry = raw.strip().lower().rstrip(".")
        if entry == h:
            return True
        if entry.startswith("*.") and h.endswith(entry[1:]):
            return True
        if ip is not None and "/" in entry:
            try:
                if ip in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name, {})
    return value if isinstance(value, dict) else {}


def _hosts(section: Mapping[str, Any]) -> tuple[str, ...]:
    hosts = section.get("allowed_hosts", [])
    return tuple(h for h in hosts if isinstance(h, str)) if isinstance(hosts, list) else ()


def agent_policy(data: Mapping[str, Any]) -> NetworkPolicy:
    """The network policy the agent phase runs under (Harbor's ``resolve_baseline`` plus the
    ``[agent]`` phase override)."""
    agent = _section(data, "agent")
    if agent.get("network_mode") or _hosts(agent):
        return NetworkPolicy(str(agent.get("network_mode") or "allowlist"), _hosts(agent), "agent")
    env = _section(data, "environment")
    if env.get("network_mode") or _hosts(env):
        return NetworkPolicy(str(env.get("network_mode") or "allowlist"), _hosts(env), "environment")
    if env.get("allow_internet") is False:
        return NetworkPolicy("no-network", (), "environment")
    return NetworkPolicy("public", (), "default")
