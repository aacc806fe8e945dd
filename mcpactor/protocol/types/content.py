"""Content blocks: what tools return, prompts hold, and sampling exchanges.

Unions here are discriminated on the wire by ``type``; resource contents by whether
``text`` or ``blob`` is present (the converter registers both rules).
"""

from typing import Any, Literal

import attrs

from .base import Annotations, Icon


@attrs.frozen(kw_only=True)
class TextContent:
    """``TextContent``: ``{"type": "text", "text": ...}``."""

    text: str
    type: Literal["text"] = "text"
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ImageContent:
    """``ImageContent``: base64 image ``data`` with its ``mimeType``."""

    data: str
    mime_type: str
    type: Literal["image"] = "image"
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class AudioContent:
    """``AudioContent``: base64 audio ``data`` with its ``mimeType`` (2025-03-26)."""

    data: str
    mime_type: str
    type: Literal["audio"] = "audio"
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ResourceLink:
    """``ResourceLink``: a pointer to a resource the client may read (2025-06-18)."""

    uri: str
    name: str
    type: Literal["resource_link"] = "resource_link"
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


# SEP-2093 makes resource contents extend ``Resource``; the metadata members are optional
# so contents from peers that predate it still parse.
@attrs.frozen(kw_only=True)
class TextResourceContents:
    """``TextResourceContents``: a resource's ``text`` plus its ``uri`` (and SEP-2093 metadata)."""

    uri: str
    text: str
    mime_type: str | None = None
    name: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None
    is_collection: bool | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class BlobResourceContents:
    """``BlobResourceContents``: a resource's base64 ``blob`` plus its ``uri`` (and SEP-2093 metadata)."""

    uri: str
    blob: str
    mime_type: str | None = None
    name: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None
    is_collection: bool | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


#: Either kind of resource contents; told apart by ``text`` vs ``blob``.
ResourceContents = TextResourceContents | BlobResourceContents


@attrs.frozen(kw_only=True)
class EmbeddedResource:
    """``EmbeddedResource``: resource contents inlined into a result, ``{"type": "resource"}``."""

    resource: ResourceContents
    type: Literal["resource"] = "resource"
    # Dropped by SEP-2093 in favour of ``resource.annotations``; kept for older peers.
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


#: What a tool result or a prompt message may hold, discriminated by ``type``.
ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


@attrs.frozen(kw_only=True)
class ToolUseContent:
    """``ToolUseContent``: in sampling, the model asking to call a tool (2025-11-25)."""

    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = "tool_use"
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ToolResultContent:
    """``ToolResultContent``: in sampling, the outcome of a tool call the model asked for (2025-11-25)."""

    tool_use_id: str
    content: list[ContentBlock]
    type: Literal["tool_result"] = "tool_result"
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


#: What one sampling message may hold, discriminated by ``type``.
SamplingContent = TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent
