"""Hypothesis properties: canonical JSON, redaction never leaks a planted value, the chain."""

from __future__ import annotations

import copy
import json
import math
import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.audit.merkle import MerkleFrontier, merkle_root
from checkrein.audit.redact import Redactor
from checkrein.audit.schema import render, strict_loads
from checkrein.canonical import canonical_json

json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(json_values)
def test_canonical_json_is_stable_under_reparse_and_key_order(value: Any) -> None:
    raw = canonical_json(value)
    again = json.loads(raw)
    assert canonical_json(again) == raw
    if isinstance(value, dict):
        shuffled = dict(reversed(list(value.items())))
        assert canonical_json(shuffled) == raw


@FAST
@given(st.floats())
def test_canonical_json_refuses_non_finite_numbers(x: float) -> None:
    if math.isfinite(x):
        assert json.loads(canonical_json(x)) == x
    else:
        try:
            canonical_json(x)
        except ValueError:
            return
        raise AssertionError("non-finite float serialized")


@FAST
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_rendered_lines_parse_strictly_and_rehash_to_the_same_line(body: dict[str, Any]) -> None:
    body = {k: v for k, v in body.items() if k != "hash"}
    line, h = render(body)
    obj = strict_loads(line[:-1])
    assert obj.pop("hash") == h
    assert render(obj) == (line, h)


SENSITIVE = ["password", "Passwd", "api_key", "X-Api-Key", "accessToken", "client_secret", "Authorization",
             "private_key", "session_cookie", "credentials", "refresh_token"]


def _secret() -> st.SearchStrategy[str]:
    alnum = string.ascii_letters + string.digits
    return st.one_of(
        st.text(alnum, min_size=20, max_size=30).map(lambda s: "PLANT" + s),
        st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16).map(lambda s: "AKIA" + s),
        st.text(alnum, min_size=36, max_size=36).map(lambda s: "ghp_" + s),
    )


@st.composite
def planted(draw: st.DrawFn) -> tuple[Any, str]:
    """A JSON value with one secret somewhere: under a secret-looking key, or (for token-shaped
    secrets) inside text, or inside JSON carried in a string."""
    secret = draw(_secret())
    how = draw(st.sampled_from(["key", "text", "json_string"]))
    if how == "key" or secret.startswith("PLANT"):
        leaf: Any = {draw(st.sampled_from(SENSITIVE)): draw(st.sampled_from([secret, [secret], {"v": secret}]))}
    elif how == "text":
        leaf = draw(st.text(max_size=20)) + " " + secret + " " + draw(st.text(max_size=20))
    else:
        leaf = json.dumps({"nested": {draw(st.sampled_from(SENSITIVE)): secret}})
    value = leaf
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            others = draw(st.lists(json_values, max_size=3))
            pos = draw(st.integers(0, len(others)))
            value = [*others[:pos], value, *others[pos:]]
        else:
            others_d = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3))
            value = {**others_d, draw(st.text(min_size=1, max_size=8)): value}
    return value, secret


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planted())
def test_redaction_never_leaks_a_planted_value_and_never_mutates(case: tuple[Any, str]) -> None:
    value, secret = case
    before = copy.deepcopy(value)
    preview, pointers = Redactor().preview(value, "/args_preview")
    assert secret not in json.dumps(preview, ensure_ascii=False)
    assert pointers, "a masked value must be listed"
    assert all(p.startswith("/args_preview") for p in pointers)
    assert value == before


@FAST
@given(json_values)
def test_redaction_output_is_json_and_bounded(value: Any) -> None:
    r = Redactor(max_chars=64)
    preview, pointers = r.preview(value, "")
    raw = canonical_json(preview)
    assert len(raw) < 64 * 64 * 8
    for p in pointers:
        assert secret_free(p)


def secret_free(pointer: str) -> bool:
    return "AKIA" not in pointer


@FAST
@given(st.lists(st.binary(min_size=32, max_size=32).map(bytes.hex), max_size=70))
def test_incremental_merkle_root_equals_rfc6962_reference(hashes: list[str]) -> None:
    f = MerkleFrontier()
    for h in hashes:
        f.append(h)
    assert f.root() == merkle_root(hashes)


def test_merkle_root_matches_rfc6962_known_answer() -> None:
    # Two leaves: root = SHA256(0x01 || SHA256(0x00||a) || SHA256(0x00||b)), computed by hand.
    import hashlib

    a, b = "00" * 32, "11" * 32
    la = hashlib.sha256(b"\x00" + bytes.fromhex(a)).digest()
    lb = hashlib.sha256(b"\x00" + bytes.fromhex(b)).digest()
    assert merkle_root([a, b]) == hashlib.sha256(b"\x01" + la + lb).hexdigest()
    assert merkle_root([]) == hashlib.sha256(b"").hexdigest()


@FAST
@given(json_values)
def test_fast_path_agrees_with_the_full_walk(value: Any) -> None:
    r = Redactor()
    doc = canonical_json(value)
    if r.fits_whole(doc, value):
        assert json.loads(doc) == r.preview(value, "")[0] and r.preview(value, "")[1] == []


@st.composite
def chains(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Lifecycle bodies with arbitrary JSON fields (checkpoint cadence drawn too)."""
    return [{"f": draw(json_values)} for _ in range(draw(st.integers(1, 25)))]


def _write_chain(directory: Any, fields: list[dict[str, Any]], every: int) -> list[bytes]:
    from checkrein.audit.chain import Chain
    from checkrein.audit.event import EventFactory

    chain = Chain(log_id=Chain.new_log_id(), next_seq=0, head_hash=None, hashes=[], signer=None)
    lines = [chain.seal(chain.genesis(0.0))[0]]
    for i, f in enumerate(fields):
        preview, red = Redactor().preview(f, "/fields")
        lines.append(chain.seal(EventFactory.lifecycle_body("test.event", preview, float(i), red))[0])
        if chain.since_checkpoint >= every:
            lines.append(chain.seal(chain.checkpoint("count", float(i)))[0])
    lines.append(chain.seal(chain.checkpoint("shutdown", 99.0))[0])
    directory.mkdir(exist_ok=True)
    (directory / "segment-000001.jsonl").write_bytes(b"".join(lines))
    return lines


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains(), st.integers(1, 7), st.data())
def test_any_chain_verifies_and_any_deleted_event_is_blamed_exactly(
    fields: list[dict[str, Any]], every: int, data: st.DataObject
) -> None:
    import tempfile
    from pathlib import Path

    from checkrein.audit.verify import verify_log

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "log"
        lines = _write_chain(d, fields, every)
        assert verify_log(d).exit_code == 0
        k = data.draw(st.integers(1, len(lines) - 1))
        (d / "segment-000001.jsonl").write_bytes(b"".join(lines[:k] + lines[k + 1 :]))
        report = verify_log(d)
        assert report.exit_code == 1 and report.problem is not None and report.problem.seq == k
