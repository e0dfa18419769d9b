"""Regression (every tools/call over HTTP waited ~40 ms): the HTTP frontend's accepted connections
have TCP_NODELAY, so an SSE event is not held back by Nagle and the client's delayed ACK."""

from __future__ import annotations

import asyncio
import socket

from checkrein.frontend.http import bind_socket


def test_the_listener_is_a_tcp_socket_with_nodelay() -> None:
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()


def test_connections_accepted_by_asyncio_have_nodelay() -> None:
    """The same path uvicorn takes: `loop.create_server(sock=...)` on our listener."""

    async def main() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                raw = transport.get_extra_info("socket")
                accepted.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = bind_socket("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        try:
            port = listener.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            value = await asyncio.wait_for(accepted, timeout=30)
            writer.close()
            return value
        finally:
            server.close()
            await server.wait_closed()

    assert asyncio.run(main()) != 0
