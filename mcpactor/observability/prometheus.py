"""The Prometheus side: the ``/metrics`` endpoint of the built-in HTTP server.

Request counts and durations by method come from the sessions' observers (one
histogram: its ``_count`` is the request count); the rest is read when Prometheus
scrapes, so it costs nothing between scrapes: live sessions, handler slots in use,
queued requests, Trio's living tasks, the trace writer's lag, and any gauge another
part of the application registers (:func:`mcpactor.observability.register_gauge`, e.g.
running MCP tasks). Uses ``prometheus-client`` (the ``mcpactor[prometheus]`` extra) with
a registry of its own, never the process-global one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from mcpactor.extras import require
from mcpactor.observability import semconv

if TYPE_CHECKING:
    from mcpactor.transports.asgi import Send

require("prometheus_client", "the /metrics endpoint")

import prometheus_client as pc  # noqa: E402
from prometheus_client.core import GaugeMetricFamily  # noqa: E402

CONTENT_TYPE = pc.CONTENT_TYPE_LATEST

#: Gauges read at scrape time: name -> (help, function returning the value).
Gauges = dict[str, tuple[str, Callable[[], float]]]


class PromMetrics:
    """The metrics one process exposes (a registry of its own)."""

    def __init__(self, gauges: Gauges) -> None:
        self.registry = pc.CollectorRegistry(auto_describe=True)
        self.operations = pc.Histogram(
            "mcp_server_operation_duration_seconds",
            semconv.METRIC_DESCRIPTIONS[semconv.SERVER_OPERATION_DURATION],
            ["mcp_method_name", "error_type"], buckets=semconv.DURATION_BUCKETS,
            registry=self.registry)
        self.sessions = pc.Histogram(
            "mcp_server_session_duration_seconds",
            semconv.METRIC_DESCRIPTIONS[semconv.SERVER_SESSION_DURATION],
            ["error_type"], buckets=semconv.DURATION_BUCKETS, registry=self.registry)
        self.registry.register(_ScrapeTime(gauges))

    def operation(self, method: str, error_type: str | None, seconds: float) -> None:
        """A request or notification the server finished."""
        self.operations.labels(method, error_type or "").observe(seconds)

    def session(self, error_type: str | None, seconds: float) -> None:
        """A server session that ended."""
        self.sessions.labels(error_type or "").observe(seconds)

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        return bytes(pc.generate_latest(self.registry))


class _ScrapeTime:
    """Values read when Prometheus scrapes (never on the request path)."""

    def __init__(self, gauges: Gauges) -> None:
        self.gauges = gauges

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from mcpactor.session.session import live_sessions

        sessions = [s for s in live_sessions() if s.connection.role.value == "server"]
        yield _gauge("mcpactor_sessions_live", "MCP server sessions whose actor tree runs",
                     len(sessions))
        yield _gauge("mcpactor_handler_slots_in_use",
                     "Handler slots taken by running requests, over all live sessions",
                     sum(s.slots_in_use for s in sessions))
        yield _gauge("mcpactor_requests_queued",
                     "Requests waiting for a handler slot, over all live sessions",
                     sum(s.queued_requests for s in sessions))
        try:
            import trio

            living = trio.lowlevel.current_statistics().tasks_living
        except RuntimeError:
            living = 0
        yield _gauge("mcpactor_trio_tasks_living", "Trio tasks alive in the serving run", living)
        recorders = {id(s.tracer): s.tracer for s in sessions
                     if getattr(s.tracer, "lag", None) is not None}
        if recorders:
            lag = [r.lag() for r in recorders.values()]  # type: ignore[union-attr]
            yield _gauge("mcpactor_trace_buffered_records",
                         "Trace records not yet handed to the trace writer",
                         sum(x["buffered_records"] for x in lag))
            yield _gauge("mcpactor_trace_writer_lag_seconds",
                         "Seconds since the trace buffer was last handed to the writer",
                         max(x["seconds_since_handoff"] for x in lag))
            yield _gauge("mcpactor_trace_writer_backlog_bytes",
                         "Bytes the trace writer has not taken yet",
                         sum(x["backlog_bytes"] for x in lag))
            yield _gauge("mcpactor_trace_records_lost",
                         "Trace records dropped because the writer fell behind",
                         sum(x["lost"] for x in lag))
        for name, (help_text, fn) in list(self.gauges.items()):
            try:
                value = float(fn())
            except Exception:
                continue  # a broken hook must not break the scrape
            yield _gauge(name, help_text, value)


def _gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, value=value)


async def serve_metrics(metrics: PromMetrics, method: str, send: Send) -> None:
    """Answer one request for the metrics path: GET (or HEAD) gives the exposition."""
    from mcpactor.transports import asgi
    from mcpactor.transports.http_rules import HttpError

    if method not in ("GET", "HEAD"):
        await asgi.send_error(send, HttpError(405, "Method Not Allowed: GET the metrics"),
                              [(b"allow", b"GET")])
        return
    body = metrics.exposition()
    await asgi.send_response(send, 200, body if method == "GET" else b"",
                             content_type=CONTENT_TYPE.encode())
