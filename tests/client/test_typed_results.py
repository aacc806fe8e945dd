"""``call_tool(..., result_type=Model)``: structured content read back as the type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel

from mcpactor import InvalidResult, Server, ToolResult
from mcpactor.protocol import types as t
from mcpactor.protocol.convert import to_wire
from mcpactor.testing import open_client


class Weather(BaseModel):
    city: str
    celsius: float


@dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    a: int
    b: int


def typed_server() -> Server:
    server = Server("typed")

    @server.tool
    async def weather(city: str) -> Weather:
        """Weather as a pydantic model."""
        return Weather(city=city, celsius=21.5)

    @server.tool
    async def point() -> Point:
        """A dataclass."""
        return Point(1, 2)

    @server.tool
    async def many() -> list[Point]:
        """A wrapped list."""
        return [Point(1, 2), Point(3, 4)]

    @server.tool
    async def count() -> int:
        """A wrapped number."""
        return 7

    @server.tool(output_schema={"type": "object"})
    async def liar() -> t.CallToolResult:
        """Structured content of the wrong shape."""
        return t.CallToolResult(content=[], structured_content={"city": 3})

    @server.tool
    async def text() -> str:
        """No structured content."""
        return "hello"

    @server.tool
    async def failing() -> Weather:
        """An error result."""
        raise RuntimeError("down")

    return server


async def test_data_is_an_instance_of_the_result_type() -> None:
    async with open_client(typed_server()) as c:
        await c.list_tools()  # the outputSchemas are checked too
        res = await c.call_tool("weather", {"city": "Oslo"}, result_type=Weather)
        assert isinstance(res, ToolResult) and isinstance(res, t.CallToolResult)
        assert res.data == Weather(city="Oslo", celsius=21.5)
        assert (await c.call_tool("point", result_type=Point)).data == Point(1, 2)
        many = await c.call_tool("many", result_type=list[Point])
        assert many.data == [Point(1, 2), Point(3, 4)]
        assert (await c.call_tool("count", result_type=int)).data == 7


async def test_without_a_type_data_is_the_structured_dict() -> None:
    async with open_client(typed_server()) as c:
        res = await c.call_tool("weather", {"city": "Oslo"})
        assert res.data == {"city": "Oslo", "celsius": 21.5}
        assert (await c.call_tool("text")).data is None
        failed = await c.call_tool("failing", result_type=Weather)
        assert failed.is_error and failed.data is None
        # data is ours: it never goes on the wire.
        assert "data" not in to_wire(res)


@pytest.mark.parametrize(("tool", "result_type", "said"), [
    ("liar", Weather, "does not fit Weather: $.city: Input should be a valid string"),
    ("point", Weather, "does not fit Weather: $.city: Field required"),
    ("point", Pair, "does not fit Pair: $.a: required property is missing"),
    ("text", Weather, "returned no structuredContent to read as Weather"),
    ("many", list[Weather], "$.result[0].city"),
])
async def test_content_that_does_not_fit_is_an_invalid_result(
    tool: str, result_type: Any, said: str
) -> None:
    async with open_client(typed_server()) as c:
        with pytest.raises(InvalidResult) as info:
            await c.call_tool(tool, result_type=result_type)
        assert said in info.value.message, info.value.message
