"""Escaping: every character that could start markup or an attribute, and invisible characters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from checkrein.ui.html import attr, esc, pretty_json, url


@given(st.text())
def test_escaped_text_holds_no_markup(text: str) -> None:
    """Whatever the input, the output has no raw <, >, quotes, and no invisible characters."""
    for out in (esc(text), attr(text)):
        stripped = out.replace('<span class="ctl">', "").replace("</span>", "")
        assert not set(stripped) & set("<>\"'"), out
        assert "\u202e" not in out and "\x00" not in out


def test_invisible_characters_become_visible_marks() -> None:
    """Bidi overrides, zero-width and control characters are shown by code point."""
    assert esc("a\u202eb") == 'a<span class="ctl">&lt;U+202E&gt;</span>b'
    assert esc("x\u200by\x07") == 'x<span class="ctl">&lt;U+200B&gt;</span>y<span class="ctl">&lt;U+0007&gt;</span>'
    assert attr("a\u202eb") == "a&lt;U+202E&gt;b"
    assert esc("tab\tand\nnewline") == "tab\tand\nnewline"  # layout characters are kept


def test_urls_quote_paths_and_parameters() -> None:
    """Parameters are URL-encoded, then the whole URL attribute-escaped; empty ones are dropped."""
    u = url("/ui", "/", {"tool": 'a"b&c<d>', "server": "", "n": 3})
    assert u == "/ui/?tool=a%22b%26c%3Cd%3E&amp;n=3"
    assert url("", "/event/5") == "/event/5"


def test_pretty_json_is_escaped_text() -> None:
    """A JSON value with markup inside is indented text, escaped."""
    assert pretty_json({"k": "<b>"}) == '{\n  &quot;k&quot;: &quot;&lt;b&gt;&quot;\n}'
