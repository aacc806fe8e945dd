"""Handlers run in the POST's own task (``Session.feed(..., on_block)``): quick calls are
answered without a handler task; calls that wait keep every guarantee of a handler task
(cancellation by the peer and by DELETE, running on after the client left, the
connection free for the next request once the answer's stream is closed)."""

from __future__ import annotations

import socket

import orjson
import pytest
import trio
from http_support import (
    RawClient,
    init_body,
    make_server,
    messages,
    read_events,
    request_body,
    running_app,
    wait_until,
)

from mcpactor import Context, Server
from mcpactor.transports.sse import SseParser

TIMEOUT = 15


class Gate:
    """What the gated tools saw, and the event that lets them finish."""

    def __init__(self) -> None:
        self.open = trio.Event()
        self.started = trio.Event()
        self.cancelled = 0
        self.finished = 0


def _server(gate: Gate) -> Server:
    server = make_server()

    @server.tool()
    async def where() -> str:
        """The name of the task the handler runs in."""
        return trio.lowlevel.current_task().name

    @server.tool()
    async def gated(ctx: Context) -> str:
        """Wait for the gate (optionally closing the SSE stream first)."""
        gate.started.set()
        try:
            await gate.open.wait()
        except trio.Cancelled:
            gate.cancelled += 1
            raise
        gate.finished += 1
        return "through the gate"

    @server.tool()
    async def polled(ctx: Context) -> str:
        """Close the SSE stream (SSE polling), then wait for the gate."""
        await ctx.close_sse_stream()
        gate.started.set()
        await gate.open.wait()
        return "polled answer"

    return server


def _call(rid: int, name: str) -> bytes:
    return request_body(rid, "tools/call", {"name": name, "arguments": {}})


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
async def test_a_quick_call_runs_in_the_posts_task(http_server: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(Gate()), http_server=http_server) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            status, headers, body = await raw.simple("POST", _call(2, "where"))
            assert status == 200 and headers["content-type"] == "application/json"
            task_name = orjson.loads(body)["result"]["content"][0]["text"]
            assert "run_request" not in task_name
            await raw.aclose()


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
async def test_peer_cancellation_reaches_a_waiting_inline_handler(http_server: str) -> None:
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(gate), http_server=http_server) as (app, url):
            raw = RawClient(url)
            await raw.initialize()
            resp = await raw.post(_call(7, "gated"))
            await gate.started.wait()
            cancel = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 7, "reason": "test"}})
            status, _, _ = await raw.simple("POST", cancel)
            assert status == 202
            await wait_until(lambda: gate.cancelled == 1)
            # The answer's stream ends without a response (a cancelled request has none).
            assert not [m for m in messages(await read_events(resp)) if m.get("id") == 7]
            await resp.aclose()
            hs = next(iter(app.sessions.values()))
            assert hs.session is not None and not hs.session.dispatcher.scopes
            assert gate.finished == 0
            await raw.aclose()


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
async def test_delete_cancels_a_waiting_inline_handler(http_server: str) -> None:
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(gate), http_server=http_server) as (app, url):
            raw = RawClient(url)
            await raw.initialize()
            resp = await raw.post(_call(3, "gated"))
            await gate.started.wait()
            status, _, _ = await raw.simple("DELETE")
            assert status == 200
            assert gate.cancelled == 1 and not app.sessions
            await resp.aclose()
            await raw.aclose()


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
async def test_a_client_that_leaves_does_not_cancel_the_call_and_can_resume_it(
    http_server: str,
) -> None:
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(gate), http_server=http_server) as (_, url):
            raw = RawClient(url)
            await raw.initialize()
            resp = await raw.post(_call(4, "gated"))
            # Silent past the JSON window: a primed SSE stream.
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            parser = SseParser()
            async for chunk in resp.iter_bytes():
                if list(parser.feed(chunk)):
                    break
            last_id = parser.last_event_id
            assert last_id is not None
            await resp.aclose()  # the client drops the connection mid-call
            await trio.sleep(0.05)
            gate.open.set()
            await wait_until(lambda: gate.finished == 1)
            assert gate.cancelled == 0
            resumed = await raw.pool.request(
                "GET", url, raw.headers(accept="text/event-stream", last_event_id=last_id)
            )
            answers = [m for m in messages(await read_events(resumed, until_id=4))
                       if m.get("id") == 4]
            assert answers[0]["result"]["content"][0]["text"] == "through the gate"
            await resumed.aclose()
            await raw.aclose()


def _read_response(s: socket.socket, buf: bytes) -> tuple[bytes, bytes]:
    """One response (JSON with Content-Length, or chunked SSE) and what follows it."""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        while b"\r\n0\r\n\r\n" not in rest and not rest.startswith(b"0\r\n\r\n"):
            rest += s.recv(65536)
        end = rest.index(b"0\r\n\r\n") + 5
        return head + b"\r\n\r\n" + rest[:end], rest[end:]
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    while len(rest) < length:
        rest += s.recv(65536)
    return head + b"\r\n\r\n" + rest[:length], rest[length:]


def _post(body: bytes, sid: bytes | None) -> bytes:
    extra = b"" if sid is None else b"Mcp-Session-Id: " + sid + b"\r\n"
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\n" + extra
        + b"Content-Length: %d\r\n\r\n" % len(body) + body
    )


def _poll_then_ping(port: int) -> list[bytes]:
    """On one keep-alive connection: initialize, a call that closes its stream (SSE
    polling) and goes on waiting, then a ping, which must be answered meanwhile."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(_post(init_body(), None))
        init, rest = _read_response(s, b"")
        sid = next(line.split(b": ")[1] for line in init.split(b"\r\n")
                   if line.lower().startswith(b"mcp-session-id"))
        s.sendall(_post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', sid))
        _, rest = _read_response(s, rest)
        s.sendall(_post(_call(9, "polled"), sid))
        polled, rest = _read_response(s, rest)
        s.sendall(_post(request_body(10, "ping"), sid))
        ping, rest = _read_response(s, rest)
        return [polled, ping]


@pytest.mark.parametrize("http_server", ["h11", "hypercorn"])
async def test_a_polled_stream_frees_the_connection_while_its_handler_goes_on(
    http_server: str,
) -> None:
    gate = Gate()
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(gate), http_server=http_server) as (_, url):
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            polled, ping = await trio.to_thread.run_sync(_poll_then_ping, port)
            assert polled.startswith(b"HTTP/1.1 200 ") and b"text/event-stream" in polled
            assert b"polled answer" not in polled
            assert ping.startswith(b"HTTP/1.1 200 ") and b'"id":10' in ping
            assert not gate.open.is_set()
            gate.open.set()


async def test_recorded_http_handlers_trace_like_handler_tasks() -> None:
    # Recorded, an HTTP session takes its messages through its reader (the recording
    # follows the session's tasks): the peer's and the session's cancellations are traced
    # as for any handler task.
    from mcpactor.tracing import MemoryRecorder, TraceHeader

    gate = Gate()
    recorder = MemoryRecorder(TraceHeader(role="server", transport="http"))
    with trio.fail_after(TIMEOUT):
        async with running_app(_server(gate), tracer=recorder) as (app, url):
            raw = RawClient(url)
            await raw.initialize()
            hs = next(iter(app.sessions.values()))
            assert hs.session is not None
            session = hs.session
            status, _, _ = await raw.simple("POST", _call(2, "where"))
            assert status == 200
            # One cancelled by the peer, one by the session's end (DELETE).
            first = await raw.post(_call(7, "gated"))
            await gate.started.wait()
            cancel = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 7, "reason": "test"}})
            assert (await raw.simple("POST", cancel))[0] == 202
            await wait_until(lambda: gate.cancelled == 1)
            await first.aclose()
            second = await raw.post(_call(8, "gated"))
            await wait_until(lambda: 8 in session.dispatcher.scopes)
            assert (await raw.simple("DELETE"))[0] == 200
            await second.aclose()
            await session.closed.wait()
            await raw.aclose()
    events = [e for e in recorder.events() if e.get("session") == session.id]

    def of(rid: int) -> list[str]:
        """The kinds of the events about request ``rid``, in order (events are flat)."""
        return [e["kind"] for e in events
                if e.get("id") == rid or (isinstance(e.get("msg"), dict) and e["msg"].get("id") == rid)]

    assert of(2) == ["message_in", "handler_started", "handler_finished", "message_out"]
    applied = {e["id"]: e for e in events if e["kind"] == "cancel_applied"}
    assert applied[7]["by"] == "peer" and applied[7]["why"] == "test"
    assert applied[8]["by"] == "supervisor" and applied[8]["stage"] == "running"
    assert of(8)[-1] == "cancel_applied"
    assert gate.cancelled == 2
