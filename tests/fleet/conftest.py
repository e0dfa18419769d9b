"""Fixtures for the fleet suite: two replicas behind nginx, Redis, PostgreSQL, an OTLP receiver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from checkrein.testing.fleet import Fleet
from checkrein.testing.otlp_receiver import OtlpReceiver

POLICY = """
[policy]
allow = ["echo__*"]
deny = ["echo__fail"]
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def otlp() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[Fleet]:
    with Fleet.start(tmp_path_factory.mktemp("fleet"), replicas=2, otlp_endpoint=otlp.endpoint, extra=POLICY) as f:
        yield f
