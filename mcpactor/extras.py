"""Optional dependencies, installed with extras, and the error that names the extra.

``pip install mcpactor`` brings what every server and client needs. Features that need
more are extras: ``mcpactor[hypercorn]`` (serving HTTP with hypercorn instead of the
built-in server), ``mcpactor[auth]`` (PyJWT and cryptography: JWT access tokens,
``private_key_jwt``), ``mcpactor[redis]`` (coredis: shared state for scale-out,
``--redis``), ``mcpactor[testing]`` (the pytest plugin's pytest-trio),
``mcpactor[otel]`` (OpenTelemetry's API), ``mcpactor[otlp]`` (its SDK and OTLP/HTTP
exporter, for ``mcpactor run --otel``), ``mcpactor[prometheus]`` (``/metrics``). Their
modules are imported only where a feature needs them, through :func:`require`.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

__all__ = ["EXTRAS", "MissingExtra", "require"]

#: module -> (distribution to install, extra that brings it)
EXTRAS: Final[dict[str, tuple[str, str]]] = {
    "hypercorn": ("hypercorn", "hypercorn"),
    "jwt": ("PyJWT[crypto]", "auth"),
    "pytest_trio": ("pytest-trio", "testing"),
    "coredis": ("coredis", "redis"),
    "opentelemetry": ("opentelemetry-api", "otel"),
    "opentelemetry.sdk": ("opentelemetry-sdk", "otlp"),
    "opentelemetry.exporter.otlp.proto.http": ("opentelemetry-exporter-otlp-proto-http",
                                               "otlp"),
    "prometheus_client": ("prometheus-client", "prometheus"),
}


class MissingExtra(ImportError):
    """A feature needs an optional dependency that is not installed; the message names
    the feature and the ``pip install 'mcpactor[extra]'`` that fixes it."""


def require(module: str, feature: str) -> Any:
    """Import ``module`` for ``feature``; :class:`MissingExtra` if it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        dist, extra = EXTRAS[module]
        raise MissingExtra(f"{feature} needs {dist}, which is not installed: "
                           f"pip install 'mcpactor[{extra}]'") from exc
