"""The remote server the proxy tests put behind ``Server.as_proxy``."""

from typing import Any

import trio

from mcpactor import Context, McpError, Server
from mcpactor.protocol import types as t

server = Server("upstream", version="2.0")
#: Set by a test of this process to hear that ``sleepy`` was cancelled.
on_cancel: trio.Event | None = None


@server.tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool
async def count(n: int, ctx: Context) -> str:
    """Counts, reporting progress and logging."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
        await ctx.info(f"step {i + 1}")
    return f"counted to {n}"


@server.tool
async def ask(ctx: Context) -> str:
    """Asks the user, then the model."""
    answer = await ctx.elicit("Your name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}}})
    name = (answer.content or {}).get("name") if answer.action == "accept" else None
    sampled = await ctx.sample(f"Greet {name}", max_tokens=10)
    return f"{answer.action}: {name}; model: {sampled.content.text}"  # type: ignore[union-attr]


@server.tool
async def where(ctx: Context) -> list[str]:
    """The client's roots."""
    return [root.uri for root in await ctx.list_roots()]


@server.tool
async def survey(ctx: Context) -> str:
    """Two questions at once (one input round in 2026-07-28), then a third."""
    both = await ctx.ask({
        "name": ("elicitation/create", {
            "message": "Your name?", "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string"}}}}),
        "model": ("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
            "maxTokens": 5}),
    })
    roots = await ctx.list_roots()
    name = both["name"].get("content", {}).get("name")
    return f"{name}; {both['model']['content']['text']}; {len(roots)} root(s)"


@server.tool
async def era(ctx: Context) -> str:
    """The protocol version of the request (the proxy's upstream connection's)."""
    return ctx.protocol_version or "none"


@server.tool
async def touch(uri: str, ctx: Context) -> str:
    """Tells whoever listens that a resource changed."""
    await ctx.notify_resource_updated(uri)
    return "touched"


@server.tool
async def crash() -> str:
    """Ends the server's process at once (a crash, as the proxy sees it)."""
    import os

    os._exit(3)


@server.tool
async def refuse() -> str:
    """Fails with a protocol error of its own."""
    raise McpError("Quota exhausted", code=-32050, data={"retry": False})


@server.tool
async def session_id(ctx: Context) -> str:
    """The upstream session's id."""
    return ctx.session_id


@server.tool
async def sleepy(seconds: float) -> str:
    """Sleeps (to be cancelled)."""
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        if on_cancel is not None:
            on_cancel.set()
        raise
    return "woke"


@server.resource("file:///readme", mime_type="text/plain")
async def readme() -> str:
    return "read me"


@server.resource("file:///docs/{page}")
async def docs(page: str) -> str:
    return f"page {page}"


@server.prompt
async def review(code: str) -> str:
    """Review some code."""
    return f"Please review: {code}"


@server.completion
async def complete(ref: Any, argument: t.CompletionArgument, context: Any) -> list[str]:
    return [v for v in ("python", "perl") if v.startswith(argument.value)]
