"""Behaviour over stdio: `checkrein serve` as a subprocess in front of an echo server, driven by the
official SDK client in both protocol eras; raw garbage lines on stdin; live drift. (Collisions and
the other upstream transports are covered over HTTP, where one gateway serves many tests.)"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from gateway_support import child_env, echo_server_config, gateway_stdio_params, stop, write_config
from mcp import Client
from mcp.client.session import IncomingMessage

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stdio-gateway")
    return write_config(
        directory,
        [echo_server_config("a")],
        policy={"allow": ["a__*"], "deny": ["a__crash", "a__f*"]},
    )


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_gateway_serves_both_eras(config: Path, mode: str) -> None:
    with anyio.fail_after(60):
        async with Client(gateway_stdio_params(config), mode=mode, cache=None) as c:  # type: ignore[arg-type]
            names = sorted(t.name for t in (await c.list_tools()).tools)
            a = await c.call_tool("a__echo", {"text": "from a"})
            denied = await c.call_tool("a__fail", {})
            crash = await c.call_tool("a__crash", {})
            unknown = await c.call_tool("c__echo", {"text": "x"})
            read = await c.read_resource("checkrein://a/echo%3A%2F%2Freadme")
    assert {"a__add", "a__echo", "a__slow"} <= set(names)
    assert "a__crash" not in names
    assert text_of(a) == "from a"
    assert denied.is_error and text_of(denied).startswith("denied by checkrein: ")
    assert crash.is_error and "(rule deny:a__crash)" in text_of(crash)
    assert unknown.is_error and "(rule catalog:not_found)" in text_of(unknown)
    assert isinstance(read.contents[0], types.TextResourceContents) and read.contents[0].text == "hello"
    assert (config.parent / "checkrein.lock").exists(), "first start writes the lock (trust on first use)"


async def test_live_drift_quarantines_and_notifies_the_client(tmp_path: Path) -> None:
    config = write_config(tmp_path, [echo_server_config("a")], policy={"allow": ["a__*"]})
    changed = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(60):
        async with Client(gateway_stdio_params(config), mode="legacy", cache=None, message_handler=on_message) as c:  # type: ignore[arg-type]
            assert "a__echo" in {t.name for t in (await c.list_tools()).tools}
            await c.call_tool("a__mutate", {})  # changes echo's description and announces list_changed
            await changed.wait()
            names = {t.name for t in (await c.list_tools()).tools}
            result = await c.call_tool("a__echo", {"text": "hi"})
            # A policy edit applies while running (the gateway polls its config file).
            write_config(tmp_path, [echo_server_config("a")], policy={"allow": ["a__*"], "deny": ["a__add"]})
            while "a__add" in {t.name for t in (await c.list_tools()).tools}:
                await anyio.sleep(0.1)
            denied = await c.call_tool("a__add", {"a": 1, "b": 2})
    assert "a__echo" not in names and "a__added" not in names
    assert result.is_error and "quarantined" in text_of(result) and "checkrein pin" in text_of(result)
    assert denied.is_error and "(rule deny:a__add)" in text_of(denied)


def read_lines(proc: subprocess.Popen[bytes]) -> queue.Queue[bytes]:
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_garbage_on_stdin_gets_a_json_rpc_error_and_the_gateway_keeps_serving(tmp_path: Path) -> None:
    config = write_config(tmp_path, [])  # no upstreams needed to speak JSON-RPC
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkrein", "serve", "--config", str(config)],
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None
        lines = read_lines(proc)
        proc.stdin.write(b"this is not json\n")
        proc.stdin.flush()
        error = json.loads(lines.get(timeout=300))
        assert error["jsonrpc"] == "2.0" and error["error"]["code"] == -32700 and error["id"] is None
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 5, "method": 42}\n')
        proc.stdin.flush()
        invalid = json.loads(lines.get(timeout=300))
        assert invalid["error"]["code"] == -32600 and invalid["id"] == 5
        init = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(lines.get(timeout=300))
        assert answer["id"] == 7 and answer["result"]["serverInfo"]["name"] == "checkrein"
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        stop(proc)
