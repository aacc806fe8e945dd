"""Server features end to end over an in-memory pair: our server, our client."""

from __future__ import annotations

from typing import Any, TypedDict

import attrs
import pytest

from mcpactor import (
    CapabilityNotSupported,
    ClientHandlers,
    Context,
    Image,
    McpError,
    Server,
    ToolError,
)
from mcpactor.protocol import types as t
from mcpactor.server.content import resource_contents
from mcpactor.testing import open_client


class Weather(TypedDict):
    city: str
    celsius: float


@attrs.frozen
class Point:
    x: int
    y: int


def feature_server() -> Server:
    server = Server("features", "2.0", title="Features", instructions="be nice", page_size=2)

    @server.tool(title="Weather", annotations={"readOnlyHint": True})
    async def weather(city: str) -> Weather:
        """Weather for a city."""
        return {"city": city, "celsius": 21.5}

    @server.tool()
    def point(x: int, y: int) -> Point:
        """A sync tool returning an attrs class."""
        return Point(x, y)

    @server.tool()
    async def picture() -> list[Any]:
        """Text and an image."""
        return ["here:", Image(b"\x89PNG fake", "image/png")]

    @server.tool()
    async def refuse() -> str:
        """Always refuses."""
        raise ToolError("not today")

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Sample, elicit and list roots."""
        sampled = await ctx.sample("2+2?", max_tokens=5)
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        roots = await ctx.list_roots()
        assert isinstance(sampled.content, t.TextContent)
        return f"{sampled.content.text}|{answer.action}:{(answer.content or {}).get('name')}|{roots[0].uri}"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log at every level."""
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, {"level": level}, logger="chatty")
        return "logged"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Announce that a resource changed."""
        await ctx.notify_resource_updated(uri)
        return "touched"

    @server.resource("mem://text", mime_type="text/plain", description="Some text", size=5)
    async def text() -> str:
        return "hello"

    @server.resource("mem://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01\x02"

    @server.resource("mem://formats", is_collection=False)
    async def formats() -> list[Any]:
        return [
            resource_contents("mem://formats", "plain", "text/plain"),
            resource_contents("mem://formats", b"\x01", "application/octet-stream"),
        ]

    @server.resource("mem://liar", is_collection=False)
    async def liar() -> list[Any]:
        return [resource_contents("mem://other", "x")]

    @server.resource("mem://dir/", is_collection=True, mime_type="inode/directory")
    async def directory() -> list[Any]:
        return [resource_contents("mem://dir/a", "A"), resource_contents("mem://dir/b", "B")]

    @server.resource_template("mem://users/{user_id}/profile", mime_type="application/json")
    async def profile(user_id: int) -> str:
        """A user's profile."""
        return f'{{"id": {user_id}}}'

    @server.prompt(title="Greeting")
    async def greet(name: str, punctuation: str = "!") -> str:
        """Greet someone."""
        return f"Hello {name}{punctuation}"

    @server.prompt()
    async def conversation(topic: str) -> list[Any]:
        """A two-message prompt with an image."""
        return [("user", f"Tell me about {topic}"), ("assistant", Image(b"img", "image/gif"))]

    @server.completion()
    async def complete(ref: Any, argument: t.CompletionArgument, context: Any) -> list[str]:
        names = ["alice", "albert", "bob"]
        prefix = argument.value
        if context is not None and context.arguments:
            prefix = context.arguments.get("prefix", prefix)
        return [n for n in names if n.startswith(prefix)]

    for i in range(5):
        server.tool(name=f"extra.tool-{i}")(_make_extra(i))
    return server


def _make_extra(i: int) -> Any:
    async def extra() -> str:
        """An extra tool for pagination."""
        return str(i)

    return extra


async def test_initialize_exposes_info_capabilities_and_instructions() -> None:
    async with open_client(feature_server()) as c:
        assert c.server_info == {"name": "features", "version": "2.0", "title": "Features"}
        assert c.instructions == "be nice"
        caps = c.server_capabilities
        assert set(caps) == {"tools", "resources", "prompts", "completions", "logging"}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}


async def test_tools_pagination_with_opaque_cursors() -> None:
    async with open_client(feature_server()) as c:
        first = await c.list_tools()
        assert len(first.tools) == 2 and first.next_cursor
        assert "o:" not in first.next_cursor  # opaque, not a raw offset
        everything = await c.list_all_tools()
        names = [x.name for x in everything]
        assert len(names) == len(set(names)) == 12
        assert "extra.tool-4" in names
        with pytest.raises(McpError) as info:
            await c.list_tools("garbage-cursor")
        assert info.value.code == -32602


async def test_structured_outputs_have_schemas_and_text_copies() -> None:
    async with open_client(feature_server()) as c:
        tools = {x.name: x for x in await c.list_all_tools()}
        w = tools["weather"]
        assert w.title == "Weather" and w.annotations == t.ToolAnnotations(read_only_hint=True)
        assert w.output_schema is not None and set(w.output_schema["properties"]) == {"city", "celsius"}
        res = await c.call_tool("weather", {"city": "Oslo"})
        assert res.structured_content == {"city": "Oslo", "celsius": 21.5}
        assert res.content[0].text == '{"city":"Oslo","celsius":21.5}'  # type: ignore[union-attr]
        res = await c.call_tool("point", {"x": 1, "y": 2})
        assert res.structured_content == {"x": 1, "y": 2}


async def test_content_errors_and_unknown_tools() -> None:
    async with open_client(feature_server()) as c:
        tools = {x.name: x for x in await c.list_all_tools()}
        assert tools["picture"].output_schema is None  # list[Any] means content items
        res = await c.call_tool("picture")
        assert res.structured_content is None
        assert [type(x) for x in res.content] == [t.TextContent, t.ImageContent]
        assert res.content[1].mime_type == "image/png"  # type: ignore[union-attr]
        res = await c.call_tool("refuse")
        assert res.is_error is True and res.content[0].text == "not today"  # type: ignore[union-attr]
        res = await c.call_tool("weather", {})
        assert res.is_error is True and "city" in res.content[0].text  # type: ignore[union-attr]
        with pytest.raises(McpError) as info:
            await c.call_tool("does-not-exist")
        assert info.value.code == -32602


async def test_server_to_client_requests_through_registered_handlers() -> None:
    asked: list[str] = []

    async def sampling(params: t.CreateMessageRequestParams, rc: Any) -> t.CreateMessageResult:
        asked.append("sampling")
        assert params.max_tokens == 5
        return t.CreateMessageResult(role="assistant", content=t.TextContent(text="4"), model="m")

    async def elicitation(params: Any, rc: Any) -> t.ElicitResult:
        asked.append("elicitation")
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    handlers = ClientHandlers(
        sampling=sampling, elicitation=elicitation, roots=[t.Root(uri="file:///work", name="work")]
    )
    async with open_client(feature_server(), handlers=handlers) as c:
        res = await c.call_tool("ask")
        assert res.content[0].text == "4|accept:Ada|file:///work"  # type: ignore[union-attr]
    assert asked == ["sampling", "elicitation"]


async def test_undeclared_client_capability_is_an_error_result_not_a_hang() -> None:
    async with open_client(feature_server()) as c:
        res = await c.call_tool("ask")
        assert res.is_error is True and "'sampling' capability" in res.content[0].text  # type: ignore[union-attr]


async def test_capability_error_type() -> None:
    server = Server("s")

    @server.tool()
    async def needs_roots(ctx: Context) -> str:
        """Lists roots."""
        try:
            await ctx.list_roots()
        except CapabilityNotSupported as exc:
            return f"refused: {exc}"
        return "listed"

    async with open_client(server) as c:
        res = await c.call_tool("needs_roots")
        assert res.content[0].text.startswith("refused:")  # type: ignore[union-attr]


async def test_logging_levels_filter_messages() -> None:
    got: list[Any] = []
    async with open_client(feature_server(), handlers=ClientHandlers(on_log=got.append)) as c:
        await c.call_tool("chatty")
        await c.set_logging_level("warning")
        await c.call_tool("chatty")
        await c.ping()
        with pytest.raises(McpError):
            await c.set_logging_level("loud")
    levels = [m.level for m in got]
    assert levels == ["debug", "info", "warning", "error", "warning", "error"]
    assert got[0].logger == "chatty" and got[0].data == {"level": "debug"}


async def test_resources_text_blob_templates_and_metadata() -> None:
    async with open_client(feature_server()) as c:
        listed = []
        cursor = None
        while True:
            page = await c.list_resources(cursor)
            listed.extend(page.resources)
            cursor = page.next_cursor
            if not cursor:
                break
        assert {r.uri for r in listed} >= {"mem://text", "mem://blob", "mem://dir/"}
        templates = await c.list_resource_templates()
        assert templates.resource_templates[0].uri_template == "mem://users/{user_id}/profile"
        text = (await c.read_resource("mem://text")).contents[0]
        # SEP-2093: contents carry the resource's metadata
        assert isinstance(text, t.TextResourceContents)
        assert (text.text, text.mime_type, text.name, text.description) == ("hello", "text/plain", "text", "Some text")
        blob = (await c.read_resource("mem://blob")).contents[0]
        assert isinstance(blob, t.BlobResourceContents) and blob.blob == "AAEC"
        prof = (await c.read_resource("mem://users/7/profile")).contents[0]
        assert isinstance(prof, t.TextResourceContents) and prof.text == '{"id": 7}'
        meta = await c.resource_metadata("mem://text")
        assert meta.resource.uri == "mem://text" and meta.resource.size == 5
        meta = await c.resource_metadata("mem://users/9/profile")
        assert meta.resource.uri == "mem://users/9/profile" and meta.resource.mime_type == "application/json"
        # 2025-11-25's resources page: -32002; SEP-2093's resources/metadata: -32602.
        for call, code in ((c.read_resource, -32002), (c.resource_metadata, -32602)):
            with pytest.raises(McpError) as info:
                await call("mem://missing")
            assert info.value.code == code and info.value.data == {"uri": "mem://missing"}
        with pytest.raises(McpError) as info:
            await c.read_resource("mem://users/not-a-number/profile")
        assert info.value.code == -32602


async def test_collection_rules() -> None:
    async with open_client(feature_server()) as c:
        formats = (await c.read_resource("mem://formats")).contents
        assert {x.uri for x in formats} == {"mem://formats"} and len(formats) == 2
        children = (await c.read_resource("mem://dir/")).contents
        assert [x.uri for x in children] == ["mem://dir/a", "mem://dir/b"]
        with pytest.raises(McpError) as info:
            await c.read_resource("mem://liar")
        assert info.value.code == -32603


async def test_subscriptions_and_list_changed() -> None:
    updates: list[Any] = []
    changed: list[str] = []
    server = feature_server()
    handlers = ClientHandlers(
        on_resource_updated=updates.append, on_tools_changed=lambda p: changed.append("tools")
    )
    async with open_client(server, handlers=handlers) as c:
        await c.call_tool("touch", {"uri": "mem://text"})  # not subscribed yet
        await c.subscribe("mem://text")
        await c.call_tool("touch", {"uri": "mem://text"})
        await c.call_tool("touch", {"uri": "mem://blob"})
        await c.unsubscribe("mem://text")
        await c.call_tool("touch", {"uri": "mem://text"})
        server.remove_tool("refuse")
        await server.notify_tools_list_changed()
        await c.ping()
        names = [x.name for x in await c.list_all_tools()]
    assert [u.uri for u in updates] == ["mem://text"]
    assert changed == ["tools"] and "refuse" not in names


async def test_prompts_with_arguments_and_content() -> None:
    async with open_client(feature_server()) as c:
        prompts = (await c.list_prompts()).prompts
        greet = next(p for p in prompts if p.name == "greet")
        assert greet.title == "Greeting"
        assert [(a.name, a.required) for a in greet.arguments or []] == [("name", True), ("punctuation", False)]
        res = await c.get_prompt("greet", {"name": "Ada"})
        assert res.messages[0].content.text == "Hello Ada!"  # type: ignore[union-attr]
        res = await c.get_prompt("conversation", {"topic": "owls"})
        assert [m.role for m in res.messages] == ["user", "assistant"]
        assert isinstance(res.messages[1].content, t.ImageContent)
        with pytest.raises(McpError) as info:
            await c.get_prompt("greet", {})
        assert info.value.code == -32602 and info.value.data["missing"] == ["name"]
        with pytest.raises(McpError) as info:
            await c.get_prompt("nope")
        assert info.value.code == -32602


async def test_completion_with_context() -> None:
    async with open_client(feature_server()) as c:
        ref = {"type": "ref/prompt", "name": "greet"}
        res = await c.complete(ref, {"name": "name", "value": "al"})
        assert res.completion.values == ["alice", "albert"] and res.completion.total == 2
        res = await c.complete(ref, {"name": "name", "value": ""}, context={"arguments": {"prefix": "b"}})
        assert res.completion.values == ["bob"]


async def test_meta_and_unknown_fields_pass_through() -> None:
    server = Server("meta")

    @server.tool()
    async def show(ctx: Context) -> str:
        """Echo the request's _meta."""
        return repr(sorted((ctx.meta or {}).items()))

    async with open_client(server) as c:
        res = await c.call_tool("show", {}, meta={"trace": "abc"})
        assert res.content[0].text == "[('trace', 'abc')]"  # type: ignore[union-attr]
        raw = await c.request("tools/list", None, result_cls=None)
        assert raw.tools[0].name == "show"


async def test_content_an_older_revision_lacks_is_sent_as_text() -> None:
    from mcpactor.protocol.types import AudioContent, ResourceLink

    server = Server("compat")

    @server.tool()
    async def media() -> list[Any]:
        """Audio and a link."""
        return [AudioContent(data="AAAA", mime_type="audio/wav"), ResourceLink(uri="x://a", name="a")]

    @server.prompt()
    async def linked() -> list[Any]:
        """A prompt holding a link."""
        return [("user", ResourceLink(uri="x://b", name="b"))]

    kinds = {}
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        async with open_client(server, protocol_version=version) as c:
            res = await c.call_tool("media")
            prompt = await c.get_prompt("linked")
            kinds[version] = ([type(b).__name__ for b in res.content], type(prompt.messages[0].content).__name__)
    assert kinds["2024-11-05"] == (["TextContent", "TextContent"], "TextContent")
    assert kinds["2025-03-26"] == (["AudioContent", "TextContent"], "TextContent")
    assert kinds["2025-06-18"] == kinds["2025-11-25"] == (["AudioContent", "ResourceLink"], "ResourceLink")
