"""The server `mcpactor run` serves in the connection-limit tests (tests/http)."""

from __future__ import annotations

import trio

from mcpactor import Context, Server

server = Server("limits-test", "1.0")


@server.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def stream(ticks: int, every: float, ctx: Context) -> str:
    """Report progress ``ticks`` times, ``every`` seconds apart (a busy SSE answer)."""
    for i in range(ticks):
        await ctx.report_progress(i + 1, ticks)
        await trio.sleep(every)
    return f"streamed {ticks}"


@server.tool()
async def hang() -> str:
    """Run until cancelled (a busy connection)."""
    await trio.sleep_forever()
    return "unreachable"
