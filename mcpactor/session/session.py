"""The session: a supervisor composing the actors that serve one MCP session.

```
Session.run()                 supervisor: one nursery, the failure policy below
 ├─ reader (Router)           transport → Connection → each event to its actor
 ├─ writer (Writer)           sole owner of transport.send; batches what is queued
 ├─ notifier (Notifier)       runs notification and progress callbacks in order
 │                            (started on first use: most sessions never need it)
 ├─ Outbound                  our requests: ids, waiters, timeouts (in the callers' tasks)
 └─ handlers (Dispatcher)     one task per inbound request, each in its own cancel scope
                              (or, fed by an HTTP POST, run in the POST's own task
                              until it first waits: see feed())
```

Each actor is an object with one job (``router.py``, ``writer.py``, ``notifier.py``,
``outbound.py``, ``dispatcher.py``); the session makes them, runs the tree, and is the
API the layers above use (``request``, ``notify``, ``close``, ``state``...). A session
can also serve requests without its tree (:meth:`Session.scoped`, a 2026-07-28 request
over HTTP): the same router, dispatcher and writer, in the caller's task.

Actors talk through bounded memory channels: the writer's mailbox (every outbound byte
goes through it, so ordering is the order of enqueueing) and the notifier's mailbox.
The router routes inline what is cheap and cannot block (resolving a waiter, cancelling
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
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.observability import switch as observe
from mcpactor.protocol.connection import Connection
from mcpactor.protocol.errors import ConnectionClosed
from mcpactor.protocol.jsonrpc import Batch, Invalid, Message, RequestId
from mcpactor.session.context import RequestContext
from mcpactor.session.dispatcher import Dispatcher
from mcpactor.session.handler import SessionHandler
from mcpactor.session.limits import Limits
from mcpactor.session.notifier import Notifier
from mcpactor.session.outbound import Outbound
from mcpactor.session.router import Router
from mcpactor.session.scoped import RequestScope
from mcpactor.session.state import SessionState
from mcpactor.session.tracker import ProgressCallback, Timeout
from mcpactor.session.writer import Writer
from mcpactor.tracing import entropy
from mcpactor.tracing.tasks import TaskTable, current_node, spawn_root, untracked
from mcpactor.tracing.tracer import Compact, Tracer
from mcpactor.transports.base import Transport, aclose_quietly

if TYPE_CHECKING:
    from mcpactor.observability.instrumentation import SessionObserver

__all__ = ["Limits", "Session", "SessionHandler", "live_sessions", "new_session_id"]

log = logging.getLogger("mcpactor.session")

#: The sessions running in this Trio run (see :func:`live_sessions`).
_LIVE: trio.lowlevel.RunVar[weakref.WeakSet[Session]] = trio.lowlevel.RunVar("mcpactor_sessions")


def live_sessions() -> list[Session]:
    """The sessions whose actor tree runs in the current Trio run (or that serve a
    request in a scope, :meth:`Session.scoped`), in no particular order (a server
    ending on SIGTERM closes them all: :mod:`mcpactor.server.termination`)."""
    try:
        return list(_LIVE.get())
    except LookupError:
        return []


_urandom = entropy.real("urandom")


def new_session_id() -> str:
    """A fresh session id (from the real entropy source: the runtime's own bookkeeping
    is never part of what a trace captures)."""
    return uuid.UUID(bytes=_urandom(16), version=4).hex


class Session:
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
        #: The tasks the tracer follows (its TaskTable's numbers, by Trio's number for each
        #: task) and those inside a transport now: the reader and writer mark theirs
        #: muted there (mcpactor.tracing.tasks).
        self._task_ids: dict[int, int] = {}
        self._muted: set[int] = set()
        if tracer is not None:
            self._log = tracer.log
            self._clock = tracer.clock
            tasks = getattr(tracer, "tasks", None)
            if isinstance(tasks, TaskTable):
                self._task_ids, self._muted = tasks.ids, tasks.muted
        self.id = session_id or new_session_id()
        self.limits = limits
        # The actors (each module says what it does).
        self.writer = Writer(self)
        self.notifier = Notifier(self)
        self.dispatcher = Dispatcher(self, self.writer)
        self.outbound = Outbound(self, self.writer, self.notifier)
        self.router = Router(self, self.dispatcher, self.outbound, self.notifier, self.writer)
        #: Our requests waiting for answers (the outbound actor's).
        self.tracker = self.outbound.tracker
        # The tree's root nursery, while it runs (the notifier starts in it).
        self._root: trio.Nursery | None = None
        # Serving without a tree (scoped()): requests run in their callers' tasks.
        self._scoped = False
        # Told when the session winds down gracefully (see when_winding_down); True
        # once they were, so that the supervisor drains as it does at end of input.
        self._on_wind_down: list[Callable[[], None]] | None = None
        self._graceful = False
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
            spawn_root(outer, self.id, self._supervise, ready, tracer=self.tracer)
            await ready.wait()
            task_status.started()

    def scoped(self) -> RequestScope:
        """Serve requests without the actor tree, for as long as the ``async with``
        block: :meth:`feed` runs each request in the caller's task through the same
        router, dispatcher and writer (no supervisor, reader or writer task); leaving
        the block ends the session as the end of :meth:`run` does. For a session that
        lives for one request (a 2026-07-28 request over HTTP). Not recorded: a
        recording follows a tree's tasks, so a recorded session runs one."""
        return RequestScope(self)

    def _begin(self) -> weakref.WeakSet[Session]:
        """The supervisor's first step (a tree's or a scope's): counted live."""
        self._emit("supervisor", "session_started", {"role": self.connection.role.value,
                                                      "transport": self.transport.name})
        try:
            live = _LIVE.get()
        except LookupError:
            live = weakref.WeakSet()
            _LIVE.set(live)
        live.add(self)
        return live

    async def _supervise(self, ready: trio.Event) -> None:
        live = self._begin()
        dispatcher = self.dispatcher
        try:
            async with trio.open_nursery() as root:
                root.start_soon(self._actor, "writer", self.writer.run)
                self._root = root
                async with trio.open_nursery() as handlers:
                    dispatcher.handlers = handlers
                    dispatcher.accepting = True
                    self.started.set()
                    ready.set()
                    await self._actor("reader", self.router.run)
                    if (self.router.eof or self._graceful) and dispatcher.scopes:
                        # A clean end of input (stdin closed after the last request) still
                        # gets its answers, within the drain budget.
                        self._emit("supervisor", "draining",
                                   {"in_flight": len(dispatcher.scopes)})
                        with trio.move_on_after(self.limits.drain_timeout):
                            await dispatcher.wait_idle()
                    handlers.cancel_scope.cancel()
                    dispatcher.drop_queued()
                    # feed() refuses from here on.
                    dispatcher.handlers = None
                    dispatcher.accepting = False
                await dispatcher.end_inline()
                self.outbound.fail_all()
                # Closing the mailboxes lets the writer flush what is queued, then stop.
                self.writer.close()
                self.notifier.close()
                root.cancel_scope.deadline = trio.current_time() + self.limits.drain_timeout
        finally:
            ready.set()
            await self._end(live)

    async def _end(self, live: weakref.WeakSet[Session]) -> None:
        """The supervisor's last steps (a tree's or a scope's)."""
        dispatcher = self.dispatcher
        dispatcher.accepting = False
        dispatcher.drop_queued()
        await dispatcher.end_inline()
        self.outbound.fail_all()
        self.writer.close()
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

    def close(self, reason: str = "closed by the application", *, graceful: bool = False) -> None:
        """End the session: stop reading; in-flight handlers are cancelled.

        ``graceful`` (a server shutting down): the handlers that asked to be told
        (:meth:`when_winding_down`: 2026-07-28 listen streams) finish with an answer
        first, the session then draining as at the end of its input."""
        if self.close_reason is None:
            self.close_reason = reason
        reading = not self.router.stopped
        if self._log is not None and reading:
            self._external("close_requested",
                           {"reason": reason, "graceful": True} if graceful else {"reason": reason})
        if graceful and reading:
            self._wind_down()
        self._stop(drain=graceful and self._graceful)

    def _stop(self, *, drain: bool = False) -> None:
        """Tell the supervisor the session ends: the reader stops (a tree's supervisor
        then drains or cancels the handlers); a scope's handlers, in their callers'
        tasks, are cancelled here (``drain``: at the end of the drain budget)."""
        if self._scoped:
            self.router.stopped = True  # no reader to cancel
            self.dispatcher.stop_inline(
                trio.current_time() + self.limits.drain_timeout if drain else None)
        else:
            self.router.stop()

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
        if self.router.eof or self._graceful:
            fn()
        if self._on_wind_down is None:
            self._on_wind_down = []
        self._on_wind_down.append(fn)

        def forget() -> None:
            if self._on_wind_down is not None and fn in self._on_wind_down:
                self._on_wind_down.remove(fn)
        return forget

    def _emit(self, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Trace one event of ``actor`` (when recording)."""
        log = self._log
        if log is not None:
            log((self._clock(), self.id, actor, kind, data, None, None))

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

    # -- inbound ----------------------------------------------------------------------

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
        anything (see :meth:`Dispatcher.run_inline`). Without it, the handler gets a
        task (in a scope, :meth:`scoped`, it runs here all the same).
        ``parsed``: ``jsonrpc.parse(data)``, when the caller has it already.
        """
        router = self.router
        if (not self.dispatcher.accepting or router.eof or router.stopped
                or self.writer.broken):
            raise ConnectionClosed("the session is closed")
        try:
            await router.take(data, on_block, parsed)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ConnectionClosed("the session is closed") from None

    async def settle(self) -> None:
        """Wait until the callbacks of the notifications received so far have run (a
        proxy passes a request's log messages on before its answer)."""
        await self.notifier.settle()

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
        return await self.outbound.request(
            method, params, timeout=timeout, on_progress=on_progress, result_cls=result_cls,
            related_request=related_request, on_id=on_id)

    def forget_task_progress(self, task_id: str) -> None:
        """[tasks] A task this side created ended: the progress callback of the request
        that created it (2025-11-25 keeps its token valid until then) is dropped."""
        self.outbound.forget_task_progress(task_id)

    async def notify(
        self, method: str, params: Any = None, *, related_request: RequestId | None = None
    ) -> None:
        """Send a notification (``related_request``: the inbound request it belongs to;
        a stateless request's notifications skip the handshake's phase rules, and are
        dropped once it is answered)."""
        await self.outbound.notify(method, params, related_request=related_request)

    async def send_progress(
        self,
        rid: RequestId,
        token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bool:
        """Send progress for inbound request ``rid``; False if the Connection refused it."""
        return await self.outbound.send_progress(rid, token, progress, total, message)

    async def send_raw(self, data: bytes) -> None:
        """Queue already-encoded bytes (the client's initialize goes this way)."""
        await self.writer.send(data)

    @property
    def slots_in_use(self) -> int:
        """Handler slots taken by running requests (for metrics)."""
        return self.dispatcher.slots_in_use

    @property
    def queued_requests(self) -> int:
        """Requests waiting for a handler slot (for metrics)."""
        return self.dispatcher.queued_requests
