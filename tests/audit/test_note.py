"""Signed notes, vkeys, checkpoints and cosignatures: formats and the refusals they must make."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from checkrein.audit.note import (
    NoteError,
    NoteSigner,
    checkpoint_text,
    parse_checkpoint,
    parse_note,
    parse_vkey,
)


def test_vkey_round_trips_and_its_id_is_the_specified_hash() -> None:
    import hashlib

    signer = NoteSigner(Ed25519PrivateKey.generate(), "checkrein/host/log")
    text = signer.vkey.encode()
    name, hex_id, _ = text.split("+", 2)
    assert parse_vkey(text) == signer.vkey and name == "checkrein/host/log"
    digest = hashlib.sha256(b"checkrein/host/log\n\x01" + signer.vkey.public).digest()
    assert hex_id == digest[:4].hex()


@pytest.mark.parametrize("bad", ["a+b", "name+zzzzzzzz+AAAA", "na me+00000000+" + "A" * 44, "x+00000000+AQ=="])
def test_malformed_vkeys_are_refused(bad: str) -> None:
    with pytest.raises(NoteError):
        parse_vkey(bad)


def test_a_vkey_whose_id_does_not_match_its_key_is_refused() -> None:
    text = NoteSigner(Ed25519PrivateKey.generate(), "log").vkey.encode()
    name, hex_id, data = text.split("+", 2)
    with pytest.raises(NoteError, match="does not match"):
        parse_vkey(f"{name}+{(int(hex_id, 16) ^ 1):08x}+{data}")


def test_note_signature_covers_every_byte_of_the_text() -> None:
    signer = NoteSigner(Ed25519PrivateKey.generate(), "log")
    note = signer.sign(checkpoint_text("log", 3, b"\x01" * 32))
    again = parse_note(note.render())
    assert again == note and again.verified_by(signer.vkey) is True
    forged = parse_note(note.render().replace("\n3\n", "\n4\n"))
    assert forged.verified_by(signer.vkey) is False
    assert forged.verified_by(NoteSigner(Ed25519PrivateKey.generate(), "log").vkey) is None  # unknown key: ignored


def test_a_new_line_from_the_same_key_replaces_the_old_one() -> None:
    signer = NoteSigner(Ed25519PrivateKey.generate(), "w")
    note = NoteSigner(Ed25519PrivateKey.generate(), "log").sign("log\n1\n" + "A" * 43 + "=\n")
    a, b = signer.sign(note.text).signatures[0], signer.sign(note.text + "x").signatures[0]
    merged = note.with_signatures([a]).with_signatures([b])
    assert len(merged.signatures) == 2 and merged.signatures[-1] == b


@pytest.mark.parametrize("text", ["o\n01\n" + "A" * 43 + "=\n", "o\n1\nAAAA\n", "\n1\n" + "A" * 43 + "=\n",
                                  "o\n1\n" + "A" * 43 + "=\next\n", "o\n1\n" + "A" * 43 + "="])
def test_malformed_checkpoints_are_refused(text: str) -> None:
    with pytest.raises(NoteError):
        parse_checkpoint(text)


@pytest.mark.parametrize("data", [b"no blank line\n\u2014 x AAAAAAA=\n", b"t\n\n- x AAAAAAAA\n",
                                  "t\n\n\u2014 x AAAAAAAA\n".replace("\n\n", "\n\x01\n").encode(), b"\xff\n\n"])
def test_malformed_notes_are_refused(data: bytes) -> None:
    with pytest.raises(NoteError):
        parse_note(data)
