"""A server with two handler slots, for the head-of-line tests (also run as a real
stdio subprocess: ``python tests/session/hol_server.py``)."""

from __future__ import annotations

import trio

from mcpactor import Context, Limits, Server

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


def make_server(max_concurrent: int = 2, max_queued: int = 16) -> Server:
    """Handlers that wait for the client (``ask``) or for ever (``hang``)."""
    server = Server("hol", "1.0", limits=Limits(max_concurrent_requests=max_concurrent,
                                                 max_queued_requests=max_queued))

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Elicit a name from the client: needs the reader to route the answer."""
        result = await ctx.elicit("your name?", NAME_SCHEMA, timeout=20)
        return f"hello {(result.content or {}).get('name')}"

    @server.tool()
    async def hang() -> str:
        """Wait until cancelled."""
        await trio.sleep_forever()
        return "unreachable"

    @server.tool()
    async def quick() -> str:
        """Answer at once."""
        return "quick"

    return server


server = make_server()

if __name__ == "__main__":
    server.run()
