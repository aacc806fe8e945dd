"""Tasks (2025-11-25, experimental): task-augmented requests and the ``tasks/*`` methods.

A requestor adds ``task`` to the params of a request the receiver accepts as a task
(``tools/call`` on a server; ``sampling/createMessage`` and ``elicitation/create`` on a
client); the receiver answers at once with a :class:`CreateTaskResult` and the real
result is fetched later with ``tasks/result``. Everything a task sends carries its id
in ``_meta`` under :data:`RELATED_TASK` (except ``tasks/get``, ``tasks/list``,
``tasks/cancel`` and the status notification, whose params name the task already).

The 2026-07-28 tasks extension (SEP-2663) reshapes these messages (flat
``CreateTaskResult`` with ``resultType: "task"``, ``ttlMs``, ``tasks/update``, no
``tasks/result`` or ``tasks/list``); its wire types are in :mod:`.tasks_ext`, mapped
onto the same runtime records (``mcpactor.tasks``).
"""

from typing import Any, Literal

import attrs

from .base import Cursor

#: Where a message names the task it belongs to: ``_meta[RELATED_TASK] = {"taskId": ...}``.
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Optional text a host may hand its model at once instead of waiting for the task
#: (``_meta`` of a ``CreateTaskResult`` of a ``tools/call``).
MODEL_IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response"

#: A task's state. Tasks start ``working``; the last three are terminal.
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: The statuses a task never leaves.
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
#: ``execution.taskSupport`` of a tool: whether a call may, must or must not be a task.
TaskSupport = Literal["forbidden", "optional", "required"]


def related_task_meta(task_id: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """``meta`` (copied) with the related-task key naming ``task_id``."""
    out = dict(meta) if meta else {}
    out[RELATED_TASK] = {"taskId": task_id}
    return out


def related_task_of(meta: Any) -> str | None:
    """The task id a message's ``_meta`` names, if it names one."""
    if not isinstance(meta, dict):
        return None
    related = meta.get(RELATED_TASK)
    if isinstance(related, dict):
        task_id = related.get("taskId")
        if isinstance(task_id, str):
            return task_id
    return None


@attrs.frozen(kw_only=True)
class TaskMetadata:
    """``task`` in the params of a task-augmented request: how long to keep the task."""

    #: Requested time to keep the task, in milliseconds from its creation.
    ttl: int | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class Task:
    """``Task``: one task's state (also the result of ``tasks/get`` and ``tasks/cancel``,
    and the params of ``notifications/tasks/status``)."""

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    #: Milliseconds from creation the receiver keeps the task; ``null`` for unlimited
    #: (required on the wire, so no default: None is sent as null).
    ttl: int | None
    status_message: str | None = None
    poll_interval: int | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)

    @property
    def terminal(self) -> bool:
        """Whether the task reached a status it never leaves."""
        return self.status in TERMINAL_STATUSES


@attrs.frozen(kw_only=True)
class CreateTaskResult:
    """The answer to a task-augmented request: the new task (the real result comes later
    through ``tasks/result``)."""

    task: Task
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class TaskIdParams:
    """Params of ``tasks/get``, ``tasks/result`` and ``tasks/cancel``: the task's id."""

    task_id: str
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ListTasksResult:
    """``tasks/list`` result: one page of tasks and the cursor of the next."""

    tasks: list[Task]
    next_cursor: Cursor | None = None
    meta: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ToolExecution:
    """``Tool.execution``: how a tool may be run (2025-11-25)."""

    #: Absent means ``forbidden``.
    task_support: TaskSupport | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ServerTasksCapability:
    """Server ``capabilities.tasks``: ``list`` and ``cancel`` are declared by ``{}``;
    ``requests`` says which requests may be task-augmented
    (``{"tools": {"call": {}}}``)."""

    list: dict[str, Any] | None = None
    cancel: dict[str, Any] | None = None
    requests: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class ClientTasksCapability:
    """Client ``capabilities.tasks``: as the server's, with ``requests`` naming
    ``sampling.createMessage`` and ``elicitation.create``."""

    list: dict[str, Any] | None = None
    cancel: dict[str, Any] | None = None
    requests: dict[str, Any] | None = None
    extra: dict[str, Any] = attrs.Factory(dict)


#: For each method that can be task-augmented, its path under ``tasks.requests``.
TASK_REQUEST_CAPABILITIES: dict[str, tuple[str, str]] = {
    "tools/call": ("tools", "call"),
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}


def accepts_task(capabilities: Any, method: str) -> bool:
    """Whether a side whose (wire) capabilities are ``capabilities`` declared that it
    runs ``method`` as a task (``tasks.requests.<path>``)."""
    path = TASK_REQUEST_CAPABILITIES.get(method)
    if path is None or not isinstance(capabilities, dict):
        return False
    node: Any = capabilities.get("tasks")
    for key in ("requests", *path):
        if not isinstance(node, dict):
            return False
        node = node.get(key)
    return isinstance(node, dict)
