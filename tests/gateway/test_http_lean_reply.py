"""The HTTP lean lane's answer (`checkrein.frontend.http_lean._Reply`), against a recording ASGI
``send``: plain JSON when the answer goes out first, an SSE stream from the first message before
it, from `SSE_AFTER_S` on a slow call, and nothing written after the answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from checkrein.frontend.http_lean import TERMINATED, _Final, _Reply

pytestmark = pytest.mark.anyio

SESSION = (b"mcp-session-id", b"abc")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the lane runs on asyncio (its timer is the loop's)


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        await asyncio.sleep(0)  # a real send may yield: writes must still come out whole and in order
        self.sent.append(message)

    def headers(self) -> dict[bytes, bytes]:
        assert self.sent[0]["type"] == "http.response.start"
        return dict(self.sent[0]["headers"])

    def events(self) -> list[dict[str, Any]]:
        body = b"".join(m.get("body", b"") for m in self.sent[1:])
        return [json.loads(line[5:]) for line in body.split(b"\r\n") if line.startswith(b"data:")]


def reply(send: Recorder) -> _Reply:
    return _Reply(send, [(b"content-type", b"application/json"), SESSION])  # type: ignore[arg-type]


def answer(rid: int = 1) -> _Final:
    return _Final(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": []}}).encode())


async def test_an_answer_that_goes_out_first_is_plain_json() -> None:
    send = Recorder()
    await reply(send).finish(answer())
    headers = send.headers()
    assert send.sent[0]["status"] == 200 and headers[b"content-type"] == b"application/json"
    assert headers[b"mcp-session-id"] == b"abc" and int(headers[b"content-length"]) == len(send.sent[1]["body"])
    assert json.loads(send.sent[1]["body"])["id"] == 1 and len(send.sent) == 2


async def test_a_message_before_the_answer_starts_the_stream_that_carries_both() -> None:
    send = Recorder()
    r = reply(send)
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
    await r.event(json.dumps(progress).encode())
    await r.finish(answer())
    headers = send.headers()
    assert headers[b"content-type"] == b"text/event-stream" and headers[b"mcp-session-id"] == b"abc"
    assert b"content-length" not in headers
    assert [e.get("method", e.get("id")) for e in send.events()] == ["notifications/progress", 1]
    assert send.sent[-1] == {"type": "http.response.body", "body": b""}


async def test_messages_from_several_tasks_each_come_out_whole() -> None:
    send = Recorder()
    r = reply(send)
    notes = [json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}).encode() for n in range(20)]
    await asyncio.gather(*(r.event(note) for note in notes))
    await r.finish(answer())
    events = send.events()
    assert sorted(e["params"]["n"] for e in events[:-1]) == list(range(20)) and events[-1]["id"] == 1
    assert [m["type"] for m in send.sent].count("http.response.start") == 1


async def test_a_slow_answer_starts_the_stream_when_the_timer_fires() -> None:
    send = Recorder()
    r = reply(send)
    r.stream_soon()  # what the loop's timer calls after SSE_AFTER_S
    async with asyncio.timeout(10):
        while not send.sent:
            await asyncio.sleep(0.001)
    assert send.headers()[b"content-type"] == b"text/event-stream"  # headers out, the call still running
    await r.finish(answer())
    assert [e["id"] for e in send.events()] == [1] and send.sent[-1]["body"] == b""


async def test_the_session_ending_is_the_sdk_transports_error_reply() -> None:
    send = Recorder()
    await reply(send).finish(_Final(b"ignored", 500))
    assert send.sent[0]["status"] == 500
    assert json.loads(send.sent[1]["body"]) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": TERMINATED}}


async def test_nothing_is_written_after_the_answer() -> None:
    send = Recorder()
    r = reply(send)
    await r.finish(answer())
    r.stream_soon()
    await r.event(b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {}}')
    await r.finish(answer(2))
    assert r._starter is not None
    await r._starter  # the timer's task ran, after the answer
    assert len(send.sent) == 2 and json.loads(send.sent[1]["body"])["id"] == 1


class Gated(Recorder):
    """A send that holds the first message until released (a client that is slow to read)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self, message: dict[str, Any]) -> None:
        if not self.sent:
            self.waiting.set()
            await self.release.wait()
        self.sent.append(message)


async def test_a_write_cancelled_before_the_stream_started_leaves_the_start_to_the_answer() -> None:
    """A call cancelled while its first message waits on the client (inside the start's send):
    the answer still goes out with its start."""
    send = Gated()
    r = reply(send)
    writer = asyncio.ensure_future(r.event(b'{"jsonrpc": "2.0", "id": "checkrein-h-1", "method": "roots/list"}'))
    async with asyncio.timeout(10):
        await send.waiting.wait()
    writer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await writer
    send.release.set()
    await r.finish(answer())
    assert send.sent[0]["type"] == "http.response.start" and send.headers()[b"content-type"] == b"application/json"
    assert json.loads(send.sent[1]["body"])["id"] == 1


class _Front:
    async def call_tool_json(self, call: Any, progress: Any, downstream: Any, rid: Any) -> Any:
        await downstream.request("roots", {}, 600)  # a request to the client, then the call is cancelled


class _Calls:
    def make_raw_http(self, **_: Any) -> object:
        return object()


class _Transport:
    mcp_session_id = "abc"


class _Request:
    headers = {"mcp-protocol-version": "2025-06-18"}


class SlowReader(Recorder):
    """A client that stops reading after the first body message: each later write waits a second."""

    async def __call__(self, message: dict[str, Any]) -> None:
        if any(m["type"] == "http.response.body" for m in self.sent):
            await asyncio.sleep(1.0)
        self.sent.append(message)


async def test_a_cancelled_call_is_answered_to_a_client_slower_than_the_release_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The call's own requests are withdrawn within `_RELEASE_WRITE_S`; its answer is not bound by
    it: a client that reads slowly still gets the cancelled call's answer and the stream's end."""
    import mcp.types as types

    from checkrein.frontend import http_lean

    monkeypatch.setattr(http_lean, "_RELEASE_WRITE_S", 0.2)
    lane = http_lean.HttpLane(_Front(), _Calls())  # type: ignore[arg-type]
    lane._caps = types.ClientCapabilities(roots=types.RootsCapability())
    send = SlowReader()
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
    serving = asyncio.ensure_future(lane._serve(_Transport(), message, {}, _Request(), None, send))  # type: ignore[arg-type]
    async with asyncio.timeout(30):
        while 1 not in lane._running or not send.sent:  # the roots request is out
            await asyncio.sleep(0.01)
        lane._running[1].end("cancelled")
        await serving
    events = send.events()
    assert events[0]["method"] == "roots/list"
    assert events[-1] == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "Request cancelled"}}
    assert send.sent[-1] == {"type": "http.response.body", "body": b""}
