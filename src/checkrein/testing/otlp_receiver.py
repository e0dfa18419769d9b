"""`OtlpReceiver`: a small OTLP/HTTP collector for tests: decodes what exporters POST.

    with OtlpReceiver() as rx:                 # listens on 127.0.0.1, an ephemeral port
        ... [telemetry] otlp_endpoint = rx.endpoint ...
        spans = rx.wait_for_spans(lambda s: ..., timeout=30)

Accepts ``/v1/traces`` and ``/v1/metrics`` (protobuf, optionally gzip) and answers 200 with an
empty export response. Needs ``checkrein[otel]`` (for the protobuf classes).
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OtlpReceiver", "ReceivedSpan"]


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as hex ids and plain attribute values."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: int
    resource: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    return getattr(v, which) if which else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.metrics: dict[str, list[tuple[dict[str, Any], float]]] = {}
        self.requests = 0
        self._cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    receiver._traces(body)
                    reply = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    receiver._metrics(body)
                    reply = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    def _traces(self, body: bytes) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        got = []
        for rs in req.resource_spans:
            resource = _attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(ReceivedSpan(
                        s.name, s.kind, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                        _attrs(s.attributes), s.status.code, resource,
                    ))
        with self._cond:
            self.requests += 1
            self.spans.extend(got)
            self._cond.notify_all()

    def _metrics(self, body: bytes) -> None:
        req = ExportMetricsServiceRequest()
        req.ParseFromString(body)
        with self._cond:
            self.requests += 1
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        which = m.WhichOneof("data")
                        points = getattr(m, which).data_points if which else []
                        rows = self.metrics.setdefault(m.name, [])
                        for p in points:
                            if which in ("sum", "gauge"):
                                value = p.as_int if p.WhichOneof("value") == "as_int" else p.as_double
                            else:  # histograms: the count of observations
                                value = p.count
                            rows.append((_attrs(p.attributes), float(value)))
            self._cond.notify_all()

    def wait_for(self, check: Callable[[OtlpReceiver], bool], *, timeout: float, what: str = "OTLP data") -> None:
        """Block until ``check(self)`` is true; AssertionError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not check(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what}: not received within {timeout} s ({len(self.spans)} spans so far)")
                self._cond.wait(left)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
