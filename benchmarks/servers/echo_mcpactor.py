"""The benchmark subject: mcpactor serving one ``echo`` tool.

Run it as ``mcpactor run benchmarks/servers/echo_mcpactor.py:server`` (stdio),
``mcpactor run ... --transport http``, or directly:
``python benchmarks/servers/echo_mcpactor.py [stdio | http PORT]``.
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
        server.run(transport="http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run(transport="stdio")
