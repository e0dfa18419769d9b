"""Fixtures for the upstream tests: echo servers as real subprocesses (stdio, HTTP, SSE)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

ECHO = ("-m", "checkrein.testing.echo_server")


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


def _serve(flag: str, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, **(extra_env or {})}
    proc = subprocess.Popen(
        [sys.executable, *ECHO, flag, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        _wait_listening(proc, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def http_echo_url() -> Iterator[str]:
    """Base URL of an echo server speaking Streamable HTTP (endpoint /mcp)."""
    yield from _serve("--http")


@pytest.fixture(scope="module")
def sse_echo_url() -> Iterator[str]:
    """Base URL of an echo server speaking legacy SSE (endpoint /sse)."""
    yield from _serve("--sse")


@pytest.fixture
def fresh_http_echo_url() -> Iterator[str]:
    """A Streamable HTTP echo server of its own (for tests that change the server's state)."""
    yield from _serve("--http")
