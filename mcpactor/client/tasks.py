"""Tasks on the client, both ways.

As requestor, in both eras: :func:`call_tool_task` calls a tool as a task and returns
a :class:`~mcpactor.tasks.TaskHandle` (status, a stream of statuses, ``await
result()``, ``cancel()``); :func:`attach` makes a handle for a task id the client
already has (after reconnecting). In 2025-11-25 the client asks for the task (``task``
in the params); in 2026-07-28 (the tasks extension, SEP-2663) the request declares the
extension and the server decides, so it may also answer at once (a settled handle).

As receiver (2025-11-25 only: the extension has no client-hosted tasks): with
``ClientHandlers(tasks=True)`` (or a :class:`~mcpactor.tasks.TaskOptions`), a server
may send ``sampling/createMessage`` and ``elicitation/create`` as tasks. The client answers with a ``CreateTaskResult`` at once and runs its own
handler in the task (:func:`start_task`), the same handler that answers a plain
request; the server polls ``tasks/get`` and fetches ``tasks/result``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpactor.client.results import ToolResult
from mcpactor.protocol import types as t
from mcpactor.protocol.convert import to_wire
from mcpactor.protocol.errors import CapabilityNotSupported, McpError
from mcpactor.session.context import RequestContext
from mcpactor.session.tracker import ProgressCallback, Timeout
from mcpactor.tasks.context import TaskRequestContext
from mcpactor.tasks.handle import TaskHandle
from mcpactor.tasks.runtime import Outcome, RunningTask, TaskRuntime
from mcpactor.tasks.wire import create_task_result, requester_of

if TYPE_CHECKING:
    from mcpactor.client.client import Client

__all__ = ["attach", "call_tool_task", "capability", "start_task"]

#: The server requests a client can run as tasks.
TASK_REQUESTS = ("sampling/createMessage", "elicitation/create")


def capability(sampling: bool, elicitation: bool) -> dict[str, Any]:
    """The client's ``tasks`` capability: the requests it has handlers for."""
    requests: dict[str, Any] = {}
    if sampling:
        requests["sampling"] = {"createMessage": {}}
    if elicitation:
        requests["elicitation"] = {"create": {}}
    return {"list": {}, "cancel": {}, "requests": requests}


async def start_task(runtime: TaskRuntime, rc: RequestContext,
                     answer: Callable[[RequestContext], Any]) -> dict[str, Any]:
    """Run a task-augmented server request as a task: ``answer`` is the handler path
    of the plain request, given the task's request context."""

    async def work(running: RunningTask) -> Outcome:
        try:
            value = await answer(TaskRequestContext(rc, running))
        except McpError as exc:
            return Outcome(error=exc)
        return Outcome(result=to_wire(value))

    task = getattr(rc.params, "task", None)
    record = await runtime.create(
        method=rc.method, requested_ttl_ms=getattr(task, "ttl", None),
        requester=requester_of(rc), session=rc.session, request_id=rc.id,
        progress_token=rc.progress_token, work=work)
    return create_task_result(record)


def _tool_finish(client: Client, name: str, validate: bool,
                 result_type: Any) -> Callable[[Any], ToolResult[Any]]:
    def finish(result: ToolResult[Any]) -> ToolResult[Any]:
        return client._checked_tool_result(name, result, validate, result_type)

    return finish


async def call_tool_task(
    client: Client,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    ttl: float | None = None,
    timeout: Timeout | float | None = None,
    meta: dict[str, Any] | None = None,
    validate: bool = True,
    result_type: Any = None,
    on_progress: ProgressCallback | None = None,
) -> TaskHandle[ToolResult[Any]]:
    """Call a tool as a task (see :meth:`mcpactor.client.Client.call_tool_task`)."""
    finish = _tool_finish(client, name, validate, result_type)
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    if client.stateless:
        caps = client.server_capabilities
        if client.session.connection.peer_capabilities is not None \
                and not t.declares_tasks_extension(caps):
            raise CapabilityNotSupported(
                f"cannot call {name!r} as a task: the server does not declare the tasks "
                f"extension ({t.TASKS_EXTENSION}) in its capabilities (call it with "
                "call_tool instead)")
        # The server decides (our requests declare the extension): a task, or the
        # result at once.
        answer = await client.request("tools/call", params, timeout=timeout,
                                      result_cls=ToolResult[Any], follow_tasks=False)
        if not (isinstance(answer, t.DetailedTask) and answer.result_type == "task"):
            return TaskHandle.settled(finish(answer))
        return client._task_handle(answer, result_cls=ToolResult[Any], timeout=timeout,
                                   finish=finish)
    if not t.accepts_task(client.server_capabilities, "tools/call"):
        raise CapabilityNotSupported(
            f"cannot call {name!r} as a task: the server does not declare "
            "tasks.requests.tools.call (call it with call_tool instead)")
    task: dict[str, Any] = {}
    if ttl is not None:
        task["ttl"] = int(ttl * 1000)
    params["task"] = task
    # ``on_progress`` hears the task's progress for its whole life (the spec keeps the
    # creating request's token valid until the task ends).
    created: t.CreateTaskResult = await client.request(
        "tools/call", params, timeout=timeout, result_cls=t.CreateTaskResult,
        on_progress=on_progress)
    return client._task_handle(created.task, result_cls=ToolResult[Any], timeout=timeout,
                               finish=finish)


async def attach(
    client: Client,
    task_id: str,
    *,
    tool: str | None = None,
    result_cls: Any = None,
    validate: bool = True,
    result_type: Any = None,
    timeout: Timeout | float | None = None,
) -> TaskHandle[Any]:
    """A handle for a task the client knows the id of (``tasks/get`` first: an unknown
    or expired id raises -32602). ``tool``: the task is a call of that tool (its result
    is read as :meth:`call_tool_task`'s); else ``result_cls`` parses the result."""
    task = await client.request("tasks/get", {"taskId": task_id}, timeout=timeout)
    if tool is not None:
        return client._task_handle(task, result_cls=ToolResult[Any], timeout=timeout,
                                   finish=_tool_finish(client, tool, validate, result_type))
    return client._task_handle(task, result_cls=result_cls, timeout=timeout)
