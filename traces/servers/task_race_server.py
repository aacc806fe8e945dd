"""The server behind the tasks races of the corpus (``traces/task_*.jsonl``): a tool
that runs as a task (2025-11-25, and the 2026-07-28 tasks extension) and finishes
after a given time."""

from __future__ import annotations

import trio
import trio.lowlevel

from mcpactor import Server

server = Server("task-race-corpus", "1.0")


@server.tool(task="optional")
async def finish_soon(seconds: float, steps: int = 0) -> str:
    """Sleep on the clock, then take ``steps`` more scheduler steps, then answer: a
    task that ends at a known instant, a few steps in."""
    await trio.sleep(seconds)
    for _ in range(steps):
        await trio.lowlevel.checkpoint()
    return f"finished after {seconds}"
