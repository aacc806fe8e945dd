"""Tests for mcpactor.server.schema: schemas from type hints, the compiled validators,
structured output, and tool-name rules.

The central test is differential: for many signatures and many generated argument
objects, the compiled validator must accept exactly what ``jsonschema`` accepts for the
generated ``inputSchema``.
"""

import dataclasses
import enum
import json
import random
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import attrs
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest

from mcpactor.protocol.errors import INVALID_PARAMS, InvalidParams
from mcpactor.server.schema import (
    Field,
    ToolSignature,
    build_signature,
    serialize_output,
    to_jsonable,
    validate_tool_name,
)

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


# --- schema shape -----------------------------------------------------------------------


@pytest.mark.parametrize("fn", SIGNATURE_FNS, ids=lambda f: f.__name__)
def test_schemas_are_valid_2020_12(fn: Any) -> None:
    sig = sig_of(fn)
    jsonschema.Draft202012Validator.check_schema(sig.input_schema)
    assert sig.input_schema["type"] == "object"
    if sig.output_schema is not None:
        jsonschema.Draft202012Validator.check_schema(sig.output_schema)
        assert sig.output_schema["type"] == "object"
    json.dumps(sig.input_schema)  # JSON-ready


def test_primitive_schemas() -> None:
    s = sig_of(prims).input_schema
    assert s["properties"] == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "n": {"type": "null"},
    }
    assert s["required"] == ["s", "i", "f", "b", "n"]


def test_optional_and_defaults() -> None:
    s = sig_of(optionals).input_schema
    assert s["properties"]["a"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert s["properties"]["b"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
    }
    assert s["properties"]["c"] == {"type": "number", "default": 1.5}
    assert s["required"] == ["a"]


def test_literal_and_enum_schemas() -> None:
    s = sig_of(literals).input_schema["properties"]
    assert s["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert s["mixed"]["enum"] == [1, "1", None, True]
    assert "type" not in s["mixed"]
    e = sig_of(enums).input_schema["properties"]
    assert e["color"] == {"title": "Color", "type": "string", "enum": ["red", "green"]}
    assert e["level"] == {"title": "Level", "type": "integer", "enum": [1, 2], "default": 1}


def test_container_schemas() -> None:
    p = sig_of(containers).input_schema["properties"]
    assert p["xs"] == {"type": "array", "items": {"type": "integer"}}
    assert p["pair"] == {
        "type": "array",
        "minItems": 2,
        "maxItems": 2,
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
    }
    assert p["rest"] == {"type": "array", "items": {"type": "number"}}
    assert p["uniq"] == {"type": "array", "items": {"type": "string"}}
    assert p["table"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["anything"] == {"type": "array"}
    assert p["seq"] == {"type": "array", "items": {"type": "boolean"}}
    assert p["mapping"]["additionalProperties"] == {"type": "array", "items": {"type": "string"}}
    assert p["bare_list"] == {"type": "array"}
    assert p["bare_dict"] == {"type": "object"}


def test_any_and_unannotated() -> None:
    s = sig_of(anys).input_schema
    assert s["properties"] == {"a": {}, "b": {}, "c": {"default": None}}
    assert s["required"] == ["a", "b"]


def test_model_schemas() -> None:
    s = sig_of(models).input_schema
    p = s["properties"]
    assert p["p"] == {
        "type": "object",
        "title": "Point",
        "description": "A point in the plane.",
        "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
    }
    # Tree is recursive: it lives in $defs and is referenced
    assert p["t"] == {"$ref": "#/$defs/Tree"}
    tree = s["$defs"]["Tree"]
    assert tree["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
    assert tree["required"] == ["value"]
    assert "description" not in tree  # the dataclass-generated docstring is not shown
    assert p["o"]["required"] == ["mode"]
    assert p["o"]["properties"]["limit"] == {"type": "integer"}
    assert "required" not in p["q"]
    box = p["box"]["anyOf"][0]
    assert box["required"] == ["label", "corners"]
    assert box["properties"]["label"] == {
        "type": "string",
        "description": "the label",
        "minLength": 1,
    }
    assert box["properties"]["color"]["default"] == "red"
    assert "default" not in box["properties"]["tags"]  # factories are not evaluated


def test_constraint_keywords() -> None:
    p = sig_of(constrained).input_schema["properties"]
    assert p["n"] == {"type": "integer", "description": "a count", "minimum": 0, "maximum": 10}
    assert p["x"] == {
        "type": "number",
        "exclusiveMinimum": 0,
        "exclusiveMaximum": 1,
        "default": 0.5,
    }
    assert p["name"]["minLength"] == 2 and p["name"]["maxLength"] == 5
    assert p["name"]["pattern"] == "^[a-z]+$"
    assert p["items"]["minItems"] == 1 and p["items"]["maxItems"] == 3
    assert p["items"]["default"] == ["x"]
    assert p["maybe"]["maxLength"] == 3 and "maxItems" not in p["maybe"]
    assert p["note"] == {"type": "string", "description": "just a description", "default": ""}


def test_docstring_args_become_descriptions() -> None:
    async def documented(query: str, limit: int = 10, flag: bool = False) -> str:
        """Search things.

        Args:
            query (str): What to look for;
                may span lines.
            limit: At most this many.

        Returns:
            The results.
        """
        return ""

    p = build_signature(documented).input_schema["properties"]
    assert p["query"]["description"] == "What to look for; may span lines."
    assert p["limit"]["description"] == "At most this many."
    assert "description" not in p["flag"]


def test_field_description_beats_docstring() -> None:
    async def f(a: Annotated[int, Field(description="from Field")]) -> None:
        """Args:
        a: from docstring
        """

    assert build_signature(f).input_schema["properties"]["a"]["description"] == "from Field"


def test_no_parameters() -> None:
    async def ping() -> str:
        return "pong"

    sig = build_signature(ping)
    assert sig.input_schema == {"type": "object", "properties": {}}
    assert sig.validate(None) == {}
    assert sig.validate({}) == {}
    assert sig.validate({"extra": 1}) == {}


def test_string_annotations_resolve() -> None:
    async def f(p: "Point", trees: "list[Tree]") -> "int":
        return 0

    sig = build_signature(f)
    assert sig.input_schema["properties"]["p"]["title"] == "Point"
    assert sig.output_schema is not None and sig.wrap_output


# --- the context parameter --------------------------------------------------------------


def test_context_param_is_skipped() -> None:
    sig = sig_of(with_context)
    assert sig.context_param == "ctx"
    assert list(sig.input_schema["properties"]) == ["text"]
    assert sig.validate({"text": "hi", "ctx": "ignored"}) == {"text": "hi"}


def test_context_param_variants() -> None:
    async def optional_ctx(x: int, c: Context | None = None) -> None:
        pass

    async def annotated_ctx(c: Annotated[SubContext, "ctx"], x: int) -> None:
        pass

    assert sig_of(optional_ctx).context_param == "c"
    assert sig_of(annotated_ctx).context_param == "c"
    assert list(sig_of(annotated_ctx).input_schema["properties"]) == ["x"]
    # without skip, Context is just an unsupported class
    with pytest.raises(TypeError, match="unsupported annotation"):
        build_signature(with_context)


def test_two_context_params_rejected() -> None:
    async def f(a: Context, b: Context) -> None:
        pass

    with pytest.raises(TypeError, match="two context parameters"):
        sig_of(f)


# --- build-time errors ------------------------------------------------------------------


def test_unsupported_signatures() -> None:
    async def star(*args: int) -> None:
        pass

    async def kwargs(**kw: int) -> None:
        pass

    async def posonly(a: int, /) -> None:
        pass

    async def blob(data: bytes) -> None:
        pass

    async def int_keys(d: dict[int, str]) -> None:
        pass

    async def bad_constraint(s: Annotated[str, Field(ge=1)]) -> None:
        pass

    async def bad_length(n: Annotated[int, Field(max_length=1)]) -> None:
        pass

    async def double_default(n: Annotated[int, Field(default=1)] = 2) -> None:
        pass

    async def bad_pattern(s: Annotated[str, Field(pattern="(")]) -> None:
        pass

    cases: list[tuple[Any, str]] = [
        (star, "args"),
        (kwargs, "kwargs"),
        (posonly, "positional-only"),
        (blob, "unsupported annotation"),
        (int_keys, "keys are strings"),
        (bad_constraint, "ge"),
        (bad_length, "max_length"),
        (double_default, "both a default"),
        (bad_pattern, "invalid pattern"),
    ]
    for fn, msg in cases:
        with pytest.raises(TypeError, match=msg):
            build_signature(fn)


def test_error_names_the_parameter() -> None:
    async def f(ok: int, blob: list[bytes]) -> None:
        pass

    with pytest.raises(TypeError, match="parameter 'blob'"):
        build_signature(f)


# --- validation and conversion ----------------------------------------------------------


def test_validate_returns_only_given_arguments() -> None:
    sig = sig_of(optionals)
    assert sig.validate({"a": 1}) == {"a": 1}
    assert sig.validate({"a": None, "c": 2, "zzz": 1}) == {"a": None, "c": 2}


def test_field_default_is_injected() -> None:
    async def f(n: Annotated[int, Field(default=7)]) -> None:
        pass

    sig = build_signature(f)
    assert "required" not in sig.input_schema
    assert sig.input_schema["properties"]["n"]["default"] == 7
    assert sig.validate({}) == {"n": 7}
    assert sig.validate(None) == {"n": 7}
    assert sig.validate({"n": 3}) == {"n": 3}


def test_integers() -> None:
    sig = sig_of(add)
    assert sig.validate({"a": 1, "b": -2}) == {"a": 1, "b": -2}
    got = sig.validate({"a": 1.0, "b": 2})  # JSON Schema: 1.0 is an integer
    assert got == {"a": 1, "b": 2} and type(got["a"]) is int
    assert not accepts(sig, {"a": True, "b": 2})
    assert not accepts(sig, {"a": 1.5, "b": 2})
    assert not accepts(sig, {"a": "1", "b": 2})


def test_conversion_into_declared_types() -> None:
    sig = sig_of(models)
    got = sig.validate(
        {
            "p": {"x": 1, "extra": "ignored"},
            "t": {"value": 1, "children": [{"value": 2.0}]},
            "o": {"mode": "fast", "junk": 1},
            "q": {},
            "box": {
                "label": "b",
                "corners": [{"x": 0, "y": 0}, {"x": 1.5}],
                "color": "green",
            },
        }
    )
    assert got["p"] == Point(x=1)
    assert got["t"] == Tree(value=1, children=[Tree(value=2)])
    assert type(got["t"].children[0].value) is int
    assert got["o"] == {"mode": "fast"}
    assert got["q"] == {}
    assert got["box"] == Box(
        label="b", corners=(Point(x=0, y=0), Point(x=1.5)), color=Color.GREEN, tags=[]
    )

    c = sig_of(containers).validate(
        {
            "xs": [1, 2.0],
            "pair": [1, "a"],
            "rest": [1, 2.5],
            "uniq": ["a", "a", "b"],
            "frozen": [1],
            "table": {"k": 1},
            "anything": [None, {}],
            "seq": [True],
            "mapping": {"k": ["v"]},
            "bare_list": [1, "x"],
            "bare_dict": {"a": [1]},
        }
    )
    assert c["pair"] == (1, "a")
    assert c["rest"] == (1, 2.5)
    assert c["uniq"] == {"a", "b"}
    assert c["frozen"] == frozenset({1})
    assert c["xs"] == [1, 2] and type(c["xs"][1]) is int

    e = sig_of(enums).validate({"color": "red", "level": 2.0})
    assert e == {"color": Color.RED, "level": Level.HIGH}
    lit = sig_of(literals).validate({"mode": "b", "mixed": True})
    assert lit["mixed"] is True
    assert sig_of(literals).validate({"mode": "b", "mixed": 1.0})["mixed"] == 1


def test_model_validators_become_invalid_params() -> None:
    @attrs.frozen
    class Positive:
        n: int = attrs.field(validator=attrs.validators.gt(0))

    async def f(p: Positive) -> None:
        pass

    sig = build_signature(f)
    assert sig.validate({"p": {"n": 1}}) == {"p": Positive(n=1)}
    with pytest.raises(InvalidParams) as info:
        sig.validate({"p": {"n": 0}})
    assert info.value.data["path"] == "arguments.p"


@pytest.mark.parametrize(
    ("fn", "args", "path", "reason"),
    [
        (add, {"a": 1, "b": "x"}, "arguments.b", "expected integer, got string"),
        (add, {"a": 1}, "arguments.b", "required argument is missing"),
        (add, {"a": True, "b": 1}, "arguments.a", "expected integer, got boolean"),
        (
            models,
            {
                "p": {"x": 1},
                "t": {"value": 1, "children": [{"value": 1}, {"value": "x"}]},
                "o": {"mode": "fast"},
                "q": {},
            },
            "arguments.t.children[1].value",
            "expected integer, got string",
        ),
        (
            models,
            {"p": {"y": 1}, "t": {"value": 1}, "o": {"mode": "fast"}, "q": {}},
            "arguments.p.x",
            "required property is missing",
        ),
        (
            models,
            {"p": {"x": 1}, "t": {"value": 1}, "o": {"mode": "medium"}, "q": {}},
            "arguments.o.mode",
            'expected one of ["fast", "slow"], got "medium"',
        ),
        (constrained, {"n": 11}, "arguments.n", "must be <= 10, got 11"),
        (constrained, {"n": 1, "x": 0}, "arguments.x", "must be > 0, got 0"),
        (
            constrained,
            {"n": 1, "name": "ABC"},
            "arguments.name",
            "does not match pattern '^[a-z]+$'",
        ),
        (
            constrained,
            {"n": 1, "items": []},
            "arguments.items",
            "must have at least 1 items, got 0",
        ),
        (containers, {"xs": [1, "2"]}, "arguments.xs[1]", "expected integer, got string"),
        (
            containers,
            {"xs": [], "pair": [1]},
            "arguments.pair",
            "expected an array of 2 items, got 1",
        ),
        (
            containers,
            {"xs": [], "pair": [1, "a"], "rest": [], "uniq": [], "frozen": [], "table": {"k": "v"}},
            "arguments.table.k",
            "expected number, got string",
        ),
        (unions, {"v": None}, "arguments.v", "expected integer or string, got null"),
    ],
)
def test_error_paths_and_reasons(fn: Any, args: dict[str, Any], path: str, reason: str) -> None:
    sig = sig_of(fn)
    with pytest.raises(InvalidParams) as info:
        sig.validate(args)
    err = info.value
    assert err.code == INVALID_PARAMS
    assert err.data == {"path": path, "reason": reason}
    top = path.split(".")[1].split("[")[0]
    assert repr(top) in err.message


def test_error_messages_read_well() -> None:
    with pytest.raises(InvalidParams) as info:
        sig_of(add).validate({"a": 1})
    assert info.value.message == "Missing required argument 'b'"
    with pytest.raises(InvalidParams) as info:
        sig_of(add).validate({"a": 1, "b": "2"})
    assert info.value.message == "Invalid argument 'b': expected integer, got string"
    with pytest.raises(InvalidParams) as info:
        sig_of(containers).validate({"xs": [1, "2"]})
    assert info.value.message == (
        "Invalid argument 'xs': expected integer, got string (at arguments.xs[1])"
    )


@pytest.mark.parametrize("bad", [[1, 2], "text", 3, True])
def test_arguments_must_be_an_object(bad: Any) -> None:
    with pytest.raises(InvalidParams) as info:
        sig_of(echo).validate(bad)
    assert info.value.data["path"] == "arguments"


def test_missing_arguments_object_means_empty() -> None:
    with pytest.raises(InvalidParams, match="Missing required argument 'text'"):
        sig_of(echo).validate(None)


# --- differential: our verdict == jsonschema's verdict ----------------------------------

ATOMS: list[Any] = [
    0, 1, 2, -3, 11, 10**20, 1.0, 2.0, 0.5, -0.0, 1.5, True, False, None,
    "", "a", "b", "ab", "abc", "ABC", "abcdef", "1", "red", "green", "fast", "slow", "x y",
]  # fmt: skip


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.6:
        return rng.choice(ATOMS)
    if roll < 0.8:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["x", "y", "value", "children", "mode", "limit", "a", "b", "k", "label", "corners"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """Change one random spot of a (valid) value: replace, drop a key, or add one."""
    if isinstance(value, dict) and value and depth < 4 and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.25:
            out["extra_key"] = random_json(rng)
        else:
            out[key] = mutate(rng, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4 and rng.random() < 0.7:
        i = rng.randrange(len(value))
        out_list = list(value)
        roll = rng.random()
        if roll < 0.15:
            del out_list[i]
        elif roll < 0.25:
            out_list.append(random_json(rng))
        else:
            out_list[i] = mutate(rng, value[i], depth + 1)
        return out_list
    return random_json(rng)


GOOD_ARGS: dict[str, list[dict[str, Any]]] = {
    "echo": [{"text": "hi"}],
    "add": [{"a": 1, "b": 2}],
    "prims": [{"s": "s", "i": 1, "f": 1.5, "b": True, "n": None}],
    "optionals": [{"a": None}, {"a": 1, "b": "x", "c": 2}],
    "literals": [{"mode": "a"}, {"mode": "b", "mixed": None}],
    "enums": [{"color": "red", "level": 2}],
    "containers": [
        {
            "xs": [1, 2],
            "pair": [1, "a"],
            "rest": [0.5],
            "uniq": ["a"],
            "frozen": [1, 2],
            "table": {"k": 1.0},
            "anything": [1, "a", None],
            "seq": [True, False],
            "mapping": {"k": ["a"]},
            "bare_list": [],
            "bare_dict": {},
        }
    ],
    "anys": [{"a": 1, "b": [None]}],
    "unions": [{"v": 1}, {"v": "a", "w": [1]}, {"v": 2, "w": {"k": 1}}],
    "models": [
        {
            "p": {"x": 1, "y": 2},
            "t": {"value": 1, "children": [{"value": 2, "children": []}]},
            "o": {"mode": "fast", "limit": 3},
            "q": {"a": "x", "b": False},
            "box": {"label": "ab", "corners": [{"x": 1}, {"x": 2, "y": 3}], "tags": ["t"]},
        }
    ],
    "constrained": [
        {"n": 0, "x": 0.25, "name": "abc", "items": ["a", "b"], "maybe": "ab", "obj": {"k": 1}}
    ],
    "with_context": [{"text": "hi"}],
}


@pytest.mark.parametrize("fn", SIGNATURE_FNS, ids=lambda f: f.__name__)
def test_validator_agrees_with_jsonschema(fn: Any) -> None:
    sig = sig_of(fn)
    checker = jsonschema.Draft202012Validator(sig.input_schema)
    rng = random.Random(f"differential-{fn.__name__}")
    good = GOOD_ARGS[fn.__name__]
    cases: list[Any] = list(good)
    for _ in range(600):
        cases.append(mutate(rng, rng.choice(good)))
    for _ in range(100):
        cases.append(random_json(rng, depth=1))
    # random objects built from the real property names
    names = list(sig.input_schema["properties"])
    for _ in range(200):
        cases.append({n: random_json(rng, 1) for n in names if rng.random() < 0.8})

    mismatches = []
    valid_count = 0
    for case in cases:
        ours = accepts(sig, case)
        theirs = checker.is_valid(case)
        valid_count += theirs
        if ours != theirs:
            mismatches.append((case, ours, theirs))
    assert not mismatches, f"{len(mismatches)} disagreements, first: {mismatches[:3]}"
    # the battery must exercise both verdicts
    assert 0 < valid_count < len(cases)
    for case in good:
        assert checker.is_valid(case), case


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


# --- tool names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a", "x-y_z.1", "A" * 128]
)
def test_valid_tool_names(name: str) -> None:
    validate_tool_name(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        ("A" * 129, "limit is 128"),
        ("get user", "' '"),
        ("a,b", "','"),
        ("tool/x", "'/'"),
        ("naïve", "'ï'"),
        ("emoji🙂", "not allowed"),
        ("tab\t", "not allowed"),
    ],
)
def test_invalid_tool_names(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_tool_name(name)


def test_tool_names_are_case_sensitive() -> None:
    # nothing is folded: both spellings are valid and distinct
    validate_tool_name("getUser")
    validate_tool_name("GETUSER")


# --- speed (reported, not asserted) -----------------------------------------------------


def test_validation_speed_report() -> None:
    cases: list[tuple[str, ToolSignature, dict[str, Any]]] = [
        ("echo(text)", sig_of(echo), {"text": "hello"}),
        ("add(a, b)", sig_of(add), {"a": 1, "b": 2}),
        ("models(...)", sig_of(models), GOOD_ARGS["models"][0]),
    ]
    for label, sig, args in cases:
        validate = sig.validate
        assert validate(args)  # the measured call must succeed
        n = 20000
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                validate(args)
            best = min(best, (time.perf_counter() - start) / n)
        print(f"validate {label}: {best * 1e6:.2f} µs")
