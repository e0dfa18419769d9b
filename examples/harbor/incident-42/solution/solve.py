"""Reference solution: one call to checkrein's monitor tool, then a report citing its signals."""

from __future__ import annotations

import json
import os

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

URL = "http://checkrein:8765/mcp"


async def main() -> None:
    headers = {"Authorization": f"Bearer {os.environ['CHECKREIN_TOKEN']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode="legacy") as client:
            result = await client.call_tool("monitor__get_incident_snapshot", {"incident_id": 42, "view": "signals"})
    data = result.structured_content or json.loads(result.content[0].text)  # type: ignore[union-attr]
    lines = [f"# Incident {data['incident_id']}: {data['service']} is {data['status']}", "", "Evidence:"]
    for s in data["signals"]:
        lines.append(f"- {s['name']} = {s['value']} {s['unit']}: {s['detail']}")
    lines += ["", "Diagnosis: the proxy routes to checkout:8081 while checkout listens on 8080, so requests fail with 502.",
              "No change was made: the monitor is read-only and the task is a diagnosis."]
    with open("/app/report.md", "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


anyio.run(main)
