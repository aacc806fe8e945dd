"""A small structural diff of JSON values, for divergence reports."""

from __future__ import annotations

from typing import Any

from mcpactor.tracing.encode import dumps


def _show(value: Any) -> str:
    text = dumps(value).decode()
    return text if len(text) <= 120 else text[:117] + "..."


def json_diff(expected: Any, actual: Any, path: str = "$", limit: int = 20) -> list[str]:
    """Lines naming each differing path: ``$.msg.result: expected 3, got 4``."""
    out: list[str] = []
    _diff(expected, actual, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            sub = f"{path}.{key}"
            if key not in b:
                out.append(f"{sub}: expected {_show(a[key])}, missing in replay")
            else:
                _diff(a[key], b[key], sub, out, limit)
        for key in b:
            if key not in a:
                out.append(f"{path}.{key}: not recorded, replay has {_show(b[key])}")
        return
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _diff(x, y, f"{path}[{i}]", out, limit)
        if len(a) != len(b):
            out.append(f"{path}: expected {len(a)} items, replay has {len(b)}")
        return
    if a != b or (type(a) is not type(b) and not (_number(a) and _number(b))):
        out.append(f"{path}: expected {_show(a)}, got {_show(b)}")


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)
