"""A real MCP server for tests and benchmarks, on the SDK's low-level ``Server``.

Run it as ``python -m checkrein.testing.echo_server [options]``:

    (no option)        stdio, both protocol eras (``initialize`` and ``server/discover``)
    --legacy-only      stdio, only the 2025-11-25 ``initialize`` handshake (like an ``mcp`` 1.x server)
    --modern-only      stdio, refuses ``initialize`` with -32022: only ``server/discover`` (2026-07-28)
    --http --port N    Streamable HTTP on 127.0.0.1:N, endpoint ``/mcp``
    --sse --port N     legacy SSE on 127.0.0.1:N, endpoint ``/sse`` (messages to ``/messages/``)
    --garbage          prints non-JSON on stdout, a line on stderr, and exits 2 (a broken server)

Tools: ``echo(text)`` returns ``text``; ``add(a, b)`` returns the integer sum (also as structured
content); ``slow(seconds)`` sleeps then returns ``"slept"``; ``crash()`` exits the process mid-call
(``os._exit(1)``); ``fail()`` returns ``isError: true``; ``header(name)`` returns that HTTP request
header (empty on stdio); ``meta(key)`` returns that key of the request's ``_meta`` (empty when
absent); ``mutate()`` appends `` (mutated)`` to
``echo``'s description, adds a tool ``added`` and a resource ``echo://added``, and sends
``notifications/tools/list_changed`` and ``notifications/resources/list_changed`` (to
``subscriptions/listen`` streams too). One resource ``echo://readme``, one resource template
``echo://notes/{name}`` and one prompt ``greet(name)``.

Environment:

    ECHO_SERVER_DESCRIPTION   ``echo``'s description (for drift tests)
    ECHO_SERVER_STATE         path of a file whose text, when it exists, is ``echo``'s description
                              (read on every ``tools/list``, so a test can change it live)
    ECHO_SERVER_TOOLS=N       also expose ``tool_0`` ... ``tool_{N-1}``; ``tools/list`` pages hold 50
    ECHO_SERVER_NAME          the server's name in its ``serverInfo`` (default ``echo``)
    ECHO_SERVER_HTTP_STATUS   ``TOOL=STATUS[,TOOL=STATUS...]``: over Streamable HTTP, a ``tools/call``
                              of TOOL is answered with that HTTP status and a plain-text body (like
                              a proxy in front of the server that refuses: 401, 403, 501...)

The server writes one line ``echo_server ready`` to stderr when it serves stdio, and nothing but
protocol messages to stdout. ``mutate()`` state lives in the process, so over HTTP every session
of one server sees it. It imports only ``mcp`` and the standard library, so it also runs as a
script path (``python .../echo_server.py``), which skips importing ``checkrein`` and starts
faster; the upstream tests do that.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION

__all__ = ["PAGE_SIZE", "build_server", "main"]

PAGE_SIZE = 50


class _State:
    def __init__(self) -> None:
        self.mutated = False
        self.extra_tools = int(os.environ.get("ECHO_SERVER_TOOLS", "0") or 0)
        self.bus = InMemorySubscriptionBus()

    def echo_description(self) -> str:
        state_file = os.environ.get("ECHO_SERVER_STATE")
        description = os.environ.get("ECHO_SERVER_DESCRIPTION", "Echo the given text back.")
        if state_file and Path(state_file).exists():
            description = Path(state_file).read_text(encoding="utf-8").strip()
        return description + (" (mutated)" if self.mutated else "")

    def tools(self) -> list[types.Tool]:
        def obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
            return {"type": "object", "properties": props, "required": required}

        tools = [
            types.Tool(
                name="echo",
                description=self.echo_description(),
                input_schema=obj({"text": {"type": "string"}}, ["text"]),
                annotations=types.ToolAnnotations(read_only_hint=True),
            ),
            types.Tool(
                name="add",
                title="Add",
                description="Add two integers.",
                input_schema=obj({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
                output_schema=obj({"sum": {"type": "integer"}}, ["sum"]),
            ),
            types.Tool(
                name="slow",
                description="Sleep for `seconds`, then answer.",
                input_schema=obj({"seconds": {"type": "number"}}, ["seconds"]),
            ),
            types.Tool(name="crash", description="Exit the server process mid-call.", input_schema=obj({}, [])),
            types.Tool(name="fail", description="Return a tool error.", input_schema=obj({}, [])),
            types.Tool(
                name="server_error",
                description="Answer with the JSON-RPC error -32000 (a server's own error, not a closed connection).",
                input_schema=obj({}, []),
            ),
            types.Tool(
                name="header",
                description="Return an HTTP request header's value.",
                input_schema=obj({"name": {"type": "string"}}, ["name"]),
            ),
            types.Tool(
                name="meta",
                description="Return a key of the request's _meta (e.g. traceparent).",
                input_schema=obj({"key": {"type": "string"}}, ["key"]),
                annotations=types.ToolAnnotations(read_only_hint=True),
            ),
            types.Tool(
                name="mutate",
                description="Change echo's definition and announce list_changed.",
                input_schema=obj({}, []),
            ),
        ]
        if self.mutated:
            tools.append(types.Tool(name="added", description="Added by mutate().", input_schema=obj({}, [])))
        tools += [
            types.Tool(name=f"tool_{i}", description=f"Filler tool {i}.", input_schema=obj({}, []))
            for i in range(self.extra_tools)
        ]
        return tools


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def _refuse_handshake(ctx: Any, call_next: Any) -> Any:
    if ctx.method == "initialize":
        data = {"supported": ["2026-07-28"], "requested": str((ctx.params or {}).get("protocolVersion", ""))}
        raise MCPError(UNSUPPORTED_PROTOCOL_VERSION, "this server speaks only 2026-07-28 (server/discover)", data)
    return await call_next(ctx)


def build_server(state: _State | None = None, *, modern_only: bool = False) -> Server[Any]:
    """The echo server, ready to run on any transport."""
    st = state or _State()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = st.tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE_SIZE
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        name = params.name
        if name == "echo":
            return _text(str(args.get("text", "")))
        if name == "add":
            total = int(args["a"]) + int(args["b"])
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(total))], structured_content={"sum": total}
            )
        if name == "slow":
            await anyio.sleep(float(args.get("seconds", 1.0)))
            return _text("slept")
        if name == "crash":
            sys.stderr.write("echo_server: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(1)
        if name == "fail":
            return _text("this tool always fails", is_error=True)
        if name == "server_error":
            raise MCPError(-32000, "server busy, try later", {"retry_after_s": 1})
        if name == "header":
            request = getattr(ctx, "request", None)
            headers = getattr(request, "headers", None) or {}
            return _text(str(headers.get(str(args.get("name", "")), "")))
        if name == "meta":
            meta = getattr(ctx, "meta", None) or {}
            return _text(str(meta.get(str(args.get("key", "")), "")))
        if name == "mutate":
            st.mutated = True
            await st.bus.publish(ToolsListChanged())
            await st.bus.publish(ResourcesListChanged())
            await ctx.session.send_tool_list_changed()
            await ctx.session.send_resource_list_changed()
            return _text("mutated")
        if name == "added" or name.startswith("tool_"):
            return _text(name)
        return _text(f"unknown tool: {name}", is_error=True)

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources = [types.Resource(uri="echo://readme", name="readme", mime_type="text/plain")]
        if st.mutated:
            resources.append(types.Resource(uri="echo://added", name="added", mime_type="text/plain"))
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(uri_template="echo://notes/{name}", name="notes")
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if str(params.uri) != "echo://readme":
            raise ValueError(f"no such resource: {params.uri}")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri="echo://readme", mime_type="text/plain", text="hello")]
        )

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        arg = types.PromptArgument(name="name", required=True)
        return types.ListPromptsResult(prompts=[types.Prompt(name="greet", description="Greet someone.", arguments=[arg])])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        who = (params.arguments or {}).get("name", "world")
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"Hello, {who}!"))
        return types.GetPromptResult(messages=[message])

    server: Server[Any] = Server(
        os.environ.get("ECHO_SERVER_NAME", "echo"),
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(st.bus),
    )
    # No tracing spans in a test double: keeps benchmark numbers about the protocol, not OTel.
    server.middleware = [_refuse_handshake] if modern_only else []
    return server


def _options(server: Server[Any]) -> Any:
    return server.create_initialization_options(NotificationOptions(tools_changed=True, resources_changed=True))


async def _serve_stdio(legacy_only: bool, modern_only: bool) -> None:
    server = build_server(modern_only=modern_only)
    async with stdio_server() as (read, write):
        sys.stderr.write("echo_server ready\n")
        sys.stderr.flush()
        if legacy_only:
            async with server.lifespan(server) as lifespan_state:
                await serve_loop(server, read, write, lifespan_state=lifespan_state, init_options=_options(server))
        else:
            await server.run(read, write, _options(server))


def _serve_http(port: int, sse: bool) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    server = build_server()
    if not sse:
        app = _refusing(server.streamable_http_app(host="127.0.0.1"), _http_statuses())
    else:
        from mcp.server.sse import SseServerTransport

        transport = SseServerTransport("/messages/")

        async def handle_sse(request: Request) -> Response:
            async with transport.connect_sse(request.scope, request.receive, request._send) as (read, write):
                await server.run(read, write, _options(server))
            return Response()

        app = Starlette(
            routes=[
                Route("/sse", endpoint=handle_sse, methods=["GET"]),
                Mount("/messages/", app=transport.handle_post_message),
            ]
        )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _http_statuses() -> dict[str, int]:
    spec = os.environ.get("ECHO_SERVER_HTTP_STATUS", "")
    pairs = (item.split("=", 1) for item in spec.split(",") if "=" in item)
    return {tool.strip(): int(status) for tool, status in pairs}


def _refusing(app: Any, statuses: dict[str, int]) -> Any:
    """``app``, answering a tools/call of a tool in ``statuses`` with that HTTP status."""
    if not statuses:
        return app
    import json

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("method") == "tools/call":
            status = statuses.get(str((parsed.get("params") or {}).get("name")))
            if status is not None:
                text = f"refused with HTTP {status}".encode()
                headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": text})
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m checkrein.testing.echo_server")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1")
    parser.add_argument("--sse", action="store_true", help="serve legacy SSE on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--legacy-only", action="store_true", help="speak only the initialize handshake")
    parser.add_argument("--modern-only", action="store_true", help="refuse initialize; speak server/discover")
    parser.add_argument("--garbage", action="store_true", help="print non-JSON on stdout and exit")
    args = parser.parse_args(argv)
    if args.garbage:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
        sys.stderr.write("echo_server: garbage mode, exiting\n")
        sys.exit(2)
    if args.http or args.sse:
        _serve_http(args.port, sse=args.sse)
    else:
        anyio.run(_serve_stdio, args.legacy_only, args.modern_only)


if __name__ == "__main__":
    main()
