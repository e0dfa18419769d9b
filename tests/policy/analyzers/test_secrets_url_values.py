"""`password:` followed by a link: the link is not the password; tokens inside links still are.

Regression: "reset your password: https://www.facebook.com/reset-password" in an e-mail was masked
as a password (AgentDojo workspace user tasks 16 and 22 lost the link).
"""

from __future__ import annotations

import pytest

from checkrein.policy.analyzers import find_secrets, redact_secrets


@pytest.mark.parametrize(
    "text",
    [
        "Click on this link to reset your password: https://www.social.test/reset-password",
        "password: https://www.password-reset-12bh12.test reset password",
        "Password = 'http://intranet.test:8080/help/passwords'",
    ],
)
def test_password_key_followed_by_plain_url_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password: https://x.test/reset?token=a8Fj3kLq9ZpT2w", "a8Fj3kLq9ZpT2w"),
        ("https://tech.test/auth/password-reset/token=?fjahwb24jab3", "?fjahwb24jab3"),
        ("password: hunter2Xy9!", "hunter2Xy9!"),
    ],
)
def test_tokens_in_links_and_real_passwords_are_still_masked(text: str, secret: str) -> None:
    """A reset link's token is a bearer credential: results keep it masked (see docs)."""
    redacted, spans = redact_secrets(text)
    assert secret not in redacted and spans


def test_credentials_inside_a_url_after_password_key_are_found() -> None:
    text = "password: https://admin:Sup3rS3cretPw@db.test/x"
    assert "Sup3rS3cretPw" not in redact_secrets(text)[0]


def test_a_token_in_a_link_is_found_as_a_url_token_and_masked_by_redact_secrets() -> None:
    """The audit log masks it (`redact_secrets`); only result delivery may keep it (`link_tokens`)."""
    from checkrein.policy.analyzers import find_secrets, redact_secrets
    from checkrein.policy.analyzers.secrets import URL_TOKEN

    for text in ("https://techservices.example/auth/password-reset/token=?asfbuy3y2cdaqhvei",
                 "[Reset](https://x.example/reset?u=1&token=Zq81LmP0x7VbN3)"):
        assert [sp.kind for sp in find_secrets(text)] == [URL_TOKEN], text
        assert "[REDACTED:" in redact_secrets(text)[0]
    assert [sp.kind for sp in find_secrets("api token=asfbuy3y2cdaqhvei")] == ["credential"]
    assert [sp.kind for sp in find_secrets("see https://x.example/a then token=asfbuy3y2cdaqhvei")] == ["credential"]
