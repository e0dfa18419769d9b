"""The gate's chain values: explicit constructors against `dataclasses.replace`."""

from __future__ import annotations

from dataclasses import fields, replace

from checkrein.gate.chain import CallContext, CallOutcome, ToolResultJson
from checkrein.policy import Identity, ToolCall


def test_inspected_is_replace_of_its_four_fields() -> None:
    """`CallOutcome.inspected` keeps every other field, whichever fields the outcome has."""
    call = ToolCall(Identity("alice", source="stdio"), "s1", "0" * 32, "0" * 16, "a__echo", {})
    ctx = CallContext(call, 1.0, None)  # type: ignore[arg-type]
    other = CallContext(call, 2.0, None, degraded=("inspect.truncated",))  # type: ignore[arg-type]
    # Every field away from its default, so a field the constructor forgot shows.
    out = CallOutcome(ctx, "error", ToolResultJson({"content": []}), "tool.error", "m", ("f",), ("/r",), "rule", "why", -1, object())
    assert {f.name for f in fields(CallOutcome)} == {
        "ctx", "outcome", "result", "error_code", "message", "flags", "redactions", "rule_id", "reason", "rpc_code", "pending",
    }  # fmt: skip
    result = ToolResultJson({"content": [{"type": "text", "text": "x"}]})
    got = out.inspected(other, result, ("injection",), ("/content/0/text",))
    assert got == replace(out, ctx=other, result=result, flags=("injection",), redactions=("/content/0/text",))
