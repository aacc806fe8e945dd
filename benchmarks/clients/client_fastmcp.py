"""fastmcp 4.1.2's ``Client`` driving echo."""

from __future__ import annotations

import os
import sys

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.clients._anyio import gather
from benchmarks.clients._loop import TEXT, check_echo, measure, parse_args, report


async def main() -> None:
    args = parse_args()
    transport = (StreamableHttpTransport(args.url) if args.url
                 else StdioTransport(command=args.stdio[0], args=args.stdio[1:]))
    async with Client(transport) as client:

        async def call() -> None:
            result = await client.call_tool("echo", {"text": TEXT})
            check_echo(result.content[0].text)  # type: ignore[union-attr]

        init = client.initialize_result
        report(await measure(args, call, gather),
               getattr(init, "protocol_version", None) or getattr(init, "protocolVersion", None))


if __name__ == "__main__":
    anyio.run(main)
