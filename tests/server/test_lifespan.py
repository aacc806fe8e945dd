"""``Server(lifespan=...)``: startup state handlers reach as ``ctx.lifespan``, entered
once however many sessions are served, closed after the last one; over stdio in a
real process too."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from mcpactor import Context, Server, connect_http, connect_stdio
from mcpactor.server.lifespan import LifespanNotRunning
from mcpactor.testing import open_client


@dataclass
class Pool:
    events: list[str] = field(default_factory=list)
    queries: int = 0


def pool_server(events: list[str]) -> Server[Pool]:
    @asynccontextmanager
    async def lifespan(server: Server[Pool]) -> AsyncIterator[Pool]:
        events.append(f"open {server.info.name}")
        await trio.lowlevel.checkpoint()
        try:
            yield Pool(events)
        finally:  # also when the serving is cancelled
            events.append("close")

    server = Server("pooled", lifespan=lifespan)

    @server.tool
    async def query(ctx: Context[Pool]) -> int:
        pool: Pool = ctx.lifespan  # typed: Context[Pool]
        pool.queries += 1
        return pool.queries

    @server.resource("pool://stats")
    async def stats(ctx: Context[Pool]) -> str:
        return f"{ctx.lifespan.queries} queries"

    return server


async def test_handlers_reach_the_lifespan_state() -> None:
    events: list[str] = []
    server = pool_server(events)
    async with open_client(server) as client:
        assert events == ["open pooled"]
        first = await client.call_tool("query", {})
        second = await client.call_tool("query", {})
        stats = await client.read_resource("pool://stats")
    assert (first.data, second.data) == ({"result": 1}, {"result": 2})
    assert stats.contents[0].text == "2 queries"  # type: ignore[union-attr]
    assert events == ["open pooled", "close"]


async def test_entered_once_for_concurrent_sessions_and_closed_after_the_last() -> None:
    events: list[str] = []
    server = pool_server(events)
    async with open_client(server) as a:
        async with open_client(server) as b:
            await a.call_tool("query", {})
            result = await b.call_tool("query", {})
            assert result.data == {"result": 2}  # one pool for both sessions
        assert events == ["open pooled"]  # b left; a still uses it
        await a.call_tool("query", {})
    assert events == ["open pooled", "close"]


async def test_serve_http_enters_it_once_for_every_session() -> None:
    events: list[str] = []
    server = pool_server(events)
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: server.serve_http(
            port=0, quiet=True, task_status=task_status))
        assert events == ["open pooled"]  # before the first request
        for expected in (1, 2):
            async with connect_http(url) as client:
                assert (await client.call_tool("query", {})).data == {"result": expected}
        nursery.cancel_scope.cancel()
    assert events == ["open pooled", "close"]


async def test_a_lifespan_without_parameters_and_a_server_without_one() -> None:
    @asynccontextmanager
    async def no_args() -> AsyncIterator[str]:
        yield "state"

    server = Server("x", lifespan=no_args)
    plain = Server("y")

    @server.tool
    async def read(ctx: Context) -> str:
        return str(ctx.lifespan)

    @plain.tool
    async def read_plain(ctx: Context) -> str:
        return repr(ctx.lifespan)

    async with open_client(server) as client, open_client(plain) as other:
        assert (await client.call_tool("read", {})).content[0].text == "state"  # type: ignore[union-attr]
        assert (await other.call_tool("read_plain", {})).content[0].text == "None"  # type: ignore[union-attr]


def test_reading_the_state_while_not_served_names_the_fix() -> None:
    server = pool_server([])
    with pytest.raises(LifespanNotRunning, match=r"server\.running"):
        server.lifespan_state  # noqa: B018
    assert Server("plain").lifespan_state is None


async def test_a_lifespan_that_is_no_context_manager_is_a_clear_error() -> None:
    async def wrong(server: Server) -> None:  # forgot @asynccontextmanager
        return None

    server = Server("x", lifespan=wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="asynccontextmanager"):
        async with server.running():
            pass


async def test_a_failing_startup_fails_the_serving_and_every_waiter() -> None:
    @asynccontextmanager
    async def broken(server: Server) -> AsyncIterator[None]:
        await trio.sleep(0.01)
        raise OSError("database down")
        yield

    server = Server("x", lifespan=broken)
    results: list[str] = []

    async def enter() -> None:
        try:
            async with server.running():
                results.append("entered")
        except RuntimeError as exc:
            results.append(f"waiter: {exc}")
        except OSError as exc:
            results.append(f"owner: {exc}")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(enter)
        await trio.lowlevel.checkpoint()
        nursery.start_soon(enter)
    assert sorted(results) == ["owner: database down",
                               "waiter: the lifespan of server 'x' failed to start"]


async def test_a_stdio_server_process_runs_its_lifespan_around_the_session(
        tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    module = tmp_path / "lifespan_server.py"
    module.write_text(textwrap.dedent(f"""
        from contextlib import asynccontextmanager
        from mcpactor import Context, Server

        @asynccontextmanager
        async def lifespan(server):
            with open({str(log)!r}, "a") as f:
                f.write("up\\n")
            yield {{"answer": 42}}
            with open({str(log)!r}, "a") as f:
                f.write("down\\n")

        server = Server("lifespan-demo", lifespan=lifespan)

        @server.tool
        def answer(ctx: Context) -> int:
            return ctx.lifespan["answer"]
    """))
    command = [sys.executable, "-m", "mcpactor", "run", f"{module}:server"]
    async with connect_stdio(command, cwd=str(tmp_path)) as client:
        assert (await client.call_tool("answer", {})).data == {"result": 42}
        assert log.read_text() == "up\n"
    assert log.read_text() == "up\ndown\n"  # the shutdown ran when stdin closed


def test_run_over_stdio_from_a_script(tmp_path: Path) -> None:
    """``server.run()`` (the blocking entry) enters the lifespan too."""
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent("""
        from contextlib import asynccontextmanager
        from mcpactor import Context, Server

        @asynccontextmanager
        async def lifespan(server):
            yield "ready"

        server = Server("scripted", lifespan=lifespan)

        @server.tool
        async def state(ctx: Context) -> str:
            return ctx.lifespan

        if __name__ == "__main__":
            server.run()
    """))
    requests = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"state",'
        b'"arguments":{}}}\n')
    out = subprocess.run([sys.executable, str(script)], input=requests,
                         capture_output=True, timeout=60, check=True).stdout
    assert b'"text":"ready"' in out


async def test_entering_while_it_closes_waits_and_starts_it_again() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def slow_close(server: Server) -> AsyncIterator[int]:
        events.append("open")
        try:
            yield len(events)
        finally:
            events.append("closing")
            with trio.CancelScope(shield=True):
                await trio.sleep(0.05)
            events.append("closed")

    server = Server("x", lifespan=slow_close)
    seen: list[int] = []

    async def late() -> None:
        await trio.sleep(0.01)  # the first user is closing it now
        async with server.running() as state:
            seen.append(state)

    async with trio.open_nursery() as nursery:
        async with server.running() as state:
            seen.append(state)
            nursery.start_soon(late)
    assert events == ["open", "closing", "closed", "open", "closing", "closed"]
    assert seen == [1, 4]  # the late one got a fresh state, not the closed one
