"""A small HTTP/1.1 client on Trio sockets (:mod:`.http11_client` for the bytes), with
keep-alive connection reuse.

Only what MCP clients need: one request per connection at a time, bodies in memory on
the way out, streamed on the way in (SSE), connections returned to a per-origin pool
when a response was read to its end and both sides agreed to keep the connection.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import attrs
import trio

from mcpactor.transports.http11_client import (
    END,
    NEED_DATA,
    HttpProtocolError,
    ResponseHead,
    ResponseReader,
    request_bytes,
)

__all__ = ["HttpClientError", "HttpPool", "HttpResponse", "Origin", "split_url"]

_READ = 64 * 1024


class HttpClientError(Exception):
    """The connection failed or the peer broke HTTP."""


@attrs.frozen
class Origin:
    """Where to connect: scheme, host, port."""

    scheme: str
    host: str
    port: int

    @property
    def authority(self) -> str:
        """The ``Host`` header value."""
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def split_url(url: str) -> tuple[Origin, str]:
    """``(origin, target)`` of an absolute http(s) URL; target keeps the query string."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Origin(parts.scheme, parts.hostname, port), target


class _Conn:
    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.reader: ResponseReader | None = None  # for the request written last
        self.reused = False
        self.bytes_in = 0  # since the current request was written

    async def next_event(self) -> object:
        """The next event of the response being read, reading from the socket as needed."""
        reader = self.reader
        assert reader is not None, "no request was written"
        while True:
            try:
                ev = reader.next_event()
            except HttpProtocolError as exc:
                raise HttpClientError(f"bad HTTP from the server: {exc}") from exc
            if ev is not NEED_DATA:
                return ev
            try:
                data = await self.stream.receive_some(_READ)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise HttpClientError(f"connection broke: {exc}") from exc
            self.bytes_in += len(data)
            reader.feed(bytes(data))

    async def send_request(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes | None
    ) -> None:
        """Write a whole request with one send (a small request is one TCP segment, not
        a head and a body the server reads separately)."""
        try:
            data = request_bytes(method, target, headers, body)
        except HttpProtocolError as exc:
            raise ValueError(f"cannot send this request: {exc}") from None
        self.reader = ResponseReader(method)
        self.bytes_in = 0
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise HttpClientError(f"connection broke: {exc}") from exc

    async def aclose(self) -> None:
        """Close the socket (shielded: also runs while being cancelled)."""
        with trio.CancelScope(shield=True):
            try:
                await self.stream.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass


class HttpResponse:
    """A response whose headers are read; read the body with :meth:`iter_bytes` or
    :meth:`read`, then :meth:`aclose` (also fine before the end: the connection is then
    dropped instead of reused)."""

    def __init__(self, pool: HttpPool, origin: Origin, conn: _Conn, head: ResponseHead) -> None:
        self._pool = pool
        self._origin = origin
        self._conn: _Conn | None = conn
        self.status = head.status
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in head.headers}
        self._done = False

    @property
    def content_type(self) -> str:
        """The media type, lower-cased, without parameters."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """Body chunks as they arrive."""
        conn = self._conn
        if conn is None:
            return
        while not self._done:
            ev = await conn.next_event()
            if ev is END:
                self._done = True
            elif isinstance(ev, bytes):
                if ev:
                    yield ev
            else:
                raise HttpClientError(f"unexpected HTTP event {ev!r}")

    async def read(self, limit: int = 64 * 1024 * 1024) -> bytes:
        """The whole body."""
        out = bytearray()
        async for chunk in self.iter_bytes():
            out += chunk
            if len(out) > limit:
                raise HttpClientError("response body too large")
        return bytes(out)

    async def aclose(self) -> None:
        """Give the connection back (when the body was read fully) or close it."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and conn.reader is not None and conn.reader.reusable:
            self._pool._release(self._origin, conn)
        else:
            await conn.aclose()


class PendingResponse:
    """A request written to a connection, its response not read yet."""

    def __init__(self, pool: HttpPool, origin: Origin, conn: _Conn,
                 args: tuple[str, str, list[tuple[str, str]], bytes | None]) -> None:
        self._pool = pool
        self._origin = origin
        self._conn = conn
        self._args = args

    async def response(self) -> HttpResponse:
        """Wait for the response headers."""
        conn = self._conn
        try:
            ev = await conn.next_event()
            if isinstance(ev, ResponseHead):
                return HttpResponse(self._pool, self._origin, conn, ev)
            raise HttpClientError(f"unexpected HTTP event {ev!r}")
        except HttpClientError:
            await conn.aclose()
            if not conn.reused or conn.bytes_in:
                raise
        except BaseException:
            await conn.aclose()
            raise
        # The reused connection was closed by the server before it read our request:
        # nothing was processed, so sending it again on a new connection is safe.
        retry = await self._pool._connect(self._origin)
        method, url, headers, body = self._args
        pending = PendingResponse(self._pool, self._origin, retry, self._args)
        try:
            await self._pool._write(retry, self._origin, method, split_url(url)[1], headers, body)
        except BaseException:
            await retry.aclose()
            raise
        return await pending.response()


class HttpPool:
    """Keep-alive connections per origin; one request per connection at a time."""

    def __init__(self, *, connect_timeout: float = 10.0, max_idle: int = 8,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._idle: dict[Origin, list[_Conn]] = {}
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self.ssl_context = ssl_context
        self.opened = 0  # connections opened so far (tests check reuse with it)
        self._closed = False

    async def _connect(self, origin: Origin) -> _Conn:
        try:
            with trio.fail_after(self.connect_timeout):
                if origin.scheme == "https":
                    ctx = self.ssl_context or ssl.create_default_context()
                    stream: trio.abc.Stream = await trio.open_ssl_over_tcp_stream(
                        origin.host, origin.port, ssl_context=ctx
                    )
                else:
                    stream = await trio.open_tcp_stream(origin.host, origin.port)
        except (OSError, trio.TooSlowError) as exc:
            raise HttpClientError(f"cannot connect to {origin.authority}: {exc}") from exc
        self.opened += 1
        return _Conn(stream)

    def _release(self, origin: Origin, conn: _Conn) -> None:
        idle = self._idle.setdefault(origin, [])
        if self._closed or len(idle) >= self.max_idle:
            trio.lowlevel.spawn_system_task(conn.aclose)
            return
        conn.reused = True
        idle.append(conn)

    async def request(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]] | None = None,
        body: bytes | None = None,
    ) -> HttpResponse:
        """Send a request and return once the response headers are in."""
        pending = await self.send(method, url, headers, body)
        return await pending.response()

    async def send(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]] | None = None,
        body: bytes | None = None,
    ) -> PendingResponse:
        """Write a whole request; wait for its answer with :meth:`PendingResponse.response`.

        Splitting the two lets a caller keep its requests in order on the wire without
        waiting for each answer (a JSON answer only comes when the request is done).
        """
        origin, target = split_url(url)
        idle = self._idle.get(origin)
        conn = idle.pop() if idle else await self._connect(origin)
        args = (method, url, headers or [], body)
        try:
            await self._write(conn, origin, method, target, headers or [], body)
        except HttpClientError:
            await conn.aclose()
            if not conn.reused:
                raise
            # Servers close idle keep-alive connections between requests: once more, fresh.
            conn = await self._connect(origin)
            try:
                await self._write(conn, origin, method, target, headers or [], body)
            except HttpClientError:
                await conn.aclose()
                raise
        return PendingResponse(self, origin, conn, args)

    async def _write(
        self, conn: _Conn, origin: Origin, method: str, target: str,
        headers: list[tuple[str, str]], body: bytes | None,
    ) -> None:
        # A caller-supplied Host wins (tests of DNS-rebinding protection need that).
        has_host = any(k.lower() == "host" for k, _ in headers)
        h: list[tuple[str, str]] = [*([] if has_host else [("host", origin.authority)]), *headers]
        if body is not None:
            h.append(("content-length", str(len(body))))
        await conn.send_request(method, target, h, body)

    async def aclose(self) -> None:
        """Close every idle connection."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for c in conns:
                await c.aclose()
