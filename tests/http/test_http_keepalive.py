"""A client that reuses its connection after any answer gets its next request answered
(issue 16, item 2).

The built-in server closed the socket after a response completed by another task than
the connection's own (an SSE stream, or a JSON answer of a handler that waited) without
saying ``Connection: close``, so a client reusing the connection lost its next request.
Raw sockets, one keep-alive connection, 127.0.0.1.
"""

from __future__ import annotations

import socket

import pytest
import trio
from http_support import init_body, make_server, request_body, running_app

from mcpactor import Context, Server

TIMEOUT = 15


def _server() -> Server:
    server = make_server()

    @server.tool()
    async def nap(ctx: Context) -> str:
        """Wait a little (the handler leaves the POST's task), then answer."""
        await trio.sleep(0.02)
        return "rested"

    return server


def _post(body: bytes, sid: bytes | None, chunked: bool = False) -> bytes:
    extra = b"" if sid is None else b"Mcp-Session-Id: " + sid + b"\r\n"
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n" + extra)
    if chunked:  # the h11 path
        return head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_response(s: socket.socket, buf: bytes) -> tuple[bytes, bytes, bytes]:
    """One response: ``(head, body, what follows)``; raises EOFError if the server
    closed the connection before it was complete."""

    def more() -> bytes:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError(buf)
        return chunk

    while b"\r\n\r\n" not in buf:
        buf += more()
    head, _, rest = buf.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += more()
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            while len(rest) < size + 2:
                rest += more()
            body += rest[:size]
            rest = rest[size + 2:]
            if size == 0:
                return head, body, rest
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(rest) < length:
        rest += more()
    return head, rest[:length], rest[length:]


def _conversation(port: int) -> list[tuple[bytes, bytes]]:
    """On one connection: initialize, then each call followed by a ping."""
    calls = [
        request_body(2, "tools/call", {"name": "nap", "arguments": {}}),
        request_body(4, "tools/call", {"name": "count", "arguments": {"n": 2, "delay": 0.01},
                                       "_meta": {"progressToken": "p"}}),
        request_body(6, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
    ]
    out: list[tuple[bytes, bytes]] = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(_post(init_body(), None))
        head, _, rest = _read_response(s, b"")
        sid = next(line.split(b": ")[1] for line in head.split(b"\r\n")
                   if line.lower().startswith(b"mcp-session-id"))
        s.sendall(_post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', sid))
        _, _, rest = _read_response(s, rest)
        for i, call in enumerate(calls):
            for chunked in (False, True):
                rid = 10 * (i + 1) + chunked
                for msg in (call, request_body(rid, "ping")):
                    s.sendall(_post(msg, sid, chunked=chunked))
                    head, body, rest = _read_response(s, rest)
                    assert b"connection: close" not in head.lower(), head
                    out.append((head, body))
    return out


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
@pytest.mark.parametrize("json_response", [None, False, True])
async def test_the_connection_is_reused_after_every_kind_of_answer(
    http_server: str, json_response: bool | None
) -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(), http_server=http_server,
                               json_response=json_response) as (_, url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            got = await trio.to_thread.run_sync(_conversation, port)
    assert len(got) == 12
    kinds = set()
    for head, _ in got:
        assert head.startswith(b"HTTP/1.1 200 "), head
        kinds.add(b"text/event-stream" in head)
    if json_response is None:
        assert kinds == {True, False}  # the conversation had SSE and JSON answers
    pings = [body for _, body in got[1::2]]
    assert all(b'"result":{}' in body for body in pings), pings


def _refused_then_reused(port: int) -> tuple[bytes, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        small = _post(b'{"a":1}', None).replace(b"application/json\r\nAccept", b"text/plain\r\nAccept")
        s.sendall(small)
        head_small, _, rest = _read_response(s, b"")
        big_body = b"x" * 200_000  # unread by the app (415) and past max_drain_bytes
        s.sendall(_post(big_body, None).replace(b"application/json\r\nAccept",
                                                 b"text/plain\r\nAccept"))
        head_big, _, rest = _read_response(s, rest)
        return head_small, head_big


async def test_a_response_after_which_the_server_closes_says_so() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            small, big = await trio.to_thread.run_sync(_refused_then_reused, port)
    assert small.startswith(b"HTTP/1.1 415 ") and b"connection: close" not in small.lower()
    assert big.startswith(b"HTTP/1.1 415 ") and b"connection: close" in big.lower()
