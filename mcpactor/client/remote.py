"""Connecting to remote servers: Streamable HTTP, legacy HTTP+SSE, WebSocket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.client.client import Client, connect_transport
from mcpactor.session.groups import plain_errors

if TYPE_CHECKING:
    from mcpactor.auth.client_flow import OAuthClient
    from mcpactor.transports.base import Transport
    from mcpactor.transports.http_client import HttpPool

__all__ = ["connect_http", "connect_sse", "connect_websocket"]


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    legacy_fallback: bool = True,
    open_get_stream: bool = True,
    pool: HttpPool | None = None,
    auth: OAuthClient | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP server (falling back to legacy HTTP+SSE when the
    server refuses the first POST with a 4xx) and initialize.

    ``headers`` go on every HTTP request (e.g. ``Authorization``); ``options`` are those
    of :func:`connect_transport` (``handlers``, ``client_info``, ``protocol_version``,
    ``timeout``, ``init_timeout``, ``tracer``, ``limits``). Leaving the block sends
    DELETE for the session. ``pool`` shares keep-alive connections (and lets tests count
    them). ``auth`` (an :class:`~mcpactor.auth.OAuthClient`) authorizes every request
    with OAuth 2.1 and answers 401/403 challenges (see :mod:`mcpactor.auth`).
    """
    from mcpactor.transports.http_client import split_url
    from mcpactor.transports.streamable_client import StreamableHttpClientTransport

    pool = _authorized(pool, auth)
    split_url(url)  # a malformed URL is the caller's ValueError now, not a failed session

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
    pool: HttpPool | None = None,
    auth: OAuthClient | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """Connect to a legacy HTTP+SSE server (protocol 2024-11-05) at its SSE URL.

    ``headers``, ``pool`` and ``auth`` (OAuth 2.1 for the stream and every POST) as for
    :func:`connect_http`; ``options`` are those of :func:`connect_transport`.
    """
    from mcpactor.protocol.versions import V2024_11_05
    from mcpactor.transports.http_client import split_url
    from mcpactor.transports.legacy_sse_client import LegacySseClientTransport

    options.setdefault("protocol_version", V2024_11_05)
    split_url(url)
    pool = _authorized(pool, auth)

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


def _authorized(pool: HttpPool | None, auth: OAuthClient | None) -> HttpPool | None:
    # [auth] OAuth rides on the pool: every request the transport makes gets the token.
    if auth is None:
        return pool
    from mcpactor.auth.http_auth import AuthorizedPool

    if pool is not None and not isinstance(pool, AuthorizedPool):
        raise TypeError("pass either auth= or a plain pool=, not both")
    return pool or AuthorizedPool(auth)


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
