"""``MemoryUpstream``: an in-memory ``Upstream`` whose tools are Python callables.

For unit tests of the gate, frontend and catalog without subprocesses::

    up = MemoryUpstream("files")
    up.add_tool("read", lambda args: f"contents of {args['path']}", annotations={"readOnlyHint": True})
    result = await up.call_tool("read", {"path": "a"}, timeout_s=1)

A tool callable takes the arguments dict and may be sync or async. What it returns becomes the
result: a ``CallToolResult`` as is, a ``str`` as one text item, a ``dict`` as structured content
(plus its JSON as text), anything else as its JSON text. An exception that is a
``CheckreinError`` (e.g. ``UpstreamUnavailable``) propagates, as the real upstream's would; any
other exception becomes an ``isError`` result, as a real server reports a failing tool.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import anyio
import mcp.types as types

from checkrein.catalog.model import ToolDefinition
from checkrein.errors import CheckreinError, UpstreamRequestFailed, UpstreamTimeout, UpstreamUnavailable
from checkrein.upstream.base import ToolsChanged, UpstreamInfo, UpstreamState

__all__ = ["MemoryUpstream", "ToolFunction"]

ToolFunction = Callable[[dict[str, Any]], Any | Awaitable[Any]]


def _as_result(value: Any) -> types.CallToolResult:
    if isinstance(value, types.CallToolResult):
        return value
    if isinstance(value, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])
    text = json.dumps(value, sort_keys=True, default=str)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


class MemoryUpstream:
    """An ``Upstream`` held in memory. ``calls`` records every forwarded ``(tool, arguments)``.

    ``fail_start`` makes ``start()`` raise ``UpstreamUnavailable`` with that message (and the
    state become ``failed``); ``go_down(reason)`` makes every later call raise
    ``UpstreamUnavailable`` until ``start()`` succeeds again.
    """

    def __init__(
        self,
        name: str,
        tools: Iterable[tuple[ToolDefinition, ToolFunction]] = (),
        *,
        resources: Mapping[str, str] | None = None,
        prompts: Mapping[str, str] | None = None,
        on_tools_changed: ToolsChanged | None = None,
        fail_start: str | None = None,
    ) -> None:
        self.name = name
        self._tools: dict[str, tuple[ToolDefinition, ToolFunction]] = {}
        for definition, fn in tools:
            self._tools[definition.name] = (definition, fn)
        self._resources = dict(resources or {})
        """uri -> text"""
        self._prompts = dict(prompts or {})
        """prompt name -> template using ``{argument}`` placeholders"""
        self.on_tools_changed = on_tools_changed
        self.fail_start = fail_start
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.subscriptions: set[str] = set()
        """URIs a client subscribed to (through the gate)."""
        self._state: UpstreamState = "starting"
        self._error: str | None = None
        self._restarts = 0
        self._started_once = False

    # -- building -------------------------------------------------------------------------

    def add_tool(
        self,
        name: str,
        fn: ToolFunction,
        *,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> ToolDefinition:
        """Add (or replace) a tool; returns its definition. Does not announce a change."""
        definition = ToolDefinition(
            server=self.name,
            name=name,
            description=description,
            input_schema=input_schema if input_schema is not None else {"type": "object"},
            output_schema=output_schema,
            annotations=annotations,
            title=title,
        )
        self._tools[name] = (definition, fn)
        return definition

    async def change_tool(self, definition: ToolDefinition, fn: ToolFunction | None = None) -> None:
        """Replace a tool's definition (drift) and announce it like ``list_changed`` would."""
        _, old_fn = self._tools.get(definition.name, (definition, fn))
        self._tools[definition.name] = (definition, fn or old_fn or (lambda args: ""))
        if self.on_tools_changed is not None:
            await self.on_tools_changed(self.name)

    def go_down(self, reason: str = "connection lost") -> None:
        """Simulate a crash: calls fail with ``UpstreamUnavailable`` until ``start()``."""
        self._state = "crashed"
        self._error = reason

    # -- the Upstream protocol --------------------------------------------------------------

    @property
    def info(self) -> UpstreamInfo:
        return UpstreamInfo(
            name=self.name,
            transport="memory",
            state=self._state,
            server_name=self.name,
            server_version="memory",
            protocol_version=None,
            error=self._error,
            restarts=self._restarts,
        )

    async def start(self) -> None:
        if self.fail_start is not None:
            self._state = "failed"
            self._error = self.fail_start
            raise UpstreamUnavailable(f"{self.name} failed to start: {self.fail_start}")
        if self._started_once:
            self._restarts += 1
        self._started_once = True
        self._state = "ready"
        self._error = None

    async def tools(self) -> list[ToolDefinition]:
        return [definition for definition, _ in self._tools.values()]

    async def call_tool(self, name: str, arguments: dict[str, Any], *, timeout_s: float) -> types.CallToolResult:
        self._check_up()
        self.calls.append((name, arguments))
        entry = self._tools.get(name)
        if entry is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
            )
        _, fn = entry
        try:
            with anyio.fail_after(timeout_s):
                value = fn(arguments)
                if inspect.isawaitable(value):
                    value = await value
        except TimeoutError:
            raise UpstreamTimeout(f"{self.name}: tool {name!r} did not answer within {timeout_s:g} s") from None
        except CheckreinError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing tool is an isError result, as from a real server
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"{type(exc).__name__}: {exc}")], is_error=True
            )
        return _as_result(value)

    async def list_resources(self) -> list[types.Resource]:
        return [types.Resource(uri=uri, name=uri.rsplit("/", 1)[-1] or uri) for uri in self._resources]

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return []

    async def read_resource(self, uri: str, *, timeout_s: float) -> types.ReadResourceResult:
        self._check_up()
        if uri not in self._resources:
            raise UpstreamRequestFailed(
                f"{self.name}: resources/read {uri!r} failed: Resource not found (JSON-RPC error -32002)",
                rpc_code=-32002,
                rpc_message="Resource not found",
            )
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=self._resources[uri])])

    async def list_prompts(self) -> list[types.Prompt]:
        return [types.Prompt(name=name) for name in self._prompts]

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None, *, timeout_s: float
    ) -> types.GetPromptResult:
        self._check_up()
        if name not in self._prompts:
            raise UpstreamRequestFailed(
                f"{self.name}: prompts/get {name!r} failed: Unknown prompt (JSON-RPC error -32602)",
                rpc_code=-32602,
                rpc_message=f"Unknown prompt: {name}",
            )
        text = self._prompts[name].format_map(dict(arguments or {}))
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        return types.GetPromptResult(messages=[message])

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None, *, timeout_s: float
    ) -> types.CompleteResult:
        """Completes a prompt argument from the prompt's name and the value typed so far."""
        self._check_up()
        self.calls.append(("completion/complete", {"ref": ref, "argument": argument, "context": context}))
        value = str(argument.get("value", ""))
        candidates = [f"{value}{suffix}" for suffix in ("-one", "-two")]
        return types.CompleteResult(completion=types.Completion(values=candidates, total=len(candidates), has_more=False))

    async def subscribe_resource(self, uri: str, *, timeout_s: float) -> types.EmptyResult:
        self._check_up()
        self.subscriptions.add(uri)
        return types.EmptyResult()

    async def unsubscribe_resource(self, uri: str, *, timeout_s: float) -> types.EmptyResult:
        self._check_up()
        self.subscriptions.discard(uri)
        return types.EmptyResult()

    async def aclose(self) -> None:
        self._state = "closed"

    def _check_up(self) -> None:
        if self._state in ("crashed", "failed", "closed"):
            raise UpstreamUnavailable(f"{self.name} is {self._state}: {self._error or 'not running'}")
