"""`GateRelay.progress_message` in-process: what it hands on, and that it fails closed."""

from __future__ import annotations

from typing import Any

import pytest

from checkrein.config import parse_config
from checkrein.gate.counters import Counters
from checkrein.gate.relay import GateRelay, _call_of
from checkrein.policy.inspect import DefaultInspector
from checkrein.testing.content_server import INJECTION, INJECTION_MARK, SECRET

pytestmark = pytest.mark.anyio


class _Target:
    """A `Downstream` that no call can be attributed to (what the relay may ask of it)."""

    progress_token = "p"
    upstream_meta: dict[str, Any] = {}

    def call(self) -> Any:
        return None


class _Breaks:
    def inspect(self, call: Any, view: Any) -> Any:
        raise RuntimeError("inspector bug")


def _relay(inspector: Any) -> GateRelay:
    relay = GateRelay()
    relay.bind(lambda: None, inspector, None, Counters())  # type: ignore[arg-type]
    return relay


async def test_a_secret_is_masked_without_an_inspector() -> None:
    got = await _relay(None).progress_message("s", f"uploading with token={SECRET}", _Target())  # type: ignore[arg-type]
    assert SECRET not in got and "[REDACTED:" in got and got.startswith("uploading with token=")


async def test_an_inspector_that_fails_withholds_the_text() -> None:
    relay = _relay(_Breaks())
    got = await relay.progress_message("s", "step 1 of 2", _Target())  # type: ignore[arg-type]
    assert got == "[a progress message of 's' was withheld by checkrein: it could not be checked]"
    assert relay.counters.withheld_progress_messages == 1


async def test_an_injection_is_withheld_by_the_real_inspector() -> None:
    inspector = DefaultInspector(parse_config("").policy.results)
    relay = _relay(inspector)
    got = await relay.progress_message("s", INJECTION, _Target())  # type: ignore[arg-type]
    assert INJECTION_MARK not in got and "withheld by checkrein" in got
    assert await relay.progress_message("s", "step 1 of 2", _Target()) == "step 1 of 2"  # type: ignore[arg-type]


async def test_a_long_message_is_cut_before_it_is_checked() -> None:
    """Padding cannot push an injection past the inspector's bound or a secret past the finder's:
    the text is cut first, and what was checked is what goes on."""
    relay = _relay(DefaultInspector(parse_config("").policy.results))
    padded = await relay.progress_message("s", "x " * 150_000 + INJECTION, _Target())  # type: ignore[arg-type]
    assert INJECTION_MARK not in padded and "characters cut by checkrein" in padded
    secret = await relay.progress_message("s", "y" * 1_100_000 + f" token={SECRET}", _Target())  # type: ignore[arg-type]
    assert SECRET not in secret and len(secret) < 20_000


def test_a_server_request_too_long_to_inspect_whole_is_refused() -> None:
    """A sampling request padded past the inspector's bound, an injection at its end: refused, not
    forwarded whole with only its head inspected."""
    relay = _relay(DefaultInspector(parse_config("").policy.results))
    call = _call_of(None, "s", "sampling", {})
    padded = {"messages": [{"role": "user", "content": {"type": "text", "text": "x " * 150_000 + INJECTION}}]}
    _, _, why = relay._inspect_request(call, "sampling", padded)
    assert "too long to inspect whole" in why
    short = {"messages": [{"role": "user", "content": {"type": "text", "text": "What is six times seven?"}}]}
    assert relay._inspect_request(call, "sampling", short)[2] == ""
