"""Sampling: a server asking the client's LLM for a completion (``sampling/createMessage``)."""

from typing import Any, Literal

import attrs

from .base import Role
from .content import SamplingContent
from .tasks import TaskMetadata
from .tools import Tool


@attrs.frozen(kw_only=True)
class SamplingMessage:
    """``SamplingMessage``: one message of a sampling conversation.

    ``content`` is a single block, or (2025-11-25, for tool use) a list of blocks.
    """

    role: Role
    content: SamplingContent | list[SamplingContent]
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ModelHint:
    """``ModelHint``: a model name (or substring) the server would like used."""

    name: str | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ModelPreferences:
    """``ModelPreferences``: hints and 0..1 priorities for the client's model choice."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ToolChoice:
    """``ToolChoice``: whether the sampled model may, must, or must not call tools (2025-11-25)."""

    mode: Literal["auto", "required", "none"] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CreateMessageRequestParams:
    """``sampling/createMessage`` params: the conversation and generation settings."""

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    #: 2025-11-25: run the sampling as a task on the client.
    task: TaskMetadata | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CreateMessageResult:
    """``sampling/createMessage`` result: the sampled message, the ``model`` and ``stopReason``."""

    role: Role
    content: SamplingContent | list[SamplingContent]
    model: str
    # Open string: "endTurn", "stopSequence", "maxTokens", "toolUse" or provider-specific.
    stop_reason: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
