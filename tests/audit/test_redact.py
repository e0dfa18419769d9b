"""Redaction rules, one behaviour per test."""

from __future__ import annotations

import json
from typing import Any

from checkrein.audit.redact import MASK, Redactor
from checkrein.audit.secrets import find_builtin_secrets


def test_values_under_secret_looking_keys_are_masked_at_any_depth() -> None:
    value = {"a": [{"b": {"Api-Key": "k1", "ok": "visible"}}], "SESSION_ID": 5, "passwd": {"x": 1}}
    preview, pointers = Redactor().preview(value, "/args_preview")
    assert preview["a"][0]["b"] == {"Api-Key": MASK, "ok": "visible"}
    assert preview["SESSION_ID"] == MASK and preview["passwd"] == MASK
    assert sorted(pointers) == ["/args_preview/SESSION_ID", "/args_preview/a/0/b/Api-Key", "/args_preview/passwd"]


def test_json_carried_in_a_string_is_redacted_inside() -> None:
    body = json.dumps({"user": "bob", "auth": {"token": "zzz-secret-zzz"}})
    preview, pointers = Redactor().preview({"body": body}, "")
    assert "zzz-secret-zzz" not in preview["body"]
    assert json.loads(preview["body"])["user"] == "bob"
    assert pointers == ["/body"]


def test_pointers_escape_slash_and_tilde() -> None:
    _, pointers = Redactor().preview({"a/b~c": {"token": "t"}}, "")
    assert pointers == ["/a~1b~0c/token"]


def test_extra_keys_from_config_are_masked() -> None:
    preview, _ = Redactor(extra_keys=["ssn"]).preview({"customer_SSN": "123-45-6789"}, "")
    assert preview == {"customer_SSN": MASK}


def test_policy_pointers_are_masked_even_under_innocent_keys() -> None:
    preview, pointers = Redactor().preview({"q": "select 1", "n": 2}, "/args_preview", masked=frozenset({"/q"}))
    assert preview == {"q": MASK, "n": 2} and pointers == ["/args_preview/q"]


def test_long_strings_are_cut_after_masking() -> None:
    text = "AKIAABCDEFGHIJKLMNOP " + "x" * 5000
    preview, pointers = Redactor(max_chars=100).preview({"t": text}, "")
    assert preview["t"].startswith("[REDACTED:aws_access_key] ")
    assert "…[+" in preview["t"] and len(preview["t"]) < 140
    assert pointers == ["/t"]


def test_large_containers_are_bounded() -> None:
    preview, _ = Redactor(max_items=4).preview({"l": list(range(100)), "d": {str(i): i for i in range(100)}}, "")
    assert len(preview["l"]) == 5 and "96 more items" in preview["l"][-1]
    assert len(preview["d"]) == 5


def test_non_json_values_become_redacted_text() -> None:
    preview, _ = Redactor().preview({"b": b"password=hunter2hunter2", "f": float("nan")}, "")
    assert "hunter2hunter2" not in json.dumps(preview)
    assert preview["f"] == "nan"


def test_builtin_finder_recognises_each_kind() -> None:
    samples = {
        "aws_access_key": "id AKIAIOSFODNN7EXAMPLE end",
        "github_token": "ghp_" + "a" * 36,
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----",
        "url_password": "redis://:s3cretpass@localhost:6379",
        "assignment": "user=a&password=hunter22&x=1",
        "slack_token": "xoxb-123456789012-abcdefghij",
        "bearer_token": "Authorization: Bearer abcdefghijklmnop123",
    }
    for kind, text in samples.items():
        kinds = {s.kind for s in find_builtin_secrets(text)}
        assert kind in kinds, (kind, kinds)


def test_builtin_finder_ignores_ordinary_text() -> None:
    for text in ("read the file /etc/hosts", "max_tokens: 5", "author: Jane", "SELECT * FROM users", "https://example.com/a?b=c"):
        assert find_builtin_secrets(text) == [], text


class _Custom:
    """An injected finder that knows one form the built-in set does not (``CUSTOM-`` + 13), and
    records every text it was asked about."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, text: str) -> list[object]:
        self.seen.append(text)
        i = text.find("CUSTOM-")
        if i < 0:
            return []

        class Span:
            start, end, kind = i, i + 20, "custom"

        return [Span()]


def test_values_the_policy_scanned_get_only_the_builtin_patterns_and_its_pointers() -> None:
    """``scanned``: the injected finder (the policy's own) read these values already; its hits
    come as masked pointers, and the built-in patterns still run."""
    finder = _Custom()
    r = Redactor(secret_finder=finder)
    value = {"q": "run with CUSTOM-abcdefghijklm and more words", "k": "key AKIAIOSFODNN7ABCDEFG here",
             "flagged": "anything at all, masked by pointer"}
    preview, pointers = r.preview(value, "/a", masked=frozenset({"/flagged"}), scanned=True)
    assert finder.seen == ["flagged"]  # a key (the policy does not read keys), never a value
    assert preview["k"] == "key [REDACTED:aws_access_key] here"
    assert preview["flagged"] == MASK and sorted(pointers) == ["/a/flagged", "/a/k"]
    preview, _ = r.preview(value, "/a", masked=frozenset({"/flagged"}))  # not scanned: the finder runs
    assert preview["q"] == "run with [REDACTED:custom] and more words" and finder.seen


def test_keys_and_deeper_json_still_get_the_injected_finder_when_values_were_scanned() -> None:
    """The policy's analyzer skips identifier keys and parses JSON in a string one level deep."""
    finder = _Custom()
    r = Redactor(secret_finder=finder)
    deep = json.dumps({"outer": json.dumps({"note": "see CUSTOM-abcdefghijklm"})})
    preview, pointers = r.preview({"CUSTOM-abcdefghijklm": 1, "body": deep}, "", scanned=True)
    assert "CUSTOM-abcdefghijklm" not in json.dumps(preview)
    assert pointers == ["/[REDACTED:custom]", "/body"]
    # one level deep is what the policy read: only built-in patterns there
    finder.seen.clear()
    r.preview({"body": json.dumps({"note": "see CUSTOM-abcdefghijklm"})}, "", scanned=True)
    assert finder.seen == []


def test_fits_whole_trusts_a_scanned_value_but_not_its_long_keys() -> None:
    finder = _Custom()
    r = Redactor(secret_finder=finder)
    plain = {"path": "/srv/a.txt", "n": 1}
    doc = json.dumps(plain, separators=(",", ":"), sort_keys=True).encode()
    assert r.fits_whole(doc, plain, scanned=True) and finder.seen == []
    assert r.fits_whole(doc, plain) and finder.seen  # unscanned: the finder reads the document
    long_key = {"CUSTOM-abcdefghijklm": 1}
    doc = json.dumps(long_key, separators=(",", ":")).encode()
    assert not r.fits_whole(doc, long_key, scanned=True)


class _CountingFinder:
    """Flags every occurrence of ``SEKRET`` (a kind the built-in set does not know) and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> list[Any]:
        from checkrein.audit.secrets import BuiltinSpan

        self.calls += 1
        at = text.find("SEKRET")
        return [] if at < 0 else [BuiltinSpan(at, at + 6, "custom")]


def test_mask_text_asks_the_finder_once_for_a_repeated_clean_text() -> None:
    finder = _CountingFinder()
    r = Redactor(secret_finder=finder)
    reason = "files__read matches allow rule 'files__*'"
    assert [r.mask_text(reason) for _ in range(5)] == [(reason, False)] * 5
    assert finder.calls == 1


def test_mask_text_masks_a_repeated_secret_every_time() -> None:
    finder = _CountingFinder()
    r = Redactor(secret_finder=finder)
    for n in range(1, 4):
        text, hit = r.mask_text("argument holds SEKRET here")
        assert hit and "SEKRET" not in text and text == "argument holds [REDACTED:custom] here"
        assert finder.calls == n  # a masked text is never remembered


def test_mask_text_keeps_builtin_only_verdicts_apart_from_the_finders() -> None:
    finder = _CountingFinder()
    r = Redactor(secret_finder=finder)
    text = "the value SEKRET is not a built-in kind"
    assert r.mask_text(text, builtin_only=True) == (text, False)  # the built-in set finds nothing
    masked, hit = r.mask_text(text)  # the injected finder still runs, and finds it
    assert hit and "SEKRET" not in masked


def test_mask_text_memory_of_clean_texts_is_bounded_and_skips_long_texts() -> None:
    from checkrein.audit import redact

    finder = _CountingFinder()
    r = Redactor(secret_finder=finder)
    for i in range(redact._CLEAN_CACHE + 10):
        r.mask_text(f"reason number {i} for rule 'x'")
    assert 0 < len(r._clean[0]) <= redact._CLEAN_CACHE
    long = "word " * 100  # over _CLEAN_MAX_CHARS
    calls = finder.calls
    r.mask_text(long)
    r.mask_text(long)
    assert finder.calls == calls + 2


def test_fits_whole_remembers_a_document_that_fits_but_never_one_that_does_not() -> None:
    from checkrein.canonical import canonical_json

    finder = _CountingFinder()
    r = Redactor(secret_finder=finder)
    clean = {"path": "/srv/data/report.csv", "limit": 10}
    doc = canonical_json(clean)
    assert [r.fits_whole(doc, clean) for _ in range(3)] == [True] * 3
    assert finder.calls == 1
    dirty = {"path": "/srv/SEKRET/report.csv"}
    dirty_doc = canonical_json(dirty)
    assert [r.fits_whole(dirty_doc, dirty) for _ in range(3)] == [False] * 3
    assert finder.calls == 4  # asked every time: a "no" is not kept
    preview, pointers = r.preview(dirty, "/args_preview")
    assert "SEKRET" not in json.dumps(preview) and pointers == ["/args_preview/path"]


def test_fits_whole_keeps_scanned_verdicts_apart_from_unscanned_ones() -> None:
    from checkrein.canonical import canonical_json

    finder = _CountingFinder()
    r = Redactor(secret_finder=finder)
    value = {"note": "carries SEKRET inside"}
    doc = canonical_json(value)
    # The policy's analyzer read it and (the caller checked) masked nothing: only the built-in set is asked.
    assert r.fits_whole(doc, value, scanned=True)
    assert finder.calls == 0
    # Not read by the policy (a result): the injected finder runs and the remembered "yes" does not apply.
    assert not r.fits_whole(doc, value)
    assert finder.calls == 1


def test_fits_whole_does_not_remember_large_documents() -> None:
    from checkrein.audit import redact
    from checkrein.canonical import canonical_json

    finder = _CountingFinder()
    r = Redactor(secret_finder=finder, max_chars=8192)
    value = {"text": "plain words " * 300}
    doc = canonical_json(value)
    assert redact._FITS_MAX_BYTES < len(doc) <= 8192
    assert r.fits_whole(doc, value) and r.fits_whole(doc, value)
    assert finder.calls == 2 and not r._fits[0]


def test_a_remembered_document_answers_only_for_the_value_it_parses_back_to() -> None:
    from checkrein.canonical import canonical_json

    # `{None: x}` encodes as `{"null": x}`: a key the redact list names only in its own spelling.
    r = Redactor(extra_keys=["none"])
    plain, sensitive = {"null": "hunter2"}, {None: "hunter2"}
    doc = canonical_json(plain)
    assert canonical_json(sensitive) == doc
    assert r.fits_whole(doc, plain)
    assert not r.fits_whole(doc, sensitive)  # a non-string key never fits whole
    preview, pointers = r.preview(sensitive, "/args_preview")
    assert "hunter2" not in json.dumps(preview) and pointers == ["/args_preview/None"]


def test_a_remembered_document_orjson_cannot_read_is_checked_again_not_raised() -> None:
    from checkrein.canonical import canonical_json

    value = {"n": 10**400}  # canonical JSON holds it; orjson reads it as an infinite double and refuses
    doc = canonical_json(value)
    r = Redactor()
    assert r.fits_whole(doc, value) and r.fits_whole(doc, value)


def test_a_secret_in_a_short_key_is_masked_and_its_pointer_names_the_masked_key() -> None:
    """Any key a secret fits in (6+ characters) gets the finder, as values do; the value under it
    is masked too, and the pointer carries the masked key, never the raw one."""
    value = {"path": "/workspace/data", "opts": {"pwd=Tr0ub4d&3x": "ok", "mode": "fast"}}
    for r in (Redactor(), Redactor(secret_finder=_CountingFinder())):
        preview, pointers = r.preview(value, "/args_preview")
        assert "Tr0ub4d" not in json.dumps(preview) and "Tr0ub4d" not in json.dumps(pointers)
        assert preview["opts"] == {"pwd=[REDACTED:assignment]&3x": MASK, "mode": "fast"}
        assert pointers == ["/args_preview/opts/pwd=[REDACTED:assignment]&3x"]
    # A short key only the injected finder knows, and one under a policy pointer that names the raw key.
    r = Redactor(secret_finder=_CountingFinder())
    preview, pointers = r.preview({"SEKRET": {"x": 1}}, "/a", masked=frozenset({"/SEKRET"}), scanned=True)
    assert preview == {"[REDACTED:custom]": MASK} and pointers == ["/a/[REDACTED:custom]"]


def test_short_secret_keys_in_results_lifecycle_fields_and_approvals_are_masked() -> None:
    from checkrein.audit.event import EventFactory
    from checkrein.audit.record import LifecycleRecord
    from checkrein.policy.analyzers import find_secrets
    from checkrein.policy.analyzers.secrets import may_find

    from .helpers import make_record

    secret = {"pwd=Tr0ub4d&3x": "ok"}
    for r in (Redactor(), Redactor(secret_finder=find_secrets, secret_prefilter=lambda t: may_find(t, None))):
        f = EventFactory(r)
        ev = f.call(make_record(1, result={"content": [{"type": "text", "text": "hi"}], "meta": secret},
                                decision={"effect": "allow", "rule_id": "r", "reasons": [], "risk": "low",
                                          "approval": {"approver": "bob", "extra": secret}}), 0.0)
        assert "Tr0ub4d" not in json.dumps(ev, default=str), ev
        assert "/result/summary/meta/pwd=[REDACTED:password]&3x" in ev["redactions"] or \
            "/result/summary/meta/pwd=[REDACTED:assignment]&3x" in ev["redactions"]
        life = f.lifecycle(LifecycleRecord("gateway.start", {"opts": secret}), 0.0)
        assert "Tr0ub4d" not in json.dumps(life) and len(life["redactions"]) == 1


def test_a_document_with_a_secret_in_a_short_key_never_fits_whole() -> None:
    """Not with the built-in set, the injected finder, its prefilter, or after the policy's scan
    (which reads values, not keys); and a key found clean before does not vouch for one that is not."""
    from checkrein.canonical import canonical_json
    from checkrein.policy.analyzers import find_secrets
    from checkrein.policy.analyzers.secrets import may_find

    value = {"path": "/workspace/data", "opts": {"pwd=Tr0ub4d&3x": "ok"}}
    custom = {"path": "/workspace/data", "opts": {"SEKRET": "ok"}}
    redactors = [Redactor(), Redactor(secret_finder=find_secrets),
                 Redactor(secret_finder=find_secrets, secret_prefilter=lambda t: may_find(t, None))]
    for r in redactors:
        for _ in range(2):
            assert not r.fits_whole(canonical_json(value), value)
            assert not r.fits_whole(canonical_json(value), value, scanned=True)
    finder = _CountingFinder()
    for r in (Redactor(secret_finder=finder), Redactor(secret_finder=finder, secret_prefilter=lambda t: "SEKRET" in t)):
        plain = {"path": "/workspace/data", "opts": {"plain1": "ok"}}
        assert r.fits_whole(canonical_json(plain), plain, scanned=True)  # remembers its keys and document
        assert r.mask_text("SEKRET", builtin_only=True) == ("SEKRET", False)  # a built-in-only "clean"
        for _ in range(2):
            assert not r.fits_whole(canonical_json(custom), custom, scanned=True)
            assert not r.fits_whole(canonical_json(custom), custom)
        preview, pointers = r.preview(custom, "/p", scanned=True)
        assert "SEKRET" not in json.dumps(preview) + json.dumps(pointers)


def test_a_policy_pointer_with_a_star_masks_every_place_it_names() -> None:
    """The policy names a `kind = "secret"` argument inside an array as `/users/*/code`: each
    array item's value is masked, and the pointers returned are the concrete ones."""
    value = {"users": [{"name": "ann", "code": "Opal-Trumpet-42"}, {"name": "bob"}, {"name": "cy", "code": "Jade-Drum-7"}],
             "code": "not a secret", "teams": [[{"n": 1}, {"k": "Ruby-Horn-3"}]]}
    r = Redactor()
    masked = frozenset({"/users/*/code", "/teams/*/*/k"})
    preview, pointers = r.preview(value, "/args_preview", masked=masked)
    assert "Opal-Trumpet-42" not in json.dumps(preview) and "Jade-Drum-7" not in json.dumps(preview)
    assert "Ruby-Horn-3" not in json.dumps(preview)
    assert preview["users"] == [{"name": "ann", "code": MASK}, {"name": "bob"}, {"name": "cy", "code": MASK}]
    assert preview["code"] == "not a secret"
    assert sorted(pointers) == ["/args_preview/teams/0/1/k",
                                "/args_preview/users/0/code", "/args_preview/users/2/code"]
    # An object where the schema said array (a call the schema check denies is audited too), and JSON in a string.
    preview, pointers = r.preview({"users": {"x": {"code": "Opal-Trumpet-42"}}, "body": json.dumps({"users": [{"code": "Jade-Drum-7"}]})},
                                  "", masked=frozenset({"/users/*/code", "/body/users/*/code"}))
    assert "Opal-Trumpet-42" not in json.dumps(preview) and "Jade-Drum-7" not in json.dumps(preview)
    assert sorted(pointers) == ["/body", "/users/x/code"]
    # A star only as a whole token; exact pointers as before; each set of pointers its own pattern.
    preview, pointers = r.preview({"a*": {"b": "keep-this-1"}, "ab": {"b": "keep-this-2"}, "q": "masked-q"}, "", masked=frozenset({"/a*/b", "/q"}))
    assert preview == {"a*": {"b": MASK}, "ab": {"b": "keep-this-2"}, "q": MASK} and sorted(pointers) == ["/a*/b", "/q"]
    preview, _ = r.preview(value, "", masked=frozenset({"/teams/*/*/k"}))
    assert preview["users"][0]["code"] == "Opal-Trumpet-42"


def test_the_event_masks_a_starred_secret_pointer_and_lists_the_concrete_ones() -> None:
    from checkrein.audit.event import EventFactory

    from .helpers import make_record

    args = {"users": [{"name": "ann", "code": "Opal-Trumpet-42"}, {"name": "bob", "code": "Jade-Drum-7"}]}
    ev = EventFactory(Redactor()).call(make_record(1, arguments=args, redactions=("/users/*/code",), args_scanned=False), 0.0)
    assert "Opal-Trumpet-42" not in json.dumps(ev, default=str) and "Jade-Drum-7" not in json.dumps(ev, default=str)
    assert ev["redactions"] == ["/args_preview/users/0/code", "/args_preview/users/1/code"]


def test_mask_pointer_masks_a_secret_token_as_the_preview_masks_that_key() -> None:
    """A pointer into arguments names the place without the secret a key may be: the same masked
    token the preview's pointer carries; other tokens (short, plain, escaped) are left as they are."""
    value = {"opts": {"pwd=Tr0ub4d&3x": "ok"}}
    r = Redactor()
    _, pointers = r.preview(value, "")
    assert r.mask_pointer("/opts/pwd=Tr0ub4d&3x") == pointers[0] == "/opts/pwd=[REDACTED:assignment]&3x"
    assert r.mask_pointer("/opts/a~1b~0c/0/mode") == "/opts/a~1b~0c/0/mode"
    escaped = r.mask_pointer("/x/pwd=Tr0ub4d~1&3x")  # the key "pwd=Tr0ub4d/&3x", unescaped for the finder
    assert "Tr0ub4d" not in escaped and escaped.startswith("/x/pwd=[REDACTED:")
    assert r.mask_pointer("") == "" and r.mask_pointer("/pwd=x") == "/pwd=x"
