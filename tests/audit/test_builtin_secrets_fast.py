"""The audit's built-in secret patterns, run only where they can match, against running them all.

`find_builtin_secrets` runs a pattern only when one of its fragments occurs and, in ASCII text,
tries it only where one of its starts begins. The reference below is the plain loop it replaced:
every pattern over the whole text whenever any fragment occurs.
"""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.audit import secrets as audit_secrets
from checkrein.audit.secrets import BuiltinSpan, builtin_may_match, find_builtin_secrets

# The fragments the plain loop was gated on (one of them is in every match of every pattern).
_OLD_FRAGMENTS = (
    "private key", "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "sk-", "k_live", "k_test", "aiza", "eyj", "bearer",
    "://", "pass", "pwd", "secret", "token", "key", "auth", "credential",
)  # fmt: skip


def _drawn(regex: re.Pattern[str]) -> st.SearchStrategy[str]:
    """Strings holding a match of ``regex``: in ASCII (the fast paths) and in any text."""
    return st.one_of(st.from_regex(regex, alphabet=st.characters(codec="ascii")), st.from_regex(regex))



def _reference(text: str) -> list[BuiltinSpan]:
    lowered = text.lower()
    if not any(f in lowered for f in _OLD_FRAGMENTS):
        return []
    spans = []
    for kind, rx, group in audit_secrets._COMPILED:
        for m in rx.finditer(text):
            start, end = m.span(group)
            if end > start:
                spans.append(BuiltinSpan(start, end, kind))
    spans.sort(key=lambda s: (s.start, -s.end))
    return spans


_PIECES = (
    "password", "PassWd", "pwd", "secret", "token", "api_key", "apikey", "access-key", "private_key", "client_secret",
    "auth", "credentials", "AWS", "aws_secret_access_key", "bearer ", "Bearer ", "https://", "://", "user:", "@host",
    "AKIA", "ASIA", "ghp_", "github_pat_", "glpat-", "xoxb-", "sk-", "sk_live_", "rk_test_", "AIza", "eyJ", ".eyJ",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "=", ": ", '"', "'", " ", "\n", "_", "-",
    "\u212a", "\u017f", "é",
)  # fmt: skip


@st.composite
def _texts(draw: st.DrawFn) -> str:
    pattern = draw(st.sampled_from(audit_secrets._COMPILED))[1]
    pieces = draw(
        st.lists(
            st.one_of(st.sampled_from(_PIECES), _drawn(pattern), st.text(string.ascii_letters + string.digits + "/+=._-", max_size=48)),
            max_size=10,
        )
    )
    return "".join(pieces)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(_texts(), st.text(max_size=80)))
def test_the_gated_patterns_find_what_every_pattern_finds(text: str) -> None:
    want = _reference(text)
    assert find_builtin_secrets(text) == want
    if want:
        assert builtin_may_match(text)


def test_every_pattern_has_fragments() -> None:
    assert {kind for kind, _, _ in audit_secrets._COMPILED} == set(audit_secrets._SHAPES)
    assert all(fragments and starts != () for starts, fragments in audit_secrets._SHAPES.values())


def test_a_secret_found_before_is_found_now() -> None:
    for text in (
        "password=hunter2hunter2", "Authorization: Bearer abcdefghijklmnop1234", "AKIAIOSFODNN7EXAMPLE",
        "postgres://admin:s3cretpw@db/x", "aws secret key: " + "A" * 20 + "b" * 20, "ToKen=abc123XYZ",
        "to\u212aen=abc123XYZ",  # the Kelvin sign: not ASCII, so every pattern runs, as before
    ):
        assert find_builtin_secrets(text) == _reference(text) != [], text


@pytest.mark.parametrize("index", [i for i, s in enumerate(audit_secrets._SEARCHES) if s[2] is not None], ids=lambda i: audit_secrets._SEARCHES[i][0])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_each_pattern_tried_at_its_starts_finds_what_it_finds(index: int, data: st.DataObject) -> None:
    """Every match in ASCII text starts with one of the pattern's starts, so `LiteralStarts` finds
    exactly the pattern's matches (drawn from the pattern itself, in context)."""
    kind, rx, starts, _ = audit_secrets._SEARCHES[index]
    assert starts is not None
    text = data.draw(st.lists(st.one_of(st.sampled_from(_PIECES), _drawn(rx)), max_size=6).map("".join))
    assert [m.span() for m in starts.finditer(text)] == [m.span() for m in rx.finditer(text)], kind
    if text.isascii():
        lowered = text.lower()
        assert all(lowered.startswith(starts.stems, m.start()) for m in rx.finditer(text)), kind
