"""``mcpactor run --otel``: the OpenTelemetry SDK from the standard environment.

When the process already has an SDK (the ``opentelemetry-instrument`` launcher, or the
server's own code configured one), that one is used as it is. Otherwise the SDK is set
up here: a tracer provider with a batch processor and a meter provider with a periodic
reader, both exporting over OTLP/HTTP to what the standard variables say
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_METRIC_EXPORT_INTERVAL``, ``OTEL_BSP_SCHEDULE_DELAY``, ...; the default endpoint
is a collector on ``localhost:4318``). Needs the ``mcpactor[otlp]`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from mcpactor.extras import require

__all__ = ["configure"]


def configure(service_name: str) -> Callable[[], None]:
    """Turn observation on for this process with the SDK (configured here unless the
    process has one); returns what flushes and shuts it down at exit."""
    require("opentelemetry", "--otel")
    from opentelemetry import metrics, trace

    from mcpactor import observability

    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        observability.instrument()
        return lambda: None
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        observability.instrument()  # the process's own SDK (or launcher) stays in charge
        return lambda: None
    require("opentelemetry.sdk", "--otel (exporting over OTLP)")
    require("opentelemetry.exporter.otlp.proto.http", "--otel (exporting over OTLP)")
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the server's name.
    resource = Resource.create({"service.name": service_name}).merge(
        OTELResourceDetector().detect())
    if os.environ.get("OTEL_SERVICE_NAME"):
        resource = resource.merge(Resource({"service.name": os.environ["OTEL_SERVICE_NAME"]}))
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    meter_provider = MeterProvider(
        resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    observability.instrument()

    def shutdown() -> None:
        # Spans and metrics still buffered go out before the process ends.
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown
