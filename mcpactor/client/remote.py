"""Connecting to remote servers: Streamable HTTP, legacy HTTP+SSE, WebSocket."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.client.client import Client, connect_transport
from mcpactor.session.groups import plain_errors

if TYPE_CHECKING:
    from mcpactor.auth.client_flow import OAuthClient
    from mcpactor.transports.base import Transport
    from mcpactor.transports.http_client import HeadersFactory, HttpPool, StreamOpener
    from mcpactor.transports.http_proxy import TlsOptions

__all__ = ["connect_http", "connect_sse", "connect_websocket"]


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    headers_factory: HeadersFactory | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    tls: TlsOptions | ssl.SSLContext | None = None,
    open_stream: StreamOpener | None = None,
    legacy_fallback: bool = True,
    open_get_stream: bool = True,
    pool: HttpPool | None = None,
    auth: OAuthClient | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP server (falling back to legacy HTTP+SSE when the
    server refuses the first POST with a 4xx) and initialize.

    ``headers`` go on every HTTP request (e.g. ``Authorization``); ``headers_factory``
    is called before each request for more (``() -> dict``, or a coroutine function: a
    fresh token, a trace id). ``options`` are those of :func:`connect_transport`
    (``handlers``, ``client_info``, ``protocol_version``, ``timeout``,
    ``init_timeout``, ``tracer``, ``limits``). Leaving the block sends DELETE for the
    session.

    Networking: ``proxy`` (``http://[user:pass@]host:port``; HTTPS goes through a
    ``CONNECT`` tunnel), else the environment's ``HTTPS_PROXY``/``HTTP_PROXY``/
    ``NO_PROXY`` (lowercase too) unless ``trust_env=False``; ``tls``: a
    :class:`~mcpactor.transports.http_proxy.TlsOptions` (``ca_file``, ``cert_file``,
    ``key_file``, ``verify``) or an ``ssl.SSLContext``; ``open_stream(host, port)``:
    a byte stream of your own instead of TCP (a Unix socket, a test double).
    ``pool`` shares keep-alive connections (and lets tests count them; it then carries
    these options itself). ``auth`` (an :class:`~mcpactor.auth.OAuthClient`)
    authorizes every request with OAuth 2.1 and answers 401/403 challenges (see
    :mod:`mcpactor.auth`).
    """
    from mcpactor.transports.http_client import split_url
    from mcpactor.transports.streamable_client import StreamableHttpClientTransport

    split_url(url)  # a malformed URL is the caller's ValueError now, not a failed session
    pool = _pool(pool, auth, headers_factory=headers_factory, proxy=proxy,
                 trust_env=trust_env, tls=tls, open_stream=open_stream)

    async def start(nursery: trio.Nursery) -> Transport:
        return StreamableHttpClientTransport(
            url, nursery, headers=headers, legacy_fallback=legacy_fallback,
            open_get_stream=open_get_stream, pool=pool,
        )

    async with _connect_with_nursery(start, options) as client:
        yield client


@asynccontextmanager
async def connect_sse(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    headers_factory: HeadersFactory | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    tls: TlsOptions | ssl.SSLContext | None = None,
    open_stream: StreamOpener | None = None,
    pool: HttpPool | None = None,
    auth: OAuthClient | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """Connect to a legacy HTTP+SSE server (protocol 2024-11-05) at its SSE URL.

    ``headers``, ``headers_factory``, ``proxy``, ``trust_env``, ``tls``,
    ``open_stream``, ``pool`` and ``auth`` (OAuth 2.1 for the stream and every POST) as
    for :func:`connect_http`; ``options`` are those of :func:`connect_transport`.
    """
    from mcpactor.protocol.versions import V2024_11_05
    from mcpactor.transports.http_client import split_url
    from mcpactor.transports.legacy_sse_client import LegacySseClientTransport

    options.setdefault("protocol_version", V2024_11_05)
    # The HTTP+SSE transport exists only in the handshake era.
    options.setdefault("mode", "legacy")
    split_url(url)
    pool = _pool(pool, auth, headers_factory=headers_factory, proxy=proxy,
                 trust_env=trust_env, tls=tls, open_stream=open_stream)

    async def start(nursery: trio.Nursery) -> Transport:
        transport = LegacySseClientTransport(url, nursery, headers=headers, pool=pool)
        try:
            await transport.connect()
        except BaseException:
            await transport.aclose()
            raise
        return transport

    async with _connect_with_nursery(start, options) as client:
        yield client


def _pool(pool: HttpPool | None, auth: OAuthClient | None, *, trust_env: bool,
          **networking: Any) -> HttpPool:
    """The pool the transport sends through, built from the networking options."""
    given = sorted(k for k, v in networking.items() if v is not None)
    if not trust_env:
        given.append("trust_env")
    if pool is not None:
        if given:
            raise TypeError(f"pass {', '.join(given)} to the HttpPool given as pool=, "
                            "or leave pool= out")
        if auth is not None and not _is_authorized(pool):
            raise TypeError("pass either auth= or a plain pool=, not both")
        return pool
    options = {k: v for k, v in networking.items() if v is not None}
    if auth is None:
        from mcpactor.transports.http_client import HttpPool

        return HttpPool(trust_env=trust_env, **options)
    # [auth] OAuth rides on the pool: every request the transport makes gets the token.
    from mcpactor.auth.http_auth import AuthorizedPool

    return AuthorizedPool(auth, trust_env=trust_env, **options)


def _is_authorized(pool: HttpPool) -> bool:
    from mcpactor.auth.http_auth import AuthorizedPool

    return isinstance(pool, AuthorizedPool)


@asynccontextmanager
async def _connect_with_nursery(
    start: Callable[[trio.Nursery], Awaitable[Transport]], options: dict[str, Any]
) -> AsyncIterator[Client]:
    # The HTTP transports run tasks of their own (the GET stream, one per POST): a
    # nursery that outlives the session, closed after it.
    with plain_errors():
        async with trio.open_nursery() as nursery:
            transport = await start(nursery)
            try:
                async with connect_transport(transport, **options) as client:
                    yield client
            finally:
                await transport.aclose()
                nursery.cancel_scope.cancel()


@asynccontextmanager
async def connect_websocket(
    url: str, *, headers: dict[str, str] | None = None, **options: Any
) -> AsyncIterator[Client]:
    """Connect to an MCP server over WebSocket (subprotocol ``mcp``)."""
    from mcpactor.transports.websocket import open_websocket_transport

    with plain_errors():
        async with open_websocket_transport(url, headers=headers) as transport:
            async with connect_transport(transport, **options) as client:
                yield client
