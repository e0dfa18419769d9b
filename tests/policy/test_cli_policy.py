"""`checkrein policy check` / `policy tools`: decisions from the lock file, no upstream started."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.canonical import digest
from checkrein.catalog.lock import PinnedTool, write_lock
from checkrein.catalog.model import ToolDefinition
from checkrein.cli.main import app

CONFIG = """
[[servers]]
name = "fs"
command = "/nonexistent/never-started"

[[identities]]
name = "ci"
token = "${CI_TOKEN}"
roles = ["bot"]

[policy]
allow = ["fs__*"]

[policy.analyzers]
paths = "off"
urls = "off"
shell = "off"
sql = "off"
secrets = "off"

[policy.tools."fs__*"]
risk = "low"

[policy.tools."fs__delete_file"]
risk = "high"

[policy.tools."fs__admin"]
roles = ["admin"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "checkrein.toml").write_text(CONFIG)
    pins = {}
    schemas = {
        "read_file": {"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}, "required": ["path"]},
        "delete_file": {"type": "object", "properties": {"path": {"type": "string"}}},
        "admin": {"type": "object"},
    }
    for name, schema in schemas.items():
        d = ToolDefinition("fs", name, f"{name}", schema).pinned_fields()
        pins[f"fs__{name}"] = PinnedTool(digest(d), d)
    write_lock(tmp_path / "checkrein.lock", pins)
    return tmp_path / "checkrein.toml"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["policy", *args])
    return result.exit_code, result.output


def test_allow_exits_0(project: Path) -> None:
    code, out = invoke("check", "--config", str(project), "--tool", "fs__read_file", "--args", '{"path": "a"}')
    assert code == 0
    assert "allow" in out and "allow:fs__*" in out


def test_deny_exits_3_and_json_has_findings_with_pointers(project: Path) -> None:
    code, out = invoke("check", "-c", str(project), "-t", "fs__read_file", "-a", '{"path": "a", "n": "42"}', "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["effect"] == "deny"
    assert doc["rule_id"] == "arguments.schema"
    assert doc["reasons"]
    assert doc["findings"] == [{"analyzer": "schema", "kind": "schema", "path": "/n", "message": "is not of type integer", "severity": "high"}]


def test_ask_exits_4(project: Path) -> None:
    code, out = invoke("check", "-c", str(project), "-t", "fs__delete_file", "-a", '{"path": "a"}', "--json")
    assert code == 4
    assert json.loads(out)["rule_id"] == "risk:high"


def test_identity_roles_are_applied(project: Path) -> None:
    assert invoke("check", "-c", str(project), "-t", "fs__admin", "--identity", "ci")[0] == 3


def test_anonymous_callers_meet_the_server_security_level(project: Path) -> None:
    project.write_text(CONFIG.replace('command = "/nonexistent/never-started"', 'command = "/nonexistent/never-started"\nsecurity_level = "medium"'))
    args = ["check", "-c", str(project), "-t", "fs__read_file", "-a", '{"path": "a"}']
    assert invoke(*args)[0] == 0
    code, out = invoke(*args, "--anonymous")
    assert code == 3 and "identity.level:fs" in out


def test_a_tool_missing_from_the_lock_is_denied_and_says_so(project: Path) -> None:
    code, out = invoke("check", "-c", str(project), "-t", "fs__ghost")
    assert code == 3
    assert "not in checkrein.lock" in out


@pytest.mark.parametrize(
    "args",
    [
        ["-t", "fs__read_file", "-a", "{not json"],
        ["-t", "fs__read_file", "--identity", "nobody"],
    ],
    ids=["bad-json", "unknown-identity"],
)
def test_usage_errors_exit_2(project: Path, args: list[str]) -> None:
    assert invoke("check", "-c", str(project), *args)[0] == 2


def test_a_config_error_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "checkrein.toml"
    bad.write_text('[policy]\nallow = ["x"]\ndeny = ["x"]\n')
    assert invoke("check", "-c", str(bad), "-t", "x")[0] == 2


def test_a_missing_or_corrupt_lock_exits_2(project: Path) -> None:
    (project.parent / "checkrein.lock").write_text("{ not a lock")
    assert invoke("check", "-c", str(project), "-t", "fs__read_file")[0] == 2
    (project.parent / "checkrein.lock").unlink()
    assert invoke("check", "-c", str(project), "-t", "fs__read_file")[0] == 2


def test_a_lock_entry_without_an_input_schema_exits_2(project: Path) -> None:
    lock = project.parent / "checkrein.lock"
    definition = {"name": "read_file"}
    doc = {"version": 1, "tools": {"fs__read_file": {"digest": digest(definition), "definition": definition}}}
    lock.write_text(json.dumps(doc))
    code, out = invoke("check", "-c", str(project), "-t", "fs__read_file")
    assert code == 2
    assert "inputSchema" in out


def test_policy_tools_lists_every_pinned_tool(project: Path) -> None:
    code, out = invoke("tools", "-c", str(project), "--json")
    assert code == 0
    rows = {r["tool"]: r for r in map(json.loads, out.splitlines())}
    assert rows["fs__read_file"]["effect"] == "allow"
    assert rows["fs__delete_file"]["effect"] == "ask"
    assert rows["fs__delete_file"]["category"] == "delete"
    assert rows["fs__admin"]["effect"] == "deny"


def test_policy_tools_shows_flow_labels_and_why(project: Path) -> None:
    """Each tool's flow labels with the source and reason of each; the table shows them too."""
    project.write_text(CONFIG.replace('[policy.tools."fs__admin"]\nroles = ["admin"]', '[policy.tools."fs__admin"]\nroles = ["admin"]\nflow = ["private"]'))
    code, out = invoke("tools", "-c", str(project), "--json")
    assert code == 0
    rows = {r["tool"]: r for r in map(json.loads, out.splitlines())}
    assert rows["fs__read_file"]["flow"] == ["untrusted", "private"]
    assert rows["fs__read_file"]["flow_why"]["untrusted"]["source"] == "name"
    assert rows["fs__delete_file"]["flow"] == ["untrusted", "sink"]
    assert rows["fs__admin"]["flow"] == ["private"]
    assert rows["fs__admin"]["flow_why"]["sink"] == {"present": False, "source": "config", "reason": "[policy.tools.'fs__admin'] flow = ['private']"}
    assert rows["fs__read_file"]["flow_effects"] == {"rule_of_two": "ask", "provenance": "ask"}
    code, table = invoke("tools", "-c", str(project))
    assert code == 0 and "not sink" in table and "untrusted" in table


def test_policy_tools_warns_about_rules_that_match_nothing(project: Path) -> None:
    project.write_text(CONFIG.replace('allow = ["fs__*"]', 'allow = ["fs__*", "fss__typo"]'))
    result = CliRunner().invoke(app, ["policy", "tools", "-c", str(project), "--json"])
    assert result.exit_code == 0
    assert "allow: fss__typo matches no pinned tool" in result.stderr


def test_the_real_command_runs_without_starting_any_upstream(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "checkrein", "policy", "check", "-c", str(project), "-t", "fs__read_file", "-a", '{"path": 1}', "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["path"] == "/path"


def test_large_arguments_come_from_a_file_or_stdin(project: Path, tmp_path: Path) -> None:
    """Regression (argv too long): arguments over ~128 KB could not be passed on the command line."""
    big = {"path": "a", "n": 1, "pad": "x" * 200_000}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(big))
    code, out = invoke("check", "-c", str(project), "-t", "fs__read_file", "-a", f"@{args_file}", "--json")
    assert code == 0, out
    result = CliRunner().invoke(app, ["policy", "check", "-c", str(project), "-t", "fs__read_file", "-a", "-"],
                                input=json.dumps({"path": "a", "n": "42"}))
    assert result.exit_code == 3
    code, out = invoke("check", "-c", str(project), "-t", "fs__read_file", "-a", f"@{tmp_path / 'missing.json'}")
    assert code == 2


# -- batch: one process, one decision per line ---------------------------------------------------


def test_batch_decides_every_line_in_order(project: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        "\n".join(
            [
                json.dumps({"tool": "fs__read_file", "args": {"path": "a"}, "note": "ignored"}),
                json.dumps({"tool": "fs__read_file", "args": {"path": "a", "n": "x"}}),
                json.dumps({"tool": "fs__delete_file", "args": {"path": "a"}}),
                "",
                json.dumps({"tool": "fs__nope"}),
            ]
        )
        + "\n"
    )
    code, out = invoke("check", "-c", str(project), "--calls", str(calls), "--json")
    assert code == 0, out
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["effect"] for r in rows] == ["allow", "deny", "ask", "deny"]
    assert [r["line"] for r in rows] == [1, 2, 3, 5]
    assert rows[1]["rule_id"] == "arguments.schema" and rows[1]["findings"][0]["path"] == "/n"
    assert rows[3]["rule_id"] == "tool.not_found"
    assert all({"effect", "rule_id", "reasons", "findings"} <= set(r) for r in rows)


def test_batch_reports_bad_lines_and_still_decides_the_rest(project: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text('{"tool": "fs__read_file", "args": {"path": "a"}}\nnot json\n[1]\n{"args": {}}\n{"tool": "fs__read_file", "args": 3}\n')
    code, out = invoke("check", "-c", str(project), "--calls", str(calls), "--json")
    assert code == 2
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert rows[0]["effect"] == "allow"
    assert [r.get("error", "")[:7] for r in rows[1:]] == ["line 2 ", "line 3 ", "line 4 ", "line 5:"]


def test_batch_reads_stdin_and_prints_text_without_json(project: Path) -> None:
    result = CliRunner().invoke(app, ["policy", "check", "-c", str(project), "--calls", "-"], input='{"tool": "fs__read_file", "args": {"path": "a"}}\n')
    assert result.exit_code == 0 and result.output.startswith("1: allow fs__read_file rule=allow:fs__*")


def test_batch_and_single_exclude_each_other(project: Path, tmp_path: Path) -> None:
    code, _ = invoke("check", "-c", str(project), "--calls", str(tmp_path / "x.jsonl"), "--tool", "fs__read_file")
    assert code == 2
    code, _ = invoke("check", "-c", str(project))
    assert code == 2
    code, _ = invoke("check", "-c", str(project), "--calls", str(tmp_path / "missing.jsonl"))
    assert code == 2


def test_batch_of_ten_thousand_calls_runs_in_one_process(project: Path, tmp_path: Path) -> None:
    """Tens of thousands of calls are one compile and a loop: every line is answered."""
    calls = tmp_path / "many.jsonl"
    line = json.dumps({"tool": "fs__read_file", "args": {"path": "docs/readme.md", "n": 3}})
    calls.write_text((line + "\n") * 10_000)
    result = subprocess.run(
        [sys.executable, "-m", "checkrein", "policy", "check", "-c", str(project), "--calls", str(calls), "--json"],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 10_000 and all('"effect": "allow"' in x for x in lines)
