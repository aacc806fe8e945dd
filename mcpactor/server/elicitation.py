"""Typed elicitation: ``await ctx.elicit("message", Model)``.

The model (a pydantic model, dataclass, attrs class or TypedDict, or a single str, int,
float, bool, ``Literal`` or ``Enum``, asked for as one field named ``value``) becomes
the flat form schema elicitation allows: each field a string (with length and the
spec's four formats), a number or integer (with bounds), a boolean, a ``Literal`` or
``Enum`` of strings (a single choice) or a list of those (several choices); anything
else is a TypeError before anything is sent. The accepted content comes back as an
instance of the model.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Final, Generic, Literal, TypeVar

import attrs

from mcpactor.protocol.errors import InvalidResult
from mcpactor.server.schema.compiler import _Compiler, _is_pydantic_model, _strip_annotated
from mcpactor.server.schema.validate import _Invalid

__all__ = ["ElicitationForm", "ElicitationResult", "elicitation_form"]

T = TypeVar("T")

_COMMON: Final[tuple[str, ...]] = ("title", "description")
_ALLOWED: Final[dict[str, tuple[str, ...]]] = {
    "string": (*_COMMON, "minLength", "maxLength", "format", "default"),
    "number": (*_COMMON, "minimum", "maximum", "default"),
    "integer": (*_COMMON, "minimum", "maximum", "default"),
    "boolean": (*_COMMON, "default"),
}
_FORMATS: Final = frozenset({"email", "uri", "date", "date-time"})


@attrs.frozen(kw_only=True)
class ElicitationResult(Generic[T]):
    """What the user did with a typed elicitation form.

    ``action`` is ``"accept"``, ``"decline"`` or ``"cancel"``; ``data`` is the accepted
    answer as the type asked for (None unless accepted); ``content`` is the form
    content as the client sent it.
    """

    action: Literal["accept", "decline", "cancel"]
    data: T | None = None
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (then ``data`` holds the answer)."""
        return self.action == "accept"


@attrs.frozen(kw_only=True, eq=False)
class ElicitationForm:
    """A type compiled for elicitation: the ``requestedSchema`` and the converter of
    accepted content (``wrapped``: the type is one field named ``value``)."""

    schema: dict[str, Any]
    wrapped: bool
    convert: typing.Callable[[Any], Any] = attrs.field(repr=False)

    def result(self, action: Any, content: dict[str, Any] | None) -> ElicitationResult[Any]:
        """The typed result of an answer; :class:`InvalidResult` if accepted content
        does not convert."""
        if action != "accept":
            return ElicitationResult(action=action, content=content)
        try:
            data = self.convert(content if content is not None else {})
        except _Invalid as exc:
            path = ".".join(str(seg) for seg in exc.path[::-1])
            where = f" at {path}" if path else ""
            raise InvalidResult(
                f"the client's elicitation content does not fit the requested type{where}: "
                f"{exc.reason}", data={"path": path or "$", "reason": exc.reason}) from None
        if self.wrapped:
            data = data["value"]
        return ElicitationResult(action="accept", data=data, content=content)


_FORMS: dict[Any, ElicitationForm] = {}


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and (
        typing.is_typeddict(tp) or attrs.has(tp) or dataclasses.is_dataclass(tp)
        or _is_pydantic_model(tp))


def elicitation_form(tp: Any) -> ElicitationForm:
    """The form for ``tp`` (compiled once per type); TypeError naming the field that no
    elicitation form can hold."""
    try:
        return _FORMS[tp]
    except (KeyError, TypeError):
        pass
    name = getattr(tp, "__name__", None) or repr(tp)
    where = f"elicitation type {name}"
    compiler = _Compiler(output=False)
    wrapped = not _is_model(_strip_annotated(tp)[0])
    if wrapped:
        schema, conv = compiler.compile(typing.TypedDict("value", {"value": tp}), where)  # type: ignore[operator]
    else:
        schema, conv = compiler.compile(tp, where)
    schema = _resolve(schema, compiler.defs)
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise TypeError(f"{where}: an elicitation form is an object with fields")
    properties: dict[str, Any] = {}
    for key, prop in schema["properties"].items():
        properties[key] = _primitive(prop, compiler.defs, f"{where}, field {key!r}")
    form_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        form_schema["required"] = list(schema["required"])
    form = ElicitationForm(schema=form_schema, wrapped=wrapped, convert=conv)
    try:
        _FORMS[tp] = form
    except TypeError:  # an unhashable annotation: compile again next time
        pass
    return form


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref[len("#/$defs/"):], {})
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**target, **rest}
    return schema


def _primitive(prop: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    """The spec's primitive schema for one field, or TypeError."""
    prop = _resolve(prop, defs)
    variants = prop.get("anyOf")
    if isinstance(variants, list):
        # Optional[X]: a form field can be left empty, it cannot be null.
        others = [v for v in variants if v != {"type": "null"}]
        if len(others) == 1:
            rest = {k: v for k, v in prop.items() if k != "anyOf"}
            if rest.get("default", 0) is None:
                del rest["default"]
            return _primitive({**_resolve(others[0], defs), **rest}, defs, where)
    kind = prop.get("type")
    if "enum" in prop:
        values = prop["enum"]
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{where}: the choices of an elicitation form are strings, "
                            f"not {values!r}")
        out: dict[str, Any] = {k: prop[k] for k in (*_COMMON, "default") if k in prop}
        return {"type": "string", **out, "enum": list(values)}
    if kind == "array":
        items = _resolve(prop.get("items") or {}, defs)
        if not (isinstance(items.get("enum"), list)
                and all(isinstance(v, str) for v in items["enum"])):
            raise TypeError(f"{where}: a list in an elicitation form is a multiple choice: "
                            "list[Literal[...]] or list[an Enum of strings]")
        out = {k: prop[k] for k in (*_COMMON, "minItems", "maxItems", "default")
               if k in prop}
        return {"type": "array", **out, "items": {"type": "string", "enum": list(items["enum"])}}
    if kind in _ALLOWED:
        for key in ("exclusiveMinimum", "exclusiveMaximum", "pattern"):
            if key in prop:
                raise TypeError(f"{where}: {key} cannot be asked for in an elicitation form "
                                "(use ge/le bounds, min_length/max_length)")
        out = {k: prop[k] for k in _ALLOWED[kind] if k in prop}
        if "format" in out and out["format"] not in _FORMATS:
            raise TypeError(f"{where}: format {out['format']!r} is not one elicitation "
                            f"allows ({', '.join(sorted(_FORMATS))})")
        return {"type": kind, **out}
    shown = kind or ("any value" if not prop else "a union")
    raise TypeError(f"{where}: an elicitation form field is a str, int, float, bool, a "
                    f"Literal or Enum of strings or a list of those, not {shown}")
