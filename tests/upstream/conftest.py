"""Fixtures for the upstream tests: echo servers as real subprocesses (stdio, HTTP, SSE)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import checkrein.testing.echo_server as echo_server

# Run as a script path, not `-m`: that skips importing the checkrein package in every child
# (about a quarter of the server's start-up), which matters for a suite that spawns many.
ECHO = (echo_server.__file__,)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope, so module-scoped async fixtures can share one running upstream."""
    return "asyncio"


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound and released just now)."""
    return free_port()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"echo server exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)  # polling a port with a bound, not waiting for readiness blindly
    raise RuntimeError(f"echo server did not listen on port {port} within {deadline_s} s")


class EchoHttpServer:
    """The echo server as a subprocess on 127.0.0.1 (``--http`` or ``--sse``); stop and start at will."""

    def __init__(self, flag: str = "--http", port: int | None = None, env: dict[str, str] | None = None) -> None:
        self.flag = flag
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> EchoHttpServer:
        self.proc = subprocess.Popen(
            [sys.executable, *ECHO, self.flag, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **self.env},
        )
        _wait_listening(self.proc, self.port)
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.kill()
        proc.wait(timeout=10)


def _serve(flag: str) -> Iterator[str]:
    server = EchoHttpServer(flag).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def http_echo_url() -> Iterator[str]:
    """Base URL of an echo server speaking Streamable HTTP (endpoint /mcp)."""
    yield from _serve("--http")


@pytest.fixture
def refusing_http_echo_url() -> Iterator[str]:
    """A Streamable HTTP echo server that answers tools/call of `fail` with HTTP 401, `crash` with 501."""
    server = EchoHttpServer(env={"ECHO_SERVER_HTTP_STATUS": "fail=401,crash=501"}).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def fresh_http_echo() -> Iterator[EchoHttpServer]:
    """A Streamable HTTP echo server of its own (for tests that change or stop the server)."""
    server = EchoHttpServer("--http").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_sse_echo() -> Iterator[EchoHttpServer]:
    """A legacy SSE echo server of its own (endpoint /sse), to stop and start at will."""
    server = EchoHttpServer("--sse").start()
    try:
        yield server
    finally:
        server.stop()


RAW_SERVER = textwrap.dedent(
    """
    # A hand-written MCP server (no SDK, so it starts fast): initialize, tools/list, tools/call.
    # Tools: echo(text), big() whose description and result are 1 MB, deep(depth) nested arrays.
    import json, sys
    big = "x" * 1_000_000
    def send(obj):
        data = json.dumps(obj)
        # Write in pieces so the client sees one message spread over many pipe reads.
        for i in range(0, len(data), 7000):
            sys.stdout.write(data[i:i + 7000]); sys.stdout.flush()
        sys.stdout.write("\\n"); sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method, rid = msg["method"], msg["id"]
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25",
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0"}}})
        elif method == "tools/list":
            sys.stdout.write("a stray log line on stdout\\n"); sys.stdout.flush()
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                {"name": "big", "description": big, "inputSchema": {"type": "object"}},
                {"name": "echo", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call" and msg["params"]["name"] == "echo":
            text = msg["params"].get("arguments", {}).get("text", "")
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
        elif method == "tools/call" and msg["params"]["name"] == "deep":
            n = msg["params"].get("arguments", {}).get("depth", 1)  # nested n arrays deep, as text
            send_raw = '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "deep"}], '
            sys.stdout.write(send_raw % json.dumps(rid) + '"structuredContent": {"v": ' + "[" * n + "]" * n + "}}}\\n")
            sys.stdout.flush()
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": big}],
                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw", "version": "0"}}}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    """
)


@pytest.fixture
def raw_server(tmp_path: Path) -> Path:
    """Path of a minimal hand-written stdio MCP server script (see RAW_SERVER)."""
    script = tmp_path / "raw_server.py"
    script.write_text(RAW_SERVER)
    return script
