"""Turning what handlers return into MCP content.

Handlers return ordinary Python values; this module decides what they become on the
wire. Helpers for the content types that have no obvious Python value (images, audio,
links, embedded resources) live here too.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import attrs
import orjson

from mcpactor.protocol.types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

ContentValue = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


def _b64(data: bytes | str) -> str:
    if isinstance(data, str):
        return data  # already base64
    return base64.b64encode(data).decode("ascii")


def Image(data: bytes | str, mime_type: str = "image/png", **kw: Any) -> ImageContent:
    """Image content from raw bytes (or a base64 string)."""
    return ImageContent(data=_b64(data), mime_type=mime_type, **kw)


def Audio(data: bytes | str, mime_type: str = "audio/wav", **kw: Any) -> AudioContent:
    """Audio content from raw bytes (or a base64 string)."""
    return AudioContent(data=_b64(data), mime_type=mime_type, **kw)


def Text(text: str, *, annotations: Annotations | None = None) -> TextContent:
    """Text content."""
    return TextContent(text=text, annotations=annotations)


def Link(uri: str, name: str, **kw: Any) -> ResourceLink:
    """A link to a resource (2025-06-18)."""
    return ResourceLink(uri=uri, name=name, **kw)


def Embedded(
    uri: str, content: str | bytes, mime_type: str | None = None, **kw: Any
) -> EmbeddedResource:
    """An embedded resource: text for ``str`` content, a base64 blob for ``bytes``."""
    return EmbeddedResource(resource=resource_contents(uri, content, mime_type, **kw))


def resource_contents(
    uri: str, content: str | bytes, mime_type: str | None = None, **meta: Any
) -> TextResourceContents | BlobResourceContents:
    """Resource contents for ``uri``: text for ``str``, a base64 blob for ``bytes``.

    ``meta`` takes the SEP-2093 metadata fields (name, title, description, size,
    is_collection, annotations, icons).
    """
    if isinstance(content, str):
        return TextResourceContents(uri=uri, text=content, mime_type=mime_type, **meta)
    if isinstance(content, (bytes, bytearray, memoryview)):
        return BlobResourceContents(uri=uri, blob=_b64(bytes(content)), mime_type=mime_type, **meta)
    raise TypeError(f"resource content must be str or bytes, not {type(content).__name__}")


def to_json_text(value: Any) -> str:
    """The JSON text of a structured value (the text copy of ``structuredContent``)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def to_content(value: Any) -> list[ContentValue]:
    """Content blocks for an unstructured handler return value.

    ``str`` → one text block; a content object → itself; a list or tuple → its items in
    order (each converted); ``None`` → no content; bytes → an embedded blob is not
    guessable, so bytes are rejected with a clear error; anything else → its JSON text.
    """
    if isinstance(value, str):
        return [TextContent(text=value)]
    if isinstance(value, _CONTENT_TYPES):
        return [value]
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        out: list[ContentValue] = []
        for item in value:
            out.extend(to_content(item))
        return out
    if isinstance(value, (bytes, bytearray)):
        raise TypeError(
            "a tool returned bytes: wrap them as Image(...), Audio(...) or Embedded(...)"
        )
    if attrs.has(type(value)):
        value = attrs.asdict(value)
    elif type(value) not in (dict, int, float, bool):  # those go to orjson as they are
        from mcpactor.server.schema.output import to_jsonable

        try:
            value = to_jsonable(value)  # dataclasses, pydantic models, enums ...
        except TypeError:
            pass  # orjson may still know it (datetime, UUID ...)
    return [TextContent(text=to_json_text(value))]


def content_list(items: Iterable[Any]) -> list[ContentValue]:
    """Convert several values into one flat list of content blocks."""
    out: list[ContentValue] = []
    for item in items:
        out.extend(to_content(item))
    return out
