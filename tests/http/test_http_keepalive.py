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
from http_support import (
    init_body,
    make_server,
    raw_post,
    read_raw_response,
    request_body,
    running_app,
    session_id_of,
)

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
        s.sendall(raw_post(init_body(), None))
        head, _, rest = read_raw_response(s, b"")
        sid = session_id_of(head)
        s.sendall(raw_post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', sid))
        _, _, rest = read_raw_response(s, rest)
        for i, call in enumerate(calls):
            for chunked in (False, True):
                rid = 10 * (i + 1) + chunked
                for msg in (call, request_body(rid, "ping")):
                    s.sendall(raw_post(msg, sid, chunked=chunked))
                    head, body, rest = read_raw_response(s, rest)
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
        small = raw_post(b'{"a":1}', None).replace(b"application/json\r\nAccept", b"text/plain\r\nAccept")
        s.sendall(small)
        head_small, _, rest = read_raw_response(s, b"")
        big_body = b"x" * 200_000  # unread by the app (415) and past max_drain_bytes
        s.sendall(raw_post(big_body, None).replace(b"application/json\r\nAccept",
                                                 b"text/plain\r\nAccept"))
        head_big, _, rest = read_raw_response(s, rest)
        return head_small, head_big


async def test_a_response_after_which_the_server_closes_says_so() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app() as (_, url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            small, big = await trio.to_thread.run_sync(_refused_then_reused, port)
    assert small.startswith(b"HTTP/1.1 415 ") and b"connection: close" not in small.lower()
    assert big.startswith(b"HTTP/1.1 415 ") and b"connection: close" in big.lower()
