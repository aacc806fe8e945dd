"""The notifier: runs the callbacks of inbound notifications and progress, in order.

The router never runs user code: it puts a job in the notifier's bounded mailbox (a
full mailbox makes the reader wait for notifications; progress is dropped instead).
An idle session should cost little memory, and a server session rarely gets a
notification that needs a callback, so the mailbox and the notifier's task start on
first use.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from mcpactor.session.session import Session

log = logging.getLogger("mcpactor.session")

__all__ = ["Job", "Notifier"]

#: One callback to run.
Job = Callable[[], Awaitable[None]]


class Notifier:
    """The notifier's mailbox and task (see the module)."""

    __slots__ = ("_send", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self._send: trio.MemorySendChannel[Job] | None = None

    def mailbox(self) -> trio.MemorySendChannel[Job]:
        """The mailbox, made (and the task started, in a running tree) on first use."""
        mailbox = self._send
        if mailbox is None:
            session = self.session
            mailbox, inbox = trio.open_memory_channel[Job](session.limits.notification_buffer)
            self._send = mailbox
            root = session._root
            if root is not None:
                root.start_soon(session._actor, "notifier", lambda: self._run(inbox))
        return mailbox

    async def _run(self, inbox: trio.MemoryReceiveChannel[Job]) -> None:
        async for job in inbox:
            try:
                await job()
            except Exception:
                log.exception("session %s: notification callback failed", self.session.id)

    async def settle(self) -> None:
        """See :meth:`Session.settle`."""
        mailbox = self._send
        session = self.session
        if mailbox is None or session.closed.is_set():
            return
        done = trio.Event()

        async def mark() -> None:
            done.set()

        with trio.move_on_after(session.limits.drain_timeout):
            try:
                await mailbox.send(mark)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            await done.wait()

    def close(self) -> None:
        """The session ends: the notifier runs what is queued, then stops."""
        if self._send is not None:
            self._send.close()
