"""The server the generated-input tests talk to (stdio and HTTP, via ``mcpactor run``).

Two handler slots and a queue of two, so that calls that hang make later requests
wait in the queue or be refused as busy (the head-of-line rules are part of what is
checked); tools that cannot fail on their own, so that any internal error is a bug.
"""

import trio

from mcpactor import Limits, Server

server = Server("fuzz", "1.0", limits=Limits(max_concurrent_requests=2, max_queued_requests=2))


@server.tool()
async def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
async def hang() -> str:
    """Run until cancelled."""
    await trio.sleep_forever()
    return "unreachable"


if __name__ == "__main__":
    server.run()
