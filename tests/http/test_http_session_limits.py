"""The session table's limits (robustness campaign, item 8).

One keep-alive connection sending initializes used to fill the 10,000-session table in
about 15 s, and then every new client got 503 "too many sessions" until the idle
timeout (30 minutes). Now one address holds at most ``max_sessions_per_peer``, and a
new session past a cap closes the least recently used *idle* session (of that address,
else of the address holding the most) rather than being refused: the flooder churns
its own sessions. A session serving a request or a stream is never closed; only when
every candidate is busy is the new one refused (503). All on 127.0.0.x.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import trio
from http_support import (
    init_body,
    make_server,
    raw_post,
    read_raw_response,
    request_body,
    running_app,
    session_id_of,
    wait_until,
)

TIMEOUT = 30
LIMITS_SERVER = f"{Path(__file__).parent / 'limits_server.py'}:server"


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _exchange(port: int, data: bytes, source: str = "127.0.0.1") -> bytes:
    """One request on a fresh connection from ``source``: the response's head."""
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(data)
        head, _, _ = read_raw_response(s)
        return head


def _open(port: int, source: str = "127.0.0.1") -> bytes:
    """A new, initialized session: its id."""
    head = _exchange(port, raw_post(init_body()), source)
    assert head.startswith(b"HTTP/1.1 200 "), head
    sid = session_id_of(head)
    note = _exchange(port, raw_post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                                    sid), source)
    assert note.startswith(b"HTTP/1.1 202 "), note
    return sid


def _alive(port: int, sid: bytes) -> bool:
    head = _exchange(port, raw_post(request_body(9, "ping"), sid))
    assert head.startswith((b"HTTP/1.1 200 ", b"HTTP/1.1 404 ")), head
    return head.startswith(b"HTTP/1.1 200 ")


async def test_one_address_past_its_share_churns_its_own_least_recent_sessions() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(), max_sessions_per_peer=3) as (app, url):
            port = _port(url)

            def scenario() -> None:
                first = [_open(port) for _ in range(3)]
                assert _alive(port, first[0])  # now first[1] is the least recently used
                other = _open(port, "127.0.0.2")  # another address: its own share
                newer = [_open(port) for _ in range(2)]
                assert [_alive(port, s) for s in first] == [True, False, False]
                assert all(_alive(port, s) for s in newer) and _alive(port, other)

            await trio.to_thread.run_sync(scenario)
            assert sorted(len(g) for g in app.sessions.peers.values()) == [1, 3]


async def test_a_busy_session_is_never_closed_and_then_the_new_one_is_refused() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(), max_sessions_per_peer=2) as (app, url):
            port = _port(url)
            sids = [await trio.to_thread.run_sync(_open, port) for _ in range(2)]
            hanging: list[trio.SocketStream] = []
            for n, sid in enumerate(sids):  # both busy: a call that runs until cancelled
                stream = await trio.open_tcp_stream("127.0.0.1", port)
                await stream.send_all(raw_post(request_body(
                    100 + n, "tools/call", {"name": "hang", "arguments": {}}), sid))
                hanging.append(stream)
            await wait_until(lambda: all(hs.request_streams for hs in app.sessions.values()))
            head = await trio.to_thread.run_sync(_exchange, port, raw_post(init_body()))
            assert head.startswith(b"HTTP/1.1 503 "), head
            assert b"retry-after: 5" in head.lower()
            assert sorted(app.sessions) == sorted(s.decode() for s in sids)
            # One call cancelled (its client leaves; the request is cancelled by the
            # session's client): that session is idle again and makes room.
            for stream in hanging:
                await stream.aclose()
            for n, sid in enumerate(sids):
                cancel = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": 100 + n}})
                await trio.to_thread.run_sync(_exchange, port, raw_post(cancel, sid))
            await wait_until(lambda: not any(hs.request_streams
                                             for hs in app.sessions.values()))
            await trio.to_thread.run_sync(_open, port)


async def test_a_full_table_takes_from_the_address_holding_the_most() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(), max_sessions=4,
                               max_sessions_per_peer=0) as (app, url):
            port = _port(url)

            def scenario() -> None:
                many = [_open(port, "127.0.0.2") for _ in range(3)]
                few = _open(port, "127.0.0.3")
                assert _alive(port, many[0])
                _open(port, "127.0.0.4")  # full: the busiest address's least recent goes
                assert [_alive(port, s) for s in many] == [True, False, True]
                assert _alive(port, few)

            await trio.to_thread.run_sync(scenario)
            assert len(app.sessions) == 4


def test_the_flood_of_the_campaign_no_longer_locks_anyone_out(
    http_server: Callable[..., tuple[Any, str]],
) -> None:
    """A real ``mcpactor run`` with the session flags: one keep-alive connection sends
    initializes far past both caps; afterwards a fresh client from the same address
    and one from another still open sessions, and the flooder holds only its share."""
    proc, url = http_server(LIMITS_SERVER, "--max-sessions", "60",
                            "--max-sessions-per-peer", "20", "--session-timeout", "600")
    port = _port(url)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as flood:
        rest = b""
        for _ in range(150):
            flood.sendall(raw_post(init_body()))
            head, _, rest = read_raw_response(flood, rest)
            assert head.startswith(b"HTTP/1.1 200 "), head
    assert _alive(port, _open(port))
    assert _alive(port, _open(port, "127.0.0.2"))
    assert proc.poll() is None


def test_the_session_flags_refuse_bad_values_in_one_line() -> None:
    for flags, message in [(["--max-sessions", "0"], "--max-sessions must be at least 1"),
                           (["--max-sessions-per-peer", "-1"],
                            "--max-sessions-per-peer must be 0 (no cap) or more")]:
        done = subprocess.run(
            [sys.executable, "-m", "mcpactor", "run", LIMITS_SERVER, "--transport", "http",
             "--port", "0", *flags], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.strip() == f"mcpactor: {message}", \
            done.stderr
    helptext = subprocess.run([sys.executable, "-m", "mcpactor", "run", "--help"],
                              capture_output=True, text=True, timeout=60).stdout
    for flag in ("--session-timeout", "--max-sessions N", "--max-sessions-per-peer N"):
        assert flag in helptext
