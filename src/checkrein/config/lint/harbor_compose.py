"""The compose file beside a Harbor task: services that would leave the task's network.

Harbor's egress control (network_mode / allowed_hosts) is applied to the task's default compose
network; a service that declares its own ``networks`` or ``network_mode`` (``host``, another
network) is no longer behind it, so an MCP sidecar configured that way can reach anything.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .model import Report

__all__ = ["COMPOSE_NAMES", "compose_services", "find_compose"]

COMPOSE_NAMES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
_MAX_COMPOSE_BYTES = 1024 * 1024


def find_compose(task_file: Path) -> Path | None:
    """The compose file of the task whose `task.toml` is ``task_file``, if it has one."""
    for name in COMPOSE_NAMES:
        candidate = task_file.parent / "environment" / name
        if candidate.is_file():
            return candidate
    return None


def _line(text: str, service: str, key: str) -> int | None:
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if re.match(r"^\s+" + re.escape(service) + r"\s*:", line):
            start = i
            break
    if start is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    for j in range(start + 1, len(lines)):
        stripped = lines[j].lstrip()
        if stripped and (len(lines[j]) - len(stripped)) <= indent:
            break
        if stripped.startswith(key + ":"):
            return j + 1
    return start + 1


def compose_services(path: Path, report: Report) -> dict[str, Any]:
    """Service name -> definition of the compose file at ``path``; adds ``harbor.sidecar-network``
    findings (in ``report``, located in the compose file) for services with their own network."""
    try:
        if path.stat().st_size > _MAX_COMPOSE_BYTES:
            report.add("file.too-large", None, "compose file is larger than 1 MiB; not read", file=str(path))
            return {}
        text = path.read_text(encoding="utf-8-sig")
        doc = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        report.add("file.syntax", None, f"{path}: cannot read compose file: {exc}")
        return {}
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict):
        return {}
    for name, spec in services.items():
        if not isinstance(spec, dict):
            continue
        for key in ("networks", "network_mode"):
            if key in spec:
                report.add(
                    "harbor.sidecar-network",
                    _line(text, str(name), key),
                    f"compose service {name!r} declares `{key}` and so is not behind the task's egress control",
                    file=str(path),
                )
    return {str(k): v for k, v in services.items()}

