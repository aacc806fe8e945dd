"""How many sessionless requests run at once: the server's ``Limits`` for them.

A 2026-07-28 request over HTTP has no long-lived session: each runs in a session of
its own that lives as long as its POST, so a session's handler slots and queue
(``Limits.max_concurrent_requests``, ``Limits.max_queued_requests``) would bound
nothing. Their scope is the server process instead: all such requests of one
:class:`~mcpactor.transports.http_server.McpHttpApp` (one per process, so each worker
of ``mcpactor run --workers`` counts its own) share one set of slots and one FIFO
queue of the same sizes, and past the queue a request is refused with the same
``SERVER_BUSY`` (-32005) error and ``data`` a session answers with. A handshake
session's requests are counted by the session, as before, and not here.
"""

from __future__ import annotations

from collections import OrderedDict

import trio

from mcpactor.transports.asgi import Receive, watch_disconnect

__all__ = ["RequestGate", "enter_gate"]


class RequestGate:
    """Slots and a FIFO queue shared by the sessionless requests of one app."""

    __slots__ = ("_next", "free", "max_concurrent", "max_queued", "waiting")

    def __init__(self, max_concurrent: int, max_queued: int) -> None:
        self.max_concurrent = max_concurrent
        self.max_queued = max_queued
        #: Slots free now; while anything waits, none is (a slot that frees goes to the
        #: first waiter).
        self.free = max_concurrent
        #: Waiting requests in arrival order, each woken when handed a slot.
        self.waiting: OrderedDict[int, trio.Event] = OrderedDict()
        self._next = 0

    async def enter(self) -> bool:
        """Take a slot, waiting in the queue for one if needed; False (at once, having
        taken nothing) when the queue is full too. Cancelled while waiting, it leaves
        the queue (or passes on the slot it was just handed)."""
        if self.free:
            self.free -= 1
            return True
        if len(self.waiting) >= self.max_queued:
            return False
        key = self._next
        self._next += 1
        handed = self.waiting[key] = trio.Event()
        try:
            await handed.wait()
        except BaseException:
            if self.waiting.pop(key, None) is None:
                self.leave()  # handed a slot as it was cancelled: not ours to keep
            raise
        return True

    def leave(self) -> None:
        """Give a slot back: to the first waiting request, else free."""
        if self.waiting:
            _, handed = self.waiting.popitem(last=False)
            handed.set()
        else:
            self.free += 1

    @property
    def running(self) -> int:
        """Requests holding a slot."""
        return self.max_concurrent - self.free


async def enter_gate(gate: RequestGate, receive: Receive) -> bool | None:
    """A slot of ``gate`` for an HTTP request whose body is read: True; False when the
    queue is full (refused, nothing taken); None when the client left while the
    request waited in the queue (it never runs)."""
    if gate.free or len(gate.waiting) >= gate.max_queued:
        return await gate.enter()  # at once, either way
    entered = False
    left = trio.CancelScope()
    with left:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_disconnect, receive, left)
            entered = await gate.enter()
            nursery.cancel_scope.cancel()
    if left.cancelled_caught:
        if entered:
            gate.leave()  # the slot came as the client left: pass it on
        return None
    return entered
