"""The legacy HTTP+SSE transport (protocol 2024-11-05), served by the same app.

``GET /sse`` opens a session: its first event is ``endpoint`` whose data is the URL to
POST messages to (``/messages/?session_id=<id>``); every server message then arrives
on that stream as a ``message`` event. ``POST /messages/?session_id=<id>`` carries one
client message and is answered 202. The session lives as long as the GET stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from mcpactor.protocol import jsonrpc
from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Scope, Send
from mcpactor.transports.http_rules import (
    Headers,
    HttpError,
    check_accept_get,
    check_content_type,
)
from mcpactor.transports.peers import peer_of_scope
from mcpactor.transports.sse import encode_event

if TYPE_CHECKING:
    from mcpactor.transports.http_server import McpHttpApp

__all__ = ["handle_message", "handle_sse"]


async def handle_sse(app: McpHttpApp, headers: Headers, receive: Receive, send: Send,
                     scope: Scope | None = None) -> None:
    """GET /sse: start a session and stream it until the client leaves."""
    err = check_accept_get(headers.get("accept") or "text/event-stream")
    if err is not None:
        await asgi.send_error(send, err)
        return
    peer = peer_of_scope(scope) if scope is not None else ""
    if not await app.make_room(peer, send):
        return
    hs = await app.start_session("single")
    assert hs.session is not None
    hs.peer = peer
    app.sessions[hs.id] = hs
    endpoint = f"{app.options.messages_path}?session_id={hs.id}"
    stream = hs.standalone
    try:
        # The endpoint event goes out first, before anything the session may send.
        await asgi.start_sse(send)
        await asgi.sse_chunk(send, encode_event(endpoint, event="endpoint"))
        await app.pump(hs, stream, 0, receive, send, [], False, legacy=True)
    finally:
        # The legacy transport has no other way to end a session than dropping the GET.
        app._forget(hs)
        hs.session.close("SSE stream closed")


async def handle_message(
    app: McpHttpApp, scope: Scope, headers: Headers, receive: Receive, send: Send
) -> None:
    """POST /messages/?session_id=...: deliver one message to its session."""
    if scope.get("method") != "POST":
        await asgi.send_error(send, HttpError(405, "Method Not Allowed"), [(b"allow", b"POST")])
        return
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    sid = (query.get("session_id") or query.get("sessionId") or [None])[0]
    if not sid:
        await asgi.send_error(send, HttpError(400, "Bad Request: session_id is required"))
        return
    hs = app.sessions.get(sid)
    if hs is None or hs.ended or hs.mode != "single":
        await asgi.send_error(send, HttpError(404, "Not Found: unknown session"))
        return
    auth = app.options.auth  # [auth] the session answers only its principal
    if auth is not None and hs.session is not None and not auth.admits(hs.session):
        await asgi.send_error(send, HttpError(403, "Forbidden: the session belongs to another principal"))
        return
    err = check_content_type(headers.get("content-type"))
    if err is not None:
        await asgi.send_error(send, err)
        return
    read = await asgi.read_jsonrpc(
        receive, send, app.options.max_body_size, headers.get("content-length")
    )
    if read is None:
        return
    body, parsed = read
    items = parsed.items if isinstance(parsed, jsonrpc.Batch) else [parsed]
    if auth is not None and await auth.check_items(app.endpoint.tool_scopes, items, send):
        return  # [auth] per-tool scopes
    hs.touch()
    await hs.transport.deliver(body)
    await asgi.send_response(send, 202, b"Accepted", content_type=b"text/plain")
