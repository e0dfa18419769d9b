"""Checkpoints pushed to a real, independent C2SP witness (aics-witness on loopback) as the log runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkrein.audit.checkpoints import CheckpointStore
from checkrein.audit.note import parse_checkpoint, parse_vkey
from checkrein.audit.signing import CheckpointSigner, generate_keypair
from checkrein.audit.tlog_policy import parse_tlog_policy
from checkrein.audit.verify import verify_log
from checkrein.audit.witness_http import HttpWitnessTransport

from .helpers import make_record, write_log
from .witness_server import AicsWitness

ORIGIN = "checkrein/test/log-a"


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return generate_keypair(tmp_path / "keys")[0]


def log_vkey(key: Path, origin: str = ORIGIN) -> str:
    return CheckpointSigner.from_file(key).note_signer(origin).vkey.encode()


@pytest.fixture
def witness(tmp_path: Path, key: Path) -> Iterator[AicsWitness]:
    w = AicsWitness(tmp_path / "witness")
    w.trust(ORIGIN, log_vkey(key))
    w.start()
    yield w
    w.stop()


def witnessed(key: Path, w: AicsWitness) -> dict[str, object]:
    return {"signing_key": str(key), "origin": ORIGIN, "witness": {"urls": [w.url], "quorum": 1}}


def policy_text(key: Path, w: AicsWitness, url: bool = True) -> str:
    return f"log {log_vkey(key)}\nwitness w1 {w.vkey}{' ' + w.url if url else ''}\nquorum w1\n"


def witness_size(w: AicsWitness) -> int:
    logs = w.state()["logs"]
    assert isinstance(logs, list)
    return int(logs[0]["size"])


def test_every_run_ends_with_a_checkpoint_the_witness_cosigned(tmp_path: Path, key: Path, witness: AicsWitness) -> None:
    """The shutdown checkpoint is signed, pushed, cosigned, and the cosignature stored with it; the
    second run's push carries a consistency proof the independent witness accepts."""
    d = tmp_path / "audit"
    first = write_log(d, [make_record(i) for i in range(25)], **witnessed(key, witness))
    store = CheckpointStore(d)
    size, note = store.newest() or (0, None)
    assert note is not None and size == witness_size(witness) == parse_checkpoint(note.text).size
    wkey = parse_vkey(witness.vkey)
    assert note.verified_by(wkey) is True and note.verified_by(parse_vkey(log_vkey(key))) is True
    assert first.counters["witness_cosigned"] >= 1 and first.counters["witness_failures"] == 0
    second = write_log(d, [make_record(i) for i in range(25, 60)], **witnessed(key, witness))
    size2, note2 = store.newest() or (0, None)
    assert size2 > size and witness_size(witness) == size2  # moved forward with a proof from `size`
    assert note2 is not None and note2.verified_by(wkey) is True
    assert second.counters["witness_forks"] == second.counters["witness_ahead"] == 0


def test_a_witnessed_log_verifies_anchored_against_its_policy(tmp_path: Path, key: Path, witness: AicsWitness) -> None:
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(12)], **witnessed(key, witness))
    transport = HttpWitnessTransport()
    try:
        report = verify_log(d, policy=parse_tlog_policy(policy_text(key, witness)), witness_transport=transport)
    finally:
        transport.close()
    assert report.exit_code == 0 and report.anchored and not report.undetected, report.as_dict()
    assert report.witnessed is not None and report.witnessed["cosigned_by"] == ["w1"]
    assert report.witnessed["witnesses_asked"] == ["w1"] and report.signatures_checked >= 1


def test_an_unreachable_witness_is_counted_and_never_blocks_calls(tmp_path: Path, key: Path) -> None:
    """Nothing listens on the URL: calls are recorded as ever, the failure and the missed quorum
    are counted, and the note is still written."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    d = tmp_path / "audit"
    trail = write_log(d, [make_record(i) for i in range(5)], signing_key=str(key), origin=ORIGIN,
                      witness={"urls": [f"http://127.0.0.1:{port}"], "quorum": 1, "timeout_s": 2.0})
    c = trail.counters
    assert c["events_written"] >= 5 and c["rejected_unwritable"] == 0
    assert c["witness_failures"] >= 1 and c["witness_quorum_missed"] >= 1 and c["notes_written"] >= 1
    assert CheckpointStore(d).newest() is not None


def test_a_witness_that_does_not_know_the_log_is_a_rejection_not_a_fork(tmp_path: Path, key: Path) -> None:
    w = AicsWitness(tmp_path / "stranger")
    w.start()
    try:
        trail = write_log(tmp_path / "audit", [make_record(1)], signing_key=str(key), origin=ORIGIN,
                          witness={"urls": [w.url]})
    finally:
        w.stop()
    c = trail.counters
    assert c["witness_failures"] == 1 and c["witness_forks"] == 0 and c["witness_ahead"] == 0


def test_audit_witness_by_hand_stores_the_cosignature(tmp_path: Path, key: Path, witness: AicsWitness) -> None:
    """A log served without witnesses is brought to one later with `checkrein audit witness`."""
    from typer.testing import CliRunner

    from checkrein.cli.main import app

    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(8)], signing_key=str(key), origin=ORIGIN)
    size, note = CheckpointStore(d).newest() or (0, None)
    assert note is not None and note.verified_by(parse_vkey(witness.vkey)) is None
    cfg = tmp_path / "gw.toml"
    cfg.write_text(f'[audit]\ndir = "audit"\nsigning_key = "{key}"\norigin = "{ORIGIN}"\n'
                   f'[audit.witness]\nurls = ["{witness.url}"]\n')
    res = CliRunner().invoke(app, ["audit", "witness", "--config", str(cfg)])
    assert res.exit_code == 0 and "cosigned by witness.test/w1" in res.output, res.output
    assert CheckpointStore(d).load(size).verified_by(parse_vkey(witness.vkey)) is True
    again = CliRunner().invoke(app, ["audit", "witness", "--config", str(cfg), "--json"])
    assert again.exit_code == 0 and json.loads(again.output)["cosigned"] == 1
