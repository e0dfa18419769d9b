"""The event list's query string to `EventFilter`, and back into links."""

from __future__ import annotations

import pytest

from checkrein.audit.event import format_time
from checkrein.ui.filters import FilterError, parse_list_query

NOW = 1_800_000_000.0


def test_every_field_reaches_the_filter() -> None:
    """Each form field maps onto its filter field; times become stored-time strings."""
    q = parse_list_query({"outcome": "denied", "tool": "fs__*", "server": "fs", "user": "alice", "session": "s1",
                          "trace": "t1", "rule": "r1", "since": "15m", "until": "2027-01-15T08:00:00Z"}, now=NOW)
    f = q.flt
    assert (f.outcome, f.tool, f.server, f.user, f.session, f.trace, f.rule) == ("denied", "fs__*", "fs", "alice", "s1", "t1", "r1")
    assert f.since == format_time(NOW - 900) and f.until == "2027-01-15T08:00:00.000000Z" and f.calls_only
    assert q.newest and q.limit == 50


def test_blank_fields_are_no_filter_and_kind_all_includes_other_events() -> None:
    """Empty inputs select nothing; kind=all shows lifecycle and checkpoint events too."""
    q = parse_list_query({"outcome": "", "tool": "  ", "kind": "all"}, now=NOW)
    assert q.flt.outcome is None and q.flt.tool is None and not q.flt.calls_only
    assert q.raw == {"kind": "all"}


@pytest.mark.parametrize(("params", "field"), [
    ({"outcome": "allowed"}, "outcome"), ({"since": "last week"}, "since"), ({"until": "x"}, "until"),
    ({"kind": "some"}, "kind"), ({"limit": "501"}, "limit"), ({"limit": "-1"}, "limit"),
    ({"before": "1", "after": "2"}, "before"), ({"after": "1e3"}, "after"), ({"tool": "x" * 600}, "tool"),
    ({"since": "1h", "until": "2h"}, "until"),
])
def test_bad_values_name_their_field(params: dict[str, str], field: str) -> None:
    """A bad value raises FilterError naming the field."""
    with pytest.raises(FilterError) as info:
        parse_list_query(params, now=NOW)
    assert info.value.field == field and str(info.value).startswith(field + ":")


def test_links_keep_the_filter_and_add_the_cursor() -> None:
    """params() carries the typed filter and page size, plus a cursor."""
    q = parse_list_query({"outcome": "denied", "limit": "20", "before": "90"}, now=NOW)
    assert not q.newest and q.before == 90
    assert q.params(before=40) == {"outcome": "denied", "limit": 20, "before": 40}
