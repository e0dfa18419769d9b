"""Fail closed at unit level: whatever breaks inside decide or an approver, the call is denied."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio
import pytest
from _policy_helpers import call, policy, run, tool
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.canonical import digest
from checkrein.config import parse_config
from checkrein.errors import ApprovalError
from checkrein.gate.approval import BoundApprover
from checkrein.gate.seams import ApprovalRequest, ApprovalResult
from checkrein.policy import Decision, Finding, compile_policy
from checkrein.policy.analyzers.api import ScanContext

BASE = '[policy]\nallow = ["t__*"]\n[policy.tools."t__*"]\nrisk = "low"\n'


def _crash(arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]:
    raise RuntimeError("analyzer bug")


def _recursion(arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]:
    raise RecursionError("deep")


@pytest.mark.parametrize("scanner", [_crash, _recursion], ids=["raises", "recursion"])
def test_an_analyzer_that_raises_denies_and_is_counted(scanner: Any) -> None:
    p = policy(BASE, tool("t__a"), scanner=scanner)
    d = run(p, "t__a", {"x": "1"})
    assert (d.effect, d.rule_id, d.error_code) == ("deny", "policy.error", "policy.error")
    assert d.degraded == ("policy.analyzer_failed",)
    run(p, "t__a", {"x": "2"})
    assert p.counters.snapshot() == {"policy.analyzer_failed": 2}


def test_an_analyzer_returning_garbage_denies() -> None:
    p = policy(BASE, tool("t__a"), scanner=lambda a, c: [object()])  # type: ignore[list-item]
    d = run(p, "t__a", {"x": "1"})
    assert (d.effect, d.error_code) == ("deny", "policy.error")
    assert p.counters.snapshot() == {"policy.exception": 1}


def test_missing_analyzers_deny_calls_that_need_them() -> None:
    p = policy(BASE, tool("t__a"))
    broken = replace(p, scanner=None, analyzers_missing="scan_arguments is not available")
    d = run(broken, "t__a", {"x": "1"})
    assert (d.effect, d.error_code, d.reasons) == ("deny", "policy.error", ("scan_arguments is not available",))
    assert broken.counters.snapshot() == {"policy.analyzers_missing": 1}


def test_an_exception_anywhere_in_decide_denies() -> None:
    p = policy(BASE, tool("t__a"))

    class Exploding(dict[str, Any]):
        def values(self) -> Any:
            raise ValueError("boom")

        items = values

    d = run(p, "t__a", Exploding(x=1))
    assert (d.effect, d.rule_id, d.error_code) == ("deny", "policy.error", "policy.error")


def test_each_compiled_policy_has_its_own_counters() -> None:
    a = policy(BASE, tool("t__a"), scanner=_crash)
    b = compile_policy(parse_config(BASE), dict([tool("t__a")]), scanner=_crash)
    run(a, "t__a", {"x": "1"})
    assert b.counters.snapshot() == {}


# --- approver faults (unit level; the gate's end-to-end version forwards nothing) -----------------


def _request(arguments: dict[str, Any]) -> ApprovalRequest:
    c = call("t__a", arguments)
    return ApprovalRequest(c, Decision("ask", "risk:high", risk="high"), digest(arguments), "sha256:p", "summary")


class Raising:
    name = "raising"

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        raise OSError("approver down")


class Hanging:
    name = "hanging"

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize("inner", [Raising(), Hanging()], ids=["raises", "times-out"])
async def test_approver_faults_raise_approval_failed(inner: Any) -> None:
    bound = BoundApprover(inner, ttl_s=60, timeout_s=0.05, clock=lambda: 0.0)
    with anyio.fail_after(5), pytest.raises(ApprovalError) as info:
        await bound.approve(_request({"x": 1}))
    assert info.value.code == "approval.failed"
    assert bound.failures == 1


_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)
_REAL = compile_policy(
    parse_config(BASE + '[policy.tools."t__a".args.n]\nminimum = 0\n[policy.tools."t__a".args.p]\npattern = "[a-z]*"\n'),
    dict([tool("t__a", {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}})]),
)


@settings(max_examples=150, deadline=None)
@given(arguments=_json)
def test_decide_with_the_real_analyzers_never_raises_and_never_mutates(arguments: Any) -> None:
    before = copy.deepcopy(arguments)
    d = run(_REAL, "t__a", arguments)
    assert d.effect in ("allow", "deny", "ask")
    assert d.rule_id
    assert repr(arguments) == repr(before)
    assert run(_REAL, "t__a", arguments) == d  # same inputs, same decision
