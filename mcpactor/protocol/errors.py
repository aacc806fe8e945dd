"""JSON-RPC error codes and the typed errors of the protocol core.

Every error says whose fault it is: a :class:`RemoteProtocolError` means the peer broke
a rule (we answer it with the error's code), a :class:`LocalProtocolError` means our own
code tried to break one (a bug or a misuse of the API, raised to the caller).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: MCP: the peer does not support URL-mode elicitation that a request needs (2025-11-25).
URL_ELICITATION_REQUIRED = -32042
#: A missing resource since SEP-2164 (2026-07-28) and in SEP-2093: invalid params.
RESOURCE_NOT_FOUND = INVALID_PARAMS
#: A missing resource as the resources page of 2024-11-05 to 2025-11-25 asks for it.
RESOURCE_NOT_FOUND_LEGACY = -32002
#: Request cancelled or timed out locally (never sent on the wire; used for typed errors).
REQUEST_TIMEOUT = -32001
#: The server is busy (every handler slot taken, its queue full): retry later. Sent on
#: the wire; ``data`` says why and which limits were reached.
SERVER_BUSY = -32005
CONNECTION_CLOSED = -32000
#: 2026-07-28: the HTTP headers do not match the body, or a required one is missing or
#: malformed (HTTP 400).
HEADER_MISMATCH = -32020
#: 2026-07-28: handling the request needs a client capability the request's
#: ``_meta`` did not declare (HTTP 400).
MISSING_CLIENT_CAPABILITY = -32021
#: 2026-07-28: the request's protocol version is not one the server speaks; ``data``
#: has ``supported`` and ``requested`` (HTTP 400).
UNSUPPORTED_PROTOCOL_VERSION = -32022


class McpError(Exception):
    """An error that maps onto a JSON-RPC error object: code, message and optional data."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member for this exception."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, data={self.data!r})"


class RemoteProtocolError(McpError):
    """The peer sent something the protocol forbids; answered with ``code``."""


class ServerBusy(McpError):
    """Every handler slot is taken and the queue of waiting requests is full: the
    request was not run; the peer may retry it later (``SERVER_BUSY``)."""

    code = SERVER_BUSY

    @classmethod
    def of_limits(cls, max_concurrent_requests: int, max_queued_requests: int) -> ServerBusy:
        """The refusal a full set of limits (``session.Limits``) answers with: the same
        message and ``data`` wherever requests are counted."""
        return cls("Server busy: too many requests in progress; retry later",
                   data={"reason": "busy", "retryable": True,
                         "max_concurrent_requests": max_concurrent_requests,
                         "max_queued_requests": max_queued_requests})


class ParseError(RemoteProtocolError):
    """Bytes that are not JSON (or not UTF-8)."""

    code = PARSE_ERROR


class InvalidRequest(RemoteProtocolError):
    """JSON that is not a valid JSON-RPC message, or a message not allowed now."""

    code = INVALID_REQUEST


class MethodNotFound(RemoteProtocolError):
    """A method we do not implement, or one behind a capability we did not declare."""

    code = METHOD_NOT_FOUND


class InvalidParams(RemoteProtocolError):
    """Params that do not match the method's schema; ``data`` names the failing path."""

    code = INVALID_PARAMS


class ResourceNotFound(McpError):
    """Raise in a resource handler when the URI names nothing: the client gets the
    "Resource not found" error with ``data.uri``, coded as the session's protocol
    revision says (-32002 up to 2025-11-25, -32602 from 2026-07-28; see
    :func:`mcpactor.protocol.versions.resource_not_found_code`)."""

    code = RESOURCE_NOT_FOUND

    def __init__(self, uri: str, message: str = "Resource not found", *,
                 code: int | None = None) -> None:
        super().__init__(message, code=code, data={"uri": uri})
        self.uri = uri

    def __str__(self) -> str:
        return f"{self.message}: {self.uri}"


class HeaderMismatch(RemoteProtocolError):
    """2026-07-28 (SEP-2243): a ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` or
    ``Mcp-Param-*`` header is missing, malformed, or disagrees with the body."""

    code = HEADER_MISMATCH


class UnsupportedProtocolVersion(RemoteProtocolError):
    """The request names a protocol version we do not speak; ``data`` lists the ones we
    do (``supported``) and echoes the one asked for (``requested``)."""

    code = UNSUPPORTED_PROTOCOL_VERSION

    def __init__(self, requested: object, supported: list[str],
                 message: str | None = None) -> None:
        super().__init__(
            message or f"Unsupported protocol version: {requested!r} "
            f"(supported: {', '.join(supported)})",
            data={"supported": supported, "requested": requested},
        )


class MissingClientCapability(McpError):
    """2026-07-28: answering needs a client capability the request did not declare in
    ``io.modelcontextprotocol/clientCapabilities``; ``data.requiredCapabilities`` is a
    capabilities object naming it (``{"sampling": {}}``; ``extension=True``: an
    extension, ``{"extensions": {"io.modelcontextprotocol/tasks": {}}}``)."""

    code = MISSING_CLIENT_CAPABILITY

    def __init__(self, capability: str, what: str | None = None, *,
                 extension: bool = False) -> None:
        kind = "extension" if extension else "capability"
        super().__init__(
            f"Missing required client capability: {what or capability} needs the client's "
            f"{capability!r} {kind}, which this request did not declare"
            + (" (in _meta io.modelcontextprotocol/clientCapabilities.extensions)"
               if extension else ""),
            data={"requiredCapabilities": ({"extensions": {capability: {}}} if extension
                                           else {capability: {}})},
        )
        self.capability = capability


class InternalError(McpError):
    """Something failed on our side while handling a valid request."""

    code = INTERNAL_ERROR


class LocalProtocolError(McpError):
    """Our own code tried to do something the protocol forbids (e.g. use a capability
    the peer did not declare, or send a request before initialization)."""

    code = INVALID_REQUEST


class CapabilityNotSupported(LocalProtocolError):
    """The peer did not declare the capability this message needs."""


class RequestError(McpError):
    """The peer answered one of our requests with a JSON-RPC error."""


class InvalidResult(McpError):
    """The peer's answer to one of our requests breaks its method's rules: a tool's
    ``structuredContent`` that does not match its ``outputSchema``, elicitation content
    that does not match the requested schema. ``data`` has the failing ``path`` and the
    ``reason``."""


class RequestTimeout(McpError):
    """One of our requests got no answer in time; a cancellation was sent."""

    code = REQUEST_TIMEOUT


class RequestCancelled(McpError):
    """The peer cancelled one of our requests (2026-07-28: a server ends a
    ``subscriptions/listen`` stream so)."""

    code = CONNECTION_CLOSED


class ConnectionClosed(McpError):
    """The session ended before an answer arrived."""

    code = CONNECTION_CLOSED
