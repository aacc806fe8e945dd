"""Typed tool results on the client: ``call_tool(..., result_type=Model)``."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import attrs

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import InvalidResult

__all__ = ["ToolResult", "typed_result"]

T = TypeVar("T")

class _Unread:
    """``ToolResult.typed`` before a type was asked for."""

    def __repr__(self) -> str:
        return "UNREAD"


_UNREAD: Any = _Unread()


@attrs.frozen(kw_only=True)
class ToolResult(t.CallToolResult, Generic[T]):
    """A ``tools/call`` result with its structured content read back: ``data`` is the
    ``result_type`` instance when the call asked for one, else the
    ``structuredContent`` dict (None for an ``is_error`` result or one without
    structured content).

    The client's connection builds it straight from the wire (``typed`` is never on
    the wire), so a call without ``result_type`` costs nothing more.
    """

    typed: Any = attrs.field(default=_UNREAD, metadata={"wire": False}, repr=False)

    @property
    def data(self) -> T | None:
        """The structured content, as ``result_type`` when the call gave one."""
        if self.is_error:
            return None
        if self.typed is _UNREAD:
            return self.structured_content  # type: ignore[return-value]
        return self.typed


def typed_result(name: str, result: ToolResult[Any], result_type: Any) -> ToolResult[Any]:
    """``result`` with ``data`` read as ``result_type`` (see :class:`ToolResult`);
    InvalidResult when the structured content does not fit it."""
    structured = result.structured_content
    if result_type is None or result.is_error:
        return result
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
    return attrs.evolve(result, typed=data)
