"""`CallFactory.make_raw`: the lean lane's `ToolCall`s."""

from __future__ import annotations

import re

from checkrein.frontend import CallFactory


def test_raw_calls_carry_the_clients_name_and_fresh_ids() -> None:
    """Each call names its client (a cached identity per name) and gets its own trace and span
    ids, unless the client sent a traceparent."""
    calls = CallFactory.for_stdio()
    a = calls.make_raw(kind="tool", name="t", arguments={}, meta=None, client_name="one")
    b = calls.make_raw(kind="tool", name="t", arguments={}, meta=None, client_name="one")
    c = calls.make_raw(kind="tool", name="t", arguments={}, meta=None, client_name="two")
    assert a.identity == b.identity and a.identity.client == "one" and c.identity.client == "two"
    assert a.identity.user == calls.stdio_identity.user and a.identity.source == "stdio"
    for call in (a, b, c):
        assert re.fullmatch("[0-9a-f]{32}", call.trace_id) and re.fullmatch("[0-9a-f]{16}", call.span_id)
        assert call.parent_span_id is None
    assert len({a.trace_id, b.trace_id, c.trace_id}) == 3 and len({a.span_id, b.span_id, c.span_id}) == 3
    sent = {"traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"}
    d = calls.make_raw(kind="tool", name="t", arguments={}, meta=sent, client_name=None)
    assert d.trace_id == "ab" * 16 and d.parent_span_id == "cd" * 8 and d.span_id != "cd" * 8
    assert d.identity == calls.stdio_identity
