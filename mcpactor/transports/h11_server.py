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
connection's task out of its read; a busy connection is never touched.
"""

from __future__ import annotations

import heapq
import logging
import socket
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any
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
    #: connection; past this the connection is closed instead.
    max_drain_bytes: int = 64 * 1024
    #: Bytes of a pipelined next request buffered while a response is in progress.
    max_pipelined_bytes: int = 64 * 1024


# What a waiting connection waits for (_Conn.wait_kind); idle is a head wait with
# nothing buffered.
_HEAD, _BODY, _H11_HEAD = 0, 1, 2


class _Conn:
    """One TCP connection: the socket and the bytes read but not yet consumed."""

    __slots__ = ("buf", "cache", "client", "done", "eof", "opts", "peer", "reaped",
                 "server", "stream", "table", "wait_kind", "wait_since")

    def __init__(self, stream: trio.SocketStream, opts: H11Options) -> None:
        self.stream = stream
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
        #: Set when the connection is closed, once it has been handed to another task
        #: (None until then): the task that accepted it waits for it (see __call__).
        self.done: trio.Event | None = None
        sock = stream.socket
        self.server = _addr(_name(sock.getsockname))
        self.client = _addr(_name(sock.getpeername))
        #: Whose share of the table this connection counts against.
        self.peer = peer_key(self.client)
        #: The table it is in (set when admitted).
        self.table: _ConnectionHandler | None = None

    def left(self) -> None:
        """The client went away while its request was still being answered: the app
        may go on (a handler outlives its client), but the connection will never serve
        again, so it leaves the table (and closes) now rather than when the app is done.
        """
        if self.table is not None:
            self.table._close(self)

    def waiting_idle(self) -> bool:
        """Idle: waiting for a request with nothing of it received."""
        return self.wait_kind == _HEAD and not self.buf

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
            # Waiting for the body: bounded as a whole (the reaper), the clock read only
            # when the body has not all arrived with its head.
            since = self.body_since
            if since is None:
                since = self.body_since = trio.current_time()
            c.wait_kind = _BODY
            c.wait_since = since
            got = await c.read()
            c.wait_since = None
            c.wait_kind = _HEAD
            if not got or c.reaped:
                self.disconnected = True
                return _DISCONNECT
        take = min(len(buf), self.remaining)
        body = bytes(buf[:take])
        del buf[:take]
        self.remaining -= take
        if not self.remaining:
            self.body_done = True
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
                if c is not None:
                    # Waiting for the body (see _FastExchange.receive).
                    if self.body_since is None:
                        self.body_since = trio.current_time()
                    c.wait_kind = _BODY
                    c.wait_since = self.body_since
                try:
                    data = await self.stream.receive_some(_RECV)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if c is not None:
                    c.wait_since = None
                    c.wait_kind = _HEAD
                if not data:
                    self.disconnected = True
                    return _DISCONNECT
                conn.receive_data(data)
                continue
            if type(ev) is h11.Data:
                chunks.append(bytes(ev.data))
            elif type(ev) is h11.EndOfMessage:
                self.body_done = True
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


def _eviction_order(c: _Conn) -> tuple[int, float]:
    # Idle connections first (closing one costs its client a reconnect at most), then
    # the ones that have waited longest for a request's head or body.
    since = c.wait_since
    assert since is not None
    return (0 if c.waiting_idle() else 1), since


# What a connection does after an exchange: serve the next request, end, or nothing
# (another task serves it now).
_NEXT, _END, _HANDED = "next", "end", "handed"

_PLAIN = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]


class _ConnectionHandler:
    """Serves the requests of one TCP connection, in order; keeps the table of
    connections (see the module)."""

    def __init__(self, app: AsgiApp, opts: H11Options) -> None:
        self.app = app
        self.opts = opts
        #: Every connection being served (handed-off ones included).
        self.conns: set[_Conn] = set()
        #: The same, by peer address (see peers.peer_key).
        self.peers: dict[str, set[_Conn]] = {}
        #: Where connections handed to a new task (see _FastExchange) are served.
        self.nursery: trio.Nursery | None = None

    async def reap(self) -> None:
        """Close connections that have waited too long for their client.

        One task for all connections, instead of a deadline per request: changing a
        cancel scope's deadline costs a few microseconds each time, and a request would
        need two. It looks every quarter of the shortest timeout (at most every
        second), so a connection waits between a timeout and 1.25 times that.
        """
        opts = self.opts
        idle, head, body = opts.keep_alive_timeout, opts.head_timeout, opts.body_timeout
        tick = min(max(min(idle, head, body) / 4, 0.01), 1.0)
        while True:
            await trio.sleep(tick)
            now = trio.current_time()
            for c in list(self.conns):
                since = c.wait_since
                if since is None:
                    continue
                kind = c.wait_kind
                if kind == _BODY:
                    limit = body
                elif kind == _H11_HEAD or c.buf:
                    limit = head
                else:
                    limit = idle
                if now - since >= limit:
                    self._close(c)

    def _close(self, c: _Conn) -> None:
        """Close a waiting connection now: out of the table at once (its room is free
        for a new one), and its socket closed, which wakes its task's read."""
        self._forget(c)
        c.reaped = True
        sock = c.stream.socket
        try:
            sock.close()
        except OSError:  # pragma: no cover - closing a socket does not fail on Linux
            pass

    def _forget(self, c: _Conn) -> None:
        if c in self.conns:
            self.conns.discard(c)
            group = self.peers[c.peer]
            group.discard(c)
            if not group:
                del self.peers[c.peer]

    def _make_room(self, pool: Collection[_Conn], need: int) -> bool:
        """Close ``need`` waiting connections of ``pool`` (idle first, then the
        longest-waiting); False, closing none, when fewer are waiting.

        Under a flood every new connection would scan the whole pool: closing a
        sixty-fourth of it at once keeps that to one scan per many accepts.
        """
        waiting = [c for c in pool if c.wait_since is not None]
        if len(waiting) < need:
            return False
        count = min(len(waiting), max(need, len(pool) // 64))
        for c in heapq.nsmallest(count, waiting, key=_eviction_order):
            self._close(c)
        log.debug("closed %d waiting connections to make room", count)
        return True

    def _admit(self, c: _Conn) -> bytes | None:
        """Enter ``c`` in the table, making room if needed; the refusal otherwise."""
        opts = self.opts
        cap = opts.max_connections_per_peer
        group = self.peers.get(c.peer)
        if cap and group is not None and len(group) >= cap \
                and not self._make_room(group, len(group) - cap + 1):
            return b"too many connections from this address\n"
        if len(self.conns) >= opts.max_connections \
                and not self._make_room(self.conns, len(self.conns) - opts.max_connections + 1):
            return b"too many connections\n"
        self.conns.add(c)
        c.table = self
        group = self.peers.get(c.peer)
        if group is None:
            group = self.peers[c.peer] = set()
        group.add(c)
        return None

    async def __call__(self, stream: trio.SocketStream) -> None:
        c = _Conn(stream, self.opts)
        refusal = self._admit(c)
        if refusal is not None:
            try:
                async with stream:
                    await self._refuse(stream, 503, refusal, [(b"retry-after", b"1")])
            except _BROKEN:
                pass
            return
        await self._run(c)
        if c.done is not None:
            # Handed to another task: trio.serve_listeners closes the stream as soon as
            # this returns, which would cut the connection under that task (a client
            # reusing it lost its next request), so wait until it is really over.
            await c.done.wait()

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
                try:
                    await trio.aclose_forcefully(c.stream)
                finally:
                    if c.done is not None:
                        c.done.set()

    def _hand_off(self, c: _Conn) -> None:
        assert self.nursery is not None
        if c.done is None:
            c.done = trio.Event()
        self.nursery.start_soon(self._run, c)

    async def _refuse(
        self, stream: trio.SocketStream, status: int, text: bytes,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        head, _, _, _ = http11.response_head(
            status, [*_PLAIN, *(extra or ()), (b"content-length", b"%d" % len(text))]
        )
        with trio.move_on_after(1):
            await stream.send_all(head + text)

    async def _serve(self, c: _Conn) -> bool:
        """Serve requests until the connection ends (False) or is handed off (True)."""
        opts = self.opts
        while True:
            head = http11.parse_head(c.buf, opts.max_head_bytes, c.cache) if c.buf else None
            if head is None:
                # Waiting for a head (the reaper bounds it): the whole head, not each
                # read (a client trickling a byte at a time would never time out).
                c.wait_since = trio.current_time()
            while head is None:
                if c.eof:
                    if c.buf:
                        head = http11.FALLBACK  # a partial request: h11 says what it is
                        break
                    return False
                await c.read()
                if c.reaped:
                    return False
                head = http11.parse_head(c.buf, opts.max_head_bytes, c.cache)
            c.wait_since = None
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
            c.wait_kind = _H11_HEAD
            c.wait_since = trio.current_time()
            event = await self._next_event(conn, stream)
            c.wait_since = None
            c.wait_kind = _HEAD
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
    if listen_socket is not None:
        listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(listen_socket))]
    else:
        listeners = await trio.open_tcp_listeners(port, host=host)
    urls = []
    for lst in listeners:
        name = _addr(lst.socket.getsockname())
        if name is not None:
            h = f"[{name[0]}]" if ":" in name[0] else name[0]
            urls.append(f"http://{h}:{name[1]}")
    handler = _ConnectionHandler(app, opts)
    async with trio.open_nursery() as nursery:
        handler.nursery = nursery
        nursery.start_soon(handler.reap)
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started(urls)
