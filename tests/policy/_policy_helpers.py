"""Small builders shared by the policy tests (not fixtures: plain functions keep tests explicit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkrein.catalog.model import ToolDefinition
from checkrein.config import parse_config
from checkrein.policy import (
    CompiledPolicy,
    Decision,
    Finding,
    Identity,
    SessionState,
    ToolCall,
    compile_policy,
    decide,
)
from checkrein.policy.analyzers.api import ScanContext

LOCAL = Identity("alice", source="stdio")
ANON = Identity("anonymous", source="anonymous", authenticated=False)

ANALYZERS_OFF = """
[policy.analyzers]
paths = "off"
urls = "off"
shell = "off"
sql = "off"
secrets = "off"
"""

OBJ: dict[str, Any] = {"type": "object"}


def tool(
    exposed: str,
    schema: dict[str, Any] | None = None,
    annotations: dict[str, Any] | None = None,
) -> tuple[str, ToolDefinition]:
    server, _, name = exposed.partition("__")
    return exposed, ToolDefinition(server, name, f"{name} tool", schema or dict(OBJ), annotations=annotations)


Scanner = Callable[[Mapping[str, Any], ScanContext], Sequence[Finding]]


def no_findings(arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]:
    return []


def policy(
    toml: str,
    *tools: tuple[str, ToolDefinition],
    scanner: Scanner | None = no_findings,
) -> CompiledPolicy:
    """Compile ``toml`` against ``tools``; the scanner defaults to one that finds nothing."""
    return compile_policy(parse_config(toml), dict(tools), scanner=scanner)


def call(exposed: str, arguments: Any = None, identity: Identity = LOCAL) -> ToolCall:
    server, _, name = exposed.partition("__")
    return ToolCall(
        identity, "s1", "t1", "sp1", exposed, {} if arguments is None else arguments, server=server, tool=name
    )


def run(p: CompiledPolicy, exposed: str, arguments: Any = None, identity: Identity = LOCAL) -> Decision:
    return decide(p, call(exposed, arguments, identity), SessionState("s1"), 0.0)
