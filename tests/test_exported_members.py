"""The package's public face is exactly its `__all__` (httpx's habit)."""

from __future__ import annotations

import subprocess
import sys

import checkrein


def test_all_lists_exactly_the_public_members() -> None:
    assert sorted(checkrein.__all__) == dir(checkrein)
    for name in checkrein.__all__:
        assert getattr(checkrein, name) is not None


def test_unknown_names_raise_attribute_error() -> None:
    try:
        checkrein.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_package_does_not_load_the_policy_engine() -> None:
    code = "import sys, checkrein; print('checkrein.policy' in sys.modules, 'sqlglot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_version_is_a_string() -> None:
    assert isinstance(checkrein.__version__, str) and checkrein.__version__.count(".") == 2
