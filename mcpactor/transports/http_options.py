"""Settings of the Streamable HTTP server (:class:`HttpOptions`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from mcpactor.transports.security import LOCAL_HOSTS

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.tracing.tracer import Tracer
    from mcpactor.transports.asgi import Scope, Send
    from mcpactor.transports.http_rules import Headers

__all__ = ["HttpAuth", "HttpOptions"]


class HttpAuth(Protocol):
    """What the HTTP server asks of the layer protecting it (an OAuth resource server:
    :class:`mcpactor.auth.resource_server.ResourceServer`), passed in through
    :attr:`HttpOptions.auth` so that the transport never imports the auth package."""

    async def guard(self, scope: Scope, headers: Headers, protected: bool, send: Send) -> bool:
        """Before the MCP app: True when this answered the request (metadata, refusal)."""
        ...

    async def check_items(self, tool_scopes: Callable[[str], Sequence[str]],
                          items: Iterable[Any], send: Send) -> bool:
        """The POSTed ``tools/call`` requests' scopes: True when refused."""
        ...

    def bind(self, session: Session) -> None:
        """The request's principal owns the new ``session``."""
        ...

    def note_requests(self, session: Session, items: Iterable[Any]) -> None:
        """Remember which token carried each of ``items``' requests."""
        ...

    def admits(self, session: Session) -> bool:
        """Whether the current request's principal may use ``session``."""
        ...

# The built-in server's connection limits (its H11Options has the same defaults).
KEEP_ALIVE_TIMEOUT = 5.0
HEAD_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0
MAX_CONNECTIONS = 2000
MAX_CONNECTIONS_PER_PEER = 500
REFUSAL_LINGER = 1.0
MAX_REFUSALS = 256
MAX_SESSIONS = 10_000
MAX_SESSIONS_PER_PEER = 1000


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
    #: Sessions at once. A new one past it closes the least recently used idle session
    #: of the address holding the most, and is refused (503) only when none is idle.
    max_sessions: int = attrs.field(default=MAX_SESSIONS, validator=attrs.validators.ge(1))
    #: Sessions opened from one client address (IPv6: one /64) at once; 0: no cap. Past
    #: it that address's least recently used idle session is closed to make room (its
    #: client gets 404 and opens a new one, as the spec says), and the new one is refused
    #: (503) only when none of them is idle: one client cannot fill the table and lock
    #: everyone out. A tenth of ``max_sessions``; behind a reverse proxy (every client
    #: has its address) set it to 0.
    max_sessions_per_peer: int = attrs.field(default=MAX_SESSIONS_PER_PEER,
                                             validator=attrs.validators.ge(0))
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
    #: Serve Prometheus metrics at this path (e.g. ``"/metrics"``; None: none): request
    #: counts and durations by method, live sessions, handler slots, the trace
    #: writer's lag (mcpactor.observability.prometheus; needs ``mcpactor[prometheus]``).
    metrics_path: str | None = None
    #: [auth] OAuth 2.1 resource server protecting the endpoints (mcpactor.auth).
    auth: HttpAuth | None = None
    # -- connections (the built-in server; hypercorn applies keep_alive_timeout only) --
    # They bound how long the server waits for a client, never a response (an SSE
    # stream may last for hours); see mcpactor.transports.h11_server.
    #: Seconds a connection may stay idle between requests before it is closed.
    keep_alive_timeout: float = KEEP_ALIVE_TIMEOUT
    #: Seconds a request head may take (the whole head, not each read).
    head_timeout: float = HEAD_TIMEOUT
    #: Seconds a request body may take (the whole body, not each read).
    body_timeout: float = BODY_TIMEOUT
    #: Connections at once; a new one past it closes idle or stalled connections
    #: (idle first, then the longest-waiting), and is refused (503) only when every
    #: connection is busy (a request being handled, a response being written).
    max_connections: int = MAX_CONNECTIONS
    #: Connections one peer address (IPv6: one /64) may hold, 0 for no cap; past it
    #: that peer's own idle or stalled connections make room, else it gets 503. A
    #: quarter of ``max_connections``, so one address cannot take the whole table
    #: with busy connections; behind a reverse proxy (every client has its address)
    #: set it to ``max_connections`` or 0.
    max_connections_per_peer: int = MAX_CONNECTIONS_PER_PEER
    #: Seconds a refusal (503 when every connection is busy) may take: the answer,
    #: then what the client sent read and dropped until it closes (at most 64 KiB), so
    #: a client that sent its request at once reads the 503 rather than a reset.
    refusal_linger: float = REFUSAL_LINGER
    #: 503 refusals answered at once (each holds a descriptor up to
    #: ``refusal_linger``); past it a connection without room is closed at once.
    max_refusals: int = MAX_REFUSALS
