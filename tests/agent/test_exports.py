"""`checkrein.agent`'s public face is exactly its `__all__`."""

from __future__ import annotations

import types

import checkrein.agent


def test_agent_all_lists_exactly_the_public_members() -> None:
    public = {n for n, v in vars(checkrein.agent).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert set(checkrein.agent.__all__) == public
