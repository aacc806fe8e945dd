"""A server whose tools run as tasks, for tests/tasks (in-process, `mcpactor run` over
stdio and HTTP, the TypeScript SDK's client)."""

from __future__ import annotations

from typing import TypedDict

import trio

from mcpactor import Context, Server
from mcpactor.protocol.errors import InvalidParams

server = Server("task-server", "1.0")

#: What the tools saw, for in-process tests to look at.
SEEN: dict[str, object] = {}
#: Set when `hang` starts and when it ends.
HANG_STARTED = trio.Event()
HANG_ENDED = trio.Event()


class Stats(TypedDict):
    """A structured result."""

    count: int
    mean: float


@server.tool(task="optional")
async def slow(n: int, ctx: Context, delay: float = 0.05) -> str:
    """Count to n with progress and a log line per step."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1} of {n}")
        await ctx.info(f"step {i + 1}")
        await trio.sleep(delay)
    return f"counted to {n}"


@server.tool(task="optional")
async def stats(values: list[float]) -> Stats:
    """Count and mean of the values (a structured result)."""
    await trio.sleep(0.01)
    return {"count": len(values), "mean": sum(values) / len(values)}


@server.tool(task="required")
async def ask_name(ctx: Context, delay: float = 0) -> str:
    """Ask the user for a name (elicitation inside a task), after ``delay`` seconds."""
    await trio.sleep(delay)
    answer = await ctx.elicit("Your name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}},
                                             "required": ["name"]})
    if answer.action != "accept" or answer.content is None:
        return f"no name ({answer.action})"
    return f"hello {answer.content['name']}"


@server.tool(task="required")
async def ask_model(prompt: str, ctx: Context) -> str:
    """Ask the client's model (sampling inside a task)."""
    result = await ctx.sample(prompt, max_tokens=20)
    return f"model said: {getattr(result.content, 'text', result.content)}"


@server.tool(task="optional")
async def boom() -> str:
    """Fail: the tool's exception is an isError result, the task `failed`."""
    await trio.sleep(0.01)
    raise ValueError("kaput")


@server.tool(task="optional")
async def refuse(code: int) -> str:
    """Raise a protocol error on purpose: tasks/result answers the same error."""
    await trio.sleep(0.01)
    raise InvalidParams(f"refused with {code}", data={"code": code})


@server.tool(task="optional")
async def hang(ctx: Context) -> str:
    """Wait until cancelled; says so in SEEN."""
    HANG_STARTED.set()
    try:
        await trio.sleep_forever()
    finally:
        SEEN["hang_cancelled"] = ctx.cancelled
        HANG_ENDED.set()
    return "unreachable"


@server.tool
async def plain() -> str:
    """Not a task tool."""
    return "plain"


@server.tool(task="optional")
async def ask_two(ctx: Context) -> str:
    """Two questions at the same time (a handshake session asks both at once)."""
    answers: dict[str, object] = {}

    async def ask(key: str) -> None:
        reply = await ctx.elicit(f"{key}?", {"type": "object",
                                             "properties": {key: {"type": "string"}}})
        answers[key] = (reply.content or {}).get(key)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "first")
        nursery.start_soon(ask, "second")
    return f"{answers['first']} and {answers['second']}"


@server.tool(task="optional", begins_task=True)
async def greet_later(ctx: Context, delay: float = 0.05) -> str:
    """Ask for a name, then become a task (2026-07-28: the question is an input round
    of the call, before the task exists), then ask once more inside the task."""
    first = await ctx.elicit("Your name?", {"type": "object",
                                            "properties": {"name": {"type": "string"}},
                                            "required": ["name"]}, key="who")
    name = (first.content or {}).get("name")
    SEEN["greet_later_runs"] = int(SEEN.get("greet_later_runs", 0)) + 1  # type: ignore[call-overload]
    await ctx.begin_task()
    await trio.sleep(delay)
    again = await ctx.elicit("Really?", {"type": "object",
                                         "properties": {"name": {"type": "string"}},
                                         "required": ["name"]}, key="who")
    return f"hello {name}, then {(again.content or {}).get('name')}"
