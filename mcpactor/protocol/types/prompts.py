"""Prompts: ``prompts/list`` and ``prompts/get``."""

from typing import Any

import attrs

from .base import Cursor, Icon, Role
from .content import ContentBlock


@attrs.frozen(kw_only=True)
class PromptArgument:
    """``PromptArgument``: one named argument a prompt template accepts."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class Prompt:
    """``Prompt``: a prompt template the server offers."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListPromptsResult:
    """``prompts/list`` result: one page of prompts and the cursor of the next."""

    prompts: list[Prompt]
    next_cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class GetPromptRequestParams:
    """``prompts/get`` params: the prompt ``name`` and string ``arguments``."""

    name: str
    arguments: dict[str, str] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class PromptMessage:
    """``PromptMessage``: one ``role``/``content`` message of a rendered prompt."""

    role: Role
    content: ContentBlock
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class GetPromptResult:
    """``prompts/get`` result: the rendered ``messages`` and an optional description."""

    messages: list[PromptMessage]
    description: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
