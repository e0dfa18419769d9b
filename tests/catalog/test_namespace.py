"""Resource URI namespacing is reversible for any upstream URI."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkrein.catalog import exposed_resource_uri, resource_policy_name, split_resource_uri


@given(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True), st.text(min_size=1, max_size=80))
def test_exposed_resource_uri_round_trips(server: str, uri: str) -> None:
    exposed = exposed_resource_uri(server, uri)
    assert exposed.startswith(f"checkrein://{server}/")
    assert split_resource_uri(exposed) == (server, uri)


def test_policy_name_uses_the_tool_separator_so_tool_globs_cover_resources() -> None:
    assert resource_policy_name("files", "file:///etc/hosts") == "files__file:///etc/hosts"


@pytest.mark.parametrize("bad", ["echo://readme", "checkrein://", "checkrein://srv", "checkrein:///x"])
def test_foreign_uris_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        split_resource_uri(bad)
