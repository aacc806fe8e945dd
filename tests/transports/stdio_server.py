"""A small server run as a real subprocess by the stdio tests."""

import trio

from mcpactor import Context, Server

server = Server("stdio-test", "1.0")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
        await trio.sleep(0.01)
    return f"counted {n}"


if __name__ == "__main__":
    server.run()


@server.tool()
async def noisy() -> str:
    """Print to stdout, which must not reach the protocol stream."""
    print("this line would corrupt a naive stdio server")
    return "still fine"
