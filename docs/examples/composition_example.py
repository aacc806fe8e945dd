"""docs/guide/composition-and-proxying.md: one server made of others: mounted servers
under a prefix, and a remote server (here a process over stdio) behind a proxy."""

import sys
from pathlib import Path

from mcpactor import Client, RemoteServer, Server

weather = Server("weather")


@weather.tool
async def forecast(city: str) -> str:
    """Tomorrow's weather."""
    return f"sunny in {city}"


@weather.resource("data://cities")
async def cities() -> list[str]:
    return ["Oslo", "Lima"]


# Another process, proxied: its tools appear here as calc_<name>.
TOOLS = Path(__file__).with_name("tools_example.py")
calc = RemoteServer([sys.executable, "-m", "mcpactor", "run", f"{TOOLS}:server"])

server = Server("composition-example", version="1.0.0")
server.mount(weather, prefix="weather")
server.mount(calc, prefix="calc")

# A whole server that is nothing but a proxy: `Server.as_proxy("https://host/mcp")`,
# `Server.as_proxy(["python", "server.py"])`, or `mcpactor.proxy(...)`.


@server.tool
async def hello() -> str:
    return "hello from the front server"


async def demo(client: Client) -> None:
    names = [tool.name for tool in await client.list_all_tools()]
    assert names[:2] == ["hello", "weather_forecast"]
    assert "calc_add" in names and "calc_forecast" in names

    said = await client.call_tool("weather_forecast", {"city": "Oslo"})
    assert said.content[0].text == "sunny in Oslo"  # type: ignore[union-attr]
    assert [r.uri for r in await client.list_all_resources()] == ["data://weather/cities"]

    assert (await client.call_tool("calc_add", {"a": 40, "b": 2})).data == {"result": 42}


async def demo_live() -> list[str]:
    """The link is live: what a mounted server registers later is served at once."""
    from mcpactor.testing import open_client

    async with open_client(server) as client:
        @weather.tool
        async def alerts(region: str) -> str:
            return f"no alerts for {region}"

        await weather.notify_tools_list_changed()  # the parent's sessions hear it
        result = await client.call_tool("weather_alerts", {"region": "north"})
        assert result.content[0].text == "no alerts for north"  # type: ignore[union-attr]
        return [tool.name for tool in await client.list_all_tools()]
