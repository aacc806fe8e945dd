"""A session without its actor tree: requests served in their callers' tasks.

A 2026-07-28 request over HTTP needs no session: it lives as long as its POST. It
still runs through the same router, dispatcher and writer as a request of a long-lived
session (so it is checked, traced, cancelled and answered the same way), but starting
and stopping a tree (a supervisor, a reader, a writer task, two nurseries) for it
would cost more than the request. In a scope (``async with session.scoped():``)
:meth:`Session.feed` runs each request in the caller's task (:meth:`Dispatcher.run_inline`),
the writer writes in place, and nothing else runs; :meth:`Session.close` cancels the
requests in flight itself (a graceful close at the end of the drain budget). Leaving
the block ends the session as the end of :meth:`Session.run` does: the same last steps,
the same hooks (``on_closed``, the observer's), and while the block runs the session
is among :func:`live_sessions` (SIGTERM ends it gracefully).
"""

from __future__ import annotations

import weakref
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpactor.session.session import Session

__all__ = ["RequestScope"]


class RequestScope:
    """``async with session.scoped():`` (see the module)."""

    __slots__ = ("_live", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self._live: weakref.WeakSet[Session] | None = None

    async def __aenter__(self) -> Session:
        session = self.session
        if session.tracer is not None:
            raise ValueError("a recorded session runs its actor tree (Session.run): "
                             "a recording follows the tree's tasks")
        if session.started.is_set() or session._scoped:
            raise RuntimeError(f"session {session.id} is already running")
        session._scoped = True
        session.writer.direct = True
        self._live = session._begin()
        session.dispatcher.accepting = True
        session.started.set()
        return session

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session = self.session
        if session.close_reason is None:
            session.close_reason = "request answered"
        session._stop()
        assert self._live is not None
        await session._end(self._live)
