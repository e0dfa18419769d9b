"""The HTTP lean lane's own requests to the client when their call is abandoned, and a session
ended under a call, against real `checkrein serve --transport http` gateways (the lane, and the
SDK's path with the fast path off) in front of a stdio upstream that elicits.

The upstream (written below, run as a script) has ``ask_briefly``, which withdraws its elicitation
after a moment (the SDK sends the gateway ``notifications/cancelled``), and ``ask_shielded``,
whose elicitation outlives a cancelled call; each writes what became of its elicitation to a
file, so a test can see when the gateway released it; ``hold`` writes that it started, then sleeps. ``[approval] timeout_s`` is 600 s: a
request the gateway failed to release would outlast every bounded wait here."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_support import echo_server_config
from test_http_json import ACCEPT, Session, _gateway

pytestmark = pytest.mark.anyio

TERMINATED = "Session terminated before the request completed"

ASKER = '''
import sys
from pathlib import Path

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
INPUT = {"type": "object", "properties": {"seconds": {"type": "number"}, "out": {"type": "string"}}}


def text(value):
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=INPUT) for n in ("ask_briefly", "ask_shielded", "hold")])


async def elicit(ctx, out):
    try:
        result = await ctx.session.elicit_form("Your name?", SCHEMA, related_request_id=ctx.request_id)
        outcome = "answered: " + str((result.content or {}).get("name"))
    except MCPError as exc:
        outcome = "error: " + exc.message
    Path(out).write_text(outcome)
    return outcome


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name == "hold":
        Path(args["out"]).write_text("started")
        await anyio.sleep(float(args["seconds"]))
        return text("held")
    if params.name == "ask_briefly":
        with anyio.move_on_after(float(args["seconds"])):
            return text(await elicit(ctx, args["out"]))
        Path(args["out"]).write_text("gave up")
        return text("gave up")
    with anyio.CancelScope(shield=True):
        return text(await elicit(ctx, args["out"]))


async def main():
    server = Server("asker", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
'''


def _asking_gateway(directory: Path, **env: str) -> Iterator[str]:
    script = directory / "asker.py"
    script.write_text(ASKER, encoding="utf-8")
    asker = {"name": "ask", "command": sys.executable, "args": [str(script)], "timeout_s": 120.0}
    yield from _gateway(directory, [asker, echo_server_config("a")], "\n[approval]\ntimeout_s = 600\n", **env)


@pytest.fixture(scope="module")
def lane_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _asking_gateway(tmp_path_factory.mktemp("lean-abandon"))


@pytest.fixture(scope="module")
def sdk_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _asking_gateway(tmp_path_factory.mktemp("lean-abandon-off"), CHECKREIN_FAST_PATH="off")


@asynccontextmanager
async def session(url: str) -> AsyncIterator[Session]:
    async with httpx2.AsyncClient(timeout=120, trust_env=False) as http:
        s = Session(http, url)
        init = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}}, "clientInfo": {"name": "raw", "version": "1"}}
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=ACCEPT)
        s.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        s.headers["mcp-protocol-version"] = "2025-11-25"
        await s.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield s


OnEvent = Callable[[dict[str, Any]], Awaitable[bool]]


async def _call(s: Session, name: str, arguments: dict[str, Any], on_request: OnEvent) -> tuple[int, list[dict[str, Any]]]:
    """POST a call and read its answer: the status and every JSON-RPC message, in order.
    ``on_request`` sees each request to the client; returning False closes the stream there."""
    s.ids += 1
    body = {"jsonrpc": "2.0", "id": s.ids, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    events: list[dict[str, Any]] = []
    async with s.http.stream("POST", s.url, json=body, headers=s.headers) as response:
        if not response.headers["content-type"].startswith("text/event-stream"):
            return response.status_code, [json.loads(await response.aread())]
        async for line in response.aiter_lines():
            if not line.startswith("data:") or not line[5:].strip():
                continue
            events.append(json.loads(line[5:]))
            if "method" in events[-1] and "id" in events[-1] and not await on_request(events[-1]):
                break
    return response.status_code, events


async def _outcome(path: Path) -> str:
    """What the upstream's elicitation came to, once it wrote it (bounded)."""
    with anyio.fail_after(60):
        while not path.exists() or not path.read_text():
            await anyio.sleep(0.05)
    return path.read_text()


def _shape(events: list[dict[str, Any]], asked: Any) -> list[str]:
    """The messages of a call, with the request to the client's own id (each path has its own)."""
    out = []
    for e in events:
        if e.get("method") == "notifications/cancelled":
            out.append("cancelled " + ("the request" if e["params"]["requestId"] == asked else repr(e["params"]["requestId"])))
        elif "method" in e:
            out.append(e["method"])
        else:
            out.append("answer")
    return out


async def test_an_upstream_that_gives_up_has_its_request_withdrawn_from_the_client(
    lane_url: str, sdk_url: str, tmp_path: Path
) -> None:
    """The upstream withdraws its elicitation: the lane sends the client ``notifications/cancelled``
    for the relayed request on the call's stream, then the call's answer. The SDK's path sends the
    same notification, but it races the answer (which closes the stream) and is lost when it is
    late; the answers agree."""

    async def run(url: str, out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        asked: list[dict[str, Any]] = []

        async def hold(event: dict[str, Any]) -> bool:
            asked.append(event)
            return True  # never answered

        async with session(url) as s:
            status, events = await _call(s, "ask__ask_briefly", {"seconds": 1, "out": str(out)}, hold)
        assert status == 200 and len(asked) == 1 and asked[0]["method"] == "elicitation/create"
        return events, asked

    with anyio.fail_after(90):
        events, asked = await run(lane_url, tmp_path / "lane")
        sdk_events, sdk_asked = await run(sdk_url, tmp_path / "sdk")
    assert str(asked[0]["id"]).startswith("checkrein-h-")
    assert _shape(events, asked[0]["id"]) == ["elicitation/create", "cancelled the request", "answer"]
    assert _shape(sdk_events, sdk_asked[0]["id"]) in (
        ["elicitation/create", "cancelled the request", "answer"],
        ["elicitation/create", "answer"],
    )
    assert events[-1]["result"] == sdk_events[-1]["result"]
    assert events[-1]["result"]["content"][0]["text"] == "gave up"


async def test_a_cancelled_call_withdraws_its_request_and_is_answered_as_the_sdk_answers(
    lane_url: str, sdk_url: str, tmp_path: Path
) -> None:
    """``notifications/cancelled`` for a call whose elicitation is pending: the SDK's path answers
    the call with its ``REQUEST_CANCELLED`` error, and so does the lane, after withdrawing its own
    request (``notifications/cancelled``); the upstream's elicitation, which outlives the call, is
    released with an error at once (the approval deadline is 600 s)."""

    async def run(url: str, out: Path) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
        asked: list[dict[str, Any]] = []
        async with session(url) as s:
            call_id = s.ids + 1

            async def cancel(event: dict[str, Any]) -> bool:
                asked.append(event)
                note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call_id, "reason": "test"}}
                assert (await s.http.post(s.url, json=note, headers=s.headers)).status_code == 202
                return True

            status, events = await _call(s, "ask__ask_shielded", {"out": str(out)}, cancel)
        return status, events, asked

    with anyio.fail_after(90):
        status, events, asked = await run(lane_url, tmp_path / "lane")
        sdk_status, sdk_events, _ = await run(sdk_url, tmp_path / "sdk")
        outcome = await _outcome(tmp_path / "lane")
    assert status == sdk_status == 200
    assert events[-1] == sdk_events[-1] and events[-1]["error"] == {"code": -32800, "message": "Request cancelled"}
    assert _shape(events, asked[0]["id"]) == ["elicitation/create", "cancelled the request", "answer"]
    assert outcome.startswith("error: ") and "was cancelled" in outcome


async def test_a_session_ended_under_a_lane_call_answers_it_as_the_sdk_answers_a_call_on_its_path(
    lane_url: str, tmp_path: Path
) -> None:
    """DELETE of the session while a lane call and a call the SDK serves (no protocol-version
    header) are in flight: both are answered at once with the SDK transport's 500 error."""
    with anyio.fail_after(90):
        async with session(lane_url) as s:
            answers: dict[str, httpx2.Response] = {}

            async def hold(key: str, headers: dict[str, str]) -> None:
                arguments = {"seconds": 600, "out": str(tmp_path / key)}
                body = {"jsonrpc": "2.0", "id": key, "method": "tools/call", "params": {"name": "ask__hold", "arguments": arguments}}
                answers[key] = await s.http.post(s.url, json=body, headers=headers)

            sdk_headers = {k: v for k, v in s.headers.items() if k != "mcp-protocol-version"}
            async with anyio.create_task_group() as tg:
                tg.start_soon(hold, "lane", s.headers)
                tg.start_soon(hold, "sdk", sdk_headers)
                assert await _outcome(tmp_path / "lane") == await _outcome(tmp_path / "sdk") == "started"
                deleted = await s.http.delete(s.url, headers=s.headers)
            after = await s.http.post(s.url, json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, headers=s.headers)
    assert deleted.status_code == 200
    lane, sdk = answers["lane"], answers["sdk"]
    assert lane.status_code == sdk.status_code == 500
    assert lane.json() == sdk.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": TERMINATED}}
    assert after.status_code == 404


async def test_a_session_ended_under_a_pending_request_withdraws_it_and_ends_the_stream_with_an_answer(
    lane_url: str, tmp_path: Path
) -> None:
    """DELETE while the lane's elicitation waits on the call's stream: ``notifications/cancelled``
    for it, then the call's error answer end the stream; the upstream's elicitation is released."""

    with anyio.fail_after(90):
        async with session(lane_url) as s:

            async def delete(event: dict[str, Any]) -> bool:
                assert (await s.http.delete(s.url, headers=s.headers)).status_code == 200
                return True

            status, events = await _call(s, "ask__ask_shielded", {"out": str(tmp_path / "out")}, delete)
        outcome = await _outcome(tmp_path / "out")
    assert status == 200
    assert _shape(events, events[0]["id"]) == ["elicitation/create", "cancelled the request", "answer"]
    assert events[-1] == {"jsonrpc": "2.0", "id": s.ids, "error": {"code": -32603, "message": TERMINATED}}
    assert outcome.startswith("error: ") and "lost its session" in outcome


@pytest.mark.parametrize("path", ["lane", "sdk"])
async def test_a_closed_stream_is_no_cancellation(path: str, lane_url: str, sdk_url: str, tmp_path: Path) -> None:
    """The client closes the call's stream after the elicitation arrived and POSTs its answer
    later: the answer still reaches the upstream (a disconnect is no cancellation, on either path)."""
    asked: list[dict[str, Any]] = []

    async def leave(event: dict[str, Any]) -> bool:
        asked.append(event)
        return False

    with anyio.fail_after(90):
        async with session(lane_url if path == "lane" else sdk_url) as s:
            await _call(s, "ask__ask_shielded", {"out": str(tmp_path / "out")}, leave)
            answer = {"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"action": "accept", "content": {"name": "ada"}}}
            posted = await s.http.post(s.url, json=answer, headers=s.headers)
            outcome = await _outcome(tmp_path / "out")
            kind, after = await s.call("a__echo", {"text": "still here"})
    assert posted.status_code == 202
    assert outcome == "answered: ada"
    assert after[-1]["result"]["content"][0]["text"] == "still here"


async def test_the_session_ends_even_when_ending_its_lane_calls_fails() -> None:
    """`http_json._terminate`: a failure while the lane withdraws its calls still runs the SDK's
    terminate (the session must end), and the failure is not swallowed."""
    from checkrein.frontend import http_json

    ended: list[bool] = []

    class BrokenLane:
        def terminate(self) -> None:
            raise RuntimeError("lane broke")

    async def sdk_terminate() -> None:
        ended.append(True)

    with pytest.raises(RuntimeError, match="lane broke"):
        await http_json._terminate(sdk_terminate, BrokenLane())  # type: ignore[arg-type]
    assert ended == [True]
