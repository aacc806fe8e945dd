"""Following a task from the requestor's side: :class:`TaskHandle`.

A handle holds the task's latest known state (:attr:`TaskHandle.task`), kept current by
the receiver's ``notifications/tasks/status`` (which are optional, so it also polls
``tasks/get`` at the task's ``pollInterval``) and offers what a requestor does with a
task: watch its statuses, wait for the end, fetch the result (``tasks/result``), cancel
it (``tasks/cancel``). It talks through a ``request`` function (a client's or a
session's), so it serves either side of a session.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import trio

from mcpactor.protocol import types as t

__all__ = ["RequestFn", "TaskHandle", "TaskWatchers"]

R = TypeVar("R")

#: ``request(method, params, *, timeout=..., result_cls=...)``: one request, its result.
RequestFn = Callable[..., Awaitable[Any]]

#: Polling interval when the receiver suggests none (seconds).
DEFAULT_POLL = 1.0


class TaskWatchers:
    """The handles of one session, by task id, for its status notifications to reach."""

    def __init__(self) -> None:
        self._handles: dict[str, weakref.WeakSet[TaskHandle[Any]]] = {}

    def add(self, handle: TaskHandle[Any]) -> None:
        """Let ``handle`` hear its task's status notifications."""
        self._handles.setdefault(handle.task_id, weakref.WeakSet()).add(handle)

    def deliver(self, task: t.Task) -> None:
        """A status notification arrived: update the handles of that task."""
        handles = self._handles.get(task.task_id)
        if not handles:
            self._handles.pop(task.task_id, None)
            return
        for handle in list(handles):
            handle._update(task)
        if task.terminal:
            self._handles.pop(task.task_id, None)


class TaskHandle(Generic[R]):
    """A task this side asked for (see the module).

    ``finish`` turns the ``tasks/result`` answer (parsed as ``result_cls``) into what
    :meth:`result` returns (a client's tool call checks it against the tool's
    ``outputSchema`` and reads it as the type asked for).
    """

    def __init__(
        self,
        request: RequestFn,
        task: t.Task,
        *,
        result_cls: Any = None,
        finish: Callable[[Any], R] | None = None,
        watchers: TaskWatchers | None = None,
        timeout: Any = None,
    ) -> None:
        self._request = request
        self.task = task
        self._result_cls = result_cls
        self._finish = finish
        self._timeout = timeout
        self._changed = trio.Event()
        if watchers is not None:
            watchers.add(self)

    def __repr__(self) -> str:
        return f"TaskHandle({self.task_id!r}, {self.status!r})"

    @property
    def task_id(self) -> str:
        """The receiver's id of the task."""
        return self.task.task_id

    @property
    def status(self) -> str:
        """The latest known status (``working``, ``input_required``, ``completed``,
        ``failed``, ``cancelled``)."""
        return self.task.status

    @property
    def status_message(self) -> str | None:
        """The latest known status message."""
        return self.task.status_message

    @property
    def terminal(self) -> bool:
        """Whether the task is known to have ended."""
        return self.task.terminal

    def _update(self, task: t.Task) -> None:
        """A newer state of the task (from a poll or a notification); a terminal state
        is final, so nothing replaces it."""
        if self.task.terminal or task.task_id != self.task_id:
            return
        self.task = task
        self._changed.set()
        self._changed = trio.Event()

    async def refresh(self) -> t.Task:
        """Ask the receiver for the task's state now (``tasks/get``)."""
        task = await self._request("tasks/get", {"taskId": self.task_id},
                                   timeout=self._timeout, result_cls=t.Task)
        self._update(task)
        return self.task

    async def statuses(self) -> AsyncIterator[t.Task]:
        """Each state the task goes through (status or status message changed), from
        the current one to the terminal one, then the iteration ends. States come from
        status notifications, or from polling at the task's ``pollInterval``."""
        last: tuple[str, str | None] | None = None
        while True:
            current = self.task
            key = (current.status, current.status_message)
            if key != last:
                last = key
                yield current
            if current.terminal:
                return
            changed = self._changed
            interval = (current.poll_interval or DEFAULT_POLL * 1000) / 1000
            woken = False
            with trio.move_on_after(interval):
                await changed.wait()
                woken = True
            if not woken:
                await self.refresh()

    async def wait(self) -> t.Task:
        """Wait until the task ends; its terminal state."""
        async for _ in self.statuses():
            pass
        return self.task

    async def result(self) -> R:
        """The result of the request the task wraps (``tasks/result``, which waits for
        the task to end): what the request would have answered, or its error raised
        (:class:`~mcpactor.RequestError`; a cancelled task is an error too). While it
        waits, the receiver may send the requests the task needs answered (the
        ``input_required`` flow)."""
        value = await self._request("tasks/result", {"taskId": self.task_id},
                                    timeout=self._timeout, result_cls=self._result_cls)
        return self._finish(value) if self._finish is not None else value

    async def cancel(self) -> t.Task:
        """Cancel the task (``tasks/cancel``); its state afterwards (``cancelled``).
        A task that already ended: :class:`~mcpactor.RequestError` -32602."""
        task = await self._request("tasks/cancel", {"taskId": self.task_id},
                                   timeout=self._timeout, result_cls=t.Task)
        self._update(task)
        return self.task
