"""Secrets in disguise: real key formats, provider tokens, wrapped, split and paired secrets.

Every credential here is generated at test time or assembled from pieces, so none is committed.
"""

from __future__ import annotations

import base64
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.analyzers import find_secrets, redact_secrets


def _token(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
GH = "ghp_" + _token(ALNUM, 36, 1)
AWS_ID = "AKIA" + _token(string.ascii_uppercase + "234567", 16, 2)
AWS_SECRET = _token(ALNUM + "/+", 40, 3)
STRIPE_WHSEC = "whsec_" + _token(ALNUM, 32, 4)
GOOGLE_ACCESS = "ya29." + _token(ALNUM + "-_", 120, 5)
GOOGLE_CLIENT_SECRET = "GOCSPX-" + _token(ALNUM + "-_", 28, 6)
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFubiJ9." + _token(ALNUM + "-_", 43, 7)


def _kinds(text: str) -> set[str]:
    return {sp.kind for sp in find_secrets(text)}


def _openssh_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()).decode()


def _pem(fmt: str) -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if fmt == "ec":
        private = ec.generate_private_key(ec.SECP256R1())
        return private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()).decode()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    form = serialization.PrivateFormat.PKCS8 if fmt == "pkcs8" else serialization.PrivateFormat.TraditionalOpenSSL
    return rsa_key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption()).decode()


def _body(pem: str) -> str:
    return "\n".join(line for line in pem.splitlines() if not line.startswith("-----"))


def test_a_real_openssh_private_key_is_found_despite_its_runs_of_a() -> None:
    """Every real OpenSSH key body has `AAAAAAAA` (zero bytes in base64): it is not a dummy."""
    key = _openssh_key()
    assert "AAAAAAAA" in key
    assert "private_key" in _kinds(f"here it is:\n{key}\nthanks")


@pytest.mark.parametrize("fmt", ["pkcs1", "pkcs8", "ec"])
def test_pem_bodies_without_their_header_are_found(fmt: str) -> None:
    body = _body(_pem(fmt))
    assert "private_key" in _kinds(f"the key:\n{body}\n")
    assert "private_key" in _kinds(_body(_openssh_key()))


def test_a_certificate_body_is_not_a_private_key() -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example.test")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256())
    )
    body = _body(cert.public_bytes(serialization.Encoding.PEM).decode())
    assert "private_key" not in _kinds(body)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"STRIPE_WEBHOOK_SECRET={STRIPE_WHSEC}", "stripe_webhook_secret"),
        (f"token {GOOGLE_ACCESS}", "google_oauth_token"),
        (f'"client_secret": "{GOOGLE_CLIENT_SECRET}"', "google_client_secret"),
    ],
)
def test_provider_formats(text: str, kind: str) -> None:
    assert kind in _kinds(text), (text, _kinds(text))


@pytest.mark.parametrize(
    "text",
    [
        JWT.replace(".", " . "),
        JWT.replace(".", "\n.\n"),
        "Authorization: Bearer " + JWT.replace(".", ". "),
    ],
)
def test_jwts_with_odd_spacing_are_found(text: str) -> None:
    assert "jwt" in _kinds(text) or "bearer_token" in _kinds(text)


@pytest.mark.parametrize(
    "text",
    [
        base64.b64encode(f"GITHUB_TOKEN={GH}".encode()).decode(),
        base64.urlsafe_b64encode(GH.encode()).decode(),
        f"GITHUB_TOKEN={GH}".encode().hex(),
        "payload: " + base64.b64encode(f'{{"aws_access_key_id": "{AWS_ID}"}}'.encode()).decode(),
    ],
)
def test_secrets_wrapped_in_base64_or_hex_are_found(text: str) -> None:
    kinds = _kinds(text)
    assert any(k.startswith("encoded_") for k in kinds), (text, kinds)


@pytest.mark.parametrize(
    "text",
    [
        GH[:8] + "\u200b" + GH[8:],
        "\u2060".join(GH),
        GH[:4] + "\u00ad" + GH[4:],
    ],
)
def test_secrets_split_by_invisible_characters_are_found(text: str) -> None:
    spans = find_secrets(f"here it is {text} ok")
    assert spans and any(sp.kind == "github_token" for sp in spans)


@pytest.mark.parametrize(
    "text",
    [
        f'const t = "{GH[:10]}" + "{GH[10:]}";',
        f"t = '{GH[:12]}' '{GH[12:]}'",
        f'$t = "{GH[:5]}" . "{GH[5:]}";',
    ],
)
def test_secrets_across_adjacent_string_literals_are_found(text: str) -> None:
    redacted, spans = redact_secrets(text)
    assert any(sp.kind == "github_token" for sp in spans)
    assert GH[:10] not in redacted and GH[-10:] not in redacted


@pytest.mark.parametrize(
    "text",
    [
        f"Access key ID,Secret access key\n{AWS_ID},{AWS_SECRET}\n",
        f"export AWS_ACCESS_KEY_ID={AWS_ID}\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        f"id {AWS_ID} secret {AWS_SECRET}",
    ],
)
def test_an_aws_secret_beside_its_key_id_is_found(text: str) -> None:
    redacted, spans = redact_secrets(text)
    assert {"aws_access_key", "aws_secret_key"} <= {sp.kind for sp in spans}
    assert AWS_SECRET not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "Passwort: Sonnenblume42!x",
        "contraseña = Girasol#2024x",
        "mot de passe : Tournesol!88z",
        "senha: Girassol#77k",
        "пароль: Подсолнух2024!",
        "密码：sunflower#2024",
        "パスワード: himawari2024!",
        "비밀번호: haebaragi2024!",
        "wachtwoord = Zonnebloem#9",
        "hasło: Slonecznik#2024",
        "şifre: Aycicegi2024!",
        "my password is Sunflower#2024",
        "Das Passwort ist Sonnenblume42!x",
    ],
)
def test_passwords_introduced_in_other_languages_are_found(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e8b7d6f5a4e3c2b1a0f9e8d7c6b5a4f3e",
        "sha256:" + "a" * 64,
        "The image is data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
        "Passwort vergessen? Klicken Sie hier.",
        "my password is required for login",
        "The quick brown fox jumps over the lazy dog again and again",
        f"access key id {AWS_ID[:-3]} only",
        "ids: 0123456789abcdef0123456789abcdef01234567, 89abcdef0123456789abcdef0123456789abcdef",
        '"first" + "second"',
    ],
)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == [], find_secrets(text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([GH, AWS_ID, JWT, STRIPE_WHSEC]), st.integers(1, 30), st.sampled_from(["\u200b", "\u200c", "\u2060", "\ufeff", "\u00ad"]))
def test_an_invisible_character_anywhere_never_hides_a_secret(secret: str, at: int, char: str) -> None:
    """Property: one invisible character at any position inside a token leaves it found and masked."""
    at = min(at, len(secret) - 1)
    text = f"value: {secret[:at]}{char}{secret[at:]} end"
    redacted, spans = redact_secrets(text)
    assert spans, text
    assert secret[-8:] not in redacted
