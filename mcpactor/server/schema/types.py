"""``type_converter``: any supported annotation as a JSON Schema and a converter from
JSON data to that type (used for typed client results and anything else that reads
JSON back into Python values)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from mcpactor.server.schema.compiler import _Compiler
from mcpactor.server.schema.signature import _is_object_schema, _with_defs
from mcpactor.server.schema.validate import _Invalid

__all__ = ["ConversionError", "TypeConverter", "type_converter"]


class ConversionError(ValueError):
    """JSON data that does not fit a type: ``path`` (``$.a[0]``) and ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@attrs.frozen(kw_only=True, eq=False)
class TypeConverter:
    """A type's JSON Schema, whether that schema is an object, and the converter."""

    schema: dict[str, Any]
    is_object: bool
    _convert: Callable[[Any], Any] = attrs.field(repr=False, alias="convert")

    def convert(self, value: Any) -> Any:
        """``value`` (JSON data) as the type: model instances, enums, tuples...;
        :class:`ConversionError` when it does not fit."""
        try:
            return self._convert(value)
        except _Invalid as exc:
            path = "$" + "".join(
                f"[{seg}]" if isinstance(seg, int) else f".{seg}" for seg in exc.path[::-1])
            raise ConversionError(path, exc.reason) from None


_CACHE: dict[Any, TypeConverter] = {}


def type_converter(tp: Any) -> TypeConverter:
    """The converter for an annotation (compiled once per annotation); TypeError for
    annotations the schema compiler does not support."""
    try:
        return _CACHE[tp]
    except (KeyError, TypeError):
        pass
    compiler = _Compiler(output=False)
    name = getattr(tp, "__name__", None) or repr(tp)
    schema, conv = compiler.compile(tp, f"type {name}")
    converter = TypeConverter(
        schema=_with_defs(schema, compiler.defs),
        is_object=_is_object_schema(schema, compiler.defs),
        convert=conv,
    )
    try:
        _CACHE[tp] = converter
    except TypeError:
        pass
    return converter
