"""The stdio frontend's wire (`checkrein.frontend.stdio_wire`) and line decoding: lines split and
joined across reads, over-long lines, regular files, a client that stops reading, the claim of
fd 0/1; what a malformed line is answered with."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp.types as types
import orjson
import pytest
from gateway_support import child_env

from checkrein.frontend.stdio import Malformed, decode_line, validate_message
from checkrein.frontend.stdio_wire import LineTooLong, StdioWire, open_stdio_wire

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def wire_on_pipes(max_line_bytes: int = 1024) -> AsyncIterator[tuple[StdioWire, int, int]]:
    """A wire reading one pipe and writing another; yields it with (the fd we feed, the fd we read)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        async with open_stdio_wire(in_r, out_w, max_line_bytes=max_line_bytes) as wire:
            yield wire, in_w, out_r
    finally:
        for fd in (in_r, in_w, out_r, out_w):
            try:
                os.close(fd)
            except OSError:
                pass


async def lines_of(wire: StdioWire) -> list[bytes | LineTooLong]:
    out: list[bytes | LineTooLong] = []
    with anyio.fail_after(10):
        while (line := await wire.next_line()) is not None:
            out.append(line)
    return out


async def test_lines_are_split_and_joined_across_reads() -> None:
    """Chunks that hold several lines, or part of one, give whole lines; blank lines are skipped;
    a last line without its newline still arrives at end of input."""
    async with wire_on_pipes() as (wire, feed, _):
        os.write(feed, b'{"a":1}\n{"b"')
        os.write(feed, b':2}\n\n  \n{"c":')
        os.write(feed, b"3}")
        os.close(feed)
        assert await lines_of(wire) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


async def test_an_over_long_line_is_dropped_and_reported_in_its_place() -> None:
    """A line over the limit becomes one `LineTooLong` (with its size); the next line is intact."""
    async with wire_on_pipes(max_line_bytes=100) as (wire, feed, _):
        os.write(feed, b"x" * 70)
        os.write(feed, b"y" * 70 + b"\n")  # over the limit only once both chunks are seen
        os.write(feed, b'{"ok":true}\n' + b"z" * 300 + b"\n")
        os.close(feed)
        got = await lines_of(wire)
    assert got == [LineTooLong(140), b'{"ok":true}', LineTooLong(300)]


async def test_writes_from_many_tasks_never_interleave() -> None:
    """Each `write_line` reaches the client as one whole line, whatever runs concurrently."""
    expected = 20 * 50
    received = bytearray()

    def read_lines(fd: int) -> None:
        while received.count(b"\n") < expected and (chunk := os.read(fd, 65536)):
            received.extend(chunk)

    async with wire_on_pipes() as (wire, _, drain_fd):
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, read_lines, drain_fd)
                for i in range(20):
                    tg.start_soon(_write_many, wire, i)
    lines = bytes(received).splitlines()
    assert len(lines) == expected
    assert {orjson.loads(line)["w"] for line in lines} == set(range(20))


async def _write_many(wire: StdioWire, i: int) -> None:
    for n in range(50):
        await wire.write_line(orjson.dumps({"w": i, "n": n, "pad": "p" * (n * 37)}))


async def test_regular_files_are_read_and_written_too() -> None:
    """`checkrein serve < requests.jsonl > answers.jsonl`: files cannot be polled, they still work."""
    with tempfile.TemporaryFile() as src, tempfile.TemporaryFile() as dst:
        src.write(b'{"a":1}\n{"b":2}')
        src.flush()
        src.seek(0)
        async with open_stdio_wire(src.fileno(), dst.fileno()) as wire:
            assert await lines_of(wire) == [b'{"a":1}', b'{"b":2}']
            await wire.write_line(b'{"answer":1}')
        dst.seek(0)
        assert dst.read() == b'{"answer":1}\n'


async def test_the_null_device_ends_input_at_once_and_takes_output() -> None:
    """`checkrein serve < /dev/null > /dev/null`: epoll refuses the null device; input ends at once
    (no hang) and writes still succeed."""
    null_in = os.open(os.devnull, os.O_RDONLY)
    null_out = os.open(os.devnull, os.O_WRONLY)
    try:
        async with open_stdio_wire(null_in, null_out) as wire:
            assert await lines_of(wire) == []
            await wire.write_line(b'{"answer":1}')
            assert wire.written == 1
    finally:
        os.close(null_in)
        os.close(null_out)


async def test_a_client_that_closes_our_stdout_is_noticed() -> None:
    """Once nobody reads our stdout, `closed` is true and writing is a no-op (not an exception)."""
    async with wire_on_pipes() as (wire, _, out_r):
        os.close(out_r)
        with anyio.fail_after(10):
            while not wire.closed:
                await wire.write_line(b"{}")
                await anyio.sleep(0.01)
            await wire.wait_closed()
        await wire.write_line(b"{}")


CLAIM_SCRIPT = r"""
import anyio, os, sys
from checkrein.frontend.stdio_wire import open_stdio_wire

async def main():
    async with open_stdio_wire() as wire:
        print("stray print", flush=True)             # fd 1 is stderr while serving
        assert os.read(0, 10) == b""                  # fd 0 is the null device
        line = await wire.next_line()
        await wire.write_line(b"got " + line)
    print("after", flush=True)                        # fd 1 is the wire again

anyio.run(main)
"""


def test_serving_claims_stdin_and_stdout_and_gives_them_back() -> None:
    """While the wire is open, a stray print goes to stderr and fd 0 reads nothing; afterwards both
    are the process's own again."""
    proc = subprocess.run(
        [sys.executable, "-c", CLAIM_SCRIPT], input=b"hello\n", capture_output=True, env=child_env(), timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b"got hello\nafter\n"
    assert b"stray print" in proc.stderr


def test_malformed_lines_are_answered_as_json_rpc_errors() -> None:
    """Not JSON: -32700 with id null; JSON but not JSON-RPC: -32600 with the id when it can be read;
    too long: -32600."""
    cases: list[tuple[bytes | LineTooLong, int, object]] = [
        (b"this is not json", types.PARSE_ERROR, None),
        (b"[1, 2]", types.INVALID_REQUEST, None),
        (b'{"jsonrpc": "2.0", "id": 5, "method": 42}', types.INVALID_REQUEST, 5),
        (b'{"jsonrpc": "1.0", "id": "r", "method": "ping"}', types.INVALID_REQUEST, "r"),
        (LineTooLong(10**9), types.INVALID_REQUEST, None),
    ]
    for line, code, rid in cases:
        with pytest.raises(Malformed) as caught:
            validate_message(decode_line(line))
        answer = caught.value.answer
        assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code and answer["id"] == rid, line


def test_json_that_orjson_refuses_is_still_read() -> None:
    """Integers past 64 bits and invalid UTF-8 are legal enough to be read (as the SDK read them)."""
    big = decode_line(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"n": 123456789012345678901234567890}}')
    assert big["params"]["n"] == 123456789012345678901234567890
    text = decode_line(b'{"jsonrpc": "2.0", "method": "x", "params": {"s": "a\xffb"}}')
    assert text["params"]["s"] == "a\ufffdb"
    assert isinstance(validate_message(text), types.JSONRPCNotification)
