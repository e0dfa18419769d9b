"""The values the gate passes to the policy: who calls what, with which arguments, in which session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Identity", "SessionState", "ToolCall"]


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
    """One `tools/call` (or resource read / prompt get) as it enters the gate.

    ``kind`` says which MCP operation it is; for resources ``exposed_name`` is the namespaced URI and
    for prompts the namespaced prompt name.
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
    kind: Literal["tool", "resource", "prompt"] = "tool"
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
