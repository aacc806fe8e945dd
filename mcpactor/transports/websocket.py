"""MCP over WebSocket (trio-websocket), subprotocol ``mcp``: one text frame per message.

Server: :func:`serve_websocket` accepts connections on ``path``, each one a session.
Client: :func:`open_websocket_transport`. The connection's end is the session's end.
Host and Origin are checked like on HTTP (browsers can open WebSockets to localhost).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

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

__all__ = ["SUBPROTOCOL", "WebSocketConnectError", "WebSocketTransport", "open_websocket_transport",
           "serve_websocket"]

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


class WebSocketConnectError(ConnectionError):
    """The WebSocket connection could not be opened; the message says why in words
    (connection refused, the HTTP answer of a server that is not a WebSocket one, ...)."""


@asynccontextmanager
async def open_websocket_transport(
    url: str, *, headers: dict[str, str] | None = None
) -> AsyncIterator[WebSocketTransport]:
    """Connect to ``ws://`` / ``wss://`` ``url`` asking for the ``mcp`` subprotocol;
    :class:`WebSocketConnectError` if it cannot be opened."""
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    async with AsyncExitStack() as stack:
        try:
            ws = await stack.enter_async_context(trio_websocket.open_websocket_url(
                url, subprotocols=[SUBPROTOCOL], extra_headers=extra,
                max_message_size=MAX_MESSAGE))
        except trio_websocket.HandshakeError as exc:
            raise WebSocketConnectError(_why_not(url, exc)) from exc
        except OSError as exc:
            raise WebSocketConnectError(f"cannot connect to {_authority(url)}: "
                                        f"{_root_reason(exc)}") from exc
        if ws.subprotocol not in (SUBPROTOCOL, None):
            raise TransportClosed(f"the server chose subprotocol {ws.subprotocol!r}")
        yield WebSocketTransport(ws)


def _authority(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _why_not(url: str, exc: trio_websocket.HandshakeError) -> str:
    """Why the handshake failed, in one line (trio-websocket's own messages are empty
    or a raw tuple)."""
    where = _authority(url)
    if isinstance(exc, trio_websocket.ConnectionRejected):
        said = _said(exc.body)
        http = urlunsplit(("https" if url.startswith("wss:") else "http",
                           *urlsplit(url)[1:]))
        return (f"{where} answered HTTP {exc.status_code} instead of accepting a WebSocket"
                + (f" ({said})" if said else "")
                + f": not a WebSocket MCP endpoint (a Streamable HTTP one? try {http})")
    if isinstance(exc, trio_websocket.ConnectionTimeout):
        return f"{where} did not complete the WebSocket handshake in time"
    return f"cannot connect to {where}: {_root_reason(exc)}"


def _said(body: bytes | None) -> str:
    """The gist of a refusal's body: a JSON-RPC error's message, or its first line."""
    if not body:
        return ""
    try:
        message = json.loads(body)["error"]["message"]
        if isinstance(message, str):
            return message[:200]
    except (ValueError, KeyError, TypeError):
        pass
    text = body.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:200] if text else ""


def _root_reason(exc: BaseException) -> str:
    """The innermost OS reason behind ``exc`` ("connection refused"), else its text."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    fallback = ""
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and (e.errno or e.strerror):
            # trio words its own around the system's ("error connecting to (...): ...");
            # name resolution's codes are negative, with their own words.
            text = os.strerror(e.errno) if e.errno and e.errno > 0 else str(e.strerror)
            return text[0].lower() + text[1:]
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        if not fallback and str(e):
            fallback = str(e)
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
    return fallback or type(exc).__name__


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
