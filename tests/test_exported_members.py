"""The package's public face is exactly its `__all__` (httpx's habit)."""

from __future__ import annotations

import checkrein


def test_all_lists_exactly_the_public_members() -> None:
    public = {name for name in vars(checkrein) if not name.startswith("_")}
    # submodules imported as a side effect of importing the package are not API
    public -= {"config", "errors", "policy", "canonical", "catalog"}
    assert set(checkrein.__all__) - {"__version__"} == public


def test_version_is_a_string() -> None:
    assert isinstance(checkrein.__version__, str) and checkrein.__version__.count(".") == 2
