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
