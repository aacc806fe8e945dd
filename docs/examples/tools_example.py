"""docs/guide/tools.md: tools, their schemas, results and errors.

Run it: ``mcpactor run docs/examples/tools_example.py:server``; ``demo`` is the client
side (the docs tests run it against that command).
"""

import time
from dataclasses import dataclass
from typing import Annotated, Literal

from mcpactor import Client, Field, Image, Server, ToolError
from mcpactor.protocol import types as t

server = Server("tools-example", version="1.0.0")


@server.tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@dataclass
class Forecast:
    city: str
    celsius: float
    sky: Literal["clear", "cloudy", "rain"]


@server.tool(annotations={"readOnlyHint": True})
async def forecast(
    city: Annotated[str, Field(description="A city name", min_length=2)],
    days: Annotated[int, Field(ge=1, le=7)] = 1,
) -> Forecast:
    """The weather in a city (structured output: an outputSchema and structuredContent)."""
    if city == "Atlantis":
        raise ToolError(f"no weather station in {city}")  # an isError result the model reads
    return Forecast(city=city, celsius=21.5, sky="clear")


@server.tool
def checksum(text: str) -> str:
    """A plain def: it runs in a worker thread, so blocking here stalls nobody."""
    time.sleep(0.05)  # stands for blocking work: a file, a C library, requests.get(...)
    return f"{sum(text.encode()) % 256:02x}"


@server.tool(thread=False)
def upper(text: str) -> str:
    """thread=False: a quick function that runs in the event loop."""
    return text.upper()


@server.tool
async def pixel() -> t.ImageContent:
    """Content types: Image, Audio, Embedded, Link (or a list of them)."""
    return Image(data=b"\x89PNG\r\n\x1a\n", mime_type="image/png")


async def demo(client: Client) -> None:
    tools = {tool.name: tool for tool in await client.list_all_tools()}
    assert tools["forecast"].input_schema["properties"]["days"] == {
        "type": "integer", "minimum": 1, "maximum": 7, "default": 1}
    assert tools["forecast"].output_schema is not None

    assert (await client.call_tool("add", {"a": 2, "b": 3})).data == {"result": 5}

    weather = await client.call_tool("forecast", {"city": "Oslo"}, result_type=Forecast)
    assert weather.data == Forecast(city="Oslo", celsius=21.5, sky="clear")

    failed = await client.call_tool("forecast", {"city": "Atlantis"})
    assert failed.is_error
    bad = await client.call_tool("forecast", {"city": "Oslo", "days": 9})
    assert bad.is_error and "days" in bad.content[0].text  # type: ignore[union-attr]

    assert (await client.call_tool("checksum", {"text": "abc"})).content[0].text == "26"  # type: ignore[union-attr]
    assert (await client.call_tool("upper", {"text": "abc"})).content[0].text == "ABC"  # type: ignore[union-attr]
    image = (await client.call_tool("pixel", {})).content[0]
    assert isinstance(image, t.ImageContent) and image.mime_type == "image/png"
