"""Tools as tasks on the server: ``@server.tool(task="optional" | "required")``, in
both eras (2025-11-25 tasks and the 2026-07-28 tasks extension, SEP-2663).

A ``tools/call`` that runs as a task is answered at once with a ``CreateTaskResult``;
the tool then runs in the task's worker (:mod:`mcpactor.tasks.runtime`) through the
very code path of a plain call (``ServerHandler.run_tool``), with a
:class:`~mcpactor.tasks.context.TaskRequestContext` behind its ``Context``: the handler
is the same function either way. What the tool returns (or the ``isError`` result its
failure becomes) is the task's result.

When a call runs as a task (:func:`route`):

- 2025-11-25 (the tasks page, "Tool-Level Negotiation"): the client asks, with
  ``task`` in the params. ``forbidden`` (the default) with ``task``: -32601;
  ``required`` without ``task``: -32601; ``optional``: either way. A tool result with
  ``isError`` leaves the task ``failed``, as that revision asks.
- 2026-07-28 (the extension): the server decides. A call whose ``_meta`` client
  capabilities declare ``io.modelcontextprotocol/tasks`` runs as a task when the tool
  is ``optional`` or ``required``; without the extension an ``optional`` tool answers
  as a plain call and a ``required`` one is -32021 naming the extension. ``task`` in
  the params means nothing there. A tool result with ``isError`` is a ``completed``
  task (``failed`` is for JSON-RPC errors).
- Earlier revisions have no tasks: every tool answers as a plain call.

A tool registered with ``begins_task=True`` says itself where its task begins
(``await ctx.begin_task()``). Called as a task in 2026-07-28, it first runs in the
request: its questions before that point are input rounds (MRTR), as the extension
asks of a server that gathers input before it creates a task, and it may also just
answer (the immediate result). At ``begin_task`` the run ends (:class:`BeginTask`),
the task is created, and the function runs again in it from the start with the
answers gathered, ``begin_task`` returning at once this time. In 2025-11-25, and in a
plain call, ``begin_task`` does nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpactor.protocol import types as t
from mcpactor.protocol import versions
from mcpactor.protocol.convert import to_wire
from mcpactor.protocol.errors import McpError, MethodNotFound, MissingClientCapability
from mcpactor.server.rounds import Rounds
from mcpactor.session.context import RequestContext
from mcpactor.tasks import wire_ext
from mcpactor.tasks.context import TaskRequestContext
from mcpactor.tasks.runtime import Outcome, RunningTask
from mcpactor.tasks.wire import create_task_result, requester_of

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.server.handler import ServerHandler
    from mcpactor.server.registry import ToolEntry

__all__ = [
    "TASK_SUPPORT",
    "BeginTask",
    "call_tool",
    "capability",
    "check_task_support",
    "route",
    "start_tool_task",
]

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


class BeginTask(McpError):
    """Raised by ``ctx.begin_task()`` in the request's run of a ``begins_task`` tool
    that becomes a task (see the module): the run ends there and the task starts. An
    McpError, so that the runtime's ``except Exception`` blocks let it through."""

    def __init__(self) -> None:
        super().__init__("the tool's task begins here")


def capability(server: Server) -> dict[str, Any] | None:
    """The server's ``tasks`` capability (2025-11-25): declared when a tool can run as
    a task. The same condition declares the 2026-07-28 extension
    (``capabilities.extensions``, see ``Server.capabilities``)."""
    if not any(e.task_support != "forbidden" for e in server.tools.values()):
        return None
    return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


#: How a ``tools/call`` runs (:func:`route`): as a task at once, or first in the
#: request up to ``ctx.begin_task()``; None: a plain call.
TASK = "task"
FIRST_IN_REQUEST = "first"


def route(handler: ServerHandler, rc: RequestContext, entry: ToolEntry,
          params: t.CallToolRequestParams) -> str | None:
    """How this ``tools/call`` runs (:data:`TASK`, :data:`FIRST_IN_REQUEST`, or None
    for a plain call); -32601 (2025-11-25) or -32021 (2026-07-28) when the tool's task
    support and the request disagree (see the module)."""
    support = entry.task_support
    if versions.has_tasks_extension(rc.protocol_version):
        if support == "forbidden":
            return None
        if not t.declares_tasks_extension(rc.peer_capabilities):
            if support == "required":
                raise MissingClientCapability(
                    t.TASKS_EXTENSION, f"tool {params.name!r} (it runs only as a task)",
                    extension=True)
            return None
        return FIRST_IN_REQUEST if entry.begins_task else TASK
    if not versions.has_tasks(rc.protocol_version):
        # No tasks in this request's revision (one before 2025-11-25): every tool
        # answers as a plain call.
        return None
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
    return TASK if wants else None


async def call_tool(handler: ServerHandler, rc: RequestContext, entry: ToolEntry,
                    params: t.CallToolRequestParams) -> Any:
    """A ``tools/call`` of a tool that may run as a task (or that names ``task``): as
    :func:`route` decides."""
    how = route(handler, rc, entry, params)
    if how == TASK:
        return await start_tool_task(handler, rc, entry, params)
    if how == FIRST_IN_REQUEST and isinstance(rc.state, Rounds):
        rc.state.begins_task = True
        try:
            return await handler.run_tool(rc, entry, params)
        except BeginTask:
            return await start_tool_task(handler, rc, entry, params)
    return await handler.run_tool(rc, entry, params)


async def start_tool_task(handler: ServerHandler, rc: RequestContext, entry: ToolEntry,
                          params: t.CallToolRequestParams) -> dict[str, Any]:
    """Create the task for a ``tools/call`` and start the tool in it; the
    ``CreateTaskResult`` to answer with (the era's shape)."""
    extension = rc.modern is not None
    rounds = rc.state if isinstance(rc.state, Rounds) else None

    async def work(running: RunningTask) -> Outcome:
        trc = TaskRequestContext(rc, running)
        # A begins_task tool runs again from its start: with the answers its request's
        # rounds gathered, afresh.
        trc.state = rounds.again() if rounds is not None else None
        try:
            value = await handler.run_tool(trc, entry, params)
        except McpError as exc:  # raised on purpose by the tool: the task's error
            return Outcome(error=exc)
        wire = value if isinstance(value, dict) else to_wire(value)
        if wire.get("isError"):
            # 2025-11-25: a failed task; the extension: a completed one (its result says).
            return Outcome(result=wire, failed=not extension, message=_first_text(wire))
        return Outcome(result=wire)

    ttl = params.task.ttl if params.task is not None and not extension else None
    record = await handler.server.task_runtime.create(
        method="tools/call", requested_ttl_ms=ttl, requester=requester_of(rc),
        session=rc.session, request_id=rc.id, progress_token=rc.progress_token, work=work,
        parked=extension)
    return wire_ext.create_task_result(record) if extension else create_task_result(record)


def _first_text(result: dict[str, Any]) -> str | None:
    for block in result.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            return text if isinstance(text, str) else None
    return None
