"""Result inspection end to end: `checkrein serve` (stdio subprocess) in front of the content test
server (a real upstream subprocess), driven by the official SDK client in both protocol eras.

Every content kind arrives with an injection and with a secret; what the client receives never
holds either. Oversize, deep and malformed results are refused or cut promptly, with a reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from checkrein.testing.content_server import (
    ERRORS,
    INJECTION_MARK,
    PROMPT_FIXTURES,
    RESOURCE_FIXTURES,
    SECRET,
    TOOL_FIXTURES,
    prompt_name,
    readable,
    resource_uri,
)

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[2] / "src"
CAP = 262_144


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("inspect-e2e")
    path = directory / "checkrein.toml"
    path.write_text(
        f"""[gateway]
lock_file = {json.dumps(str(directory / "checkrein.lock"))}

[[servers]]
name = "c"
command = {json.dumps(sys.executable)}
args = ["-m", "checkrein.testing.content_server"]
timeout_s = 20.0

[policy]
allow = ["c__*"]

[policy.flow]  # this suite is about what inspection delivers, not about session flow rules
rule_of_two = "off"
provenance = "off"
""",
        encoding="utf-8",
    )
    return path


@asynccontextmanager
async def gateway(config: Path, mode: str) -> AsyncIterator[Client]:
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "checkrein", "serve", "--config", str(config)], env=env)
    async with Client(params, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        yield client


def received(result: Any) -> str:
    """What the client got, as text: the JSON and the decoded bytes of every binary payload."""
    return readable(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_injection_and_no_secret_of_any_content_kind_reaches_the_client(config: Path, mode: str) -> None:
    leaks: list[str] = []
    with anyio.fail_after(120):
        async with gateway(config, mode) as client:
            for name in TOOL_FIXTURES:
                result = await client.call_tool("c__fixture", {"name": name})
                got = received(result)
                if INJECTION_MARK in got or SECRET in got:
                    leaks.append(f"tool {name}")
                if name.endswith(":secret") and (result.is_error or "REDACTED" not in got):
                    leaks.append(f"tool {name}: the secret's result was not delivered masked: {got[:200]}")
            listed = {r.name: r.uri for r in (await client.list_resources()).resources}
            for name in RESOURCE_FIXTURES:
                assert name in listed, f"resource {resource_uri(name)} not listed"
                try:
                    got = received(await client.read_resource(listed[name]))
                except Exception as exc:  # a withheld read is a JSON-RPC error with a reason
                    got = str(exc)
                if INJECTION_MARK in got or SECRET in got:
                    leaks.append(f"resource {name}")
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            for name in PROMPT_FIXTURES:
                exposed = f"c__{prompt_name(name)}"
                assert exposed in prompts
                try:
                    got = received(await client.get_prompt(exposed))
                except Exception as exc:
                    got = str(exc)
                if INJECTION_MARK in got or SECRET in got:
                    leaks.append(f"prompt {name}")
    assert leaks == []


async def test_oversize_deep_and_malformed_results_are_cut_or_refused_promptly(config: Path) -> None:
    with anyio.fail_after(120):
        async with gateway(config, "legacy") as client:
            for kind in ("image", "audio", "blob", "meta", "text"):
                result = await client.call_tool("c__big", {"kind": kind, "size": 4 * 1024 * 1024})
                size = len(result.model_dump_json(by_alias=True, exclude_none=True))
                assert size <= CAP + 512, f"{kind}: {size} bytes passed a {CAP}-byte cap"
                if kind == "meta":  # metadata that does not fit is left out; the blocks stay
                    assert result.meta is None and text_of(result) == "small"
                else:
                    assert "truncated by checkrein" in received(result), kind
            deep = await client.call_tool("c__deep", {"depth": 100})
            assert deep.is_error and "nests deeper than 64 levels" in text_of(deep)
            for kind in ("image", "blob"):
                bad = await client.call_tool("c__bad_base64", {"kind": kind})
                assert bad.is_error and "not valid base64" in text_of(bad)
            fine = await client.call_tool("c__deep", {"depth": 10})
            assert not fine.is_error


async def test_upstream_error_messages_and_data_are_inspected_before_the_client_sees_them(config: Path) -> None:
    with anyio.fail_after(120):
        async with gateway(config, "legacy") as client:
            got = {name: await client.call_tool("c__fail_with", {"name": name}) for name in ERRORS}
    for name, result in got.items():
        text = text_of(result)
        assert result.is_error and text.startswith("error from checkrein"), name
        assert INJECTION_MARK not in text and SECRET not in text, name
    assert "JSON-RPC error -32602" in text_of(got["secret"]) and "REDACTED" in text_of(got["secret"])
    assert "withheld" in text_of(got["injection"]) and "withheld" in text_of(got["split"])
