"""Helpers for the gateway suite: configs, a capturing audit trail, echo server entries."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from checkrein.audit.record import CallRecord, LifecycleRecord
from checkrein.config import Config, config_from_mapping
from checkrein.errors import AuditUnavailable

ANALYZERS_OFF = {"paths": "off", "urls": "off", "shell": "off", "sql": "off", "secrets": "off"}
"""The gateway suite is about the pipeline, not argument analysis: analyzers stay out of the way."""


class CapturingTrail:
    """An `AuditTrail` that keeps every record in memory and can be made to fail."""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.lifecycle: list[LifecycleRecord] = []
        self.is_writable = True
        self.fail_records = False
        self.closed = False

    async def record_call(self, record: CallRecord) -> None:
        if self.fail_records:
            raise AuditUnavailable("disk full")
        self.calls.append(record)

    async def record_lifecycle(self, record: LifecycleRecord) -> None:
        self.lifecycle.append(record)

    def writable(self) -> bool:
        return self.is_writable

    async def aclose(self) -> None:
        self.closed = True


def make_config(tmp_path: Path, policy: Mapping[str, Any] | None = None, **sections: Any) -> Config:
    """A config whose lock and audit live in ``tmp_path`` (never in the working directory)."""
    gateway = {"lock_file": str(tmp_path / "checkrein.lock"), **sections.pop("gateway", {})}
    audit = sections.pop("audit", {"dir": str(tmp_path / "checkrein-audit")})
    pol = {"analyzers": ANALYZERS_OFF, **(policy or {})}
    return config_from_mapping({"gateway": gateway, "policy": pol, "audit": audit, **sections})


FIXTURE_SERVER: dict[str, Any] = {
    "name": "fx",
    "command": sys.executable,
    "args": ["-m", "checkrein.testing.conformance_server", "--stdio"],
    "timeout_s": 20.0,
    "prefix": "",
}
"""The conformance fixture server over stdio, its own names exposed (progress, logging, sampling...)."""


def echo_server_config(name: str, *extra: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A `[[servers]]` entry running the echo test server over stdio with this interpreter."""
    entry: dict[str, Any] = {
        "name": name,
        "command": sys.executable,
        "args": ["-m", "checkrein.testing.echo_server", *extra],
        "timeout_s": 10.0,
    }
    if env:
        entry["env"] = dict(env)
    return entry


# -- subprocess gateways and servers -----------------------------------------------------------

REPO_SRC = Path(__file__).resolve().parents[2] / "src"


def toml_value(value: Any) -> str:
    """A TOML literal for the simple values our test configs use (JSON strings are TOML strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value))


def write_config(
    directory: Path,
    servers: list[dict[str, Any]],
    *,
    gateway: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
    tools: Mapping[str, Mapping[str, Any]] | None = None,
    identities: list[dict[str, Any]] | None = None,
    audit: Mapping[str, Any] | None = None,
) -> Path:
    lines = ["[gateway]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in (gateway or {}).items()]
    for s in servers:
        lines.append("\n[[servers]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in s.items()]
    for ident in identities or []:
        lines.append("\n[[identities]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in ident.items()]
    lines.append("\n[policy]")
    lines += [f"{k} = {toml_value(v)}" for k, v in {"analyzers": ANALYZERS_OFF, **(policy or {})}.items()]
    for name, rule in (tools or {}).items():
        lines.append(f"\n[policy.tools.{json.dumps(name)}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in rule.items()]
    if audit:
        lines.append("\n[audit]")
        lines += [f"{k} = {toml_value(v)}" for k, v in audit.items()]
    path = directory / "checkrein.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def wait_until(check: Callable[[], bool], *, timeout: float, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Poll ``check`` until true; fail (with the process's stderr) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise AssertionError(f"{what}: process exited with {proc.returncode}: {err[-2000:]}")
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not ready within {timeout} s")


def http_status(url: str, *, method: str = "GET", headers: Mapping[str, str] | None = None, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, never a proxy
    try:
        with opener.open(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def start_echo_http(port: int, *, sse: bool = False) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkrein.testing.echo_server", "--sse" if sse else "--http", "--port", str(port)],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_until(lambda: port_open(port), timeout=300, what="echo server (http)", proc=proc)
    return proc


def start_http_gateway(config: Path, port: int, **env: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkrein", "serve", "--config", str(config), "--transport", "http", "--port", str(port)],
        env=child_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    health = f"http://127.0.0.1:{port}/health"
    wait_until(lambda: port_open(port) and http_status(health)[0] == 200, timeout=300, what="checkrein http", proc=proc)
    return proc


def gateway_stdio_params(config: Path, **env: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "checkrein", "serve", "--config", str(config)], env=child_env(**env)
    )
