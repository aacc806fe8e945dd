"""Errors of the client-side authorization flow."""

from __future__ import annotations

from mcpactor.transports.http_client import HttpClientError

__all__ = ["AuthorizationError", "TokenEndpointError"]


class AuthorizationError(HttpClientError):
    """The client could not get (or keep) authorization for a server.

    A subclass of :class:`HttpClientError` so the HTTP transports treat it like any
    failed request: the pending MCP requests fail with its message, the session stays.
    """


class TokenEndpointError(AuthorizationError):
    """The token endpoint refused a request (RFC 6749 §5.2)."""

    def __init__(self, error: str, description: str | None = None, status: int = 400) -> None:
        self.error = error
        self.description = description
        self.status = status
        super().__init__(f"token endpoint: {error}" + (f" ({description})" if description else ""))
