"""`FlowState`'s explicit constructors against the `dataclasses.replace` they stand in for."""

from __future__ import annotations

import string
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.flow import FlowState
from checkrein.policy.flow.state import _add_source
from checkrein.policy.flow.values import normalize

texts = st.lists(st.text(string.ascii_letters + " ,.:/-0123456789", max_size=40), max_size=4)
sources = st.sampled_from([f"tool{i} (call {j})" for i in range(4) for j in range(4)])
ops = st.one_of(
    st.tuples(st.just("calls"), st.integers(0, 10**6)),
    st.tuples(st.just("untrusted"), sources),
    st.tuples(st.just("private"), sources),
    st.tuples(st.just("trust"), sources, texts, st.sampled_from([16, 64, 4096])),
    st.tuples(st.just("distrust"), sources, texts, st.sampled_from([16, 64, 4096])),
)


def reference(state: FlowState, op: tuple[Any, ...]) -> FlowState:
    """The general version: ``dataclasses.replace`` with the same field values."""
    kind = op[0]
    if kind == "calls":
        return replace(state, calls=op[1])
    if kind == "untrusted":
        return replace(state, untrusted_from=_add_source(state.untrusted_from, op[1]))
    if kind == "private":
        return replace(state, private_from=_add_source(state.private_from, op[1]))
    log = state.trusted if kind == "trust" else state.untrusted
    for t in op[2]:
        log = log.add(op[1], normalize(t), op[3])
    return replace(state, trusted=log) if kind == "trust" else replace(state, untrusted=log)


def fast(state: FlowState, op: tuple[Any, ...]) -> FlowState:
    kind = op[0]
    if kind == "calls":
        return state.with_calls(op[1])
    if kind == "untrusted":
        return state.with_untrusted(op[1])
    if kind == "private":
        return state.with_private(op[1])
    if kind == "trust":
        return state.trust(op[1], op[2], op[3])
    return state.distrust(op[1], op[2], op[3])


@settings(max_examples=300, deadline=None)
@given(program=st.lists(ops, max_size=30))
def test_explicit_constructors_equal_replace(program: list[tuple[Any, ...]]) -> None:
    """Every state along a random sequence of changes is the one `dataclasses.replace` gives."""
    state = FlowState()
    for op in program:
        want = reference(state, op)
        state = fast(state, op)
        assert state == want
