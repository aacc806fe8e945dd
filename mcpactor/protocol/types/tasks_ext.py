"""The tasks extension of 2026-07-28 (SEP-2663, ``io.modelcontextprotocol/tasks``).

A client opts in per request: its ``_meta`` client capabilities name the extension
under ``extensions``. The server then may answer a ``tools/call`` with a *flat* task
(``resultType: "task"``, ``taskId``, ``status``, ``ttlMs``, ``pollIntervalMs``...) in
place of the tool's result, at its own discretion. The client polls ``tasks/get``,
whose answer (a :class:`DetailedTask`) inlines the tool's ``result`` or the JSON-RPC
``error`` once the task ended, and the server's questions (``inputRequests``) while it
is ``input_required``; ``tasks/update`` answers them (``inputResponses``) and
``tasks/cancel`` asks for the end. Both answer with an empty acknowledgement. There is
no ``tasks/result`` and no ``tasks/list``; status changes reach a client that listens
for the task's id (``subscriptions/listen`` with ``notifications.taskIds``) as
``notifications/tasks``.

The 2025-11-25 shapes are in :mod:`.tasks`; both map onto the same runtime records
(:mod:`mcpactor.tasks`).
"""

from typing import Any

import attrs

from .tasks import TERMINAL_STATUSES, TaskStatus

__all__ = [
    "TASKS_EXTENSION",
    "TASK_STATUS_NOTIFICATION",
    "DetailedTask",
    "UpdateTaskParams",
    "declares_tasks_extension",
    "tasks_extension_capabilities",
]

#: The extension's identifier (under ``capabilities.extensions``).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: The status notification of the extension (on ``subscriptions/listen`` streams).
TASK_STATUS_NOTIFICATION = "notifications/tasks"


def declares_tasks_extension(capabilities: Any) -> bool:
    """Whether a (wire) capabilities object declares the tasks extension."""
    if not isinstance(capabilities, dict):
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def tasks_extension_capabilities(capabilities: dict[str, Any] | None) -> dict[str, Any]:
    """``capabilities`` (copied) with the tasks extension declared."""
    out = dict(capabilities or {})
    extensions = out.get("extensions")
    out["extensions"] = {**(extensions if isinstance(extensions, dict) else {}),
                         TASKS_EXTENSION: {}}
    return out


@attrs.frozen(kw_only=True)
class DetailedTask:
    """A task as the extension shows it: the ``CreateTaskResult`` (``resultType:
    "task"``, without ``result``/``error``/``inputRequests``), the ``tasks/get`` result
    and the params of ``notifications/tasks`` (with them, per status)."""

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    #: Milliseconds from creation the server keeps the task; ``null`` for unlimited
    #: (required on the wire, so no default: None is sent as null).
    ttl_ms: int | None
    status_message: str | None = None
    poll_interval_ms: int | None = None
    #: ``completed``: what the request would have answered (a ``CallToolResult``).
    result: dict[str, Any] | None = None
    #: ``failed``: the JSON-RPC error the request ended with.
    error: dict[str, Any] | None = None
    #: ``input_required``: key → ``{"method", "params"}`` of each outstanding question.
    input_requests: dict[str, Any] | None = None
    #: ``"task"`` on a ``CreateTaskResult``, ``"complete"`` on a ``tasks/get`` answer.
    result_type: str | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)

    @property
    def terminal(self) -> bool:
        """Whether the task reached a status it never leaves."""
        return self.status in TERMINAL_STATUSES


@attrs.frozen(kw_only=True)
class UpdateTaskParams:
    """Params of ``tasks/update``: answers to the task's outstanding ``inputRequests``,
    by key."""

    task_id: str
    input_responses: dict[str, Any]
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)
