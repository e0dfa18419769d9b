"""Fixtures for the policy engine, approval, budget, reload and `policy check` tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
