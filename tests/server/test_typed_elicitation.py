"""``await ctx.elicit("message", Model)``: the form schema from a type, and the answer
as an instance of it."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

import attrs
import pytest
from pydantic import BaseModel
from pydantic import Field as PydanticField

import mcpactor
from mcpactor import ClientHandlers, Context, ElicitationResult, Field, Server
from mcpactor.protocol import types as t
from mcpactor.server.elicitation import elicitation_form
from mcpactor.testing import open_client


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Booking:
    """A table booking."""

    name: Annotated[str, Field(description="Your name", min_length=1)]
    guests: Annotated[int, Field(ge=1, le=12)]
    vegan: bool = False
    slot: Literal["lunch", "dinner"] = "dinner"
    color: Color = Color.RED
    extras: list[Literal["wine", "cake"]] | None = None
    note: str | None = None


class Profile(BaseModel):
    email: str = PydanticField(description="Where to write", max_length=80)
    age: int = PydanticField(ge=0)
    color: Color = Color.BLUE


class Answer(TypedDict):
    yes: bool


@attrs.frozen
class Rating:
    stars: float


class Nested(BaseModel):
    inner: Profile


def test_a_dataclass_becomes_the_specs_flat_form_schema() -> None:
    form = elicitation_form(Booking)
    assert form.schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Your name", "minLength": 1},
            "guests": {"type": "integer", "minimum": 1, "maximum": 12},
            "vegan": {"type": "boolean", "default": False},
            "slot": {"type": "string", "default": "dinner", "enum": ["lunch", "dinner"]},
            "color": {"type": "string", "title": "Color", "default": "red",
                      "enum": ["red", "blue"]},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["wine", "cake"]}},
            "note": {"type": "string"},
        },
        "required": ["name", "guests"],
    }


def test_a_pydantic_model_becomes_a_form_schema() -> None:
    form = elicitation_form(Profile)
    props = form.schema["properties"]
    assert props["email"] == {"type": "string", "title": "Email",
                              "description": "Where to write", "maxLength": 80}
    assert props["age"] == {"type": "integer", "title": "Age", "minimum": 0}
    assert props["color"]["enum"] == ["red", "blue"] and props["color"]["default"] == "blue"
    assert form.schema["required"] == ["email", "age"]


@pytest.mark.parametrize(("tp", "message"), [
    (Nested, "field 'inner'"),
    (dict[str, int], "field 'value'"),
    (Literal[1, 2], "choices of an elicitation form are strings"),
])
def test_types_no_form_can_hold_are_refused(tp: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        elicitation_form(tp)


def elicit_server() -> Server:
    server = Server("elicit")

    @server.tool
    async def book(ctx: Context) -> str:
        """Book a table."""
        answer = await ctx.elicit("Book a table?", Booking)
        if not answer.accepted:
            return f"{answer.action}: {answer.data}"
        booking = answer.data
        assert isinstance(booking, Booking)
        return f"{booking.name}x{booking.guests} {booking.slot} {booking.color} {booking.extras}"

    @server.tool
    async def profile(ctx: Context) -> str:
        """A pydantic answer."""
        answer = await ctx.elicit("Who are you?", Profile)
        assert isinstance(answer.data, Profile)
        return f"{answer.data.email} {answer.data.age} {answer.data.color}"

    @server.tool
    async def small(ctx: Context) -> str:
        """TypedDict, attrs and a single value."""
        yes = await ctx.elicit("Sure?", Answer)
        rating = await ctx.elicit("Stars?", Rating)
        name = await ctx.elicit("Name?", str)
        assert isinstance(rating.data, Rating)
        return f"{yes.data} {rating.data.stars} {name.data!r}"

    @server.tool
    async def impossible(ctx: Context) -> str:
        """Asks with a type no form can hold."""
        await ctx.elicit("?", Nested)
        return "sent"

    return server


def _answering(*answers: t.ElicitResult, seen: list[Any] | None = None) -> ClientHandlers:
    queue = list(answers)

    async def elicitation(params: Any) -> t.ElicitResult:
        if seen is not None:
            seen.append(params)
        return queue.pop(0)

    return ClientHandlers(elicitation=elicitation)


def _text(result: t.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, t.TextContent)
    return content.text


async def test_the_accepted_answer_is_an_instance_of_the_type() -> None:
    seen: list[Any] = []
    handlers = _answering(
        t.ElicitResult(action="accept", content={"name": "Ada", "guests": 2, "slot": "lunch",
                                                 "color": "blue", "extras": ["cake"]}),
        seen=seen)
    async with open_client(elicit_server(), handlers=handlers) as c:
        res = await c.call_tool("book")
        assert _text(res) == "Adax2 lunch Color.BLUE ['cake']"
    (params,) = seen
    assert params.requested_schema == elicitation_form(Booking).schema


async def test_decline_and_cancel_have_no_data() -> None:
    for action in ("decline", "cancel"):
        handlers = _answering(t.ElicitResult(action=action))  # type: ignore[arg-type]
        async with open_client(elicit_server(), handlers=handlers) as c:
            assert _text(await c.call_tool("book")) == f"{action}: None"


async def test_pydantic_typeddict_attrs_and_single_values() -> None:
    handlers = _answering(
        t.ElicitResult(action="accept", content={"email": "a@b.c", "age": 3}),
        t.ElicitResult(action="accept", content={"yes": True}),
        t.ElicitResult(action="accept", content={"stars": 4.5}),
        t.ElicitResult(action="accept", content={"value": "Ada"}),
    )
    async with open_client(elicit_server(), handlers=handlers) as c:
        assert _text(await c.call_tool("profile")) == "a@b.c 3 Color.BLUE"
        assert _text(await c.call_tool("small")) == "{'yes': True} 4.5 'Ada'"


async def test_a_type_no_form_can_hold_fails_the_tool_before_asking() -> None:
    seen: list[Any] = []
    async with open_client(elicit_server(), handlers=_answering(seen=seen)) as c:
        res = await c.call_tool("impossible")
        assert res.is_error and "field 'inner'" in _text(res)
    assert seen == []


async def test_content_that_does_not_fit_the_type_is_an_invalid_result(monkeypatch: Any) -> None:
    import mcpactor.client.client as client_module

    monkeypatch.setattr(client_module, "_check_elicited", lambda params, result: None)
    handlers = _answering(t.ElicitResult(action="accept", content={"email": "x", "age": -1}))
    async with open_client(elicit_server(), handlers=handlers) as c:
        res = await c.call_tool("profile")
        assert res.is_error and "age" in _text(res), _text(res)


def test_elicitation_result_is_exported() -> None:
    assert mcpactor.ElicitationResult is ElicitationResult
    result: ElicitationResult[Booking] = ElicitationResult(action="decline")
    assert not result.accepted and result.data is None


# -- a JSON schema written by hand (the README: "a JSON schema written by hand works too")

HAND_WRITTEN = {"type": "object", "properties": {"date": {"type": "string"},
                                                 "guests": {"type": "integer"}},
                "required": ["date"]}


def hand_written_server() -> Server:
    server = Server("elicit-by-hand")

    @server.tool
    async def book(ctx: Context) -> str:
        """Ask with a schema written by hand."""
        answer = await ctx.elicit("Which date, and for how many?", HAND_WRITTEN)
        assert isinstance(answer, ElicitationResult)
        if not answer.accepted:
            return f"{answer.action}: {answer.data}"
        assert answer.data is not None and answer.data == answer.content
        return f"{answer.data['date']} x{answer.data.get('guests')}"

    return server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_hand_written_schema_gives_the_content_as_data(mode: str) -> None:
    seen: list[Any] = []
    handlers = _answering(t.ElicitResult(action="accept",
                                         content={"date": "2026-12-24", "guests": 4}),
                          t.ElicitResult(action="decline"), seen=seen)
    async with open_client(hand_written_server(), handlers=handlers, mode=mode) as c:
        assert _text(await c.call_tool("book")) == "2026-12-24 x4"
        assert _text(await c.call_tool("book")) == "decline: None"
    assert seen[0].requested_schema == HAND_WRITTEN  # sent as written
