"""JSONL segment files: naming, the append-only file seam, and the tail scan done at start.

A log directory holds ``segment-000001.jsonl``, ``segment-000002.jsonl``, ... and ``index.sqlite``.
Lines are numbered across segments from 0, and line ``i`` holds the event with ``seq == i`` (the
chain is gapless), which lets recovery and reindexing work without parsing every line.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from checkrein.errors import AuditError

from .schema import EventError, strict_loads

__all__ = [
    "INDEX_FILE",
    "LOCK_FILE",
    "LogFile",
    "LogOpener",
    "SEGMENT_RE",
    "OsLogFile",
    "TailState",
    "fsync_dir",
    "iter_lines",
    "iter_located_lines",
    "lock_directory",
    "list_segments",
    "scan_tail",
    "segment_name",
]

INDEX_FILE = "index.sqlite"
LOCK_FILE = "writer.lock"
SEGMENT_RE = re.compile(r"segment-(\d{6,9})\.jsonl\Z")
_HASH_SUFFIX = re.compile(rb',"hash":"([0-9a-f]{64})"\}\Z')


def segment_name(index: int) -> str:
    return f"segment-{index:06d}.jsonl"


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """(index, path) of every segment file in ``directory``, by index. Raises ``OSError``."""
    found: list[tuple[int, Path]] = []
    for entry in os.scandir(directory):
        m = SEGMENT_RE.match(entry.name)
        if m and entry.is_file(follow_symlinks=False):
            found.append((int(m.group(1)), Path(entry.path)))
    found.sort()
    return found


class LogFile(Protocol):
    """An append-only file. Each method either completes or raises ``OSError`` (possibly after a
    partial write); the writer then truncates back to the last good size before retrying."""

    def write(self, data: bytes) -> None: ...

    def sync(self) -> None: ...

    def truncate(self, size: int) -> None: ...

    def size(self) -> int: ...

    def close(self) -> None: ...


LogOpener = Callable[[Path], LogFile]


class OsLogFile:
    """`LogFile` over a raw descriptor opened ``O_APPEND`` (so a write after a truncate lands at
    the new end), created mode 0600."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o600)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def sync(self) -> None:
        os.fsync(self._fd)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a new file's directory entry durable. Raises ``OSError``."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a fsynced ``.tmp`` renamed over it, the
    directory fsynced: a crash leaves the old file or the new one). Raises ``OSError``."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def lock_directory(directory: Path) -> int:
    """Take the log's writer lock (``flock`` on ``writer.lock``; the kernel drops it if the holder
    dies) and return its descriptor; close it to release. Two writers on one chain would fork
    it, so a second one is refused: raises ``AuditError`` (code ``audit.locked``)."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise AuditError(
            f"{directory} is open by another checkrein writer (stop it first)", code="audit.locked"
        ) from None
    return fd


def iter_lines(directory: Path, start_seq: int = 0) -> Iterator[tuple[int, bytes]]:
    """(seq, line without newline) of every complete line from ``start_seq`` on, across segments."""
    seq = 0
    for _, path in list_segments(directory):
        with path.open("rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    return
                if seq >= start_seq:
                    yield seq, raw[:-1]
                seq += 1


def iter_located_lines(directory: Path, start_seq: int = 0) -> Iterator[tuple[int, int, int, bytes]]:
    """(seq, segment index, byte offset in that segment, line without newline) of every complete
    line from ``start_seq`` on, across segments."""
    for located in iter_located_lines_at(directory, 0, -1, 0):
        if located[0] >= start_seq:
            yield located


def iter_located_lines_at(directory: Path, seq: int, segment: int, offset: int) -> Iterator[tuple[int, int, int, bytes]]:
    """`iter_located_lines` from the line of ``seq`` known to start at ``offset`` of ``segment``
    (0, -1, 0: the first line of the log), without reading what comes before it."""
    for index, path in list_segments(directory):
        if index < segment:
            continue
        position = offset if index == segment else 0
        with path.open("rb") as f:
            f.seek(position)
            for raw in f:
                if not raw.endswith(b"\n"):
                    return
                yield seq, index, position, raw[:-1]
                position += len(raw)
                seq += 1


@dataclass
class TailState:
    """What the writer needs to continue a log."""

    log_id: str | None = None
    next_seq: int = 0
    head_hash: str | None = None
    hashes: list[str] = field(default_factory=list)
    last_segment: int = 1
    last_segment_lines: int = 0
    last_type: str | None = None
    last_reason: str | None = None
    cut_bytes: int = 0
    cut_sha256: str | None = None
    cut_lines: int = 0


def scan_tail(directory: Path, *, cut: bool = True) -> TailState:
    """Read every segment's hashes and check the last segment's tail; with ``cut``, truncate a torn
    (or unparsable) final line in place and report it. Raises ``AuditError`` when the log is
    damaged before its last line (that needs `checkrein audit verify`, not silent repair)."""
    state = TailState()
    segments = list_segments(directory)
    for pos, (index, path) in enumerate(segments):
        last = pos == len(segments) - 1
        data = path.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()  # bytes after the last newline ("" when the file ends cleanly)
        if tail and not last:
            raise AuditError(f"{path.name}: segment does not end with a newline", code="audit.log_corrupt")
        cut_bytes = len(tail)
        cut_parts = [tail] if tail else []
        if last and lines:
            # A torn write may also leave a complete but garbled final line: cut it too.
            try:
                _parse_tail_line(lines[-1])
            except EventError:
                bad = lines.pop()
                cut_parts.insert(0, bad + b"\n")
                cut_bytes += len(bad) + 1
                state.cut_lines += 1
        for n, line in enumerate(lines):
            m = _HASH_SUFFIX.search(line)
            if m is None:
                raise AuditError(
                    f"{path.name} line {n + 1}: not an audit event (run `checkrein audit verify`)",
                    code="audit.log_corrupt",
                )
            state.hashes.append(m.group(1).decode())
        if cut_bytes:
            if not cut:
                raise AuditError(f"{path.name}: torn last line", code="audit.log_corrupt")
            removed = b"".join(cut_parts)
            state.cut_bytes = cut_bytes
            state.cut_sha256 = hashlib.sha256(removed).hexdigest()
            state.cut_lines += 1 if tail else 0
            with path.open("r+b") as f:
                f.truncate(len(data) - cut_bytes)
                f.flush()
                os.fsync(f.fileno())
        if last:
            state.last_segment = index
            state.last_segment_lines = len(lines)
            if lines:
                first = _parse_tail_line(lines[0])
                state.log_id = _str_field(first, "log_id")
                final = _parse_tail_line(lines[-1])
                state.last_type = str(final.get("type"))
                state.last_reason = str(final.get("reason")) if "reason" in final else None
    state.next_seq = len(state.hashes)
    state.head_hash = state.hashes[-1] if state.hashes else None
    if state.log_id is None and len(segments) > 1 and state.last_segment_lines == 0:
        # The newest segment was created but never written: take the id from the one before.
        with segments[-2][1].open("rb") as f:
            first = _parse_tail_line(f.readline().rstrip(b"\n"))
        state.log_id = _str_field(first, "log_id")
    return state


def _str_field(obj: dict[str, object], name: str) -> str | None:
    value = obj.get(name)
    return value if isinstance(value, str) else None


def _parse_tail_line(line: bytes) -> dict[str, object]:
    obj = strict_loads(line)
    if not isinstance(obj, dict) or not isinstance(obj.get("seq"), int) or not _HASH_SUFFIX.search(line):
        raise EventError("not an audit event")
    return obj
