"""Ending a server on SIGTERM or Ctrl-C the way its input ending would: whole traces.

Python's default for SIGTERM is to die on the spot, and Ctrl-C raises
``KeyboardInterrupt`` wherever the server happens to be: either way the sessions end
without saying why, and with SIGTERM the events a recorder still held are lost (a trace
without its end cannot be replayed). Service managers, a container's stop and
``connect_stdio``'s shutdown all send SIGTERM. So a served process closes every live
session instead (``Session.close``: the reader stops, the handlers still running are
cancelled, the traces record why and are written to the end; a replay closes the
session at the same point), waits for them within their drain budget, then stops
serving.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable

import trio

from mcpactor.session.session import live_sessions

__all__ = ["INTERRUPTED", "TERMINATED", "close_all_sessions", "serve_until_signalled"]

#: The close reasons sessions ended by a signal record.
TERMINATED = "terminated (SIGTERM)"
INTERRUPTED = "interrupted (SIGINT)"
_REASONS = {signal.SIGTERM: TERMINATED, signal.SIGINT: INTERRUPTED}
#: Seconds past the longest drain budget before the rest is cancelled regardless.
_GRACE = 1.0


async def serve_until_signalled(serve: Callable[[], Awaitable[None]]) -> int | None:
    """Run ``serve()`` until it returns, or SIGTERM or SIGINT closes every session;
    the signal's number, or None when ``serve()`` returned by itself.

    Outside the main thread (where no signal can be received) this is just ``serve()``.
    """
    if threading.current_thread() is not threading.main_thread():
        await serve()
        return None
    received: int | None = None
    with trio.open_signal_receiver(*_REASONS) as signals:
        async with trio.open_nursery() as nursery:
            async def watch() -> None:
                nonlocal received
                async for signum in signals:
                    received = signum
                    await close_all_sessions(_REASONS[signal.Signals(signum)])
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(watch)
            await serve()
            nursery.cancel_scope.cancel()
    return received


async def close_all_sessions(reason: str) -> None:
    """Close every session of this Trio run and wait (within their drain budgets) for
    them to end."""
    # Graceful: an open subscriptions/listen stream ends with its completion result
    # (2026-07-28), written before its session closes.
    sessions = live_sessions()
    for session in sessions:
        session.close(reason, graceful=True)
    budget = max((s.limits.drain_timeout for s in sessions), default=0.0) + _GRACE
    with trio.move_on_after(budget):
        for session in sessions:
            await session.closed.wait()
