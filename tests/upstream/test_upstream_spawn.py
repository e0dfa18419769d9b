"""Early stdio starts: the environment servers get, adoption by launch, cleanup of the rest."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest
from mcp.client.stdio import get_default_environment

import checkrein.testing.echo_server as echo_server
from checkrein.config import ServerConfig
from checkrein.errors import UpstreamUnavailable
from checkrein.upstream import McpUpstream
from checkrein.upstream.spawn import (
    EarlyProcesses,
    child_environment,
    resolve_python,
    spawn_early,
    spawn_stdio,
)

pytestmark = pytest.mark.anyio

ECHO = (echo_server.__file__,)


def echo(name: str = "echo", *extra: str) -> ServerConfig:
    return ServerConfig(name=name, command=sys.executable, args=(*ECHO, *extra))


def test_child_environment_is_the_sdks_safe_set_plus_the_servers_env() -> None:
    """Servers inherit exactly what the SDK's default lets through, and their own `env` wins."""
    assert child_environment({}) == get_default_environment()
    assert child_environment({"PATH": "/x", "EXTRA": "1"}) == {**get_default_environment(), "PATH": "/x", "EXTRA": "1"}


def test_spawn_module_imports_neither_the_sdk_nor_the_policy() -> None:
    """`checkrein.upstream.spawn` can run before the heavy imports: it loads no MCP SDK or policy."""
    code = "import checkrein.upstream.spawn, sys; print('\\n'.join(sys.modules))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout.split())
    assert "checkrein.upstream.spawn" in loaded
    assert not loaded & {"mcp", "checkrein.policy", "sqlglot", "checkrein.upstream.connection"}


def test_resolve_python_means_this_interpreter() -> None:
    """A bare `python` command runs the interpreter running checkrein; others are left alone."""
    assert resolve_python(ServerConfig(name="a", command="python")).command == sys.executable
    assert resolve_python(ServerConfig(name="a", command="/bin/cat")).command == "/bin/cat"


async def test_an_upstream_adopts_its_early_process() -> None:
    """The first connection uses the process started early; closing the upstream ends that process."""
    config = echo()
    early = await spawn_early([config, ServerConfig(name="web", transport="streamable-http", url="http://127.0.0.1:9/mcp")])
    assert len(early) == 1  # only stdio servers start early
    process = early._waiting["echo"][1]
    try:
        with anyio.fail_after(60):
            async with McpUpstream(config, early=early) as up:
                await up.start()
                assert len(early) == 0
                result = await up.call_tool("echo", {"text": "hi"}, timeout_s=30)
                assert result.content[0].text == "hi"  # type: ignore[union-attr]
                assert process.returncode is None
            await process.wait()
    finally:
        await early.aclose()
    assert process.returncode is not None


async def test_a_changed_launch_gets_a_fresh_process_and_the_early_one_is_killed() -> None:
    """An early process is adopted only by the exact launch it was started for; aclose kills the rest."""
    early = await spawn_early([echo()])
    process = early._waiting["echo"][1]
    assert early.take(echo("echo", "--legacy-only")) is None
    assert early.take(echo()) is None  # gone: never handed out twice
    with anyio.fail_after(30):
        await early.aclose()
    assert process.returncode is not None and process.returncode < 0
    assert len(early) == 0


async def test_unclaimed_processes_are_killed_with_their_group() -> None:
    """aclose kills (SIGKILL to the group) and reaps every process nobody took."""
    early = EarlyProcesses()
    await early.add(ServerConfig(name="sleeper", command="/bin/sh", args=("-c", "sleep 60 & wait")))
    process = early._waiting["sleeper"][1]
    with anyio.fail_after(30):
        await early.aclose()
    assert process.returncode == -9


async def test_a_command_that_cannot_start_is_left_to_its_connection() -> None:
    """A missing command starts nothing early; spawning it directly names the problem."""
    early = await spawn_early([ServerConfig(name="nope", command="/nonexistent/server")])
    assert len(early) == 0
    with pytest.raises(UpstreamUnavailable, match="command not found"):
        await spawn_stdio("/nonexistent/server", [], env={}, cwd=None)
