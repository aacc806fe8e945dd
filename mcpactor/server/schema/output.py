"""Tool results as JSON: ``to_jsonable`` and the ``structuredContent`` of a result."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from mcpactor.server.schema.signature import ToolSignature

__all__ = ["serialize_output", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Convert a Python value to JSON-ready data (dicts, lists, str, numbers, bools, None).

    attrs instances become dicts keyed by field name (via ``attrs.asdict`` without
    recursion, then converted here so nested enums, dataclasses and attrs instances are
    handled alike); dataclasses likewise; pydantic models are
    ``model_dump(mode="json", by_alias=True)``; enums become their values; tuples and
    sets become lists. Raises TypeError for anything else.
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
    if "pydantic" in sys.modules:
        from mcpactor.server.schema.pydantic_support import dump_model, is_model

        if is_model(t):
            return dump_model(value)
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
