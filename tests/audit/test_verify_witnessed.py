"""The tamper matrix, grown: attacks a log cannot reveal about itself, each caught by a witnessed
tlog-policy (a real aics-witness on loopback) and named by `Problem.kind`."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkrein.audit.checkpoints import CheckpointStore
from checkrein.audit.merkle import MerkleFrontier
from checkrein.audit.note import checkpoint_text, parse_checkpoint
from checkrein.audit.schema import GENESIS_HASH, render
from checkrein.audit.signing import CheckpointSigner
from checkrein.audit.sqlite_index import rebuild_index
from checkrein.audit.tlog_policy import parse_tlog_policy
from checkrein.audit.verify import VerifyReport, verify_log
from checkrein.audit.witness_http import HttpWitnessTransport

from .helpers import make_record, write_log
from .test_witness import ORIGIN, key, log_vkey, policy_text, witness, witnessed  # noqa: F401 - fixtures
from .witness_server import AicsWitness


@pytest.fixture
def two_runs(tmp_path: Path, key: Path, witness: AicsWitness) -> Iterator[tuple[Path, Path]]:  # noqa: F811
    """A log witnessed over two runs; also a copy of it as it was after the first run."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(15)], **witnessed(key, witness))
    first = tmp_path / "after-first-run"
    shutil.copytree(d, first)
    write_log(d, [make_record(i) for i in range(15, 40)], **witnessed(key, witness))
    yield d, first


def check(d: Path, key: Path, w: AicsWitness, *, ask: bool = True) -> VerifyReport:  # noqa: F811
    transport = HttpWitnessTransport()
    try:
        return verify_log(d, policy=parse_tlog_policy(policy_text(key, w, url=ask)), witness_transport=transport)
    finally:
        transport.close()


def problem_kind(report: VerifyReport) -> str | None:
    assert report.exit_code == 1, report.as_dict()
    assert report.problem is not None
    return report.problem.kind


def rechain(d: Path, key: Path) -> None:  # noqa: F811
    """The same events with new hashes: a new genesis id, every link, root and signature redone
    with the log's own key (the strongest attacker: one who holds the key)."""
    signer = CheckpointSigner.from_file(key)
    prev, frontier = GENESIS_HASH, MerkleFrontier()
    for seg in sorted(d.glob("segment-*.jsonl")):
        out = []
        for raw in seg.read_bytes().splitlines():
            e = json.loads(raw)
            del e["hash"]
            if e["type"] == "genesis":
                e["event_id"] = str(uuid.uuid4())
            e["prev_hash"] = prev
            if e["type"] == "segment":
                e["prev_segment_head"] = prev
            if e["type"] == "checkpoint":
                e["head_hash"], e["merkle_root"] = prev, frontier.root()
                e["signature"] = signer.sign(e)
            line, prev = render(e)
            out.append(line)
            frontier.append(prev)
        seg.write_bytes(b"".join(out))
    rebuild_index(d)


def resign_notes(d: Path, key: Path, *, keep_cosignatures: bool) -> None:  # noqa: F811
    """Replace every checkpoint note with one over the (rewritten) log, signed with the log key."""
    store = CheckpointStore(d)
    signer = CheckpointSigner.from_file(key).note_signer(ORIGIN)
    events = [json.loads(x) for s in sorted(d.glob("segment-*.jsonl")) for x in s.read_bytes().splitlines()]
    roots = {e["count"]: bytes.fromhex(e["merkle_root"]) for e in events if e["type"] == "checkpoint"}
    for size in store.sizes():
        old = store.load(size)
        note = signer.sign(checkpoint_text(ORIGIN, size, roots[size]))
        if keep_cosignatures:
            note = note.with_signatures([s for s in old.signatures if s.name != ORIGIN])
        store.save(size, note)


def test_an_untouched_witnessed_log_is_valid(two_runs: tuple[Path, Path], key: Path, witness: AicsWitness) -> None:  # noqa: F811
    assert check(two_runs[0], key, witness).exit_code == 0


def test_whole_chain_rewrite_is_caught_by_the_cosigned_checkpoints(
    two_runs: tuple[Path, Path], key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    """Same events, new hashes, re-signed with the stolen key: internally perfect, and a key-only
    verify passes it; the cosigned notes it kept are no prefix of it."""
    d, _ = two_runs
    rechain(d, key)
    assert verify_log(d, public_key=_pem_public(key, d.parent)).exit_code == 0
    report = check(d, key, witness, ask=False)
    assert problem_kind(report) == "rewrite" and "not a prefix" in str(report.problem)


def test_rewrite_with_resigned_notes_is_a_fork_to_the_witness(
    two_runs: tuple[Path, Path], key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    d, _ = two_runs
    rechain(d, key)
    resign_notes(d, key, keep_cosignatures=False)
    assert problem_kind(check(d, key, witness, ask=False)) == "no_quorum"  # offline: nobody cosigned it
    report = check(d, key, witness)
    assert problem_kind(report) == "fork" and "w1" in str(report.problem)


def test_rewrite_with_copied_cosignatures_is_caught(
    two_runs: tuple[Path, Path], key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    d, _ = two_runs
    rechain(d, key)
    resign_notes(d, key, keep_cosignatures=True)
    report = check(d, key, witness, ask=False)
    assert problem_kind(report) == "rewrite" and "cosignature does not verify" in str(report.problem)


def test_cut_back_to_an_earlier_cosigned_checkpoint_is_caught_by_asking_the_witness(
    two_runs: tuple[Path, Path], key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    """The whole directory restored to the first run's clean, cosigned end: every file agrees with
    every other, so only a witness that has seen more can tell."""
    d, first = two_runs
    shutil.rmtree(d)
    shutil.copytree(first, d)
    offline = check(d, key, witness, ask=False)
    assert offline.exit_code == 0 and any("cut back" in u for u in offline.undetected)
    report = check(d, key, witness)
    assert problem_kind(report) == "cut_back" and "has cosigned size" in str(report.problem)


def test_cut_segments_with_the_later_notes_left_behind_are_caught_offline(
    two_runs: tuple[Path, Path], key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    d, first = two_runs
    for seg in first.glob("segment-*.jsonl"):
        shutil.copy(seg, d / seg.name)
    rebuild_index(d)
    assert problem_kind(check(d, key, witness, ask=False)) == "cut_back"


def test_fork_two_logs_with_one_origin_and_size(
    tmp_path: Path, two_runs: tuple[Path, Path], key: Path, witness: AicsWitness  # noqa: F811
) -> None:
    """A second history grown from the same first run to the same size: the gateway writing it is
    refused by the witness (counted), and verify names the fork."""
    d, first = two_runs
    other = tmp_path / "fork"
    shutil.copytree(first, other)
    trail = write_log(other, [make_record(i, tool="other") for i in range(15, 40)], **witnessed(key, witness))
    assert trail.counters["witness_forks"] == 1 and trail.counters["witness_cosigned"] == 0
    a, b = CheckpointStore(d).newest(), CheckpointStore(other).newest()
    assert a is not None and b is not None and a[0] == b[0]
    assert parse_checkpoint(a[1].text).root != parse_checkpoint(b[1].text).root
    report = check(other, key, witness)
    assert problem_kind(report) == "fork"


def test_deleted_index_is_named_under_a_policy(two_runs: tuple[Path, Path], key: Path, witness: AicsWitness) -> None:  # noqa: F811
    d, _ = two_runs
    for p in d.glob("index.sqlite*"):
        p.unlink()
    assert problem_kind(check(d, key, witness)) == "index_missing"
    plain = verify_log(d)
    assert plain.exit_code == 0 and plain.index == "missing" and any("index.sqlite is missing" in w for w in plain.warnings)


def test_swapped_segments_are_named(tmp_path: Path, key: Path, witness: AicsWitness) -> None:  # noqa: F811
    d = tmp_path / "audit"
    write_log(d, [make_record(i, arguments={"pad": "x" * 900}) for i in range(30)], segment_max_bytes=4096, batch_max=1,
              **witnessed(key, witness))
    segs = sorted(d.glob("segment-*.jsonl"))
    assert len(segs) >= 3
    tmp = d / "swap.tmp"
    segs[1].rename(tmp)
    segs[2].rename(segs[1])
    tmp.rename(segs[2])
    assert problem_kind(check(d, key, witness)) == "segment_order"


def test_an_unsigned_log_cannot_meet_a_policy(tmp_path: Path, key: Path, witness: AicsWitness) -> None:  # noqa: F811
    d = tmp_path / "audit"
    write_log(d, [make_record(1)])
    assert problem_kind(check(d, key, witness)) == "no_origin"


def _pem_public(key: Path, where: Path) -> Path:  # noqa: F811
    from cryptography.hazmat.primitives import serialization

    pub = where / "log.pub"
    pub.write_bytes(CheckpointSigner.from_file(key).public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pub
