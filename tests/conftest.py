"""Shared pytest setup. Each package's tests live in tests/<package>/ and own their fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests (so subprocess servers use the same venv)."""
    return sys.executable
