"""The writer actor: the sole owner of ``transport.send``.

Every outbound message goes through the writer's bounded mailbox, so wire order is the
order of enqueueing; a full mailbox (a slow peer) makes senders wait. One shortcut: a
handler whose final message has nothing queued or being written ahead of it borrows
the writer's *write token* and writes in place, which saves the writer a wake-up per
request on the sequential path. The token, the count of messages handed over but not
yet taken out (a parked writer receives an item directly, so the channel's buffer
alone cannot tell), and whether the transport broke are the writer's state.

:class:`WriterActor` is the part of :class:`~mcpactor.session.session.Session` that is
the writer; the session starts :meth:`WriterActor._writer` in its actor tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from mcpactor.protocol.errors import ConnectionClosed
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.session.limits import Limits
from mcpactor.tracing.tasks import TRACK, Node
from mcpactor.tracing.tracer import Compact
from mcpactor.transports.base import Outgoing, Transport, TransportClosed

__all__ = ["WriterActor"]


class WriterActor:
    """The writer's state and code, shared by the session's tasks (see the module)."""

    # Set by the session (its constructor) before _init_writer().
    transport: Transport
    limits: Limits
    id: str
    close_reason: str | None
    _log: Callable[[Compact], None] | None
    _clock: Callable[[], int]
    _reader_scope: trio.CancelScope

    def _init_writer(self) -> None:
        self._out_send, self._out_recv = trio.open_memory_channel[Outgoing](
            self.limits.outbound_buffer
        )
        # The write token: who is writing to the transport now (writer or a handler).
        self._writing = False
        self._writer_holding = False
        self._queued = 0  # messages handed to the writer's mailbox, not yet taken out
        self._token_free: trio.Event | None = None
        self._out_broken = False
        # The node a writing task carries inside the transport (Node.lend): one for the
        # session, since only the holder of the write token writes.
        self._io_spare: Node | None = None

    def _emit(self, actor: str, kind: str, data: dict[str, Any]) -> None:
        log = self._log
        if log is not None:
            log((self._clock(), self.id, actor, kind, data))

    async def _send(self, data: bytes, related: RequestId | None = None) -> None:
        # send_nowait when the mailbox has room: no scheduler round trip per message.
        # Only a full mailbox (a slow peer) makes the sender wait — that is backpressure.
        # Counted before it is handed over: a parked writer receives the item directly,
        # so the channel's buffer alone cannot tell whether a message is pending.
        self._queued += 1
        try:
            self._out_send.send_nowait((data, related))
        except trio.WouldBlock:
            try:
                await self._out_send.send((data, related))
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self._queued -= 1
                raise ConnectionClosed("the session is closed") from None
            except BaseException:
                self._queued -= 1
                raise
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._queued -= 1
            raise ConnectionClosed("the session is closed") from None

    async def _send_in_place(self, data: bytes, related: RequestId | None) -> None:
        """Send a handler's final message, writing it in place when nothing is queued
        or being written ahead of it.

        The writer actor owns the stream; this borrows its write token for one message,
        which saves the writer a wake-up on the sequential path (one request in flight).
        Order is kept: the token is only borrowed when no earlier message is pending.
        """
        if self._writing or self._writer_holding or self._queued or self._out_broken:
            await self._send(data, related)
            return
        self._writing = True
        try:
            await self._write([(data, related)])
        finally:
            self._release_write_token()

    def _release_write_token(self) -> None:
        self._writing = False
        waiting = self._token_free
        if waiting is not None:
            self._token_free = None
            waiting.set()

    async def _write(self, batch: list[Outgoing]) -> None:
        """Write a batch (the caller holds the write token).

        Traced once written, each message as ``message_out`` with how many times the
        transport's send yielded to the scheduler (what a replay's transport repeats);
        a send that fails or is cancelled is traced as such, with the same count.
        """
        if self._out_broken:
            return
        log = self._log
        if log is None:
            try:
                await self.transport.send(batch)
            except TransportClosed as exc:
                self._broke(exc)
            return
        task = trio.lowlevel.current_task()
        node = TRACK.get()
        # Trio's count of the task's yields (checked by tracing.schedule.internals_ok):
        # the difference around the send is what a replay's transport repeats.
        before = task._schedule_points
        # Inside the transport the task carries its io node: the transport's reads and
        # tasks are not the session's (mcpactor.tracing.tasks).
        if node is not None and node.task is task:
            spare = self._io_spare
            if spare is None:
                spare = self._io_spare = Node(None, self.id)
            token = TRACK.set(node.lend(spare))
        else:
            token = None
        try:
            await self.transport.send(batch)
        except TransportClosed as exc:
            yields = task._schedule_points - before
            self._broke(exc, yields)
            return
        except BaseException:
            self._emit("writer", "send_cancelled", {"yields": task._schedule_points - before})
            raise
        finally:
            if token is not None:
                TRACK.reset(token)
        yields = task._schedule_points - before
        sid = self.id
        clock = self._clock
        for m, rel in batch:
            log((clock(), sid, "writer", "message_out", m, rel, yields))

    def _broke(self, exc: TransportClosed, yields: int = 0) -> None:
        self._out_broken = True
        self.close_reason = self.close_reason or f"transport broke: {exc}"
        self._emit("writer", "transport_broken", {"error": str(exc), "yields": yields})
        self._reader_scope.cancel()

    async def _writer(self) -> None:
        recv = self._out_recv
        receive_nowait = recv.receive_nowait
        async for first in recv:
            # Claimed before any yield, so no handler writes in place ahead of this batch.
            self._writer_holding = True
            batch = [first]
            try:
                while len(batch) < 256:
                    batch.append(receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                pass
            self._queued -= len(batch)
            while self._writing:
                self._token_free = trio.Event()
                await self._token_free.wait()
            self._writing = True
            try:
                await self._write(batch)
            finally:
                self._writer_holding = False
                self._release_write_token()
            # Not kept alive while waiting: an idle session would hold its last message.
            del first, batch
