"""Regressions found in acceptance review of the agent runner, each named for what broke."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import types
from typer.testing import CliRunner

from checkrein.agent.loop import run_agent
from checkrein.agent.model import ModelError, ScriptError
from checkrein.agent.openai_model import ModelSettings, OpenAIChatModel, read_dotenv
from checkrein.agent.scripted import script_from_data
from checkrein.agent.trace import TraceWriter
from checkrein.cli.main import app

from .conftest import FakeOpenAI, error

KEY = "sk-regression0123456789abcdefKEY"


@pytest.mark.parametrize("data", [{"steps": 5}, {"steps": "ab"}, {"steps": {"tool": "t"}}])
def test_a_script_whose_steps_is_not_a_list_is_a_script_error(data: object) -> None:
    """``{"steps": 5}`` crashed `checkrein run --script` with a TypeError traceback."""
    with pytest.raises(ScriptError, match="steps"):
        script_from_data(data)


@pytest.mark.parametrize("answer", ["{0}", "{nope}", "{result[x]}", "{", "{result.missing}"])
def test_a_broken_answer_template_fails_when_the_script_loads(answer: str) -> None:
    """It used to fail only after the whole run, with the gateway already started."""
    with pytest.raises(ScriptError, match="answer template"):
        script_from_data({"steps": [], "answer": answer}, source="s.json")


def test_fail_summary_must_be_a_boolean() -> None:
    """``"fail_summary": "no"`` was read as true."""
    with pytest.raises(ScriptError, match="fail_summary"):
        script_from_data({"steps": [], "fail_summary": "no"})


class _NoTools:
    async def list_tools(self) -> list[types.Tool]:
        return []

    async def call_tool(self, *args: object) -> types.CallToolResult:
        raise AssertionError("no tool call expected")


@pytest.mark.anyio
@pytest.mark.parametrize("status", [401, 400])
async def test_an_endpoint_that_echoes_the_api_key_never_gets_it_into_errors_or_the_trace(
    fake_openai: FakeOpenAI, tmp_path: Path, status: int
) -> None:
    fake_openai.queue.append(error(status, f"Incorrect API key provided: Bearer {KEY}"))
    model = OpenAIChatModel(ModelSettings(api_key=KEY, model="m", base_url=fake_openai.base_url, max_retries=0))
    with pytest.raises(ModelError) as info:
        await model.complete([{"role": "user", "content": "hi"}], [])
    assert KEY not in str(info.value) and "***" in str(info.value)
    fake_openai.queue.append(error(status, f"Incorrect API key provided: Bearer {KEY}"))
    with TraceWriter.in_dir(tmp_path) as trace:
        result = await run_agent(_NoTools(), model, "hi", trace)
    assert result.status == "error" and KEY not in (result.error or "")
    assert KEY not in trace.path.read_text()


def test_trace_error_text_is_masked_whatever_produced_it(tmp_path: Path) -> None:
    """Error events were written verbatim; a server command line or an endpoint's answer can hold a key."""
    with TraceWriter.in_dir(tmp_path) as trace:
        trace.emit("error", where="connect", error=f"cannot talk to the MCP server (tool --token {KEY})")
    assert KEY not in trace.path.read_text()


def test_a_quoted_dotenv_value_with_a_trailing_comment_loses_its_quotes(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("OPENAI_API_KEY='sk-abc' # work key\nA=\"x#y\"\nB=plain # note\nC=\"unterminated\n")
    assert read_dotenv(dotenv) == {"OPENAI_API_KEY": "sk-abc", "A": "x#y", "B": "plain", "C": '"unterminated'}


def test_run_without_any_key_or_script_says_what_to_set_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./.env
    config = tmp_path / "checkrein.toml"
    config.write_text('[[servers]]\nname = "m"\ncommand = "python"\nargs = ["-m", "checkrein.servers.monitor"]\n')
    result = CliRunner().invoke(app, ["run", "--config", str(config), "--query", "hi"],
                                env={"OPENAI_API_KEY": None, "DEEPSEEK_API_KEY": None})
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)  # a message, not a traceback
    said = " ".join(result.output.split())
    assert "no model API key" in said and "DEEPSEEK_API_KEY" in said and "--script" in said


def test_run_with_an_unwritable_trace_dir_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """A trace directory that cannot be created crashed the run after the server had started."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"steps": [], "answer": "ok"}))
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["run", "--server", "python -m checkrein.servers.monitor", "--script",
                                      str(script), "--query", "hi", "--trace-dir", str(blocker / "traces")])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert "cannot write traces" in " ".join(result.output.split())


def test_trace_show_refuses_a_file_that_is_not_a_run_trace(tmp_path: Path) -> None:
    """An empty file or an audit log printed an empty summary with exit 0."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    audit = tmp_path / "segment.jsonl"
    audit.write_text(json.dumps({"schema_version": 1, "seq": 1, "outcome": "ok"}) + "\n")
    for path in (empty, audit):
        result = CliRunner().invoke(app, ["trace", "show", str(path)])
        assert result.exit_code == 2 and "not a run trace" in " ".join(result.output.split())


def test_a_run_where_the_server_shows_no_tools_warns_even_when_quiet(tmp_path: Path) -> None:
    """A gateway whose servers all failed to start ran on silently with --quiet and exited 0."""
    server = tmp_path / "empty_server.py"
    server.write_text("from mcp.server.mcpserver import MCPServer\nMCPServer('empty').run('stdio')\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"steps": [], "answer": "ok"}))
    proc = subprocess.run(
        [sys.executable, "-m", "checkrein", "run", "--server", f"python {server}", "--script", str(script),
         "--query", "hi", "--trace-dir", str(tmp_path / "t"), "--quiet"],
        env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "the server shows no tools" in " ".join(proc.stderr.split())
