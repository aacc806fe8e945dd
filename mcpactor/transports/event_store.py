"""Logical SSE streams of one HTTP session, and the bounded store that makes them resumable.

A *stream* is what the spec calls an SSE stream, independent of the HTTP response
that happens to carry it: the stream answering one POST, or the standalone (GET)
stream. Its events are numbered 1, 2, ... and named ``"<stream>-<seq>"``, so an event
id is unique in the session and says which stream it belongs to; a resumption with
``Last-Event-ID`` replays the rest of that stream only.

At most one HTTP response is attached to a stream at a time. Attaching (a new GET,
a resumption) or :meth:`Stream.detach` (SSE polling: the server ends the response
early) bumps ``generation``, and the attached pump sees it and ends its response.

Events are kept in a per-session :class:`EventStore` bounded by count; the oldest
events are dropped first, and a resumption that asks for a dropped event gets what is
left. Pure data structures plus one ``trio.Event`` for wake-ups.
"""

from __future__ import annotations

from collections import deque

import trio

from mcpactor.protocol.jsonrpc import RequestId

__all__ = ["EventStore", "Stream", "format_event_id", "parse_event_id"]


def format_event_id(stream_no: int, seq: int) -> str:
    """The wire id of event ``seq`` of stream ``stream_no``."""
    return f"{stream_no}-{seq}"


def parse_event_id(value: str) -> tuple[int, int] | None:
    """``(stream_no, seq)`` from an event id, or None when it is not one of ours."""
    left, sep, right = value.strip().partition("-")
    if not sep or not left.isdigit() or not right.isdigit():
        return None
    return int(left), int(right)


class Stream:
    """One logical SSE stream: its numbered events and who is waiting for them."""

    # Slots: every idle session keeps a stream or two, thousands of sessions add up.
    __slots__ = ("_changed", "delivered", "done", "events", "generation", "last_seq",
                 "mixed", "no", "pending", "standalone", "store")

    def __init__(self, store: EventStore, no: int, *, standalone: bool = False) -> None:
        self.store = store
        self.no = no
        self.standalone = standalone
        #: Requests whose responses this stream still owes.
        self.pending: set[RequestId] = set()
        # A list, not a deque: an empty deque costs ~600 bytes and every idle session
        # has a stream; the rare eviction from the front is cheap enough on a list.
        self.events: list[tuple[int, bytes]] = []
        self.last_seq = 0
        #: Highest seq written to some HTTP response (a fresh GET starts there).
        self.delivered = 0
        self.done = False
        self.generation = 0
        #: Carries something other than responses (progress, logs, server requests):
        #: such a stream must go out as SSE, it cannot be one JSON body.
        self.mixed = False
        # Created on first wait: most streams are answered before anyone waits, and a
        # trio.Event per append is measurable on the per-call path.
        self._changed: trio.Event | None = None

    # -- producer side ------------------------------------------------------------

    def append(self, data: bytes) -> int:
        """Add an event; returns its seq."""
        self.last_seq += 1
        self.events.append((self.last_seq, data))
        self.store._added(self)
        self._wake()
        return self.last_seq

    def answered(self, ids: list[RequestId]) -> None:
        """Responses to ``ids`` were appended; the stream is done once all are in."""
        for rid in ids:
            self.pending.discard(rid)
        if not self.pending and not self.standalone:
            self.done = True
            self._wake()

    def finish(self) -> None:
        """No more events will come (the session ended)."""
        self.done = True
        self._wake()

    def detach(self) -> None:
        """End the attached response (if any) without ending the stream."""
        self.generation += 1
        self._wake()

    def attach(self) -> int:
        """A new response takes over the stream; returns its generation."""
        self.generation += 1
        self._wake()
        return self.generation

    def _wake(self) -> None:
        changed = self._changed
        if changed is not None:
            self._changed = None
            changed.set()

    # -- consumer side ------------------------------------------------------------

    def after(self, seq: int) -> list[tuple[int, bytes]]:
        """The stored events with a seq above ``seq``, oldest first."""
        if not self.events or self.events[-1][0] <= seq:
            return []
        return [e for e in self.events if e[0] > seq]

    def complete_after(self, seq: int) -> bool:
        """Whether a response that has sent up to ``seq`` has nothing more to wait for."""
        return self.done and seq >= self.last_seq

    async def wait_changed(self) -> None:
        """Sleep until an event is appended or the stream is detached or finished."""
        if self._changed is None:
            self._changed = trio.Event()
        await self._changed.wait()

    def event_id(self, seq: int) -> str:
        """The wire id of this stream's event ``seq``."""
        return format_event_id(self.no, seq)


class EventStore:
    """The streams of one session and a global bound on the events they keep."""

    __slots__ = ("_live", "_next_no", "_order", "max_events", "streams")

    def __init__(self, max_events: int = 1000) -> None:
        self.max_events = max_events
        self.streams: dict[int, Stream] = {}
        # The stream number of each stored event, oldest first. Numbers, not streams: a
        # discarded stream is freed at once, its entries are skipped when they come up.
        # Created on the first stored event (an idle session stores none).
        self._order: deque[int] | None = None
        self._live = 0  # stored events of streams still in the store
        self._next_no = 0

    def new_stream(self, *, standalone: bool = False, no: int | None = None) -> Stream:
        """A new, empty stream with a session-unique number (``no``: this number, for a
        store rebuilt from a copy; later streams are numbered after it)."""
        if no is None:
            no = self._next_no + 1
        self._next_no = max(self._next_no, no)
        s = Stream(self, no, standalone=standalone)
        self.streams[s.no] = s
        return s

    def find(self, event_id: str) -> tuple[Stream, int] | None:
        """The stream an event id belongs to and the seq it names."""
        parsed = parse_event_id(event_id)
        if parsed is None:
            return None
        s = self.streams.get(parsed[0])
        if s is None or parsed[1] > s.last_seq:
            return None
        return s, parsed[1]

    @property
    def size(self) -> int:
        """Events stored across all streams."""
        return self._live

    def discard(self, stream: Stream) -> None:
        """Forget a finished stream nobody can resume (it was answered as JSON)."""
        if self.streams.pop(stream.no, None) is stream:
            self._live -= len(stream.events)
            stream.events.clear()
        if self._live == 0:
            self._order = None  # nothing stored: drop the bookkeeping too
        elif self._order is not None and len(self._order) > 2 * self.max_events:
            # Entries of discarded streams would otherwise pile up between evictions.
            self._order = deque(no for no in self._order if no in self.streams)

    def _added(self, stream: Stream) -> None:
        order = self._order
        if order is None:
            order = self._order = deque()
        order.append(stream.no)
        self._live += 1
        streams = self.streams
        while self._live > self.max_events:
            oldest = streams.get(order.popleft())
            if oldest is None:
                continue  # discarded: its events were already uncounted
            if oldest.events:
                del oldest.events[0]
                self._live -= 1
            if oldest.done and not oldest.events and not oldest.pending:
                del streams[oldest.no]

    def finish_all(self) -> None:
        """Wake every consumer: the session is over."""
        for s in list(self.streams.values()):
            s.finish()
