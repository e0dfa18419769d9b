"""`checkrein.policy.result_cap`: a result cut to the cap counts every byte the client would receive."""

from __future__ import annotations

import base64
from typing import Any

import mcp.types as types
import orjson
import pytest

from checkrein.config.policy import ResultSettings
from checkrein.policy import Identity, ResultView, ToolCall
from checkrein.policy.inspect import DefaultInspector
from checkrein.policy.result_cap import OMITTED_MARKER, cap_result

CAP = 262_144
CALL = ToolCall(Identity("u"), "s", "t", "p", "files__read", {}, "files", "read")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16


def size(value: Any) -> int:
    return len(orjson.dumps(value))


def image(n: int) -> dict[str, Any]:
    return {"type": "image", "data": base64.b64encode((PNG * (n // len(PNG) + 1))[:n]).decode(), "mimeType": "image/png"}


def inspect(kind: Any, value: Any, **settings: Any) -> Any:
    return DefaultInspector(ResultSettings(**settings)).inspect(CALL, ResultView(kind, value))


def test_a_4_mb_image_does_not_pass_a_256_kib_cap() -> None:
    value = {"content": [{"type": "text", "text": "the chart:"}, image(4 * 1024 * 1024)], "isError": False}
    out = inspect("tool", value)
    assert out.action == "deliver" and "truncated" in out.flags and out.degraded == ("inspect.truncated",)
    assert size(out.result) <= CAP
    assert out.result["content"][0]["text"] == "the chart:"
    assert out.result["content"][1]["type"] == "text" and "an image omitted" in out.result["content"][1]["text"]
    types.CallToolResult.model_validate(out.result)


def test_a_2_7_mb_blob_does_not_pass_a_256_kib_cap_in_any_result_kind() -> None:
    blob = base64.b64encode(PNG * (2_700_000 // len(PNG))).decode()
    embedded = {"content": [{"type": "resource", "resource": {"uri": "file:///b", "mimeType": "application/pdf", "blob": blob}}]}
    read = {"contents": [{"uri": "file:///b", "mimeType": "application/pdf", "blob": blob}]}
    for kind, value, model in (("tool", embedded, types.CallToolResult), ("resource", read, types.ReadResourceResult)):
        out = inspect(kind, value)
        assert out.action == "deliver" and size(out.result) <= CAP, kind
        model.model_validate(out.result)
    denied = inspect("resource", read, oversize="deny")
    assert denied.action == "deny" and denied.code == "result.oversize" and "262144" in denied.reason


def test_metadata_counts_toward_the_cap_and_is_dropped_when_it_does_not_fit() -> None:
    value = {"content": [{"type": "text", "text": "small"}], "_meta": {"blob": "m" * 300_000}}
    out = inspect("tool", value)
    assert "_meta" not in out.result and out.result["content"][0]["text"] == "small"
    assert size(out.result) <= CAP


def test_a_text_that_does_not_fit_is_cut_with_a_marker_and_the_rest_is_counted_in_one_marker() -> None:
    value = {"content": [{"type": "text", "text": "x" * 300_000}] + [{"type": "text", "text": "y"}] * 1000}
    capped = cap_result("tool", value, max_bytes=CAP, max_depth=64).value
    assert size(capped) <= CAP
    assert capped["content"][0]["text"].endswith("bytes omitted]")
    assert len(capped["content"]) == 2
    assert capped["content"][1]["text"] == OMITTED_MARKER.format(what="1000 more item(s)", cap=CAP)


def test_escapes_count_as_the_bytes_they_become() -> None:
    """A text of newlines doubles on the wire; the cut fits the encoded size."""
    out = inspect("tool", {"content": [{"type": "text", "text": "\n" * 200_000 + "\x01" * 100_000}]})
    assert size(out.result) <= CAP


def test_prompt_and_error_kinds_are_cut_too() -> None:
    prompt = {"description": "d" * 10, "messages": [{"role": "user", "content": {"type": "text", "text": "p" * 400_000}}]}
    out = inspect("prompt", prompt)
    assert size(out.result) <= CAP
    types.GetPromptResult.model_validate(out.result)
    inspector = DefaultInspector(ResultSettings(oversize="deny"))
    err = inspector.inspect_error(CALL, "e" * 400_000, {"trace": "t" * 400_000})
    assert len(err.message.encode()) <= CAP and err.data is None, "an error is never refused, only cut"
    assert "inspect.truncated" in err.degraded


@pytest.mark.parametrize("n", [1, 50_000])
def test_cutting_is_bounded_by_the_cap_not_by_the_number_of_items(n: int) -> None:
    value = {"content": [{"type": "text", "text": "z" * 300_000}] + [image(10)] * n}
    capped = cap_result("tool", value, max_bytes=CAP, max_depth=64).value
    assert size(capped) <= CAP and len(capped["content"]) == 2
