"""Opening the stream pair for a ``ServerConfig`` (stdio, legacy SSE, Streamable HTTP), and
following ``nextCursor`` through a paginated listing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx2
import mcp.types as types
from mcp.client._transport import TransportStreams  # typing only: the SDK's stream-pair alias
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamError
from checkrein.upstream._stdio import StdioProcess, open_stdio

__all__ = ["all_pages", "open_transport"]

_MAX_PAGES = 1000
_CONNECT_TIMEOUT_S = 10.0


def open_transport(
    config: ServerConfig, process: StdioProcess | None
) -> AbstractAsyncContextManager[TransportStreams]:
    """The transport context for ``config`` (its ``${VAR}`` references resolved at load).

    ``process`` (stdio only) collects what the child does. Raises ``UpstreamUnavailable`` when a
    stdio command cannot be started.
    """
    if config.transport == "stdio":
        if process is None or config.command is None:
            raise ValueError("a stdio transport needs a command and a StdioProcess to fill in")
        return open_stdio(config.command, list(config.args), env=dict(config.env), cwd=config.cwd, process_info=process)
    if config.url is None:
        raise ValueError(f"a {config.transport} transport needs a url")
    headers = dict(config.headers)
    # Read timeout above the call timeout: our own deadline decides, not the socket's.
    read_s = max(300.0, config.timeout_s + 30.0)
    if config.transport == "sse":
        return sse_client(config.url, headers=headers, timeout=_CONNECT_TIMEOUT_S, sse_read_timeout=read_s)
    return _streamable_http(config.url, headers, read_s)


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], read_s: float) -> AsyncIterator[TransportStreams]:
    timeout = httpx2.Timeout(_CONNECT_TIMEOUT_S, read=read_s)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            yield read, write


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
