"""Flow labels: config, then annotations, then the inferred category, then conservative defaults."""

from __future__ import annotations

import pytest
from _flow_helpers import plan_for
from pydantic import ValidationError

from checkrein.config import Config


def labels(name: str, annotations: dict[str, object] | None = None, **policy: object) -> tuple[str, ...]:
    return plan_for({name: annotations}, dict(policy)).tools[f"s__{name}"].labels


def test_mail_reader_is_untrusted_and_private_but_no_sink() -> None:
    """Reading an inbox brings outsider text and private data, and changes nothing."""
    assert labels("read_inbox") == ("untrusted", "private")


def test_sender_is_a_sink_that_reads_nothing() -> None:
    assert labels("send_email") == ("untrusted", "sink")


def test_unknown_tool_is_a_private_sink() -> None:
    """No signal at all: treated as a sink that may read private data."""
    flow = plan_for({"frobnicate": None}).tools["s__frobnicate"]
    assert flow.labels == ("private", "sink")
    assert flow.sink.source == "default" and flow.private.source == "default"
    assert flow.untrusted.present is False


def test_open_world_hint_marks_untrusted() -> None:
    flow = plan_for({"lookup": {"openWorldHint": True, "readOnlyHint": True}}).tools["s__lookup"]
    assert flow.untrusted.present and flow.untrusted.source == "annotations"
    assert not flow.sink.present


def test_closed_world_hint_does_not_clear_an_outsider_channel_in_the_name() -> None:
    """openWorldHint is a hint from an untrusted server; a name saying 'inbox' wins."""
    flow = plan_for({"read_inbox": {"openWorldHint": False}}).tools["s__read_inbox"]
    assert flow.untrusted.present and flow.untrusted.source == "name"


def test_read_only_hint_cannot_hide_a_delete() -> None:
    assert "sink" in labels("delete_records", {"readOnlyHint": True})


def test_public_web_reader_is_not_private() -> None:
    flow = plan_for({"get_weather": None}).tools["s__get_weather"]
    assert flow.labels == ()
    assert "weather" in flow.private.reason


def test_config_labels_win_over_everything() -> None:
    flow = plan_for({"send_email": None}, {"tools": {"s__send_*": {"flow": []}}}).tools["s__send_email"]
    assert flow.labels == ()
    assert all(r.source == "config" for r in flow.reasons)
    assert "s__send_*" in flow.sink.reason


def test_most_specific_rule_sets_the_labels() -> None:
    plan = plan_for(
        {"read_a": None, "read_b": None},
        {"tools": {"s__*": {"risk": "medium", "flow": ["private"]}, "s__read_b": {"flow": ["untrusted"]}}},
    )
    assert plan.tools["s__read_a"].labels == ("private",)
    assert plan.tools["s__read_b"].labels == ("untrusted",)


def test_effects_come_from_the_template_then_the_section_then_the_tool() -> None:
    strict = plan_for({"send_email": None}, {"template": "strict", "allow": ["s__*"]}).tools["s__send_email"]
    assert (strict.rule_of_two, strict.provenance) == ("deny", "deny")
    section = plan_for({"send_email": None}, {"flow": {"rule_of_two": "off"}}).tools["s__send_email"]
    assert (section.rule_of_two, section.provenance) == ("off", "ask")
    tool = plan_for(
        {"send_email": None}, {"flow": {"rule_of_two": "off"}, "tools": {"s__send_email": {"flow_effect": "deny"}}}
    ).tools["s__send_email"]
    assert (tool.rule_of_two, tool.provenance) == ("deny", "deny")


def test_tool_not_in_the_plan_gets_every_label() -> None:
    flow = plan_for({}).for_call("s__ghost")
    assert flow.labels == ("untrusted", "private", "sink")


def test_resources_are_untrusted_private_reads() -> None:
    flow = plan_for({}).for_call("mem://x", "resource")
    assert flow.labels == ("untrusted", "private")


def test_repeated_or_unknown_labels_are_config_errors() -> None:
    with pytest.raises(ValidationError, match="repeat"):
        Config.model_validate({"policy": {"tools": {"x": {"flow": ["sink", "sink"]}}}})
    with pytest.raises(ValidationError):
        Config.model_validate({"policy": {"tools": {"x": {"flow": ["dangerous"]}}}})
    with pytest.raises(ValidationError):
        Config.model_validate({"policy": {"flow": {"rule_of_two": "maybe"}}})
