"""The MCP rules for tool names."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["validate_tool_name"]


_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def validate_tool_name(name: str) -> None:
    """Raise ValueError unless ``name`` follows the MCP tool-name rules.

    1 to 128 characters, each an ASCII letter, digit, ``_``, ``-`` or ``.``; no spaces,
    commas or other characters. Names are case-sensitive, so no case folding happens.
    """
    if not isinstance(name, str):
        raise ValueError(f"tool name must be a string, got {type(name).__name__}")
    if _TOOL_NAME.fullmatch(name):
        return
    if not name:
        raise ValueError("tool name must not be empty")
    if len(name) > 128:
        raise ValueError(f"tool name is {len(name)} characters long; the limit is 128")
    bad = sorted({c for c in name if not _TOOL_NAME.fullmatch(c)})
    shown = ", ".join(repr(c) for c in bad)
    raise ValueError(
        f"tool name {name!r} contains characters not allowed ({shown}); "
        "use only A-Z, a-z, 0-9, '_', '-' and '.'"
    )
