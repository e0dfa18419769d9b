"""MemoryUpstream, the in-memory Upstream double."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
import pytest

from checkrein.errors import UpstreamTimeout, UpstreamUnavailable
from checkrein.testing.memory_upstream import MemoryUpstream
from checkrein.upstream import Upstream, UpstreamRequestFailed

pytestmark = pytest.mark.anyio


def first_text(result: types.CallToolResult) -> str:
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def test_tools_are_callables_and_results_take_the_returned_shape() -> None:
    up = MemoryUpstream("m")

    async def slow_add(args: dict[str, Any]) -> dict[str, int]:
        await anyio.sleep(0)
        return {"sum": args["a"] + args["b"]}

    up.add_tool("hello", lambda args: f"hi {args['who']}", annotations={"readOnlyHint": True})
    up.add_tool("add", slow_add, input_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    up.add_tool("raw", lambda args: types.CallToolResult(content=[], is_error=True))
    up.add_tool("boom", lambda args: 1 / 0)
    await up.start()
    assert first_text(await up.call_tool("hello", {"who": "ada"}, timeout_s=1)) == "hi ada"
    added = await up.call_tool("add", {"a": 1, "b": 2}, timeout_s=1)
    assert added.structured_content == {"sum": 3} and first_text(added) == '{"sum": 3}'
    assert (await up.call_tool("raw", {}, timeout_s=1)).is_error
    boom = await up.call_tool("boom", {}, timeout_s=1)
    assert boom.is_error and "ZeroDivisionError" in first_text(boom)
    unknown = await up.call_tool("nope", {}, timeout_s=1)
    assert unknown.is_error
    assert up.calls[0] == ("hello", {"who": "ada"})
    defs = {d.name: d for d in await up.tools()}
    assert defs["hello"].read_only_hint and defs["hello"].server == "m"


async def test_timeouts_and_outages_raise_like_a_real_upstream() -> None:
    async def hang(args: dict[str, Any]) -> str:
        await anyio.sleep(60)
        return "never"

    up = MemoryUpstream("m")
    up.add_tool("hang", hang)
    up.add_tool("ok", lambda args: "ok")
    await up.start()
    with anyio.fail_after(5):
        with pytest.raises(UpstreamTimeout):
            await up.call_tool("hang", {}, timeout_s=0.05)
    up.go_down("simulated crash")
    with pytest.raises(UpstreamUnavailable, match="simulated crash"):
        await up.call_tool("ok", {}, timeout_s=1)
    assert up.info.state == "crashed"
    await up.start()
    assert up.info.state == "ready" and up.info.restarts == 1
    assert first_text(await up.call_tool("ok", {}, timeout_s=1)) == "ok"


async def test_failed_start_and_drift_announcement() -> None:
    changed: list[str] = []

    async def on_changed(name: str) -> None:
        changed.append(name)

    up = MemoryUpstream("m", on_tools_changed=on_changed, fail_start="no such binary")
    with pytest.raises(UpstreamUnavailable, match="no such binary"):
        await up.start()
    assert up.info.state == "failed"
    up.fail_start = None
    await up.start()
    original = up.add_tool("t", lambda args: "v1", description="reviewed")
    await up.change_tool(type(original)(server="m", name="t", description="drifted"))
    assert changed == ["m"]
    assert [d.description for d in await up.tools()] == ["drifted"]
    assert first_text(await up.call_tool("t", {}, timeout_s=1)) == "v1", "the old callable is kept"


async def test_resources_and_prompts() -> None:
    up = MemoryUpstream("m", resources={"mem://notes/a": "alpha"}, prompts={"greet": "Hello, {name}!"})
    await up.start()
    assert [str(r.uri) for r in await up.list_resources()] == ["mem://notes/a"]
    read = await up.read_resource("mem://notes/a", timeout_s=1)
    assert read.contents[0].text == "alpha"  # type: ignore[union-attr]
    prompt = await up.get_prompt("greet", {"name": "Ada"}, timeout_s=1)
    assert prompt.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
    with pytest.raises(UpstreamRequestFailed):
        await up.read_resource("mem://missing", timeout_s=1)
    with pytest.raises(UpstreamRequestFailed):
        await up.get_prompt("missing", None, timeout_s=1)


def test_memory_upstream_satisfies_the_upstream_protocol() -> None:
    up: Upstream = MemoryUpstream("m")
    assert up.name == "m"
