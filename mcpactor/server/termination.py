"""Ending a server on SIGTERM the way its input ending would: whole traces, clean exit.

Python's default for SIGTERM is to die on the spot: the events a recorder still held
would be lost, and a trace without its end cannot be replayed. Service managers, a
container's stop and ``connect_stdio``'s shutdown all send SIGTERM, so a served
process closes every live session instead (``Session.close``: the reader stops, the
handlers still running are cancelled, the traces record why and are written to the
end; a replay closes the session at the same point), waits for them within their
drain budget, then stops serving and returns.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable

import trio

from mcpactor.session.session import live_sessions

__all__ = ["TERMINATED", "serve_until_terminated"]

#: The close reason sessions ended by SIGTERM record.
TERMINATED = "terminated (SIGTERM)"
#: Seconds past the longest drain budget before the rest is cancelled regardless.
_GRACE = 1.0


async def serve_until_terminated(serve: Callable[[], Awaitable[None]]) -> bool:
    """Run ``serve()`` until it returns or SIGTERM arrives; True if SIGTERM ended it.

    Outside the main thread (where no signal can be received) this is just ``serve()``.
    """
    if threading.current_thread() is not threading.main_thread():
        await serve()
        return False
    terminated = False
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            async def watch() -> None:
                nonlocal terminated
                async for _ in signals:
                    terminated = True
                    await close_all_sessions(TERMINATED)
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(watch)
            await serve()
            nursery.cancel_scope.cancel()
    return terminated


async def close_all_sessions(reason: str) -> None:
    """Close every session of this Trio run and wait (within their drain budgets) for
    them to end."""
    sessions = live_sessions()
    for session in sessions:
        session.close(reason)
    budget = max((s.limits.drain_timeout for s in sessions), default=0.0) + _GRACE
    with trio.move_on_after(budget):
        for session in sessions:
            await session.closed.wait()
