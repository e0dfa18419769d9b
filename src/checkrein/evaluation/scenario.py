"""Scenarios are data: a query, a policy template, scripted calls and what must happen.

One TOML file per scenario in `checkrein/evaluation/scenarios/` (adding a scenario is adding a
file). The suite runner (`evaluation/suite.py`) runs each in its own subprocess with fresh servers.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from checkrein.errors import ConfigError

__all__ = ["Scenario", "ScenarioResult", "ScriptedStep", "StepResult", "load_scenario", "load_suite"]

Effect = Literal["allow", "deny", "ask"]
Outcome = Literal["ok", "denied", "error", "timeout", "not_found"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedStep(_Strict):
    """One tool call the scripted model makes, and what checkrein must do with it."""

    tool: str
    """Exposed name, e.g. `sandbox__read_file`."""
    args: dict[str, Any] = Field(default_factory=dict)
    expect: Effect = "allow"
    outcome: Outcome = "ok"
    rule: str | None = None
    """A substring the decision's rule id must contain."""
    result_contains: tuple[str, ...] = ()
    """Substrings the text the model receives must contain (result or denial reason)."""
    result_excludes: tuple[str, ...] = ()


class Checks(_Strict):
    answer_contains: tuple[str, ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    """Exposed names that must never be forwarded (no `ok`/`error` audit event for them)."""
    secrets_absent: tuple[str, ...] = ()
    """Literal values that must not appear in any byte of the audit dir or the trace."""
    upstream_restarted: bool = False
    quarantined: tuple[str, ...] = ()


class Scenario(_Strict):
    name: str
    title: str
    query: str
    template: Literal["development", "production", "strict"] = "development"
    policy: dict[str, Any] = Field(default_factory=dict)
    """Extra `[policy]` keys merged over the template (e.g. tool risks or per-tool args)."""
    approval: dict[str, Any] = Field(default_factory=dict)
    extra_servers: tuple[str, ...] = ()
    """Names of extra test servers to put behind the gateway (`echo`: checkrein.testing.echo_server)."""
    steps: tuple[ScriptedStep, ...] = ()
    answer: str = ""
    """The scripted model's final answer; `{result[N]}` inserts the text of the N-th tool result."""
    checks: Checks = Checks()


@dataclass
class StepResult:
    tool: str
    expected_effect: str
    expected_outcome: str
    effect: str
    outcome: str
    rule_id: str
    duration_ms: float
    text: str
    ok: bool
    problems: list[str] = field(default_factory=list)


@dataclass
class ScenarioResult:
    name: str
    title: str
    template: str
    model: str
    passed: bool
    steps: list[StepResult]
    answer: str
    failures: list[str]
    duration_s: float
    audit_verified: bool
    audit_events: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScenarioResult:
        steps = [StepResult(**s) for s in data.get("steps", [])]
        return cls(**{**data, "steps": steps})


def load_scenario(path: Path) -> Scenario:
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
        return Scenario.model_validate(data)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed scenario: {exc}", file=str(path)) from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ConfigError(err["msg"], file=str(path), key=key) from exc


def scenario_dir() -> Path:
    return Path(str(resources.files("checkrein.evaluation") / "scenarios"))


def load_suite(directory: Path | None = None, names: list[str] | None = None) -> list[Scenario]:
    """All scenarios in ``directory`` (default: the bundled suite), sorted by file name."""
    d = directory or scenario_dir()
    out = [load_scenario(p) for p in sorted(d.glob("*.toml"))]
    if names:
        wanted = set(names)
        out = [s for s in out if s.name in wanted]
        missing = wanted - {s.name for s in out}
        if missing:
            raise ConfigError(f"no such scenario(s): {sorted(missing)}")
    return out
