"""docs/guide/middleware.md: code around every request: logging, timing, rate limits,
access checks, results changed on the way out."""

import logging
from typing import Any

import attrs

from mcpactor import Client, McpError, Middleware, MiddlewareContext, RequestError, Server
from mcpactor.protocol import types as t
from mcpactor.server import CallNext, LoggingMiddleware, RateLimit, TimingMiddleware

server = Server("middleware-example", version="1.0.0")
timings: list[tuple[str, float]] = []


@server.tool
async def echo(text: str) -> str:
    return text


@server.tool
async def delete_everything() -> str:
    return "gone"


class AdminOnly(Middleware):
    """Tools whose name starts with delete_ need _meta.role == "admin"; other callers
    do not even see them listed."""

    async def on_call_tool(self, ctx: MiddlewareContext[t.CallToolRequestParams],
                           call_next: CallNext) -> Any:
        if ctx.params.name.startswith("delete_") and not _admin(ctx):
            raise McpError("Forbidden: admins only", code=-32003)  # the request's error
        return await call_next(ctx)

    async def on_list_tools(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        result = await call_next(ctx)
        if _admin(ctx):
            return result
        return attrs.evolve(result, tools=[x for x in result.tools
                                           if not x.name.startswith("delete_")])


def _admin(ctx: MiddlewareContext[Any]) -> bool:
    return bool((ctx.raw_params or {}).get("_meta", {}).get("role") == "admin")


async def redact(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
    """A plain function works too: change what the handler returned."""
    result = await call_next(ctx)
    if ctx.method == "tools/call" and isinstance(result, t.CallToolResult):
        content = [attrs.evolve(c, text=c.text.replace("secret", "******"))
                   if isinstance(c, t.TextContent) else c for c in result.content]
        return attrs.evolve(result, content=content)
    return result


# The first added is the outermost.
server.add_middleware(LoggingMiddleware(logging.getLogger("example.requests")))
server.add_middleware(TimingMiddleware(lambda ctx, seconds: timings.append((ctx.method, seconds))))
server.add_middleware(RateLimit(1, burst=5, methods=["tools/call"]))  # per session
server.add_middleware(AdminOnly())
server.add_middleware(redact)


async def demo(client: Client) -> None:
    said = await client.call_tool("echo", {"text": "my secret"})
    assert said.content[0].text == "my ******"  # type: ignore[union-attr]

    assert [x.name for x in await client.list_all_tools()] == ["echo"]
    admin = {"role": "admin"}
    listed = await client.request("tools/list", {"_meta": admin})
    assert [x.name for x in listed.tools] == ["echo", "delete_everything"]
    try:
        await client.call_tool("delete_everything", {})
        raise AssertionError("expected a refusal")
    except RequestError as exc:
        assert exc.code == -32003
    done = await client.call_tool("delete_everything", {}, meta=admin)
    assert done.content[0].text == "gone"  # type: ignore[union-attr]

    refused = 0
    for _ in range(10):  # past the burst of 5, faster than one a second
        try:
            await client.call_tool("echo", {"text": "x"})
        except RequestError as exc:
            assert exc.code == -32005 and "retryAfter" in exc.data
            refused += 1
    assert refused > 0
