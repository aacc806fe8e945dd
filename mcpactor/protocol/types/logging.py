"""Logging: ``logging/setLevel`` and ``notifications/message``."""

from typing import Any, Literal

import attrs

#: Syslog severities (RFC 5424), least to most severe in :data:`LOGGING_LEVELS`.
LoggingLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
#: The levels in increasing severity, for "at or above" comparisons.
LOGGING_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


@attrs.frozen(kw_only=True)
class SetLevelRequestParams:
    """``logging/setLevel`` params: the minimum ``level`` the client wants to receive."""

    level: LoggingLevel
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class LoggingMessageNotificationParams:
    """``notifications/message`` params: ``level``, optional ``logger``, and any JSON ``data``."""

    level: LoggingLevel
    data: Any
    logger: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
