"""MCP tools as OpenAI function definitions, and MCP tool results as text for the model.

OpenAI function names allow only ``[A-Za-z0-9_-]{1,64}``; MCP names may hold ``.`` or be longer,
so `ToolMap` keeps a two-way mapping and every name the model sees is a valid function name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp import types

from .model import ToolSpec

__all__ = ["MAX_RESULT_CHARS", "ResultKind", "ToolMap", "classify_result", "result_text"]

MAX_RESULT_CHARS = 16_000
_BAD = re.compile(r"[^A-Za-z0-9_-]")
DENIAL_PREFIX = "denied by checkrein:"
GATEWAY_ERROR_PREFIX = "error from checkrein:"
_META_KEYS = ("io.checkrein/decision", "checkrein/decision", "checkrein")


def _function_name(name: str, taken: set[str]) -> str:
    base = _BAD.sub("_", name)[:64] or "tool"
    candidate, n = base, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = base[: 64 - len(suffix)] + suffix, n + 1
    return candidate


class ToolMap:
    """The tools one MCP server shows, as OpenAI tool definitions."""

    def __init__(self, tools: Sequence[types.Tool]) -> None:
        self.tools = tuple(tools)
        self._to_mcp: dict[str, str] = {}
        self.specs: list[ToolSpec] = []
        for tool in self.tools:
            fname = _function_name(tool.name, set(self._to_mcp))
            self._to_mcp[fname] = tool.name
            schema: dict[str, Any] = dict(tool.input_schema or {})
            schema.setdefault("type", "object")
            schema.setdefault("properties", {})
            description = tool.description or tool.title or tool.name
            self.specs.append({
                "type": "function",
                "function": {"name": fname, "description": description[:1024], "parameters": schema},
            })

    def mcp_name(self, function_name: str) -> str:
        """The MCP tool behind ``function_name`` (unknown names pass through unchanged, so the
        server, not the agent, decides what an unknown tool means)."""
        return self._to_mcp.get(function_name, function_name)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]


def result_text(result: types.CallToolResult) -> str:
    """The text the model receives for ``result``: text blocks joined, other blocks named,
    structured content when there is no text, truncated to `MAX_RESULT_CHARS`."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content omitted]")
    text = "\n".join(parts)
    if not text.strip() and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[truncated: {len(text) - MAX_RESULT_CHARS} more characters]"
    return text


@dataclass(frozen=True)
class ResultKind:
    """What a result means for the run: ``ok``, ``error`` (the tool failed), ``denied`` (checkrein
    refused it) or ``gateway_error`` (checkrein could not complete it)."""

    status: str
    approval: dict[str, Any] | None = None
    rule_id: str | None = None
    code: str | None = None


_RULE = re.compile(r"\(rule ([^)]+)\)\s*$")
_CODE = re.compile(r"\(code ([^)]+)\)\s*$")


def classify_result(result: types.CallToolResult, text: str) -> ResultKind:
    """Read checkrein's verdict from a result: a ``_meta`` decision entry when the gateway sends
    one, else the stable text prefixes of its denials and errors."""
    meta = result.meta or {}
    decision: dict[str, Any] = {}
    for key in _META_KEYS:
        value = meta.get(key)
        if isinstance(value, dict):
            decision = value
            break
    approval = decision.get("approval") if isinstance(decision.get("approval"), dict) else None
    rule_id = decision.get("rule_id") if isinstance(decision.get("rule_id"), str) else None
    code = decision.get("error_code") if isinstance(decision.get("error_code"), str) else None
    head = text.lstrip()[:200].lower()
    if decision.get("effect") == "deny" or head.startswith(DENIAL_PREFIX):
        m = _RULE.search(text)
        return ResultKind("denied", approval, rule_id or (m.group(1) if m else None), code or "policy.denied")
    if head.startswith(GATEWAY_ERROR_PREFIX):
        m = _CODE.search(text)
        return ResultKind("gateway_error", approval, rule_id, code or (m.group(1) if m else None))
    if result.is_error:
        return ResultKind("error", approval, rule_id, code or "tool.error")
    return ResultKind("ok", approval, rule_id, code)
