"""The one tracing interface the session layer talks to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

#: One event as a recorder buffers it: the clock's reading in integer nanoseconds,
#: session, actor, kind, then the data. Numbered, and timed from the recorder's origin,
#: only when handed on (:func:`mcpactor.tracing.encode.to_records`): an append is all the
#: session pays at the event. The data is a dict (``emit``'s form, five items), or, for
#: the four events every request makes, its values in a fixed order (:data:`FLAT_FIELDS`):
#: no dict to build here, none to carry to the trace sink and rebuild there.
Compact = tuple[Any, ...]

#: The flat forms of :data:`Compact`: for each kind, the keys of the values that follow
#: the kind, in the order of the event's line. ``message_in``'s ``buffered`` is a flag
#: that the line carries only when it is true.
FLAT_FIELDS: dict[str, tuple[str, ...]] = {
    "message_in": ("msg", "buffered"),
    "message_out": ("msg", "related"),
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
    """Receives trace events. Implementations must be cheap and must never raise:
    they are called on the per-message path of every session.

    ``kind`` is one of the kinds listed in ``docs/trace-format.md``; ``actor`` names the
    actor of the session tree that saw the event; ``data`` is JSON-ready except that
    messages are already-encoded JSON: ``bytes`` (what the session passes: the exact
    bytes received or sent) or :class:`EncodedMessage` values.
    """

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record one event."""
        ...

    def close(self) -> None:
        """Flush and release resources; later events are ignored."""
        ...


class FastTracer(Tracer, Protocol):
    """A tracer with a fast path for the events of every message (the recorders).

    The session asks once, when it starts, and then records its message and handler
    events with ``log((clock(), session, actor, kind, data))`` — two C calls, no Python
    frame — calling ``tick()`` after each message so that the buffer is handed on.
    Tracers that must see each event as it happens (the replay's matcher) do not offer
    it, and get ``emit``.
    """

    def fast_log(self) -> tuple[Callable[[Compact], None], Callable[[], int]] | None:
        """``(log, clock)``, or None to be called through ``emit``."""
        ...

    def tick(self) -> None:
        """Events were logged: hand them on if it is time."""
        ...
