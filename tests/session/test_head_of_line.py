"""The reader never waits for a handler slot (issue 16, item 3).

A request that found every handler slot taken used to block the only reader, so the
responses and cancellations queued behind it were never read: with two slots, three
tool calls that each elicit from the client deadlocked. Excess requests now wait in a
bounded queue (``Limits.max_queued_requests``) that honours ``notifications/cancelled``;
past it they are refused with a "server busy" error, and the reader reads on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from hol_server import make_server

from mcpactor import ClientHandlers, connect_stdio, connect_transport, connect_websocket
from mcpactor.protocol import types as t
from mcpactor.protocol.errors import SERVER_BUSY
from mcpactor.tracing import MemoryRecorder
from mcpactor.transports.memory import memory_pair
from mcpactor.transports.stream import StreamTransport
from mcpactor.transports.websocket import serve_websocket

HERE = Path(__file__).parent
TIMEOUT = 15


async def _name(params: Any, rc: Any) -> t.ElicitResult:
    await trio.sleep(0.01)  # answered after the other calls arrived
    return t.ElicitResult(action="accept", content={"name": "Ada"})


HANDLERS = ClientHandlers(elicitation=_name)


async def _three_asks(client: Any) -> list[str]:
    out: list[str] = []

    async def one() -> None:
        res = await client.call_tool("ask", timeout=TIMEOUT)
        out.append(res.content[0].text)

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(one)
    return out


async def test_three_eliciting_calls_on_two_slots_over_memory() -> None:
    a, b = memory_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(make_server().serve, a)
        async with connect_transport(b, handlers=HANDLERS) as client:
            assert await _three_asks(client) == ["hello Ada"] * 3
        nursery.cancel_scope.cancel()


async def test_three_eliciting_calls_on_two_slots_over_stdio() -> None:
    command = [sys.executable, str(HERE / "hol_server.py")]
    async with connect_stdio(command, handlers=HANDLERS, cwd=str(HERE.parent.parent)) as client:
        assert await _three_asks(client) == ["hello Ada"] * 3


async def test_three_eliciting_calls_on_two_slots_over_websocket() -> None:
    async with trio.open_nursery() as nursery:
        url = await nursery.start(
            lambda task_status: serve_websocket(make_server(), host="127.0.0.1", port=0,
                                                quiet=True, task_status=task_status)
        )
        async with connect_websocket(url, handlers=HANDLERS) as client:
            assert await _three_asks(client) == ["hello Ada"] * 3
        nursery.cancel_scope.cancel()


# -- the queue, on the raw wire -----------------------------------------------------------


def line(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


HANDSHAKE = line(
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}
) + line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def call(rid: Any, tool: str) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                 "params": {"name": tool, "arguments": {}}})


def cancel(rid: Any) -> bytes:
    return line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": rid, "reason": "no longer needed"}})


class Wire:
    """The client's end of a raw stream to a server session."""

    def __init__(self, stream: trio.testing.MemoryStreamPair | Any) -> None:
        self.stream = stream
        self.buf = b""

    async def read(self, count: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        with trio.fail_after(5):
            while len(out) < count:
                chunk = await self.stream.receive_some(65536)
                assert chunk, "the server closed the stream"
                self.buf += chunk
                *lines, self.buf = self.buf.split(b"\n")
                out.extend(orjson.loads(x) for x in lines if x.strip())
        return out


async def _serve_raw(nursery: trio.Nursery, tracer: MemoryRecorder | None = None,
                     **limits: int) -> Wire:
    ours, theirs = trio.testing.memory_stream_pair()
    server = make_server(**limits)
    nursery.start_soon(lambda: server.serve(StreamTransport(theirs, theirs), tracer=tracer))
    wire = Wire(ours)
    await ours.send_all(HANDSHAKE)
    assert (await wire.read(1))[0]["id"] == 0
    return wire


async def test_a_full_queue_refuses_with_server_busy_and_reads_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tracer = MemoryRecorder()
    async with trio.open_nursery() as nursery:
        wire = await _serve_raw(nursery, tracer, max_concurrent=1, max_queued=1)
        # 1 runs, 2 waits in the queue, 3 finds the queue full; the ping behind them is
        # still answered.
        await wire.stream.send_all(call(1, "hang") + call(2, "quick") + call(3, "quick")
                                   + line({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
        refused, pong = await wire.read(2)
        assert refused["id"] == 3
        assert refused["error"]["code"] == SERVER_BUSY == -32005
        assert "retry" in refused["error"]["message"].lower()
        assert refused["error"]["data"] == {
            "reason": "busy", "retryable": True, "max_concurrent_requests": 1,
            "max_queued_requests": 1,
        }
        assert pong == {"jsonrpc": "2.0", "id": 4, "result": {}}
        # Cancelling the running call frees its slot for the queued one.
        await wire.stream.send_all(cancel(1))
        (answer,) = await wire.read(1)
        assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "quick"
        await wire.stream.aclose()
    events = tracer.events()
    out = [e for e in events if e["kind"] == "message_out" and e["msg"].get("id") == 3]
    assert len(out) == 1 and out[0]["msg"]["error"]["code"] == SERVER_BUSY
    assert not any(e["kind"] == "handler_started" and e["id"] == 3 for e in events)
    started = [e["id"] for e in events if e["kind"] == "handler_started"]
    assert started == [1, 2]
    finished = [e for e in events if e["kind"] == "handler_finished"]
    assert [e["id"] for e in finished] == [2]


async def test_a_cancelled_queued_request_never_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tracer = MemoryRecorder()
    async with trio.open_nursery() as nursery:
        wire = await _serve_raw(nursery, tracer, max_concurrent=1, max_queued=4)
        await wire.stream.send_all(call(1, "hang") + call(2, "quick") + cancel(2)
                                   + call(3, "quick"))
        await trio.sleep(1)
        # The cancelled request left the queue at once; nothing answers it.
        await wire.stream.send_all(cancel(1))
        (answer,) = await wire.read(1)
        assert answer["id"] == 3
        # Its id is free again: the peer may reuse it.
        await wire.stream.send_all(call(2, "quick"))
        (answer,) = await wire.read(1)
        assert answer["id"] == 2 and "result" in answer
        await wire.stream.aclose()
    events = tracer.events()
    applied = [e for e in events if e["kind"] == "cancel_applied"]
    assert [(e["id"], e["stage"], e["by"]) for e in applied] == [
        (2, "before_start", "peer"), (1, "running", "peer")]
    assert applied[0]["why"] == "no longer needed"
    requested = [e for e in events if e["kind"] == "cancel_requested"]
    assert [e["target"] for e in requested] == ["queued", "running"]
    assert [e["id"] for e in events if e["kind"] == "handler_started"] == [1, 3, 2]


async def test_queued_requests_are_answered_at_a_clean_end_of_input(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with trio.open_nursery() as nursery:
        ours, theirs = trio.testing.memory_stream_pair()
        server = make_server(max_concurrent=1)
        nursery.start_soon(lambda: server.serve(StreamTransport(theirs, theirs)))
        wire = Wire(ours)
        await ours.send_all(HANDSHAKE + b"".join(call(i, "quick") for i in range(1, 6)))
        await ours.send_eof()
        got = await wire.read(6)
        assert [m["id"] for m in got] == [0, 1, 2, 3, 4, 5]


async def test_queued_requests_are_dropped_when_the_session_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tracer = MemoryRecorder()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            ours, theirs = trio.testing.memory_stream_pair()
            server = make_server(max_concurrent=1)
            nursery.start_soon(
                lambda: server.serve(StreamTransport(theirs, theirs), tracer=tracer))
            wire = Wire(ours)
            await ours.send_all(HANDSHAKE + call(1, "hang") + call(2, "quick") + call(3, "quick"))
            await wire.read(1)
            await ours.send_eof()  # the hanging call outlives the drain; 2 and 3 never run
    events = tracer.events()
    assert [e["id"] for e in events if e["kind"] == "handler_started"] == [1]
    applied = sorted((e["id"], e["stage"], e["by"]) for e in events
                     if e["kind"] == "cancel_applied")
    assert applied == [(1, "running", "supervisor"), (2, "before_start", "supervisor"),
                       (3, "before_start", "supervisor")]


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_limits_are_checked(bad: Any) -> None:
    from mcpactor import Limits

    with pytest.raises((ValueError, TypeError)):
        Limits(max_queued_requests=bad)
