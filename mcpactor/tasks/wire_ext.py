"""The 2026-07-28 tasks extension's wire form (SEP-2663), on top of the runtime.

The same :class:`~mcpactor.tasks.runtime.TaskRuntime` and records as
:mod:`mcpactor.tasks.wire` (2025-11-25), mapped onto the extension's shapes:

- a new task is a flat ``CreateTaskResult`` (``resultType: "task"``, ``ttlMs``,
  ``pollIntervalMs``; :func:`create_task_result`);
- ``tasks/get`` answers the task with what its status carries inlined: the
  ``result`` of the wrapped request once ``completed`` (without the related-task
  ``_meta``), its JSON-RPC ``error`` once ``failed``, the waiting questions as
  ``inputRequests`` while ``input_required`` (:func:`detailed`);
- ``tasks/update`` hands answers to the waiting questions, ``tasks/cancel`` asks for
  the end; both acknowledge with an empty result, and cancelling a task that already
  ended is acknowledged too (idempotent; only an unknown id is -32602);
- every one of them needs the extension in the request's client capabilities
  (-32021 otherwise, naming it).

A tool result with ``isError`` is a ``completed`` task here (its ``result`` says so);
``failed`` is for JSON-RPC errors only.
"""

from __future__ import annotations

from typing import Any

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import MethodNotFound, MissingClientCapability
from mcpactor.session.context import RequestContext
from mcpactor.tasks.runtime import RunningTask, TaskRuntime
from mcpactor.tasks.store import TaskRecord, iso8601
from mcpactor.tasks.wire import requester_of

__all__ = ["METHODS", "answer", "create_task_result", "detailed", "require_extension"]

#: The requests a receiver of the extension answers.
METHODS: frozenset[str] = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


def require_extension(rc: RequestContext) -> None:
    """-32021 unless the request declared the tasks extension in its client
    capabilities."""
    if not t.declares_tasks_extension(rc.peer_capabilities):
        raise MissingClientCapability(t.TASKS_EXTENSION, rc.method, extension=True)


def _base(record: TaskRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": iso8601(record.created_at),
        "lastUpdatedAt": iso8601(record.updated_at),
        "ttlMs": record.ttl_ms,
    }
    if record.status_message is not None:
        out["statusMessage"] = record.status_message
    if record.poll_interval_ms is not None:
        out["pollIntervalMs"] = record.poll_interval_ms
    return out


def create_task_result(record: TaskRecord) -> dict[str, Any]:
    """The flat ``CreateTaskResult`` answering the request that created ``record``."""
    out = _base(record)
    out["resultType"] = "task"
    return out


def detailed(record: TaskRecord, running: RunningTask | None) -> dict[str, Any]:
    """The task as ``tasks/get`` and ``notifications/tasks`` show it (``running``: its
    worker here, whose waiting questions are the ``inputRequests``)."""
    out = _base(record)
    if record.status == "completed" and record.result is not None:
        result = dict(record.result)
        meta = result.get("_meta")
        if isinstance(meta, dict) and t.RELATED_TASK in meta:
            rest = {k: v for k, v in meta.items() if k != t.RELATED_TASK}
            if rest:
                result["_meta"] = rest
            else:
                del result["_meta"]
        out["result"] = result
    elif record.status == "failed" and record.error is not None:
        out["error"] = dict(record.error)
    elif record.status == "input_required":
        if running is not None:
            out["inputRequests"] = running.pending_requests()
        else:  # running in another process sharing the store: as it stored them
            stored = (record.result or {}).get("inputRequests")
            out["inputRequests"] = dict(stored) if isinstance(stored, dict) else {}
    return out


async def answer(runtime: TaskRuntime, rc: RequestContext) -> Any:
    """Answer one of :data:`METHODS` (``rc.params`` parsed by the extension's method
    table)."""
    require_extension(rc)
    requester = requester_of(rc)
    if rc.method == "tasks/get":
        ids: t.TaskIdParams = rc.params
        record = await runtime.get(ids.task_id, requester)
        return detailed(record, runtime.running(ids.task_id))
    if rc.method == "tasks/update":
        update: t.UpdateTaskParams = rc.params
        await runtime.update(update.task_id, requester, update.input_responses)
        return {}
    if rc.method == "tasks/cancel":
        ids = rc.params
        # Not attached: the extension tells sessions nothing of a task.
        await runtime.cancel(ids.task_id, requester, rc.session, terminal_ok=True,
                             attach=False)
        return {}
    raise MethodNotFound(f"Method not found: {rc.method}")
