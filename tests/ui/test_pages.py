"""Page bodies as pure functions: the trace tree, list rows of every event type."""

from __future__ import annotations

from typing import Any

from checkrein.ui.pages import event_rows, trace_order


def _e(seq: int, span: str, parent: str | None) -> dict[str, Any]:
    return {"seq": seq, "type": "call", "span_id": span, "parent_span_id": parent, "outcome": "ok",
            "exposed_name": f"t{seq}", "decision": {"rule_id": "r", "reasons": []}, "identity": {"user": "u"}}


def test_trace_order_nests_children_under_their_parent_span() -> None:
    """Calls sit under the call whose span is their parent, siblings by seq; foreign parents are roots."""
    events = [_e(1, "a", "agent"), _e(2, "b", "a"), _e(3, "c", "agent"), _e(4, "d", "b"), _e(5, "e", "a")]
    assert [(d, e["seq"]) for d, e in trace_order(events)] == [(0, 1), (1, 2), (2, 4), (1, 5), (0, 3)]


def test_trace_order_survives_span_cycles_and_duplicates() -> None:
    """A hostile log with a parent cycle or a self-parent still lists every call once."""
    events = [_e(1, "a", "b"), _e(2, "b", "a"), _e(3, "c", "c")]
    order = trace_order(events)
    assert sorted(e["seq"] for _, e in order) == [1, 2, 3]


def test_rows_for_lifecycle_and_checkpoint_events() -> None:
    """Non-call events get a row naming what they are, without call columns."""
    rows = event_rows([
        {"seq": 0, "type": "genesis", "time": "t"},
        {"seq": 1, "type": "lifecycle", "event": "gateway.start", "fields": {"n": 1}, "time": "t"},
        {"seq": 2, "type": "checkpoint", "reason": "interval", "count": 2, "merkle_root": "ab" * 32, "time": "t"},
    ], base="/ui")
    assert "gateway.start" in rows and "{&quot;n&quot;: 1}" in rows and "checkpoint (interval)" in rows
    assert 'href="/ui/event/2"' in rows and "badge" not in rows
