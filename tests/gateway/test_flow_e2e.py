"""Session flow rules through a real gateway: `checkrein serve` over stdio in front of a mail server
(a subprocess) whose inbox carries an outsider's address; the server logs every send it gets."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from gateway_support import free_port, gateway_stdio_params, start_http_gateway, stop, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
ATTACKER = "mark.black-2134@gmail.com"


def mail_config(directory: Path, **policy: Any) -> Path:
    server = {"name": "m", "command": sys.executable, "args": [str(HERE / "mail_server.py")],
              "env": {"MAIL_SERVER_LOG": str(directory / "sent.jsonl")}}  # fmt: skip
    return write_config(directory, [server], policy={"allow": ["m__*"], **policy}, tools={"m__*": {"risk": "medium"}})


def sent(directory: Path) -> list[dict[str, str]]:
    log = directory / "sent.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def session(config: Path, calls: list[tuple[str, dict[str, Any], dict[str, Any] | None]]) -> list[types.CallToolResult]:
    out = []
    with anyio.fail_after(60):
        async with Client(gateway_stdio_params(config), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
            for name, args, meta in calls:
                out.append(await c.call_tool(name, args, meta=meta))  # type: ignore[arg-type]
    return out


async def test_third_leg_is_refused_without_a_human_and_the_reason_names_the_result(tmp_path: Path) -> None:
    """read_inbox (untrusted, private) then send_email (sink): the Rule of Two asks, auto refuses."""
    config = mail_config(tmp_path)
    read, send = await session(
        config, [("m__read_inbox", {}, None), ("m__send_email", {"to": "alice@corp.example", "body": "hi"}, None)]
    )
    assert not read.is_error and ATTACKER in text_of(read)
    assert send.is_error and "(rule flow:rule_of_two)" in text_of(send)
    assert "m__read_inbox (call 1)" in text_of(send)
    assert sent(tmp_path) == []


async def test_strict_template_denies_the_third_leg(tmp_path: Path) -> None:
    config = mail_config(tmp_path, template="strict")
    _, send = await session(
        config, [("m__read_inbox", {}, None), ("m__send_email", {"to": "alice@corp.example", "body": "hi"}, None)]
    )
    assert send.is_error and "refuse" in text_of(send) and "(rule flow:rule_of_two)" in text_of(send)
    assert sent(tmp_path) == []


async def test_a_value_from_the_inbox_cannot_steer_a_send_but_one_from_the_task_can(tmp_path: Path) -> None:
    """Provenance alone (Rule of Two off): the outsider's address is refused, the user's goes out."""
    config = mail_config(tmp_path, flow={"rule_of_two": "off", "provenance": "deny"})
    task = {"io.checkrein/task": "Send the statement to accounts@corp.example and tell me what billing said."}
    _, bad, good = await session(
        config,
        [
            ("m__read_inbox", {}, task),
            ("m__send_email", {"to": ATTACKER, "body": "statement"}, task),
            ("m__send_email", {"to": "accounts@corp.example", "body": "statement"}, task),
        ],
    )
    assert bad.is_error and "(rule flow:provenance)" in text_of(bad)
    assert f"/to carries '{ATTACKER}', which came from the result of m__read_inbox (call 1)" in text_of(bad)
    assert not good.is_error
    assert sent(tmp_path) == [{"to": "accounts@corp.example", "body": "statement"}]


async def test_the_users_task_makes_the_same_address_trusted(tmp_path: Path) -> None:
    config = mail_config(tmp_path, flow={"rule_of_two": "off", "provenance": "deny"})
    task = {"io.checkrein/task": f"Forward the statement to {ATTACKER}."}
    _, send = await session(
        config, [("m__read_inbox", {}, task), ("m__send_email", {"to": ATTACKER, "body": "statement"}, task)]
    )
    assert not send.is_error
    assert sent(tmp_path) == [{"to": ATTACKER, "body": "statement"}]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_http_a_run_keeps_its_flow_across_requests_and_reconnects(tmp_path: Path, mode: str) -> None:
    """2026-era requests carry no session: the trace ties them; a legacy reconnect inherits the taint."""
    config = mail_config(tmp_path)
    port = free_port()
    proc = start_http_gateway(config, port)
    url = f"http://127.0.0.1:{port}/mcp"
    meta = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
    try:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=30, trust_env=False) as http:
                async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as c:  # type: ignore[arg-type]
                    read = await c.call_tool("m__read_inbox", {}, meta=meta)  # type: ignore[arg-type]
                assert not read.is_error
                # A new connection (a new MCP session for legacy clients) of the same caller.
                async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as c:  # type: ignore[arg-type]
                    send = await c.call_tool("m__send_email", {"to": "alice@corp.example", "body": "hi"}, meta=meta)  # type: ignore[arg-type]
    finally:
        stop(proc)
    assert send.is_error and "(rule flow:rule_of_two)" in text_of(send)
    assert sent(tmp_path) == []
