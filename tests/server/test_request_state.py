"""``requestState`` (2026-07-28 MRTR): what MRTR's page advises a server to check (the
signature, the originating request, the principal, the expiry), and the opt-in
single-use (``Server(request_state_single_use=True)``) for servers whose inputs must be
consumed at most once. The page leaves single use to such servers, so it is off by
default: a state may be presented again within its expiry."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio

from mcpactor import Context, Server
from mcpactor.protocol.errors import InvalidParams
from mcpactor.protocol.mrtr import RequestStateCodec, SpentStates
from mcpactor.transports.memory import memory_pair

KEY = b"k" * 32
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def test_a_state_opens_only_for_its_own_request_principal_and_time() -> None:
    codec = RequestStateCodec(KEY, ttl=60)
    state = codec.seal("tools/call", "d1", "alice", {"a": {"action": "accept"}}, now=1000.0)
    assert codec.open(state, "tools/call", "d1", "alice", now=1030.0) == {
        "a": {"action": "accept"}}
    for args, why in [
        (("prompts/get", "d1", "alice", 1030.0), "different request"),
        (("tools/call", "d2", "alice", 1030.0), "different request"),
        (("tools/call", "d1", "mallory", 1030.0), "different principal"),
        (("tools/call", "d1", "alice", 1061.0), "expired"),
    ]:
        with pytest.raises(InvalidParams, match=why) as info:
            codec.open(state, *args)  # type: ignore[arg-type]
        assert info.value.data == {"path": "params.requestState"}
    body, mac = state.split(".")
    with pytest.raises(InvalidParams, match="signature"):
        codec.open(body[:-2] + "AA." + mac, "tools/call", "d1", "alice", now=1030.0)
    with pytest.raises(InvalidParams, match="signature"):
        RequestStateCodec(b"x" * 32).open(state, "tools/call", "d1", "alice", now=1030.0)


def test_single_use_states() -> None:
    codec = RequestStateCodec(KEY, ttl=60)
    spent = SpentStates()
    state = codec.seal("tools/call", "d", None, {}, now=1000.0, nonce="n1")
    assert codec.open(state, "tools/call", "d", None, now=1001.0, spent=spent) == {}
    with pytest.raises(InvalidParams, match="used already"):
        codec.open(state, "tools/call", "d", None, now=1002.0, spent=spent)
    # Without a spent table the same state opens again (the default: reusable in TTL).
    assert codec.open(state, "tools/call", "d", None, now=1002.0) == {}
    # A state sealed without an id cannot be taken once.
    plain = codec.seal("tools/call", "d", None, {}, now=1000.0)
    with pytest.raises(InvalidParams, match="no id"):
        codec.open(plain, "tools/call", "d", None, now=1001.0, spent=spent)
    # Ids are forgotten once their states expired: the table does not grow for ever.
    assert len(spent) == 1
    assert spent.take("n2", 1100, now=1200.0)
    assert len(spent) == 1


def _server(single_use: bool) -> Server:
    server = Server("state-server", version="1.0.0", request_state_key=KEY,
                    request_state_single_use=single_use)

    @server.tool()
    async def two_steps(ctx: Context) -> str:
        """Asks twice."""
        schema = {"type": "object", "properties": {"v": {"type": "string"}}}
        first = await ctx.elicit("first?", schema, key="one")
        second = await ctx.elicit("second?", schema, key="two")
        return f"{(first.content or {}).get('v')}+{(second.content or {}).get('v')}"

    return server


async def _rounds(single_use: bool) -> list[dict[str, Any]]:
    """Round one, its retry, then that same retry once more; the three answers."""
    ours, theirs = memory_pair()
    session = _server(single_use).new_session(theirs)
    answers: list[dict[str, Any]] = []

    async def call(rid: int, extra: dict[str, Any]) -> dict[str, Any]:
        params = {"name": "two_steps", "arguments": {}, "_meta": META, **extra}
        await ours.send([(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                        "params": params}), None)])
        reply: dict[str, Any] = orjson.loads(await ours.receive())
        return reply

    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        first = await call(1, {})
        assert first["result"]["resultType"] == "input_required"
        retry = {"requestState": first["result"]["requestState"],
                 "inputResponses": {"one": {"action": "accept", "content": {"v": "a"}}}}
        answers.append(await call(2, retry))
        answers.append(await call(3, retry))  # the same state presented again
        session.close("done")
    return answers


async def test_a_state_is_reusable_within_its_expiry_by_default() -> None:
    with trio.fail_after(10):
        second, again = await _rounds(single_use=False)
    assert second["result"]["resultType"] == "input_required"
    assert again["result"]["resultType"] == "input_required"
    assert set(again["result"]["inputRequests"]) == {"two"}


async def test_a_single_use_server_refuses_a_state_presented_twice() -> None:
    with trio.fail_after(10):
        second, again = await _rounds(single_use=True)
    assert second["result"]["resultType"] == "input_required"
    assert set(second["result"]["inputRequests"]) == {"two"}
    assert again["error"]["code"] == -32602
    assert "used already" in again["error"]["message"]
    assert again["error"]["data"] == {"path": "params.requestState"}
