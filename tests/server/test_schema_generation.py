"""Tests for mcpactor.server.schema: the schemas built from type hints.

Also the context parameter, errors at build time, and the tool-name rules.
"""

import json
from typing import Annotated, Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
from schema_support import (
    SIGNATURE_FNS,
    Context,
    Point,
    SubContext,
    Tree,
    anys,
    constrained,
    containers,
    enums,
    literals,
    models,
    optionals,
    prims,
    sig_of,
    with_context,
)

from mcpactor.server.schema import Field, build_signature, validate_tool_name

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
