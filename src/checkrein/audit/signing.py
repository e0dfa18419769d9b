"""Ed25519 signing of checkpoints, and the key files `checkrein audit keygen` writes.

The private key is read only by the writer and never enters the log, an error message or a
counter; events carry only the key id (first 16 hex digits of SHA-256 of the raw public key).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from checkrein.canonical import canonical_json, sha256_hex
from checkrein.errors import AuditError

__all__ = [
    "PRIVATE_KEY_FILE",
    "PUBLIC_KEY_FILE",
    "CheckpointSigner",
    "checkpoint_message",
    "generate_keypair",
    "key_id",
    "load_public_key",
    "verify_signature",
]

PRIVATE_KEY_FILE = "audit-signing.key"
PUBLIC_KEY_FILE = "audit-signing.pub"


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return sha256_hex(raw)[:16]


def checkpoint_message(event: dict[str, Any]) -> bytes:
    """The signed bytes: log id, position, and both digests of the checkpoint (canonical JSON)."""
    return canonical_json(
        {
            "log_id": event["log_id"],
            "seq": event["seq"],
            "count": event["count"],
            "head_hash": event["head_hash"],
            "merkle_root": event["merkle_root"],
        }
    )


@dataclass(frozen=True)
class CheckpointSigner:
    _key: Ed25519PrivateKey
    key_id: str

    @classmethod
    def from_file(cls, path: Path) -> CheckpointSigner:
        """Load a PEM (PKCS#8) Ed25519 private key; ``AuditError`` names the file, never its bytes."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AuditError(f"cannot read audit signing key {path}: {exc.strerror}", code="audit.key_unreadable") from None
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise AuditError(f"{path} is not an unencrypted PEM private key", code="audit.key_invalid") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise AuditError(f"{path} is not an Ed25519 key", code="audit.key_invalid")
        return cls(key, key_id(key.public_key()))

    def sign(self, event: dict[str, Any]) -> str:
        return self._key.sign(checkpoint_message(event)).hex()

    def __repr__(self) -> str:  # keep the key out of any log or traceback
        return f"CheckpointSigner(key_id={self.key_id!r})"


def load_public_key(path: Path) -> Ed25519PublicKey:
    """Load a PEM Ed25519 public key (or derive it from a private key file). Raises ``AuditError``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AuditError(f"cannot read key {path}: {exc.strerror}", code="audit.key_unreadable") from None
    try:
        pub = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        try:
            priv = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise AuditError(f"{path} is not a PEM Ed25519 key", code="audit.key_invalid") from None
        pub = priv.public_key()
    if not isinstance(pub, Ed25519PublicKey):
        raise AuditError(f"{path} is not an Ed25519 key", code="audit.key_invalid")
    return pub


def verify_signature(public: Ed25519PublicKey, event: dict[str, Any], signature_hex: str) -> bool:
    try:
        public.verify(bytes.fromhex(signature_hex), checkpoint_message(event))
    except (InvalidSignature, ValueError):
        return False
    return True


def generate_keypair(out_dir: Path, *, force: bool = False) -> tuple[Path, Path, str]:
    """Write ``audit-signing.key`` (mode 0600, created that way, never world-readable even briefly)
    and ``audit-signing.pub`` into ``out_dir``; return (private path, public path, key id).
    Refuses to overwrite an existing key unless ``force``. Raises ``AuditError``."""
    key = Ed25519PrivateKey.generate()
    priv_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pub_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    priv_path, pub_path = out_dir / PRIVATE_KEY_FILE, out_dir / PUBLIC_KEY_FILE
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
        if force and priv_path.exists():
            priv_path.unlink()  # recreate so the 0600 mode applies even if the old file was looser
        fd = os.open(priv_path, flags, 0o600)
        try:
            os.write(fd, priv_pem)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(priv_path, 0o600)
        pub_path.write_bytes(pub_pem)
    except FileExistsError:
        raise AuditError(f"{priv_path} already exists (use --force to replace it)", code="audit.key_exists") from None
    except OSError as exc:
        raise AuditError(f"cannot write key pair into {out_dir}: {exc.strerror}", code="audit.key_unwritable") from None
    return priv_path, pub_path, key_id(key.public_key())
