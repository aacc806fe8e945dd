"""A session serving requests without its actor tree (``Session.scoped``), as a
2026-07-28 request over HTTP is served: the request runs in the caller's task through
the same router, dispatcher and writer; closing the session cancels it (gracefully: a
winding-down handler answers first, within the drain budget); leaving the scope ends
the session as the end of ``run`` does."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.protocol.errors import ConnectionClosed
from mcpactor.session.limits import Limits
from mcpactor.session.session import Session, live_sessions
from mcpactor.tracing import MemoryRecorder
from mcpactor.transports.base import Outgoing
from mcpactor.transports.memory import MemoryTransport, memory_pair

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "debug"}


def call(rid: int, tool: str, arguments: dict[str, Any] | None = None) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments or {}, "_meta": META}})


def all_tasks() -> int:
    """How many tasks the Trio run has now."""
    def count(task: trio.lowlevel.Task) -> int:
        return 1 + sum(count(child) for nursery in task.child_nurseries
                       for child in nursery.child_tasks)
    return count(trio.lowlevel.current_root_task())


def drain(transport: MemoryTransport) -> list[dict[str, Any]]:
    """What the session wrote so far (without waiting)."""
    out: list[dict[str, Any]] = []
    while True:
        try:
            out.append(orjson.loads(transport._receive.receive_nowait()))
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            return out


def make_server(seen: dict[str, Any]) -> Server:
    server = Server("scoped", "1.0")

    @server.tool()
    async def where() -> str:
        """Note the task and the number of tasks while running."""
        seen["task"] = trio.lowlevel.current_task()
        seen["tasks"] = all_tasks()
        return "here"

    @server.tool()
    async def forever(ctx: Context) -> str:
        """Wait until cancelled."""
        seen["session"] = ctx.session
        seen["started"].set()
        try:
            await trio.sleep_forever()
        finally:
            seen["cancelled"] = True
        return "never"  # pragma: no cover

    @server.tool()
    async def winds_down(ctx: Context, finish: bool) -> str:
        """Finish when the session winds down gracefully (or never, ``finish`` False)."""
        done = trio.Event()
        ctx.session.when_winding_down(done.set)
        seen["started"].set()
        try:
            await done.wait()
            if not finish:
                await trio.sleep_forever()
        finally:
            seen["cancelled"] = not done.is_set() or not finish
        return "wound down"

    @server.tool()
    async def chatty(ctx: Context, tasks: int, each: int) -> str:
        """Log from several tasks at once, then answer."""
        async def talk(t: int) -> None:
            for i in range(each):
                await ctx.info(f"{t}:{i}")

        async with trio.open_nursery() as nursery:
            for t in range(tasks):
                nursery.start_soon(talk, t)
        return "said"

    return server


class YieldingTransport(MemoryTransport):
    """A memory transport whose send yields first, so that concurrent senders contend
    for the writer's token, and which fails if a send starts while one is going on."""

    busy = False

    async def send(self, messages: list[Outgoing]) -> None:
        assert not self.busy, "two sends at once"
        self.busy = True
        try:
            await trio.lowlevel.checkpoint()
            await super().send(messages)
        finally:
            self.busy = False


async def test_a_request_runs_in_the_callers_task_with_no_tree() -> None:
    seen: dict[str, Any] = {}
    server = make_server(seen)
    ours, theirs = memory_pair()
    session = server.new_session(theirs)
    closed: list[Session] = []
    on_closed = session.handler.on_closed
    session.handler.on_closed = lambda s: (closed.append(s), on_closed(s))  # type: ignore[method-assign]
    before = all_tasks()
    async with session.scoped():
        assert session in live_sessions()
        await session.feed(call(1, "where"))
        # Answered before feed returned, in this task, with no task started for it.
        assert seen["task"] is trio.lowlevel.current_task()
        assert seen["tasks"] == before
        [answer] = drain(ours)
        assert answer["id"] == 1 and answer["result"]["content"][0]["text"] == "here"
    assert session.closed.is_set() and closed == [session]
    assert session not in live_sessions()
    assert session.close_reason == "request answered"
    with pytest.raises(ConnectionClosed):
        await session.feed(call(2, "where"))
    with pytest.raises(ConnectionClosed):
        await session.send_raw(b'{"jsonrpc":"2.0","method":"notifications/late"}')


async def test_an_error_the_connection_answers_is_written_in_place() -> None:
    # The router's own replies (here: a request without the 2026 _meta version) go
    # through the writer too, which has no task to hand them to.
    server = make_server({})
    ours, theirs = memory_pair()
    session = server.new_session(theirs)
    async with session.scoped():
        await session.feed(orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
                                         "params": {"_meta": {
                                             "io.modelcontextprotocol/clientCapabilities": {}}}}))
        [answer] = drain(ours)
    assert answer["id"] == 5 and answer["error"]["code"] == -32602


async def test_close_cancels_the_request_in_its_callers_task() -> None:
    seen: dict[str, Any] = {"started": trio.Event()}
    server = make_server(seen)
    ours, theirs = memory_pair()
    session = server.new_session(theirs)
    with trio.fail_after(5):
        async with session.scoped():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(session.feed, call(1, "forever"))
                await seen["started"].wait()
                assert session.slots_in_use == 1
                session.close("the client left")
    assert seen["cancelled"] is True
    assert drain(ours) == []  # a cancelled request is not answered
    assert session.slots_in_use == 0 and session.close_reason == "the client left"


async def test_the_callers_own_cancellation_does_not_reach_the_request() -> None:
    # As for an inline handler in a tree: the request's scope is shielded; only the
    # session (or the peer) cancels it.
    seen: dict[str, Any] = {"started": trio.Event()}
    server = make_server(seen)
    _, theirs = memory_pair()
    session = server.new_session(theirs)
    caller = trio.CancelScope()

    async def feed() -> None:
        with caller:
            await session.feed(call(1, "forever"))

    with trio.fail_after(5):
        async with session.scoped():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(feed)
                await seen["started"].wait()
                caller.cancel()
                await trio.sleep(0.05)
                assert "cancelled" not in seen
                session.close("done")
    assert seen["cancelled"] is True


@pytest.mark.parametrize("finish", [True, False])
async def test_graceful_close_lets_a_winding_down_request_answer(
        finish: bool, autojump_clock: trio.testing.MockClock) -> None:
    seen: dict[str, Any] = {"started": trio.Event()}
    server = make_server(seen)
    server.limits = Limits(drain_timeout=3.0)
    ours, theirs = memory_pair()
    session = server.new_session(theirs)
    async with session.scoped():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.feed, call(1, "winds_down", {"finish": finish}))
            await seen["started"].wait()
            start = trio.current_time()
            session.close("SIGTERM", graceful=True)
        took = trio.current_time() - start
    answers = drain(ours)
    if finish:
        # Told, it answered at once.
        assert took == 0 and answers[0]["result"]["content"][0]["text"] == "wound down"
        assert seen["cancelled"] is False
    else:
        # Told, it did not finish: cancelled at the end of the drain budget.
        assert took == pytest.approx(3.0) and answers == []
        assert seen["cancelled"] is True


async def test_graceful_close_cancels_at_once_a_request_that_did_not_ask() -> None:
    seen: dict[str, Any] = {"started": trio.Event()}
    server = make_server(seen)
    _, theirs = memory_pair()
    session = server.new_session(theirs)
    with trio.fail_after(1):  # the drain budget (2 s) is not waited for
        async with session.scoped():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(session.feed, call(1, "forever"))
                await seen["started"].wait()
                session.close("SIGTERM", graceful=True)
    assert seen["cancelled"] is True


async def test_senders_in_several_tasks_take_turns_at_the_transport() -> None:
    # No writer task: each send writes in place, holding the writer's token, so
    # concurrent senders (a handler's own tasks) wait for each other and every message
    # arrives whole, each task's in its order, the answer last.
    server = make_server({})
    a_send, b_recv = trio.open_memory_channel[bytes](1000)
    b_send, a_recv = trio.open_memory_channel[bytes](1000)
    ours = MemoryTransport(a_send, a_recv)
    session = server.new_session(YieldingTransport(b_send, b_recv))
    with trio.fail_after(5):
        async with session.scoped():
            await session.feed(call(1, "chatty", {"tasks": 3, "each": 10}))
    messages = drain(ours)
    assert len(messages) == 31 and messages[-1]["id"] == 1
    said = [m["params"]["data"] for m in messages[:-1]]
    for t in range(3):
        assert [s for s in said if s.startswith(f"{t}:")] == [f"{t}:{i}" for i in range(10)]


async def test_a_scope_is_for_an_unstarted_unrecorded_session() -> None:
    server = make_server({})
    _, theirs = memory_pair()
    recorded = server.new_session(theirs, tracer=MemoryRecorder())
    with pytest.raises(ValueError, match="recorded session runs its actor tree"):
        async with recorded.scoped():
            pass  # pragma: no cover
    _, theirs = memory_pair()
    session = server.new_session(theirs)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        with pytest.raises(RuntimeError, match="already running"):
            async with session.scoped():
                pass  # pragma: no cover
        session.close()
