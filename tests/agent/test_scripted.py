"""The scripted model: replay, name mapping, answer templates, script files."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkrein.agent.model import ModelError, ScriptError
from checkrein.agent.scripted import ScriptedModel, ScriptStep, load_script, script_from_data

pytestmark = pytest.mark.anyio
TOOLS = [{"type": "function", "function": {"name": n}} for n in ("sandbox__read_file", "knowledge__search_documents")]


async def test_steps_replay_one_per_turn_then_the_answer_uses_results() -> None:
    model = ScriptedModel([ScriptStep("read_file", {"filename": "a"}), ScriptStep("nope", {})],
                          "first={result[0]} last={last_result} missing=[{result[7]}] q={query}")
    first = await model.complete([{"role": "user", "content": "Q"}], TOOLS)
    assert first.tool_calls[0].name == "sandbox__read_file" and first.tool_calls[0].arguments == '{"filename": "a"}'
    second = await model.complete([{"role": "user", "content": "Q"},
                                   {"role": "tool", "tool_call_id": "call_1", "content": "A"}], TOOLS)
    assert second.tool_calls[0].name == "nope"  # unknown names pass through: the server decides
    final = await model.complete([{"role": "user", "content": "Q"},
                                  {"role": "tool", "tool_call_id": "call_2", "content": "B"}], TOOLS)
    assert final.text == "first=A last=B missing=[] q=Q" and not final.tool_calls


async def test_a_broken_template_is_a_script_error() -> None:
    with pytest.raises(ScriptError):
        await ScriptedModel([], "{nope}").complete([], [])


async def test_summary_requests_are_answered_or_fail_on_demand() -> None:
    msgs = [{"role": "user", "content": "hello there"}]
    assert "hello there" in ((await ScriptedModel([]).complete(msgs, [], purpose="summary")).text or "")
    with pytest.raises(ModelError):
        await ScriptedModel([], fail_summary=True).complete(msgs, [], purpose="summary")


def test_scripts_load_from_toml_json_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(
        'name = "kb"\nquery = "q"\nanswer = "A: {result[0]}"\n[[steps]]\ntool = "knowledge__search_documents"\n'
        'args = { query = "running", limit = 3 }\nexpect = "allow"\n')
    (tmp_path / "s.json").write_text('{"steps": [{"tool": "t", "arguments": {"x": 1}}], "final": "F"}')
    (tmp_path / "s.yaml").write_text("- tool: t\n  args: {x: 2}\n")
    toml = load_script(tmp_path / "s.toml")
    assert toml.steps[0].args == {"query": "running", "limit": 3} and toml.answer == "A: {result[0]}"
    assert load_script(tmp_path / "s.json").answer == "F"
    assert load_script(tmp_path / "s.yaml").steps[0].args == {"x": 2}


@pytest.mark.parametrize("data", [42, {"steps": [{"args": {}}]}, {"steps": [{"tool": "t", "args": [1]}]},
                                  {"answer": 3}])
def test_malformed_scripts_are_refused(data: object) -> None:
    with pytest.raises(ScriptError):
        script_from_data(data)


def test_an_unreadable_script_is_a_script_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError):
        load_script(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ScriptError):
        load_script(tmp_path / "bad.json")
