"""`Fleet`: several checkrein replicas behind nginx, sharing Redis and shipping to PostgreSQL,
each a plain process on loopback (no container engine needed). Used by the fleet tests, the
fleet benchmark and ``examples/fleet/fleet.py``.

    with Fleet.start(run_dir, replicas=2) as fleet:      # Redis, Postgres, upstream, replicas, nginx
        fleet.url                                        # http://127.0.0.1:PORT/mcp through nginx
        fleet.replica_urls                               # each replica directly
        fleet.redis.kill(); fleet.redis.restart()
        fleet.postgres.stop(); fleet.postgres.restart()

The upstream is one Streamable HTTP echo server (`checkrein.testing.echo_server`) that every
replica talks to. Each replica has its own audit directory (its own chain) and ships it to the
one Postgres. ``extra`` is TOML appended to every replica's config (policy, budgets, approval).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from .services import PostgresServer, RedisServer, ServiceUnavailable, _port_open, _wait, free_port

__all__ = ["Fleet", "nginx_config"]

SRC = Path(__file__).resolve().parents[2]


def _nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None:
        raise ServiceUnavailable("nginx not found (apt-get install nginx; .ci/services.sh does)")
    return found


def nginx_config(run_dir: Path, listen: int, backends: list[int]) -> str:
    """An nginx.conf balancing round robin over ``backends``, SSE-friendly (no buffering)."""
    tmp = run_dir / "nginx-tmp"
    servers = "\n".join(f"    server 127.0.0.1:{p} max_fails=0;" for p in backends)
    # nginx's workers drop to `nobody` when started as root, and could not enter the run dir;
    # this load balancer listens on loopback only, so as root its workers stay root.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes 1;
daemon off;
pid {run_dir}/nginx.pid;
error_log {run_dir}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream checkrein {{
{servers}
    keepalive 64;
  }}
  server {{
    listen 127.0.0.1:{listen};
    location / {{
      proxy_pass http://checkrein;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 300s;
    }}
  }}
}}
"""


def _http_ok(url: str, token: str | None = None) -> bool:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("CHECKREIN_FLEET_STATE_KEY", _FLEET_STATE_KEY)
    return env


_FLEET_STATE_KEY = secrets.token_hex(32)
"""The approval seal key every replica started by this process shares (`[approval] state_key`)."""


@dataclass
class Fleet:
    run_dir: Path
    token: str
    redis: RedisServer | None
    postgres: PostgresServer | None
    upstream_port: int
    replica_ports: list[int]
    lb_port: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    configs: list[Path] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.lb_port}/mcp"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.lb_port}"

    @property
    def replica_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.replica_ports]

    def audit_dir(self, i: int) -> Path:
        return self.run_dir / f"replica-{i}" / "audit"

    @classmethod
    def start(
        cls,
        run_dir: Path,
        *,
        replicas: int = 2,
        redis: bool = True,
        postgres: bool = True,
        otlp_endpoint: str | None = None,
        extra: str = "",
        token: str = "fleet-token",
        lb_port: int | None = None,
    ) -> Fleet:
        run_dir.mkdir(parents=True, exist_ok=True)
        nginx = _nginx_binary()
        fleet = cls(run_dir, token, None, None, free_port(), [free_port() for _ in range(replicas)], lb_port or free_port())
        try:
            if redis:
                fleet.redis = RedisServer.start(run_dir / "redis")
            if postgres:
                fleet.postgres = PostgresServer.start()
            fleet._spawn("upstream", [sys.executable, "-m", "checkrein.testing.echo_server", "--http", "--port", str(fleet.upstream_port)])
            _wait(lambda: _port_open(fleet.upstream_port), 60, "echo upstream", fleet.procs["upstream"])
            for i in range(replicas):
                fleet.configs.append(fleet._write_config(i, otlp_endpoint, extra))
            # One pin for the whole fleet, before any replica starts (no two first-use writers).
            subprocess.run(
                [sys.executable, "-m", "checkrein", "pin", "--config", str(fleet.configs[0]), "--yes"],
                env=_env(), check=True, capture_output=True, timeout=120,
            )
            for i, port in enumerate(fleet.replica_ports):
                config = fleet.configs[i]
                fleet._spawn(f"replica-{i}", [sys.executable, "-m", "checkrein", "serve", "--config", str(config),
                                              "--transport", "http", "--port", str(port)])
            for i, port in enumerate(fleet.replica_ports):
                proc = fleet.procs[f"replica-{i}"]
                _wait(lambda p=port: _http_ok(f"http://127.0.0.1:{p}/health"), 120, f"replica {i}", proc)
            (run_dir / "nginx-tmp").mkdir(exist_ok=True)
            conf = run_dir / "nginx.conf"
            conf.write_text(nginx_config(run_dir, fleet.lb_port, fleet.replica_ports), encoding="utf-8")
            fleet._spawn("nginx", [nginx, "-c", str(conf), "-p", str(run_dir)])
            _wait(lambda: _http_ok(f"{fleet.base}/health"), 60, "nginx", fleet.procs["nginx"])
        except BaseException:
            fleet.stop()
            raise
        (run_dir / "fleet.json").write_text(json.dumps(fleet.describe(), indent=2), encoding="utf-8")
        return fleet

    def describe(self) -> dict[str, object]:
        return {
            "url": self.url,
            "replicas": self.replica_urls,
            "redis": self.redis.url if self.redis else None,
            "postgres": self.postgres.dsn if self.postgres else None,
            "upstream": f"http://127.0.0.1:{self.upstream_port}/mcp",
            "pids": {name: p.pid for name, p in self.procs.items()},
            "token": self.token,
        }

    def _write_config(self, i: int, otlp_endpoint: str | None, extra: str) -> Path:
        d = self.run_dir / f"replica-{i}"
        d.mkdir(exist_ok=True)
        lines = [
            "[gateway]",
            f'token = "{self.token}"',
            f'lock_file = "{self.run_dir / "checkrein.lock"}"',
            "",
            "[[servers]]",
            'name = "echo"',
            'transport = "streamable-http"',
            f'url = "http://127.0.0.1:{self.upstream_port}/mcp"',
            "",
            "[audit]",
            'dir = "audit"',
        ]
        if self.postgres is not None:
            lines += ["", "[audit.postgres]", f'dsn = "{self.postgres.dsn}"', "poll_interval_s = 0.05", "retry_interval_s = 0.2"]
        if self.redis is not None:
            # Every tool call reads and writes its session's flow state here: on a machine whose
            # cores are busy a loopback round trip can take longer than the 0.5 s default, and a
            # slow answer is a refusal (fail closed). A killed Redis refuses at once either way.
            lines += ["", "[state]", f'url = "{self.redis.url}"', "timeout_s = 5.0"]
            if "[approval]" not in extra:  # one seal key for the fleet's 2026-era approval rounds
                lines += ["", "[approval]", 'state_key = "${CHECKREIN_FLEET_STATE_KEY}"']
        if otlp_endpoint is not None:
            lines += ["", "[telemetry]", f'otlp_endpoint = "{otlp_endpoint}"', "metrics_interval_s = 1.0"]
        path = d / "checkrein.toml"
        path.write_text("\n".join(lines) + "\n" + extra + "\n", encoding="utf-8")
        return path

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.run_dir / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(argv, env=_env(), stdout=log, stderr=log, cwd=self.run_dir)
        log.close()

    def stop_replica(self, i: int) -> None:
        """SIGTERM one replica and wait (it closes its audit chain and ships what it can)."""
        proc = self.procs.get(f"replica-{i}")
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def stop(self) -> None:
        """Everything down: nginx, replicas (gracefully), upstream, Redis, Postgres."""
        order = ["nginx", *[f"replica-{i}" for i in range(len(self.replica_ports))], "upstream"]
        for name in order:
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            self.postgres.__exit__(None, None, None)

    def wait_shipped(self, timeout: float = 60.0) -> None:
        """Until every replica's Postgres lag is 0 (read from each replica's /metrics)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self._lag(u) == 0 for u in self.replica_urls):
                return
            time.sleep(0.1)
        raise AssertionError(f"replicas still behind Postgres after {timeout} s")

    def _lag(self, base: str) -> float | None:
        req = urllib.request.Request(base + "/stats", headers={"Authorization": f"Bearer {self.token}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=5) as resp:
                metrics = json.loads(resp.read())["metrics"]
        except (urllib.error.URLError, OSError, KeyError, ValueError):
            return None
        value = metrics.get("checkrein_audit_postgres_lag_events")
        return float(value) if isinstance(value, int | float) else None

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
