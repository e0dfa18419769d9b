"""Streamable HTTP, handshake era: a request is answered with a plain JSON body unless the server
has something to send the client first; then, and only then, the answer becomes an SSE stream.

The SDK's stateful transport answers every POSTed request with an SSE stream, in case a progress
notification, a log message or a sampling/elicitation request has to reach the client before
the answer. Most calls send nothing of the kind, and the stream (headers at once, an event per
message, chunked framing) costs the server a third of a relayed call's CPU. Which call will need
it is not known in advance (an upstream may log or ask at any point), so the choice is made by
what happens: the response waits until the first message for this request arrives. The answer
itself goes out as ``application/json``; anything else first starts the SSE stream, with that
message as its first event, and everything the SDK would have sent follows on it as before
(server requests, progress and logs keep working). A request still unanswered after
``SSE_AFTER_S`` starts the stream too, so a client's read timeout never fires on a slow tool.
The 2026-07-28 era's transport already answers this way (SDK), so only the 2025 era is changed.

Implemented by replacing, per session transport, the SDK's ``_handle_post_request`` for requests
it would answer with SSE; the initialize request, notifications, responses and anything that
fails the SDK's own checks take the SDK's path unchanged. Sessions with an event store
(resumability) are left alone: their priming event must precede dispatch. The transport's
``terminate`` tells the session's lean lane first, so its calls in flight end with an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from .http_lean import HttpLane

__all__ = ["SSE_AFTER_S", "answer_json_when_possible"]

log = logging.getLogger("checkrein.frontend")

SSE_AFTER_S = 10.0
"""How long an answer may take before the stream starts anyway (clients time out waiting for headers)."""

_Post = Callable[[Scope, Request, Receive, Send], Awaitable[None]]


def answer_json_when_possible(manager: StreamableHTTPSessionManager, lane: Callable[[], HttpLane] | None = None) -> None:
    """Make every session ``manager`` opens from now on answer requests as this module says
    (with ``lane``, each session's transport gets its own `HttpLane`, which sees every POST first).

    The SDK's manager makes its transports in ``_admit_session``; a fleet's
    (`checkrein.frontend.sessions.FleetSessionManager`) in ``_new_transport``, for the sessions it
    opens and for those it adopts from another replica: whichever the manager has is wrapped."""
    if manager.json_response or manager.stateless or manager.event_store is not None:
        return
    for factory in ("_admit_session", "_new_transport"):
        make = getattr(manager, factory, None)
        if make is not None:
            setattr(manager, factory, partial(_answering_json, make, lane))


def _answering_json(
    make: Callable[[Any], StreamableHTTPServerTransport | None], lane: Callable[[], HttpLane] | None, arg: Any
) -> StreamableHTTPServerTransport | None:
    transport = make(arg)
    if transport is not None and not getattr(transport, "_checkrein_json", False):
        sdk_post = transport._handle_post_request
        session_lane = lane() if lane is not None else None
        transport._handle_post_request = partial(_post, transport, sdk_post, session_lane)  # type: ignore[method-assign]
        if session_lane is not None:
            transport.terminate = partial(_terminate, transport.terminate, session_lane)  # type: ignore[method-assign]
        transport._checkrein_json = True  # type: ignore[attr-defined]
    return transport


async def _terminate(sdk_terminate: Callable[[], Awaitable[None]], lane: HttpLane) -> None:
    """The session ends (DELETE, idle expiry, shutdown): the lane's calls first, then the SDK's
    (also when ending the lane's calls fails: the session must still end)."""
    try:
        lane.terminate()
    finally:
        await sdk_terminate()


async def _post(
    transport: StreamableHTTPServerTransport, sdk_post: _Post, lane: HttpLane | None, scope: Scope, request: Request, receive: Receive, send: Send
) -> None:
    if lane is not None and transport._read_stream_writer is not None:
        try:
            watched = await lane.handle(transport, scope, request, receive, send)
            if watched is None:
                return
            send = watched  # the SDK answers; for the handshake, the lane sees what it answered
        except Exception:
            # As the SDK's own handler does for an error it did not expect: a 500 for the client.
            log.exception("error handling a POST request in the HTTP lean lane")
            response = transport._create_error_response("Error handling POST request", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR)
            await response(scope, receive, send)
            return
    message = await _request_of(transport, request)
    if message is None:
        await sdk_post(scope, request, receive, send)
        return
    try:
        if await transport._validate_request_headers(request, send):
            await _answer(transport, message, scope, request, receive, send)
    except Exception as exc:
        # As the SDK's own handler does: a 500 for the client, the error to the session.
        log.exception("error handling a POST request")
        response = transport._create_error_response("Error handling POST request", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR)
        await response(scope, receive, send)
        writer = transport._read_stream_writer
        if writer is not None:
            await writer.send(exc)


async def _request_of(transport: StreamableHTTPServerTransport, request: Request) -> JSONRPCRequest | None:
    """The POST's JSON-RPC request when the SDK would answer it with a stream, else ``None``
    (the SDK then handles it, and any error in it, itself)."""
    has_json, has_sse = check_accept_headers(request)
    if not (has_json and has_sse) or not transport._check_content_type(request) or transport._read_stream_writer is None:
        return None
    try:
        message = jsonrpc_message_adapter.validate_json(await request.body(), by_name=False)
    except (ValidationError, ValueError):
        return None
    if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
        return None
    return message


async def _answer(
    transport: StreamableHTTPServerTransport, message: JSONRPCRequest, scope: Scope, request: Request, receive: Receive, send: Send
) -> None:
    writer = transport._read_stream_writer
    assert writer is not None
    request_id = str(message.id)
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
    streams = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
    transport._request_streams[request_id] = streams
    reader = streams[1]
    await writer.send(transport._create_session_message(message, request, request_id, version))
    first: EventMessage | None = None
    try:
        with anyio.move_on_after(SSE_AFTER_S):
            first = await reader.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        await transport._clean_up_memory_streams(request_id)
        response = transport._create_error_response(
            "Session terminated before the request completed", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR
        )
        await response(scope, receive, send)
        return
    if first is not None and isinstance(first.message, JSONRPCResponse | JSONRPCError):
        await transport._clean_up_memory_streams(request_id)
        await transport._create_json_response(first.message)(scope, receive, send)
        return
    await _stream(transport, request_id, reader, first, scope, receive, send)


async def _stream(
    transport: StreamableHTTPServerTransport,
    request_id: str,
    reader: anyio.abc.ObjectReceiveStream[EventMessage],
    first: EventMessage | None,
    scope: Scope,
    receive: Receive,
    send: Send,
) -> None:
    """The SDK's SSE answer, from ``first`` on."""
    sse_writer, sse_reader = anyio.create_memory_object_stream[Any](0)
    transport._sse_stream_writers[request_id] = sse_writer

    async def pump() -> None:
        if first is not None:
            try:
                await sse_writer.send(transport._create_event_data(first))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client left; the SDK's writer below cleans up
        await transport._run_sse_writer(request_id, sse_writer, reader, None)  # type: ignore[arg-type]

    headers = {
        "Cache-Control": "no-cache, no-transform",
        "Connection": "keep-alive",
        "Content-Type": CONTENT_TYPE_SSE,
        **({MCP_SESSION_ID_HEADER: transport.mcp_session_id} if transport.mcp_session_id else {}),
    }
    try:
        await EventSourceResponse(content=sse_reader, data_sender_callable=pump, headers=headers)(scope, receive, send)
    finally:
        await sse_reader.aclose()
