"""The 2025-11-25 wire form of tasks, on top of the runtime.

What a receiver answers: ``CreateTaskResult`` (``{"task": Task}``) for an accepted
task-augmented request, and the ``tasks/get``, ``tasks/result``, ``tasks/list`` and
``tasks/cancel`` requests (:func:`answer`). Both roles use it: a server for its tool
calls, a client for the sampling and elicitation it runs as tasks.

This is the one place that knows the 2025-11-25 shapes. The 2026-07-28 extension
(SEP-2663: a flat ``CreateTaskResult`` with ``resultType: "task"`` and ``ttlMs``,
results inlined in ``tasks/get``, ``tasks/update`` answering ``inputRequests``, no
``tasks/result`` or ``tasks/list``) is :mod:`mcpactor.tasks.wire_ext`, beside this
one, over the same :class:`~mcpactor.tasks.runtime.TaskRuntime` and records.
"""

from __future__ import annotations

from typing import Any

from mcpactor.protocol import types as t
from mcpactor.protocol.convert import to_wire
from mcpactor.protocol.errors import InternalError, MethodNotFound, RequestError
from mcpactor.session.context import RequestContext
from mcpactor.session.state import SessionAuth
from mcpactor.tasks.runtime import Requester, TaskRuntime
from mcpactor.tasks.store import TaskRecord

__all__ = ["METHODS", "answer", "create_task_result", "payload", "requester_of"]

#: The requests a receiver of 2025-11-25 tasks answers.
METHODS: frozenset[str] = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})


def requester_of(rc: RequestContext) -> Requester:
    """Who sent ``rc``: the subject (else the client id) of the OAuth token that came
    with it, if the server checks tokens (tasks are bound to it), and its session."""
    auth = rc.session.state.get(SessionAuth)
    token = auth.token_for(rc.id) if auth is not None else None
    owner = None
    if token is not None:
        owner = getattr(token, "subject", None) or getattr(token, "client_id", None)
    return Requester(owner=owner, session=rc.session.id)


def create_task_result(record: TaskRecord, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``CreateTaskResult`` answering the request that created ``record``."""
    out: dict[str, Any] = {"task": to_wire(record.to_task())}
    if meta:
        out["_meta"] = meta
    return out


def payload(record: TaskRecord) -> dict[str, Any]:
    """What ``tasks/result`` answers for a terminal task: exactly what the wrapped
    request would have (its result with the related-task ``_meta``, or its error
    raised as the same JSON-RPC error); a cancelled task has neither, so it is an
    error saying so."""
    if record.error is not None:
        err = record.error
        raise RequestError(str(err.get("message", "")), code=int(err.get("code", -32603)),
                           data=err.get("data"))
    if record.result is None:
        raise InternalError(
            f"Task {record.task_id} was {record.status}: "
            f"{record.status_message or 'it has no result'}",
            data={"taskId": record.task_id, "status": record.status})
    result = dict(record.result)
    result["_meta"] = t.related_task_meta(record.task_id, result.get("_meta"))
    return result


async def answer(runtime: TaskRuntime, rc: RequestContext) -> Any:
    """Answer one of :data:`METHODS` (``rc.params`` parsed by the method table)."""
    requester = requester_of(rc)
    if rc.method == "tasks/list":
        params: t.PaginatedRequestParams = rc.params
        records, nxt = await runtime.list(requester, params.cursor)
        out: dict[str, Any] = {"tasks": [to_wire(r.to_task()) for r in records]}
        if nxt is not None:
            out["nextCursor"] = nxt
        return out
    ids: t.TaskIdParams = rc.params
    if rc.method == "tasks/get":
        return to_wire((await runtime.get(ids.task_id, requester, rc.session)).to_task())
    if rc.method == "tasks/cancel":
        return to_wire((await runtime.cancel(ids.task_id, requester, rc.session)).to_task())
    if rc.method == "tasks/result":
        return payload(await runtime.wait_terminal(ids.task_id, requester, rc.session, rc.id))
    raise MethodNotFound(f"Method not found: {rc.method}")
