"""Tools: ``tools/list`` and ``tools/call``."""

from typing import Any

import attrs

from .base import Cursor, Icon
from .content import ContentBlock
from .tasks import TaskMetadata, ToolExecution


@attrs.frozen(kw_only=True)
class ToolAnnotations:
    """``ToolAnnotations``: untrusted hints about a tool's behaviour (2025-03-26)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class Tool:
    """``Tool``: a callable the server offers, with the JSON Schema of its arguments."""

    name: str
    # JSON Schema objects stay plain dicts: their vocabulary is open-ended.
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] | None = None
    #: 2025-11-25: whether calls may (must) be tasks (``execution.taskSupport``).
    execution: ToolExecution | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListToolsResult:
    """``tools/list`` result: one page of tools and the cursor of the next."""

    tools: list[Tool]
    next_cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CallToolRequestParams:
    """``tools/call`` params: the tool ``name``, its ``arguments``, and ``task`` when the
    call is to run as a task (2025-11-25)."""

    name: str
    arguments: dict[str, Any] | None = None
    task: TaskMetadata | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CallToolResult:
    """``tools/call`` result: content blocks, optional ``structuredContent``, and ``isError``."""

    content: list[ContentBlock]
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
