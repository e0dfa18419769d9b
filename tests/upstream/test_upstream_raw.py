"""The raw request lane of a stdio connection (`checkrein.upstream.raw`), against a scripted peer:
answers, errors, malformed answers, progress, cancellation and the connection ending."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
import orjson
import pytest
from hypothesis import given, settings
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from _result_shapes import results
from checkrein.upstream.raw import RawRequests, dumps, plain_text_result

pytestmark = pytest.mark.anyio


class Peer:
    """What the lane wrote, parsed; ``written`` is set on each write."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.written = anyio.Event()

    async def write(self, data: bytes) -> None:
        self.lines.append(orjson.loads(data))
        self.written.set()

    async def next_request(self) -> dict[str, Any]:
        while not any("id" in m and "method" in m for m in self.lines):
            self.written = anyio.Event()
            await self.written.wait()
        return next(m for m in self.lines if "id" in m and "method" in m)


def lane() -> tuple[RawRequests, Peer]:
    raw, peer = RawRequests(), Peer()
    raw.bind(peer.write)
    return raw, peer


async def test_an_answer_reaches_its_request_and_nothing_else_is_taken() -> None:
    """The result comes back as parsed JSON; a message for another id is left to the session."""
    raw, peer = lane()
    got: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _collect(raw, got, {"name": "echo"}))
            sent = await peer.next_request()
            assert sent["method"] == "tools/call" and sent["id"] >= 1 << 40
            assert not await raw.take({"jsonrpc": "2.0", "id": 3, "result": {}}), "the SDK's own ids stay the SDK's"
            assert await raw.take({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": []}})
    assert got == [{"content": []}] and raw.sent == 1


async def _collect(raw: RawRequests, into: list[dict[str, Any]], params: dict[str, Any], **kw: Any) -> None:
    into.append(await raw.request("tools/call", params, **kw))


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ({"error": {"code": -32602, "message": "bad"}}, -32602),
        ({"result": "not an object"}, -32603),
        ({"error": {"code": "x"}}, -32603),
    ],
)
async def test_errors_and_malformed_answers_raise_mcp_errors(answer: dict[str, Any], code: int) -> None:
    """The server's error keeps its code; an answer that is neither a result object nor an error is
    a -32603, never a hang."""
    raw, peer = lane()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            failed: list[MCPError] = []

            async def call() -> None:
                try:
                    await raw.request("tools/call", {"name": "x"})
                except MCPError as exc:
                    failed.append(exc)

            tg.start_soon(call)
            sent = await peer.next_request()
            assert await raw.take({"jsonrpc": "2.0", "id": sent["id"], **answer})
    assert [e.error.code for e in failed] == [code]


async def test_progress_goes_to_the_callback_with_the_requests_own_token() -> None:
    """With a callback the request id is the progress token; malformed progress is dropped."""
    raw, peer = lane()
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        seen.append((p, total, message))

    got: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _collect(raw, got, {"name": "x", "_meta": {"k": 1}}, on_progress=on_progress))
            sent = await peer.next_request()
            token = sent["params"]["_meta"]["progressToken"]
            assert token == sent["id"] and sent["params"]["_meta"]["k"] == 1
            note = {"jsonrpc": "2.0", "method": "notifications/progress"}
            assert await raw.take({**note, "params": {"progressToken": token, "progress": 1, "total": 2, "message": "m"}})
            assert await raw.take({**note, "params": {"progressToken": token, "progress": "junk"}})
            assert not await raw.take({**note, "params": {"progressToken": "other", "progress": 1}})
            assert await raw.take({"jsonrpc": "2.0", "id": token, "result": {}})
    assert seen == [(1.0, 2.0, "m")]


async def test_a_cancelled_request_tells_the_server() -> None:
    """A caller that gives up is followed by ``notifications/cancelled`` for that id."""
    raw, peer = lane()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _collect(raw, [], {"name": "slow"}))
            sent = await peer.next_request()
            tg.cancel_scope.cancel()
    cancels = [m for m in peer.lines if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [sent["id"]]
    assert not await raw.take({"jsonrpc": "2.0", "id": sent["id"], "result": {}}), "nobody waits for it now"


async def test_the_connection_ending_fails_waiting_requests_and_later_ones() -> None:
    """Waiting requests fail with CONNECTION_CLOSED when the connection ends; so do new ones."""
    raw, peer = lane()
    failed: list[int] = []

    async def call() -> None:
        try:
            await raw.request("tools/call", {"name": "x"})
        except MCPError as exc:
            failed.append(exc.error.code)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await peer.next_request()
            raw.close()
        await call()
    assert failed == [CONNECTION_CLOSED, CONNECTION_CLOSED] and not raw.ready


def test_dumps_keeps_integers_past_64_bits() -> None:
    """orjson refuses big integers; the fallback writes them exactly."""
    assert dumps({"n": 2**70, "s": "ü"}) == b'{"n":1180591620717411303424,"s":"\xc3\xbc"}'


async def test_a_request_out_of_time_raises_timeout_and_tells_the_server() -> None:
    """``timeout_s`` bounds the wait for the answer: TimeoutError, then ``notifications/cancelled``
    for that id; a late answer is then no longer taken."""
    raw, peer = lane()
    with anyio.fail_after(10):
        with pytest.raises(TimeoutError):
            await raw.request("tools/call", {"name": "silent"}, timeout_s=0.05)
    (sent,) = [m for m in peer.lines if m.get("method") == "tools/call"]
    cancels = [m for m in peer.lines if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [sent["id"]]
    assert not await raw.take({"jsonrpc": "2.0", "id": sent["id"], "result": {}})


async def test_the_deadline_covers_a_write_that_blocks() -> None:
    """A server that stops reading its stdin cannot hold a request past ``timeout_s``."""
    raw = RawRequests()
    stuck = anyio.Event()

    async def blocked_write(data: bytes) -> None:
        if b'"tools/call"' in data:  # the request blocks; the courtesy cancel after it does not
            await stuck.wait()

    raw.bind(blocked_write)
    with anyio.fail_after(10):
        with pytest.raises(TimeoutError):
            await raw.request("tools/call", {"name": "x"}, timeout_s=0.05)


async def test_an_outer_cancel_is_not_turned_into_a_timeout() -> None:
    """The request's own deadline raises TimeoutError; a caller's cancel scope still cancels."""
    raw, peer = lane()
    with anyio.fail_after(10):
        with anyio.move_on_after(0.05) as scope:
            await raw.request("tools/call", {"name": "slow"}, timeout_s=30)
    assert scope.cancelled_caught
    assert any(m.get("method") == "notifications/cancelled" for m in peer.lines)


@settings(max_examples=1500, deadline=None)
@given(value=results)
def test_a_plain_text_result_is_one_the_model_accepts(value: dict[str, Any]) -> None:
    """`plain_text_result` only vouches for results ``CallToolResult`` validates (so skipping the
    model for them never lets a malformed result through, and a malformed one meets the model)."""
    if plain_text_result(value):
        types.CallToolResult.model_validate(value, by_name=False)


def test_plain_text_results_are_recognised() -> None:
    """The hot shape is taken; anything unusual is left to the model."""
    assert plain_text_result({"content": [{"type": "text", "text": "hello"}]})
    assert plain_text_result({"content": [], "isError": True, "resultType": "complete", "_meta": {}})
    assert not plain_text_result({"content": [{"type": "text", "text": 1}]})
    assert not plain_text_result({"content": [{"type": "image", "data": "", "mimeType": "image/png"}]})
    assert not plain_text_result({"content": [{"type": "text", "text": "x"}], "isError": "true"})
    assert not plain_text_result({"content": [{"type": "text", "text": "x"}], "resultType": "input_required"})
