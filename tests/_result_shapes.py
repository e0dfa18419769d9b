"""Hypothesis strategies for tools/call results near the plain text shape (and just off it)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=5), json_values, max_size=3)


def _optional(**members: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=members)


blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
    _optional(
        type=st.sampled_from(["text", "image", "resource_link", "Text", 1]),
        text=st.text(max_size=8) | st.integers() | st.none(),
        _meta=objects | st.none() | st.lists(st.integers(), max_size=2),
        annotations=st.just({"audience": ["user"]}) | st.just({"priority": "high"}),
        data=st.text(max_size=8),
        x=json_values,
    ),
)
plain_blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=20)),
    st.builds(lambda t, m: {"type": "text", "text": t, "_meta": m}, st.text(max_size=8), objects),
)
plain = st.builds(
    lambda content, rest: {"content": content, **rest},
    st.lists(plain_blocks, max_size=4),
    _optional(isError=st.booleans(), _meta=objects, structuredContent=objects, resultType=st.just("complete")),
)
"""Results `plain_text_result` should take."""

off = st.tuples(plain, st.sampled_from(["content", "isError", "_meta", "structuredContent", "resultType", "y"]), json_values)
"""A plain result with one member replaced by any JSON value."""

wild = _optional(
    content=st.lists(blocks, max_size=4) | st.just({"type": "text", "text": "x"}) | st.none(),
    isError=st.booleans() | st.none() | st.sampled_from([0, 1, "true"]),
    _meta=objects | st.none() | st.just([]),
    structuredContent=objects | st.none() | st.just([1]),
    resultType=st.sampled_from(["complete", "input_required", "x"]) | st.none(),
    y=json_values,
)

off_block = st.builds(lambda r, i, b: {**r, "content": [*r["content"][:i], b, *r["content"][i:]]}, plain, st.integers(0, 4), blocks)
"""A plain result with one block of any shape among its text blocks."""

results = st.one_of(plain, st.builds(lambda t: {**t[0], t[1]: t[2]}, off), off_block, wild)
