"""Prompt arguments arrive as strings: they are converted to the annotated types, and
described from ``Field`` and the docstring, as tool parameters are."""

from __future__ import annotations

import datetime
import enum
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest

from mcpactor import Context, Field, McpError, Server
from mcpactor.protocol import types as t
from mcpactor.testing import open_client


class Tone(enum.Enum):
    WARM = "warm"
    DRY = "dry"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def prompt_server() -> Server:
    server = Server("prompts")

    @server.prompt
    async def story(
        n: Annotated[int, Field(description="How many paragraphs", ge=1, le=10)],
        style: Literal["short", "long"],
        tone: Tone = Tone.WARM,
        ratio: float = 0.5,
        loud: bool = False,
        level: Level = Level.LOW,
        tags: list[str] | None = None,
        ctx: Context | None = None,
    ) -> str:
        """Tell a story.

        Args:
            style: How long each paragraph is.
            ratio: Dialogue to prose.
        """
        assert isinstance(n, int) and isinstance(ratio, float) and isinstance(loud, bool)
        assert isinstance(tone, Tone) and isinstance(level, Level) and ctx is not None
        return f"{n}|{style}|{tone.value}|{ratio}|{loud}|{level.name}|{tags}"

    @server.prompt
    async def plain(text, count: int = Field(default=3, description="Times")):  # type: ignore[no-untyped-def]
        """Unannotated text stays a string."""
        return f"{text}x{count}"

    return server


def _text(result: t.GetPromptResult) -> str:
    content = result.messages[0].content
    assert isinstance(content, t.TextContent)
    return content.text


async def test_arguments_are_described_from_field_and_docstring() -> None:
    async with open_client(prompt_server()) as c:
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        args = {a.name: a for a in prompts["story"].arguments or []}
        assert list(args) == ["n", "style", "tone", "ratio", "loud", "level", "tags"]
        assert args["n"].description == "How many paragraphs" and args["n"].required
        assert args["style"].description == "How long each paragraph is."
        assert args["ratio"].description == "Dialogue to prose." and not args["ratio"].required
        assert args["tone"].description is None
        plain = {a.name: a for a in prompts["plain"].arguments or []}
        assert plain["count"].description == "Times" and not plain["count"].required
        assert plain["text"].required


async def test_arguments_are_converted_to_their_types() -> None:
    async with open_client(prompt_server()) as c:
        res = await c.get_prompt("story", {
            "n": "5", "style": "short", "tone": "dry", "ratio": "2", "loud": "true",
            "level": "2", "tags": '["a", "b"]'})
        assert _text(res) == "5|short|dry|2.0|True|HIGH|['a', 'b']"
        res = await c.get_prompt("story", {"n": "1", "style": "long", "loud": "Yes"})
        assert _text(res) == "1|long|warm|0.5|True|LOW|None"
        res = await c.get_prompt("plain", {"text": "5"})
        assert _text(res) == "5x3"


@pytest.mark.parametrize(("arguments", "name", "reason"), [
    ({"n": "five", "style": "short"}, "n", "expected integer"),
    ({"n": "0", "style": "short"}, "n", "must be >= 1"),
    ({"n": "2", "style": "medium"}, "style", 'expected one of ["short", "long"], got "medium"'),
    ({"n": "2", "style": "short", "tone": "cold"}, "tone", "expected one of"),
    ({"n": "2", "style": "short", "loud": "maybe"}, "loud", "expected boolean"),
    ({"n": "2", "style": "short", "tags": "[1]"}, "tags", "expected string"),
])
async def test_values_that_do_not_convert_are_invalid_params_naming_the_argument(
    arguments: dict[str, str], name: str, reason: str
) -> None:
    async with open_client(prompt_server()) as c:
        with pytest.raises(McpError) as info:
            await c.get_prompt("story", arguments)
        err = info.value
        assert err.code == -32602
        assert err.message.startswith(f"Invalid argument {name!r} for prompt story:"), err.message
        assert reason in err.message, err.message
        assert err.data["path"].startswith(f"params.arguments.{name}")


def test_unsupported_prompt_annotations_are_refused_at_registration() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match="argument 'x'"):

        @server.prompt
        async def bad(x: dict[int, str]) -> str:
            return ""


async def test_classes_made_from_strings_are_built_from_the_argument() -> None:
    server = Server("classes")

    @server.prompt
    async def where(path: Path, when: datetime.date, amount: Decimal | None = None) -> str:
        """Classes the schema does not describe."""
        assert isinstance(path, Path) and isinstance(when, datetime.date)
        return f"{path.name} {when.year} {amount!r}"

    async with open_client(server) as c:
        res = await c.get_prompt("where", {"path": "/tmp/notes.txt", "when": "2030-05-01"})
        assert _text(res) == "notes.txt 2030 None"
        with pytest.raises(McpError) as info:
            await c.get_prompt("where", {"path": "x", "when": "soon"})
        assert info.value.code == -32602 and "'when'" in info.value.message
        assert "not a valid date" in info.value.message


async def test_missing_required_arguments_are_still_listed() -> None:
    async with open_client(prompt_server()) as c:
        with pytest.raises(McpError) as info:
            await c.get_prompt("story", {"n": "1"})
        assert info.value.code == -32602 and info.value.data["missing"] == ["style"]


def _unused(*_: Any) -> None:
    """(keeps Any imported for the annotations above)"""
