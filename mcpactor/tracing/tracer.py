"""The one tracing interface the session layer talks to."""

from __future__ import annotations

from typing import Any, Protocol


class EncodedMessage:
    """A message that is already encoded JSON, carried into a trace event as is.

    The session hands the recorder the exact bytes it received or sent; the recorder
    embeds them without decoding (unless a secret has to be redacted). A plain slotted
    class rather than attrs: one is built per traced message.
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
    messages are :class:`EncodedMessage` values (already-encoded JSON).
    """

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record one event."""
        ...

    def close(self) -> None:
        """Flush and release resources; later events are ignored."""
        ...
