"""Run the scenario suite (one subprocess per scenario, two at a time) and build the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .scenario import Scenario, ScenarioResult

__all__ = ["run_suite"]

SCENARIO_TIMEOUT_S = 120.0


def _run_one(scenario: Scenario, root: Path, model: str) -> ScenarioResult:
    workdir = root / model.replace("/", "_") / scenario.name
    out = workdir.parent / f"{scenario.name}.result.json"
    workdir.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log = workdir.parent / f"{scenario.name}.runner.log"
    with log.open("wb") as err:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "checkrein.evaluation.run_one", scenario.name, str(workdir), str(out),
                 "--model", model],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, timeout=SCENARIO_TIMEOUT_S,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, check=False,
            )
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    if out.exists():
        return ScenarioResult.from_dict(json.loads(out.read_text(encoding="utf-8")))
    why = "timed out" if code is None else f"exited with {code} without a result"
    return ScenarioResult(
        name=scenario.name, title=scenario.title, template=scenario.template, model=model, passed=False,
        steps=[], answer="", failures=[f"scenario process {why}; see {log}"],
        duration_s=round(time.monotonic() - started, 2), audit_verified=False,
    )


def run_suite(
    scenarios: Sequence[Scenario],
    root: Path,
    model: str = "scripted",
    *,
    workers: int = 2,
    on_done: Callable[[ScenarioResult], None] | None = None,
) -> list[ScenarioResult]:
    """Run every scenario in its own process under ``root``; results in suite order."""
    results: dict[str, ScenarioResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(_run_one, s, root, model): s for s in scenarios}
        for fut in as_completed(futures):
            r = fut.result()
            results[r.name] = r
            if on_done is not None:
                on_done(r)
    return [results[s.name] for s in scenarios]
