"""Handlers that share Trio primitives and draw entropy, concurrently.

``fanout`` spawns its own nursery whose tasks sleep random durations (the order they
finish in is the answer); ``queue``/``rendezvous`` pass tags through a shared memory
channel under a shared lock and semaphore; ``gate``/``open_gate`` race an event against
a timeout; ``ids`` draws ``uuid4``, ``os.urandom``, ``secrets`` and ``random``;
``tags`` returns a set of strings in iteration order (the hash seed).
"""

import os
import random
import secrets
import uuid

import trio

from mcpactor import Server

server = Server("racy-entropy", version="1.0")
lock = trio.Lock()
slots = trio.Semaphore(2)
send_tags, receive_tags = trio.open_memory_channel[str](64)
gate_event = trio.Event()
log: list[str] = []


@server.tool()
async def fanout(width: int = 4) -> str:
    """Start ``width`` tasks that sleep at random; the order they finish in."""
    finished: list[str] = []
    async with trio.open_nursery() as nursery:
        for i in range(width):
            async def part(name: str = "abcdefgh"[i]) -> None:
                await trio.sleep(random.random() * 0.003)
                finished.append(name)
            nursery.start_soon(part)
    return "".join(finished)


@server.tool()
async def queue(tag: str) -> str:
    """Put ``tag`` through the shared channel; take whatever comes out."""
    async with slots:
        async with lock:
            log.append(tag)
            await trio.sleep(random.random() * 0.002)
        send_tags.send_nowait(tag)
    got = await receive_tags.receive()
    return f"{tag} -> {got} (log {''.join(log[-6:])})"


@server.tool()
async def gate() -> str:
    """Wait for the gate, or give up."""
    with trio.move_on_after(random.random() * 0.004):
        await gate_event.wait()
        return "through the gate"
    return "gave up at the gate"


@server.tool()
async def open_gate() -> str:
    """Open the gate (after a random pause)."""
    await trio.sleep(random.random() * 0.003)
    gate_event.set()
    return "gate open"


@server.tool()
async def ids() -> str:
    """Every kind of entropy a handler might draw."""
    return (f"uuid={uuid.uuid4()} urandom={os.urandom(4).hex()} "
            f"secrets={secrets.token_hex(4)} random={random.random():.6f}")


@server.tool()
async def tags(words: list[str]) -> str:
    """The distinct words, in set order."""
    return ",".join(set(words))
