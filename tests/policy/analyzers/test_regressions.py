"""Regressions, each named for what broke (found in acceptance review of the analyzers)."""

from __future__ import annotations

from typing import Any

import pytest
from _analyzer_helpers import kinds_of, scan_one

from checkrein.catalog.model import ToolDefinition
from checkrein.config import parse_config
from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide
from checkrein.policy.analyzers import ScanContext
from checkrein.policy.analyzers.paths import check_path
from checkrein.policy.analyzers.scan import MAX_DEPTH, MAX_SCAN_CHARS

ROOTS = ScanContext(path_roots=("/srv/data",))


@pytest.mark.parametrize("value", ["/srv/data/..;/secrets", "/srv/data/.../secrets", "/srv/data/a/..;/..;/x", "/srv/data/.?/x"])
def test_parent_segment_spelled_for_a_lenient_server_escapes_the_root(value: str) -> None:
    """`..;` (servlet path parameter), `...` and `.?` were read as names by the roots check while
    the traversal check read them as `..`: `/srv/data/..;/secrets` was allowed."""
    assert "outside_roots" in kinds_of(check_path([value], "/p", "path", ROOTS))


@pytest.mark.parametrize("value", ["/srv/data/x", "/srv/data/reports/q1.csv", "/srv/data/./a//b.txt"])
def test_untyped_absolute_path_inside_a_root_is_not_a_system_path(value: str) -> None:
    """With `path_roots = ["/srv/data"]`, an untyped argument (`target`, no schema hint) holding
    `/srv/data/x` was denied as `system_path` (`srv` is a system directory)."""
    assert kinds_of(scan_one(value, None, path_roots=("/srv/data",)), "paths") == set()


@pytest.mark.parametrize("value", ["/srv/database/x", "/srv/data/../etc/hosts", "//srv/data/x"])
def test_paths_beside_or_above_a_root_stay_findings(value: str) -> None:
    typed = kinds_of(scan_one(value, "path", path_roots=("/srv/data",)), "paths")
    untyped = kinds_of(scan_one(value, None, path_roots=("/srv/data",)), "paths")
    assert "outside_roots" in typed
    assert untyped & {"system_path", "sensitive_file", "traversal", "unc_path"}


def test_a_directory_named_like_the_root_plus_a_space_is_outside_it() -> None:
    """The lenient reading strips spaces from segments; the POSIX one must still see `data ` != `data`."""
    assert "outside_roots" in kinds_of(check_path(["/srv/data /x"], "/p", "path", ROOTS))


POLICY = """
[policy]
allow = ["t__*"]

[policy.analyzers]
paths = "ask"
urls = "ask"
shell = "ask"
sql = "ask"
secrets = "ask"
"""


def _decide(arguments: dict[str, Any]) -> tuple[str, str]:
    tools = {"t__echo": ToolDefinition("t", "echo", "echo", {"type": "object"})}
    policy = compile_policy(parse_config(POLICY), tools)
    call = ToolCall(Identity("alice", source="stdio"), "s", "t", "s", "t__echo", arguments, server="t", tool="echo")
    d = decide(policy, call, SessionState("s"), 0.0)
    return d.effect, d.rule_id


def _nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"text": "a" * (MAX_SCAN_CHARS + 1)}, "value_too_long"),
        ({"text": _nested_json(MAX_DEPTH + 5)}, "too_deep"),
    ],
)
def test_scan_bounds_deny_even_when_every_analyzer_only_asks(arguments: dict[str, Any], kind: str) -> None:
    """Findings of the pseudo-analyzer `scan` (the unanalyzed rest of a value) deny by default:
    no `[policy.analyzers]` key can name `scan`, so `ask` for every analyzer must not turn them into asks."""
    assert _decide(arguments) == ("deny", f"finding:scan:{kind}")


@pytest.mark.parametrize("value", ["metadata\n\x00", "\x01metadata\x1f", "x@\nmetadata", "169.254.169.254\n\x00"])
def test_a_bare_metadata_host_behind_control_characters_passes_the_url_prefilter(value: str) -> None:
    """`check_url` strips C0 controls from the ends and deletes a newline beside `@`, so `metadata\\n\\x00`
    is the bare host `metadata`; the untyped prefilter read the newline as a space and skipped the check."""
    from checkrein.policy.analyzers import scan_arguments, urls
    from checkrein.policy.analyzers.scan import scan_value

    assert urls.may_find(value, None)
    full = {(f.analyzer, f.kind) for f in scan_value(value, "/v", None, ScanContext(), full=True)}
    assert ("urls", "metadata") in full
    assert full <= {(f.analyzer, f.kind) for f in scan_arguments({"v": value}, ScanContext())}
