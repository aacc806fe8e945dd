"""Peer: the official MCP SDK's low-level ``Server`` serving one ``echo`` tool.

``python echo_sdk_lowlevel.py [stdio | http PORT [--sse] [--stateless]]``. Over HTTP it
runs the SDK's Streamable HTTP app under uvicorn; JSON responses are the default here
because they are the SDK's faster mode (``--sse`` gives the SDK's own default, one SSE
stream per POST), so the comparison is against the peer at its best. ``--stateless``
is the SDK's stateless mode (``stateless_http=True``: no session ids, every POST
served on its own; what the SDK offers for running several processes behind a load
balancer).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

_TOOL = types.Tool(
    name="echo",
    description="Return the text unchanged.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


async def _list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_TOOL])


async def _call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name != "echo":
        return types.CallToolResult(
            content=[types.TextContent(text=f"unknown tool {params.name}")], is_error=True
        )
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(text=text)])


server: Server[Any] = Server(
    "echo", version="1.0.0", on_list_tools=_list_tools, on_call_tool=_call_tool
)


async def _run_stdio() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _run_http(port: int, json_response: bool, stateless: bool = False) -> None:
    import uvicorn

    app = server.streamable_http_app(json_response=json_response, stateless_http=stateless,
                                     host="127.0.0.1")
    # Access logs are off for every HTTP server in the suite: a log line per request
    # would measure the terminal, not the server.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    args = sys.argv[1:] or ["stdio"]
    if args[0] == "http":
        _run_http(int(args[1]), json_response="--sse" not in args,
                  stateless="--stateless" in args)
    else:
        anyio.run(_run_stdio)
