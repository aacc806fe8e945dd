"""Peer: the ``fastmcp`` package serving one ``echo`` tool.

``python echo_fastmcp.py [stdio | http PORT [--sse]]``; HTTP uses JSON responses
unless ``--sse`` is given (see echo_sdk_lowlevel.py for why).
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP

server = FastMCP("echo", version="1.0.0")


@server.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    args = sys.argv[1:] or ["stdio"]
    if args[0] == "http":
        server.run(
            "http",
            show_banner=False,
            host="127.0.0.1",
            port=int(args[1]),
            log_level="warning",
            json_response="--sse" not in args,
            uvicorn_config={"access_log": False},
        )
    else:
        server.run("stdio", show_banner=False, log_level="WARNING")
