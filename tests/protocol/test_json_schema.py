"""The JSON Schema check against an oracle nobody here wrote (the ``jsonschema`` package,
Draft 2020-12), over schemas of the kinds MCP servers publish, plus its error paths."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from mcpactor.protocol.json_schema import first_error

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 150},
        "email": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True,
                 "maxItems": 3},
        "role": {"enum": ["admin", "user", None]},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
DEFS = {
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"},
                                                         "y": {"type": "number"}},
                        "required": ["x", "y"]}},
    "type": "object",
    "properties": {"points": {"type": "array", "items": {"$ref": "#/$defs/point"}}},
}
TREE = {
    "type": "object",
    "properties": {"value": {"type": "integer"},
                   "children": {"type": "array", "items": {"$ref": "#"}}},
    "required": ["value"],
}
COMBINED = {
    "oneOf": [{"type": "integer", "multipleOf": 3}, {"type": "integer", "multipleOf": 5}],
}
MIXED = {
    "type": ["string", "null", "number"],
    "not": {"const": "forbidden"},
    "anyOf": [{"type": "null"}, {"type": "string", "maxLength": 12},
              {"type": "number", "maximum": 10}],
}
TUPLE = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
         "items": False, "contains": {"const": 7}}
PATTERNED = {
    "type": "object",
    "patternProperties": {"^x-": {"type": "string"}},
    "additionalProperties": {"type": "integer"},
    "propertyNames": {"maxLength": 5},
    "minProperties": 1,
    "dependentRequired": {"a": ["b"]},
}
CONDITIONAL = {
    "type": "object",
    "if": {"properties": {"kind": {"const": "circle"}}},
    "then": {"required": ["radius"]},
    "else": {"required": ["width"]},
}
RESULT_WRAPPED = {"type": "object", "properties": {"result": {"type": "string"}},
                  "required": ["result"]}

CASES: list[tuple[dict[str, Any], list[Any]]] = [
    (PERSON, [
        {"name": "ann", "age": 30},
        {"name": "ann", "age": 30, "email": "a@b", "tags": ["x", "y"], "role": None},
        {"name": "", "age": 30}, {"name": "ann"}, {"name": "ann", "age": -1},
        {"name": "ann", "age": 150}, {"name": "ann", "age": 1.0}, {"name": "ann", "age": 1.5},
        {"name": "ann", "age": True}, {"name": "ann", "age": 3, "extra": 1},
        {"name": "ann", "age": 3, "email": "nope"}, {"name": "ann", "age": 3, "tags": ["a", "a"]},
        {"name": "ann", "age": 3, "tags": ["a", "b", "c", "d"]},
        {"name": "ann", "age": 3, "role": "root"}, {"name": "ünïcödé", "age": 3},
        {"name": "123456789", "age": 3}, [], "ann", None,
    ]),
    (DEFS, [
        {"points": []}, {"points": [{"x": 1, "y": 2.5}]}, {"points": [{"x": 1}]},
        {"points": [{"x": "1", "y": 2}]}, {},
    ]),
    (TREE, [
        {"value": 1}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
        {"value": 1, "children": [{"value": 2, "children": [{"value": "3"}]}]},
        {"children": []},
    ]),
    (COMBINED, [9, 10, 15, 7, "9", 0]),
    (MIXED, [None, "short", "a much longer string", 3, 11, "forbidden", True, []]),
    (TUPLE, [["a", 7], ["a", 7, 8], ["a", "b"], [7, 7], [], ["a", 1]]),
    (PATTERNED, [{"x-a": "s"}, {"x-a": 1}, {"n": 1}, {"n": "s"}, {"toolong": 1}, {},
                 {"a": 1}, {"a": 1, "b": 2}]),
    (CONDITIONAL, [{"kind": "circle", "radius": 1}, {"kind": "circle", "width": 1},
                   {"kind": "square", "width": 1}, {"kind": "square"}]),
    (RESULT_WRAPPED, [{"result": "hi"}, {"result": 1}, {}]),
    ({"type": "array", "items": {"type": "object", "additionalProperties": False}},
     [[{}], [{"a": 1}]]),
    ({"const": {"a": [1, 2.0]}}, [{"a": [1, 2]}, {"a": [1, 3]}, {"a": [True, 2]}]),
    ({"type": "number", "multipleOf": 0.5}, [1.5, 1.25, 10]),
    (True, [1, None]), (False, [1, None]),
    ({"format": "email", "x-custom": 1}, ["not an email", 3]),
]


@pytest.mark.parametrize(("schema", "instances"), CASES)
def test_agrees_with_the_jsonschema_package(schema: Any, instances: list[Any]) -> None:
    oracle = jsonschema.Draft202012Validator(schema)
    for instance in instances:
        ours = first_error(instance, schema)
        assert (ours is None) == oracle.is_valid(instance), (instance, ours)


@pytest.mark.parametrize(("instance", "path", "reason"), [
    ({"name": "ann"}, "$", "missing required property 'age'"),
    ({"name": "ann", "age": 1.5}, "$.age", "expected integer, got number"),
    ({"name": "ann", "age": 3, "extra": 1}, "$.extra", "no such property is allowed"),
    ({"name": "ann", "age": 3, "tags": ["a", 2]}, "$.tags[1]", "expected string, got integer"),
    ({"name": "ann", "age": 3, "tags": ["a", "a"]}, "$.tags[1]", "repeats item 0"),
    ({"name": "ann", "age": 200}, "$.age", "200 is not < 150"),
    ({"name": "ann", "age": 3, "role": "root"}, "$.role",
     "'root' is not one of ['admin', 'user', None]"),
])
def test_errors_say_where_and_why(instance: Any, path: str, reason: str) -> None:
    error = first_error(instance, PERSON)
    assert error is not None
    assert (error.path, error.reason) == (path, reason)
    assert str(error) == f"{path}: {reason}"


def test_a_schema_it_cannot_use_fails_with_the_reason_not_a_crash() -> None:
    error = first_error({"a": 1}, {"properties": {"a": {"$ref": "#/$defs/missing"}}})
    assert error is not None and "does not resolve" in error.reason
    error = first_error({"a": 1}, {"properties": {"a": {"$ref": "https://x/s.json"}}})
    assert error is not None and "points outside the schema" in error.reason
    error = first_error("x", {"pattern": "("})
    assert error is not None and "pattern '(' is invalid" in error.reason
    error = first_error(1, {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})
    assert error is not None and "nests too deeply" in error.reason


def test_multiple_of_a_decimal_fraction_allows_for_binary_rounding() -> None:
    # 0.3 / 0.1 is 2.9999999999999996 in binary floating point: a value a user typed as a
    # multiple of 0.1 is one (the jsonschema package says otherwise; we side with the user).
    assert first_error(0.3, {"multipleOf": 0.1}) is None
    error = first_error(0.35, {"multipleOf": 0.1})
    assert error is not None and error.reason == "0.35 is not a multiple of 0.1"
