"""The official MCP conformance suite, directly against checkrein's fixture server and through checkrein.

    .ci/conformance.sh [options]                      # installs Node 22 + the suite, then runs this
    .venv/bin/python benchmarks/conformance.py --suite-home DIR [options]   # Node 22 already on PATH

In ONE run: start ``checkrein.testing.conformance_server`` on loopback, run
``npx @modelcontextprotocol/conformance@0.1.16 server --url ... -o OUT/direct`` against it, start
``checkrein serve --transport http`` in front of it (one ``streamable-http`` upstream with
``prefix = ""`` so the suite's fixed names reach it unchanged, a permissive policy), run the suite
through checkrein into ``OUT/through``, and print one line per scenario. A scenario passes when none
of its checks is a ``FAILURE`` (warnings and infos do not fail it, as in the suite's own summary).

Options:
    --direct-only        only the fixture server directly (proves the harness and fixtures work)
    --reference DIR      also run the suite against the suite's TypeScript reference server, whose
                         sources are in DIR (``everything-server.ts``; copied and npm-installed under
                         the suite home); local runs only, CI has no such directory
    --analyzers          keep checkrein's argument analyzers at their defaults (the permissive
                         policy turns them off: they judge arguments, not protocol features)
    --suite all|active   the suite's scenario set (default ``all``: 32 scenarios, pending included)
    --out DIR            where results go (default: a new temporary directory, kept)
    --markdown FILE      also write the table as Markdown

Exit status: 0 when every scenario that passes directly also passes through checkrein (and, with
``--reference``, the fixture passes every scenario the reference server passes; with
``--direct-only``, every scenario passes directly); 1 otherwise; 2 when something could not start.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from checkrein.config.policy import ANALYZERS

SUITE = "@modelcontextprotocol/conformance@0.1.16"
UPSTREAM_NAME = "conformance"
SUITE_TIMEOUT_S = 1800.0
START_TIMEOUT_S = 90.0
_DIR_RE = re.compile(r"^server-(?P<name>.+)-(?P<time>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$")


class SetupError(Exception):
    """Something the run needs did not start; exit status 2."""


@dataclass
class Scenario:
    """One scenario's outcome in one target, read from the suite's ``checks.json``."""

    name: str
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def cell(self) -> str:
        if self.ok:
            return f"pass {self.passed}" + (f" ({self.warnings}W)" if self.warnings else "")
        return f"FAIL {self.failed}/{self.passed + self.failed}"


@dataclass
class Target:
    """The suite's results against one server; ``error`` when the server never came up."""

    label: str
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    def passes(self, name: str) -> bool:
        s = self.scenarios.get(name)
        return s is not None and s.ok

    def cell(self, name: str) -> str:
        if self.error is not None:
            return "not run"
        s = self.scenarios.get(name)
        return s.cell() if s is not None else "missing"

    def count(self) -> int:
        return sum(1 for s in self.scenarios.values() if s.ok)


def read_results(out: Path) -> dict[str, Scenario]:
    """Every scenario directory under ``out`` (the suite's ``-o``), by scenario name."""
    results: dict[str, Scenario] = {}
    found = [(m, d) for d in (out.iterdir() if out.is_dir() else []) if (m := _DIR_RE.match(d.name))]
    for m, d in sorted(found, key=lambda md: md[0].group("time")):  # the suite's own order
        if not (d / "checks.json").is_file():
            continue
        scenario = Scenario(m.group("name"))
        for check in json.loads((d / "checks.json").read_text(encoding="utf-8")):
            status = check.get("status")
            if status == "SUCCESS":
                scenario.passed += 1
            elif status == "FAILURE":
                scenario.failed += 1
                scenario.failures.append(f"{check.get('id')}: {check.get('errorMessage', '')}"[:300])
            elif status == "WARNING":
                scenario.warnings += 1
        results[scenario.name] = scenario
    return results


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(ok: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SetupError(f"{what} exited with status {proc.returncode}: {_tail(log)}")
        if ok():
            return
        time.sleep(0.2)
    raise SetupError(f"{what} not ready within {START_TIMEOUT_S:.0f} s: {_tail(log)}")


def _tail(log: Path, lines: int = 8) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no output)"


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def gateway_ready(port: int) -> bool:
    """checkrein's ``/health`` says every configured upstream is connected."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
    try:
        with opener.open(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            body = json.loads(r.read())
    except OSError:
        return False
    return bool(body.get("servers")) and body.get("ready") == body.get("servers")


@contextmanager
def process(
    cmd: list[str], log: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess in its own process group, stopped (group TERM, then KILL) on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_suite(suite_home: Path, url: str, out: Path, suite: str, label: str, log: Path) -> Target:
    """``npx <suite> server --url URL -o OUT``; the suite's own exit status is not the verdict."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = ["npx", "--no-install", SUITE, "server", "--url", url, "--suite", suite, "-o", str(out)]
    started = time.monotonic()
    with process(cmd, log, cwd=suite_home) as proc:
        try:
            proc.wait(timeout=SUITE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Target(label, read_results(out), f"suite did not finish within {SUITE_TIMEOUT_S:.0f} s")
    target = Target(label, read_results(out), seconds=time.monotonic() - started)
    if not target.scenarios:
        target.error = f"the suite wrote no results: {_tail(log)}"
    return target


def gateway_config(upstream_url: str, *, analyzers: bool) -> str:
    """One ``streamable-http`` upstream under its own names, everything allowed, audit on.

    Result inspection stays at its defaults; the argument analyzers are off unless ``analyzers``.
    """
    off = "" if analyzers else "".join(f'{a} = "off"\n' for a in ANALYZERS)
    return (
        '[gateway]\nname = "checkrein-conformance"\n\n'
        f'[[servers]]\nname = "{UPSTREAM_NAME}"\ntransport = "streamable-http"\nurl = "{upstream_url}"\n'
        'prefix = ""\ntimeout_s = 60\n\n'
        '[policy]\ndefault = "allow"\nallow = ["*"]\n\n'
        + (f"[policy.analyzers]\n{off}\n" if off else "")
        + '[audit]\ndir = "audit"\n'
    )


def fixture_server(stack: ExitStack, work: Path) -> str:
    port = free_port()
    log = work / "fixture-server.log"
    cmd = [sys.executable, "-m", "checkrein.testing.conformance_server", "--port", str(port)]
    proc = stack.enter_context(process(cmd, log))
    wait_until(lambda: port_open(port), proc, "the fixture server", log)
    return f"http://127.0.0.1:{port}/mcp"


def reference_server(stack: ExitStack, work: Path, suite_home: Path, sources: Path) -> str:
    """The suite's TypeScript everything-server, copied under the suite home and npm-installed once."""
    home = suite_home / "reference-server"
    home.mkdir(parents=True, exist_ok=True)
    for name in ("everything-server.ts", "package.json", "tsconfig.json"):
        if (sources / name).is_file():
            shutil.copy2(sources / name, home / name)
    if not (home / "node_modules" / ".bin" / "tsx").exists():
        npm_log = work / "reference-npm-install.log"
        with npm_log.open("wb") as out:
            rc = subprocess.call(["npm", "install", "--no-audit", "--no-fund"], cwd=home, stdout=out, stderr=out)
        if rc != 0:
            raise SetupError(f"npm install of the reference server failed: {_tail(npm_log)}")
    port = free_port()
    log = work / "reference-server.log"
    env = {**os.environ, "PORT": str(port)}
    proc = stack.enter_context(process(["npx", "--no-install", "tsx", "everything-server.ts"], log, cwd=home, env=env))
    wait_until(lambda: port_open(port), proc, "the reference server", log)
    return f"http://localhost:{port}/mcp"


def gateway(stack: ExitStack, work: Path, upstream_url: str, *, analyzers: bool) -> str:
    gw = work / "checkrein"
    gw.mkdir(parents=True, exist_ok=True)
    config = gw / "checkrein.toml"
    config.write_text(gateway_config(upstream_url, analyzers=analyzers), encoding="utf-8")
    port = free_port()
    log = work / "checkrein.log"
    cmd = [sys.executable, "-m", "checkrein", "serve", "--config", str(config), "--transport", "http", "--port", str(port)]
    proc = stack.enter_context(process(cmd, log, cwd=gw))
    wait_until(lambda: gateway_ready(port), proc, "checkrein serve", log)
    return f"http://127.0.0.1:{port}/mcp"


def table(targets: list[Target]) -> list[list[str]]:
    names: list[str] = []
    for t in targets:
        names += [n for n in t.scenarios if n not in names]
    rows = [["scenario", *[t.label for t in targets]]]
    rows += [[n, *[t.cell(n) for t in targets]] for n in names]
    rows.append(["scenarios passed", *[("not run" if t.error else f"{t.count()}/{len(names)}") for t in targets]])
    return rows


def render_text(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def render_markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(f"`{r[0]}`" if i < len(rows) - 2 else f"**{r[0]}**", *r[1:]) + " |"
              for i, r in enumerate(rows[1:])]  # fmt: skip
    return "\n".join(lines)


def verdict(direct: Target, through: Target | None, reference: Target | None) -> list[str]:
    """Every reason to exit 1, one line each."""
    problems: list[str] = []
    if direct.error:
        problems.append(f"direct run: {direct.error}")
    if reference is not None and not reference.error:
        problems += [
            f"{n}: passes against the reference server, fails against the fixture server"
            for n in reference.scenarios
            if reference.passes(n) and not direct.passes(n)
        ]
    if through is None:
        problems += [f"{n}: fails directly" for n, s in direct.scenarios.items() if not s.ok]
        return problems
    if through.error:
        lost = sum(1 for n in direct.scenarios if direct.passes(n) and not through.passes(n))
        problems.append(f"through checkrein: {through.error} ({lost} scenario(s) that pass directly did not pass)")
        return problems
    problems += [
        f"{n}: passes directly, fails through checkrein"
        for n in direct.scenarios
        if direct.passes(n) and not through.passes(n)
    ]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/conformance.py", description=__doc__.split("\n")[0])
    parser.add_argument("--suite-home", type=Path, required=True, help="directory where npm installed the suite")
    parser.add_argument("--suite", choices=("all", "active"), default="all")
    parser.add_argument("--direct-only", action="store_true")
    parser.add_argument("--reference", type=Path, help="directory holding the reference everything-server.ts")
    parser.add_argument("--analyzers", action="store_true", help="keep the argument analyzers on")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    out = (args.out or Path(tempfile.mkdtemp(prefix="checkrein-conformance-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    suite_home = args.suite_home.resolve()
    print(f"conformance: {SUITE}, suite {args.suite!r}; results in {out}", flush=True)

    targets: list[Target] = []
    reference = through = None
    try:
        if args.reference is not None:
            with ExitStack() as stack:
                url = reference_server(stack, out, suite_home, args.reference.resolve())
                reference = run_suite(suite_home, url, out / "reference", args.suite, "reference (TS)", out / "suite-reference.log")
            targets.append(reference)
        with ExitStack() as stack:
            url = fixture_server(stack, out)
            direct = run_suite(suite_home, url, out / "direct", args.suite, "fixture direct", out / "suite-direct.log")
            targets.append(direct)
            if not args.direct_only:
                label = "through checkrein" + (" (analyzers on)" if args.analyzers else "")
                try:
                    gw_url = gateway(stack, out, url, analyzers=args.analyzers)
                except SetupError as exc:
                    through = Target(label, error=str(exc))
                else:
                    through = run_suite(suite_home, gw_url, out / "through", args.suite, label, out / "suite-through.log")
                targets.append(through)
    except SetupError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2

    rows = table(targets)
    print(render_text(rows))
    for t in targets:
        print(f"{t.label}: {t.seconds:.1f} s" + (f"; {t.error}" if t.error else ""))
    if through is not None:
        for name, s in sorted(through.scenarios.items()):
            if not s.ok and direct.passes(name):
                print(f"  {name}: " + "; ".join(s.failures[:3]))
    if args.markdown:
        args.markdown.write_text(render_markdown(rows) + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps([asdict(t) for t in targets], indent=2), encoding="utf-8")
    problems = verdict(direct, through, reference)
    for p in problems:
        print(f"conformance: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
