"""The merged catalog as ONE MCP server on the SDK's low-level `Server`.

Handlers are thin: build a `ToolCall` (`context.CallFactory`), hand it to the `Gate`, return what
the gate returns. Refused resource reads and prompt gets become JSON-RPC errors (those results have
no ``isError``); refused tool calls are ``isError`` results built by the gate.

list_changed: when the gate's catalog changes, handshake-era clients get
``notifications/tools/list_changed`` on their connection, and 2026-07-28 clients get it on their
``subscriptions/listen`` streams (the SDK drops bare change notifications at that era); the same for
an upstream's resource and prompt list changes.

Relaying: while the gate handles a client's request, that request is the `Downstream` an upstream's
progress, log messages and sampling/elicitation/roots requests go to (`frontend.downstream`,
`checkrein.gate.relay`). ``logging/setLevel`` is fanned out to the upstreams; subscriptions are kept
per client and ``notifications/resources/updated`` reaches the clients that subscribed. What is
advertised is what is relayed, the same over stdio and HTTP (`_GatewayServer`).
"""

from __future__ import annotations

import logging
import warnings
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
from checkrein.gate.chain import CallRefused
from checkrein.gate.pipeline import Gate
from checkrein.policy import ToolCall
from checkrein.upstream.relay import Downstream

from .context import CallFactory
from .downstream import ClientRequest, LogLevels, Subscriptions, relaying

__all__ = ["GatewayServer", "REFUSED_ERROR_CODE"]

log = logging.getLogger("checkrein.frontend")

REFUSED_ERROR_CODE = -32001
"""JSON-RPC error code of a refused resource read or prompt get; ``data.code`` is checkrein's code."""


_NOTIFICATIONS = NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True)


class _GatewayServer(Server[Any]):
    """The SDK's HTTP session manager asks for the initialization options without arguments;
    stdio passes them. Both must advertise the same list_changed support."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: Any = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or _NOTIFICATIONS, experimental_capabilities, extensions
        )


class GatewayServer:
    """Owns the low-level `Server` for one frontend (stdio or HTTP) in front of ``gate``."""

    def __init__(self, gate: Gate, calls: CallFactory) -> None:
        self.gate = gate
        self.calls = calls
        self.bus = InMemorySubscriptionBus()
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.levels = LogLevels()
        self.subscriptions = Subscriptions()
        with warnings.catch_warnings():
            # The SDK warns that logging/setLevel is gone at 2026-07-28; handshake-era clients use it.
            warnings.simplefilter("ignore")
            self.server: Server[Any] = _GatewayServer(
                gate.config.gateway.name,
                version=__version__,
                instructions="Tools of several MCP servers behind checkrein. Every call is checked against "
                "policy and audited; a refused call says why.",
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_list_resources=self._list_resources,
                on_read_resource=self._read_resource,
                on_list_prompts=self._list_prompts,
                on_get_prompt=self._get_prompt,
                on_list_resource_templates=self._list_resource_templates,
                on_completion=self._complete,
                on_subscribe_resource=self._subscribe,
                on_unsubscribe_resource=self._unsubscribe,
                on_set_logging_level=self._set_logging_level,
                on_roots_list_changed=self._roots_changed,
                on_subscriptions_listen=ListenHandler(self.bus),
            )
        # No tracing middleware on the hot path; checkrein carries its own trace ids into the audit.
        self.server.middleware = []
        self._remove_listener = gate.add_catalog_listener(self._catalog_changed)
        relay = gate.relay
        self._remove_relay = relay.add_listener(self._relayed) if relay is not None else (lambda: None)

    def initialization_options(self) -> InitializationOptions:
        return self.server.create_initialization_options(_NOTIFICATIONS)

    def close(self) -> None:
        self._remove_listener()
        self._remove_relay()

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

    async def _relayed(self, event: str, value: str) -> None:
        """An upstream's resource update or resource/prompt list change, for our clients."""
        if event == "resource_updated":
            for key, session in list(self.subscriptions.items(value)):
                try:
                    await session.send_resource_updated(value)
                except Exception:  # that client went away: forget its subscriptions
                    log.debug("dropping the subscriptions of a client that went away", exc_info=True)
                    self.subscriptions.drop(key)
            return
        await self.bus.publish(ResourcesListChanged() if value == "resources" else PromptsListChanged())
        for conn in list(self._connections):
            if value == "resources":
                await conn.send_resource_list_changed()
            else:
                await conn.send_prompt_list_changed()

    async def _list(self, ctx: ServerRequestContext[Any, Any], method: str) -> Any:
        """A listing, as a request through the gate (audited, judged by the policy)."""
        call = self.calls.make(ctx, kind="list", name=method, arguments={})
        return await self._request(ctx, call)

    async def _request(self, ctx: ServerRequestContext[Any, Any], call: ToolCall) -> Any:
        try:
            with relaying(ClientRequest(ctx, call, self.levels)):
                return await self.gate.request(call)
        except CallRefused as exc:
            code = exc.rpc_code if exc.rpc_code is not None else REFUSED_ERROR_CODE
            raise MCPError(code, exc.message, {"code": exc.code}) from None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        await self.gate.reload_lock_if_changed()
        result: types.ListToolsResult = await self._list(ctx, "tools/list")
        return result

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        """The result as JSON: the SDK's runner serializes a dict as it does a model (its
        ``HandlerResult``), so a relayed result never becomes a model on its way through."""
        call = self.calls.make(ctx, kind="tool", name=params.name, arguments=dict(params.arguments or {}))
        if params.request_state is not None or params.input_responses:
            # A 2026-era client answering the approval form of an earlier round of this call.
            taken = await self.gate.accept_input(call, params.request_state, params.input_responses)
            log.debug("approval answer for %s: %s", call.exposed_name, taken)
        return await self.call_tool_json(call, ClientRequest(ctx, call, self.levels), ctx.session, ctx.request_id)

    async def call_tool_json(
        self, call: ToolCall, downstream: Downstream, session: Any, request_id: Any
    ) -> dict[str, Any] | types.InputRequiredResult:
        """Run a tools/call through the gate with ``downstream`` as the client its upstream's
        messages go to, and ``session`` (an `ElicitingSession`) as the one an approver may ask.
        The result as JSON (wire names), or the 2026-era ``input_required`` answer of a call that
        needs approval."""
        elicitor = self.gate.elicitor
        with relaying(downstream):
            if elicitor is None:
                out = await self.gate.run(call)
            else:
                # An approver may need to ask this very client (elicitation) while the call is held.
                elicitor.register(call, session, request_id)
                try:
                    out = await self.gate.run(call)
                finally:
                    elicitor.unregister(call)
        if out.pending is not None:
            return self.gate.input_required(out.pending)
        return self.gate.result_json(out)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self._remember(ctx)
        result: types.ListResourcesResult = await self._list(ctx, "resources/list")
        return result

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        self._remember(ctx)
        result: types.ListResourceTemplatesResult = await self._list(ctx, "resources/templates/list")
        return result

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        call = self.calls.make(ctx, kind="resource", name=str(params.uri), arguments={"uri": str(params.uri)})
        result: types.ReadResourceResult = await self._request(ctx, call)
        return result

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self._remember(ctx)
        result: types.ListPromptsResult = await self._list(ctx, "prompts/list")
        return result

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        call = self.calls.make(ctx, kind="prompt", name=params.name, arguments=dict(params.arguments or {}))
        result: types.GetPromptResult = await self._request(ctx, call)
        return result

    async def _complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref.model_dump(by_alias=True, exclude_none=True, mode="json")
        arguments: dict[str, Any] = {"ref": ref, "argument": params.argument.model_dump(mode="json")}
        if params.context is not None:
            arguments["context"] = params.context.model_dump(by_alias=True, exclude_none=True, mode="json")
        name = str(ref.get("name") or ref.get("uri") or "")
        call = self.calls.make(ctx, kind="completion", name=name, arguments=arguments)
        result: types.CompleteResult = await self._request(ctx, call)
        return result

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        call = self.calls.make(ctx, kind="subscribe", name=uri, arguments={"uri": uri})
        # Registered first: an upstream may announce an update before it answers the subscribe.
        self.subscriptions.add(uri, call.session_id, ctx.session)
        try:
            await self._request(ctx, call)  # judged and audited for every client; upstreams take repeats
        except BaseException:
            self.subscriptions.remove(uri, call.session_id)
            raise
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        call = self.calls.make(ctx, kind="unsubscribe", name=uri, arguments={"uri": uri})
        if self.subscriptions.remove(uri, call.session_id):
            await self._request(ctx, call)
        return types.EmptyResult()

    async def _set_logging_level(self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        """Remember this client's level (log messages below it are not relayed to it) and ask the
        upstreams for the most verbose level any client wants."""
        session_key = self.calls.session_id(ctx)
        await self.gate.set_logging_level(self.levels.set(session_key, params.level))
        return types.EmptyResult()

    async def _roots_changed(self, ctx: ServerRequestContext[Any, Any], params: Any) -> None:
        await self.gate.roots_changed()
