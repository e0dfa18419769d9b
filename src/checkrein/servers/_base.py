"""`BundledServer`: the SDK's `MCPServer` with tool errors a model can read and nothing internal.

The SDK prefixes every tool error with ``Error executing tool NAME:`` and puts pydantic's full
validation report (input values, documentation URLs) in the text. The bundled servers answer with
the tool's own message (``incident not found``) or a one-line ``invalid arguments: ...``, and a
crash becomes ``internal error`` with the details left on the server's stderr.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

__all__ = ["BundledServer", "public_message"]

_log = logging.getLogger("checkrein.servers")


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def public_message(exc: ToolError) -> str:
    """The text a client sees for ``exc``: the tool's own words, a validation summary, or
    ``internal error``."""
    cause = exc.__cause__
    if isinstance(exc, UnexpectedToolError):
        return "internal error"
    if isinstance(cause, ValidationError):
        return _validation_summary(cause)
    if isinstance(cause, ToolError):
        return str(cause)
    return str(exc)


class BundledServer(MCPServer[Any]):
    """An `MCPServer` whose tool errors carry only `public_message` text."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError):
                _log.error("tool %r crashed", name, exc_info=exc.__cause__)
            raise ToolError(public_message(exc)) from None
