"""serve's event loop and uvicorn's HTTP parser: uvloop and httptools by default where installed,
the stdlib loop and h11 when switched off (`cli/gateway.event_loop_options`, `frontend/http.http_parser`)."""

from __future__ import annotations

import importlib.util
import sys

import anyio
import pytest

from checkrein.cli.gateway import event_loop_options
from checkrein.frontend.http import http_parser

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


def test_uvloop_is_the_default_where_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No switch: uvloop exactly when it is importable (the dependency's platforms)."""
    monkeypatch.delenv("CHECKREIN_EVENT_LOOP", raising=False)
    assert event_loop_options() == {"use_uvloop": HAS_UVLOOP}


@pytest.mark.parametrize("value", ["asyncio", "ASYNCIO", " asyncio "])
def test_event_loop_switch_turns_uvloop_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """CHECKREIN_EVENT_LOOP=asyncio runs the stdlib loop."""
    monkeypatch.setenv("CHECKREIN_EVENT_LOOP", value)
    assert event_loop_options() == {"use_uvloop": False}


def test_a_missing_uvloop_falls_back_to_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where uvloop cannot be imported, serve runs the stdlib loop rather than failing."""
    monkeypatch.delenv("CHECKREIN_EVENT_LOOP", raising=False)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import raises ImportError
    assert event_loop_options() == {"use_uvloop": False}


def test_the_options_run_a_uvloop_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Linux (uvloop is a dependency there) the options start a uvloop loop, not a flag that is ignored."""
    import asyncio

    monkeypatch.delenv("CHECKREIN_EVENT_LOOP", raising=False)

    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert anyio.run(loop_module, backend_options=event_loop_options()).startswith("uvloop")


@pytest.mark.parametrize(("value", "parser"), [(None, "auto"), ("h11", "h11"), ("HTTPTOOLS", "httptools"), ("bogus", "auto")])
def test_http_parser_switch(monkeypatch: pytest.MonkeyPatch, value: str | None, parser: str) -> None:
    """CHECKREIN_HTTP_PARSER picks uvicorn's parser; unset or unknown leaves uvicorn's own pick."""
    if value is None:
        monkeypatch.delenv("CHECKREIN_HTTP_PARSER", raising=False)
    else:
        monkeypatch.setenv("CHECKREIN_HTTP_PARSER", value)
    assert http_parser() == parser
