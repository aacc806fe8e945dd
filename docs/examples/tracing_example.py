"""docs/guide/tracing-and-replay.md: a race, recorded once, replayed every time.

    mcpactor run docs/examples/tracing_example.py:server --trace bank.jsonl
    mcpactor replay bank.jsonl
    mcpactor replay bank.jsonl --server docs/examples/tracing_example.py:fixed
"""

import random

import trio

from mcpactor import Client, Server

server = Server("tracing-example", version="1.0.0")
balance = {"amount": 100}


@server.tool
async def withdraw(amount: int) -> str:
    """Check, wait for the (pretend) ledger, then take: two at once can overdraw."""
    if balance["amount"] < amount:
        return "refused"
    await trio.sleep(0.05 + random.random() / 100)  # where another call gets in
    balance["amount"] -= amount
    return f"took {amount}, {balance['amount']} left"


# The fix: check and take under one lock (the same tool, in a server of its own).
fixed = Server("tracing-example", version="1.0.0")
ledger = trio.Lock()


@fixed.tool(name="withdraw")
async def withdraw_under_lock(amount: int) -> str:
    """Check and take with nobody in between."""
    async with ledger:
        return await withdraw(amount)


async def demo(client: Client) -> None:
    answers: list[str] = []

    async def take() -> None:
        result = await client.call_tool("withdraw", {"amount": 80})
        answers.append(result.content[0].text)  # type: ignore[union-attr]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(take)
        nursery.start_soon(take)
    assert sorted(answers) == ["took 80, -60 left", "took 80, 20 left"]  # the race
