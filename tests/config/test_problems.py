"""A config that does not load: every problem reported, each naming its key and line, with a fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.cli.main import app
from checkrein.config import parse_config
from checkrein.config.lint import lint_text
from checkrein.config.problems import close_matches, did_you_mean
from checkrein.errors import ConfigError

TYPOS = """[[servers]]
name = "files"
comand = "python"
timeout = 5
transport = "stdoi"

[policy]
alow = ["files__read_*"]

[policy.tools."files__read"]
args = { path = { kidn = "path" } }
"""


def test_every_problem_is_reported_in_file_order_with_its_key_line_and_hint() -> None:
    """Regression: loaders reported the first error and "(and 1 more error(s))"."""
    with pytest.raises(ConfigError) as ei:
        parse_config(TYPOS, source="c.toml", environ={})
    got = [(p.line, p.key) for p in ei.value.each()]
    assert got == [
        (3, "servers[0].comand"),
        (4, "servers[0].timeout"),
        (5, "servers[0].transport"),
        (8, "policy.alow"),
        (11, "policy.tools.files__read.args.path.kidn"),
    ]
    message = str(ei.value)
    assert "more error" not in message and message.startswith("c.toml: 5 problems:")
    for hint in ("`command`", "`timeout_s`", "`stdio`", "`allow`", "`kind`"):
        assert f"did you mean {hint}?" in message
    assert ei.value.each()[0].fix == "Rename `comand` to `command`."


def test_an_unknown_key_without_a_close_match_lists_the_known_keys() -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config('[audit]\nzzzz = 1\n', source="c.toml", environ={})
    assert ei.value.key == "audit.zzzz" and ei.value.line == 2
    assert ei.value.fix is not None and "durability" in ei.value.fix and "signing_key" in ei.value.fix


def test_a_toml_syntax_error_shows_the_line() -> None:
    """Regression: lint said "fix the syntax at the line shown" and showed no line."""
    text = '[policy]\nallow = ["a"\ndeny = []\n'
    with pytest.raises(ConfigError) as ei:
        parse_config(text, source="c.toml")
    assert (ei.value.line, ei.value.key) == (2, "policy.allow")
    assert '  2 | allow = ["a"' in str(ei.value) and "  3 | deny = []" in str(ei.value)
    result = lint_text(text, path="anything.toml")
    (finding,) = result.findings
    assert finding.rule == "file.syntax" and finding.line == 2 and '2 | allow = ["a"' in finding.message
    assert finding.message.startswith("`policy.allow`: ") and "close the array with `]`" in finding.fix


def test_lint_reports_every_problem_naming_the_key() -> None:
    """Regression: lint said "Fix the key named in the message" and the message named no key."""
    result = lint_text(TYPOS, path="checkrein.toml", env={})
    invalid = [f for f in result.findings if f.rule == "checkrein.invalid"]
    assert [f.line for f in invalid] == [3, 4, 5, 8, 11]
    assert invalid[0].message.startswith("`servers[0].comand`: unknown key `comand`")
    assert invalid[0].fix == "Rename `comand` to `command`."
    assert invalid[2].fix == "Use one of: stdio, sse, streamable-http."


def test_a_bad_value_from_a_variable_says_so() -> None:
    with pytest.raises(ConfigError, match=r"written as '\$\{URL\}'"):
        parse_config('[[servers]]\nname = "w"\ntransport = "http"\nurl = "${URL}"\n', environ={"URL": "ftp://x"})


def test_the_cli_prints_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "checkrein.toml"
    path.write_text(TYPOS, encoding="utf-8")
    result = CliRunner().invoke(app, ["tools", "--config", str(path)])
    assert result.exit_code == 2
    assert result.stderr.count("did you mean") == 5


@pytest.mark.parametrize(
    "word, candidates, expected",
    [
        ("comand", ["name", "command", "args"], ["command"]),
        ("files__raed_file", ["files__read_file", "files__write_file", "files__delete_file"], ["files__read_file"]),
        ("ALLOW", ["allow", "deny"], ["allow"]),
        ("zzzz", ["allow", "deny"], []),
    ],
)
def test_close_matches(word: str, candidates: list[str], expected: list[str]) -> None:
    assert close_matches(word, candidates) == expected


def test_did_you_mean_is_empty_without_a_match() -> None:
    assert did_you_mean("zzzz", ["allow"]) == ""
    assert did_you_mean("alow", ["allow"]) == " (did you mean `allow`?)"
