"""A minimal OTLP/HTTP receiver (protobuf, ``/v1/traces`` and ``/v1/metrics``) on
127.0.0.1, in a thread: what an OpenTelemetry collector's OTLP/HTTP receiver takes,
decoded with the ``opentelemetry-proto`` messages, kept for the test to look at."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


class Span:
    """One received span, flattened."""

    def __init__(self, service: str, raw: Any) -> None:
        self.service = service
        self.name: str = raw.name
        self.trace_id = raw.trace_id.hex()
        self.span_id = raw.span_id.hex()
        self.parent_id = raw.parent_span_id.hex() or None
        self.kind = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT"}.get(raw.kind, str(raw.kind))
        self.attributes = {kv.key: _value(kv.value) for kv in raw.attributes}
        self.status = raw.status.code  # 0 unset, 1 ok, 2 error
        self.events = [(e.name, {kv.key: _value(kv.value) for kv in e.attributes})
                       for e in raw.events]
        self.links = [(link.trace_id.hex(), link.span_id.hex()) for link in raw.links]

    def __repr__(self) -> str:
        return f"Span({self.service}: {self.kind} {self.name!r} {self.span_id}<-{self.parent_id})"


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    return getattr(v, which) if which else None


class OtlpReceiver:
    """Start with :meth:`start`; ``endpoint`` is what ``OTEL_EXPORTER_OTLP_ENDPOINT``
    takes; :attr:`spans` and :attr:`metrics` fill as exports arrive."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.metrics: dict[str, list[Any]] = {}
        self.requests: list[tuple[str, str]] = []  # (path, content type)
        self._lock = threading.RLock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                kind = self.headers.get("content-type", "")
                receiver._take(self.path, kind, body)
                if self.path == "/v1/traces":
                    out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                else:
                    out = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _take(self, path: str, content_type: str, body: bytes) -> None:
        with self._lock:
            self.requests.append((path, content_type))
            if path == "/v1/traces":
                req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                for rs in req.resource_spans:
                    service = next((_value(kv.value) for kv in rs.resource.attributes
                                    if kv.key == "service.name"), "")
                    for ss in rs.scope_spans:
                        self.spans.extend(Span(service, s) for s in ss.spans)
            elif path == "/v1/metrics":
                req = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
                for rm in req.resource_metrics:
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            self.metrics.setdefault(m.name, []).append(m)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, predicate: Any, timeout: float = 15.0) -> None:
        """Wait until ``predicate(self)`` holds (exports are asynchronous)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self):
                    return
            time.sleep(0.05)
        raise AssertionError(f"the receiver never got what was expected: {self.spans!r}")

    def named(self, name: str, kind: str | None = None) -> list[Span]:
        """Received spans called ``name`` (of kind ``kind``)."""
        with self._lock:
            return [s for s in self.spans if s.name == name and (kind is None or s.kind == kind)]
