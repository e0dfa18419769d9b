"""The size cap: a result cut to at most ``max_bytes`` of JSON, as plain JSON. Pure.

In reading order: the stream (a prompt's description, an error's message, then the content
blocks, resource contents or prompt messages) keeps every item that fits; the first text that does
not fit is cut on a character boundary with a visible marker (`TRUNCATION_MARKER`); an item that
cannot be cut (an image, audio, a blob, a resource link) and does not fit is replaced by a text
saying what was omitted; once the budget is spent, the remaining items are dropped and one marker
says how many. Then ``structuredContent``, ``_meta``, fields the schema does not know and an
error's ``data`` are each kept whole if they fit in what is left, else dropped (cutting JSON
would break its schema). The work is bounded by the cap, not by the size of the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .result_walk import DROP, JsonPath, Kind, json_size, rebuild

__all__ = ["OMITTED_MARKER", "TRUNCATION_MARKER", "Capped", "cap_result", "truncate_utf8"]

TRUNCATION_MARKER = "\n[... truncated by checkrein: {n} bytes omitted]"
OMITTED_MARKER = "[... truncated by checkrein: {what} omitted, over the {cap}-byte result limit]"

_STREAM_KEY: dict[Kind, str] = {"tool": "content", "resource": "contents", "prompt": "messages", "error": ""}
_LEAD_KEY: dict[Kind, str] = {"prompt": "description", "error": "message"}
_SMALL = frozenset({"isError", "resultType", "ttlMs", "cacheScope"})


@dataclass(frozen=True, slots=True)
class Capped:
    value: Any
    dropped: tuple[str, ...]
    """What was cut or left out, as short descriptions (for the audit)."""


def truncate_utf8(text: str, max_bytes: int) -> tuple[str, int]:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes on a character boundary, and the bytes omitted."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text, 0
    cut = data[: max(0, max_bytes)].decode("utf-8", "ignore")
    return cut, len(data) - len(cut.encode("utf-8", "surrogatepass"))


def _cut_to_fit(text: str, budget: int, size_of: Any) -> str:
    """``text`` cut (marker included) so that ``size_of(cut)`` (its JSON size in place) fits ``budget``."""
    room = budget
    for _ in range(6):
        cut, omitted = truncate_utf8(text, max(0, room))
        out = cut + TRUNCATION_MARKER.format(n=omitted) if omitted else cut
        over = size_of(out) - budget
        if over <= 0:
            return out
        room -= max(over, 16)  # escapes made it larger than its UTF-8 bytes: shrink and retry
    return TRUNCATION_MARKER.format(n=len(text.encode("utf-8", "surrogatepass"))).lstrip("\n")


def _describe(item: Any) -> str:
    """What an omitted stream item was, in a few words (schema words only: no content)."""
    if isinstance(item, dict):
        content = item.get("content")
        block: dict[str, Any] = content if isinstance(content, dict) else item
        resource = block.get("resource")
        if "blob" in block or (isinstance(resource, dict) and "blob" in resource):
            return "a binary resource"
        kind = block.get("type")
        if kind == "image":
            return "an image"
        if kind == "audio":
            return "an audio clip"
        if kind == "resource_link":
            return "a resource link"
    return "an item"


def _text_item(kind: Kind, original: Any, text: str) -> Any:
    """An item of ``kind``'s stream holding only ``text`` (what stays of a cut or omitted item)."""
    if kind == "resource":
        uri = original.get("uri") if isinstance(original, dict) else None
        return {"uri": uri if isinstance(uri, str) else "", "mimeType": "text/plain", "text": text}
    block = {"type": "text", "text": text}
    if kind == "prompt":
        role = original.get("role") if isinstance(original, dict) else None
        return {"role": role if role in ("user", "assistant") else "user", "content": block}
    return block


def _text_of(kind: Kind, item: Any) -> tuple[str, Any] | None:
    """The cuttable text of a stream item and a builder of the item from a new text, if it has one."""
    if not isinstance(item, dict):
        return None
    if kind == "prompt":
        content = item.get("content")
        if isinstance(content, dict) and content.get("type") == "text" and isinstance(content.get("text"), str):
            return content["text"], lambda t: _text_item(kind, item, t)
        return None
    if kind == "resource":
        if isinstance(item.get("text"), str) and "blob" not in item:
            return item["text"], lambda t: {**{k: v for k, v in item.items() if k in ("uri", "mimeType")}, "text": t}
        return None
    if item.get("type") == "text" and isinstance(item.get("text"), str):
        return item["text"], lambda t: {"type": "text", "text": t}
    resource = item.get("resource")
    if item.get("type") == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
        keep = {k: v for k, v in resource.items() if k in ("uri", "mimeType")}
        return resource["text"], lambda t: {"type": "resource", "resource": {**keep, "text": t}}
    return None


def cap_result(kind: Kind, value: dict[str, Any], *, max_bytes: int, max_depth: int) -> Capped:
    """``value`` (a result of ``kind``) cut to ``max_bytes`` as described in the module docstring.

    Raises `ResultRejected` only (from sizing a part that is not JSON or nests too deep)."""
    budget = max_bytes - 2
    edits: dict[JsonPath, Any] = {}
    dropped: list[str] = []
    for k in _SMALL & value.keys():
        budget -= json_size(value[k], max_bytes, max_depth, (k,)) + len(k) + 4
    lead = _LEAD_KEY.get(kind)
    if lead and lead in value:
        v = value[lead]
        size = json_size(v, max(budget, 0), max_depth, (lead,)) + len(lead) + 4
        if size <= budget:
            budget -= size
        elif isinstance(v, str):
            cut = _cut_to_fit(v, budget - len(lead) - 4, lambda t: json_size(t, max_bytes, max_depth))
            edits[(lead,)] = cut
            dropped.append(f"/{lead} cut")
            budget -= json_size(cut, max_bytes, max_depth) + len(lead) + 4
        else:
            edits[(lead,)] = DROP if kind != "error" else ""
            dropped.append(f"/{lead} omitted")
    key = _STREAM_KEY[kind]
    items = value.get(key) if key else None
    if isinstance(items, list):
        budget -= len(key) + 5
        # Room kept for the one marker that says how many items were left out at the end.
        tail = _text_item(kind, None, OMITTED_MARKER.format(what=f"{len(items)} more item(s)", cap=max_bytes))
        reserve = json_size(tail, max_bytes, max_depth) + 1
        avail = budget - reserve
        for i, item in enumerate(items):
            size = json_size(item, max(avail, 0), max_depth, (key, i)) + 1
            if size <= avail:
                avail -= size
                continue
            cuttable = _text_of(kind, item)
            replacement: Any = None
            if cuttable is not None:
                text, build = cuttable
                shell = json_size(build(""), max_bytes, max_depth) + 1
                room = avail - shell + (reserve if i + 1 == len(items) else 0)  # the last item needs no tail
                if room > 64:
                    replacement = build(_cut_to_fit(text, room, lambda t: json_size(t, max_bytes, max_depth)))
                    avail = 0
            else:
                marker = _text_item(kind, item, OMITTED_MARKER.format(what=_describe(item), cap=max_bytes))
                if json_size(marker, max_bytes, max_depth) + 1 <= avail:
                    replacement = marker
                    avail -= json_size(marker, max_bytes, max_depth) + 1
            if replacement is not None:
                edits[(key, i)] = replacement
                dropped.append(f"/{key}/{i} {'cut' if cuttable is not None else 'omitted'}")
                if avail > 0 or i + 1 == len(items):
                    continue
                i += 1
                if i == len(items):
                    break
            rest = len(items) - i
            edits[(key, i)] = _text_item(kind, items[i], OMITTED_MARKER.format(what=f"{rest} more item(s)", cap=max_bytes))
            for j in range(i + 1, len(items)):
                edits[(key, j)] = DROP
            dropped.append(f"/{key}/{i}.. omitted ({rest})")
            break
        budget = avail + reserve
    for k, v in value.items():
        if k in _SMALL or k == lead or k == key:
            continue
        size = json_size(v, max(budget, 0), max_depth, (k,)) + len(k) + 4
        if size <= budget:
            budget -= size
        else:
            edits[(k,)] = DROP
            dropped.append(f"/{k} omitted")
    return Capped(rebuild(value, edits), tuple(dropped))
