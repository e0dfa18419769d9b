"""Gateway overhead: the echo tool called directly over stdio vs through checkrein (stdio -> stdio).

    .venv/bin/python benchmarks/overhead.py [--calls 400] [--rounds 5] [--concurrency 16]

Targets: ``direct``; ``checkrein`` (default analyzers on); ``checkrein-noscan`` (argument analyzers
off, to separate their cost); ``checkrein-base`` with ``--baseline-src DIR`` (the same gateway run
from another source tree, e.g. main before a change); ``minimal-proxy``; ``fastmcp-proxy`` when available. Each round runs, in alternating order, every target sequentially (one call at a time) and with
``--concurrency`` calls in flight, so drift in machine load hits all targets alike. Every target is
one long-lived session opened before the first round (no per-call setup is measured). Prints p50 /
p99 latency, calls/s and the ratios to the direct baseline. A minimal low-level SDK proxy (one
``Server`` forwarding to one ``ClientSession``, no checks at all) is the floor to compare with; a
FastMCP proxy is added as the peer baseline when ``fastmcp`` is importable
(``pip install 'checkrein[bench]'``), else skipped with a message.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ECHO = [sys.executable, "-m", "checkrein.testing.echo_server"]

MINIMAL_PROXY = """
import sys, anyio
import mcp.types as types
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

FASTMCP_PROXY = """
import sys
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy  # FastMCP 4.x (FastMCP.as_proxy in 2.x)
proxy = create_proxy(StdioTransport(command=sys.executable, args=["-m", "checkrein.testing.echo_server"]))
proxy.run(show_banner=False)
"""


@dataclass
class Target:
    name: str
    params: StdioServerParameters
    tool: str
    session: ClientSession | None = None
    seq: list[float] = field(default_factory=list)
    conc: list[float] = field(default_factory=list)
    seq_rate: list[float] = field(default_factory=list)
    conc_rate: list[float] = field(default_factory=list)


@asynccontextmanager
async def opened(target: Target) -> AsyncIterator[ClientSession]:
    async with stdio_client(target.params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def one_call(target: Target, out: list[float]) -> None:
    assert target.session is not None
    start = time.perf_counter()
    result = await target.session.call_tool(target.tool, {"text": "hello"})
    out.append((time.perf_counter() - start) * 1000.0)
    if result.is_error:
        block = result.content[0]
        raise SystemExit(f"{target.name}: the call failed: {block.text if isinstance(block, types.TextContent) else block}")


async def sequential(target: Target, calls: int) -> None:
    start = time.perf_counter()
    for _ in range(calls):
        await one_call(target, target.seq)
    target.seq_rate.append(calls / (time.perf_counter() - start))


async def concurrent(target: Target, calls: int, in_flight: int) -> None:
    per_worker = calls // in_flight

    async def worker() -> None:
        for _ in range(per_worker):
            await one_call(target, target.conc)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(in_flight):
            tg.start_soon(worker)
    target.conc_rate.append(per_worker * in_flight / (time.perf_counter() - start))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def gateway_config(directory: Path, *, analyzers: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "checkrein.toml"
    off = "" if analyzers else '\nanalyzers = { paths = "off", urls = "off", shell = "off", sql = "off", secrets = "off" }'
    args = ", ".join(f'"{a}"' for a in ECHO[1:])
    path.write_text(
        f"""[gateway]
name = "bench"

[[servers]]
name = "echo"
command = "{ECHO[0]}"
args = [{args}]

[policy]
allow = ["echo__echo"]{off}

[audit]
enabled = false   # the gateway's own overhead; benchmarks/audit.py measures the audit
""",
        encoding="utf-8",
    )
    return path


async def main(args: argparse.Namespace) -> None:
    env = dict(os.environ)
    directory = Path(tempfile.mkdtemp(prefix="checkrein-bench-"))
    config = gateway_config(directory / "scan")
    config_noscan = gateway_config(directory / "noscan", analyzers=False)
    targets = [
        Target("direct", StdioServerParameters(command=ECHO[0], args=ECHO[1:], env=env), "echo"),
        Target(
            "checkrein",
            StdioServerParameters(command=sys.executable, args=["-m", "checkrein", "serve", "--config", str(config)], env=env),
            "echo__echo",
        ),
        Target(
            "checkrein-noscan",
            StdioServerParameters(
                command=sys.executable, args=["-m", "checkrein", "serve", "--config", str(config_noscan)], env=env
            ),
            "echo__echo",
        ),
    ]
    if args.baseline_src:
        # The same gateway from another source tree (e.g. main before a change), same run.
        base_env = {**env, "PYTHONPATH": os.path.abspath(args.baseline_src)}
        serve = ["-m", "checkrein", "serve", "--config", str(config)]
        targets.append(Target("checkrein-base", StdioServerParameters(command=sys.executable, args=serve, env=base_env), "echo__echo"))
    targets.append(
        Target("minimal-proxy", StdioServerParameters(command=sys.executable, args=["-c", MINIMAL_PROXY], env=env), "echo")
    )
    try:
        import fastmcp  # noqa: F401

        targets.append(Target("fastmcp-proxy", StdioServerParameters(command=sys.executable, args=["-c", FASTMCP_PROXY], env=env), "echo"))
    except ImportError:
        print("fastmcp is not installed: skipping the FastMCP proxy baseline (pip install 'checkrein[bench]')")

    async with AsyncExitStack() as stack:
        for t in targets:
            t.session = await stack.enter_async_context(opened(t))
            for _ in range(args.warmup):
                await one_call(t, [])
        for r in range(args.rounds):
            order = targets if r % 2 == 0 else list(reversed(targets))
            for t in order:
                await sequential(t, args.calls)
            for t in order:
                await concurrent(t, args.calls, args.concurrency)

    base = targets[0]
    print(f"\n{args.rounds} rounds x {args.calls} calls, echo tool, stdio; concurrency {args.concurrency}")
    print(f"{'target':<16} {'seq p50':>8} {'seq p99':>8} {'seq/s':>7} {'conc p50':>9} {'conc p99':>9} {'conc/s':>7}  ratios (p50 seq, calls/s seq, calls/s conc)")
    for t in targets:
        seq50, conc_rate, seq_rate = pct(t.seq, 0.5), statistics.median(t.conc_rate), statistics.median(t.seq_rate)
        ratios = (
            f"{seq50 / pct(base.seq, 0.5):.2f}x  {seq_rate / statistics.median(base.seq_rate):.2f}x  "
            f"{conc_rate / statistics.median(base.conc_rate):.2f}x"
        )
        print(
            f"{t.name:<16} {seq50:8.2f} {pct(t.seq, 0.99):8.2f} {seq_rate:7.0f} {pct(t.conc, 0.5):9.2f} "
            f"{pct(t.conc, 0.99):9.2f} {conc_rate:7.0f}  {ratios}"
        )
    for t in targets[1:]:
        print(f"added p50 (sequential), {t.name}: {pct(t.seq, 0.5) - pct(base.seq, 0.5):+.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=400, help="calls per target per round and mode")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--baseline-src", help="also run checkrein from this source tree's src/ (a before/after comparison)")
    anyio.run(main, parser.parse_args())
