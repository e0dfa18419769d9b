"""`DefaultInspector` over every content kind: an injection or a secret anywhere never reaches the client."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import mcp.types as types
import pydantic
import pytest

from checkrein.config.policy import ResultSettings
from checkrein.policy import Identity, Inspection, ResultView, ToolCall
from checkrein.policy.inspect import DefaultInspector
from checkrein.testing.content_server import CARRIERS, HALVES, INJECTION, SECRET, readable

CALL = ToolCall(Identity("u"), "s", "t", "p", "docs__fetch", {}, "docs", "fetch")
ATTACK = INJECTION
TOKEN = SECRET


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def tool(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"content": list(blocks), "isError": False, **extra}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


# Where a string can travel in a result: (kind, build(string) -> JSON result). The SDK drops fields
# it does not know; a raw JSON path would deliver them, so they are inspected too.
PLACES: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    **CARRIERS,
    "unknown field": ("tool", lambda s: tool(text("ok"), extension={"value": s})),
    "unknown block type": ("tool", lambda s: tool({"type": "video", "caption": s})),
}


def delivered(result: Any) -> str:
    return readable(result)


def inspect(kind: Any, value: dict[str, Any], **settings: Any) -> Inspection:
    return DefaultInspector(ResultSettings(**settings)).inspect(CALL, ResultView(kind, value))


def valid(kind: str, original: Any, result: Any) -> None:
    """A result the SDK accepted before inspection, it still accepts after."""
    model = {"tool": types.CallToolResult, "resource": types.ReadResourceResult, "prompt": types.GetPromptResult}[kind]
    try:
        model.model_validate(original)
    except pydantic.ValidationError:
        return
    model.model_validate(result)


@pytest.mark.parametrize("where", PLACES)
def test_an_injection_anywhere_is_never_delivered(where: str) -> None:
    kind, build = PLACES[where]
    out = inspect(kind, build(ATTACK))
    assert "injection" in out.flags and "untrusted" in out.flags, where
    if out.action == "deliver":
        assert "fields_withheld" in out.flags
        assert "evil.example" not in delivered(out.result)
        valid(kind, build(ATTACK), out.result)
    else:
        assert out.action == "withhold" and out.result is None and "evil.example" not in out.reason


@pytest.mark.parametrize("where", PLACES)
def test_a_secret_anywhere_is_masked(where: str) -> None:
    kind, build = PLACES[where]
    out = inspect(kind, build(f"token={TOKEN}"))
    assert out.action == "deliver" and "secrets_redacted" in out.flags, where
    assert TOKEN not in delivered(out.result) and TOKEN[4:20] not in delivered(out.result)
    assert out.redactions and all(TOKEN not in p for p in out.redactions), "pointers reach the audit: no secret in them"
    valid(kind, build(f"token={TOKEN}"), out.result)


@pytest.mark.parametrize("where", PLACES)
def test_wrap_fences_an_injection_anywhere_and_keeps_results_valid(where: str) -> None:
    kind, build = PLACES[where]
    out = inspect(kind, build(ATTACK), injection="wrap")
    assert out.action == "deliver" and "untrusted" in out.flags
    assert "untrusted-data-" in delivered(out.result), where
    valid(kind, build(ATTACK), out.result)


SPLITS: dict[str, tuple[str, dict[str, Any]]] = {
    "two text blocks": ("tool", tool(text(HALVES[0]), text(HALVES[1]))),
    "text then embedded resource": ("tool", tool(text(HALVES[0]), {"type": "resource", "resource": {"uri": "u:", "text": HALVES[1]}})),
    "text then link description": ("tool", tool(text(HALVES[0]), {"type": "resource_link", "name": "n", "uri": "u:", "description": HALVES[1]})),
    "text then text blob": ("tool", tool(text(HALVES[0]), {"type": "resource", "resource": {"uri": "u:", "mimeType": "text/plain", "blob": b64(HALVES[1])}})),
    "consecutive prompt messages": ("prompt", {"messages": [{"role": "user", "content": text(HALVES[0])}, {"role": "user", "content": text(HALVES[1])}]}),
    "description then message": ("prompt", {"description": HALVES[0], "messages": [{"role": "user", "content": text(HALVES[1])}]}),
    "two resource contents": ("resource", {"contents": [{"uri": "u:", "text": HALVES[0]}, {"uri": "u:", "text": HALVES[1]}]}),
    "two structured fields": ("tool", tool(text("ok"), structuredContent={"a": HALVES[0], "b": HALVES[1]})),
}


@pytest.mark.parametrize("where", SPLITS)
def test_an_injection_split_across_adjacent_pieces_is_caught(where: str) -> None:
    kind, value = SPLITS[where]
    out = inspect(kind, value)
    assert "injection" in out.flags, where
    assert out.action == "withhold" or "evil.example" not in delivered(out.result)


def test_each_half_of_the_split_attack_alone_is_clean() -> None:
    for half in HALVES:
        assert "injection" not in inspect("tool", tool(text(half))).flags


def test_a_secret_split_across_two_text_blocks_is_masked_in_both() -> None:
    out = inspect("tool", tool(text("export GITHUB_TOKEN=" + TOKEN[:20]), text(TOKEN[20:] + " # done")))
    joined = "".join(b["text"] for b in out.result["content"])
    assert TOKEN not in joined and TOKEN[20:] not in joined and "secrets_redacted" in out.flags


def test_a_member_named_like_a_secret_is_masked_by_its_name() -> None:
    out = inspect("tool", tool(text("ok"), structuredContent={"db": {"password": "hunter2-prod", "host": "db1"}}))
    assert out.result["structuredContent"]["db"]["password"] != "hunter2-prod"
    assert out.result["structuredContent"]["db"]["host"] == "db1"
    assert "/structuredContent/db/password" in out.redactions


def test_two_keys_masked_alike_do_not_collapse_into_one() -> None:
    other = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    out = inspect("tool", tool(text("ok"), structuredContent={TOKEN: 1, other: 2}))
    keys = list(out.result["structuredContent"])
    assert len(keys) == 2 and sorted(out.result["structuredContent"].values()) == [1, 2]
    assert all("ghp_" not in k for k in keys)


def test_a_redacted_text_blob_is_re_encoded_in_its_own_charset() -> None:
    blob = base64.b64encode(f"clé={TOKEN}".encode("utf-16")).decode()
    out = inspect("resource", {"contents": [{"uri": "u:", "mimeType": "text/plain; charset=utf-16", "blob": blob}]})
    decoded = base64.b64decode(out.result["contents"][0]["blob"]).decode("utf-16")
    assert decoded.startswith("clé=") and TOKEN not in decoded and "REDACTED" in decoded


def test_a_secret_past_the_finders_window_is_masked_in_a_long_text() -> None:
    long = "word " * 260_000 + f"token={TOKEN}"
    out = inspect("tool", tool(text(long)), max_bytes=4_000_000)
    assert TOKEN not in out.result["content"][0]["text"]


def test_pixels_are_delivered_untouched() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()
    value = tool({"type": "image", "data": png, "mimeType": "image/png"})
    out = inspect("tool", value)
    assert out.action == "deliver" and out.result is value and out.flags == ()


def test_a_blob_with_wrong_base64_is_refused_with_a_reason() -> None:
    out = inspect("resource", {"contents": [{"uri": "u:", "mimeType": "image/png", "blob": "%%%not base64%%%"}]})
    assert out.action == "deny" and out.code == "result.bad_base64" and "base64" in out.reason
    assert out.degraded == ("inspect.bad_base64",) and "bad_data" in out.flags


def test_the_view_is_never_changed_by_inspection() -> None:
    value = tool(text(f"token={TOKEN}"), structuredContent={"k": ATTACK})
    before = json.dumps(value)
    inspect("tool", value)
    inspect("tool", value, injection="wrap")
    assert json.dumps(value) == before


# -- upstream errors -------------------------------------------------------------------------------


def test_an_error_message_with_an_injection_is_withheld_with_a_reason() -> None:
    err = DefaultInspector(ResultSettings()).inspect_error(CALL, f"lookup failed: {ATTACK}", {"hint": "retry"})
    assert "evil.example" not in err.message and "withheld" in err.message and err.data is None
    assert "injection" in err.flags


def test_an_injection_split_between_error_message_and_data_is_caught() -> None:
    err = DefaultInspector(ResultSettings()).inspect_error(CALL, HALVES[0], {"detail": HALVES[1]})
    assert "evil.example" not in err.message + json.dumps(err.data) and "injection" in err.flags


def test_secrets_in_error_messages_data_and_data_keys_are_masked() -> None:
    err = DefaultInspector(ResultSettings()).inspect_error(
        CALL, f"auth failed with {TOKEN}", {"request": {"headers": {"Authorization": f"Bearer {TOKEN}"}}, TOKEN: 1}
    )
    assert TOKEN not in err.message and TOKEN not in json.dumps(err.data)
    assert "secrets_redacted" in err.flags and err.data["request"]["headers"]["Authorization"] != f"Bearer {TOKEN}"


def test_error_data_too_deep_to_inspect_is_dropped_and_the_message_still_inspected() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    err = DefaultInspector(ResultSettings()).inspect_error(CALL, f"oops {TOKEN}", deep)
    assert err.data is None and TOKEN not in err.message and err.degraded == ("inspect.too_deep",)


def test_error_wrap_mode_fences_the_message() -> None:
    err = DefaultInspector(ResultSettings(injection="wrap")).inspect_error(CALL, ATTACK, None)
    assert ATTACK in err.message and "untrusted-data-" in err.message
