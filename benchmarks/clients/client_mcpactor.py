"""mcpactor's client (``mcpactor.connect_stdio`` / ``connect_http``) driving echo."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import trio

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import mcpactor
from benchmarks.clients._loop import TEXT, check_echo, measure, parse_args, report


async def _gather(n: int, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(fn)


async def main() -> None:
    args = parse_args()
    if args.url:
        connection = mcpactor.connect_http(args.url)
    else:
        connection = mcpactor.connect_stdio(args.stdio)
    async with connection as client:

        async def call() -> None:
            result = await client.call_tool("echo", {"text": TEXT})
            check_echo(getattr(result.content[0], "text", None))

        report(await measure(args, call, _gather), client.protocol_version)


if __name__ == "__main__":
    trio.run(main)
