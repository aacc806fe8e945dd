"""Parameter descriptions read from a tool function's Google-style docstring."""

from __future__ import annotations

import inspect
import re
from typing import Final

_ARGS_HEADERS: Final = {"args:", "arguments:", "parameters:", "params:"}
_ARG_LINE: Final = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _param_docs(doc: str | None) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    if not doc:
        return {}
    found: dict[str, list[str]] = {}
    in_args = False
    header_indent = 0
    entry_indent: int | None = None
    current: str | None = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not in_args:
            if stripped.lower() in _ARGS_HEADERS:
                in_args, header_indent, entry_indent, current = True, indent, None, None
            continue
        if not stripped:
            continue
        if indent <= header_indent:
            in_args = stripped.lower() in _ARGS_HEADERS
            entry_indent, current = None, None
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent <= entry_indent:
            m = _ARG_LINE.match(stripped)
            current = m.group(1) if m else None
            if m:
                found[current] = [m.group(2)] if m.group(2) else []  # type: ignore[index]
        elif current is not None:
            found[current].append(stripped)
    return {name: " ".join(parts) for name, parts in found.items() if parts}
