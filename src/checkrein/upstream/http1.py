"""A plain HTTP/1.1 client for the raw HTTP lane's POSTs to an ``http://`` upstream
(`checkrein.upstream.http_post`): an asyncio protocol over one TCP connection, its responses parsed
by ``httptools`` (llhttp, the parser uvicorn uses), and a small pool of kept-alive connections.

It does for that one request shape what ``httpcore2``'s pool does with ``h11``, for about a quarter
of the CPU: the request head is bytes built once per header set (`RequestHead`), written with the
body in one ``write``; the response is parsed in C and its body handed over as the chunks arrive.
What it keeps from the pool it replaces: the connection limit (a request waits for a slot up to the
pool timeout), the keep-alive limit and expiry, the connect, read, write and pool timeouts of the
request, flow control both ways, and the exceptions (``httpx2.ConnectError``, ``ReadTimeout``,
``RemoteProtocolError`` ...) the client's transport raises for the same failures. A connection is
reused only when its response was read to the end, was delimited (``Content-Length`` or chunked),
allowed keep-alive, and nothing arrived on it since; anything unexpected (bytes between responses,
a second response, a malformed head, more than `MAX_HEAD_BYTES` of head) fails the request and
closes the connection. TLS, proxies, Unix sockets, connect retries and HTTP/2 are not here: a client
configured with any of them keeps ``httpcore2`` (`checkrein.upstream.http_post.DirectPost.usable`).
"""

from __future__ import annotations

import asyncio
import re
import select
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, cast

import httptools
import httpx2

__all__ = ["MAX_HEAD_BYTES", "Http1Pool", "RequestHead"]

MAX_HEAD_BYTES = 100 * 1024
"""A response head (status line and headers) past this many bytes fails the request, as ``h11``'s
default ``max_incomplete_event_size`` does."""

_HIGH_WATER = 256 * 1024
"""Body bytes held unread before the connection stops reading from the socket."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[^\x00-\x08\x0a-\x1f\x7f]*")
_TARGET = re.compile(rb"[\x21-\x7e]+")


class RequestHead:
    """The bytes of a request head with a ``Content-Length`` to fill in per request: the request
    line and the headers before it, and the headers after it (validated once, as ``h11`` validates
    every request: a header name must be a token, a value must hold no CR, LF or NUL)."""

    __slots__ = ("prefix", "suffix")

    def __init__(self, method: bytes, target: bytes, before: Iterable[tuple[bytes, bytes]], after: Iterable[tuple[bytes, bytes]]) -> None:
        if not _TOKEN.fullmatch(method) or not _TARGET.fullmatch(target):
            raise httpx2.LocalProtocolError(f"invalid request line: {method!r} {target!r}")
        self.prefix = b"".join([method, b" ", target, b" HTTP/1.1\r\n", *_lines(before), b"Content-Length: "])
        self.suffix = b"".join([b"\r\n", *_lines(after), b"\r\n"])

    def render(self, body: bytes) -> bytes:
        """The head and ``body``, as written."""
        return b"".join((self.prefix, str(len(body)).encode(), self.suffix, body))


def _lines(headers: Iterable[tuple[bytes, bytes]]) -> list[bytes]:
    lines = []
    for name, value in headers:
        if not _TOKEN.fullmatch(name):
            raise httpx2.LocalProtocolError(f"invalid header name {name!r}")
        value = value.strip(b" \t")
        if not _FIELD_VALUE.fullmatch(value):
            raise httpx2.LocalProtocolError(f"invalid header value for {name.decode('latin-1')}")
        lines.append(b"%s: %s\r\n" % (name, value))
    return lines


class _Connection(asyncio.Protocol):
    """One TCP connection, one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self._fd = -1
        self.idle_since = 0.0
        self._in_flight = False
        self._broken = False
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._head_bytes = 0
        self._head_done = False
        self._complete = False
        self._delimited = False
        self._keep_alive = False
        self._status = 0
        self._version = "1.1"
        self._reason = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._chunks: deque[bytes] = deque()
        self._held = 0
        self._reading_paused = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass, but is one in kind
        sock = transport.get_extra_info("socket")
        self._fd = -1 if sock is None else sock.fileno()

    def data_received(self, data: bytes) -> None:
        if not self._in_flight or self._complete:
            self.close()  # bytes outside a response: the answer already read stands, the connection does not
            return
        if not self._head_done:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(httpx2.RemoteProtocolError("the server switched protocols"))
            return
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _Unsupported):
                self._fail(httpx2.RemoteProtocolError("only Transfer-Encoding: chunked is supported"))
            elif self._complete:  # a second message after ours (on_message_begin stopped the parser)
                self.close()
            else:
                self._fail(httpx2.RemoteProtocolError(f"malformed response: {exc}"))
            return
        if not self._head_done and self._head_bytes > MAX_HEAD_BYTES:
            self._fail(httpx2.RemoteProtocolError(f"the response head exceeded {MAX_HEAD_BYTES} bytes"))
            return
        if self._held > _HIGH_WATER and not self._reading_paused and self.transport is not None:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._broken = True
        if self._in_flight and not self._complete and self._error is None:
            if self._head_done and not self._delimited and exc is None:
                self._complete = True  # a body delimited by the connection's close (a reset is not its end)
            elif not self._head_done:
                self._error = httpx2.RemoteProtocolError("Server disconnected without sending a response.")
            elif exc is not None:
                self._error = httpx2.ReadError(str(exc) or type(exc).__name__)
            else:
                self._error = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_exception(httpx2.WriteError(str(exc) if exc else "connection closed while writing"))

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = self._loop.create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self._complete:
            raise _Stray  # stops llhttp: data_received closes the connection

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim answer: its head is dropped, the final one follows
            self._reason, self._headers = b"", []
            return
        self._status, self._head_done = status, True
        self._version = self._parser.get_http_version()
        # As h11: an HTTP/1.0 answer is never kept, and a transfer coding other than chunked last is refused.
        self._keep_alive = self._version == "1.1" and self._parser.should_keep_alive()
        codings = [value for name, value in self._headers if name.lower() == b"transfer-encoding"]
        if codings and b",".join(codings).rsplit(b",", 1)[-1].strip().lower() != b"chunked":
            raise _Unsupported
        self._delimited = status in (204, 304) or bool(codings) or any(name.lower() == b"content-length" for name, _ in self._headers)

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._held += len(body)

    def on_message_complete(self) -> None:
        if self._head_done:
            self._complete = True

    # the request

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._broken = True
        if self.transport is not None:
            self.transport.abort()  # not close(): that waits for a write buffer a stuck peer never takes
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, timeout: float | None, timed_out: type[httpx2.TimeoutException]) -> None:
        waiter = self._waiter = self._loop.create_future()
        timer = None if timeout is None else self._loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        except TimeoutError:
            self._fail(timed_out("timed out"))
            raise timed_out("timed out") from None
        finally:
            if timer is not None:
                timer.cancel()

    def reusable(self, now: float, expiry: float | None) -> bool:
        """Whether this idle connection may carry the next request: not closed, not expired, and
        nothing to read on its socket. That last test is a poll of the socket itself, as
        ``httpcore2`` makes: a server that closed the connection since the loop last ran (a restart
        while no await let the loop see it) has left an end of file there, not yet a `connection_lost`."""
        if self._broken or self.transport is None or self.transport.is_closing() or self._fd < 0:
            return False
        if expiry is not None and now - self.idle_since >= expiry:
            return False
        poll = select.poll()
        poll.register(self._fd, select.POLLIN)
        return not poll.poll(0)

    @property
    def http_version(self) -> bytes:
        """The response's version, as ``httpx2`` reports it (``b"HTTP/1.1"``)."""
        return b"HTTP/" + self._version.encode()

    async def send(self, data: bytes, timeouts: Mapping[str, float | None]) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        """Write a request and wait for its response's head: status, reason phrase, headers."""
        assert self.transport is not None
        self._in_flight, self._complete, self._head_done, self._error = True, False, False, None
        self._head_bytes, self._status, self._reason, self._headers = 0, 0, b"", []
        self.transport.write(data)
        if self._drained is not None:
            drained = self._drained
            timer = None
            if timeouts.get("write") is not None:
                timer = self._loop.call_later(timeouts["write"], _expire, drained)  # type: ignore[arg-type]
            try:
                await drained
            except TimeoutError:
                self._fail(httpx2.WriteTimeout("timed out"))
                raise httpx2.WriteTimeout("timed out") from None
            finally:
                if timer is not None:
                    timer.cancel()
        while not self._head_done:
            if self._error is not None:
                raise self._error
            await self._wait(timeouts.get("read"), httpx2.ReadTimeout)
        return self._status, self._reason, self._headers

    async def chunks(self, timeout: float | None) -> AsyncIterator[bytes]:
        """The response's body as it arrives, to its end."""
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._held -= len(chunk)
                if self._reading_paused and self._held <= _HIGH_WATER // 2 and self.transport is not None:
                    self._reading_paused = False
                    self.transport.resume_reading()
                yield chunk
            if self._complete:
                return
            if self._error is not None:
                raise self._error
            await self._wait(timeout, httpx2.ReadTimeout)

    def finished(self) -> bool:
        """After the body was read to its end: whether the connection may be kept."""
        self._in_flight = False
        keep = self._complete and self._delimited and self._keep_alive and not self._broken and self._error is None
        if keep:
            self._parser = httptools.HttpResponseParser(self)  # llhttp's state after a message is not reset by us
        return keep

    def close(self) -> None:
        self._broken = True
        if self.transport is not None:
            self.transport.abort()  # at once, unsent bytes dropped: nothing is left to send when it is closed


class _Stray(Exception):
    """A second response began on a connection after ours."""


class _Unsupported(Exception):
    """A transfer coding other than chunked (h11 refuses it too)."""


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class _Body(httpx2.AsyncByteStream):
    """A response body: the connection goes back to the pool when it was read to the end, and is
    closed when the reader stopped before."""

    def __init__(self, pool: Http1Pool, connection: _Connection, timeout: float | None) -> None:
        self._pool, self._connection, self._timeout = pool, connection, timeout
        self._done = False
        self._read_to_end = False
        self.http_version = connection.http_version

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._done:
            raise httpx2.StreamClosed()
        try:
            async for chunk in self._connection.chunks(self._timeout):
                yield chunk
        except BaseException:
            self._release(keep=False)
            raise
        self._read_to_end = True
        self._release(keep=True)

    async def aclose(self) -> None:
        self._release(keep=False)

    def _release(self, keep: bool) -> None:
        if not self._done:
            self._done = True
            self._pool.release(self._connection, keep and self._read_to_end and self._connection.finished())


class Http1Pool:
    """Kept-alive HTTP/1.1 connections to one ``host:port`` (see the module docstring)."""

    def __init__(
        self, host: str, port: int, *, max_connections: int | None = None, max_keepalive: int | None = None, keepalive_expiry: float | None = None
    ) -> None:
        self._host, self._port = host, port
        self._slots = asyncio.Semaphore(max_connections) if max_connections else None
        self._max_keepalive = max_keepalive
        self._expiry = keepalive_expiry
        self._idle: list[_Connection] = []
        self._closed = False
        self.opened = 0
        """Connections opened (tests and counters)."""

    async def request(self, data: bytes, extensions: Mapping[str, Any]) -> tuple[int, bytes, list[tuple[bytes, bytes]], _Body]:
        """Send ``data`` (a whole request, `RequestHead.render`) and return the response's status,
        reason phrase, headers and body stream. Raises ``httpx2.TransportError``."""
        if self._closed:
            raise httpx2.ConnectError("the connection pool is closed")
        timeouts: Mapping[str, float | None] = extensions.get("timeout") or {}
        if self._slots is not None:
            if self._slots.locked():
                try:
                    await asyncio.wait_for(self._slots.acquire(), timeouts.get("pool"))
                except TimeoutError:
                    raise httpx2.PoolTimeout("timed out waiting for a connection") from None
            else:
                await self._slots.acquire()
        connection: _Connection | None = None
        try:
            connection = await self._connection(timeouts.get("connect"))
            status, reason, headers = await connection.send(data, timeouts)
        except BaseException:
            if self._slots is not None:
                self._slots.release()
            if connection is not None:
                connection.close()
            raise
        return status, reason, headers, _Body(self, connection, timeouts.get("read"))

    async def _connection(self, timeout: float | None) -> _Connection:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable(now, self._expiry):
                return connection
            connection.close()
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(loop.create_connection(lambda: _Connection(loop), self._host, self._port), timeout)
        except TimeoutError:
            raise httpx2.ConnectTimeout("timed out") from None
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        self.opened += 1
        return connection

    def release(self, connection: _Connection, keep: bool) -> None:
        """A request on ``connection`` is over: keep the connection idle or close it."""
        if self._slots is not None:
            self._slots.release()
        if keep and not self._closed and (self._max_keepalive is None or len(self._idle) < self._max_keepalive):
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()

    def close(self) -> None:
        """Close the idle connections; those in use close when their request ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
