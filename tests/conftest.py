"""Shared pytest setup. Each package's tests live in tests/<package>/ and own their fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("CHECKREIN_CORPORA", REPO.parent / "shared" / "corpora"))


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests (so subprocess servers use the same venv)."""
    return sys.executable
