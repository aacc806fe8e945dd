"""The compiler from annotations to ``(schema, converter)`` pairs.

Everything is decided here, at registration time, so the converters it returns only do
``isinstance`` checks and dict look-ups when a call arrives.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from mcpactor.server.schema.constraints import _constraint_checks
from mcpactor.server.schema.fields import MISSING, Field
from mcpactor.server.schema.output import _json_default
from mcpactor.server.schema.validate import (
    _Conv,
    _conv_any,
    _conv_bool,
    _conv_float,
    _conv_int,
    _conv_none,
    _conv_str,
    _enum_schema_and_conv,
    _got,
    _Invalid,
    _NoneType,
    _object_conv,
    _Prop,
)

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


def _strip_annotated(tp: Any) -> tuple[Any, list[Any]]:
    meta: list[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        meta.extend(tp.__metadata__)
        tp = tp.__origin__
    return tp, meta


def _is_foreign(meta: Any) -> bool:
    """Metadata from pydantic or annotated_types (converted by pydantic_support)."""
    module = type(meta).__module__
    return module == "annotated_types" or module.startswith("pydantic")


def _fields(meta: list[Any], where: str) -> list[Field]:
    """The ``Field`` metadata among ``meta``: ours, and pydantic's ``Field(...)`` or
    ``annotated_types`` constraints translated into ours."""
    out: list[Field] = []
    for m in meta:
        if isinstance(m, Field):
            out.append(m)
        elif _is_foreign(m):
            from mcpactor.server.schema.pydantic_support import as_field

            converted = as_field(m, where)
            if converted is not None:
                out.append(converted)
    return out


def _is_pydantic_model(tp: Any) -> bool:
    # Nothing is a pydantic model until pydantic is imported: no import, no cost.
    if "pydantic" not in sys.modules or not isinstance(tp, type):
        return False
    from mcpactor.server.schema.pydantic_support import is_model

    return is_model(tp)


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
        fields = _fields(meta, where)
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
            if _is_pydantic_model(tp):
                return self._pydantic(tp)
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

    def _pydantic(self, cls: type) -> tuple[dict[str, Any], _Conv]:
        """A pydantic model: its own schema (its ``$defs`` merged into ours, renamed
        where a name is taken by another definition) and ``model_validate``."""
        done = self._done.get(cls)
        if done is not None:
            return done
        from mcpactor.server.schema.pydantic_support import model_schema_and_conv

        schema, defs, conv = model_schema_and_conv(cls, output=self.output)
        renames: dict[str, str] = {}
        for name, body in defs.items():
            if (name in self.defs and self.defs[name] != body) or (
                    name in self._def_names.values()):
                new = self._free_def_name(name)
                renames[name] = new
        if renames:
            schema = _rename_refs(schema, renames)
            defs = {renames.get(k, k): _rename_refs(v, renames) for k, v in defs.items()}
        self.defs.update(defs)
        self._done[cls] = (schema, conv)
        return schema, conv

    def _free_def_name(self, base: str) -> str:
        taken = set(self._def_names.values()) | set(self.defs)
        name, n = base, 2
        while name in taken:
            name = f"{base}{n}"
            n += 1
        return name

    def _def_name(self, cls: type) -> str:
        name = self._def_names.get(cls)
        if name is None:
            name = cls.__name__
            taken = set(self._def_names.values()) | set(self.defs)
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
        field_defaults = [m.default for m in _fields(meta, where) if m.default is not MISSING]
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


def _rename_refs(schema: Any, renames: dict[str, str]) -> Any:
    """A copy of ``schema`` with ``#/$defs/<old>`` references pointing at new names."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                name = v[len("#/$defs/"):]
                out[k] = f"#/$defs/{renames.get(name, name)}"
            else:
                out[k] = _rename_refs(v, renames)
        return out
    if isinstance(schema, list):
        return [_rename_refs(v, renames) for v in schema]
    return schema


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
