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


@pytest.mark.parametrize("value", ["off", "OFF", " off ", "\toff\n", "Off"])
def test_every_fast_path_reader_takes_what_serve_accepts(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """A spelling `serve` accepts turns the fast path off in every reader: the upstream's raw
    HTTP lane and the frontends' checks all go through `switch`, not their own parse."""
    from checkrein._switches import switch, switch_problems
    from checkrein.upstream.raw_http import raw_http_enabled

    monkeypatch.setenv("CHECKREIN_FAST_PATH", value)
    assert switch_problems() == []
    assert switch("CHECKREIN_FAST_PATH") == "off"
    assert raw_http_enabled() is False



@pytest.mark.parametrize(("name", "value", "expected"), [
    ("CHECKREIN_FAST_PATH", "", "on"), ("CHECKREIN_FAST_PATH", " ON ", "on"), ("CHECKREIN_FAST_PATH", "of", "on"),
    ("CHECKREIN_EVENT_LOOP", " AsyncIO ", "asyncio"), ("CHECKREIN_EVENT_LOOP", "", "uvloop"),
    ("CHECKREIN_HTTP_PARSER", " H11", "h11"), ("CHECKREIN_HTTP_PARSER", "h2", "auto"),
])
def test_switch_normalizes_or_falls_back_to_the_default(name: str, value: str, expected: str) -> None:
    """`switch` gives the normalized value, or the default (the first value) for unset, empty or
    unknown, which `serve` has refused before any reader runs."""
    from checkrein._switches import switch

    assert switch(name, {name: value}) == expected


def test_no_module_reads_a_switch_variable_itself() -> None:
    """Every switch is read through `switch`, so no module but `_switches` looks the variables up
    in the environment (a reader with its own parse is how `serve` and a reader came to disagree)."""
    import re

    import checkrein
    from checkrein._switches import SWITCHES

    root = Path(checkrein.__file__).parent
    lookup = re.compile(r"environ(?:\.get\(|\[)\s*[\"']({})[\"']".format("|".join(SWITCHES)))
    readers = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                     if p.name != "_switches.py" and lookup.search(p.read_text()))
    assert readers == []
