"""The secrets analyzer's fast scans against the regexes they stand for.

Each fast scan (`LiteralStarts`, `_Rule.finditer`, `_base64_runs`, the hex and join gates, the
spoken-password gate) claims to find exactly what its regex finds, or (a gate) never to say no
where the regex matches. Texts are drawn from each regex itself, set in context of words, quotes,
joiners, word characters on either side and random case, so matches are common and their edges are
tested; and from arbitrary text.
"""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein._trie import LiteralStarts
from checkrein.policy.analyzers import find_secrets, secret_forms, secrets

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

_WORDS = (
    "password", "passwd", "passphrase", "pwd", "pass", "secret", "token", "api", "apikey", "api_key", "access",
    "auth", "private", "client", "credential", "session", "cookie", "key", "pw", "Key", "Token", "Secret", "PIN",
    "pin", "mot de passe", "kata sandi", "is", "equals", "is now", "lautet", "hvs.", "s.", "sk-", "sk_live_",
    "AKIA", "ghp_", "eyJ", "MTk4", "=", ":", " = ", ": ", '"', "'", "`", " + ", ".", "..", "||", "&", "_", "-",
    "\n", "\t", " ", "x", "A1b2C3d4E5", "0x", "deadbeef", "==", "!=", "===",
)  # fmt: skip


def _drawn(regex: re.Pattern[str]) -> st.SearchStrategy[str]:
    """Strings holding a match of ``regex``: in ASCII (the fast paths) and in any text."""
    return st.one_of(st.from_regex(regex, alphabet=st.characters(codec="ascii")), st.from_regex(regex))



def _flip(draw: st.DrawFn, s: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s)))
    return "".join(c.swapcase() if f else c for c, f in zip(s, flips, strict=True))


@st.composite
def _context(draw: st.DrawFn, core: st.SearchStrategy[str]) -> str:
    """Words, joiners and case flips around zero or more strings from ``core``."""
    pieces = draw(st.lists(st.one_of(st.sampled_from(_WORDS), core, st.text(string.ascii_letters + string.digits + "_-+/=.:", max_size=24)), max_size=12))
    text = "".join(pieces)
    return _flip(draw, text) if draw(st.booleans()) else text


def _spans(matches: object) -> list[tuple[int, int]]:
    return [m.span() for m in matches]  # type: ignore[attr-defined]


def _literal_cases() -> list[tuple[str, LiteralStarts]]:
    return [("keywords", secrets._KEYWORD_STARTS), ("spoken", secrets._SPOKEN_STARTS)]


@pytest.mark.parametrize(("name", "starts"), _literal_cases(), ids=[n for n, _ in _literal_cases()])
@_SETTINGS
@given(data=st.data())
def test_literal_starts_finds_what_the_regex_finds(name: str, starts: LiteralStarts, data: st.DataObject) -> None:
    text = data.draw(st.one_of(_context(_drawn(starts.regex)), st.text(max_size=80)))
    assert _spans(starts.finditer(text)) == _spans(starts.regex.finditer(text)), name
    pos = data.draw(st.integers(0, len(text)))
    got, want = starts.searcher(text)(pos), starts.regex.search(text, pos)
    assert (got.span() if got else None) == (want.span() if want else None)


@pytest.mark.parametrize(("name", "starts"), _literal_cases(), ids=[n for n, _ in _literal_cases()])
@_SETTINGS
@given(data=st.data())
def test_every_match_in_ascii_text_starts_at_a_stem(name: str, starts: LiteralStarts, data: st.DataObject) -> None:
    """The condition `LiteralStarts` relies on, asked of matches drawn from the regex itself."""
    text = data.draw(_context(_drawn(starts.regex)).filter(str.isascii))
    lowered = text.lower()
    for m in starts.regex.finditer(text):
        assert lowered.startswith(starts.stems, m.start()), (name, m.group(0))


def test_literal_starts_search_is_no_worse_than_the_regex_on_unicode() -> None:
    """Text that is not ASCII goes to the regex: `(?i)` matches `K` (Kelvin sign) to `k`."""
    text = "api_\u212aey=Zq8Lm2Xv7Bn4Wc1R9Tg5"
    assert _spans(secrets._KEYWORD_STARTS.finditer(text)) == _spans(secrets._KEYWORDS.finditer(text)) != []


_CORE_RULES = [r for r in secrets._RULES if r.core is not None]


@pytest.mark.parametrize("index", range(len(_CORE_RULES)), ids=[f"{i}-{r.kind}" for i, r in enumerate(_CORE_RULES)])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(data=st.data())
def test_a_rule_searched_by_its_core_finds_what_its_pattern_finds(index: int, data: st.DataObject) -> None:
    rule = _CORE_RULES[index]
    assert rule.core is not None
    text = data.draw(_context(_drawn(rule.core)))
    assert _spans(rule.finditer(text)) == _spans(rule.pattern.finditer(text))


def test_every_rule_that_opens_with_the_boundary_has_a_core() -> None:
    for rule in secrets._RULES:
        assert (rule.core is not None) == rule.pattern.pattern.startswith(secrets._B), rule.kind


_B64ISH = st.text("ABCDEFabcdef0123456789+/_-=", min_size=15, max_size=40)


@_SETTINGS
@given(_context(_B64ISH))
def test_base64_runs_are_the_regex_matches(text: str) -> None:
    assert _spans(secret_forms._base64_runs(text)) == _spans(secret_forms._BASE64_RUN.finditer(text))


@_SETTINGS
@given(st.text(max_size=60))
def test_base64_runs_on_any_text(text: str) -> None:
    assert _spans(secret_forms._base64_runs(text)) == _spans(secret_forms._BASE64_RUN.finditer(text))


def test_base64_runs_past_the_regex_bound() -> None:
    run = "A" * 5000
    for text in (run, f"x {run} y", f"{'B' * 30} {run}", f"{'C' * 25}== {'D' * 19}", "é" + "E" * 30):
        assert _spans(secret_forms._base64_runs(text)) == _spans(secret_forms._BASE64_RUN.finditer(text))


@_SETTINGS
@given(st.one_of(_context(st.text("0123456789abcdefABCDEFx", min_size=20, max_size=60)), st.text(max_size=60)))
def test_hex_gate_never_hides_a_hex_run(text: str) -> None:
    if secret_forms._HEX_RUN.search(text) is not None:
        assert secret_forms._may_hold_hex_run(text)
    assert secret_forms._may_hold_hex_run(text) == (secret_forms._HEX_DIGITS_24.search(text) is not None)


@_SETTINGS
@given(st.one_of(_context(_drawn(secret_forms._JOIN)), st.text(max_size=60)))
def test_join_gate_never_hides_a_join(text: str) -> None:
    if secret_forms._JOIN.search(text) is not None:
        assert secret_forms._may_join(text)


@_SETTINGS
@given(st.one_of(_context(_drawn(secrets._SPOKEN_PASSWORD)), st.text(max_size=60)))
def test_spoken_password_gate_never_hides_a_spoken_password(text: str) -> None:
    if secrets._SPOKEN_PASSWORD.search(text) is not None:
        assert secrets._may_speak_password(text, text.lower())


@_SETTINGS
@given(st.one_of(_context(_drawn(secrets._COMPARISON)), st.text(max_size=60)))
def test_comparison_gate_never_hides_a_comparison(text: str) -> None:
    assert (secrets._comparison_spans(text) != []) == any(
        not secrets.is_placeholder(m.group(2)) for m in secrets._COMPARISON.finditer(text)
    )


@pytest.mark.parametrize(
    "text",
    [
        "password = 'Tr0ub4dor&3x'",
        "the password is Hunter2!x",
        "api_key: 8f3kQ9zLm2Xv7Bn4Wc1R",
        'if ("s3cr3t-Val!" == user_password) {}',
        "Mot de passe : Zq8!Lm2Xv7",
        "x" * 5000 + " token=Zq8Lm2Xv7Bn4Wc1R9Tg5",
    ],
)
def test_the_fast_scans_still_find_the_classics(text: str) -> None:
    assert find_secrets(text), text


def test_texts_without_ascii_take_the_regexes() -> None:
    assert [sp.kind for sp in find_secrets("пароль: Zq8!Lm2Xv7 und das Passwort ist Hunter2!x")] == ["password", "password"]
