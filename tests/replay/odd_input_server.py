"""A server recorded as a real ``mcpactor run --trace`` process by test_replay_odd_input."""

import trio

from mcpactor import Server

server = Server("odd-input", "1.0")


@server.tool()
async def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
async def slow(seconds: float) -> str:
    """Take a while (long enough to be cancelled)."""
    await trio.sleep(seconds)
    return "done"
