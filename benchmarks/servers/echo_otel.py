"""The benchmark subject with OpenTelemetry on, as production runs it: the SDK with a
batch span processor and a periodic metric reader, both exporting to nowhere (the cost
measured is mcpactor's instrumentation and the SDK's, not a collector's network).

``mcpactor run benchmarks/servers/echo_otel.py:server --otel`` (what the harness runs
as ``mcpactor_otel``): ``--otel`` finds the SDK configured here and instruments with it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from echo_mcpactor import server

__all__ = ["server"]


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _DiscardMetrics(MetricExporter):
    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
               **kwargs: object) -> MetricExportResult:
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        pass


_provider = TracerProvider()
_provider.add_span_processor(BatchSpanProcessor(_Discard()))
trace.set_tracer_provider(_provider)
metrics.set_meter_provider(MeterProvider(
    metric_readers=[PeriodicExportingMetricReader(_DiscardMetrics(), 10_000)]))
