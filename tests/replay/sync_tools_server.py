"""A server of plain ``def`` tools (run in worker threads) that read the clocks and
entropy in their threads, with a lifespan: for the replay tests of both. (Two threads
racing on shared state would not replay: threads run again, not in lockstep;
docs/trace-format.md.)"""

import functools
import os
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from mcpactor import Context, Server


@dataclass
class State:
    greeting: str


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[State]:
    await trio.sleep(0.01)  # waits on Trio's clock (a pool warming up): the replay too
    try:
        yield State(greeting="hello from the lifespan")
    finally:
        with trio.CancelScope(shield=True):
            await trio.sleep(0.01)


server = Server("sync-tools", version="1.0", lifespan=lifespan)


@server.tool
def crunch(ms: int) -> str:
    """Blocking work in a worker thread; reports the thread's clock and entropy."""
    started = time.monotonic()
    time.sleep(ms / 1000)
    return (f"{ms}ms ended at {time.time():.6f} after {time.monotonic() - started:.6f}s "
            f"draw {random.random():.6f}")


@server.tool(thread=False)
def inline(n: int) -> str:
    """The opt-out: in the event loop."""
    return f"inline {n} {random.random():.6f}"


@server.tool
async def greet(ctx: Context[State]) -> str:
    """Reads the lifespan's state."""
    return ctx.lifespan.greeting


@server.tool
async def handed(n: int) -> str:
    """Clock and entropy functions handed to a worker thread as they are (no function of
    the application's own around them): what they read is the task's."""
    token = await trio.to_thread.run_sync(os.urandom, 4)
    more = await trio.to_thread.run_sync(functools.partial(os.urandom, 3))
    stamp = await trio.to_thread.run_sync(time.time)
    return f"{n} {token.hex()} {more.hex()} {stamp:.6f}"


#: A thread limiter of three tokens, shared by the ``queued`` calls.
few_threads = trio.CapacityLimiter(3)


@server.tool
async def queued(ms: int) -> str:
    """Blocking work on a limiter of three threads: with more calls at once, the rest
    wait for a token, which another thread's end hands over."""
    started = await trio.to_thread.run_sync(time.monotonic, limiter=few_threads)
    await trio.to_thread.run_sync(time.sleep, ms / 1000, limiter=few_threads)
    return f"{ms} {started:.6f} {random.random():.6f}"


#: One thread at a time, for ``hold`` and ``try_for``.
one_thread = trio.CapacityLimiter(1)


@server.tool
async def hold(ms: int) -> str:
    """Keep the only token of ``one_thread`` for ``ms`` milliseconds of blocking work."""
    await trio.to_thread.run_sync(time.sleep, ms / 1000, limiter=one_thread)
    return f"held {ms}"


@server.tool
async def try_for(ms: int) -> str:
    """Blocking work on ``one_thread``, given up after ``ms`` milliseconds (a wait that
    cannot be abandoned: it can only end cancelled while it waits for the token)."""
    with trio.move_on_after(ms / 1000) as scope:
        await trio.to_thread.run_sync(time.sleep, 0.001, limiter=one_thread)
    return "gave up" if scope.cancelled_caught else "done"
