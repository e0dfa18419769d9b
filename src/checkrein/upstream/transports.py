"""Opening the stream pair for a ``ServerConfig`` (stdio, legacy SSE, Streamable HTTP), and
following ``nextCursor`` through a paginated listing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp.client._transport import TransportStreams  # typing only: the SDK's stream-pair alias
from mcp.client.sse import sse_client
from mcp.client.streamable_http import StreamableHTTPTransport
from mcp.shared._compat import resync_tracer
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamError
from checkrein.upstream._stdio import StdioProcess, open_stdio
from checkrein.upstream.raw import RawRequests
from checkrein.upstream.raw_http import RawHttpRequests
from checkrein.upstream.spawn import EarlyProcesses

__all__ = ["all_pages", "open_transport"]

_MAX_PAGES = 1000
_CONNECT_TIMEOUT_S = 10.0


def open_transport(
    config: ServerConfig,
    process: StdioProcess | None,
    early: EarlyProcesses | None = None,
    raw: RawRequests | RawHttpRequests | None = None,
) -> AbstractAsyncContextManager[TransportStreams]:
    """The transport context for ``config`` (its ``${VAR}`` references resolved at load).

    ``process`` (stdio only) collects what the child does; ``early`` may hold the child already
    started (`checkrein serve` starts servers before its heavy imports); ``raw`` (a `RawRequests`
    for stdio, a `RawHttpRequests` for Streamable HTTP) is bound to the connection as its raw
    request lane. Raises ``UpstreamUnavailable`` when a stdio
    command cannot be started.
    """
    if config.transport == "stdio":
        if process is None or config.command is None:
            raise ValueError("a stdio transport needs a command and a StdioProcess to fill in")
        return open_stdio(
            config.command,
            list(config.args),
            env=dict(config.env),
            cwd=config.cwd,
            process_info=process,
            process=early.take(config) if early is not None else None,
            raw=raw if isinstance(raw, RawRequests) else None,
        )
    if config.url is None:
        raise ValueError(f"a {config.transport} transport needs a url")
    headers = dict(config.headers)
    # Read timeout above the call timeout: our own deadline decides, not the socket's.
    read_s = max(300.0, config.timeout_s + 30.0)
    if config.transport == "sse":
        return sse_client(config.url, headers=headers, timeout=_CONNECT_TIMEOUT_S, sse_read_timeout=read_s)
    return _streamable_http(config.url, headers, read_s, raw if isinstance(raw, RawHttpRequests) else None)


@asynccontextmanager
async def _streamable_http(
    url: str, headers: dict[str, str], read_s: float, raw: RawHttpRequests | None
) -> AsyncIterator[TransportStreams]:
    timeout = httpx2.Timeout(_CONNECT_TIMEOUT_S, read=read_s)
    statuses = HttpStatuses()
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks={"response": [statuses.on_response]}) as client:
        async with _sdk_streamable_http(url, client, raw, (statuses.on_response,)) as (read, write):
            yield StatusReader(read, statuses), write


@asynccontextmanager
async def _sdk_streamable_http(
    url: str, client: httpx2.AsyncClient, raw: RawHttpRequests | None, sdk_hooks: tuple[Callable[..., Any], ...] = ()
) -> AsyncIterator[TransportStreams]:
    """The SDK's ``streamable_http_client`` (mcp 2.x, same steps), keeping hold of its transport
    and read stream so ``raw`` can use the session id and hand the server's messages over
    (``sdk_hooks``: the client's hooks for the SDK's path only, which ``raw`` may skip)."""
    transport = StreamableHTTPTransport(url)
    read_stream_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_stream_reader = create_context_streams[SessionMessage](0)
    async with read_stream_writer, read_stream, write_stream, write_stream_reader, anyio.create_task_group() as tg:

        def start_get_stream() -> None:
            tg.start_soon(transport.handle_get_stream, client, read_stream_writer)

        def fail(exc: BaseException) -> None:
            # A raw POST's transport failure ends the connection as a failed SDK POST task does.
            async def raise_it() -> None:
                raise exc

            tg.start_soon(raise_it)

        tg.start_soon(transport.post_writer, client, write_stream_reader, read_stream_writer, write_stream, start_get_stream, tg)
        if raw is not None:
            raw.bind(client, transport, read_stream_writer.send, fail, sdk_hooks)
        try:
            yield read_stream, write_stream
        finally:
            if raw is not None:
                raw.unbind()
            if transport.session_id:
                await transport.terminate_session(client)
            tg.cancel_scope.cancel()
    await resync_tracer()


_STAND_INS = frozenset({"Server returned an error response", "Not Found", "Session terminated"})
"""The messages the SDK's Streamable HTTP client puts in place of a failed POST (the status is lost)."""


class HttpStatuses:
    """The HTTP status of each failed POST, by the JSON-RPC id of the request it carried: the SDK
    answers a 401, 403, 404 or 501 with one generic JSON-RPC error, so the status is taken here and
    put back into that error's message (bounded: the newest 256)."""

    def __init__(self) -> None:
        self.by_id: dict[str | int, tuple[int, str]] = {}

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code < 400 or response.request.method != "POST":
            return
        try:
            body = json.loads(response.request.content)
        except (ValueError, httpx2.RequestNotRead):
            return
        rid = body.get("id") if isinstance(body, dict) else None
        if isinstance(rid, str | int) and not isinstance(rid, bool):
            if len(self.by_id) >= 256:
                self.by_id.pop(next(iter(self.by_id)))
            self.by_id[rid] = (response.status_code, response.reason_phrase)

    def annotate(self, item: Any) -> Any:
        """``item`` with the HTTP status in its error message, when it is the SDK's stand-in."""
        message = getattr(item, "message", None)
        if not isinstance(message, types.JSONRPCError) or message.id is None:
            return item
        found = self.by_id.pop(message.id, None)
        if found is None or message.error.message not in _STAND_INS:
            return item
        status, reason = found
        error = message.error.model_copy(
            update={
                "message": f"HTTP {status} {reason}".rstrip() + f" from the server ({message.error.message})",
                "data": {"http_status": status},
            }
        )
        return replace(item, message=message.model_copy(update={"error": error}))


class StatusReader:
    """The SDK's read stream, with `HttpStatuses.annotate` applied to every item it yields."""

    def __init__(self, inner: Any, statuses: HttpStatuses) -> None:
        self._inner = inner
        self._statuses = statuses

    async def receive(self) -> Any:
        return self._statuses.annotate(await self._inner.receive())

    def __aiter__(self) -> StatusReader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> StatusReader:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def all_pages(fetch: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
    """Call ``fetch(params=...)`` following ``nextCursor`` and return every page's ``attr`` items.

    Raises ``UpstreamError`` when the server repeats a cursor or never ends the listing.
    """
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await fetch(params=params)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if cursor is None:
            return items
        if cursor in seen:
            raise UpstreamError(f"the server repeated the {attr} cursor {cursor!r}")
        seen.add(cursor)
    raise UpstreamError(f"the {attr} listing did not end after {_MAX_PAGES} pages")
