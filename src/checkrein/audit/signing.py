"""Ed25519 signing of checkpoints, and the key files: the default one and `audit keygen`'s.

The private key is read only by the writer and never enters the log, an error message or a
counter; events carry only the key id (first 16 hex digits of SHA-256 of the raw public key).
The same key signs the checkpoint event (canonical JSON) and its C2SP note (`audit/note.py`).

Where the key is (`prepare_signing_key`): ``[audit] signing_key = "path"`` (must exist),
``false`` (unsigned), or unset: ``<config stem>.audit-key`` beside the config file, created
mode 0600 on first use. It is kept out of the audit directory on purpose: whoever can rewrite
the log should not thereby hold the key that vouches for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from checkrein.canonical import canonical_json, sha256_hex
from checkrein.errors import AuditError

from .note import NoteSigner

if TYPE_CHECKING:
    from checkrein.config.audit import AuditSettings

__all__ = [
    "DEFAULT_KEY_SUFFIX",
    "PRIVATE_KEY_FILE",
    "PUBLIC_KEY_FILE",
    "CheckpointSigner",
    "SigningKey",
    "checkpoint_message",
    "default_key_path",
    "generate_keypair",
    "key_id",
    "load_public_key",
    "prepare_signing_key",
    "verify_signature",
]

PRIVATE_KEY_FILE = "audit-signing.key"
PUBLIC_KEY_FILE = "audit-signing.pub"
DEFAULT_KEY_SUFFIX = ".audit-key"


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

    def note_signer(self, origin: str) -> NoteSigner:
        """The same key, signing C2SP notes under the key name ``origin``."""
        return NoteSigner(self._key, origin)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._key.public_key()

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
        _write_private(priv_path, priv_pem, force=force)
        pub_path.write_bytes(pub_pem)
    except FileExistsError:
        raise AuditError(f"{priv_path} already exists (use --force to replace it)", code="audit.key_exists") from None
    except OSError as exc:
        raise AuditError(f"cannot write key pair into {out_dir}: {exc.strerror}", code="audit.key_unwritable") from None
    return priv_path, pub_path, key_id(key.public_key())


def _write_private(path: Path, pem: bytes, *, force: bool) -> None:
    """Create ``path`` mode 0600 from the start (never world-readable, even briefly). Raises
    ``FileExistsError`` unless ``force``, and ``OSError``."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    if force and path.exists():
        path.unlink()  # recreate so the 0600 mode applies even if the old file was looser
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class SigningKey:
    """The key a log is signed with: where it is, and whether this call created it."""

    path: Path
    created: bool = False


def default_key_path(config_source: str | None, base_dir: Path) -> Path:
    """``<config stem>.audit-key`` beside the config file (``checkrein.audit-key`` in ``base_dir``
    for a config that came from no file)."""
    if config_source:
        cfg = Path(config_source).resolve()
        return cfg.with_name(cfg.stem + DEFAULT_KEY_SUFFIX)
    return base_dir.resolve() / ("checkrein" + DEFAULT_KEY_SUFFIX)


def prepare_signing_key(settings: AuditSettings, base_dir: Path, config_source: str | None) -> SigningKey | None:
    """Resolve ``[audit] signing_key``: None when it is ``false`` (or unset for a config that came
    from no file); the configured file (which must exist); or the default file beside the config,
    created (Ed25519, PEM, 0600) when missing. Raises ``AuditError``."""
    choice = settings.signing_key
    if choice is False:
        return None
    if isinstance(choice, str):
        path = (base_dir / choice).resolve()
        if not path.is_file():
            raise AuditError(
                f"[audit] signing_key {path} does not exist (create it with `checkrein audit keygen`, or "
                "remove the setting to use the default key)", code="audit.key_unreadable")
        return SigningKey(path)
    if config_source is None:
        return None  # a config built in code has no file to put the key beside: unsigned unless given one
    path = default_key_path(config_source, base_dir)
    if path.exists():
        return SigningKey(path)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        _write_private(path, pem, force=False)
    except FileExistsError:  # another process created it first: use that one
        return SigningKey(path)
    except OSError as exc:
        raise AuditError(f"cannot create audit signing key {path}: {exc.strerror}", code="audit.key_unwritable") from None
    return SigningKey(path, created=True)
