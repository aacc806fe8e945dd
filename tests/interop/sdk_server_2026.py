"""A server written with the official Python SDK (``mcp`` 2.3.0 ``MCPServer``) that uses
what 2026-07-28 adds: a tool that asks for input with an ``InputRequiredResult`` (the
multi-round-trip flow, two rounds), and change notifications published to
``subscriptions/listen`` streams. For tests/interop/test_sdk_server_2026.py:

    python tests/interop/sdk_server_2026.py               # stdio
    python tests/interop/sdk_server_2026.py http PORT     # Streamable HTTP (SSE answers)
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

server = MCPServer("sdk-2026-server", version="26.7.28")


@server.tool()
def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


@server.tool()
async def steps(n: int, ctx: Context) -> str:
    """Report progress n times."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"{n} steps"


def _ask(key: str, message: str) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(
        message=message,
        requested_schema={"type": "object", "properties": {key: {"type": "string"}},
                          "required": [key]}))


@server.tool()
async def introduce(ctx: Context) -> str | InputRequiredResult:
    """Asks for a name, then (a second round) for a city; the state carries the name."""
    answers = ctx.input_responses or {}
    if ctx.request_state is None:
        return InputRequiredResult(input_requests={"name": _ask("name", "Your name?")},
                                   request_state="round-1")
    if ctx.request_state == "round-1":
        name = answers["name"].content["name"]  # type: ignore[union-attr,index]
        return InputRequiredResult(input_requests={"city": _ask("city", "Your city?")},
                                   request_state=f"round-2:{name}")
    city = answers["city"].content["city"]  # type: ignore[union-attr,index]
    return f"{ctx.request_state.removeprefix('round-2:')} from {city}"


@server.tool()
async def change_tools(ctx: Context) -> str:
    """Publishes a tools list change to subscriptions/listen streams."""
    await ctx.notify_tools_changed()
    return "published"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
