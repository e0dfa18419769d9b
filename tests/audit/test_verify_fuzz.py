"""Fuzzing the verifier: random bytes and random mutations of a valid log never raise or hang,
and every change is reported as invalid (1) or unreadable (2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkrein.audit.verify import verify_log

from .helpers import make_record, write_log

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    root = tmp_path_factory.mktemp("fuzz")
    d = root / "audit"
    write_log(d, [make_record(i) for i in range(6)], checkpoint_every=3, sqlite=False)
    return root, (d / "segment-000001.jsonl").read_bytes()


def _check(root: Path, data: bytes) -> int:
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    (work / "segment-000001.jsonl").write_bytes(data)
    report = verify_log(work)
    assert report.exit_code in (0, 1, 2)
    assert report.exit_code == 0 or report.problem is not None
    return report.exit_code


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_are_rejected_without_raising(base: tuple[Path, bytes], data: bytes) -> None:
    assert _check(base[0], data) in (1, 2)


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 400)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=60)),
    st.tuples(st.just("duplicate"), st.integers(0, 10**6), st.integers(1, 400)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6), st.just(0)),
)


@FUZZ
@given(st.lists(mutation, min_size=1, max_size=3))
def test_any_mutation_of_a_valid_log_is_detected(base: tuple[Path, bytes], ops: list[tuple[str, int, object]]) -> None:
    root, original = base
    data = bytearray(original)
    for op, pos, arg in ops:
        if not data:
            break
        pos %= len(data)
        if op == "flip":
            data[pos] ^= int(arg)  # type: ignore[call-overload]
        elif op == "delete":
            del data[pos : pos + int(arg)]  # type: ignore[call-overload]
        elif op == "insert":
            data[pos:pos] = arg  # type: ignore[assignment]
        elif op == "duplicate":
            data[pos:pos] = data[pos : pos + int(arg)]  # type: ignore[call-overload]
        else:
            del data[pos:]
    code = _check(root, bytes(data))
    assert code == 0 if bytes(data) == original else code in (1, 2)


def test_huge_line_and_deep_nesting_are_refused_quickly(base: tuple[Path, bytes]) -> None:
    root, original = base
    assert _check(root, b"[" * 500_000 + b"\n") == 1
    assert _check(root, b'{"a":"' + b"x" * (2 * 1024 * 1024) + b'"}\n') == 1
    assert _check(root, original.replace(b'"seq":1,', b'"seq":1e999,', 1)) == 1
    assert _check(root, original[:50] + b"\xff\xfe" + original[52:]) == 1
