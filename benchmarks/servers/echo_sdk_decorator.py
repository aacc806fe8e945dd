"""Peer: the official MCP SDK's decorator server (``MCPServer``, FastMCP's successor in mcp 2.x).

``python echo_sdk_decorator.py [stdio | http PORT [--sse]]``; HTTP uses JSON responses
unless ``--sse`` is given (see echo_sdk_lowlevel.py for why).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", version="1.0.0", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    args = sys.argv[1:] or ["stdio"]
    if args[0] == "http":
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(args[1]),
            json_response="--sse" not in args,
        )
    else:
        server.run("stdio")
