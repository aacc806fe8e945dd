"""Client code for the client-side traces of the corpus (``traces/record.py``).

Each ``main`` is run against ``servers/race_server.py`` with the client recording; the
trace names it as its entry point, and ``mcpactor replay`` runs it again.
"""

from __future__ import annotations

import trio

from mcpactor.client import Client
from mcpactor.protocol.errors import RequestTimeout


async def first_done_first(client: Client) -> None:
    """Check-then-act on the client: it assumes the call it started first is answered
    first, and says so when the answers cross."""
    done: list[str] = []

    async def call(name: str, seconds: float) -> None:
        await client.call_tool("sleepy", {"seconds": seconds})
        done.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, "long", 0.5)
        nursery.start_soon(call, "short", 0.1)
    if done[0] != "long":
        raise AssertionError(f"answers came back as {done}")


async def timeout_same_instant(client: Client) -> None:
    """The client gives a call exactly as long as the server takes: its timeout and the
    answer land at the same virtual instant."""
    try:
        result = await client.call_tool("sleepy", {"seconds": 1.0}, timeout=1.0)
        outcome = str(getattr(result.content[0], "text", ""))
    except RequestTimeout:
        outcome = "timed out"
    # The session goes on either way; the outcome travels in the next call.
    await client.call_tool("sleepy", {"seconds": 0.0 if outcome == "timed out" else 0.5})
