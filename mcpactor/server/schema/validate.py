"""The runtime half of validation: converters, failures, and the paths they report.

A converter takes a JSON value and returns the Python value for it or raises
:class:`_Invalid`. Paths are collected while the exception unwinds, so a successful call
never builds one; the top-level validator turns the failure into ``InvalidParams``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from mcpactor.protocol.errors import InvalidParams
from mcpactor.server.schema.fields import MISSING

_NoneType = type(None)


# ---------------------------------------------------------------------------------------
# Validation failures


class _Invalid(Exception):
    """A validation failure deep inside a value; the path is collected while unwinding.

    Segments are appended innermost first, so the success path never pays for paths.
    """

    __slots__ = ("path", "reason")

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str | int] = []


_JSON_TYPE_NAMES: Final[dict[type, str]] = {
    _NoneType: "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _json_type(value: Any) -> str:
    name = _JSON_TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    for py, js in _JSON_TYPE_NAMES.items():
        if isinstance(value, py):
            return js
    return type(value).__name__


def _got(expected: str, value: Any) -> _Invalid:
    return _Invalid(f"expected {expected}, got {_json_type(value)}")


def _preview(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of a rejected value for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _format_path(segments: Iterable[str | int]) -> str:
    out = "arguments"
    for seg in segments:
        out += f"[{seg}]" if isinstance(seg, int) else f".{seg}"
    return out


_MISSING_ARGUMENT: Final = "required argument is missing"
_MISSING_PROPERTY: Final = "required property is missing"


def _to_invalid_params(exc: _Invalid) -> InvalidParams:
    segments = exc.path[::-1]
    path = _format_path(segments)
    name = segments[0] if segments else None
    if name is None:
        message = f"Invalid tool arguments: {exc.reason}"
    elif len(segments) == 1:
        if exc.reason == _MISSING_ARGUMENT:
            message = f"Missing required argument {name!r}"
        else:
            message = f"Invalid argument {name!r}: {exc.reason}"
    else:
        message = f"Invalid argument {name!r}: {exc.reason} (at {path})"
    return InvalidParams(message, data={"path": path, "reason": exc.reason})


# ---------------------------------------------------------------------------------------
# Primitive converters: each takes a JSON value and returns the Python value or raises.

_Conv = Callable[[Any], Any]


def _conv_any(value: Any) -> Any:
    return value


def _conv_str(value: Any) -> Any:
    if isinstance(value, str):
        return value
    raise _got("string", value)


def _conv_int(value: Any) -> Any:
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # JSON Schema's "integer" is a mathematical notion: 1.0 is an integer.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _got("integer", value)


def _conv_float(value: Any) -> Any:
    t = type(value)
    if t is float or t is int:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise _got("number", value)


def _conv_bool(value: Any) -> Any:
    if value is True or value is False:
        return value
    raise _got("boolean", value)


def _conv_none(value: Any) -> Any:
    if value is None:
        return None
    raise _got("null", value)


def _enum_schema_and_conv(members: list[tuple[Any, Any]]) -> tuple[dict[str, Any], _Conv]:
    """Schema and converter for a closed set of ``(json value, python value)`` pairs."""
    # JSON Schema enum equality treats 1 and 1.0 as equal but true and 1 as different;
    # Python's hashing agrees on the first and not the second, so booleans get their
    # own table.
    bools: dict[Any, Any] = {}
    others: dict[Any, Any] = {}
    for js, py in members:
        table = bools if isinstance(js, bool) else others
        table.setdefault(js, py)
    values = [js for js, _ in members]
    schema: dict[str, Any] = {"enum": values}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1:
        schema = {"type": kinds.pop(), **schema}
    shown = ", ".join(json.dumps(v) for v in values)

    def conv(value: Any) -> Any:
        table = bools if isinstance(value, bool) else others
        try:
            result = table.get(value, MISSING)
        except TypeError:  # unhashable: a list or an object is never a member
            result = MISSING
        if result is MISSING:
            raise _Invalid(f"expected one of [{shown}], got {_preview(value)}")
        return result

    return schema, conv


# ---------------------------------------------------------------------------------------
# Objects: model properties and the tool's arguments object


@attrs.frozen
class _Prop:
    """One property of an object: its JSON key, keyword name and how to fill it."""

    key: str
    kwarg: str
    conv: _Conv
    required: bool
    inject: Any  # value passed when absent (from Field(default=...)), or MISSING


def _object_conv(props: list[_Prop], construct: Callable[..., Any] | None) -> _Conv:
    """Converter for a JSON object with known properties; unknown keys are ignored."""
    table = tuple((p.key, p.kwarg, p.conv, p.required, p.inject) for p in props)

    def conv(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _got("object", value)
        out: dict[str, Any] = {}
        get = value.get
        key = ""
        try:
            for key, kwarg, c, required, inject in table:
                v = get(key, MISSING)
                if v is MISSING:
                    if required:
                        raise _Invalid(_MISSING_PROPERTY)
                    if inject is not MISSING:
                        out[kwarg] = inject
                    continue
                out[kwarg] = c(v)
        except _Invalid as exc:
            exc.path.append(key)
            raise
        if construct is None:
            return out
        try:
            return construct(**out)
        except (TypeError, ValueError) as exc:
            # A model's own validators (attrs validators, __post_init__) said no.
            raise _Invalid(f"{construct.__name__}: {exc}") from exc

    return conv


def _top_level_validator(
    props: list[_Prop],
) -> Callable[[Mapping[str, Any] | None], dict[str, Any]]:
    table = tuple((p.key, p.conv, p.required, p.inject) for p in props)
    injected = {p.key: p.inject for p in props if p.inject is not MISSING}
    any_required = any(p.required for p in props)

    def validate(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        if arguments is None:
            if not any_required:
                return dict(injected)
            arguments = {}
        elif not isinstance(arguments, dict):
            raise InvalidParams(
                f"Tool arguments must be an object, got {_json_type(arguments)}",
                data={
                    "path": "arguments",
                    "reason": f"expected object, got {_json_type(arguments)}",
                },
            )
        out: dict[str, Any] = {}
        get = arguments.get
        key = ""
        try:
            for key, conv, required, inject in table:
                v = get(key, MISSING)
                if v is MISSING:
                    if required:
                        raise _Invalid(_MISSING_ARGUMENT)
                    if inject is not MISSING:
                        out[key] = inject
                    continue
                out[key] = conv(v)
        except _Invalid as exc:
            exc.path.append(key)
            raise _to_invalid_params(exc) from None
        return out

    return validate
