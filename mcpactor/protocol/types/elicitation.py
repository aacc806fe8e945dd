"""Elicitation: a server asking the client's user for input (``elicitation/create``).

Form mode (2025-06-18) sends a flat JSON Schema; URL mode (2025-11-25) sends the user to a
web page and later signals ``notifications/elicitation/complete``. The schema stays a plain
dict: its primitives (string, number, boolean, the enum variants) are validated by whoever
renders the form.
"""

from typing import Any, Literal

import attrs

from .tasks import TaskMetadata


@attrs.frozen(kw_only=True)
class ElicitRequestFormParams:
    """``elicitation/create`` params, form mode: a ``message`` and a ``requestedSchema``."""

    message: str
    requested_schema: dict[str, Any]
    # Absent before 2025-11-25; absent still means form mode.
    mode: Literal["form"] | None = None
    #: 2025-11-25: run the elicitation as a task on the client.
    task: TaskMetadata | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ElicitRequestURLParams:
    """``elicitation/create`` params, URL mode: a ``message``, the ``url`` and an ``elicitationId``."""

    message: str
    url: str
    elicitation_id: str
    mode: Literal["url"] = "url"
    task: TaskMetadata | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


#: Either elicitation mode; told apart by ``mode`` (absent means form).
ElicitRequestParams = ElicitRequestFormParams | ElicitRequestURLParams


@attrs.frozen(kw_only=True)
class ElicitResult:
    """``elicitation/create`` result: the user's ``action`` and, on accept, form ``content``."""

    action: Literal["accept", "decline", "cancel"]
    # Values are str, int, float, bool or (multi-select, 2025-11-25) a list of str.
    content: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ElicitationCompleteNotificationParams:
    """``notifications/elicitation/complete`` params: the finished URL-mode ``elicitationId``."""

    elicitation_id: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
