"""``server.mount(other, prefix=...)``: another server's tools, resources, templates and
prompts under a prefix, live."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcpactor import ClientHandlers, Context, MiddlewareContext, RequestError, Server
from mcpactor.protocol import types as t
from mcpactor.server import CallNext
from mcpactor.testing import open_client


def weather() -> Server[str]:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[str]:
        yield "weather-state"

    server: Server[str] = Server("weather", lifespan=lifespan)

    @server.tool
    async def forecast(city: str, ctx: Context[str]) -> str:
        """Forecast for a city."""
        return f"sunny in {city} ({ctx.lifespan}, {ctx.server.info.name})"

    @server.resource("data://cities", mime_type="text/plain")
    async def cities() -> str:
        return "Oslo, Lima"

    @server.resource("data://city/{name}")
    async def city(name: str) -> str:
        return f"city {name}"

    @server.prompt
    async def ask(city: str) -> str:
        return f"What is the weather in {city}?"

    @server.completion
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return [c for c in ("Oslo", "Lima") if c.startswith(argument.value)]

    return server


def main_server() -> Server:
    main = Server("main")

    @main.tool
    async def hello() -> str:
        return "hello from main"

    return main


async def test_a_mounted_server_is_served_under_its_prefix() -> None:
    main = main_server()
    main.mount(weather(), prefix="weather")
    async with open_client(main) as client:
        tools = [tool.name for tool in await client.list_all_tools()]
        assert tools == ["hello", "weather_forecast"]
        result = await client.call_tool("weather_forecast", {"city": "Oslo"})
        # The child's own lifespan and server reach its handler.
        assert result.content[0].text == "sunny in Oslo (weather-state, weather)"  # type: ignore[union-attr]
        resources = [r.uri for r in await client.list_all_resources()]
        assert resources == ["data://weather/cities"]
        read = await client.read_resource("data://weather/cities")
        assert read.contents[0].uri == "data://weather/cities"
        assert read.contents[0].text == "Oslo, Lima"  # type: ignore[union-attr]
        templates = [x.uri_template for x in await client.list_all_resource_templates()]
        assert templates == ["data://weather/city/{name}"]
        read = await client.read_resource("data://weather/city/Oslo")
        assert (read.contents[0].uri, read.contents[0].text) == (  # type: ignore[union-attr]
            "data://weather/city/Oslo", "city Oslo")
        prompts = [p.name for p in await client.list_all_prompts()]
        assert prompts == ["weather_ask"]
        prompt = await client.get_prompt("weather_ask", {"city": "Lima"})
        assert prompt.messages[0].content.text == "What is the weather in Lima?"  # type: ignore[union-attr]
        done = await client.complete(t.PromptReference(name="weather_ask"),
                                     {"name": "city", "value": "O"})
        assert done.completion.values == ["Oslo"]
        with pytest.raises(RequestError) as info:
            await client.read_resource("data://weather/nowhere")
        assert info.value.data == {"uri": "data://weather/nowhere"}
        with pytest.raises(RequestError, match="Unknown tool"):
            await client.call_tool("weather_nothing", {})


async def test_the_link_is_live() -> None:
    main = main_server()
    child = Server("child", capabilities=["tools", "resources"])
    main.mount(child, prefix="kid")
    changed: list[str] = []
    updated: list[str] = []
    handlers = ClientHandlers(on_tools_changed=lambda p: changed.append("tools"),
                              on_resource_updated=lambda p: updated.append(p.uri))
    async with open_client(main, handlers=handlers) as client:
        assert [x.name for x in await client.list_all_tools()] == ["hello"]

        @child.tool
        async def late() -> str:
            return "added after mounting"

        @child.resource("mem://note")
        async def note() -> str:
            return "a note"

        await child.notify_tools_list_changed()
        assert [x.name for x in await client.list_all_tools()] == ["hello", "kid_late"]
        result = await client.call_tool("kid_late", {})
        assert result.content[0].text == "added after mounting"  # type: ignore[union-attr]
        await client.subscribe("mem://kid/note")
        await child.notify_resource_updated("mem://note")
        await client.ping()
        await trio.sleep(0.05)
    assert changed == ["tools"]
    assert updated == ["mem://kid/note"]


async def test_the_parents_own_names_win_and_mounts_nest() -> None:
    main = main_server()
    shadow = Server("shadow")

    @shadow.tool
    async def hello() -> str:
        return "hello from the mount"

    grandchild = Server("deep")

    @grandchild.tool
    async def ping() -> str:
        return "pong from deep"

    middle = Server("middle")
    middle.mount(grandchild, prefix="deep")
    main.mount(shadow)  # no prefix: same names
    main.mount(middle, prefix="mid")
    async with open_client(main) as client:
        names = [x.name for x in await client.list_all_tools()]
        assert names == ["hello", "mid_deep_ping"]
        assert (await client.call_tool("hello", {})).content[0].text == "hello from main"  # type: ignore[union-attr]
        pong = await client.call_tool("mid_deep_ping", {})
        assert pong.content[0].text == "pong from deep"  # type: ignore[union-attr]
    assert main.find_tool("mid_deep_ping") is grandchild.tools["ping"]


async def test_middleware_of_parent_and_child() -> None:
    seen: list[str] = []

    def recorder(label: str) -> Any:
        async def mw(ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
            name = getattr(ctx.params, "name", "")
            seen.append(f"{label}:{ctx.method}:{name}")
            return await call_next(ctx)
        return mw

    main = main_server()
    child = weather()
    main.add_middleware(recorder("parent"))
    child.add_middleware(recorder("child"))
    main.mount(child, prefix="w")
    async with open_client(main) as client:
        await client.call_tool("hello", {})
        await client.call_tool("w_forecast", {"city": "Oslo"})
    # The child's middleware sees its own requests, in its own names.
    assert seen == ["parent:tools/call:hello", "parent:tools/call:w_forecast",
                    "child:tools/call:forecast"]


def test_capabilities_include_what_is_mounted() -> None:
    main = Server("main")
    assert "tools" not in main.capabilities()
    main.mount(weather(), prefix="w")
    caps = main.capabilities()
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"]["subscribe"] is True
    assert "completions" in caps


def test_bad_mounts_are_refused() -> None:
    a, b = Server("a"), Server("b")
    a.mount(b, prefix="b")
    with pytest.raises(ValueError, match="cycle"):
        b.mount(a, prefix="a")
    with pytest.raises(ValueError, match="cycle"):
        a.mount(a)
    with pytest.raises(ValueError, match="letters, digits"):
        a.mount(Server("c"), prefix="bad prefix")
    with pytest.raises(TypeError, match="Server or a RemoteServer"):
        a.mount("not a server")  # type: ignore[arg-type]
    c = Server("c")
    c.mount(Server("d"), namespace="d")  # FastMCP 3's name for it
    assert c.mounts[0].prefix == "d"
