"""Blocking work in worker threads, racing the event loop.

``crunch`` runs a random amount of blocking work in a thread (``time.sleep``) and reads
the clocks there; ``tally`` updates shared state before and after a thread, so a
cancellation in the middle leaves it half done; ``deadline`` gives a thread a timeout
it may miss.
"""

import random
import time

import trio

from mcpactor import Server

server = Server("racy-threads", version="1.0")
totals = {"started": 0, "finished": 0}


def _work(seconds: float) -> str:
    time.sleep(seconds)
    return f"{seconds:.4f}s of work, ended at {time.time():.6f}"


@server.tool()
async def crunch() -> str:
    """A random amount of blocking work in a thread."""
    return await trio.to_thread.run_sync(_work, random.random() * 0.01)


@server.tool()
async def tally() -> str:
    """Count starts and ends around a thread (half done if cancelled)."""
    totals["started"] += 1
    await trio.to_thread.run_sync(time.sleep, random.random() * 0.006)
    totals["finished"] += 1
    pending = totals["started"] - totals["finished"]
    return f"started={totals['started']} finished={totals['finished']}" + (
        f" LEAKED {pending}" if pending else "")


@server.tool()
async def deadline() -> str:
    """A thread with a timeout it may miss."""
    with trio.move_on_after(0.004) as scope:
        await trio.to_thread.run_sync(time.sleep, random.random() * 0.008,
                                      abandon_on_cancel=True)
    return "missed the deadline" if scope.cancelled_caught else "made the deadline"
