"""Client code for the client-side replay tests: recorded against the race server,
then named in the trace header and run again by ``mcpactor replay``."""

from __future__ import annotations

from typing import Any

import trio

from mcpactor.client import Client, ClientHandlers
from mcpactor.client.script import ClientScript
from mcpactor.protocol.types import CreateMessageResult, TextContent

#: What the sampling handler was asked, run by run (the replay runs it again).
SAMPLED: list[str] = []


async def main(client: Client) -> None:
    """One call, then two at once whose answers come back in the reverse order."""
    await client.call_tool("quick", {})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.call_tool, "sleepy", {"seconds": 0.2})
        nursery.start_soon(client.call_tool, "sleepy", {"seconds": 0.01})


async def changed(client: Client) -> None:
    """``main`` after a change: the first call asks for something else."""
    await client.call_tool("sleepy", {"seconds": 0.0})


async def _sample(params: Any, ctx: Any) -> CreateMessageResult:
    SAMPLED.append(params.messages[0].content.text)
    return CreateMessageResult(role="assistant", content=TextContent(text="42"),
                               model="test-model")


async def _ask(client: Client) -> None:
    await client.call_tool("ask_model", {"prompt": "six times seven?"})


#: The server asks this client's model (sampling) in the middle of a call.
sampling = ClientScript(main=_ask, handlers=ClientHandlers(sampling=_sample))


async def one_at_a_time(client: Client) -> list[str]:
    """Three calls in turn; returns their texts (the replay ignores what main returns)."""
    texts = []
    for name, args in (("quick", {}), ("sleepy", {"seconds": 0.1}), ("roll", {"sides": 6})):
        result = await client.call_tool(name, args)
        texts.append(str(getattr(result.content[0], "text", "")))
    return texts


def not_async(client: Client) -> None:
    """A mistake: client code must be ``async def``."""
