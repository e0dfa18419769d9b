"""`sandbox`: weather, files in one directory, and a few allowlisted commands.

Files live in ``$CHECKREIN_SANDBOX_DIR`` (default ``<state dir>/sandbox``), seeded with
`SEED_FILES` on start. `important.txt` and `config.ini` are protected: never deleted or
overwritten. See `sandbox_paths` and `sandbox_commands` for what is refused and why.

    python -m checkrein.servers.sandbox [--http --port N]
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, StrictBool, StrictInt

from . import weather
from ._base import BundledServer
from ._run import LOG_LEVEL, cannot_start, parse_server_args, serve
from .sandbox_commands import CommandRefused, parse_command, run_command
from .sandbox_paths import PROTECTED_FILES, PathRefused, resolve_in_sandbox, sandbox_dir, seed_sandbox

__all__ = ["MAX_CONTENT_CHARS", "MAX_READ_BYTES", "build_server", "main"]

MAX_CONTENT_CHARS = 10_000
MAX_READ_BYTES = 256 * 1024

City = Annotated[str, Field(min_length=1, max_length=100, description="City name, e.g. 'Shanghai'.")]
FileName = Annotated[str, Field(min_length=1, max_length=128, description="A plain file name in the sandbox.")]


def _read_only(title: str) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                           open_world_hint=False)


def _path(root: Path, filename: str) -> Path:
    try:
        return resolve_in_sandbox(root, filename)
    except PathRefused as exc:
        raise ToolError(str(exc)) from None


def build_server(root: Path) -> BundledServer:
    """The sandbox server over the (already seeded) directory ``root``."""
    server = BundledServer(
        "sandbox",
        instructions="Weather, files in a sandbox folder, and a few safe commands.",
        log_level=LOG_LEVEL,
    )

    @server.tool(annotations=_read_only("Current weather"))
    def get_weather(city: City) -> dict[str, Any]:
        """Current weather for a city (offline sample data)."""
        try:
            return weather.current_weather(city)
        except weather.UnknownCity as exc:
            raise ToolError(str(exc)) from None

    @server.tool(annotations=_read_only("Weather forecast"))
    def get_forecast(
        city: City,
        days: Annotated[StrictInt, Field(ge=1, le=7, description="Number of days, 1..7.")] = 3,
    ) -> dict[str, Any]:
        """Daily forecast for a city for 1 to 7 days (offline sample data)."""
        try:
            return weather.forecast(city, days)
        except weather.UnknownCity as exc:
            raise ToolError(str(exc)) from None

    @server.tool(annotations=_read_only("Read file"))
    def read_file(filename: FileName) -> str:
        """Read a text file from the sandbox folder."""
        path = _path(root, filename)
        if not path.is_file():
            raise ToolError(f"file not found: {filename}")
        with path.open("rb") as fh:
            data = fh.read(MAX_READ_BYTES + 1)  # never the whole of a huge file
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        return text + ("\n[truncated]" if len(data) > MAX_READ_BYTES else "")

    @server.tool(annotations=ToolAnnotations(title="Write file", read_only_hint=False, destructive_hint=True,
                                             idempotent_hint=True, open_world_hint=False))
    def write_file(
        filename: FileName,
        content: Annotated[str, Field(max_length=MAX_CONTENT_CHARS, description="Text, at most 10,000 characters.")],
    ) -> str:
        """Create or replace a text file in the sandbox folder (protected files cannot be overwritten)."""
        path = _path(root, filename)
        if path.name in PROTECTED_FILES:
            raise ToolError(f"refused: {path.name} is protected")
        if path.exists() and not path.is_file():
            raise ToolError(f"refused: {path.name} is not a regular file")
        # Write-then-rename so a reader never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".write-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(content)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return f"wrote {len(content)} characters to {path.name}"

    @server.tool(annotations=ToolAnnotations(title="Delete file", read_only_hint=False, destructive_hint=True,
                                             idempotent_hint=False, open_world_hint=False))
    def delete_file(
        filename: FileName,
        confirm: Annotated[StrictBool, Field(description="Must be true to delete.")] = False,
    ) -> str:
        """Delete a file from the sandbox folder. Requires confirm=true; protected files are never deleted."""
        path = _path(root, filename)
        if path.name in PROTECTED_FILES:
            raise ToolError(f"refused: {path.name} is protected")
        if confirm is not True:
            raise ToolError("not deleted: set confirm=true to delete")
        if not path.is_file():
            raise ToolError(f"file not found: {filename}")
        path.unlink()
        return f"deleted {path.name}"

    @server.tool(annotations=ToolAnnotations(title="Execute command", read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=False, open_world_hint=False))
    async def execute_command(
        command: Annotated[str, Field(min_length=1, max_length=1000, description="e.g. 'ls -l' or 'cat notes.txt'.")],
    ) -> dict[str, Any]:
        """Run one allowlisted command (ls, pwd, echo, date, whoami, cat) in the sandbox folder, without a shell."""
        try:
            argv = parse_command(command)
            result = await anyio.to_thread.run_sync(run_command, argv, root)
        except CommandRefused as exc:
            raise ToolError(str(exc)) from None
        return {"argv": list(result.argv), "exit_code": result.exit_code, "stdout": result.stdout,
                "stderr": result.stderr, "truncated": result.truncated}

    return server


def main(argv: list[str] | None = None) -> None:
    options = parse_server_args("sandbox", argv)
    root = sandbox_dir()
    try:
        seed_sandbox(root)
    except OSError as exc:
        cannot_start("sandbox", f"cannot prepare the sandbox directory {root}", exc)
    serve(build_server(root.resolve()), options, health=lambda: {"sandbox": str(root)})


if __name__ == "__main__":
    main()
