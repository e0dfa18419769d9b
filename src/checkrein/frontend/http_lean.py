"""The HTTP frontend's lean lane: ``tools/call`` of an initialized handshake-era Streamable HTTP
session, served without the SDK's server machinery (the HTTP analogue of `stdio_lean`).

On the SDK's path a POSTed call is validated into a message model, sent through memory streams to
the session's dispatcher, run in a per-request context and its result serialized back through the
same streams. The lane takes a POST that `HttpLane.takes` can prove is a plain ``tools/call`` of a
session whose handshake it watched the SDK accept (``initialize`` answered with a result in a
handshake-era version, ``notifications/initialized`` with 202; any later ``initialize`` takes the
lane off until a new handshake settles), after the SDK transport's own checks (Accept, Content-Type, the session id;
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
requests are taken before the SDK sees them (202, as the SDK answers a response).

Each of the lane's requests belongs to its call. When the call ends with one still unanswered
(the client cancelled the call, the upstream gave up, a deadline passed, the session ended), the
client is sent ``notifications/cancelled`` for it on the call's stream before the call's answer
(as the SDK's dispatcher sends one for a request it abandons), and the request is released: the
upstream waiting on it gets an error instead of waiting for its deadline. A stream the client
closed ends nothing (the spec says a disconnect is no cancellation; the SDK's path keeps the call
running too): the client may still POST its answers until the call ends. As the SDK's transport
answers on this era:

- ``notifications/cancelled`` for a lane call: the call is cancelled and answered with the
  SDK's ``REQUEST_CANCELLED`` error (-32800, "Request cancelled");
- the session ends (DELETE, idle expiry, shutdown) with a lane call in flight: the call is
  cancelled and answered 500 with the SDK's "Session terminated before the request completed"
  (the JSON-answer path's reply), or, once its stream started, with that error as the stream's
  last event (where the SDK's own stream just ends).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import mcp.types as types
import pydantic_core
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_CANCELLED,
    check_accept_headers,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import CONNECTION_CLOSED
from mcp_types import methods as sdk_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from checkrein.upstream.raw import dumps

from .context import IDENTITY_SCOPE_KEY, CallFactory
from .stdio_lean import LeanRequest, answer_result, plain_call, plain_id, plain_wire

if TYPE_CHECKING:
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    from .server import GatewayServer
    from .stdio_lean import LeanLane

__all__ = ["HttpLane"]

log = logging.getLogger("checkrein.frontend")



TERMINATED = "Session terminated before the request completed"
"""The SDK transport's words for a request whose session ended under it (`http_json` says the same)."""

_RELEASE_WRITE_S = 5.0
_WHY = {"answered": "was answered", "cancelled": "was cancelled", "terminated": "lost its session"}


@dataclass(eq=False, slots=True)
class _Asked:
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None
    released: str | None = None
    """Why the lane gave up on the request (its call ended), when it did."""


@dataclass(slots=True)
class _Final:
    body: bytes
    status: int = 200


class _Reply:
    """One lane call's HTTP answer, written by whichever task has something for the client: a
    plain JSON body when the answer is the first thing to go out; otherwise (a message before it,
    or `SSE_AFTER_S` passed) an SSE stream that carries everything from then on, the answer last.
    Writes are serialized (the relay may write from another task than the call's)."""

    __slots__ = ("_ended", "_headers", "_lock", "_send", "_started", "_starter")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        self._send, self._headers = send, headers
        self._lock = asyncio.Lock()
        self._started = self._ended = False
        self._starter: asyncio.Task[None] | None = None

    async def event(self, body: bytes) -> None:
        """A message for the client before the answer (the stream starts with the first one)."""
        async with self._lock:
            if self._ended:
                log.debug("a message for a finished HTTP call was dropped")
                return
            await self._start()
            await self._send({"type": "http.response.body", "body": b"event: message\r\ndata: " + body + b"\r\n\r\n", "more_body": True})

    async def finish(self, final: _Final) -> None:
        """The answer: the JSON body, or the stream's last event and its end."""
        async with self._lock:
            if self._ended:
                return
            self._ended = True
            if self._started:
                await self._send({"type": "http.response.body", "body": b"event: message\r\ndata: " + final.body + b"\r\n\r\n", "more_body": True})
                await self._send({"type": "http.response.body", "body": b""})
                return
            body = final.body
            if final.status != 200:  # the session ended: the SDK transport's own error reply
                body = _error(None, types.INTERNAL_ERROR, TERMINATED)
            self._headers.append((b"content-length", str(len(body)).encode()))
            await self._send({"type": "http.response.start", "status": final.status, "headers": self._headers})
            await self._send({"type": "http.response.body", "body": body})

    def stream_soon(self) -> None:
        """`SSE_AFTER_S` passed without an answer: start the stream (a timer's callback)."""
        self._starter = asyncio.get_running_loop().create_task(self._start_now())

    async def _start_now(self) -> None:
        async with self._lock:
            if not self._ended:
                await self._start()

    async def _start(self) -> None:
        if self._started:
            return
        headers = [(b"content-type", CONTENT_TYPE_SSE.encode()), *self._headers[1:]]
        headers += [(b"cache-control", b"no-cache, no-transform"), (b"connection", b"keep-alive")]
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        # Only once it went out: a writer cancelled while the send waited (a call cancelled in
        # the middle of its progress message) leaves the start to the next write, or to `finish`.
        self._started = True


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
        self._accepted: tuple[types.ClientCapabilities, str | None] | None = None
        """The capabilities and client name of the ``initialize`` the SDK last accepted."""
        self._running: dict[Any, _Channel] = {}
        self._asked: dict[str, _Asked] = {}
        self._ids = itertools.count(1)
        self._terminated = False

    def terminate(self) -> None:
        """The session is ending (called before the SDK transport's own ``terminate``): every lane
        call in flight is cancelled, answered with `TERMINATED`, and its requests released."""
        self._terminated = True
        for call in list(self._running.values()):
            call.end("terminated")

    async def handle(
        self, transport: StreamableHTTPServerTransport, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> Send | None:
        """Serve the POST if it is the lane's (then ``None``). Otherwise the ``send`` the SDK's path
        must answer it with: ``send`` itself, or, for the handshake, one that lets the lane see
        what the SDK answered (the lane trusts the handshake the SDK accepted, not what was sent)."""
        try:
            # pydantic's parser, as the SDK's path and the stdio frontend: exact for an integer past
            # 64 bits (orjson would hand the gate, the audit and the upstream a float instead).
            message = pydantic_core.from_json(await request.body())
        except ValueError:
            return send
        if type(message) is not dict:
            return send
        method = message.get("method")
        if method == "tools/call":
            if not self._takes(transport, message, request):
                return send
            if not await transport._validate_request_headers(request, send):
                return None  # the SDK's own error response went out
            await self._serve(transport, message, scope, request, receive, send)
            return None
        if method is None:
            rid = message.get("id")
            asked = self._asked.get(rid) if type(rid) is str and message.get("jsonrpc") == "2.0" else None
            if asked is None or not _plain_post(transport, request):
                return send  # the SDK's, with its own Accept and Content-Type answers (406, 415)
            if await transport._validate_request_headers(request, send):
                asked.answer = message
                asked.done.set()
                await _empty(transport, scope, receive, send)
            return None
        if method == "notifications/cancelled" and self._running:
            params = message.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            running = self._running.get(rid) if plain_id(rid) else None
            if running is None or not _plain_post(transport, request):
                return send
            if await transport._validate_request_headers(request, send):
                running.end("cancelled")
                await _empty(transport, scope, receive, send)
            return None
        return self._watch(message, send)

    # -- the handshake, as the SDK accepted it (the SDK answers it) -----------------------------

    def _watch(self, message: dict[str, Any], send: Send) -> Send:
        """Any ``initialize`` takes the lane off until a new handshake has settled. The client's
        capabilities count once the SDK answered that ``initialize`` with a result in a handshake-era
        version, and the lane serves calls once the SDK also accepted ``notifications/initialized``
        (202); a request the SDK refused (a bad ``clientInfo``, a wrong Accept) leaves it off."""
        method = message.get("method")
        if method == "initialize" and "id" in message:
            self._ready = False
            self._accepted = None
            params = message.get("params")
            if not isinstance(params, dict) or params.get("protocolVersion") not in HANDSHAKE_PROTOCOL_VERSIONS:
                return send
            try:
                caps = types.ClientCapabilities.model_validate(params.get("capabilities") or {}, by_name=False)
            except ValidationError:
                return send
            info = params.get("clientInfo")
            name = info.get("name") if isinstance(info, dict) else None
            return _InitializeAnswer(self, message["id"], caps, name if isinstance(name, str) else None, send)
        if method == "notifications/initialized" and self._accepted is not None:
            return _Accepted(self, self._accepted, send)
        return send

    def _takes(self, transport: StreamableHTTPServerTransport, message: dict[str, Any], request: Request) -> bool:
        """Whether ``message`` is a plain tools/call the lane serves (as `stdio_lean.LeanLane.takes`),
        on a request the SDK transport would answer with a stream."""
        if not self._ready or self._caps is None or self._terminated or message.get("jsonrpc") != "2.0":
            return False
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is None or version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        if not _plain_post(transport, request):
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
        headers = [(b"content-type", CONTENT_TYPE_JSON.encode())]
        if transport.mcp_session_id:
            headers.append((MCP_SESSION_ID_HEADER.lower().encode(), transport.mcp_session_id.encode()))
        reply = _Reply(send, headers)
        channel = _Channel(self, rid, reply)
        assert self._caps is not None
        downstream = LeanRequest(cast("LeanLane", channel), rid, call, meta, self._caps)
        self._running[rid] = channel
        # The call runs in this task: no task, stream or deadline scope of its own per call.
        timer = asyncio.get_running_loop().call_later(SSE_AFTER_S, reply.stream_soon)
        final: _Final | None = None
        stopping = False
        try:
            with channel.scope:
                final = _Final(await self._respond(rid, params["name"], call, downstream, version))
                self.handled += 1
        except BaseException:
            stopping = True  # cancelled from outside (the server stops): `_respond` answers every error
            raise
        finally:
            timer.cancel()
            self._running.pop(rid, None)
            if final is None and channel.ended == "cancelled":
                final = _Final(_error(rid, REQUEST_CANCELLED, "Request cancelled"))
            elif final is None:
                final = _Final(_error(rid, types.INTERNAL_ERROR, TERMINATED), 500)
            if channel.asked:
                # The lane's requests this call leaves unanswered are withdrawn before its answer
                # (for at most `_RELEASE_WRITE_S` when the client stops reading).
                with anyio.move_on_after(_RELEASE_WRITE_S, shield=True):
                    await channel.release()
            if stopping:  # still answered if the client takes it in time
                with anyio.move_on_after(_RELEASE_WRITE_S, shield=True):
                    await reply.finish(final)
            else:  # as long as a slow client takes (or until it disconnects), as any answer
                await reply.finish(final)

    async def _respond(self, rid: Any, name: str, call: Any, downstream: LeanRequest, version: str) -> bytes:
        try:
            result = await self.front.call_tool_json(call, downstream, downstream, rid)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True) if not isinstance(result, dict) else result
            wire = plain_wire(dumped)  # the serializer's own output for a text result, in every handshake-era version
            if wire is None:
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

    async def ask(self, call: _Channel, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a server-to-client request on ``call``'s stream; the client's ``result``. Raises
        ``MCPError`` with the client's error, or `CONNECTION_CLOSED` when the call ended first."""
        if call.ended is not None:
            raise MCPError(CONNECTION_CLOSED, f"the client request {call.rid!r} it would serve has ended")
        rid = f"checkrein-h-{next(self._ids)}"
        asked = _Asked()
        self._asked[rid] = call.asked[rid] = asked
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            request["params"] = params
        try:
            await call.write(dumps(request))
            await asked.done.wait()
        except anyio.get_cancelled_exc_class():
            # Abandoned here (a deadline, the upstream gave up): the client is told, as the SDK does.
            if asked.released is None:
                asked.released = "withdrawn"  # once: `_Channel.release` skips it from here on
                with anyio.move_on_after(_RELEASE_WRITE_S, shield=True):
                    await call.write(_cancelled(rid, call.rid))
            raise
        finally:
            self._asked.pop(rid, None)
            call.asked.pop(rid, None)
        if asked.answer is None:
            why = _WHY.get(asked.released or "", "ended")
            raise MCPError(CONNECTION_CLOSED, f"the client request {call.rid!r} this {method} request served {why} before the client answered")
        return answer_result(method, asked.answer)


class _Channel:
    """One lane call: what `LeanRequest` needs of a lane (its writes go on the call's stream), its
    cancel scope, and the lane's requests to the client on its behalf."""

    def __init__(self, lane: HttpLane, rid: Any, reply: _Reply) -> None:
        self.front = lane.front
        self.rid = rid
        self.scope = anyio.CancelScope()
        self.asked: dict[str, _Asked] = {}
        self.ended: str | None = None
        """``"cancelled"`` (by the client) or ``"terminated"`` (the session ended) once it is."""
        self._lane = lane
        self._reply = reply

    def end(self, why: str) -> None:
        """Cancel the call (once: a second cancel would break into its shielded audit record)."""
        if self.ended is None:
            self.ended = why
            self.scope.cancel()

    async def write(self, line: bytes) -> None:
        await self._reply.event(line)

    async def ask(self, method: str, params: dict[str, Any] | None, call_id: Any) -> dict[str, Any]:
        del call_id  # always this call's
        return await self._lane.ask(self, method, params)

    async def release(self) -> None:
        """Withdraw the lane's requests still waiting: ``notifications/cancelled`` to the client
        for each, then their waiters return (`HttpLane.ask` raises for them)."""
        for rid, asked in list(self.asked.items()):
            if asked.released is not None or asked.done.is_set():
                continue
            asked.released = self.ended or "answered"
            try:
                await self.write(_cancelled(rid, self.rid))
            finally:
                asked.done.set()  # its waiter returns even when the client stopped reading


def _cancelled(rid: str, call_id: Any) -> bytes:
    params = {"requestId": rid, "reason": f"the request {call_id!r} it served ended"}
    return dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})


def _error(rid: Any, code: int, message: str) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


async def _empty(transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send) -> None:
    """202 Accepted, as the SDK answers a POSTed notification or response."""
    await transport._create_json_response(None, HTTPStatus.ACCEPTED)(scope, receive, send)


def _plain_post(transport: StreamableHTTPServerTransport, request: Request) -> bool:
    """Whether the SDK transport would take this POST past its Accept and Content-Type checks
    (both media types accepted, ``application/json`` sent): its own tests, so the lane never
    serves what the SDK's path answers 406 or 415."""
    has_json, has_sse = check_accept_headers(request)
    return has_json and has_sse and transport._check_content_type(request)


_MAX_WATCHED_BYTES = 1 << 16


class _InitializeAnswer:
    """The ``send`` of an ``initialize`` the SDK answers: when its answer to that id is a result in a
    handshake-era version, the lane notes the client's capabilities and name (`HttpLane._accepted`)."""

    def __init__(self, lane: HttpLane, rid: Any, caps: types.ClientCapabilities, name: str | None, send: Send) -> None:
        self._lane, self._rid, self._caps, self._name, self._send = lane, rid, caps, name, send
        self._ok = False
        self._body = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._ok = 200 <= int(message.get("status", 500)) < 300
        elif message["type"] == "http.response.body" and self._ok and len(self._body) < _MAX_WATCHED_BYTES:
            self._body += bytes(message.get("body", b""))
            self._settle()
        await self._send(message)

    def _settle(self) -> None:
        body = self._body.strip()
        candidates = [body] if body.startswith(b"{") else [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
        for raw in candidates:
            try:
                answer = pydantic_core.from_json(raw)
            except ValueError:
                continue
            if not isinstance(answer, dict) or "method" in answer or answer.get("id") != self._rid:
                continue  # another message (a request of the server's may reuse the id)
            result = answer.get("result")
            if isinstance(result, dict) and "error" not in answer and result.get("protocolVersion") in HANDSHAKE_PROTOCOL_VERSIONS:
                self._lane._accepted = (self._caps, self._name)
            return


class _Accepted:
    """The ``send`` of ``notifications/initialized``: the lane is ready once the SDK accepted it."""

    def __init__(self, lane: HttpLane, accepted: tuple[types.ClientCapabilities, str | None], send: Send) -> None:
        self._lane, self._accepted, self._send = lane, accepted, send

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and 200 <= int(message.get("status", 500)) < 300:
            if self._lane._accepted is self._accepted:  # no other initialize came in between
                self._lane._caps, self._lane._client_name = self._accepted
                self._lane._ready = True
        await self._send(message)
