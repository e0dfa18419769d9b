"""Config validation: one object, errors that name the file, line and key."""

from __future__ import annotations

import pytest

from checkrein.config import parse_config
from checkrein.errors import ConfigError


def test_minimal_config_has_secure_defaults() -> None:
    cfg = parse_config("", source="c.toml")
    assert cfg.policy.default is None  # resolved to deny by the engine
    assert cfg.gateway.separator == "__"
    assert cfg.audit.on_failure == "deny"


def test_unknown_key_names_file_line_and_key() -> None:
    text = '[[servers]]\nname = "a"\ncommand = "x"\n\n[[servers]]\nname = "b"\ncommand = "y"\ncomand = "z"\n'
    with pytest.raises(ConfigError) as ei:
        parse_config(text, source="c.toml")
    assert ei.value.file == "c.toml"
    assert ei.value.line == 8
    assert ei.value.key == "servers[1].comand"


def test_http_alias_and_transport_fields() -> None:
    cfg = parse_config('[[servers]]\nname = "w"\ntransport = "http"\nurl = "http://127.0.0.1:1/mcp"\n')
    assert cfg.servers[0].transport == "streamable-http"
    with pytest.raises(ConfigError, match="makes no sense"):
        parse_config('[[servers]]\nname = "w"\ntransport = "sse"\nurl = "http://h/sse"\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="needs `command`"):
        parse_config('[[servers]]\nname = "w"\n')


def test_duplicate_names_and_separator_in_name() -> None:
    with pytest.raises(ConfigError, match="duplicate server name"):
        parse_config('[[servers]]\nname="a"\ncommand="x"\n[[servers]]\nname="a"\ncommand="y"\n')
    with pytest.raises(ConfigError, match="separator"):
        parse_config('[[servers]]\nname="a__b"\ncommand="x"\n')


def test_malformed_toml_reports_line() -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config('[gateway]\nname = "x\n', source="bad.toml")
    assert ei.value.line == 2
    assert "bad.toml:2" in str(ei.value)


def test_contradictions_are_rejected() -> None:
    with pytest.raises(ConfigError, match="both allowed and denied"):
        parse_config('[policy]\nallow = ["a__b"]\ndeny = ["a__b"]\n')
    with pytest.raises(ConfigError, match="unknown analyzer"):
        parse_config('[policy.analyzers]\nmagic = "deny"\n')


def test_identity_tokens_must_be_env_references() -> None:
    with pytest.raises(ConfigError, match="ENV_VAR"):
        parse_config('[[identities]]\nname = "alice"\ntoken = "hunter2"\n', environ={})
    cfg = parse_config('[[identities]]\nname = "alice"\ntoken = "${ALICE_TOKEN}"\n', environ={"ALICE_TOKEN": "t"})
    assert cfg.identities[0].token == "t"
    with pytest.raises(ConfigError, match="ALICE_TOKEN"):
        parse_config('[[identities]]\nname = "alice"\ntoken = "${ALICE_TOKEN}"\n', environ={})
