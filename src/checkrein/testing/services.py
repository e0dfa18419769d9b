"""Real Redis and PostgreSQL servers on loopback for tests, benchmarks and the fleet example.

    with RedisServer.start(tmp) as redis:        # redis-server on a free 127.0.0.1 port
        ... redis.url ...
        redis.kill(); redis.restart()            # SIGKILL mid-run, then the same port again

    with PostgresServer.start(tmp) as pg:        # initdb + pg_ctl in tmp, a free port
        ... pg.dsn ...
        pg.stop(); pg.restart()

`shared_redis_url()` / `shared_postgres_dsn()` return the servers `.ci/services.sh` started
(``CHECKREIN_TEST_REDIS_URL``, ``CHECKREIN_TEST_POSTGRES_DSN``) when set; tests that kill or stop
a server always start their own. Binaries are found on PATH or in Debian's PostgreSQL folder; a
missing binary raises `ServiceUnavailable` with the package to install (tests never skip it).
PostgreSQL refuses to run as root, so as root the cluster is owned by and run as ``postgres``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

__all__ = [
    "PostgresServer",
    "RedisServer",
    "ServiceUnavailable",
    "free_port",
    "redis_for_tests",
    "shared_postgres_dsn",
    "shared_redis_url",
]


class ServiceUnavailable(RuntimeError):
    """A server binary is missing or the server did not come up."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _wait(check: object, timeout: float, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServiceUnavailable(f"{what} exited with {proc.returncode}")
        if callable(check) and check():
            return
        time.sleep(0.05)
    raise ServiceUnavailable(f"{what} not up within {timeout} s")


def shared_redis_url() -> str | None:
    return os.environ.get("CHECKREIN_TEST_REDIS_URL") or None


def shared_postgres_dsn() -> str | None:
    return os.environ.get("CHECKREIN_TEST_POSTGRES_DSN") or None


@contextmanager
def redis_for_tests(directory: Path) -> Iterator[str]:
    """The URL of a Redis nobody kills: `.ci/services.sh`'s when it set one, else a redis-server
    of our own in ``directory``, stopped on exit."""
    shared = shared_redis_url()
    if shared is not None:
        yield shared
        return
    with RedisServer.start(directory) as server:
        yield server.url


class RedisServer:
    """One ``redis-server`` process without persistence, on 127.0.0.1."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @classmethod
    def start(cls, directory: Path, port: int | None = None) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceUnavailable("redis-server not found (apt-get install redis-server; .ci/services.sh does)")
        directory.mkdir(parents=True, exist_ok=True)
        server = cls(directory, port or free_port())
        server._spawn(binary)
        return server

    def _spawn(self, binary: str | None = None) -> None:
        binary = binary or shutil.which("redis-server") or "redis-server"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory), "--protected-mode", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait(lambda: _port_open(self.port), 30, "redis-server", self.proc)

    def kill(self) -> None:
        """SIGKILL: the server vanishes mid-run, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        _wait(lambda: not _port_open(self.port), 10, "redis-server to go")

    def restart(self) -> None:
        self.kill()
        self._spawn()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found is not None:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if candidates:
        return candidates[-1]
    raise ServiceUnavailable(f"{name} not found (apt-get install postgresql; .ci/services.sh does)")


class PostgresServer:
    """A throwaway PostgreSQL cluster (initdb) in ``directory``, trust auth on 127.0.0.1 only."""

    def __init__(self, directory: Path, port: int, user: str | None) -> None:
        self.directory = directory
        self.port = port
        self._run_as = user
        self.database = "checkrein"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.database}"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def _cmd(self, *args: str) -> list[str]:
        if self._run_as is None:
            return list(args)
        return ["runuser", "-u", self._run_as, "--", *args]

    @classmethod
    def start(cls, directory: Path | None = None, port: int | None = None) -> PostgresServer:
        """Create and start a cluster under ``directory`` (default: a new folder in the system temp
        dir; as root always there, since ``postgres`` cannot enter root's 0700 pytest folders)."""
        initdb = _pg_bin("initdb")
        run_as = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise ServiceUnavailable("running as root needs a 'postgres' user (the postgresql package makes one)") from None
            run_as = "postgres"
        if directory is None or run_as is not None:
            base = Path(tempfile.mkdtemp(prefix="checkrein-pg-"))
        else:
            base = directory / f"pg-{uuid.uuid4().hex[:8]}"
            base.mkdir(parents=True)
        server = cls(base, port or free_port(), run_as)
        if run_as is not None:
            shutil.chown(base, run_as, run_as)
            base.chmod(0o700)
        subprocess.run(
            server._cmd(initdb, "-D", str(server.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"),
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120,
        )
        server._start_cluster()
        subprocess.run(
            server._cmd(_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres", server.database),
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60,
        )
        return server

    def _start_cluster(self) -> None:
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off -c synchronous_commit=off"
        subprocess.run(
            self._cmd(_pg_bin("pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.directory / "log"), "-w", "-t", "60", "start"),
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=90,
        )
        _wait(lambda: _port_open(self.port), 30, "postgres")

    def stop(self, mode: str = "fast") -> None:
        """Stop the cluster (``fast``: roll back open transactions; ``immediate``: like a crash)."""
        if not (self.data / "postmaster.pid").exists():
            return
        subprocess.run(
            self._cmd(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"),
            check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90,
        )

    def restart(self) -> None:
        self.stop()
        self._start_cluster()

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)
