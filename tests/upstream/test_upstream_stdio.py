"""The stdio transport: stderr ring buffer, line framing of large and broken output."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from checkrein.config import ServerConfig
from checkrein.upstream import McpUpstream
from checkrein.upstream._stdio import StderrTail


def test_stderr_tail_keeps_the_last_lines_and_the_unterminated_one() -> None:
    tail = StderrTail(max_lines=3)
    tail.feed(b"one\ntwo\nthr")
    tail.feed(b"ee\nfour\nfive\npartial")
    assert tail.tail(10) == ["three", "four", "five", "partial"]
    assert tail.tail(2) == ["five", "partial"]
    assert tail.tail(0) == []
    assert tail.total_bytes == len(b"one\ntwo\nthree\nfour\nfive\npartial")


def test_stderr_tail_bounds_long_lines_and_bad_bytes() -> None:
    tail = StderrTail(max_lines=5, max_line_chars=10)
    tail.feed(b"\xff\xfe broken utf-8\r\n")
    tail.feed(b"y" * 100)
    lines = tail.tail(5)
    assert lines[0].startswith("\ufffd") and len(lines[0]) == 10
    assert lines[1] == "y" * 10


@pytest.mark.anyio
async def test_large_messages_in_many_chunks_and_stray_stdout_lines(raw_server: Path) -> None:
    cfg = ServerConfig(name="raw", command=sys.executable, args=(str(raw_server),))
    async with McpUpstream(cfg) as up:
        with anyio.fail_after(30):
            await up.start()
            tools = await up.tools()
            big = {t.name: t for t in tools}["big"]
            assert len(big.description or "") == 1_000_000
            result = await up.call_tool("big", {}, timeout_s=20)
        assert len(result.content[0].text) == 1_000_000  # type: ignore[union-attr]
        assert result.meta is None, "the serverInfo stamp is stripped"
        assert up.stats["bad_messages"] == 1, "the stray line is counted and the session goes on"
        assert up.info.state == "ready" and up.info.server_name == "raw"
