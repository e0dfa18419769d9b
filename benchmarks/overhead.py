"""Gateway overhead: the echo tool called directly vs through checkrein, over stdio and over HTTP.

    .venv/bin/python benchmarks/overhead.py [--transport stdio|http|both] [--calls 400] [--rounds 5]
        [--concurrency 16] [--only NAME,...] [--baseline-src DIR] [--json FILE]
        [--payload hello|code|prose|json] [--payload-bytes 4096]

Targets (stdio: the client talks to the target over stdio, the target to the echo server over stdio;
http: both hops are Streamable HTTP on 127.0.0.1):

    direct            the echo server itself
    minimal-proxy     one low-level SDK ``Server`` forwarding to one ``ClientSession``, no checks
                      (the floor any SDK-based proxy pays)
    checkrein         ``checkrein serve``, default argument analyzers on, no audit dir
    checkrein-audit   the same with an audit dir (chained JSONL + SQLite index, batch durability)
    checkrein-sdk     checkrein with its fast path off (``CHECKREIN_FAST_PATH=off``): every message
                      through the SDK's server, as before the fast path
    checkrein-noscan  argument analyzers off (separates their cost)
    checkrein-base    with ``--baseline-src DIR``: the gateway from another source tree (e.g. main
                      before a change), same run
    fastmcp-proxy     the FastMCP 4.x proxy (stdio only), when ``fastmcp`` is installed

Each target is one long-lived session opened before the first round. Each round runs, in
alternating order, every target sequentially (one call at a time) and then with ``--concurrency``
calls in flight, so drift in machine load hits all targets alike. Printed per target: p50/p99
latency and calls/s in both modes, the ratios to ``direct`` of the same run, and the CPU time the
target's own process (the proxy, not its echo server; for ``direct`` the echo server) spent per
call, read from ``/proc`` around each mode's calls.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ECHO = [sys.executable, "-m", "checkrein.testing.echo_server"]
ECHO_HTTP = [
    sys.executable,
    "-c",
    # the direct server keeps uvicorn's plain stack (asyncio loop, h11) whatever is installed, so
    # `direct` stays the same baseline across runs; --echo-stack auto lets uvicorn pick
    "import functools, sys, uvicorn; from checkrein.testing.echo_server import main; "
    "uvicorn.run = functools.partial(uvicorn.run, loop='asyncio', http='h11') if sys.argv[1] == 'plain' else uvicorn.run; "
    "main(sys.argv[2:])",
]
TICKS = os.sysconf("SC_CLK_TCK")

MINIMAL_PROXY = """
import sys, anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

class Session(ClientSession):
    async def validate_tool_result(self, name, result):
        return None

async def main():
    params = StdioServerParameters(command=sys.executable, args=["-m", "checkrein.testing.echo_server"])
    async with stdio_client(params) as (r, w), Session(r, w) as up:
        await up.initialize()
        listed = await up.list_tools()

        async def list_tools(ctx, params):
            return listed

        async def call_tool(ctx, params):
            return await up.call_tool(params.name, params.arguments or {})

        server = Server("minimal-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
        server.middleware = []
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""

MINIMAL_HTTP_PROXY = """
import sys, contextlib, httpx2, uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server

UPSTREAM, PORT = sys.argv[1], int(sys.argv[2])

class Session(ClientSession):
    async def validate_tool_result(self, name, result):
        return None

state = {}

async def list_tools(ctx, params):
    return state["listed"]

async def call_tool(ctx, params):
    return await state["up"].call_tool(params.name, params.arguments or {})

server = Server("minimal-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
server.middleware = []
inner = server.streamable_http_app(host="127.0.0.1")
session_manager_lifespan = inner.router.lifespan_context

@contextlib.asynccontextmanager
async def lifespan(app):
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=60))
        r, w = await stack.enter_async_context(streamable_http_client(UPSTREAM, http_client=http))
        up = await stack.enter_async_context(Session(r, w))
        await up.initialize()
        state["up"], state["listed"] = up, await up.list_tools()
        async with session_manager_lifespan(app):
            yield

inner.router.lifespan_context = lifespan
uvicorn.run(inner, host="127.0.0.1", port=PORT, log_level="warning")
"""

FASTMCP_PROXY = """
import sys
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy  # FastMCP 4.x (FastMCP.as_proxy in 2.x)
proxy = create_proxy(StdioTransport(command=sys.executable, args=["-m", "checkrein.testing.echo_server"]))
proxy.run(show_banner=False)
"""


@dataclass
class Mode:
    latencies: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    calls: int = 0


@dataclass
class Target:
    name: str
    tool: str
    open: Callable[[], Any]
    """An async context manager yielding a ready `ClientSession`."""
    cpu_pid: Callable[[], int | None]
    session: ClientSession | None = None
    seq: Mode = field(default_factory=Mode)
    conc: Mode = field(default_factory=Mode)


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU of ``pid`` itself (not its children), from /proc."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def child_pid(argv: list[str]) -> Callable[[], int | None]:
    """Finds our child process running exactly ``argv`` (the SDK's stdio client does not say)."""
    me, found = os.getpid(), None
    wanted = "\0".join(argv)

    def lookup() -> int | None:
        nonlocal found
        if found is not None:
            return found
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (entry / "cmdline").read_bytes().decode(errors="replace").rstrip("\0")
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me and cmd == wanted:
                found = int(entry.name)
                return found
        return None

    return lookup


def stdio_target(name: str, tool: str, argv: list[str], env: dict[str, str]) -> Target:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)

    @asynccontextmanager
    async def open_() -> AsyncIterator[ClientSession]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session

    return Target(name, tool, open_, child_pid(argv))


def http_target(name: str, tool: str, url: str, proc: subprocess.Popen[bytes]) -> Target:
    @asynccontextmanager
    async def open_() -> AsyncIterator[ClientSession]:
        async with httpx2.AsyncClient(timeout=60, trust_env=False) as http:
            async with streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session

    return Target(name, tool, open_, lambda: proc.pid)


def _payload(kind: str, size: int) -> Callable[[], str]:
    """The echo call's ``text``: ``hello``, or ``size`` characters of benign code, prose or a JSON
    listing (what file reads and searches return), ending in a counter so that no two calls carry
    the same text (no verdict cache or remembered audit document helps)."""
    if kind == "hello":
        return lambda: "hello"
    if kind == "code":
        unit = "def handler_{i}(request: Request) -> Response:\n    value = request.args.get('key_{i}', default=None)\n    return Response(status=200, body=value)\n"
    elif kind == "prose":
        unit = "The quarterly report for region {i} shows that revenue grew, with the strongest gains in the north. "
    else:
        unit = '{{"name": "file-{i}.txt", "size": {i}7, "modified": "2026-11-30T10:00:00Z", "owner": "alice"}}, '
    body = "".join(unit.format(i=i) for i in range(size // 40 + 1))[:size]
    count = iter(range(1 << 62))
    return lambda: f"{body} #{next(count)}"


PAYLOAD: Callable[[], str] = _payload("hello", 0)


async def one_call(target: Target, out: list[float]) -> None:
    assert target.session is not None
    start = time.perf_counter()
    result = await target.session.call_tool(target.tool, {"text": PAYLOAD()})
    out.append((time.perf_counter() - start) * 1000.0)
    if result.is_error:
        block = result.content[0]
        raise SystemExit(f"{target.name}: the call failed: {block.text if isinstance(block, types.TextContent) else block}")


async def measure(target: Target, mode: Mode, calls: int, in_flight: int) -> None:
    per_worker = calls // in_flight

    async def worker() -> None:
        for _ in range(per_worker):
            await one_call(target, mode.latencies)

    pid = target.cpu_pid()
    cpu0, start = cpu_seconds(pid), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(in_flight):
            tg.start_soon(worker)
    mode.rates.append(per_worker * in_flight / (time.perf_counter() - start))
    mode.cpu_s += cpu_seconds(pid) - cpu0
    mode.calls += per_worker * in_flight


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gateway_config(directory: Path, upstream: dict[str, Any], *, analyzers: bool = True, audit: bool = False) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "checkrein.toml"
    server = "\n".join(f"{k} = {json.dumps(v)}" for k, v in upstream.items())
    off = '\nanalyzers = { paths = "off", urls = "off", shell = "off", sql = "off", secrets = "off" }'
    # Audit is on by default: without an audit dir, turn it off (the gateway's own overhead).
    audit_section = f'\n[audit]\ndir = "{directory / "audit"}"\n' if audit else "\n[audit]\nenabled = false\n"
    path.write_text(
        f'[gateway]\nname = "bench"\n\n[[servers]]\nname = "echo"\n{server}\n\n'
        f'[policy]\nallow = ["echo__echo"]{"" if analyzers else off}\n{audit_section}',
        encoding="utf-8",
    )
    return path


GATEWAYS: list[tuple[str, dict[str, Any], dict[str, str]]] = [
    ("checkrein", {}, {}),
    ("checkrein-audit", {"audit": True}, {}),
    ("checkrein-sdk", {}, {"CHECKREIN_FAST_PATH": "off"}),
    ("checkrein-noscan", {"analyzers": False}, {}),
    # the stdlib event loop and uvicorn's h11 parser (the gateway's stack before uvloop/httptools)
    ("checkrein-stdloop", {}, {"CHECKREIN_EVENT_LOOP": "asyncio", "CHECKREIN_HTTP_PARSER": "h11"}),
    ("checkrein-audit-stdloop", {"audit": True}, {"CHECKREIN_EVENT_LOOP": "asyncio", "CHECKREIN_HTTP_PARSER": "h11"}),
]


def stdio_targets(directory: Path, env: dict[str, str], args: argparse.Namespace) -> list[Target]:
    upstream = {"command": ECHO[0], "args": ECHO[1:]}
    targets = [stdio_target("direct", "echo", ECHO, env)]
    targets.append(stdio_target("minimal-proxy", "echo", [sys.executable, "-c", MINIMAL_PROXY], env))
    for name, options, extra in GATEWAYS:
        config = gateway_config(directory / "stdio" / name, upstream, **options)
        targets.append(stdio_target(name, "echo__echo", [sys.executable, "-m", "checkrein", "serve", "--config", str(config)], {**env, **extra}))
    if args.baseline_src:
        config = gateway_config(directory / "stdio" / "base", upstream, audit=args.baseline_audit)
        base_env = {**env, "PYTHONPATH": os.path.abspath(args.baseline_src)}
        argv = [sys.executable, "-m", "checkrein", "serve", "--config", str(config)]
        targets.append(stdio_target("checkrein-base", "echo__echo", argv, base_env))
    try:
        import fastmcp  # noqa: F401

        targets.append(stdio_target("fastmcp-proxy", "echo", [sys.executable, "-c", FASTMCP_PROXY], env))
    except ImportError:
        print("fastmcp is not installed: skipping the FastMCP proxy baseline (pip install 'checkrein[bench]')")
    return targets


def spawn(argv: list[str], env: dict[str, str], procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    procs.append(proc)
    return proc


async def wait_port(port: int, deadline_s: float = 120.0) -> None:
    """Until something accepts on ``port`` (the servers here bind once they are ready to serve)."""
    with anyio.fail_after(deadline_s):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.2)
                continue
            await stream.aclose()
            return


async def http_targets(
    directory: Path, env: dict[str, str], args: argparse.Namespace, procs: list[subprocess.Popen[bytes]]
) -> list[Target]:
    echo_port = free_port()
    echo_url = f"http://127.0.0.1:{echo_port}/mcp"
    echo = spawn([*ECHO_HTTP, args.echo_stack, "--http", "--port", str(echo_port)], env, procs)
    await wait_port(echo_port)
    targets = [http_target("direct", "echo", echo_url, echo)]
    ports = []
    port = free_port()
    minimal = spawn([sys.executable, "-c", MINIMAL_HTTP_PROXY, echo_url, str(port)], env, procs)
    targets.append(http_target("minimal-proxy", "echo", f"http://127.0.0.1:{port}/mcp", minimal))
    ports.append(port)
    upstream = {"transport": "http", "url": echo_url}
    gateways = list(GATEWAYS)
    if args.baseline_src:
        gateways.append(("checkrein-base", {"audit": args.baseline_audit}, {"PYTHONPATH": os.path.abspath(args.baseline_src)}))
    for name, options, extra in gateways:
        config = gateway_config(directory / "http" / name, upstream, **options)
        port = free_port()
        argv = [sys.executable, "-m", "checkrein", "serve", "--config", str(config), "--transport", "http", "--port", str(port)]
        proc = spawn(argv, {**env, **extra}, procs)
        targets.append(http_target(name, "echo__echo", f"http://127.0.0.1:{port}/mcp", proc))
        ports.append(port)
    for port in ports:
        await wait_port(port)
    return targets


def report(transport: str, targets: list[Target], args: argparse.Namespace) -> list[dict[str, Any]]:
    base = targets[0]
    rows: list[dict[str, Any]] = []
    payload = "hello" if args.payload == "hello" else f"{args.payload_bytes} B of {args.payload}"
    print(f"\n{transport}: {args.rounds} rounds x {args.calls} calls, echo tool ({payload}); concurrency {args.concurrency}")
    print(
        f"{'target':<16} {'seq p50':>8} {'seq p99':>8} {'seq/s':>7} {'CPU us':>7} {'conc p50':>9} {'conc p99':>9} "
        f"{'conc/s':>7} {'CPU us':>7}  vs direct: p50 seq, calls/s seq, calls/s conc"
    )
    for t in targets:
        seq_rate, conc_rate = statistics.median(t.seq.rates), statistics.median(t.conc.rates)
        seq_cpu = t.seq.cpu_s / max(1, t.seq.calls) * 1e6
        conc_cpu = t.conc.cpu_s / max(1, t.conc.calls) * 1e6
        row: dict[str, Any] = {
            "transport": transport,
            "target": t.name,
            "seq_p50_ms": pct(t.seq.latencies, 0.5),
            "seq_p99_ms": pct(t.seq.latencies, 0.99),
            "seq_calls_s": seq_rate,
            "seq_cpu_us": seq_cpu,
            "conc_p50_ms": pct(t.conc.latencies, 0.5),
            "conc_p99_ms": pct(t.conc.latencies, 0.99),
            "conc_calls_s": conc_rate,
            "conc_cpu_us": conc_cpu,
            "added_p50_ms": pct(t.seq.latencies, 0.5) - pct(base.seq.latencies, 0.5),
            "seq_ratio": seq_rate / statistics.median(base.seq.rates),
            "conc_ratio": conc_rate / statistics.median(base.conc.rates),
        }
        rows.append(row)
        print(
            f"{t.name:<16} {row['seq_p50_ms']:8.2f} {row['seq_p99_ms']:8.2f} {seq_rate:7.0f} {seq_cpu:7.0f} "
            f"{row['conc_p50_ms']:9.2f} {row['conc_p99_ms']:9.2f} {conc_rate:7.0f} {conc_cpu:7.0f}  "
            f"{row['seq_p50_ms'] / pct(base.seq.latencies, 0.5):.2f}x  {row['seq_ratio']:.2f}x  {row['conc_ratio']:.2f}x"
        )
    for row in rows[1:]:
        print(f"added p50 (sequential), {row['target']}: {row['added_p50_ms']:+.2f} ms")
    before = next((r for r in rows if r["target"] == "checkrein-base"), None)
    if before is not None:
        for row in rows:
            if row["target"] in ("checkrein", "checkrein-audit"):
                print(
                    f"{row['target']} / checkrein-base: CPU per call {row['seq_cpu_us'] / before['seq_cpu_us']:.2f}x seq, "
                    f"{row['conc_cpu_us'] / before['conc_cpu_us']:.2f}x conc; p50 {row['seq_p50_ms'] / before['seq_p50_ms']:.2f}x seq, "
                    f"{row['conc_p50_ms'] / before['conc_p50_ms']:.2f}x conc; calls/s {row['seq_calls_s'] / before['seq_calls_s']:.2f}x seq, "
                    f"{row['conc_calls_s'] / before['conc_calls_s']:.2f}x conc"
                )
    return rows


async def run(transport: str, targets: list[Target], args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.only:
        wanted = {"direct", *args.only.split(",")}
        targets = [t for t in targets if t.name in wanted]
    load_before = os.getloadavg()[0]
    async with AsyncExitStack() as stack:
        for t in targets:
            t.session = await stack.enter_async_context(t.open())
            with anyio.fail_after(120):
                for _ in range(args.warmup):
                    await one_call(t, [])
        for r in range(args.rounds):
            order = targets if r % 2 == 0 else list(reversed(targets))
            for t in order:
                await measure(t, t.seq, args.calls, 1)
            for t in order:
                await measure(t, t.conc, args.calls, args.concurrency)
    rows = report(transport, targets, args)
    load = (load_before, os.getloadavg()[0])
    print(f"load average (1 min) on {os.cpu_count()} CPUs: {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    for row in rows:
        row["load_avg_1m"] = list(load)
    return rows


async def main(args: argparse.Namespace) -> None:
    env = dict(os.environ)
    directory = Path(tempfile.mkdtemp(prefix="checkrein-bench-"))
    rows: list[dict[str, Any]] = []
    procs: list[subprocess.Popen[bytes]] = []
    try:
        if args.transport in ("stdio", "both"):
            rows += await run("stdio", stdio_targets(directory, env, args), args)
        if args.transport in ("http", "both"):
            rows += await run("http", await http_targets(directory, env, args, procs), args)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    parser.add_argument("--calls", type=int, default=400, help="calls per target per round and mode")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--only", help="comma-separated targets to run besides direct")
    parser.add_argument("--baseline-src", help="also run checkrein from this source tree's src/ (a before/after comparison)")
    parser.add_argument("--baseline-audit", action="store_true",
                        help="run checkrein-base with an audit dir (compare it with checkrein-audit)")
    parser.add_argument("--echo-stack", choices=["plain", "auto"], default="plain",
                        help="the HTTP echo server's uvicorn loop and parser: asyncio+h11, or uvicorn's pick")
    parser.add_argument("--payload", choices=["hello", "code", "prose", "json"], default="hello",
                        help="the echo call's text: `hello`, or --payload-bytes of code, prose or a JSON listing")
    parser.add_argument("--payload-bytes", type=int, default=4096)
    parser.add_argument("--json", help="write the rows as JSON to this file")
    parsed = parser.parse_args()
    PAYLOAD = _payload(parsed.payload, parsed.payload_bytes)
    anyio.run(main, parsed)
