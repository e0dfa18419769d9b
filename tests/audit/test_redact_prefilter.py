"""The redactor's prefilter for the injected finder (the policy analyzer's `may_find`) never masks
less than running the finder on every string: Hypothesis over results built from secret pieces."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.audit.redact import Redactor
from checkrein.canonical import canonical_json
from checkrein.policy.analyzers import find_secrets
from checkrein.policy.analyzers.secrets import may_find

# Pieces the finder keys on (providers' prefixes, keywords, separators, encodings, foreign words)
# and the ordinary prose a result usually is.
PIECES = [
    "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key", "ghp_",
    "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Saabcd", "github_pat_", "glpat-", "xoxb-", "sk-", "sk_live_", "AIza",
    "eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", "Bearer ", "bearer", "https://", "user:",
    "p4ss@", "host.example/", "reset?token=", "password", "Passwort", "mot de passe", "password is ", "pin is ",
    "=", ":", "\"", "'", "`", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "MIIEow",
    "cGFzc3dvcmQ9WnE4WHcyTG00TnA2", "Z2hwX1pxOFh3MkxtNE5wNlJ0MFZiM1ljNUhkN0pmOUtnMVNhYWJjZA==", "414b4941494f53464f444e4e374558414d504c45",
    "hunter2hunter2", "s3cr3t!", "a b c d", "the quick brown fox", "line two", "\n", "\t", " ", "{", "}",
    "abcdefghijklmnopqrst", "0123456789abcdef", "é", "пароль", "密码", "x", "/", "@", ";",
]  # fmt: skip

text = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)
result = st.builds(
    lambda texts, flag: {"content": [{"type": "text", "text": t} for t in texts], "isError": flag},
    st.lists(st.one_of(text, st.text(max_size=60)), min_size=1, max_size=3), st.booleans())


def _pair() -> tuple[Redactor, Redactor]:
    return (Redactor(secret_finder=find_secrets, secret_prefilter=lambda t: may_find(t, None)),
            Redactor(secret_finder=find_secrets))


FAST, FULL = _pair()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result)
def test_the_prefiltered_preview_equals_the_full_scan(value: dict[str, Any]) -> None:
    """Same redacted copy, same pointers: the prefilter skips only strings the finder finds nothing in."""
    assert FAST.preview(value, "/result/summary") == FULL.preview(value, "/result/summary")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(text, st.text(max_size=80)))
def test_the_prefiltered_mask_text_equals_the_full_scan(value: str) -> None:
    """Decision reasons and keys go through `mask_text`: identical with and without the prefilter."""
    assert FAST.mask_text(value) == FULL.mask_text(value)


def test_secrets_in_a_result_are_masked_with_the_prefilter() -> None:
    """The fixture pieces are caught: a key, a token in a link, a password, an encoded key."""
    for secret in ("AKIAIOSFODNN7EXAMPLE", "https://app.example/reset?token=Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7",
                   "password: hunter2hunter2", "cGFzc3dvcmQ9WnE4WHcyTG00TnA2"):
        value = {"content": [{"type": "text", "text": f"here: {secret}\nbye"}]}
        out, pointers = FAST.preview(value, "/r")
        assert pointers == ["/r/content/0/text"], secret
        assert secret not in str(out)
        assert (out, pointers) == FULL.preview(value, "/r")


def test_a_failing_prefilter_masks_instead_of_leaking() -> None:
    """An exception in the prefilter is a finder failure: the string is masked whole and counted."""
    def broken(text: str) -> bool:
        raise RuntimeError(text)

    r = Redactor(secret_finder=find_secrets, secret_prefilter=broken)
    assert r.mask_text("an ordinary sentence") == ("[REDACTED:finder_error]", True)
    assert r.finder_failures == 1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result | st.dictionaries(st.sampled_from(["q", "path", "note", "a_rather_long_key_name", "token"]),
                                st.one_of(text, st.integers(), st.lists(text, max_size=3)), max_size=4))
def test_a_value_kept_whole_is_one_the_full_scan_masks_nothing_in(value: dict[str, Any]) -> None:
    """`fits_whole` (strings asked one by one, escapes and all) says keep-as-is only where the full
    per-string scan masks nothing and copies the value unchanged."""
    doc = canonical_json(value)
    if FAST.fits_whole(doc, value):
        assert FULL.preview(value, "/p") == (json.loads(doc), [])
    if FULL.fits_whole(doc, value):  # the document-wide rule without the prefilter agrees
        assert FAST.fits_whole(doc, value) or FAST.preview(value, "/p") == (json.loads(doc), [])


def test_a_result_with_newlines_and_nothing_to_mask_is_kept_whole() -> None:
    """The common tool result (prose with line breaks) no longer takes the walk; one with a
    password in it still does."""
    value = {"content": [{"type": "text", "text": "line one\nline two with words\n"}], "isError": False}
    assert FAST.fits_whole(canonical_json(value), value)
    assert not FULL.fits_whole(canonical_json(value), value)  # escapes defeat the document-wide rule
    leaky = {"content": [{"type": "text", "text": "line one\npassword: hunter2hunter2\n"}], "isError": False}
    assert not FAST.fits_whole(canonical_json(leaky), leaky)


def _reference_strings(value: Any) -> list[str]:
    """Every string value (not key) in ``value``, recursively."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _reference_strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _reference_strings(v)]
    return []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | text | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["q", "path", "password", "a_rather_long_key_name", "x", "note"]), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_the_key_walk_hands_the_prefilter_every_string_a_preview_would_scan(value: Any) -> None:
    """`fits_whole` asks the prefilter about the strings the key walk gathered: when the walk
    finds no secret-looking key, it has gathered every string value of 6+ characters."""
    gathered: list[str] = []
    keys: list[str] = []
    if not FAST._any_sensitive_key(value, strings=gathered, keys=keys):
        assert sorted(gathered) == sorted(s for s in _reference_strings(value) if len(s) >= 6)
        assert sorted(keys) == sorted(k for k in _reference_keys(value) if len(k) >= 6)


def _reference_keys(value: Any) -> list[str]:
    """Every key in ``value``, recursively."""
    if isinstance(value, dict):
        return [*value, *(k for v in value.values() for k in _reference_keys(v))]
    if isinstance(value, list | tuple):
        return [k for v in value for k in _reference_keys(v)]
    return []
