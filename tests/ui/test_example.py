"""The README's first look at the web view, on copies of the shipped example files: a scripted
agent run through the example gateway leaves a denial that the view shows with its reason."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from checkrein.audit import EventFilter, query_events
from checkrein.ui import build_ui_app

from .helpers import child_env

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_readme_example_run_leaves_a_denial_the_view_shows(tmp_path: Path) -> None:
    """`checkrein run --config examples/checkrein.toml --script examples/first-denial.toml` audits
    one allowed and one denied call; the view's Denials list and the event page show the reason."""
    for name in ("checkrein.toml", "first-denial.toml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    out = subprocess.run(
        [sys.executable, "-m", "checkrein", "run", "--config", str(tmp_path / "checkrein.toml"),
         "--script", str(tmp_path / "first-denial.toml"), "-q", "say hello", "--json"],
        env=child_env(), capture_output=True, timeout=180, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    calls = json.loads(out.stdout)["tool_calls"]
    assert [c["status"] for c in calls] == ["ok", "denied"]
    audit = tmp_path / "audit"
    denied = query_events(audit, EventFilter(outcome="denied"))
    assert [e["exposed_name"] for e in denied] == ["echo__crash"]
    reason = denied[0]["decision"]["reasons"][0]
    with TestClient(build_ui_app(audit), base_url="http://127.0.0.1:8766") as c:
        page = c.get("/", params={"outcome": "denied"}).text
        assert len(re.findall(r"<tr data-seq=", page)) == 1 and "echo__crash" in page
        detail = c.get(f"/event/{denied[0]['seq']}").text
    assert reason.replace("'", "&#x27;") in detail
