"""Minimal ASGI plumbing for our HTTP endpoints: reading bodies, writing responses,
streaming SSE, and noticing when the client goes away."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import trio

from mcpactor.protocol import jsonrpc
from mcpactor.protocol.errors import ParseError
from mcpactor.transports.http_rules import HttpError, invalid_request, parse_error

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = [
    "BodyTooLarge",
    "Receive",
    "Scope",
    "Send",
    "error_body",
    "lifespan",
    "read_body",
    "read_jsonrpc",
    "send_error",
    "send_json",
    "send_response",
    "watch_disconnect",
]

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


class BodyTooLarge(Exception):
    """The request body went past the limit."""


class ClientGone(Exception):
    """The client disconnected before the body was read."""


#: What a write to, or a read from, a client that has gone raises.
GONE = (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError)


def client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` only says that the client went away: one of :data:`GONE`, or a
    group of nothing else (a nursery around a stream's writer and its disconnect
    watcher wraps what they raise)."""
    if isinstance(exc, GONE):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(e) for e in exc.exceptions)
    return False


async def read_body(receive: Receive, limit: int, content_length: str | None) -> bytes:
    """The whole request body, refusing anything over ``limit`` bytes."""
    if content_length is not None:
        try:
            if int(content_length) > limit:
                raise BodyTooLarge
        except ValueError:
            pass
    chunks = bytearray()
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ClientGone
        chunks += msg.get("body", b"")
        if len(chunks) > limit:
            raise BodyTooLarge
        if not msg.get("more_body", False):
            return bytes(chunks)


async def send_response(
    send: Send,
    status: int,
    body: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes | None = None,
) -> None:
    """One complete response."""
    h = list(headers or [])
    if content_type is not None:
        h.append((b"content-type", content_type))
    h.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": h})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def error_body(code: int, message: str, rid: Any = None) -> bytes:
    """A JSON-RPC error response (used as the body of HTTP refusals)."""
    return jsonrpc.dumps(
        {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    )


async def read_jsonrpc(
    receive: Receive, send: Send, limit: int, content_length: str | None
) -> tuple[bytes, jsonrpc.Message | jsonrpc.Batch] | None:
    """Read a POST body and parse it as JSON-RPC; on a body that is too large (413), not
    JSON (400 with a -32700 body) or not JSON-RPC (400, -32600) answer the request here
    and return None."""
    try:
        body = await read_body(receive, limit, content_length)
    except BodyTooLarge:
        await send_error(send, HttpError(413, "Payload Too Large"))
        return None
    try:
        parsed = jsonrpc.parse(body)
    except ParseError as exc:
        await send_error(send, parse_error(exc.message))
        return None
    if isinstance(parsed, jsonrpc.Invalid):
        # With its id when one could be read, so the client can match the error.
        await send_error(send, invalid_request(parsed.error.message), rid=parsed.id)
        return None
    return body, parsed


async def send_error(
    send: Send, err: HttpError, headers: list[tuple[bytes, bytes]] | None = None,
    rid: jsonrpc.RequestId | None = None,
) -> None:
    """A refusal with a JSON-RPC error body (``rid``: the id it answers, if known)."""
    await send_response(
        send, err.status, error_body(err.code, err.message, rid), headers, b"application/json"
    )


async def send_json(
    send: Send, body: bytes, headers: list[tuple[bytes, bytes]] | None = None, status: int = 200
) -> None:
    """A 200 JSON response."""
    await send_response(send, status, body, headers, b"application/json")


async def start_sse(send: Send, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send the headers of an SSE response."""
    await send(
        {"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS + list(headers or [])}
    )


async def sse_chunk(send: Send, data: bytes) -> None:
    """Write already-encoded SSE bytes."""
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def end_body(send: Send, data: bytes = b"") -> None:
    """Finish a streamed response (with a last chunk of already-encoded bytes)."""
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def lifespan(receive: Receive, send: Send) -> None:
    """Acknowledge startup and shutdown (the app's state lives in ``McpHttpApp.run``)."""
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def watch_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` once the client disconnects (call after the body is read)."""
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            scope.cancel()
            return
