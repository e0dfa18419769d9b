"""`canonical_json` (orjson fast path with guards) gives exactly the reference's bytes and errors."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from collections import OrderedDict
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from checkrein.canonical import Canonical, _maybe_small_float, canonical_json, canonical_json_built


def reference(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(enum.StrEnum):
    ALICE = "alice"


@dataclasses.dataclass
class Point:
    x: int


class Text(str):
    pass


any_text = st.text(st.characters(blacklist_categories=()), max_size=20)  # includes lone surrogates
floats = (
    st.floats()
    | st.floats(min_value=1e-12, max_value=1e-3)
    | st.floats(min_value=-1e-3, max_value=-1e-12)
    | st.floats(min_value=1e14, max_value=1e24)
)
scalars = (
    st.none() | st.booleans() | st.integers() | st.integers(-(2**70), 2**70) | floats | any_text
    | st.sampled_from([Color.RED, Level.HIGH, Name.ALICE, uuid.UUID(int=7), Point(1), Text("t"),
                       datetime.date(2026, 1, 1), orjson.Fragment(b'{"a":1}'), b"bytes", {1, 2}])
)
keys = any_text | st.integers(-5, 5) | st.floats(allow_nan=True) | st.booleans() | st.none() | st.sampled_from([Text("k"), (1, 2)])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(keys, inner, max_size=4)
    | st.dictionaries(any_text, inner, max_size=4).map(OrderedDict),
    max_leaves=20,
)
PROPS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(values)
@example(float("nan"))
@example({"a": [1.0, float("-inf")]})
@example(1e-05)
@example(-7.293798069559777e-06)
@example(1e16)
@example({1: "x", "1": "y"})
@example({1: "x", "b": "y"})
@example(2**64)
@example("\ud800")
@example({"k": uuid.UUID(int=1)})
@example({"\uffff": 1, "\U00010000": 2, "\ue000": 3})  # code point order, not UTF-16 order
def test_canonical_json_equals_the_json_dumps_reference_bytes_and_errors(value: Any) -> None:
    assert outcome(canonical_json, value) == outcome(reference, value)


json_only = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=1e-9, max_value=1e-3) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=20,
)


@PROPS
@given(json_only)
def test_canonical_json_built_equals_the_reference_for_plain_json_values(value: Any) -> None:
    assert outcome(canonical_json_built, value) == outcome(reference, value)


@PROPS
@given(json_only, json_only)
def test_canonical_bytes_embedded_in_a_built_value_render_as_the_value_itself(inner: Any, other: Any) -> None:
    assume(outcome(reference, [inner, other])[0] == "ok")
    embedded = {"preview": Canonical(canonical_json(inner)), "other": other, "list": [Canonical(canonical_json(inner))]}
    assert canonical_json_built(embedded) == reference({"preview": inner, "other": other, "list": [inner]})


def test_deep_nesting_beyond_orjson_limit_falls_back_to_the_reference() -> None:
    value: Any = "x"
    for _ in range(300):
        value = [value]
    assert canonical_json(value) == reference(value)


def test_circular_reference_raises_like_the_reference() -> None:
    value: list[Any] = []
    value.append(value)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(value)


# Stored times whose seconds end in 0 and microseconds start with 0000 ("...:10.000012Z"), which
# used to send a whole event to the slow path; durations and argument floats of every size.
_times = st.builds(
    lambda sec, micros: f"2026-12-02T05:4{sec % 6}:{sec % 6}0.{micros:06d}Z", st.integers(0, 59), st.integers(0, 99))
_event = st.fixed_dictionaries({
    "time": _times | st.just("2026-12-02T05:40:00.000000Z"),
    "duration_ms": st.floats(0, 1e6, allow_nan=False) | st.floats(1e-12, 1e-3),
    "seq": st.integers(0, 2**40),
    "args_preview": st.dictionaries(st.text(max_size=8), floats.filter(lambda f: f == f and abs(f) != float("inf"))
                                    | any_text.filter(lambda s: s.encode("utf-8", "surrogatepass") == s.encode("utf-8", "ignore"))
                                    | st.integers(), max_size=4),
    "reasons": st.lists(st.sampled_from(["0.00001", "x 0.0000", "10.000001,", "7e-6]", "1e-05"]), max_size=3),
})


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(_event)
def test_event_shapes_render_as_the_reference_and_times_keep_the_fast_path(event: dict[str, Any]) -> None:
    """Byte equality with the reference on event shapes; a timestamp alone never costs the slow path."""
    assert canonical_json_built(event) == reference(event)
    plain = {"time": event["time"], "seq": event["seq"], "reasons": [r for r in event["reasons"] if "," not in r
                                                                      and "]" not in r]}
    out = orjson.dumps(plain, option=orjson.OPT_SORT_KEYS)
    assert out == reference(plain)
    assert not _maybe_small_float(out)
