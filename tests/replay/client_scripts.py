"""Client code for the client-side replay tests: recorded against the race server,
then named in the trace header and run again by ``mcpactor replay``."""

from __future__ import annotations

from typing import Any

import trio

from mcpactor.client import Client, ClientHandlers
from mcpactor.client.script import ClientScript
from mcpactor.protocol.types import CreateMessageResult, ElicitResult, TextContent

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


# -- 2026-07-28 (stateless) traffic, against examples/everything_server.py ------------

#: Called once the second subscription is acknowledged (the recording test stops the
#: server there); empty in a replay.
ON_LISTENING: list[Any] = []


async def _elicit(params: Any) -> ElicitResult:
    return ElicitResult(action="accept",
                        content={"name": "Ann"} if "name" in params.message else {"color": "teal"})


async def _modern(client: Client) -> None:
    """Two input_required rounds, a listen stream that hears three changes and is left,
    and a second one that the server ends gracefully as it shuts down."""
    result = await client.call_tool("test_input_required_result_multi_round", {})
    assert result.content[0].text == "Ann likes teal"  # type: ignore[union-attr]
    async with client.listen(tools=True, resource_uris=["test://watched-resource"]) as sub:
        await client.call_tool("test_update_watched_resource", {})
        await client.call_tool("test_trigger_tool_change", {})
        await client.call_tool("test_trigger_tool_change", {})
        seen = [(await sub.next(timeout=5)).method for _ in range(3)]
        assert seen == ["notifications/resources/updated",
                        "notifications/tools/list_changed",
                        "notifications/tools/list_changed"]
    async with client.listen(prompts=True) as last:
        while ON_LISTENING:
            ON_LISTENING.pop()()
        assert [note async for note in last] == []
        assert last.ended == "complete"


#: Connected in the default mode: the discover probe is part of the recording too.
modern = ClientScript(main=_modern, handlers=ClientHandlers(elicitation=_elicit))
