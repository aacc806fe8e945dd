"""Models and tool functions shared by the test_schema_* files.

They live at module level so that string annotations resolve, and in one place so that
the schema tests and the validator tests exercise the very same signatures.
"""

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import attrs

from mcpactor.protocol.errors import InvalidParams
from mcpactor.server.schema import Field, ToolSignature, build_signature

# --- models used across the tests (module level so string annotations resolve) ---------


@attrs.frozen
class Point:
    """A point in the plane."""

    x: float
    y: float = 0.0


@dataclasses.dataclass
class Tree:
    value: int
    children: list["Tree"] = dataclasses.field(default_factory=list)


class Options(TypedDict):
    mode: Literal["fast", "slow"]
    limit: NotRequired[int]


class PartialOpts(TypedDict, total=False):
    a: str
    b: bool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.define
class Box:
    label: Annotated[str, Field(min_length=1, description="the label")]
    corners: tuple[Point, Point]
    color: Color = Color.RED
    tags: list[str] = attrs.Factory(list)


class Context:
    """Stands in for the server's Context class."""


class SubContext(Context):
    pass


# --- the signatures under test ----------------------------------------------------------


async def echo(text: str) -> str:
    return text


async def add(a: int, b: int) -> int:
    return a + b


async def prims(s: str, i: int, f: float, b: bool, n: None) -> None:
    pass


async def optionals(a: int | None, b: Optional[str] = None, c: float = 1.5) -> None:  # noqa: UP045 - testing Optional on purpose
    pass


async def literals(mode: Literal["a", "b"], mixed: Literal[1, "1", None, True] = 1) -> None:
    pass


async def enums(color: Color, level: Level = Level.LOW) -> None:
    pass


async def containers(
    xs: list[int],
    pair: tuple[int, str],
    rest: tuple[float, ...],
    uniq: set[str],
    frozen: frozenset[int],
    table: dict[str, float],
    anything: list[Any],
    seq: Sequence[bool],
    mapping: Mapping[str, list[str]],
    bare_list: list,  # type: ignore[type-arg,unused-ignore]
    bare_dict: dict,  # type: ignore[type-arg,unused-ignore]
) -> None:
    pass


async def anys(a: Any, b, c: object = None) -> None:  # type: ignore[no-untyped-def]
    pass


async def unions(v: int | str, w: list[int] | dict[str, int] | None = None) -> None:
    pass


async def models(p: Point, t: Tree, o: Options, q: PartialOpts, box: Box | None = None) -> None:
    pass


async def constrained(
    n: Annotated[int, Field(ge=0, le=10, description="a count")],
    x: Annotated[float, Field(gt=0, lt=1)] = 0.5,
    name: Annotated[str, Field(min_length=2, max_length=5, pattern=r"^[a-z]+$")] = "ab",
    items: Annotated[list[str], Field(min_length=1, max_length=3)] = ("x",),  # type: ignore[assignment]
    maybe: Annotated[str | None, Field(max_length=3)] = None,
    obj: Annotated[dict[str, int], Field(min_length=1)] | None = None,
    note: Annotated[str, "just a description"] = "",
) -> None:
    pass


async def with_context(ctx: Context, text: str) -> str:
    return text


SIGNATURE_FNS = [
    echo,
    add,
    prims,
    optionals,
    literals,
    enums,
    containers,
    anys,
    unions,
    models,
    constrained,
    with_context,
]


def sig_of(fn: Any) -> ToolSignature:
    return build_signature(fn, skip={Context})


def accepts(sig: ToolSignature, args: Any) -> bool:
    try:
        sig.validate(args)
    except InvalidParams:
        return False
    return True
