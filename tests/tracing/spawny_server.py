"""A tool whose handler spawns tasks of its own: for the test that a long recording's
trace sink forgets the names of tasks that have ended."""

import trio
import trio.lowlevel

from mcpactor import Server

server = Server("spawny", version="1.0")


@server.tool()
async def fan(n: int) -> str:
    """Start two tasks that each append ``n`` after a checkpoint; the order they ran."""
    seen: list[str] = []

    async def part(tag: str) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(f"{tag}{n}")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(part, "a")
        nursery.start_soon(part, "b")
    return ",".join(seen)
