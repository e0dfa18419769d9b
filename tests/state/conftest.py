"""Fixtures for the state tests: a real redis-server (`.ci/services.sh`'s, or our own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from checkrein.testing.services import redis_for_tests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_for_tests(Path(tmp_path_factory.mktemp("redis"))) as url:
        yield url
