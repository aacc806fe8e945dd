"""The OpenTelemetry side: a tracer, the four duration histograms, and W3C context in
``_meta`` carriers. Imported only once observation is turned on with OpenTelemetry
(``opentelemetry-api``, the ``mcpactor[otel]`` extra)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpactor import __version__
from mcpactor.extras import require
from mcpactor.observability import semconv

require("opentelemetry", "OpenTelemetry spans and metrics")

from opentelemetry import context as otel_context  # noqa: E402
from opentelemetry import metrics as otel_metrics  # noqa: E402
from opentelemetry import propagate  # noqa: E402
from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.context import Context  # noqa: E402
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode  # noqa: E402

__all__ = [
    "Context", "Link", "OtelSide", "Span", "SpanKind", "Status", "StatusCode", "attach",
    "detach", "extract", "inject", "span_context_of", "use",
]

INSTRUMENTATION_NAME = "mcpactor"


class OtelSide:
    """The tracer and the histograms of one instrumentation (the global providers
    unless others are given)."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.tracer = otel_trace.get_tracer(
            INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider)
        meter = otel_metrics.get_meter(
            INSTRUMENTATION_NAME, __version__, meter_provider=meter_provider)
        self.histograms = {
            name: meter.create_histogram(
                name, unit="s", description=semconv.METRIC_DESCRIPTIONS[name],
                explicit_bucket_boundaries_advisory=list(semconv.DURATION_BUCKETS))
            for name in semconv.METRIC_DESCRIPTIONS
        }

    def start(self, name: str, kind: SpanKind, attributes: dict[str, Any],
              parent: Context | None = None, links: list[Link] | None = None) -> Span:
        """Start a span (a child of ``parent``, else of the current context)."""
        return self.tracer.start_span(name, context=parent, kind=kind, attributes=attributes,
                                      links=links)

    def record(self, metric: str, seconds: float, attributes: dict[str, Any]) -> None:
        """One measurement of a duration histogram, with its low-cardinality attributes."""
        keep = (semconv.SESSION_METRIC_ATTRIBUTES if metric.endswith("session.duration")
                else semconv.METRIC_ATTRIBUTES)
        self.histograms[metric].record(
            seconds, {k: v for k, v in attributes.items() if k in keep})


def extract(carrier: Mapping[str, Any] | None) -> Context | None:
    """The remote context in a ``_meta`` dict or HTTP headers, with the configured
    propagators (W3C Trace Context and Baggage by default); None when it carries no
    valid ``traceparent`` (the span then nests under the current context)."""
    if not carrier:
        return None
    try:
        ctx = propagate.extract({k: v for k, v in carrier.items() if isinstance(v, str)})
    except (TypeError, ValueError):
        return None
    if not otel_trace.get_current_span(ctx).get_span_context().is_valid:
        return None
    return ctx


def inject(ctx: Context) -> dict[str, str]:
    """The propagation keys (``traceparent``, ``tracestate``, ``baggage``) for ``ctx``."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=ctx)
    return carrier


def use(span: Span, base: Context | None = None) -> Context:
    """A context in which ``span`` is current (with ``base``'s baggage, if given)."""
    return otel_trace.set_span_in_context(span, base)


def attach(ctx: Context) -> object:
    """Make ``ctx`` the current context of this task; returns the token for detach."""
    return otel_context.attach(ctx)


def detach(token: object) -> None:
    """Undo an :func:`attach`."""
    otel_context.detach(token)  # type: ignore[arg-type]


def span_context_of(ctx: Context) -> Any:
    """The span context current in ``ctx``."""
    return otel_trace.get_current_span(ctx).get_span_context()
