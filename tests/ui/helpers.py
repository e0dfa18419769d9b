"""Helpers for the web view's tests: a real audit log with hostile strings in every field."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from checkrein.audit import CallRecord, LifecycleRecord, open_audit_trail
from checkrein.config import AuditSettings

XSS = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">'\"&"
"""Markup that would run script if any page put it in the HTML unescaped."""
BIDI = "admin\u202efdp.exe"
"""A right-to-left override: shown reversed unless made visible."""

CHROME_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
"""Debian's Chromium as root on a machine without internet (see .ci/run)."""


def call(i: int, **over: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "kind": "tool",
        "trace_id": f"trace-{i // 4}",
        "span_id": f"span-{i}",
        "parent_span_id": None if i % 4 == 0 else f"span-{i - i % 4}",
        "session_id": f"session-{i % 3}",
        "identity": {"user": ("alice", "bob")[i % 2], "roles": ["dev"], "source": "token", "client": "test"},
        "model": "m1",
        "server": ("files", "web")[i % 2],
        "tool": "read_file",
        "exposed_name": ("files", "web")[i % 2] + "__read_file",
        "tool_digest": "sha256:00",
        "arguments": {"path": f"/srv/file-{i}.txt"},
        "decision": {"effect": "allow", "rule_id": "allow-read", "reasons": [], "risk": "low", "approval": None},
        "outcome": "ok",
        "error_code": None,
        "duration_ms": float(1 + i % 7),
        "result": {"content": [{"type": "text", "text": f"contents {i}"}], "isError": False},
    }
    fields.update(over)
    return CallRecord(**fields)


def denied(i: int, reason: str = "path '../../etc/passwd' is outside the allowed roots", **over: Any) -> CallRecord:
    return call(i, outcome="denied", error_code="policy.denied", result=None,
                decision={"effect": "deny", "rule_id": "analyzer.paths", "reasons": [reason], "risk": "high",
                          "approval": None}, **over)


def hostile(i: int) -> CallRecord:
    """A denied call whose every free-form field an attacker could choose holds `XSS`."""
    return call(
        i, trace_id=f"t{XSS}", span_id=XSS, session_id=f"s{XSS}", model=XSS, server=f"srv{XSS}", tool=XSS,
        exposed_name=f"evil{XSS}", identity={"user": f"u{XSS}", "roles": [XSS], "source": XSS, "client": BIDI},
        arguments={"cmd": XSS, XSS: BIDI}, outcome="denied", error_code=XSS, result=None,
        decision={"effect": "deny", "rule_id": f"r{XSS}", "reasons": [f"because {XSS}"], "risk": XSS, "approval": None},
    )


def write_audit(directory: Path, records: Sequence[CallRecord | LifecycleRecord], *, close: bool = True, **over: Any) -> Any:
    """Write ``records`` through a real trail (redaction, chain, index); returns the open trail
    when ``close`` is false (close it with ``trail.close()``)."""
    settings = AuditSettings(**{"dir": str(directory), "checkpoint_every": 50, "checkpoint_interval_s": 3600.0, **over})

    async def run() -> Any:
        trail = open_audit_trail(settings, directory.parent)
        for r in records:
            if isinstance(r, CallRecord):
                await trail.record_call(r)
            else:
                await trail.record_lifecycle(r)
        if close:
            await trail.aclose()
        return trail

    return anyio.run(run)


# -- subprocesses ----------------------------------------------------------------------------

REPO_SRC = Path(__file__).resolve().parents[2] / "src"


def child_env(**extra: str) -> dict[str, str]:
    """This environment for a `python -m checkrein` child (no CHECKREIN_TOKEN unless given)."""
    env = {k: v for k, v in os.environ.items() if k != "CHECKREIN_TOKEN"}
    env["PYTHONPATH"] = str(REPO_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def start_until(args: Sequence[str], pattern: str, *, env: dict[str, str], cwd: Path | None = None,
                timeout: float = 90) -> tuple[subprocess.Popen[bytes], re.Match[str]]:
    """Start ``python -m checkrein ARGS`` and wait (bounded) for a stderr line matching ``pattern``."""
    proc = subprocess.Popen([sys.executable, "-m", "checkrein", *args], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen: list[str] = []
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(raw.decode(errors="replace")) for raw in proc.stderr or ()],
                     daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return proc, m
    stop(proc)
    raise AssertionError(f"checkrein {' '.join(args)}: no line like {pattern!r} (exit {proc.poll()}): {''.join(seen)[-2000:]}")


def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then SIGKILL after a bounded wait; returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return int(proc.returncode)


def http_status(url: str, token: str | None = None) -> int:
    """GET over loopback (never a proxy); the HTTP status."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
