"""Fuzz: no analyzer raises on any input (random Unicode with lone surrogates and controls, huge
values, deep nesting), and a crash inside one denies the call with `policy.error`, counted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.config.policy import ArgKind
from checkrein.policy.analyzers import ScanContext, classify_sql, find_secrets, redact_secrets, scan_arguments
from checkrein.policy.analyzers.argv import injected_option, option_problem
from checkrein.policy.analyzers.hosts import canonical_host, classify_host
from checkrein.policy.analyzers.sql import side_effect
from checkrein.policy.analyzers.stores import credential_store, home_paths
from checkrein.policy.analyzers.urls import url_hosts
from checkrein.policy.injection import detect_injection

KINDS: list[ArgKind | None] = [None, "path", "url", "command", "query", "secret", "text"]
# Every code point class, lone surrogates and controls included (JSON can carry them).
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=200)
PIECES = st.sampled_from(["../", "%2e", "\\", "://", "@", "\t", "\u3002", "\u200b", "'", "\"", ";", "$(", "--", "-o", "AKIA", "eyJ", "ghp_", "=", " "])
HOSTILE = st.lists(st.one_of(ANY_TEXT, PIECES), max_size=12).map("".join)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | HOSTILE,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(HOSTILE, children, max_size=5),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON, st.sampled_from(KINDS))
def test_scan_arguments_never_raises(value: Any, kind: ArgKind | None) -> None:
    ctx = ScanContext(kinds={"/v": kind} if kind else {}, path_roots=("/srv",), allowed_hosts=("api.example.com",), commands=("git", "ls"))
    findings = scan_arguments({"v": value}, ctx)
    assert all(f.analyzer for f in findings)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE)
def test_every_analyzer_entry_point_is_total(text: str) -> None:
    find_secrets(text)
    redact_secrets(text)
    detect_injection(text)
    classify_sql(text)
    side_effect(text)
    option_problem(text.split())
    injected_option(text)
    credential_store(text.split("/"))
    home_paths(text)
    canonical_host(text)
    classify_host(text)
    url_hosts(text)


def test_deep_nesting_and_huge_values_are_bounded() -> None:
    deep: Any = "x"
    for _ in range(500):
        deep = [deep]
    findings = scan_arguments({"v": deep}, ScanContext())
    assert any(f.kind == "too_deep" for f in findings)
    huge = "A" * 600_000
    assert any(f.kind == "value_too_long" for f in scan_arguments({"v": huge}, ScanContext()))
    assert find_secrets("ghp_" + "a1B2" * 300_000) is not None
    assert detect_injection("ignore " * 100_000) is not None


def test_a_crashing_analyzer_denies_with_policy_error_and_is_counted() -> None:
    from checkrein.catalog.model import ToolDefinition
    from checkrein.config.model import config_from_mapping
    from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide

    tools = {"a__t": ToolDefinition("a", "t", "t", {"type": "object", "properties": {"x": {"type": "string"}}})}
    policy = compile_policy(config_from_mapping({"policy": {"allow": ["a__*"]}}), tools)

    def crash(arguments: Any, ctx: ScanContext) -> list[Any]:
        raise RecursionError("analyzer bug")

    broken = replace(policy, scanner=crash)
    call = ToolCall(Identity("u"), "s", "t", "sp", "a__t", {"x": "hello"})
    d = decide(broken, call, SessionState("s"), 0.0)
    assert (d.effect, d.error_code) == ("deny", "policy.error")
    assert broken.counters.snapshot().get("policy.analyzer_failed") == 1
