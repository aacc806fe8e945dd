"""The dispatcher: runs the peer's requests.

It owns what a request needs to run: a handler slot (at most
``Limits.max_concurrent_requests`` at once), a place in a bounded FIFO queue when no
slot is free (``Limits.max_queued_requests``; past it the request is refused with
SERVER_BUSY), a cancel scope the peer's ``notifications/cancelled`` and the session's
end can cancel, and a task: one handler task per request in the session's handlers
nursery, or the task that fed the request (:meth:`Dispatcher.run_inline`: no spawn and
no scheduler pass when the handler finishes without waiting).

The same dispatcher serves a long-lived session's requests and a request-scoped
session's single one (a 2026-07-28 request over HTTP, :mod:`mcpactor.session.scoped`),
which has no handlers nursery: its requests run in their callers' tasks.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from mcpactor.protocol import connection as pc
from mcpactor.protocol.errors import ConnectionClosed, InternalError, McpError, ServerBusy
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.session.batch import BatchCollector
from mcpactor.session.context import RequestContext
from mcpactor.session.eager import run_eagerly

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.session.writer import Writer

log = logging.getLogger("mcpactor.session")

__all__ = ["Dispatcher"]


def _nothing() -> None:
    pass


class Dispatcher:
    """Inbound requests: slots, the queue, cancel scopes, handler tasks (see the module)."""

    __slots__ = ("_cancel_reasons", "_idle", "_inline", "_inline_done", "accepting",
                 "free_slots", "handlers", "scopes", "session", "waiting", "writer")

    def __init__(self, session: Session, writer: Writer) -> None:
        self.session = session
        self.writer = writer
        # Handler slots: a plain count (cheaper than a Semaphore on the per-request path).
        # A request that finds none waits in ``waiting`` (made on first use), which a
        # finishing handler passes its slot to: while anything waits, no slot is free.
        self.free_slots = session.limits.max_concurrent_requests
        self.waiting: OrderedDict[
            RequestId, tuple[pc.RequestReceived, trio.CancelScope, BatchCollector | None]
        ] | None = None
        #: The cancel scope of every request running or queued, by id.
        self.scopes: dict[RequestId, trio.CancelScope] = {}
        # Why the peer cancelled each request, kept only while tracing (for cancel_applied).
        self._cancel_reasons: dict[RequestId, str | None] = {}
        #: The nursery of handler tasks (a session's tree); None in a request-scoped
        #: session, whose requests run in their callers' tasks.
        self.handlers: trio.Nursery | None = None
        #: Whether requests are taken (from the tree's start, or the scope's, to the end).
        self.accepting = False
        # Handlers running in the task that fed their request (see run_inline): the
        # (shielded) scope of each, cancelled when the session ends, as the handlers
        # nursery cancels its tasks; True once cancelled that way. Created on first use
        # (idle sessions by the thousand should stay small).
        self._inline: dict[trio.CancelScope, bool] | None = None
        self._inline_done: trio.Event | None = None
        self._idle: trio.Event | None = None

    # -- taking requests --------------------------------------------------------------

    async def dispatch(
        self, ev: pc.RequestReceived, batch: BatchCollector | None,
        on_block: Callable[[], None] | None,
    ) -> None:
        """Run one request the router handed over: in a handler task, in the calling
        task (``on_block``, see :meth:`run_inline`), or, with no free slot, later."""
        if not self.accepting:
            # Only feed() gets here: the session closed while this message was routed.
            raise ConnectionClosed("the session is closed")
        # Taking a slot never yields: the reader routes a whole read's worth of
        # requests in one scheduler step. Without a free slot the request waits in
        # the queue (or is refused): the reader never waits for a handler, or the
        # responses and cancellations behind the request would not be read.
        if self.free_slots:
            self.free_slots -= 1
        else:
            await self._queue_request(ev, batch)
            return
        handlers = self.handlers
        if handlers is None and on_block is None:
            # Request-scoped: no handlers nursery, so the caller's task runs it.
            on_block = _nothing
        inline = on_block is not None and batch is None
        # An inline handler's scope also keeps its caller's cancellation out.
        scope = trio.CancelScope(shield=inline)
        self.scopes[ev.id] = scope
        if inline:
            assert on_block is not None
            await self.run_inline(ev, scope, on_block)
        else:
            assert handlers is not None, "a request-scoped session takes no batches"
            handlers.start_soon(self.run_request, ev, scope, batch)

    def cancel(self, ev: pc.CancelReceived) -> None:
        """The peer's ``notifications/cancelled``: a queued request leaves the queue and
        never runs; a running one has its scope cancelled."""
        session = self.session
        queued = self.waiting
        if queued is not None and ev.request_id in queued:
            session._emit("reader", "cancel_requested",
                          {"id": ev.request_id, "by": "peer", "reason": ev.reason,
                           "target": "queued"})
            self._unqueue(ev.request_id, "peer", ev.reason)
            return
        target = self.scopes.get(ev.request_id)
        if session._log is not None:
            session._emit("reader", "cancel_requested",
                          {"id": ev.request_id, "by": "peer", "reason": ev.reason,
                           "target": "running" if target is not None else "none"})
            if target is not None:
                self._cancel_reasons[ev.request_id] = ev.reason
        if target is not None:
            target.cancel()

    # -- the queue of requests waiting for a handler slot --------------------------------

    async def _queue_request(self, ev: pc.RequestReceived, batch: BatchCollector | None) -> None:
        """Queue a request that found no free handler slot, or refuse it when the queue
        is full too ("server busy, retry"), so the reader can read on."""
        queued = self.waiting
        if queued is None:
            queued = self.waiting = OrderedDict()
        session = self.session
        limits = session.limits
        if len(queued) < limits.max_queued_requests:
            # Its scope is in scopes from now on: the drain waits for it as for a
            # running handler, and it starts (as a handler task) when a slot is passed on.
            scope = trio.CancelScope()
            self.scopes[ev.id] = scope
            queued[ev.id] = (ev, scope, batch)
            return
        err = ServerBusy(
            "Server busy: too many requests in progress; retry later",
            data={"reason": "busy", "retryable": True,
                  "max_concurrent_requests": limits.max_concurrent_requests,
                  "max_queued_requests": limits.max_queued_requests},
        )
        data = session.connection.send_error(ev.id, err)
        if data is None:  # pragma: no cover - a request just received is never cancelled
            if batch is not None:
                batch.skip()
        elif batch is not None:
            batch.add(data)
        else:
            await self.writer.send(data, ev.id)

    def _release_slot(self) -> None:
        """A handler is done with its slot: pass it to the first queued request."""
        queued = self.waiting
        if queued:
            handlers = self.handlers
            if handlers is not None and not handlers.cancel_scope.cancel_called:
                _, (ev, scope, batch) = queued.popitem(last=False)
                handlers.start_soon(self.run_request, ev, scope, batch)
                return
        self.free_slots += 1

    def _unqueue(self, rid: RequestId, by: str, why: str | None) -> None:
        """Take a queued request out; it never runs (traced as cancelled before start)."""
        assert self.waiting is not None
        _, _, batch = self.waiting.pop(rid)
        self.scopes.pop(rid, None)
        session = self.session
        session.connection.forget_request(rid)
        session._emit(f"handler:{rid}", "cancel_applied",
                      {"id": rid, "stage": "before_start", "by": by, "why": why})
        if batch is not None and by == "peer":
            batch.skip()
        if self._idle is not None and not self.scopes:
            self._idle.set()

    def drop_queued(self) -> None:
        """The session ends: the requests still queued never run."""
        queued = self.waiting
        while queued:
            self._unqueue(next(iter(queued)), "supervisor", self.session.close_reason)

    async def wait_idle(self) -> None:
        """Wait until no request runs or waits (the supervisor's drain, bounded by the
        caller)."""
        self._idle = trio.Event()
        await self._idle.wait()

    # -- running one request ----------------------------------------------------------

    async def run_request(
        self, ev: pc.RequestReceived, scope: trio.CancelScope, batch: BatchCollector | None
    ) -> None:
        """Run one request's handler in its scope and send its answer (a handler task's
        whole life, or an inline handler's)."""
        rid = ev.id
        session = self.session
        conn = session.connection
        trace = session._log
        # The flat handler events leave their actor to the encoder ("handler:<id>"); the
        # rare others name it.
        data: bytes | None = None
        outcome = "ok"
        try:
            with scope:
                if scope.cancel_called:
                    outcome = "cancelled_before_start"
                else:
                    if trace is not None:
                        trace((session._clock(), session.id, None, "handler_started", rid,
                               ev.method, None))
                    ctx = RequestContext(
                        session, rid, ev.method, ev.params, ev.raw_params, ev.progress_token,
                        scope, ev.modern,
                    )
                    try:
                        result = await session._handle(ctx)
                        data = conn.send_response(rid, result)
                    except McpError as exc:
                        outcome = "error"
                        data = conn.send_error(rid, exc)
                    except Exception as exc:
                        outcome = "failed"
                        log.exception("session %s: handler for %s (id %r) failed",
                                      session.id, ev.method, rid)
                        session._emit(f"handler:{rid}", "handler_failed", {"id": rid, "error": repr(exc)})
                        data = conn.send_error(rid, InternalError(f"Internal error: {exc}"))
        except trio.Cancelled:
            # Not our scope: the session is shutting down around the handler.
            conn.forget_request(rid)
            session._emit(f"handler:{rid}", "cancel_applied", {"id": rid, "stage": "running",
                                                    "by": "supervisor",
                                                    "why": session.close_reason})
            raise
        finally:
            self.scopes.pop(rid, None)
            self._release_slot()
            if self._idle is not None and not self.scopes:
                self._idle.set()
        if scope.cancelled_caught or outcome == "cancelled_before_start":
            conn.forget_request(rid)
            if trace is not None and self._inline is not None and self._inline.get(scope):
                # The session's end cancelled this inline handler (end_inline): traced as
                # the end of the handlers nursery is for a handler task.
                session._emit(f"handler:{rid}", "cancel_applied", {"id": rid, "stage": "running",
                                                        "by": "supervisor",
                                                        "why": session.close_reason})
            elif trace is not None:
                stage = "before_start" if outcome == "cancelled_before_start" else "running"
                session._emit(f"handler:{rid}", "cancel_applied",
                              {"id": rid, "stage": stage, "by": "peer",
                               "why": self._cancel_reasons.pop(rid, None)})
            if batch is not None:
                batch.skip()
            return
        if trace is not None:
            if self._cancel_reasons:
                self._cancel_reasons.pop(rid, None)
            trace((session._clock(), session.id, None, "handler_finished", rid, outcome,
                   data is None))
        if batch is not None:
            if data is None:
                batch.skip()
            else:
                batch.add(data)
        elif data is not None:
            await self.writer.send_in_place(data, rid)

    async def run_inline(
        self, ev: pc.RequestReceived, scope: trio.CancelScope, on_block: Callable[[], None]
    ) -> None:
        """Run a request's handler in the calling task, as if it were a handler task.

        It starts at once (no spawn, no scheduler pass) and usually finishes before its
        first wait; if it waits, ``on_block()`` is called first (:func:`run_eagerly`).
        It keeps a handler task's guarantees: its scope is in ``scopes`` (the peer's
        cancellation, the drain), it holds a slot, it traces the same events, and only
        the peer or the session cancel it: its scope is shielded, which keeps the
        caller's own cancellation out (an HTTP client that leaves does not cancel its
        request), and the session cancels it where it cancels its handlers nursery
        (:meth:`end_inline`). One scope, not a shield around the request's scope: a
        cancel scope costs ~6 us to enter and leave.
        """
        inline = self._inline
        if inline is None:
            inline = self._inline = {}
        inline[scope] = False
        try:
            await run_eagerly(self.run_request(ev, scope, None), on_block)
        finally:
            del inline[scope]
            done = self._inline_done
            if done is not None and not inline:
                done.set()

    def stop_inline(self, deadline: float | None = None) -> None:
        """Cancel the handlers running in their callers' tasks (at ``deadline``, when
        given: a graceful end's drain budget); they are then traced as cancelled by the
        session's end."""
        inline = self._inline
        if not inline:
            return
        for scope in inline:
            if not scope.cancel_called:
                inline[scope] = True
                if deadline is None:
                    scope.cancel()
                else:
                    scope.deadline = min(scope.deadline, deadline)

    async def end_inline(self) -> None:
        """Cancel the handlers running in their callers' tasks and wait for them, as the
        handlers nursery does for its own (bounded by the drain timeout)."""
        inline = self._inline
        if not inline:
            return
        self.stop_inline()
        with trio.CancelScope(shield=True) as bound:
            bound.deadline = trio.current_time() + self.session.limits.drain_timeout
            while inline:
                self._inline_done = trio.Event()
                await self._inline_done.wait()
        self._inline_done = None

    # -- for metrics ------------------------------------------------------------------

    @property
    def slots_in_use(self) -> int:
        """Handler slots taken by running requests."""
        return self.session.limits.max_concurrent_requests - self.free_slots

    @property
    def queued_requests(self) -> int:
        """Requests waiting for a handler slot."""
        return len(self.waiting) if self.waiting else 0
