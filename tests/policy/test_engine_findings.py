"""Analyzer findings inside decide: the ScanContext each tool gets, and findings -> deny / ask / off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from _policy_helpers import policy, run, tool

from checkrein.policy import Finding
from checkrein.policy.analyzers.api import ScanContext

BASE = '[policy]\nallow = ["t__*"]\n[policy.tools."t__*"]\nrisk = "low"\n'


class FakeScanner:
    """Reports one finding per string value equal to a key of ``bad`` (value -> (analyzer, kind))."""

    def __init__(self, bad: Mapping[str, tuple[str, str]]) -> None:
        self.bad = bad
        self.contexts: list[ScanContext] = []

    def __call__(self, arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]:
        self.contexts.append(ctx)
        return [
            Finding(self.bad[v][0], self.bad[v][1], f"/{k}", "bad value")
            for k, v in arguments.items()
            if isinstance(v, str) and v in self.bad and self.bad[v][0] in ctx.enabled
        ]


BAD = {"../../etc/passwd": ("paths", "traversal"), "AKIA...": ("secrets", "aws_key"), "x; rm": ("shell", "chaining")}


def test_findings_deny_by_default_and_name_analyzer_kind_and_pointer() -> None:
    p = policy(BASE, tool("t__read"), scanner=FakeScanner(BAD))
    d = run(p, "t__read", {"path": "../../etc/passwd"})
    assert (d.effect, d.rule_id, d.error_code) == ("deny", "finding:paths:traversal", "policy.finding")
    assert [(f.analyzer, f.kind, f.path) for f in d.findings] == [("paths", "traversal", "/path")]


def test_an_analyzer_configured_to_ask_asks() -> None:
    p = policy(BASE + '[policy.analyzers]\nshell = "ask"\n', tool("t__run"), scanner=FakeScanner(BAD))
    d = run(p, "t__run", {"cmd": "x; rm"})
    assert (d.effect, d.rule_id) == ("ask", "finding:shell:chaining")
    assert d.findings[0].analyzer == "shell"


def test_deny_beats_ask_when_both_are_found() -> None:
    p = policy(BASE + '[policy.analyzers]\nshell = "ask"\n', tool("t__run"), scanner=FakeScanner(BAD))
    d = run(p, "t__run", {"cmd": "x; rm", "path": "../../etc/passwd"})
    assert d.effect == "deny"
    assert {f.analyzer for f in d.findings} == {"shell", "paths"}


def test_off_analyzers_are_not_enabled_in_the_scan_context() -> None:
    scanner = FakeScanner(BAD)
    p = policy(BASE + '[policy.analyzers]\npaths = "off"\n', tool("t__read"), scanner=scanner)
    assert run(p, "t__read", {"path": "../../etc/passwd"}).effect == "allow"
    assert "paths" not in scanner.contexts[-1].enabled


def test_per_tool_findings_override_the_global_effect() -> None:
    toml = BASE + '[policy.analyzers]\nshell = "ask"\n[policy.tools."t__strict"]\nfindings = { shell = "deny" }\n'
    p = policy(toml, tool("t__strict"), tool("t__lax"), scanner=FakeScanner(BAD))
    assert run(p, "t__strict", {"c": "x; rm"}).effect == "deny"
    assert run(p, "t__lax", {"c": "x; rm"}).effect == "ask"


def test_all_analyzers_off_skips_the_scan() -> None:
    off = '[policy.analyzers]\npaths = "off"\nurls = "off"\nshell = "off"\nsql = "off"\nsecrets = "off"\n'
    scanner = FakeScanner(BAD)
    p = policy(BASE + off, tool("t__read"), scanner=scanner)
    assert run(p, "t__read", {"path": "../../etc/passwd"}).effect == "allow"
    assert scanner.contexts == []


def test_secret_findings_become_redactions_even_when_asked_or_off() -> None:
    p = policy(BASE + '[policy.analyzers]\nsecrets = "ask"\n', tool("t__post"), scanner=FakeScanner(BAD))
    d = run(p, "t__post", {"body": "AKIA..."})
    assert (d.effect, d.redactions) == ("ask", ("/body",))


def test_config_secret_kind_is_always_redacted() -> None:
    toml = BASE + '[policy.tools."t__login".args.password]\nkind = "secret"\n'
    p = policy(toml, tool("t__login"), scanner=FakeScanner({}))
    d = run(p, "t__login", {"password": "hunter2"})
    assert (d.effect, d.redactions) == ("allow", ("/password",))


def test_the_scan_context_carries_kinds_roots_hosts_and_commands() -> None:
    toml = """
[policy]
allow = ["t__*"]
path_roots = ["/srv"]
[policy.urls]
allowed_hosts = ["api.example.com"]
[policy.tools."t__*"]
risk = "low"
[policy.tools."t__run"]
commands = ["ls", "git"]
[policy.tools."t__run".args.cmd]
kind = "command"
[policy.tools."t__run".args."/opts/dir"]
kind = "path"
roots = ["data"]
"""
    scanner = FakeScanner({})
    p = policy(toml, tool("t__run"), scanner=scanner)
    run(p, "t__run", {"cmd": "ls"})
    ctx = scanner.contexts[-1]
    assert ctx.kinds["/cmd"] == "command"
    assert ctx.kinds["/opts/dir"] == "path"
    assert ctx.path_roots == ("/srv", "data")
    assert ctx.allowed_hosts == ("api.example.com",)
    assert ctx.commands == ("ls", "git")
    assert ctx.resolver is None  # decide never resolves names unless configured


def test_the_scan_context_is_built_once_per_tool() -> None:
    scanner = FakeScanner({})
    p = policy(BASE, tool("t__a"), scanner=scanner)
    run(p, "t__a", {"x": "1"})
    run(p, "t__a", {"x": "2"})
    assert scanner.contexts[0] is scanner.contexts[1]


def test_high_risk_with_a_clean_scan_still_asks() -> None:
    toml = '[policy]\nallow = ["t__*"]\n[policy.tools."t__*"]\nrisk = "high"\n'
    p = policy(toml, tool("t__a"), scanner=FakeScanner({}))
    assert run(p, "t__a", {"x": "1"}).rule_id == "risk:high"


def test_the_real_analyzers_are_wired_in_by_default() -> None:
    """Without an injected scanner, compile_policy uses checkrein.policy.analyzers.scan_arguments."""
    from checkrein.config import parse_config
    from checkrein.policy import compile_policy

    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    p = compile_policy(parse_config(BASE), dict([tool("t__read_file", schema)]))
    assert p.analyzers_missing is None
    assert p.plans["t__read_file"].scan is not None
    assert run(p, "t__read_file", {"path": "notes/today.txt"}).effect == "allow"
    d = run(p, "t__read_file", {"path": "../../../../etc/passwd"})
    assert (d.effect, d.error_code) == ("deny", "policy.finding")
    assert {f.analyzer for f in d.findings} == {"paths"}
    assert all(f.path == "/path" for f in d.findings)


def test_secret_kind_arguments_are_redacted_even_in_denials() -> None:
    toml = BASE + '[policy.tools."t__login".args.password]\nkind = "secret"\n[policy.tools."t__login".args.user]\npattern = "[a-z]+"\n'
    p = policy(toml, tool("t__login"), scanner=FakeScanner({}))
    d = run(p, "t__login", {"password": "hunter2", "user": "Robert'); DROP"})
    assert (d.effect, d.redactions) == ("deny", ("/password",))


def test_redactions_cover_secrets_found_alongside_a_denying_finding() -> None:
    p = policy(BASE + '[policy.analyzers]\nsecrets = "ask"\n', tool("t__post"), scanner=FakeScanner(BAD))
    d = run(p, "t__post", {"a": "../../etc/passwd", "z": "AKIA..."})
    assert d.effect == "deny"
    assert d.redactions == ("/z",)
    assert [f.analyzer for f in d.findings] == ["paths", "secrets"]


def test_decisions_say_when_the_secrets_analyzer_read_every_value() -> None:
    """`secrets_scanned` (the audit then trusts the redactions instead of rescanning): after the
    scan, whatever the effect; never when the scan did not run or did not read everything."""
    scanned = policy(BASE + '[policy.analyzers]\nshell = "ask"\n', tool("t__run"), scanner=FakeScanner(BAD))
    assert run(scanned, "t__run", {"cmd": "ls"}).secrets_scanned
    assert run(scanned, "t__run", {"cmd": "x; rm"}).secrets_scanned  # ask
    denied = run(scanned, "t__run", {"cmd": "../../etc/passwd"})
    assert denied.effect == "deny" and denied.secrets_scanned
    assert not run(scanned, "t__nope", {"cmd": "ls"}).secrets_scanned  # never scanned: unknown tool

    off = policy(BASE + '[policy.analyzers]\nsecrets = "off"\n', tool("t__run"), scanner=FakeScanner(BAD))
    assert off.plans["t__run"].scan is not None and run(off, "t__run", {"cmd": "ls"}).secrets_scanned is False

    secret_kind = policy(BASE + '[policy.tools."t__login".args.password]\nkind = "secret"\n', tool("t__login"),
                         scanner=FakeScanner({}))
    assert not run(secret_kind, "t__login", {"password": "hunter2"}).secrets_scanned  # a value it skips

    class Bounded(FakeScanner):
        def __call__(self, arguments: Mapping[str, Any], ctx: ScanContext) -> list[Finding]:
            return [Finding("scan", "too_many_strings", "/x", "argument scan stopped")]

    stopped = run(policy(BASE, tool("t__run"), scanner=Bounded({})), "t__run", {"cmd": "ls"})
    assert stopped.effect == "deny" and not stopped.secrets_scanned


def test_decision_fields_are_the_ones_the_engine_spells_out() -> None:
    """`engine._decide` builds the allow-with-findings `Decision` field by field (cheaper than
    `dataclasses.replace`): a new field must be added there too, or it would be dropped."""
    from dataclasses import fields

    from checkrein.policy import Decision

    assert [f.name for f in fields(Decision)] == [
        "effect", "rule_id", "reasons", "risk", "findings", "redactions", "error_code", "degraded", "secrets_scanned",
    ]  # fmt: skip
