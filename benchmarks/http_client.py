"""The raw HTTP lane's upstream POST alone: `checkrein.upstream.http1` against the httpcore2 pool it
replaces for ``http://`` upstreams, in one process, against one canned server.

    .venv/bin/python benchmarks/http_client.py [--calls 2000] [--rounds 6]

A server in a subprocess (asyncio streams on uvloop, 127.0.0.1) answers every POST with the same
chunked SSE answer a Streamable HTTP server gives a tools/call. The client, on uvloop as `serve`
runs, sends `DirectPost.send` and reads the events with `read_events`, as `upstream/raw_http.py`
does, once with its `Http1Pool` and once with the pool switched off (the httpcore2 path), in
alternating rounds. Printed: the medians over rounds of wall time and of this process's CPU time per
POST, and their ratios.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx2
import uvloop

from checkrein.upstream.http_post import DirectPost, read_events

SERVER = r"""
import asyncio, sys, uvloop
EVENT = b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}\r\n\r\n'
ANSWER = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nmcp-session-id: s1\r\n"
          b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n" % len(EVENT) + EVENT + b"\r\n0\r\n\r\n")
async def handle(reader, writer):
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        size = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
        await reader.readexactly(size)
        writer.write(ANSWER)
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    await server.serve_forever()
uvloop.run(main())
"""

BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json", "mcp-session-id": "s1"}


async def round_(url: str, plain: bool, calls: int) -> tuple[float, float]:
    async with httpx2.AsyncClient() as client:
        direct = DirectPost.usable(client, url)
        assert direct is not None and direct.plain
        if not plain:
            direct.close()
            direct._h1 = None  # the httpcore2 path, as before checkrein.upstream.http1

        async def one() -> None:
            response = await direct.send(BODY, HEADERS)
            async for _event in read_events(response, 1 << 20):
                pass
            await response.aclose()

        try:
            for _ in range(200):
                await one()
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(calls):
                await one()
            return (time.perf_counter() - wall) / calls * 1e6, (time.process_time() - cpu) / calls * 1e6
        finally:
            direct.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        rows: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for number in range(args.rounds):
            for plain in (True, False) if number % 2 else (False, True):
                rows[plain].append(uvloop.run(round_(url, plain, args.calls)))
        medians = {plain: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for plain, r in rows.items()}
        print(f"{args.rounds} alternating rounds x {args.calls} POSTs (chunked SSE answer), uvloop; per POST:")
        for plain, name in ((True, "http1"), (False, "httpcore2")):
            wall, cpu = medians[plain]
            print(f"  {name:10} wall {wall:7.1f} us   CPU {cpu:7.1f} us")
        print(f"  http1 / httpcore2: wall {medians[True][0] / medians[False][0]:.2f}x, CPU {medians[True][1] / medians[False][1]:.2f}x")
        print(f"  load average (1 min) on {len(os.sched_getaffinity(0))} CPUs: {os.getloadavg()[0]:.1f}")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
