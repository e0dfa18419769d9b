"""`VerdictCache`: a bounded, thread-safe LRU of analyzer verdicts, one per compiled policy.

Agents repeat arguments (the same path, the same query, the same note), and every analyzer is a
pure function of the string, its kind and the analyzer-relevant part of the tool's `ScanContext`
(path roots, allowed hosts, command allowlist, enabled analyzers). So `scan_arguments` keys the
findings of one string by (scope, kind, value) and skips the rescan on a hit:

- **scope**: a small integer interned per distinct (path roots, allowed hosts, commands,
  enabled analyzers) tuple, so two tools with the same analyzer settings share entries and two
  tools with different roots never do. At most `MAX_SCOPES` scopes; past that, no caching.
- **value**: the string itself up to `MAX_RAW_KEY` characters (exact, no collision possible);
  a longer string is keyed by its length and the SHA-256 digest of its UTF-8 bytes (lone
  surrogates encoded as they are; SHA-256 because CPUs hash it in hardware, ~2x BLAKE2b here), so
  an entry never holds more than `MAX_RAW_KEY` characters of key.
- **never a secret**: a value of a `kind = "secret"` argument, or one in which the secrets
  analyzer found something, is not cached, so the cache does not keep known secrets in memory
  beyond the call (such values are rare to repeat, and their calls are denied or redacted anyway).
- **never with a DNS resolver**: when ``[policy.urls] resolve_dns`` is on, the URL verdict depends
  on what the name resolves to now, so nothing is cached (`ScanContext.resolver` is set).

Bounded: at most `MAX_ENTRIES` entries (least recently used evicted first); an entry is a key of
at most `MAX_RAW_KEY` characters and a tuple of findings (each analyzer reports a kind once per
value), so the cache holds a few MB at most. A new `CompiledPolicy` (a reload, a catalog change)
starts with an empty cache, so a verdict never outlives the policy and the tool schemas it was
computed under. A cached verdict is exactly what the scan returned; the findings' pointers are
rewritten per occurrence by `scan_arguments`, as for repeated values inside one call.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable

from checkrein.policy.decision import Finding

__all__ = ["MAX_ENTRIES", "MAX_RAW_KEY", "MAX_SCOPES", "VerdictCache", "value_key"]

MAX_ENTRIES = 4096
"""Verdicts kept per compiled policy."""
MAX_RAW_KEY = 512
"""Longest value used as its own key; longer values are keyed by a digest."""
MAX_SCOPES = 4096
"""Distinct analyzer contexts per compiled policy (one per distinct tool setting at most)."""


def value_key(value: str) -> Hashable:
    """The cache key of one string: itself when short, else its length and its SHA-256 digest."""
    if len(value) <= MAX_RAW_KEY:
        return value
    return (len(value), hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest())


class VerdictCache:
    """(scope, kind, value key) -> the findings `scan_value` returned. Thread-safe; bounded."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[Finding, ...]] = OrderedDict()
        self._scopes: dict[Hashable, int] = {}
        self.quiet: set[str] = set()
        """Untyped values `scan_arguments` found to be quiet words (`scan.QUIET_WORD`: no analyzer reports
        them in any context); at most ``max_entries``. Read without the lock (a set lookup is atomic)."""
        self.hits = 0
        self.misses = 0

    def scope(self, context: Hashable) -> int | None:
        """The interned id of an analyzer context, or None when `MAX_SCOPES` are taken (no caching)."""
        found = self._scopes.get(context)
        if found is not None:
            return found
        with self._lock:
            found = self._scopes.get(context)
            if found is None:
                if len(self._scopes) >= MAX_SCOPES:
                    return None
                found = self._scopes[context] = len(self._scopes)
            return found

    def get(self, key: Hashable) -> tuple[Finding, ...] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: Hashable, findings: tuple[Finding, ...]) -> None:
        with self._lock:
            self._entries[key] = findings
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def remember_quiet(self, value: str) -> None:
        """Add ``value`` to `quiet` unless it holds ``max_entries`` values already."""
        with self._lock:
            if len(self.quiet) < self.max_entries:
                self.quiet.add(value)

    def clear(self) -> None:
        """Forget every verdict and quiet word (scopes stay: they only name contexts)."""
        with self._lock:
            self._entries.clear()
            self.quiet.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
