"""Appends to the shared store's logs, batched while a write is in flight.

Scale-out logs every message a session sends before the message leaves (the event
log), and relays requests and responses through the workers' inboxes: a store round
trip per entry. On Redis a round trip costs far more (client, kernel, the store's
wake-up) than the entry's bytes, so under load the appends of concurrent requests are
written together: :class:`GroupCommit` keeps one write in flight and queues the appends
that come meanwhile, which go as the next write, in the order they came
(:meth:`~mcpactor.scaleout.state.SharedState.append_many`: one script over all of
them). An append returns once its entry is stored, as before, so a message is still
sent only after its entry is in the log, and entries of one log keep their order. When
no write is in flight an append goes at once: nothing waits for a batch to fill.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import trio

from mcpactor.scaleout.state import Append, SharedState, SharedStateError

__all__ = ["GroupCommit"]


@attrs.define(eq=False)
class _Pending:
    append: Append
    done: trio.Event = attrs.Factory(trio.Event)
    entry_id: str | None = None
    error: SharedStateError | None = None


class GroupCommit:
    """Batches :meth:`append` calls to ``state`` (see the module); :meth:`run` does
    the writing while it runs, and without it each append is written on its own."""

    def __init__(self, state: SharedState, *, max_batch: int = 256) -> None:
        self.state = state
        self.max_batch = max_batch
        self._queue: list[_Pending] = []
        self._wake = trio.Event()
        self._running = False
        #: Writes made and entries written, for tests and figures.
        self.writes = 0
        self.entries = 0

    async def append(
        self, log: str, fields: Mapping[str, bytes], *, max_len: int, ttl: float | None = None
    ) -> str:
        """Append one entry (see :meth:`SharedState.append`), batched with the others."""
        return (await self.append_all([(log, fields, max_len, ttl)]))[0]

    async def append_all(self, appends: list[Append]) -> list[str]:
        """Append entries in order (see :meth:`SharedState.append_many`), batched with
        the others; their ids once all are stored."""
        items = [_Pending(a) for a in appends]
        if not items:
            return []
        if not self._running:
            await self._write(items)
        else:
            self._queue += items
            self._wake.set()
            for item in items:
                await item.done.wait()
        for item in items:
            if item.error is not None:
                raise item.error
        return [item.entry_id or "" for item in items]

    async def run(self) -> None:
        """Write the queued appends, a batch at a time, until cancelled; appends still
        queued then fail (the store is being left)."""
        self._running = True
        try:
            while True:
                if not self._queue:
                    self._wake = trio.Event()
                    await self._wake.wait()
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
                # Shielded: the entries of a write begun are all answered, even when
                # the worker is stopping (the store bounds each call in time).
                with trio.CancelScope(shield=True):
                    await self._write(batch)
        finally:
            self._running = False
            left, self._queue = self._queue, []
            for item in left:
                item.error = SharedStateError(f"{self.state.name}: the worker is stopping")
                item.done.set()

    async def _write(self, batch: list[_Pending]) -> None:
        try:
            ids = await self.state.append_many([item.append for item in batch])
        except SharedStateError as exc:
            for item in batch:
                item.error = exc
        else:
            for item, entry_id in zip(batch, ids, strict=True):
                item.entry_id = entry_id
        self.writes += 1
        self.entries += len(batch)
        for item in batch:
            item.done.set()


