"""Our Streamable HTTP client against a misbehaving hand-written server (h11 on a Trio
socket, 127.0.0.1): a broken answer fails that request, never the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import h11
import orjson
import pytest
import trio

from mcpactor import ClientHandlers, McpError, connect_http

TIMEOUT = 10
Reply = Callable[[trio.SocketStream, h11.Connection, str, dict[str, Any] | None], Awaitable[bool]]


async def _respond(stream: trio.SocketStream, conn: h11.Connection, status: int,
                   headers: list[tuple[str, str]], body: bytes) -> None:
    headers = [*headers, ("content-length", str(len(body)))]
    await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)))
    await stream.send_all(conn.send(h11.Data(data=body)))
    await stream.send_all(conn.send(h11.EndOfMessage()))


async def _serve(stream: trio.SocketStream, reply: Reply) -> None:
    conn = h11.Connection(h11.SERVER)
    while True:
        method, body = "", b""
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
            elif isinstance(ev, h11.Request):
                method = ev.method.decode()
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                break
            elif isinstance(ev, h11.ConnectionClosed):
                return
        msg = orjson.loads(body) if body else None
        if not await reply(stream, conn, method, msg):
            await stream.aclose()
            return
        conn.start_next_cycle()


async def _faulty(stream: trio.SocketStream, conn: h11.Connection, method: str,
                  msg: dict[str, Any] | None) -> bool:
    """initialize → JSON; notifications → 202; GET → 405; ``ping`` → JSON {};
    ``tools/call`` → an SSE stream with one id-less event, then the connection drops."""
    json_h = [("content-type", "application/json"), ("mcp-session-id", "s1")]
    if method != "POST" or msg is None:
        await _respond(stream, conn, 405, [], b"")
        return True
    if "id" not in msg:
        await _respond(stream, conn, 202, [], b"")
        return True
    rid, name = msg["id"], msg["method"]
    if name == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "faulty", "version": "0"}}
        await _respond(stream, conn, 200, json_h,
                       orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}))
        return True
    if name == "tools/call":
        await stream.send_all(conn.send(h11.Response(
            status_code=200, headers=[("content-type", "text/event-stream")]
        )))
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}}
        await stream.send_all(conn.send(h11.Data(data=b"data: " + orjson.dumps(note) + b"\n\n")))
        return False  # drop the connection mid-stream, no event id to resume from
    await _respond(stream, conn, 200, json_h, orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}))
    return True


async def test_a_dropped_unresumable_stream_fails_only_its_request() -> None:
    logs: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, partial(_serve, reply=_faulty), 0, host="127.0.0.1")
            )
            port = listeners[0].socket.getsockname()[1]
            handlers = ClientHandlers(on_log=logs.append)
            async with connect_http(f"http://127.0.0.1:{port}/mcp", handlers=handlers) as client:
                assert client.protocol_version == "2025-06-18"
                with pytest.raises(McpError) as info:
                    await client.call_tool("anything", {}, timeout=5)
                assert info.value.code == -32000
                await client.ping(timeout=5)  # the session is still fine
            assert logs and logs[0].data == "working"
            nursery.cancel_scope.cancel()
