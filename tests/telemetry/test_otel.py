"""OpenTelemetry end to end: a stdio gateway exports to an OTLP/HTTP receiver in this test; the
request span continues the caller's `_meta.traceparent`, the upstream call is its child, and the
child's context reaches the upstream in `_meta`. Metrics arrive through the same SDK."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import anyio
import mcp.types as types
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
from gateway_support import echo_server_config, gateway_stdio_params, write_config
from mcp import Client

from checkrein.testing.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.anyio

SERVER, CLIENT = 2, 3  # OTLP SpanKind values


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def config_with(tmp_path: Path, telemetry: str | None) -> Path:
    path = write_config(tmp_path, [echo_server_config("a")], policy={"allow": ["a__*"], "deny": ["a__fail"]}, audit={"dir": "audit"})
    if telemetry is not None:
        path.write_text(path.read_text() + f"\n[telemetry]\n{telemetry}\n")
    return path


def audit_events(directory: Path) -> list[dict[str, object]]:
    return [json.loads(line) for seg in sorted(directory.glob("*.jsonl")) for line in seg.read_text().splitlines()]


async def test_spans_continue_the_callers_trace_and_reach_the_upstream(tmp_path: Path) -> None:
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    with OtlpReceiver() as rx:
        config = config_with(tmp_path, f'otlp_endpoint = "{rx.endpoint}"\nmetrics_interval_s = 0.5\nservice_name = "gw-test"')
        with anyio.fail_after(90):
            async with Client(gateway_stdio_params(config), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
                got = await c.call_tool("a__meta", {"key": "traceparent"}, meta={"traceparent": f"00-{trace_id}-{parent}-01"})
                denied = await c.call_tool("a__fail", {}, meta={"traceparent": f"00-{trace_id}-{parent}-01"})
                sent_upstream = text_of(got)
                assert denied.is_error
                await anyio.to_thread.run_sync(lambda: rx.wait_for(
                    lambda r: len([s for s in r.spans if s.trace_id == trace_id]) >= 3, timeout=60, what="spans"))
                await anyio.to_thread.run_sync(lambda: rx.wait_for(
                    lambda r: any(v >= 2 for _, v in r.metrics.get("checkrein_gate_calls", [])), timeout=60, what="metrics"))
    mine = [s for s in rx.spans if s.trace_id == trace_id]
    (server,) = [s for s in mine if s.kind == SERVER and s.name == "tools/call a__meta"]
    (client,) = [s for s in mine if s.kind == CLIENT]
    (refused,) = [s for s in mine if s.name == "tools/call a__fail"]
    assert server.parent_span_id == parent
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["gen_ai.tool.name"] == "a__meta"
    assert server.attributes["gen_ai.operation.name"] == "execute_tool"
    assert server.attributes["network.transport"] == "pipe"
    assert server.attributes["mcp.session.id"].startswith("stdio-")
    assert server.attributes["checkrein.outcome"] == "ok" and server.attributes["checkrein.decision.effect"] == "allow"
    assert server.resource["service.name"] == "gw-test"
    assert client.parent_span_id == server.span_id and client.name == "tools/call meta"
    assert client.attributes["checkrein.server"] == "a"
    assert sent_upstream == f"00-{trace_id}-{client.span_id}-01"
    assert refused.attributes["error.type"] == "policy.denied" and refused.status_code == 2  # STATUS_CODE_ERROR
    assert refused.attributes["checkrein.decision.effect"] == "deny"
    assert "mcp.server.operation.duration" in rx.metrics
    calls = [e for e in audit_events(tmp_path / "audit") if e.get("type") == "call" and e.get("kind") == "tool"]
    assert calls[0]["trace_id"] == trace_id and calls[0]["span_id"] == server.span_id  # trace and audit join on ids


async def test_without_otel_the_upstream_still_joins_the_audited_trace(tmp_path: Path) -> None:
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    config = config_with(tmp_path, None)
    with anyio.fail_after(60):
        async with Client(gateway_stdio_params(config), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
            got = text_of(await c.call_tool("a__meta", {"key": "traceparent"}, meta={"traceparent": f"00-{trace_id}-{parent}-01"}))
    (call,) = [e for e in audit_events(tmp_path / "audit") if e.get("type") == "call" and e.get("kind") == "tool"]
    assert got == f"00-{trace_id}-{call['span_id']}-01" and call["parent_span_id"] == parent


async def test_an_unreachable_collector_never_touches_calls(tmp_path: Path) -> None:
    with OtlpReceiver() as rx:
        endpoint = rx.endpoint  # closed below: nothing listens there any more
    config = config_with(tmp_path, f'otlp_endpoint = "{endpoint}"\nmetrics_interval_s = 0.2')
    with anyio.fail_after(90):
        async with Client(gateway_stdio_params(config), mode="legacy", cache=None) as c:  # type: ignore[arg-type]
            for _ in range(3):
                assert text_of(await c.call_tool("a__echo", {"text": "still here"})) == "still here"
