"""The SQL and shell analyzers' gated searches against their regexes.

`AnyMatch` answers "does this regex match somewhere" branch by branch, behind each branch's
literal factors; `LiteralStarts` tries a regex only where one of its openings occurs. Both must
answer exactly as the plain regex does. Texts are drawn from each regex itself, in context, with
whitespace respaced (for the SQL fragments, after `normalize_sql`, which is what they read).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein._trie import LiteralStarts
from checkrein.policy.analyzers import shell, sql, stores, urls
from checkrein.policy.analyzers.gated import AnyMatch, top_branches

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
_CONTEXT = st.sampled_from(["", " ", "\n", "\t", "x", "'", '"', "(", ")", ";", "=", "-- ", "or ", "AND ", "select ", "_", "1", "é", "\u212a"])


def _drawn(regex: re.Pattern[str]) -> st.SearchStrategy[str]:
    """Strings holding a match of ``regex``: in ASCII (the fast paths) and in any text."""
    return st.one_of(st.from_regex(regex, alphabet=st.characters(codec="ascii")), st.from_regex(regex))



def _in_context(core: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(_CONTEXT, core), max_size=8).map("".join)


@pytest.mark.parametrize("index", range(len(sql._FRAGMENTS)), ids=[f"{i}-{k}" for i, (k, _, _) in enumerate(sql._FRAGMENTS)])
@_SETTINGS
@given(data=st.data())
def test_sql_fragment_gate_is_the_regex(index: int, data: st.DataObject) -> None:
    pattern = sql._FRAGMENTS[index][2]
    norm = sql.normalize_sql(data.draw(st.one_of(_in_context(_drawn(pattern)), st.text(max_size=40))))
    assert sql._FRAGMENT_GATE.search(norm)(index) == (pattern.search(norm) is not None)


@pytest.mark.parametrize(("name", "starts"), [("code_call", shell._CODE_CALL_STARTS), ("code_markers", shell._CODE_MARKER_STARTS)])
@_SETTINGS
@given(data=st.data())
def test_shell_literal_starts_are_the_regex(name: str, starts: LiteralStarts, data: st.DataObject) -> None:
    text = data.draw(st.one_of(_in_context(_drawn(starts.regex)), st.text(max_size=40)))
    got = starts.searcher(text)(0)
    want = starts.regex.search(text)
    assert (got.span() if got else None) == (want.span() if want else None), name


@_SETTINGS
@given(st.one_of(_in_context(_drawn(shell._EXEC_ASSIGNMENT)), st.text(max_size=40)))
def test_exec_assignment_gate_is_the_regex(text: str) -> None:
    assert shell._EXEC_GATE.search(text)(0) == (shell._EXEC_ASSIGNMENT.search(text) is not None)


def test_branches_rejoin_to_the_pattern() -> None:
    for rx in [p for _, _, p in sql._FRAGMENTS] + [shell._CODE_CALL, shell._CODE_MARKERS, shell._EXEC_ASSIGNMENT]:
        assert "|".join(top_branches(rx.pattern)) == rx.pattern
    assert top_branches(r"a|(b|c)|[|]|\||[]|]x") == ["a", "(b|c)", "[|]", r"\|", "[]|]x"]


def test_a_factor_with_a_space_is_not_trusted_on_raw_text() -> None:
    """`required_factors` reads a whitespace run as one space: on text that can hold `\\n` or two
    spaces such a factor could be absent where the branch matches, so the branch always runs."""
    gate = AnyMatch([re.compile(r"union\s+select")])
    assert gate.search("UNION\n\nselect".lower())(0)
    assert not gate.search("union")(0)


@_SETTINGS
@given(st.one_of(_in_context(_drawn(stores._HOME_PATH)), _in_context(_drawn(stores._HOME_PATH_SPACED)), st.text(max_size=40)))
def test_home_path_gate_never_hides_a_home_path(text: str) -> None:
    want = [m.group(0).rstrip(".:!? ") for rx in (stores._HOME_PATH, stores._HOME_PATH_SPACED) for m in rx.finditer(text)]
    assert set(stores.home_paths(text)) == set(want) or len(want) > stores._MAX_PATHS


@_SETTINGS
@given(st.one_of(_in_context(st.sampled_from(["a@b", "user@host", "http://u:p@h/"])), st.text(max_size=40)))
def test_url_whatwg_gate_skips_only_what_cannot_change(text: str) -> None:
    for strict in (True, False):
        pattern = urls._TAB_NEWLINE_INSIDE if strict else urls._TAB_NEWLINE_AT
        want = [text] + ([j] if (j := pattern.sub("", text)) != text else [])
        assert urls._whatwg_forms([text], strict) == want


@pytest.mark.parametrize(
    "text",
    [
        "see ~/.ssh/id_rsa", "$HOME/.aws/credentials", "${HOME}/x/y", "%USERPROFILE%\\a\\b", "%HOMEPATH%/a", "%APPDATA%/x/y",
        "%LOCALAPPDATA%/x", "/home/bob/.netrc", "/Users/alice/Library/Keychains", "/root/.bash_history", "/var/root/x",
        "C:\\Users\\bob\\.ssh\\id_rsa", "d:/Documents and Settings/bob/x", "cat .kube/config", ".password-store/x", ".terraform.d/x",
    ],
)
def test_home_path_gate_admits_every_branch(text: str) -> None:
    assert stores.home_paths(text), text
