"""A FastMCP-style server's handler code runs unchanged: the names it uses for the
context (``ctx.read_resource``, ``ctx.elicit(..., response_type=...)``,
``ctx.lifespan_context``) and for composition (``mount(..., namespace=...)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from mcpactor import ClientHandlers, Context, ResourceNotFound, Server
from mcpactor.protocol import types as t
from mcpactor.testing import open_client


@dataclass
class Answer:
    name: str


def ported() -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        yield {"greeting": "hello"}

    mcp = Server("ported", lifespan=lifespan)
    sub = Server("sub")

    @sub.resource("data://config")
    async def config() -> str:
        return "mounted config"

    @mcp.resource("data://motd")
    async def motd() -> str:
        return "message of the day"

    @mcp.tool()
    async def summary(ctx: Context) -> str:
        own = await ctx.read_resource("data://motd")
        mounted = await ctx.read_resource("data://sub/config")
        texts = [c.text for c in [*own, *mounted] if isinstance(c, t.TextResourceContents)]
        return f"{ctx.lifespan_context['greeting']}: " + " / ".join(texts)

    @mcp.tool()
    async def missing(ctx: Context) -> str:
        try:
            await ctx.read_resource("data://nothing")
        except ResourceNotFound as exc:
            return f"not found: {exc.uri}"
        return "found?"

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        result = await ctx.elicit("Your name?", response_type=Answer)
        return result.data.name if result.action == "accept" and result.data else result.action

    mcp.mount(sub, namespace="sub")
    return mcp


async def test_fastmcp_style_handlers_run_unchanged() -> None:
    async def elicitation(params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async with open_client(ported(), handlers=ClientHandlers(elicitation=elicitation)) as client:
        summary = await client.call_tool("summary", {})
        assert summary.content[0].text == "hello: message of the day / mounted config"  # type: ignore[union-attr]
        missing = await client.call_tool("missing", {})
        assert missing.content[0].text == "not found: data://nothing"  # type: ignore[union-attr]
        asked = await client.call_tool("ask", {})
        assert asked.content[0].text == "Ada"  # type: ignore[union-attr]


async def test_elicit_takes_the_schema_once() -> None:
    server = Server("x")

    @server.tool
    async def both(ctx: Context) -> str:
        with pytest.raises(TypeError, match="not both"):
            await ctx.elicit("?", Answer, response_type=Answer)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match="needs what to ask for"):
            await ctx.elicit("?")  # type: ignore[call-overload]
        return "checked"

    async with open_client(server) as client:
        assert (await client.call_tool("both", {})).content[0].text == "checked"  # type: ignore[union-attr]
