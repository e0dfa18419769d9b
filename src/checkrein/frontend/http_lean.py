"""The HTTP frontend's lean lane: ``tools/call`` of an initialized handshake-era Streamable HTTP
session, served without the SDK's server machinery (the HTTP analogue of `stdio_lean`).

On the SDK's path a POSTed call is validated into a message model, sent through memory streams to
the session's dispatcher, run in a per-request context and its result serialized back through the
same streams. The lane takes a POST that `HttpLane.takes` can prove is a plain ``tools/call`` of a
session whose handshake it watched (``initialize`` and ``notifications/initialized`` passed through
it to the SDK), after the SDK transport's own checks (Accept, Content-Type, the session id;
`frontend.http.HttpGuard` already checked identity and session owner), builds the `ToolCall` from
the parsed JSON and runs the same `Gate` through `GatewayServer.call_tool_json` (every step, the
audit, inspection of the whole result), checks the result with the SDK's serializer for the
negotiated version and answers ``application/json``. Everything else (the handshake, listings,
rare requests, sessions whose handshake this replica did not see, the 2026 era, anything unusual
about a call) stays the SDK's, as before.

For the calls it serves the lane is the client's `Downstream` (`stdio_lean.LeanRequest`, shared):
the first progress notification, log message or server request (sampling, elicitation, roots,
with the lane's ids ``checkrein-h-N``) turns the answer into an SSE stream that carries it and the
answer after it, as `http_json` does on the SDK's path; the client's POSTed answers to the lane's
requests are taken before the SDK sees them (202, as the SDK answers a response). A
``notifications/cancelled`` for a lane call cancels it and ends its stream without an answer.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import mcp.types as types
import orjson
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    check_accept_headers,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import methods as sdk_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from checkrein.upstream.raw import dumps

from .context import IDENTITY_SCOPE_KEY, CallFactory
from .stdio_lean import LeanRequest, answer_result, plain_call, plain_id

if TYPE_CHECKING:
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    from .server import GatewayServer
    from .stdio_lean import LeanLane

__all__ = ["HttpLane"]

log = logging.getLogger("checkrein.frontend")



@dataclass(eq=False, slots=True)
class _Asked:
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


@dataclass(slots=True)
class _Final:
    body: bytes


class HttpLane:
    """The lean lane of one Streamable HTTP session transport (`http_json` hands it every POST)."""

    def __init__(self, front: GatewayServer, calls: CallFactory) -> None:
        self.front = front
        self.calls = calls
        self.handled = 0
        """tools/call requests the lane answered (tests and counters)."""
        self._init: dict[Any, dict[str, Any]] = {}
        self._caps: types.ClientCapabilities | None = None
        self._client_name: str | None = None
        self._ready = False
        self._running: dict[Any, anyio.CancelScope] = {}
        self._asked: dict[str, _Asked] = {}
        self._ids = itertools.count(1)

    async def handle(self, transport: StreamableHTTPServerTransport, scope: Scope, request: Request, receive: Receive, send: Send) -> bool:
        """Serve the POST if it is the lane's (then True); watch the handshake on the way."""
        try:
            message = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return False
        if type(message) is not dict:
            return False
        method = message.get("method")
        if method == "tools/call":
            if not self._takes(message, request):
                return False
            if not await transport._validate_request_headers(request, send):
                return True  # the SDK's own error response went out
            await self._serve(transport, message, scope, request, receive, send)
            return True
        if method is None:
            rid = message.get("id")
            asked = self._asked.get(rid) if type(rid) is str and message.get("jsonrpc") == "2.0" else None
            if asked is None:
                return False
            if await transport._validate_request_headers(request, send):
                asked.answer = message
                asked.done.set()
                await _empty(transport, scope, receive, send)
            return True
        if method == "notifications/cancelled" and self._running:
            params = message.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            running = self._running.get(rid) if plain_id(rid) else None
            if running is None:
                return False
            if await transport._validate_request_headers(request, send):
                running.cancel()
                await _empty(transport, scope, receive, send)
            return True
        self._watch(message)
        return False

    # -- the handshake, as the client sent it (the SDK answers it) ------------------------------

    def _watch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method == "initialize" and "id" in message:
            params = message.get("params")
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            if not isinstance(params, dict) or version not in HANDSHAKE_PROTOCOL_VERSIONS:
                self._caps = None
                return
            try:
                self._caps = types.ClientCapabilities.model_validate(params.get("capabilities") or {}, by_name=False)
            except ValidationError:
                self._caps = None
                return
            info = params.get("clientInfo")
            name = info.get("name") if isinstance(info, dict) else None
            self._client_name = name if isinstance(name, str) else None
        elif method == "notifications/initialized":
            self._ready = self._caps is not None

    def _takes(self, message: dict[str, Any], request: Request) -> bool:
        """Whether ``message`` is a plain tools/call the lane serves (as `stdio_lean.LeanLane.takes`),
        on a request the SDK transport would answer with a stream."""
        if not self._ready or message.get("jsonrpc") != "2.0":
            return False
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is None or version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        has_json, has_sse = check_accept_headers(request)
        content_type = request.headers.get("content-type", "")
        if not (has_json and has_sse) or not content_type.lower().split(";")[0].strip() == CONTENT_TYPE_JSON:
            return False
        rid = message.get("id")
        return plain_id(rid) and rid not in self._running and plain_call(message.get("params"))

    # -- one call ------------------------------------------------------------------------------

    async def _serve(
        self, transport: StreamableHTTPServerTransport, message: dict[str, Any], scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
        from .http_json import SSE_AFTER_S

        rid, params = message["id"], message["params"]
        version = request.headers[MCP_PROTOCOL_VERSION_HEADER]
        meta = params.get("_meta")
        call = self.calls.make_raw_http(
            identity=scope.get(IDENTITY_SCOPE_KEY),
            session_id=transport.mcp_session_id or "",
            traceparent=request.headers.get("traceparent"),
            name=params["name"],
            arguments=dict(params.get("arguments") or {}),
            meta=meta,
            client_name=self._client_name,
        )
        out_send, out_receive = anyio.create_memory_object_stream[bytes | _Final](1 << 16)
        channel = _Channel(self, out_send)
        assert self._caps is not None
        downstream = LeanRequest(cast("LeanLane", channel), rid, call, meta, self._caps)
        cancel = anyio.CancelScope()
        self._running[rid] = cancel

        async def run() -> None:
            try:
                with cancel:
                    body = await self._respond(rid, params["name"], call, downstream, version)
                    self.handled += 1
                    await out_send.send(_Final(body))
            finally:
                self._running.pop(rid, None)
                out_send.close()

        headers = [(b"content-type", CONTENT_TYPE_JSON.encode())]
        if transport.mcp_session_id:
            headers.append((MCP_SESSION_ID_HEADER.lower().encode(), transport.mcp_session_id.encode()))
        async with anyio.create_task_group() as tg, out_receive:
            tg.start_soon(run)
            first: bytes | _Final | None = None
            with anyio.move_on_after(SSE_AFTER_S):
                try:
                    first = await out_receive.receive()
                except anyio.EndOfStream:
                    first = None  # cancelled before anything: an empty stream, no answer
            if isinstance(first, _Final):
                headers.append((b"content-length", str(len(first.body)).encode()))
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": first.body})
                return
            headers[0] = (b"content-type", CONTENT_TYPE_SSE.encode())
            headers += [(b"cache-control", b"no-cache, no-transform"), (b"connection", b"keep-alive")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            pending: list[bytes | _Final] = [first] if first is not None else []
            async for item in _chain(pending, out_receive):
                body = item.body if isinstance(item, _Final) else item
                await send({"type": "http.response.body", "body": b"event: message\r\ndata: " + body + b"\r\n\r\n", "more_body": True})
            await send({"type": "http.response.body", "body": b""})

    async def _respond(self, rid: Any, name: str, call: Any, downstream: LeanRequest, version: str) -> bytes:
        try:
            result = await self.front.call_tool_json(call, downstream, downstream, rid)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True) if not isinstance(result, dict) else result
            wire = sdk_methods.serialize_server_result("tools/call", version, dumped)
        except ValidationError:
            log.exception("tools/call %s: the result does not fit the protocol's schema", name)
            return _error(rid, types.INTERNAL_ERROR, "Handler returned an invalid result")
        except Exception:
            # The gate never raises; this is a bug, answered as the SDK answers one.
            log.exception("tools/call %s failed in the HTTP lean lane", name)
            return _error(rid, types.INTERNAL_ERROR, "Internal server error")
        return dumps({"jsonrpc": "2.0", "id": rid, "result": wire})

    # -- the lane's own requests to the client -------------------------------------------------

    async def ask(self, write: Any, method: str, params: dict[str, Any] | None, call_id: Any) -> dict[str, Any]:
        """Send a server-to-client request on the call's stream; the client's ``result``. Raises
        ``MCPError`` with the client's error."""
        rid = f"checkrein-h-{next(self._ids)}"
        asked = _Asked()
        self._asked[rid] = asked
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            request["params"] = params
        try:
            await write(dumps(request))
            await asked.done.wait()
        finally:
            self._asked.pop(rid, None)
        return answer_result(method, asked.answer)


class _Channel:
    """What `LeanRequest` needs of a lane, for one HTTP call: its writes go on the call's stream."""

    def __init__(self, lane: HttpLane, out: anyio.abc.ObjectSendStream[bytes | _Final]) -> None:
        self.front = lane.front
        self._lane = lane
        self._out = out

    async def write(self, line: bytes) -> None:
        try:
            await self._out.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("a message for a finished HTTP call was dropped")

    async def ask(self, method: str, params: dict[str, Any] | None, call_id: Any) -> dict[str, Any]:
        return await self._lane.ask(self.write, method, params, call_id)


async def _chain(first: list[bytes | _Final], rest: anyio.abc.ObjectReceiveStream[bytes | _Final]) -> Any:
    for item in first:
        yield item
        if isinstance(item, _Final):
            return
    async for item in rest:
        yield item
        if isinstance(item, _Final):
            return


def _error(rid: Any, code: int, message: str) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


async def _empty(transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send) -> None:
    """202 Accepted, as the SDK answers a POSTed notification or response."""
    await transport._create_json_response(None, HTTPStatus.ACCEPTED)(scope, receive, send)
