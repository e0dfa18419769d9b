"""``tools/call`` on a Streamable HTTP upstream, written and read by checkrein without the SDK
client's message models (the HTTP analogue of `checkrein.upstream.raw`).

The SDK's Streamable HTTP client spends most of a relayed call's upstream CPU on its own layers:
a request model dumped to JSON, a task and a cancel scope per POST, memory streams to the
dispatcher, a message model validated from every SSE event, a response model, and it closes the
POST's connection as soon as the answer arrived (so every call opens a new TCP connection).
`RawHttpRequests` POSTs the JSON-RPC request with the same ``httpx`` client, on the SDK transport's
own session id and the session's stamped protocol-version header, parses the answer (JSON or SSE)
with pydantic's parser (exact for integers past 64 bits) and reads an SSE answer to its end when the server closes it right away, so the
connection goes back to the pool. The POST goes to the client's pool directly when nothing of the
client's own request path applies, and the SSE answer is parsed as bytes
(`checkrein.upstream.http_post`).

Only the answer, progress for its own token and log messages are this lane's (the last two go to
the relay in the caller's task, so they reach the client before the answer, as on the SDK path).
Anything else the server sends on the POST's stream (its own requests: sampling, elicitation,
roots; other notifications) is handed to the SDK session's read stream in the caller's context,
exactly as the SDK transport hands it over, so the session answers it and the relay attributes it
as before.
Failures keep the SDK's meaning: an HTTP status becomes the error the SDK would make of it (with
the status kept, as `checkrein.upstream.transports.HttpStatuses` does), a 404 on our session is
"Session terminated" (the connection then re-opens the session and sends the call again), and a
transport failure (the server went away) ends the whole connection as it does on the SDK path.

An answer stream that ends before the answer, after events with ids (a server with an event
store), is resumed with ``GET`` and ``Last-Event-ID`` as the SDK client resumes it. Handshake era
only: 2026-era sessions (per-request envelopes, header-mirrored params, cancellation by closing the
POST) stay on the SDK's path.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pydantic_core
from mcp.client.streamable_http import MCP_SESSION_ID, StreamableHTTPTransport
from mcp.shared._httpx_utils import redirect_location, sse_within_origin, stream_within_origin
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST, jsonrpc_message_adapter
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from checkrein._switches import switch
from checkrein.upstream.http_post import DirectPost, post_within_origin, read_events
from checkrein.upstream.raw import ProgressFn, dumps, relay_log

__all__ = ["RawHttpRequests", "raw_http_enabled"]

log = logging.getLogger("checkrein.upstream")

_FIRST_ID = 1 << 40
_CANCEL_POST_S = 5.0
_DRAIN_S = 0.1
"""How long to wait for the end of an SSE answer after the response event (the SDK's server ends
it at once); past that the connection is closed, as the SDK client always does."""
MAX_SSE_EVENT_BYTES = 1024 * 1024
"""The SDK client's default limit for one event."""

_MAX_RESUMES = 2
_RESUME_DELAY_MS = 1000
"""The SDK client's reconnection limits: attempts without progress, and the delay without ``retry``."""

Inbound = Callable[[SessionMessage | Exception], Awaitable[None]]


def raw_http_enabled() -> bool:
    """On unless ``CHECKREIN_FAST_PATH=off`` (then every request takes the SDK's path)."""
    return switch("CHECKREIN_FAST_PATH") == "on"


@dataclass(slots=True)
class _Stream:
    """Where one request's SSE answer got to (for resuming it)."""

    last_id: str | None = None
    retry_ms: int | None = None
    events: int = 0


class _Broken(Exception):
    """The HTTP exchange failed below HTTP (connection refused, reset, protocol error)."""


class RawHttpRequests:
    """The raw request lane of one Streamable HTTP connection (bound by `transports.open_transport`)."""

    def __init__(self) -> None:
        self._ids = itertools.count(_FIRST_ID)
        self._client: httpx2.AsyncClient | None = None
        self._transport: StreamableHTTPTransport | None = None
        self._inbound: Inbound | None = None
        self._fail: Callable[[BaseException], None] | None = None
        self._own_hooks: tuple[Callable[..., Any], ...] = ()
        self._direct: DirectPost | None = None
        self._direct_url: str | None = None
        self.broken = False
        """Set once a transport failure ended the connection (the session reads it as closed)."""
        self.sent = 0
        """Requests POSTed on this lane (tests and counters)."""
        self.on_log: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        """Where the server's log messages during a call go, awaited in the caller's task: they
        must reach the client before the answer they precede (the relay's, as on stdio)."""

    def bind(
        self,
        client: httpx2.AsyncClient,
        transport: StreamableHTTPTransport,
        inbound: Inbound,
        fail: Callable[[BaseException], None],
        own_hooks: tuple[Callable[..., Any], ...] = (),
    ) -> None:
        """Called by the transport once its streams are open: the HTTP client, the SDK transport
        (its session id), where the server's other messages go, and how to end the connection.
        ``own_hooks`` are the client's response hooks that serve the SDK's path only (this lane's
        POSTs may skip them, `checkrein.upstream.http_post`)."""
        self.unbind()
        self._client, self._transport, self._inbound, self._fail = client, transport, inbound, fail
        self._own_hooks = own_hooks

    def unbind(self) -> None:
        """The connection is over: no request takes this lane until the next `bind`, and the direct
        POST's own connections are closed (`DirectPost.close`)."""
        if self._direct is not None:
            self._direct.close()
        self._direct, self._direct_url = None, None
        self._client, self._transport = None, None

    def ready(self, protocol_version: str | None) -> bool:
        """Whether a request of a session in ``protocol_version`` may take this lane now."""
        transport = self._transport
        return (
            transport is not None
            and transport.session_id is not None
            and not self.broken
            and protocol_version is not None
            and protocol_version not in MODERN_PROTOCOL_VERSIONS
        )

    async def request(
        self, method: str, params: dict[str, Any], *, headers: dict[str, str] | None = None, on_progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        """POST ``method`` and return the server's ``result`` as parsed JSON.

        Raises ``MCPError`` as the SDK's dispatcher would for the same exchange: the server's
        error, the error the SDK makes of an HTTP failure status, or ``CONNECTION_CLOSED`` when
        the connection failed (it is then ended, as on the SDK path).
        """
        client, transport = self._client, self._transport
        if client is None or transport is None or transport.session_id is None or self.broken:
            raise MCPError(CONNECTION_CLOSED, "Connection closed")
        rid = next(self._ids)
        if on_progress is not None:
            params = {**params, "_meta": {**(params.get("_meta") or {}), "progressToken": rid}}
        sent = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            MCP_SESSION_ID: transport.session_id,
            **(headers or {}),
        }
        body = dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        posted = False
        try:
            posted = True  # from here on the server may have the request
            self.sent += 1
            outcome = await self._exchange(client, transport.url, body, sent, rid, on_progress)
        except anyio.get_cancelled_exc_class():
            if posted:
                await self._cancel(client, transport.url, sent, rid, "caller cancelled")
            raise
        except _Broken as exc:
            self.broken = True
            if self._fail is not None:
                self._fail(exc.__cause__ or exc)
            raise MCPError(CONNECTION_CLOSED, f"Connection closed: {exc}") from None
        if "error" in outcome:
            error = outcome["error"]
            raise MCPError(error.get("code", 0), error.get("message", ""), error.get("data"))
        result: dict[str, Any] = outcome["result"]
        return result

    async def _exchange(
        self, client: httpx2.AsyncClient, url: str, body: bytes, headers: dict[str, str], rid: int, on_progress: ProgressFn | None
    ) -> dict[str, Any]:
        if self._direct_url != url:  # once per connection (the endpoint does not change)
            if self._direct is not None:
                self._direct.close()
            self._direct, self._direct_url = DirectPost.usable(client, url, self._own_hooks), url
        try:
            async with post_within_origin(self._direct, client, url, body, headers) as response:
                status = response.status_code
                if status == 202:
                    return _error(INVALID_REQUEST, "server answered a request with 202 Accepted")
                location = redirect_location(response)
                if location is not None:
                    return _error(INVALID_REQUEST, f"Redirect to {location} not followed; use that URL as the endpoint if it is the intended server")
                content_type = response.headers.get("content-type", "").lower()
                if status >= 400:
                    return await _failed(response, content_type)
                if content_type.startswith("application/json"):
                    return _outcome(_loads(await response.aread()), rid)
                if content_type.startswith("text/event-stream"):
                    return await self._events(response, rid, on_progress)
                return _error(INVALID_REQUEST, f"Unexpected content type: {content_type}")
        except httpx2.SSEError as exc:
            return _error(CONNECTION_CLOSED, f"SSE stream failed: {exc}")
        except httpx2.TransportError as exc:
            raise _Broken(f"{type(exc).__name__}: {exc}") from exc

    async def _events(self, response: httpx2.Response, rid: int, on_progress: ProgressFn | None) -> dict[str, Any]:
        stream = _Stream()
        outcome = await self._read(response, rid, on_progress, stream)
        failures = 0
        # As the SDK client does: a stream that ended without the answer after an event with an
        # id is resumed with GET and Last-Event-ID (each resumed stream may end again).
        while outcome is None and stream.last_id is not None and failures < _MAX_RESUMES:
            await anyio.sleep((stream.retry_ms if stream.retry_ms is not None else _RESUME_DELAY_MS) / 1000)
            transport, client = self._transport, self._client
            if transport is None or client is None:
                break  # the connection ended meanwhile (`unbind`)
            headers = {"last-event-id": stream.last_id, **transport._prepare_headers()}
            before = stream.events
            try:
                async with sse_within_origin(client, transport.url, headers=headers, max_event_size=MAX_SSE_EVENT_BYTES) as source:
                    source.response.raise_for_status()
                    outcome = await self._read(source.response, rid, on_progress, stream)
            except httpx2.HTTPError:
                log.debug("resuming the stream of raw request %s failed", rid, exc_info=True)
            failures = 0 if stream.events > before else failures + 1
        if outcome is None:
            return _error(CONNECTION_CLOSED, "SSE stream ended without a response")
        return outcome

    async def _read(self, response: httpx2.Response, rid: int, on_progress: ProgressFn | None, stream: _Stream) -> dict[str, Any] | None:
        """Our answer from one SSE stream, or ``None`` when it ended without one."""
        events = read_events(response, MAX_SSE_EVENT_BYTES).__aiter__()
        async for sse in events:
            if sse.id:
                stream.last_id = sse.id
            if sse.retry is not None:
                stream.retry_ms = sse.retry
            stream.events += 1
            if sse.event != "message" or not sse.data:
                continue  # a priming event (its id is kept above) or another kind
            message = _loads(sse.data)
            if message is None:  # as EventSource's text: invalid UTF-8 replaced, then parsed
                message = _loads(sse.data.decode("utf-8", "replace").encode())
            if not isinstance(message, dict):
                continue
            if "method" not in message and message.get("id") == rid:
                outcome = _outcome(message, rid)
                with anyio.move_on_after(_DRAIN_S):
                    async for _rest in events:
                        pass  # the stream's end, so the connection is reused
                return outcome
            await self._other(message, rid, on_progress)
        return None

    async def _other(self, message: dict[str, Any], rid: int, on_progress: ProgressFn | None) -> None:
        """A message on our POST's stream that is not our answer: progress for our token is ours;
        everything else goes to the SDK session, in this (the caller's) context."""
        if message.get("method") == "notifications/progress" and on_progress is not None:
            params = message.get("params")
            if isinstance(params, dict) and params.get("progressToken") == rid:
                progress, total, text = params.get("progress"), params.get("total"), params.get("message")
                if not isinstance(progress, int | float) or isinstance(progress, bool):
                    return  # malformed progress for our request: dropped, as the SDK drops it
                try:
                    await on_progress(
                        float(progress),
                        float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
                        text if isinstance(text, str) else None,
                    )
                except Exception:  # a failing relay must not fail the call
                    log.exception("relaying progress failed")
                return
        if message.get("method") == "notifications/message" and self.on_log is not None and await self._log(message.get("params")):
            return
        if self._inbound is None:
            return
        try:
            parsed = jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValidationError as exc:
            log.warning("the server sent a malformed message during a call: %s", exc.errors()[:1])
            return
        await self._inbound(SessionMessage(parsed))

    async def _log(self, params: Any) -> bool:
        assert self.on_log is not None
        return await relay_log(self.on_log, params)

    async def _cancel(self, client: httpx2.AsyncClient, url: str, headers: dict[str, str], rid: int, reason: str) -> None:
        """``notifications/cancelled`` for an abandoned request, as the SDK's dispatcher sends it."""
        if self.broken:
            return
        note = dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": reason}})
        with anyio.move_on_after(_CANCEL_POST_S, shield=True):
            try:
                async with stream_within_origin(client, "POST", url, content=note, headers=headers) as response:
                    await response.aread()
            except httpx2.HTTPError:
                log.debug("courtesy cancel for raw request %s not delivered", rid)


def _loads(data: bytes) -> Any:
    """The parsed JSON of an answer, or ``None``. pydantic's parser (the SDK client's own) keeps an
    integer past 64 bits exact, where orjson would turn it into a float: the client must get the
    number the server sent. Deeper than that parser goes, the standard library's reads it (so
    result inspection can refuse it with a reason), as `checkrein.upstream._stdio` does."""
    try:
        return pydantic_core.from_json(data)
    except ValueError as exc:
        if "recursion limit" not in str(exc):
            return None
    try:
        return json.loads(data)
    except (RecursionError, ValueError):
        return None


def _error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"error": error}


def _outcome(message: Any, rid: int) -> dict[str, Any]:
    """The answer to request ``rid`` in ``message``, checked as the SDK's message model checks it."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("id") != rid:
        return _error(-32700, "Failed to parse JSON response: not the JSON-RPC answer to this request")
    result, error = message.get("result"), message.get("error")
    if isinstance(result, dict) and error is None:
        return {"result": result}
    if isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str):
        return {"error": error}
    return _error(INTERNAL_ERROR, "the server sent a malformed response")


async def _failed(response: httpx2.Response, content_type: str) -> dict[str, Any]:
    """The SDK's error for a failure status (the JSON-RPC error in the body if there is one), with
    the status kept as `checkrein.upstream.transports.HttpStatuses` keeps it."""
    status = response.status_code
    if content_type.startswith("application/json"):
        parsed = _loads(await response.aread())
        error = parsed.get("error") if isinstance(parsed, dict) and "result" not in parsed else None
        if isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str):
            return {"error": error}
    if status == 404:
        code, stand_in = INVALID_REQUEST, "Session terminated"
    else:
        code, stand_in = INTERNAL_ERROR, "Server returned an error response"
    text = f"HTTP {status} {response.reason_phrase}".rstrip() + f" from the server ({stand_in})"
    return _error(code, text, {"http_status": status})
