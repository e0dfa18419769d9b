"""The sandbox server over a real stdio MCP session: weather, files, commands and refusals."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
Connect = Callable[[str], AbstractAsyncContextManager[Client]]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_annotations_match_what_tools_do_and_weather_is_deterministic(connect: Connect) -> None:
    with anyio.fail_after(30):
        async with connect("sandbox") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            a = await client.call_tool("get_weather", {"city": "Shanghai"})
            b = await client.call_tool("get_weather", {"city": "shanghai, China"})
            fc = await client.call_tool("get_forecast", {"city": "Tokyo", "days": 7})
            too_many = await client.call_tool("get_forecast", {"city": "Tokyo", "days": 8})
            unknown = await client.call_tool("get_weather", {"city": "Atlantis"})
    assert set(tools) == {"get_weather", "get_forecast", "read_file", "write_file", "delete_file", "execute_command"}
    for name in ("get_weather", "get_forecast", "read_file"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["delete_file"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["write_file"].annotations.read_only_hint is False  # type: ignore[union-attr]
    assert tools["write_file"].input_schema["properties"]["content"]["maxLength"] == 10_000
    days = tools["get_forecast"].input_schema["properties"]["days"]
    assert (days["minimum"], days["maximum"]) == (1, 7)

    assert _text(a) == _text(b)
    assert json.loads(_text(a))["city"] == "Shanghai"
    assert len(json.loads(_text(fc))["days"]) == 7
    assert too_many.is_error and "days" in _text(too_many)
    assert unknown.is_error and "known cities" in _text(unknown)


async def test_files_round_trip_and_protected_files_stay(connect: Connect, state: dict[str, str]) -> None:
    box = Path(state["CHECKREIN_SANDBOX_DIR"])
    with anyio.fail_after(30):
        async with connect("sandbox") as client:
            seeded = await client.call_tool("read_file", {"filename": "important.txt"})
            wrote = await client.call_tool("write_file", {"filename": "todo.txt", "content": "buy tea"})
            back = await client.call_tool("read_file", {"filename": "todo.txt"})
            too_long = await client.call_tool("write_file", {"filename": "big.txt", "content": "x" * 10_001})
            overwrite = await client.call_tool("write_file", {"filename": "config.ini", "content": "pwned"})
            no_confirm = await client.call_tool("delete_file", {"filename": "todo.txt"})
            string_confirm = await client.call_tool("delete_file", {"filename": "todo.txt", "confirm": "true"})
            protected = await client.call_tool("delete_file", {"filename": "important.txt", "confirm": True})
            deleted = await client.call_tool("delete_file", {"filename": "todo.txt", "confirm": True})
            missing = await client.call_tool("read_file", {"filename": "todo.txt"})
    assert not seeded.is_error and "access review" in _text(seeded)
    assert not wrote.is_error and _text(back) == "buy tea"
    assert too_long.is_error and not (box / "big.txt").exists()
    assert overwrite.is_error and "protected" in _text(overwrite)
    assert "pwned" not in (box / "config.ini").read_text()
    assert no_confirm.is_error and "confirm=true" in _text(no_confirm)
    assert string_confirm.is_error
    assert protected.is_error and (box / "important.txt").exists()
    assert not deleted.is_error and not (box / "todo.txt").exists()
    assert missing.is_error and _text(missing) == "file not found: todo.txt"


async def test_path_attacks_are_refused_through_every_file_tool(connect: Connect, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret-outside")
    attacks = ["../outside.txt", "%2e%2e%2foutside.txt", "%252e%252e%252foutside.txt", "..\\outside.txt",
               str(tmp_path / "outside.txt"), "~/outside.txt", "$HOME", "a|b", "a;b", "a&b"]
    with anyio.fail_after(30):
        async with connect("sandbox") as client:
            for name in attacks:
                for tool, args in (("read_file", {}), ("write_file", {"content": "x"}),
                                   ("delete_file", {"confirm": True})):
                    result = await client.call_tool(tool, {"filename": name, **args})
                    assert result.is_error, (tool, name)
                    assert _text(result).startswith("refused"), (tool, name, _text(result))
    assert (tmp_path / "outside.txt").read_text() == "secret-outside"


async def test_commands_run_from_the_allowlist_only(connect: Connect) -> None:
    with anyio.fail_after(30):
        async with connect("sandbox") as client:
            ok = await client.call_tool("execute_command", {"command": "cat notes.txt"})
            ls = await client.call_tool("execute_command", {"command": "ls"})
            piped = await client.call_tool("execute_command", {"command": "cat notes.txt | sh"})
            rm = await client.call_tool("execute_command", {"command": "rm -rf ."})
            escape = await client.call_tool("execute_command", {"command": "cat ../../etc/passwd"})
    out = json.loads(_text(ok))
    assert out["exit_code"] == 0 and "Shopping list" in out["stdout"]
    assert "important.txt" in json.loads(_text(ls))["stdout"]
    assert piped.is_error and "shell syntax" in _text(piped)
    assert rm.is_error and "not allowed" in _text(rm)
    assert escape.is_error and "root:" not in _text(escape)
