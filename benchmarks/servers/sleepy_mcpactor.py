"""A sleep-heavy mcpactor server, recorded and replayed by the ``replay_speed`` workload.

``nap(ms)`` sleeps on the session's clock and answers; under ``mcpactor replay`` the
clock is virtual, so a trace of many naps replays in a fraction of its wall time.
"""

from __future__ import annotations

import trio

from mcpactor import Server

server = Server("sleepy", version="1.0.0")


@server.tool()
async def nap(ms: int) -> str:
    """Sleep ``ms`` milliseconds, then say so."""
    await trio.sleep(ms / 1000)
    return f"slept {ms} ms"
