"""A server whose tool prints more than a pipe holds (``mcpactor call ... | head``)."""

from mcpactor import Server
from mcpactor.protocol import types as t

server = Server("big-output", "1.0")


@server.tool()
async def lines(n: int) -> str:
    """``n`` numbered lines."""
    return "\n".join(f"line {i}" for i in range(n))


@server.tool()
async def fail(n: int) -> t.CallToolResult:
    """Report an error of ``n`` numbered lines (as a result: nothing logged)."""
    text = "\n".join(f"error line {i}" for i in range(n))
    return t.CallToolResult(content=[t.TextContent(text=text)], is_error=True)


if __name__ == "__main__":
    server.run()
