"""The values the gate passes to the policy: who calls what, with which arguments, in which session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = ["Identity", "RequestKind", "SessionState", "ToolCall"]

RequestKind: TypeAlias = Literal["tool", "resource", "prompt", "completion", "subscribe", "unsubscribe", "list"]
"""Which MCP request a `ToolCall` stands for: tools/call, resources/read, prompts/get,
completion/complete, resources/subscribe, resources/unsubscribe, or a listing."""


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller. stdio callers are the local user (`source="stdio"`, authenticated)."""

    user: str
    roles: tuple[str, ...] = ()
    source: Literal["stdio", "http", "token", "anonymous", "cli"] = "stdio"
    client: str | None = None
    authenticated: bool = True


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One request as it enters the gate: a `tools/call`, or another kind (`RequestKind`).

    ``exposed_name`` is what the client named: the tool or prompt name, the resource URI (after the
    catalog step: its policy name, see `checkrein.catalog.namespace`), the completion's prompt or
    resource template, or the listing method (``tools/list``...). ``server`` and ``tool`` (the
    upstream's own name or URI) are filled in by the catalog step.
    """

    identity: Identity
    session_id: str
    trace_id: str
    span_id: str
    exposed_name: str
    arguments: dict[str, Any]
    server: str = ""
    tool: str = ""
    parent_span_id: str | None = None
    kind: RequestKind = "tool"
    model: str | None = None
    session_given: bool = True
    """False when the client sent no session (2026-era HTTP): ``session_id`` was made up for this request."""
    task: str | None = None
    """The user's task text the client sent in ``_meta["io.checkrein/task"]`` (trusted by the flow rules)."""


@dataclass
class SessionState:
    """Per-session facts later rules may use. Mutated only by the gate, never by `decide`."""

    session_id: str
    calls: int = 0
    calls_by_tool: dict[str, int] = field(default_factory=dict)
    tainted: bool = False
    """True once the session has received a result flagged as untrusted content."""
    taint_sources: list[str] = field(default_factory=list)
