"""What a handler knows about the request it is answering."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.modern import ModernRequest

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.session.tracker import ProgressCallback, Timeout


class RequestContext:
    """One inbound request as its handler sees it: ids, params, its cancel scope, and
    the ways to talk back to the peer while it runs."""

    __slots__ = ("id", "method", "modern", "params", "progress_token", "raw_params", "scope",
                 "session", "state")

    def __init__(
        self,
        session: Session,
        rid: RequestId,
        method: str,
        params: Any,
        raw_params: dict[str, Any] | None,
        progress_token: str | int | None,
        scope: trio.CancelScope,
        modern: ModernRequest | None = None,
    ) -> None:
        self.session = session
        self.id = rid
        self.method = method
        self.params = params
        self.raw_params = raw_params
        self.progress_token = progress_token
        self.scope = scope
        #: A stateless (2026-07-28) request's own declarations (version, client
        #: capabilities, log level); None in a handshake session.
        self.modern = modern
        #: Per-request state of the layer above (the server's input rounds), or None.
        self.state: Any = None

    def derived(self, method: str, params: Any) -> RequestContext:
        """The same request under another method or params (a middleware's change, a
        mounted server's names): the same id, scope, era and per-request state, so
        that a 2026-07-28 request stays one in its input rounds."""
        rc = RequestContext(self.session, self.id, method, params, self.raw_params,
                            self.progress_token, self.scope, self.modern)
        rc.state = self.state
        return rc

    @property
    def protocol_version(self) -> str | None:
        """The revision this request speaks: its own (stateless era) or the session's."""
        if self.modern is not None:
            return self.modern.version
        return self.session.connection.protocol_version

    @property
    def peer_capabilities(self) -> dict[str, Any]:
        """The capabilities the peer declared for this request (its ``_meta``) or for
        the session (``initialize``)."""
        if self.modern is not None:
            return self.modern.client_capabilities
        return self.session.connection.peer_capabilities or {}

    @property
    def meta(self) -> dict[str, Any] | None:
        """The request's ``_meta``, if any."""
        if self.raw_params is None:
            return None
        meta = self.raw_params.get("_meta")
        return meta if isinstance(meta, dict) else None

    @property
    def cancelled(self) -> bool:
        """Whether the peer cancelled this request (the handler is being cancelled)."""
        return self.scope.cancel_called

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Send progress if the peer asked for it; False when nothing was sent (no token,
        the request already finished, or ``progress`` did not increase)."""
        if self.progress_token is None:
            return False
        return await self.session.send_progress(
            self.id, self.progress_token, progress, total, message
        )

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        on_progress: ProgressCallback | None = None,
        result_cls: Any = None,
    ) -> Any:
        """Send a request to the peer on behalf of this one (sampling, elicitation, ...)."""
        return await self.session.request(
            method,
            params,
            timeout=timeout,
            on_progress=on_progress,
            result_cls=result_cls,
            related_request=self.id,
        )

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification to the peer."""
        await self.session.notify(method, params, related_request=self.id)
