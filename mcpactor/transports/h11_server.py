"""A lean HTTP/1.1 server for our ASGI app, on Trio, one task per connection.

Why it exists next to hypercorn (which stays supported, ``server="hypercorn"``): on the
benchmark's echo call a trivial ASGI app on hypercorn's Trio worker costs ~1 ms of
server CPU per request, four times a bare h11-over-trio loop, so hypercorn alone
would cap mcpactor below its HTTP targets (figures in ``benchmarks/README.md``).
What makes this one cheap:

- the common request (HTTP/1.1, ``Content-Length`` body, keep-alive) is read by the
  fast path of :mod:`.http11` and its response serialized by hand; anything else
  (chunked bodies, ``Expect``, HTTP/1.0, HEAD, malformed input, ...) is read by a
  fresh ``h11.Connection`` that takes over the buffered bytes for that one request,
  so unusual and malformed input gets h11's answers;
- the app runs in the connection's own task (no task, channel or event per request);
- the response head is held until the first body chunk, so a complete JSON answer is
  one ``send`` (head, body and terminator together);
- a request body that has arrived whole is handed over in a single ``http.request``.

Scope: HTTP/1.1 (and 1.0) with keep-alive and pipelining, ASGI 3 ``http`` scopes
only (no lifespan, no websockets: :class:`McpHttpApp` needs neither). After the body
is read, ``receive()`` reads the socket to notice a disconnect, which is how our app
stops waiting for an answer nobody will read; bytes of a pipelined next request seen
meanwhile are kept (bounded) for the next cycle.

Connection exhaustion: a connection is *waiting* while the server waits for its
client (idle between requests, a request head or body not yet complete) and *busy*
otherwise (the app running, a response being written: an SSE answer may rightly last
for hours). One reaper task per server closes connections that wait too long
(``keep_alive_timeout`` idle, ``head_timeout`` for a head, ``body_timeout`` for a
body, each for the wait as a whole, so trickling a byte at a time does not help).
When the table is full (``max_connections``), or one peer address holds its share
(``max_connections_per_peer``), the waiting connections are closed to make room,
idle ones first, then the longest-waiting: only when none is waiting (all busy) is
a new connection refused (503). Closing means closing the socket, which wakes the
connection's task out of its read; a busy connection is never touched. The waiting
connections are kept in order (:class:`_Group`), so making room and expiring cost
O(1) per connection closed, never a scan of the table per accept. A refusal reads
what its client sent (bounded: ``refusal_linger``, ``max_drain_bytes``) before
closing, so the client reads the 503 rather than a reset.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NoReturn
from urllib.parse import unquote

import attrs
import h11
import trio

from mcpactor.transports import http11
from mcpactor.transports.http11 import RequestHead
from mcpactor.transports.http_options import (
    BODY_TIMEOUT,
    HEAD_TIMEOUT,
    KEEP_ALIVE_TIMEOUT,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_PEER,
    MAX_REFUSALS,
    REFUSAL_LINGER,
)
from mcpactor.transports.peers import peer_key
from mcpactor.transports.security import redact_target

log = logging.getLogger("mcpactor.http.h11")

__all__ = ["H11Options", "serve_h11"]

Message = MutableMapping[str, Any]
AsgiApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

_RECV = 65536
_DISCONNECT: Message = {"type": "http.disconnect"}
_ASGI = {"version": "3.0", "spec_version": "2.3"}
_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be a positive number of seconds, not {value!r}")


@attrs.frozen(kw_only=True)
class H11Options:
    """Limits of the lean server; the defaults suit a local MCP endpoint.

    The timeouts bound how long the server waits for its client, never how long a
    response may take (see the module). ``HttpOptions`` carries the same fields.
    """

    #: Seconds a connection may stay idle between requests (no byte of the next
    #: request yet; a new connection too) before it is closed. 5 s, as uvicorn and
    #: hypercorn, and as httpx (the official SDK's client) expires idle connections.
    keep_alive_timeout: float = attrs.field(default=KEEP_ALIVE_TIMEOUT, validator=_positive)
    #: Seconds a request head may take, from the start of the wait for it.
    head_timeout: float = attrs.field(default=HEAD_TIMEOUT, validator=_positive)
    #: Seconds a request body may take as a whole, from the first wait for it.
    body_timeout: float = attrs.field(default=BODY_TIMEOUT, validator=_positive)
    #: Largest request head (request line + headers) in bytes.
    max_head_bytes: int = 16 * 1024
    #: Connections served at once. A new one past this closes waiting connections
    #: (idle first, then the longest-waiting) to make room, and is refused (503) only
    #: when every connection is busy.
    max_connections: int = attrs.field(default=MAX_CONNECTIONS, validator=attrs.validators.ge(1))
    #: Connections one peer address (an IPv6 /64) may hold; 0: no per-peer cap. Past it
    #: the peer's own waiting connections make room, else it is refused (503), so one
    #: address cannot fill the table with busy connections. A quarter of the table
    #: by default; behind a reverse proxy every client has the proxy's address: raise
    #: it to ``max_connections`` (or 0) there.
    max_connections_per_peer: int = attrs.field(
        default=MAX_CONNECTIONS_PER_PEER, validator=attrs.validators.ge(0))
    #: Bytes of a request body the app left unread that are drained to keep the
    #: connection; past this the connection is closed instead. A refusal (503, 431,
    #: ...) reads and drops at most this much of what its client sent.
    max_drain_bytes: int = 64 * 1024
    #: Seconds a refusal may take: its answer written, then what the client sent read
    #: (and dropped) until the client closes, so that closing with input unread does
    #: not reset the connection under the answer.
    refusal_linger: float = attrs.field(default=REFUSAL_LINGER, validator=_positive)
    #: 503 refusals being answered at once (each holds a descriptor for up to
    #: ``refusal_linger``); past it a connection without room is closed at once.
    max_refusals: int = attrs.field(default=MAX_REFUSALS, validator=attrs.validators.ge(0))
    #: Bytes of a pipelined next request buffered while a response is in progress.
    max_pipelined_bytes: int = 64 * 1024


# What a waiting connection waits for (_Conn.wait_kind); idle is a head wait with
# nothing buffered.
_HEAD, _BODY, _H11_HEAD = 0, 1, 2


class _Conn:
    """One TCP connection: the socket and the bytes read but not yet consumed."""

    __slots__ = ("buf", "cache", "client", "eof", "group", "opts", "peer", "raw", "reaped",
                 "server", "stream", "table", "wait_kind", "wait_since")

    #: The socket as Trio's stream, made when the connection's task starts
    #: (:meth:`open`): one the table closes before that never costs Trio's setup.
    stream: trio.SocketStream

    def __init__(self, raw: socket.socket, opts: H11Options,
                 server: tuple[str, int] | None, client: tuple[str, int] | None) -> None:
        self.raw: socket.socket | None = raw
        self.opts = opts
        self.buf = bytearray()
        self.cache = http11.HeadCache()
        #: The client has shut down its side (what is in ``buf`` is all there is).
        self.eof = False
        #: Since when the server waits for the client (None: busy, see the module);
        #: what for is ``wait_kind``. Read by the reaper and by eviction.
        self.wait_since: float | None = None
        self.wait_kind = _HEAD
        #: Closed by the server for waiting too long or to make room.
        self.reaped = False
        self.server = server
        self.client = client
        #: Whose share of the table this connection counts against.
        self.peer = peer_key(client)
        #: The table it is in, and its peer's group there (set when admitted).
        self.table: _ConnectionHandler | None = None
        self.group: _Group | None = None

    def open(self) -> None:
        """Make the socket Trio's (before the connection is served)."""
        raw = self.raw
        assert raw is not None
        self.stream = trio.SocketStream(trio.socket.from_stdlib_socket(raw))
        self.raw = None

    def close(self) -> None:
        """Close the socket now (which wakes a task reading it)."""
        raw = self.raw
        if raw is not None:
            raw.close()  # never Trio's: nothing waits on it
        else:
            _close_now(self.stream)

    def left(self) -> None:
        """The client went away while its request was still being answered: the app
        may go on (a handler outlives its client), but the connection will never serve
        again, so it leaves the table (and closes) now rather than when the app is done.
        """
        if self.table is not None:
            self.table._close(self)

    async def read(self) -> bool:
        """Append what the socket has to ``buf``; False at end of input."""
        try:
            data = await self.stream.receive_some(_RECV)
        except _BROKEN:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True


class _FastExchange:
    """One request read by the fast path: ASGI ``receive`` and ``send`` on the
    connection's buffer, the response serialized by :mod:`.http11`."""

    __slots__ = ("body_done", "body_since", "c", "chunked", "close", "disconnected",
                 "expected", "hand_off", "handed_off", "head", "owner", "remaining",
                 "response_done", "sent", "started")

    def __init__(self, c: _Conn, head: RequestHead, hand_off: Callable[[_Conn], None]) -> None:
        self.c = c
        # The connection's task, running the app. If another task completes the
        # response while the app goes on (a handler the app runs inline outlived its
        # answer), the connection is handed to a new task so that the client's next
        # request is not held up behind the app: ``hand_off``.
        self.owner = trio.lowlevel.current_task()
        self.hand_off = hand_off
        self.handed_off = False
        #: Body bytes not yet handed to the app.
        self.remaining = head.content_length
        #: When the first wait for body bytes began (the body_timeout counts from it).
        self.body_since: float | None = None
        self.body_done = False
        self.close = head.close
        self.disconnected = False
        self.head: tuple[int, list[tuple[bytes, bytes]]] | None = None  # until the first chunk
        self.started = False
        self.response_done = False
        self.chunked = False
        self.expected = -1  # the Content-Length the app declared (-1: none)
        self.sent = 0

    # -- receive --------------------------------------------------------------------

    async def receive(self) -> Message:
        c = self.c
        if self.body_done or self.disconnected:
            return await self._after_body()
        buf = c.buf
        if self.remaining and not buf:
            # Waiting for the body: bounded as a whole (the reaper), from the first
            # wait until the body is complete, the clock read only when the body has
            # not all arrived with its head.
            if self.body_since is None:
                self.body_since = trio.current_time()
                _stalled(c, self.body_since, _BODY)
            got = await c.read()
            if not got or c.reaped:
                self.disconnected = True
                return _DISCONNECT
        take = min(len(buf), self.remaining)
        body = bytes(buf[:take])
        del buf[:take]
        self.remaining -= take
        if not self.remaining:
            self.body_done = True
            if self.body_since is not None:
                _busy(c)
        return {"type": "http.request", "body": body, "more_body": not self.body_done}

    async def _after_body(self) -> Message:
        """Block until the client goes away (or the response is complete)."""
        c = self.c
        while not (self.disconnected or self.response_done):
            if len(c.buf) > c.opts.max_pipelined_bytes:
                # Stop reading (backpressure); the app cancels us when it is done.
                await trio.sleep_forever()
            if not await c.read():
                self.disconnected = True
                c.left()
        return _DISCONNECT

    # -- send -----------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.head is not None or self.started:
                raise RuntimeError("http.response.start sent twice")
            self.head = (message["status"], message.get("headers") or [])
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if self.response_done:
            raise RuntimeError("the response is already complete")
        parts: list[bytes] = []
        if self.head is not None:
            status, headers = self.head
            self.head = None
            if self.c.wait_since is not None:
                _busy(self.c)  # answering with the body unread: busy, not waiting
            # A request body the app left unread and too long to drain ends the
            # connection after this response: say so (a client would otherwise send
            # its next request into a closing socket).
            close = self.close or self.remaining > self.c.opts.max_drain_bytes
            data, self.chunked, self.close, self.expected = http11.response_head(
                status, headers, close=close, cache=self.c.cache
            )
            self.started = True
            parts.append(data)
        elif not self.started:
            raise RuntimeError("http.response.body before http.response.start")
        body = message.get("body", b"")
        if body:
            self.sent += len(body)
            parts.append(http11.chunk(body) if self.chunked else body)
        more = message.get("more_body", False)
        if self.expected >= 0 and (self.sent > self.expected
                                   or (not more and self.sent != self.expected)):
            self.close = True
            raise RuntimeError("the response body does not match its Content-Length")
        if not more:
            if self.chunked:
                parts.append(http11.LAST_CHUNK)
            self.response_done = True
        if self.disconnected:
            raise trio.BrokenResourceError("the client disconnected")
        if parts:
            await self.c.stream.send_all(b"".join(parts) if len(parts) > 1 else parts[0])
        if self.response_done and self.body_done and not self.close \
                and trio.lowlevel.current_task() is not self.owner:
            self.handed_off = True
            self.hand_off(self.c)


class _Exchange:
    """One request/response on a connection: the ASGI ``receive`` and ``send``."""

    __slots__ = ("body_done", "body_since", "c", "conn", "disconnected", "head", "head_only",
                 "opts", "response_done", "stream")

    def __init__(
        self, conn: h11.Connection, stream: trio.SocketStream, opts: H11Options,
        head_only: bool = False, c: _Conn | None = None,
    ) -> None:
        self.conn = conn
        #: The connection, whose wait for the body the reaper bounds (None: unbounded).
        self.c = c
        self.body_since: float | None = None
        #: A HEAD request: the app's body is dropped (h11 refuses one).
        self.head_only = head_only
        self.stream = stream
        self.opts = opts
        self.body_done = False
        self.disconnected = False
        self.head: h11.Response | None = None  # held until the first body chunk
        self.response_done = False

    # -- receive --------------------------------------------------------------------

    async def receive(self) -> Message:
        if self.body_done or self.disconnected:
            return await self._after_body()
        conn = self.conn
        if conn.they_are_waiting_for_100_continue:
            await self._write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
        chunks: list[bytes] = []
        while True:
            try:
                ev = conn.next_event()
            except h11.RemoteProtocolError:
                # A malformed body: the connection is unusable; tell the app the client
                # is gone (the handler closes the connection afterwards).
                self.disconnected = True
                return _DISCONNECT
            if ev is h11.NEED_DATA:
                if chunks:
                    # Hand over what is here rather than wait for the rest.
                    return {"type": "http.request", "body": b"".join(chunks), "more_body": True}
                c = self.c
                if c is not None and self.body_since is None:
                    # Waiting for the body (see _FastExchange.receive).
                    self.body_since = trio.current_time()
                    _stalled(c, self.body_since, _BODY)
                try:
                    data = await self.stream.receive_some(_RECV)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    self.disconnected = True
                    return _DISCONNECT
                conn.receive_data(data)
                continue
            if type(ev) is h11.Data:
                chunks.append(bytes(ev.data))
            elif type(ev) is h11.EndOfMessage:
                self.body_done = True
                if self.c is not None and self.body_since is not None:
                    _busy(self.c)
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            else:  # ConnectionClosed or anything unexpected mid-body
                self.disconnected = True
                return _DISCONNECT

    async def _after_body(self) -> Message:
        """Block until the client goes away (or the response is complete)."""
        while not (self.disconnected or self.response_done):
            try:
                data = await self.stream.receive_some(_RECV)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                self.disconnected = True
                if self.c is not None:
                    self.c.left()
                break
            # A pipelined next request: h11 keeps it for the next cycle.
            self.conn.receive_data(data)
            if len(self.conn.trailing_data[0]) > self.opts.max_pipelined_bytes:
                # Stop reading (backpressure); the app cancels us when it is done.
                await trio.sleep_forever()
        return _DISCONNECT

    # -- send -----------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.head is not None or self.response_done:
                raise RuntimeError("http.response.start sent twice")
            self.head = h11.Response(
                status_code=message["status"], headers=list(message.get("headers") or [])
            )
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if self.response_done:
            raise RuntimeError("the response is already complete")
        conn = self.conn
        parts: list[bytes] = []
        if self.head is not None:
            head, self.head = self.head, None
            if self.c is not None and self.c.wait_since is not None:
                _busy(self.c)  # answering with the body unread: busy, not waiting
            parts.append(conn.send(head) or b"")
        elif conn.our_state is h11.SEND_RESPONSE:
            raise RuntimeError("http.response.body before http.response.start")
        body = message.get("body", b"")
        if body and not self.head_only:
            parts.append(conn.send(h11.Data(data=body)) or b"")
        if not message.get("more_body", False):
            parts.append(conn.send(h11.EndOfMessage()) or b"")
            self.response_done = True
        if self.disconnected:
            raise trio.BrokenResourceError("the client disconnected")
        await self._write(b"".join(parts))

    async def _write(self, data: bytes | None) -> None:
        if data:
            await self.stream.send_all(data)

    @property
    def started(self) -> bool:
        """Whether any part of the response reached the connection."""
        return self.conn.our_state is not h11.SEND_RESPONSE


def _scope(
    method: bytes, target: bytes, http_version: str, headers: list[tuple[bytes, bytes]],
    c: _Conn,
) -> dict[str, Any]:
    if not target.startswith(b"/"):
        # Absolute form (``http://host/path``): keep the path part only.
        after = target.partition(b"://")[2]
        target = b"/" + after.partition(b"/")[2] if after else b"/"
    raw_path, _, query = target.partition(b"?")
    path = raw_path.decode("latin-1")
    return {
        "type": "http",
        "asgi": _ASGI,
        "http_version": http_version,
        "method": method.decode("ascii"),
        "scheme": "http",
        "path": unquote(path) if "%" in path else path,
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": c.client,
        "server": c.server,
    }


def _addr(sockname: Any) -> tuple[str, int] | None:
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return str(sockname[0]), int(sockname[1])
    return None


def _name(get: Callable[[], Any]) -> Any:
    # A client gone before its connection was served: getpeername fails (ENOTCONN);
    # that must end this connection only, never the server.
    try:
        return get()
    except OSError:
        return None


class _Group:
    """Connections of the table (all of them, or one peer's), and among them those
    waiting for their client, each kind in the order it began to wait: eviction takes
    the oldest at once, and the reaper stops at the first idle one not expired."""

    __slots__ = ("conns", "idle", "stalled")

    def __init__(self) -> None:
        self.conns: set[_Conn] = set()
        #: Waiting with nothing of a request received (new, or between requests).
        self.idle: dict[_Conn, None] = {}
        #: Waiting for the rest of a request head (a new connection too, until it is
        #: read: what it sent is not known yet), or for a body.
        self.stalled: dict[_Conn, None] = {}

    def waiting(self) -> int:
        """Connections that may be closed to make room."""
        return len(self.idle) + len(self.stalled)


def _idle(c: _Conn, now: float) -> None:
    """``c`` waits for a request, nothing of it received yet."""
    c.wait_since = now
    c.wait_kind = _HEAD
    table = c.table
    if table is not None:
        group = c.group
        assert group is not None
        if table.all.stalled.pop(c, 0) is None:
            del group.stalled[c]
        table.all.idle[c] = None
        group.idle[c] = None


def _stalled(c: _Conn, since: float, kind: int) -> None:
    """``c`` waits (since ``since``) for the rest of a head, or for a body."""
    c.wait_since = since
    c.wait_kind = kind
    table = c.table
    if table is not None:
        group = c.group
        assert group is not None
        if table.all.idle.pop(c, 0) is None:
            del group.idle[c]
        if c not in group.stalled:
            table.all.stalled[c] = None
            group.stalled[c] = None


def _busy(c: _Conn) -> None:
    """``c`` waits for its client no more (a request in hand, a response going out)."""
    c.wait_since = None
    c.wait_kind = _HEAD
    table = c.table
    if table is not None:
        group = c.group
        assert group is not None
        if table.all.idle.pop(c, 0) is None:
            del group.idle[c]
        elif table.all.stalled.pop(c, 0) is None:
            del group.stalled[c]


# What a connection does after an exchange: serve the next request, end, or nothing
# (another task serves it now).
_NEXT, _END, _HANDED = "next", "end", "handed"

#: Connections accepted in one scheduler pass, and tasks started in one (see
#: _ConnectionHandler.accept_from): a pass stays short under a flood, a new client
#: waits a few passes at most.
_ACCEPT_BATCH = 128
_START_MAX = 32
#: A scheduler pass longer than this makes the next ones start fewer connections.
_PASS_TARGET = 0.005
#: Connections the reaper closes in one pass.
_CLOSE_BATCH = 64
#: accept() failing for want of descriptors or memory: a pause before the next try.
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_BACKOFF = 0.1
#: accept() failing because the client already left: take the next one.
_ACCEPT_GONE_ERRNOS = frozenset({errno.ECONNABORTED, errno.EPROTO, errno.EPERM})
#: The first byte of a TLS handshake record (a ClientHello): never an HTTP method's.
_TLS_HANDSHAKE = b"\x16"


def _close_now(stream: trio.SocketStream) -> None:
    """Close a connection's socket at once (this wakes a task reading it)."""
    try:
        stream.socket.close()
    except OSError:  # pragma: no cover - closing a socket does not fail on Linux
        pass

_PLAIN = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]


class _ConnectionHandler:
    """Accepts connections and serves the requests of each, in order, in a task of its
    own; keeps the table of connections (see the module)."""

    def __init__(self, app: AsgiApp, opts: H11Options) -> None:
        self.app = app
        self.opts = opts
        #: Every connection being served (handed-off ones included, pending ones too).
        self.all = _Group()
        #: The same, by peer address (see peers.peer_key).
        self.groups: dict[str, _Group] = {}
        #: Where connections are served (and refused).
        self.nursery: trio.Nursery | None = None
        #: Connections accepted and in the table whose task has not started yet, the
        #: newest last (see _start_some); one closed meanwhile leaves it at once.
        self.pending: dict[_Conn, None] = {}
        #: Refusals still being written or drained (see _refuse_new).
        self.refusing = 0
        #: Pending connections a pass starts (adapted by _pace).
        self.start_batch = _START_MAX
        self._last_accept_error = -1.0

    # -- accepting ---------------------------------------------------------------------

    async def accept_from(self, sock: socket.socket) -> NoReturn:
        """Accept connections from one listening socket for ever.

        Under a flood the kernel's queue holds thousands of connections in arrival
        order, and a new client's is the last. Taking them one per scheduler pass and
        starting each one's task (Trio's ``serve_listeners``) serves the client only
        once every connection ahead of it has been started (and, for those that sent a
        request, answered): seconds. Here every pass takes up to :data:`_ACCEPT_BATCH`
        at once, enters them in the table (room is made as for any waiting one) and
        starts the tasks of the newest few; the rest wait, newest on top, and the next
        passes start more, newest first again. How many a pass starts adapts to how
        long passes take (:meth:`_pace`): when the connections already started keep
        the scheduler busy (a flood of requests), fewer are added to its work, so each
        pass, and every client's next step, stays short. So a new client is served
        within a few short passes however long the queue, while a burst is taken at
        the pace the scheduler can run it; the oldest of a flood wait longest, and are
        the first closed to make room.
        """
        while True:
            await trio.lowlevel.wait_readable(sock)
            last = trio.current_time()
            while True:
                backoff = self._accept_some(sock)
                self._start_some()
                if backoff:
                    await trio.sleep(_ACCEPT_BACKOFF)
                elif self.pending:
                    await trio.lowlevel.checkpoint()
                    now = trio.current_time()
                    self._pace(now - last)
                    last = now
                else:
                    break

    def _pace(self, pass_time: float) -> None:
        """Adapt how many pending connections a pass starts to how long the last pass
        took: halved above :data:`_PASS_TARGET`, grown by one below it (so a flood's
        work is spread out, and a quiet server drains a burst quickly)."""
        if pass_time > _PASS_TARGET:
            self.start_batch = max(1, self.start_batch // 2)
        elif self.start_batch < _START_MAX:
            self.start_batch += 1

    def _accept_some(self, sock: socket.socket) -> bool:
        """Take what the listening socket has (up to a batch) into the table; True when
        accepting must pause (out of file descriptors or memory)."""
        now = trio.current_time()
        server: tuple[str, int] | None = None
        for _ in range(_ACCEPT_BATCH):
            try:
                conn, address = sock.accept()
            except BlockingIOError:
                return False
            except OSError as exc:
                if exc.errno in _ACCEPT_CAPACITY_ERRNOS:
                    if now - self._last_accept_error >= 10:
                        self._last_accept_error = now
                        log.error("accepting a connection failed (%s): retrying every "
                                  "%.1f s", os.strerror(exc.errno or 0), _ACCEPT_BACKOFF)
                    return True
                if exc.errno in _ACCEPT_GONE_ERRNOS:
                    continue  # the client left before it was accepted
                raise
            if server is None:
                server = _addr(_name(conn.getsockname))
            c = _Conn(conn, self.opts, server, _addr(address))
            refusal = self._admit(c)
            if refusal is None:
                # Bounded as an idle connection is (new and silent), but evicted after
                # idle ones, in arrival order, among those stalled: unread, it may hold
                # a whole request already (a client's first, on a new connection).
                _stalled(c, now, _HEAD)
                self.pending[c] = None
            else:
                self._refuse_new(conn, refusal)
        return False

    def _start_some(self) -> None:
        """Start the tasks of the newest pending connections (see :meth:`accept_from`)."""
        pending = self.pending
        nursery = self.nursery
        assert nursery is not None
        started = 0
        while pending and started < self.start_batch:
            c, _ = pending.popitem()  # the newest
            nursery.start_soon(self._start, c)
            started += 1

    def _refuse_new(self, conn: socket.socket, text: bytes) -> None:
        """Answer a connection the table has no room for: 503 in a task of its own, which
        then reads what the client sent before closing (closing with a request unread
        makes the kernel reset the connection, and the client lose the answer)."""
        if self.refusing >= self.opts.max_refusals:
            # Past this many at once, a reset is the cheaper answer.
            conn.close()
            return
        try:
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(conn))
        except OSError:
            conn.close()  # the client is gone already
            return
        self.refusing += 1
        assert self.nursery is not None
        self.nursery.start_soon(self._refusal, stream, text)

    async def _refusal(self, stream: trio.SocketStream, text: bytes) -> None:
        try:
            await self._refuse(stream, 503, text, [(b"retry-after", b"1")])
        finally:
            self.refusing -= 1

    # -- the table -----------------------------------------------------------------------

    async def reap(self) -> None:
        """Close connections that have waited too long for their client.

        One task for all connections, instead of a deadline per request: changing a
        cancel scope's deadline costs a few microseconds each time, and a request would
        need two. It looks every quarter of the shortest timeout (at most every
        second), so a connection waits between a timeout and 1.25 times that.
        Connections that came together expire together: they are closed
        :data:`_CLOSE_BATCH` per scheduler pass, so that the others are not held up
        while thousands of tasks end at once.
        """
        opts = self.opts
        tick = min(max(min(opts.keep_alive_timeout, opts.head_timeout,
                           opts.body_timeout) / 4, 0.01), 1.0)
        while True:
            await trio.sleep(tick)
            now = trio.current_time()
            expired = []
            idle_limit = self.opts.keep_alive_timeout
            for c in self.all.idle:  # in the order they began to wait
                if now - c.wait_since < idle_limit:  # type: ignore[operator]
                    break
                expired.append(c)
            expired += [c for c in self.all.stalled if self._expired(c, now)]
            for n, c in enumerate(expired):
                if n and not n % _CLOSE_BATCH:
                    await trio.lowlevel.checkpoint()
                    now = trio.current_time()
                if c.table is self and self._expired(c, now):  # still waiting, still here
                    self._close(c)

    def _expired(self, c: _Conn, now: float) -> bool:
        since = c.wait_since
        if since is None:
            return False
        opts = self.opts
        kind = c.wait_kind
        if kind == _BODY:
            limit = opts.body_timeout
        elif kind == _H11_HEAD or c.buf:
            limit = opts.head_timeout
        else:
            limit = opts.keep_alive_timeout
        return now - since >= limit

    def _close(self, c: _Conn) -> None:
        """Close a waiting connection now: out of the table at once (its room is free
        for a new one), and its socket closed, which wakes its task's read."""
        self._forget(c)
        c.reaped = True
        c.close()

    def _forget(self, c: _Conn) -> None:
        if c.table is self:
            self.pending.pop(c, None)
            c.table = None
            group = c.group
            assert group is not None
            c.group = None
            for g in (self.all, group):
                g.conns.discard(c)
                g.idle.pop(c, None)
                g.stalled.pop(c, None)
            if not group.conns:
                del self.groups[c.peer]

    def _make_room(self, group: _Group, need: int) -> bool:
        """Close ``need`` waiting connections of ``group``: idle ones first, then the
        stalled ones, each kind the longest-waiting first; False, closing none, when
        fewer are waiting. Each is taken at once, whatever the size of the table."""
        if group.waiting() < need:
            return False
        for _ in range(need):
            self._close(next(iter(group.idle or group.stalled)))
        return True

    def _admit(self, c: _Conn) -> bytes | None:
        """Enter ``c`` in the table, making room if needed; the refusal otherwise."""
        opts = self.opts
        cap = opts.max_connections_per_peer
        group = self.groups.get(c.peer)
        if cap and group is not None and len(group.conns) >= cap \
                and not self._make_room(group, len(group.conns) - cap + 1):
            return b"too many connections from this address\n"
        total = len(self.all.conns)
        if total >= opts.max_connections \
                and not self._make_room(self.all, total - opts.max_connections + 1):
            return b"too many connections\n"
        group = self.groups.get(c.peer)  # closing may have emptied it
        if group is None:
            group = self.groups[c.peer] = _Group()
        c.table = self
        c.group = group
        self.all.conns.add(c)
        group.conns.add(c)
        return None

    # -- serving -------------------------------------------------------------------------

    async def _start(self, c: _Conn) -> None:
        """A pending connection's task: serve it, unless it was closed meanwhile."""
        if c.reaped:
            return
        try:
            c.open()
        except OSError:  # the client left before this task started
            self._forget(c)
            c.close()
            return
        await self._run(c)

    async def _run(self, c: _Conn) -> None:
        """Serve ``c`` until it ends (then close it) or is handed to another task."""
        handed = False
        try:
            handed = await self._serve(c)
        except _BROKEN:
            pass  # a client that leaves is its own business
        finally:
            if not handed:
                self._forget(c)
                # Closed here, at once: no scheduler pass (aclose's checkpoint) per
                # connection, which counts when thousands end together.
                c.close()

    def _hand_off(self, c: _Conn) -> None:
        assert self.nursery is not None
        self.nursery.start_soon(self._run, c)

    async def _refuse(
        self, stream: trio.SocketStream, status: int, text: bytes,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """Answer ``status`` and end the connection cleanly: the answer, then our side
        shut, then whatever the client sent read and dropped until it closes its side
        (bounded), so that no unread byte makes the kernel reset the connection under
        the answer. The caller closes the socket (after the end of input, no reset)."""
        head, _, _, _ = http11.response_head(
            status, [*_PLAIN, *(extra or ()), (b"content-length", b"%d" % len(text))]
        )
        with trio.move_on_after(self.opts.refusal_linger):
            try:
                await stream.send_all(head + text)
                stream.socket.shutdown(socket.SHUT_WR)
                drained = 0
                while drained <= self.opts.max_drain_bytes:
                    data = await stream.receive_some(_RECV)
                    if not data:
                        break
                    drained += len(data)
            except (*_BROKEN, OSError):
                pass
        _close_now(stream)

    async def _serve(self, c: _Conn) -> bool:
        """Serve requests until the connection ends (False) or is handed off (True)."""
        opts = self.opts
        while True:
            head = http11.parse_head(c.buf, opts.max_head_bytes, c.cache) if c.buf else None
            if head is None and c.wait_since is None:
                # Waiting for a head (the reaper bounds it): the whole head, not each
                # read (a client trickling a byte at a time would never time out). A
                # new connection waits since it was accepted.
                if c.buf:
                    _stalled(c, trio.current_time(), _HEAD)
                else:
                    _idle(c, trio.current_time())
            while head is None:
                if c.eof:
                    if c.buf:
                        head = http11.FALLBACK  # a partial request: h11 says what it is
                        break
                    return False
                await c.read()
                if c.reaped:
                    return False
                if c.buf[:1] == _TLS_HANDSHAKE:
                    # A TLS client (https:// to this plain port) would wait for a head
                    # that never comes: tell it, in the plain HTTP it cannot read (its
                    # TLS library then reports a protocol error at once).
                    _busy(c)
                    await self._refuse(c.stream, 400, b"this server speaks plain HTTP, "
                                                      b"not HTTPS: use http://\n")
                    return False
                head = http11.parse_head(c.buf, opts.max_head_bytes, c.cache)
                if head is None and c.buf:
                    _stalled(c, c.wait_since, _HEAD)  # type: ignore[arg-type]
            _busy(c)
            if head is http11.FALLBACK:
                if http11.head_too_large(c.buf, opts.max_head_bytes):
                    await self._refuse(c.stream, 431, b"request header fields too large\n")
                    return False
                if await self._h11_cycle(c):
                    return False
                continue
            assert isinstance(head, RequestHead)
            after = await self._fast_exchange(c, head)
            if after is not _NEXT:
                return after is _HANDED

    # -- the fast path -----------------------------------------------------------------

    async def _fast_exchange(self, c: _Conn, head: RequestHead) -> str:
        """Run the app for one fast-path request; what the connection does next."""
        del c.buf[: head.body_start]
        ex = _FastExchange(c, head, self._hand_off)
        scope = _scope(head.method, head.target, "1.1", head.headers, c)
        try:
            await self.app(scope, ex.receive, ex.send)
        except _BROKEN:
            return _HANDED if ex.handed_off else _END
        except Exception:
            # [auth] the target may carry credentials in its query: never log them.
            log.exception("the ASGI app failed on %s %r", head.method, redact_target(head.target))
            if ex.handed_off:
                return _HANDED
            if not ex.started:
                await self._refuse(c.stream, 500, b"internal server error\n")
            return _END
        if ex.handed_off:
            return _HANDED
        if not ex.response_done:
            if not ex.started and not ex.disconnected:
                await self._refuse(c.stream, 500, b"no response\n")
            return _END
        if ex.disconnected or ex.close:
            return _END
        return _NEXT if await self._skip_body(c, ex.remaining) else _END

    async def _skip_body(self, c: _Conn, remaining: int) -> bool:
        """Drop a request body the app left unread; False to close instead."""
        if remaining > self.opts.max_drain_bytes:
            return False
        while remaining:
            if not c.buf:
                with trio.move_on_after(1):
                    await c.read()
                if not c.buf:
                    return False
            take = min(len(c.buf), remaining)
            del c.buf[:take]
            remaining -= take
        return True

    # -- everything else: h11 -----------------------------------------------------------

    async def _h11_cycle(self, c: _Conn) -> bool:
        """Serve one request with a fresh h11 connection that takes over the buffered
        bytes; True when the connection must end. What h11 leaves unread goes back to
        the buffer for the fast path."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.opts.max_head_bytes)
        conn.receive_data(bytes(c.buf))
        c.buf.clear()
        if c.eof:
            conn.receive_data(b"")
        stream = c.stream
        try:
            _stalled(c, trio.current_time(), _H11_HEAD)
            event = await self._next_event(conn, stream)
            _busy(c)
            if c.reaped or type(event) is not h11.Request:
                return True  # the client closed, or sent nothing in time
            if await self._exchange(conn, stream, event, c):
                return True
        except h11.RemoteProtocolError as exc:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                await self._refuse(stream, exc.error_status_hint, b"bad request\n")
            return True
        data, closed = conn.trailing_data
        c.buf += data
        c.eof = c.eof or closed
        return False

    async def _next_event(self, conn: h11.Connection, stream: trio.SocketStream) -> Any:
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                try:
                    data = await stream.receive_some(_RECV)
                except _BROKEN:
                    data = b""
                conn.receive_data(data)
                continue
            return ev

    async def _exchange(
        self, conn: h11.Connection, stream: trio.SocketStream, req: h11.Request, c: _Conn
    ) -> bool:
        """Run the app for one h11 request; True when the connection must end."""
        ex = _Exchange(conn, stream, self.opts, head_only=req.method == b"HEAD", c=c)
        scope = _scope(req.method, req.target, req.http_version.decode("ascii"),
                       list(req.headers), c)
        try:
            await self.app(scope, ex.receive, ex.send)
        except _BROKEN:
            return True
        except Exception:
            # [auth] the target may carry credentials in its query: never log them.
            log.exception("the ASGI app failed on %s %r", req.method, redact_target(req.target))
            if not ex.started:
                await self._refuse(stream, 500, b"internal server error\n")
            return True
        if not ex.response_done:
            if not ex.started and not ex.disconnected:
                await self._refuse(stream, 500, b"no response\n")
            return True
        if ex.disconnected or conn.our_state is not h11.DONE:
            return True
        return not await self._drain(conn, stream)

    async def _drain(self, conn: h11.Connection, stream: trio.SocketStream) -> bool:
        """Skip an unread request body; False to close instead. The next request is
        not started here: its bytes go back to the fast path."""
        budget = self.opts.max_drain_bytes
        while conn.their_state is h11.SEND_BODY:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                if budget <= 0:
                    return False
                with trio.move_on_after(1) as timer:
                    data = await stream.receive_some(_RECV)
                if timer.cancelled_caught or not data:
                    return False
                budget -= len(data)
                conn.receive_data(data)
            elif type(ev) is h11.ConnectionClosed:
                return False
        return conn.their_state is h11.DONE and conn.our_state is h11.DONE


#: File descriptors kept for everything but the connections (listeners, trace files,
#: the trace sink's pipes, subprocesses of handlers).
_FD_RESERVE = 256


def _fit_to_descriptors(opts: H11Options) -> H11Options:
    """Make sure the table fills before the process runs out of file descriptors.

    Room is made for a new connection when it is accepted; an accept that fails for
    want of a descriptor (EMFILE: trio then retries every 0.1 s) makes none, and every
    new client would wait for the reaper. So the soft RLIMIT_NOFILE is raised (up to
    the hard limit) to hold ``max_connections``; if it cannot be, the table is made
    smaller to fit (with a warning).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Unix
        return opts
    need = opts.max_connections + _FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return opts
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft >= need:
        return opts
    fit = max(1, soft - _FD_RESERVE)
    log.warning("the file descriptor limit (%d) holds only %d connections: "
                "max_connections %d lowered to that", soft, fit, opts.max_connections)
    return attrs.evolve(opts, max_connections=fit,
                        max_connections_per_peer=min(opts.max_connections_per_peer, fit))


async def serve_h11(
    app: AsgiApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    options: H11Options | None = None,
    listen_socket: socket.socket | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` until cancelled; the task status is the list of
    bound base URLs (``http://127.0.0.1:PORT``), so ``port=0`` can be used.
    ``listen_socket``: accept on this listening socket instead (a worker of
    ``mcpactor run --workers``, sharing its supervisor's socket)."""
    opts = _fit_to_descriptors(options or H11Options())
    socks: list[socket.socket] = []
    try:
        if listen_socket is not None:
            # Shared with the other workers of ``--workers``: ours to read, not to close.
            socks.append(socket.socket(fileno=os.dup(listen_socket.fileno())))
        else:
            # Trio binds as it always has (addresses, IPv6-only, SO_REUSEADDR); the
            # accepting is ours (see _ConnectionHandler.accept_from).
            for lst in await trio.open_tcp_listeners(port, host=host):
                with lst.socket:
                    socks.append(socket.socket(fileno=os.dup(lst.socket.fileno())))
        urls = []
        for sock in socks:
            sock.setblocking(False)
            name = _addr(sock.getsockname())
            if name is not None:
                h = f"[{name[0]}]" if ":" in name[0] else name[0]
                urls.append(f"http://{h}:{name[1]}")
        handler = _ConnectionHandler(app, opts)
        async with trio.open_nursery() as nursery:
            handler.nursery = nursery
            nursery.start_soon(handler.reap)
            for sock in socks:
                nursery.start_soon(handler.accept_from, sock)
            task_status.started(urls)
    finally:
        for sock in socks:
            sock.close()
