"""Reference solution: one call to checkrein's monitor tool, then a report citing its signals."""

from __future__ import annotations

import json
import os

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

# The sidecar's address inside the task; overridable so the solution can be run against a gateway
# started elsewhere (tests/configs/test_harbor_example.py does).
URL = os.environ.get("CHECKREIN_URL", "http://checkrein:8765/mcp")
REPORT = os.environ.get("REPORT_PATH", "/app/report.md")


async def main() -> None:
    headers = {"Authorization": f"Bearer {os.environ['CHECKREIN_TOKEN']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode="legacy") as client:
            result = await client.call_tool("monitor__get_incident_snapshot", {"incident_id": 42, "view": "signals"})
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        raise SystemExit(f"the lookup was refused: {text}")
    data = result.structured_content or json.loads(text)
    lines = [f"# Incident {data['incident_id']}: {data['service']} is {data['status']}", "", "Evidence:"]
    for s in data["signals"]:
        lines.append(f"- {s['name']} = {s['value']} {s['unit']}: {s['detail']}")
    lines += ["", "Diagnosis: the proxy routes to checkout:8081 while checkout listens on 8080, so requests fail with 502.",
              "No change was made: the monitor is read-only and the task is a diagnosis."]
    with open(REPORT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


anyio.run(main)
