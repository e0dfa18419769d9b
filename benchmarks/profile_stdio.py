"""Where one stdio tools/call spends the gateway's CPU: cProfile (CPU clock) inside ``checkrein serve``.

    .venv/bin/python benchmarks/profile_stdio.py [--calls 1500] [--concurrency 1] [--audit] [--fast-path off] [--out FILE]

Starts ``checkrein serve`` (stdio, one echo upstream, the overhead benchmark's config) under a
profiler that starts after the warm-up calls (SIGUSR2) and is written out after the measured ones
(SIGUSR1), so imports and start-up are not in it. Prints the serve process's CPU per call read
from /proc (inflated by the profiler itself: read the shares, not the totals) and the top
functions by cumulative time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).parent))
import overhead

WRAPPER = """
import cProfile, signal, sys, runpy, time
out = sys.argv.pop(1)
state = {"pr": cProfile.Profile(time.process_time)}
def dump(*_):
    state["pr"].disable(); state["pr"].dump_stats(out)
def reset(*_):
    state["pr"].disable(); state["pr"] = cProfile.Profile(time.process_time); state["pr"].enable()
signal.signal(signal.SIGUSR1, dump)
signal.signal(signal.SIGUSR2, reset)
sys.argv = ["checkrein", *sys.argv[1:]]
runpy.run_module("checkrein", run_name="__main__")
"""


async def main(args: argparse.Namespace) -> None:
    directory = Path(tempfile.mkdtemp(prefix="checkrein-profile-"))
    config = overhead.gateway_config(directory, {"command": overhead.ECHO[0], "args": overhead.ECHO[1:]}, audit=args.audit)
    out = args.out or str(directory / "serve.prof")
    env = dict(os.environ)
    env.pop("CHECKREIN_FAST_PATH", None)
    if args.fast_path:
        env["CHECKREIN_FAST_PATH"] = args.fast_path
    argv = [sys.executable, "-c", WRAPPER, out, "serve", "--config", str(config)]
    find = overhead.child_pid(argv)
    text = overhead._payload(args.payload, args.payload_bytes)
    async with stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env)) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for _ in range(200):
            await s.call_tool("echo__echo", {"text": text()})
        pid = find()
        assert pid is not None, "the serve process was not found"
        os.kill(pid, signal.SIGUSR2)
        await anyio.sleep(0.5)
        cpu0, start = overhead.cpu_seconds(pid), time.perf_counter()
        limit = anyio.Semaphore(args.concurrency)

        async def one() -> None:
            async with limit:
                result = await s.call_tool("echo__echo", {"text": text()})
                assert not result.is_error, result

        async with anyio.create_task_group() as tg:
            for _ in range(args.calls):
                tg.start_soon(one)
        wall, cpu = time.perf_counter() - start, overhead.cpu_seconds(pid) - cpu0
        os.kill(pid, signal.SIGUSR1)
        await anyio.sleep(3)
    print(f"{args.calls} calls: {wall / args.calls * 1e6:.0f} us wall/call, serve CPU {cpu / args.calls * 1e6:.0f} us/call (profiled)")
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}; profile: {out}")
    stats = pstats.Stats(out)
    print(f"profiled CPU in the event loop: {getattr(stats, 'total_tt', 0.0):.2f} s")
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--audit", action="store_true", help="with an audit dir")
    parser.add_argument("--fast-path", help="CHECKREIN_FAST_PATH for the gateway (off: the SDK path)")
    parser.add_argument("--out", help="where to write the profile (default: a temp dir)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight (1: sequential)")
    parser.add_argument("--payload", choices=["hello", "code", "prose", "json"], default="hello", help="the echo call's text (see overhead.py)")
    parser.add_argument("--payload-bytes", type=int, default=4096)
    anyio.run(main, parser.parse_args())
