"""How the gate shows a result to the inspector and applies what the inspector decided.

Tool results, resource contents and prompt messages all carry text; the inspector sees those
texts in order (`ResultView`) and may return redacted ones, which go back into the same blocks.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import mcp.types as types

from checkrein.canonical import canonical_json
from checkrein.policy import Inspection, ResultView

__all__ = ["SERVER_INFO_META", "AnyResult", "apply_inspection", "strip_upstream_meta", "view_of"]

SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
"""`_meta` key by which an upstream names itself; the gateway does not reveal its upstreams."""

AnyResult: TypeAlias = types.CallToolResult | types.ReadResourceResult | types.GetPromptResult


def strip_upstream_meta(result: AnyResult) -> AnyResult:
    meta = result.meta
    if meta and SERVER_INFO_META in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO_META}
        return result.model_copy(update={"meta": rest or None})
    return result


def _texts(result: AnyResult) -> list[str]:
    if isinstance(result, types.CallToolResult):
        return [b.text for b in result.content if isinstance(b, types.TextContent)]
    if isinstance(result, types.ReadResourceResult):
        return [c.text for c in result.contents if isinstance(c, types.TextResourceContents)]
    return [m.content.text for m in result.messages if isinstance(m.content, types.TextContent)]


def view_of(result: AnyResult) -> ResultView:
    texts = tuple(_texts(result))
    structured: Any | None = result.structured_content if isinstance(result, types.CallToolResult) else None
    size = sum(len(t.encode("utf-8")) for t in texts)
    if structured is not None:
        size += len(canonical_json(structured))
    is_error = isinstance(result, types.CallToolResult) and bool(result.is_error)
    return ResultView(texts=texts, structured=structured, size_bytes=size, is_error=is_error)


def apply_inspection(result: AnyResult, view: ResultView, inspection: Inspection) -> AnyResult:
    """``result`` with the inspector's texts (same count, same order) and structured content.

    Returns ``result`` itself when nothing changed, so the common case costs no copy.
    """
    if inspection.texts == view.texts and inspection.structured is view.structured:
        return result
    new = iter(inspection.texts)
    if isinstance(result, types.CallToolResult):
        content = [b.model_copy(update={"text": next(new)}) if isinstance(b, types.TextContent) else b for b in result.content]
        return result.model_copy(update={"content": content, "structured_content": inspection.structured})
    if isinstance(result, types.ReadResourceResult):
        contents = [
            c.model_copy(update={"text": next(new)}) if isinstance(c, types.TextResourceContents) else c
            for c in result.contents
        ]
        return result.model_copy(update={"contents": contents})
    messages = [
        m.model_copy(update={"content": m.content.model_copy(update={"text": next(new)})})
        if isinstance(m.content, types.TextContent)
        else m
        for m in result.messages
    ]
    return result.model_copy(update={"messages": messages})
