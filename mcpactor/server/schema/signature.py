"""``build_signature``: a tool function's input and output schemas and its validator."""

from __future__ import annotations

import copy
import enum
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from mcpactor.server.schema.compiler import _Compiler, _hints, _strip_annotated
from mcpactor.server.schema.docstrings import _param_docs
from mcpactor.server.schema.fields import MISSING, Field
from mcpactor.server.schema.validate import _NoneType, _Prop, _top_level_validator

__all__ = ["ToolSignature", "build_signature"]


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
    validate: Callable[[Mapping[str, Any] | None], dict[str, Any]] = attrs.field(repr=False)


def _is_field_default(value: Any) -> bool:
    """A parameter default that is ``Field(...)`` (ours or pydantic's)."""
    if isinstance(value, Field):
        return True
    return type(value).__module__.startswith("pydantic") and type(value).__name__ == "FieldInfo"


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
    injected: Iterable[str] = (),
) -> ToolSignature:
    """Build the schemas and compiled validator for a tool function.

    ``skip``: classes (the server's ``Context``) whose parameters are injected rather
    than sent by the client; at most one such parameter is allowed, and its name is
    ``context_param``. ``unstructured``: return types that are content, not data (the
    server's ``Image``, ``Audio``, content classes, ``CallToolResult``); a return
    annotation involving any of them, or ``str``/``bytes``, gets no output schema.
    Return annotations that cannot be described as JSON Schema also get none.
    ``injected``: parameters the server fills itself (dependencies): not in the schema,
    and an argument of that name from the client is ignored, as unknown ones are.

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
    not_arguments = frozenset(injected)
    for pname, param in sig.parameters.items():
        if pname in not_arguments:
            continue
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
        if has_default and _is_field_default(default):
            # `x: int = Field(...)`: the Field is metadata, not the value to pass.
            ann = typing.Annotated[ann, default]
            has_default, default = False, MISSING
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
    if _untyped_sequence(_strip_annotated(ann)[0]):
        # list[Any] (or a bare list/tuple) is how a tool says "several content items":
        # the server decides per call, so no schema could promise structured output.
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
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            # An outputSchema is an object schema at its top ("type": "object"), so a
            # recursive model's definition is written out there; its $defs stay for the
            # references inside.
            schema = compiler.defs[ref[len("#/$defs/"):]]
        return _with_defs(schema, compiler.defs), False
    wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return _with_defs(wrapped, compiler.defs), True


def _untyped_sequence(ann: Any) -> bool:
    """``list``, ``tuple``, ``list[Any]``, ``tuple[Any, ...]``, ``list[object]``."""
    if ann in (list, tuple):
        return True
    if typing.get_origin(ann) not in (list, tuple):
        return False
    args = [a for a in typing.get_args(ann) if a is not Ellipsis]
    return all(a is Any or a is object for a in args)


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
