"""`[telemetry]`, `[state]` and `[audit.postgres]`: validated once, named errors, safe defaults."""

from __future__ import annotations

import pytest

from checkrein.config import parse_config
from checkrein.errors import ConfigError


def test_defaults_keep_one_process() -> None:
    cfg = parse_config("")
    assert cfg.telemetry.otlp_endpoint is None and cfg.state.url is None and cfg.audit.postgres is None
    assert cfg.state.on_unavailable == "deny"


def test_sections_parse() -> None:
    cfg = parse_config(
        '[telemetry]\notlp_endpoint = "http://127.0.0.1:4318/"\n'
        '[state]\nurl = "redis://127.0.0.1:6379/0"\non_unavailable = "local"\n'
        '[audit.postgres]\ndsn = "${PG_DSN}"\n',
        environ={"PG_DSN": "postgresql://pg.internal/audit"},
    )
    assert cfg.telemetry.otlp_endpoint == "http://127.0.0.1:4318"
    assert cfg.state.url == "redis://127.0.0.1:6379/0" and cfg.state.on_unavailable == "local"
    assert cfg.audit.postgres is not None and cfg.audit.postgres.dsn == "postgresql://pg.internal/audit"
    assert cfg.as_written()["audit"]["postgres"]["dsn"] == "${PG_DSN}"  # the ledger and digests keep the reference


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[telemetry]\notlp_endpoint = "127.0.0.1:4318"\n', "telemetry.otlp_endpoint"),
        ('[state]\nurl = "http://127.0.0.1:6379"\n', "state.url"),
        ('[state]\non_unavailable = "allow"\n', "state.on_unavailable"),
        ('[audit.postgres]\ndsn = "postgresql://x"\ntable = "events; drop"\n', "audit.postgres.table"),
        ("[audit.postgres]\n", "audit.postgres.dsn"),
    ],
)
def test_contradictions_are_named(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(text)
    assert exc.value.key == key
