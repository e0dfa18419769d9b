"""Run one query end to end: start the MCP server (the gateway, or any stdio server), open a
trace, run the loop, close everything.

`checkrein run --config FILE` uses `gateway_target`, which spawns ``checkrein serve --config
FILE`` over stdio. `server_target` connects to any stdio MCP server command instead, e.g. a
bundled server directly (``python -m checkrein.servers.sandbox``).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.types import RequestParamsMeta

from checkrein.config import Config

from .loop import TRANSPORT_ERRORS, RunResult, RunSettings, run_agent
from .model import Model, ModelConfigError
from .openai_model import OpenAIChatModel, resolve_settings
from .scripted import load_script
from .trace import TraceWriter, new_trace_id

__all__ = ["McpToolSession", "RunOutcome", "choose_model", "gateway_target", "run_query", "server_target", "trace_dir_for"]

MAX_TOOL_PAGES = 50
_CONNECT_ERRORS: tuple[type[BaseException], ...] = (*TRANSPORT_ERRORS, ExceptionGroup)


def gateway_target(config_path: Path, *, env: dict[str, str] | None = None) -> StdioServerParameters:
    """``checkrein serve --config FILE`` over stdio, with this process's environment (the config
    may reference ``${VARS}``) unless ``env`` is given."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "checkrein", "serve", "--config", str(config_path)],
        env=dict(os.environ) if env is None else env,
    )


def server_target(command: str, *, env: dict[str, str] | None = None) -> StdioServerParameters:
    """Any stdio MCP server command line; ``python`` as the program means this interpreter."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError("empty server command")
    program = sys.executable if argv[0] in ("python", "python3") else argv[0]
    return StdioServerParameters(command=program, args=argv[1:], env=dict(os.environ) if env is None else env)


def trace_dir_for(config: Config) -> Path:
    """Beside the gateway's audit: ``<parent of [audit] dir>/traces``, else ``<config dir>/.checkrein/traces``."""
    if config.audit_dir is not None:
        return config.audit_dir.parent / "traces"
    return config.base_dir / ".checkrein" / "traces"


class McpToolSession:
    """`ToolSession` over an open `mcp.Client`."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def list_tools(self) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await self.client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> types.CallToolResult:
        return await self.client.call_tool(name, arguments, meta=cast(RequestParamsMeta, meta))


def _leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside ``exc`` (task groups wrap the real cause)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def choose_model(model: str | None = None, script: Path | None = None) -> Model:
    """The scripted model for ``script``, else the OpenAI-compatible model named ``model`` (or
    the configured default). Raises `ModelConfigError` / `ScriptError`."""
    if script is not None:
        return load_script(script)
    if model == "scripted":
        raise ModelConfigError("the scripted model needs --script FILE")
    return OpenAIChatModel(resolve_settings(model))


@dataclass(frozen=True)
class RunOutcome:
    result: RunResult
    trace_path: Path


async def run_query(
    target: StdioServerParameters | MCPServer[Any],
    model: Model,
    query: str,
    trace_dir: Path,
    settings: RunSettings | None = None,
    *,
    errlog: TextIO | None = None,
    trace_id: str | None = None,
    observer: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    """Connect to ``target``, run ``query`` with ``model``, write the trace in ``trace_dir``.

    ``target`` is a stdio server to spawn, or an `MCPServer` object served in-process over
    JSON-RPC memory streams (tests, embedding).

    A server that cannot start or dies is recorded in the trace and returned as status ``error``.
    ``observer`` sees each trace event as it is written (the CLI prints progress with it).
    """
    trace = TraceWriter.in_dir(trace_dir, trace_id or new_trace_id(), observer)
    started = time.monotonic()
    result: RunResult | None = None
    try:
        info = types.Implementation(name="checkrein-agent", version="0.1.0")
        if isinstance(target, StdioServerParameters):
            transport = stdio_client(target, errlog=errlog if errlog is not None else sys.stderr)
            client_cm = Client(transport, mode="legacy", client_info=info)
            label = " ".join([target.command, *target.args])[:200]
        else:
            client_cm = Client(target, mode="legacy", client_info=info)
            label = f"in-process {target.name}"
        try:
            async with client_cm as client:
                connect_s = time.monotonic() - started
                result = await run_agent(McpToolSession(client), model, query, trace, settings, connect_s=connect_s)
        except _CONNECT_ERRORS as raised:
            exc = _leaf(raised)
            if not isinstance(exc, TRANSPORT_ERRORS):
                raise
            error = f"cannot talk to the MCP server ({label}): {type(exc).__name__}: {exc}"
            if result is not None:
                # The run already ended (and was recorded); only closing the connection failed.
                trace.emit("error", where="disconnect", error=error[:500])
            else:
                trace.emit("error", where="connect", error=error[:500])
                trace.emit("run_end", status="error", error=error[:500], answer="", steps=0, tool_calls=0,
                           duration_s=round(time.monotonic() - started, 3))
                result = RunResult("error", "", trace.trace_id, 0, error=error)
        return RunOutcome(result, trace.path)
    finally:
        trace.close()
