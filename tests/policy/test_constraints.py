"""Per-argument constraints from [policy.tools."<tool>".args]."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from _policy_helpers import ANALYZERS_OFF, policy, run, tool

from checkrein.config import parse_config
from checkrein.errors import ConfigError

BASE = '[policy]\nallow = ["t__*"]\n[policy.tools."t__x"]\nrisk = "low"\n'


def _decide(args_toml: str, arguments: dict[str, Any]) -> tuple[str, str]:
    p = policy(BASE + args_toml + ANALYZERS_OFF, tool("t__x"))
    d = run(p, "t__x", arguments)
    return d.effect, d.rule_id


def test_enum_is_strict_about_booleans() -> None:
    args = '[policy.tools."t__x".args.mode]\nenum = [1, "fast"]\n'
    assert _decide(args, {"mode": 1})[0] == "allow"
    assert _decide(args, {"mode": "fast"})[0] == "allow"
    assert _decide(args, {"mode": True}) == ("deny", "arguments.constraint:/mode")
    assert _decide(args, {"mode": "slow"})[0] == "deny"


def test_numeric_range_needs_a_real_number() -> None:
    args = '[policy.tools."t__x".args.n]\nminimum = 1\nmaximum = 10\n'
    assert _decide(args, {"n": 5})[0] == "allow"
    assert _decide(args, {"n": 0})[0] == "deny"
    assert _decide(args, {"n": 11})[0] == "deny"
    assert _decide(args, {"n": True})[0] == "deny"
    assert _decide(args, {"n": "5"})[0] == "deny"


def test_max_length_counts_characters_and_items() -> None:
    args = '[policy.tools."t__x".args.s]\nmax_length = 3\n'
    assert _decide(args, {"s": "abc"})[0] == "allow"
    assert _decide(args, {"s": "abcd"})[0] == "deny"
    assert _decide(args, {"s": [1, 2, 3, 4]})[0] == "deny"


def test_pattern_must_match_the_whole_string() -> None:
    args = '[policy.tools."t__x".args.id]\npattern = "[a-z]+"\n'
    assert _decide(args, {"id": "abc"})[0] == "allow"
    assert _decide(args, {"id": "abc; rm -rf /"})[0] == "deny"
    assert _decide(args, {"id": 5})[0] == "deny"


def test_pattern_input_is_bounded() -> None:
    args = '[policy.tools."t__x".args.id]\npattern = "a+"\n'
    assert _decide(args, {"id": "a" * 4096})[0] == "allow"
    assert _decide(args, {"id": "a" * 4097})[0] == "deny"


def test_missing_arguments_are_left_to_the_schema() -> None:
    assert _decide('[policy.tools."t__x".args.id]\npattern = "a+"\n', {})[0] == "allow"


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("data/report.txt", True),
        ("./data/sub/../x", True),
        ("data", True),
        ("data/../etc/passwd", False),
        ("../data/x", False),
        ("/etc/passwd", False),
        ("~/secrets", False),
        ("data/x\x00.txt", False),
        ("data\\..\\..\\x", False),
        ("database/x", False),
    ],
)
def test_relative_roots_contain_paths_after_normalization(path: str, ok: bool) -> None:
    args = '[policy.tools."t__x".args.path]\nroots = ["data"]\n'
    assert (_decide(args, {"path": path})[0] == "allow") is ok


@pytest.mark.parametrize(("path", "ok"), [("/srv/app/a", True), ("/srv/app/../b", False), ("/srv/application", False), ("app/a", False)])
def test_absolute_roots(path: str, ok: bool) -> None:
    args = '[policy.tools."t__x".args.path]\nroots = ["/srv/app"]\n'
    assert (_decide(args, {"path": path})[0] == "allow") is ok


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://api.example.com/v1", True),
        ("http://docs.example.org/x", True),
        ("https://example.org/x", False),  # the wildcard does not cover the bare domain
        ("https://evil.com/api.example.com", False),
        ("https://api.example.com.evil.com/", False),
        ("https://user:pw@api.example.com/", False),
        ("ftp://api.example.com/", False),
        ("file:///etc/passwd", False),
        ("https://API.EXAMPLE.COM/", True),  # host names are case-insensitive
        ("https://api\u3002example\u3002com/", True),  # ideographic dots: a client maps them to `.`
        ("https://evil.com\\.api.example.com/", False),  # WHATWG: the backslash ends the host (evil.com)
        ("https://api.example.com\t@evil.com/", False),  # TAB deleted: userinfo, then the real host
        ("https://evil.com\\@api.example.com/", False),
    ],
)
def test_hosts_allow_exact_and_wildcard_hosts_only(url: str, ok: bool) -> None:
    args = '[policy.tools."t__x".args.url]\nhosts = ["api.example.com", "*.example.org"]\n'
    assert (_decide(args, {"url": url})[0] == "allow") is ok


def test_pointer_keys_reach_nested_values() -> None:
    args = '[policy.tools."t__x".args."/opts/0/level"]\nmaximum = 3\n'
    assert _decide(args, {"opts": [{"level": 2}]})[0] == "allow"
    assert _decide(args, {"opts": [{"level": 9}]}) == ("deny", "arguments.constraint:/opts/0/level")


def test_read_only_sql_uses_the_sql_classifier() -> None:
    p = policy(BASE + '[policy.tools."t__x".args.q]\nread_only_sql = true\n' + ANALYZERS_OFF, tool("t__x"))
    fake = replace(p, classify_sql=lambda text: "read" if text.lower().startswith("select") else "write")
    assert run(fake, "t__x", {"q": "SELECT 1"}).effect == "allow"
    d = run(fake, "t__x", {"q": "DELETE FROM t"})
    assert (d.effect, d.reasons) == ("deny", ("argument /q is not read-only SQL (classified write: modifies data)",))


def test_read_only_sql_without_a_classifier_fails_closed() -> None:
    p = policy(BASE + '[policy.tools."t__x".args.q]\nread_only_sql = true\n' + ANALYZERS_OFF, tool("t__x"))
    d = run(replace(p, classify_sql=None), "t__x", {"q": "SELECT 1"})
    assert (d.effect, d.error_code) == ("deny", "policy.error")


@pytest.mark.parametrize(
    "toml",
    [
        '[policy.tools."t".args.a]\npattern = "("\n',
        '[policy.tools."t".args.a]\nminimum = 5\nmaximum = 1\n',
        '[policy.tools."t".args.a]\nroots = []\n',
        '[policy.tools."t".args.a]\nhosts = ["http://x"]\n',
        '[policy.tools."t".args."a/b"]\nmax_length = 1\n',
        '[policy.tools."t"]\nread_only = true\ncategory = "delete"\n',
        '[policy.tools."t"]\nrisk = "extreme"\n',
        '[policy.tools."t".findings]\nmagic = "deny"\n',
        '[policy]\nallow = ["a__b"]\ndeny = ["a__b"]\n',
        '[[budgets.limits]]\nscope = "tool"\n',
        '[[budgets.limits]]\nscope = "tool"\nburst = 3\nmax_calls_per_session = 1\n',
    ],
    ids=["bad-pattern", "min>max", "empty-roots", "host-url", "pointer-without-slash", "read-only-delete",
         "unknown-risk", "unknown-analyzer", "allowed-and-denied", "limit-without-limits", "burst-without-rate"],
)
def test_contradictory_or_invalid_policy_files_are_config_errors(toml: str) -> None:
    with pytest.raises(ConfigError):
        parse_config(toml)
