"""Every lint rule fires on its failing fixture and stays quiet on its passing one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkrein.cli.main import app
from checkrein.config.lint import RULES, lint_file

FIXTURES = Path(__file__).parent / "fixtures"

LINT = FIXTURES / "lint"


def _fixture(rule: str, which: str) -> Path:
    d = LINT / rule
    if (d / which).is_dir():
        return d / which / "task.toml"
    (found,) = [p for p in d.iterdir() if p.is_file() and p.stem == which]
    return found


def _rules_found(rule: str, which: str, env: dict[str, str]) -> set[str]:
    max_bytes = 1024 if rule == "file.too-large" else 4 * 1024 * 1024
    result = lint_file(_fixture(rule, which), env=env, max_bytes=max_bytes)
    return {f.rule for f in result.findings}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_failing_fixture_triggers_the_rule(rule: str, lint_env: dict[str, str]) -> None:
    assert rule in _rules_found(rule, "fail", lint_env)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_passing_fixture_does_not_trigger_the_rule(rule: str, lint_env: dict[str, str]) -> None:
    assert rule not in _rules_found(rule, "pass", lint_env)


def test_every_rule_has_exactly_one_pass_and_one_fail_fixture() -> None:
    assert {p.name for p in LINT.iterdir()} == set(RULES)
    for rule in RULES:
        names = sorted(p.stem if p.is_file() else p.name for p in (LINT / rule).iterdir())
        assert names == ["fail", "pass"], rule


def test_findings_carry_location_and_fix(lint_env: dict[str, str]) -> None:
    result = lint_file(_fixture("harbor.duplicate-server", "fail"), env=lint_env)
    (dup,) = [f for f in result.findings if f.rule == "harbor.duplicate-server"]
    assert dup.line == 11 and dup.location.endswith("fail.toml:11")
    assert dup.severity == "error" and "Harbor keeps the last" in dup.fix


def test_claude_json_with_comments_and_trailing_commas_is_reported_not_fatal(lint_env: dict[str, str]) -> None:
    result = lint_file(_fixture("claude.trailing-comma", "fail"), env=lint_env)
    rules = [(f.rule, f.line) for f in result.findings]
    assert rules.count(("claude.trailing-comma", 3)) == 2  # in the args array and after the server
    assert result.errors == 0


def test_compose_findings_point_into_the_compose_file(lint_env: dict[str, str]) -> None:
    result = lint_file(_fixture("harbor.sidecar-network", "fail"), env=lint_env)
    (f,) = [f for f in result.findings if f.rule == "harbor.sidecar-network"]
    assert f.file.endswith("environment/docker-compose.yaml") and f.line == 6


def test_huge_file_is_one_finding_and_never_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "huge.json"
    with big.open("wb") as fh:
        fh.write(b'{"mcpServers": {"a": {"command": "x", "args": ["')
        fh.write(b"y" * (5 * 1024 * 1024))
        fh.write(b'"]}}}')
    result = lint_file(big)
    assert [f.rule for f in result.findings] == ["file.too-large"]


@pytest.mark.parametrize("content", [b"\x00\x01\x02garbage", b"[[[", b"", b"\xef\xbb\xbf"])
def test_garbage_never_raises(tmp_path: Path, content: bytes) -> None:
    for name in ("x.json", "task.toml", "config.toml", "weird.txt"):
        p = tmp_path / name
        p.write_bytes(content)
        lint_file(p)  # must not raise, whatever the bytes


def test_cli_lint_json_and_exit_codes(lint_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in lint_env.items():
        monkeypatch.setenv(k, v)
    runner = CliRunner()
    bad = runner.invoke(app, ["lint", "--json", str(_fixture("harbor.unknown-server-key", "fail"))])
    assert bad.exit_code == 1
    payload = json.loads(bad.stdout)
    assert payload["kind"] == "harbor" and payload["errors"] >= 2
    keys = {"rule", "severity", "file", "line", "location", "message", "fix"}
    assert all(keys <= set(f) for f in payload["findings"])
    good = runner.invoke(app, ["lint", str(_fixture("harbor.unknown-server-key", "pass"))])
    assert good.exit_code == 0, good.stdout
    strict = runner.invoke(app, ["lint", "--strict", str(_fixture("claude.comment", "fail"))])
    assert strict.exit_code == 1


def test_cli_lint_lists_rules() -> None:
    out = CliRunner().invoke(app, ["lint", "--rules"])
    assert out.exit_code == 0 and all(rule in out.stdout for rule in RULES)


def test_harbor_version_option_overrides_the_task(lint_env: dict[str, str]) -> None:
    path = _fixture("harbor.headers-version", "pass")
    assert "harbor.headers-version" in {f.rule for f in lint_file(path, env=lint_env, harbor_version="0.24").findings}


def test_codex_findings_carry_lines_under_dotted_table_headers(tmp_path: Path) -> None:
    """Regression (codex findings without a line): Codex configs write one `[mcp_servers.<name>]`
    header per server, which the locator did not see as the `mcp_servers` table."""
    p = tmp_path / "config.toml"
    p.write_text(
        'model = "gpt-5"\n\n[mcp_servers.ctx]\ncommand = "npx"\nargs = ["--api-key", "ctx7sk-abcdef0123456789"]\n\n'
        '[mcp_servers."my docs"]\nurl = "https://docs.example.com/mcp"\nbogus = 1\n'
    )
    found = {(f.rule, f.line) for f in lint_file(p, kind="codex", env={}).findings}
    assert found == {("secret.inline", 5), ("codex.unknown-server-key", 9)}


def test_cli_lint_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    """Regression (missing file exited 1 like a finding): unreadable input is exit code 2."""
    out = CliRunner().invoke(app, ["lint", str(tmp_path / "nope.json")])
    assert out.exit_code == 2 and "no such file" in out.stderr


def test_codex_variables_named_without_dollar_braces_are_checked_for_being_set(tmp_path: Path) -> None:
    """Regression (unset Codex variables not reported): Codex names variables in `env_vars`,
    `env_http_headers` and `bearer_token_env_var`; an unset one is `env.unset` like a `${VAR}`."""
    p = tmp_path / "config.toml"
    p.write_text(
        '[mcp_servers.docs]\nurl = "https://docs.example.com/mcp"\nbearer_token_env_var = "DOCS_TOKEN"\n'
        'env_http_headers = { "X-Org" = "DOCS_ORG" }\n\n[mcp_servers.files]\ncommand = "srv"\nenv_vars = ["HOME_DIR", "SET_ONE"]\n'
    )
    found = {(f.line, f.message.split("names ")[1].split(",")[0]) for f in lint_file(p, env={"SET_ONE": "1"}).findings if f.rule == "env.unset"}
    assert found == {(3, "DOCS_TOKEN"), (4, "DOCS_ORG"), (8, "HOME_DIR")}
