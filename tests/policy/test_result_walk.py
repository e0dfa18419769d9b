"""`checkrein.policy.result_walk`: every string of every content kind, bounded depth and size, on plain JSON."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import orjson
import pytest

from checkrein.policy.result_walk import (
    DROP,
    ResultRejected,
    Walk,
    collect,
    decode_text_payload,
    is_base64,
    json_size,
    pointer,
    rebuild,
)


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode("utf-8") if isinstance(data, str) else data).decode("ascii")


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


def walk(value: Any, kind: Any = "tool", **kw: Any) -> Walk:
    return collect(kind, value, max_depth=kw.pop("max_depth", 64), max_bytes=kw.pop("max_bytes", 1 << 20))


def texts(w: Walk) -> dict[str, str]:
    """pointer (``#key`` for a key) -> text, for every piece."""
    return {pointer(p.path) + ("#key" if p.where == "key" else ""): p.text for p in w.pieces}


def test_a_plain_text_result_has_one_prose_piece_and_its_exact_size() -> None:
    value = {"content": [{"type": "text", "text": "hello"}], "isError": False, "resultType": "complete"}
    w = walk(value)
    assert texts(w) == {"/content/0/text": "hello"}
    assert [u.prose for u in w.units] == [True] and w.stream == [0]
    assert w.size_bytes == len(orjson.dumps(value)) and not w.over


def test_every_content_kind_yields_its_strings_and_no_schema_words() -> None:
    value = {
        "content": [
            {"type": "text", "text": "t", "annotations": {"audience": ["user"], "lastModified": "2026-01-01"}},
            {"type": "image", "data": b64(PNG), "mimeType": "image/png", "_meta": {"caption": "c"}},
            {"type": "audio", "data": b64(PNG), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "embedded"}},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "blob": b64("blob text")}},
            {"type": "resource_link", "name": "n", "title": "ti", "uri": "file:///c", "description": "d", "size": 3},
        ],
        "structuredContent": {"k": ["v", {"deep": "x"}]},
        "_meta": {"m": {"n": "meta"}},
        "isError": False,
    }
    got = texts(walk(value))
    assert got["/content/0/text"] == "t"
    assert got["/content/0/annotations/audience/0"] == "user"
    assert got["/content/0/annotations/lastModified"] == "2026-01-01"
    assert got["/content/1/_meta/caption"] == "c" and got["/content/1/mimeType"] == "image/png"
    assert got["/content/3/resource/text"] == "embedded" and got["/content/3/resource/uri"] == "file:///a"
    assert got["/content/4/resource/blob"] == "blob text"
    assert {got[f"/content/5/{k}"] for k in ("name", "title", "uri", "description")} == {"n", "ti", "file:///c", "d"}
    assert got["/structuredContent/k/0"] == "v" and got["/structuredContent/k/1/deep"] == "x"
    assert got["/structuredContent/k#key"] == "k" and got["/structuredContent/k/1/deep#key"] == "deep"
    assert got["/_meta/m/n"] == "meta" and got["/_meta/m#key"] == "m"
    assert "/content/1/data" not in got and "/content/2/data" not in got, "pixels and sound are not text"
    assert "text" not in got.values() and "image" not in got.values(), "block types are schema words"


def test_the_stream_is_the_content_blocks_in_reading_order() -> None:
    value = {
        "content": [
            {"type": "text", "text": "one"},
            {"type": "resource", "resource": {"uri": "u:", "text": "two"}},
            {"type": "resource_link", "name": "three", "uri": "u:"},
        ],
        "structuredContent": {"s": "aside"},
    }
    w = walk(value)
    in_stream = ["\n".join(w.pieces[i].text for i in w.units[u].pieces) for u in w.stream]
    assert in_stream[0] == "one" and in_stream[1] == "two"
    assert any("three" in t for t in in_stream[2:]), "a link's fields are read after the blocks before it"
    assert all("aside" not in t for t in in_stream), "structured content is its own region"


def test_prompt_messages_and_resource_contents_and_errors_are_streams_too() -> None:
    prompt = {"description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "a"}},
                                               {"role": "assistant", "content": {"type": "text", "text": "b"}}]}
    w = walk(prompt, "prompt")
    assert [w.pieces[w.units[u].pieces[0]].text for u in w.stream] == ["d", "a", "b"]
    resource = {"contents": [{"uri": "u:", "text": "x"}, {"uri": "u:", "mimeType": "text/plain", "blob": b64("y")}]}
    w = walk(resource, "resource")
    assert [w.pieces[w.units[u].pieces[0]].text for u in w.stream if w.units[u].prose] == ["x", "y"]
    error = {"message": "boom", "data": {"detail": "why"}}
    got = texts(walk(error, "error"))
    assert got["/message"] == "boom" and got["/data/detail"] == "why"


def test_unknown_fields_and_unknown_block_types_are_inspected_whole() -> None:
    value = {"content": [{"type": "video", "url": "v"}], "extra": {"note": "n"}, "resultType": "weird"}
    got = texts(walk(value))
    assert got["/content/0/type"] == "video" and got["/content/0/url"] == "v"
    assert got["/extra#key"] == "extra" and got["/extra/note"] == "n" and got["/resultType"] == "weird"


def test_a_deep_result_is_refused_within_max_depth_frames() -> None:
    deep: Any = "leaf"
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ResultRejected) as info:
        walk({"content": [], "structuredContent": deep}, max_depth=64)
    assert info.value.code == "result.too_deep"
    assert walk({"content": [], "structuredContent": [[["ok"]]]}, max_depth=8).pieces


def test_a_cyclic_value_is_refused_not_looped_on() -> None:
    cyclic: dict[str, Any] = {"a": 1}
    cyclic["self"] = cyclic
    with pytest.raises(ResultRejected) as info:
        walk({"content": [], "_meta": cyclic})
    assert info.value.code == "result.too_deep"
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ResultRejected):
        walk({"content": loop})


def test_a_self_sharing_value_stops_at_the_size_cap() -> None:
    """2**40 leaves by reference: the walk stops once the cap is passed, in bounded time."""
    shared: Any = ["x" * 10]
    for _ in range(40):
        shared = [shared, shared]
    start = time.process_time()
    w = walk({"content": [], "structuredContent": shared}, max_depth=64, max_bytes=100_000)
    assert w.over and w.size_bytes > 100_000
    assert time.process_time() - start < 30, "bounded by the cap, not by the value"


@pytest.mark.parametrize("bad", [{1: "int key"}, {"k": {1, 2}}, {"k": b"bytes"}, {"k": object()}])
def test_values_that_are_not_json_are_refused_with_the_declared_error(bad: Any) -> None:
    with pytest.raises(ResultRejected) as info:
        walk({"content": [], "structuredContent": bad})
    assert info.value.code == "result.not_json"


def test_a_result_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ResultRejected):
        walk(["not", "an", "object"])


@pytest.mark.parametrize("data", ["not base64!", "aGVsbG8", "aGVs bG8=", "aGVsbG8=\n", "ümlaut=="])
def test_a_binary_payload_that_is_not_base64_is_refused(data: str) -> None:
    assert not is_base64(data)
    with pytest.raises(ResultRejected) as info:
        walk({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]})
    assert info.value.code == "result.bad_base64" and info.value.pointer == "/content/0/data"


def test_is_base64_accepts_exactly_what_the_strict_decoder_accepts() -> None:
    for s in ["", "aGVsbG8=", "aGVsbG8h", "aA==", "+/+/", "aGVsbG8==", "=aGV", "a===", "aGVsbG8h\n"]:
        try:
            base64.b64decode(s, validate=True)
            strict = True
        except ValueError:
            strict = False
        assert is_base64(s) == strict, s


def test_binary_payloads_that_are_text_are_decoded_whatever_their_label() -> None:
    value = {"content": [{"type": "image", "data": b64("plain words, not pixels"), "mimeType": "image/png"}]}
    assert texts(walk(value))["/content/0/data"] == "plain words, not pixels"


def test_text_payload_decoding_follows_charset_bom_and_falls_back_to_latin1() -> None:
    assert decode_text_payload("héllo".encode("utf-16"), None) == ("héllo", "utf-16")
    assert decode_text_payload("héllo".encode("latin-1"), "text/plain; charset=latin-1") == ("héllo", "iso8859-1")
    assert decode_text_payload(b"caf\xe9", "text/plain") == ("café", "latin-1")
    assert decode_text_payload(b"\x00\x01binary", "application/octet-stream") is None
    assert decode_text_payload(PNG, "image/png") is None


def test_size_is_exact_or_known_to_be_over_the_cap() -> None:
    value = {"content": [{"type": "text", "text": 'quote " and \n newline'}], "structuredContent": {"é": [1, 2.5, None, True]}}
    assert walk(value).size_bytes == len(orjson.dumps(value))
    big = {"content": [{"type": "image", "data": b64(PNG * 4000), "mimeType": "image/png"}]}
    w = walk(big, max_bytes=262_144)
    assert w.over and w.size_bytes > 262_144
    assert json_size(big, 10**9, 64) == len(json.dumps(big, separators=(",", ":")))


def test_rebuild_copies_only_what_changes_and_can_drop_and_rename() -> None:
    value = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "_meta": {"k": 1}, "s": {"old": 2}}
    new = rebuild(value, {("content", 1, "text"): "B", ("_meta",): DROP}, {("s",): {"old": "new"}})
    assert new == {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "B"}], "s": {"new": 2}}
    assert value["content"][1]["text"] == "b" and "_meta" in value, "the original is never changed"
    assert new["content"][0] is value["content"][0], "untouched parts are shared, not copied"
    assert rebuild(value, {}) is value


def test_an_integer_json_cannot_carry_is_refused_with_the_declared_error() -> None:
    with pytest.raises(ResultRejected) as info:
        walk({"content": [], "structuredContent": {"n": 10**5000}})
    assert info.value.code == "result.not_json"
