"""`checkrein.upstream.http1`: the plain HTTP/1.1 client of the raw HTTP lane, against scripted
servers on 127.0.0.1 that write exact bytes: keep-alive, chunked and close-delimited bodies, a
reader that stops early, bytes outside a response, a server that closes an idle connection, the
limits and timeouts, and the errors ``httpx2``'s transport raises for the same failures."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from checkrein.upstream.http1 import MAX_HEAD_BYTES, Http1Pool, RequestHead
from checkrein.upstream.http_post import DirectPost

pytestmark = pytest.mark.anyio

TIMEOUTS: dict[str, Any] = {"timeout": {"connect": 5.0, "read": 10.0, "write": 5.0, "pool": 5.0}}


@pytest.fixture(params=[pytest.param(("asyncio", {}), id="asyncio"), pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    """The client is an asyncio protocol, and serve runs it on uvloop where it is installed."""
    backend: tuple[str, dict[str, bool]] = request.param
    return backend


@dataclass
class Script:
    """A server whose every connection runs ``handle(reader, writer, number)``."""

    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, Script], Awaitable[None]]


@asynccontextmanager
async def serving(handle: Handler) -> AsyncIterator[Script]:
    script = Script()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        script.connections += 1
        try:
            await handle(reader, writer, script)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: what some tests do on purpose
        finally:
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    script.port = server.sockets[0].getsockname()[1]
    try:
        yield script
    finally:
        server.close()


async def read_request(reader: asyncio.StreamReader, script: Script) -> bytes:
    """One request (head and Content-Length body), recorded; b"" at the end of the stream."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return b""
    size = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    request = head + await reader.readexactly(size)
    script.requests.append(request)
    return request


def answer(body: bytes, *headers: bytes, status: bytes = b"200 OK") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"content-length: %d\r\n\r\n" % len(body) + body


def head(target: bytes = b"/mcp", **extra: bytes) -> RequestHead:
    before = [(b"Host", b"127.0.0.1"), (b"Accept", b"application/json")]
    return RequestHead(b"POST", target, before, [(k.encode(), v) for k, v in extra.items()])


async def post(pool: Http1Pool, body: bytes = b"{}", extensions: dict[str, Any] = TIMEOUTS) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes]:
    status, reason, headers, stream = await pool.request(head().render(body), extensions)
    try:
        data = b"".join([chunk async for chunk in stream])
    finally:
        await stream.aclose()
    return status, reason, headers, data


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
    while request := await read_request(reader, script):
        writer.write(answer(b"echo " + request.rsplit(b"\r\n\r\n", 1)[1], b"Content-Type: application/json"))
        await writer.drain()


async def test_it_writes_the_head_once_built_and_reuses_one_connection() -> None:
    async with serving(keep_alive) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            for body in (b"first", b"a longer second body", b""):
                status, reason, headers, data = await post(pool, body)
                assert (status, reason, data) == (200, b"OK", b"echo " + body)
                assert (b"Content-Type", b"application/json") in headers
        finally:
            pool.close()
        assert pool.opened == 1 and script.connections == 1
        assert script.requests[1] == (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Length: 20\r\n\r\na longer second body"
        )


@pytest.mark.parametrize(
    ("before", "after", "target"),
    [
        ([(b"X-A", b"v\r\nInjected: 1")], [], b"/mcp"),
        ([(b"X-A", b"v\nInjected: 1")], [], b"/mcp"),
        ([], [(b"X-A", b"v\x00")], b"/mcp"),
        ([(b"X A", b"v")], [], b"/mcp"),
        ([(b"X-A:", b"v")], [], b"/mcp"),
        ([], [], b"/mcp HTTP/1.1\r\nX: y"),
        ([], [], b"/m cp"),
    ],
)
def test_a_header_or_target_that_would_split_the_head_is_refused(
    before: list[tuple[bytes, bytes]], after: list[tuple[bytes, bytes]], target: bytes
) -> None:
    with pytest.raises(httpx2.LocalProtocolError):
        RequestHead(b"POST", target, before, after)


async def test_a_chunked_body_is_handed_over_as_it_arrives() -> None:
    second = asyncio.Event()

    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"b\r\ndata: one\n\n\r\n")
        await writer.drain()
        await second.wait()  # sent only once the client has the first event
        writer.write(b"b\r\ndata: two\n\n\r\n0\r\n\r\n")
        await writer.drain()
        await keep_alive(reader, writer, script)

    async with serving(chunked) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            status, _, _, stream = await pool.request(head().render(b"{}"), TIMEOUTS)
            chunks = aiter(stream)
            assert status == 200 and await asyncio.wait_for(anext(chunks), 10) == b"data: one\n\n"
            second.set()
            assert [chunk async for chunk in chunks] == [b"data: two\n\n"]
            await stream.aclose()
            assert (await post(pool, b"again"))[3] == b"echo again"
        finally:
            pool.close()
        assert pool.opened == 1, "a chunked body read to its end leaves the connection kept"


async def test_a_body_delimited_by_the_close_is_read_to_it_and_not_kept() -> None:
    async def close_delimited(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"whole\": ")
        await writer.drain()
        writer.write(b"true}")
        await writer.drain()

    async with serving(close_delimited) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            assert (await post(pool))[3] == b'{"whole": true}'
            assert (await post(pool))[3] == b'{"whole": true}'
        finally:
            pool.close()
        assert pool.opened == 2


async def test_a_reader_that_stops_early_closes_the_connection() -> None:
    ended = asyncio.Event()

    async def long_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10)
        await writer.drain()
        assert await reader.read() == b""  # the client closed without reading the rest
        ended.set()

    async with serving(long_body) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            _, _, _, stream = await pool.request(head().render(b"{}"), TIMEOUTS)
            assert await anext(aiter(stream)) == b"x" * 10
            await stream.aclose()
            await asyncio.wait_for(ended.wait(), 10)
        finally:
            pool.close()


async def test_bytes_after_the_answer_leave_it_standing_and_the_connection_closed() -> None:
    async def stray(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        number = script.connections
        tail = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge" if number == 1 else b""
        writer.write(answer(b"ours %d" % number) + tail)
        await writer.drain()
        await keep_alive(reader, writer, script)

    async with serving(stray) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            assert (await post(pool))[3] == b"ours 1"
            assert (await post(pool))[3] == b"ours 2", "the second response on connection 1 is never read"
        finally:
            pool.close()
        assert pool.opened == 2


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(answer(b"only one"))  # keep-alive by HTTP/1.1 rules, then closed anyway
        await writer.drain()

    async with serving(once) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            assert (await post(pool))[3] == b"only one"
            assert (await post(pool))[3] == b"only one"
        finally:
            pool.close()
        assert pool.opened == 2 and len(script.requests) == 2


async def test_connection_close_and_http_1_0_answers_are_not_kept() -> None:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        number = script.connections
        if number > 2:
            await keep_alive(reader, writer, script)
            return
        await read_request(reader, script)
        writer.write(answer(b"bye", b"Connection: close") if number == 1 else answer(b"old", b"Connection: keep-alive").replace(b"HTTP/1.1", b"HTTP/1.0", 1))
        await writer.drain()
        await reader.read()  # the client closes

    async with serving(closing) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            assert (await post(pool))[3] == b"bye"
            assert (await post(pool))[3] == b"old"
            assert (await post(pool))[3] == b"echo {}"
        finally:
            pool.close()
        assert pool.opened == 3


async def test_an_interim_100_answer_is_skipped() -> None:
    async def interim(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n" + answer(b"final", status=b"201 Created"))
        await writer.drain()

    async with serving(interim) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            status, reason, headers, data = await post(pool)
        finally:
            pool.close()
        assert (status, reason, data) == (201, b"Created", b"final") and (b"X-Interim", b"1") not in headers


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"", "without sending a response"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "without sending a response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "without sending complete message body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabc", "without sending complete message body"),
        (b"HTTP/1.1 2OO OK\r\n\r\n", "malformed response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "malformed response"),
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES + 10), "exceeded"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", "only Transfer-Encoding: chunked"),
        (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n", "switched protocols"),
    ],
)
async def test_a_broken_answer_raises_remote_protocol_error(wire: bytes, message: str) -> None:
    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(wire)
        await writer.drain()

    async with serving(broken) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            with pytest.raises(httpx2.RemoteProtocolError, match=message):
                await post(pool)
        finally:
            pool.close()


async def test_a_reset_in_a_body_delimited_by_the_close_is_read_error() -> None:
    """A reset is not the end of a close-delimited body: the cut answer is not handed over as whole."""

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n\r\n{"jsonrpc": "2.0", "res')
        await writer.drain()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends RST

    async with serving(reset) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            with pytest.raises(httpx2.ReadError):
                await post(pool)
        finally:
            pool.close()


async def test_a_write_the_server_never_takes_times_out_and_closes_the_socket() -> None:
    closed = asyncio.Event()

    async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await asyncio.sleep(0.5)  # never reads the request until the client gave up
        while await reader.read(1 << 20):
            pass  # what was in flight before the client's reset
        closed.set()

    async with serving(deaf) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        quick = {"timeout": {"connect": 5.0, "read": 5.0, "write": 0.2, "pool": 5.0}}
        try:
            with pytest.raises(httpx2.WriteTimeout):
                await pool.request(head().render(b"x" * 30_000_000), quick)
            await asyncio.wait_for(closed.wait(), 20)  # the socket is gone, not kept for its unsent bytes
        finally:
            pool.close()


async def test_a_refused_connect_is_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        pool = Http1Pool("127.0.0.1", port)
        with pytest.raises(httpx2.ConnectError):
            await post(pool)


async def test_timeouts_are_the_transports_exceptions() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        if script.connections >= 2:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
            await writer.drain()
        await reader.read()  # never answers (more): until the client gives up

    quick = {"timeout": {"connect": 5.0, "read": 0.2, "write": 5.0, "pool": 0.2}}
    async with serving(silent) as script:
        pool = Http1Pool("127.0.0.1", script.port, max_connections=1)
        try:
            with pytest.raises(httpx2.ReadTimeout):
                await post(pool, extensions=quick)
            with pytest.raises(httpx2.ReadTimeout):
                await post(pool, extensions=quick)  # the head came, the body stopped
            _, _, _, stream = await pool.request(head().render(b"{}"), TIMEOUTS)  # connection 3 holds the only slot
            with pytest.raises(httpx2.PoolTimeout):
                await pool.request(head().render(b"{}"), quick)
            await stream.aclose()
        finally:
            pool.close()
        assert script.connections == 3, "a timed-out connection is not reused"


async def test_a_large_body_read_slowly_arrives_whole() -> None:
    big = bytes(range(256)) * 8192  # 2 MiB: the reader pauses the socket past the high-water mark

    async def large(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        await read_request(reader, script)
        writer.write(answer(big))
        await writer.drain()
        await keep_alive(reader, writer, script)

    async with serving(large) as script:
        pool = Http1Pool("127.0.0.1", script.port)
        try:
            _, _, _, stream = await pool.request(head().render(b"{}"), TIMEOUTS)
            received = []
            async for chunk in stream:
                received.append(chunk)
                await asyncio.sleep(0)
            assert b"".join(received) == big
            assert (await post(pool, b"x"))[3] == b"echo x"
        finally:
            pool.close()
        assert pool.opened == 1


async def test_direct_post_takes_it_for_a_plain_http_client_only() -> None:
    """And through `DirectPost` the answer is an ``httpx2.Response`` as the transport makes it:
    its reason phrase, version and content decoding."""
    compressed = gzip.compress(b'{"ok": true}')

    async def gzipped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, script: Script) -> None:
        while await read_request(reader, script):
            writer.write(answer(compressed, b"Content-Encoding: gzip", b"Content-Type: application/json", status=b"200 Fine"))
            await writer.drain()

    async with serving(gzipped) as script:
        url = f"http://127.0.0.1:{script.port}/mcp"
        async with httpx2.AsyncClient() as client:
            direct = DirectPost.usable(client, url)
            assert direct is not None and direct.plain
            try:
                response = await direct.send(b"{}", {"content-type": "application/json"})
                assert await response.aread() == b'{"ok": true}'
                assert (response.reason_phrase, response.http_version) == ("Fine", "HTTP/1.1")
                await response.aclose()
            finally:
                direct.close()
            assert b"\r\ncontent-type: application/json\r\n" in script.requests[0].lower()
            https = DirectPost.usable(client, f"https://127.0.0.1:{script.port}/mcp")
            assert https is not None and not https.plain
        for odd in (
            httpx2.AsyncHTTPTransport(retries=1),
            httpx2.AsyncHTTPTransport(local_address="127.0.0.1"),
            httpx2.AsyncHTTPTransport(uds="/nonexistent.sock"),
            httpx2.AsyncHTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]),
        ):
            async with httpx2.AsyncClient(transport=odd) as client:
                direct = DirectPost.usable(client, url)
                assert direct is not None and not direct.plain, odd
