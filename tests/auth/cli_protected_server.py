"""A server for `mcpactor run --auth-*` tests: its tool shows what the token says."""

from __future__ import annotations

from mcpactor import Context, Server

server = Server("cli-protected", version="1.0.0")


@server.tool()
async def whoami(ctx: Context) -> str:
    """The token's subject and scopes."""
    auth = ctx.auth
    return "anonymous" if auth is None else f"{auth.subject} {' '.join(sorted(auth.scopes))}"
