"""`checkrein.upstream.http_post`: the raw HTTP lane's POST through the client's pool, against a
scripted HTTP/1.1 server on 127.0.0.1: when it applies, that it sends what the client would send,
keeps the connection, and handles redirects, cookies, compressed bodies and a dropped connection
as ``mcp.shared._httpx_utils.stream_within_origin`` does."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared._httpx_utils import redirect_location, stream_within_origin

from checkrein.upstream.http_post import DirectPost, post_within_origin, read_events

pytestmark = pytest.mark.anyio


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int


Answer = tuple[int, list[tuple[str, str]], bytes] | None
"""Status, headers, body; ``None`` closes the connection without an answer."""


@dataclass
class Server:
    port: int
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@asynccontextmanager
async def scripted(answer: Callable[[Seen], Answer]) -> AsyncIterator[Server]:
    """An HTTP/1.1 server with keep-alive that answers each request with ``answer(request)``."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server = Server(port=listener.extra(anyio.abc.SocketAttribute.local_port))

    async def handle(stream: SocketStream) -> None:
        server.connections += 1
        number, buffer = server.connections, b""
        async with stream:
            while True:
                while b"\r\n\r\n" not in buffer:
                    try:
                        buffer += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                line, *fields = head.decode("latin-1").split("\r\n")
                method, path, _ = line.split(" ")
                headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
                size = int(headers.get("content-length", "0"))
                while len(buffer) < size:
                    buffer += await stream.receive()
                seen = Seen(method, path, headers, buffer[:size], number)
                buffer = buffer[size:]
                server.seen.append(seen)
                reply = answer(seen)
                if reply is None:
                    return
                status, extra, body = reply
                lines = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", *(f"{k}: {v}" for k, v in extra)]
                await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


def ok(seen: Seen) -> Answer:
    return 200, [("content-type", "application/json")], b'{"echo": %d}' % len(seen.body)


def client(**kwargs: object) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"x-config": "set"}, timeout=httpx2.Timeout(10.0, read=60.0), **kwargs)  # type: ignore[arg-type]


async def test_it_applies_to_a_plain_client_only() -> None:
    """Auth, client params, a request hook, a foreign response hook or a proxy each keep the client's path."""
    url = "http://127.0.0.1:9/mcp"

    async def hook(_: object) -> None:
        return None

    async with client() as plain:
        assert DirectPost.usable(plain, url) is not None
        assert DirectPost.usable(plain, "ftp://127.0.0.1/x") is None
    async with client(event_hooks={"response": [hook]}) as hooked:
        assert DirectPost.usable(hooked, url) is None
        assert DirectPost.usable(hooked, url, own_hooks=(hook,)) is not None
    async with client(event_hooks={"request": [hook]}) as hooked:
        assert DirectPost.usable(hooked, url, own_hooks=(hook,)) is None
    for odd in (client(auth=("u", "p")), client(params={"a": "1"}), client(proxy="http://127.0.0.1:9")):
        async with odd:
            assert DirectPost.usable(odd, url) is None


async def test_a_client_without_the_private_routing_it_reads_keeps_the_clients_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx2 is the SDK's dependency: if a release drops the routing method `usable` reads, the
    lane falls back to ``client.stream`` instead of failing the connection."""
    monkeypatch.delattr(httpx2.AsyncClient, "_transport_for_url")
    async with client() as plain:
        assert DirectPost.usable(plain, "http://127.0.0.1:9/mcp") is None


async def test_it_sends_what_the_client_sends_on_one_kept_connection() -> None:
    """Same method, path, headers and body as ``client.stream``; sequential POSTs share a connection."""
    async with scripted(ok) as server, client() as http:
        direct = DirectPost.usable(http, server.url)
        assert direct is not None
        sent = {"accept": "application/json, text/event-stream", "mcp-session-id": "s1"}
        async with stream_within_origin(http, "POST", server.url, content=b"0123", headers=sent) as response:
            assert await response.aread() == b'{"echo": 4}'
        for body in (b"0123", b"abcdefgh", b"0123"):
            async with post_within_origin(direct, http, server.url, body, sent) as response:
                assert response.status_code == 200 and await response.aread() == b'{"echo": %d}' % len(body)
        by_client, *ours = server.seen
        assert all((s.method, s.path, s.headers, s.body) == (by_client.method, by_client.path, by_client.headers, by_client.body) for s in ours[::2])
        assert ours[1].body == b"abcdefgh" and ours[1].headers["content-length"] == "8"
        assert by_client.headers["x-config"] == "set" and by_client.headers["mcp-session-id"] == "s1"
        assert direct.plain, "an http:// URL with a plain client takes checkrein.upstream.http1"
        assert len({s.connection for s in ours}) == 1 and ours[0].connection != by_client.connection, "its own connection, kept"
        async with post_within_origin(direct, http, server.url, b"{}", {**sent, "mcp-session-id": "s2"}) as response:
            await response.aread()
        assert server.seen[-1].headers["mcp-session-id"] == "s2", "new per-call headers make a new template"


async def test_a_redirect_within_the_origin_is_followed_and_one_out_of_it_is_not() -> None:
    def answer(seen: Seen) -> Answer:
        if seen.path == "/mcp":
            return 307, [("location", "/mcp/")], b""
        if seen.path == "/mcp/":
            return ok(seen)
        return 308, [("location", "http://elsewhere.invalid/mcp")], b""

    async with scripted(answer) as server, client() as http:
        direct = DirectPost.usable(http, server.url)
        assert direct is not None
        async with post_within_origin(direct, http, server.url, b"body", {}) as response:
            assert response.status_code == 200 and await response.aread() == b'{"echo": 4}'
        assert [(s.method, s.path, s.body) for s in server.seen] == [("POST", "/mcp", b"body"), ("POST", "/mcp/", b"body")]
        away = server.url.replace("/mcp", "/away")
        direct = DirectPost.usable(http, away)
        assert direct is not None
        async with post_within_origin(direct, http, away, b"body", {}) as response:
            assert response.status_code == 308
            assert str(redirect_location(response)) == "http://elsewhere.invalid/mcp"
        assert server.seen[-1].path == "/away", "not followed"


async def test_a_cookie_is_kept_and_sent_by_the_client_path_from_then_on() -> None:
    def answer(seen: Seen) -> Answer:
        status, headers, body = ok(seen) or (0, [], b"")
        return status, [*headers, ("set-cookie", "lb=node1; Path=/")], body

    async with scripted(answer) as server, client() as http:
        direct = DirectPost.usable(http, server.url)
        assert direct is not None and direct.ready()
        for _ in range(2):
            async with post_within_origin(direct, http, server.url, b"x", {}) as response:
                await response.aread()
        assert not direct.ready() and http.cookies.get("lb") == "node1"
        assert "cookie" not in server.seen[0].headers and server.seen[1].headers["cookie"] == "lb=node1"


async def test_a_compressed_answer_is_decoded_and_a_dropped_connection_is_a_transport_error() -> None:
    def answer(seen: Seen) -> Answer:
        if seen.body == b"drop":
            return None
        return 200, [("content-type", "application/json"), ("content-encoding", "gzip")], gzip.compress(b'{"big": true}')

    async with scripted(answer) as server, client() as http:
        direct = DirectPost.usable(http, server.url)
        assert direct is not None
        async with post_within_origin(direct, http, server.url, b"x", {}) as response:
            assert await response.aread() == b'{"big": true}'
        with pytest.raises(httpx2.TransportError):
            async with post_within_origin(direct, http, server.url, b"drop", {}) as response:
                await response.aread()


class Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def sse_response(chunks: list[bytes], content_type: str = "text/event-stream") -> httpx2.Response:
    response = httpx2.Response(200, headers={"content-type": content_type}, stream=Chunks(chunks))
    response.request = httpx2.Request("POST", "http://127.0.0.1/mcp")
    return response


async def both_readers(chunks: list[bytes], limit: int) -> tuple[object, object]:
    """What ``httpx2.EventSource`` and `read_events` make of one body, as comparable values."""

    async def reference() -> object:
        try:
            return [(e.event, e.data, e.id, e.retry) async for e in httpx2.EventSource(sse_response(chunks), max_event_size=limit)]
        except httpx2.SSEError:
            return "SSEError"

    async def ours() -> object:
        try:
            return [(e.event, e.data.decode(), e.id, e.retry) async for e in read_events(sse_response(chunks), limit)]
        except httpx2.SSEError:
            return "SSEError"

    return await reference(), await ours()


_field = st.sampled_from(["data", "event", "id", "retry", "", "x"])
_value = st.text(alphabet=st.sampled_from("ab 1:é\0☃"), max_size=12)
_line = st.one_of(
    st.builds(lambda f, sep, v: f + sep + v, _field, st.sampled_from([":", ": ", ""]), _value),
    st.just(""),
    st.builds(lambda v: ":" + v, _value),
    st.integers(0, 99999).map(lambda n: f"retry: {n}"),
)
_body = st.builds(
    lambda lines, ends: "".join(line + end for line, end in zip(lines, ends, strict=False)),
    st.lists(_line, max_size=14),
    st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=14, max_size=14),
)


@settings(max_examples=300, deadline=None)
@given(body=_body, trailing=st.sampled_from(["", "\r", "data: tail"]), cuts=st.lists(st.integers(0, 200), max_size=6), limit=st.sampled_from([8, 40, 1 << 20]))
def test_read_events_parses_what_eventsource_parses(body: str, trailing: str, cuts: list[int], limit: int) -> None:
    """Any body, cut into any chunks (inside a CRLF or a UTF-8 sequence too), any event size limit:
    the same events, or the same SSEError."""
    raw = (body + trailing).encode()
    points = sorted({min(c, len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True) if raw[a:b]]
    reference, ours = anyio.run(both_readers, chunks, limit)
    assert ours == reference


async def test_read_events_refuses_another_content_type() -> None:
    with pytest.raises(httpx2.SSEError):
        async for _ in read_events(sse_response([b"data: x\n\n"], "application/json"), 1024):
            pass
