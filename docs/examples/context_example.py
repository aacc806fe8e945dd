"""docs/guide/context.md: what a handler can do while it answers (``ctx: Context``)."""

from dataclasses import dataclass
from typing import Any

import trio

from mcpactor import Client, ClientHandlers, Context, Server
from mcpactor.protocol import types as t

server = Server("context-example", version="1.0.0")


@server.tool
async def long_job(steps: int, ctx: Context) -> str:
    """Progress and log messages while it works."""
    await ctx.info(f"starting {steps} steps")  # filtered by the client's logging/setLevel
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await trio.sleep(0.01)
    return f"done in {steps} steps"


@dataclass
class Booking:
    date: str
    guests: int


@server.tool
async def book(ctx: Context) -> str:
    """Ask the user (elicitation) with a typed form; then ask the model (sampling)."""
    answer = await ctx.elicit("Which date, and for how many?", Booking)
    if answer.action != "accept" or answer.data is None:
        return f"no booking ({answer.action})"
    reply = await ctx.sample(f"Write a one-line confirmation for {answer.data.guests} "
                             f"guests on {answer.data.date}", max_tokens=50)
    text = reply.content.text if isinstance(reply.content, t.TextContent) else ""
    return f"booked {answer.data.date} for {answer.data.guests}: {text}"


@server.tool
async def where(ctx: Context) -> list[str]:
    """The client's roots, and what the context knows about the request."""
    roots = await ctx.list_roots()
    assert ctx.method == "tools/call" and ctx.request_id is not None and ctx.session_id
    return [root.uri for root in roots]


async def elicitation(params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"date": "2026-12-24", "guests": 4})


async def sampling(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", model="stub",
                                 content=t.TextContent(text="See you then!"))


#: What the client answers with (the docs tests connect with these).
handlers = ClientHandlers(elicitation=elicitation, sampling=sampling,
                          roots=[t.Root(uri="file:///home/ada/project")])


async def demo(client: Client) -> None:
    progress: list[float] = []
    result = await client.call_tool("long_job", {"steps": 3}, timeout=10,
                                    on_progress=lambda p, total, msg: progress.append(p))
    assert result.content[0].text == "done in 3 steps"  # type: ignore[union-attr]
    assert progress == [1, 2, 3]

    booked = await client.call_tool("book", {})
    assert booked.content[0].text == "booked 2026-12-24 for 4: See you then!"  # type: ignore[union-attr]
    assert (await client.call_tool("where", {})).data == {"result": ["file:///home/ada/project"]}
