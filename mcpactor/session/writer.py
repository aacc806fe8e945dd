"""The writer actor: the sole owner of ``transport.send``.

Every outbound message goes through the writer's bounded mailbox, so wire order is the
order of enqueueing; a full mailbox (a slow peer) makes senders wait. One shortcut: a
handler whose final message has nothing queued or being written ahead of it borrows
the writer's *write token* and writes in place, which saves the writer a wake-up per
request on the sequential path. The token, the count of messages handed over but not
yet taken out (a parked writer receives an item directly, so the channel's buffer
alone cannot tell), and whether the transport broke are the writer's state.

A request-scoped session (:mod:`mcpactor.session.scoped`) runs no writer task: every
message is written in place by the task that sends it, holding the same token, so
order is still send order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from mcpactor.protocol.errors import ConnectionClosed
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.transports.base import Outgoing, TransportClosed

if TYPE_CHECKING:
    from mcpactor.session.session import Session

__all__ = ["Writer"]


class Writer:
    """The writer's state and code (see the module); one per session."""

    __slots__ = ("_out_recv", "_out_send", "_queued", "_token_free",
                 "_writer_holding", "_writing", "broken", "closed", "direct", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        # The mailbox, made when first needed (the tree's start, or a send before it):
        # a request-scoped session never needs one.
        self._out_send: trio.MemorySendChannel[Outgoing] | None = None
        self._out_recv: trio.MemoryReceiveChannel[Outgoing] | None = None
        # The write token: who is writing to the transport now (writer or a handler).
        self._writing = False
        self._writer_holding = False
        self._queued = 0  # messages handed to the writer's mailbox, not yet taken out
        self._token_free: trio.Event | None = None
        #: The transport broke on a write: nothing more is written.
        self.broken = False
        #: No writer task (a request-scoped session): every send writes in place.
        self.direct = False
        #: The session ended: sends raise ConnectionClosed.
        self.closed = False

    async def send(self, data: bytes, related: RequestId | None = None) -> None:
        """Queue one message for the transport (``related``: the inbound request it
        belongs to, see :data:`~mcpactor.transports.base.Outgoing`)."""
        if self.direct:
            await self._send_direct(data, related)
            return
        mailbox = self._out_send
        if mailbox is None:
            mailbox = self._mailbox()[0]
        # send_nowait when the mailbox has room: no scheduler round trip per message.
        # Only a full mailbox (a slow peer) makes the sender wait — that is backpressure.
        # Counted before it is handed over: a parked writer receives the item directly,
        # so the channel's buffer alone cannot tell whether a message is pending.
        self._queued += 1
        try:
            mailbox.send_nowait((data, related))
        except trio.WouldBlock:
            try:
                await mailbox.send((data, related))
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self._queued -= 1
                raise ConnectionClosed("the session is closed") from None
            except BaseException:
                self._queued -= 1
                raise
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self._queued -= 1
            raise ConnectionClosed("the session is closed") from None

    def _mailbox(
        self,
    ) -> tuple[trio.MemorySendChannel[Outgoing], trio.MemoryReceiveChannel[Outgoing]]:
        send, recv = self._out_send, self._out_recv
        if send is None or recv is None:
            send, recv = trio.open_memory_channel[Outgoing](
                self.session.limits.outbound_buffer)
            self._out_send, self._out_recv = send, recv
            if self.closed:
                send.close()
        return send, recv

    async def send_in_place(self, data: bytes, related: RequestId | None) -> None:
        """Send a handler's final message, writing it in place when nothing is queued
        or being written ahead of it.

        The writer actor owns the stream; this borrows its write token for one message,
        which saves the writer a wake-up on the sequential path (one request in flight).
        Order is kept: the token is only borrowed when no earlier message is pending.
        """
        if self._writing or self._writer_holding or self._queued or self.broken:
            await self.send(data, related)
            return
        self._writing = True
        try:
            await self._write([(data, related)])
        finally:
            self._release_write_token()

    async def _send_direct(self, data: bytes, related: RequestId | None) -> None:
        """No writer task: wait for the token, then write in place."""
        if self.closed:
            raise ConnectionClosed("the session is closed")
        while self._writing:
            await self._token_released()
        self._writing = True
        try:
            await self._write([(data, related)])
        finally:
            self._release_write_token()

    async def _token_released(self) -> None:
        # One event for every task waiting for the token (several can, with no writer
        # task); each checks again when it wakes.
        waiting = self._token_free
        if waiting is None:
            waiting = self._token_free = trio.Event()
        await waiting.wait()

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
        if self.broken:
            return
        session = self.session
        log = session._log
        if log is None:
            try:
                await session.transport.send(batch)
            except TransportClosed as exc:
                self._broke(exc)
            return
        task = trio.lowlevel.current_task()
        # Trio's count of the task's yields (checked by tracing.schedule.internals_ok):
        # the difference around the send is what a replay's transport repeats.
        before = task._schedule_points
        # Inside the transport the task is muted: the transport's reads and tasks are not
        # the session's (mcpactor.tracing.tasks).
        me = session._task_ids.get(task._counter, 0)
        if me:
            session._muted.add(me)
        try:
            await session.transport.send(batch)
        except TransportClosed as exc:
            yields = task._schedule_points - before
            self._broke(exc, yields)
            return
        except BaseException:
            session._emit("writer", "send_cancelled",
                          {"yields": task._schedule_points - before})
            raise
        finally:
            if me:
                session._muted.discard(me)
        yields = task._schedule_points - before
        sid = session.id
        clock = session._clock
        for m, rel in batch:
            log((clock(), sid, "writer", "message_out", m, rel, yields))

    def _broke(self, exc: TransportClosed, yields: int = 0) -> None:
        self.broken = True
        session = self.session
        session.close_reason = session.close_reason or f"transport broke: {exc}"
        session._emit("writer", "transport_broken", {"error": str(exc), "yields": yields})
        session._stop()

    def close(self) -> None:
        """The session ends: what is queued is still written (the writer task takes it
        out, then stops); later sends raise ConnectionClosed."""
        self.closed = True
        if self._out_send is not None:
            self._out_send.close()

    async def run(self) -> None:
        """The writer task: take what is queued, in batches, and write it."""
        recv = self._mailbox()[1]
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
                await self._token_released()
            self._writing = True
            try:
                await self._write(batch)
            finally:
                self._writer_holding = False
                self._release_write_token()
            # Not kept alive while waiting: an idle session would hold its last message.
            del first, batch
