"""Observability: OpenTelemetry spans and metrics by the MCP semantic conventions,
W3C trace context through ``_meta``, Prometheus ``/metrics``, and the jump from a span
to the deterministic replay of its request.

.. code-block:: python

    from mcpactor import observability

    observability.instrument()            # the global OpenTelemetry providers
    observability.instrument(tracer_provider=tp, meter_provider=mp)   # or these

Every session created afterwards, server or client, over any transport, is observed
(see :mod:`.instrumentation` for what it emits). ``mcpactor run --otel`` does the same
and, when no provider is configured, sets up the OpenTelemetry SDK with an OTLP/HTTP
exporter from the standard ``OTEL_*`` variables (:mod:`.setup`). Nothing here imports
OpenTelemetry until it is turned on; turned off (the default), a session makes one
check per message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpactor.observability import switch

if TYPE_CHECKING:
    from mcpactor.observability.instrumentation import Instrumentation
    from mcpactor.observability.prometheus import PromMetrics

__all__ = ["current", "enable_prometheus", "instrument", "register_gauge", "uninstrument"]

#: Gauges registered before Prometheus was turned on (they join it then).
_GAUGES: dict[str, tuple[str, Callable[[], float]]] = {}


def instrument(*, tracer_provider: Any = None, meter_provider: Any = None) -> Instrumentation:
    """Emit OpenTelemetry spans and metrics for every session created from now on, to
    the given providers (default: the global ones, which an SDK or the
    ``opentelemetry-instrument`` launcher configures). Needs ``opentelemetry-api``
    (``pip install 'mcpactor[otel]'``): :class:`~mcpactor.extras.MissingExtra` names it
    otherwise."""
    from mcpactor.observability.instrumentation import Instrumentation
    from mcpactor.observability.otel import OtelSide

    side = OtelSide(tracer_provider, meter_provider)
    current = switch.ACTIVE
    switch.ACTIVE = Instrumentation(side, current.prom if current is not None else None,
                                    _GAUGES)
    return switch.ACTIVE


def enable_prometheus() -> PromMetrics:
    """Collect the Prometheus metrics of ``/metrics`` (the HTTP server calls it for
    ``HttpOptions(metrics_path=...)``); idempotent. Needs ``prometheus-client``
    (``pip install 'mcpactor[prometheus]'``)."""
    current = switch.ACTIVE
    if current is not None and current.prom is not None:
        return current.prom
    from mcpactor.observability.instrumentation import Instrumentation
    from mcpactor.observability.prometheus import PromMetrics

    prom = PromMetrics(_GAUGES)
    switch.ACTIVE = Instrumentation(current.otel if current is not None else None, prom,
                                    _GAUGES)
    return prom


def uninstrument() -> None:
    """Stop observing sessions created from now on (those running keep their observer)."""
    switch.ACTIVE = None


def current() -> Instrumentation | None:
    """The instrumentation in force, if any."""
    return switch.ACTIVE


def register_gauge(name: str, help_text: str, read: Callable[[], float]) -> None:
    """A gauge ``/metrics`` reads when Prometheus scrapes: ``read()`` gives its value
    (e.g. ``mcpactor_tasks_running``, the MCP tasks in progress). Costs nothing until
    scraped; a hook that raises is left out of that scrape."""
    _GAUGES[name] = (help_text, read)
