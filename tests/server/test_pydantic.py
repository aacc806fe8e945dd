"""Pydantic v2 models and ``Field``s wherever attrs classes, dataclasses and TypedDicts
are accepted: tool parameters and results, prompt arguments; pydantic stays optional."""

from __future__ import annotations

import datetime
import subprocess
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcpactor import McpError, Server
from mcpactor.protocol import types as t
from mcpactor.server.schema import build_signature
from mcpactor.testing import open_client


class Address(BaseModel):
    """Where someone lives."""

    street: str = Field(description="Street and number")
    city: str = "Oslo"


class Person(BaseModel):
    name: str = Field(min_length=1, description="Full name")
    age: int = Field(ge=0, le=150, default=30)
    address: Address
    tags: list[str] = []

    @field_validator("name")
    @classmethod
    def no_digits(cls, value: str) -> str:
        if any(ch.isdigit() for ch in value):
            raise ValueError("a name has no digits")
        return value


class Event(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    title: str
    when: datetime.datetime
    kind: Literal["meeting", "call"] = Field(default="call", alias="type")


class Node(BaseModel):
    value: int
    children: list[Node] = []


@dataclass
class Envelope:
    person: Person
    note: str = ""


def pydantic_server() -> Server:
    server = Server("pydantic")

    @server.tool
    async def greet(person: Person) -> str:
        """Greet a person."""
        assert isinstance(person, Person) and isinstance(person.address, Address)
        return f"Hello {person.name} ({person.age}) from {person.address.city}"

    @server.tool
    async def wrapped(envelope: Envelope) -> str:
        """A pydantic model inside a dataclass."""
        assert isinstance(envelope.person, Person)
        return envelope.person.name

    @server.tool
    async def plan(title: str) -> Event:
        """Plan an event."""
        return Event(title=title, when=datetime.datetime(2030, 1, 2, 3, 4, 5), kind="meeting")

    @server.tool
    async def people() -> list[Person]:
        """Everyone."""
        return [Person(name="Ada", address=Address(street="Main 1"))]

    @server.tool
    async def tree(depth: int) -> Node:
        """A recursive model."""
        node = Node(value=depth)
        if depth:
            node.children.append(Node(value=depth - 1))
        return node

    @server.tool
    async def repeat(
        word: Annotated[str, Field(description="What to say", min_length=2)],
        times: int = Field(default=2, ge=1, le=5, description="How often"),
    ) -> str:
        """Field(...) on plain parameters, in Annotated and as the default."""
        return " ".join([word] * times)

    return server


async def test_model_parameters_get_pydantic_schemas_and_instances() -> None:
    async with open_client(pydantic_server()) as c:
        tools = {x.name: x for x in await c.list_all_tools()}
        schema = tools["greet"].input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        person = schema["properties"]["person"]
        assert person["title"] == "Person" and person["required"] == ["name", "address"]
        assert person["properties"]["name"]["description"] == "Full name"
        assert person["properties"]["name"]["minLength"] == 1
        assert person["properties"]["age"] == {
            "default": 30, "maximum": 150, "minimum": 0, "title": "Age", "type": "integer"}
        # The nested model is a definition, and the reference resolves.
        assert person["properties"]["address"] == {"$ref": "#/$defs/Address"}
        assert schema["$defs"]["Address"]["description"] == "Where someone lives."
        args = {"person": {"name": "Ada", "address": {"street": "Main 1"}}}
        jsonschema.validate(args, schema)
        res = await c.call_tool("greet", args)
        assert res.content[0].text == "Hello Ada (30) from Oslo"  # type: ignore[union-attr]
        res = await c.call_tool("wrapped", {"envelope": args})
        assert res.content[0].text == "Ada"  # type: ignore[union-attr]


async def test_pydantic_validation_errors_are_results_the_model_can_read() -> None:
    async with open_client(pydantic_server()) as c:
        for arguments, expected in (
            ({"person": {"name": "Ada", "age": -1, "address": {"street": "x"}}},
             "person.age"),
            ({"person": {"name": "Ada2", "address": {"street": "x"}}}, "a name has no digits"),
            ({"person": {"name": "Ada"}}, "person.address"),
            ({"person": "Ada"}, "expected object, got string"),
        ):
            res = await c.call_tool("greet", arguments)
            assert res.is_error is True, arguments
            text = res.content[0].text  # type: ignore[union-attr]
            assert text.startswith("Invalid arguments for tool greet:"), text
            assert expected in text, text


async def test_model_results_are_dumped_as_json_with_their_schema() -> None:
    async with open_client(pydantic_server()) as c:
        tools = {x.name: x for x in await c.list_all_tools()}
        out = tools["plan"].output_schema
        assert out is not None and out["type"] == "object"
        assert set(out["properties"]) == {"title", "when", "type"}  # by alias
        assert out["properties"]["when"]["format"] == "date-time"
        res = await c.call_tool("plan", {"title": "standup"})
        expected = {"title": "standup", "when": "2030-01-02T03:04:05", "type": "meeting"}
        assert res.structured_content == expected
        jsonschema.validate(res.structured_content, out)
        res = await c.call_tool("people")
        assert res.structured_content == {"result": [
            {"name": "Ada", "age": 30, "address": {"street": "Main 1", "city": "Oslo"},
             "tags": []}]}
        jsonschema.validate(res.structured_content, tools["people"].output_schema or {})
        # A recursive model: the top of the outputSchema is still an object schema.
        tree = tools["tree"].output_schema
        assert tree is not None and tree["type"] == "object" and "Node" in tree["$defs"]
        res = await c.call_tool("tree", {"depth": 1})
        assert res.structured_content == {"value": 1, "children": [{"value": 0, "children": []}]}
        jsonschema.validate(res.structured_content, tree)


async def test_field_on_plain_parameters() -> None:
    async with open_client(pydantic_server()) as c:
        tools = {x.name: x for x in await c.list_all_tools()}
        schema = tools["repeat"].input_schema
        assert schema["properties"]["word"] == {
            "type": "string", "description": "What to say", "minLength": 2}
        assert schema["properties"]["times"] == {
            "type": "integer", "description": "How often", "minimum": 1, "maximum": 5,
            "default": 2}
        assert schema["required"] == ["word"]
        res = await c.call_tool("repeat", {"word": "hi"})
        assert res.content[0].text == "hi hi"  # type: ignore[union-attr]
        res = await c.call_tool("repeat", {"word": "hi", "times": 9})
        assert res.is_error is True and "times" in res.content[0].text  # type: ignore[union-attr]
        res = await c.call_tool("repeat", {"word": "h"})
        assert res.is_error is True and "word" in res.content[0].text  # type: ignore[union-attr]


def test_unsupported_pydantic_field_options_are_refused_at_registration() -> None:
    async def factory(tags: list[str] = Field(default_factory=list)) -> str:  # noqa: B008
        return ""

    with pytest.raises(TypeError, match="default_factory"):
        build_signature(factory)

    async def multiple(n: Annotated[int, Field(multiple_of=3)]) -> str:
        return ""

    with pytest.raises(TypeError, match="not supported on a parameter"):
        build_signature(multiple)


async def test_prompt_arguments_can_be_models() -> None:
    server = Server("prompts")

    @server.prompt
    async def introduce(person: Person, formal: bool = False) -> str:
        """Introduce someone."""
        assert isinstance(person, Person)
        return f"{'Dear' if formal else 'Hi'} {person.name} of {person.address.city}"

    async with open_client(server) as c:
        res = await c.get_prompt("introduce", {
            "person": '{"name": "Ada", "address": {"street": "x", "city": "Bergen"}}',
            "formal": "true"})
        assert res.messages[0].content == t.TextContent(text="Dear Ada of Bergen")
        with pytest.raises(McpError) as info:
            await c.get_prompt("introduce", {"person": '{"name": "Ada"}'})
        assert info.value.code == -32602 and "person" in info.value.message


def test_pydantic_is_not_imported_for_servers_that_do_not_use_it() -> None:
    code = (
        "import sys\n"
        "from dataclasses import dataclass\n"
        "from typing import Annotated, TypedDict\n"
        "from mcpactor import Field, Server\n"
        "server = Server('plain')\n"
        "@dataclass\n"
        "class P:\n"
        "    x: int\n"
        "class T(TypedDict):\n"
        "    y: str\n"
        "@server.tool\n"
        "async def f(p: P, t: T, n: Annotated[int, Field(ge=1)] = 2) -> P:\n"
        "    return p\n"
        "@server.prompt\n"
        "async def g(n: int) -> str:\n"
        "    return str(n)\n"
        "import mcpactor.client, mcpactor.testing\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_pydantic_is_an_extra_not_a_dependency() -> None:
    import tomllib
    from pathlib import Path

    project = tomllib.loads(
        (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert not any(d.lower().startswith("pydantic") for d in project["dependencies"])
    assert any(d.startswith("pydantic>=2") for d in project["optional-dependencies"]["dev"])


async def test_any_annotation_still_passes_dicts_through() -> None:
    server = Server("any")

    @server.tool
    async def echo(value: dict[str, Any]) -> str:
        """Echo."""
        return repr(sorted(value))

    async with open_client(server) as c:
        res = await c.call_tool("echo", {"value": {"b": 1, "a": 2}})
        assert res.content[0].text == "['a', 'b']"  # type: ignore[union-attr]
