"""SIGTERM ends `checkrein serve` gracefully: the audit log closes with a shutdown checkpoint.

Regression: over HTTP, uvicorn's own signal handling re-raised SIGTERM after its shutdown (or the
gate was cancelled under it), so the audit trail could be left without its closing checkpoint.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from checkrein.audit.verify import verify_log

CONFIG = """
[[servers]]
name = "echo"
command = "python"
args = ["-m", "checkrein.testing.echo_server"]

[policy]
allow = ["echo__echo"]

[audit]
dir = "audit"
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the gateway")


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sigterm_closes_the_audit_with_a_shutdown_checkpoint(tmp_path: Path, transport: str) -> None:
    (tmp_path / "checkrein.toml").write_text(CONFIG)
    cmd = [sys.executable, "-m", "checkrein", "serve", "--config", str(tmp_path / "checkrein.toml")]
    port = _free_port()
    if transport == "http":
        cmd += ["--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if transport == "http":
            _wait_for(lambda: _healthy(port))
        else:
            assert proc.stdin is not None and proc.stdout is not None
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
            proc.stdin.write((json.dumps(init) + "\n").encode())
            proc.stdin.flush()
            assert b'"id":1' in proc.stdout.readline().replace(b" ", b"")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode(errors="replace")
    assert b"Traceback" not in err
    report = verify_log(tmp_path / "audit")  # not --live: the log must be closed properly
    assert report.valid, report.problem
    assert report.checkpoints >= 1


def test_a_signal_while_closing_does_not_cut_the_audit(tmp_path: Path) -> None:
    """Regression: once serving had ended (the client closed stdin) SIGTERM was no longer handled,
    so the signal an MCP client sends after its grace period killed the gateway while it was still
    closing its servers, and the audit was left without its closing checkpoint."""
    slow = f"trap '' TERM; {sys.executable} -m checkrein.testing.echo_server; sleep 30"  # outlives its stdin
    (tmp_path / "checkrein.toml").write_text(
        CONFIG + f'\n[[servers]]\nname = "slow"\ncommand = "sh"\nargs = ["-c", {json.dumps(slow)}]\n'
    )
    cmd = [sys.executable, "-m", "checkrein", "serve", "--config", str(tmp_path / "checkrein.toml")]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline().replace(b" ", b"")
        proc.stdin.close()  # the client leaves; the gateway records its stop, then closes "slow"

        def stopping() -> bool:
            return any(b'"gateway.stop"' in p.read_bytes() for p in (tmp_path / "audit").glob("*.jsonl"))

        _wait_for(stopping)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert b"Traceback" not in err, err.decode(errors="replace")
    report = verify_log(tmp_path / "audit")
    assert report.valid, report.problem


def test_ctrl_c_in_a_terminal_ends_stdio_serve_while_it_waits_for_a_client(tmp_path: Path) -> None:
    """Regression: with a terminal as stdin, Ctrl-C printed "shutting down" and the gateway then
    waited for Enter or Ctrl-D (the SDK's stdin reader blocks in a thread that cannot be cancelled).
    Also: a person at a terminal is told that stdio serve waits for a client."""
    import os
    import pty
    import select

    (tmp_path / "checkrein.toml").write_text(CONFIG)
    master, slave = pty.openpty()
    cmd = [sys.executable, "-m", "checkrein", "serve", "--config", str(tmp_path / "checkrein.toml")]
    proc = subprocess.Popen(cmd, stdin=slave, stdout=subprocess.PIPE, stderr=slave, start_new_session=True)
    os.close(slave)
    seen = b""

    def read_terminal() -> bytes:
        nonlocal seen
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            seen += chunk
        return seen

    try:
        _wait_for(lambda: b"waiting for an MCP client" in read_terminal() or proc.poll() is not None)
        assert proc.poll() is None, read_terminal().decode(errors="replace")
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
        _wait_for(lambda: proc.poll() is not None, timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        read_terminal()
        os.close(master)
    assert proc.returncode == 0, seen.decode(errors="replace")
    assert b"shutting down" in seen and b"Traceback" not in seen
