"""`decode.decoded_forms`: every encoding layer an attacker may stack is peeled, within bounds."""

from __future__ import annotations

import pytest

from checkrein.policy.analyzers.decode import (
    MAX_FORM_CHARS,
    MAX_ROUNDS,
    decoded_forms,
    percent_decode,
    unescape_backslashes,
)


@pytest.mark.parametrize(
    ("encoded", "plain"),
    [
        ("%2e%2e%2f", "../"),
        ("%252e%252e%252f", "../"),
        ("%25252e%25252e%25252f", "../"),
        ("%c0%ae%c0%ae%c0%af", "../"),
        ("%e0%80%ae%e0%80%ae/", "../"),
        ("%f0%80%80%ae", "."),
        ("%c0%2e%c0%2e%c0%2f", "../"),
        ("%u002e%u002e%u002f", "../"),
        ("\\u002e\\u002e\\x2f", "../"),
        ("&#46;&#x2e;&sol;", "../"),
        ("&lt;script&gt;", "<script>"),
        ("\uff0e\uff0e\uff0f", "../"),
        ("a\\nb", "a\nb"),
    ],
)
def test_every_supported_encoding_decodes_to_the_plain_form(encoded: str, plain: str) -> None:
    assert plain in decoded_forms(encoded)


def test_raw_value_is_always_the_first_form() -> None:
    assert decoded_forms("%41")[0] == "%41"
    assert decoded_forms("plain") == ["plain"]


def test_windows_paths_keep_their_backslashes() -> None:
    assert unescape_backslashes("C:\\new\\table") == "C:\\new\\table"
    assert unescape_backslashes("\\\\server\\new") == "\\\\server\\new"


def test_intermediate_steps_are_kept_so_a_later_step_cannot_hide_a_payload() -> None:
    # `%5c` -> `\` then `\e...` must not be read as an escape that destroys `..\etc`.
    assert "..\\etc/passwd" in decoded_forms("..%255cetc/passwd")


def test_rounds_are_bounded() -> None:
    deep = "."
    for _ in range(MAX_ROUNDS + 3):
        deep = deep.replace("%", "%25") if "%" in deep else "%2e"
    forms = decoded_forms(deep)
    assert len(forms) <= 4 * MAX_ROUNDS + 2


def test_output_length_is_bounded() -> None:
    huge = "%41" * (MAX_FORM_CHARS // 2)
    assert all(len(f) <= MAX_FORM_CHARS for f in decoded_forms(huge))


def test_plus_as_space_form_is_offered_for_form_encoded_values() -> None:
    assert "' or 1=1--" in decoded_forms("'+or+1=1--")


def test_invalid_percent_sequences_are_left_alone() -> None:
    assert percent_decode("100%") == "100%"
    assert percent_decode("%zz%4") == "%zz%4"


def test_lone_surrogates_become_replacement_characters() -> None:
    assert percent_decode("%ud800") == "\ufffd"
    assert unescape_backslashes("\\ud800") == "\ufffd"
