"""The one tracing interface the session layer talks to.

A tracer takes events as compact tuples of :data:`WIDTH` items, appended as they happen:
``(clock(), session, actor, kind, v1, v2, v3)``. The recorders' ``log`` is a bare
``list.extend`` of one flat buffer (a C call: the per-message cost of recording is an
extend and a clock reading, and no record stays an object of its own until it is handed
on); the replay's matcher, which must see each event as it happens, has a Python ``log``
that compares it at once. Both take the same tuples, so every call site has one path:
``if log is not None: log((...))``.

The values follow the kind: for the kinds in :data:`FLAT_FIELDS`, the values of those
keys in that order; for any other kind, one dict (the event's keys); unused places are
None. Records the scheduler and the entropy capture add (``sched``, ``read``, ...) start
with 0 and no session or actor: their fields are described in ``docs/trace-format.md``.
"""

from __future__ import annotations

from typing import Any, Protocol

#: One event as a tracer takes it (see the module).
Compact = tuple[Any, ...]

#: The items of every event: a recorder's buffer is a flat list of them, WIDTH at a time.
WIDTH = 7


def pad(event: Compact) -> Compact:
    """``event`` with its unused places filled in (None), as a tracer takes it: for code
    off the per-message path that builds an event with fewer items."""
    if len(event) > WIDTH:
        raise ValueError(f"a trace event has at most {WIDTH} items, not {len(event)}")
    return event + (None,) * (WIDTH - len(event))

#: For each flat kind, the keys of the values that follow the kind, in the order of the
#: event's line: the events of every message and every request.
FLAT_FIELDS: dict[str, tuple[str, ...]] = {
    "message_in": ("msg", "yields"),
    "message_out": ("msg", "related", "yields"),
    "handler_started": ("id", "method"),
    "handler_finished": ("id", "outcome", "suppressed"),
}


class EncodedMessage:
    """A message that is already encoded JSON, carried into a trace event as is.

    The recorder embeds it without decoding (unless a secret has to be redacted).
    Plain ``bytes`` in event data mean the same and cost nothing to make: the session
    passes those; this wrapper is for callers that want the intent spelled out.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"EncodedMessage({self.data[:60]!r})"


class Tracer(Protocol):
    """Receives trace events (see the module). Implementations must be cheap and must
    never raise: ``log`` is called on the per-message path of every session."""

    def log(self, event: Compact, /) -> None:
        """Append one event: ``(clock(), session, actor, kind, v1, v2, v3)``."""
        ...

    def clock(self) -> int:
        """A reading of the trace's clock, in integer nanoseconds (the first item of an
        event)."""
        ...

    def session_closed(self, session: str) -> None:
        """``session`` has ended (a recorder writing one file per session closes it)."""
        ...
