"""The conformance fixture server over Streamable HTTP on 127.0.0.1, driven by the SDK's own client."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import checkrein.testing.conformance_server as conformance_server

# The suite exercises logging and subscriptions, which the 2026-07-28 era deprecates.
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

# A script path, not `-m`: the module imports only `mcp`, and skipping the package import starts faster.
SERVER = conformance_server.__file__


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """One fixture server subprocess for the module; its URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise AssertionError(f"fixture server exited with {proc.returncode}: {err[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("fixture server did not listen within 60 s") from None
                time.sleep(0.05)  # polling the port with a deadline
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@asynccontextmanager
async def session(url: str, **callbacks: Any) -> AsyncIterator[ClientSession]:
    with anyio.fail_after(30):
        async with streamable_http_client(url) as (read, write), ClientSession(read, write, **callbacks) as s:
            await s.initialize()
            yield s


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_advertises_the_suites_names_and_capabilities(url: str) -> None:
    """Every fixture tool, resource and prompt name the suite uses, and the capabilities it needs."""
    async with session(url) as s:
        caps = s.server_capabilities
        name = s.server_info.name if s.server_info else None
        tools = {t.name: t for t in (await s.list_tools()).tools}
        resources = {str(r.uri) for r in (await s.list_resources()).resources}
        templates = [t.uri_template for t in (await s.list_resource_templates()).resource_templates]
        prompts = {p.name for p in (await s.list_prompts()).prompts}
    assert {"test_simple_text", "test_tool_with_progress", "test_sampling", "test_elicitation_sep1330_enums"} <= set(tools)
    assert len(tools) == 14
    assert resources == {"test://static-text", "test://static-binary", "test://watched-resource"}
    assert templates == ["test://template/{id}/data"]
    assert prompts == {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image"}
    schema = tools["json_schema_2020_12_tool"].input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"] and schema["additionalProperties"] is False
    assert name == conformance_server.SERVER_NAME
    assert caps is not None and caps.logging is not None and caps.completions is not None
    assert caps.resources is not None and caps.resources.subscribe and caps.resources.list_changed
    assert caps.tools is not None and caps.tools.list_changed


async def test_content_kinds_and_tool_errors(url: str) -> None:
    """Text, image, audio, embedded resource and mixed results; ``isError`` for the error tool."""
    async with session(url) as s:
        assert text_of(await s.call_tool("test_simple_text", {})) == "This is a simple text response for testing."
        image = (await s.call_tool("test_image_content", {})).content[0]
        assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
        assert base64.b64decode(image.data).startswith(b"\x89PNG")
        audio = (await s.call_tool("test_audio_content", {})).content[0]
        assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"
        embedded = (await s.call_tool("test_embedded_resource", {})).content[0]
        assert isinstance(embedded, types.EmbeddedResource) and str(embedded.resource.uri) == "test://embedded-resource"
        mixed = (await s.call_tool("test_multiple_content_types", {})).content
        assert [b.type for b in mixed] == ["text", "image", "resource"]
        error = await s.call_tool("test_error_handling", {})
        assert error.is_error and "intentionally" in text_of(error)


async def test_progress_reaches_the_callers_token_in_order(url: str) -> None:
    """Three progress notifications, increasing, for the call that asked for them."""
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with session(url) as s:
        await s.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        plain = await s.call_tool("test_tool_with_progress", {})
    assert seen == [(0, 100), (50, 100), (100, 100)]
    assert text_of(plain) == "no progress token"


async def test_logging_follows_the_level_set_by_the_client(url: str) -> None:
    """At ``debug`` the tool's three info messages arrive; at ``warning`` none do."""
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with session(url, logging_callback=on_log) as s:
        await s.set_logging_level("debug")
        await s.call_tool("test_tool_with_logging", {})
        assert logs == ["Log level set to: debug", "Tool execution started", "Tool processing data", "Tool execution completed"]
        logs.clear()
        await s.set_logging_level("warning")
        await s.call_tool("test_tool_with_logging", {})
    assert logs == []


async def test_sampling_and_elicitation_ask_the_calling_client(url: str) -> None:
    """The tools send ``sampling/createMessage`` and ``elicitation/create`` and report the answers."""
    asked: list[Any] = []

    async def sample(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled"), model="test-model"
        )

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"response": "yes"})

    async with session(url, sampling_callback=sample, elicitation_callback=elicit) as s:
        sampled = await s.call_tool("test_sampling", {"prompt": "Say hi"})
        elicited = await s.call_tool("test_elicitation", {"message": "Your name?"})
        enums = await s.call_tool("test_elicitation_sep1330_enums", {})
    assert text_of(sampled) == "LLM response: sampled"
    assert text_of(elicited) == 'User response: action=accept, content={"response": "yes"}'
    assert text_of(enums).startswith("Elicitation completed: action=accept")
    sampling, first, sep1330 = asked
    assert isinstance(sampling, types.CreateMessageRequestParams) and sampling.max_tokens == 100
    assert isinstance(first, types.ElicitRequestFormParams) and first.message == "Your name?"
    assert isinstance(sep1330, types.ElicitRequestFormParams)
    props = sep1330.requested_schema["properties"]
    assert props["titledMulti"]["items"]["anyOf"][0] == {"const": "value1", "title": "First Choice"}
    assert props["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]


async def test_without_client_capability_the_tools_report_the_refusal(url: str) -> None:
    """A client with no sampling handler gets a text explaining it, not a hang."""
    async with session(url) as s:
        result = await s.call_tool("test_sampling", {"prompt": "Say hi"})
    assert text_of(result).startswith("Sampling not supported or error:")


async def test_resources_templates_and_unknown_uris(url: str) -> None:
    """Text and blob resources, the template's substitution, and -32002 for an unknown URI."""
    async with session(url) as s:
        static = (await s.read_resource("test://static-text")).contents[0]
        assert isinstance(static, types.TextResourceContents) and static.text.startswith("This is the content")
        binary = (await s.read_resource("test://static-binary")).contents[0]
        assert isinstance(binary, types.BlobResourceContents) and binary.blob == conformance_server.TEST_IMAGE_BASE64
        templated = (await s.read_resource("test://template/123/data")).contents[0]
        assert isinstance(templated, types.TextResourceContents)
        assert json.loads(templated.text) == {"id": "123", "templateTest": True, "data": "Data for ID: 123"}
        with pytest.raises(MCPError) as err:
            await s.read_resource("test://nothing-here")
    assert err.value.code == conformance_server.RESOURCE_NOT_FOUND


async def test_subscribe_announces_an_update_and_unsubscribe_answers(url: str) -> None:
    """Subscribing logs and sends ``notifications/resources/updated`` for that URI."""
    updated = anyio.Event()
    uris: list[str] = []
    logs: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            uris.append(str(message.params.uri))
            updated.set()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with session(url, message_handler=on_message, logging_callback=on_log) as s:
        await s.subscribe_resource("test://watched-resource")
        with anyio.fail_after(10):
            await updated.wait()
        await s.unsubscribe_resource("test://watched-resource")
    assert uris == ["test://watched-resource"]
    assert logs == ["Subscribed to resource: test://watched-resource", "Unsubscribed from resource: test://watched-resource"]


async def test_prompts_with_arguments_images_and_embedded_resources(url: str) -> None:
    """Argument substitution, a refused call without required arguments, image and resource messages."""
    async with session(url) as s:
        args = await s.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        content = args.messages[0].content
        assert isinstance(content, types.TextContent) and content.text == "Prompt with arguments: arg1='a', arg2='b'"
        with pytest.raises(MCPError):
            await s.get_prompt("test_prompt_with_arguments", {"arg1": "a"})
        embedded = (await s.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})).messages
        assert isinstance(embedded[0].content, types.EmbeddedResource) and str(embedded[0].content.resource.uri) == "test://x"
        image = (await s.get_prompt("test_prompt_with_image")).messages
        assert [m.content.type for m in image] == ["image", "text"]


async def test_completion_filters_by_the_typed_prefix(url: str) -> None:
    """Prompt-argument and template-variable completion return values starting with the input."""
    async with session(url) as s:
        prompt = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        par = await s.complete(prompt, {"name": "arg1", "value": "par"})
        template = types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data")
        ids = await s.complete(template, {"name": "id", "value": "1"})
        unknown = await s.complete(types.PromptReference(type="ref/prompt", name="nope"), {"name": "arg1", "value": ""})
    assert par.completion.values == ["paris", "park", "party"]
    assert ids.completion.values == ["1", "123"]
    assert unknown.completion.values == []


def test_foreign_host_headers_are_refused(url: str) -> None:
    """DNS-rebinding protection: a request naming another host is refused before any MCP handling."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    headers = {"Host": "evil.example.com", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with pytest.raises(urllib.error.HTTPError) as err:
        opener.open(request, timeout=10)
    assert 400 <= err.value.code < 500
