"""The MCP conformance suite's fixture server, on the SDK's low-level ``Server``.

The official suite (``@modelcontextprotocol/conformance``) drives a server by fixed names:
``test_simple_text``, ``test://static-text``, ``test_simple_prompt``... which exist only in the
suite's own TypeScript reference server. This module is checkrein's own server with the same names
and behaviours, so the suite can run against it directly and through the gateway in one CI run
(``tests/conformance/run.py``), without the reference server.

Run it as ``python -m checkrein.testing.conformance_server --port N`` (Streamable HTTP on
``127.0.0.1:N/mcp``, stateful sessions, SSE responses with resumable event ids), or with
``--stdio``.

Fixtures (what the suite checks, plus what the reference server does beyond it):

    tools      test_simple_text, test_image_content, test_audio_content, test_embedded_resource,
               test_multiple_content_types, test_tool_with_logging (3 ``notifications/message``
               on the call's stream), test_tool_with_progress (progress 0, 50, 100 of 100 against
               the caller's ``progressToken``; the result's text is the token),
               test_error_handling (``isError: true``), test_reconnection (closes the call's SSE
               stream mid-call when the client can resume, SEP-1699), test_sampling(prompt)
               (``sampling/createMessage``), test_elicitation(message),
               test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums
               (``elicitation/create``), json_schema_2020_12_tool (an input schema with
               ``$schema``, ``$defs`` and ``additionalProperties: false``)
    resources  test://static-text, test://static-binary (a PNG blob), test://watched-resource;
               template test://template/{id}/data; subscribe/unsubscribe (each logs one
               ``notifications/message``; subscribing also sends one
               ``notifications/resources/updated`` for the URI on the standalone stream)
    prompts    test_simple_prompt, test_prompt_with_arguments(arg1, arg2),
               test_prompt_with_embedded_resource(resourceUri), test_prompt_with_image
    logging    ``logging/setLevel`` answers ``{}``, logs "Log level set to: X" and filters later
               log messages of that connection below the level
    completion ``completion/complete`` for the prompt arguments and the template's ``id``
               (values that start with the typed prefix)

Capabilities: tools, resources (subscribe, listChanged), prompts and tools with listChanged,
logging, completions. It imports only ``mcp`` and the standard library.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import JSONRPCMessage

__all__ = [
    "JSON_SCHEMA_2020_12",
    "RESOURCE_NOT_FOUND",
    "SERVER_NAME",
    "TEST_AUDIO_BASE64",
    "TEST_IMAGE_BASE64",
    "InMemoryEventStore",
    "build_server",
    "main",
]

SERVER_NAME = "mcp-conformance-test-server"
RESOURCE_NOT_FOUND = -32002
"""JSON-RPC error code for an unknown resource URI (the spec's ``Resource not found``)."""

TEST_IMAGE_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
"""A 1x1 red PNG pixel."""
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
"""A minimal WAV file."""

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
"""SEP-1613: the input schema whose ``$schema``, ``$defs`` and ``additionalProperties`` must survive."""

_LOGGER = "conformance-test-server"
_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
)  # fmt: skip
_TEMPLATE = "test://template/{id}/data"
_TEMPLATE_RE = re.compile(r"^test://template/([^/]+)/data$")
_COMPLETIONS = {
    "arg1": ("test", "testValue1", "paris", "park", "party"),
    "arg2": ("test", "testValue2", "tokyo", "toronto"),
    "resourceUri": ("test://static-text", "test://static-binary", "test://watched-resource"),
    "id": ("1", "123", "42"),
}
_RETRY_MS = 1000
"""The SSE ``retry`` the server suggests (the reference says 5000; the value is not checked)."""

Ctx = ServerRequestContext[Any, Any]

# The suite tests logging and sampling, which the 2026-07-28 era deprecates; using them is the point.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=re.escape(__name__))


class InMemoryEventStore(EventStore):
    """Keeps every SSE event of the process so a client can resume a stream with ``Last-Event-ID``."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, JSONRPCMessage | None]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = f"{stream_id}:{next(self._ids)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id), None)
        if index is None:
            return None
        stream_id = self._events[index][1]
        for event_id, sid, message in self._events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


class _State:
    """Process-wide state: subscriptions and each connection's log level."""

    def __init__(self) -> None:
        self.subscriptions: set[str] = set()
        self.log_levels: dict[str, int] = {}

    @staticmethod
    def connection_key(ctx: Ctx) -> str:
        headers = getattr(ctx.request, "headers", None) or {}
        return str(headers.get("mcp-session-id", ""))

    async def log(self, ctx: Ctx, level: types.LoggingLevel, data: Any, *, logger: str | None = _LOGGER) -> None:
        """A ``notifications/message`` on this request's stream, unless below the connection's level."""
        if _LEVELS.index(level) < self.log_levels.get(self.connection_key(ctx), 0):
            return
        await ctx.session.send_log_message(level, data, logger=logger, related_request_id=ctx.request_id)


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def _schema(props: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props or {}}
    if required:
        schema["required"] = required
    return schema


def _tool(name: str, description: str, arg: tuple[str, str] | None = None) -> types.Tool:
    """A fixture tool with no argument, or one required string argument ``(name, description)``."""
    if arg is None:
        return types.Tool(name=name, description=description, input_schema=_schema())
    props = {arg[0]: {"type": "string", "description": arg[1]}}
    return types.Tool(name=name, description=description, input_schema=_schema(props, [arg[0]]))


_TOOLS: tuple[types.Tool, ...] = (
    _tool("test_simple_text", "Tests simple text content response"),
    _tool("test_image_content", "Tests image content response"),
    _tool("test_audio_content", "Tests audio content response"),
    _tool("test_embedded_resource", "Tests embedded resource content response"),
    _tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
    _tool("test_tool_with_logging", "Tests tool that emits log messages during execution"),
    _tool("test_tool_with_progress", "Tests tool that reports progress notifications"),
    _tool("test_error_handling", "Tests error response handling"),
    _tool(
        "test_reconnection",
        "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close "
        "the stream mid-call and send the result after client reconnects.",
    ),
    _tool(
        "test_sampling",
        "Tests server-initiated sampling (LLM completion request)",
        ("prompt", "The prompt to send to the LLM"),
    ),
    _tool(
        "test_elicitation",
        "Tests server-initiated elicitation (user input request)",
        ("message", "The message to show the user"),
    ),
    _tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034"),
    _tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330"),
    types.Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        input_schema=JSON_SCHEMA_2020_12,
    ),
)

_SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

def _choices(prefix: str, titles: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{i}", "title": t} for i, t in enumerate(titles, 1)]


_OPTIONS = ["option1", "option2", "option3"]
_SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Select one option", "enum": _OPTIONS},
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": _choices("value", ("First Option", "Second Option", "Third Option")),
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": _OPTIONS},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {"anyOf": _choices("value", ("First Choice", "Second Choice", "Third Choice"))},
        },
    },
    "required": [],
}

_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"response": {"type": "string", "description": "User's response"}},
    "required": ["response"],
}

_RESOURCES: tuple[types.Resource, ...] = tuple(
    types.Resource(uri=f"test://{name}", name=name, title=title, description=description, mime_type=mime)
    for name, title, description, mime in (
        ("static-text", "Static Text Resource", "A static text resource for testing", "text/plain"),
        ("static-binary", "Static Binary Resource", "A static binary resource (image) for testing", "image/png"),
        ("watched-resource", "Watched Resource", "A resource that announces updates to its subscribers", "text/plain"),
    )
)

_PROMPTS: tuple[types.Prompt, ...] = (
    types.Prompt(name="test_simple_prompt", title="Simple Test Prompt", description="A simple prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        title="Prompt With Arguments",
        description="A prompt with required arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        title="Prompt With Embedded Resource",
        description="A prompt that includes an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", title="Prompt With Image", description="A prompt that includes image content"),
)


async def _elicit(ctx: Ctx, message: str, schema: dict[str, Any], label: str) -> types.CallToolResult:
    try:
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    except MCPError as exc:
        return _text(f"Elicitation not supported or error: {exc}")
    return _text(f"{label}: action={result.action}, content={json.dumps(result.content or {})}")


async def _sampling(ctx: Ctx, prompt: str) -> types.CallToolResult:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    try:
        result = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)
    except MCPError as exc:
        return _text(f"Sampling not supported or error: {exc}")
    text = result.content.text if isinstance(result.content, types.TextContent) else "No response"
    return _text(f"LLM response: {text}")


async def _logging_tool(st: _State, ctx: Ctx) -> types.CallToolResult:
    for i, step in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await anyio.sleep(0.05)
        await st.log(ctx, "info", step, logger=None)
    return _text("Tool with logging executed successfully")


async def _progress_tool(ctx: Ctx) -> types.CallToolResult:
    token = (ctx.meta or {}).get("progress_token")
    for i, step in enumerate((0, 50, 100)):
        if i:
            await anyio.sleep(0.05)
        await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
    return _text(str(token) if token is not None else "no progress token")


async def _reconnection_tool(ctx: Ctx) -> types.CallToolResult:
    # The SDK offers the callback only when the client can resume (2025-11-25+, an event store).
    if ctx.close_sse_stream is not None:
        await ctx.close_sse_stream()
    await anyio.sleep(0.1)
    return _text(
        "Reconnection test completed successfully. If you received this, the client properly "
        "reconnected after stream closure."
    )


def _call_handlers(st: _State) -> dict[str, Callable[[Ctx, dict[str, Any]], Awaitable[types.CallToolResult]]]:
    image = types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")

    async def simple(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text("This is a simple text response for testing.")

    async def image_tool(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=[image])

    async def audio(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.AudioContent(type="audio", data=TEST_AUDIO_BASE64, mime_type="audio/wav")]
        )

    async def embedded(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=resource)])

    async def mixed(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="Multiple content types test:"),
                image,
                types.EmbeddedResource(type="resource", resource=resource),
            ]
        )

    async def error(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text("This tool intentionally returns an error for testing", is_error=True)

    async def schema_tool(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text(f"JSON Schema 2020-12 tool called with: {json.dumps(args)}")

    return {
        "test_simple_text": simple,
        "test_image_content": image_tool,
        "test_audio_content": audio,
        "test_embedded_resource": embedded,
        "test_multiple_content_types": mixed,
        "test_tool_with_logging": lambda ctx, args: _logging_tool(st, ctx),
        "test_tool_with_progress": lambda ctx, args: _progress_tool(ctx),
        "test_error_handling": error,
        "test_reconnection": lambda ctx, args: _reconnection_tool(ctx),
        "test_sampling": lambda ctx, args: _sampling(ctx, str(args.get("prompt", ""))),
        "test_elicitation": lambda ctx, args: _elicit(
            ctx, str(args.get("message", "")), _RESPONSE_SCHEMA, "User response"
        ),
        "test_elicitation_sep1034_defaults": lambda ctx, args: _elicit(
            ctx, "Please review and update the form fields with defaults", _SEP1034_SCHEMA, "Elicitation completed"
        ),
        "test_elicitation_sep1330_enums": lambda ctx, args: _elicit(
            ctx, "Please select options from the enum fields", _SEP1330_SCHEMA, "Elicitation completed"
        ),
        "json_schema_2020_12_tool": schema_tool,
    }


_TEXTS = {
    "test://static-text": "This is the content of the static text resource.",
    "test://watched-resource": "Watched resource content",
}


def _read(uri: str) -> types.ReadResourceResult:
    contents: types.TextResourceContents | types.BlobResourceContents
    match = _TEMPLATE_RE.match(uri)
    if uri in _TEXTS:
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=_TEXTS[uri])
    elif uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=TEST_IMAGE_BASE64)
    elif match:
        ident = match.group(1)
        text = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"})
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
    else:
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    return types.ReadResourceResult(contents=[contents])


def _prompt(name: str, args: dict[str, str]) -> types.GetPromptResult:
    def user(content: types.ContentBlock) -> types.PromptMessage:
        return types.PromptMessage(role="user", content=content)

    def text(value: str) -> types.TextContent:
        return types.TextContent(type="text", text=value)

    if name == "test_simple_prompt":
        return types.GetPromptResult(messages=[user(text("This is a simple prompt for testing."))])
    if name == "test_prompt_with_arguments":
        missing = [a for a in ("arg1", "arg2") if a not in args]
        if missing:
            raise MCPError(types.INVALID_PARAMS, f"missing required argument(s): {', '.join(missing)}")
        body = f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"
        return types.GetPromptResult(messages=[user(text(body))])
    if name == "test_prompt_with_embedded_resource":
        if "resourceUri" not in args:
            raise MCPError(types.INVALID_PARAMS, "missing required argument: resourceUri")
        resource = types.TextResourceContents(
            uri=args["resourceUri"], mime_type="text/plain", text="Embedded resource content for testing."
        )
        return types.GetPromptResult(
            messages=[
                user(types.EmbeddedResource(type="resource", resource=resource)),
                user(text("Please process the embedded resource above.")),
            ]
        )
    if name == "test_prompt_with_image":
        image = types.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")
        return types.GetPromptResult(messages=[user(image), user(text("Please analyze the image above."))])
    raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {name}")


class _ConformanceServer(Server[Any]):
    """Advertises ``listChanged`` on every transport (HTTP builds its options without arguments)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def build_server() -> Server[Any]:
    """The fixture server, ready to run on any transport; state lives in the returned server."""
    st = _State()
    calls = _call_handlers(st)

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(_TOOLS))

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = calls.get(params.name)
        if handler is None:
            return _text(f"Unknown tool: {params.name}", is_error=True)
        return await handler(ctx, dict(params.arguments or {}))

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list(_RESOURCES))

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=_TEMPLATE,
            name="template",
            title="Resource Template",
            description="A resource template with parameter substitution",
            mime_type="application/json",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return _read(str(params.uri))

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        st.subscriptions.add(uri)
        await st.log(ctx, "info", f"Subscribed to resource: {uri}")
        await ctx.session.send_resource_updated(uri)
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        st.subscriptions.discard(uri)
        await st.log(ctx, "info", f"Unsubscribed from resource: {uri}")
        return types.EmptyResult()

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=list(_PROMPTS))

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return _prompt(params.name, dict(params.arguments or {}))

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        st.log_levels[st.connection_key(ctx)] = _LEVELS.index(params.level)
        await st.log(ctx, "info", f"Log level set to: {params.level}")
        return types.EmptyResult()

    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        known = (isinstance(ref, types.PromptReference) and any(p.name == ref.name for p in _PROMPTS)) or (
            isinstance(ref, types.ResourceTemplateReference) and ref.uri == _TEMPLATE
        )
        candidates = _COMPLETIONS.get(params.argument.name, ()) if known else ()
        values = [v for v in candidates if v.startswith(params.argument.value)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    server = _ConformanceServer(
        SERVER_NAME,
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_set_logging_level=set_level,
        on_completion=complete,
    )
    # No tracing spans in a test double.
    server.middleware = []
    return server


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write):
        sys.stderr.write("conformance_server ready\n")
        sys.stderr.flush()
        await server.run(read, write, server.create_initialization_options())


def _serve_http(port: int) -> None:
    import uvicorn

    # Loopback host: the SDK turns on its DNS-rebinding (Host/Origin) checks, which the suite tests.
    app = build_server().streamable_http_app(
        host="127.0.0.1", event_store=InMemoryEventStore(), retry_interval=_RETRY_MS
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m checkrein.testing.conformance_server")
    parser.add_argument("--port", type=int, default=3000, help="Streamable HTTP port on 127.0.0.1 (endpoint /mcp)")
    parser.add_argument("--stdio", action="store_true", help="serve stdio instead of HTTP")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    if args.stdio:
        anyio.run(_serve_stdio)
    else:
        _serve_http(args.port)


if __name__ == "__main__":
    main()
