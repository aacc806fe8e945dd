"""MCP over WebSocket (trio-websocket), subprotocol ``mcp``: one text frame per message.

Server: :func:`serve_websocket` accepts connections on ``path``, each one a session.
Client: :func:`open_websocket_transport`. The connection's end is the session's end.
Host and Origin are checked like on HTTP (browsers can open WebSockets to localhost).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
import trio_websocket
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest

from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed
from mcpactor.transports.endpoint import EndpointSource, SessionEndpoint, endpoint_of
from mcpactor.transports.http_rules import Headers, new_session_id
from mcpactor.transports.security import LOCAL_HOSTS, OriginPolicy

if TYPE_CHECKING:
    from mcpactor.tracing.tracer import Tracer

log = logging.getLogger("mcpactor.ws")

__all__ = ["SUBPROTOCOL", "WebSocketTransport", "open_websocket_transport", "serve_websocket"]

SUBPROTOCOL = "mcp"
MAX_MESSAGE = 4 * 1024 * 1024


class WebSocketTransport(Transport):
    """A Transport over one open WebSocket connection."""

    name = "ws"
    #: Seconds ``aclose`` waits for the peer's half of the closing handshake. A peer
    #: that stops reading never answers (its unread messages hold up its reader), and a
    #: session must not hang on it: after this long the connection is dropped.
    close_timeout: float = 5.0

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws

    async def receive(self) -> bytes | Oversize:
        """The next message (text or binary frame)."""
        try:
            msg = await self.ws.get_message()
        except ConnectionClosed as exc:
            reason = exc.reason
            if reason is not None and reason.code in (1000, 1001):
                raise trio.EndOfChannel from None
            raise TransportClosed(f"WebSocket closed: {reason}") from None
        return msg.encode("utf-8") if isinstance(msg, str) else bytes(msg)

    async def send(self, messages: list[Outgoing]) -> None:
        """One text frame per message."""
        try:
            for data, _ in messages:
                await self.ws.send_message(data.decode("utf-8"))
        except ConnectionClosed as exc:
            raise TransportClosed(f"WebSocket closed: {exc.reason}") from None

    async def aclose(self) -> None:
        """Close the connection normally (code 1000), or drop it if the peer does not
        answer within :attr:`close_timeout`."""
        with trio.CancelScope(shield=True, deadline=trio.current_time() + self.close_timeout):
            try:
                await self.ws.aclose()
            except (ConnectionClosed, trio.BrokenResourceError, OSError):
                pass


@asynccontextmanager
async def open_websocket_transport(
    url: str, *, headers: dict[str, str] | None = None
) -> AsyncIterator[WebSocketTransport]:
    """Connect to ``ws://`` / ``wss://`` ``url`` asking for the ``mcp`` subprotocol."""
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    async with trio_websocket.open_websocket_url(
        url, subprotocols=[SUBPROTOCOL], extra_headers=extra, max_message_size=MAX_MESSAGE
    ) as ws:
        if ws.subprotocol not in (SUBPROTOCOL, None):
            raise TransportClosed(f"the server chose subprotocol {ws.subprotocol!r}")
        yield WebSocketTransport(ws)


async def serve_websocket(
    server: SessionEndpoint | EndpointSource,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    tracer: Tracer | None = None,
    allowed_hosts: frozenset[str] = LOCAL_HOSTS,
    allowed_origins: frozenset[str] | None = None,
    quiet: bool = False,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    **_ignored: Any,
) -> None:
    """Serve ``server`` (a :class:`~mcpactor.transports.endpoint.SessionEndpoint`, or
    a ``Server``) over WebSocket until cancelled; task status: the ``ws://`` URL.
    ``tracer``: a running recording that every session's events go to. Each
    connection's session runs inside the endpoint's ``running()`` (its lifespan)."""
    endpoint = endpoint_of(server)
    policy = OriginPolicy(allowed_hosts, allowed_origins)

    async def handler(request: WebSocketRequest) -> None:
        """One connection: check it, accept it, serve one session on it."""
        h = Headers(request.headers)
        if request.path.split("?", 1)[0] != path:
            await request.reject(404, body=b"Not Found")
            return
        if not policy.host_ok(h.get("host")) or not policy.origin_ok(h.get("origin")):
            await request.reject(403, body=b"Forbidden: Host or Origin not allowed")
            return
        if SUBPROTOCOL not in request.proposed_subprotocols:
            await request.reject(400, body=b"Bad Request: subprotocol 'mcp' required")
            return
        ws = await request.accept(subprotocol=SUBPROTOCOL)
        sid = new_session_id()
        try:
            session = endpoint.open_session(WebSocketTransport(ws), tracer=tracer, session_id=sid)
            async with endpoint.running():
                await session.run()
        except Exception:
            log.exception("WebSocket session %s ended by an internal error", sid)

    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(
            lambda task_status: trio_websocket.serve_websocket(
                handler, host, port, None, max_message_size=MAX_MESSAGE, task_status=task_status
            )
        )
        real_port = ws_server.port
        shown = f"[{host}]" if ":" in host else host
        url = f"ws://{shown}:{real_port}{path}"
        if not quiet:
            print(f"mcpactor: serving {endpoint.name} on {url}", file=sys.stderr, flush=True)
        task_status.started(url)
