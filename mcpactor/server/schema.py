"""JSON Schema from type hints, and the compiled argument validators of tools.

A tool is an ``async def`` whose parameters are annotated; :func:`build_signature` turns
those annotations into the tool's ``inputSchema`` (JSON Schema 2020-12) and, from the
return annotation, its ``outputSchema``. It also compiles one validator closure per tool,
because validation runs on every ``tools/call``: the closure only does ``isinstance``
checks and dict look-ups that were decided at registration time, never walks the schema.

The validator's verdicts are meant to be exactly those of a JSON Schema validator on the
generated schema (the tests check this differentially against ``jsonschema``), with one
deliberate difference in what is *passed on*: unknown argument keys are accepted (MCP
clients sometimes add some) but are not given to the function.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, unions and
``Optional``, ``Literal``, ``Enum`` subclasses, ``list``/``tuple``/``set``/``frozenset``
and their ``collections.abc`` counterparts, ``dict[str, X]``, ``Any``, ``NewType``,
``TypedDict``, attrs classes, dataclasses, and ``Annotated[X, Field(...)]`` (or
``Annotated[X, "a description"]``). Recursive models are emitted under ``$defs``;
other models are inlined.
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

import attrs

from mcpactor.protocol.errors import InvalidParams

__all__ = [
    "MISSING",
    "Field",
    "ToolSignature",
    "build_signature",
    "serialize_output",
    "to_jsonable",
    "validate_tool_name",
]


class _MissingType(enum.Enum):
    MISSING = enum.auto()

    def __repr__(self) -> str:
        return "MISSING"


#: Sentinel for "no default" in :class:`Field` (``None`` is a legitimate default).
MISSING: Final = _MissingType.MISSING

_NoneType = type(None)


@attrs.frozen(kw_only=True)
class Field:
    """Schema metadata for one value, used inside ``typing.Annotated``.

    ``Annotated[int, Field(description="How many", ge=1)]`` documents the value and
    constrains it; constraints are both written into the schema and checked by the
    validator. ``min_length``/``max_length`` apply to strings (characters), arrays
    (items) and objects (properties), whichever the annotated type can be. ``default``
    makes a parameter or model field optional and is passed when the client omits it.
    """

    description: str | None = None
    title: str | None = None
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    lt: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    default: Any = MISSING


def _default_validate(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    raise NotImplementedError  # pragma: no cover - always replaced by build_signature


@attrs.frozen(kw_only=True, eq=False)
class ToolSignature:
    """What the server needs to know about a tool function's parameters and result.

    ``validate(arguments)`` checks the client's ``arguments`` object and returns the
    keyword arguments to call the function with (the context parameter is not among
    them: the server injects it as ``context_param``). Arguments the client left out
    are left out, so Python applies the defaults, except defaults declared with
    ``Field(default=...)``, which are filled in. It raises
    :class:`~mcpactor.protocol.errors.InvalidParams` whose ``data`` is
    ``{"path": "arguments.<name>...", "reason": ...}``.

    ``wrap_output`` means the structured result is ``{"result": value}`` because the
    return type is not an object type; ``output_schema`` is ``None`` when the result is
    not structured (``str``, ``None``, content types, or unannotated).
    """

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrap_output: bool
    context_param: str | None
    #: The compiled validator; an attribute rather than a method to save a call frame.
    validate: Callable[[Mapping[str, Any] | None], dict[str, Any]] = attrs.field(
        default=_default_validate, repr=False
    )


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


_PRIMITIVES: Final[dict[Any, tuple[dict[str, Any], _Conv]]] = {
    str: ({"type": "string"}, _conv_str),
    int: ({"type": "integer"}, _conv_int),
    float: ({"type": "number"}, _conv_float),
    bool: ({"type": "boolean"}, _conv_bool),
    _NoneType: ({"type": "null"}, _conv_none),
    None: ({"type": "null"}, _conv_none),
    Any: ({}, _conv_any),
    object: ({}, _conv_any),
}

_ARRAY_ORIGINS: Final = {
    list: list,
    set: set,
    frozenset: frozenset,
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Iterable: list,
    collections.abc.Collection: list,
    collections.abc.Set: frozenset,
    collections.abc.MutableSet: set,
}
_MAPPING_ORIGINS: Final = {dict, collections.abc.Mapping, collections.abc.MutableMapping}


def _scalar_json(value: Any) -> Any:
    """The JSON form of an enum or literal member, or TypeError if it has none."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"enum value {value!r} is not a JSON scalar")


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


def _schema_types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a schema can accept (used to pick which constraints apply)."""
    if "$ref" in schema:
        return {"object"}
    if "type" in schema:
        t = schema["type"]
        return {t} if isinstance(t, str) else set(t)
    if "anyOf" in schema:
        out: set[str] = set()
        for sub in schema["anyOf"]:
            out |= _schema_types(sub, defs)
        return out
    if "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    return {"null", "boolean", "integer", "number", "string", "array", "object"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_SIZED: Final[tuple[tuple[str, type, str, str, str], ...]] = (
    ("string", str, "characters", "minLength", "maxLength"),
    ("array", list, "items", "minItems", "maxItems"),
    ("object", dict, "properties", "minProperties", "maxProperties"),
)


def _min_size_check(n: int, py_type: type, unit: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if isinstance(v, py_type) and len(v) < n:  # type: ignore[arg-type]
            raise _Invalid(f"must have at least {n} {unit}, got {len(v)}")  # type: ignore[arg-type]

    return check


def _max_size_check(n: int, py_type: type, unit: str) -> Callable[[Any], None]:
    def check(v: Any) -> None:
        if isinstance(v, py_type) and len(v) > n:  # type: ignore[arg-type]
            raise _Invalid(f"must have at most {n} {unit}, got {len(v)}")  # type: ignore[arg-type]

    return check


def _constraint_checks(
    meta: Field, schema: dict[str, Any], defs: dict[str, Any], where: str
) -> tuple[dict[str, Any], list[Callable[[Any], None]]]:
    """Schema keywords and runtime checks for a Field's constraints.

    Each keyword applies only to values of its JSON type, as in JSON Schema, so the
    checks guard on the raw value's type the same way.
    """
    kinds = _schema_types(schema, defs)
    keywords: dict[str, Any] = {}
    checks: list[Callable[[Any], None]] = []
    numeric = bool(kinds & {"integer", "number"})

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise TypeError(f"{where}: Field({what}=...) does not apply to {schema or 'Any'}")

    if meta.ge is not None:
        need(numeric, "ge")
        ge = meta.ge
        keywords["minimum"] = ge

        def check_ge(v: Any) -> None:
            if _is_number(v) and v < ge:
                raise _Invalid(f"must be >= {ge}, got {v}")

        checks.append(check_ge)
    if meta.gt is not None:
        need(numeric, "gt")
        gt = meta.gt
        keywords["exclusiveMinimum"] = gt

        def check_gt(v: Any) -> None:
            if _is_number(v) and v <= gt:
                raise _Invalid(f"must be > {gt}, got {v}")

        checks.append(check_gt)
    if meta.le is not None:
        need(numeric, "le")
        le = meta.le
        keywords["maximum"] = le

        def check_le(v: Any) -> None:
            if _is_number(v) and v > le:
                raise _Invalid(f"must be <= {le}, got {v}")

        checks.append(check_le)
    if meta.lt is not None:
        need(numeric, "lt")
        lt = meta.lt
        keywords["exclusiveMaximum"] = lt

        def check_lt(v: Any) -> None:
            if _is_number(v) and v >= lt:
                raise _Invalid(f"must be < {lt}, got {v}")

        checks.append(check_lt)

    # (JSON type, Python type, unit for messages, min keyword, max keyword)
    sized: list[tuple[type, str, str, str]] = [
        (py, unit, lo_kw, hi_kw) for kind, py, unit, lo_kw, hi_kw in _SIZED if kind in kinds
    ]
    if meta.min_length is not None:
        need(bool(sized), "min_length")
        for py_type, unit, lo_kw, _ in sized:
            keywords[lo_kw] = meta.min_length
            checks.append(_min_size_check(meta.min_length, py_type, unit))
    if meta.max_length is not None:
        need(bool(sized), "max_length")
        for py_type, unit, _, hi_kw in sized:
            keywords[hi_kw] = meta.max_length
            checks.append(_max_size_check(meta.max_length, py_type, unit))
    if meta.pattern is not None:
        need("string" in kinds, "pattern")
        try:
            rx = re.compile(meta.pattern)
        except re.error as exc:
            raise TypeError(f"{where}: invalid pattern {meta.pattern!r}: {exc}") from None
        keywords["pattern"] = meta.pattern
        search = rx.search
        pattern = meta.pattern

        def check_pattern(v: Any) -> None:
            # JSON Schema patterns are unanchored, hence search rather than match.
            if isinstance(v, str) and search(v) is None:
                raise _Invalid(f"does not match pattern {pattern!r}")

        checks.append(check_pattern)
    return keywords, checks


def to_jsonable(value: Any) -> Any:
    """Convert a Python value to JSON-ready data (dicts, lists, str, numbers, bools, None).

    attrs instances become dicts keyed by field name (via ``attrs.asdict`` without
    recursion, then converted here so nested enums, dataclasses and attrs instances are
    handled alike); dataclasses likewise; enums become their values; tuples and sets
    become lists. Raises TypeError for anything else.
    """
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if t is list or t is tuple:
        return [to_jsonable(v) for v in value]
    if t is dict:
        return {_json_key(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if attrs.has(t):
        return {k: to_jsonable(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if dataclasses.is_dataclass(value):
        # dataclasses.asdict would deep-copy everything and stop at nested attrs classes.
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {_json_key(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset, collections.abc.Sequence)):
        return [to_jsonable(v) for v in value]
    raise TypeError(f"cannot convert {t.__name__} to JSON")


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return str(key.value)
    if isinstance(key, (int, float, bool)) or key is None:
        return json.dumps(key)
    raise TypeError(f"cannot use {type(key).__name__} as a JSON object key")


def _json_default(value: Any) -> tuple[bool, Any]:
    """``(True, json form)`` when a default can be shown in the schema."""
    try:
        js = to_jsonable(value)
        json.dumps(js, allow_nan=False)
    except (TypeError, ValueError):
        return False, None
    return True, js


# ---------------------------------------------------------------------------------------
# The compiler from annotations to (schema, converter)


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


def _strip_annotated(tp: Any) -> tuple[Any, list[Any]]:
    meta: list[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        meta.extend(tp.__metadata__)
        tp = tp.__origin__
    return tp, meta


def _hints(obj: Any, where: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception as exc:  # NameError for unresolvable forward refs, and friends
        raise TypeError(f"{where}: cannot resolve type hints: {exc}") from exc


class _Compiler:
    """Compiles annotations for one schema (input or output); owns its ``$defs``."""

    def __init__(self, *, output: bool) -> None:
        self.output = output
        self.defs: dict[str, dict[str, Any]] = {}
        self._def_names: dict[type, str] = {}
        self._stack: list[type] = []
        self._recursive: set[type] = set()
        self._done: dict[type, tuple[dict[str, Any], _Conv]] = {}
        self._convs: dict[type, _Conv] = {}

    # -- entry point -----------------------------------------------------------------

    def compile(self, tp: Any, where: str) -> tuple[dict[str, Any], _Conv]:
        """Schema and converter for an annotation; TypeError if unsupported."""
        tp, meta = _strip_annotated(tp)
        schema, conv = self._compile_bare(tp, where)
        fields = [m for m in meta if isinstance(m, Field)]
        descriptions = [m for m in meta if isinstance(m, str)]
        if not fields and not descriptions:
            return schema, conv
        extra: dict[str, Any] = {}
        if descriptions:
            extra["description"] = descriptions[-1]
        checks: list[Callable[[Any], None]] = []
        for f in fields:
            if f.title is not None:
                extra["title"] = f.title
            if f.description is not None:
                extra["description"] = f.description
            keywords, more = _constraint_checks(f, schema, self.defs, where)
            extra.update(keywords)
            checks.extend(more)
        schema = {**schema, **extra}
        if not checks:
            return schema, conv
        all_checks = tuple(checks)

        def constrained(value: Any) -> Any:
            result = conv(value)
            for check in all_checks:
                check(value)
            return result

        return schema, constrained

    # -- dispatch --------------------------------------------------------------------

    def _compile_bare(self, tp: Any, where: str) -> tuple[dict[str, Any], _Conv]:
        if isinstance(tp, str):
            raise TypeError(f"{where}: unresolved forward reference {tp!r}")
        try:
            prim = _PRIMITIVES.get(tp)
        except TypeError:  # unhashable annotation objects exist in the wild
            prim = None
        if prim is not None:
            return prim
        if isinstance(tp, typing.NewType):
            return self.compile(tp.__supertype__, where)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Union or origin is types.UnionType:
            return self._union(args, where)
        if origin is Literal:
            return _enum_schema_and_conv([(_scalar_json(a), a) for a in args])
        if origin in (typing.Required, typing.NotRequired):
            return self.compile(args[0], where)
        if tp is tuple or origin is tuple:
            return self._tuple(args, where)
        container = origin if origin is not None else tp
        if container in _ARRAY_ORIGINS:
            return self._array(args[0] if args else Any, _ARRAY_ORIGINS[container], where)
        if container in _MAPPING_ORIGINS:
            return self._mapping(args, where)
        if isinstance(tp, type):
            if issubclass(tp, enum.Enum):
                return self._enum(tp)
            if typing.is_typeddict(tp) or attrs.has(tp) or dataclasses.is_dataclass(tp):
                return self._model(tp, where)
        raise TypeError(f"{where}: unsupported annotation {tp!r}")

    # -- composite types -------------------------------------------------------------

    def _union(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], _Conv]:
        nullable = _NoneType in args
        compiled = [self.compile(a, where) for a in args if a is not _NoneType]
        schemas = [s for s, _ in compiled]
        if nullable:
            schemas.append({"type": "null"})
        schema = {"anyOf": schemas}
        if nullable and len(compiled) == 1:
            inner = compiled[0][1]

            # Optional[X] is the common case: let X's own error (with its path) through.
            def optional(value: Any) -> Any:
                return None if value is None else inner(value)

            return schema, optional
        convs = tuple(c for _, c in compiled)
        shown = " or ".join(_describe(s) for s in schemas)

        def any_of(value: Any) -> Any:
            if value is None and nullable:
                return None
            for c in convs:
                try:
                    return c(value)
                except _Invalid:
                    pass
            raise _got(shown, value)

        return schema, any_of

    def _array(self, item: Any, build: type, where: str) -> tuple[dict[str, Any], _Conv]:
        item_schema, item_conv = self.compile(item, where)
        schema: dict[str, Any] = {"type": "array"}
        if item_schema:
            schema["items"] = item_schema
        if item_conv is _conv_any and build is list:

            def plain_list(value: Any) -> Any:
                if isinstance(value, list):
                    return value
                raise _got("array", value)

            return schema, plain_list

        def array(value: Any) -> Any:
            if not isinstance(value, list):
                raise _got("array", value)
            out: list[Any] = []
            append = out.append
            i = 0
            try:
                for i, v in enumerate(value):  # noqa: B007 - i is read in the handler
                    append(item_conv(v))
            except _Invalid as exc:
                exc.path.append(i)
                raise
            if build is list:
                return out
            try:
                return build(out)
            except TypeError as exc:  # unhashable items for a set
                raise _Invalid(f"items cannot form a set: {exc}") from exc

        return schema, array

    def _tuple(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], _Conv]:
        if not args:
            return self._array(Any, tuple, where)
        if len(args) == 2 and args[1] is Ellipsis:
            return self._array(args[0], tuple, where)
        if args == ((),):  # tuple[()] — the empty tuple
            args = ()
        compiled = [self.compile(a, where) for a in args]
        n = len(compiled)
        schema: dict[str, Any] = {"type": "array", "minItems": n, "maxItems": n}
        if compiled:  # 2020-12 requires prefixItems to be non-empty
            schema["prefixItems"] = [s for s, _ in compiled]
        convs = tuple(c for _, c in compiled)

        def fixed(value: Any) -> Any:
            if not isinstance(value, list):
                raise _got("array", value)
            if len(value) != n:
                raise _Invalid(f"expected an array of {n} items, got {len(value)}")
            out: list[Any] = []
            i = 0
            try:
                for i, (c, v) in enumerate(zip(convs, value, strict=True)):  # noqa: B007
                    out.append(c(v))
            except _Invalid as exc:
                exc.path.append(i)
                raise
            return tuple(out)

        return schema, fixed

    def _mapping(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], _Conv]:
        key_tp, value_tp = args if args else (str, Any)
        key_tp, _ = _strip_annotated(key_tp)
        if key_tp not in (str, Any):
            raise TypeError(f"{where}: JSON object keys are strings, not {key_tp!r}")
        value_schema, value_conv = self.compile(value_tp, where)
        schema: dict[str, Any] = {"type": "object"}
        if value_schema:
            schema["additionalProperties"] = value_schema
        if value_conv is _conv_any:

            def plain_dict(value: Any) -> Any:
                if isinstance(value, dict):
                    return value
                raise _got("object", value)

            return schema, plain_dict

        def mapping(value: Any) -> Any:
            if not isinstance(value, dict):
                raise _got("object", value)
            out = {}
            k = ""
            try:
                for k, v in value.items():
                    out[k] = value_conv(v)
            except _Invalid as exc:
                exc.path.append(k)
                raise
            return out

        return schema, mapping

    def _enum(self, cls: type[enum.Enum]) -> tuple[dict[str, Any], _Conv]:
        schema, conv = _enum_schema_and_conv([(_scalar_json(m.value), m) for m in cls])
        return {"title": cls.__name__, **schema}, conv

    # -- models (TypedDict, attrs, dataclasses) --------------------------------------

    def _model(self, cls: type, where: str) -> tuple[dict[str, Any], _Conv]:
        if cls in self._done:
            return self._done[cls]
        if cls in self._stack:
            # A recursive reference: point at $defs and look the converter up late,
            # once the outer compilation of the class has finished.
            self._recursive.add(cls)
            convs = self._convs

            def late(value: Any) -> Any:
                return convs[cls](value)

            return {"$ref": f"#/$defs/{self._def_name(cls)}"}, late
        self._stack.append(cls)
        try:
            schema, conv = self._model_body(cls, f"{where} -> {cls.__name__}")
        finally:
            self._stack.pop()
        self._convs[cls] = conv
        if cls in self._recursive:
            name = self._def_name(cls)
            self.defs[name] = schema
            schema = {"$ref": f"#/$defs/{name}"}
        self._done[cls] = (schema, conv)
        return schema, conv

    def _def_name(self, cls: type) -> str:
        name = self._def_names.get(cls)
        if name is None:
            name = cls.__name__
            taken = set(self._def_names.values())
            n = 2
            while name in taken:
                name = f"{cls.__name__}{n}"
                n += 1
            self._def_names[cls] = name
        return name

    def _model_body(self, cls: type, where: str) -> tuple[dict[str, Any], _Conv]:
        hints = _hints(cls, where)
        # (key, kwarg, annotation, has_default, default)
        entries: list[tuple[str, str, Any, bool, Any]] = []
        construct: Callable[..., Any] | None = cls
        if typing.is_typeddict(cls):
            construct = None
            required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
            for key, ann in hints.items():
                entries.append((key, key, ann, key not in required_keys, MISSING))
        elif attrs.has(cls):
            for a in attrs.fields(cls):
                if not a.init and not self.output:
                    continue
                ann = hints.get(a.name, a.type if a.type is not None else Any)
                kwarg = a.alias if a.alias else a.name.lstrip("_")
                if a.default is attrs.NOTHING:
                    entries.append((a.name, kwarg, ann, False, MISSING))
                elif isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
                    entries.append((a.name, kwarg, ann, True, MISSING))
                else:
                    entries.append((a.name, kwarg, ann, True, a.default))
        else:
            for f in dataclasses.fields(cls):
                if not f.init and not self.output:
                    continue
                ann = hints.get(f.name, Any)
                if f.default is not dataclasses.MISSING:
                    entries.append((f.name, f.name, ann, True, f.default))
                elif f.default_factory is not dataclasses.MISSING:
                    entries.append((f.name, f.name, ann, True, MISSING))
                else:
                    entries.append((f.name, f.name, ann, False, MISSING))

        properties: dict[str, Any] = {}
        required: list[str] = []
        props: list[_Prop] = []
        for key, kwarg, ann, has_default, default in entries:
            prop = self._property(key, kwarg, ann, has_default, default, f"{where}.{key}")
            properties[key] = prop[0]
            # Output objects always carry every attrs/dataclass field, defaults or not.
            always_present = self.output and construct is not None
            if prop[1].required or always_present:
                required.append(key)
            props.append(prop[1])
        schema: dict[str, Any] = {"type": "object", "title": cls.__name__}
        doc = _own_doc(cls)
        if doc:
            schema["description"] = doc
        schema["properties"] = properties
        if required:
            schema["required"] = required
        return schema, _object_conv(props, construct)

    def _property(
        self, key: str, kwarg: str, ann: Any, has_default: bool, default: Any, where: str
    ) -> tuple[dict[str, Any], _Prop]:
        """Schema and converter entry for one parameter or model field."""
        schema, conv = self.compile(ann, where)
        _, meta = _strip_annotated(ann)
        field_defaults = [
            m.default for m in meta if isinstance(m, Field) and m.default is not MISSING
        ]
        inject: Any = MISSING
        if field_defaults:
            if has_default:
                raise TypeError(f"{where}: has both a default and Field(default=...)")
            default = inject = field_defaults[-1]
            has_default = True
        if has_default and default is not MISSING:
            ok, js = _json_default(default)
            if ok:
                schema = {**schema, "default": js}
        return schema, _Prop(key, kwarg, conv, not has_default, inject)


def _own_doc(cls: type) -> str | None:
    """A class docstring written by the user (not one generated by dataclasses)."""
    doc = cls.__dict__.get("__doc__")
    if not doc:
        return None
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return None
    if typing.is_typeddict(cls) and doc.startswith(f"{cls.__name__}("):
        return None
    return inspect.cleandoc(doc)


def _describe(schema: dict[str, Any]) -> str:
    """A short human name for what a schema accepts, for error messages."""
    if "$ref" in schema:
        return "object"
    if "enum" in schema:
        return "one of [" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if "anyOf" in schema:
        return " or ".join(_describe(s) for s in schema["anyOf"])
    t = schema.get("type")
    if t is None:
        return "any value"
    if t == "array" and "items" in schema:
        return f"array of {_describe(schema['items'])}"
    if t == "object" and "title" in schema:
        return f"object ({schema['title']})"
    return str(t)


# ---------------------------------------------------------------------------------------
# Docstrings

_ARGS_HEADERS: Final = {"args:", "arguments:", "parameters:", "params:"}
_ARG_LINE: Final = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _param_docs(doc: str | None) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    if not doc:
        return {}
    found: dict[str, list[str]] = {}
    in_args = False
    header_indent = 0
    entry_indent: int | None = None
    current: str | None = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not in_args:
            if stripped.lower() in _ARGS_HEADERS:
                in_args, header_indent, entry_indent, current = True, indent, None, None
            continue
        if not stripped:
            continue
        if indent <= header_indent:
            in_args = stripped.lower() in _ARGS_HEADERS
            entry_indent, current = None, None
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent <= entry_indent:
            m = _ARG_LINE.match(stripped)
            current = m.group(1) if m else None
            if m:
                found[current] = [m.group(2)] if m.group(2) else []  # type: ignore[index]
        elif current is not None:
            found[current].append(stripped)
    return {name: " ".join(parts) for name, parts in found.items() if parts}


# ---------------------------------------------------------------------------------------
# Signatures


def _is_skipped(ann: Any, skip: tuple[type, ...]) -> bool:
    ann, _ = _strip_annotated(ann)
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(ann) if a is not _NoneType]
        return len(members) == 1 and _is_skipped(members[0], skip)
    if origin is not None:
        ann = origin
    return isinstance(ann, type) and issubclass(ann, skip)


def _involves(ann: Any, kinds: tuple[type, ...]) -> bool:
    """Whether an annotation is, or is a union or collection containing, one of ``kinds``."""
    ann, _ = _strip_annotated(ann)
    if isinstance(ann, type) and issubclass(ann, kinds):
        return True
    return any(_involves(a, kinds) for a in typing.get_args(ann) if a is not Ellipsis)


def _is_object_schema(schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = defs.get(ref[len("#/$defs/") :], {})
    return schema.get("type") == "object"


def _with_defs(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if defs:
        schema = {**schema, "$defs": defs}
    # Sub-schemas are shared between uses while compiling; hand out an independent tree.
    return copy.deepcopy(schema)


def build_signature(
    fn: Callable[..., Any],
    *,
    skip: Iterable[type] = (),
    unstructured: Iterable[type] = (),
) -> ToolSignature:
    """Build the schemas and compiled validator for a tool function.

    ``skip``: classes (the server's ``Context``) whose parameters are injected rather
    than sent by the client; at most one such parameter is allowed, and its name is
    ``context_param``. ``unstructured``: return types that are content, not data (the
    server's ``Image``, ``Audio``, content classes, ``CallToolResult``); a return
    annotation involving any of them, or ``str``/``bytes``, gets no output schema.
    Return annotations that cannot be described as JSON Schema also get none.

    Raises TypeError for parameters that cannot be described: ``*args``/``**kwargs``,
    positional-only parameters, and unsupported annotations.
    """
    name = getattr(fn, "__qualname__", None) or repr(fn)
    where = f"tool function {name}"
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: cannot read its signature: {exc}") from exc
    hints = _hints(fn, where)
    docs = _param_docs(inspect.getdoc(fn))
    skip_types = tuple(skip)

    compiler = _Compiler(output=False)
    context_param: str | None = None
    properties: dict[str, Any] = {}
    required: list[str] = []
    props: list[_Prop] = []
    for pname, param in sig.parameters.items():
        ann = hints.get(pname, Any)
        if skip_types and _is_skipped(ann, skip_types):
            if context_param is not None:
                raise TypeError(f"{where}: two context parameters, {context_param!r} and {pname!r}")
            context_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be tool parameters ({pname!r})")
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"{where}: positional-only parameter {pname!r} cannot be passed by name"
            )
        has_default = param.default is not param.empty
        default = param.default if has_default else MISSING
        schema, prop = compiler._property(
            pname, pname, ann, has_default, default, f"{where}, parameter {pname!r}"
        )
        if "description" not in schema and pname in docs:
            schema = {**schema, "description": docs[pname]}
        properties[pname] = schema
        if prop.required:
            required.append(pname)
        props.append(prop)

    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema = _with_defs(input_schema, compiler.defs)

    output_schema, wrap = _output_schema(hints.get("return", MISSING), tuple(unstructured))
    return ToolSignature(
        input_schema=input_schema,
        output_schema=output_schema,
        wrap_output=wrap,
        context_param=context_param,
        validate=_top_level_validator(props),
    )


def _output_schema(ann: Any, unstructured: tuple[type, ...]) -> tuple[dict[str, Any] | None, bool]:
    if ann is MISSING or ann is None or ann is _NoneType or ann is Any:
        return None, False
    binary = (bytes, bytearray, memoryview, *unstructured)
    # A str (alone or in a union) is text content; list[str] or dict[str, X] is data.
    # Binary and content types anywhere mean the server builds content, not JSON.
    if _involves_at_top(_strip_annotated(ann)[0], (str, *binary)) or _involves(ann, binary):
        return None, False
    compiler = _Compiler(output=True)
    try:
        schema, _ = compiler.compile(ann, "return annotation")
    except TypeError:
        return None, False
    if _is_object_schema(schema, compiler.defs):
        return _with_defs(schema, compiler.defs), False
    wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return _with_defs(wrapped, compiler.defs), True


def _involves_at_top(ann: Any, kinds: tuple[type, ...]) -> bool:
    """Whether a union's members (not nested containers) include one of ``kinds``."""
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is types.UnionType:
        return any(_involves_at_top(_strip_annotated(a)[0], kinds) for a in typing.get_args(ann))
    return (
        isinstance(ann, type)
        and not issubclass(ann, enum.Enum)  # a str-valued Enum is data, not text
        and issubclass(ann, kinds)
    )


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


def serialize_output(sig: ToolSignature, value: Any) -> dict[str, Any] | None:
    """The ``structuredContent`` for a tool's return value, or None if not structured.

    Wraps the value as ``{"result": value}`` when ``sig.wrap_output``. For an object
    return type, ``None`` gives ``None``; anything that does not serialize to an object
    raises TypeError (the function broke its own return annotation).
    """
    if sig.output_schema is None:
        return None
    if sig.wrap_output:
        return {"result": to_jsonable(value)}
    if value is None:
        return None
    data = to_jsonable(value)
    if not isinstance(data, dict):
        raise TypeError(f"tool declared an object result but returned {type(value).__name__}")
    return data


# ---------------------------------------------------------------------------------------
# Tool names

_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def validate_tool_name(name: str) -> None:
    """Raise ValueError unless ``name`` follows the MCP tool-name rules.

    1 to 128 characters, each an ASCII letter, digit, ``_``, ``-`` or ``.``; no spaces,
    commas or other characters. Names are case-sensitive, so no case folding happens.
    """
    if not isinstance(name, str):
        raise ValueError(f"tool name must be a string, got {type(name).__name__}")
    if _TOOL_NAME.fullmatch(name):
        return
    if not name:
        raise ValueError("tool name must not be empty")
    if len(name) > 128:
        raise ValueError(f"tool name is {len(name)} characters long; the limit is 128")
    bad = sorted({c for c in name if not _TOOL_NAME.fullmatch(c)})
    shown = ", ".join(repr(c) for c in bad)
    raise ValueError(
        f"tool name {name!r} contains characters not allowed ({shown}); "
        "use only A-Z, a-z, 0-9, '_', '-' and '.'"
    )
