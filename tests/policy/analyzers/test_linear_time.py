"""Hostile inputs of 1 MB finish: every analyzer is linear by construction (bounded quantifiers,
anchored regex steps, per-value caps). No timing assertion; pytest's timeout is the backstop."""

from __future__ import annotations

import pytest

from checkrein.config.policy import ArgKind
from checkrein.policy.analyzers import ScanContext, classify_sql, find_secrets, redact_secrets, scan_arguments
from checkrein.policy.analyzers.decode import decoded_forms
from checkrein.policy.analyzers.scan import MAX_SCAN_CHARS

MB = 1_000_000

# (hostile value, the argument kind whose analyzer it stresses most)
ADVERSARIAL: dict[str, tuple[str, ArgKind]] = {
    "dot_segments": ("../" * (MB // 3), "path"),
    "percent_signs": ("%" * MB, "path"),
    "double_encoding": ("%25" * (MB // 3), "url"),
    "overlong": ("%c0%ae/" * (MB // 7), "path"),
    "quotes_and_or": ("' or " * (MB // 5), "query"),
    "substitutions": ("$(" * (MB // 2), "command"),
    "separators": ("; id " * (MB // 5), "command"),
    "url_dots": ("http://" + "a." * (MB // 2), "url"),
    "at_signs": ("http://" + "@" * MB, "url"),
    "assignments": ("password=" * (MB // 9), "query"),
    "backslashes": ("\\" * MB, "command"),
    "entities": ("&#" * (MB // 2), "path"),
    "fullwidth": ("\uff0e" * MB, "path"),
    "spaced_boolean": ("1 or" + " " * MB + "x(", "path"),  # `sql.may_find` once backtracked quadratically here
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
@pytest.mark.parametrize("typed", [False, True])
def test_one_megabyte_hostile_value_completes_and_reports_truncation(name: str, typed: bool) -> None:
    value, kind = ADVERSARIAL[name]
    findings = scan_arguments({"v": value}, ScanContext(kinds={"/v": kind} if typed else {}))
    assert any(f.analyzer == "scan" and f.kind == "value_too_long" for f in findings)


@pytest.mark.parametrize(
    "text",
    [
        "password=" * (MB // 9),
        "-----BEGIN PRIVATE KEY-----" * (MB // 27),
        "eyJ" + "a" * MB,
        ("eyJ" + "a" * 20 + ".") * (MB // 24),
        "authorization: " * (MB // 15),
        "aaa1Q~" * (MB // 6),
        '"aaaaaa" == ' * (MB // 12),
    ],
)
def test_secret_scan_of_one_megabyte_completes(text: str) -> None:
    find_secrets(text)
    redact_secrets(text[: MB // 4])


@pytest.mark.parametrize("sql", ["(" * 60_000, "SELECT " + "(" * 60_000, "SELECT 1 WHERE " + "1=1 OR " * 8_000 + "1=1", "' OR '" * 100_000])
def test_sql_classification_of_hostile_statements_completes(sql: str) -> None:
    assert classify_sql(sql) in ("read", "write", "ddl", "unknown")


def test_decoding_output_stays_bounded() -> None:
    forms = decoded_forms("\ufdfa" * MAX_SCAN_CHARS)  # NFKC expands this character 18-fold
    assert all(len(f) <= MAX_SCAN_CHARS for f in forms)
