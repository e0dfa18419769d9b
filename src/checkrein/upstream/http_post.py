"""The raw HTTP lane's POST, sent through the ``httpx2`` client's own connection pool without the
client's per-request layers (`checkrein.upstream.raw_http`).

``client.stream`` builds and merges a request on every call (URL parsing, header merging, cookie
and auth handling, event hooks, a redirect loop, a log line) before the pool sees it: about a third
of the gateway's CPU for a relayed HTTP call went there and into the transport's request copy. On
an established session none of that can change between calls except the body and the per-call
headers, so `DirectPost` builds the request's headers once (through ``client.build_request``, so
they are exactly what the client would send), and hands each POST to the transport's
``httpcore2`` pool as the transport itself would, with the client's timeouts. The answer is
wrapped in the same ``httpx2.Response`` the transport returns (content decoding and exception
mapping included), so it is read as before.

Only for a client whose request to the URL would not be changed by anything else: the transport for
that URL is a plain ``httpx2.AsyncHTTPTransport`` over a plain ``httpcore2.AsyncConnectionPool``
(no proxy, no custom transport), no auth, no client query params, no request hooks, no response
hooks other than those the caller names as its own (the SDK path's status bookkeeping, which the
raw lane does itself), and an empty cookie jar (checked on every POST; a response that sets a
cookie is stored in the jar as the client would store it, and from then on the client's own path
is taken). Anything else takes ``client.stream``, unchanged. A redirect answer is handled as
``mcp.shared._httpx_utils.stream_within_origin`` handles it: followed by the client only while it
stays within the origin, otherwise handed back unfollowed.

For an ``http://`` URL whose pool would open a plain TCP connection and speak HTTP/1.1 (no Unix
socket, local address, socket options, connect retries or custom network backend), the POST does
not go to the ``httpcore2`` pool but to `checkrein.upstream.http1`'s, with the pool's limits: the
same head bytes (the template above), the same response object, the same exceptions, about a
fifth of the client's CPU per POST (`benchmarks/http_client.py`). It keeps its own connections, so
`DirectPost.close` closes them when the connection ends; the client's pool still carries the SDK
path's requests.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpcore2
import httpx2
from httpx2._transports.default import AsyncResponseStream, map_httpcore_exceptions
from mcp.shared._httpx_utils import next_request_within_origin, stream_within_origin

try:
    from httpcore2._backends.auto import AutoBackend

    from checkrein.upstream.http1 import Http1Pool, RequestHead
except ImportError:  # no httptools (a dependency on CPython off Windows only), or httpcore2 moved its
    # default backend (a private name): httpcore2 for every POST, as before checkrein.upstream.http1
    Http1Pool = RequestHead = AutoBackend = None  # type: ignore[assignment, misc]

__all__ = ["DirectPost", "Event", "post_within_origin", "read_events"]


class DirectPost:
    """POSTs to one URL through one client's pool (see the module docstring for when it applies)."""

    __slots__ = ("_client", "_extensions", "_h1", "_head", "_key", "_pool", "_request", "_split", "_target", "_url")

    def __init__(self, client: httpx2.AsyncClient, url: str, pool: httpcore2.AsyncConnectionPool, h1: Http1Pool | None = None) -> None:
        self._client, self._url, self._pool, self._h1 = client, url, pool, h1
        parsed = httpx2.URL(url)
        self._target = httpcore2.URL(scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port, target=parsed.raw_path)
        self._extensions: dict[str, Any] = {}
        self._key: tuple[tuple[str, str], ...] | None = None
        self._split: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]] = ([], [])
        self._head: RequestHead | None = None
        self._request: httpx2.Request | None = None

    @classmethod
    def usable(cls, client: httpx2.AsyncClient, url: str, own_hooks: Sequence[Callable[..., Any]] = ()) -> DirectPost | None:
        """A `DirectPost` for ``client`` and ``url``, or ``None`` when the client's own path may do
        something to the request that this one would not."""
        try:
            parsed = httpx2.URL(url)
        except httpx2.InvalidURL:
            return None
        if parsed.scheme not in ("http", "https") or not parsed.host or client.auth is not None or client.params:
            return None
        hooks = client.event_hooks
        if hooks.get("request") or any(hook not in own_hooks for hook in hooks.get("response", ())):
            return None
        try:
            transport = client._transport_for_url(parsed)
        except AttributeError:  # httpx2's private routing changed: take the client's own path
            return None
        if type(transport) is not httpx2.AsyncHTTPTransport:
            return None
        pool = getattr(transport, "_pool", None)
        if type(pool) is not httpcore2.AsyncConnectionPool:
            return None  # a proxy pool (a subclass) or something else
        return cls(client, url, pool, _plain_pool(pool, parsed))

    @property
    def plain(self) -> bool:
        """Whether POSTs go through `checkrein.upstream.http1` (tests and counters)."""
        return self._h1 is not None

    def close(self) -> None:
        """Close this POST's own connections (the client's pool is the client's to close)."""
        if self._h1 is not None:
            self._h1.close()

    def ready(self) -> bool:
        """Whether the next POST may go this way (the client holds no cookies)."""
        return not self._client.cookies.jar

    def _template(self, headers: dict[str, str]) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
        """The client's headers for a POST with ``headers``, split where Content-Length goes."""
        key = tuple(headers.items())
        if key != self._key:
            request = self._client.build_request("POST", self._url, content=b"", headers=headers)
            raw = list(request.headers.raw)
            at = next(i for i, (name, _) in enumerate(raw) if name.lower() == b"content-length")
            self._split = (raw[:at], raw[at + 1 :])
            self._extensions = dict(request.extensions)
            self._key, self._request = key, request
            if self._h1 is not None:
                self._head = RequestHead(b"POST", self._target.target, *self._split)
        return self._split

    async def send(self, body: bytes, headers: dict[str, str]) -> httpx2.Response:
        """POST ``body``: the response, streaming, as the client's transport returns it (its
        ``request`` the body-less template of this POST, for error context, or the POST itself when
        a redirect or a cookie needs it). Raises ``httpx2.TransportError``
        as the client does."""
        head, tail = self._template(headers)
        if self._h1 is not None and self._head is not None:
            status, reason, fields, stream = await self._h1.request(self._head.render(body), self._extensions)
            response = httpx2.Response(
                status_code=status, headers=fields, stream=stream, extensions={"http_version": stream.http_version, "reason_phrase": reason}
            )
        else:
            request = httpcore2.Request(
                b"POST",
                self._target,
                headers=[*head, (b"Content-Length", str(len(body)).encode()), *tail],
                content=body,
                extensions=dict(self._extensions),
            )
            with map_httpcore_exceptions():
                answer = await self._pool.handle_async_request(request)
            response = httpx2.Response(
                status_code=answer.status,
                headers=answer.headers,
                stream=AsyncResponseStream(answer.stream),  # type: ignore[arg-type]  # httpcore2's stream is async-iterable
                extensions=answer.extensions,
            )
        assert self._request is not None  # set by _template
        response.request = self._request
        if response.has_redirect_location or "set-cookie" in response.headers:
            try:
                sent = self._client.build_request("POST", self._url, content=body, headers=headers)
                response.request = sent
                self._client.cookies.extract_cookies(response)
                if response.has_redirect_location:
                    try:
                        response.next_request = self._client._build_redirect_request(sent, response)
                    except httpx2.RemoteProtocolError:
                        pass  # as the client: a malformed Location is not followed
            except BaseException:
                await response.aclose()  # its connection (and pool slot) is not left to the collector
                raise
        return response


def _plain_pool(pool: httpcore2.AsyncConnectionPool, url: httpx2.URL) -> Http1Pool | None:
    """An `Http1Pool` with ``pool``'s limits for an ``http://`` URL, when ``pool`` would open a plain
    TCP connection and speak HTTP/1.1 on it (no Unix socket, local address, socket options,
    connect retries or custom network backend), httptools is there, and an asyncio loop (asyncio's
    own or uvloop) is running."""
    if url.scheme != "http" or Http1Pool is None:
        return None
    try:
        asyncio.get_running_loop()
        plain = (
            pool._http1
            and pool._uds is None
            and pool._local_address is None
            and pool._socket_options is None
            and not pool._retries
            and type(pool._network_backend) is AutoBackend
        )
        limits = (pool._max_connections, pool._max_keepalive_connections, pool._keepalive_expiry)
    except (AttributeError, RuntimeError):  # httpcore2's private fields changed, or no asyncio loop
        return None
    if not plain:
        return None
    max_connections, max_keepalive, expiry = limits
    return Http1Pool(
        url.raw_host.decode("ascii"),
        url.port or 80,
        max_connections=max_connections if max_connections < sys.maxsize else None,
        max_keepalive=max_keepalive if max_keepalive < sys.maxsize else None,
        keepalive_expiry=expiry,
    )


@asynccontextmanager
async def post_within_origin(
    direct: DirectPost | None, client: httpx2.AsyncClient, url: str, body: bytes, headers: dict[str, str]
) -> AsyncIterator[httpx2.Response]:
    """``stream_within_origin(client, "POST", url, ...)``, its first POST sent by ``direct`` when
    that applies: a redirect within the origin is then followed by the client, at most
    ``client.max_redirects`` times; any other one is handed back unfollowed, as there."""
    if direct is None or not direct.ready():
        async with stream_within_origin(client, "POST", url, content=body, headers=headers) as response:
            yield response
        return
    response = await direct.send(body, headers)
    followed = 0
    try:
        while followed < client.max_redirects:
            following = next_request_within_origin(response) if response.next_request is not None else None
            if following is None:
                break
            try:
                await response.aread()  # drained so the connection goes back to the pool
            finally:
                await response.aclose()
            response = await client.send(following, stream=True, follow_redirects=False)
            followed += 1
        yield response
    finally:
        await response.aclose()


@dataclass(slots=True)
class Event:
    """One server-sent event, its data as bytes (``httpx2.ServerSentEvent`` without the text)."""

    event: str
    data: bytes
    id: str
    retry: int | None


def _lines(block: bytes) -> list[bytes]:
    return block.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")


class _Parser:
    """The field rules of ``httpx2``'s SSE decoder, over byte lines."""

    __slots__ = ("data", "last_id", "limit", "name", "pending", "retry", "size")

    def __init__(self, limit: int) -> None:
        self.limit, self.name, self.data, self.last_id = limit, "", list[bytes](), ""
        self.retry: int | None = None
        self.pending, self.size = False, 0

    def line(self, line: bytes) -> Event | None:
        if not line:
            self.size = 0
            if not self.pending:
                return None
            event = Event(self.name or "message", b"\n".join(self.data), self.last_id, self.retry)
            self.name, self.data, self.retry, self.pending = "", [], None, False
            return event
        if line[:1] == b":":
            return None
        self.size += len(line)
        self.check(0)
        field, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            self.data.append(value)
            self.pending = True
        elif field == b"event":
            self.name, self.pending = value.decode("utf-8", "replace"), True
        elif field == b"id":
            if b"\0" not in value:
                self.last_id, self.pending = value.decode("utf-8", "replace"), True
        elif field == b"retry":
            try:
                self.retry, self.pending = int(value.decode("utf-8", "replace")), True
            except ValueError:
                pass
        return None

    def check(self, unfinished: int) -> None:
        if self.size + unfinished > self.limit:
            raise httpx2.SSEError(f"Server-sent event exceeded the {self.limit} byte limit.")


async def read_events(response: httpx2.Response, max_event_size: int) -> AsyncIterator[Event]:
    """The events of an SSE response, parsed as ``httpx2.EventSource`` parses them (the same
    fields, line endings, ``id`` and ``retry`` rules, and the same ``httpx2.SSEError`` for a wrong
    content type or an event past ``max_event_size`` bytes, its unfinished line included), but over
    the decoded bytes: no text decoding of the body, the data left as bytes for orjson."""
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type != "text/event-stream":
        raise httpx2.SSEError(f"Expected response with content type 'text/event-stream', got {content_type!r}.")
    parser, rest = _Parser(max_event_size), b""
    async for chunk in response.aiter_bytes():
        block = rest + chunk
        cut = len(block) - 1 if block.endswith(b"\r") else len(block)  # a CR may start a CRLF
        lines = _lines(block[:cut])
        rest = lines.pop() + block[cut:]
        for line in lines:
            event = parser.line(line)
            if event is not None:
                yield event
        parser.check(len(rest) - len(block) + cut)  # a held CR is not counted, as there
    if rest:  # what EventSource's flush decodes at the stream's end
        for line in _lines(rest):
            event = parser.line(line)
            if event is not None:
                yield event
