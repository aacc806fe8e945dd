"""The server the cross-process observability tests run (``mcpactor run ... --otel``)."""

from __future__ import annotations

import trio
from opentelemetry import trace

from mcpactor import Context, Server, observability

server = Server("observed-server", version="1.0.0")
_tracer = trace.get_tracer("observed-server-code")


@server.tool
async def lookup(city: str) -> str:
    """A tool whose code makes a span of its own (it must nest under the server span)."""
    with _tracer.start_as_current_span("db.lookup") as span:
        span.set_attribute("city", city)
        await trio.sleep(0.01)
        return f"{city}: sunny"


@server.tool
async def steps(n: int, ctx: Context) -> str:
    """Progress, then done."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return "done"


#: MCP tasks in progress, as a tasks feature would count them (the gauge hook's test).
RUNNING: list[int] = [0]


@server.tool
async def hold(seconds: float) -> str:
    """Holds a handler slot (and counts as a running task) for a while."""
    RUNNING[0] += 1
    try:
        await trio.sleep(seconds)
    finally:
        RUNNING[0] -= 1
    return "held"


observability.register_gauge("mcpactor_tasks_running", "MCP tasks in progress",
                             lambda: RUNNING[0])
