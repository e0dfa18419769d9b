"""The HTTP frontend's lean lane (`checkrein.frontend.http_lean`) on raw HTTP against a real
`checkrein serve --transport http` in front of the conformance fixture server and an echo server
(both upstream subprocesses): server requests on the lane's own ids and their answers POSTed
back, cancellation, what it leaves to the SDK, and the same answers as the SDK's path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_http_json import ACCEPT, Session, _gateway

pytestmark = pytest.mark.anyio

CAPS = {"sampling": {}, "elicitation": {"form": {}}, "roots": {}}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _gateway(tmp_path_factory.mktemp("http-lean"))


@pytest.fixture(scope="module")
def sdk_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _gateway(tmp_path_factory.mktemp("http-lean-off"), CHECKREIN_FAST_PATH="off")


@asynccontextmanager
async def session(url: str, caps: dict[str, Any] | None = None) -> AsyncIterator[Session]:
    async with httpx2.AsyncClient(timeout=60, trust_env=False) as http:
        s = Session(http, url)
        init = {"protocolVersion": "2025-11-25", "capabilities": caps or {}, "clientInfo": {"name": "raw", "version": "1"}}
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=ACCEPT)
        s.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        s.headers["mcp-protocol-version"] = "2025-11-25"
        await s.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield s


async def _stream_call(s: Session, name: str, arguments: dict[str, Any], on_request: Any) -> list[dict[str, Any]]:
    """POST a call and read its SSE stream event by event, answering server requests as they come."""
    import json

    s.ids += 1
    body = {"jsonrpc": "2.0", "id": s.ids, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    events: list[dict[str, Any]] = []
    async with s.http.stream("POST", s.url, json=body, headers=s.headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if not line.startswith("data:") or not line[5:].strip():
                continue
            event = json.loads(line[5:])
            events.append(event)
            if "method" in event and "id" in event:
                answer = await s.http.post(s.url, json={"jsonrpc": "2.0", "id": event["id"], "result": on_request(event)}, headers=s.headers)
                assert answer.status_code == 202, answer.text
    return events


async def test_sampling_and_elicitation_ride_the_lanes_own_ids(url: str) -> None:
    """The upstream's sampling and elicitation requests reach the client on the call's stream with
    the lane's ids; the client's POSTed answers (202) reach the upstream; the answer follows."""

    def answer(event: dict[str, Any]) -> dict[str, Any]:
        if event["method"] == "sampling/createMessage":
            return {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"}
        return {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}

    with anyio.fail_after(60):
        async with session(url, CAPS) as s:
            sampled = await _stream_call(s, "test_sampling", {"prompt": "What is six times seven?"}, answer)
            elicited = await _stream_call(s, "test_elicitation", {"message": "Who are you?"}, answer)
            kind, plain = await s.call("a__echo", {"text": "after"})
    asked = [e for e in sampled + elicited if "method" in e and "id" in e]
    assert [e["method"] for e in asked] == ["sampling/createMessage", "elicitation/create"]
    assert all(str(e["id"]).startswith("checkrein-h-") for e in asked)
    assert sampled[-1]["result"]["content"][0]["text"] == "LLM response: forty-two"
    assert "ada@example.com" in elicited[-1]["result"]["content"][0]["text"]
    assert kind == "application/json" and plain[0]["result"]["content"][0]["text"] == "after"


async def test_a_client_without_the_capability_is_not_asked(url: str) -> None:
    with anyio.fail_after(60):
        async with session(url) as s:
            kind, messages = await s.call("test_sampling", {"prompt": "hi"})
    assert kind == "application/json" and "does not support sampling" in messages[0]["result"]["content"][0]["text"]


async def test_a_cancelled_lane_call_is_answered_as_the_sdk_answers_it(url: str) -> None:
    """``notifications/cancelled`` for a call in flight: 202, and the call is answered with the SDK
    transport's ``REQUEST_CANCELLED`` error (-32800), as on the SDK's path."""
    with anyio.fail_after(60):
        async with session(url) as s:
            outcome: list[tuple[str, list[dict[str, Any]]]] = []

            async def slow() -> None:
                outcome.append(await s.call("a__slow", {"seconds": 30}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                rid = s.ids + 1
                with anyio.fail_after(30):
                    while s.ids < rid:  # the call's POST went out
                        await anyio.sleep(0.01)
                await anyio.sleep(0.5)
                note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "test"}}
                response = await s.http.post(s.url, json=note, headers=s.headers)
                assert response.status_code == 202
            kind, after = await s.call("a__echo", {"text": "still here"})
    assert outcome and outcome[0][1] == [{"jsonrpc": "2.0", "id": rid, "error": {"code": -32800, "message": "Request cancelled"}}]
    assert after[0]["result"]["content"][0]["text"] == "still here"


async def test_what_the_lane_cannot_vouch_for_goes_to_the_sdk(url: str) -> None:
    """A call without the protocol-version header, one with params the lane does not know, and a
    malformed one are the SDK's to answer, as before."""
    with anyio.fail_after(60):
        async with session(url) as s:
            del s.headers["mcp-protocol-version"]
            kind, plain = await s.call("a__echo", {"text": "no header"})
            s.headers["mcp-protocol-version"] = "2025-11-25"
            s.ids += 1
            odd = {"name": "a__echo", "arguments": {"text": "odd"}, "extra": 1}
            odd_kind, odd_answer = await s.post({"jsonrpc": "2.0", "id": s.ids, "method": "tools/call", "params": odd})
            bad_kind, bad = await s.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": 5}})
    assert plain[-1]["result"]["content"][0]["text"] == "no header"
    assert odd_answer[-1]["result"]["content"][0]["text"] == "odd"
    assert bad_kind == "application/json" and bad[0]["error"]["code"] == -32602


async def test_an_integer_past_64_bits_reaches_the_upstream_exactly(url: str) -> None:
    """The lane parses the POST as the SDK's path does: 10**30 + 1 is added as that int."""
    big = 10**30 + 1
    with anyio.fail_after(60):
        async with session(url) as s:
            kind, answer = await s.call("a__add", {"a": big, "b": 1})
    assert kind == "application/json"
    assert answer[-1]["result"]["content"][0]["text"] == str(big + 1), answer


class Pair:
    """A lane session and an SDK-path session (fast path off), driven from a portal."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, fast: Session, sdk: Session) -> None:
        self.portal, self.fast, self.sdk = portal, fast, sdk

    def both(self, name: str, arguments: Any) -> tuple[Any, Any]:
        async def one(s: Session) -> Any:
            s.ids += 1
            params = {"name": name, "arguments": arguments}
            _, messages = await s.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
            return messages[-1]

        return self.portal.call(one, self.fast), self.portal.call(one, self.sdk)


@pytest.fixture(scope="module")
def pair(url: str, sdk_url: str) -> Iterator[Pair]:
    with anyio.from_thread.start_blocking_portal() as portal:
        fast_cm = portal.wrap_async_context_manager(session(url))
        sdk_cm = portal.wrap_async_context_manager(session(sdk_url))
        fast, sdk = fast_cm.__enter__(), sdk_cm.__enter__()
        try:
            yield Pair(portal, fast, sdk)
        finally:
            sdk_cm.__exit__(None, None, None)
            fast_cm.__exit__(None, None, None)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.tuples(st.just("a__echo"), st.fixed_dictionaries({"text": st.text(max_size=200)})),
        st.tuples(st.just("a__add"), st.fixed_dictionaries({"a": st.integers(-(2**80), 2**80), "b": st.integers(-1000, 1000)})),
        st.tuples(st.sampled_from(["a__echo", "a__add", "a__nope", "test_simple_text", "test_error_handling"]), st.dictionaries(st.text(max_size=6), _json, max_size=3)),
    )
)
def test_the_lane_answers_what_the_sdk_path_answers(pair: Pair, call: tuple[str, dict[str, Any]]) -> None:
    """For any call (valid, denied, unknown tool, bad arguments), the lane's JSON-RPC answer is the
    SDK path's, field for field."""
    fast, sdk = pair.both(*call)
    assert fast == sdk


async def _both(url: str, sdk_url: str, probe: Any) -> tuple[Any, Any]:
    with anyio.fail_after(90):
        return await probe(url), await probe(sdk_url)


async def _reinitialized_call(url: str) -> tuple[int, str]:
    async with session(url) as s:
        init = {"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        await s.http.post(s.url, json={"jsonrpc": "2.0", "id": 50, "method": "initialize", "params": init}, headers=s.headers)
        body = {"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": {"name": "a__echo", "arguments": {"text": "x"}}}
        r = await s.http.post(s.url, json=body, headers=s.headers)
        return r.status_code, _message(r.text)


def _message(text: str) -> Any:
    """The JSON-RPC message of a response, whether a JSON body or an SSE event."""
    import json

    if text.lstrip().startswith("{"):
        return json.loads(text)
    return [json.loads(line[5:]) for line in text.replace("\r\n", "\n").split("\n") if line.startswith("data:")][-1]


async def _refused_handshake_call(url: str) -> tuple[int, int, bool]:
    """initialize the SDK rejects (clientInfo without a version), initialized it refuses (406)."""
    async with httpx2.AsyncClient(timeout=60, trust_env=False) as http:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "no-version"}}
        r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, headers=ACCEPT)
        headers = {**ACCEPT, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        note = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**headers, "accept": "text/plain"})
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "a__echo", "arguments": {"text": "served"}}}
        r = await http.post(url, json=body, headers=headers)
        return note.status_code, r.status_code, "served" in r.text


async def test_a_reinitialize_takes_the_lane_off_and_the_sdk_answers_as_before(url: str, sdk_url: str) -> None:
    """A second initialize (here in an era the lane does not serve) leaves the next call to the
    SDK: the same answer as the SDK's path (it was a 500 from the lane)."""
    lane, sdk = await _both(url, sdk_url, _reinitialized_call)
    assert lane == sdk and lane[0] == 200 and lane[1]["result"]["content"][0]["text"] == "x", (lane, sdk)


async def test_the_lane_serves_only_a_handshake_the_sdk_accepted(url: str, sdk_url: str) -> None:
    """The lane goes by what the SDK answered, not by what the client sent: an initialize the SDK
    rejected and an initialized it refused leave the session the SDK's (the tool never runs)."""
    lane, sdk = await _both(url, sdk_url, _refused_handshake_call)
    assert lane == sdk and lane[0] == 406 and lane[2] is False, (lane, sdk)


async def _status_with(url: str, header: str, value: str) -> int:
    async with session(url) as s:
        body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "a__echo", "arguments": {"text": "ct"}}}
        r = await s.http.post(s.url, json=body, headers={**s.headers, header: value})
        return r.status_code


async def _cancel_status_with_bad_accept(url: str) -> int:
    async with session(url) as s, anyio.create_task_group() as tg:
        tg.start_soon(s.call, "a__slow", {"seconds": 2})
        await anyio.sleep(0.5)
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": s.ids, "reason": "t"}}
        r = await s.http.post(s.url, json=note, headers={**s.headers, "accept": "text/plain"})
        return r.status_code


@pytest.mark.parametrize(("header", "value"), [("content-type", "Application/JSON"), ("accept", "application/json")])
async def test_the_lane_checks_headers_as_the_sdk_transport_does(url: str, sdk_url: str, header: str, value: str) -> None:
    """A Content-Type in other case, an Accept without SSE: the lane's status is the SDK's."""
    lane, sdk = await _both(url, sdk_url, lambda u: _status_with(u, header, value))
    assert lane == sdk, (lane, sdk)


async def test_a_cancel_the_sdk_would_refuse_is_refused(url: str, sdk_url: str) -> None:
    """notifications/cancelled with an Accept the SDK refuses (406) cancels nothing on the lane either."""
    lane, sdk = await _both(url, sdk_url, _cancel_status_with_bad_accept)
    assert lane == sdk == 406, (lane, sdk)
