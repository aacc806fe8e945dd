"""The one tracing interface the session layer talks to."""

from __future__ import annotations

from typing import Any, Protocol


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
