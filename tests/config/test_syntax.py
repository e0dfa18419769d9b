"""TOML syntax errors: the line the mistake starts on, the key written there, the lines shown, a fix."""

from __future__ import annotations

import tomllib

import pytest

from checkrein.config import parse_config
from checkrein.config._syntax import SyntaxProblem, syntax_problem
from checkrein.config.lint import lint_text
from checkrein.errors import ConfigError


def _problem(text: str) -> SyntaxProblem:
    with pytest.raises(tomllib.TOMLDecodeError) as ei:
        tomllib.loads(text)
    return syntax_problem(text, ei.value)


def test_an_array_left_open_is_found_where_it_starts_not_where_parsing_stopped() -> None:
    """tomllib notices an unclosed array at the next table header; the mistake is lines above."""
    text = '[[servers]]\nname = "x"\ncommand = "y"\n[policy]\nallow = [\n  "a",\n  "b"\n\n[audit]\ndir = "d"\n'
    found = _problem(text)
    assert (found.line, found.key) == (5, "policy.allow")
    assert "starts at line 5 and is still open at line 9" in found.message
    assert "  5 | allow = [" in found.message and "  9 | [audit]" in found.message
    assert found.fix == "In `policy.allow`, close the array with `]`, or put a `,` between two of its items."


def test_a_value_open_at_the_end_of_the_file_shows_the_line_it_starts_on() -> None:
    """Regression: "Unclosed array (at end of document)" came with no line at all."""
    found = _problem('[policy]\nallow = ["a"\n')
    assert (found.line, found.key) == (2, "policy.allow")
    assert "still open at the end of the file" in found.message
    assert '  2 | allow = ["a"' in found.message and "(end of file)" in found.message


@pytest.mark.parametrize(
    ("text", "line", "key", "fix_says"),
    [
        ('[policy]\ndefault = "deny\n', 2, "policy.default", 'close the string with `"`'),
        ('[gateway]\nname = "x"\n[policy]\ndeny = ["a" "b"]\n', 4, "policy.deny", "a `,` between"),
        ('[[servers]]\nname = "s"\nenv = { A = "1" B = "2" }\n', 3, "servers.env", "close the inline table"),
        ('[audit]\ndir = audit\n', 2, "audit.dir", "strings in quotes"),
        ('[policy]\nallow = []\nallow = []\n', 3, "policy.allow", "each key once"),
        ('top = 1\n[policy]\nallowed tools = []\n', 3, None, "`key = value`"),
        ('x.y = 1\nx.y = 2\n', 2, "x.y", "each key once"),
    ],
)
def test_each_kind_of_mistake_gets_its_line_key_and_fix(text: str, line: int, key: str | None, fix_says: str) -> None:
    """Unclosed strings, arrays and inline tables, bare strings, repeated keys, bad statements."""
    found = _problem(text)
    assert (found.line, found.key) == (line, key)
    assert fix_says in found.fix
    assert f"  {line} | " in found.message and "^" in found.message


def test_the_loader_and_lint_say_the_same() -> None:
    """`serve` (through the loader) and `lint` name the same line and key, and give the fix."""
    text = '[policy]\ndefault = "deny"\nallow = [\n  "echo__*",\n[audit]\n'
    with pytest.raises(ConfigError) as ei:
        parse_config(text, source="c.toml")
    assert (ei.value.line, ei.value.key) == (3, "policy.allow")
    assert str(ei.value).startswith("c.toml:3, key 'policy.allow': malformed TOML: ")
    assert ei.value.fix is not None and "close the array" in ei.value.fix
    (finding,) = lint_text(text, path="checkrein.toml").findings
    assert (finding.rule, finding.line, finding.fix) == ("file.syntax", 3, ei.value.fix)


def test_a_multi_line_string_left_open_says_which_quotes_close_it() -> None:
    found = _problem('[gateway]\nname = """checkrein\n[audit]\ndir = "d"\n')
    assert (found.line, found.key) == (2, "gateway.name")
    assert found.fix == 'In `gateway.name`, close the multi-line string with `"""`.'
