"""A server written with the official Python SDK, served over its own Streamable HTTP
(uvicorn/starlette) for tests/http/test_http_sdk_interop.py:

    python tests/http/sdk_http_server.py PORT [sse|json|legacy]

``legacy`` serves the 2024-11-05 HTTP+SSE transport (``/sse`` and ``/messages/``).
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-http-server", version="1.2.3")


@server.tool()
def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


@server.tool()
async def steps(n: int, ctx: Context) -> str:
    """Report progress n times."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
        await anyio.sleep(0.01)
    return f"{n} steps"


if __name__ == "__main__":
    port = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "sse"
    if mode == "legacy":
        server.run("sse", host="127.0.0.1", port=port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=port, json_response=mode == "json")
