"""The merged catalog as ONE MCP server on the SDK's low-level `Server`.

Handlers are thin: build a `ToolCall` (`context.CallFactory`), hand it to the `Gate`, return what
the gate returns. Refused resource reads and prompt gets become JSON-RPC errors (those results have
no ``isError``); refused tool calls are ``isError`` results built by the gate.

list_changed: when the gate's catalog changes, handshake-era clients get
``notifications/tools/list_changed`` on their connection, and 2026-07-28 clients get it on their
``subscriptions/listen`` streams (the SDK drops bare change notifications at that era).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from checkrein import __version__
from checkrein.gate.pipeline import Gate
from checkrein.gate.steps import CallRefused

from .context import CallFactory

__all__ = ["GatewayServer", "REFUSED_ERROR_CODE"]

log = logging.getLogger("checkrein.frontend")

REFUSED_ERROR_CODE = -32001
"""JSON-RPC error code of a refused resource read or prompt get; ``data.code`` is checkrein's code."""


class GatewayServer:
    """Owns the low-level `Server` for one frontend (stdio or HTTP) in front of ``gate``."""

    def __init__(self, gate: Gate, calls: CallFactory) -> None:
        self.gate = gate
        self.calls = calls
        self.bus = InMemorySubscriptionBus()
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.server: Server[Any] = Server(
            gate.config.gateway.name,
            version=__version__,
            instructions="Tools of several MCP servers behind checkrein; each tool name is <server>"
            f"{gate.separator}<tool>. Every call is checked against policy and audited.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        # No tracing middleware on the hot path; checkrein carries its own trace ids into the audit.
        self.server.middleware = []
        self._remove_listener = gate.add_catalog_listener(self._catalog_changed)

    def initialization_options(self) -> InitializationOptions:
        return self.server.create_initialization_options(
            NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True)
        )

    def close(self) -> None:
        self._remove_listener()

    def _remember(self, ctx: ServerRequestContext[Any, Any]) -> None:
        # The SDK exposes no public handle to a connection's standalone channel outside a request;
        # keep a weak reference to it so list_changed reaches idle handshake-era clients too.
        conn = getattr(ctx.session, "_connection", None)
        if conn is not None:
            self._connections.add(conn)

    async def _catalog_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        await self.bus.publish(PromptsListChanged())
        await self.bus.publish(ResourcesListChanged())
        for conn in list(self._connections):
            await conn.send_tool_list_changed()

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        await self.gate.reload_lock_if_changed()
        return types.ListToolsResult(tools=self.gate.tools_for(self.calls.identity(ctx)))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        call = self.calls.make(ctx, kind="tool", name=params.name, arguments=dict(params.arguments or {}))
        elicitor = self.gate.elicitor
        if elicitor is None:
            return await self.gate.call_tool(call)
        # An approver may need to ask this very client (elicitation) while the call is held.
        elicitor.register(call.session_id, ctx.session, ctx.request_id)
        try:
            return await self.gate.call_tool(call)
        finally:
            elicitor.unregister(call.session_id)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self._remember(ctx)
        return types.ListResourcesResult(resources=await self.gate.resources_for(self.calls.identity(ctx)))

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        call = self.calls.make(ctx, kind="resource", name=str(params.uri), arguments={"uri": str(params.uri)})
        try:
            result = await self.gate.read_resource(call)
        except CallRefused as exc:
            raise MCPError(REFUSED_ERROR_CODE, exc.message, {"code": exc.code}) from None
        # The client asked for the exposed URI; answer in its terms, not the upstream's.
        contents = [c.model_copy(update={"uri": str(params.uri)}) for c in result.contents]
        return result.model_copy(update={"contents": contents})

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self._remember(ctx)
        return types.ListPromptsResult(prompts=await self.gate.prompts_for(self.calls.identity(ctx)))

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        call = self.calls.make(ctx, kind="prompt", name=params.name, arguments=dict(params.arguments or {}))
        try:
            return await self.gate.get_prompt(call)
        except CallRefused as exc:
            raise MCPError(REFUSED_ERROR_CODE, exc.message, {"code": exc.code}) from None
