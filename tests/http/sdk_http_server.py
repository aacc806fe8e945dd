"""A server written with the official Python SDK, served over its own Streamable HTTP
(uvicorn/starlette) for tests/http/test_http_sdk_interop.py:

    python tests/http/sdk_http_server.py PORT [json]
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
    json_mode = len(sys.argv) > 2 and sys.argv[2] == "json"
    server.run("streamable-http", host="127.0.0.1", port=port, json_response=json_mode)
