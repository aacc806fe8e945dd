"""The replay transport: the recorded peer, delivering its inputs at the recorded points.

An input is handed to the session's reader when (1) every event recorded before it has
been reproduced (:meth:`Matcher.wait_reproduced`) and (2) the virtual clock has reached
its recorded time — a hair before it, so that an input recorded at the same instant as
a timer wins the tie, as recorded; when the timer's effects were recorded first, rule
1 holds the input back until they have happened. Like a real transport, ``receive``
always yields to the scheduler once, so the tasks the previous input woke compete
with the reader exactly as they did live (the schedule search settles who wins).
"""

from __future__ import annotations

import orjson
import trio

from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed
from replay.matcher import Matcher
from replay.trace import Event

#: How far before its recorded instant an input is delivered (below the trace's 1 ns
#: time resolution, so replayed times round to the recorded ones).
EARLY = 2.5e-10


class ReplayTransport(Transport):
    """Feeds recorded inputs to a session and checks recorded write failures."""

    def __init__(self, matcher: Matcher, name: str, *, grace: float = 60.0) -> None:
        self.matcher = matcher
        self.name = name
        self.grace = grace
        self._inputs = [ev for ev in matcher.events if ev.is_input]
        self._next = 0
        self._writer_key = "writer"

    async def receive(self) -> bytes | Oversize:
        """The next recorded input, once its place in the sequence has come."""
        m = self.matcher
        if self._next >= len(self._inputs) or self._inputs[self._next].index >= m.end_index:
            # Nothing more to deliver: once the rest has been reproduced, the replay is done.
            if await m.wait_reproduced(m.end_index, self.grace):
                m.stop()
            await trio.sleep_forever()
        ev = self._inputs[self._next]
        waited = False
        while True:
            if m.low < ev.index:
                waited = True
                if not await m.wait_reproduced(ev.index, self.grace):
                    await trio.sleep_forever()  # stopped: the session is being cancelled
            at = ev.t - EARLY
            if trio.current_time() >= at:
                break
            waited = True
            await trio.sleep_until(at)
        if not waited:
            # A memory channel's receive yields once whether or not a message is ready;
            # doing the same keeps the replay's task interleavings those of a live run.
            await trio.lowlevel.checkpoint()
        if m.finished:
            await trio.sleep_forever()
        self._next += 1
        m.before_input(ev)
        return self._deliver(ev)

    def _deliver(self, ev: Event) -> bytes | Oversize:
        if ev.kind == "message_in":
            if "msg" in ev.data:
                return orjson.dumps(ev.data["msg"])
            return str(ev.data["raw"]).encode("utf-8")
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
