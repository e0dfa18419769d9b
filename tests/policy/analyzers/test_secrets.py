"""`secrets`: provider keys, private keys, JWTs, assignments; placeholders are not secrets."""

from __future__ import annotations

import base64
import json
import re
import sys

import pytest
from _analyzer_helpers import kinds_of, scan_one
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.policy.analyzers import ScanContext, find_secrets, redact_secrets, secret_forms, secrets
from checkrein.policy.analyzers.scan import scan_value
from checkrein.policy.analyzers.secrets import is_placeholder, shannon_entropy


def _jwt() -> str:
    def seg(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{seg({'alg': 'HS256', 'typ': 'JWT'})}.{seg({'sub': '1234567890', 'name': 'Ann'})}.c2lnbmF0dXJlX2J5dGVzX2hlcmU"


# Shapes built at test time so that no literal key-shaped string sits in the repository.
_ALNUM = "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Sa"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key AKIA" + "Q3VN7ZK2LX5M4P6R" + " here", "aws_access_key"),
        ("aws_secret_access_key = " + "wJ8rXUtnF3MI/K7MDENG/bPxRfiCYz9Kq2Lm4Np6", "aws_secret_key"),
        ("token ghp_" + _ALNUM + "abcd", "github_token"),
        ("github_pat_" + _ALNUM * 2, "github_token"),
        ("glpat-" + _ALNUM[:20], "gitlab_token"),
        ("xoxb-" + "123456789012-123456789012-" + _ALNUM[:24], "slack_token"),
        ("sk_live_" + _ALNUM[:24], "stripe_key"),
        ("AIza" + _ALNUM + "x2_", "google_api_key"),
        ("sk-proj-" + _ALNUM + _ALNUM, "openai_key"),
        ("sk-ant-api03-" + _ALNUM * 3, "anthropic_key"),
        (_jwt(), "jwt"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + _ALNUM + "\n-----END RSA PRIVATE KEY-----", "private_key"),
        ('password = "Tr0ub4dor&3x!"', "password"),
        ("db_password: s3cr3t-Pa55word", "password"),
        ('{"api_key": "' + _ALNUM + '"}', "credential"),
        ("https://admin:" + "Q7vR2pL9" + "@db.example.com/", "url_credentials"),
        ("Authorization: Bearer " + _ALNUM, "bearer_token"),
    ],
)
def test_secrets_are_found(text: str, kind: str) -> None:
    assert kind in {s.kind for s in find_secrets(text)}


@pytest.mark.parametrize(
    "text",
    [
        "password = ${DB_PASSWORD}",
        "password: <your-password>",
        "api_key = xxxxxxxxxxxxxxxx",
        "token = 'fake-token-for-tests'",
        "secret: changeme",
        "password = os.getenv('DB_PASSWORD')",
        "password = db_password",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "AKIAXXXXXXXXXXXXXXXX",
        "passport_number: X1234567",
        "the token_type is bearer",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "sort_key = name",
        "Reset your password at the settings page",
        "public_key = 'ssh-ed25519 AAAA'",
    ],
)
def test_placeholders_references_and_prose_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_redaction_masks_every_span_and_keeps_the_rest() -> None:
    secret = "ghp_" + _ALNUM + "abcd"
    text = f"use {secret} and password=Tr0ub4dor&3x!"
    masked, spans = redact_secrets(text)
    assert secret not in masked and "Tr0ub4dor" not in masked
    assert masked.startswith("use [REDACTED:github_token] and password=")
    assert [text[s.start : s.end] for s in spans][0] == secret


def test_custom_mask() -> None:
    masked, _ = redact_secrets("ghp_" + _ALNUM + "abcd", mask="***{kind}***")
    assert masked == "***github_token***"


def test_secret_findings_carry_no_secret_text() -> None:
    secret = "ghp_" + _ALNUM + "abcd"
    findings = scan_one(f"please use {secret}")
    assert kinds_of(findings, "secrets") == {"github_token"}
    assert all(secret not in f.evidence and secret not in f.message for f in findings)


def test_arguments_declared_secret_are_not_reported() -> None:
    assert scan_one("ghp_" + _ALNUM + "abcd", "secret") == []


def test_entropy_and_placeholder_helpers() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == 2.0
    assert is_placeholder("${TOKEN}") and is_placeholder("<token>") and not is_placeholder("Tr0ub4dor&3x!")


_SPOKEN_PIECES = st.sampled_from(
    [*secrets._FOREIGN_PREFILTER, "is", "ist", "IS", "es", "est", "er", "jest", "je", "equals", "lautet", "ist jetzt", "is now",
     "是", "は", ":", "：", "=", " ", "\t", "\n", "\u00a0", "\u2003", "hunter22!", "Geheim123x", "s3cr3t-Pa55", "word", "mot de passe"]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(
    st.lists(_SPOKEN_PIECES, max_size=8).map("".join)
    | st.tuples(
        st.sampled_from(["", "my ", "das ", "x"]),
        st.sampled_from([*secrets._FOREIGN_PREFILTER, "Password", "PASSWORT"]),
        st.sampled_from([" ", "\t", "\n", "\u00a0", "", "  "]),
        st.sampled_from(["is", "ist", "IS", "es", "est", "er", "jest", "je", "equals", "lautet", "ist jetzt", "is now", "是", ":", "：", "=", "eh"]),
        st.sampled_from([" ", "\t", "\n", "\u2003", ""]),
        st.sampled_from(["hunter22!", "Geheim123x", "s3cr3t-Pa55", "word"]),
    ).map("".join)
)
def test_the_spoken_password_gate_is_a_necessary_condition(text: str) -> None:
    """`_may_speak_password` says no only where `_spoken_password_spans` finds nothing."""
    if secrets._spoken_password_spans(text):
        assert secrets._may_speak_password(text, text.lower())


# `_SPOKEN_PASSWORD`'s own structure: each word (a regex piece, drawn by Hypothesis from the piece itself
# in any case), each separator form with every `\s` one of many whitespace characters, then a value.
_ONE_SPACE = st.sampled_from([" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\u00a0", "\u2003", "\u2028", "\u3000"])
_CASED = st.sampled_from(["lower", "upper", "title", "swapcase"])


def _spelled(piece: str) -> st.SearchStrategy[str]:
    return st.tuples(st.from_regex(piece, fullmatch=True), _CASED).map(lambda t: getattr(t[0], t[1])())


_SPOKEN_SEPARATORS = st.one_of(
    st.tuples(_ONE_SPACE, st.sampled_from(secrets._SPOKEN_COPULAS).flatmap(_spelled), _ONE_SPACE).map("".join),
    st.tuples(_ONE_SPACE | st.just(""), st.sampled_from(secrets._SPOKEN_MARKS), _ONE_SPACE | st.just("")).map("".join),
    st.tuples(_ONE_SPACE, st.sampled_from(secrets._SPOKEN_PHRASES).flatmap(_spelled), _ONE_SPACE).map("".join),
)
_SPOKEN_TEXTS = st.tuples(
    st.sampled_from(["", "my ", "Das ", "WiFi ", "x\n", "(", "le ", "»"]),
    st.sampled_from(secrets._SPOKEN_WORDS).flatmap(_spelled),
    _SPOKEN_SEPARATORS,
    st.sampled_from(["hunt3r!x9", "83hd7!x2", "Geheim123x", "s3cr3t-Pa55", "8x7!kq2z", "\u201chunt3r!x9\u201d", "'Tr0ub4d&3x'"]),
    st.sampled_from(["", ".", " thanks", "\n"]),
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_SPOKEN_TEXTS)
def test_the_spoken_password_gate_admits_every_word_and_separator_of_the_regex(text: str) -> None:
    """Word x separator x value, drawn from `_SPOKEN_PASSWORD`'s own alternatives (bare `PIN:`,
    `Passcode：`, `password equals`, `password 是`, `mot\\nde\\npasse =`...): wherever the regex matches,
    the gate admits the text, and where it finds a password `find_secrets` and `may_find` report it."""
    lowered = text.lower()
    if secrets._SPOKEN_PASSWORD.search(text) is not None:
        assert secrets._may_speak_password(text, lowered), text
    if secrets._spoken_password_spans(text):
        assert any(sp.kind == "password" for sp in find_secrets(text)), text
        assert secrets.may_find(text, None), text


@settings(max_examples=500, deadline=None)
@given(st.from_regex(secrets._SPOKEN_PASSWORD))
def test_the_spoken_password_gate_admits_whatever_the_regex_matches(text: str) -> None:
    """Strings Hypothesis draws from the whole regex (random context and values): the gate admits each match."""
    if secrets._SPOKEN_PASSWORD.search(text) is not None:
        assert secrets._may_speak_password(text, text.lower()), text


def test_the_gates_folding_covers_what_ignorecase_equates() -> None:
    """For every code point that `(?i)` matches to a character of a needle, lowering and folding it gives
    that character; and no ASCII character matches a non-ASCII character of the regex (so an ASCII text,
    lowered, needs only the ASCII needles, marks and copulas)."""
    needle_chars = sorted(set("".join(secrets._FOREIGN_PREFILTER)))
    any_needle_char = re.compile("(?i)[" + "".join(map(re.escape, needle_chars)) + "]")
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        if any_needle_char.fullmatch(c) is not None:
            for w in needle_chars:
                if re.fullmatch("(?i)" + re.escape(w), c):
                    assert c.lower().translate(secrets._CASE_FOLD) == w, (hex(cp), w)
    pieces = "".join((*secrets._SPOKEN_WORDS, *secrets._SPOKEN_COPULAS, *secrets._SPOKEN_MARKS, *secrets._SPOKEN_PHRASES))
    foreign = [c for c in set(pieces) if not c.isascii()]
    assert not [(a, c) for a in map(chr, range(128)) for c in foreign if re.fullmatch("(?i)" + re.escape(c), a)]
    assert all(secrets._needle(w) in secrets._FOREIGN_PREFILTER for w in secrets._SPOKEN_WORDS)


@pytest.mark.parametrize(
    "text",
    ["PIN: 83hd7!x2", "Passcode: 83hd7!x2z", "pin code = 8x7!kq2z", "password equals hunt3r!x9", "password 是 hunt3r!x9",
     "PASSWORD は hunt3r!x9", "WiFi password：hunt3r!x9", "mot\nde\npasse: hunter22!", "kata\tsandi = hunter22!",
     "pa\u017f\u017fword: hunt3r!x9", "p\u0131n: 83hd7!x2", "P\u0130N: 83hd7!x2", "\u043f\u0430\u0440\u1c82\u043b\u044c: hunt3r!x9"],
)  # fmt: skip
def test_a_bare_password_word_with_any_separator_is_found(text: str) -> None:
    """The bare words (`PIN`, `passcode`, `password`) with `:`, `=`, `：`, `equals`, `是`, `は`; phrases split
    by other whitespace; characters `(?i)` equates with a needle's (`ſ`, `ı`, `İ`, Cyrillic narrow o)."""
    assert secrets._spoken_password_spans(text), "fixture: the regex matches"
    assert any(sp.kind == "password" for sp in find_secrets(text))
    assert secrets.may_find(text, None)
    assert scan_value(text, "/v", None, ScanContext()) == scan_value(text, "/v", None, ScanContext(), full=True)


@pytest.mark.parametrize("index", range(len(secrets._RULES)), ids=[f"{i}-{r.kind}" for i, r in enumerate(secrets._RULES)])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(data=st.data())
def test_may_find_admits_every_match_of_every_rule(index: int, data: st.DataObject) -> None:
    """Strings drawn from each rule's own pattern (so a new rule is covered the day it is added): wherever
    the pattern matches, `may_find` (the scan's and the audit redactor's prefilter) lets the text through."""
    rule = secrets._RULES[index]
    text = data.draw(st.from_regex(rule.pattern))
    if rule.pattern.search(text) is not None:
        assert secrets.may_find(text, None), text


def _spaced_jwt(separator: str) -> str:
    head, body, sig = _jwt().split(".")
    return f"token {head[:12]}{separator}.{separator}{body[:12]}{separator}.{separator}{sig[:8]}"


@pytest.mark.parametrize(
    "text",
    ["token eyJhbGciOiJI\n.\neyJzdWIiOjF9\n.\nXk2Pq9Lm", _spaced_jwt("\n"), _spaced_jwt(" "), _spaced_jwt("\t\t"), _spaced_jwt("\r\n"),
     "e\u200by\u200bJhbGciOiJI . e\u200by\u200bJzdWIiOjF9 . Xk2Pq9Lm"],
)  # fmt: skip
def test_a_jwt_spaced_around_its_dots_passes_the_prefilter(text: str) -> None:
    """No run of 16 non-space characters, no trigger character: the `eyJ` lets it through the scan's and
    the audit redactor's prefilter (the gate injects `may_find`), so it is reported and masked."""
    from checkrein.audit.redact import Redactor

    assert any(sp.kind == "jwt" for sp in find_secrets(text)), "fixture: the jwt rule matches"
    assert secrets.may_find(text, None)
    assert ("secrets", "jwt") in {(f.analyzer, f.kind) for f in scan_value(text, "/v", None, ScanContext())}
    masked, changed = Redactor(secret_finder=find_secrets, secret_prefilter=lambda t: secrets.may_find(t, None)).mask_text(text)
    assert changed and "hbGci" not in masked and "zdWIi" not in masked


@pytest.mark.parametrize("value", ["Passwort\tist\tgeheim123!", "my password\nis\nhunter22x", "Kennwort ist Geheim123x"])
def test_a_spoken_password_separated_by_any_whitespace_is_found_by_the_fast_path(value: str) -> None:
    """Tabs and newlines around the copula: the prefilter lets the value through (it once required a space)."""
    full = scan_value(value, "/v", None, ScanContext(), full=True)
    assert full == scan_value(value, "/v", None, ScanContext())
    if "Passwort" in value or "Kennwort" in value:
        assert any(f.kind == "password" for f in full)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["SK", "AC", "sk", "ac", "M", "N", "O", "m", "0123456789abcdef", "0123456789abcdef" * 2, "_", ".", "-", " ", "xyz", "Zq8Xw2Lm4Np6Rt0Vb3Yc"]), max_size=10).map("".join))
def test_rule_guards_hold_for_every_match(text: str) -> None:
    """A rule skipped for want of its case-sensitive guard could not have matched; hex runs hold 24 hex digits."""
    for rule in secrets._RULES:
        for m in rule.pattern.finditer(text):
            assert not rule.guard or any(g in m.group(0) for g in rule.guard), (rule.kind, m.group(0))
    if secret_forms._HEX_RUN.search(text) is not None:
        assert secret_forms._HEX_DIGITS_24.search(text) is not None


def test_guarded_rules_still_find_their_tokens() -> None:
    """The guards do not hide what the rules are for."""
    twilio = "SK" + "0123456789abcdef" * 2
    discord = "M" + "a" * 23 + "." + "abcdef" + "." + "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg"
    assert any(sp.kind == "twilio_key" for sp in secrets.find_secrets(f"key {twilio} end"))
    assert secrets._RULES[[r.kind for r in secrets._RULES].index("discord_token")].pattern.search(discord) is not None


def test_a_prefix_inside_another_rules_prefix_still_selects_its_rule() -> None:
    """A Discord token whose dots follow an `s` (`s.` is the vault rule's prefix): the prefilter's
    regex took `s.` at each dot, never reported the `.` the Discord rule needs, and the token was
    not found."""
    token = "MTk4NjIyNDgzNDcxOTI1MjQ4s.Cl2FMs.ZnCjm1XVW7vRze4b7Cq4se7kKWsQ9"
    assert [sp.kind for sp in find_secrets(f"token {token}")] == ["discord_token"]


def test_candidates_are_every_rule_whose_prefix_occurs() -> None:
    lowered = "hvs. sk_live_ xoxb- . | accountkey= key-".lower()
    want = {i for i, r in enumerate(secrets._RULES) if any(p in lowered for p in r.prefilter)}
    got = {secrets._RULES.index(r) for r in secrets._candidates(frozenset(secrets._PREFILTER.present(lowered)))}
    assert got == want
