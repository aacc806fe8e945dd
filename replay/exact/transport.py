"""The replay transport: each session's recorded inputs, and its recorded writes.

A live transport's ``receive`` and ``send`` may yield to the scheduler several times
before they return; the recording counted them (``yields`` in ``message_in``,
``message_out`` and the other transport events). The replay transport yields as many
times — each time parking the task until its next recorded step
(:meth:`~.scheduler.Scheduler.park`) — then hands out the recorded input, or returns
from the send (raises, for a send that failed), so the task takes its steps exactly as
it did live.
"""

from __future__ import annotations

from typing import Any

import trio

from mcpactor.tracing.encode import input_bytes
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed

from ..trace import Event
from .scheduler import Scheduler

#: The writer's outcomes, in the order its sends happened.
_SEND_OUTCOMES = frozenset({"message_out", "send_cancelled"})
#: The reader's: every receive the recording made.
_RECEIVE_OUTCOMES = frozenset({"message_in", "message_oversize", "transport_closed",
                               "transport_broken", "receive_cancelled"})


class ReplaySessionTransport(Transport):
    """One session's side of the replay (see the module)."""

    def __init__(self, name: str, events: list[Event], scheduler: Scheduler) -> None:
        self.name = name
        self._scheduler = scheduler
        self._inputs = [ev for ev in events
                        if ev.actor == "reader" and ev.kind in _RECEIVE_OUTCOMES]
        self._outcomes = [ev for ev in events if ev.kind in _SEND_OUTCOMES or (
            ev.kind == "transport_broken" and ev.actor == "writer")]
        self._next_in = 0
        self._next_out = 0

    async def _yields(self, ev: Event, *, cancelled: bool = False) -> None:
        n = ev.data.get("yields", 1)
        n = n if isinstance(n, int) and n > 0 else 0
        if cancelled:
            # The last resumption was the cancellation itself: it comes as it came live.
            for _ in range(n - 1):
                await self._scheduler.park()
            await trio.sleep_forever()
        for _ in range(n):
            await self._scheduler.park()

    async def _beyond(self) -> None:
        """A receive or send the recording has no outcome for: it never completed, or it
        completed after the end of a trace that was cut short (replayed ``--until``). A
        live transport waiting here still yielded: the task takes every step the
        schedule has for it, each one more wait, until a cancellation ends it."""
        while not self._scheduler.free:
            await self._scheduler.park()
        await trio.sleep_forever()

    async def receive(self) -> bytes | Oversize:
        """The next recorded input, after the recorded number of yields."""
        if self._next_in >= len(self._inputs):
            # The recording has no more: only a cancel ends the wait.
            await self._beyond()
        ev = self._inputs[self._next_in]
        if ev.kind == "receive_cancelled":
            self._next_in += 1
            await self._yields(ev, cancelled=True)
        await self._yields(ev)
        self._next_in += 1
        if ev.kind == "message_in":
            return input_bytes(ev.data)
        if ev.kind == "message_oversize":
            return Oversize(int(ev.data.get("size", 0)))
        if ev.kind == "transport_broken":
            raise TransportClosed(str(ev.data.get("error", "")))
        raise trio.EndOfChannel

    async def send(self, messages: list[Outgoing]) -> None:
        """Take a write as the recording did: after its yields; failed, if it failed."""
        if self._next_out >= len(self._outcomes):
            # Never completed live (the session ended first), or past a cut trace's end.
            await self._beyond()
        ev = self._outcomes[self._next_out]
        if ev.kind == "message_out":
            self._next_out += len(messages)
            await self._yields(ev)
            return
        self._next_out += 1
        if ev.kind == "send_cancelled":
            await self._yields(ev, cancelled=True)
        await self._yields(ev)
        raise TransportClosed(str(ev.data.get("error", "")))

    async def close_request_stream(self, request_id: Any) -> None:
        """(HTTP) SSE polling ends a response early: nothing to do in a replay."""

    async def aclose(self) -> None:
        """Nothing to release."""

