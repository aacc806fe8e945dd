"""Answering a JSON-RPC batch (2025-03-26) with one array."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpactor.protocol.jsonrpc import RequestId, encode_batch

if TYPE_CHECKING:
    from mcpactor.session.session import Session


class BatchCollector:
    """Collects the answers to one inbound batch and sends them as one array."""

    def __init__(self, session: Session, expected: int, related: RequestId | None) -> None:
        self.session = session
        self.related = related
        self.remaining = expected
        self.parts: list[bytes] = []
        self._routed = False

    def add(self, data: bytes) -> None:
        self.parts.append(data)
        self._done_one()

    def skip(self) -> None:
        self._done_one()

    def routed(self) -> None:
        self._routed = True
        self._maybe_flush()

    def _done_one(self) -> None:
        self.remaining -= 1
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if self._routed and self.remaining <= 0 and self.parts:
            data = encode_batch(self.parts)
            self.parts = []
            session = self.session
            handlers = session.dispatcher.handlers
            assert handlers is not None
            handlers.start_soon(session.writer.send, data, self.related)
