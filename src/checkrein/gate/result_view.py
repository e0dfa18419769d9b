"""How the gate shows a result to the inspector and applies what the inspector decided.

The inspector works on plain JSON (what the client would receive). For now the gate holds SDK
results, so `view_of` dumps one to JSON (wire names, as the SDK's server sends it) and
`apply_inspection` validates the inspector's JSON back into the same result type; a path that
parses JSON-RPC itself hands its parsed JSON over without either step.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import mcp.types as types

from checkrein.policy import Inspection, ResultView
from checkrein.policy.results import ResultKind

from .chain import ToolResultJson

__all__ = ["SERVER_INFO_META", "AnyResult", "apply_inspection", "strip_upstream_meta", "view_of"]

SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
"""`_meta` key by which an upstream names itself; the gateway does not reveal its upstreams."""

AnyResult: TypeAlias = ToolResultJson | types.CallToolResult | types.ReadResourceResult | types.GetPromptResult

_KIND: dict[type, ResultKind] = {
    types.CallToolResult: "tool",
    types.ReadResourceResult: "resource",
    types.GetPromptResult: "prompt",
}


def strip_upstream_meta(result: AnyResult) -> AnyResult:
    if isinstance(result, ToolResultJson):
        return result  # the upstream already removed what names it (`strip_identifying_json_meta`)
    meta = result.meta
    if meta and SERVER_INFO_META in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO_META}
        return result.model_copy(update={"meta": rest or None})
    return result


def _kind_of(result: AnyResult) -> ResultKind:
    for cls in type(result).__mro__:
        kind = _KIND.get(cls)
        if kind is not None:
            return kind
    raise TypeError(f"not a tool, resource or prompt result: {type(result).__name__}")


_PLAIN_RESULT_FIELDS = frozenset({"meta", "content", "structured_content", "is_error", "result_type"})
_PLAIN_TEXT_FIELDS = frozenset({"type", "text", "annotations", "meta"})


def _plain_text_json(result: AnyResult) -> dict[str, Any] | None:
    """The JSON of a tool result of plain text blocks, built without the serializer (the common
    case, every call), or ``None``. Exactly what ``model_dump`` gives; only used while the SDK's
    models have exactly the fields it knows, so a field added later is never skipped."""
    if type(result) is not types.CallToolResult or result.meta is not None or result.structured_content is not None:
        return None
    content: list[dict[str, Any]] = []
    for block in result.content:
        if type(block) is not types.TextContent or block.annotations is not None or block.meta is not None:
            return None
        content.append({"type": "text", "text": block.text})
    return {"content": content, "isError": result.is_error, "resultType": result.result_type}


_FAST = (
    frozenset(types.CallToolResult.model_fields) == _PLAIN_RESULT_FIELDS
    and frozenset(types.TextContent.model_fields) == _PLAIN_TEXT_FIELDS
)


def view_of(result: AnyResult) -> ResultView:
    """``result`` as the JSON the client would receive (the SDK server's own dump; a relayed
    tool result is that JSON already)."""
    if isinstance(result, ToolResultJson):
        return ResultView("tool", result.json)
    value = _plain_text_json(result) if _FAST else None
    if value is None:
        value = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return ResultView(_kind_of(result), value)


def apply_inspection(result: AnyResult, view: ResultView, inspection: Inspection) -> AnyResult:
    """``result`` as the inspector left it. Returns ``result`` itself when nothing changed, so the
    common case costs no copy. Raises ``pydantic.ValidationError`` if the inspector broke the schema
    (the gate then withholds the result)."""
    if inspection.result is view.json:
        return result
    if inspection.result is None:  # a `deliver` without a result: never deliver the unchecked one
        raise ValueError("the inspection delivers no result")
    if isinstance(result, ToolResultJson):
        types.CallToolResult.model_validate(inspection.result, by_name=False)  # the inspector kept the schema
        return ToolResultJson(dict(inspection.result))
    return type(result).model_validate(inspection.result)
