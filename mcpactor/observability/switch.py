"""Whether this process observes its sessions: the one check the session layer makes.

Kept free of imports (the session layer imports it on every run, observed or not):
:data:`ACTIVE` is None unless :func:`mcpactor.observability.instrument` (or the
``/metrics`` endpoint) turned observation on, and a session reads it once, when it is
created. Everything else of :mod:`mcpactor.observability` loads only then.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpactor.observability.instrumentation import Instrumentation

#: The process's instrumentation (None: sessions are not observed, and cost nothing).
ACTIVE: Instrumentation | None = None

#: The W3C trace context headers (``traceparent``, ``tracestate``, ``baggage``) of the
#: HTTP request being served in this task, while observation is on and it has them.
HTTP_CARRIER: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "mcpactor_http_trace_carrier", default=None)

#: The header names of W3C Trace Context and Baggage (lower case, as ASGI gives them).
CARRIER_HEADERS = (b"traceparent", b"tracestate", b"baggage")


def enter_http(headers: list[tuple[bytes, bytes]]) -> contextvars.Token[dict[str, str] | None] | None:
    """Note an HTTP request's trace context headers for the messages it carries (only
    called while :data:`ACTIVE`); the token resets it when the request is done, None if
    it had none."""
    carrier: dict[str, str] | None = None
    for name, value in headers:
        if name in CARRIER_HEADERS:
            if carrier is None:
                carrier = {}
            carrier[name.decode("latin-1")] = value.decode("latin-1")
    if carrier is None or "traceparent" not in carrier:
        return None
    return HTTP_CARRIER.set(carrier)
