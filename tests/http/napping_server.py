"""A tool that streams progress while it naps: for the test of clients that leave while
their answer is being written."""

import trio

from mcpactor import Context, Server

server = Server("napping", version="1.0")


@server.tool
async def nap(ms: float, ctx: Context) -> str:
    """Three progress notifications over ``ms`` milliseconds, then a long answer."""
    for i in range(3):
        await ctx.report_progress(i + 1, 3)
        await trio.sleep(ms / 3000)
    return "x" * 2000
