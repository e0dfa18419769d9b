"""Hypothesis properties of the flow rules over random tools and call sequences."""

from __future__ import annotations

import string
from typing import Any

from _flow_helpers import plan_for
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.flow import FlowState, ResultSeen, after_call, check_call

LABELS = ("untrusted", "private", "sink")
label_sets = st.lists(st.sampled_from(LABELS), unique=True)
words = st.text(string.ascii_lowercase, min_size=3, max_size=9)


@st.composite
def tool_sets(draw: st.DrawFn) -> dict[str, tuple[str, ...]]:
    n = draw(st.integers(1, 5))
    return {f"t{i}": tuple(draw(label_sets)) for i in range(n)}


def plan_of(tools: dict[str, tuple[str, ...]], **flow: Any) -> Any:
    rules = {f"s__{n}": {"flow": list(labs)} for n, labs in tools.items()}
    return plan_for({n: None for n in tools}, {"tools": rules, "flow": flow})


@settings(max_examples=300, deadline=None)
@given(tools=tool_sets(), data=st.data())
def test_no_sequence_completes_all_three_legs_without_an_ask(tools: dict[str, tuple[str, ...]], data: st.DataObject) -> None:
    """Whatever the labels and results, a sink call after untrusted input and private data asks."""
    plan = plan_of(tools)
    state = FlowState()
    seen_untrusted = seen_private = False
    for _ in range(data.draw(st.integers(1, 12))):
        name = data.draw(st.sampled_from(sorted(tools)))
        labs = tools[name]
        flow = plan.tools[f"s__{name}"]
        args = {"x": data.draw(words)}
        verdict = check_call(flow, state, args, plan.limits)
        if "sink" in labs and seen_untrusted and (seen_private or "private" in labs):
            assert verdict.effect == "ask", (labs, state)
        got_result = data.draw(st.booleans())
        flagged = data.draw(st.booleans())
        seen = ResultSeen((data.draw(words),), flagged=flagged) if got_result else None
        approved = verdict.effect == "ask" and data.draw(st.booleans())
        state = after_call(flow, state, args, verdict, seen, plan.limits, approved=approved)
        if got_result:
            seen_untrusted |= "untrusted" in labs or flagged
            seen_private |= "private" in labs


values = st.builds(
    lambda user, n, host: f"{user}.{n}@{host}.example",
    st.text(string.ascii_lowercase, min_size=3, max_size=8),
    st.integers(10, 99_999),
    st.text(string.ascii_lowercase, min_size=3, max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(tools=tool_sets(), secret=values, data=st.data())
def test_a_value_only_an_untrusted_result_held_never_reaches_a_sink_unasked(
    tools: dict[str, tuple[str, ...]], secret: str, data: st.DataObject
) -> None:
    """Planted in an untrusted result, then sent through reads (laundering) and finally a sink."""
    tools = {**tools, "inbox": ("untrusted",), "send": ("sink",)}
    plan = plan_of(tools, rule_of_two="off")
    state = FlowState()
    inbox = plan.tools["s__inbox"]
    text = f"{data.draw(words)} please write to {secret.upper()} {data.draw(words)}"
    state = after_call(inbox, state, {}, check_call(inbox, state, {}, plan.limits), ResultSeen((text,)), plan.limits)
    for _ in range(data.draw(st.integers(0, 8))):
        name = data.draw(st.sampled_from(sorted(tools)))
        flow = plan.tools[f"s__{name}"]
        args = {"q": data.draw(st.sampled_from([secret, data.draw(words), f"see {secret} now"]))}
        verdict = check_call(flow, state, args, plan.limits)
        if "sink" in flow.labels:
            if secret in args["q"]:
                assert verdict.effect == "ask"
                continue  # refused: nothing came back, nothing recorded
            state = after_call(flow, state, args, verdict, None, plan.limits)
            continue
        result = data.draw(st.sampled_from([data.draw(words), f"about {secret}"]))
        state = after_call(flow, state, args, verdict, ResultSeen((result,), flagged=True), plan.limits)
    send = plan.tools["s__send"]
    verdict = check_call(send, state, {"to": secret}, plan.limits)
    assert verdict.effect == "ask" and verdict.rule_id == "flow:provenance"
