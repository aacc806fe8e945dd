"""A lean HTTP/1.1 server for our ASGI app: h11 on Trio, one task per connection.

Why it exists next to hypercorn (which stays supported, ``server="hypercorn"``): on the
benchmark's echo call a trivial ASGI app on hypercorn's Trio worker costs ~1 ms of
server CPU per request, four times a bare h11-over-trio loop, so hypercorn alone
would cap mcpactor below its HTTP targets (figures in ``benchmarks/README.md``).
What makes this one cheap:

- the app runs in the connection's own task (no task, channel or event per request);
- the response head is held until the first body chunk, so a complete JSON answer is
  one ``send`` (head, body and terminator together);
- a request body that has arrived whole is handed over in a single ``http.request``.

Scope: HTTP/1.1 (and 1.0) with keep-alive and pipelining, ASGI 3 ``http`` scopes
only (no lifespan, no websockets: :class:`McpHttpApp` needs neither). After the body
is read, ``receive()`` reads the socket to notice a disconnect, which is how our app
stops waiting for an answer nobody will read; bytes of a pipelined next request seen
meanwhile are kept (bounded) for the next cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

import attrs
import h11
import trio

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


@attrs.frozen(kw_only=True)
class H11Options:
    """Limits of the lean server; the defaults suit a local MCP endpoint."""

    #: Seconds an idle keep-alive connection (or a slow request head) may take.
    keep_alive_timeout: float = 30.0
    #: Largest request head (request line + headers) in bytes.
    max_head_bytes: int = 16 * 1024
    #: Connections served at once; more are answered 503 and closed.
    max_connections: int = 2000
    #: Bytes of a request body the app left unread that are drained to keep the
    #: connection; past this the connection is closed instead.
    max_drain_bytes: int = 64 * 1024
    #: Bytes of a pipelined next request buffered while a response is in progress.
    max_pipelined_bytes: int = 64 * 1024


class _Exchange:
    """One request/response on a connection: the ASGI ``receive`` and ``send``."""

    __slots__ = ("body_done", "conn", "disconnected", "head", "head_only", "opts",
                 "response_done", "stream")

    def __init__(
        self, conn: h11.Connection, stream: trio.SocketStream, opts: H11Options,
        head_only: bool = False,
    ) -> None:
        self.conn = conn
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
    req: h11.Request, server: tuple[str, int] | None, client: tuple[str, int] | None
) -> dict[str, Any]:
    target = req.target
    if not target.startswith(b"/"):
        # Absolute form (``http://host/path``): keep the path part only.
        after = target.partition(b"://")[2]
        target = b"/" + after.partition(b"/")[2] if after else b"/"
    raw_path, _, query = target.partition(b"?")
    path = raw_path.decode("latin-1")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": req.http_version.decode("ascii"),
        "method": req.method.decode("ascii"),
        "scheme": "http",
        "path": unquote(path) if "%" in path else path,
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": list(req.headers),
        "client": client,
        "server": server,
    }


def _addr(sockname: Any) -> tuple[str, int] | None:
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return str(sockname[0]), int(sockname[1])
    return None


_PLAIN = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]


class _ConnectionHandler:
    """Serves the requests of one TCP connection, in order."""

    def __init__(self, app: AsgiApp, opts: H11Options, slots: trio.Semaphore) -> None:
        self.app = app
        self.opts = opts
        self.slots = slots

    async def __call__(self, stream: trio.SocketStream) -> None:
        try:
            async with stream:
                try:
                    self.slots.acquire_nowait()
                except trio.WouldBlock:
                    await self._refuse(stream, 503, b"too many connections\n")
                    return
                try:
                    await self._serve(stream)
                finally:
                    self.slots.release()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # a client that leaves is its own business

    async def _refuse(self, stream: trio.SocketStream, status: int, text: bytes) -> None:
        conn = h11.Connection(h11.SERVER)
        head = h11.Response(
            status_code=status, headers=[*_PLAIN, (b"content-length", str(len(text)).encode())]
        )
        with trio.move_on_after(1):
            try:
                await stream.send_all(
                    (conn.send(head) or b"") + (conn.send(h11.Data(data=text)) or b"")
                    + (conn.send(h11.EndOfMessage()) or b"")
                )
            except h11.LocalProtocolError:
                pass

    async def _serve(self, stream: trio.SocketStream) -> None:
        sock = stream.socket
        server, client = _addr(sock.getsockname()), _addr(sock.getpeername())
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.opts.max_head_bytes)
        while True:
            try:
                event: Any = None
                # Only the wait for a request head is bounded: an SSE response may
                # rightly stay open for hours.
                with trio.move_on_after(self.opts.keep_alive_timeout):
                    event = await self._next_event(conn, stream)
                if type(event) is not h11.Request:
                    return  # the client closed, or sent nothing in time
                if await self._exchange(conn, stream, event, server, client):
                    return
            except h11.RemoteProtocolError as exc:
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    await self._refuse(stream, exc.error_status_hint, b"bad request\n")
                return

    async def _next_event(self, conn: h11.Connection, stream: trio.SocketStream) -> Any:
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                try:
                    data = await stream.receive_some(_RECV)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                conn.receive_data(data)
                continue
            return ev

    async def _exchange(
        self, conn: h11.Connection, stream: trio.SocketStream, req: h11.Request,
        server: tuple[str, int] | None, client: tuple[str, int] | None,
    ) -> bool:
        """Run the app for one request; True when the connection must end."""
        ex = _Exchange(conn, stream, self.opts, head_only=req.method == b"HEAD")
        try:
            await self.app(_scope(req, server, client), ex.receive, ex.send)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
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
        """Skip an unread request body and start the next cycle; False to close instead."""
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
        if conn.their_state is not h11.DONE or conn.our_state is not h11.DONE:
            return False
        conn.start_next_cycle()
        return True


async def serve_h11(
    app: AsgiApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    options: H11Options | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` until cancelled; the task status is the list of
    bound base URLs (``http://127.0.0.1:PORT``), so ``port=0`` can be used."""
    opts = options or H11Options()
    listeners = await trio.open_tcp_listeners(port, host=host)
    urls = []
    for lst in listeners:
        name = _addr(lst.socket.getsockname())
        if name is not None:
            h = f"[{name[0]}]" if ":" in name[0] else name[0]
            urls.append(f"http://{h}:{name[1]}")
    handler = _ConnectionHandler(app, opts, trio.Semaphore(opts.max_connections))
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started(urls)
