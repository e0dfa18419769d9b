"""The HTTP guard's pure parts: Origin rules, bearer tokens and identities, W3C traceparent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkrein.config import CREDENTIALS, config_from_mapping
from checkrein.errors import ConfigError
from checkrein.frontend import Authenticator, origin_allowed, parse_traceparent


@pytest.mark.parametrize(
    "origin, allowed",
    [
        ("http://localhost:3000", True),
        ("http://127.0.0.1", True),
        ("https://[::1]:8443", True),
        ("https://app.example", True),
        ("https://app.example/", True),
        ("https://evil.example", False),
        ("http://localhost.evil.example", False),
        ("null", False),
        ("file://localhost", False),
    ],
)
def test_origin_rules(origin: str, allowed: bool) -> None:
    assert origin_allowed(origin, ("https://app.example",)) is allowed


def config_with_tokens(tmp_path: Path) -> Authenticator:
    cfg = config_from_mapping(
        {
            "gateway": {"token": "${GW}", "lock_file": str(tmp_path / "l")},
            "identities": [{"name": "ci", "token": "${CI}", "roles": ["bot"]}],
        },
        environ={"GW": "gw-token", "CI": "ci-token"},
    )
    return Authenticator.from_config(cfg)


def test_tokens_map_to_identities(tmp_path: Path) -> None:
    auth = config_with_tokens(tmp_path)
    ci = auth.identify("Bearer ci-token")
    assert ci is not None and (ci.user, ci.roles, ci.source) == ("ci", ("bot",), "token")
    gw = auth.identify("bearer gw-token")
    assert gw is not None and gw.source == "token"
    for bad in (None, "", "Bearer", "Bearer wrong", "Basic gw-token", "gw-token", "Bearer ${GW}", "Bearer ${CI}"):
        assert auth.identify(bad) is None


def test_without_tokens_callers_are_anonymous(tmp_path: Path) -> None:
    cfg = config_from_mapping({"gateway": {"lock_file": str(tmp_path / "l")}}, environ={})
    ident = Authenticator.from_config(cfg).identify(None)
    assert ident is not None and ident.source == "anonymous" and not ident.authenticated


def test_env_checkrein_token_is_used_when_no_token_is_configured(tmp_path: Path) -> None:
    cfg = config_from_mapping({"gateway": {"lock_file": str(tmp_path / "l")}}, environ={"CHECKREIN_TOKEN": "t"})
    auth = Authenticator.from_config(cfg)
    assert auth.required and auth.identify("Bearer t") is not None
    assert cfg.as_written()["gateway"]["token"] == "${CHECKREIN_TOKEN}"


def test_an_unset_token_variable_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="NOPE_UNSET") as ei:
        config_from_mapping({"gateway": {"token": "${NOPE_UNSET}", "lock_file": str(tmp_path / "l")}}, environ={})
    assert ei.value.key == "gateway.token"


@pytest.mark.parametrize(
    "section, environ",
    [
        ({"gateway": {"token": "${GW}"}}, {"GW": ""}),
        ({"gateway": {"token": "${GW}"}}, {"GW": "   "}),
        ({}, {"CHECKREIN_TOKEN": ""}),
        ({"identities": [{"name": "ci", "token": "${CI}"}]}, {"CI": ""}),
    ],
)
def test_an_empty_token_is_an_error_never_authentication_off(section: dict[str, Any], environ: dict[str, str]) -> None:
    """An empty token variable once silently turned HTTP authentication off."""
    with pytest.raises(ConfigError, match="token is empty") as ei:
        config_from_mapping(section, environ=environ)
    assert ei.value.key in ("gateway.token", "identities[0].token")


def test_tokens_a_stdio_loader_let_through_unset_are_refused_to_http(tmp_path: Path) -> None:
    """A config loaded for stdio (tokens unused) cannot be turned into an authenticator."""
    cfg = config_from_mapping(
        {"identities": [{"name": "ci", "token": "${CI_UNSET}"}]}, environ={}, unused=CREDENTIALS
    )
    with pytest.raises(ConfigError, match="CI_UNSET") as ei:
        Authenticator.from_config(cfg)
    assert ei.value.key == "identities[0].token"


def test_two_identities_with_one_token_are_refused() -> None:
    cfg = config_from_mapping(
        {"identities": [{"name": "a", "token": "${A}"}, {"name": "b", "token": "${B}"}]}, environ={"A": "t", "B": "t"}
    )
    with pytest.raises(ConfigError, match="same token"):
        Authenticator.from_config(cfg)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", None),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
        ("garbage", None),
        (None, None),
    ],
)
def test_traceparent(value: str | None, expected: tuple[str, str] | None) -> None:
    assert parse_traceparent(value) == expected
