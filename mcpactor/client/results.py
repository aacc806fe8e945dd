"""Typed tool results on the client: ``call_tool(..., result_type=Model)``."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import attrs

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import InvalidResult

__all__ = ["ToolResult", "typed_result"]

T = TypeVar("T")

_FIELDS = tuple(a.name for a in attrs.fields(t.CallToolResult))


@attrs.frozen(kw_only=True)
class ToolResult(t.CallToolResult, Generic[T]):
    """A ``tools/call`` result with its structured content read back: ``data`` is the
    ``result_type`` instance when the call asked for one, else the
    ``structuredContent`` dict (None for an ``is_error`` result or one without
    structured content)."""

    data: T | None = attrs.field(default=None, metadata={"wire": False})


def typed_result(name: str, result: t.CallToolResult, result_type: Any) -> ToolResult[Any]:
    """``result`` with ``data`` filled in (see :class:`ToolResult`); InvalidResult when
    the structured content does not fit ``result_type``."""
    values = {f: getattr(result, f) for f in _FIELDS}
    structured = result.structured_content
    if result_type is None or result.is_error:
        return ToolResult(**values, data=None if result.is_error else structured)
    from mcpactor.server.schema.types import ConversionError, type_converter

    try:
        converter = type_converter(result_type)
    except TypeError as exc:
        raise TypeError(f"call_tool(result_type=...): {exc}") from None
    shown = getattr(result_type, "__name__", None) or repr(result_type)
    if structured is None:
        raise InvalidResult(f"tool {name!r} returned no structuredContent to read as {shown}",
                            data={"path": "$", "reason": "no structuredContent"})
    value: Any = structured
    if not converter.is_object:
        # A tool returning a non-object (a number, a list) wraps it as {"result": ...}.
        if set(structured) != {"result"}:
            raise InvalidResult(
                f"tool {name!r} returned structuredContent that is not a wrapped "
                f"{shown} ({{\"result\": ...}})",
                data={"path": "$", "reason": "expected an object with only 'result'"})
        value = structured["result"]
    try:
        data = converter.convert(value)
    except ConversionError as exc:
        path = exc.path if converter.is_object else "$.result" + exc.path[1:]
        raise InvalidResult(
            f"tool {name!r} returned structuredContent that does not fit {shown}: "
            f"{path}: {exc.reason}", data={"path": path, "reason": exc.reason}) from None
    return ToolResult(**values, data=data)
