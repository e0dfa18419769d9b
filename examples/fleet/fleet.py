"""Start a checkrein fleet on this machine: Redis, PostgreSQL, one echo upstream, N replicas and
nginx in front, each a plain process on 127.0.0.1. Ctrl-C (or SIGTERM) stops everything.

    .venv/bin/python examples/fleet/fleet.py [--replicas 2] [--dir .fleet] [--otlp http://127.0.0.1:4318]
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from pathlib import Path

from checkrein.testing.fleet import Fleet

POLICY = """
[policy]
allow = ["echo__*"]
deny = ["echo__crash"]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path(".fleet"), help="run directory (configs, audit logs, logs)")
    ap.add_argument("--otlp", default=None, help="OTLP/HTTP collector base URL for traces and metrics")
    ap.add_argument("--port", type=int, default=8780, help="nginx port")
    args = ap.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"starting {args.replicas} replicas, Redis, PostgreSQL and nginx in {args.dir.resolve()} ...", flush=True)
    with Fleet.start(args.dir.resolve(), replicas=args.replicas, otlp_endpoint=args.otlp, extra=POLICY, lb_port=args.port) as fleet:
        print(json.dumps(fleet.describe(), indent=2), flush=True)
        print(f"\nMCP endpoint: {fleet.url}  (Authorization: Bearer {fleet.token})\nCtrl-C stops the fleet.", flush=True)
        stop.wait()
        print("stopping ...", flush=True)


if __name__ == "__main__":
    main()
