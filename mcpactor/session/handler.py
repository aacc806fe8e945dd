"""The interface between a session's actor tree and the application behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from mcpactor.protocol import connection as pc
from mcpactor.session.context import RequestContext

if TYPE_CHECKING:
    from mcpactor.session.session import Session


class SessionHandler(Protocol):
    """The application behind a session (the server's registries, the client's callbacks)."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one inbound request; return its result (attrs object or dict)."""
        ...

    async def handle_notification(self, session: Session, event: pc.NotificationReceived) -> None:
        """React to one inbound notification (called in order, by the notifier)."""
        ...

    def on_initialized(self, session: Session, event: pc.Initialized) -> None:
        """Version and capabilities are negotiated."""
        ...

    def on_operation_started(self, session: Session) -> None:
        """Server role: the client's initialized notification arrived."""
        ...

    def on_closed(self, session: Session) -> None:
        """The session ended."""
        ...
