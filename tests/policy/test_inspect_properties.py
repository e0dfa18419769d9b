"""Properties of result inspection over generated results of every kind (Hypothesis).

* nothing a secret pattern matches survives anywhere in the delivered JSON (strings, keys, ``name:
  value`` members, decoded text payloads, adjacent texts joined);
* no input makes the walker raise anything but `ResultRejected`, nor the inspector raise at all;
* a truncated result fits the cap; a delivered result is still valid for the SDK's models;
* the inspector never changes the view it was given.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from typing import Any

import mcp.types as types
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.config.policy import ResultSettings
from checkrein.policy import Identity, ResultView, ToolCall
from checkrein.policy.analyzers import find_secrets
from checkrein.policy.inspect import DefaultInspector
from checkrein.policy.result_walk import ResultRejected, collect, decode_text_payload

CALL = ToolCall(Identity("u"), "s", "t", "p", "x__y", {}, "x", "y")
SECRETS = [
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AKIA" + "QWERTYUIOPASDFGH",
    "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "password: " + "Tr0ub4dor&3xyz",
    "api_key=" + "Zx9kq2Lm8vBz7Qw1",
    "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEpAIBAAKCAQEA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8s9T0" + "\n-----END RSA PRIVATE KEY-----",
]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

short = st.text(max_size=8)
secretish = st.builds(lambda a, s, b: a + s + b, short, st.sampled_from(SECRETS), short)
strings = st.one_of(short, secretish, st.sampled_from(["password", "token", "api_key", "secret"]))
leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False), strings)
values = st.recursive(leaves, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(strings, c, max_size=4)), max_leaves=12)


def b64(text: str, codec: str = "utf-8") -> str:
    return base64.b64encode(text.encode(codec, "surrogatepass")).decode()


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)).decode()
annotations = st.fixed_dictionaries({}, optional={"audience": st.just(["user"]), "lastModified": strings})
meta = st.dictionaries(strings, values, max_size=3)


def block(kind: str, s: str, m: dict[str, Any] | None, a: dict[str, Any] | None) -> dict[str, Any]:
    b: dict[str, Any]
    if kind == "text":
        b = {"type": "text", "text": s}
    elif kind == "image":
        b = {"type": "image", "data": PNG, "mimeType": "image/png"}
    elif kind == "image-text":
        b = {"type": "image", "data": b64(s), "mimeType": "image/svg+xml"}
    elif kind == "resource":
        b = {"type": "resource", "resource": {"uri": "file:///" + s, "text": s}}
    elif kind == "blob":
        b = {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "blob": b64(s)}}
    else:
        b = {"type": "resource_link", "name": s, "uri": "file:///l", "description": s, "title": s}
    if m:
        b["_meta"] = m
    if a:
        b["annotations"] = a
    return b


blocks = st.builds(
    block,
    st.sampled_from(["text", "image", "image-text", "resource", "blob", "link"]),
    strings,
    st.none() | meta,
    st.none() | annotations,
)


@st.composite
def results(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    kind = draw(st.sampled_from(["tool", "resource", "prompt"]))
    if kind == "tool":
        value: dict[str, Any] = {"content": draw(st.lists(blocks, max_size=4)), "isError": draw(st.booleans())}
        if draw(st.booleans()):
            value["structuredContent"] = draw(st.dictionaries(strings, values, max_size=4))
    elif kind == "resource":
        items = draw(st.lists(st.tuples(strings, st.booleans()), max_size=3))
        value = {"contents": [{"uri": "file:///r", "text": s} if t else {"uri": "file:///r", "mimeType": "application/json", "blob": b64(json.dumps({"k": s}))} for s, t in items]}
    else:
        value = {"messages": [{"role": "user", "content": b} for b in draw(st.lists(blocks, max_size=3))]}
        if draw(st.booleans()):
            value["description"] = draw(strings)
    if draw(st.booleans()):
        value["_meta"] = draw(meta)
    return kind, value


def leftovers(value: Any) -> list[str]:
    """Every secret the finder still sees in what the client would receive."""
    found: list[str] = []
    prose: list[str] = []

    def scan(s: str) -> None:
        found.extend(s[sp.start : sp.end] for sp in find_secrets(s))

    def walk(v: Any, key: str | None = None) -> None:
        if isinstance(v, str):
            scan(v)
            if key is not None:
                scan(f"{key}: {v}")
            if key in ("data", "blob"):
                try:
                    decoded = decode_text_payload(base64.b64decode(v, validate=True), None)
                except (binascii.Error, ValueError):
                    decoded = None
                if decoded is not None:
                    scan(decoded[0])
                    prose.append(decoded[0])
            elif key == "text":
                prose.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                scan(k)
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    scan("".join(prose))
    return found


@FAST
@given(results(), st.sampled_from(["off", "withhold", "wrap"]))
def test_nothing_a_secret_pattern_matches_survives_anywhere(case: tuple[str, dict[str, Any]], injection: str) -> None:
    kind, value = case
    out = DefaultInspector(ResultSettings(injection=injection)).inspect(CALL, ResultView(kind, value))  # type: ignore[arg-type]
    if out.result is not None:
        assert leftovers(out.result) == []


@FAST
@given(results(), st.sampled_from(["withhold", "wrap", "off"]), st.sampled_from([1024, 4096, 262_144]))
def test_delivered_results_fit_the_cap_stay_valid_and_leave_the_view_alone(
    case: tuple[str, dict[str, Any]], injection: str, cap: int
) -> None:
    kind, value = case
    before = copy.deepcopy(value)
    out = DefaultInspector(ResultSettings(injection=injection, max_bytes=cap)).inspect(CALL, ResultView(kind, value))  # type: ignore[arg-type]
    assert value == before
    if out.action == "deliver":
        assert out.result is not None
        if "truncated" in out.flags:
            assert len(orjson.dumps(out.result)) <= cap + 512  # redaction masks may be longer than the secret
        model = {"tool": types.CallToolResult, "resource": types.ReadResourceResult, "prompt": types.GetPromptResult}[kind]
        model.model_validate(out.result)


class Opaque:
    pass


junk = st.one_of(
    values,
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3),
    st.integers(min_value=2**64, max_value=2**80),
    st.just(float("nan")),
    st.binary(max_size=4),
    st.frozensets(st.integers(), max_size=2),
    st.builds(Opaque),
)
anything = st.recursive(
    junk,
    lambda c: st.one_of(
        st.lists(c, max_size=3),
        st.dictionaries(st.one_of(strings, st.integers()), c, max_size=3),
        st.tuples(c, c),
        st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "resource", "resource_link", "audio"])}, optional={"text": c, "data": c, "mimeType": c, "resource": c, "_meta": c}),
    ),
    max_leaves=10,
)


@FAST
@given(st.sampled_from(["tool", "resource", "prompt", "error"]), st.one_of(anything, st.dictionaries(st.sampled_from(["content", "contents", "messages", "structuredContent", "_meta", "message", "data", "description", "isError"]), anything, max_size=4)))
def test_no_input_makes_the_walker_raise_anything_but_its_declared_error(kind: str, value: Any) -> None:
    try:
        collect(kind, value, max_depth=16, max_bytes=4096)  # type: ignore[arg-type]
    except ResultRejected:
        pass
    inspector = DefaultInspector(ResultSettings(max_bytes=4096, max_depth=16))
    if kind != "error":
        out = inspector.inspect(CALL, ResultView(kind, value))  # type: ignore[arg-type]
        assert out.action in ("deliver", "withhold", "deny")
    err = inspector.inspect_error(CALL, value if isinstance(value, str) else "failed", value)
    assert isinstance(err.message, str)


def test_a_cyclic_result_is_refused_not_hung_on() -> None:
    cyclic: dict[str, Any] = {"type": "text", "text": "x"}
    cyclic["_meta"] = cyclic
    out = DefaultInspector(ResultSettings()).inspect(CALL, ResultView("tool", {"content": [cyclic]}))
    assert out.action == "deny" and out.code == "result.too_deep"


@FAST
@given(st.one_of(strings, st.text(max_size=80)))
def test_the_secret_prefilter_the_inspector_relies_on_never_hides_a_secret(s: str) -> None:
    """`may_find` gates every scan of a result string: it must be true wherever a secret is found."""
    from checkrein.policy.analyzers.secrets import may_find

    assert may_find(s, None) or not find_secrets(s)
