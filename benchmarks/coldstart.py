"""Cold start: `checkrein --version`, and the first `tools/list` answered after `serve` starts.

    .venv/bin/python benchmarks/coldstart.py [--rounds 7] [--servers 5] [--baseline OTHER/bin/checkrein]

Rows, alternating in every round so machine load hits them alike:

``python -c pass``      the interpreter's own start (the floor for `--version`)
``checkrein --version`` the console script
``import mcp``          the MCP SDK's own import, which `serve` cannot avoid (the floor for `serve`)
``direct``              the client starting one ready upstream itself and listing its tools
``serve``               `checkrein serve` over stdio with ``--servers`` ready upstreams: time from
                        spawning the gateway to its answer to ``tools/list`` (after ``initialize``)
``serve, SDK servers``  the same with the bundled echo server (MCP SDK) as every upstream, whose
                        own imports now compete with the gateway's for the CPUs

A "ready" upstream is a stdlib-only MCP server (below) that answers at once, so the `serve` row
measures the gateway's start, not its servers'. Prints the median and the ratios to the floors.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READY_SERVER = r'''
import json, sys
TOOLS = [{"name": f"tool_{i}", "description": "a ready tool", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}} for i in range(4)]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "ready", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method in ("ping", "resources/list", "resources/templates/list", "prompts/list"):
        result = {"ping": {}, "resources/list": {"resources": []}, "prompts/list": {"prompts": []},
                  "resources/templates/list": {"resourceTemplates": []}}[method]
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''

ECHO_TOOLS = 9
"""Tools `checkrein.testing.echo_server` lists by default (update it when the echo server gains one)."""

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _toml(value: object) -> str:
    return json.dumps(value)


def write_config(directory: Path, servers: int, sdk: bool) -> Path:
    """A gateway config with ``servers`` stdio upstreams (ready servers, or the SDK echo server)."""
    script = directory / "ready_server.py"
    script.write_text(READY_SERVER)
    lock = directory / ("sdk.lock" if sdk else "ready.lock")
    lines = ["[gateway]", f"lock_file = {_toml(str(lock))}", ""]
    for i in range(servers):
        args = ["-m", "checkrein.testing.echo_server"] if sdk else [str(script)]
        lines += ["[[servers]]", f'name = "s{i}"', f"command = {_toml(sys.executable)}", f"args = {_toml(args)}",
                  "timeout_s = 60.0", ""]
    lines += ["[policy]", 'allow = ["s*"]']
    path = directory / ("sdk.toml" if sdk else "ready.toml")
    path.write_text("\n".join(lines))
    return path


def first_listing(argv: list[str], want_tools: int) -> float:
    """Seconds from spawning ``argv`` to its answer to ``tools/list`` (after ``initialize``)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write((json.dumps(INIT) + "\n").encode())
        proc.stdin.flush()
        while json.loads(proc.stdout.readline()).get("id") != 1:
            pass
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(LIST) + "\n").encode())
        proc.stdin.flush()
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == 2:
                break
        elapsed = time.perf_counter() - start
        got = len(answer["result"]["tools"])
        if got != want_tools:
            raise SystemExit(f"{argv[:3]}: listed {got} tools, expected {want_tools}")
        return elapsed
    except ValueError:
        proc.kill()
        raise SystemExit(f"{argv[:3]} answered no JSON; stderr: {proc.stderr.read().decode(errors='replace')[-2000:]}") from None
    finally:
        proc.stdin.close()
        proc.stderr.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--servers", type=int, default=5)
    parser.add_argument("--no-sdk", action="store_true", help="skip the row with SDK echo servers")
    parser.add_argument("--baseline", metavar="CHECKREIN", help="another build's `checkrein` (e.g. main's "
                        "venv) measured in the same rounds: `--version` and `serve` with ready servers")
    args = parser.parse_args()
    checkrein = str(Path(sys.executable).with_name("checkrein"))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        ready = write_config(directory, args.servers, sdk=False)
        sdk = write_config(directory, args.servers, sdk=True)
        rows: dict[str, tuple[object, ...]] = {
            "python -c pass": (run_once, [sys.executable, "-c", "pass"]),
            "checkrein --version": (run_once, [checkrein, "--version"]),
            "python -c 'import mcp'": (run_once, [sys.executable, "-c", "import mcp"]),
            "direct (one ready server)": (first_listing, [sys.executable, str(directory / "ready_server.py")], 4),
            f"serve, {args.servers} ready servers": (first_listing, [checkrein, "serve", "-c", str(ready)], 4 * args.servers),
        }
        if args.baseline:
            rows["baseline --version"] = (run_once, [args.baseline, "--version"])
            rows[f"baseline serve, {args.servers} ready"] = (
                first_listing, [args.baseline, "serve", "-c", str(ready)], 4 * args.servers)
        if not args.no_sdk:
            rows[f"serve, {args.servers} SDK servers"] = (first_listing, [checkrein, "serve", "-c", str(sdk)], ECHO_TOOLS * args.servers)
        times: dict[str, list[float]] = {name: [] for name in rows}
        for rnd in range(args.rounds):
            order = list(rows) if rnd % 2 == 0 else list(reversed(rows))
            for name in order:
                fn, *fn_args = rows[name]
                times[name].append(fn(*fn_args))  # type: ignore[operator]
        load = os.getloadavg()
    floor = statistics.median(times["python -c pass"])
    direct = statistics.median(times["direct (one ready server)"])
    print(f"{args.rounds} alternating rounds; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    sdk_floor = statistics.median(times["python -c 'import mcp'"])
    print(f"{'row':32} {'median s':>9} {'min s':>7} {'x python':>9} {'x direct':>9} {'x import mcp':>13}")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:32} {med:9.3f} {min(values):7.3f} {med / floor:9.1f} {med / direct:9.1f} {med / sdk_floor:13.2f}")


if __name__ == "__main__":
    main()
