"""Streamable HTTP in the stateless era (2026-07-28) beside the session-based one.

The same endpoint takes both: a POST is modern when its ``MCP-Protocol-Version``
header names a stateless revision (or a version we do not speak at all, which earns
the negotiable -32022), when its body is ``server/discover`` or
``subscriptions/listen``, or when its ``_meta`` carries the per-request version. Such a
POST never touches a session id: its ``_meta`` and headers are checked here (-32602,
-32020, -32022 with HTTP 400 and the request's id), then it runs in a session that
lives as long as the POST and runs no actor tree (``Session.scoped``): the same router,
dispatcher and writer a handshake session uses, in the POST's own task (a recorded
one runs its tree, which the recording follows). Errors map to HTTP statuses as the
revision asks: -32601 is 404; -32020, -32021, -32022 and the ``_meta`` checks are 400.

With no session to count them, such requests are bounded per process by the server's
``Limits`` (:mod:`.request_gate`): past its slots and queue, -32005 as a session says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from mcpactor.protocol import jsonrpc, modern, versions
from mcpactor.protocol.errors import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    ServerBusy,
    UnsupportedProtocolVersion,
)
from mcpactor.protocol.headers import check_request_headers
from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Send
from mcpactor.transports.http_rules import Headers
from mcpactor.transports.request_gate import enter_gate

if TYPE_CHECKING:
    from mcpactor.transports.http_server import McpHttpApp
    from mcpactor.transports.http_session import HttpSession

__all__ = ["is_modern_post", "modern_post", "status_of"]

_STATUS = {
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}


def is_modern_post(header: str | None, msg: Any) -> bool:
    """Whether a single-message POST belongs to the stateless era."""
    if header is not None:
        if versions.is_modern(header):
            return True
        if not versions.is_supported(header):
            # A version we do not speak at all: answered -32022 with our list and the
            # request's id (negotiable), in either era.
            return isinstance(msg, jsonrpc.Request) and msg.method != "initialize"
    if isinstance(msg, (jsonrpc.Request, jsonrpc.Notification)):
        return modern.is_modern_request(msg.method, msg.params)
    return False


def status_of(body: bytes) -> int:
    """The HTTP status of a modern JSON answer: by its error code, 200 for a result."""
    if b'"error"' not in body:
        return 200
    try:
        code = orjson.loads(body).get("error", {}).get("code")
    except (orjson.JSONDecodeError, AttributeError):
        return 200
    return _STATUS.get(code, 200)


async def modern_post(
    app: McpHttpApp, headers: Headers, body: bytes, msg: Any, receive: Receive, send: Send,
) -> None:
    """Answer one modern POST."""
    if not isinstance(msg, jsonrpc.Request):
        # The revision defines no client notification over HTTP (cancelling is closing
        # the stream): nothing to do, and nothing to refuse.
        await asgi.send_response(send, 202)
        return
    header = headers.get("mcp-protocol-version")
    version = header.strip() if header is not None else None
    try:
        if (version is not None and not versions.is_modern(version)
                and not modern.is_modern_request(msg.method, msg.params)):
            # A version we do not speak on a request of neither era's shape.
            raise UnsupportedProtocolVersion(version, modern.supported_list())
        modern.read_request_meta(msg.params, version)
        check_request_headers(msg.method, msg.params, headers.get, app.tool_schema)
    except McpError as exc:
        await asgi.send_json(send, jsonrpc.encode_error(msg.id, exc), status=400)
        return
    # [auth] per-tool scopes: 403 insufficient_scope before the request runs.
    if app.options.auth is not None and await app.options.auth.check_items(
        app.endpoint.tool_scopes, [msg], send
    ):
        return
    hs = app.new_session(app.response_mode, resumable=False)
    session = hs.session
    assert session is not None
    if msg.method in _UNCOUNTED:
        await _run(app, hs, body, msg, receive, send)
        return
    gate = app.request_gate(session.limits)
    entered = await enter_gate(gate, receive)
    if not entered:
        session.close("server busy" if entered is False else "the client left")
        if entered is False:
            busy = ServerBusy.of_limits(gate.max_concurrent, gate.max_queued)
            answer = jsonrpc.encode_error(msg.id, busy)
            await asgi.send_json(send, answer, status=status_of(answer))
        return
    try:
        await _run(app, hs, body, msg, receive, send)
    finally:
        gate.leave()


#: Requests that take no slot of the request gate: ``server/discover`` runs no handler
#: (the connection answers it), and a ``subscriptions/listen`` stream is a subscription
#: held open for as long as the client likes, not work (its connection counts against
#: the connection limits).
_UNCOUNTED = frozenset({"server/discover", "subscriptions/listen"})


async def _run(app: McpHttpApp, hs: HttpSession, body: bytes, msg: jsonrpc.Request,
               receive: Receive, send: Send) -> None:
    """Run the request in its own session and answer the POST."""
    session = hs.session
    assert session is not None
    if app.options.auth is not None:
        app.options.auth.note_requests(session, [msg])  # [auth] per-request token
    stream = hs.open_request_stream([msg.id])

    def answered() -> None:
        # The POST is the request's whole life: a client that closed the stream
        # cancelled it, and nothing of it outlives the answer.
        session.close("stateless request answered")

    if app.options.tracer is not None:
        # Recorded: a recording follows a session's own tasks (a replay feeds its
        # reader), so the request runs in the session's actor tree, fed through the
        # reader's queue, and this task only answers.
        await app.start(hs)
        try:
            await app.post_inline(hs, stream, body, msg, receive, send,
                                  versions.LATEST_MODERN_VERSION, resumable=False,
                                  status_of=status_of)
        finally:
            answered()
        return
    # The request runs here, through the session's router, dispatcher and writer
    # without starting its tree: no supervisor, reader or writer task for one request.
    async with session.scoped():
        try:
            await app.post_inline(hs, stream, body, msg, receive, send,
                                  versions.LATEST_MODERN_VERSION, resumable=False,
                                  status_of=status_of, on_answered=answered)
        finally:
            answered()

