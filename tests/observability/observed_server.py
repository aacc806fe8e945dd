"""The server the cross-process observability tests run (``mcpactor run ... --otel``)."""

from __future__ import annotations

import trio
from opentelemetry import trace

from mcpactor import Context, Server

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
