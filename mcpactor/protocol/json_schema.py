"""Checking a JSON value against a JSON Schema (2020-12), for the schemas MCP carries.

The spec asks clients to check a tool's ``structuredContent`` against its
``outputSchema`` and both sides to check elicitation content against the requested
schema. Those schemas come from the peer, so this takes any schema and checks the
assertion keywords of the 2020-12 core and validation vocabularies: ``type``, ``enum``,
``const``; ``properties``, ``required``, ``additionalProperties``,
``patternProperties``, ``propertyNames``, ``minProperties``/``maxProperties``,
``dependentRequired``; ``items``, ``prefixItems``, ``contains``, ``minItems``/
``maxItems``, ``uniqueItems``; string lengths (in code points) and ``pattern``; numeric
bounds and ``multipleOf``; ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/
``else``; boolean schemas; and ``$ref`` within the document (``#``, ``#/$defs/...``,
``#/definitions/...``, any JSON pointer). Other keywords are annotations here, as the
2020-12 default says of ``format``: an unknown keyword never fails a value. A
``$ref`` that cannot be resolved in the document fails the check with that reason.

Pure and sans-I/O: :func:`first_error` returns where and why a value fails, or None.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeGuard

__all__ = ["SchemaMismatch", "first_error"]

#: Nested schemas followed before the check gives up (a ``$ref`` cycle that never
#: consumes the value).
_MAX_DEPTH = 64


class SchemaMismatch(Exception):
    """Where (``path``, like ``$.items[0].name``) and why a value fails its schema."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def first_error(instance: Any, schema: Any) -> SchemaMismatch | None:
    """The first way ``instance`` (decoded JSON) fails ``schema``, or None if it passes."""
    try:
        _Checker(schema).check(instance, schema, "$", 0)
    except SchemaMismatch as exc:
        return exc
    return None


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _has_type(value: Any, name: str) -> bool:
    actual = _type_of(value)
    return actual == name or (name == "number" and actual == "integer")


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but true is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Checker:
    def __init__(self, root: Any) -> None:
        self.root = root
        self._patterns: dict[str, re.Pattern[str]] = {}

    def _pattern(self, source: str, path: str) -> re.Pattern[str]:
        compiled = self._patterns.get(source)
        if compiled is None:
            try:
                compiled = self._patterns[source] = re.compile(source)
            except re.error as exc:
                reason = f"the schema's pattern {source!r} is invalid: {exc}"
                raise SchemaMismatch(path, reason) from None
        return compiled

    def _resolve(self, ref: str, path: str) -> Any:
        if not ref.startswith("#"):
            raise SchemaMismatch(path, f"$ref {ref!r} points outside the schema")
        node = self.root
        pointer = ref[1:]
        if pointer:
            if not pointer.startswith("/"):
                raise SchemaMismatch(path, f"$ref {ref!r} is not a JSON pointer")
            for raw in pointer[1:].split("/"):
                part = raw.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and part in node:
                    node = node[part]
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    raise SchemaMismatch(path, f"$ref {ref!r} does not resolve in the schema")
        return node

    def passes(self, value: Any, schema: Any, path: str, depth: int) -> bool:
        try:
            self.check(value, schema, path, depth)
        except SchemaMismatch:
            return False
        return True

    def check(self, value: Any, schema: Any, path: str, depth: int) -> None:
        if schema is True or schema == {}:
            return
        if schema is False:
            raise SchemaMismatch(path, "no value is allowed here")
        if not isinstance(schema, dict):
            return  # not a schema: nothing it could assert
        if depth > _MAX_DEPTH:
            raise SchemaMismatch(path, "the schema nests too deeply (a $ref cycle?)")
        ref = schema.get("$ref")
        if isinstance(ref, str):
            self.check(value, self._resolve(ref, path), path, depth + 1)
        self._generic(value, schema, path, depth)
        kind = _type_of(value)
        if kind == "object":
            self._object(value, schema, path, depth)
        elif kind == "array":
            self._array(value, schema, path, depth)
        elif kind == "string":
            self._string(value, schema, path)
        elif kind in ("integer", "number"):
            self._number(value, schema, path)

    def _generic(self, value: Any, schema: dict[str, Any], path: str, depth: int) -> None:
        expected = schema.get("type")
        if isinstance(expected, str) and not _has_type(value, expected):
            raise SchemaMismatch(path, f"expected {expected}, got {_type_of(value)}")
        if isinstance(expected, list) and not any(_has_type(value, t) for t in expected):
            raise SchemaMismatch(
                path, f"expected one of {', '.join(map(str, expected))}, got {_type_of(value)}")
        if "const" in schema and not _equal(value, schema["const"]):
            raise SchemaMismatch(path, f"expected {_short(schema['const'])}, got {_short(value)}")
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(_equal(value, e) for e in enum):
            raise SchemaMismatch(path, f"{_short(value)} is not one of {_short(enum)}")
        for sub in schema.get("allOf") or ():
            self.check(value, sub, path, depth + 1)
        any_of = schema.get("anyOf")
        if isinstance(any_of, list) and not any(
                self.passes(value, s, path, depth + 1) for s in any_of):
            raise SchemaMismatch(path, "matches none of the anyOf schemas")
        one_of = schema.get("oneOf")
        if isinstance(one_of, list):
            matched = sum(self.passes(value, s, path, depth + 1) for s in one_of)
            if matched != 1:
                raise SchemaMismatch(path, f"matches {matched} of the oneOf schemas, not one")
        if "not" in schema and self.passes(value, schema["not"], path, depth + 1):
            raise SchemaMismatch(path, "matches the schema under 'not'")
        if "if" in schema:
            branch = "then" if self.passes(value, schema["if"], path, depth + 1) else "else"
            if branch in schema:
                self.check(value, schema[branch], path, depth + 1)

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str,
                depth: int) -> None:
        for name in schema.get("required") or ():
            if name not in value:
                raise SchemaMismatch(path, f"missing required property {name!r}")
        dependent = schema.get("dependentRequired")
        if isinstance(dependent, dict):
            for name, needs in dependent.items():
                if name in value:
                    for other in needs:
                        if other not in value:
                            raise SchemaMismatch(path, f"{name!r} requires {other!r}")
        _count(len(value), schema, "minProperties", "maxProperties", "properties", path)
        names = schema.get("propertyNames")
        if names is not None:
            for key in value:
                self.check(key, names, f"{path} (property name {key!r})", depth + 1)
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        additional = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"
            covered = False
            if key in properties:
                covered = True
                self.check(item, properties[key], where, depth + 1)
            for source, sub in patterns.items():
                if self._pattern(source, path).search(key):
                    covered = True
                    self.check(item, sub, where, depth + 1)
            if not covered:
                if additional is False:
                    raise SchemaMismatch(where, "no such property is allowed")
                self.check(item, additional, where, depth + 1)

    def _array(self, value: list[Any], schema: dict[str, Any], path: str, depth: int) -> None:
        _count(len(value), schema, "minItems", "maxItems", "items", path)
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for i, (item, sub) in enumerate(zip(value, prefix, strict=False)):
            self.check(item, sub, f"{path}[{i}]", depth + 1)
        items = schema.get("items")
        if items is not None:
            for i in range(len(prefix), len(value)):
                self.check(value[i], items, f"{path}[{i}]", depth + 1)
        if "contains" in schema:
            found = sum(self.passes(item, schema["contains"], path, depth + 1) for item in value)
            low = schema.get("minContains", 1)
            high = schema.get("maxContains")
            if found < low:
                raise SchemaMismatch(path, f"{found} item(s) match 'contains', at least {low} "
                                           "needed")
            if isinstance(high, int) and found > high:
                raise SchemaMismatch(path, f"{found} items match 'contains', at most {high} "
                                           "allowed")
        if schema.get("uniqueItems") is True:
            for i in range(len(value)):
                for j in range(i):
                    if _equal(value[i], value[j]):
                        raise SchemaMismatch(f"{path}[{i}]", f"repeats item {j}")

    def _string(self, value: str, schema: dict[str, Any], path: str) -> None:
        _count(len(value), schema, "minLength", "maxLength", "characters", path)
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not self._pattern(pattern, path).search(value):
            raise SchemaMismatch(path, f"{_short(value)} does not match {pattern!r}")

    def _number(self, value: float, schema: dict[str, Any], path: str) -> None:
        checks: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
            ("minimum", lambda v, b: v >= b, ">="),
            ("maximum", lambda v, b: v <= b, "<="),
            ("exclusiveMinimum", lambda v, b: v > b, ">"),
            ("exclusiveMaximum", lambda v, b: v < b, "<"),
        )
        for key, ok, sign in checks:
            bound = schema.get(key)
            if _is_number(bound) and not ok(value, bound):
                raise SchemaMismatch(path, f"{value!r} is not {sign} {bound!r}")
        step = schema.get("multipleOf")
        if _is_number(step) and step > 0:
            quotient = value / step
            if not math.isfinite(quotient) or abs(quotient - round(quotient)) > 1e-9:
                raise SchemaMismatch(path, f"{value!r} is not a multiple of {step!r}")


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(n: int, schema: dict[str, Any], low_key: str, high_key: str, what: str,
           path: str) -> None:
    low, high = schema.get(low_key), schema.get(high_key)
    if _is_number(low) and n < low:
        raise SchemaMismatch(path, f"{n} {what}, at least {low} needed")
    if _is_number(high) and n > high:
        raise SchemaMismatch(path, f"{n} {what}, at most {high} allowed")
