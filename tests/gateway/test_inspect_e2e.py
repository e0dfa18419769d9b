"""Result inspection end to end: `checkrein serve` (stdio subprocess, and Streamable HTTP on
127.0.0.1) in front of the content test server (a real upstream subprocess), driven by the
official SDK client in both protocol eras.

Every content kind arrives with an injection and with a secret; what the client receives never
holds either. Oversize, deep and malformed results are refused or cut promptly, with a reason.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from gateway_support import free_port, gateway_stdio_params, start_http_gateway, stop
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from checkrein.testing.content_server import (
    ERRORS,
    INJECTION_MARK,
    PROGRESS_MESSAGES,
    PROMPT_FIXTURES,
    RESOURCE_FIXTURES,
    SECRET,
    TOOL_FIXTURES,
    prompt_name,
    readable,
    resource_uri,
)

pytestmark = pytest.mark.anyio

CAP = 262_144
UPSTREAM_TIMEOUT_S = 20.0


@dataclass
class Gateway:
    config: Path
    url: str | None = None


@pytest.fixture(scope="module", params=["stdio", "http"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    directory = tmp_path_factory.mktemp(f"inspect-e2e-{request.param}")
    config = directory / "checkrein.toml"
    config.write_text(
        f"""[gateway]
lock_file = {json.dumps(str(directory / "checkrein.lock"))}

[[servers]]
name = "c"
command = {json.dumps(sys.executable)}
args = ["-m", "checkrein.testing.content_server"]
timeout_s = {UPSTREAM_TIMEOUT_S}

[policy]
allow = ["c__*"]

[policy.flow]  # this suite is about what inspection delivers, not about session flow rules
rule_of_two = "off"
provenance = "off"
""",
        encoding="utf-8",
    )
    if request.param == "stdio":
        yield Gateway(config)
        return
    port = free_port()
    proc = start_http_gateway(config, port)
    try:
        yield Gateway(config, f"http://127.0.0.1:{port}/mcp")
    finally:
        stop(proc)


@asynccontextmanager
async def client(gw: Gateway, mode: str = "legacy") -> AsyncIterator[Client]:
    if gw.url is None:
        async with Client(gateway_stdio_params(gw.config), mode=mode, cache=None) as c:  # type: ignore[arg-type]
            yield c
        return
    http = httpx2.AsyncClient(timeout=60, trust_env=False)
    async with http, Client(streamable_http_client(gw.url, http_client=http), mode=mode, cache=None) as c:  # type: ignore[arg-type]
        yield c


def received(result: Any) -> str:
    """What the client got, as text: the JSON and the decoded bytes of every binary payload."""
    return readable(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_injection_and_no_secret_of_any_content_kind_reaches_the_client(gateway: Gateway, mode: str) -> None:
    """Every carrier of text (tools, resources, prompts) arrives masked or withheld, never raw."""
    leaks: list[str] = []
    with anyio.fail_after(180):
        async with client(gateway, mode) as c:
            for name in TOOL_FIXTURES:
                result = await c.call_tool("c__fixture", {"name": name})
                got = received(result)
                if INJECTION_MARK in got or SECRET in got:
                    leaks.append(f"tool {name}")
                if name.endswith(":secret") and (result.is_error or "REDACTED" not in got):
                    leaks.append(f"tool {name}: the secret's result was not delivered masked: {got[:200]}")
            listed = {r.name: r.uri for r in (await c.list_resources()).resources}
            for name in RESOURCE_FIXTURES:
                assert name in listed, f"resource {resource_uri(name)} not listed"
                try:
                    got = received(await c.read_resource(listed[name]))
                except Exception as exc:  # a withheld read is a JSON-RPC error with a reason
                    got = str(exc)
                if INJECTION_MARK in got or SECRET in got:
                    leaks.append(f"resource {name}")
            prompts = {p.name for p in (await c.list_prompts()).prompts}
            for name in PROMPT_FIXTURES:
                exposed = f"c__{prompt_name(name)}"
                assert exposed in prompts
                try:
                    got = received(await c.get_prompt(exposed))
                except Exception as exc:
                    got = str(exc)
                if INJECTION_MARK in got or SECRET in got:
                    leaks.append(f"prompt {name}")
    assert leaks == []


async def test_oversize_results_of_every_kind_are_cut_to_the_cap(gateway: Gateway) -> None:
    """A 4 MB image, audio clip, blob, text or _meta reaches the client within the 256 KiB cap."""
    with anyio.fail_after(180):
        async with client(gateway) as c:
            for kind in ("image", "audio", "blob", "meta", "text"):
                result = await c.call_tool("c__big", {"kind": kind, "size": 4 * 1024 * 1024})
                size = len(result.model_dump_json(by_alias=True, exclude_none=True))
                assert size <= CAP + 512, f"{kind}: {size} bytes passed a {CAP}-byte cap"
                if kind == "meta":  # metadata that does not fit is left out; the blocks stay
                    assert result.meta is None and text_of(result) == "small"
                else:
                    assert "truncated by checkrein" in received(result), kind


async def test_deep_and_malformed_results_are_refused_promptly_with_a_reason(gateway: Gateway) -> None:
    """100 and 200 levels deep (200 is past the SDK parser's own limit) are refused by the depth
    bound, 5000 by the upstream itself; none waits for the upstream timeout."""
    with anyio.fail_after(120):
        async with client(gateway) as c:
            for depth in (100, 200):
                with anyio.fail_after(UPSTREAM_TIMEOUT_S / 2):
                    deep = await c.call_tool("c__deep", {"depth": depth})
                assert deep.is_error and "nests deeper than 64 levels" in text_of(deep), (depth, text_of(deep))
            with anyio.fail_after(UPSTREAM_TIMEOUT_S / 2):
                deepest = await c.call_tool("c__deep", {"depth": 5000})
            assert deepest.is_error and "did not answer" not in text_of(deepest), text_of(deepest)
            for kind in ("image", "blob"):
                bad = await c.call_tool("c__bad_base64", {"kind": kind})
                assert bad.is_error and "not valid base64" in text_of(bad)
            fine = await c.call_tool("c__deep", {"depth": 10})
            assert not fine.is_error


async def test_upstream_error_messages_and_data_are_inspected_before_the_client_sees_them(gateway: Gateway) -> None:
    """An upstream JSON-RPC error's message and data are masked, and withheld for an injection."""
    with anyio.fail_after(120):
        async with client(gateway) as c:
            got = {name: await c.call_tool("c__fail_with", {"name": name}) for name in ERRORS}
    for name, result in got.items():
        text = text_of(result)
        assert result.is_error and text.startswith("error from checkrein"), name
        assert INJECTION_MARK not in text and SECRET not in text, name
    assert "JSON-RPC error -32602" in text_of(got["secret"]) and "REDACTED" in text_of(got["secret"])
    assert "withheld" in text_of(got["injection"]) and "withheld" in text_of(got["split"])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_messages_are_masked_or_withheld_and_their_numbers_go_on(gateway: Gateway, mode: str) -> None:
    """A relayed call's progress message is inspected like a log line: a secret arrives masked, an
    injection as checkrein's note; the progress numbers and a plain message arrive as they were."""
    seen: dict[str, list[tuple[float, float | None, str | None]]] = {}
    with anyio.fail_after(120):
        async with client(gateway, mode) as c:
            for payload in PROGRESS_MESSAGES:
                got = seen.setdefault(payload, [])

                async def progress(p: float, total: float | None, message: str | None, got: Any = got) -> None:
                    got.append((p, total, message))

                result = await c.call_tool("c__progress", {"payload": payload}, progress_callback=progress)
                assert not result.is_error and text_of(result) == "done", payload
    for payload, got in seen.items():
        assert [(p, t) for p, t, _ in got] == [(1, 2), (2, 2)], (payload, got)
        assert got[1][2] == "step 2 of 2"
    assert seen["plain"][0][2] == "step 1 of 2"
    secret = seen["secret"][0][2] or ""
    assert SECRET not in secret and "[REDACTED:" in secret and secret.startswith("step 1 of 2"), secret
    injected = seen["injection"][0][2] or ""
    assert INJECTION_MARK not in injected and "withheld by checkrein" in injected, injected
