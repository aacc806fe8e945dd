"""The OpenTelemetry SDK's in-memory exporters, wired to mcpactor's instrumentation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpactor import observability

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
# The global provider (set once per process): user code's spans (trace.get_tracer) and
# mcpactor's go to the same exporter, as in an application configured by the SDK.
trace.set_tracer_provider(_PROVIDER)


class Collected:
    """What the providers got: finished spans and metric points."""

    def __init__(self) -> None:
        _EXPORTER.clear()
        self.exporter = _EXPORTER
        self.tracer_provider = _PROVIDER
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        """Every finished span, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        """The finished spans called ``name``."""
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str, kind: str) -> ReadableSpan:
        """The one finished span called ``name`` of kind ``kind`` (SERVER, CLIENT)."""
        found = [s for s in self.named(name) if s.kind.name == kind]
        assert len(found) == 1, (name, kind, [(s.name, s.kind.name) for s in self.spans()])
        return found[0]

    def histograms(self) -> dict[str, list[Any]]:
        """Metric name -> its data points."""
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


@contextmanager
def collecting() -> Iterator[Collected]:
    """Instrument mcpactor to fresh in-memory providers for the block."""
    collected = Collected()
    observability.instrument(meter_provider=collected.meter_provider)
    try:
        yield collected
    finally:
        observability.uninstrument()
