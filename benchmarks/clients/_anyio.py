"""The ``gather`` of the clients that run on anyio (the SDK's and fastmcp's)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio


async def gather(n: int, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``n`` copies of ``fn`` at once; return when all have returned."""
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(fn)
