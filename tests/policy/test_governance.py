"""Tool governance: default deny, globs, security levels, roles, unknown risk, approval mapping."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import replace

import pytest
from _policy_helpers import ANON, LOCAL, call, policy, run, tool
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy import Identity, SessionState, decide, may_see
from checkrein.policy.engine import governance_decision

SERVERS = """
[[servers]]
name = "fs"
command = "fs-server"

[[servers]]
name = "db"
command = "db-server"
security_level = "high"
identities = ["bob", "dba"]

[[servers]]
name = "mail"
command = "mail-server"
security_level = "medium"
"""
BOB = Identity("bob", ("dev",), "token")
CAROL = Identity("carol", ("dba",), "token")
DAVE = Identity("dave", ("dev",), "token")


def test_no_rules_means_default_deny() -> None:
    d = run(policy("", tool("fs__read")), "fs__read")
    assert (d.effect, d.rule_id, d.error_code) == ("deny", "default:deny", "policy.denied")


def test_allow_glob_allows_and_names_the_rule() -> None:
    d = run(policy('[policy]\nallow = ["fs__*"]\n', tool("fs__read")), "fs__read")
    assert (d.effect, d.rule_id) == ("allow", "allow:fs__*")


def test_deny_glob_wins_over_allow_glob() -> None:
    p = policy('[policy]\nallow = ["fs__*"]\ndeny = ["*__delete*"]\n', tool("fs__read"), tool("fs__delete_file"))
    assert run(p, "fs__read").effect == "allow"
    d = run(p, "fs__delete_file")
    assert (d.effect, d.rule_id) == ("deny", "deny:*__delete*")


def test_globs_are_case_sensitive_and_anchored() -> None:
    p = policy('[policy]\nallow = ["fs__read"]\n', tool("fs__read"), tool("fs__READ"), tool("fs__read_all"))
    assert run(p, "fs__read").effect == "allow"
    assert run(p, "fs__READ").effect == "deny"
    assert run(p, "fs__read_all").effect == "deny"


def test_unknown_tool_is_denied_as_not_found() -> None:
    d = run(policy('[policy]\nallow = ["*"]\n', tool("fs__read")), "fs__ghost")
    assert (d.effect, d.error_code) == ("deny", "tool.not_found")


def test_default_allow_allows_tools_no_rule_names() -> None:
    """Regression: `default = "allow"` served zero tools (each denied `risk:unknown`) while lint
    warned that unnamed tools were allowed; the key's documented meaning is the allow."""
    p = policy('[policy]\ndefault = "allow"\ndeny = ["fs__rm"]\n', tool("fs__read"), tool("fs__exec_cmd"), tool("fs__rm"))
    for name in ("fs__read", "fs__exec_cmd"):
        d = run(p, name)
        assert (d.effect, d.rule_id, d.risk) == ("allow", "default:allow", "unknown")
    assert run(p, "fs__rm").effect == "deny"


def test_lint_and_the_policy_agree_about_default_allow() -> None:
    from checkrein.config.lint import lint_text

    text = '[policy]\ndefault = "allow"\n'
    (finding,) = [f for f in lint_text(text, path="checkrein.toml", env={}).findings if f.rule == "checkrein.default-allow"]
    assert "are allowed" in finding.message and "none of them asks for approval" in finding.message
    assert run(policy(text, tool("fs__read")), "fs__read").effect == "allow"
    with_template = lint_text('[policy]\ntemplate = "production"\ndefault = "allow"\n', path="checkrein.toml", env={})
    (finding,) = [f for f in with_template.findings if f.rule == "checkrein.default-allow"]
    assert "asks for approval" not in finding.message


def test_unknown_risk_is_allowed_when_a_tools_entry_names_it_exactly() -> None:
    p = policy('[policy]\ndefault = "allow"\n[policy.tools."fs__read"]\nroles = []\n', tool("fs__read"))
    d = run(p, "fs__read")
    assert (d.effect, d.risk) == ("allow", "unknown")


def test_a_glob_tools_entry_with_a_risk_gives_the_risk() -> None:
    p = policy('[policy]\ndefault = "allow"\n[policy.tools."fs__*"]\nrisk = "low"\n', tool("fs__read"))
    assert (run(p, "fs__read").effect, run(p, "fs__read").risk) == ("allow", "low")


def test_exact_tools_entry_beats_glob_and_more_specific_glob_beats_general() -> None:
    toml = """
[policy]
allow = ["*"]
[policy.tools."*"]
risk = "medium"
[policy.tools."fs__*"]
risk = "low"
[policy.tools."fs__delete"]
risk = "critical"
"""
    p = policy(toml, tool("fs__read"), tool("fs__delete"), tool("db__q"))
    assert p.risk_of("fs__read") == "low"
    assert p.risk_of("fs__delete") == "critical"
    assert p.risk_of("db__q") == "medium"


def test_tool_rules_merge_field_by_field_from_the_most_specific() -> None:
    toml = """
[policy]
allow = ["*"]
[policy.tools."*"]
risk = "low"
roles = ["ops"]
[policy.tools."fs__read"]
read_only = true
"""
    p = policy(toml, tool("fs__read"))
    rule = p.plans["fs__read"].governance.rule
    assert rule is not None
    assert (rule.risk, rule.roles, rule.read_only) == ("low", ("ops",), True)
    assert p.is_read_only("fs__read")


@pytest.mark.parametrize(
    ("who", "effect"),
    [(BOB, "allow"), (CAROL, "allow"), (DAVE, "deny"), (LOCAL, "deny"), (ANON, "deny")],
    ids=["listed-name", "listed-role", "unlisted", "local-unlisted", "anonymous"],
)
def test_high_security_server_admits_only_listed_identities(who: Identity, effect: str) -> None:
    p = policy(SERVERS + '[policy]\nallow = ["*"]\n[policy.tools."*"]\nrisk = "low"\n', tool("db__query"))
    d = run(p, "db__query", identity=who)
    assert d.effect == effect
    if effect == "deny":
        assert d.rule_id == "identity.level:db"
    assert may_see(p, who, "db__query") is (effect == "allow")


def test_unauthenticated_caller_with_a_listed_name_is_still_refused_on_high() -> None:
    p = policy(SERVERS + '[policy]\nallow = ["*"]\n[policy.tools."*"]\nrisk = "low"\n', tool("db__query"))
    impostor = Identity("bob", source="anonymous", authenticated=False)
    assert run(p, "db__query", identity=impostor).effect == "deny"


def test_medium_security_server_needs_an_authenticated_caller() -> None:
    p = policy(SERVERS + '[policy]\nallow = ["*"]\n[policy.tools."*"]\nrisk = "low"\n', tool("mail__read"))
    assert run(p, "mail__read", identity=LOCAL).effect == "allow"
    assert run(p, "mail__read", identity=ANON).rule_id == "identity.level:mail"


def test_low_security_server_admits_anonymous_callers() -> None:
    p = policy(SERVERS + '[policy]\nallow = ["*"]\n[policy.tools."*"]\nrisk = "low"\n', tool("fs__read"))
    assert run(p, "fs__read", identity=ANON).effect == "allow"


def test_tool_roles_restrict_callers_by_role_or_name() -> None:
    toml = '[policy]\nallow = ["*"]\n[policy.tools."fs__write"]\nrisk = "low"\nroles = ["editor", "alice"]\n'
    p = policy(toml, tool("fs__write"))
    assert run(p, "fs__write", identity=LOCAL).effect == "allow"  # by name
    assert run(p, "fs__write", identity=Identity("x", ("editor",), "token")).effect == "allow"
    d = run(p, "fs__write", identity=DAVE)
    assert (d.effect, d.rule_id) == ("deny", "identity.roles")
    assert not may_see(p, DAVE, "fs__write")


@pytest.mark.parametrize("risk", ["high", "critical"])
def test_high_and_critical_risk_ask(risk: str) -> None:
    p = policy(f'[policy]\nallow = ["*"]\n[policy.tools."fs__rm"]\nrisk = "{risk}"\n', tool("fs__rm"))
    d = run(p, "fs__rm")
    assert (d.effect, d.rule_id, d.risk) == ("ask", f"risk:{risk}", risk)
    assert may_see(p, LOCAL, "fs__rm")


def test_approval_auto_skips_the_risk_ask_and_deny_turns_asks_into_denials() -> None:
    toml = """
[policy]
allow = ["*"]
[policy.tools."fs__rm"]
risk = "high"
approval = "auto"
[policy.tools."fs__nuke"]
risk = "critical"
approval = "deny"
[policy.tools."fs__read"]
risk = "low"
approval = "ask"
"""
    p = policy(toml, tool("fs__rm"), tool("fs__nuke"), tool("fs__read"))
    assert run(p, "fs__rm").effect == "allow"
    d = run(p, "fs__nuke")
    assert (d.effect, d.rule_id) == ("deny", "approval:deny")
    assert not may_see(p, LOCAL, "fs__nuke")
    assert (run(p, "fs__read").effect, run(p, "fs__read").rule_id) == ("ask", "approval:ask")


def test_may_see_hides_denied_tools_and_shows_asking_ones() -> None:
    toml = '[policy]\nallow = ["fs__*"]\ndeny = ["fs__secret"]\n[policy.tools."fs__*"]\nrisk = "high"\n'
    p = policy(toml, tool("fs__read"), tool("fs__secret"), tool("db__x"))
    assert may_see(p, LOCAL, "fs__read")
    assert not may_see(p, LOCAL, "fs__secret")
    assert not may_see(p, LOCAL, "db__x")
    assert not may_see(p, LOCAL, "fs__ghost")


def test_governance_decision_matches_decide_for_valid_arguments() -> None:
    toml = '[policy]\nallow = ["fs__*"]\n[policy.tools."fs__*"]\nrisk = "medium"\n'
    p = policy(toml, tool("fs__read"))
    assert governance_decision(p, LOCAL, "fs__read") == run(p, "fs__read")


def test_resources_and_prompts_follow_globs_and_default() -> None:
    resource = replace(call("fs__file:///a"), kind="resource")
    prompt = replace(call("secrets__prompt"), kind="prompt")
    strict_default = policy('[policy]\ndeny = ["secrets__*"]\n', tool("fs__read"))
    assert decide(strict_default, resource, SessionState("s"), 0).effect == "deny"
    open_default = policy('[policy]\ndefault = "allow"\ndeny = ["secrets__*"]\n', tool("fs__read"))
    assert decide(open_default, resource, SessionState("s"), 0).effect == "allow"
    d = decide(open_default, prompt, SessionState("s"), 0)
    assert (d.effect, d.rule_id) == ("deny", "deny:secrets__*")


def test_resources_respect_the_server_security_level() -> None:
    p = policy(SERVERS + '[policy]\ndefault = "allow"\n', tool("fs__read"))
    resource = replace(call("db__file:///x", identity=DAVE), kind="resource", server="db")
    assert decide(p, resource, SessionState("s"), 0).rule_id == "identity.level:db"
    allowed = replace(resource, identity=BOB)
    assert decide(p, allowed, SessionState("s"), 0).effect == "allow"


def test_policy_digest_changes_with_the_policy_and_the_tools() -> None:
    a = policy('[policy]\nallow = ["fs__*"]\n', tool("fs__read"))
    b = policy('[policy]\nallow = ["fs__*", "x"]\n', tool("fs__read"))
    c = policy('[policy]\nallow = ["fs__*"]\n', tool("fs__read", {"type": "object", "required": ["p"]}))
    same = policy('[policy]\nallow = ["fs__*"]\n', tool("fs__read"))
    assert len({a.digest, b.digest, c.digest}) == 3
    assert a.digest == same.digest


_names = st.sampled_from(["fs__read", "fs__write", "db__query", "db__drop", "web__fetch"])
_globs = st.lists(st.sampled_from(["fs__*", "db__*", "*__read", "*__d*", "web__fetch", "*", "x__*"]), max_size=3)


@settings(max_examples=200, deadline=None)
@given(allow=_globs, deny=_globs, name=_names)
def test_deny_always_wins_and_nothing_is_allowed_without_a_rule(allow: list[str], deny: list[str], name: str) -> None:
    both = set(allow) & set(deny) - {g for g in allow if any(c in g for c in "*?[")}
    if both:
        return  # a config error, covered elsewhere
    toml = f"[policy]\nallow = {json.dumps(allow)}\ndeny = {json.dumps(deny)}\n" + '[policy.tools."*"]\nrisk = "low"\n'
    p = policy(toml, tool(name))
    d = run(p, name)
    if any(fnmatch.fnmatchcase(name, g) for g in deny):
        assert d.effect == "deny" and d.rule_id.startswith("deny:")
    elif any(fnmatch.fnmatchcase(name, g) for g in allow):
        assert d.effect == "allow"
    else:
        assert (d.effect, d.rule_id) == ("deny", "default:deny")
    assert may_see(p, LOCAL, name) is (d.effect != "deny")
