"""The one tracing interface the session layer talks to."""

from __future__ import annotations

from typing import Any, Protocol


class Tracer(Protocol):
    """Receives trace events. Implementations must be cheap and must never raise:
    they are called on the per-message path of every session.

    ``kind`` is one of the kinds listed in ``docs/trace-format.md``; ``actor`` names the
    actor of the session tree that saw the event; ``data`` is JSON-ready (it may hold
    ``orjson.Fragment`` values for messages that are already encoded).
    """

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record one event."""
        ...

    def close(self) -> None:
        """Flush and release resources; later events are ignored."""
        ...
