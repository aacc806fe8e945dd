"""The request a task's work sees: the request that created the task, talking through
the task.

Handler code is the same for a plain request and a task (a tool's ``ctx.report_progress``,
``ctx.info``, ``ctx.elicit``, ``ctx.sample``; a client handler's ``HandlerContext``):
they all go through a :class:`~mcpactor.session.context.RequestContext`. A
:class:`TaskRequestContext` is one whose messages go where the task's do
(:class:`~mcpactor.tasks.runtime.RunningTask`): to the session attached to the task
now, with the related-task ``_meta``, progress on the creating request's token, and
requests to the requestor moving the task to ``input_required``. Its cancel scope is
the task's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpactor.session.context import RequestContext

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.session.tracker import ProgressCallback, Timeout
    from mcpactor.tasks.runtime import RunningTask

__all__ = ["TaskRequestContext", "running_task_of"]


class TaskRequestContext(RequestContext):
    """The creating request's context, redirected through its task (see the module)."""

    # ``session`` is a property here (the session attached to the task now), shadowing
    # the base class's slot, which is left unset.
    __slots__ = ("task",)

    def __init__(self, rc: RequestContext, task: RunningTask) -> None:
        # Everything the request context holds, but its session and its cancel scope.
        for name in RequestContext.__slots__:
            if name not in ("session", "scope"):
                setattr(self, name, getattr(rc, name))
        self.scope = task.scope
        self.task = task

    @property
    def session(self) -> Session:  # type: ignore[override]  # read-only: the task's choice
        """The session the task talks to now."""
        return self.task.session

    @property
    def peer_capabilities(self) -> dict[str, Any]:
        """The capabilities of the client the task talks to now (the extension's task:
        what the request that created it declared, the only ones it has)."""
        if self.modern is not None:
            return self.modern.client_capabilities
        return self.task.peer_capabilities

    @property
    def task_id(self) -> str:
        """The id of the task this request runs as."""
        return self.task.task_id

    @property
    def cancelled(self) -> bool:
        """Whether the task was cancelled (``tasks/cancel``, or its TTL ran out)."""
        return self.task.scope.cancel_called

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Progress on the creating request's token (valid for the task's life)."""
        return await self.task.progress(progress, total, message)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        on_progress: ProgressCallback | None = None,
        result_cls: Any = None,
    ) -> Any:
        """Ask the requestor, on the task's behalf (the task is ``input_required``
        meanwhile; see :meth:`~mcpactor.tasks.runtime.RunningTask.ask`)."""
        return await self.task.ask(method, params, timeout=timeout, result_cls=result_cls)

    async def notify(self, method: str, params: Any = None) -> None:
        """A notification of the task's work, with the related-task ``_meta`` (dropped
        when no session is attached to the task)."""
        await self.task.notify(method, params)


def running_task_of(rc: RequestContext) -> RunningTask | None:
    """The task ``rc`` runs as (None: a plain request)."""
    return rc.task if isinstance(rc, TaskRequestContext) else None
