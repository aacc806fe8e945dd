"""Client handlers: typed params, an optional context from the client layer, and a
clear TypeError for a handler that cannot be called, when it is registered."""

from __future__ import annotations

from typing import Any

import pytest

import mcpactor
from mcpactor import ClientHandlers, Context, HandlerContext, RequestError, Server
from mcpactor.protocol import types as t
from mcpactor.testing import open_client


def asking_server() -> Server:
    server = Server("asks", "3.1")

    @server.tool
    async def ask(ctx: Context) -> str:
        """Sample, elicit and list roots."""
        sampled = await ctx.sample("2+2?", max_tokens=5)
        answer = await ctx.elicit("Name?", {"type": "object",
                                            "properties": {"name": {"type": "string"}}})
        roots = await ctx.list_roots()
        assert isinstance(sampled.content, t.TextContent)
        return f"{sampled.content.text}|{(answer.content or {}).get('name')}|{roots[0].uri}"

    return server


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_handlers_take_typed_params_and_optionally_a_context(mode: str, version: str
                                                                   ) -> None:
    """The same handlers answer the server's requests (handshake) and its input rounds
    (2026-07-28, where the request id is the input's key)."""
    seen: dict[str, Any] = {}

    async def sampling(params: t.CreateMessageRequestParams, ctx: HandlerContext
                       ) -> t.CreateMessageResult:
        seen["sampling"] = (type(params), ctx.method, ctx.server_info["name"],
                            ctx.protocol_version, isinstance(ctx.request_id, int),
                            ctx.cancelled, ctx.meta)
        return t.CreateMessageResult(role="assistant", content=t.TextContent(text="4"), model="m")

    def elicitation(params: t.ElicitRequestParams) -> t.ElicitResult:  # sync is fine too
        seen["elicitation"] = type(params)
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(ctx: HandlerContext) -> list[t.Root]:
        seen["roots"] = ctx.method
        return [t.Root(uri="file:///work")]

    handlers = ClientHandlers(sampling=sampling, elicitation=elicitation, roots=roots)
    async with open_client(asking_server(), handlers=handlers, mode=mode) as c:
        res = await c.call_tool("ask")
        assert res.content[0] == t.TextContent(text="4|Ada|file:///work")
    assert seen == {
        "sampling": (t.CreateMessageRequestParams, "sampling/createMessage", "asks",
                     version, mode == "legacy", False, None),
        "elicitation": t.ElicitRequestFormParams,
        "roots": "roots/list",
    }


async def test_roots_providers_without_a_context_still_work() -> None:
    async def sampling(params: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}

    async def elicitation(params: Any, ctx: Any = None) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Bo"}}

    async def roots() -> list[t.Root]:
        return [t.Root(uri="file:///r")]

    handlers = ClientHandlers(sampling=sampling, elicitation=elicitation, roots=roots)
    async with open_client(asking_server(), handlers=handlers) as c:
        res = await c.call_tool("ask")
        assert res.content[0] == t.TextContent(text="4|Bo|file:///r")


async def _three(params: Any, ctx: Any, extra: Any) -> t.ElicitResult:
    return t.ElicitResult(action="decline")


async def _none() -> t.ElicitResult:
    return t.ElicitResult(action="decline")


async def _keyword(params: Any, *, mode: str) -> t.ElicitResult:
    return t.ElicitResult(action="decline")


@pytest.mark.parametrize(("field", "handler", "said"), [
    ("elicitation", _none, "_none() cannot be called as the handler is (it takes no arg"),
    ("elicitation", _three, "it needs 3 positional arguments"),
    ("elicitation", _keyword, "it needs keyword-only argument(s) mode"),
    ("sampling", "not callable", "takes async def sampling(params"),
    ("roots", _three, "expected a list of Root, or async def roots(ctx"),
    ("on_log", _none, "expected a callback(params)"),
])
def test_a_handler_with_the_wrong_signature_is_refused_when_registered(
    field: str, handler: Any, said: str
) -> None:
    with pytest.raises(TypeError) as info:
        ClientHandlers(**{field: handler})
    message = str(info.value)
    assert message.startswith(f"ClientHandlers({field}=...)"), message
    assert said in message, message


def test_setting_a_handler_later_is_checked_too() -> None:
    handlers = ClientHandlers()
    with pytest.raises(TypeError, match=r"ClientHandlers\(elicitation=\.\.\.\)"):
        handlers.elicitation = _none  # type: ignore[assignment]


def test_client_names_are_exported_at_the_top_level() -> None:
    from mcpactor.protocol.errors import RequestError as Original

    assert RequestError is Original and mcpactor.RequestError is Original
    assert mcpactor.HandlerContext is HandlerContext
    for name in ("RequestError", "ResourceNotFound", "ElicitationResult", "HandlerContext"):
        assert name in mcpactor.__all__
