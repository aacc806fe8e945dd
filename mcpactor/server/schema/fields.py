"""``Field``, the schema metadata users put in ``Annotated``, and the ``MISSING`` sentinel."""

from __future__ import annotations

import enum
from typing import Any, Final

import attrs

__all__ = ["MISSING", "Field"]


class _MissingType(enum.Enum):
    MISSING = enum.auto()

    def __repr__(self) -> str:
        return "MISSING"


#: Sentinel for "no default" in :class:`Field` (``None`` is a legitimate default).
MISSING: Final = _MissingType.MISSING


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
