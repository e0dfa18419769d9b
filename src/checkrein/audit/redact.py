"""Redaction for the audit: a bounded, masked copy of a JSON value, and where it was masked.

`Redactor.preview(value, base)` never mutates ``value`` and never raises for JSON-like input. It
returns a new value in which

* values under secret-looking keys (at any depth) are replaced by ``"[REDACTED]"``;
* strings that hold JSON objects/arrays are parsed, redacted the same way and re-serialized;
* spans the secret finder reports are replaced by ``"[REDACTED:<kind>]"``, in strings and in keys
  (a key with such a span has its value masked too, and its pointer names the masked key);
* long strings are cut to ``max_chars`` (after masking, so a cut never reveals half a secret that
  the finder could have seen whole), and large containers to a fixed number of items;

and the JSON pointers (RFC 6901, under ``base``) of every masked value. Pointers name places,
never values.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from .secrets import SecretFinder, SecretLike, builtin_may_match, find_builtin_secrets

__all__ = ["MASK", "Redactor", "escape_pointer", "wildcard_pattern"]

MASK = "[REDACTED]"
TRUNCATED = "[TRUNCATED]"

_SENSITIVE_PARTS = (
    "password", "passwd", "passphrase", "token", "secret", "authorization", "apikey", "accesskey",
    "privatekey", "cookie", "session", "credential", "bearer", "jwt", "signature", "clientsecret",
)
_SENSITIVE_EXACT = frozenset({"pwd", "pass", "auth", "otp", "pin", "sig", "xapikey", "setcookie"})
_NORMALIZE = re.compile(r"[\s_\-.]")
# Strings this long are scanned only up to this many characters past the preview cut; what lies
# beyond is never written, so it cannot leak.
_SCAN_SLACK = 4096
_MAX_JSON_IN_STRING = 256 * 1024
_CONTAINERS = (dict, list, tuple)
# No pattern of the built-in set, and no real credential, fits in fewer characters ("pwd=ab").
_MIN_SECRET = 6
# `mask_text` remembers up to this many texts of at most `_CLEAN_MAX_CHARS` in which it found
# nothing (a decision's reason, an argument value: agents and rules repeat them), so a repeat
# costs a dict lookup instead of the finder. Texts it masked are never kept.
_CLEAN_CACHE = 2048
_CLEAN_MAX_CHARS = 256
# `fits_whole` remembers documents of at most this many bytes (`preview_chars` may be up to 64 KiB:
# the memory stays bounded by 2 x 2,048 x 2 KiB whatever it is set to).
_FITS_MAX_BYTES = 2048


def escape_pointer(token: str) -> str:
    """One RFC 6901 reference token."""
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def wildcard_pattern(pointers: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern whose ``fullmatch`` accepts every concrete pointer that a pointer with ``*``
    tokens in ``pointers`` names (a ``*`` token stands for any one array index or object key:
    `/users/*/code`, as the policy names a ``kind = "secret"`` argument inside an array; a ``*``
    inside a token is literal), or None when no pointer has a ``*`` token."""
    forms = [
        "".join("/[^/]*" if t == "*" else "/" + re.escape(t) for t in m.split("/")[1:])
        for m in pointers if "*" in m.split("/")
    ]
    return re.compile("|".join(forms)) if forms else None


class Redactor:
    """Masks and bounds values for the audit. One instance per trail; thread-safe (no shared
    mutable state beyond a bounded key cache whose races are harmless)."""

    def __init__(
        self,
        *,
        secret_finder: SecretFinder | None = None,
        secret_prefilter: Callable[[str], bool] | None = None,
        extra_keys: Iterable[str] = (),
        max_chars: int = 512,
        max_items: int = 64,
        max_depth: int = 16,
        budget_chars: int | None = None,
    ) -> None:
        self._injected = secret_finder
        self._finder: SecretFinder = _union(secret_finder) if secret_finder else find_builtin_secrets
        self._may_find = secret_prefilter if secret_finder else None
        """The injected finder's necessary condition: False only when it finds nothing in a text."""
        self._extra = tuple(_NORMALIZE.sub("", k.lower()) for k in extra_keys if k)
        self._max_chars = max_chars
        self._max_items = max_items
        self._max_depth = max_depth
        self._budget_chars = budget_chars if budget_chars is not None else max(8 * max_chars, 4096)
        self._key_cache: dict[str, bool] = {}
        self._keyset_cache: dict[tuple[Any, ...], bool | tuple[str, ...]] = {}
        self._wild_cache: dict[frozenset[str], re.Pattern[str] | None] = {}
        self._clean: tuple[dict[str, None], dict[str, None]] = ({}, {})
        """Texts `mask_text` found nothing in: with the injected finder, and with the built-in set only."""
        self._fits: tuple[dict[bytes, None], dict[bytes, None]] = ({}, {})
        """Canonical documents `fits_whole` said yes to: not scanned by the policy, and scanned."""
        self.finder_failures = 0

    def is_sensitive_key(self, key: str) -> bool:
        """True when values under ``key`` are masked whatever they are."""
        cached = self._key_cache.get(key)
        if cached is not None:
            return cached
        norm = _NORMALIZE.sub("", key.lower())
        hit = (
            norm in _SENSITIVE_EXACT
            or any(part in norm for part in _SENSITIVE_PARTS)
            or any(part in norm for part in self._extra)
        )
        if len(self._key_cache) < 4096:
            self._key_cache[key] = hit
        return hit

    def may_hold_secrets(self, document: bytes) -> bool:
        """False when no finder can match anywhere in the canonical JSON ``document`` (provable for
        the built-in set; an injected finder is always run per string)."""
        if self._injected is not None:
            return True
        text = document.decode("utf-8", "replace")
        return "\\u" in text or builtin_may_match(text)

    def fits_whole(self, document: bytes, value: Any, *, scanned: bool = False) -> bool:
        """`_fits_whole`, remembered: a document found to fit (the same arguments or result as an
        earlier call, parsing back to an equal value) is not walked or scanned again.
        Up to `_CLEAN_CACHE` documents of at most `_FITS_MAX_BYTES`; a "no" is never kept."""
        fits = self._fits[1 if scanned else 0]
        # The document names the value only up to key types: `{None: x}` and `{"null": x}` (or
        # `{True: x}` and `{"true": x}`) encode alike but are masked differently. So a remembered
        # document answers only for the value it parses back to.
        if document in fits and _parses_back(document, value):
            return True
        if not self._fits_whole(document, value, scanned=scanned):
            return False
        if len(document) > _FITS_MAX_BYTES:
            return True
        if len(fits) >= _CLEAN_CACHE:
            fits.clear()
        fits[document] = None
        return True

    def _fits_whole(self, document: bytes, value: Any, *, scanned: bool = False) -> bool:
        """True when ``value``, whose canonical JSON is ``document``, provably needs no masking and
        no cutting, so ``document`` itself can be stored as its preview: small enough to keep
        whole, no JSON carried in a string, no ``\\u`` escapes, nothing a finder could match, and
        no secret-looking key. False otherwise: use `preview`. ``scanned``: the injected finder
        already read every value and found nothing outside the masked pointers (which the caller
        checks are none), so only the built-in patterns and the keys are looked at here (each
        key a secret fits in by the injected finder as well: the policy does not read keys)."""
        if len(document) > self._max_chars or b'"{' in document or b'"[' in document or b"\\u" in document:
            return False
        text = document.decode("utf-8")
        injected = None if scanned else self._injected
        may_find = self._may_find if injected is not None else None
        # Without backslashes every string's text appears verbatim in the document, so a finder
        # that matches nothing in the document matches nothing in any string. With the finder's
        # prefilter, each string is asked instead (escapes then do not matter).
        if (injected is not None and may_find is None and "\\" in text) or builtin_may_match(text):
            return False
        # One walk checks the keys and, for the prefilter, gathers exactly the strings `preview`
        # would hand the finder (shorter ones it keeps unscanned).
        strings: list[str] | None = [] if may_find is not None else None
        # Keys the injected finder must read one by one: its prefilter asks strings, not the
        # document, and the policy's scan (``scanned``) reads values, not keys. A preview masks
        # every key of `_MIN_SECRET`+ characters the finder hits, so none of them may hit here.
        keys: list[str] | None = [] if self._injected is not None and (scanned or may_find is not None) else None
        if self._any_sensitive_key(value, strings=strings, keys=keys):
            return False
        if may_find is not None:
            try:
                return not any(map(may_find, strings or ())) and not any(map(may_find, keys or ()))
            except Exception:  # noqa: BLE001 - the slow path masks and counts the failure
                return False
        if keys and not all(map(self._clean_key, keys)):
            return False
        if injected is not None:
            try:
                if injected(text):
                    return False
            except Exception:  # noqa: BLE001 - the slow path masks and counts the failure
                return False
        return True

    def _clean_key(self, key: str) -> bool:
        """True when the injected finder (asked through its prefilter) finds nothing in ``key``,
        which the caller has shown holds no built-in pattern. Remembered as `mask_text` does, with
        the full finder's verdicts; a failure is False (the preview then masks and counts it)."""
        clean = self._clean[0]
        if key in clean:
            return True
        injected = self._injected
        try:
            if injected is not None and (self._may_find is None or self._may_find(key)) and injected(key):
                return False
        except Exception:  # noqa: BLE001 - the slow path masks and counts the failure
            return False
        if len(key) <= _CLEAN_MAX_CHARS:
            if len(clean) >= _CLEAN_CACHE:
                clean.clear()
            clean[key] = None
        return True

    def _any_sensitive_key(
        self, value: Any, *, strings: list[str] | None = None, keys: list[str] | None = None
    ) -> bool:
        """True when a key anywhere in ``value`` is secret-looking or not a string (or the value
        is too deep to keep whole). Walks containers; with ``strings`` it also appends every
        string value (not key) of at least `_MIN_SECRET` characters to it, with ``keys`` every key
        that long (both complete only when the answer is False). The verdict per set of keys is
        cached: a tool's arguments repeat the same keys call after call."""
        if isinstance(value, str):
            if strings is not None and len(value) >= _MIN_SECRET:
                strings.append(value)
            return False
        if not isinstance(value, _CONTAINERS):
            return False
        sensitive = self.is_sensitive_key
        cache = self._keyset_cache
        max_depth = self._max_depth
        stack: list[tuple[Any, int]] = [(value, 0)]
        pop, push = stack.pop, stack.append
        keep = strings.append if strings is not None else None
        keep_keys = keys.extend if keys is not None else None
        while stack:
            v, depth = pop()
            if depth > max_depth:
                return True
            if isinstance(v, dict):
                names = tuple(v)
                hit = cache.get(names)
                if hit is None:
                    # True: a secret-looking (or non-string) key; else the keys a secret fits in
                    hit = any(not isinstance(k, str) or sensitive(k) for k in names) or tuple(
                        k for k in names if len(k) >= _MIN_SECRET)
                    if len(cache) < 4096:
                        cache[names] = hit
                if not isinstance(hit, tuple):
                    return True
                if hit and keep_keys is not None:
                    keep_keys(hit)
                items: Iterable[Any] = v.values()
            else:
                items = v
            for item in items:
                if isinstance(item, str):
                    if keep is not None and len(item) >= _MIN_SECRET:
                        keep(item)
                elif isinstance(item, _CONTAINERS):
                    push((item, depth + 1))
        return False

    def preview(
        self, value: Any, base: str, *, masked: frozenset[str] = frozenset(), scan: bool = True,
        scanned: bool = False,
    ) -> tuple[Any, list[str]]:
        """Return (redacted bounded copy, pointers of masked values). ``masked`` holds pointers
        relative to ``value`` (e.g. from a policy `Decision.redactions`) that are masked as well;
        a ``*`` token in one stands for any array index or object key (`/users/*/code`, as the
        policy names a ``kind = "secret"`` argument inside an array), and the pointers returned
        name each concrete place masked.
        ``scan=False`` skips the secret finder (pass it only when `may_hold_secrets` said so for
        the canonical JSON of ``value``); key-based masking and bounds still apply.
        ``scanned``: the injected finder already read every string value of ``value`` (and JSON
        objects or arrays carried in them, one level deep) and ``masked`` holds each hit, so
        those strings get only the built-in patterns; keys and JSON nested deeper get both."""
        pointers: list[str] = []
        walk = _Walk(self, pointers, masked, base, scan, scanned and self._injected is not None,
                     self._wildcards(masked) if masked else None)
        return walk.value(value, "", 0), pointers

    def _wildcards(self, masked: frozenset[str]) -> re.Pattern[str] | None:
        """One pattern matching every concrete pointer that a pointer with ``*`` tokens in
        ``masked`` names, or None when there is none (most calls: not remembered); remembered per
        set (a tool's pointers repeat call after call), up to 256 sets."""
        if not any("/*" in m for m in masked):
            return None
        cache = self._wild_cache
        try:
            return cache[masked]
        except KeyError:
            pass
        rx = wildcard_pattern(masked)
        if len(cache) >= 256:
            cache.clear()
        cache[masked] = rx
        return rx

    def mask_pointer(self, pointer: str) -> str:
        """``pointer`` (RFC 6901) with each reference token masked as `preview` masks an object key
        (the finder's spans replaced in a token of `_MIN_SECRET`+ characters, kept only as far as
        the finder read it), so a pointer names the place without the secret a key may be."""
        if len(pointer) <= _MIN_SECRET:
            return pointer
        tokens = pointer.split("/")
        for i in range(1, len(tokens)):
            token = tokens[i]
            key = token.replace("~1", "/").replace("~0", "~") if "~" in token else token
            if len(key) >= _MIN_SECRET:
                masked, _ = self.mask_text(key)
                if masked != key:
                    tokens[i] = escape_pointer(masked)
        return "/".join(tokens)

    def mask_text(self, text: str, *, builtin_only: bool = False) -> tuple[str, bool]:
        """``text`` with finder spans replaced; True when something was masked. Only the first
        ``max_chars + slack`` characters are examined and kept. ``builtin_only``: the built-in
        patterns without the injected finder (for text that finder has already read)."""
        if len(text) < _MIN_SECRET:
            return text, False
        clean = self._clean[1 if builtin_only else 0]
        if text in clean:
            return text, False
        if len(text) > self._max_chars + _SCAN_SLACK:
            text = text[: self._max_chars + _SCAN_SLACK]
        try:
            if not builtin_only and self._may_find is not None and not self._may_find(text):
                builtin_only = True  # the injected finder provably finds nothing here
            spans = find_builtin_secrets(text) if builtin_only else self._finder(text)
        except Exception:  # noqa: BLE001 - a broken finder (or prefilter) must mask, not leak or crash the writer
            self.finder_failures += 1
            return "[REDACTED:finder_error]", True
        if not spans:
            if len(text) <= _CLEAN_MAX_CHARS:
                if len(clean) >= _CLEAN_CACHE:
                    clean.clear()  # bounded; a burst of new texts just rescans
                clean[text] = None
            return text, False
        out: list[str] = []
        pos = 0
        for span in sorted(spans, key=lambda s: (s.start, -s.end)):
            start, end = max(span.start, 0), min(span.end, len(text))
            if end <= pos or end <= start:
                continue
            start = max(start, pos)
            out.append(text[pos:start])
            out.append(f"[REDACTED:{span.kind}]")
            pos = end
        out.append(text[pos:])
        return "".join(out), True


class _Walk:
    __slots__ = ("_base", "_budget", "_json_depth", "_masked", "_pointers", "_r", "_scan", "_scanned", "_wild")

    def __init__(
        self, r: Redactor, pointers: list[str], masked: frozenset[str], base: str, scan: bool, scanned: bool = False,
        wild: re.Pattern[str] | None = None,
    ) -> None:
        self._r = r
        self._wild = wild
        """Matches the concrete pointers that the ``*`` pointers of ``masked`` name."""
        self._scan = scan
        self._scanned = scanned
        self._json_depth = 0
        """How many JSON-carrying strings enclose the current value."""
        self._pointers = pointers
        self._masked = masked
        self._base = base
        self._budget = r._budget_chars

    def value(self, v: Any, ptr: str, depth: int) -> Any:
        if self._masked and (ptr in self._masked or (self._wild is not None and self._wild.fullmatch(ptr) is not None)):
            self._pointers.append(self._base + ptr)
            return MASK
        tp = type(v)
        if tp is str:
            return self.string(v, ptr, depth)
        if tp is int or tp is bool or v is None:
            return v
        if tp is dict and depth < self._r._max_depth and self._budget > 0:
            return self.mapping(v, ptr, depth)
        if isinstance(v, str):
            return self.string(str(v), ptr, depth)
        if isinstance(v, bool | int):
            return int(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else str(v)
        if depth >= self._r._max_depth or self._budget <= 0:
            return TRUNCATED
        if isinstance(v, Mapping):
            return self.mapping(v, ptr, depth)
        if isinstance(v, list | tuple):
            return self.sequence(v, ptr, depth)
        # Not JSON: record what it is, redacted like any text.
        return self.string(f"<{type(v).__name__}> {v!r}"[: 4 * self._r._max_chars], ptr, depth)

    def mapping(self, v: Mapping[Any, Any], ptr: str, depth: int) -> dict[str, Any]:
        r = self._r
        out: dict[str, Any] = {}
        sensitive = r.is_sensitive_key
        max_items = r._max_items
        n = 0
        for k, item in v.items():
            if n >= max_items:
                out["…"] = f"{TRUNCATED} {len(v) - n} more keys"
                break
            n += 1
            key = k if type(k) is str else str(k)
            if len(key) >= _MIN_SECRET:
                # Keys get the full finder (the policy's analyzer skips identifier keys) and are
                # kept only as far as it read them.
                key, hit = r.mask_text(key)
                if hit:
                    # The pointer names the masked key; the value goes too: a pointer beneath it
                    # (the policy's included) could only name the raw key.
                    child = ptr + "/" + escape_pointer(key)
                    if self._base + child not in self._pointers:
                        self._pointers.append(self._base + child)
                    out[key] = MASK
                    continue
            child = ptr + "/" + escape_pointer(key)
            if sensitive(key):
                self._pointers.append(self._base + child)
                out[key] = MASK
            else:
                out[key] = self.value(item, child, depth + 1)
        return out

    def sequence(self, v: list[Any] | tuple[Any, ...], ptr: str, depth: int) -> list[Any]:
        limit = self._r._max_items
        out = [self.value(item, f"{ptr}/{i}", depth + 1) for i, item in enumerate(v[:limit])]
        if len(v) > limit:
            out.append(f"{TRUNCATED} {len(v) - limit} more items")
        return out

    def string(self, s: str, ptr: str, depth: int) -> str:
        r = self._r
        if len(s) < _MIN_SECRET and self._budget >= len(s):
            self._budget -= len(s)
            return s
        first = s[:1]
        if (first in "{[" or (first.isspace() and s.lstrip()[:1] in ("{", "["))) and first and len(s) <= _MAX_JSON_IN_STRING and depth < r._max_depth:
            inner = _loads_json_container(s)
            if inner is not None:
                before = len(self._pointers)
                scan = self._scan
                if "\\u" in s:  # escapes can spell a secret the outer document hides: scan inside
                    self._scan = True
                self._json_depth += 1
                sub = self.value(inner, ptr, depth + 1)
                self._json_depth -= 1
                self._scan = scan
                if len(self._pointers) > before:
                    # Pointers cannot reach inside a string: name the string once.
                    del self._pointers[before:]
                    self._pointers.append(self._base + ptr)
                    s = json.dumps(sub, ensure_ascii=False, separators=(",", ":"))
        if self._scan:
            # The policy's analyzer parses JSON carried in an argument string, not JSON inside that.
            text, hit = r.mask_text(s, builtin_only=self._scanned and self._json_depth <= 1)
            if hit:
                self._pointers.append(self._base + ptr)
        else:
            text = s
        limit = min(r._max_chars, max(self._budget, 0))
        if len(text) > limit:
            text = f"{text[:limit]}…[+{len(s) - limit} chars]"
        self._budget -= min(len(text), limit)
        return text


def _parses_back(document: bytes, value: Any) -> bool:
    """Whether ``document`` parses to a value equal to ``value`` (False for one orjson cannot read,
    such as an integer too large for a double: the caller then checks the value in full)."""
    try:
        return bool(orjson.loads(document) == value)
    except orjson.JSONDecodeError:
        return False


def _union(injected: SecretFinder) -> SecretFinder:
    """The injected finder's spans plus the built-in set's: the audit never masks less than its
    own patterns would, whatever the policy's analyzer covers."""

    def find(text: str) -> list[SecretLike]:
        return [*injected(text), *find_builtin_secrets(text)]

    return find


def _loads_json_container(s: str) -> Any | None:
    try:
        inner = json.loads(s)
    except (ValueError, RecursionError):
        return None
    return inner if isinstance(inner, dict | list) else None
