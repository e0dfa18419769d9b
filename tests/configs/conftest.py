"""Fixtures for the config importers, lint, skills, ledger and Harbor example tests."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def lint_env() -> dict[str, str]:
    """The environment lint sees in tests: only the variables the fixtures reference on purpose."""
    return {"TOKEN": "t0k3n", "CHECKREIN_TOKEN": "t0k3n"}
