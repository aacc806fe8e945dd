"""Connection exhaustion of the built-in HTTP server (issue 16, item 1).

A client holding connections it never uses (idle sockets, request bodies that never
end) must not lock everyone else out: a fresh client is served within 1 s while 2,100
such connections are held (the table holds 2,000), because idle and stalled
connections are evicted, oldest first, before a new one is refused; the per-peer cap
keeps one address to its share. Busy connections (an SSE answer being streamed, a
handler running) are never evicted. All on 127.0.0.1; the load tests run a real
``mcpactor run`` process.
"""

from __future__ import annotations

import errno
import resource
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
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

HERE = Path(__file__).parent
TARGET = f"{HERE / 'limits_server.py'}:server"
HELD = 2100
CHUNKED_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"\r\n")
LENGTH_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Accept: application/json, text/event-stream\r\n"
               b"Content-Length: 100000\r\n\r\n{\"jsonrpc\":")


@pytest.fixture
def many_fds() -> Iterator[None]:
    """Room for both ends of every held connection (the server process inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * HELD + 1024
    if soft >= need:
        yield
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {need}: cannot hold {HELD} connections")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _hold(port: int, count: int, first: bytes) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if first:
            s.sendall(first)
        socks.append(s)
    return socks


def _closed(s: socket.socket) -> bool:
    """Whether the server has closed this held connection (without waiting)."""
    s.setblocking(False)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
            # A 503 or an answer to what was sent: closed if EOF follows.
    except BlockingIOError:
        return False
    except OSError as exc:
        return exc.errno in (errno.ECONNRESET, errno.EPIPE)
    finally:
        s.setblocking(True)


def _fresh_initialize(port: int) -> tuple[float, bytes]:
    """A new client's initialize: (seconds until the whole answer, the answer head)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw_post(init_body()))
        head, body, _ = read_raw_response(s)
    waited = time.monotonic() - t0
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert orjson.loads(body)["result"]["protocolVersion"], body
    return waited, head


def _settle(socks: list[socket.socket]) -> float:
    """Wait until the server has taken in every held connection (no more of them are
    being closed to make room); the seconds it took."""
    t0 = time.monotonic()
    before, steady = -1, 0
    while steady < 3 and time.monotonic() - t0 < 10:
        time.sleep(0.1)
        now = sum(_closed(s) for s in socks)
        steady = steady + 1 if now == before else 0
        before = now
    return time.monotonic() - t0


def _under_load(port: int, first: bytes) -> tuple[float, float, bytes, list[bool]]:
    """Hold the connections, then time a fresh client: right after the flood (the
    server still taking it in) and once it is held; what became of the held ones."""
    socks = _hold(port, HELD, first)
    try:
        during, _ = _fresh_initialize(port)
        _settle(socks)
        held, head = _fresh_initialize(port)
        time.sleep(0.2)  # room made for it reaches the sockets
        return during, held, head, [_closed(s) for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.mark.parametrize(("held", "per_peer"), [
    ("idle", "default"), ("chunked-body", "default"), ("length-body", "default"),
    ("idle", "off"), ("chunked-body", "off"),  # the whole table fills: the same policy
])
def test_a_fresh_client_is_served_while_2100_connections_are_held(
    http_server: Callable[..., tuple[Any, str]], many_fds: None, held: str, per_peer: str,
) -> None:
    first = {"idle": b"", "chunked-body": CHUNKED_HEAD, "length-body": LENGTH_HEAD}[held]
    flags = ["--max-connections-per-peer", "0"] if per_peer == "off" else []
    _, url = http_server(TARGET, *flags)
    during, waited, head, closed = _under_load(_port(url), first)
    print(f"\n{held}, per-peer cap {per_peer}: a fresh client served in {waited * 1000:.0f} ms"
          f" ({during * 1000:.0f} ms right after the flood)")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert waited < 1.0
    # Room was made by closing the oldest held connections, not by refusing the new.
    assert closed[0] and not closed[-1]
    cap = 500 if per_peer == "default" else 2000
    assert sum(closed) >= HELD + 1 - cap


def _open_session(port: int) -> tuple[socket.socket, bytes, bytes]:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(raw_post(init_body()))
    head, _, rest = read_raw_response(s)
    sid = session_id_of(head)
    s.sendall(raw_post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', sid))
    _, _, rest = read_raw_response(s, rest)
    return s, sid, rest


def test_busy_streams_are_never_evicted(
    http_server: Callable[..., tuple[Any, str]], many_fds: None,
) -> None:
    """An SSE answer streaming (progress, then the result) through a flood of idle
    connections, with a per-peer cap small enough that the flood must evict."""
    _, url = http_server(TARGET, "--max-connections-per-peer", "50")
    port = _port(url)
    s, sid, rest = _open_session(port)
    with s:
        call = request_body(2, "tools/call", {"name": "stream", "arguments": {
            "ticks": 30, "every": 0.05}, "_meta": {"progressToken": "t"}})
        s.sendall(raw_post(call, sid))
        buf = rest
        while b"notifications/progress" not in buf:
            buf += s.recv(65536)
        socks = _hold(port, 300, b"")  # idle, from the same address, 6 times the cap
        try:
            waited, _ = _fresh_initialize(port)
            assert waited < 1.0
            head, body, _ = read_raw_response(s, buf)
        finally:
            for held in socks:
                held.close()
    assert head.startswith(b"HTTP/1.1 200 ") and b"text/event-stream" in head
    assert b"streamed 30" in body


# -- in-process: caps with busy connections, and the timeouts ---------------------------


async def _busy_post(port: int, sid: bytes, rid: int) -> trio.SocketStream:
    """A connection whose request runs for ever (busy, never evictable)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(raw_post(request_body(rid, "tools/call", {"name": "hang",
                                                                    "arguments": {}}), sid))
    return stream


async def _session(port: int) -> bytes:
    def run() -> bytes:
        s, sid, _ = _open_session(port)
        s.close()
        return sid
    return await trio.to_thread.run_sync(run)


async def _answer_of_new_connection(port: int) -> bytes:
    """What a new connection gets: the refusal the server sends at once, else the
    answer to a request (sent only if nothing came first, so it is not cut by a reset)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        got = b""
        with trio.move_on_after(0.5):
            got = await stream.receive_some(65536)
        if got:
            with trio.move_on_after(1):
                while chunk := await stream.receive_some(65536):
                    got += chunk
            return got
        await stream.send_all(raw_post(request_body(1, "ping")))
        with trio.fail_after(5):
            while b"\r\n\r\n" not in got:
                got += await stream.receive_some(65536)
        return got


@pytest.mark.parametrize("cap", ["per_peer", "total"])
async def test_busy_connections_fill_a_cap_then_new_ones_are_refused(cap: str) -> None:
    options = ({"max_connections_per_peer": 2} if cap == "per_peer"
               else {"max_connections": 2, "max_connections_per_peer": 0})
    with trio.fail_after(15):
        async with running_app(make_server(), **options) as (_, url):
            port = _port(url)
            sid = await _session(port)
            await trio.sleep(0.2)  # that connection's end is seen
            busy = [await _busy_post(port, sid, rid) for rid in (7, 8)]
            await trio.sleep(0.2)
            refused = await _answer_of_new_connection(port)
            assert refused.startswith(b"HTTP/1.1 503 "), refused
            assert b"too many connections" in refused and b"retry-after: " in refused.lower()
            # One busy connection ends (its client leaves): room again.
            await busy.pop().aclose()
            await trio.sleep(0.2)
            answer = await _answer_of_new_connection(port)
            assert answer.startswith(b"HTTP/1.1 "), answer
            assert not answer.startswith(b"HTTP/1.1 503 ")
            for b in busy:
                await b.aclose()


def _closed_after(port: int, first: bytes, limit: float) -> float:
    """Send ``first`` and wait for the server to close: seconds it took."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
        s.sendall(first)
        t0 = time.monotonic()
        try:
            while s.recv(65536):
                pass
        except TimeoutError:
            return float("inf")
        except OSError:
            pass
        return time.monotonic() - t0


async def test_each_wait_for_the_client_has_its_own_timeout() -> None:
    options = {"keep_alive_timeout": 0.3, "head_timeout": 0.6, "body_timeout": 0.9}
    with trio.fail_after(15):
        async with running_app(make_server(), **options) as (_, url):
            port = _port(url)

            async def closed_after(first: bytes) -> float:
                return await trio.to_thread.run_sync(_closed_after, port, first, 5.0)

            idle = await closed_after(b"")
            head = await closed_after(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            chunked = await closed_after(CHUNKED_HEAD)
            length = await closed_after(LENGTH_HEAD)
    # The reaper looks every quarter of the shortest timeout.
    assert 0.25 <= idle < 0.3 + 0.4, idle
    assert 0.55 <= head < 0.6 + 0.4, head
    assert 0.85 <= chunked < 0.9 + 0.4, chunked
    assert 0.85 <= length < 0.9 + 0.4, length


async def test_a_busy_connection_outlives_every_timeout() -> None:
    options = {"keep_alive_timeout": 0.1, "head_timeout": 0.1, "body_timeout": 0.1}
    server = make_server()

    @server.tool()
    async def slow() -> str:
        """Take longer than every timeout."""
        await trio.sleep(0.6)
        return "slow but answered"

    with trio.fail_after(15):
        async with running_app(server, json_response=True, **options) as (_, url):
            port = _port(url)

            def call() -> bytes:
                s, sid, rest = _open_session(port)
                with s:
                    s.sendall(raw_post(request_body(2, "tools/call", {"name": "slow",
                                                                      "arguments": {}}), sid))
                    _, body, _ = read_raw_response(s, rest)
                    return body

            body = await trio.to_thread.run_sync(call)
            assert b"slow but answered" in body
