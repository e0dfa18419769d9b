"""One walk over everything a result carries, on plain JSON (dicts, lists, str as `orjson.loads` gives).

`collect(kind, value, max_depth=..., max_bytes=...)` returns every string the client would receive
as a `Piece`, grouped for detection:

* a **prose** unit is one text a model reads as text: a text block, an embedded or read resource's
  ``text``, a binary payload (``data`` of an image or audio block, ``blob`` of a resource) whose bytes
  decode as text, a prompt's ``description``, an error's ``message``;
* a **fields** unit is every other string of one region, keys included: one content block's
  resource-link ``name``/``title``/``description``/``uri``, ``mimeType``, annotations and ``_meta``;
  ``structuredContent``; the result's ``_meta``; fields the schema does not know; an error's ``data``.

The units of one result's reading order (content blocks, resource contents, prompt messages, an
error's message then data) form its **stream**: adjacent text the model reads as one.

Schema words (a block's ``type``, ``role``, known field names) are not pieces: they are fixed
vocabulary, not content. Binary payloads are checked as base64 (strict) and counted; those that
are not text (pixels, audio) cannot be read, so they are not scanned.

Bounds: nesting deeper than ``max_depth`` (arrays and objects, from the result itself) raises
`ResultRejected` (``result.too_deep``) after at most ``max_depth`` frames, so a cyclic value is
refused too; the walk stops as soon as the bytes counted pass ``max_bytes`` (``Walk.over``), so
its work is bounded by the cap however large (or self-sharing) the value is. Anything that is not
JSON raises `ResultRejected` (``result.not_json``); a payload that is not base64 raises it with
``result.bad_base64``. Nothing else is raised, for any input.
"""

from __future__ import annotations

import binascii
import codecs
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

from checkrein.errors import PolicyError

__all__ = [
    "DROP",
    "JsonPath",
    "Kind",
    "Piece",
    "ResultRejected",
    "Unit",
    "Walk",
    "collect",
    "decode_text_payload",
    "is_base64",
    "json_size",
    "plain_texts",
    "pointer",
    "rebuild",
]

JsonPath: TypeAlias = tuple[str | int, ...]
Kind: TypeAlias = Literal["tool", "resource", "prompt", "error"]
Where: TypeAlias = Literal["prose", "blob", "field", "key"]

DROP: Any = object()
"""A `rebuild` value that removes the key (or list item) at its path."""


class ResultRejected(PolicyError):
    """A result that cannot be inspected: ``code`` is ``result.too_deep``, ``result.not_json`` or
    ``result.bad_base64``; ``pointer`` says where."""

    def __init__(self, message: str, *, code: str, pointer: str = "") -> None:
        super().__init__(message, code=code)
        self.pointer = pointer


@dataclass(slots=True)
class Piece:
    """One string of the result. ``path`` leads to it (for a key: to its value); ``text`` is what a
    reader sees (for a ``blob``: the payload's bytes decoded with ``codec``); ``key`` is the name
    of the object member that holds a field, for secret rules that look at ``name: value``."""

    path: JsonPath
    text: str
    where: Where
    key: str | None = None
    codec: str | None = None
    inert: bool = False
    """A MIME type such as ``image/png``: redacted like any string, not read for instructions."""


@dataclass(slots=True)
class Unit:
    """Pieces read together. A prose unit holds one piece; ``root`` is where a fields unit lives."""

    root: JsonPath
    prose: bool
    pieces: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Walk:
    """What `collect` found. ``size_bytes`` is exact unless ``over`` (then a lower bound above the cap,
    and the pieces are only those seen before it)."""

    kind: Kind
    pieces: list[Piece]
    units: list[Unit]
    stream: list[int]
    """Indices of the units in reading order."""
    stream_root: JsonPath
    size_bytes: int
    over: bool
    binary: int = 0
    """Binary payloads that are not text (counted, checked as base64, not scanned)."""


# -- pointers and rebuilding ------------------------------------------------------------------


def pointer(path: JsonPath) -> str:
    """The JSON pointer (RFC 6901) of ``path``."""
    return "".join("/" + (s.replace("~", "~0").replace("/", "~1") if isinstance(s, str) else str(s)) for s in path)


def rebuild(value: Any, values: Mapping[JsonPath, Any], renames: Mapping[JsonPath, Mapping[str, str]] = {}) -> Any:
    """A copy of ``value`` with each path in ``values`` replaced (`DROP` removes it) and the keys of
    each object in ``renames`` renamed. Paths are those of the original value; only the spines that
    change are copied. Paths that do not exist are ignored."""
    if not values and not renames:
        return value
    tree: dict[Any, Any] = {}
    for path, new in values.items():
        node = tree
        for step in path:
            node = node.setdefault(step, {})
        node[_LEAF] = new
    for path, names in renames.items():
        node = tree
        for step in path:
            node = node.setdefault(step, {})
        node[_RENAME] = names
    return _rebuild(value, tree)


_LEAF = object()
_RENAME = object()


def _rebuild(value: Any, node: dict[Any, Any]) -> Any:
    if _LEAF in node:
        return node[_LEAF]
    if isinstance(value, dict):
        out = dict(value)
        for step, sub in node.items():
            if step is _RENAME or step not in out:
                continue
            new = _rebuild(out[step], sub)
            if new is DROP:
                del out[step]
            else:
                out[step] = new
        names = node.get(_RENAME)
        if names:
            out = {names.get(k, k): v for k, v in out.items()}
        return out
    if isinstance(value, list | tuple):
        items = list(value)
        dropped = False
        for step, sub in node.items():
            if isinstance(step, int) and 0 <= step < len(items):
                items[step] = _rebuild(items[step], sub)
                dropped = dropped or items[step] is DROP
        return [v for v in items if v is not DROP] if dropped else items
    return value


# -- sizes --------------------------------------------------------------------------------------


class _Over(Exception):
    """Internal: the bytes counted passed the cap."""


def json_size(value: Any, cap: int, max_depth: int, base: JsonPath = ()) -> int:
    """The bytes of ``value`` as JSON when at most ``cap``, else some number above ``cap``.

    Raises `ResultRejected` when ``value`` is not JSON or nests deeper than ``max_depth`` (counted
    from ``base``, whose length is the depth ``value`` sits at)."""
    counter = _Collector(cap, max_depth)
    try:
        counter.free(value, base, len(base), None)
    except _Over:
        return max(counter.size, cap + 1)
    return _exact_size(value)


def _exact_size(value: Any) -> int:
    # Only called on values a walk has checked: JSON types, bounded depth and size.
    try:
        return len(orjson.dumps(value))
    except TypeError:  # integers beyond 64 bits, lone surrogates: the reference encoder
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
        except (ValueError, TypeError, RecursionError):  # e.g. an integer of more than 4300 digits
            raise ResultRejected("the result holds a value JSON cannot carry", code="result.not_json") from None
        return len(text.encode("utf-8", "surrogatepass"))


def _str_size(s: str) -> int:
    # A lower bound of the encoded size (escapes only add); exact for plain ASCII.
    return len(s) + 2 if s.isascii() else len(s.encode("utf-8", "surrogatepass")) + 2


# -- binary payloads ----------------------------------------------------------------------------

_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-yaml",
               "application/yaml", "application/toml", "application/x-ndjson", "application/sql",
               "image/svg+xml")


def _declares_text(mime: str) -> bool:
    base = mime.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base.endswith(("+json", "+xml")) or base in _TEXT_TYPES


def _charset(mime: str) -> str | None:
    for param in mime.split(";")[1:]:
        name, _, val = param.partition("=")
        if name.strip().lower() == "charset" and val.strip():
            try:
                return codecs.lookup(val.strip().strip('"')).name
            except LookupError:
                return None
    return None


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_text_payload(data: bytes, mime: str | None) -> tuple[str, str] | None:
    """``(text, codec)`` when a binary payload is text a reader could see, else ``None``.

    Text is what the declared charset, a byte-order mark or strict UTF-8 decodes; a payload that
    declares a text type but decodes with none of them is read as Latin-1 (every byte is a
    character, so nothing ASCII in it escapes the scan). Bytes that decode as UTF-8 are text
    whatever the declared type, unless they hold a NUL: a server cannot hide text by mislabelling it.
    """
    tries: list[str] = [c for bom, c in _BOMS if data.startswith(bom)][:1]
    declared = _charset(mime) if mime else None
    if declared:
        tries.append(declared)
    tries.append("utf-8")
    for codec in tries:
        try:
            text = data.decode(codec)
        except (UnicodeDecodeError, LookupError):
            continue
        if codec == "utf-8" and not declared and "\x00" in text and not (mime and _declares_text(mime)):
            return None
        return text, codec
    if mime and _declares_text(mime):
        return data.decode("latin-1"), "latin-1"
    return None


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def is_base64(value: str) -> bool:
    """Whether ``value`` is canonical base64 (RFC 4648 alphabet, padded, no whitespace)."""
    if len(value) % 4 or not value.isascii():
        return False
    body = value.rstrip("=")
    return len(value) - len(body) <= 2 and not body.encode("ascii").translate(None, _B64_ALPHABET)


def _binary_prefix(value: str) -> bool:
    """Whether the first bytes of a (valid) base64 payload are certainly not text: a NUL, or bytes
    that are not UTF-8 (a PNG, JPEG or MP3 header). Decoding only the start keeps images cheap."""
    head = binascii.a2b_base64(value[:1024])
    if head.startswith(tuple(bom for bom, _ in _BOMS)):
        return False
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # an error only in the last 3 bytes may be a cut character
    return False


# -- the walk -----------------------------------------------------------------------------------

_MIME = re.compile(r"[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+(?:; ?[A-Za-z0-9-]+=[A-Za-z0-9.+-]+)*")

_SKIP = "skip"
_PROSE = "prose"
_BINARY = "binary"
_FIELD = "field"
_FREE = "free"
_CONTENTS = "contents"

_BLOCK_FIELDS: dict[str, dict[str, str]] = {
    "text": {"text": _PROSE},
    "image": {"data": _BINARY},
    "audio": {"data": _BINARY},
    "resource": {"resource": _CONTENTS},
    "resource_link": {},
}
_CONTENTS_FIELDS = {"text": _PROSE, "blob": _BINARY}
_ROLES = frozenset({"user", "assistant"})
_RESULT_TYPES = frozenset({"complete", "input_required"})
_CACHE_SCOPES = frozenset({"public", "private"})


class _Collector:
    def __init__(self, cap: int | None, max_depth: int) -> None:
        self.cap = cap
        self.max_depth = max_depth
        self.size = 0
        self.pieces: list[Piece] = []
        self.units: list[Unit] = []
        self.stream: list[int] = []
        self.binary = 0

    # size and depth

    def add(self, n: int) -> None:
        self.size += n
        if self.cap is not None and self.size > self.cap:
            raise _Over

    def deeper(self, path: JsonPath, depth: int) -> int:
        if depth >= self.max_depth:
            raise ResultRejected(
                f"the result nests deeper than {self.max_depth} levels", code="result.too_deep", pointer=pointer(path)
            )
        return depth + 1

    def members(self, value: dict[Any, Any], path: JsonPath, depth: int) -> Iterator[tuple[str, Any, JsonPath, int]]:
        """Each member of an object as ``(key, value, its path, depth inside)``, sizes counted."""
        d = self.deeper(path, depth)
        self.add(2 + len(value))
        for k, v in value.items():
            if not isinstance(k, str):
                raise _not_json(path, k)
            self.add(_str_size(k))
            yield k, v, (*path, k), d

    # units

    def unit(self, root: JsonPath, prose: bool, in_stream: bool) -> Unit:
        u = Unit(root, prose)
        if in_stream:
            self.stream.append(len(self.units))
        self.units.append(u)
        return u

    def piece(self, unit: Unit, piece: Piece) -> None:
        unit.pieces.append(len(self.pieces))
        self.pieces.append(piece)

    def prose(self, value: Any, path: JsonPath, depth: int, in_stream: bool) -> None:
        if not isinstance(value, str):
            self.free(value, path, depth, self.unit(path, False, in_stream))
            return
        self.add(_str_size(value))
        self.piece(self.unit(path, True, in_stream), Piece(path, value, "prose"))

    def free(self, value: Any, path: JsonPath, depth: int, unit: Unit | None, key: str | None = None) -> None:
        """Every string of a free-form value, keys included, into ``unit`` (size and shape only
        when ``unit`` is ``None``)."""
        if isinstance(value, str):
            self.add(_str_size(value))
            if unit is not None:
                inert = key == "mimeType" and len(value) <= 128 and _MIME.fullmatch(value) is not None
                self.piece(unit, Piece(path, value, "field", key, inert=inert))
        elif isinstance(value, dict):
            for k, v, sub, d in self.members(value, path, depth):
                if unit is not None:
                    self.piece(unit, Piece(sub, k, "key"))
                self.free(v, sub, d, unit, k)
        elif isinstance(value, list | tuple):
            d = self.deeper(path, depth)
            self.add(2 + len(value))
            for i, v in enumerate(value):
                self.free(v, (*path, i), d, unit)
        elif value is None or isinstance(value, bool | int | float):
            self.add(1)
        else:
            raise _not_json(path, value)

    def binary_payload(self, value: Any, path: JsonPath, depth: int, mime: Any, unit: Unit) -> None:
        if not isinstance(value, str):
            self.free(value, path, depth, unit)
            return
        self.add(_str_size(value))
        if not is_base64(value):
            raise ResultRejected("a binary payload is not valid base64", code="result.bad_base64", pointer=pointer(path))
        declared = mime if isinstance(mime, str) else None
        if not (declared and (_declares_text(declared) or _charset(declared))) and _binary_prefix(value):
            self.binary += 1  # pixels or sound: nothing a reader sees as text
            return
        decoded = decode_text_payload(binascii.a2b_base64(value), declared)
        if decoded is None:
            self.binary += 1
            return
        text, codec = decoded
        self.piece(self.unit(path, True, True), Piece(path, text, "blob", codec=codec))

    # the shapes

    def envelope(self, kind: Kind, value: Any) -> None:
        if not isinstance(value, dict):
            raise ResultRejected("a result must be a JSON object", code="result.not_json")
        extras: Unit | None = None
        for k, v, path, depth in self.members(value, (), 0):
            if k == "_meta" or (kind == "tool" and k == "structuredContent"):
                self.free(v, path, depth, self.unit(path, False, False))
            elif k == "resultType" and isinstance(v, str) and v in _RESULT_TYPES:
                self.add(len(v) + 2)
            elif k == "isError" and kind == "tool" and isinstance(v, bool):
                self.add(5)
            elif k == "ttlMs" and kind == "resource" and isinstance(v, int) and not isinstance(v, bool):
                self.add(1)
            elif k == "cacheScope" and kind == "resource" and isinstance(v, str) and v in _CACHE_SCOPES:
                self.add(len(v) + 2)
            elif k == "description" and kind == "prompt":
                self.prose(v, path, depth, True)
            elif k == "message" and kind == "error":
                self.prose(v, path, depth, True)
            elif k == "data" and kind == "error":
                self.free(v, path, depth, self.unit(path, False, True))
            elif isinstance(v, list) and (kind, k) in (("tool", "content"), ("resource", "contents"), ("prompt", "messages")):
                d = self.deeper(path, depth)
                self.add(2 + len(v))
                for i, item in enumerate(v):
                    sub = (*path, i)
                    if kind == "tool":
                        self.block(item, sub, d)
                    elif kind == "resource":
                        self.contents(item, sub, d, None)
                    else:
                        self.message(item, sub, d)
            else:  # a field the schema does not know still reaches the client: inspect it all
                if extras is None:
                    extras = self.unit((), False, False)
                self.piece(extras, Piece(path, k, "key"))
                self.free(v, path, depth, extras, k)

    def block(self, value: Any, path: JsonPath, depth: int) -> None:
        if not isinstance(value, dict):
            self.free(value, path, depth, self.unit(path, False, True))
            return
        kind = value.get("type")
        known = _BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
        fields = Unit(path, False)
        for k, v, sub, d in self.members(value, path, depth):
            role = (known or {}).get(k, _SKIP if known is not None and k == "type" else _FREE)
            if role == _SKIP:
                self.add(_str_size(v) if isinstance(v, str) else 1)
            elif role == _PROSE:
                self.prose(v, sub, d, True)
            elif role == _BINARY:
                self.binary_payload(v, sub, d, value.get("mimeType"), fields)
            elif role == _CONTENTS:
                self.contents(v, sub, d, fields)
            else:
                self.free(v, sub, d, fields, k)
        self._close(fields, True)

    def contents(self, value: Any, path: JsonPath, depth: int, outer: Unit | None) -> None:
        """A resource's contents (read, or embedded in a block whose fields unit is ``outer``)."""
        fields = outer if outer is not None else Unit(path, False)
        if not isinstance(value, dict):
            self.free(value, path, depth, fields)
        else:
            for k, v, sub, d in self.members(value, path, depth):
                role = _CONTENTS_FIELDS.get(k, _FREE)
                if role == _PROSE:
                    self.prose(v, sub, d, True)
                elif role == _BINARY:
                    self.binary_payload(v, sub, d, value.get("mimeType"), fields)
                else:
                    self.free(v, sub, d, fields, k)
        if outer is None:
            self._close(fields, True)

    def message(self, value: Any, path: JsonPath, depth: int) -> None:
        if not isinstance(value, dict):
            self.free(value, path, depth, self.unit(path, False, True))
            return
        fields = Unit(path, False)
        for k, v, sub, d in self.members(value, path, depth):
            if k == "role" and isinstance(v, str) and v in _ROLES:
                self.add(len(v) + 2)
            elif k == "content":
                self.block(v, sub, d)
            else:
                self.free(v, sub, d, fields, k)
        self._close(fields, True)

    def _close(self, unit: Unit, in_stream: bool) -> None:
        """Register a fields unit built aside once it holds pieces (most blocks have none)."""
        if unit.pieces:
            if in_stream:
                self.stream.append(len(self.units))
            self.units.append(unit)


def _not_json(path: JsonPath, bad: Any) -> ResultRejected:
    return ResultRejected(
        f"the result holds a {type(bad).__name__}, which is not JSON", code="result.not_json", pointer=pointer(path)
    )


_STREAM_ROOT: dict[Kind, JsonPath] = {"tool": ("content",), "resource": ("contents",), "prompt": ("messages",), "error": ()}


def plain_texts(value: Any) -> list[str] | None:
    """The texts of a tool result made only of plain text blocks (the common case), else ``None``."""
    if type(value) is not dict:
        return None
    content = value.get("content")
    if type(content) is not list:
        return None
    for k, v in value.items():
        if not (k == "content" or (k == "isError" and type(v) is bool) or (k == "resultType" and v == "complete")):
            return None
    texts: list[str] = []
    for block in content:
        if type(block) is not dict or len(block) != 2 or block.get("type") != "text":
            return None
        text = block.get("text")
        if type(text) is not str:
            return None
        texts.append(text)
    return texts


def collect(kind: Kind, value: Any, *, max_depth: int, max_bytes: int | None) -> Walk:
    """Every piece of ``value`` (a result of ``kind`` as plain JSON), its units and stream, its size.

    Raises `ResultRejected` only (too deep, not JSON, bad base64)."""
    texts = plain_texts(value) if kind == "tool" and max_depth >= 3 else None
    if texts is not None:
        # Depth 3 and nothing but strings: only the size is left to find out.
        pieces = [Piece(("content", i, "text"), t, "prose") for i, t in enumerate(texts)]
        units = [Unit(p.path, True, [i]) for i, p in enumerate(pieces)]
        size = sum(len(t) for t in texts)  # a lower bound: enough to know it is over
        if max_bytes is None or size <= max_bytes:
            size = _exact_size(value)
        return Walk(kind, pieces, units, list(range(len(units))), ("content",), size, max_bytes is not None and size > max_bytes)
    c = _Collector(max_bytes, max_depth)
    over = False
    try:
        c.envelope(kind, value)
    except _Over:
        over = True
    except RecursionError:  # max_depth is validated well below the interpreter's limit; belt and braces
        raise ResultRejected("the result nests too deep to inspect", code="result.too_deep") from None
    size = c.size if over else _exact_size(value)
    if max_bytes is not None and size > max_bytes:
        over = True
    return Walk(kind, c.pieces, c.units, c.stream, _STREAM_ROOT[kind], size, over, c.binary)
