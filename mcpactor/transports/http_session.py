"""One HTTP-served MCP session: the Session actor tree plus its SSE streams.

:class:`HttpSessionTransport` is the :class:`Transport` the session runs on. Inbound,
each POST body is queued as one message. Outbound, every message is routed by the
request it belongs to (``Outgoing.related``): onto that request's POST stream, or,
when it belongs to no open request, onto the standalone GET stream. A response (or a
batch of them) marks its requests answered, which completes the POST stream.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.protocol import jsonrpc, versions
from mcpactor.protocol.errors import ConnectionClosed
from mcpactor.protocol.jsonrpc import Batch, Invalid, Message, Notification, RequestId
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed
from mcpactor.transports.event_store import EventStore, Stream

if TYPE_CHECKING:
    from mcpactor.session.session import Session

__all__ = ["HttpSession", "HttpSessionTransport", "response_ids"]


def response_ids(data: bytes) -> list[RequestId]:
    """The ids answered by an outbound message (a response, an error, or a batch of them).

    Only called for messages tied to a request, which are few per request; a message
    that is not a response gives ``[]``.
    """
    # Cheap pre-filter: requests and notifications always carry "method". bytes.find,
    # not ``in``: CPython's ``bytes in bytes`` first tries the needle as an integer and
    # raises and clears a TypeError on the way, several times the search's cost.
    if data.find(b'"result"') < 0 and data.find(b'"error"') < 0:
        return []
    try:
        obj = jsonrpc.loads(data)  # ids exact, however wide
    except ValueError:
        return []
    items = obj if isinstance(obj, list) else [obj]
    out: list[RequestId] = []
    for item in items:
        if isinstance(item, dict) and "method" not in item and ("result" in item or "error" in item):
            rid = item.get("id")
            if isinstance(rid, (str, int)) and not isinstance(rid, bool):
                out.append(rid)
    return out


def _answers(data: bytes, related: RequestId) -> list[RequestId]:
    """:func:`response_ids` for a message tied to request ``related``, without parsing
    the common case: our encoder writes a response to ``related`` as
    ``{"jsonrpc":"2.0","id":<related>,"result":...`` (or ``"error"``)."""
    head = b'{"jsonrpc":"2.0","id":%s,' % jsonrpc.dumps(related)
    if data.startswith(head) and data.startswith((b'"result":', b'"error":'), len(head)):
        return [related]
    return response_ids(data)


class HttpSession:
    """Routing state of one session: request streams, the standalone stream, activity.

    ``mode``: ``"sse"`` (requests answered on SSE streams; messages tied to a request go
    on its stream), ``"auto"`` (routed as ``"sse"``; the POST is answered with JSON when
    its stream turns out to hold nothing but responses), ``"json"`` (requests answered
    with JSON bodies; other messages go on the standalone stream), ``"single"`` (legacy
    HTTP+SSE: everything on one stream).
    """

    # Slots: one of these per session, idle sessions by the thousand.
    __slots__ = ("active_requests", "drop_ids", "ended", "id", "last_activity", "max_in_flight",
                 "mode", "peer", "request_streams", "resumable", "session", "standalone",
                 "store", "transport")

    def __init__(
        self,
        session_id: str,
        *,
        mode: str = "sse",
        max_events: int = 1000,
        max_in_flight: int = 64,
        drop_ids: frozenset[RequestId] = frozenset(),
        resumable: bool = True,
        queued: bool = False,
    ) -> None:
        self.id = session_id
        #: The client address that opened it, as per-address caps count it
        #: (``peers.peer_key``; "" unknown).
        self.peer = ""
        #: Whether a client can resume this session's streams (not in stateless mode).
        self.resumable = resumable
        self.mode = mode
        self.store = EventStore(max_events)
        self.standalone = self.store.new_stream(standalone=True)
        self.request_streams: dict[RequestId, Stream] = {}
        self.max_in_flight = max_in_flight
        #: Responses to these ids are swallowed (the stateless mode's synthetic initialize).
        self.drop_ids = frozenset(drop_ids)
        self.session: Session | None = None
        self.active_requests = 0  # HTTP requests currently being served for this session
        self.last_activity = trio.current_time()
        self.ended = False
        #: Set by the standalone-stream owner so a new GET can replace it.
        self.transport = HttpSessionTransport(self, queued=queued)

    # -- bookkeeping ------------------------------------------------------------------

    def touch(self) -> None:
        """Record activity (for idle expiry)."""
        self.last_activity = trio.current_time()

    def idle_for(self, now: float) -> float:
        """Seconds without any HTTP request in progress; 0 while one is."""
        if self.active_requests > 0:
            return 0.0
        return now - self.last_activity

    def in_flight(self) -> int:
        """Requests accepted and not yet answered."""
        return len(self.request_streams)

    def open_request_stream(self, ids: list[RequestId]) -> Stream:
        """A stream for the requests of one POST (register it before delivering them)."""
        stream = self.store.new_stream()
        for rid in ids:
            stream.pending.add(rid)
            self.request_streams[rid] = stream
        return stream

    def abandon(self, stream: Stream) -> None:
        """Forget a request stream whose requests never reached the session."""
        for rid in list(stream.pending):
            if self.request_streams.get(rid) is stream:
                del self.request_streams[rid]
        stream.finish()

    # -- outbound routing -------------------------------------------------------------

    def target(
        self, data: bytes, related: RequestId | None
    ) -> tuple[Stream | None, Stream | None, list[RequestId]]:
        """Where :meth:`route` puts one outbound message, without putting it there:
        ``(stream it goes on, None to drop it; request stream it answers; ids it
        answers)``. A mirror of the streams (scale-out) persists this before routing."""
        stream = self.request_streams.get(related) if related is not None else None
        if stream is None or related is None:
            if related is not None and related in self.drop_ids:
                return None, None, [related]
            return self.standalone, None, []
        ids = _answers(data, related)
        if (not ids and self.mode == "json") or self.mode == "single":
            # A JSON answer cannot carry notifications or server requests: they go on
            # the standalone stream where a GET can pick them up (legacy: everything).
            return self.standalone, stream, ids
        return stream, stream, ids

    def route(self, data: bytes, related: RequestId | None) -> None:
        """Put one outbound message on the stream it belongs to."""
        dest, stream, ids = self.target(data, related)
        if dest is None:
            self.drop_ids = self.drop_ids - {related}
            return
        if dest is stream and not ids:
            dest.mixed = True
        dest.append(data)
        if ids and stream is not None:
            for rid in ids:
                if self.request_streams.get(rid) is stream:
                    del self.request_streams[rid]
            stream.answered(ids)

    def forget_request(self, rid: RequestId) -> None:
        """The client cancelled ``rid``: its stream owes nothing for it any more."""
        stream = self.request_streams.pop(rid, None)
        if stream is not None:
            stream.answered([rid])

    def forget_cancelled(self, items: list[Any]) -> None:
        """Apply the ``notifications/cancelled`` among POSTed messages: no response will
        come for those requests, so end their streams and free their slots."""
        for m in items:
            if isinstance(m, Notification) and m.method == "notifications/cancelled":
                rid = (m.params or {}).get("requestId")
                if isinstance(rid, (str, int)):
                    self.forget_request(rid)

    def close_request_stream(self, rid: RequestId) -> None:
        """SSE polling: end the HTTP response carrying ``rid``'s stream now; the client
        resumes it with ``Last-Event-ID``."""
        if not self.resumable or self.session is None:
            return
        version = self.session.connection.protocol_version
        if version is None or not versions.at_least(version, versions.V2025_11_25):
            return  # older clients were never primed to reconnect: keep the stream open
        stream = self.request_streams.get(rid)
        if stream is not None:
            stream.detach()

    def finish(self) -> None:
        """The session ended: wake and end every stream."""
        self.ended = True
        self.request_streams.clear()
        self.store.finish_all()


class HttpSessionTransport(Transport):
    """The :class:`Transport` between a Session and the HTTP layer.

    Inbound, each POST's body is handed over with :meth:`deliver`. By default the
    session takes it in the POST's own task (``Session.feed``: no queue, no hop through
    the reader). ``queued`` (a recorded session) puts it in a queue that the session's
    reader takes it from, as it does on every other transport: a recording follows the
    session's tasks, and a replay feeds that reader.
    """

    name = "http"

    def __init__(self, owner: HttpSession, *, queued: bool = False) -> None:
        self.owner = owner
        # Unqueued, this only tells the session's reader that input has ended (an Event
        # is a fraction of a channel's memory, which counts with thousands of idle
        # sessions).
        self._input_ended = trio.Event()
        self._closed = False
        self._inbox: trio.MemorySendChannel[bytes] | None = None
        self._outbox: trio.MemoryReceiveChannel[bytes] | None = None
        #: Scale-out: persists where each message goes before it is routed (so that
        #: nothing a client was sent is missing from the shared store), or None.
        self.mirror: Callable[[HttpSession, list[Outgoing]], Awaitable[None]] | None = None
        if queued:
            self._inbox, self._outbox = trio.open_memory_channel[bytes](owner.max_in_flight)

    async def deliver(
        self, data: bytes, on_block: Callable[[], None] | None = None,
        parsed: Message | Invalid | Batch | None = None,
    ) -> None:
        """Hand one inbound message (a POST body) to the session.

        Every message goes this way, so the session sees them in delivery order; it
        waits only when the session is at its limit of concurrent requests
        (backpressure on the POST). ``on_block``: a lone request's handler runs in this
        task; ``parsed``: the message, already parsed (see :meth:`Session.feed`).
        Queued, the message waits for the reader instead (and ``on_block`` is unused).
        """
        session = self.owner.session
        if self._closed or session is None:
            raise TransportClosed("the session is closed")
        if session.observer is not None:
            # The POST's trace context headers, for its requests' spans.
            session.observer.http_delivery(data, parsed)
        if self._inbox is not None:
            try:
                await self._inbox.send(data)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                raise TransportClosed("the session is closed") from None
            return
        try:
            await session.feed(data, on_block, parsed)
        except ConnectionClosed:
            raise TransportClosed("the session is closed") from None

    async def receive(self) -> bytes | Oversize:
        """Queued: the next delivered message. Otherwise nothing arrives here (see
        :meth:`deliver`): the reader waits until the session is being closed, then gets
        EndOfChannel."""
        if self._outbox is not None:
            try:
                return await self._outbox.receive()
            except trio.ClosedResourceError:
                raise trio.EndOfChannel from None
        await self._input_ended.wait()
        raise trio.EndOfChannel

    async def send(self, messages: list[Outgoing]) -> None:
        """Route each message to its stream (never blocks: streams buffer)."""
        if self._closed:
            raise TransportClosed("the HTTP session is closed")
        if self.mirror is not None:
            await self.mirror(self.owner, messages)
        for data, related in messages:
            self.owner.route(data, related)

    async def close_request_stream(self, request_id: RequestId) -> None:
        """See :meth:`HttpSession.close_request_stream`."""
        self.owner.close_request_stream(request_id)

    async def aclose(self) -> None:
        """Stop input and end every stream."""
        if self._closed:
            return
        self._closed = True
        self._end()
        self.owner.finish()

    def end_input(self) -> None:
        """Close the inbound side: the session sees end of input and winds down."""
        self._end()

    def _end(self) -> None:
        self._input_ended.set()
        if self._inbox is not None:
            # The reader takes what was delivered before, then sees the end.
            self._inbox.close()

    def info(self) -> dict[str, Any]:
        """Debug snapshot."""
        return {"id": self.owner.id, "streams": len(self.owner.store.streams)}
