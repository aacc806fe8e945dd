"""Pydantic v2 models and ``Field``s in annotations, without depending on pydantic.

This module is imported only once an annotation turned out to hold something of
pydantic's (a model class, a ``FieldInfo``) or of ``annotated_types`` (``Ge(1)``...),
so a server that never uses pydantic never imports it. A model keeps pydantic's own
rules: its JSON Schema is ``model_json_schema()`` (validation mode for arguments,
serialization mode for results), arguments become instances through
``model_validate`` (its errors are reported like any other argument error), and
results are ``model_dump(mode="json", by_alias=True)``, which is what the
serialization schema describes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from mcpactor.server.schema.fields import MISSING, Field
from mcpactor.server.schema.validate import _got, _Invalid

__all__ = ["as_field", "dump_model", "is_field_info", "is_model", "model_schema_and_conv"]


def is_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic v2 model class (False, cheaply, when pydantic was
    never imported: nothing can be one then)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(tp, type):
        return False
    return issubclass(tp, pydantic.BaseModel)


def is_field_info(value: Any) -> bool:
    """Whether ``value`` is ``pydantic.Field(...)`` (a ``FieldInfo``)."""
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(value, fields.FieldInfo)


def dump_model(value: Any) -> Any:
    """A model instance as JSON data, as its serialization schema describes it."""
    return value.model_dump(mode="json", by_alias=True)


def model_schema_and_conv(
    cls: type, *, output: bool
) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any], Any]]:
    """``(schema, $defs, converter)`` for a model class.

    The schema's ``$ref`` values point into the returned ``$defs`` (``#/$defs/Name``);
    the caller merges them into its own. The converter turns a JSON object into an
    instance, raising :class:`_Invalid` with pydantic's first error and its path.
    """
    from pydantic import ValidationError

    mode = "serialization" if output else "validation"
    schema = dict(cls.model_json_schema(mode=mode, ref_template="#/$defs/{model}"))  # type: ignore[attr-defined]
    defs = dict(schema.pop("$defs", {}))
    validate = cls.model_validate  # type: ignore[attr-defined]

    def conv(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _got("object", value)
        try:
            return validate(value)
        except ValidationError as exc:
            raise _from_validation_error(cls, exc) from None

    return schema, defs, conv


def _from_validation_error(cls: type, exc: Any) -> _Invalid:
    errors = exc.errors(include_url=False)
    if not errors:  # pragma: no cover - pydantic always lists at least one
        return _Invalid(f"{cls.__name__}: {exc}")
    first = errors[0]
    loc = [seg for seg in first.get("loc", ()) if isinstance(seg, (str, int))]
    reason = str(first.get("msg", "invalid"))
    if len(errors) > 1:
        reason += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    invalid = _Invalid(reason)
    # Paths are collected innermost first while unwinding; pydantic gives them outermost
    # first.
    invalid.path.extend(reversed(loc))
    return invalid


# -- Field(...) and annotated_types constraints as our Field ---------------------------

_BOUNDS = ("gt", "ge", "lt", "le")


def as_field(meta: Any, where: str) -> Field | None:
    """Our :class:`Field` for a pydantic ``FieldInfo`` or an ``annotated_types``
    constraint (``Ge(1)``, ``MaxLen(5)``, ``Interval(...)``...); None for metadata that
    says nothing about the schema. A constraint we cannot check is a TypeError: a
    parameter must not accept what its annotation promises to refuse."""
    if is_field_info(meta):
        return _from_field_info(meta, where)
    return _from_constraint(meta, where)


def _from_field_info(info: Any, where: str) -> Field:
    from pydantic_core import PydanticUndefined

    if info.default_factory is not None:
        raise TypeError(
            f"{where}: Field(default_factory=...) is not supported on a parameter; give a "
            "default value, or put the field in a pydantic model"
        )
    kwargs: dict[str, Any] = {}
    if info.description is not None:
        kwargs["description"] = info.description
    if info.title is not None:
        kwargs["title"] = info.title
    if info.default is not PydanticUndefined:
        kwargs["default"] = info.default
    for item in info.metadata:
        more = _from_constraint(item, where)
        if more is not None:
            kwargs.update(_set_fields(more))
    return Field(**kwargs)


def _set_fields(field: Field) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in (*_BOUNDS, "min_length", "max_length", "pattern", "description", "title"):
        value = getattr(field, name)
        if value is not None:
            out[name] = value
    if field.default is not MISSING:
        out["default"] = field.default
    return out


def _from_constraint(item: Any, where: str) -> Field | None:
    kind = type(item).__name__
    module = type(item).__module__
    if module == "annotated_types":
        if kind in ("Gt", "Ge", "Lt", "Le"):
            name = kind.lower()
            return Field(**{name: getattr(item, name)})
        if kind == "Interval":
            return Field(**{b: getattr(item, b) for b in _BOUNDS if getattr(item, b) is not None})
        if kind == "MinLen":
            return Field(min_length=item.min_length)
        if kind == "MaxLen":
            return Field(max_length=item.max_length)
        if kind == "Len":
            return Field(min_length=item.min_length, max_length=item.max_length)
        raise TypeError(f"{where}: the constraint {item!r} is not supported on a parameter "
                        "(put the field in a pydantic model to have pydantic check it)")
    if module.startswith("pydantic") and kind == "_PydanticGeneralMetadata":
        values = dict(vars(item))
        pattern = values.pop("pattern", None)
        if values:
            raise TypeError(f"{where}: Field({', '.join(f'{k}=...' for k in values)}) is not "
                            "supported on a parameter (put the field in a pydantic model)")
        return Field(pattern=pattern) if pattern is not None else None
    return None
