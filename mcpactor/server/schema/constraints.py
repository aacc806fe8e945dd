"""A ``Field``'s constraints as schema keywords and the runtime checks that enforce them.

Constraints are ``ge``/``gt``/``le``/``lt``, ``min_length``/``max_length`` and ``pattern``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from mcpactor.server.schema.fields import Field
from mcpactor.server.schema.validate import _Invalid, _json_type


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
