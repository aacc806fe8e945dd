"""The official SDK's client (mcp 2.3.0 ``ClientSession``) driving echo.

``ClientSession.initialize()`` is the 2025-11-25 handshake; the SDK's higher-level
client would first probe the stateless 2026-07-28 era, which the other clients here do
not speak.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.clients._anyio import gather
from benchmarks.clients._loop import TEXT, check_echo, measure, parse_args, report


async def main() -> None:
    args = parse_args()
    if args.url:
        transport = streamable_http_client(args.url)
    else:
        transport = stdio_client(StdioServerParameters(command=args.stdio[0], args=args.stdio[1:]))
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()

            async def call() -> None:
                result = await session.call_tool("echo", {"text": TEXT})
                check_echo(result.content[0].text)  # type: ignore[union-attr]

            report(await measure(args, call, gather), init.protocol_version)


if __name__ == "__main__":
    anyio.run(main)
