"""The tamper matrix: every edit to a generated log is detected and blamed on the right seq."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkrein.audit.merkle import MerkleFrontier
from checkrein.audit.schema import render
from checkrein.audit.signing import generate_keypair
from checkrein.audit.verify import verify_log

from .helpers import make_record, write_log

N_CALLS = 40


@pytest.fixture(scope="module")
def signed_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A closed, signed, single-segment log of ~50 events (checkpoint every 10)."""
    root = tmp_path_factory.mktemp("signed")
    priv, pub, _ = generate_keypair(root / "keys")
    d = root / "audit"
    write_log(d, [make_record(i) for i in range(N_CALLS)], signing_key=str(priv))
    return d, pub


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "log"
    shutil.copytree(src, dst)
    for p in dst.glob("index.sqlite*"):
        p.unlink()  # the JSONL chain is under test here; index agreement has its own test
    return dst


def _lines(d: Path) -> list[bytes]:
    return (d / "segment-000001.jsonl").read_bytes().splitlines(keepends=True)


def _write(d: Path, lines: list[bytes]) -> None:
    (d / "segment-000001.jsonl").write_bytes(b"".join(lines))


def _checkpoint_seqs(lines: list[bytes]) -> list[int]:
    return [json.loads(x)["seq"] for x in lines if b'"type":"checkpoint"' in x]


def _blamed(d: Path, pub: Path | None = None) -> int | None:
    report = verify_log(d, public_key=pub)
    assert report.exit_code == 1, report.as_dict()
    assert report.problem is not None
    return report.problem.seq


def test_untouched_log_is_valid_with_its_key(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, pub = signed_log
    report = verify_log(_copy(d, tmp_path), public_key=pub)
    assert report.exit_code == 0 and report.signatures_checked >= 4


@pytest.mark.parametrize("k", [1, 7, 10, 23, 33])
def test_flipping_any_byte_of_an_event_blames_that_event(signed_log: tuple[Path, Path], tmp_path: Path, k: int) -> None:
    d, _ = signed_log
    original = _lines(d)
    length = len(original[k])
    for pos in sorted({0, 1, length // 7, length // 3, length // 2, length - 70, length - 3, length - 2, length - 1}):
        work = _copy(d, tmp_path / f"p{pos}")
        lines = list(original)
        b = bytearray(lines[k])
        b[pos] ^= 0x01 if b[pos] != 0x0A else 0x20
        lines[k] = bytes(b)
        _write(work, lines)
        assert _blamed(work) == k, (pos, chr(original[k][pos]))


def test_deleting_an_event_blames_the_missing_seq(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    del lines[17]
    _write(work, lines)
    assert _blamed(work) == 17


def test_swapping_two_events_blames_the_first_position(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    lines[20], lines[21] = lines[21], lines[20]
    _write(work, lines)
    assert _blamed(work) == 20


def test_inserting_a_well_formed_linked_event_blames_its_seq(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    k = 14
    forged = json.loads(lines[k])
    forged.pop("hash")
    forged["trace_id"] = "forged"
    forged["prev_hash"] = json.loads(lines[k - 1])["hash"]
    line, _ = render(forged)
    lines.insert(k, line)
    _write(work, lines)
    assert _blamed(work) == k


def test_duplicating_an_event_blames_its_seq(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    lines.insert(9, lines[8])
    _write(work, lines)
    assert _blamed(work) == 8


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_truncating_whole_lines_at_the_tail_blames_the_first_missing_seq(
    signed_log: tuple[Path, Path], tmp_path: Path, cut: int
) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    _write(work, lines[:-cut])
    assert _blamed(work) == len(lines) - cut


def test_truncating_mid_line_blames_the_torn_event(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    k = len(lines) - 3
    _write(work, lines[:k] + [lines[k][:40]])
    assert _blamed(work) == k


def test_deleting_a_window_between_checkpoints_blames_its_first_seq(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    cps = _checkpoint_seqs(lines)
    start, end = cps[1] + 1, cps[2]  # everything strictly between two checkpoints
    _write(work, lines[:start] + lines[end:])
    assert _blamed(work) == start


def _rechain(events: list[dict[str, Any]], start: int) -> list[bytes]:
    """What an attacker without the key can do: recompute every hash, link, count and Merkle
    root from ``start`` on, keeping (now invalid) signatures or dropping them."""
    frontier = MerkleFrontier()
    out: list[bytes] = []
    prev = "0" * 64
    for e in events:
        body = {k: v for k, v in e.items() if k != "hash"}
        if body["seq"] >= start:
            body["prev_hash"] = prev
            if body["type"] == "checkpoint":
                body["head_hash"] = prev
                body["merkle_root"] = frontier.root()
        line, h = render(body)
        out.append(line)
        frontier.append(h)
        prev = h
    return out


@pytest.mark.parametrize("drop_signatures", [False, True])
def test_consistent_rewrite_without_the_key_is_caught_at_the_next_signed_checkpoint(
    signed_log: tuple[Path, Path], tmp_path: Path, drop_signatures: bool
) -> None:
    d, pub = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    events = [json.loads(x) for x in lines]
    k = 12
    events[k]["outcome"] = "denied"
    if drop_signatures:
        for e in events:
            if e["type"] == "checkpoint":
                e["signature"] = None
    _write(work, _rechain(events, 0))
    # Without the key the rewrite is self-consistent (and verify says signatures were not checked).
    unkeyed = verify_log(work)
    assert unkeyed.exit_code == 0 and any("not checked" in w for w in unkeyed.warnings)
    cps = _checkpoint_seqs(lines)
    expected = cps[0] if drop_signatures else min(s for s in cps if s > k)
    assert _blamed(work, pub) == expected


def test_wrong_key_is_reported_at_the_first_checkpoint(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    _, other, _ = generate_keypair(tmp_path / "other")
    work = _copy(d, tmp_path)
    report = verify_log(work, public_key=other)
    assert report.exit_code == 1 and report.problem is not None
    assert report.problem.seq == _checkpoint_seqs(_lines(work))[0]
    assert "given key" in report.problem.reason


@pytest.fixture(scope="module")
def rotated_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("rotated") / "audit"
    write_log(d, [make_record(i, arguments={"blob": "y" * 300, "i": i}) for i in range(40)],
              segment_max_bytes=4096, batch_max=3)
    assert len(list(d.glob("segment-*.jsonl"))) >= 3
    return d


def test_changing_a_segment_link_blames_the_link_event(rotated_log: Path, tmp_path: Path) -> None:
    work = _copy(rotated_log, tmp_path)
    seg2 = work / "segment-000002.jsonl"
    lines = seg2.read_bytes().splitlines(keepends=True)
    link = json.loads(lines[0])
    link.pop("hash")
    link["prev_segment_head"] = "f" * 64
    lines[0], _ = render(link)
    seg2.write_bytes(b"".join(lines))
    # The link's own hash is consistent now; the verifier must still refuse the link.
    report = verify_log(work)
    assert report.exit_code == 1 and report.problem is not None
    assert report.problem.seq == link["seq"] and "segment" in report.problem.reason


def test_deleting_a_whole_segment_is_detected(rotated_log: Path, tmp_path: Path) -> None:
    work = _copy(rotated_log, tmp_path)
    (work / "segment-000002.jsonl").unlink()
    report = verify_log(work)
    assert report.exit_code == 1 and "segment 2 is missing" in report.problem.reason  # type: ignore[union-attr]


def test_a_segment_from_another_install_is_named_as_such(rotated_log: Path, tmp_path: Path) -> None:
    other = tmp_path / "other" / "audit"
    write_log(other, [make_record(i, arguments={"blob": "y" * 300, "i": i}) for i in range(40)],
              segment_max_bytes=4096, batch_max=3)
    work = _copy(rotated_log, tmp_path)
    shutil.copy(other / "segment-000002.jsonl", work / "segment-000002.jsonl")
    report = verify_log(work)
    assert report.exit_code == 1 and report.problem is not None
    assert "another checkrein install" in report.problem.reason
    assert report.problem.file == "segment-000002.jsonl" and report.problem.line == 1


def test_a_single_later_segment_verifies_on_its_own_with_a_warning(rotated_log: Path) -> None:
    segs = sorted(rotated_log.glob("segment-*.jsonl"))
    report = verify_log(segs[1], live=True)
    assert report.exit_code == 0, report.problem
    assert any("partial" in w for w in report.warnings)


def test_newer_schema_version_is_unreadable_not_invalid(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    e = json.loads(lines[5])
    e.pop("hash")
    e["schema_version"] = 2
    lines[5], _ = render(e)
    _write(work, lines)
    report = verify_log(work)
    assert report.exit_code == 2 and "newer" in report.problem.reason  # type: ignore[union-attr]
    assert report.problem.seq == 5  # type: ignore[union-attr]


def test_missing_directory_and_empty_directory_are_usage_errors(tmp_path: Path) -> None:
    missing = verify_log(tmp_path / "nope")
    assert missing.exit_code == 2 and "no such file or directory" in missing.problem.reason  # type: ignore[union-attr]
    (tmp_path / "empty").mkdir()
    empty = verify_log(tmp_path / "empty")
    assert empty.exit_code == 2 and "no audit segments" in empty.problem.reason  # type: ignore[union-attr]


def test_index_disagreeing_with_the_chain_is_invalid(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    import sqlite3

    d, _ = signed_log
    work = tmp_path / "log"
    shutil.copytree(d, work)
    db = sqlite3.connect(work / "index.sqlite")
    db.execute("UPDATE events SET trace_id = 'trace-X' WHERE seq = 4")
    db.commit()
    db.close()
    report = verify_log(work)
    assert report.exit_code == 1 and report.problem is not None and report.problem.file == "index.sqlite"
    assert report.problem.seq == 4


def test_live_mode_accepts_an_open_tail_but_not_a_gap(signed_log: tuple[Path, Path], tmp_path: Path) -> None:
    d, _ = signed_log
    work = _copy(d, tmp_path)
    lines = _lines(work)
    _write(work, lines[:-1] + [lines[-1][:30]])
    assert verify_log(work, live=True).exit_code == 0
    assert verify_log(work).exit_code == 1
    _write(work, lines[:10] + lines[11:])
    assert verify_log(work, live=True).exit_code == 1


def test_cutting_back_to_an_earlier_clean_shutdown_is_caught_by_an_anchor(tmp_path: Path) -> None:
    """A log cut right after an earlier run's shutdown checkpoint is self-consistent; an anchor
    (seq and hash recorded outside the log) proves the cut."""
    d = tmp_path / "audit"
    write_log(d, [make_record(i) for i in range(5)], sqlite=False)
    first_run = _lines(d)
    write_log(d, [make_record(i) for i in range(5, 12)], sqlite=False)
    full = _lines(d)
    last = json.loads(full[-1])
    anchor = ((last["seq"], last["hash"]),)
    assert verify_log(d, anchors=anchor).exit_code == 0
    _write(d, first_run)
    assert verify_log(d).exit_code == 0  # nothing in the log itself can tell
    report = verify_log(d, anchors=anchor)
    assert report.exit_code == 1 and report.problem is not None and "past the end" in report.problem.reason
    _write(d, full)
    wrong = verify_log(d, anchors=((5, "0" * 64),))
    assert wrong.exit_code == 1 and wrong.problem is not None and wrong.problem.seq == 5
