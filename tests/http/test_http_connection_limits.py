"""Connection exhaustion of the built-in HTTP server (issue 16, item 1; robustness
campaign, item 1).

A client holding connections it never uses (idle sockets, request bodies that never
end, heads trickled a byte at a time, keep-alive connections that sent one request)
must not lock everyone else out: a fresh client is served within 1 s while 2,100 such
connections are held (the table holds 2,000), from one address or spread over
127.0.0.2..9, *while the server is still taking the flood in* as well as after, and
while ~2,000 of them time out at once, close at once, or trickle a byte each second.
Idle and stalled connections are evicted, oldest first, before a new one is refused;
the per-peer cap keeps one address to its share; busy connections (an SSE answer being
streamed, a handler running) are never evicted. All on 127.0.0.x; the load tests run a
real ``mcpactor run`` process.

Timing on a loaded 2-core CI machine: every latency is the worst of many fresh
clients over a window (one slow client is enough to fail), against the 1 s promise; a
scenario that misses it is run once more on a fresh server before the test fails (the
code before the campaign missed it by seconds, every time).
"""

from __future__ import annotations

import errno
import resource
import socket
import threading
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
#: The promise: a fresh client is served within this, whatever is held.
PROMISE = 1.0
CHUNKED_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"\r\n")
LENGTH_HEAD = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Accept: application/json, text/event-stream\r\n"
               b"Content-Length: 100000\r\n\r\n{\"jsonrpc\":")
SLOW_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
#: What each held connection sends first.
FIRST = {"idle": b"", "chunked-body": CHUNKED_HEAD, "length-body": LENGTH_HEAD,
         "slowloris": SLOW_HEAD, "initialize": raw_post(init_body())}


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


def _hold(port: int, count: int, first: bytes, addresses: int = 1) -> list[socket.socket]:
    """``count`` connections sending ``first``: from 127.0.0.1, or spread over
    127.0.0.2.. (``addresses`` of them)."""
    socks = []
    for i in range(count):
        s = socket.socket()
        s.settimeout(5)
        if addresses > 1:
            s.bind((f"127.0.0.{2 + i % addresses}", 0))
        s.connect(("127.0.0.1", port))
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
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw_post(init_body()))
        head, body, _ = read_raw_response(s)
    waited = time.monotonic() - t0
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert orjson.loads(body)["result"]["protocolVersion"], body
    return waited, head


def _worst_wait(port: int, seconds: float) -> tuple[float, int]:
    """Fresh clients one after another for ``seconds`` (the first at once): the
    longest any waited, and how many there were."""
    worst, count = 0.0, 0
    end = time.monotonic() + seconds
    while True:
        waited, _ = _fresh_initialize(port)
        worst, count = max(worst, waited), count + 1
        if time.monotonic() >= end:
            return worst, count
        time.sleep(0.02)


def _settle(socks: list[socket.socket]) -> float:
    """Wait until the server has taken in every held connection (no more of them are
    being closed to make room); the seconds it took."""
    t0 = time.monotonic()
    before, steady = -1, 0
    while steady < 3 and time.monotonic() - t0 < 15:
        time.sleep(0.1)
        now = sum(_closed(s) for s in socks)
        steady = steady + 1 if now == before else 0
        before = now
    return time.monotonic() - t0


def _kept(attempt: Callable[[], tuple[float, Any]]) -> tuple[float, Any]:
    """Run a timed scenario (fresh server each time): again once if it missed the
    promise (a loaded CI machine); the better of the two."""
    first = attempt()
    if first[0] < PROMISE:
        return first
    print(f"\nmissed the promise once ({first[0] * 1000:.0f} ms): once more")
    second = attempt()
    return second if second[0] < first[0] else first


@pytest.mark.parametrize(("held", "addresses", "per_peer"), [
    ("idle", 1, "default"), ("chunked-body", 1, "default"), ("length-body", 1, "default"),
    ("initialize", 1, "default"), ("slowloris", 1, "default"),
    ("idle", 8, "default"), ("chunked-body", 8, "default"), ("initialize", 8, "default"),
    ("idle", 1, "off"), ("chunked-body", 1, "off"),  # the whole table fills: the same policy
])
def test_a_fresh_client_is_served_within_1s_during_and_after_a_flood(
    http_server: Callable[..., tuple[Any, str]], many_fds: None, held: str, addresses: int,
    per_peer: str,
) -> None:
    flags = ["--max-connections-per-peer", "0"] if per_peer == "off" else []
    outcome: dict[str, Any] = {}

    def attempt() -> tuple[float, Any]:
        _, url = http_server(TARGET, *flags)
        port = _port(url)
        socks = _hold(port, HELD, FIRST[held], addresses)
        try:
            # Right after the flood, while the server is still taking it in.
            during, count = _worst_wait(port, 1.5)
            _settle(socks)
            waited, head = _fresh_initialize(port)
            time.sleep(0.2)  # room made for it reaches the sockets
            outcome.update(waited=waited, head=head, count=count,
                           closed=[_closed(s) for s in socks])
            return max(during, waited), during
        finally:
            for s in socks:
                s.close()

    worst, during = _kept(attempt)
    print(f"\n{held} from {addresses} address(es), per-peer cap {per_peer}: the worst of "
          f"{outcome['count']} fresh clients during the flood waited {during * 1000:.0f} ms, "
          f"one once it is held {outcome['waited'] * 1000:.0f} ms")
    assert outcome["head"].startswith(b"HTTP/1.1 200 "), outcome["head"]
    assert worst < PROMISE
    # Room was made by closing held connections, the older ones first (the oldest of
    # a flood wait longest), not by refusing the new.
    closed = outcome["closed"]
    assert not closed[-1]
    cap = 500 if per_peer == "default" and addresses == 1 else 2000
    assert sum(closed) >= HELD + 1 - cap
    assert sum(closed[:HELD // 2]) > sum(closed[HELD // 2:])


def _probing(port: int, seconds: float, action: Callable[[], None]) -> float:
    """Fresh clients for ``seconds`` while ``action`` runs in another thread (started
    with the first): the longest any waited."""
    worker = threading.Thread(target=action, daemon=True)
    worker.start()
    try:
        worst, _ = _worst_wait(port, seconds)
    finally:
        worker.join(30)
    return worst


@pytest.mark.parametrize("kind", ["idle", "slowloris", "chunked-body"])
def test_a_fresh_client_is_served_while_2000_connections_time_out_at_once(
    http_server: Callable[..., tuple[Any, str]], many_fds: None, kind: str,
) -> None:
    """The reaper closing ~2,000 connections at once (keep-alive expiry, head timeout,
    body timeout), spread over 8 addresses: fresh clients across that moment."""
    flags = ["--keep-alive-timeout", "1", "--head-timeout", "1.5", "--body-timeout", "1.5"]
    closed_count: list[int] = []

    def attempt() -> tuple[float, Any]:
        _, url = http_server(TARGET, *flags)
        port = _port(url)
        socks = _hold(port, 2000, FIRST[kind], 8)
        try:
            # Across the expiry (from 1 s; a body's clock starts when the server has
            # read its head, so later under this load), until it is over (bounded).
            t0 = time.monotonic()
            worst, _ = _worst_wait(port, 1.0)
            while sum(_closed(s) for s in socks) < 1900 and time.monotonic() - t0 < 8:
                worst = max(worst, _worst_wait(port, 0.2)[0])
            worst = max(worst, _worst_wait(port, 0.3)[0])
            closed_count.append(sum(_closed(s) for s in socks))
            return worst, None
        finally:
            for s in socks:
                s.close()

    worst, _ = _kept(attempt)
    print(f"\n{kind}: 2,000 connections timing out, the worst fresh client waited "
          f"{worst * 1000:.0f} ms")
    assert worst < PROMISE
    assert closed_count[-1] >= 1900, (kind, closed_count)  # they did time out meanwhile


def test_a_fresh_client_is_served_right_after_2100_sockets_close_at_once(
    http_server: Callable[..., tuple[Any, str]], many_fds: None,
) -> None:
    def attempt() -> tuple[float, Any]:
        _, url = http_server(TARGET)
        port = _port(url)
        socks = _hold(port, HELD, b"", 8)
        _settle(socks)

        def close_all() -> None:
            for s in socks:
                s.close()

        return _probing(port, 1.5, close_all), None

    worst, _ = _kept(attempt)
    print(f"\n2,100 sockets closing at once: the worst fresh client waited "
          f"{worst * 1000:.0f} ms")
    assert worst < PROMISE


def test_a_fresh_client_is_served_while_2000_heads_trickle(
    http_server: Callable[..., tuple[Any, str]], many_fds: None,
) -> None:
    """Slowloris: 2,000 heads from 8 addresses, each a byte every half second (all at
    once: every tick wakes 2,000 connections together)."""
    def attempt() -> tuple[float, Any]:
        _, url = http_server(TARGET)
        port = _port(url)
        socks = _hold(port, 2000, SLOW_HEAD, 8)
        try:
            def trickle() -> None:
                for _ in range(6):
                    for s in socks:
                        try:
                            s.send(b"X")
                        except OSError:
                            pass
                    time.sleep(0.5)

            return _probing(port, 3.0, trickle), None
        finally:
            for s in socks:
                s.close()

    worst, _ = _kept(attempt)
    print(f"\n2,000 heads trickling: the worst fresh client waited {worst * 1000:.0f} ms")
    assert worst < PROMISE


def test_a_new_connection_that_speaks_tls_is_told_at_once(
    http_server: Callable[..., tuple[Any, str]],
) -> None:
    """https:// to this plain port: answered (400) at once, not after the head timeout."""
    import ssl

    _, url = http_server(TARGET)
    port = _port(url)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            pytest.raises(ssl.SSLError, match=r"WRONG_VERSION_NUMBER|record layer|wrong version"):
        context.wrap_socket(raw, server_hostname="127.0.0.1")
    assert time.monotonic() - t0 < 5


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


def _refused_at_once(port: int, body: bytes, source: str = "127.0.0.1") -> bytes:
    """A client that sends its request the moment it connects, then reads to the end:
    what it read (a reset is a failure here, raised)."""
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(raw_post(body))
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


@pytest.mark.parametrize("cap", ["per_peer", "total"])
async def test_a_client_that_sends_at_once_reads_the_refusal_not_a_reset(cap: str) -> None:
    """Item 2 of the campaign: with every connection busy, a client that sent its
    request as it connected got ``ConnectionResetError`` (the server closed with the
    request unread); now it reads the 503 and ``Retry-After: 1``."""
    options = ({"max_connections_per_peer": 2} if cap == "per_peer"
               else {"max_connections": 2, "max_connections_per_peer": 0})
    with trio.fail_after(30):
        async with running_app(make_server(), **options) as (_, url):
            port = _port(url)
            sid = await _session(port)
            await trio.sleep(0.2)
            busy = [await _busy_post(port, sid, rid) for rid in (7, 8)]
            await trio.sleep(0.2)
            for body in (init_body(), request_body(1, "ping"), b"x" * 30_000):
                for _ in range(5):
                    got = await trio.to_thread.run_sync(_refused_at_once, port, body)
                    assert got.startswith(b"HTTP/1.1 503 "), got
                    assert b"retry-after: 1\r\n" in got.lower()
                    assert got.endswith(b"too many connections from this address\n"
                                        if cap == "per_peer" else b"too many connections\n")
            for b in busy:
                await b.aclose()


def test_the_official_sdk_client_gets_the_503_at_scale(
    http_server: Callable[..., tuple[Any, str]], many_fds: None,
) -> None:
    """2,000 busy connections over 4 addresses (the whole table, each address its
    share): a new client, the official SDK's among them, gets a clean 503."""
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    _, url = http_server(TARGET)
    port = _port(url)
    sids = []
    for _ in range(33):  # 62 calls each: within a session's in-flight limit (64)
        s, sid, _ = _open_session(port)
        s.close()
        sids.append(sid)
    busy = []
    try:
        for i in range(2000):
            b = socket.socket()
            b.bind((f"127.0.0.{2 + i % 4}", 0))
            b.connect(("127.0.0.1", port))
            b.sendall(raw_post(request_body(100 + i, "tools/call", {
                "name": "hang", "arguments": {}}), sids[i % 33]))
            busy.append(b)
        # The server starts the flood's connections at its own pace; until it has read
        # one, it counts as waiting (it may be closed to make room): wait until every
        # call is running (its SSE answer has begun).
        deadline = time.monotonic() + 30
        for b in busy:
            b.settimeout(max(0.1, deadline - time.monotonic()))
            assert b.recv(65536).startswith(b"HTTP/1.1 200 "), "a busy call was not started"
        for source in ("127.0.0.6", "127.0.0.2"):  # a new address, a full one
            got = _refused_at_once(port, init_body(), source)
            assert got.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in got.lower(), got

        async def sdk() -> BaseException | None:
            try:
                with anyio.fail_after(30):
                    async with streamable_http_client(url) as (read, write, *_), \
                            ClientSession(read, write) as session:
                        await session.initialize()
            except BaseException as exc:  # what the SDK raised is the point
                while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                    exc = exc.exceptions[0]
                return exc
            return None

        error = anyio.run(sdk)
        assert error is not None, "a full table served the SDK client"
        # The server's answer, not a transport failure (httpx's ReadError before).
        assert "ReadError" not in type(error).__name__ and "Reset" not in repr(error), repr(error)
        assert "error response" in str(error) or "503" in str(error), repr(error)
    finally:
        for b in busy:
            b.close()


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
