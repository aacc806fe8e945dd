"""Notifications shared by both sides: progress, cancellation, list changes."""

from typing import Any

import attrs

from .base import NotificationParams, ProgressToken, RequestId


@attrs.frozen(kw_only=True)
class ProgressNotificationParams:
    """``notifications/progress`` params: ``progressToken``, ``progress``, ``total``, ``message``."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class CancelledNotificationParams:
    """``notifications/cancelled`` params: the ``requestId`` to abandon and an optional ``reason``."""

    # Optional since 2025-11-25 (task cancellation uses tasks/cancel instead).
    request_id: RequestId | None = None
    reason: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


#: Params of every ``notifications/*/list_changed`` (only ``_meta``).
ListChangedNotificationParams = NotificationParams
#: Params of ``notifications/initialized`` (only ``_meta``).
InitializedNotificationParams = NotificationParams
