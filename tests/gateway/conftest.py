"""Fixtures for the gateway suite (helpers live in `gateway_support`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from checkrein.state.redis import RedisState
from checkrein.testing.services import redis_for_tests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server nobody kills: `.ci/services.sh`'s, or one of our own."""
    with redis_for_tests(Path(tmp_path_factory.mktemp("redis"))) as url:
        yield url


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[RedisState]:
    """A `RedisState` with a key prefix of its own (tests never see each other's keys)."""
    state = RedisState(redis_url, prefix=f"test:{uuid.uuid4().hex}:", timeout_s=2.0)
    try:
        yield state
    finally:
        await state.aclose()
