"""RFC 6962 proofs: every (index, size) and (old, new) pair verifies, and a wrong root or index
does not; roots agree with the reference Merkle root; tlog-proof text round-trips."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.audit.merkle import merkle_root
from checkrein.audit.note import NoteSigner, checkpoint_text
from checkrein.audit.proofs import (
    MerkleTree,
    ProofError,
    TlogProof,
    leaf_hash,
    parse_tlog_proof,
    verify_consistency,
    verify_inclusion,
)

ENTRIES = [hashlib.sha256(b"%d" % i).digest() for i in range(67)]
TREE = MerkleTree(ENTRIES)


def test_roots_match_the_reference_at_every_size() -> None:
    for n in range(len(ENTRIES) + 1):
        assert TREE.root(n).hex() == merkle_root([e.hex() for e in ENTRIES[:n]])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 67).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_inclusion_proofs_verify_and_bind_index_and_root(case: tuple[int, int]) -> None:
    n, i = case
    proof = TREE.inclusion_proof(i, n)
    assert verify_inclusion(leaf_hash(ENTRIES[i]), i, n, proof, TREE.root(n))
    assert not verify_inclusion(leaf_hash(ENTRIES[i]), i, n, proof, TREE.root(n - 1) if n > 1 else b"\0" * 32)
    if n > 1:
        assert not verify_inclusion(leaf_hash(ENTRIES[i]), (i + 1) % n, n, proof, TREE.root(n))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 67).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_consistency_proofs_verify_and_a_changed_history_does_not(case: tuple[int, int]) -> None:
    m, n = case
    proof = TREE.consistency_proof(m, n)
    assert verify_consistency(m, n, TREE.root(m), TREE.root(n), proof)
    if 0 < m < n:
        other = MerkleTree([*ENTRIES[: m - 1], b"\xff" * 32, *ENTRIES[m:n]])
        assert not verify_consistency(m, n, other.root(m), TREE.root(n), proof)
        assert not verify_consistency(m, n, TREE.root(m), other.root(n), proof)


def test_proofs_past_the_tree_are_refused() -> None:
    with pytest.raises(ProofError):
        TREE.consistency_proof(3, 68)
    with pytest.raises(ProofError):
        TREE.inclusion_proof(5, 5)


def test_tlog_proof_text_round_trips() -> None:
    note = NoteSigner(Ed25519PrivateKey.generate(), "log").sign(checkpoint_text("log", 67, TREE.root()))
    proof = TlogProof(9, tuple(TREE.inclusion_proof(9, 67)), note, extra=b'{"seq":9}')
    text = proof.render()
    assert text.startswith("c2sp.org/tlog-proof@v1\nextra ") and "\nindex 9\n" in text
    assert parse_tlog_proof(text) == proof
    with pytest.raises(ProofError):
        parse_tlog_proof(text.replace("index 9", "index x"))
