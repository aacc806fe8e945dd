"""A 2026-07-28 request over Streamable HTTP is served in a session that runs no actor
tree (``Session.scoped``): its handler runs in the POST's own task through the same
dispatcher and writer a handshake session uses. One that waits streams what it sends
(SSE, in order, the answer last); the client leaving cancels it (the POST is the
request's whole life); a recorded server still serves it in a tree, which the
recording follows."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from http_support import messages, read_events, running_app, wait_until

from mcpactor import Context, Server
from mcpactor.session.session import Session, live_sessions
from mcpactor.tracing import MemoryRecorder
from mcpactor.transports.http_client import HttpPool

TIMEOUT = 15
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "info"}


def headers(tool: str) -> list[tuple[str, str]]:
    return [("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"), ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"), ("mcp-name", tool)]


def call(rid: int, tool: str, **extra: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": tool, "arguments": {}, "_meta": {**META, **extra}}})


def all_tasks() -> int:
    def count(task: trio.lowlevel.Task) -> int:
        return 1 + sum(count(child) for nursery in task.child_nurseries
                       for child in nursery.child_tasks)
    return count(trio.lowlevel.current_root_task())


class Seen:
    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()
        self.tasks: list[int] = []
        self.sessions: list[Session] = []
        self.in_tree: list[bool] = []


def make_server(seen: Seen) -> Server:
    server = Server("modern-scoped", "1.0")

    @server.tool()
    async def quick(ctx: Context) -> str:
        """Answer at once, noting how many tasks the run has and the session's form."""
        seen.tasks.append(all_tasks())
        seen.sessions.append(ctx.session)
        seen.in_tree.append(ctx.session.dispatcher.handlers is not None)
        return "quick"

    @server.tool()
    async def steps(ctx: Context) -> str:
        """Progress and logs from two tasks, waiting between them, then the answer."""
        async def side() -> None:
            for i in range(5):
                await ctx.info(f"side {i}")
                await trio.sleep(0.01)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(side)
            for i in range(5):
                await ctx.report_progress(i + 1, 5)
                await trio.sleep(0.01)
        return "done"

    @server.tool()
    async def forever() -> str:
        """Wait until cancelled."""
        seen.started.set()
        try:
            await trio.sleep_forever()
        finally:
            seen.cancelled.set()
        return "never"  # pragma: no cover

    return server


async def test_a_quick_request_starts_no_task() -> None:
    seen = Seen()
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(seen)) as (app, url):
            pool = HttpPool()
            for rid in range(1, 4):
                resp = await pool.request("POST", url, headers("quick"), call(rid, "quick"))
                body = orjson.loads(await resp.read())
                await resp.aclose()
                assert resp.status == 200 and body["result"]["content"][0]["text"] == "quick"
            await pool.aclose()
    # Each request had a session of its own, which ran no tree (no task was started for
    # any of them: the run had as many tasks during each), ended with its POST, and
    # was never among the app's sessions.
    assert len(set(map(id, seen.sessions))) == 3
    assert seen.in_tree == [False] * 3
    assert len(set(seen.tasks)) == 1
    assert all(s.closed.is_set() and s.close_reason == "stateless request answered"
               for s in seen.sessions)
    assert not app.sessions


async def test_a_waiting_request_streams_in_order_the_answer_last() -> None:
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(Seen())) as (_, url):
            pool = HttpPool()
            resp = await pool.request("POST", url, headers("steps"),
                                      call(1, "steps", progressToken="p"))
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            got = messages(await read_events(resp))
            await resp.aclose()
            await pool.aclose()
    assert got[-1]["id"] == 1 and got[-1]["result"]["content"][0]["text"] == "done"
    progress = [m["params"]["progress"] for m in got if m.get("method") == "notifications/progress"]
    logs = [m["params"]["data"] for m in got if m.get("method") == "notifications/message"]
    assert progress == [1, 2, 3, 4, 5]
    assert logs == [f"side {i}" for i in range(5)]


@pytest.mark.parametrize("json_response", [None, True])
async def test_the_client_leaving_cancels_the_request(json_response: bool | None) -> None:
    seen = Seen()
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(seen), json_response=json_response) as (_, url):
            host, port = url.split("//")[1].split("/")[0].split(":")
            stream = await trio.open_tcp_stream(host, int(port))
            body = call(1, "forever")
            head = "".join(f"{k}: {v}\r\n" for k, v in headers("forever"))
            await stream.send_all(
                f"POST /mcp HTTP/1.1\r\nhost: {host}\r\n{head}content-length: {len(body)}"
                f"\r\n\r\n".encode() + body)
            await seen.started.wait()
            await stream.aclose()
            with trio.move_on_after(5):
                await seen.cancelled.wait()
            if not seen.cancelled.is_set():
                for session in live_sessions():  # or the app would wait for it forever
                    session.close("the test failed")
                pytest.fail("the request outlived its client")


async def test_a_recorded_server_serves_it_in_a_tree() -> None:
    seen = Seen()
    recorder = MemoryRecorder()
    with trio.fail_after(TIMEOUT):
        async with running_app(make_server(seen), tracer=recorder) as (_, url):
            pool = HttpPool()
            resp = await pool.request("POST", url, headers("quick"), call(1, "quick"))
            assert orjson.loads(await resp.read())["result"]["content"][0]["text"] == "quick"
            await resp.aclose()
            await pool.aclose()
            await wait_until(lambda: seen.sessions[0].closed.is_set())
    assert seen.in_tree == [True]
    kinds = [e.get("kind") for e in recorder.events()]
    assert kinds.count("session_started") == 1 and "handler_finished" in kinds
