"""`benchmarks/audit.py` keeps running (tiny sizes): the performance figures come from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "audit.py"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=90)


def test_benchmark_runs_with_a_single_event_and_writes_its_figures(tmp_path: Path) -> None:
    """Regression: ``--events 1`` used to die with StopIteration (the probe took record 1)."""
    out = tmp_path / "figures.json"
    proc = run("--events", "1", "--rounds", "1", "--durable-events", "1", "--concurrency", "1",
               "--gate-calls", "1", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["events"] == 1 and figures["event_bytes"] > 500
    for key in ("jsonl", "sqlite", "batch", "batch_nosqlite", "durable_eps"):
        assert figures[key] > 0
    assert "trail batch: JSONL + SQLite" in proc.stdout


def test_benchmark_refuses_zero_rounds_with_a_usage_error(tmp_path: Path) -> None:
    """Regression: ``--rounds 0`` used to crash in ``max([])`` after doing the work."""
    proc = run("--rounds", "0", cwd=tmp_path)
    assert proc.returncode == 2 and "--rounds must be at least 1" in proc.stderr


def test_benchmark_compares_with_a_git_ref_in_the_same_run(tmp_path: Path) -> None:
    """``--baseline REF`` prints each trail row for both trees and their ratio."""
    proc = run("--baseline", "HEAD", "--events", "5", "--durable-events", "2", "--concurrency", "2", "--rounds", "1",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if "ratio" in line]
    assert [r.split()[0] for r in rows] == ["batch", "batch_cpu_us", "nosql", "nosql_cpu_us", "durable_1", "durable_2"]
    assert all(float(r.rsplit("ratio", 1)[1]) > 0 for r in rows)


def test_benchmark_names_a_ref_it_cannot_read(tmp_path: Path) -> None:
    proc = run("--baseline", "no-such-ref-here", "--events", "5", "--rounds", "1", cwd=tmp_path)
    assert proc.returncode == 2 and "cannot read no-such-ref-here" in proc.stderr
