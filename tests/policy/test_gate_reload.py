"""Config reload: on content change (polled) and on SIGHUP; invalid configs are refused."""

from __future__ import annotations

import io
import os
import signal
from pathlib import Path

import anyio
import pytest

from checkrein.config import Config
from checkrein.gate.reload import ConfigWatcher

pytestmark = pytest.mark.anyio

GOOD_A = '[policy]\nallow = ["a__*"]\n'
GOOD_B = '[policy]\nallow = ["b__*"]\n'
BAD = '[policy]\nallow = ["x"]\ndeny = ["x"]\n'


class Applied:
    def __init__(self) -> None:
        self.configs: list[Config] = []

    async def __call__(self, config: Config) -> None:
        self.configs.append(config)


def _write(path: Path, text: str) -> None:
    # Write a fresh file and rename it over the old one, as editors do; this changes the inode,
    # so the change is seen even when the mtime granularity is coarse.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def _until(predicate: object, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not predicate():  # type: ignore[operator]
            await anyio.sleep(0.01)


async def test_a_changed_file_is_applied(tmp_path: Path) -> None:
    cfg = tmp_path / "checkrein.toml"
    _write(cfg, GOOD_A)
    applied = Applied()
    w = ConfigWatcher(cfg, applied, stderr=io.StringIO())
    assert not await w.check()  # unchanged since start
    _write(cfg, GOOD_B)
    assert await w.check()
    assert applied.configs[-1].policy.allow == ("b__*",)
    assert w.applied == 1


async def test_an_invalid_config_is_refused_with_the_reason_and_the_old_one_stays(tmp_path: Path) -> None:
    cfg = tmp_path / "checkrein.toml"
    _write(cfg, GOOD_A)
    applied, err = Applied(), io.StringIO()
    w = ConfigWatcher(cfg, applied, stderr=err)
    _write(cfg, BAD)
    assert not await w.check()
    assert applied.configs == []
    assert "both allowed and denied" in err.getvalue()
    assert "keeping the current config" in err.getvalue()
    assert w.refused == 1
    _write(cfg, BAD + "\n# same mistake, new bytes\n")
    await w.check()
    _write(cfg, GOOD_B)
    assert await w.check()
    assert w.last_error is None


async def test_a_config_the_callback_cannot_apply_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "checkrein.toml"
    _write(cfg, GOOD_A)

    async def explode(config: Config) -> None:
        raise RuntimeError("policy does not compile")

    err = io.StringIO()
    w = ConfigWatcher(cfg, explode, stderr=err)
    _write(cfg, GOOD_B)
    assert not await w.check()
    assert "policy does not compile" in err.getvalue()


async def test_a_deleted_file_keeps_the_old_config(tmp_path: Path) -> None:
    cfg = tmp_path / "checkrein.toml"
    _write(cfg, GOOD_A)
    err = io.StringIO()
    w = ConfigWatcher(cfg, Applied(), stderr=err)
    cfg.unlink()
    assert not await w.check()
    assert "cannot read" in err.getvalue()


async def test_the_poll_loop_sees_a_change(tmp_path: Path) -> None:
    cfg = tmp_path / "checkrein.toml"
    _write(cfg, GOOD_A)
    applied = Applied()
    w = ConfigWatcher(cfg, applied, poll_s=0.02, stderr=io.StringIO(), handle_sighup=False)
    async with anyio.create_task_group() as tg:
        await tg.start(w.run)
        _write(cfg, GOOD_B)
        await _until(lambda: w.applied == 1)
        tg.cancel_scope.cancel()
    assert applied.configs[-1].policy.allow == ("b__*",)


async def test_sighup_forces_a_reload(tmp_path: Path) -> None:
    cfg = tmp_path / "checkrein.toml"
    _write(cfg, GOOD_A)
    applied = Applied()
    # A poll interval far longer than the test: only the signal can trigger the reload.
    w = ConfigWatcher(cfg, applied, poll_s=3600, stderr=io.StringIO())
    async with anyio.create_task_group() as tg:
        await tg.start(w.run)
        os.kill(os.getpid(), signal.SIGHUP)
        await _until(lambda: w.applied == 1)
        tg.cancel_scope.cancel()
    assert applied.configs[-1].policy.allow == ("a__*",)
