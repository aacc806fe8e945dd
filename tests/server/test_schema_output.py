"""Tests for mcpactor.server.schema: output schemas, structured results, to_jsonable."""

import json
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from schema_support import Box, Color, Level, Options, Point, Tree

from mcpactor.server.schema import build_signature, serialize_output, to_jsonable

# --- output side ------------------------------------------------------------------------


async def out_str() -> str:
    return ""


async def out_none() -> None:
    pass


async def out_missing():  # type: ignore[no-untyped-def]
    pass


async def out_int() -> int:
    return 0


async def out_float() -> float:
    return 0.0


async def out_bool() -> bool:
    return True


async def out_list() -> list[str]:
    return []


async def out_dict() -> dict[str, int]:
    return {}


async def out_typed() -> Options:
    return {"mode": "fast"}


async def out_attrs() -> Point:
    return Point(x=1)


async def out_dataclass() -> Tree:
    return Tree(1)


async def out_enum() -> Color:
    return Color.RED


async def out_optional_str() -> str | None:
    return None


async def out_optional_point() -> Point | None:
    return None


class FakeImage:
    pass


async def out_image() -> FakeImage:
    return FakeImage()


async def out_images() -> list[FakeImage | str]:
    return []


@pytest.mark.parametrize(
    ("fn", "structured", "wrapped"),
    [
        (out_str, False, False),
        (out_none, False, False),
        (out_missing, False, False),
        (out_optional_str, False, False),
        (out_image, False, False),
        (out_images, False, False),
        (out_int, True, True),
        (out_float, True, True),
        (out_bool, True, True),
        (out_list, True, True),
        (out_enum, True, True),
        (out_optional_point, True, True),
        (out_dict, True, False),
        (out_typed, True, False),
        (out_attrs, True, False),
        (out_dataclass, True, False),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_output_schema_kinds(fn: Any, structured: bool, wrapped: bool) -> None:
    sig = build_signature(fn, unstructured={FakeImage})
    assert (sig.output_schema is not None) == structured
    assert sig.wrap_output == wrapped
    if sig.output_schema is not None:
        jsonschema.Draft202012Validator.check_schema(sig.output_schema)


def test_output_wrapping_schema() -> None:
    sig = build_signature(out_int)
    assert sig.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert serialize_output(sig, 3) == {"result": 3}


@pytest.mark.parametrize(
    ("fn", "value", "expected"),
    [
        (out_int, 3, {"result": 3}),
        (out_float, 2.5, {"result": 2.5}),
        (out_bool, False, {"result": False}),
        (out_list, ["a", "b"], {"result": ["a", "b"]}),
        (out_enum, Color.GREEN, {"result": "green"}),
        (out_optional_point, None, {"result": None}),
        (out_optional_point, Point(x=1, y=2), {"result": {"x": 1, "y": 2}}),
        (out_dict, {"a": 1}, {"a": 1}),
        (out_typed, {"mode": "slow", "limit": 2}, {"mode": "slow", "limit": 2}),
        (out_attrs, Point(x=1.5), {"x": 1.5, "y": 0.0}),
        (
            out_dataclass,
            Tree(1, [Tree(2)]),
            {"value": 1, "children": [{"value": 2, "children": []}]},
        ),
    ],
    ids=lambda v: getattr(v, "__name__", None) or type(v).__name__,
)
def test_serialize_output_matches_schema(fn: Any, value: Any, expected: Any) -> None:
    sig = build_signature(fn)
    got = serialize_output(sig, value)
    assert got == expected
    assert sig.output_schema is not None
    jsonschema.validate(got, sig.output_schema, cls=jsonschema.Draft202012Validator)
    json.dumps(got)


def test_output_schema_requires_every_model_field() -> None:
    sig = build_signature(out_attrs)
    assert sig.output_schema is not None
    assert sig.output_schema["required"] == ["x", "y"]


def test_serialize_output_unstructured_and_errors() -> None:
    assert serialize_output(build_signature(out_str), "text") is None
    assert serialize_output(build_signature(out_none), None) is None
    with pytest.raises(TypeError, match="object result"):
        serialize_output(build_signature(out_dict), [1, 2])


def test_to_jsonable() -> None:
    box = Box(label="l", corners=(Point(x=0), Point(x=1, y=1)), color=Color.GREEN)
    assert to_jsonable(box) == {
        "label": "l",
        "corners": [{"x": 0, "y": 0.0}, {"x": 1, "y": 1}],
        "color": "green",
        "tags": [],
    }
    assert to_jsonable({Level.LOW: {1}, 2: (None,)}) == {"1": [1], "2": [None]}
    with pytest.raises(TypeError):
        to_jsonable(object())
