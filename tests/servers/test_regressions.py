"""Regressions found in acceptance review of the bundled servers, each named for what broke."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from checkrein.cli.main import app
from checkrein.servers.sandbox_commands import CommandRefused, parse_command, run_command
from checkrein.servers.sandbox_paths import PathRefused, check_filename, seed_sandbox


def _text(result: object) -> str:
    return " ".join(getattr(b, "text", "") for b in getattr(result, "content", []))


def test_cat_and_ls_refuse_a_symlink_that_points_out_of_the_sandbox(tmp_path: Path) -> None:
    """`read_file` refused such a link, but `execute_command "cat link"` read the file behind it."""
    root = tmp_path / "box"
    seed_sandbox(root)
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(tmp_path, root / "up")
    for command in ("cat link.txt", "cat -n notes.txt link.txt", "ls up"):
        with pytest.raises(CommandRefused, match="leaves the sandbox"):
            run_command(parse_command(command), root.resolve())
    assert run_command(parse_command("cat notes.txt"), root.resolve()).exit_code == 0


@pytest.mark.anyio
async def test_execute_command_through_the_server_does_not_follow_a_symlink_out(
    connect: Callable[[str], AbstractAsyncContextManager[Client]], state: dict[str, str], tmp_path: Path
) -> None:
    root = Path(state["CHECKREIN_SANDBOX_DIR"])
    seed_sandbox(root)
    (tmp_path / "secret.txt").write_text("TOP-SECRET-OUTSIDE")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    async with connect("sandbox") as client:
        result = await client.call_tool("execute_command", {"command": "cat link.txt"})
    assert result.is_error and "leaves the sandbox" in _text(result)
    assert "TOP-SECRET-OUTSIDE" not in _text(result)


@pytest.mark.parametrize("name", ["%c0%ae%c0%ae%c0%afetc%c0%afpasswd", "%e0%80%ae%e0%80%ae", "%25c0%25ae",
                                  "..\u2215etc", "etc\u2215passwd", "a\u2044b", "a\u29f5b"])
def test_overlong_utf8_and_slash_lookalike_names_are_refused(name: str) -> None:
    """These were accepted as plain names (inert on Linux, but written to look like paths)."""
    with pytest.raises(PathRefused):
        check_filename(name)


@pytest.mark.parametrize(("server", "variable", "says"), [
    ("monitor", "CHECKREIN_MONITOR_AUDIT", "cannot create the audit file"),
    ("sandbox", "CHECKREIN_SANDBOX_DIR", "cannot prepare the sandbox directory"),
    ("knowledge", "CHECKREIN_KB_PATH", "cannot open the knowledge base"),
])
def test_a_server_whose_state_path_is_unusable_says_so_in_one_line(
    tmp_path: Path, server: str, variable: str, says: str
) -> None:
    """A missing parent or a plain file where a directory or database belongs gave a traceback,
    which the gateway then showed as the server's "last stderr lines"."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a database, not a directory")
    target = blocker / "x" if server == "monitor" else blocker
    env = {"PATH": "/usr/bin:/bin", variable: str(target), "CHECKREIN_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-m", f"checkrein.servers.{server}"], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{server}: cannot start: {says} {target}: ")
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_a_busy_port_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "checkrein.servers.sandbox", "--http", "--port", str(port)],
            env={"PATH": "/usr/bin:/bin", "CHECKREIN_SANDBOX_DIR": str(tmp_path / "box")},
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False,
        )
    assert proc.returncode == 1
    assert f"sandbox: cannot start: cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_kb_seed_into_a_file_that_is_not_a_database_fails_cleanly(tmp_path: Path) -> None:
    """`sqlite3.DatabaseError` escaped `checkrein kb seed` as a traceback."""
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello")
    result = CliRunner().invoke(app, ["kb", "seed", "--db", str(bogus)])
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert "file is not a database" in " ".join(result.output.split())
