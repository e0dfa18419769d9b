"""The lock file: round trip, atomic write, invalid files, and canonical digests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkrein.canonical import canonical_json, digest
from checkrein.catalog import PinnedTool, ToolDefinition, read_lock, render_lock, write_lock
from checkrein.errors import LockFileError

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_same_value_gives_same_bytes_whatever_the_key_order(value: Any) -> None:
    def reorder(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: reorder(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reorder(x) for x in v]
        return v

    assert canonical_json(value) == canonical_json(reorder(value))
    assert canonical_json(json.loads(canonical_json(value))) == canonical_json(value)
    assert digest(value) == digest(reorder(value))


@given(st.text(max_size=30), st.text(max_size=60))
def test_tool_digest_depends_only_on_pinned_fields(name: str, description: str) -> None:
    a = ToolDefinition(server="s1", name=name, description=description)
    b = ToolDefinition(server="s2", name=name, description=description)
    assert a.digest == b.digest == digest(a.pinned_fields())


def pins() -> dict[str, PinnedTool]:
    t = ToolDefinition(server="a", name="x", description="é ünïcode")
    return {"a__x": PinnedTool(t.digest, t.pinned_fields())}


def test_missing_lock_reads_as_none(tmp_path: Path) -> None:
    assert read_lock(tmp_path / "checkrein.lock") is None


def test_written_lock_reads_back_and_is_sorted_json(tmp_path: Path) -> None:
    path = tmp_path / "checkrein.lock"
    write_lock(path, pins())
    assert read_lock(path) == pins()
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["version"] == 1 and list(doc["tools"]) == ["a__x"]
    assert path.read_bytes() == render_lock(pins())
    assert [p.name for p in tmp_path.iterdir()] == ["checkrein.lock"], "no temporary file left behind"


@pytest.mark.parametrize(
    "content, match",
    [
        (b"{not json", "not valid JSON"),
        (b'{"version": 2, "tools": {}}', "version 1"),
        (b'{"version": 1, "tools": {"a__x": {"digest": 1}}}', "needs a string"),
        (b'{"version": 1, "tools": {"a__x": {"digest": "sha256:00", "definition": {}}}}', "edited by hand"),
    ],
)
def test_invalid_lock_raises_lock_file_error(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "checkrein.lock"
    path.write_bytes(content)
    with pytest.raises(LockFileError, match=match):
        read_lock(path)


def test_unwritable_directory_raises_lock_file_error(tmp_path: Path) -> None:
    with pytest.raises(LockFileError, match="cannot write"):
        write_lock(tmp_path / "missing-dir" / "checkrein.lock", pins())
