"""serve's event loop and uvicorn's HTTP parser: uvloop and httptools by default where installed,
the stdlib loop and h11 when switched off (`cli/gateway.event_loop_options`, `frontend/http.http_parser`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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


def test_switch_problems_names_every_unknown_value_at_once() -> None:
    """Each switch set to a value it does not take is one message naming it and its values."""
    from checkrein._switches import switch_problems

    assert switch_problems({}) == []
    assert switch_problems({"CHECKREIN_FAST_PATH": " OFF ", "CHECKREIN_EVENT_LOOP": "asyncio",
                            "CHECKREIN_HTTP_PARSER": "", "OTHER": "x"}) == []
    problems = switch_problems({"CHECKREIN_HTTP_PARSER": "bogus", "CHECKREIN_EVENT_LOOP": "uv-loop",
                                "CHECKREIN_FAST_PATH": "of"})
    assert len(problems) == 3
    joined = "\n".join(problems)
    for name, bad, value in [("CHECKREIN_HTTP_PARSER", "bogus", "httptools"),
                             ("CHECKREIN_EVENT_LOOP", "uv-loop", "asyncio"), ("CHECKREIN_FAST_PATH", "of", "off")]:
        assert f"{name}='{bad}'" in joined and value in joined


def test_serve_refuses_an_unknown_switch_before_starting(tmp_path: Path) -> None:
    """A real `checkrein serve` with a mistyped switch exits 2 naming it, instead of running with
    the default the user did not ask for (it spawns nothing: the config's server would fail)."""
    import os
    import subprocess

    cfg = tmp_path / "checkrein.toml"
    cfg.write_text('[[servers]]\nname = "x"\ncommand = "/nonexistent/never-started"\n')
    env = {**os.environ, "CHECKREIN_HTTP_PARSER": "h2", "CHECKREIN_EVENT_LOOP": "ASYNCIO"}
    out = subprocess.run([sys.executable, "-m", "checkrein", "serve", "--config", str(cfg), "--transport", "http",
                          "--port", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "CHECKREIN_HTTP_PARSER='h2'" in out.stderr and "h11, httptools" in out.stderr
    assert "CHECKREIN_EVENT_LOOP" not in out.stderr
