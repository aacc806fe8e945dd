"""A small HTTP/1.1 client on Trio sockets (:mod:`.http11_client` for the bytes), with
keep-alive connection reuse.

Only what MCP clients need: one request per connection at a time, bodies in memory on
the way out, streamed on the way in (SSE), connections returned to a per-origin pool
when a response was read to its end and both sides agreed to keep the connection.
"""

from __future__ import annotations

import inspect
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
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
from mcpactor.transports.http_proxy import (
    Proxy,
    ProxyError,
    TlsOptions,
    connect_request,
    parse_connect_response,
    parse_proxy,
    proxy_from_env,
)

__all__ = ["HttpClientError", "HttpPool", "HttpResponse", "Origin", "TlsOptions", "split_url"]

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
    def __init__(self, stream: trio.abc.Stream, proxy: Proxy | None = None) -> None:
        self.stream = stream
        self.reader: ResponseReader | None = None  # for the request written last
        self.reused = False
        self.bytes_in = 0  # since the current request was written
        #: Plain HTTP through a proxy: requests go in absolute form, with its credentials.
        self.proxy = proxy

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


#: ``headers_factory``: called before every request; extra headers, or an awaitable of them.
HeadersFactory = Callable[[], Mapping[str, str] | Awaitable[Mapping[str, str]]]
#: ``open_stream(host, port)``: the byte stream to a host (TCP by default).
StreamOpener = Callable[[str, int], Awaitable[trio.abc.Stream]]


class HttpPool:
    """Keep-alive connections per origin; one request per connection at a time.

    ``proxy``: an HTTP proxy URL for every request; without one, the environment's
    (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY`` ..., see :mod:`.http_proxy`) unless
    ``trust_env=False``. ``tls``: :class:`~.http_proxy.TlsOptions` (CA bundle, client
    certificate, ``verify``) or a ready ``ssl.SSLContext``. ``headers_factory``:
    called before each request for headers to add (a fresh token, a trace id),
    overriding same-named ones. ``open_stream``: how to reach a host (a Unix socket,
    an in-memory stream ...) instead of TCP.
    """

    def __init__(self, *, connect_timeout: float = 10.0, max_idle: int = 8,
                 ssl_context: ssl.SSLContext | None = None,
                 tls: TlsOptions | ssl.SSLContext | None = None,
                 proxy: str | None = None, trust_env: bool = True,
                 headers_factory: HeadersFactory | None = None,
                 open_stream: StreamOpener | None = None) -> None:
        self._idle: dict[Origin, list[_Conn]] = {}
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        if ssl_context is not None and tls is not None:
            raise TypeError("pass tls= or ssl_context=, not both")
        # Built now: a CA file that cannot be read is the caller's error at once.
        self.ssl_context = tls.context() if isinstance(tls, TlsOptions) else (
            tls or ssl_context)
        self.proxy = parse_proxy(proxy) if proxy is not None else None
        self.trust_env = trust_env
        self.headers_factory = headers_factory
        self.open_stream: StreamOpener = open_stream or trio.open_tcp_stream
        self.opened = 0  # connections opened so far (tests check reuse with it)
        self._closed = False

    def proxy_for(self, origin: Origin) -> Proxy | None:
        """The proxy requests to ``origin`` go through (None: direct)."""
        if self.proxy is not None:
            return self.proxy
        if not self.trust_env:
            return None
        try:
            return proxy_from_env(origin.scheme, origin.host, origin.port)
        except ProxyError as exc:
            raise HttpClientError(f"cannot connect to {origin.authority}: {exc}") from None

    def _tls(self) -> ssl.SSLContext:
        if self.ssl_context is None:
            self.ssl_context = ssl.create_default_context()
        return self.ssl_context

    async def _connect(self, origin: Origin) -> _Conn:
        proxy = self.proxy_for(origin)
        via = f" through the proxy {proxy.authority}" if proxy is not None else ""
        stream: trio.abc.Stream | None = None
        try:
            with trio.fail_after(self.connect_timeout):
                if proxy is None:
                    stream = await self.open_stream(origin.host, origin.port)
                else:
                    stream = await self.open_stream(proxy.host, proxy.port)
                    if proxy.scheme == "https":
                        stream = await self._handshake(stream, proxy.host)
                    if origin.scheme == "https":
                        await self._tunnel(stream, origin, proxy)
                if origin.scheme == "https":
                    stream = await self._handshake(stream, origin.host)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, ValueError) as exc:
            if stream is not None:
                await _Conn(stream).aclose()
            if isinstance(exc, trio.TooSlowError):
                # Connected, but the TLS handshake got no answer: most often a server
                # that speaks plain HTTP, waiting for the rest of a request head.
                why = (f"no answer to the TLS handshake within {self.connect_timeout:g} s "
                       "(does the server speak plain HTTP? then use http://)"
                       if stream is not None and origin.scheme == "https" else
                       f"no connection within {self.connect_timeout:g} s")
            else:
                why = str(exc) or type(exc).__name__
            raise HttpClientError(f"cannot connect to {origin.authority}{via}: {why}") from exc
        self.opened += 1
        # Plain HTTP through a proxy: the proxy is asked for absolute URLs.
        return _Conn(stream, proxy if proxy is not None and origin.scheme == "http" else None)

    async def _handshake(self, stream: trio.abc.Stream, host: str) -> trio.abc.Stream:
        ssl_stream = trio.SSLStream(stream, self._tls(), server_hostname=host,
                                    https_compatible=True)
        try:
            await ssl_stream.do_handshake()
        except trio.BrokenResourceError as exc:
            # The interesting part (a certificate that does not verify) is the cause.
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            hint = ""
            if getattr(cause, "reason", None) == "WRONG_VERSION_NUMBER" or isinstance(
                    cause, ssl.SSLEOFError):
                # What a plain-HTTP server's answer (or its closing) looks like to TLS.
                hint = " (the server does not speak TLS here: plain HTTP? then use http://)"
            raise OSError(f"TLS handshake with {host} failed: {cause or 'connection closed'}"
                          f"{hint}") from exc
        return ssl_stream

    async def _tunnel(self, stream: trio.abc.Stream, origin: Origin, proxy: Proxy) -> None:
        """``CONNECT`` through the proxy to ``origin``; OSError if it says no."""
        await stream.send_all(connect_request(origin.host, origin.port, proxy))
        buffer = b""
        while True:
            data = await stream.receive_some(_READ)
            if not data:
                raise OSError("the proxy closed the connection before answering CONNECT")
            buffer += data
            answer = parse_connect_response(buffer)
            if answer is not None:
                break
        status, reason, length = answer
        if status == 407:
            raise OSError("the proxy asks for credentials (407): put them in the proxy "
                          "URL, http://user:password@host:port")
        if not 200 <= status < 300:
            raise OSError(f"the proxy refused CONNECT to {origin.authority}: "
                          f"{status} {reason}".rstrip())
        if len(buffer) > length:
            raise OSError("the proxy sent data before the tunnel was set up")

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
        if self.headers_factory is not None:
            headers = await self._with_factory_headers(headers)
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

    async def _with_factory_headers(
        self, headers: list[tuple[str, str]] | None
    ) -> list[tuple[str, str]]:
        assert self.headers_factory is not None
        extra = self.headers_factory()
        if inspect.isawaitable(extra):
            extra = await extra
        assert isinstance(extra, Mapping)
        names = {k.lower() for k in extra}
        return [*(h for h in headers or [] if h[0].lower() not in names),
                *((str(k), str(v)) for k, v in extra.items())]

    async def _write(
        self, conn: _Conn, origin: Origin, method: str, target: str,
        headers: list[tuple[str, str]], body: bytes | None,
    ) -> None:
        # A caller-supplied Host wins (tests of DNS-rebinding protection need that).
        has_host = any(k.lower() == "host" for k, _ in headers)
        h: list[tuple[str, str]] = [*([] if has_host else [("host", origin.authority)]), *headers]
        if body is not None:
            h.append(("content-length", str(len(body))))
        if conn.proxy is not None:
            target = f"http://{origin.authority}{target}"
            h.extend(conn.proxy.headers())
        await conn.send_request(method, target, h, body)

    async def aclose(self) -> None:
        """Close every idle connection."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for c in conns:
                await c.aclose()
