"""`scan_arguments`: pointers, nesting, JSON inside strings, keys, dedupe, bounds, enabled set."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from _analyzer_helpers import kinds_of
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.analyzers import ANALYZERS, Analyzer, ScanContext, scan, scan_arguments, scan_value
from checkrein.policy.analyzers.scan import MAX_DEPTH, MAX_STRINGS


def test_findings_carry_rfc6901_pointers_for_nested_values() -> None:
    args: dict[str, Any] = {"a": {"b/c": ["ok", "../../../../etc/passwd"]}, "m~n": "x; rm -rf /"}
    findings = scan_arguments(args, ScanContext())
    pointers = {f.path for f in findings}
    assert "/a/b~1c/1" in pointers
    assert "/m~0n" in pointers


def test_json_inside_a_string_is_parsed_once_and_scanned() -> None:
    inner = json.dumps({"target": {"url": "http://169.254.169.254/latest/meta-data/"}})
    findings = scan_arguments({"payload": inner}, ScanContext(kinds={"/payload/target/url": "url"}))
    assert any(f.path == "/payload/target/url" and f.kind == "metadata" for f in findings)


def test_json_nested_inside_embedded_json_is_not_parsed_again() -> None:
    innermost = json.dumps({"u": "gopher://127.0.0.1:6379/_x"})
    twice = json.dumps({"s": innermost})
    findings = scan_arguments({"p": twice}, ScanContext())
    # The scheme is still caught in the raw text; there is just no pointer into the second layer.
    assert any(f.analyzer == "urls" for f in findings)
    assert not any(f.path.startswith("/p/s/u") for f in findings)


def test_object_keys_are_scanned_as_untyped_strings() -> None:
    findings = scan_arguments({"files": {"../../../../etc/shadow": "x"}}, ScanContext())
    assert any(f.analyzer == "paths" for f in findings)


GITHUB_TOKEN = "ghp_" + "Zq8Lk2Vn5Xr7Tb1Wm4Yc6Hd9Jf3Gs0Pa2Ue8Ri"  # split: scanners of this file stay quiet


@pytest.mark.parametrize(
    ("key", "analyzer"),
    [(GITHUB_TOKEN, "secrets"), ("AKIA" + "IOSFODNN7EXAMPL2", "secrets"), ("xp_cmdshell", "sql"), ("Li4vLi4vaWRfcnNh", "paths")],
)
def test_keys_that_are_identifiers_are_scanned_too(key: str, analyzer: str) -> None:
    """A key that is a valid identifier (a token, a procedure name, base64) is no less a client's
    string than any other: scanned like an untyped value, fast path and full alike."""
    args = {"opts": {key: 1}}
    for full in (False, True):
        findings = scan_arguments(args, ScanContext(), full=full)
        assert any(f.analyzer == analyzer and f.path == f"/opts/{key}" for f in findings), (full, findings)
    as_value = {f.analyzer for f in scan_arguments({"v": key}, ScanContext())}
    assert analyzer in as_value


def test_the_tools_own_top_level_names_are_not_scanned_as_keys() -> None:
    """A top-level key the tool's schema declares is the tool's word (`declared_keys`); the same
    text as a nested key, or as a value, is the client's and is scanned."""
    ctx = ScanContext(declared_keys=frozenset({"xp_cmdshell"}))
    for full in (False, True):
        assert scan_arguments({"xp_cmdshell": 1}, ctx, full=full) == []
        nested = scan_arguments({"opts": {"xp_cmdshell": 1}}, ctx, full=full)
        assert any(f.analyzer == "sql" and f.path == "/opts/xp_cmdshell" for f in nested)
        assert any(f.analyzer == "sql" for f in scan_arguments({"v": "xp_cmdshell"}, ctx, full=full))


def test_findings_are_deduplicated_per_analyzer_kind_and_pointer() -> None:
    findings = scan_arguments({"v": "%2e%2e/%2e%2e/%2e%2e/x"}, ScanContext(kinds={"/v": "path"}))
    keys = [(f.analyzer, f.kind, f.path) for f in findings]
    assert len(keys) == len(set(keys))


def test_disabled_analyzers_do_not_run() -> None:
    ctx = ScanContext(kinds={"/v": "path"}, enabled=frozenset({"urls"}))
    assert scan_arguments({"v": "../../etc/passwd"}, ctx) == []


def test_non_string_values_are_ignored() -> None:
    assert scan_arguments({"n": 1, "f": 1.5, "b": True, "z": None, "l": [1, 2]}, ScanContext()) == []


def test_too_deep_arguments_stop_with_a_scan_finding() -> None:
    value: Any = "x"
    for _ in range(MAX_DEPTH + 5):
        value = [value]
    findings = scan_arguments({"v": value}, ScanContext())
    assert kinds_of(findings, "scan") == {"too_deep"}


def test_too_many_strings_stop_with_a_scan_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_STRINGS >= 1_000
    monkeypatch.setattr(scan, "MAX_STRINGS", 50)
    findings = scan_arguments({"v": ["a"] * 51}, ScanContext())
    assert kinds_of(findings, "scan") == {"too_many_strings"}


def test_evidence_is_short_printable_and_secret_free() -> None:
    secret = "ghp_" + "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Saabcd"
    value = "../../../../etc/passwd\x00" + "A" * 500 + secret
    for f in scan_arguments({"v": value}, ScanContext(kinds={"/v": "path"})):
        assert len(f.evidence) <= 80
        assert "\x00" not in f.evidence and secret not in f.evidence


def test_builtin_analyzers_satisfy_the_protocol() -> None:
    assert set(ANALYZERS) == {"paths", "urls", "shell", "sql", "secrets"}
    for name, analyzer in ANALYZERS.items():
        assert isinstance(analyzer, object) and analyzer.name == name
        typed: Analyzer = analyzer
        assert isinstance(typed.analyze("hello", "/v", None, ScanContext()), list)
    assert ANALYZERS["paths"].analyze("%2e%2e/%2e%2e/x", "/v", "path", ScanContext())


def test_scan_value_matches_scan_arguments() -> None:
    ctx = ScanContext(kinds={"/v": "url"})
    assert scan_value("http://127.0.0.1/", "/v", "url", ctx) == scan_arguments({"v": "http://127.0.0.1/"}, ctx)


def test_benign_arguments_of_a_typical_agent_call_are_clean() -> None:
    args = {
        "path": "reports/2024 Q1.xlsx",
        "url": "https://api.example.com/v1/items?limit=10&sort=desc",
        "query": "SELECT id, name FROM customers WHERE region = 'EU' ORDER BY name",
        "command": "git log --oneline -n 5",
        "message": "Hi Ann, PG&E sent the bill; I'll pay it by Friday. See ../notes for details.",
        "table": "| a | b |\n|---|---|\n| 1 | 2 |",
        "note": "Let's drop those dipping stocks and select better ones.",
    }
    kinds = {"/path": "path", "/url": "url", "/query": "query", "/command": "command"}
    assert scan_arguments(args, ScanContext(kinds=kinds)) == []  # type: ignore[arg-type]


def test_evidence_never_shows_part_of_a_secret_cut_by_its_edge() -> None:
    secret = "ghp_" + "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Saabcd"
    for offset in range(0, 90, 7):
        value = "../../../../etc/passwd " + "x" * offset + " " + secret + " more text"
        for f in scan_arguments({"v": value}, ScanContext(kinds={"/v": "path"})):
            assert "Zq8Xw2Lm" not in f.evidence and "Kg1Saabcd" not in f.evidence, (offset, f.evidence)


def _reference_collect(value: Any, pointer: str, depth: int, in_json: bool, out: list[tuple[str, str, bool]]) -> None:
    """The argument walk as first written (one call per value), the inlined walk's reference."""
    if depth > scan.MAX_DEPTH:
        raise scan._Overflow("too_deep", pointer)
    if isinstance(value, str):
        scan._add(out, pointer, value, False)
        if not in_json:
            inner = scan._embedded_json(value)
            if isinstance(inner, dict | list):
                _reference_collect(inner, pointer, depth + 1, True, out)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _reference_collect(v, f"{pointer}/{i}", depth + 1, in_json, out)
    elif value is None or isinstance(value, int | float):
        return
    elif isinstance(value, Mapping):
        for k, v in value.items():
            child = f"{pointer}/{scan._escape(str(k))}"
            if isinstance(k, str) and k:
                scan._add(out, child, k, True)
            _reference_collect(v, child, depth + 1, in_json, out)


def _walk(fn: Any, value: Any) -> tuple[list[tuple[str, str, bool]], tuple[str, str] | None]:
    out: list[tuple[str, str, bool]] = []
    try:
        fn(value, "", 0, False, out)
    except scan._Overflow as exc:
        return out, (exc.kind, exc.pointer)
    return out, None


_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
    st.sampled_from(["", " ", "x", "a/b", ' {"k": "../x"}', '["a", 1]', "[not json", "{}", "\t[1]", "~/x"]), st.text(max_size=6),
)  # fmt: skip
_TREES = st.recursive(
    _LEAVES,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["a", "b c", "x/y", "~", "1", "", "k-2"]), kids, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_TREES, st.integers(min_value=1, max_value=8), st.integers(min_value=1, max_value=40))
def test_inlined_walk_collects_exactly_what_the_reference_walk_does(tree: Any, depth: int, strings: int) -> None:
    """Same strings, pointers and order, and the same overflow (kind and pointer) at small bounds."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "MAX_DEPTH", depth)
        mp.setattr(scan, "MAX_STRINGS", strings)
        assert _walk(scan._collect, {"root": tree}) == _walk(_reference_collect, {"root": tree})
