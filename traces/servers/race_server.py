"""The server behind the race corpus (``traces/*.jsonl`` name it as their entry point).

Each tool is a small handler built to meet one race; the replayer re-runs them.
Module state (the bank balance) starts afresh each time the module is loaded.
"""

from __future__ import annotations

import trio
import trio.lowlevel

from mcpactor import Context, Server

server = Server("race-corpus", "1.0")

#: Shared state for the deliberately racy `withdraw` tool.
BANK = {"balance": 100}


@server.tool()
async def quick() -> str:
    """Answer at once."""
    return "quick"


@server.tool()
async def sleepy(seconds: float) -> str:
    """Sleep on the clock, then answer."""
    await trio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
async def slow(steps: int, every: float, ctx: Context) -> str:
    """Report progress every `every` seconds for `steps` steps."""
    for i in range(steps):
        await ctx.report_progress(i, steps, f"step {i}")
        await trio.sleep(every)
    return "done"


@server.tool()
async def burst(steps: int, ctx: Context) -> str:
    """Report progress `steps` times and answer in the same instant: the last
    progress notification races the response."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return "burst done"


@server.tool()
async def ask_model(prompt: str, ctx: Context) -> str:
    """Ask the client's model (sampling) and return its text."""
    result = await ctx.sample(prompt, max_tokens=20)
    return str(getattr(result.content, "text", result.content))


@server.tool()
async def ask_with_timeout(prompt: str, seconds: float, ctx: Context) -> str:
    """Ask the client's model with a timeout; say which side won."""
    from mcpactor import RequestTimeout

    try:
        result = await ctx.sample(prompt, max_tokens=20, timeout=seconds)
    except RequestTimeout:
        return "timed out"
    return "answered: " + str(getattr(result.content, "text", result.content))


@server.tool()
async def ask_twice(ctx: Context) -> str:
    """Two concurrent sampling requests; report the order their answers came in."""
    order: list[str] = []

    async def ask(label: str) -> None:
        await ctx.sample(label, max_tokens=5)
        order.append(label)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "first")
        nursery.start_soon(ask, "second")
    return ",".join(order)


@server.tool()
async def crash_mid_stream(steps: int, ctx: Context) -> str:
    """Stream some progress, then fail with a bug."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps + 1)
        await trio.sleep(0.5)
    raise RuntimeError(f"crashed after {steps} progress notifications")


@server.tool()
async def withdraw(amount: int) -> dict[str, int]:
    """Withdraw from the shared balance: check, then act across an await (the bug)."""
    if BANK["balance"] >= amount:
        await trio.lowlevel.checkpoint()  # e.g. an audit-log write: other handlers run here
        BANK["balance"] -= amount
        return {"withdrawn": amount, "balance": BANK["balance"]}
    return {"withdrawn": 0, "balance": BANK["balance"]}


@server.tool()
async def echo_secret(token: str) -> str:
    """Echo a secret back (tests that traces redact it)."""
    return f"your token is {token}"


@server.tool()
async def roll(sides: int) -> int:
    """Roll a die with Python's `random` (the trace's seed makes it replayable)."""
    import random

    return random.randint(1, sides)
