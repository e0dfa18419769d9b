"""Notes, cosignatures and proofs checked against independent C2SP code: aics-tlog (PyPI) both
ways, and the Go sumdb/note documentation's known-answer signed note."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import aics_tlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from checkrein.audit.checkpoints import CheckpointStore
from checkrein.audit.note import NoteSigner, checkpoint_text, parse_note, parse_vkey
from checkrein.audit.proofs import MerkleTree, parse_tlog_proof, verify_consistency, verify_inclusion
from checkrein.cli.main import app

from .helpers import make_record, write_log
from .test_witness import ORIGIN, key, log_vkey, witness, witnessed  # noqa: F401 - fixtures
from .witness_server import AicsWitness

runner = CliRunner()


def test_go_sumdb_known_answer_note_verifies() -> None:
    """The example key and note of golang.org/x/mod/sumdb/note, where signed notes come from."""
    vkey = parse_vkey("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
    note = parse_note("If you think cryptography is the answer to your problem,\n"
                      "then you don't know what your problem is.\n\n"
                      "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n")
    assert note.verified_by(vkey) is True
    assert note.verified_by(parse_vkey(NoteSigner(Ed25519PrivateKey.generate(), "PeterNeumann").vkey.encode())) is None


def test_our_checkpoint_notes_and_vkeys_verify_with_aics_tlog(
    tmp_path: Path, key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(30)], **witnessed(key, witness))
    size, note = CheckpointStore(d).newest() or (0, None)
    assert note is not None
    their_log_key = aics_tlog.parse_vkey(log_vkey(key))
    their_witness_key = aics_tlog.parse_vkey(witness.vkey)
    assert aics_tlog.format_vkey(their_log_key) == log_vkey(key)
    parsed = aics_tlog.parse_note(note.render())
    assert aics_tlog.verify_note(parsed, [their_log_key]) is True
    result = aics_tlog.verify_checkpoint(parsed, their_log_key, [their_witness_key], 1, expected_origin=ORIGIN)
    assert result.ok and result.log_ok and result.cosignature_count == 1, result
    assert result.size == size and result.origin == ORIGIN


def test_our_inclusion_and_consistency_proofs_verify_with_aics_tlog(tmp_path: Path, key: Path) -> None:  # noqa: F811
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(37)], signing_key=str(key), origin=ORIGIN)
    sizes = CheckpointStore(d).sizes()
    assert len(sizes) >= 3
    for seq in (0, 5, 17, sizes[-1] - 1):
        res = runner.invoke(app, ["audit", "proof", str(d), "--seq", str(seq)])
        assert res.exit_code == 0, res.output
        proof = parse_tlog_proof(res.output)
        event = json.loads(proof.extra or b"{}")
        assert event["seq"] == seq
        body = aics_tlog.parse_checkpoint(proof.checkpoint.text)
        leaf = bytes.fromhex(event["hash"])
        assert aics_tlog.verify_leaf_inclusion(leaf, seq, body.size, list(proof.path), body.root) is True
    for old, new in zip(sizes, sizes[1:], strict=False):
        res = runner.invoke(app, ["audit", "consistency", str(old), str(new), str(d), "--json"])
        assert res.exit_code == 0, res.output
        c = json.loads(res.output)
        proof = [aics_tlog.note.b64_decode(h) for h in c["proof"]]
        old_root, new_root = aics_tlog.note.b64_decode(c["old_root"]), aics_tlog.note.b64_decode(c["new_root"])
        assert aics_tlog.verify_consistency(old, new, old_root, new_root, proof) is True
        assert verify_consistency(old, new, old_root, new_root, proof)


def test_their_tree_signatures_and_cosignatures_verify_with_ours() -> None:
    """The other direction: a tree, checkpoint and cosignature made by aics-tlog."""
    entries = [hashlib.sha256(b"%d" % i).digest() for i in range(41)]
    theirs = aics_tlog.MerkleTree()
    for e in entries:
        theirs.append(e)
    ours = MerkleTree(entries)
    assert ours.root() == theirs.root()
    for m, n in ((1, 41), (7, 32), (13, 40), (32, 41)):
        assert verify_consistency(m, n, ours.root(m), ours.root(n), theirs.consistency_proof(m, n))
    for i in (0, 9, 40):
        leaf = hashlib.sha256(b"\x00" + entries[i]).digest()
        assert verify_inclusion(leaf, i, 41, theirs.inclusion_proof(i, 41), ours.root())
    log_key, witness_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    cp = aics_tlog.Checkpoint(origin="example.test/log", size=41, root=ours.root())
    signed = aics_tlog.sign_checkpoint(cp, log_key, "example.test/log")
    _, line = aics_tlog.sign_cosignature(witness_key, "example.test/w", 1_700_000_000, "example.test/log", 41,
                                         ours.root())
    wv = aics_tlog.format_vkey(aics_tlog.cosignature_vkey("example.test/w", witness_key.public_key()))
    lv = aics_tlog.format_vkey(aics_tlog.vkey_from_ed25519("example.test/log", log_key.public_key()))
    both = aics_tlog.Note(signed.text, (*signed.signatures, line))
    note = parse_note(both.serialise())
    assert note.text == checkpoint_text("example.test/log", 41, ours.root())
    assert note.verified_by(parse_vkey(lv)) is True and note.verified_by(parse_vkey(wv)) is True
