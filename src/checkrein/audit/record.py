"""What the gate hands to the audit trail. The trail redacts, hashes, chains and writes.

The gate never builds the stored event itself: it passes raw values here, and the audit package
turns them into a schema-version-1 event (DESIGN.md "Audit event") with secrets masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["AuditTrail", "CallRecord", "LifecycleRecord", "Outcome"]

Outcome = Literal["ok", "denied", "error", "timeout", "not_found"]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One finished request (tools/call, resource read, prompt get, completion, subscription or
    listing), whatever happened."""

    kind: Literal[
        "tool", "resource", "prompt", "completion", "subscribe", "unsubscribe", "list", "sampling", "elicitation", "roots"
    ]
    trace_id: str
    span_id: str
    parent_span_id: str | None
    session_id: str
    identity: dict[str, Any]
    """{user, roles, source, client}"""
    model: str | None
    server: str
    tool: str
    exposed_name: str
    tool_digest: str | None
    arguments: Any
    """Raw arguments: the audit package hashes them and stores only a redacted preview."""
    decision: dict[str, Any]
    """{effect, rule_id, reasons, risk, approval}; `approval` is None or {approver, granted, ...}."""
    outcome: Outcome
    error_code: str | None
    duration_ms: float
    result: Any | None = None
    """Raw result as JSON-able data (what the client received), or None when nothing came back."""
    result_flags: tuple[str, ...] = ()
    redactions: tuple[str, ...] = ()
    """JSON pointers the policy asked to mask, in addition to what audit redaction finds itself."""
    degraded: tuple[str, ...] = ()
    args_scanned: bool = False
    """The policy's secrets analyzer (the trail's injected finder) read every value of
    ``arguments`` and its findings are in ``redactions``: the trail then runs only its built-in
    patterns over those values (keys, and JSON nested deeper than the analyzer parses, still get
    the injected finder)."""


@dataclass(frozen=True, slots=True)
class LifecycleRecord:
    """Gateway start/stop, policy reload, pin change, upstream start/crash/restart, and so on."""

    event: str
    """E.g. `gateway.start`, `gateway.stop`, `policy.reload`, `pin.change`, `upstream.start`,
    `upstream.crash`, `upstream.restart`, `upstream.failed`."""
    fields: dict[str, Any] = field(default_factory=dict)


class AuditTrail(Protocol):
    """The gate's view of the audit. ``record_call`` raises ``AuditUnavailable`` when the trail
    cannot accept the event and the operator did not allow failing open; in `durable` mode it
    returns only once the event is on disk."""

    async def record_call(self, record: CallRecord) -> None: ...

    async def record_lifecycle(self, record: LifecycleRecord) -> None: ...

    def writable(self) -> bool:
        """False while writes are failing (the gate then denies calls before forwarding)."""
        ...

    async def aclose(self) -> None: ...
