"""The replay transport: the recorded peer, delivering its inputs at the recorded points.

An input is handed to the session's reader when (1) every event recorded before it has
been reproduced (:meth:`Matcher.wait_reproduced`) and (2) the virtual clock has reached
its recorded time — a hair before it, so that an input recorded at the same instant as
a timer wins the tie, as recorded; when the timer's effects were recorded first, rule
1 holds the input back until they have happened. Like a real transport, ``receive``
yields to the scheduler once on its way, so the tasks the previous input woke compete
with the reader exactly as they did live (the schedule search settles who wins) — except
for an input recorded as ``buffered``: the live transport had it already (it came in
the same read as the one before) and handed it out without yielding, and so does this.
"""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from mcpactor.tracing.encode import input_bytes
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed

from .matcher import Matcher
from .trace import Event

#: How far before its recorded instant an input is delivered (below the trace's 1 ns
#: time resolution, so replayed times round to the recorded ones).
EARLY = 2.5e-10


class ReplayTransport(Transport):
    """Feeds recorded inputs to a session and checks recorded write failures."""

    def __init__(
        self,
        matcher: Matcher,
        name: str,
        *,
        grace: float = 60.0,
        no_yield: frozenset[int] = frozenset(),
        coin_count: Callable[[], int] = lambda: 0,
    ) -> None:
        self.matcher = matcher
        self.no_yield = no_yield
        self._coin_count = coin_count
        #: (input index, scheduler coins so far) for each input delivered after a yield
        #: that did not wait: the points where the schedule search may skip the yield.
        self.yields: list[tuple[int, int]] = []
        self.name = name
        self.grace = grace
        self._inputs = [ev for ev in matcher.events if ev.is_input]
        self._next = 0
        self._writer_key = "writer"
        self._closed_by_app = _closed_by_application(matcher.events)
        #: Set by the runner: ends the session as ``Session.close(reason)`` does.
        self.close_session: Callable[[str], None] | None = None

    async def receive(self) -> bytes | Oversize:
        """The next recorded input, once its place in the sequence has come."""
        m = self.matcher
        if self._next >= len(self._inputs) or self._inputs[self._next].index >= m.end_index:
            closed = self._closed_by_app
            if closed is not None and closed[0] < m.end_index and self.close_session is not None:
                # The recorded session was closed from outside (an HTTP DELETE, the
                # application): close it at the same point.
                if await m.wait_reproduced(closed[0], self.grace):
                    self.close_session(closed[1])
                await trio.sleep_forever()
            # Nothing more to deliver: once the rest has been reproduced, the replay is done.
            if await m.wait_reproduced(m.end_index, self.grace):
                m.stop()
            await trio.sleep_forever()
        ev = self._inputs[self._next]
        waited = m.low < ev.index
        if waited and not await m.wait_reproduced(ev.index, self.grace):
            await trio.sleep_forever()  # stopped: the session is being cancelled
        at = ev.t - EARLY
        now = trio.current_time()
        if now < at:
            # Everything recorded before this input has happened; the recording was idle
            # (or busy computing, in real time) until it arrived. Jump the clock there
            # rather than sleep, so runnable tasks do not get a head start that they did
            # not have live; timers due meanwhile fire in the next batch.
            clock = trio.lowlevel.current_clock()
            assert isinstance(clock, trio.testing.MockClock)
            clock.jump(at - now)
        if not waited and ev.index not in self.no_yield and not ev.data.get("buffered"):
            # A live receive from a memory channel yields once whether or not a message
            # is ready, and so does this (the wait above already did); a stream
            # transport returns lines it has buffered without yielding, which the
            # schedule search tries when yielding here diverges.
            self.yields.append((ev.index, self._coin_count()))
            await trio.lowlevel.checkpoint()
        if m.finished:
            await trio.sleep_forever()
        self._next += 1
        # The session traces what the recording's transport said of this input.
        self.buffered = bool(ev.data.get("buffered"))
        m.before_input(ev)
        return self._deliver(ev)

    def _deliver(self, ev: Event) -> bytes | Oversize:
        if ev.kind == "message_in":
            return input_bytes(ev.data)
        if ev.kind == "message_oversize":
            return Oversize(int(ev.data.get("size", 0)))
        if ev.kind == "transport_broken":
            raise TransportClosed(str(ev.data.get("error", "")))
        raise trio.EndOfChannel

    async def send(self, messages: list[Outgoing]) -> None:
        """Accept output (already traced by the writer), or fail as the recording did."""
        await trio.lowlevel.checkpoint()
        nxt = self.matcher.next_in_stream(self._writer_key)
        if nxt is not None and nxt.kind == "transport_broken":
            raise TransportClosed(str(nxt.data.get("error", "")))

    async def aclose(self) -> None:
        """Nothing to release."""


def _closed_by_application(events: tuple[Event, ...]) -> tuple[int, str] | None:
    """Where the reader stopped without an end of input, and the session's close reason:
    the session was closed by a call, which the replay repeats."""
    for ev in events:
        if ev.actor == "reader" and ev.kind in ("transport_closed", "transport_broken"):
            return None
        if ev.actor == "reader" and ev.kind == "actor_stopped":
            reason = next((str(e.data.get("reason")) for e in events
                           if e.kind == "session_closed"), "closed")
            return ev.index, reason
    return None
