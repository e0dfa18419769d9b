"""`python -m checkrein.evaluation.run_one NAME WORKDIR OUT.json [--model M]`: one scenario in
its own process, so every scenario starts with fresh servers and no shared state."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

import anyio

from .runner import run_scenario
from .scenario import ScenarioResult, load_suite


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m checkrein.evaluation.run_one")
    ap.add_argument("name")
    ap.add_argument("workdir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", default="scripted")
    ap.add_argument("--scenarios", type=Path, default=None)
    args = ap.parse_args(argv)
    scenario = load_suite(args.scenarios, [args.name])[0]
    model = None
    if args.model != "scripted":
        from checkrein.agent.runner import choose_model

        model = choose_model(None if args.model == "default" else args.model)
    try:
        result = anyio.run(
            lambda: run_scenario(scenario, args.workdir, model=model, model_name=args.model)
        )
    except Exception as exc:  # noqa: BLE001 - a crashed scenario is a failed scenario, reported whole
        traceback.print_exc(file=sys.stderr)
        result = ScenarioResult(
            name=scenario.name, title=scenario.title, template=scenario.template, model=args.model,
            passed=False, steps=[], answer="", failures=[f"runner crashed: {type(exc).__name__}: {exc}"],
            duration_s=0.0, audit_verified=False, error=str(exc),
        )
    args.out.write_text(json.dumps(result.as_dict(), ensure_ascii=False), encoding="utf-8")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
