"""The event list's query string: parsed into an `EventFilter`, and written back into links.

A bad value is a `FilterError` naming the field, shown on the page beside the form (HTTP 400);
it never becomes a filter that silently matches nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from checkrein.audit.query import EventFilter, parse_since
from checkrein.audit.schema import OUTCOMES

__all__ = ["FIELDS", "FilterError", "ListQuery", "parse_list_query"]

FIELDS = ("outcome", "tool", "server", "user", "session", "trace", "rule", "since", "until", "kind")
"""Query parameters of the event list that select events (cursors and page size aside)."""

PAGE_DEFAULT = 50
PAGE_MAX = 500
_MAX_TEXT = 512


class FilterError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class ListQuery:
    """What the event list shows: the filter as typed (for the form and links) and as applied."""

    raw: dict[str, str]
    """The selecting parameters exactly as given (empty ones dropped)."""
    flt: EventFilter
    limit: int = PAGE_DEFAULT
    before: int | None = None
    after: int | None = None

    @property
    def newest(self) -> bool:
        """True for the page that follows the log live (no cursor)."""
        return self.before is None and self.after is None

    def params(self, **cursor: object) -> dict[str, object]:
        """Query parameters for a link to this filter (with ``cursor`` values added)."""
        out: dict[str, object] = dict(self.raw)
        if self.limit != PAGE_DEFAULT:
            out["limit"] = self.limit
        out.update(cursor)
        return out


def _seq(params: Mapping[str, str], name: str) -> int | None:
    text = params.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 18:
        raise FilterError(name, f"expected a seq number, got {text!r}")
    return int(text)


def _time(field: str, text: str, now: float) -> str:
    try:
        return parse_since(text, now=now)
    except ValueError:
        raise FilterError(field, f"{text!r} is neither an RFC 3339 time (2026-11-30T20:00:00Z) nor a duration back "
                                 "from now (15m, 2h, 7d)") from None


def parse_list_query(params: Mapping[str, str], *, now: float | None = None) -> ListQuery:
    """The `ListQuery` of a request's query parameters. Raises `FilterError`."""
    now = time.time() if now is None else now
    raw = {k: params[k].strip() for k in FIELDS if params.get(k, "").strip()}
    for k, v in raw.items():
        if len(v) > _MAX_TEXT:
            raise FilterError(k, f"longer than {_MAX_TEXT} characters")
    outcome = raw.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise FilterError("outcome", f"{outcome!r} is not one of {', '.join(sorted(OUTCOMES))}")
    kind = raw.get("kind", "calls")
    if kind not in ("calls", "all"):
        raise FilterError("kind", f"{kind!r} is not 'calls' or 'all'")
    if kind == "calls":
        raw.pop("kind", None)
    since = _time("since", raw["since"], now) if "since" in raw else None
    until = _time("until", raw["until"], now) if "until" in raw else None
    if since is not None and until is not None and until < since:
        raise FilterError("until", "is before since")
    limit_text = params.get("limit", "").strip()
    limit = PAGE_DEFAULT
    if limit_text:
        if not limit_text.isdigit() or not 1 <= int(limit_text) <= PAGE_MAX:
            raise FilterError("limit", f"expected a page size from 1 to {PAGE_MAX}, got {limit_text!r}")
        limit = int(limit_text)
    before, after = _seq(params, "before"), _seq(params, "after")
    if before is not None and after is not None:
        raise FilterError("before", "give before or after, not both")
    flt = EventFilter(
        trace=raw.get("trace"), session=raw.get("session"), tool=raw.get("tool"), outcome=outcome,
        since=since, until=until, calls_only=kind == "calls", server=raw.get("server"), user=raw.get("user"),
        rule=raw.get("rule"),
    )
    return ListQuery(raw, flt, limit, before, after)


def with_cursor(q: ListQuery, *, before: int | None = None, after: int | None = None) -> EventFilter:
    """The filter of ``q`` bounded by a seq cursor."""
    return replace(q.flt, before_seq=before, after_seq=after)
