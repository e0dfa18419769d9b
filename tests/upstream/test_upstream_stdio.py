"""The stdio transport: stderr ring buffer, line framing of large, broken and deeply nested output."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from checkrein.config import ServerConfig
from checkrein.errors import UpstreamRequestFailed
from checkrein.upstream import McpUpstream
from checkrein.upstream._stdio import StderrTail, _top_level_id


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


@pytest.mark.anyio
async def test_results_nested_past_the_parsers_limits_are_read_or_answered_never_left_waiting(raw_server: Path) -> None:
    """200 levels (past the SDK's fast parser) are read for inspection to judge; 100 000 (past any
    parser) fail that one call at once with a parse error; the session goes on."""
    cfg = ServerConfig(name="raw", command=sys.executable, args=(str(raw_server),))
    async with McpUpstream(cfg) as up:
        with anyio.fail_after(60):
            await up.start()
            result = await up.call_tool("deep", {"depth": 200}, timeout_s=30)
            value, depth = (result.structured_content or {})["v"], 0
            while value:
                value, depth = value[0], depth + 1
            assert depth == 199  # 200 arrays, the innermost empty
            with pytest.raises(UpstreamRequestFailed) as failed:
                await up.call_tool("deep", {"depth": 100_000}, timeout_s=30)
            assert failed.value.rpc_code == -32700 and "nests too deep" in str(failed.value)
            echo = await up.call_tool("echo", {"text": "still here"}, timeout_s=30)
        assert echo.content[0].text == "still here"  # type: ignore[union-attr]
        assert up.info.state == "ready"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"jsonrpc": "2.0", "id": 7, "result": [[[]]]}', 7),
        (b'{"jsonrpc":"2.0","id":"a\\"b","result":{}}', 'a"b'),
        (b'{"result": {"id": 1, "x": ["id", {"id": 2}]}, "id" : -3}', -3),
        (b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"id": 4}}', None),
        (b'{"jsonrpc": "2.0", "note": "id", "result": [[[', None),
        (b'[{"id": 5}]', None),
    ],
)
def test_the_id_of_an_unreadable_answer_is_found_only_at_the_top_level(line: bytes, expected: object) -> None:
    """Only the top-level ``id`` member names the request an unreadable answer belongs to."""
    assert _top_level_id(line) == expected
