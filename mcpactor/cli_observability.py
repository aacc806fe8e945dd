"""``mcpactor run --otel`` and ``--metrics``: observability from the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["add_arguments", "start"]


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The observability flags of ``mcpactor run``."""
    group = run.add_argument_group(
        "observability",
        "OpenTelemetry spans and metrics by the MCP semantic conventions, and a "
        "Prometheus endpoint; see docs/observability.md")
    group.add_argument(
        "--otel", action="store_true",
        help="emit OpenTelemetry spans and metrics; unless the process already has an SDK "
        "(opentelemetry-instrument), export them over OTLP/HTTP as the OTEL_* variables "
        "say (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318; "
        "OTEL_SERVICE_NAME)")
    group.add_argument(
        "--metrics", nargs="?", const="/metrics", metavar="PATH",
        help="serve Prometheus metrics on the HTTP server at PATH (default /metrics)")


def start(args: argparse.Namespace, service_name: str) -> Callable[[], None]:
    """Turn on what the flags ask for; returns what flushes it at exit. A missing extra
    or a bad path is a :class:`~mcpactor.cli.CliError` naming the fix."""
    from mcpactor.cli import CliError
    from mcpactor.extras import MissingExtra

    metrics = getattr(args, "metrics", None)
    if metrics is not None and not metrics.startswith("/"):
        raise CliError(f"--metrics {metrics}: the path must start with / (e.g. /metrics)")
    if metrics is not None and metrics == args.path:
        raise CliError(f"--metrics {metrics} is the MCP endpoint's path too: pick another")
    try:
        if metrics is not None:
            from mcpactor import observability

            observability.enable_prometheus()
        if args.otel:
            from mcpactor.observability.setup import configure

            return configure(service_name)
    except MissingExtra as exc:
        raise CliError(str(exc)) from None
    return lambda: None
