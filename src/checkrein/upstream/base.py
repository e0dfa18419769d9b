"""The `Upstream` seam: one long-lived connection to one MCP server.

Implementations: stdio, legacy SSE and Streamable HTTP (`checkrein.upstream`), and an in-memory
double in `checkrein.testing`. The gate only ever talks to this protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import mcp.types as types

from checkrein.catalog.model import ToolDefinition

__all__ = ["Upstream", "UpstreamInfo", "UpstreamState", "ToolsChanged"]

UpstreamState = Literal["starting", "ready", "failed", "crashed", "restarting", "closed"]
ToolsChanged = Callable[[str], Awaitable[None]]
"""Called with the server name after the upstream's tool list changed (list_changed) and was re-fetched."""


@dataclass(frozen=True, slots=True)
class UpstreamInfo:
    name: str
    transport: str
    state: UpstreamState
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    error: str | None = None
    """Why it is not ready: e.g. the tail of a failed stdio server's stderr."""
    restarts: int = 0


class Upstream(Protocol):
    name: str

    @property
    def info(self) -> UpstreamInfo: ...

    async def start(self) -> None:
        """Connect and fetch the catalog. Raises ``UpstreamUnavailable`` (with stderr tail) on failure."""

    async def tools(self) -> list[ToolDefinition]:
        """The cached tool list (all pages). Never re-lists per call."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> types.CallToolResult:
        """Forward one call. Raises ``UpstreamTimeout`` or ``UpstreamUnavailable``; never hangs."""
        ...

    async def list_resources(self) -> list[types.Resource]: ...

    async def read_resource(self, uri: str, *, timeout_s: float) -> types.ReadResourceResult: ...

    async def list_resource_templates(self) -> list[types.ResourceTemplate]: ...

    async def list_prompts(self) -> list[types.Prompt]: ...

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None, *, timeout_s: float
    ) -> types.CompleteResult:
        """completion/complete; ``ref`` is ``{"type": "ref/prompt", "name"}`` or ``{"type": "ref/resource", "uri"}``."""
        ...

    async def subscribe_resource(self, uri: str, *, timeout_s: float) -> types.EmptyResult: ...

    async def unsubscribe_resource(self, uri: str, *, timeout_s: float) -> types.EmptyResult: ...

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, timeout_s: float
    ) -> types.GetPromptResult: ...

    async def aclose(self) -> None: ...
