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


def _separated_reference(form: str, add: shell._Add) -> None:
    """`shell._separated_commands` before it skipped words no branch can report (kept verbatim)."""
    value_end = len(form.rstrip())
    for m in shell._SEPARATED_WORD.finditer(form):
        if "injection" in add.found:
            break
        separator, raw_word, after = m.group(1), m.group(2), m.group(3)
        if separator == "|" and shell._in_table_row(form, m.start()):
            continue
        if raw_word.lower().startswith(shell._BIN_DIRS):
            add("injection", f"separator followed by {raw_word!r}", form)
            break
        w = raw_word.lower().strip("\\")
        word = next((w[len(d) :] or w for d in shell._BIN_DIRS if w.startswith(d)), w)
        if word not in shell._CASE_INSENSITIVE and not raw_word.split("/")[-1].islower():
            continue
        if word.startswith("/") or word.startswith(("c:\\", "c:/")):
            if any(raw_word.lower().startswith(d) for d in shell._BIN_DIRS):
                add("injection", f"separator followed by {raw_word!r}", form)
            continue
        if word in shell._COMMANDS:
            add("injection", f"separator followed by the command {word!r}", form)
        elif word in shell._WORD_COMMANDS or word in shell._SUBCOMMANDS:
            rest = after.lstrip(" \t")
            spaced = after[:1] in (" ", "\t")
            end_of_value = m.end(2) == value_end
            argument = spaced and (
                rest.startswith(shell._ARGUMENT_START)
                or shell._DRIVE_ARG.match(rest) is not None
                or (word in shell._NUMERIC_ARG and rest[:1].isdigit())
                or rest.lower().startswith(shell._SUBCOMMANDS.get(word, ("\x00",)))
            )
            if end_of_value or argument or after[:1] in (";", "|", "&", "`", ")"):
                add("injection", f"separator followed by the command {word!r}", form)


_COMMAND_WORDS = sorted(shell._ANY_COMMAND | shell._CASE_INSENSITIVE)
_WORD = st.one_of(
    st.sampled_from(_COMMAND_WORDS),
    st.sampled_from(_COMMAND_WORDS).map(str.upper),
    st.sampled_from(_COMMAND_WORDS).map(str.title),
    st.tuples(st.sampled_from([*shell._BIN_DIRS, "/opt/", "C:\\Windows\\System32\\", "c:/", "\\", "./"]), st.sampled_from(_COMMAND_WORDS)).map("".join),
    st.from_regex(r"[A-Za-z0-9_./\\:-]{1,12}", fullmatch=True),
)
_PIECE = st.one_of(
    _WORD,
    st.sampled_from([";", "&", "&&", "|", "||", "\n", "\r", "$(", "`", "${", " ", "\t", " -rf", " /", " 5", " user", "| x |", "(", "{", ")"]),
    st.text(max_size=6),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECE, max_size=14).map("".join))
def test_separated_commands_skip_only_what_no_branch_reports(form: str) -> None:
    got, want = shell._Add("/x"), shell._Add("/x")
    shell._separated_commands(form, got)
    _separated_reference(form, want)
    assert got.found == want.found


def test_match_openings_are_what_a_match_starts_with() -> None:
    from checkrein._factors import match_openings, opens_with_assertion

    assert match_openings(re.compile(r"\b(?:or|and)\b ?\d")) == {"or", "or ", "and", "and "}
    assert match_openings(re.compile(r"\bunion ?select")) == {"union select", "unionselect"}
    assert match_openings(re.compile(r"\w+x")) is None  # nothing literal to start with
    assert match_openings(re.compile(r"(?:ab)?c")) == {"abc", "c"}
    assert match_openings(re.compile(r"(?:ab)?\w")) is None  # the run may be empty: the match may start anywhere
    assert match_openings(re.compile(r"(?i)select")) is None
    assert opens_with_assertion(re.compile(r"\bx")) and opens_with_assertion(re.compile(r"(?<![a-z])x"))
    assert not opens_with_assertion(re.compile(r"x\b")) and not opens_with_assertion(re.compile(r"(?:\bx|y)"))


def test_a_branch_after_a_boundary_is_tried_where_its_openings_start() -> None:
    gate = AnyMatch([re.compile(r"\b(?:or|and)\b ?\d ?= ?\d")], spaced=True)
    (starts,) = gate.starts[0]
    assert starts is not None and set(starts.stems) == {"or", "and"}
    probe = gate.search("name = 'x' or 1=1")
    assert probe(0) and not gate.search("for 1=1 more")(0)  # inside words: no boundary, as the regex says
