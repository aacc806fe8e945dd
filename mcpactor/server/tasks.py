"""Tools as tasks on the server (2025-11-25): ``@server.tool(task="optional" | "required")``.

A task-augmented ``tools/call`` of such a tool is answered at once with a
``CreateTaskResult``; the tool then runs in the task's worker
(:mod:`mcpactor.tasks.runtime`) through the very code path of a plain call
(``ServerHandler.run_tool``), with a :class:`~mcpactor.tasks.context.TaskRequestContext`
behind its ``Context``: the handler is the same function either way. What the tool
returns (or the ``isError`` result its failure becomes) is what ``tasks/result``
answers; a tool result with ``isError`` leaves the task ``failed``, as the spec asks.

The rules of ``execution.taskSupport`` (the tasks page, "Tool-Level Negotiation"):

- a server declaring no task support for ``tools/call`` ignores ``task`` in the params
  and answers normally (it has no task tools: see :func:`capability`), and so does a
  request on any revision but 2025-11-25 (an older one has no tasks; 2026-07-28 has
  the tasks extension, SEP-2663, not implemented yet: even a ``required`` tool answers
  as a plain call there);
- ``forbidden`` (the default) with ``task``: -32601;
- ``required`` without ``task``: -32601;
- ``optional``: either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpactor.protocol import types as t
from mcpactor.protocol import versions
from mcpactor.protocol.convert import to_wire
from mcpactor.protocol.errors import McpError, MethodNotFound
from mcpactor.session.context import RequestContext
from mcpactor.tasks.context import TaskRequestContext
from mcpactor.tasks.runtime import Outcome, RunningTask
from mcpactor.tasks.wire import create_task_result, requester_of

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.server.handler import ServerHandler
    from mcpactor.server.registry import ToolEntry

__all__ = ["TASK_SUPPORT", "capability", "check_task_support", "route", "start_tool_task"]

#: The values ``@server.tool(task=...)`` takes.
TASK_SUPPORT: tuple[str, ...] = ("forbidden", "optional", "required")


def check_task_support(value: Any) -> str:
    """``value`` as a tool's task support, or a TypeError/ValueError naming the choices."""
    if value is None or value is False:
        return "forbidden"
    if value is True:
        return "optional"
    if not isinstance(value, str) or value not in TASK_SUPPORT:
        raise ValueError(
            f"task={value!r}: a tool's task support is one of {', '.join(map(repr, TASK_SUPPORT))}"
            " (or True for 'optional')")
    return value


def capability(server: Server) -> dict[str, Any] | None:
    """The server's ``tasks`` capability: declared when a tool can run as a task."""
    if not any(e.task_support != "forbidden" for e in server.tools.values()):
        return None
    return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def route(handler: ServerHandler, rc: RequestContext, entry: ToolEntry,
          params: t.CallToolRequestParams) -> bool:
    """Whether this ``tools/call`` runs as a task; -32601 when the tool's task support
    and the request disagree (see the module)."""
    if not versions.has_tasks(rc.protocol_version):
        # No 2025-11-25 tasks in this request's revision (an older one, or 2026-07-28,
        # whose tasks extension is not implemented): every tool answers as a plain call.
        return False
    support = entry.task_support
    wants = params.task is not None and t.accepts_task(rc.session.connection.capabilities,
                                                       "tools/call")
    if wants and support == "forbidden":
        raise MethodNotFound(
            f"Method not found: tool {params.name!r} does not run as a task "
            "(its execution.taskSupport is 'forbidden'): call it without 'task'",
            data={"name": params.name, "taskSupport": support})
    if not wants and support == "required":
        raise MethodNotFound(
            f"Method not found: tool {params.name!r} must be called as a task "
            "(its execution.taskSupport is 'required'): add 'task' to the params",
            data={"name": params.name, "taskSupport": support})
    return wants


async def start_tool_task(handler: ServerHandler, rc: RequestContext, entry: ToolEntry,
                          params: t.CallToolRequestParams) -> dict[str, Any]:
    """Create the task for a task-augmented ``tools/call`` and start the tool in it;
    the ``CreateTaskResult`` to answer with."""

    async def work(running: RunningTask) -> Outcome:
        try:
            value = await handler.run_tool(TaskRequestContext(rc, running), entry, params)
        except McpError as exc:  # raised on purpose by the tool: the task's error
            return Outcome(error=exc)
        wire = value if isinstance(value, dict) else to_wire(value)
        if wire.get("isError"):
            return Outcome(result=wire, failed=True, message=_first_text(wire))
        return Outcome(result=wire)

    assert params.task is not None
    record = await handler.server.task_runtime.create(
        method="tools/call", requested_ttl_ms=params.task.ttl, requester=requester_of(rc),
        session=rc.session, request_id=rc.id, progress_token=rc.progress_token, work=work)
    return create_task_result(record)


def _first_text(result: dict[str, Any]) -> str | None:
    for block in result.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            return text if isinstance(text, str) else None
    return None
