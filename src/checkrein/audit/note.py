"""C2SP signed notes, checkpoints and cosignatures: text in, text out, no I/O.

    signed-note        text ending in "\\n", a blank line, then lines "— <name> base64(keyid||sig)"
    key id (Ed25519)   SHA-256(name || 0x0A || 0x01 || pubkey)[:4], big-endian uint32
    vkey               <name>+<hex key id>+base64(type byte || pubkey)
    tlog-checkpoint    "<origin>\\n<size>\\n<base64 root>\\n" (no extension lines here)
    tlog-cosignature   type 0x04, signature = u64 timestamp || Ed25519 over
                       "cosignature/v1\\ntime <t>\\n" || checkpoint text

Every parser raises ``NoteError`` (a ``ValueError``) with a message that names the problem.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "ALG_COSIGNATURE_V1",
    "ALG_ED25519",
    "CheckpointText",
    "Cosignature",
    "NoteError",
    "NoteSignature",
    "NoteSigner",
    "SignedNote",
    "VerifierKey",
    "checkpoint_text",
    "cosignature_message",
    "note_key_id",
    "parse_checkpoint",
    "parse_note",
    "parse_signature_line",
    "parse_vkey",
]

ALG_ED25519 = 0x01
ALG_COSIGNATURE_V1 = 0x04
EM_DASH = "\u2014"
MAX_NOTE_BYTES = 1 << 20
MAX_SIGNATURES = 64
_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,18})\Z")


class NoteError(ValueError):
    """A malformed note, checkpoint, signature line or verifier key."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str, what: str) -> bytes:
    """Strict standard base64 (padding required, canonical), or ``NoteError``."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise NoteError(f"{what} is not valid base64") from None
    if b64(raw) != text:
        raise NoteError(f"{what} is not canonical base64")
    return raw


def _check_name(name: str) -> str:
    if not name or any(c.isspace() or c == "+" for c in name):
        raise NoteError(f"key name {name[:60]!r} must be non-empty, without spaces or '+'")
    return name


def note_key_id(name: str, alg: int, public: bytes) -> int:
    """The signed-note key id: first 4 bytes (big-endian) of SHA-256(name || \\n || alg || key)."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([alg]) + public).digest()
    return int.from_bytes(digest[:4], "big")


def _raw_public(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@dataclass(frozen=True)
class VerifierKey:
    """A signed-note verifier key: Ed25519 note signatures (0x01) or cosignature/v1 (0x04)."""

    name: str
    key_id: int
    alg: int
    public: bytes

    @classmethod
    def for_key(cls, name: str, public: Ed25519PublicKey, alg: int = ALG_ED25519) -> VerifierKey:
        raw = _raw_public(public)
        return cls(_check_name(name), note_key_id(name, alg, raw), alg, raw)

    def encode(self) -> str:
        return f"{self.name}+{self.key_id:08x}+{b64(bytes([self.alg]) + self.public)}"

    def matches(self, sig: NoteSignature) -> bool:
        return sig.name == self.name and sig.key_id == self.key_id

    def verify(self, text: str, sig: NoteSignature) -> bool:
        """Whether ``sig`` (already matched by name and id) is valid over the note ``text``."""
        key = Ed25519PublicKey.from_public_bytes(self.public)
        try:
            if self.alg == ALG_ED25519:
                if len(sig.signature) != 64:
                    return False
                key.verify(sig.signature, text.encode("utf-8"))
            else:
                if len(sig.signature) != 72:
                    return False
                (stamp,) = struct.unpack(">Q", sig.signature[:8])
                key.verify(sig.signature[8:], cosignature_message(text, stamp))
        except InvalidSignature:
            return False
        return True


def parse_vkey(text: str) -> VerifierKey:
    """Parse ``name+hexid+base64(alg||key)``; the id must be the one the spec derives."""
    parts = text.strip().split("+", 2)  # the base64 part may itself hold "+"
    if len(parts) != 3:
        raise NoteError("a verifier key has the form <name>+<8 hex digits>+<base64 key>")
    name, hex_id, data = parts
    _check_name(name)
    if not re.fullmatch(r"[0-9a-f]{8}", hex_id):
        raise NoteError("verifier key id must be 8 lowercase hex digits")
    raw = unb64(data, "verifier key")
    if len(raw) != 33 or raw[0] not in (ALG_ED25519, ALG_COSIGNATURE_V1):
        raise NoteError("only Ed25519 verifier keys (type 0x01, or 0x04 for cosignatures) are supported")
    key_id = int(hex_id, 16)
    if key_id != note_key_id(name, raw[0], raw[1:]):
        raise NoteError(f"verifier key id {hex_id} does not match its name and key")
    return VerifierKey(name, key_id, raw[0], raw[1:])


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        return f"{EM_DASH} {self.name} {b64(self.key_id.to_bytes(4, 'big') + self.signature)}\n"


def parse_signature_line(line: str) -> NoteSignature:
    """One ``— name base64`` line (without its newline)."""
    if not line.startswith(EM_DASH + " "):
        raise NoteError("a signature line starts with an em dash and a space")
    name, sep, data = line[2:].partition(" ")
    if not sep:
        raise NoteError("a signature line is '— <name> <base64>'")
    raw = unb64(data, "signature")
    if len(raw) < 5:
        raise NoteError("signature too short")
    return NoteSignature(_check_name(name), int.from_bytes(raw[:4], "big"), raw[4:])


@dataclass(frozen=True)
class SignedNote:
    text: str
    signatures: tuple[NoteSignature, ...]

    def render(self) -> str:
        return self.text + "\n" + "".join(s.line() for s in self.signatures)

    def with_signatures(self, more: list[NoteSignature]) -> SignedNote:
        """This note plus ``more``; a new line from a (name, key id) already present replaces it
        (verifiers reject a note with two lines from one known key)."""
        fresh = {(s.name, s.key_id): s for s in more}
        kept = tuple(s for s in self.signatures if (s.name, s.key_id) not in fresh)
        return SignedNote(self.text, kept + tuple(fresh.values()))

    def verified_by(self, key: VerifierKey) -> bool | None:
        """True if a signature from ``key`` verifies, False if one from it fails, None if none."""
        found = [s for s in self.signatures if key.matches(s)]
        if not found:
            return None
        return all(key.verify(self.text, s) for s in found)


def parse_note(data: str | bytes) -> SignedNote:
    if isinstance(data, bytes):
        if len(data) > MAX_NOTE_BYTES:
            raise NoteError("note too large")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise NoteError("note is not UTF-8") from None
    if any(ord(c) < 0x20 and c != "\n" for c in data):
        raise NoteError("note holds a control character")
    cut = data.rfind("\n\n")
    if cut < 0 or not data.endswith("\n"):
        raise NoteError("a signed note is text, a blank line, then signature lines, each ending in a newline")
    text, sig_block = data[: cut + 1], data[cut + 2 :]
    lines = sig_block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError("too many signatures")
    return SignedNote(text, tuple(parse_signature_line(x) for x in lines))


@dataclass(frozen=True)
class CheckpointText:
    origin: str
    size: int
    root: bytes


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    return f"{origin}\n{size}\n{b64(root)}\n"


def parse_checkpoint(text: str) -> CheckpointText:
    """The note text of a C2SP checkpoint (extension lines are refused: checkrein writes none)."""
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise NoteError("a checkpoint is exactly three lines: origin, size, base64 root")
    origin, size, root = lines[:3]
    if not origin:
        raise NoteError("checkpoint origin is empty")
    if not _DECIMAL.match(size):
        raise NoteError("checkpoint size is not a decimal without leading zeros")
    raw = unb64(root, "checkpoint root")
    if len(raw) != 32:
        raise NoteError("checkpoint root is not 32 bytes")
    return CheckpointText(origin, int(size), raw)


def cosignature_message(text: str, timestamp: int) -> bytes:
    return f"cosignature/v1\ntime {timestamp}\n".encode() + text.encode("utf-8")


@dataclass(frozen=True)
class Cosignature:
    """A verified cosignature: which witness, and the time it vouched for the checkpoint."""

    witness: str
    timestamp: int


class NoteSigner:
    """Signs note text with an Ed25519 key under one key name (the log's origin)."""

    __slots__ = ("_key", "vkey")

    def __init__(self, key: Ed25519PrivateKey, name: str) -> None:
        self._key = key
        self.vkey = VerifierKey.for_key(name, key.public_key())

    def sign(self, text: str) -> SignedNote:
        sig = NoteSignature(self.vkey.name, self.vkey.key_id, self._key.sign(text.encode("utf-8")))
        return SignedNote(text, (sig,))

    def __repr__(self) -> str:  # keep the key out of any log or traceback
        return f"NoteSigner(vkey={self.vkey.encode()!r})"
