"""Outbound: what this side sends on its own initiative.

Requests to the peer (sampling, elicitation, roots from a server; everything from a
client), with their ids, waiters and timeouts (:mod:`mcpactor.session.tracker`), the
answers and progress the router hands back for them, and notifications and progress
for the peer's requests. A waiter waits in the calling task; its timeout is a cancel
scope deadline that progress pushes back, never past the hard maximum; on expiry a
``notifications/cancelled`` is sent and :class:`RequestTimeout` raised. Cancelling
the calling task sends the cancellation too. [tasks] A request answered with a task
(2025-11-25) keeps its progress callback until the task ends: the connection keeps
its token valid for the task's life.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.protocol import connection as pc
from mcpactor.protocol.connection import MAX_KEPT_TOKENS
from mcpactor.protocol.errors import ConnectionClosed, LocalProtocolError, RequestTimeout
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.session.tracker import ProgressCallback, RequestTracker, Timeout, Waiter

if TYPE_CHECKING:
    from mcpactor.session.notifier import Notifier
    from mcpactor.session.session import Session
    from mcpactor.session.writer import Writer

__all__ = ["Outbound"]


class Outbound:
    """Our requests to the peer and their waiters; notifications and progress we send."""

    __slots__ = ("kept_progress", "notifier", "session", "tracker", "writer")

    def __init__(self, session: Session, writer: Writer, notifier: Notifier) -> None:
        self.session = session
        self.writer = writer
        self.notifier = notifier
        #: Our requests waiting for answers, by id.
        self.tracker = RequestTracker()
        #: [tasks] Progress callbacks of answered requests that created a task, by id.
        self.kept_progress: dict[RequestId, ProgressCallback] = {}

    # -- requests ---------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        on_progress: ProgressCallback | None = None,
        result_cls: Any = None,
        related_request: RequestId | None = None,
        on_id: Callable[[RequestId], None] | None = None,
    ) -> Any:
        """See :meth:`Session.request`."""
        observer = self.session.observer
        if observer is not None:
            return await observer.call(
                self._request, method, params, timeout=timeout, on_progress=on_progress,
                result_cls=result_cls, related_request=related_request, on_id=on_id)
        return await self._request(method, params, timeout=timeout, on_progress=on_progress,
                                   result_cls=result_cls, related_request=related_request,
                                   on_id=on_id)

    async def _request(
        self,
        method: str,
        params: Any,
        *,
        timeout: Timeout | float | None,
        on_progress: ProgressCallback | None,
        result_cls: Any,
        related_request: RequestId | None,
        on_id: Callable[[RequestId], None] | None = None,
    ) -> Any:
        session = self.session
        if session.closed.is_set():
            raise ConnectionClosed("the session is closed")
        if not isinstance(timeout, Timeout):
            timeout = Timeout(seconds=timeout)
        rid, data = session.connection.send_request(
            method, params, want_progress=on_progress is not None, result_cls=result_cls
        )
        if on_id is not None:
            on_id(rid)
        now = trio.current_time()
        waiter = Waiter(rid, method, timeout, on_progress, now)
        self.tracker.add(waiter)
        deadline = waiter.deadline_from(now)
        emit = session._emit if session._log is not None else None
        if emit and deadline != math.inf:
            emit("tracker", "timer_set", {"id": rid, "deadline": deadline - now})
        try:
            await self.writer.send(data, related_request)
            with trio.CancelScope(deadline=deadline) as scope:
                waiter.scope = scope
                await waiter.event.wait()
        except BaseException:
            if not waiter.event.is_set():
                await self._give_up(rid, "request cancelled by the caller")
            raise
        if scope.cancelled_caught and not waiter.event.is_set():
            if emit:
                emit("tracker", "timer_fired", {"id": rid})
            await self._give_up(rid, "timeout")
            raise RequestTimeout(
                f"{method} (id {rid!r}) timed out after {timeout.seconds}s", data={"id": rid}
            )
        if waiter.progress_pending:
            # Progress that arrived before the answer is reported before we return.
            waiter.progress_done = trio.Event()
            with trio.move_on_after(session.limits.drain_timeout):
                await waiter.progress_done.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def _give_up(self, rid: RequestId, reason: str) -> None:
        self.tracker.discard(rid)
        session = self.session
        try:
            data = session.connection.cancel_request(rid, reason)
        except LocalProtocolError:
            session.connection.abandon_request(rid)
            return
        if data is not None and not session.closed.is_set():
            session._emit("tracker", "cancel_requested",
                          {"id": rid, "by": "local", "reason": reason})
            with trio.CancelScope(shield=True):
                try:
                    await self.writer.send(data)
                except ConnectionClosed:
                    pass

    # -- what the router hands back ----------------------------------------------------

    def resolve(self, ev: pc.ResponseReceived) -> None:
        """An answer to one of our requests."""
        waiter = self.tracker.resolve(ev.id, ev.result)
        if waiter is None:
            self.session._emit("tracker", "response_dropped",
                               {"id": ev.id, "reason": "no waiter"})
        elif waiter.on_progress is not None and self.session.connection.keeps_progress(ev.id):
            # [tasks] The answer created a task: its progress keeps coming.
            self._keep_progress(ev.id, waiter.on_progress)

    def _keep_progress(self, rid: RequestId, cb: ProgressCallback) -> None:
        """[tasks] Progress for the answered request ``rid`` (it created a task, whose
        progress token the connection keeps) goes on reaching ``cb``."""
        kept = self.kept_progress
        kept[rid] = cb
        if len(kept) > MAX_KEPT_TOKENS:  # the connection forgot the oldest ones
            connection = self.session.connection
            for old in [r for r in kept if not connection.keeps_progress(r)]:
                del kept[old]

    def forget_task_progress(self, task_id: str) -> None:
        """[tasks] The task ended: its creating request's progress callback is dropped."""
        for rid in self.session.connection.end_task_progress(task_id):
            self.kept_progress.pop(rid, None)

    def _progress_of_task(self, ev: pc.ProgressReceived, cb: ProgressCallback) -> None:
        """[tasks] Progress of a task this side created, to its creator's callback."""
        session = self.session
        if session._log is not None:
            session._emit("reader", "progress", {"id": ev.request_id, "direction": "in",
                                                 "progress": ev.progress, "total": ev.total})

        async def job() -> None:
            r = cb(ev.progress, ev.total, ev.message)
            if r is not None:
                await r

        try:
            self.notifier.mailbox().send_nowait(job)
        except trio.WouldBlock:
            session._emit("reader", "progress_dropped", {"id": ev.request_id})

    def fail(self, ev: pc.ErrorReceived) -> None:
        """An error answer to one of our requests."""
        if self.tracker.fail(ev.id, ev.error) is None:
            self.session._emit("tracker", "response_dropped",
                               {"id": ev.id, "reason": "no waiter"})

    def on_progress(self, ev: pc.ProgressReceived) -> None:
        """Progress on one of our requests: its timeout pushed back, its callback queued
        on the notifier (dropped, never waited for, when the notifier is full)."""
        waiter = self.tracker.get(ev.request_id)
        if waiter is None:
            kept = self.kept_progress.get(ev.request_id) if self.kept_progress else None
            if kept is not None:
                self._progress_of_task(ev, kept)
            return
        session = self.session
        if session._log is not None:
            session._emit("reader", "progress", {"id": ev.request_id, "direction": "in",
                                                 "progress": ev.progress, "total": ev.total})
        if waiter.timeout.reset_on_progress and waiter.scope is not None:
            new = waiter.deadline_from(trio.current_time())
            waiter.scope.deadline = new
            session._emit("tracker", "timer_reset", {"id": ev.request_id})
        cb = waiter.on_progress
        if cb is not None:

            async def job() -> None:
                try:
                    r = cb(ev.progress, ev.total, ev.message)
                    if r is not None:
                        await r
                finally:
                    waiter.progress_ran()

            waiter.progress_pending += 1
            try:
                self.notifier.mailbox().send_nowait(job)
            except trio.WouldBlock:
                # Progress is advisory: under a flood, drop it rather than stall the reader.
                waiter.progress_ran()
                session._emit("reader", "progress_dropped", {"id": ev.request_id})

    def fail_all(self) -> None:
        """The session ended: every waiter fails with ConnectionClosed."""
        if not self.tracker:
            return
        session = self.session
        ids = self.tracker.fail_all(
            ConnectionClosed(f"the session ended ({session.close_reason or 'closed'})")
        )
        for rid in ids:
            session.connection.abandon_request(rid)

    # -- notifications and progress ----------------------------------------------------

    async def notify(
        self, method: str, params: Any = None, *, related_request: RequestId | None = None
    ) -> None:
        """See :meth:`Session.notify`."""
        session = self.session
        if session.observer is not None:
            params = session.observer.notifying(method, params)
        data = session.connection.send_notification(method, params, related=related_request)
        if data is not None:
            await self.writer.send(data, related_request)

    async def send_progress(
        self,
        rid: RequestId,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bool:
        """See :meth:`Session.send_progress`."""
        session = self.session
        data = session.connection.send_progress(token, progress, total, message)
        if data is None:
            session._emit(f"handler:{rid}", "progress_dropped", {"id": rid, "progress": progress})
            return False
        if session._log is not None:
            session._emit(f"handler:{rid}", "progress", {"id": rid, "direction": "out",
                                                         "progress": progress, "total": total})
        if session.observer is not None:
            session.observer.progress_sent(rid, progress, total, message)
        await self.writer.send(data, rid)
        return True
