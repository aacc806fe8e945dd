"""A tiny server written with the official Python SDK (``mcp`` 2.x ``MCPServer``).

Run over stdio by tests/interop/test_sdk_server_stdio.py, which drives it with
mcpactor's client:

    python tests/interop/sdk_mcpserver.py
"""

from __future__ import annotations

from typing import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(
    "sdk-interop-server", version="9.9.9", instructions="An SDK server for interop tests."
)


class Weather(TypedDict):
    """Structured tool output (the SDK derives an outputSchema from it)."""

    city: str
    temperature: float
    conditions: str


@server.tool()
def greet(name: str) -> str:
    """Say hello to someone."""
    return f"Hello, {name}!"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (structured output, wrapped as {"result": ...})."""
    return a + b


@server.tool()
def weather(city: str) -> Weather:
    """Made-up weather for a city (structured output)."""
    return Weather(city=city, temperature=21.5, conditions="Sunny")


@server.tool()
async def count_up(steps: int, ctx: Context) -> str:
    """Report progress for each step, then finish."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted to {steps}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails (an isError result carrying `reason`)."""
    raise ToolError(reason)


@server.resource("sdk://greeting", mime_type="text/plain")
def greeting() -> str:
    """A static text resource."""
    return "Greetings from the SDK server."


@server.resource("sdk://items/{item_id}", mime_type="application/json")
def item(item_id: str) -> str:
    """A templated resource."""
    return '{"id": "' + item_id + '", "kind": "item"}'


@server.prompt()
def review(language: str, code: str) -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n{code}"


if __name__ == "__main__":
    server.run("stdio")
