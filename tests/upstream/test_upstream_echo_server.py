"""The echo server test double, driven by the SDK's own client in both protocol eras."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.anyio


async def test_sdk_client_reaches_every_feature() -> None:
    """The SDK's own client (auto mode: server/discover) sees every tool, the resource and the prompt."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "checkrein.testing.echo_server"], env={"ECHO_SERVER_NAME": "double"}
    )
    with anyio.fail_after(30):
        async with Client(params, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_info is not None and client.server_info.name == "double"
            assert (await client.call_tool("add", {"a": 20, "b": 22})).structured_content == {"sum": 42}
            assert (await client.call_tool("fail", {})).is_error
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"echo", "add", "slow", "crash", "fail", "mutate", "header"} <= names
            assert (await client.read_resource("echo://readme")).contents[0].text == "hello"  # type: ignore[union-attr]
            assert (await client.list_prompts()).prompts[0].name == "greet"
