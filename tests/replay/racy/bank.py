"""A racy bank for the changed-code and live-target replay tests.

``withdraw`` checks, awaits, then debits (two at once can overdraw); ``audit`` counts
calls in module state shared by every session and answers with a uuid4 and a random
draw. Variants are made from this text by the tests (``v2``: one more key in the audit;
``newtool``: an unrelated extra tool; ``locked``: withdraw under a lock).
"""

import random
import uuid

import trio

from mcpactor import Server

server = Server("racy-bank", version="1.0")
balance = {"amount": 100}
audits = {"n": 0}
LOCK = trio.Lock()


@server.tool
async def withdraw(amount: int) -> str:
    """Check, wait, debit."""
    async with _guard():
        if balance["amount"] < amount:
            return "refused"
        await trio.sleep(0.01 + random.random() / 100)
        balance["amount"] -= amount
        return f"{balance['amount']} left"


def _guard() -> "trio.Lock | _NoLock":
    return _NoLock()


class _NoLock:
    async def __aenter__(self) -> None:
        pass

    async def __aexit__(self, *exc: object) -> None:
        pass


@server.tool
async def deposit(amount: int) -> str:
    """Wait a little, credit."""
    await trio.sleep(random.random() / 200)
    balance["amount"] += amount
    return f"{balance['amount']} left"


@server.tool
async def audit() -> dict[str, object]:
    """Count, wait, answer with fresh entropy."""
    audits["n"] += 1
    await trio.sleep(random.random() / 100)
    return {"n": audits["n"], "id": str(uuid.uuid4()), "r": random.random(),
            "bal": balance["amount"]}
