"""plan_pin / render_plan: what `checkrein pin` shows and writes."""

from __future__ import annotations

from checkrein.catalog import PinnedTool, ToolDefinition, build_catalog, plan_pin, render_plan


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
    text = render_plan(plan)
    assert '-  "description": "reads files",' in text
    assert '+  "description": "reads files and uploads them",' in text
    assert "--- a/a__x" in text and "+++ b/a__x" in text
    assert "new: a__fresh" in text and "removed: a__gone" in text
    assert "1 new, 1 changed, 1 removed, 0 unchanged" in text


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
    assert "0 new, 0 changed, 0 removed, 1 unchanged" in render_plan(plan)
