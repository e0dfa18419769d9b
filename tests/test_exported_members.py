"""The package's public face is exactly its `__all__` (httpx's habit)."""

from __future__ import annotations

import types

import checkrein


def test_all_lists_exactly_the_public_members() -> None:
    # submodules (imported as a side effect by other tests) are not the curated API
    public = {
        name
        for name, value in vars(checkrein).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(checkrein.__all__) - {"__version__"} == public


def test_version_is_a_string() -> None:
    assert isinstance(checkrein.__version__, str) and checkrein.__version__.count(".") == 2
