"""Events: what the sans-I/O :class:`~mcpactor.protocol.connection.Connection` tells the
session layer about each inbound message."""

from __future__ import annotations

from typing import Any

import attrs

from mcpactor.protocol.errors import McpError
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.modern import ModernRequest


@attrs.frozen(slots=True)
class RequestReceived:
    """A request the application must answer (or that will be cancelled)."""

    id: RequestId
    method: str
    params: Any
    raw_params: dict[str, Any] | None
    progress_token: str | int | None = None
    #: A stateless (2026-07-28) request's own ``_meta`` declarations; None in a
    #: handshake session.
    modern: ModernRequest | None = None


@attrs.frozen(slots=True)
class NotificationReceived:
    """A notification for the application (lifecycle ones are handled inside)."""

    method: str
    params: Any
    raw_params: dict[str, Any] | None


@attrs.frozen(slots=True)
class ResponseReceived:
    """The answer to one of our requests, structured into the method's result type."""

    id: RequestId
    method: str
    result: Any


@attrs.frozen(slots=True)
class ErrorReceived:
    """One of our requests failed: the peer's error response, or its result was malformed."""

    id: RequestId
    method: str
    error: McpError


@attrs.frozen(slots=True)
class CancelReceived:
    """The peer cancelled a request it sent us that is still in flight."""

    request_id: RequestId
    reason: str | None


@attrs.frozen(slots=True)
class ProgressReceived:
    """Progress for one of our in-flight requests."""

    request_id: RequestId
    token: str | int
    progress: float
    total: float | None
    message: str | None


@attrs.frozen(slots=True)
class Reply:
    """Bytes the connection produced by itself (ping, initialize, protocol errors).

    ``id`` is the request it answers, when there is one (transports that route answers
    to the exchange that carried the request need it).
    """

    data: bytes
    why: str
    id: RequestId | None = None


@attrs.frozen(slots=True)
class Initialized:
    """Negotiation finished: the protocol version and what the peer declared."""

    protocol_version: str
    peer_info: dict[str, Any]
    peer_capabilities: dict[str, Any]
    instructions: str | None = None


@attrs.frozen(slots=True)
class OperationStarted:
    """The client's initialized notification arrived (server role) — full operation."""


@attrs.frozen(slots=True)
class Dropped:
    """An inbound message ignored on purpose (traced, never answered)."""

    reason: str
    raw: Any


@attrs.frozen(slots=True)
class BatchReceived:
    """A JSON-RPC batch: its requests' responses must go back as one array.

    ``expected`` counts the answers the batch response will hold: one per
    :class:`RequestReceived` plus the :class:`Reply` items (errors for invalid items).
    """

    events: list[Event]
    expected: int


Event = (
    RequestReceived
    | NotificationReceived
    | ResponseReceived
    | ErrorReceived
    | CancelReceived
    | ProgressReceived
    | Reply
    | Initialized
    | OperationStarted
    | Dropped
    | BatchReceived
)
