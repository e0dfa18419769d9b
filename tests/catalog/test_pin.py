"""plan_pin / render_plan: what `checkrein pin` shows and writes."""

from __future__ import annotations

import re

from checkrein.catalog import PinnedTool, ToolDefinition, build_catalog, plan_json, plan_pin, render_plan


def pin_of(t: ToolDefinition) -> PinnedTool:
    return PinnedTool(t.digest, t.pinned_fields())


def test_plan_lists_new_changed_and_removed_tools_with_a_unified_diff() -> None:
    old_x = ToolDefinition("a", "x", "reads files")
    new_x = ToolDefinition("a", "x", "reads files and uploads them")
    gone = ToolDefinition("a", "gone", "old tool")
    fresh = ToolDefinition("a", "fresh", "new tool")
    lock = {"a__x": pin_of(old_x), "a__gone": pin_of(gone)}
    catalog = build_catalog({"a": [new_x, fresh]}, pins=lock)
    plan = plan_pin(catalog, lock)
    assert (plan.added, plan.changed, plan.removed) == (("a__fresh",), ("a__x",), ("a__gone",))
    assert plan.has_changes
    assert set(plan.new_lock) == {"a__x", "a__fresh"}
    assert plan.new_lock["a__x"].digest == new_x.digest
    text = render_plan(plan, details=True)
    assert '-  "description": "reads files",' in text
    assert '+  "description": "reads files and uploads them",' in text
    assert "--- a/a__x" in text and "+++ b/a__x" in text
    assert "new: a__fresh" in text and "removed: a__gone" in text
    summary = render_plan(plan)
    assert re.search(r"new +1  a__fresh", summary) and re.search(r"changed +1  a__x", summary) and re.search(r"removed +1  a__gone", summary)
    assert re.search(r"unchanged +0", summary) and "--- a/a__x" not in summary


def test_pins_of_a_server_that_did_not_start_are_kept() -> None:
    other = ToolDefinition("down", "t", "d")
    lock = {"down__t": pin_of(other)}
    catalog = build_catalog({"a": []}, pins=lock)
    plan = plan_pin(catalog, lock)
    assert plan.kept == ("down__t",) and plan.removed == ()
    assert plan.new_lock["down__t"] == lock["down__t"]
    assert not plan.has_changes


def test_nothing_changed_means_no_changes() -> None:
    t = ToolDefinition("a", "x", "d")
    lock = {"a__x": pin_of(t)}
    plan = plan_pin(build_catalog({"a": [t]}, pins=lock), lock)
    assert not plan.has_changes
    assert re.search(r"unchanged +1", render_plan(plan)) and not plan.needs_review


# -- summaries, held-back tools, acceptance ---------------------------------------------------------


def _review(d: ToolDefinition, siblings: object) -> str | None:
    return "flagged: secrecy" if "evil" in (d.description or "") else None


def test_the_summary_comes_first_and_diffs_only_on_request() -> None:
    tools = [ToolDefinition("a", f"t{i}", f"tool {i}") for i in range(30)] + [ToolDefinition("b", "x", "y")]
    plan = plan_pin(build_catalog({"a": tools[:30], "b": tools[30:]}), None)
    text = render_plan(plan)
    assert text.splitlines()[0] == "31 tool(s) from 2 server(s) against checkrein.lock:"
    assert re.search(r"new +31  a__t0, a__t1", text) and "(+23 more)" in text and "--- " not in text
    assert len(text.splitlines()) < 10
    assert "+++ b/a__t0" in render_plan(plan, details=True)


def test_a_flagged_tool_is_held_back_unless_accepted_by_name() -> None:
    good, bad = ToolDefinition("a", "good", "ok"), ToolDefinition("a", "bad", "evil")
    catalog = build_catalog({"a": [good, bad]}, pins=None, review=_review)
    held = plan_pin(catalog, None)
    assert set(held.new_lock) == {"a__good"} and held.held == {"a__bad": "flagged: secrecy"}
    assert held.needs_review and "held back" in render_plan(held) and "a__bad: flagged: secrecy" in render_plan(held)
    accepted = plan_pin(catalog, None, accept={"a__bad"})
    assert accepted.new_lock["a__bad"].accepted == "flagged: secrecy" and accepted.accepted == {"a__bad": "flagged: secrecy"}
    again = plan_pin(build_catalog({"a": [good, bad]}, pins=dict(accepted.new_lock), review=_review), dict(accepted.new_lock))
    assert not again.needs_review and again.new_lock["a__bad"].accepted == "flagged: secrecy"


def test_a_held_tool_keeps_its_old_pin() -> None:
    old = ToolDefinition("a", "t", "fine")
    new = ToolDefinition("a", "t", "evil now")
    lock = {"a__t": pin_of(old)}
    plan = plan_pin(build_catalog({"a": [new]}, pins=lock, review=_review), lock)
    assert plan.new_lock["a__t"] == lock["a__t"] and plan.held and not plan.removed and not plan.changed


def test_plan_json_for_scripts() -> None:
    good, bad = ToolDefinition("a", "good", "ok"), ToolDefinition("a", "bad", "evil")
    plan = plan_pin(build_catalog({"a": [good, bad]}, pins=None, review=_review), None)
    doc = plan_json(plan, "/x/checkrein.lock", written=False)
    assert doc["new"] == ["a__good"] and doc["held"] == {"a__bad": "flagged: secrecy"}
    assert doc["tools"] == 2 and doc["servers"] == ["a"] and doc["up_to_date"] is False and doc["written"] is False
