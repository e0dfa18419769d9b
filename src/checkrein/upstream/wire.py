"""Pure conversions between upstream MCP objects and what checkrein hands on.

``tool_definition`` turns an ``mcp.types.Tool`` into the ``ToolDefinition`` the catalog pins;
``strip_identifying_meta`` removes the ``_meta`` entries by which an upstream names itself, so a
client of the gateway cannot learn which server (and which version) answered.
"""

from __future__ import annotations

from typing import Any, TypeVar

import httpx2
import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from pydantic import BaseModel

from checkrein.catalog.model import ToolDefinition
from checkrein.errors import UpstreamError

__all__ = [
    "IDENTIFYING_META_KEYS",
    "describe_error",
    "first_cause",
    "session_expired",
    "strip_identifying_json_meta",
    "strip_identifying_meta",
    "tool_definition",
]

IDENTIFYING_META_KEYS: frozenset[str] = frozenset(
    {
        "io.modelcontextprotocol/serverInfo",
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/subscriptionId",
    }
)
"""``_meta`` keys that describe a peer or its connection rather than the result itself."""

_R = TypeVar("_R", bound=BaseModel)


def tool_definition(server: str, tool: types.Tool) -> ToolDefinition:
    """The reviewable fields of ``tool`` as plain JSON values (wire names, ``None`` fields dropped)."""
    wire: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    annotations = wire.get("annotations")
    icons = wire.get("icons")
    return ToolDefinition(
        server=server,
        name=tool.name,
        description=wire.get("description"),
        input_schema=wire.get("inputSchema") or {"type": "object"},
        output_schema=wire.get("outputSchema"),
        annotations=annotations if annotations else None,
        title=wire.get("title"),
        execution=wire.get("execution") or None,
        icons=tuple(icons) if icons else None,
        meta=_clean(wire.get("_meta")) or None,
    )


def _clean(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    if not meta:
        return meta
    kept = {k: v for k, v in meta.items() if k not in IDENTIFYING_META_KEYS}
    return kept or None


def _needs_cleaning(meta: dict[str, Any] | None) -> bool:
    return bool(meta) and not IDENTIFYING_META_KEYS.isdisjoint(meta or {})


def strip_identifying_meta(result: _R) -> _R:
    """Return ``result`` without identifying ``_meta`` keys, at the top level and on each content item.

    Works on any result model with a ``meta`` field (``CallToolResult``, ``ReadResourceResult``,
    ``GetPromptResult``, ...). Never mutates its argument: a result that carries none of the
    keys is returned as is, otherwise a copy is.
    """
    update: dict[str, Any] = {}
    meta = getattr(result, "meta", None)
    if _needs_cleaning(meta):
        update["meta"] = _clean(meta)
    for list_field in ("content", "contents", "messages"):
        items = getattr(result, list_field, None)
        if not isinstance(items, list):
            continue
        if any(_needs_cleaning(getattr(item, "meta", None)) for item in items):
            update[list_field] = [
                item.model_copy(update={"meta": _clean(item.meta)})
                if _needs_cleaning(getattr(item, "meta", None))
                else item
                for item in items
            ]
    if not update:
        return result
    return result.model_copy(update=update)


def strip_identifying_json_meta(result: dict[str, Any]) -> dict[str, Any]:
    """`strip_identifying_meta` for a result as JSON (wire names): the same keys removed, at the top
    level and on each item of ``content``/``contents``/``messages``. Never mutates ``result``."""
    out = result
    if _needs_cleaning(result.get("_meta")):
        out = {k: v for k, v in result.items() if k != "_meta"}
        if (kept := _clean(result["_meta"])) is not None:
            out["_meta"] = kept
    for list_field in ("content", "contents", "messages"):
        items = result.get(list_field)
        if type(items) is not list:
            if not isinstance(items, list):
                continue
        for i in items:  # a loop, not any() over a generator: this runs twice on every call
            if isinstance(i, dict) and "_meta" in i and _needs_cleaning(i["_meta"]):
                break
        else:
            continue
        if out is result:
            out = dict(result)
        out[list_field] = [_without_identifying_meta(i) if isinstance(i, dict) else i for i in items]
    return out


def _without_identifying_meta(item: dict[str, Any]) -> dict[str, Any]:
    if not _needs_cleaning(item.get("_meta")):
        return item
    kept = _clean(item["_meta"])
    rest = {k: v for k, v in item.items() if k != "_meta"}
    return {**rest, "_meta": kept} if kept is not None else rest


def session_expired(exc: MCPError) -> bool:
    """The HTTP server answered 404 for our session id: it restarted or expired the session."""
    return exc.code == INVALID_REQUEST and "session" in exc.message.lower()


def first_cause(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups, or ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups for the first real cause."""
    exc = first_cause(exc)
    if isinstance(exc, MCPError):
        return f"{exc.message} (JSON-RPC error {exc.code})"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, UpstreamError) else f"{type(exc).__name__}: {text}"

