"""Stateless Streamable HTTP: no session ids; every POST gets its own short-lived session.

The session is primed with a synthetic initialize (at the version the request's
``MCP-Protocol-Version`` names, 2025-03-26 when absent) whose answer is swallowed, so
the POSTed requests meet an operating session; it is closed once they are answered.
The server's ``Limits`` count such POSTs per process (:mod:`.request_gate`), each POST
once (its requests share its session's own slots).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpactor.protocol import jsonrpc, versions
from mcpactor.protocol.errors import ServerBusy
from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Send
from mcpactor.transports.http_rules import Headers, invalid_request
from mcpactor.transports.request_gate import enter_gate

if TYPE_CHECKING:
    from mcpactor.transports.http_server import McpHttpApp

__all__ = ["STATELESS_INIT_ID", "stateless_post"]

#: Id of the synthetic initialize a stateless POST's session is primed with.
STATELESS_INIT_ID = "mcpactor-stateless-initialize"


async def stateless_post(
    app: McpHttpApp, headers: Headers, body: bytes, items: list[Any], is_batch: bool,
    receive: Receive, send: Send,
) -> None:
    """Answer one POST (already validated) in a session of its own."""
    ids = [m.id for m in items if isinstance(m, jsonrpc.Request)]
    if not ids:
        await asgi.send_response(send, 202)  # nothing in this POST outlives it
        return
    version = (headers.get("mcp-protocol-version") or versions.HTTP_DEFAULT_VERSION).strip()
    if is_batch and not versions.allows_batches(version):
        await asgi.send_error(send, invalid_request("Invalid Request: batches not allowed"))
        return
    hs = app.new_session(
        app.response_mode, drop_ids=frozenset({STATELESS_INIT_ID}), resumable=False
    )
    assert hs.session is not None
    # No session outlives the POST to count requests: the process does (request_gate).
    gate = app.request_gate(hs.session.limits)
    entered = await enter_gate(gate, receive)
    if not entered:
        if entered is False:
            busy = ServerBusy.of_limits(gate.max_concurrent, gate.max_queued)
            errors = [jsonrpc.encode_error(rid, busy) for rid in ids]
            await asgi.send_json(send, jsonrpc.encode_batch(errors) if is_batch else errors[0])
        return
    try:
        await app.start(hs)
        init = jsonrpc.encode_request(STATELESS_INIT_ID, "initialize", {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "stateless-http-client", "version": "0"},
        })
        await hs.transport.deliver(init)
        await hs.transport.deliver(jsonrpc.encode_notification("notifications/initialized", None))
        stream = hs.open_request_stream(ids)
        await hs.transport.deliver(body)
        await app.answer(hs, stream, receive, send, version, resumable=False)
    finally:
        hs.session.close("stateless request answered")
        gate.leave()
