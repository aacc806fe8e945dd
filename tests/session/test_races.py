"""Races inside the session actor tree, on trio's virtual clock.

Each test sets up one of the orderings that break naive runtimes (a cancellation that
arrives before the handler starts or after the response left, progress after completion,
a timeout at the same instant as the response) and checks the outcome and the trace.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Context, RequestTimeout, Server, Timeout, connect_transport
from mcpactor.protocol.errors import McpError
from mcpactor.tracing import MemoryRecorder
from mcpactor.transports.memory import memory_pair
from mcpactor.transports.stream import StreamTransport


def make_server() -> tuple[Server, dict[str, Any]]:
    server = Server("races", "1.0")
    seen: dict[str, Any] = {"ran": [], "ctx": None}

    @server.tool()
    async def sleepy(seconds: float) -> str:
        """Sleep on the (virtual) clock."""
        seen["ran"].append(seconds)
        await trio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    async def quick(ctx: Context) -> str:
        """Return at once, keeping the context for later misuse."""
        seen["ctx"] = ctx
        return "quick"

    @server.tool()
    async def ticking(ticks: int, every: float, ctx: Context) -> str:
        """Report progress every `every` seconds."""
        for i in range(ticks):
            await trio.sleep(every)
            await ctx.report_progress(i + 1, ticks)
        return "ticked"

    @server.tool()
    async def crash() -> str:
        """Fail with a bug."""
        raise RuntimeError("kaboom")

    return server, seen


async def start(nursery: trio.Nursery, server: Server, tracer: MemoryRecorder | None = None):  # type: ignore[no-untyped-def]
    a, b = memory_pair()
    nursery.start_soon(lambda: server.serve(a, tracer=tracer))
    return b


# -- raw wire helpers for orderings the Client API cannot produce -------------------------


def line(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


HANDSHAKE = line(
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
) + line({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def read_messages(stream: trio.abc.ReceiveStream, count: int) -> list[dict[str, Any]]:
    buf = b""
    out: list[dict[str, Any]] = []
    while len(out) < count:
        chunk = await stream.receive_some(65536)
        assert chunk, "server closed the stream early"
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out.extend(orjson.loads(x) for x in lines if x.strip())
    return out


async def test_cancel_before_the_handler_starts(autojump_clock: trio.testing.MockClock) -> None:
    server, seen = make_server()
    tracer = MemoryRecorder()
    ours, theirs = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(StreamTransport(theirs, theirs), tracer=tracer))
        # Request and cancellation arrive in one read: the reader routes both before the
        # handler task gets its first turn.
        await ours.send_all(
            HANDSHAKE
            + line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sleepy", "arguments": {"seconds": 5}}})
            + line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "changed my mind"}})
            + line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        )
        msgs = await read_messages(ours, 2)
        assert [m["id"] for m in msgs] == [0, 2]  # initialize result, ping; nothing for id 1
        await trio.sleep(10)
        assert seen["ran"] == []  # the handler never ran
        await ours.aclose()
    events = tracer.events()
    applied = [e for e in events if e["kind"] == "cancel_applied"]
    assert applied == [applied[0]] and applied[0]["stage"] == "before_start"
    assert not any(e["kind"] == "handler_started" for e in events)


async def test_cancel_after_the_response_was_sent(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    tracer = MemoryRecorder()
    ours, theirs = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(StreamTransport(theirs, theirs), tracer=tracer))
        await ours.send_all(HANDSHAKE + line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "quick", "arguments": {}}}))
        msgs = await read_messages(ours, 2)
        assert msgs[1]["result"]["content"][0]["text"] == "quick", msgs
        await ours.send_all(
            line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
            + line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        )
        (pong,) = await read_messages(ours, 1)
        assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}
        await ours.aclose()
    dropped = [e for e in tracer.events() if e["kind"] == "message_dropped"]
    assert any("unknown or finished request 1" in e["reason"] for e in dropped)
    outs = [e for e in tracer.events() if e["kind"] == "message_out"]
    assert sum(1 for e in outs if e["msg"].get("id") == 1) == 1  # exactly one response


async def test_progress_after_completion_is_dropped(autojump_clock: trio.testing.MockClock) -> None:
    server, seen = make_server()
    tracer = MemoryRecorder()
    got: list[float] = []
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server, tracer)
        async with connect_transport(b, mode="legacy") as client:
            res = await client.call_tool("quick", {}, on_progress=lambda p, t, m: got.append(p))
            assert res.content[0].text == "quick"  # type: ignore[union-attr]
            ctx: Context = seen["ctx"]
            assert await ctx.report_progress(1, 2) is False
            await client.ping()
        nursery.cancel_scope.cancel()
    assert got == []
    assert any(e["kind"] == "progress_dropped" for e in tracer.events())


@pytest.mark.parametrize(
    ("handler_seconds", "expect_timeout"), [(0.999, False), (1.001, True)]
)
async def test_timeout_either_side_of_the_response(
    autojump_clock: trio.testing.MockClock, handler_seconds: float, expect_timeout: bool
) -> None:
    server, _ = make_server()
    tracer = MemoryRecorder()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server)
        async with connect_transport(b, tracer=tracer, mode="legacy") as client:
            if expect_timeout:
                with pytest.raises(RequestTimeout):
                    await client.call_tool("sleepy", {"seconds": handler_seconds}, timeout=1.0)
            else:
                res = await client.call_tool("sleepy", {"seconds": handler_seconds}, timeout=1.0)
                assert res.content[0].text == f"slept {handler_seconds}"  # type: ignore[union-attr]
            await trio.sleep(5)
            await client.ping()  # the session is still healthy
        nursery.cancel_scope.cancel()
    kinds = [e["kind"] for e in tracer.events()]
    assert ("timer_fired" in kinds) is expect_timeout
    # after a timeout the cancellation went out and nothing came back for the request
    if expect_timeout:
        outs = [e["msg"] for e in tracer.events() if e["kind"] == "message_out"]
        assert any(m.get("method") == "notifications/cancelled" for m in outs)


async def test_timeout_at_the_same_instant_as_the_response(autojump_clock: trio.testing.MockClock) -> None:
    """Deadline and response at the same virtual instant: one outcome, no crash, no leak."""
    server, _ = make_server()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server)
        async with connect_transport(b, mode="legacy") as client:
            outcomes = []
            for _ in range(20):
                try:
                    await client.call_tool("sleepy", {"seconds": 1.0}, timeout=1.0)
                    outcomes.append("result")
                except RequestTimeout:
                    outcomes.append("timeout")
            await client.ping()
            assert set(outcomes) <= {"result", "timeout"}
            assert len(client.session.tracker) == 0
            assert client.session.connection.pending_ids == frozenset()
        nursery.cancel_scope.cancel()


async def test_progress_resets_the_deadline_up_to_the_hard_maximum(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server)
        async with connect_transport(b, mode="legacy") as client:
            # 6 ticks of 0.5 s = 3 s, longer than the 1 s timeout, but progress resets it.
            res = await client.call_tool(
                "ticking", {"ticks": 6, "every": 0.5}, timeout=1.0, on_progress=lambda *a: None
            )
            assert res.content[0].text == "ticked"  # type: ignore[union-attr]
            t0 = trio.current_time()
            with pytest.raises(RequestTimeout):
                await client.call_tool(
                    "ticking", {"ticks": 100, "every": 0.5},
                    timeout=Timeout(seconds=1.0, maximum=2.0), on_progress=lambda *a: None,
                )
            assert trio.current_time() - t0 == pytest.approx(2.0)
            with pytest.raises(RequestTimeout):
                await client.call_tool(
                    "ticking", {"ticks": 6, "every": 0.5},
                    timeout=Timeout(seconds=1.0, reset_on_progress=False), on_progress=lambda *a: None,
                )
        nursery.cancel_scope.cancel()


async def test_caller_cancellation_sends_cancelled_and_server_stops(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    tracer = MemoryRecorder()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server, tracer)
        async with connect_transport(b, mode="legacy") as client:
            with trio.move_on_after(0.5):
                await client.call_tool("sleepy", {"seconds": 60})
            await client.ping()
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    events = tracer.events()
    (call_id,) = [e["msg"]["id"] for e in events if e["kind"] == "message_in" and e["msg"].get("method") == "tools/call"]
    applied = [e for e in events if e["kind"] == "cancel_applied"]
    assert len(applied) == 1 and applied[0]["id"] == call_id and applied[0]["by"] == "peer"
    assert not any(e["kind"] == "message_out" and e["msg"].get("id") == call_id for e in events)


async def test_handler_crash_is_32603_and_session_lives(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("crashy", "1")

    @server.prompt()
    async def broken() -> str:
        """Always fails."""
        raise RuntimeError("prompt bug")

    async with trio.open_nursery() as nursery:
        b = await start(nursery, server)
        async with connect_transport(b, mode="legacy") as client:
            with pytest.raises(McpError) as info:
                await client.get_prompt("broken")
            assert info.value.code == -32603
            await client.ping()
        nursery.cancel_scope.cancel()


async def test_tool_crash_is_an_error_result(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server)
        async with connect_transport(b, mode="legacy") as client:
            res = await client.call_tool("crash", {})
            assert res.is_error is True
            assert "kaboom" in res.content[0].text  # type: ignore[union-attr]
            await client.ping()
        nursery.cancel_scope.cancel()


async def test_end_of_input_cancels_handlers_and_fails_waiters(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    tracer = MemoryRecorder()
    a, b = memory_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: server.serve(a, tracer=tracer))
        async with connect_transport(b, mode="legacy") as client:
            async def call() -> None:
                with pytest.raises(McpError):
                    await client.call_tool("sleepy", {"seconds": 60})

            nursery.start_soon(call)
            await trio.sleep(1)
            await b.aclose()  # the client's side disappears mid-request
            await trio.sleep(1)
    kinds = [e["kind"] for e in tracer.events()]
    assert "cancel_applied" in kinds and kinds[-1] == "session_closed"


async def test_wire_order_matches_send_order_under_concurrency() -> None:
    """Each request's progress goes out before its response, and the handshake answer
    before anything else, whichever task writes (writer or a handler in place)."""
    server, _ = make_server()
    tracer = MemoryRecorder()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, server, tracer)
        async with connect_transport(b, mode="legacy") as client:
            async def one() -> None:
                await client.call_tool("ticking", {"ticks": 4, "every": 0}, on_progress=lambda *a: None)
                await client.call_tool("quick", {})

            async with trio.open_nursery() as calls:
                for _ in range(40):
                    calls.start_soon(one)
        nursery.cancel_scope.cancel()
    outs = [e for e in tracer.events() if e["kind"] == "message_out"]
    assert "protocolVersion" in outs[0]["msg"]["result"]
    last_progress: dict[Any, float] = {}
    answered: set[Any] = set()
    for e in outs:
        m, rel = e["msg"], e["related"]
        if m.get("method") == "notifications/progress":
            assert rel not in answered, "progress after its response"
            assert m["params"]["progress"] > last_progress.get(rel, 0)
            last_progress[rel] = m["params"]["progress"]
        elif "id" in m:
            assert m["id"] not in answered, "two responses for one id"
            answered.add(m["id"])
    assert len(answered) == 81 and all(v == 4 for v in last_progress.values())
