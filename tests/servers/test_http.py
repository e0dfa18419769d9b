"""Each bundled server also serves Streamable HTTP with GET /health."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
from mcp import Client


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], deadline_s: float = 30.0) -> dict[str, object]:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return dict(json.loads(response.read()))
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.05)  # poll interval, bounded by the deadline
    raise AssertionError("server did not become healthy")


def test_http_transport_answers_health_and_tool_calls(tmp_path: Path, state: dict[str, str]) -> None:
    """One server is enough: the transport code is shared by all three (`servers/_run.py`)."""
    name = "monitor"
    port = _free_port()
    env = {"PATH": "/usr/bin:/bin", **state}
    proc = subprocess.Popen(
        [sys.executable, "-m", f"checkrein.servers.{name}", "--http", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        health = _wait_healthy(f"http://127.0.0.1:{port}/health", proc)
        assert health["status"] == "ok" and health["server"] == name
        assert health["audit"] == state["CHECKREIN_MONITOR_AUDIT"]

        async def call() -> tuple[list[str], str]:
            with anyio.fail_after(30):
                async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
                    tools = [t.name for t in (await client.list_tools()).tools]
                    result = await client.call_tool("get_incident_snapshot", {"incident_id": 1})
                    return tools, result.content[0].text  # type: ignore[union-attr]

        tools, text = anyio.run(call)
        assert tools == ["get_incident_snapshot"] and text == "incident not found"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
