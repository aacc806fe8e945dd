"""Ceiling: a bare h11-over-trio HTTP server answering MCP JSON-RPC on POST /mcp.

``python bare_h11_trio.py PORT``. JSON responses only, keep-alive, one trio task per
connection, a session id handed out on initialize and otherwise ignored. It is the
floor cost of Streamable HTTP in Python on trio: HTTP parsing plus JSON, nothing else.
"""

from __future__ import annotations

import os
import sys
import uuid

import h11
import orjson
import trio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bare import answer

_SERVER = [(b"server", b"bare-h11-trio")]


async def _send(stream: trio.SocketStream, conn: h11.Connection, *events: h11.Event) -> None:
    await stream.send_all(b"".join(conn.send(e) or b"" for e in events))


async def _reply(
    stream: trio.SocketStream,
    conn: h11.Connection,
    status: int,
    body: bytes = b"",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [*_SERVER, (b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", b"application/json"))
    if extra:
        headers += extra
    await _send(
        stream,
        conn,
        h11.Response(status_code=status, headers=headers),
        h11.Data(data=body),
        h11.EndOfMessage(),
    )


async def _handle(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    while True:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(1 << 16)
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                return
        assert request is not None
        if request.target.split(b"?")[0] != b"/mcp":
            await _reply(stream, conn, 404)
        elif request.method != b"POST":
            # No GET stream, no session to delete: what a JSON-only server answers, and
            # what lets real clients (the client benchmarks) carry on.
            await _reply(stream, conn, 405, extra=[(b"allow", b"POST")])
        else:
            try:
                msg = orjson.loads(body)
            except orjson.JSONDecodeError:
                await _reply(stream, conn, 400)
            else:
                out = answer(msg)
                if out is None:
                    await _reply(stream, conn, 202)
                elif msg.get("method") == "initialize":
                    sid = [(b"mcp-session-id", uuid.uuid4().hex.encode())]
                    await _reply(stream, conn, 200, out, sid)
                else:
                    await _reply(stream, conn, 200, out)
        if conn.our_state is h11.MUST_CLOSE:
            return
        conn.start_next_cycle()


async def _serve_one(stream: trio.SocketStream) -> None:
    # A client that goes away mid-request is its own business, not the server's.
    try:
        async with stream:
            await _handle(stream)
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
        pass


async def main(port: int) -> None:
    """Serve on 127.0.0.1:port until killed."""
    await trio.serve_tcp(_serve_one, port, host="127.0.0.1")


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
