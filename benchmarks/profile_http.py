"""Where one HTTP -> HTTP tools/call spends the gateway's CPU: cProfile (CPU clock) inside ``checkrein serve --transport http``.

    .venv/bin/python benchmarks/profile_http.py [--calls 1000] [--audit] [--fast-path off] [--out FILE]

Starts the echo server over Streamable HTTP and ``checkrein serve --transport http`` in front of
it (the overhead benchmark's config) under a profiler that starts after the warm-up calls
(SIGUSR2) and is written out after the measured ones (SIGUSR1), so imports and start-up are not in
it. Prints the serve process's CPU per call read from /proc (inflated by the profiler itself: read
the shares, not the totals) and the top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))
import overhead
from profile_stdio import WRAPPER


async def main(args: argparse.Namespace) -> None:
    directory = Path(tempfile.mkdtemp(prefix="checkrein-profile-"))
    env = dict(os.environ)
    env.pop("CHECKREIN_FAST_PATH", None)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        echo_port = overhead.free_port()
        echo_url = f"http://127.0.0.1:{echo_port}/mcp"
        overhead.spawn([*overhead.ECHO, "--http", "--port", str(echo_port)], env, procs)
        await overhead.wait_port(echo_port)
        config = overhead.gateway_config(directory, {"transport": "http", "url": echo_url}, audit=args.audit)
        out = args.out or str(directory / "serve.prof")
        if args.fast_path:
            env["CHECKREIN_FAST_PATH"] = args.fast_path
        port = overhead.free_port()
        argv = [sys.executable, "-c", WRAPPER, out, "serve", "--config", str(config), "--transport", "http", "--port", str(port)]
        serve = overhead.spawn(argv, env, procs)
        await overhead.wait_port(port)
        target = overhead.http_target("checkrein", "echo__echo", f"http://127.0.0.1:{port}/mcp", serve)
        async with target.open() as s:
            for _ in range(200):
                await s.call_tool("echo__echo", {"text": "hello"})
            os.kill(serve.pid, signal.SIGUSR2)
            await anyio.sleep(0.5)
            cpu0, start = overhead.cpu_seconds(serve.pid), time.perf_counter()
            for _ in range(args.calls):
                result = await s.call_tool("echo__echo", {"text": "hello"})
                assert not result.is_error, result
            wall, cpu = time.perf_counter() - start, overhead.cpu_seconds(serve.pid) - cpu0
            os.kill(serve.pid, signal.SIGUSR1)
            await anyio.sleep(3)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
    print(f"{args.calls} calls: {wall / args.calls * 1e6:.0f} us wall/call, serve CPU {cpu / args.calls * 1e6:.0f} us/call (profiled)")
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}; profile: {out}")
    stats = pstats.Stats(out)
    stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--audit", action="store_true", help="with an audit dir")
    parser.add_argument("--fast-path", help="CHECKREIN_FAST_PATH for the gateway (off: the SDK path)")
    parser.add_argument("--out", help="where to write the profile (default: a temp dir)")
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--top", type=int, default=60)
    anyio.run(main, parser.parse_args())
