"""A real, independent C2SP witness for the tests: PyPI's aics-witness, run as an HTTP server on
127.0.0.1 in a subprocess (installed by the Makefile; it is not part of checkrein)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

EXE = str(Path(sys.executable).with_name("aics-witness"))
_LISTEN = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


class AicsWitness:
    """One witness identity with its own config, key and SQLite state under ``root``."""

    def __init__(self, root: Path, name: str = "witness.test/w1") -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.config = root / "witness.json"
        self.name = name
        out = self._cli("init", "--name", name, "--listen", "127.0.0.1:0")
        self.vkey = out.strip().splitlines()[-1]
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self._stderr: list[str] = []

    def _cli(self, *args: str) -> str:
        res = subprocess.run([EXE, args[0], "--config", str(self.config), *args[1:]],
                             capture_output=True, text=True, timeout=60, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"aics-witness {args[0]} failed: {res.stderr}")
        return res.stdout

    def trust(self, origin: str, vkey: str) -> None:
        """Configure the log (before `start`)."""
        self._cli("add-log", "--origin", origin, "--vkey", vkey)

    def state(self) -> dict[str, object]:
        return dict(json.loads(self._cli("status", "--json")))

    def start(self, timeout_s: float = 30.0) -> str:
        env = {**os.environ, "AICS_WITNESS_LOG_LEVEL": "INFO"}
        self.proc = subprocess.Popen([EXE, "serve", "--config", str(self.config)], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True, env=env)
        seen = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                self._stderr.append(line)
                m = _LISTEN.search(line)
                if m and not self.url:
                    self.url = m.group(1)
                    seen.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while not seen.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("aics-witness did not start: " + "".join(self._stderr[-20:]))
        return self.url

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.proc = None
