"""Importing client configs: formats detected, secrets moved (never copied), output that loads,
written atomically, and round trips through every client format that keep the servers."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from checkrein.cli.main import app
from checkrein.config import load_config, parse_config
from checkrein.config.importers import (
    ImportedServer,
    detect_kind,
    emit_client_config,
    read_client_config,
    read_client_text,
    render_checkrein_config,
    render_servers,
    write_atomic,
)
from checkrein.config.importers.emit import self_command
from checkrein.config.importers.toml_text import toml_key, toml_str, toml_value
from checkrein.config.lint import RULES, lint_text
from checkrein.errors import ConfigError

CLIENTS = Path(__file__).parent / "fixtures" / "clients"
CLAUDE, CODEX, HARBOR = CLIENTS / "claude.mcp.json", CLIENTS / "codex.config.toml", CLIENTS / "task.toml"
SECRETS = ("ghp_0123456789abcdefghijABCDEFGHIJ", "sk-live-0123456789abcdef0123")


def test_formats_are_detected_from_name_and_content() -> None:
    assert read_client_config(CLAUDE).format == "claude"
    assert read_client_config(CODEX).format == "codex"
    assert read_client_config(HARBOR).format == "harbor"
    assert detect_kind("x/checkrein.toml", '[[servers]]\nname = "a"\ncommand = "b"\n') == "checkrein"
    assert detect_kind("review.toml", '[judge]\njudge = "codex"\n') == "harbor-judge"


def test_claude_import_reads_every_server_despite_comments_and_trailing_commas() -> None:
    result = read_client_config(CLAUDE)
    by_name = {s.name: s for s in result.servers}
    assert set(by_name) == {"files", "github", "Team-Docs", "events"}
    assert by_name["files"].args == ("-y", "@modelcontextprotocol/server-filesystem", "/srv/data")
    assert by_name["events"].transport == "sse"
    assert by_name["Team-Docs"].source_name == "Team Docs"
    assert by_name["Team-Docs"].headers["X-Team"] == "platform"


def test_inline_secrets_become_named_references_and_are_never_copied() -> None:
    result = read_client_config(CLAUDE)
    text = render_checkrein_config(result)
    for secret in SECRETS:
        assert secret not in text
    moved = {(s.server, s.where): s.variable for s in result.secrets}
    assert moved[("github", "env.GITHUB_PERSONAL_ACCESS_TOKEN")] == "GITHUB_PERSONAL_ACCESS_TOKEN"
    assert moved[("Team-Docs", "headers.Authorization")] == "TEAM_DOCS_TOKEN"
    by_name = {s.name: s for s in result.servers}
    assert by_name["Team-Docs"].headers["Authorization"] == "Bearer ${TEAM_DOCS_TOKEN}"
    assert "TEAM_DOCS_TOKEN" in text and "GITHUB_PERSONAL_ACCESS_TOKEN" in text  # named for the operator
    assert by_name["files"].env == {"LOG_LEVEL": "info"}  # not a secret: kept as is


def test_secrets_in_args_and_urls_are_moved_too() -> None:
    text = json.dumps({"mcpServers": {
        "a": {"command": "srv", "args": ["--api-key", "abcdef123456", "--token=xyz987654321"]},
        "b": {"type": "http", "url": "https://user:hunter2hunter2@b.example.com/mcp?api_key=k3yk3yk3y&x=1"},
    }})
    result = read_client_text(text, "claude", source="t.json")
    a, b = result.servers
    assert a.args == ("--api-key", "${A_API_KEY}", "--token=${A_TOKEN}")
    assert b.url is not None and "hunter2" not in b.url and "k3yk3yk3y" not in b.url and "x=1" in b.url
    assert len(result.secrets) == 4


def test_imported_config_is_default_deny_commented_and_loads(tmp_path: Path) -> None:
    for source in (CLAUDE, CODEX, HARBOR):
        result = read_client_config(source)
        out = write_atomic(tmp_path / f"{source.stem}.toml", render_checkrein_config(result))
        cfg = load_config(out, unset="keep")  # the moved secrets' variables are not set here
        assert cfg.policy.default == "deny" and cfg.policy.allow == ()
        assert [s.name for s in cfg.servers] == [s.name for s in result.servers]
        body = out.read_text()
        for s in result.servers:
            assert f'# "{s.name}__*",' in body  # listed for the operator to open up


def test_codex_import_maps_references_timeouts_and_disabled_servers() -> None:
    result = read_client_config(CODEX)
    by_name = {s.name: s for s in result.servers}
    assert by_name["files"].env == {"LOG_LEVEL": "info", "HOME_DIR": "${HOME_DIR}"}
    assert by_name["files"].timeout_s == 45.0
    assert by_name["docs"].headers == {"X-Team": "platform", "X-Org": "${DOCS_ORG}", "Authorization": "Bearer ${DOCS_TOKEN}"}
    assert by_name["off"].enabled is False
    assert any("enabled_tools" in n.message for n in result.notes)


def test_harbor_import_normalizes_http_and_notes_dropped_keys() -> None:
    result = read_client_config(HARBOR)
    tools, local = result.servers
    assert tools.transport == "streamable-http" and tools.headers == {"Authorization": "Bearer ${TOOLS_TOKEN}"}
    assert local.env == {}  # Harbor drops `env`; so does the import, and says so
    assert any("env" in n.message for n in result.notes)


def _servers(fmt: str, text: str) -> list[tuple[object, ...]]:
    return [s.identity() for s in read_client_text(text, fmt, source=f"<{fmt}>").servers]  # type: ignore[arg-type]


@pytest.mark.parametrize("source", [CLAUDE, CODEX])
@pytest.mark.parametrize("via", ["claude", "codex"])
def test_round_trip_through_client_formats_keeps_the_servers(source: Path, via: str) -> None:
    original = [s for s in read_client_config(source).servers if s.enabled and s.transport != "sse" or via == "claude" and s.enabled]
    again = read_client_text(render_servers(via, original), via, source="<again>")  # type: ignore[arg-type]
    assert [s.identity() for s in again.servers] == [s.identity() for s in original]


def test_round_trip_through_harbor_keeps_what_harbor_can_hold() -> None:
    original = [s for s in read_client_config(CLAUDE).servers if not s.env]
    again = read_client_text(render_servers("harbor", original), "harbor", source="<again>")
    assert [s.identity() for s in again.servers] == [s.identity() for s in original]


def test_import_emit_import_gives_the_same_servers(tmp_path: Path) -> None:
    """import -> checkrein.toml; the emitted client entry runs that file; importing the file's
    servers back into a client format and reading it again yields the same servers."""
    result = read_client_config(CLAUDE)
    cfg_path = write_atomic(tmp_path / "checkrein.toml", render_checkrein_config(result))
    cfg = load_config(cfg_path, environ={}, unset="keep")  # unset: every reference stays as written
    from_cfg = [
        ImportedServer(name=s.name, transport=s.transport, command=s.command, args=s.args, env=dict(s.env), url=s.url, headers=dict(s.headers))
        for s in cfg.servers
    ]
    assert [s.identity() for s in from_cfg] == [s.identity() for s in result.servers]
    for fmt in ("claude", "codex", "harbor"):
        snippet = emit_client_config(fmt, config=str(cfg_path))  # type: ignore[arg-type]
        (entry,) = read_client_text(snippet, fmt, source="<emit>").servers  # type: ignore[arg-type]
        # A local client starts this very checkrein; a Harbor task's container has its own.
        program, prefix = ("checkrein", ()) if fmt == "harbor" else self_command()
        assert entry.name == "checkrein" and entry.command == program
        assert entry.args == (*prefix, "serve", "--config", str(cfg_path.resolve()))
    again = read_client_text(render_servers("claude", from_cfg), "claude", source="<again>")
    assert [s.identity() for s in again.servers] == [s.identity() for s in result.servers]


def test_emit_http_uses_a_token_reference_never_a_value(tmp_path: Path) -> None:
    cfg_path = write_atomic(tmp_path / "c.toml", render_checkrein_config(read_client_config(CODEX)))
    url = "http://127.0.0.1:8765/mcp"
    codex = tomllib.loads(emit_client_config("codex", config=str(cfg_path), transport="http", url=url))
    assert codex["mcp_servers"]["checkrein"] == {"url": url, "bearer_token_env_var": "CHECKREIN_TOKEN"}
    claude = json.loads(emit_client_config("claude", config=str(cfg_path), transport="http", url=url))
    assert claude["mcpServers"]["checkrein"]["headers"] == {"Authorization": "Bearer ${CHECKREIN_TOKEN}"}
    harbor = tomllib.loads(emit_client_config("harbor", config=str(cfg_path), transport="http", url=url))
    assert harbor["environment"]["mcp_servers"][0]["transport"] == "streamable-http"
    with pytest.raises(ConfigError, match="--url"):
        emit_client_config("codex", config=str(cfg_path), transport="http")


def test_emit_refuses_a_config_that_does_not_load(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[servers]]\nname = "a"\n')
    with pytest.raises(ConfigError):
        emit_client_config("claude", config=str(bad))


def test_unreadable_client_config_is_a_config_error_with_a_line(tmp_path: Path) -> None:
    broken = tmp_path / ".mcp.json"
    broken.write_text('{\n  "mcpServers": {\n    "a": \n  }\n}\n')
    with pytest.raises(ConfigError) as ei:
        read_client_config(broken)
    assert ei.value.line == 4


def test_every_bad_server_is_reported_with_its_line_and_the_key_it_was_meant_to_be() -> None:
    """Regression: import stopped at the first bad server, and a typo'd `comand` got no hint."""
    claude = '{"mcpServers": {\n  "a": {"comand": "npx"},\n  "ok": {"command": "x", "comand": "y"},\n  "c": {"command": 5}\n}}\n'
    with pytest.raises(ConfigError) as ei:
        read_client_text(claude, "claude", source=".mcp.json")
    got = [(p.line, p.key) for p in ei.value.each()]
    assert got == [(2, "mcpServers.a"), (4, "mcpServers.c")]
    assert "`comand` is not a Claude key (did you mean `command`?)" in ei.value.each()[0].detail
    codex = '[mcp_servers.a]\ncomand = "x"\n[mcp_servers.b]\nurl = 5\n'
    with pytest.raises(ConfigError) as ei:
        read_client_text(codex, "codex", source="config.toml")
    assert [(p.line, p.key) for p in ei.value.each()] == [(1, "mcp_servers.a"), (3, "mcp_servers.b")]
    assert "`url` must be a string" in ei.value.each()[1].detail
    notes = read_client_text('{"mcpServers": {"ok": {"command": "x", "comand": "y"}}}', "claude", source=".mcp.json").notes
    assert [n.message for n in notes] == ["ignored key 'comand' (did you mean `command`?)"]


def test_lint_suggests_the_key_a_typo_meant() -> None:
    """lint's unknown-key findings in Claude and Codex files name the close match and the rename."""
    claude = lint_text('{"mcpServers": {"a": {"comand": "npx"}}}', path=".mcp.json")
    assert [(f.rule, f.fix) for f in claude.findings] == [
        ("claude.server-shape", RULES["claude.server-shape"].fix),
        ("claude.unknown-server-key", "Rename `comand` to `command`."),
    ]
    assert "neither `command` (stdio) nor `url`" in claude.findings[0].message
    codex = lint_text('[mcp_servers.a]\ncommand = "x"\nenv_var = ["A"]\n[mcp_servers.b]\nurl = 5\n', path="config.toml", kind="codex")
    assert ("codex.unknown-server-key", "Rename `env_var` to `env_vars`.") in [(f.rule, f.fix) for f in codex.findings]
    assert any("`url` must be a string" in f.message for f in codex.findings)


def test_write_atomic_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out.toml"
    target.write_text("old\n")
    with pytest.raises(TypeError):
        write_atomic(target, None)  # type: ignore[arg-type]
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.toml"]


def test_cli_import_writes_atomically_and_refuses_to_overwrite(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "checkrein.toml"
    first = runner.invoke(app, ["import", str(CLAUDE), "--out", str(out)])
    assert first.exit_code == 0, first.stderr
    assert "moved inline secret" in first.stderr and SECRETS[0] not in out.read_text()
    load_config(out, unset="keep")
    second = runner.invoke(app, ["import", str(CLAUDE), "--out", str(out)])
    assert second.exit_code == 2 and "--force" in second.stderr
    emitted = runner.invoke(app, ["emit", "--for", "codex", "--config", str(out)])
    assert emitted.exit_code == 0 and "[mcp_servers.checkrein]" in emitted.stdout


@given(st.text())
def test_toml_strings_hold_any_text(value: str) -> None:
    assert tomllib.loads(f"v = {toml_str(value)}")["v"] == value


@given(st.dictionaries(st.text(min_size=1), st.lists(st.text())))
def test_toml_keys_and_arrays_hold_any_text(value: dict[str, list[str]]) -> None:
    body = "\n".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
    assert tomllib.loads(body) == value


def test_imported_names_fit_checkrein_and_stay_unique() -> None:
    text = json.dumps({"mcpServers": {"a__b": {"command": "x"}, "a_b": {"command": "y"}, "-x": {"command": "z"}}})
    names = [s.name for s in read_client_text(text, "claude", source="t").servers]
    assert names == ["a_b", "a_b-2", "x"]
    parse_config("\n".join(f'[[servers]]\nname = "{n}"\ncommand = "c"\n' for n in names))


_TOKENS = st.sampled_from(["ghp_", "sk-", "glpat-", "xoxb-"]).flatmap(
    lambda prefix: st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=24, max_size=40).map(lambda body: prefix + body)
)


@given(secret=_TOKENS, key=st.sampled_from(["GITHUB_TOKEN", "API_KEY", "SOMETHING"]))
def test_no_token_survives_import_wherever_it_was_written(secret: str, key: str) -> None:
    """Property: a token-shaped value in env, a header, an argument or a URL never reaches the
    checkrein config, and every moved value is named for the operator."""
    source = json.dumps({"mcpServers": {
        "a": {"command": "srv", "args": ["--key", secret, f"--other={secret}x"], "env": {key: secret}},
        "b": {"type": "http", "url": f"https://b.example.com/mcp?k={secret}", "headers": {"X-Thing": secret}},
    }})
    result = read_client_text(source, "claude", source="t.json")
    text = render_checkrein_config(result)
    assert secret not in text
    assert all(s.variable in text for s in result.secrets)


def test_url_written_as_a_reference_is_kept_for_the_gateway_to_expand() -> None:
    """Regression (reference URL broke import): `${VAR:-https://...}` and `${VAR}` URLs are kept as
    written (the gateway resolves them at load, like Claude does) and the rendered config loads."""
    for url, resolved in (("${SENTRY_URL:-https://mcp.sentry.dev/mcp}", "https://mcp.sentry.dev/mcp"), ("${X_URL}", "https://x.example/mcp")):
        text = json.dumps({"mcpServers": {"sentry": {"type": "http", "url": url}}})
        result = read_client_text(text, "claude", source=".mcp.json")
        assert result.servers[0].url == url
        cfg = parse_config(render_checkrein_config(result), environ={"X_URL": "https://x.example/mcp"})
        assert cfg.servers[0].url == resolved and cfg.as_written()["servers"][0]["url"] == url
    with pytest.raises(ConfigError) as ei:
        read_client_text(json.dumps({"mcpServers": {"x": {"type": "http", "url": "ftp://h/x"}}}), "claude", source=".mcp.json")
    assert ei.value.file == ".mcp.json" and ei.value.key == "mcpServers.x"


def test_secrets_moved_onto_a_command_line_are_pointed_out_and_plain_references_are_not() -> None:
    """References in args are expanded by the gateway; only a moved secret on the command line
    (visible to other local users) gets a note."""
    text = json.dumps({"mcpServers": {"files": {"command": "npx", "args": ["-y", "srv", "${HOME}/work", "--api-key", "abcdef123456"]}}})
    result = read_client_text(text, "claude", source="t.json")
    notes = [n.message for n in result.notes if n.server == "files"]
    assert not any(m.startswith("args[2]") for m in notes)
    assert any(m.startswith("args[4] holds ${FILES_API_KEY}") and "read the secret from env" in m for m in notes)


def test_harbor_import_keeps_only_the_last_server_of_a_name() -> None:
    """Regression (duplicate imported twice): Harbor keeps the last `[[environment.mcp_servers]]`
    of a name, so the import does too instead of inventing a renamed second server."""
    text = (
        '[[environment.mcp_servers]]\nname = "gh"\ntransport = "streamable-http"\nurl = "https://a.example.com/mcp"\n\n'
        '[[environment.mcp_servers]]\nname = "gh"\ntransport = "streamable-http"\nurl = "https://b.example.com/mcp"\n'
    )
    result = read_client_text(text, "harbor", source="task.toml")
    assert [(s.name, s.url) for s in result.servers] == [("gh", "https://b.example.com/mcp")]
    assert any("environment.mcp_servers[0]" in n.message for n in result.notes)


def test_emitted_entries_paste_into_real_client_files_and_parse(tmp_path: Path) -> None:
    """The snippet of `emit` appended to an existing Codex config / Harbor task (and replacing a
    Claude file) still parses, and reads back as exactly the one `checkrein` server."""
    cfg_path = write_atomic(tmp_path / "checkrein.toml", render_checkrein_config(read_client_config(CLAUDE)))
    codex = 'model = "gpt-5-codex"\n\n[features]\nweb_search_request = true\n\n'
    harbor = HARBOR.read_text().split("[[environment.mcp_servers]]")[0]
    for transport, url in (("stdio", None), ("http", "http://checkrein:8765/mcp")):
        for fmt, base in (("claude", ""), ("codex", codex), ("harbor", harbor)):
            snippet = emit_client_config(fmt, config=str(cfg_path), transport=transport, url=url)  # type: ignore[arg-type]
            (entry,) = read_client_text(base + snippet, fmt, source=f"<{fmt}>").servers  # type: ignore[arg-type]
            assert entry.name == "checkrein" and entry.transport == ("stdio" if transport == "stdio" else "streamable-http")
    loopback = emit_client_config("harbor", config=str(cfg_path), transport="http", url="http://127.0.0.1:8765/mcp")
    assert "compose sidecar" in loopback


@given(secret=_TOKENS)
def test_secret_written_as_a_reference_default_is_moved_not_copied(secret: str) -> None:
    """Regression (`${VAR:-<token>}` copied verbatim): a default is a value written in the file, so
    a token there is cut from the reference (the variable is kept and named), in every field."""
    source = json.dumps({"mcpServers": {
        "a": {"command": "srv", "args": [f"--token=${{T:-{secret}}}"], "env": {"GITHUB_TOKEN": f"${{GH:-{secret}}}", "MODE": "${MODE:-fast}"}},
        "b": {"type": "http", "url": f"https://b.example.com/mcp?k=${{K:-{secret}}}", "headers": {"Authorization": f"Bearer ${{HT:-{secret}}}"}},
    }})
    result = read_client_text(source, "claude", source="t.json")
    assert secret not in render_checkrein_config(result)
    a, b = result.servers
    assert a.args == ("--token=${T}",) and a.env == {"GITHUB_TOKEN": "${GH}", "MODE": "${MODE:-fast}"}
    assert b.headers == {"Authorization": "Bearer ${HT}"} and b.url == "https://b.example.com/mcp?k=${K}"
    assert {s.variable for s in result.secrets} == {"T", "GH", "K", "HT"}
