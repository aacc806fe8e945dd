"""Settings of the Streamable HTTP server (:class:`HttpOptions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from mcpactor.transports.security import LOCAL_HOSTS

if TYPE_CHECKING:
    from mcpactor.auth.resource_server import ResourceServer
    from mcpactor.tracing.tracer import Tracer

__all__ = ["HttpOptions"]


@attrs.frozen(kw_only=True)
class HttpOptions:
    """How the HTTP app behaves; every field has a safe default."""

    path: str = "/mcp"
    #: How POSTed requests are answered. ``None`` (default): per request, one JSON body
    #: when the handlers send nothing but their responses within ``json_window``, an
    #: SSE stream as soon as they send anything else (progress, logs, requests), close
    #: the stream for SSE polling, or take longer. ``True``: always JSON (other messages go to the GET stream). ``False``:
    #: always an SSE stream (resumable even when the connection drops mid-request).
    json_response: bool | None = None
    #: Per-request mode: seconds a silent request may take and still be answered with
    #: JSON; after that its POST gets an SSE stream (headers and a priming event).
    json_window: float = 0.1
    #: No session ids: every POST gets its own short-lived session.
    stateless: bool = False
    enable_get: bool = True
    enable_delete: bool = True
    #: Seconds without HTTP traffic after which a session is closed (None: never).
    session_idle_timeout: float | None = 1800.0
    max_sessions: int = 10_000
    max_body_size: int = 4 * 1024 * 1024
    #: Requests of one session accepted and not yet answered.
    max_in_flight: int = 64
    #: Events kept per session for resumption.
    max_events: int = 1000
    #: ``retry:`` sent in priming events (milliseconds).
    retry_ms: int = 1000
    #: Seconds between keep-alive comments on idle SSE streams (None: off).
    ping_interval: float | None = 15.0
    allowed_hosts: frozenset[str] = LOCAL_HOSTS
    allowed_origins: frozenset[str] | None = None
    #: Serve the 2024-11-05 HTTP+SSE transport too.
    legacy_sse: bool = True
    sse_path: str = "/sse"
    messages_path: str = "/messages/"
    #: The recording every session's events go to (a running
    #: :class:`mcpactor.tracing.Recorder`; None: no trace). While recording, each POST's
    #: messages reach the session through its reader, as on every other transport,
    #: rather than being routed in the POST's own task: the recording follows the
    #: session's tasks, not the HTTP server's.
    tracer: Tracer | None = None
    #: [auth] OAuth 2.1 resource server protecting the endpoints (mcpactor.auth).
    auth: ResourceServer | None = None
