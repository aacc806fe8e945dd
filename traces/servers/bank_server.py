"""A racy bank: the two classic races of a server, on purpose.

- ``withdraw`` checks the balance, awaits, then withdraws: two withdrawals can both pass
  the check (check-then-act across an await), and the balance goes below zero
  (``OVERDRAWN``).
- ``transfer`` marks the account busy, awaits, then unmarks it, without ``try/finally``:
  a cancellation arriving at the await leaves it busy for good (``LEAKED``).

The handlers also sleep random durations, report progress with random totals, read the
wall, monotonic and Trio clocks and ``datetime.now()``, and time themselves out with
``trio.move_on_after``: everything a replay has to reproduce.
"""

import datetime
import random
import time

import trio

from mcpactor import Context, Server

server = Server("racy-bank", version="1.0")
account = {"balance": 100, "busy": 0}


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
    """Withdraw ``amount`` if the balance allows it (racy)."""
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
    """Move money out in a few steps with progress; leaks 'busy' if cancelled."""
    account["busy"] += 1
    steps = random.randint(2, 5)
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await trio.sleep(random.random() * 0.003)
    account["balance"] -= amount
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
