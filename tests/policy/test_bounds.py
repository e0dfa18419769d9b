"""Argument bounds: checked first, before governance and before any analyzer sees the arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from _policy_helpers import policy, run, tool

from checkrein.config.policy import LimitSettings
from checkrein.policy.analyzers.api import ScanContext
from checkrein.policy.bounds import argument_problem
from checkrein.policy.decision import Finding

ALLOW = '[policy]\nallow = ["fs__*"]\n'


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    root = value
    for _ in range(depth):
        child: dict[str, Any] = {}
        value["a"] = child
        value = child
    return root


class _Recorder:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]:
        self.calls += 1
        return []


@pytest.mark.parametrize("arguments", [[1, 2], "text", 42, True])
def test_arguments_that_are_not_an_object_are_denied(arguments: Any) -> None:
    d = run(policy(ALLOW, tool("fs__read")), "fs__read", arguments)
    assert d.effect == "deny"
    assert d.rule_id == "arguments.bounds"
    assert d.error_code == "policy.arguments_rejected"


def test_null_arguments_are_not_an_object() -> None:
    assert argument_problem(None, LimitSettings()) == "arguments must be a JSON object, not NoneType"


def test_deep_nesting_is_denied_without_recursion_error() -> None:
    rec = _Recorder()
    p = policy(ALLOW, tool("fs__read"), scanner=rec)
    d = run(p, "fs__read", _nested(100_000))
    assert (d.effect, d.rule_id) == ("deny", "arguments.bounds")
    assert "deeper than 32" in d.reasons[0]
    assert rec.calls == 0


def test_nesting_at_the_limit_is_accepted() -> None:
    assert argument_problem(_nested(31), LimitSettings(max_depth=32)) is None
    assert argument_problem(_nested(32), LimitSettings(max_depth=32)) is not None


def test_huge_arguments_are_denied_before_any_analyzer_runs() -> None:
    rec = _Recorder()
    p = policy(ALLOW + "[policy.limits]\nmax_args_bytes = 65536\n", tool("fs__read"), scanner=rec)
    d = run(p, "fs__read", {"data": "x" * 70_000})
    assert (d.effect, d.rule_id) == ("deny", "arguments.bounds")
    assert rec.calls == 0


def test_many_small_values_count_towards_the_size_limit() -> None:
    problem = argument_problem({"list": [1] * 100_000}, LimitSettings(max_args_bytes=65536))
    assert problem is not None and "larger than" in problem


def test_too_many_strings_are_denied() -> None:
    problem = argument_problem({"l": ["a"] * 50}, LimitSettings(max_strings=10))
    assert problem is not None and "strings" in problem


@pytest.mark.parametrize(
    "arguments",
    [{"path": "ok\ud800"}, {"\udfff": 1}, {"nested": [{"x": "\ud83d"}]}],
    ids=["value", "key", "nested"],
)
def test_lone_surrogates_are_invalid_text_and_denied(arguments: dict[str, Any]) -> None:
    rec = _Recorder()
    d = run(policy(ALLOW, tool("fs__read"), scanner=rec), "fs__read", arguments)
    assert (d.effect, d.rule_id) == ("deny", "arguments.bounds")
    assert "surrogate" in d.reasons[0]
    assert rec.calls == 0


def test_a_valid_astral_character_is_fine() -> None:
    assert argument_problem({"emoji": "\U0001f600 ok"}, LimitSettings()) is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), b"bytes", {1, 2}, object()])
def test_values_json_cannot_hold_are_denied(bad: Any) -> None:
    assert argument_problem({"v": bad}, LimitSettings()) is not None


def test_huge_integers_do_not_blow_up_the_size_estimate() -> None:
    assert argument_problem({"n": 10**5000}, LimitSettings()) is None


def test_bounds_apply_even_to_tools_the_policy_denies() -> None:
    d = run(policy("[policy]\n", tool("fs__read")), "fs__read", {"s": "\ud800"})
    assert d.rule_id == "arguments.bounds"
