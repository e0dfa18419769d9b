"""Starting stdio servers, also before the gateway has imported the MCP SDK and the policy engine.

`checkrein serve` spawns every stdio server first (`spawn_early`) and imports the rest while the
servers start; each connection then adopts its early process (`EarlyProcesses.take`) instead of
spawning another. Only the stdlib and anyio here, so importing this module costs nothing.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import suppress

import anyio
import anyio.abc

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamUnavailable

__all__ = ["INHERITED_ENV_VARS", "EarlyProcesses", "child_environment", "resolve_python", "spawn_early", "spawn_stdio"]

logger = logging.getLogger("checkrein.upstream.stdio")

INHERITED_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""What a server inherits from the gateway's environment: the MCP SDK's safe set on POSIX."""

_PYTHON_NAMES = frozenset({"python", "python3"})

Launch = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str | None]


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The safe inherited variables (as the SDK's ``get_default_environment``) plus ``env``."""
    inherited = {k: v for k in INHERITED_ENV_VARS if (v := os.environ.get(k)) is not None and not v.startswith("()")}
    return {**inherited, **env}


def resolve_python(server: ServerConfig) -> ServerConfig:
    """A bare ``python``/``python3`` command means the interpreter running checkrein.

    So ``python -m checkrein.servers.NAME`` (and the test servers) work from a virtualenv whose
    ``bin`` is not on PATH; any other command is left as written.
    """
    if server.command in _PYTHON_NAMES:
        return server.model_copy(update={"command": sys.executable})
    return server


async def spawn_stdio(command: str, args: Sequence[str], *, env: Mapping[str, str], cwd: str | None) -> anyio.abc.Process:
    """Start ``command`` in its own process group with piped stdio and the `child_environment`.

    Raises ``UpstreamUnavailable`` when it cannot be started (not found, not executable, bad cwd).
    """
    try:
        return await anyio.open_process(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(env),
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        where = f" (cwd {cwd!r})" if cwd else ""
        missing = exc.filename if exc.filename not in (None, command) else command
        if cwd and not os.path.isdir(cwd):
            raise UpstreamUnavailable(f"cannot start {command!r}: working directory {cwd!r} does not exist") from exc
        raise UpstreamUnavailable(f"cannot start {missing!r}: command not found{where}; check `command` and PATH") from exc
    except PermissionError as exc:
        raise UpstreamUnavailable(f"cannot start {command!r}: permission denied (is it executable?)") from exc
    except OSError as exc:
        raise UpstreamUnavailable(f"cannot start {command!r}: {exc}") from exc


def _launch(config: ServerConfig) -> Launch | None:
    if config.transport != "stdio" or config.command is None or not config.enabled:
        return None
    return (config.command, tuple(config.args), tuple(sorted(config.env.items())), config.cwd)


class EarlyProcesses:
    """Stdio servers started ahead of their connections, each adopted at most once.

    A process is handed out only for the exact launch (command, args, env, cwd) it was started
    with, so a config that changed in between gets a fresh process. ``aclose`` kills the ones
    nobody took (e.g. the gateway failed to build).
    """

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[Launch, anyio.abc.Process]] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def take(self, config: ServerConfig) -> anyio.abc.Process | None:
        """The early process of ``config``'s server when its launch matches, else ``None``."""
        entry = self._waiting.pop(config.name, None)
        if entry is None:
            return None
        launch, process = entry
        if launch == _launch(config) and process.returncode is None:
            return process
        self._waiting[f"\0stale {config.name} {process.pid}"] = entry  # killed by aclose
        return None

    async def aclose(self) -> None:
        """Kill (by process group) and reap every process nobody took."""
        waiting, self._waiting = list(self._waiting.values()), {}
        for _, process in waiting:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, 9)
        with anyio.CancelScope(shield=True):
            for _, process in waiting:
                with anyio.move_on_after(5.0):
                    await process.wait()
                await process.aclose()

    async def add(self, config: ServerConfig) -> None:
        """Start ``config``'s server now when it is an enabled stdio server; a failure to start
        is left for its connection to report (it spawns again and raises then)."""
        launch = _launch(config)
        if launch is None or config.name in self._waiting:
            return
        try:
            process = await spawn_stdio(launch[0], launch[1], env=dict(launch[2]), cwd=launch[3])
        except UpstreamUnavailable as exc:
            logger.debug("early start of %s failed: %s", config.name, exc.message)
            return
        self._waiting[config.name] = (launch, process)


async def spawn_early(servers: Sequence[ServerConfig]) -> EarlyProcesses:
    """Start every enabled stdio server of ``servers`` (bare ``python`` resolved as the pool does)."""
    early = EarlyProcesses()
    for server in servers:
        await early.add(resolve_python(server))
    return early
