"""Config reload for `checkrein serve`: on SIGHUP, or when the file's content changes.

`ConfigWatcher.run` polls the file every ``poll_s`` (stat first; the content digest decides, so a
touch without a change does nothing) and listens for SIGHUP, which forces a re-read. A new config is
validated with `load_config`; on success ``on_change`` is called with it. A config that fails
validation (or whose ``on_change`` raises, e.g. the policy does not compile) is refused: the reason
goes to stderr, the old config stays in force, and the same bad content is not reported twice.
No dependency beyond anyio.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

import anyio
from anyio.abc import TaskStatus

from checkrein.config import Config, load_config
from checkrein.errors import CheckreinError

__all__ = ["ConfigWatcher", "OnChange"]

OnChange = Callable[[Config], Awaitable[None]]


class ConfigWatcher:
    """Watches one config file; counters ``applied`` and ``refused`` say what happened."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        on_change: OnChange,
        *,
        poll_s: float = 1.0,
        stderr: TextIO | None = None,
        handle_sighup: bool = True,
        load: Callable[[Path], Config] = load_config,
    ) -> None:
        self.path = Path(path)
        self.load = load
        """How the file is read: the loader (and its options) the running config came from."""
        self.on_change = on_change
        self.poll_s = poll_s
        self.stderr = stderr
        self.handle_sighup = handle_sighup
        self.applied = 0
        self.refused = 0
        self.last_error: str | None = None
        self._stat: tuple[int, int, int] | None = None
        self._digest: str | None = None
        self._refused_digest: str | None = None
        self._lock = anyio.Lock()
        self.prime()

    def prime(self) -> None:
        """Remember the file as it is now (the config already in force), without applying it."""
        self._stat = self._stat_now()
        self._digest = self._read_digest()[1]

    def _stat_now(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _read_digest(self) -> tuple[bytes | None, str | None]:
        try:
            raw = self.path.read_bytes()
        except OSError:
            return None, None
        return raw, hashlib.sha256(raw).hexdigest()

    def _log(self, message: str) -> None:
        print(f"checkrein: {message}", file=self.stderr or sys.stderr, flush=True)

    async def check(self, *, force: bool = False) -> bool:
        """Re-read now if the file changed (or ``force``); True when a new config was applied."""
        async with self._lock:
            stat = self._stat_now()
            if not force and stat == self._stat:
                return False
            self._stat = stat
            _, content_digest = self._read_digest()
            if content_digest is None:
                self._refuse(None, f"config reload refused: cannot read {self.path}; keeping the current config")
                return False
            if not force and content_digest in (self._digest, self._refused_digest):
                return False
            try:
                config = self.load(self.path)
            except CheckreinError as exc:
                self._refuse(content_digest, f"config reload refused: {exc}; keeping the current config")
                return False
            try:
                await self.on_change(config)
            except Exception as exc:  # noqa: BLE001 - a config the gate cannot use is refused, old one stays
                self._refuse(content_digest, f"config reload refused: applying it failed ({type(exc).__name__}: {exc})")
                return False
            self._digest = content_digest
            self._refused_digest = None
            self.applied += 1
            self.last_error = None
            self._log(f"config reloaded from {self.path}")
            return True

    def _refuse(self, content_digest: str | None, message: str) -> None:
        self.refused += 1
        self.last_error = message
        self._refused_digest = content_digest
        self._log(message)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Poll and listen for SIGHUP until cancelled.

        Start it with ``await task_group.start(watcher.run)``: that returns once the SIGHUP handler
        is installed (before that, SIGHUP would still have its default action: terminate).
        """
        async with anyio.create_task_group() as tg:
            if self.handle_sighup and hasattr(signal, "SIGHUP"):
                await tg.start(self._sighup)
            task_status.started()
            while True:
                await anyio.sleep(self.poll_s)
                await self.check()

    async def _sighup(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGHUP) as signals:
            task_status.started()
            async for _ in signals:
                await self.check(force=True)
