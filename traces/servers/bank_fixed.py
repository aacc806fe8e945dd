"""``bank_server.py`` with both races fixed: a lock around check-then-act, and
``try/finally`` around the busy mark. Replayed against traces of the racy bank, it shows
which answers the fix changes (``mcpactor replay T --server bank_fixed.py:server``)."""

import datetime
import random
import time

import trio

from mcpactor import Context, Server

server = Server("racy-bank", version="1.0")
account = {"balance": 100, "busy": 0}
lock = trio.Lock()


def _state() -> str:
    flags = []
    if account["balance"] < 0:
        flags.append("OVERDRAWN")
    if account["busy"] > 0:
        flags.append("LEAKED")
    return f"balance={account['balance']} busy={account['busy']}" + (
        " " + " ".join(flags) if flags else "")


@server.tool()
async def withdraw(amount: int) -> str:
    """Withdraw ``amount`` if the balance allows it."""
    async with lock:
        if account["balance"] >= amount:
            await trio.sleep(random.random() * 0.004)
            account["balance"] -= amount
            return f"withdrew {amount}: {_state()}"
        return f"refused {amount}: {_state()}"


@server.tool()
async def deposit(amount: int) -> str:
    """Deposit ``amount``."""
    await trio.sleep(random.random() * 0.002)
    account["balance"] += amount
    return f"deposited {amount}: {_state()}"


@server.tool()
async def transfer(amount: int, ctx: Context) -> str:
    """Move money out in a few steps with progress."""
    account["busy"] += 1
    try:
        steps = random.randint(2, 5)
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
            await trio.sleep(random.random() * 0.003)
        account["balance"] -= amount
    finally:
        account["busy"] -= 1
    return f"transferred {amount} in {steps} steps: {_state()}"


@server.tool()
async def audit() -> str:
    """The state, with the time read every way a handler might."""
    began = trio.current_time()
    wall, mono, perf = time.time(), time.monotonic(), time.perf_counter()
    stamp = datetime.datetime.now().isoformat()
    with trio.move_on_after(random.random() * 0.004) as scope:
        await trio.sleep(random.random() * 0.004)
    return (f"{_state()} at {stamp} wall={wall:.6f} mono={mono:.6f} perf={perf:.6f} "
            f"timed_out={scope.cancelled_caught} took={trio.current_time() - began:.6f}")
