"""Fleet throughput: 1, 2 and 4 replicas behind nginx against one Streamable HTTP upstream, and
what Redis (shared sessions) and Postgres shipping add per call. One run, one machine.

    .venv/bin/python benchmarks/fleet.py [--calls 300] [--clients 8] [--replicas 1,2,4]

Targets, each a fresh `checkrein.testing.fleet.Fleet` (plain processes on loopback):

    direct                the upstream alone, no gateway (the floor)
    1 replica (local)     one replica, no [state], no [audit.postgres]: the single-process baseline
    1 replica +redis      sessions and session flow state in Redis (per tools/call: a PEXPIRE per
                          HTTP request, the flow state's read, its compare-and-set and its latest key)
    1 replica +postgres   the audit also shipped to Postgres
    N replicas            every replica with Redis and Postgres, N = --replicas

``--clients`` concurrent MCP sessions (raw JSON-RPC over Streamable HTTP, SSE answers) each make
``--calls`` tools/call requests of ``echo``; the load generator runs in this process. Prints
calls/s and p50/p99 latency per target and each one's ratio to the single-process baseline.
Everything shares the machine's cores with the load generator, so more replicas can only help
as far as cores are free: the numbers say what this machine does, not what a fleet can.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from checkrein.testing.fleet import Fleet

TOKEN = "fleet-token"
POLICY = '[policy]\nallow = ["echo__*"]\n'
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _result(body: str) -> dict[str, object]:
    for line in body.splitlines():
        if line.startswith("data:"):
            msg = json.loads(line[5:])
            if "id" in msg:
                return msg  # type: ignore[no-any-return]
    msg = json.loads(body)
    return msg  # type: ignore[no-any-return]


async def session(http: httpx2.AsyncClient, url: str, token: str | None) -> dict[str, str]:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    r = await http.post(url, json=init, headers={**HEADERS, **auth})
    r.raise_for_status()
    headers = {**HEADERS, **auth, "mcp-session-id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    (await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)).raise_for_status()
    return headers


async def load(url: str, tool: str, token: str | None, clients: int, calls: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    limits = httpx2.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx2.AsyncClient(timeout=60, trust_env=False, limits=limits) as http:
        sessions = [await session(http, url, token) for _ in range(clients)]
        for h in sessions:  # warm up every session (and every replica's adoption of it)
            for _ in range(4):
                await call(http, url, h, tool, 0)

        async def worker(h: dict[str, str]) -> None:
            for i in range(calls):
                t = time.perf_counter()
                await call(http, url, h, tool, i)
                latencies.append(time.perf_counter() - t)

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for h in sessions:
                tg.start_soon(worker, h)
        elapsed = time.perf_counter() - t0
    return elapsed, latencies


async def call(http: httpx2.AsyncClient, url: str, headers: dict[str, str], tool: str, i: int) -> None:
    req = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": tool, "arguments": {"text": f"x{i}"}}}
    r = await http.post(url, json=req, headers=headers)
    r.raise_for_status()
    msg = _result(r.text)
    if "error" in msg or (isinstance(msg.get("result"), dict) and msg["result"].get("isError")):  # type: ignore[union-attr]
        raise RuntimeError(f"call failed: {msg}")


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1)] * 1000


def run_target(name: str, root: Path, args: argparse.Namespace, **fleet_kw: object) -> dict[str, object]:
    with Fleet.start(root / name.replace(" ", "_"), extra=POLICY, **fleet_kw) as fleet:  # type: ignore[arg-type]
        if name == "direct":
            url, tool, token = f"http://127.0.0.1:{fleet.upstream_port}/mcp", "echo", None
        else:
            url, tool, token = fleet.url, "echo__echo", TOKEN
        elapsed, lat = anyio.run(load, url, tool, token, args.clients, args.calls)
    n = len(lat)
    row = {"target": name, "calls": n, "calls_per_s": n / elapsed, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
           "mean_ms": statistics.fmean(lat) * 1000}
    print(f"  {name:<22} {row['calls_per_s']:>8.0f} calls/s  p50 {row['p50_ms']:>7.2f} ms  p99 {row['p99_ms']:>7.2f} ms", flush=True)
    return row


async def micro_redis(url: str, n: int) -> dict[str, float]:
    """One budget check-and-charge (Lua), one session touch (PEXPIRE), and a session flow state's
    read and compare-and-set update (a state holding ~4 KB of result text), one at a time."""
    from checkrein.gate.flow_shared import SharedFlowStore, encode_flow_state
    from checkrein.policy.flow import FlowState
    from checkrein.state import LimitCheck
    from checkrein.state.redis import RedisState

    state = RedisState(url, prefix="bench:", timeout_s=5)
    checks = [LimitCheck(bucket_key="b:tool", rate_per_s=1e9, capacity=1e9, session_key="b:s", max_calls=10**9,
                         identity_key="b:i", identity_max=10**9)]
    await state.put("session:x", {"owner": "x"}, 600)
    flows = SharedFlowStore(state)
    key = ("bench", "session:x")
    seeded = FlowState().distrust("web (call 1)", [f"result line {i} with some words in it" for i in range(100)], 524_288)
    await flows.update(key, time.time(), lambda _: seeded.with_private("db (call 2)"))

    def bump(s: FlowState) -> FlowState:
        return FlowState(s.untrusted_from, s.private_from, s.untrusted, s.trusted, s.tasks, s.calls + 1)

    out: dict[str, float] = {"flow_state_bytes": float(len(json.dumps(encode_flow_state(seeded))))}
    for name, op in (("admit", lambda: state.admit(checks)), ("touch", lambda: state.touch("session:x", 600)),
                     ("flow_get", lambda: flows.get(key, time.time())),
                     ("flow_update", lambda: flows.update(key, time.time(), bump))):
        for _ in range(200):
            await op()
        lat = []
        for _ in range(n):
            t = time.perf_counter()
            await op()
            lat.append(time.perf_counter() - t)
        out[f"redis_{name}_p50_us"] = pct(lat, 50) * 1000
        out[f"redis_{name}_p99_us"] = pct(lat, 99) * 1000
    await state.aclose()
    return out


def micro_postgres(dsn: str, root: Path, n: int) -> dict[str, float]:
    """CPU of this process per audit event, writing n events with and without shipping them."""
    from checkrein.audit import CallRecord, open_audit_trail
    from checkrein.config import AuditSettings
    from checkrein.config.fleet import PostgresAuditSettings

    rec = CallRecord("tool", "t" * 32, "s" * 16, None, "sess", {"user": "bench", "roles": [], "source": "stdio", "client": None},
                     None, "echo", "echo", "echo__echo", "sha256:00", {"text": "x" * 40},
                     {"effect": "allow", "rule_id": "r", "reasons": [], "risk": "low", "approval": None}, "ok", None, 1.0,
                     {"content": [{"type": "text", "text": "x" * 40}]})
    import psycopg  # noqa: F401 - imported once up front: its import is not a per-event cost

    out: dict[str, float] = {}
    table = f"bench_{int(time.time())}"
    variants = [("warmup", PostgresAuditSettings(dsn=dsn, table=table)), ("local", None),
                ("shipped", PostgresAuditSettings(dsn=dsn, table=table))]
    for label, pg in variants:
        d = root / f"micro-{label}"
        settings = AuditSettings(dir=str(d), postgres=pg, checkpoint_every=1000)

        async def run(settings: AuditSettings = settings, d: Path = d) -> None:
            trail = open_audit_trail(settings, d.parent)
            for _ in range(n):
                await trail.record_call(rec)
            await trail.aclose()

        t = time.process_time()
        anyio.run(run)
        if label != "warmup":
            out[f"audit_cpu_us_per_event_{label}"] = (time.process_time() - t) / n * 1e6
    out["postgres_cpu_us_per_event"] = out["audit_cpu_us_per_event_shipped"] - out["audit_cpu_us_per_event_local"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300, help="calls per client")
    ap.add_argument("--clients", type=int, default=8, help="concurrent sessions")
    ap.add_argument("--replicas", default="1,2,4", help="fleet sizes with Redis and Postgres")
    ap.add_argument("--micro", type=int, default=3000, help="operations for the per-call Redis/Postgres costs (0: skip)")
    ap.add_argument("--micro-only", action="store_true", help="only the per-call costs")
    args = ap.parse_args()
    sizes = [int(x) for x in args.replicas.split(",") if x]
    if args.micro:
        from checkrein.testing.services import PostgresServer, RedisServer

        with tempfile.TemporaryDirectory(prefix="checkrein-fleet-micro-") as tmp:
            with RedisServer.start(Path(tmp) / "redis") as redis:
                costs = anyio.run(micro_redis, redis.url, args.micro)
            with PostgresServer.start() as pg:
                costs.update(micro_postgres(pg.dsn, Path(tmp), args.micro))
        print("per-call costs (one at a time, loopback):")
        for k, v in costs.items():
            print(f"  {k:<36} {v:>9.1f}")
        print(json.dumps(costs), flush=True)
        if args.micro_only:
            return
    print(f"fleet benchmark: {args.clients} clients x {args.calls} calls of echo, nginx round robin, one upstream")
    rows = []
    with tempfile.TemporaryDirectory(prefix="checkrein-fleet-bench-") as tmp:
        root = Path(tmp)
        rows.append(run_target("direct", root, args, replicas=1, redis=False, postgres=False))
        rows.append(run_target("1 replica (local)", root, args, replicas=1, redis=False, postgres=False))
        rows.append(run_target("1 replica +redis", root, args, replicas=1, redis=True, postgres=False))
        rows.append(run_target("1 replica +postgres", root, args, replicas=1, redis=False, postgres=True))
        for n in sizes:
            rows.append(run_target(f"{n} replicas +both", root, args, replicas=n, redis=True, postgres=True))
    base = next(r for r in rows if r["target"] == "1 replica (local)")
    print("\nratios to the single-process baseline (calls/s; p50):")
    for r in rows:
        print(f"  {r['target']:<22} x{float(r['calls_per_s']) / float(base['calls_per_s']):.2f} calls/s   "  # type: ignore[arg-type]
              f"x{float(r['p50_ms']) / float(base['p50_ms']):.2f} p50")  # type: ignore[arg-type]
    per_call = {
        "redis_us_per_call": (1 / float(next(r for r in rows if r["target"] == "1 replica +redis")["calls_per_s"])  # type: ignore[arg-type]
                              - 1 / float(base["calls_per_s"])) * 1e6,  # type: ignore[arg-type]
        "postgres_us_per_call": (1 / float(next(r for r in rows if r["target"] == "1 replica +postgres")["calls_per_s"])  # type: ignore[arg-type]
                                 - 1 / float(base["calls_per_s"])) * 1e6,  # type: ignore[arg-type]
    }
    print(f"\nadded per call at saturation (1/throughput difference): Redis {per_call['redis_us_per_call']:.0f} us, "
          f"Postgres shipping {per_call['postgres_us_per_call']:.0f} us")
    print(json.dumps({"rows": rows, **per_call}))


if __name__ == "__main__":
    main()
