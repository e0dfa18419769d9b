"""Normalization and the parts of an argument that provenance traces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.flow import candidates, normalize


def norms(args: object, min_chars: int = 6) -> set[str]:
    return {n for _, _, n in candidates(args, min_chars)}


def test_normalized_values_match_across_case_punctuation_and_spacing() -> None:
    assert normalize("US13 3000-0001") in normalize("pay us13.3000.0001 today")
    assert normalize("Mark.Black-2134@Gmail.com") in normalize("write to mark.black-2134@gmail.com now")


def test_matches_respect_word_boundaries() -> None:
    assert normalize("2013") not in normalize("in 120134 cases")
    assert normalize("view hotel") not in normalize("overview hotels")


def test_fullwidth_and_compatibility_forms_fold() -> None:
    assert normalize("ＥＶＩＬ.com") == normalize("evil.com")


def test_atoms_inside_prose_are_traced() -> None:
    found = norms({"body": "Hi! Please see https://evil.example/x?a=1 and mail bob@corp.io soon."})
    assert normalize("https://evil.example/x?a=1") in found
    assert normalize("bob@corp.io") in found


def test_iban_and_long_numbers_are_traced_short_ones_are_not() -> None:
    found = norms({"recipient": "GB29NWBK60161331926819", "amount": 100, "account": 1234567})
    assert normalize("GB29NWBK60161331926819") in found
    assert normalize("1234567") in found
    assert all("100" != n.strip() for n in found)


def test_lone_common_word_is_not_traced_but_a_name_is() -> None:
    assert norms({"title": "meeting"}) == set()
    assert normalize("Riverside View Hotel") in norms({"hotel": "Riverside View Hotel"})


def test_pointers_name_the_argument() -> None:
    found = {(p, shown) for p, shown, _ in candidates({"to": ["a@b.example", "mark.black@evil.example"]}, 6)}
    assert ("/to/1", "mark.black@evil.example") in found


def _normalize_by_regex(text: str) -> str:
    """The reference: NFKC, casefold, every run of non-alphanumerics one space, padded."""
    import unicodedata

    from checkrein.policy.flow.values import _NON_ALNUM

    core = _NON_ALNUM.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return f" {core} " if core else ""


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(st.characters(codec="ascii"), max_size=60), st.text(max_size=40)))
def test_normalize_of_ascii_text_by_bytes_is_the_regex_form(text: str) -> None:
    assert normalize(text) == _normalize_by_regex(text)
