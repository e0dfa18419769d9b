"""`checkrein demo`: the bundled servers behind the gateway, the whole scenario suite, a report."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from checkrein.errors import ConfigError

_REAL_MODEL_KEYS = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")


def demo(
    out: Path = typer.Option(Path("reports"), "--out", help="Reports go to OUT/<timestamp>/."),
    scenario: list[str] = typer.Option([], "--scenario", "-s", help="Run only these scenarios (repeatable)."),
    workers: int = typer.Option(2, "--workers", min=1, max=8, help="Scenarios run in parallel."),
    real_model: str = typer.Option(
        "auto", "--real-model",
        help="Also run the suite with a real model: auto (when DEEPSEEK_API_KEY or OPENAI_API_KEY is set), "
        "off, or a model name.",
    ),
) -> None:
    """Run every scenario through the gateway with the scripted model (and a real model when a key
    is present), verify each audit log, and write report.md / report.html / charts.

    Exit codes: 0 every scripted scenario passed, 1 at least one failed, 2 usage error.
    """
    from checkrein.evaluation.matrix import template_matrix
    from checkrein.evaluation.report import write_report
    from checkrein.evaluation.scenario import ScenarioResult, load_suite
    from checkrein.evaluation.suite import run_suite

    console = Console(stderr=False)
    try:
        scenarios = load_suite(names=scenario or None)
    except ConfigError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    root = out / stamp
    work = root / "work"
    models = ["scripted"]
    if real_model != "off":
        if real_model != "auto":
            models.append(real_model)
        elif any(os.environ.get(k) for k in _REAL_MODEL_KEYS) or Path(".env").exists():
            models.append("default")
    started = time.monotonic()
    runs: dict[str, list[ScenarioResult]] = {}
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console,
    ) as progress:
        for model in models:
            task = progress.add_task(f"{model}: scenarios", total=len(scenarios))

            def done(r: ScenarioResult, task: TaskID = task) -> None:
                mark = "[green]PASS[/green]" if r.passed else "[red]FAIL[/red]"
                progress.console.print(f"  {mark} {r.name} ({r.duration_s:.1f}s)")
                progress.advance(task)

            runs[model] = run_suite(scenarios, work, model, workers=workers, on_done=done)
    matrix, matrix_note = template_matrix(work / "scripted")
    notes = [
        f"{len(scenarios)} scenarios, each in its own process with fresh servers; total wall time "
        f"{time.monotonic() - started:.1f}s.",
        "Each scenario's gateway audit log was checked with `checkrein audit verify --key` (its signing "
        "key, made by serve beside the scenario's config); per-scenario logs, "
        "traces and configs are under work/.",
    ]
    if matrix_note:
        notes.append(matrix_note)
    if len(models) == 1:
        notes.append("No model API key was found, so only the offline scripted model ran.")
    report = write_report(root, runs, matrix, notes=notes)
    for model, results in runs.items():
        table = Table(title=f"checkrein demo: model {model}")
        for col in ("result", "scenario", "calls", "audit", "time"):
            table.add_column(col)
        for r in results:
            calls = ", ".join(f"{s.tool.split('__')[-1]}:{s.effect}/{s.outcome}" for s in r.steps) or "-"
            table.add_row(
                "[green]PASS[/green]" if r.passed else "[red]FAIL[/red]", r.name, calls,
                "verified" if r.audit_verified else "[red]NOT verified[/red]", f"{r.duration_s:.1f}s",
            )
        console.print(table)
        for r in results:
            for f in r.failures:
                console.print(f"  [red]{r.name}[/red]: {f}")
    console.print(f"Report: {report} (and report.html, charts) in {root}")
    failed = [r for r in runs["scripted"] if not r.passed]
    raise typer.Exit(1 if failed else 0)


def register(app: typer.Typer) -> None:
    """Add `demo` to ``app``."""
    app.command("demo")(demo)
