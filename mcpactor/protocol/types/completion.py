"""Argument autocompletion: ``completion/complete``."""

from typing import Any, Literal

import attrs


@attrs.frozen(kw_only=True)
class PromptReference:
    """``PromptReference``: ``{"type": "ref/prompt", "name": ...}``, completing a prompt argument."""

    name: str
    type: Literal["ref/prompt"] = "ref/prompt"
    title: str | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ResourceTemplateReference:
    """``ResourceTemplateReference``: ``{"type": "ref/resource", "uri": ...}``, completing a template variable."""

    uri: str
    type: Literal["ref/resource"] = "ref/resource"
    extra: dict[str, Any] = attrs.Factory(dict)


#: The 2024-11-05 and 2025-03-26 name of :class:`ResourceTemplateReference` (same wire shape).
ResourceReference = ResourceTemplateReference

#: What ``completion/complete`` completes against, discriminated by ``type``.
CompletionReference = PromptReference | ResourceTemplateReference


@attrs.frozen(kw_only=True)
class CompletionArgument:
    """``argument`` of ``completion/complete``: the argument ``name`` and the partial ``value``."""

    name: str
    value: str
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CompletionContext:
    """``context`` of ``completion/complete`` (2025-06-18): arguments already resolved."""

    arguments: dict[str, str] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CompleteRequestParams:
    """``completion/complete`` params: ``ref``, ``argument`` and optional ``context``."""

    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class Completion:
    """``completion`` of a ``completion/complete`` result: up to 100 ``values``."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CompleteResult:
    """``completion/complete`` result."""

    completion: Completion
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
