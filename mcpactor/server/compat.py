"""Content as an older protocol revision understands it.

A client that negotiated an older revision may parse content strictly against that
revision's union of content types. Types it does not define are turned into text that
says what was there, so the client keeps working and the model still learns of it.
"""

from __future__ import annotations

from typing import Any

import attrs

from mcpactor.protocol import types as t
from mcpactor.protocol import versions


def downgrade_content(blocks: list[Any], version: str | None) -> list[Any]:
    """``blocks`` with the content types ``version`` lacks replaced by text blocks."""
    if version is None or versions.at_least(version, versions.V2025_06_18):
        return blocks
    audio_ok = versions.at_least(version, versions.V2025_03_26)
    out: list[Any] = []
    for block in blocks:
        if isinstance(block, t.ResourceLink):
            label = block.title or block.name
            out.append(t.TextContent(text=f"[resource link] {label}: {block.uri}"))
        elif isinstance(block, t.AudioContent) and not audio_ok:
            size = len(block.data) * 3 // 4
            out.append(t.TextContent(
                text=f"[{block.mime_type} audio of about {size} bytes: protocol {version} "
                "has no audio content]"
            ))
        else:
            out.append(block)
    return out


def downgrade_tool_result(result: t.CallToolResult, version: str | None) -> t.CallToolResult:
    """A tool result whose content ``version`` can represent."""
    content = downgrade_content(list(result.content), version)
    if content == list(result.content):
        return result
    return attrs.evolve(result, content=content)
