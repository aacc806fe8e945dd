"""Plain ``def`` handlers run in worker threads, so a blocking one stalls no session;
``thread=False`` keeps one in the event loop."""

from __future__ import annotations

import threading
import time

import trio

from mcpactor import Context, Server
from mcpactor.testing import open_client


def blocking_server() -> Server:
    server = Server("blocking")

    @server.tool
    def crunch(seconds: float) -> str:
        time.sleep(seconds)
        return threading.current_thread().name

    @server.tool(thread=False)
    def crunch_inline(seconds: float) -> str:
        time.sleep(seconds)
        return threading.current_thread().name

    @server.resource("data://thread")
    def thread_resource() -> str:
        return threading.current_thread().name

    @server.resource("data://item/{n}")
    def item(n: int) -> str:
        return f"{n} in {threading.current_thread().name}"

    @server.prompt
    def where() -> str:
        return threading.current_thread().name

    @server.tool
    def log_from_thread(ctx: Context) -> str:
        # A thread reaches the session through Trio, as any thread would.
        trio.from_thread.run(ctx.info, "from a worker thread")
        return "logged"

    return server


async def _three_at_once(tool: str) -> float:
    async with open_client(blocking_server()) as client:
        started = time.monotonic()
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(client.call_tool, tool, {"seconds": 0.2})
        return time.monotonic() - started


async def test_three_concurrent_blocking_calls_take_the_time_of_one() -> None:
    elapsed = await _three_at_once("crunch")
    assert 0.2 <= elapsed < 0.45, elapsed


async def test_thread_false_keeps_a_tool_in_the_event_loop() -> None:
    # The documented opt-out: the three calls now run one after the other.
    elapsed = await _three_at_once("crunch_inline")
    assert elapsed >= 0.6, elapsed


async def test_sync_tools_resources_and_prompts_run_off_the_main_thread() -> None:
    main = threading.current_thread().name
    async with open_client(blocking_server()) as client:
        tool = await client.call_tool("crunch", {"seconds": 0})
        inline = await client.call_tool("crunch_inline", {"seconds": 0})
        res = await client.read_resource("data://thread")
        tpl = await client.read_resource("data://item/7")
        prompt = await client.get_prompt("where")
    assert tool.content[0].text != main  # type: ignore[union-attr]
    assert inline.content[0].text == main  # type: ignore[union-attr]
    assert res.contents[0].text != main  # type: ignore[union-attr]
    assert tpl.contents[0].text.startswith("7 in ") and main not in tpl.contents[0].text  # type: ignore[union-attr]
    assert prompt.messages[0].content.text != main  # type: ignore[union-attr]


async def test_a_sync_tool_reaches_its_context_through_trio() -> None:
    from mcpactor import ClientHandlers

    logs: list[object] = []
    handlers = ClientHandlers(on_log=lambda params: logs.append(params.data))
    async with open_client(blocking_server(), handlers=handlers) as client:
        result = await client.call_tool("log_from_thread", {})
        await client.ping()
    assert result.content[0].text == "logged"  # type: ignore[union-attr]
    assert logs == ["from a worker thread"]


async def test_a_blocking_tool_does_not_stall_another_session() -> None:
    server = blocking_server()
    async with open_client(server) as slow, open_client(server) as quick:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow.call_tool, "crunch", {"seconds": 0.5})
            await trio.sleep(0.05)
            started = time.monotonic()
            await quick.call_tool("crunch_inline", {"seconds": 0})
            assert time.monotonic() - started < 0.2
