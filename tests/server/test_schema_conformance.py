"""Structured results and elicitation content are checked against their schemas on both
sides (the spec: servers MUST send conforming structured results; both sides SHOULD
check elicitation content), end to end over an in-memory pair."""

from __future__ import annotations

from typing import Any

from mcpactor import ClientHandlers, Context, InvalidResult, Server
from mcpactor.protocol import types as t
from mcpactor.testing import open_client

FORM = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}},
        "required": ["age"]}
TEMPERATURE = {"type": "object", "properties": {"celsius": {"type": "number"}},
               "required": ["celsius"]}


def schema_server() -> Server:
    server = Server("schemas", "1.0")

    @server.tool(output_schema=TEMPERATURE)
    def given_schema(ok: bool) -> dict[str, Any]:
        """Returns a dict under a schema given by hand."""
        return {"celsius": 20.5} if ok else {"celsius": "warm"}

    @server.tool(output_schema=TEMPERATURE)
    def built_result(ok: bool) -> t.CallToolResult:
        """Builds its own result."""
        structured = {"celsius": 1} if ok else {"fahrenheit": 1}
        return t.CallToolResult(content=[t.TextContent(text="x")],
                                structured_content=structured)

    @server.tool()
    async def ask_age(ctx: Context) -> str:
        """Asks the user's age; reports what came back."""
        answer = await ctx.elicit("How old?", FORM)
        return f"{answer.action} {answer.content}"

    @server.tool()
    async def ask_age_carefully(ctx: Context) -> str:
        """Catches content that does not fit the form."""
        try:
            await ctx.elicit("How old?", FORM)
        except InvalidResult as exc:
            return f"refused at {exc.data['path']}: {exc.data['reason']}"
        return "fine"

    return server


def _text(result: t.CallToolResult) -> str:
    return str(getattr(result.content[0], "text", ""))


async def test_a_result_that_breaks_a_given_output_schema_is_an_error_result() -> None:
    async with open_client(schema_server()) as client:
        await client.list_tools()
        good = await client.call_tool("given_schema", {"ok": True})
        assert good.structured_content == {"celsius": 20.5} and not good.is_error
        bad = await client.call_tool("given_schema", {"ok": False})
        assert bad.is_error and bad.structured_content is None
        assert ("does not match its outputSchema: $.celsius: expected number, got string"
                in _text(bad))
        built = await client.call_tool("built_result", {"ok": True})
        assert built.structured_content == {"celsius": 1}
        broken = await client.call_tool("built_result", {"ok": False})
        assert broken.is_error
        assert "$: missing required property 'celsius'" in _text(broken)


def _eliciting(content: dict[str, Any], seen: list[str]) -> ClientHandlers:
    async def elicitation(params: Any, rc: Any) -> t.ElicitResult:
        seen.append("asked")
        return t.ElicitResult(action="accept", content=content)

    return ClientHandlers(elicitation=elicitation)


async def test_elicited_content_is_checked_by_the_server(monkeypatch: Any) -> None:
    # The client's own check is bypassed here (a client that does not check), so the
    # server's check is the one that speaks.
    import mcpactor.client.client as client_module

    monkeypatch.setattr(client_module, "_check_elicited", lambda params, result: None)
    seen: list[str] = []
    async with open_client(schema_server(), handlers=_eliciting({"age": -3}, seen)) as client:
        careful = await client.call_tool("ask_age_carefully")
        assert _text(careful) == "refused at $.age: -3 is not >= 0"
        plain = await client.call_tool("ask_age")
        assert plain.is_error
        assert "elicitation content does not match the requested schema" in _text(plain)
    assert seen == ["asked", "asked"]


async def test_elicited_content_is_checked_by_the_client_before_it_is_sent() -> None:
    seen: list[str] = []
    async with open_client(schema_server(), handlers=_eliciting({"age": "old"}, seen)) as client:
        result = await client.call_tool("ask_age")
        assert result.is_error
        # The server's request got an error answer from the client, naming the problem.
        assert "the elicitation handler's content does not match the requested schema" in (
            _text(result))
        assert "$.age: expected integer, got string" in _text(result)
    good: list[str] = []
    async with open_client(schema_server(), handlers=_eliciting({"age": 30}, good)) as client:
        assert _text(await client.call_tool("ask_age")) == "accept {'age': 30}"
