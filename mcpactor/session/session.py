"""The per-session actor tree.

```
Session.run()                 supervisor: one nursery, the failure policy below
 ├─ reader                    transport → Connection → route each event
 ├─ writer                    sole owner of transport.send; batches what is queued
 │                            (its code and write token: session/writer.py)
 ├─ notifier                  runs notification and progress callbacks in order
 │                            (started on first use: most sessions never need it)
 └─ handlers nursery          one task per inbound request, each in its own cancel scope
                              (or, fed by an HTTP POST, run in the POST's own task
                              until it first waits: see feed())
```

Actors talk through bounded memory channels: the writer's mailbox (every outbound byte
goes through it, so ordering is the order of enqueueing) and the notifier's mailbox.
The reader routes inline what is cheap and cannot block (resolving a waiter, cancelling
a scope) and hands everything that runs user code to a task or a mailbox.

Failure policy, in one place:
- a handler that raises answers -32603 (or its McpError's code); the session lives on;
- a cancelled handler sends nothing; a response that loses the race with a
  cancellation is suppressed by the Connection and traced, never sent twice;
- a clean end of input: in-flight handlers may finish within ``Limits.drain_timeout``,
  then are cancelled; queued output is flushed; waiters fail with ConnectionClosed;
- a broken transport on write ends the session the same way;
- a bug in an actor (an unexpected exception) ends the session; the exception is
  logged with the session id and traced as ``actor_failed``, then re-raised.
"""

from __future__ import annotations

import logging
import math
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.observability import switch as observe
from mcpactor.protocol import connection as pc
from mcpactor.protocol.connection import MAX_KEPT_TOKENS, Connection
from mcpactor.protocol.errors import (
    ConnectionClosed,
    InternalError,
    InvalidRequest,
    LocalProtocolError,
    McpError,
    RequestTimeout,
    ServerBusy,
)
from mcpactor.protocol.jsonrpc import Batch, Invalid, Message, RequestId, encode_error
from mcpactor.session.batch import BatchCollector
from mcpactor.session.context import RequestContext
from mcpactor.session.eager import run_eagerly
from mcpactor.session.handler import SessionHandler
from mcpactor.session.limits import Limits
from mcpactor.session.state import SessionState
from mcpactor.session.tracker import ProgressCallback, RequestTracker, Timeout, Waiter
from mcpactor.session.writer import WriterActor
from mcpactor.tracing import entropy
from mcpactor.tracing.tasks import TRACK, current_node, spawn_root, untracked
from mcpactor.tracing.tracer import Compact, Tracer
from mcpactor.transports.base import (
    Oversize,
    Transport,
    TransportClosed,
    aclose_quietly,
)

if TYPE_CHECKING:
    from mcpactor.observability.instrumentation import SessionObserver

log = logging.getLogger("mcpactor.session")

#: The sessions running in this Trio run (see :func:`live_sessions`).
_LIVE: trio.lowlevel.RunVar[weakref.WeakSet[Session]] = trio.lowlevel.RunVar("mcpactor_sessions")


def live_sessions() -> list[Session]:
    """The sessions whose actor tree runs in the current Trio run, in no particular
    order (a server ending on SIGTERM closes them all: :mod:`mcpactor.server.termination`)."""
    try:
        return list(_LIVE.get())
    except LookupError:
        return []


_urandom = entropy.real("urandom")


def new_session_id() -> str:
    """A fresh session id (from the real entropy source: the runtime's own bookkeeping
    is never part of what a trace captures)."""
    return uuid.UUID(bytes=_urandom(16), version=4).hex


class Session(WriterActor):
    """One MCP session: a Connection, a transport, a handler, and the actors between.

    Call :meth:`run` in a nursery (``await nursery.start(session.run)``); it returns when
    the session ends. :meth:`request` and :meth:`notify` may be called from any task.
    """

    def __init__(
        self,
        transport: Transport,
        connection: Connection,
        handler: SessionHandler,
        *,
        tracer: Tracer | None = None,
        session_id: str | None = None,
        limits: Limits = Limits(),  # noqa: B008 - frozen, shared safely
    ) -> None:
        self.transport = transport
        self.connection = connection
        self.handler = handler
        self.tracer = tracer
        # The tracer's log and clock, bound once: every event is one call of ``log`` with
        # a compact tuple (see mcpactor.tracing.tracer); messages are traced as the bytes
        # received or sent.
        self._log: Callable[[Compact], None] | None = None
        self._clock: Callable[[], int] = int
        if tracer is not None:
            self._log = tracer.log
            self._clock = tracer.clock
        self.id = session_id or new_session_id()
        self.limits = limits
        self.tracker = RequestTracker()
        # [tasks] Progress callbacks of answered requests that created a task.
        self._kept_progress: dict[RequestId, ProgressCallback] = {}
        # The notifier's mailbox exists from its first job on (see _ensure_notifier).
        self._note_send: trio.MemorySendChannel[Callable[[], Awaitable[None]]] | None = None
        # Handler slots: a plain count (cheaper than a Semaphore on the per-request path).
        # A request that finds none waits in _waiting (made on first use), which a
        # finishing handler passes its slot to: while anything waits, no slot is free.
        self._free_slots = limits.max_concurrent_requests
        self._waiting: OrderedDict[
            RequestId, tuple[pc.RequestReceived, trio.CancelScope, BatchCollector | None]
        ] | None = None
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        # Why the peer cancelled each request, kept only while tracing (for cancel_applied).
        self._cancel_reasons: dict[RequestId, str | None] = {}
        self._handlers: trio.Nursery | None = None
        # Handlers running in the task that fed their request (see _run_inline): the
        # (shielded) scope of each, cancelled when the session ends, as the handlers
        # nursery cancels its tasks; True once cancelled that way. Created on first use
        # (idle sessions by the thousand should stay small).
        self._inline: dict[trio.CancelScope, bool] | None = None
        self._inline_done: trio.Event | None = None
        self._root: trio.Nursery | None = None
        self._reader_scope = trio.CancelScope()
        self._eof = False
        # Told when the session winds down gracefully (see when_winding_down); True
        # once they were, so that the supervisor drains as it does at end of input.
        self._on_wind_down: list[Callable[[], None]] | None = None
        self._graceful = False
        self._idle: trio.Event | None = None
        self._init_writer()
        self.started = trio.Event()
        self.closed = trio.Event()
        self.initialized = trio.Event()
        self.close_reason: str | None = None
        #: Typed per-session state of the layers above (one value per class).
        self.state = SessionState()
        # Observability (mcpactor.observability): None unless this process observes its
        # sessions; then its hooks below see requests, messages and the end. Handlers
        # are called through _handle, the observer's wrapper when there is one.
        self.observer: SessionObserver | None = None
        self._handle: Callable[[RequestContext], Awaitable[Any]] = handler.handle_request
        if observe.ACTIVE is not None:
            self.observer = observe.ACTIVE.session(self)
            if self.observer is not None:
                self._handle = self.observer.wrap(handler.handle_request)

    # -- supervisor -------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the actor tree until the input ends, the transport breaks or :meth:`close`.

        The tree runs in a task of its own, the supervisor, which a recording follows
        (:mod:`mcpactor.tracing.tasks`) with everything it starts; this task only waits.
        """
        ensure = getattr(self.tracer, "ensure_started", None)
        if ensure is not None:
            ensure()
            # A recording picks its clock when it starts (virtual time in a MockClock run).
            self._clock = self.tracer.clock  # type: ignore[union-attr]
        ready = trio.Event()
        async with trio.open_nursery() as outer:
            spawn_root(outer, self.id, self.id, self._supervise, ready, rec=self.tracer)
            await ready.wait()
            task_status.started()

    async def _supervise(self, ready: trio.Event) -> None:
        self._emit("supervisor", "session_started", {"role": self.connection.role.value,
                                                      "transport": self.transport.name})
        try:
            live = _LIVE.get()
        except LookupError:
            live = weakref.WeakSet()
            _LIVE.set(live)
        live.add(self)
        try:
            async with trio.open_nursery() as root:
                root.start_soon(self._actor, "writer", self._writer)
                self._root = root
                async with trio.open_nursery() as handlers:
                    self._handlers = handlers
                    self.started.set()
                    ready.set()
                    await self._actor("reader", self._reader)
                    if (self._eof or self._graceful) and self._scopes:
                        # A clean end of input (stdin closed after the last request) still
                        # gets its answers, within the drain budget.
                        self._emit("supervisor", "draining", {"in_flight": len(self._scopes)})
                        with trio.move_on_after(self.limits.drain_timeout):
                            self._idle = trio.Event()
                            await self._idle.wait()
                    handlers.cancel_scope.cancel()
                    self._drop_queued()
                    self._handlers = None  # feed() refuses from here on
                await self._end_inline()
                self._shutdown_waiters()
                # Closing the mailboxes lets the writer flush what is queued, then stop.
                self._out_send.close()
                if self._note_send is not None:
                    self._note_send.close()
                root.cancel_scope.deadline = trio.current_time() + self.limits.drain_timeout
        finally:
            ready.set()
            self._drop_queued()
            await self._end_inline()
            self._shutdown_waiters()
            self.connection.close()
            # Closing the transport is the transport's business: its steps are not the
            # session's (a replay's transport closes in none), so they are not recorded;
            # otherwise whatever runs on after the session (a task) would wait for them.
            with untracked():
                await aclose_quietly(self.transport)
            self._emit("supervisor", "session_closed", {"reason": self.close_reason})
            if self.tracer is not None:
                self.tracer.session_closed(self.id)
            if self.observer is not None:
                self.observer.closed()
            live.discard(self)
            self.closed.set()
            try:
                self.handler.on_closed(self)
            except Exception:
                log.exception("session %s: on_closed hook failed", self.id)

    async def _actor(self, name: str, fn: Callable[[], Awaitable[None]]) -> None:
        self._emit(name, "actor_started", {})
        try:
            await fn()
        except Exception as exc:
            self.close_reason = self.close_reason or f"{name} failed: {exc!r}"
            self._emit(name, "actor_failed", {"error": repr(exc)})
            log.exception("session %s: actor %s failed", self.id, name)
            raise
        self._emit(name, "actor_stopped", {})

    def _shutdown_waiters(self) -> None:
        ids = self.tracker.fail_all(
            ConnectionClosed(f"the session ended ({self.close_reason or 'closed'})")
        )
        for rid in ids:
            self.connection.abandon_request(rid)

    def close(self, reason: str = "closed by the application", *, graceful: bool = False) -> None:
        """End the session: stop reading; in-flight handlers are cancelled.

        ``graceful`` (a server shutting down): the handlers that asked to be told
        (:meth:`when_winding_down`: 2026-07-28 listen streams) finish with an answer
        first, the session then draining as at the end of its input."""
        if self.close_reason is None:
            self.close_reason = reason
        if self._log is not None and not self._reader_scope.cancel_called:
            self._external("close_requested",
                           {"reason": reason, "graceful": True} if graceful else {"reason": reason})
        if graceful and not self._reader_scope.cancel_called:
            self._wind_down()
        self._reader_scope.cancel()

    def _wind_down(self) -> None:
        callbacks = self._on_wind_down
        if callbacks:
            self._graceful = True
            for fn in list(callbacks):
                fn()

    def when_winding_down(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn`` (without waiting) when the session starts to end gracefully: the
        peer's input ended cleanly, or ``close(graceful=True)``. A handler meant to run
        until cancelled (a 2026-07-28 ``subscriptions/listen``) can then finish with an
        answer, within the drain budget, instead of being cut. Returns the function
        that takes ``fn`` back."""
        if self._eof or self._graceful:
            fn()
        if self._on_wind_down is None:
            self._on_wind_down = []
        self._on_wind_down.append(fn)

        def forget() -> None:
            if self._on_wind_down is not None and fn in self._on_wind_down:
                self._on_wind_down.remove(fn)
        return forget

    def _external(self, kind: str, data: dict[str, Any]) -> None:
        """Trace something done to this session by code the recording does not follow
        (a signal handler, the HTTP layer), with where in the followed tasks' steps it
        happened, so that a replay does it at that point. Done by a followed task (any
        session's: a replay repeats those steps), it needs no record."""
        if current_node() is not None:
            return
        position = getattr(self.tracer, "position", None)
        where = position() if position is not None else None
        self._emit("external", kind, {**data, "at": list(where) if where is not None else None})

    # -- reader -----------------------------------------------------------------------

    async def _take(
        self, data: bytes, on_block: Callable[[], None] | None = None,
        parsed: Message | Invalid | Batch | None = None, yields: int = 0,
    ) -> None:
        """Decode one inbound message and route its events (the reader's step).

        ``yields``: how many times the transport's receive yielded to the scheduler
        before it handed the message out; traced, for the replay.
        """
        events = self.connection.receive(data, parsed)
        if self.observer is not None:
            self.observer.received(data, events)
        log = self._log
        if log is not None:
            first = events[0] if events else None
            if first.__class__ is pc.Reply and first.why == "parse error":
                log((self._clock(), self.id, "reader", "message_in",
                     {"raw": data.decode("utf-8", "replace"), "yields": yields}))
            else:
                log((self._clock(), self.id, "reader", "message_in", data, yields))
        for ev in events:
            await self._route(ev, None, on_block)

    async def feed(
        self, data: bytes, on_block: Callable[[], None] | None = None,
        parsed: Message | Invalid | Batch | None = None,
    ) -> None:
        """Take one inbound message in the caller's task, exactly as the reader would.

        For message transports whose messages arrive in tasks of their own (each HTTP
        POST is one): routing the message where it arrived saves the hop through the
        transport's queue and the reader, a scheduler pass per message. Use it for all
        of a transport's messages or none, or their order is lost. Raises
        :class:`ConnectionClosed` once the session is closing.

        ``on_block``: a lone request's handler runs here, in the caller's task, and this
        returns when it is done; ``on_block()`` is called if the handler has to wait for
        anything (see :meth:`_run_inline`). Without it, the handler gets a task.
        ``parsed``: ``jsonrpc.parse(data)``, when the caller has it already.
        """
        if (self._handlers is None or self._eof or self._reader_scope.cancel_called
                or self._out_broken):
            raise ConnectionClosed("the session is closed")
        try:
            await self._take(data, on_block, parsed)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ConnectionClosed("the session is closed") from None

    async def _reader(self) -> None:
        receive = self.transport.receive
        log = self._log
        task = trio.lowlevel.current_task()
        node = current_node() if log is not None else None
        # Inside the transport the reader carries its io node: the transport's reads and
        # tasks are not the session's (mcpactor.tracing.tasks).
        io = node.io() if node is not None else None
        if log is not None:
            self._emit("reader", "transport_opened", {"transport": self.transport.name})
        with self._reader_scope:
            while True:
                before = task._schedule_points if log is not None else 0
                token = TRACK.set(io) if io is not None else None
                try:
                    data = await receive()
                except trio.EndOfChannel:
                    self._eof = True
                    self.close_reason = self.close_reason or "end of input"
                    self._wind_down()
                    if log is not None:
                        self._emit("reader", "transport_closed",
                                   {"yields": task._schedule_points - before})
                    return
                except TransportClosed as exc:
                    self.close_reason = self.close_reason or f"transport broke: {exc}"
                    if log is not None:
                        self._emit("reader", "transport_broken",
                                   {"error": str(exc), "yields": task._schedule_points - before})
                    return
                except trio.Cancelled:
                    # The session is closing: traced with the yields the receive made
                    # first, which a replay's transport repeats before it takes the cancel.
                    if log is not None:
                        self._emit("reader", "receive_cancelled",
                                   {"yields": task._schedule_points - before})
                    raise
                finally:
                    if token is not None:
                        TRACK.reset(token)
                yields = task._schedule_points - before if log is not None else 0
                if type(data) is Oversize:
                    if log is not None:
                        self._emit("reader", "message_oversize",
                                   {"size": data.size, "yields": yields})
                    err = InvalidRequest(
                        f"Invalid Request: message of {data.size} bytes exceeds the limit",
                        data={"size": data.size},
                    )
                    await self._send(encode_error(None, err))
                    continue
                assert isinstance(data, bytes)
                await self._take(data, yields=yields)

    async def _route(
        self, ev: pc.Event, batch: BatchCollector | None,
        on_block: Callable[[], None] | None = None,
    ) -> None:
        t = type(ev)
        if t is pc.RequestReceived:
            assert isinstance(ev, pc.RequestReceived)
            if self._handlers is None:
                # Only feed() gets here: the session closed while this message was routed.
                raise ConnectionClosed("the session is closed")
            # Taking a slot never yields: the reader routes a whole read's worth of
            # requests in one scheduler step. Without a free slot the request waits in
            # the queue (or is refused): the reader never waits for a handler, or the
            # responses and cancellations behind the request would not be read.
            if self._free_slots:
                self._free_slots -= 1
            else:
                await self._queue_request(ev, batch)
                return
            inline = on_block is not None and batch is None
            # An inline handler's scope also keeps its caller's cancellation out.
            scope = trio.CancelScope(shield=inline)
            self._scopes[ev.id] = scope
            if inline:
                assert on_block is not None
                await self._run_inline(ev, scope, on_block)
            else:
                self._handlers.start_soon(self._run_request, ev, scope, batch)
        elif t is pc.ResponseReceived:
            assert isinstance(ev, pc.ResponseReceived)
            waiter = self.tracker.resolve(ev.id, ev.result)
            if waiter is None:
                self._emit("tracker", "response_dropped", {"id": ev.id, "reason": "no waiter"})
            elif waiter.on_progress is not None and self.connection.keeps_progress(ev.id):
                # [tasks] The answer created a task: its progress keeps coming.
                self._keep_progress(ev.id, waiter.on_progress)
        elif t is pc.Reply:
            assert isinstance(ev, pc.Reply)
            if batch is not None:
                batch.add(ev.data)
            else:
                await self._send(ev.data, ev.id)
        elif t is pc.NotificationReceived:
            assert isinstance(ev, pc.NotificationReceived)
            mailbox = self._ensure_notifier()
            await mailbox.send(lambda: self.handler.handle_notification(self, ev))
        elif t is pc.CancelReceived:
            assert isinstance(ev, pc.CancelReceived)
            queued = self._waiting
            if queued is not None and ev.request_id in queued:
                self._emit("reader", "cancel_requested",
                           {"id": ev.request_id, "by": "peer", "reason": ev.reason,
                            "target": "queued"})
                self._unqueue(ev.request_id, "peer", ev.reason)
                return
            target = self._scopes.get(ev.request_id)
            if self._log is not None:
                self._emit("reader", "cancel_requested",
                           {"id": ev.request_id, "by": "peer", "reason": ev.reason,
                            "target": "running" if target is not None else "none"})
                if target is not None:
                    self._cancel_reasons[ev.request_id] = ev.reason
            if target is not None:
                target.cancel()
        elif t is pc.ProgressReceived:
            assert isinstance(ev, pc.ProgressReceived)
            self._on_progress(ev)
        elif t is pc.ErrorReceived:
            assert isinstance(ev, pc.ErrorReceived)
            if self.tracker.fail(ev.id, ev.error) is None:
                self._emit("tracker", "response_dropped", {"id": ev.id, "reason": "no waiter"})
        elif t is pc.Initialized:
            assert isinstance(ev, pc.Initialized)
            self._emit("reader", "initialized", {"protocol_version": ev.protocol_version,
                                                 "peer_info": ev.peer_info})
            self.handler.on_initialized(self, ev)
            self.initialized.set()
        elif t is pc.OperationStarted:
            self.handler.on_operation_started(self)
        elif t is pc.Dropped:
            assert isinstance(ev, pc.Dropped)
            self._emit("reader", "message_dropped", {"reason": ev.reason})
            log.debug("session %s: dropped a message: %s", self.id, ev.reason)
        elif t is pc.BatchReceived:
            assert isinstance(ev, pc.BatchReceived)
            # The request the whole answer is tied to (HTTP puts it on that POST's
            # stream): the first one answered, even if only by the Connection itself
            # (a batch of pings has no RequestReceived).
            first = next((e.id for e in ev.events if type(e) is pc.RequestReceived
                          or (type(e) is pc.Reply and e.id is not None)), None)
            collector = BatchCollector(self, ev.expected, first)
            for item in ev.events:
                await self._route(item, collector)
            collector.routed()

    # -- the queue of requests waiting for a handler slot --------------------------------

    async def _queue_request(self, ev: pc.RequestReceived, batch: BatchCollector | None) -> None:
        """Queue a request that found no free handler slot, or refuse it when the queue
        is full too ("server busy, retry"), so the reader can read on."""
        queued = self._waiting
        if queued is None:
            queued = self._waiting = OrderedDict()
        limits = self.limits
        if len(queued) < limits.max_queued_requests:
            # Its scope is in _scopes from now on: the drain waits for it as for a
            # running handler, and it starts (as a handler task) when a slot is passed on.
            scope = trio.CancelScope()
            self._scopes[ev.id] = scope
            queued[ev.id] = (ev, scope, batch)
            return
        err = ServerBusy(
            "Server busy: too many requests in progress; retry later",
            data={"reason": "busy", "retryable": True,
                  "max_concurrent_requests": limits.max_concurrent_requests,
                  "max_queued_requests": limits.max_queued_requests},
        )
        data = self.connection.send_error(ev.id, err)
        if data is None:  # pragma: no cover - a request just received is never cancelled
            if batch is not None:
                batch.skip()
        elif batch is not None:
            batch.add(data)
        else:
            await self._send(data, ev.id)

    def _release_slot(self) -> None:
        """A handler is done with its slot: pass it to the first queued request."""
        queued = self._waiting
        if queued:
            handlers = self._handlers
            if handlers is not None and not handlers.cancel_scope.cancel_called:
                _, (ev, scope, batch) = queued.popitem(last=False)
                handlers.start_soon(self._run_request, ev, scope, batch)
                return
        self._free_slots += 1

    def _unqueue(self, rid: RequestId, by: str, why: str | None) -> None:
        """Take a queued request out; it never runs (traced as cancelled before start)."""
        assert self._waiting is not None
        _, _, batch = self._waiting.pop(rid)
        self._scopes.pop(rid, None)
        self.connection.forget_request(rid)
        self._emit(f"handler:{rid}", "cancel_applied",
                   {"id": rid, "stage": "before_start", "by": by, "why": why})
        if batch is not None and by == "peer":
            batch.skip()
        if self._idle is not None and not self._scopes:
            self._idle.set()

    def _drop_queued(self) -> None:
        """The session ends: the requests still queued never run."""
        queued = self._waiting
        while queued:
            self._unqueue(next(iter(queued)), "supervisor", self.close_reason)

    # -- dispatcher: one task per inbound request --------------------------------------

    async def _run_request(
        self, ev: pc.RequestReceived, scope: trio.CancelScope, batch: BatchCollector | None
    ) -> None:
        rid = ev.id
        conn = self.connection
        trace = self._log
        actor = f"handler:{rid}" if trace is not None else ""
        data: bytes | None = None
        outcome = "ok"
        try:
            with scope:
                if scope.cancel_called:
                    outcome = "cancelled_before_start"
                else:
                    if trace is not None:
                        trace((self._clock(), self.id, actor, "handler_started", rid, ev.method))
                    ctx = RequestContext(
                        self, rid, ev.method, ev.params, ev.raw_params, ev.progress_token, scope,
                        ev.modern,
                    )
                    try:
                        result = await self._handle(ctx)
                        data = conn.send_response(rid, result)
                    except McpError as exc:
                        outcome = "error"
                        data = conn.send_error(rid, exc)
                    except Exception as exc:
                        outcome = "failed"
                        log.exception("session %s: handler for %s (id %r) failed",
                                      self.id, ev.method, rid)
                        self._emit(actor, "handler_failed", {"id": rid, "error": repr(exc)})
                        data = conn.send_error(rid, InternalError(f"Internal error: {exc}"))
        except trio.Cancelled:
            # Not our scope: the session is shutting down around the handler.
            conn.forget_request(rid)
            self._emit(actor, "cancel_applied",
                       {"id": rid, "stage": "running", "by": "supervisor", "why": self.close_reason})
            raise
        finally:
            self._scopes.pop(rid, None)
            self._release_slot()
            if self._idle is not None and not self._scopes:
                self._idle.set()
        if scope.cancelled_caught or outcome == "cancelled_before_start":
            conn.forget_request(rid)
            if trace is not None and self._inline is not None and self._inline.get(scope):
                # The session's end cancelled this inline handler (_end_inline): traced as
                # the end of the handlers nursery is for a handler task.
                self._emit(actor, "cancel_applied", {"id": rid, "stage": "running",
                                                     "by": "supervisor", "why": self.close_reason})
            elif trace is not None:
                stage = "before_start" if outcome == "cancelled_before_start" else "running"
                self._emit(actor, "cancel_applied", {"id": rid, "stage": stage, "by": "peer",
                                                     "why": self._cancel_reasons.pop(rid, None)})
            if batch is not None:
                batch.skip()
            return
        if trace is not None:
            if self._cancel_reasons:
                self._cancel_reasons.pop(rid, None)
            trace((self._clock(), self.id, actor, "handler_finished", rid, outcome, data is None))
        if batch is not None:
            if data is None:
                batch.skip()
            else:
                batch.add(data)
        elif data is not None:
            await self._send_in_place(data, rid)

    async def _run_inline(
        self, ev: pc.RequestReceived, scope: trio.CancelScope, on_block: Callable[[], None]
    ) -> None:
        """Run a request's handler in the calling task, as if it were a handler task.

        It starts at once (no spawn, no scheduler pass) and usually finishes before its
        first wait; if it waits, ``on_block()`` is called first (:func:`run_eagerly`).
        It keeps a handler task's guarantees: its scope is in ``_scopes`` (the peer's
        cancellation, the drain), it holds a slot, it traces the same events, and only
        the peer or the session cancel it: its scope is shielded, which keeps the
        caller's own cancellation out (an HTTP client that leaves does not cancel its
        request), and the session cancels it where it cancels its handlers nursery
        (:meth:`_end_inline`). One scope, not a shield around the request's scope: a
        cancel scope costs ~6 us to enter and leave.
        """
        inline = self._inline
        if inline is None:
            inline = self._inline = {}
        inline[scope] = False
        try:
            await run_eagerly(self._run_request(ev, scope, None), on_block)
        finally:
            del inline[scope]
            done = self._inline_done
            if done is not None and not inline:
                done.set()

    async def _end_inline(self) -> None:
        """Cancel the handlers running in their callers' tasks and wait for them, as the
        handlers nursery does for its own (bounded by the drain timeout)."""
        inline = self._inline
        if not inline:
            return
        for scope in inline:
            if not scope.cancel_called:
                inline[scope] = True
                scope.cancel()
        with trio.CancelScope(shield=True) as bound:
            bound.deadline = trio.current_time() + self.limits.drain_timeout
            while inline:
                self._inline_done = trio.Event()
                await self._inline_done.wait()
        self._inline_done = None

    # -- notifier ---------------------------------------------------------------------

    def _ensure_notifier(self) -> trio.MemorySendChannel[Callable[[], Awaitable[None]]]:
        # An idle session should cost little memory, and a server session rarely gets a
        # notification that needs a callback: the notifier and its mailbox start on
        # first use.
        mailbox = self._note_send
        if mailbox is None:
            mailbox, inbox = trio.open_memory_channel[Callable[[], Awaitable[None]]](
                self.limits.notification_buffer
            )
            self._note_send = mailbox
            if self._root is not None:
                self._root.start_soon(self._actor, "notifier", lambda: self._notifier(inbox))
        return mailbox

    async def _notifier(
        self, inbox: trio.MemoryReceiveChannel[Callable[[], Awaitable[None]]]
    ) -> None:
        async for job in inbox:
            try:
                await job()
            except Exception:
                log.exception("session %s: notification callback failed", self.id)

    async def settle(self) -> None:
        """Wait until the callbacks of the notifications received so far have run (a
        proxy passes a request's log messages on before its answer)."""
        if self._note_send is None or self.closed.is_set():
            return
        done = trio.Event()

        async def mark() -> None:
            done.set()

        with trio.move_on_after(self.limits.drain_timeout):
            try:
                await self._note_send.send(mark)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            await done.wait()

    # -- outbound API -----------------------------------------------------------------

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
        """Send a request and wait for its result (``on_id`` is told the request's id
        before it is sent: what the peer's notifications about it will name).

        Raises :class:`RequestError`-like :class:`McpError` for an error answer,
        :class:`RequestTimeout` after the timeout (a cancellation is sent), and
        :class:`ConnectionClosed` if the session ends first. Cancelling the calling task
        sends ``notifications/cancelled`` to the peer.
        """
        if self.observer is not None:
            return await self.observer.call(
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
        if self.closed.is_set():
            raise ConnectionClosed("the session is closed")
        if not isinstance(timeout, Timeout):
            timeout = Timeout(seconds=timeout)
        rid, data = self.connection.send_request(
            method, params, want_progress=on_progress is not None, result_cls=result_cls
        )
        if on_id is not None:
            on_id(rid)
        now = trio.current_time()
        waiter = Waiter(rid, method, timeout, on_progress, now)
        self.tracker.add(waiter)
        deadline = waiter.deadline_from(now)
        emit = self._emit if self._log is not None else None
        if emit and deadline != math.inf:
            emit("tracker", "timer_set", {"id": rid, "deadline": deadline - now})
        try:
            await self._send(data, related_request)
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
            with trio.move_on_after(self.limits.drain_timeout):
                await waiter.progress_done.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def _give_up(self, rid: RequestId, reason: str) -> None:
        self.tracker.discard(rid)
        try:
            data = self.connection.cancel_request(rid, reason)
        except LocalProtocolError:
            self.connection.abandon_request(rid)
            return
        if data is not None and not self.closed.is_set():
            self._emit("tracker", "cancel_requested", {"id": rid, "by": "local", "reason": reason})
            with trio.CancelScope(shield=True):
                try:
                    await self._send(data)
                except ConnectionClosed:
                    pass

    def _keep_progress(self, rid: RequestId, cb: ProgressCallback) -> None:
        """[tasks] Progress for the answered request ``rid`` (it created a task, whose
        progress token the connection keeps) goes on reaching ``cb``."""
        kept = self._kept_progress
        kept[rid] = cb
        if len(kept) > MAX_KEPT_TOKENS:  # the connection forgot the oldest ones
            for old in [r for r in kept if not self.connection.keeps_progress(r)]:
                del kept[old]

    def forget_task_progress(self, task_id: str) -> None:
        """[tasks] The task ended: its creating request's progress callback is dropped."""
        for rid in self.connection.end_task_progress(task_id):
            self._kept_progress.pop(rid, None)

    def _progress_of_task(self, ev: pc.ProgressReceived, cb: ProgressCallback) -> None:
        """[tasks] Progress of a task this side created, to its creator's callback."""
        if self._log is not None:
            self._emit("reader", "progress", {"id": ev.request_id, "direction": "in",
                                              "progress": ev.progress, "total": ev.total})

        async def job() -> None:
            r = cb(ev.progress, ev.total, ev.message)
            if r is not None:
                await r

        try:
            self._ensure_notifier().send_nowait(job)
        except trio.WouldBlock:
            self._emit("reader", "progress_dropped", {"id": ev.request_id})

    def _on_progress(self, ev: pc.ProgressReceived) -> None:
        waiter = self.tracker.get(ev.request_id)
        if waiter is None:
            kept = self._kept_progress.get(ev.request_id) if self._kept_progress else None
            if kept is not None:
                self._progress_of_task(ev, kept)
            return
        if self._log is not None:
            self._emit("reader", "progress", {"id": ev.request_id, "direction": "in",
                                              "progress": ev.progress, "total": ev.total})
        if waiter.timeout.reset_on_progress and waiter.scope is not None:
            new = waiter.deadline_from(trio.current_time())
            waiter.scope.deadline = new
            self._emit("tracker", "timer_reset", {"id": ev.request_id})
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
                self._ensure_notifier().send_nowait(job)
            except trio.WouldBlock:
                # Progress is advisory: under a flood, drop it rather than stall the reader.
                waiter.progress_ran()
                self._emit("reader", "progress_dropped", {"id": ev.request_id})

    async def notify(
        self, method: str, params: Any = None, *, related_request: RequestId | None = None
    ) -> None:
        """Send a notification (``related_request``: the inbound request it belongs to;
        a stateless request's notifications skip the handshake's phase rules, and are
        dropped once it is answered)."""
        if self.observer is not None:
            params = self.observer.notifying(method, params)
        data = self.connection.send_notification(method, params, related=related_request)
        if data is not None:
            await self._send(data, related_request)

    async def send_progress(
        self,
        rid: RequestId,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bool:
        """Send progress for inbound request ``rid``; False if the Connection refused it."""
        data = self.connection.send_progress(token, progress, total, message)
        if data is None:
            self._emit(f"handler:{rid}", "progress_dropped", {"id": rid, "progress": progress})
            return False
        if self._log is not None:
            self._emit(f"handler:{rid}", "progress", {"id": rid, "direction": "out",
                                                      "progress": progress, "total": total})
        if self.observer is not None:
            self.observer.progress_sent(rid, progress, total, message)
        await self._send(data, rid)
        return True

    @property
    def slots_in_use(self) -> int:
        """Handler slots taken by running requests (for metrics)."""
        return self.limits.max_concurrent_requests - self._free_slots

    @property
    def queued_requests(self) -> int:
        """Requests waiting for a handler slot (for metrics)."""
        return len(self._waiting) if self._waiting else 0

    async def send_raw(self, data: bytes) -> None:
        """Queue already-encoded bytes (the client's initialize goes this way)."""
        await self._send(data)
