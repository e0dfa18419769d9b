"""`${VAR}` references: resolved once at load, everywhere in the config, never copied out."""

from __future__ import annotations

from typing import Any

import pytest

from checkrein.audit.lifecycle import config_digest
from checkrein.catalog.model import ToolDefinition
from checkrein.config import CREDENTIALS, LAUNCH, parse_config
from checkrein.config.env import resolve_references
from checkrein.config.lint import lint_text
from checkrein.errors import ConfigError
from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide

README_POLICY = """
[[servers]]
name = "files"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/work"]

[policy]
template = "production"
allow = ["files__read_*"]

[policy.tools."files__read_text_file"]
risk = "low"
args = { path = { kind = "path", roots = ["${HOME}/work"] } }
"""


def _read(cfg_text: str, path: str, environ: dict[str, str]) -> str:
    cfg = parse_config(cfg_text, environ=environ)
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    policy = compile_policy(cfg, {"files__read_text_file": ToolDefinition("files", "read_text_file", "Read.", schema)})
    call = ToolCall(Identity("alice", source="stdio"), "s", "t" * 32, "s" * 16, "files__read_text_file", {"path": path})
    return decide(policy, call, SessionState("s"), 0.0).effect


def test_readme_policy_roots_are_expanded(tmp_path: Any) -> None:
    """Regression: `roots = ["${HOME}/work"]` was never expanded, so every legitimate read was
    denied with `outside the allowed roots ['${HOME}/work']`."""
    env = {"HOME": str(tmp_path)}
    cfg = parse_config(README_POLICY, environ=env)
    assert cfg.policy.tools["files__read_text_file"].args["path"].roots == (f"{tmp_path}/work",)
    assert cfg.servers[0].args[-1] == f"{tmp_path}/work"
    assert _read(README_POLICY, f"{tmp_path}/work/notes.txt", env) == "allow"
    assert _read(README_POLICY, f"{tmp_path}/other/notes.txt", env) == "deny"


def test_every_section_is_resolved() -> None:
    text = """
[gateway]
token = "${T}"
lock_file = "${D}/checkrein.lock"
[[servers]]
name = "s"
command = "${D}/bin/server"
args = ["--root", "${D}"]
env = { KEY = "${T}" }
cwd = "${D}"
timeout_s = "${TIMEOUT}"
[[servers]]
name = "w"
transport = "http"
url = "https://${HOST}/mcp"
headers = { Authorization = "Bearer ${T}" }
[approval]
mode = "webhook"
webhook_url = "https://${HOST}/approve"
webhook_headers = { X-Token = "${T}" }
[policy]
allow = ["${SERVER}__*"]
path_roots = ["${D}"]
[policy.urls]
allowed_hosts = ["${HOST}"]
[audit]
dir = "${D}/audit"
"""
    env = {"T": "tok", "D": "/srv", "TIMEOUT": "12.5", "HOST": "api.example.com", "SERVER": "s"}
    cfg = parse_config(text, environ=env)
    s, w = cfg.servers
    assert (cfg.gateway.token, cfg.gateway.lock_file) == ("tok", "/srv/checkrein.lock")
    assert (s.command, s.args, s.env, s.cwd, s.timeout_s) == ("/srv/bin/server", ("--root", "/srv"), {"KEY": "tok"}, "/srv", 12.5)
    assert (w.url, w.headers) == ("https://api.example.com/mcp", {"Authorization": "Bearer tok"})
    assert (cfg.approval.webhook_url, cfg.approval.webhook_headers) == ("https://api.example.com/approve", {"X-Token": "tok"})
    assert (cfg.policy.allow, cfg.policy.path_roots, cfg.policy.urls.allowed_hosts) == (("s__*",), ("/srv",), ("api.example.com",))
    assert cfg.audit.dir == "/srv/audit"


def test_unset_variables_are_all_reported_with_file_line_and_key() -> None:
    text = '[gateway]\nname = "g"\n\n[[servers]]\nname = "s"\ncommand = "${NO_CMD}"\nenv = { K = "${NO_KEY}" }\n\n[policy]\npath_roots = ["${NO_ROOT}/x"]\n'
    with pytest.raises(ConfigError) as ei:
        parse_config(text, source="c.toml", environ={})
    found = [(p.file, p.line, p.key, p.code) for p in ei.value.each()]
    assert found == [
        ("c.toml", 6, "servers[0].command", "config.env_unset"),
        ("c.toml", 7, "servers[0].env.K", "config.env_unset"),
        ("c.toml", 10, "policy.path_roots[0]", "config.env_unset"),
    ]
    assert ei.value.code == "config.env_unset"
    for name in ("NO_CMD", "NO_KEY", "NO_ROOT"):
        assert name in str(ei.value)


@pytest.mark.parametrize(
    "written, environ, resolved",
    [
        ("${A}", {"A": "x"}, "x"),
        ("${A}-${B}", {"A": "x", "B": "y"}, "x-y"),
        ("${A:-dflt}", {}, "dflt"),
        ("${A:-dflt}", {"A": ""}, "dflt"),
        ("${A:-}", {}, ""),
        ("${A}", {"A": ""}, ""),
        ("$${A}", {"A": "x"}, "${A}"),
        ("cost $5 {not a ref}", {}, "cost $5 {not a ref}"),
    ],
)
def test_reference_forms(written: str, environ: dict[str, str], resolved: str) -> None:
    assert resolve_references({"v": written}, environ).data == {"v": resolved}


def test_values_from_the_environment_are_not_resolved_twice() -> None:
    out = resolve_references({"v": "${A}"}, {"A": "${B}", "B": "no"})
    assert out.data == {"v": "${B}"} and out.written == {("v",): "${A}"}


def test_as_written_and_the_audit_digest_keep_references_not_secrets() -> None:
    text = '[gateway]\ntoken = "${GW}"\n[[servers]]\nname = "s"\ncommand = "c"\nenv = { K = "${K}" }\n'
    a = parse_config(text, environ={"GW": "secret-one", "K": "secret-two"})
    b = parse_config(text, environ={"GW": "other-one", "K": "other-two"})
    assert a.gateway.token == "secret-one"
    written = a.as_written()
    assert written["gateway"]["token"] == "${GW}" and written["servers"][0]["env"] == {"K": "${K}"}
    assert "secret-one" not in repr(written) and "secret-two" not in repr(written)
    assert config_digest(a) == config_digest(b)


def test_unused_locations_keep_unset_references_and_refuse_them_to_users() -> None:
    text = '[gateway]\ntoken = "${GW_UNSET}"\n[[servers]]\nname = "s"\ncommand = "c"\n[[servers]]\nname = "off"\nenabled = false\ncommand = "${OFF_UNSET}"\n'
    cfg = parse_config(text, environ={}, unused=CREDENTIALS)
    assert cfg.gateway.token == "${GW_UNSET}"
    cfg.require_resolved(LAUNCH, "starting the servers")  # the disabled server does not count
    with pytest.raises(ConfigError, match="GW_UNSET") as ei:
        cfg.require_resolved(CREDENTIALS, "HTTP authentication")
    assert ei.value.key == "gateway.token"
    with pytest.raises(ConfigError, match="GW_UNSET"):
        parse_config(text, environ={})


def test_lint_resolves_like_the_loader_and_reports_unset_variables() -> None:
    text = '[policy]\ndefault = "deny"\npath_roots = ["${LINT_ROOT}"]\n[audit]\ndir = "a"\n'
    clean = lint_text(text, path="checkrein.toml", env={"LINT_ROOT": "/srv"})
    assert clean.findings == ()
    unset = lint_text(text, path="checkrein.toml", env={})
    assert [(f.rule, f.line) for f in unset.findings] == [("env.unset", 3)]


def test_a_resolved_token_is_not_mistaken_for_an_inline_secret() -> None:
    text = '[gateway]\ntoken = "${GW}"\n[policy]\ndefault = "deny"\n[audit]\ndir = "a"\n'
    result = lint_text(text, path="checkrein.toml", env={"GW": "ghp_" + "a" * 36})
    assert result.findings == ()
