"""Values for result inspection (the inspect step of the gate). The inspector itself is pure.

A result is seen as plain JSON (what the client would receive, field names as on the wire): the
gate converts SDK results for now; a raw JSON-RPC path hands over what it parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .call import ToolCall
from .decision import Finding

__all__ = ["ErrorInspection", "Inspection", "ResultInspector", "ResultKind", "ResultView"]

ResultKind = Literal["tool", "resource", "prompt"]


def texts_of(result: Mapping[str, Any]) -> tuple[str, ...]:
    """The text of each text item of a result's JSON, in order."""
    out: list[str] = []
    for item in result.get("content") or result.get("contents") or result.get("messages") or ():
        if isinstance(item, dict):
            content = item.get("content")
            inner: Mapping[str, Any] = content if isinstance(content, dict) else item
            if isinstance(inner.get("text"), str):
                out.append(inner["text"])
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ResultView:
    """What the inspector sees of an upstream result: its kind and its JSON form.

    ``json`` is a `CallToolResult` (``tool``), `ReadResourceResult` (``resource``) or
    `GetPromptResult` (``prompt``) as a JSON object with wire names (``structuredContent``,
    ``isError``, ``_meta``...). The inspector never changes it.
    """

    kind: ResultKind
    json: Mapping[str, Any]

    @classmethod
    def of_texts(
        cls, *texts: str, structured: Any | None = None, is_error: bool = False, meta: Mapping[str, Any] | None = None
    ) -> ResultView:
        """A tool result of text blocks (and structured content, ``_meta``), for tests and benchmarks."""
        value: dict[str, Any] = {"content": [{"type": "text", "text": t} for t in texts], "isError": is_error}
        if structured is not None:
            value["structuredContent"] = structured
        if meta is not None:
            value["_meta"] = dict(meta)
        return cls("tool", value)

    @property
    def is_error(self) -> bool:
        return self.kind == "tool" and self.json.get("isError") is True

    @property
    def texts(self) -> tuple[str, ...]:
        """The text of each text block, text resource contents or text prompt message (not every
        string the result carries: `checkrein.policy.result_walk.collect` finds those)."""
        return texts_of(self.json)

    @property
    def structured(self) -> Any | None:
        return self.json.get("structuredContent")


@dataclass(frozen=True, slots=True)
class Inspection:
    """What to do with a result.

    ``action``: `deliver` (``result`` is the JSON to send, possibly redacted, truncated, wrapped or with
    fields withheld; it is the view's own ``json`` object when nothing changed), `withhold` (the
    client gets ``reason`` instead: prompt injection), or `deny` (``reason`` instead: the result is
    over the size cap with ``oversize = "deny"``, nests too deep, or is malformed).
    ``degraded`` names each bound that was hit (``inspect.truncated``, ``inspect.too_deep``...).
    """

    action: Literal["deliver", "withhold", "deny"]
    result: Mapping[str, Any] | None
    findings: tuple[Finding, ...] = ()
    flags: tuple[str, ...] = ()
    """E.g. `truncated`, `oversize`, `too_deep`, `bad_data`, `injection`, `secrets_redacted`,
    `untrusted`, `fields_withheld`."""
    reason: str = ""
    redactions: tuple[str, ...] = ()
    """JSON pointers of masked or withheld fields."""
    degraded: tuple[str, ...] = ()
    code: str = ""
    """The stable error code of a refusal (``result.withheld``, ``result.oversize``, ``result.too_deep``,
    ``result.bad_base64``, ``result.not_json``)."""

    @property
    def texts(self) -> tuple[str, ...]:
        """The text of each text block (or text resource contents, or text prompt message) delivered."""
        return () if self.result is None else texts_of(self.result)

    @property
    def structured(self) -> Any | None:
        return None if self.result is None else self.result.get("structuredContent")


@dataclass(frozen=True, slots=True)
class ErrorInspection:
    """An upstream error as it may reach the client: ``message`` (inspected, redacted; when
    ``withheld``, a reason in place of a message that carried a prompt injection) and ``data``
    (`None` when withheld or dropped)."""

    message: str
    data: Any | None
    findings: tuple[Finding, ...] = ()
    flags: tuple[str, ...] = ()
    redactions: tuple[str, ...] = ()
    degraded: tuple[str, ...] = ()
    withheld: bool = False


class ResultInspector(Protocol):
    def inspect(self, call: ToolCall, result: ResultView) -> Inspection:
        """Inspect one result. May raise (the gate then withholds the result, fail closed)."""
        ...

    def inspect_error(self, call: ToolCall, message: str, data: Any | None) -> ErrorInspection:
        """Inspect an upstream's JSON-RPC error message and ``data`` before the client sees them."""
        ...
