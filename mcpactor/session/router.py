"""The reader and router: transport → Connection → each event to the actor it is for.

The reader (:meth:`Router.run`, in the supervisor's task) reads the transport; a
message transport whose messages arrive in tasks of their own (each HTTP POST) hands
them over with :meth:`Router.take` in those tasks instead (``Session.feed``). Either
way each message is decoded by the :class:`Connection` and its events routed:
requests to the dispatcher, answers and progress for our requests to outbound,
cancellations to the dispatcher, notifications to the notifier, what the Connection
answers itself to the writer, lifecycle steps to the handler's hooks. Routing never
runs user code and waits only when a bound is reached (the notifier's mailbox, the
writer's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from mcpactor.protocol import connection as pc
from mcpactor.protocol.errors import InvalidRequest
from mcpactor.protocol.jsonrpc import Batch, Invalid, Message, encode_error
from mcpactor.session.batch import BatchCollector
from mcpactor.transports.base import Oversize, TransportClosed

if TYPE_CHECKING:
    from mcpactor.session.dispatcher import Dispatcher
    from mcpactor.session.notifier import Notifier
    from mcpactor.session.outbound import Outbound
    from mcpactor.session.session import Session
    from mcpactor.session.writer import Writer

log = logging.getLogger("mcpactor.session")

__all__ = ["Router"]


class Router:
    """The reader's loop and the routing of every inbound event (see the module)."""

    __slots__ = ("dispatcher", "eof", "notifier", "outbound", "scope", "session", "stopped",
                 "writer")

    def __init__(self, session: Session, dispatcher: Dispatcher, outbound: Outbound,
                 notifier: Notifier, writer: Writer) -> None:
        self.session = session
        self.dispatcher = dispatcher
        self.outbound = outbound
        self.notifier = notifier
        self.writer = writer
        #: The reader's scope: cancelled to stop reading (the session is ending).
        self.scope = trio.CancelScope()
        #: Told to stop (:meth:`stop`): the session is ending.
        self.stopped = False
        #: The peer's input ended cleanly.
        self.eof = False

    def stop(self) -> None:
        """Stop reading: the session is ending."""
        if not self.stopped:
            self.stopped = True
            self.scope.cancel()

    async def take(
        self, data: bytes, on_block: Callable[[], None] | None = None,
        parsed: Message | Invalid | Batch | None = None, yields: int = 0,
    ) -> None:
        """Decode one inbound message and route its events (the reader's step).

        ``yields``: how many times the transport's receive yielded to the scheduler
        before it handed the message out; traced, for the replay.
        """
        session = self.session
        events = session.connection.receive(data, parsed)
        if session.observer is not None:
            session.observer.received(data, events)
        trace = session._log
        if trace is not None:
            first = events[0] if events else None
            if first.__class__ is pc.Reply and first.why == "parse error":
                # The bytes themselves: the output writes their text, and keeps them
                # exactly where the text cannot (not UTF-8), for the replay.
                trace((session._clock(), session.id, "reader", "message_in",
                       {"raw": data, "yields": yields}, None, None))
            else:
                trace((session._clock(), session.id, "reader", "message_in", data, yields,
                       None))
        for ev in events:
            await self.route(ev, None, on_block)

    async def run(self) -> None:
        """The reader: read the transport until its input ends, it breaks, or the
        session closes."""
        session = self.session
        receive = session.transport.receive
        trace = session._log
        task = trio.lowlevel.current_task()
        # Inside the transport the reader is muted: the transport's reads and tasks are
        # not the session's (mcpactor.tracing.tasks).
        me = session._task_ids.get(task._counter, 0)
        muted = session._muted
        if trace is not None:
            session._emit("reader", "transport_opened", {"transport": session.transport.name})
        with self.scope:
            while True:
                before = task._schedule_points if trace is not None else 0
                if me:
                    muted.add(me)
                try:
                    data = await receive()
                except trio.EndOfChannel:
                    self.eof = True
                    session.close_reason = session.close_reason or "end of input"
                    session._wind_down()
                    if trace is not None:
                        session._emit("reader", "transport_closed",
                                      {"yields": task._schedule_points - before})
                    return
                except TransportClosed as exc:
                    session.close_reason = session.close_reason or f"transport broke: {exc}"
                    if trace is not None:
                        session._emit("reader", "transport_broken",
                                      {"error": str(exc),
                                       "yields": task._schedule_points - before})
                    return
                except trio.Cancelled:
                    # The session is closing: traced with the yields the receive made
                    # first, which a replay's transport repeats before it takes the cancel.
                    if trace is not None:
                        session._emit("reader", "receive_cancelled",
                                      {"yields": task._schedule_points - before})
                    raise
                finally:
                    if me:
                        muted.discard(me)
                yields = task._schedule_points - before if trace is not None else 0
                if type(data) is Oversize:
                    if trace is not None:
                        session._emit("reader", "message_oversize",
                                      {"size": data.size, "yields": yields})
                    err = InvalidRequest(
                        f"Invalid Request: message of {data.size} bytes exceeds the limit",
                        data={"size": data.size},
                    )
                    await self.writer.send(encode_error(None, err))
                    continue
                assert isinstance(data, bytes)
                await self.take(data, yields=yields)

    async def route(
        self, ev: pc.Event, batch: BatchCollector | None,
        on_block: Callable[[], None] | None = None,
    ) -> None:
        """Hand one event to the actor it is for."""
        t = type(ev)
        if t is pc.RequestReceived:
            assert isinstance(ev, pc.RequestReceived)
            await self.dispatcher.dispatch(ev, batch, on_block)
        elif t is pc.ResponseReceived:
            assert isinstance(ev, pc.ResponseReceived)
            self.outbound.resolve(ev)
        elif t is pc.Reply:
            assert isinstance(ev, pc.Reply)
            if batch is not None:
                batch.add(ev.data)
            else:
                await self.writer.send(ev.data, ev.id)
        elif t is pc.NotificationReceived:
            assert isinstance(ev, pc.NotificationReceived)
            session = self.session
            mailbox = self.notifier.mailbox()
            await mailbox.send(lambda: session.handler.handle_notification(session, ev))
        elif t is pc.CancelReceived:
            assert isinstance(ev, pc.CancelReceived)
            self.dispatcher.cancel(ev)
        elif t is pc.ProgressReceived:
            assert isinstance(ev, pc.ProgressReceived)
            self.outbound.on_progress(ev)
        elif t is pc.ErrorReceived:
            assert isinstance(ev, pc.ErrorReceived)
            self.outbound.fail(ev)
        elif t is pc.Initialized:
            assert isinstance(ev, pc.Initialized)
            session = self.session
            session._emit("reader", "initialized", {"protocol_version": ev.protocol_version,
                                                    "peer_info": ev.peer_info})
            session.handler.on_initialized(session, ev)
            session.initialized.set()
        elif t is pc.OperationStarted:
            self.session.handler.on_operation_started(self.session)
        elif t is pc.Dropped:
            assert isinstance(ev, pc.Dropped)
            self.session._emit("reader", "message_dropped", {"reason": ev.reason})
            log.debug("session %s: dropped a message: %s", self.session.id, ev.reason)
        elif t is pc.BatchReceived:
            assert isinstance(ev, pc.BatchReceived)
            # The request the whole answer is tied to (HTTP puts it on that POST's
            # stream): the first one answered, even if only by the Connection itself
            # (a batch of pings has no RequestReceived).
            first = next((e.id for e in ev.events if type(e) is pc.RequestReceived
                          or (type(e) is pc.Reply and e.id is not None)), None)
            collector = BatchCollector(self.session, ev.expected, first)
            for item in ev.events:
                await self.route(item, collector)
            collector.routed()
