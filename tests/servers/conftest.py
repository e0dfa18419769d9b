"""Fixtures for the bundled servers: each test talks to a real server subprocess over stdio."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def server_params(name: str, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", f"checkrein.servers.{name}"], env=env)


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    """Environment pointing every server's files into tmp_path."""
    return {
        "CHECKREIN_STATE_DIR": str(tmp_path / "state"),
        "CHECKREIN_SANDBOX_DIR": str(tmp_path / "sandbox"),
        "CHECKREIN_KB_PATH": str(tmp_path / "kb.db"),
        "CHECKREIN_MONITOR_AUDIT": str(tmp_path / "monitor-audit.jsonl"),
    }


@pytest.fixture
def connect(state: dict[str, str]) -> Callable[[str], AbstractAsyncContextManager[Client]]:
    """``async with connect("sandbox") as client`` starts the server and opens a session."""

    @asynccontextmanager
    async def _connect(name: str) -> AsyncIterator[Client]:
        async with Client(server_params(name, state), mode="legacy", read_timeout_seconds=30) as client:
            yield client

    return _connect
