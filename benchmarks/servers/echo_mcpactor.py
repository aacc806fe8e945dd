"""The benchmark subject: mcpactor serving one ``echo`` tool.

Run it as ``mcpactor run benchmarks/servers/echo_mcpactor.py:server`` (stdio),
``mcpactor run ... --transport http [--sse-response]`` (what the harness runs), or
directly: ``python benchmarks/servers/echo_mcpactor.py [stdio | http PORT [--sse]]``.
"""

from __future__ import annotations

import sys

from mcpactor import Server

server = Server("echo", version="1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    args = sys.argv[1:] or ["stdio"]
    if args[0] == "http":
        json_response = False if "--sse" in args else None  # None: JSON unless streaming
        server.run(transport="http", host="127.0.0.1", port=int(args[1]),
                   json_response=json_response)
    else:
        server.run(transport="stdio")
