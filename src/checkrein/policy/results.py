"""Values for result inspection (step 6 of the gate). The inspector itself is pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .call import ToolCall
from .decision import Finding

__all__ = ["Inspection", "ResultInspector", "ResultView"]


@dataclass(frozen=True, slots=True)
class ResultView:
    """What the inspector sees of an upstream result: its text blocks in order, and structured content."""

    texts: tuple[str, ...]
    structured: Any | None
    size_bytes: int
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Inspection:
    """What to do with a result.

    ``action``: `deliver` (``texts``/``structured`` may be redacted, truncated or wrapped; same number of
    text blocks as the view), `withhold` (the client gets a denial reason instead), or `deny`.
    """

    action: Literal["deliver", "withhold", "deny"]
    texts: tuple[str, ...]
    structured: Any | None
    findings: tuple[Finding, ...] = ()
    flags: tuple[str, ...] = ()
    """E.g. `truncated`, `injection`, `secrets_redacted`, `untrusted`."""
    reason: str = ""
    redactions: tuple[str, ...] = ()


class ResultInspector(Protocol):
    def inspect(self, call: ToolCall, result: ResultView) -> Inspection: ...
