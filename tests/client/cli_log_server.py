"""A stdio server for ``mcpactor call``'s handling of the server's stderr: a tool that
succeeds, and one that raises (the server logs the traceback on its stderr)."""

from __future__ import annotations

from mcpactor import Server

server = Server("cli-log", version="1")


@server.tool
async def fine() -> str:
    """Answer."""
    return "fine"


@server.tool
async def boom() -> str:
    """Raise: the server logs why, with a traceback, on its stderr."""
    raise RuntimeError("kaboom")


if __name__ == "__main__":
    server.run()
