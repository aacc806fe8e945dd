"""Following a task from the requestor's side: :class:`TaskHandle`, in both eras.

A handle holds the task's latest known state (:attr:`TaskHandle.task`) and offers what
a requestor does with a task: watch its statuses, wait for the end, get the result,
cancel it. It talks through a ``request`` function (a client's or a session's), so it
serves either side of a session.

- 2025-11-25: the state is kept current by the receiver's ``notifications/tasks/status``
  (which are optional, so it also polls ``tasks/get`` at the task's ``pollInterval``);
  the result is ``tasks/result``, and the receiver's questions come as requests while
  that waits; ``tasks/cancel`` answers with the task.
- The 2026-07-28 tasks extension (``extension=True``): ``tasks/get`` is polled at the
  task's ``pollIntervalMs`` and carries everything: the result or error once the task
  ended, the receiver's questions (``inputRequests``) while it is ``input_required``,
  which the handle answers through ``answer_input`` (the client's handlers) and sends
  back with ``tasks/update``, each key once. ``tasks/cancel`` is an acknowledgement.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.convert import from_wire
from mcpactor.protocol.errors import INTERNAL_ERROR, RequestError

__all__ = ["AnswerInputFn", "RequestFn", "TaskHandle", "TaskWatchers", "as_task"]

R = TypeVar("R")

#: ``request(method, params, *, timeout=..., result_cls=...)``: one request, its result.
RequestFn = Callable[..., Awaitable[Any]]

#: ``answer_input(key, {"method", "params"})``: the answer (wire form) to one question.
AnswerInputFn = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

#: Polling interval when the receiver suggests none (seconds).
DEFAULT_POLL = 1.0


def as_task(task: t.Task | t.DetailedTask) -> t.Task:
    """A task's state in the common shape (the extension's ``ttlMs`` and
    ``pollIntervalMs`` as ``ttl`` and ``poll_interval``)."""
    if isinstance(task, t.Task):
        return task
    return t.Task(task_id=task.task_id, status=task.status, created_at=task.created_at,
                  last_updated_at=task.last_updated_at, ttl=task.ttl_ms,
                  status_message=task.status_message, poll_interval=task.poll_interval_ms)


class TaskWatchers:
    """The handles of one session, by task id, for its status notifications to reach."""

    def __init__(self) -> None:
        self._handles: dict[str, weakref.WeakSet[TaskHandle[Any]]] = {}

    def add(self, handle: TaskHandle[Any]) -> None:
        """Let ``handle`` hear its task's status notifications."""
        self._handles.setdefault(handle.task_id, weakref.WeakSet()).add(handle)

    def deliver(self, task: t.Task | t.DetailedTask) -> None:
        """A status notification arrived (2025-11-25's, or the extension's
        ``notifications/tasks``): update the handles of that task."""
        handles = self._handles.get(task.task_id)
        if not handles:
            self._handles.pop(task.task_id, None)
            return
        for handle in list(handles):
            handle._take(task)
        if task.terminal:
            self._handles.pop(task.task_id, None)


class TaskHandle(Generic[R]):
    """A task this side asked for (see the module).

    ``finish`` turns the result (parsed as ``result_cls``) into what :meth:`result`
    returns (a client's tool call checks it against the tool's ``outputSchema`` and
    reads it as the type asked for). ``extension``: a task of the 2026-07-28 extension
    (see the module), whose questions ``answer_input`` answers. ``on_end(task_id)`` is
    called once the task is known to have ended.
    """

    def __init__(
        self,
        request: RequestFn,
        task: t.Task | t.DetailedTask,
        *,
        result_cls: Any = None,
        finish: Callable[[Any], R] | None = None,
        watchers: TaskWatchers | None = None,
        timeout: Any = None,
        extension: bool = False,
        answer_input: AnswerInputFn | None = None,
        on_end: Callable[[str], object] | None = None,
    ) -> None:
        self._request = request
        self.task = as_task(task)
        #: The extension's latest ``tasks/get`` answer (None in 2025-11-25).
        self.detailed: t.DetailedTask | None = task if isinstance(task, t.DetailedTask) else None
        self.extension = extension
        self._answer_input = answer_input
        self._answered: set[str] = set()
        self._on_end = on_end
        self._result_cls = result_cls
        self._finish = finish
        self._timeout = timeout
        self._changed = trio.Event()
        #: The result the receiver answered with at once (no task was made).
        self._settled: Any = None
        self._is_settled = False
        if watchers is not None:
            watchers.add(self)

    @classmethod
    def settled(cls, value: R) -> TaskHandle[R]:
        """A handle for a request the receiver answered at once, without a task (the
        extension lets a server do that): ``completed``, ``task_id`` empty,
        :meth:`result` is ``value``."""
        now = "1970-01-01T00:00:00.000Z"
        handle: TaskHandle[R] = cls(_no_request, t.Task(
            task_id="", status="completed", created_at=now, last_updated_at=now, ttl=None,
            status_message="answered at once, without a task"), extension=True)
        handle._settled, handle._is_settled = value, True
        return handle

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
        if task.terminal and self._on_end is not None:
            self._on_end(self.task_id)

    def _take(self, task: t.Task | t.DetailedTask) -> None:
        """A newer state, from a poll or a notification of either era."""
        if isinstance(task, t.DetailedTask) and task.task_id == self.task_id \
                and not self.task.terminal:
            self.detailed = task
        self._update(as_task(task))

    async def refresh(self) -> t.Task:
        """Ask the receiver for the task's state now (``tasks/get``). With the
        extension, questions the task waits on are answered (``tasks/update``)."""
        if self._is_settled:
            return self.task
        if not self.extension:
            task = await self._request("tasks/get", {"taskId": self.task_id},
                                       timeout=self._timeout, result_cls=t.Task)
            self._update(task)
            return self.task
        detailed: t.DetailedTask = await self._request(
            "tasks/get", {"taskId": self.task_id}, timeout=self._timeout,
            result_cls=t.DetailedTask)
        self._take(detailed)
        if detailed.status == "input_required" and detailed.input_requests:
            await self._answer(detailed.input_requests)
        return self.task

    async def _answer(self, requests: dict[str, Any]) -> None:
        """The extension: answer the questions not answered yet, in one ``tasks/update``
        (without an ``answer_input``, they are left for someone else to answer)."""
        if self._answer_input is None:
            return
        todo = {key: request for key, request in requests.items()
                 if key not in self._answered and isinstance(request, dict)}
        if not todo:
            return
        # Taken before answering: a poll meanwhile (statuses() beside result()) must
        # not ask the user the same question again.
        self._answered.update(todo)
        try:
            answers = {key: await self._answer_input(key, request)
                       for key, request in todo.items()}
            await self._request("tasks/update", {"taskId": self.task_id,
                                                 "inputResponses": answers},
                                timeout=self._timeout)
        except BaseException:
            self._answered.difference_update(todo)
            raise

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
        """The result of the request the task wraps, once the task ended: what the
        request would have answered, or its error raised (:class:`~mcpactor.
        RequestError`; a cancelled task is an error too). 2025-11-25: ``tasks/result``,
        which waits, and on which the receiver may send the requests the task needs
        answered; the extension: :meth:`wait` (polling, answering the task's
        questions), then the result inlined in the last ``tasks/get``."""
        if self._is_settled:
            return self._settled
        if self.extension:
            value = self._inlined(await self._wait_detailed())
        else:
            value = await self._request("tasks/result", {"taskId": self.task_id},
                                        timeout=self._timeout, result_cls=self._result_cls)
        return self._finish(value) if self._finish is not None else value

    async def _wait_detailed(self) -> t.DetailedTask:
        await self.wait()
        detailed = self.detailed
        if detailed is None or not detailed.terminal:
            await self.refresh()  # the end came by another route: read it once
            detailed = self.detailed
        assert detailed is not None
        return detailed

    def _inlined(self, detailed: t.DetailedTask) -> Any:
        """The extension: a terminal task's result (parsed), or its error raised."""
        if detailed.status == "completed" and detailed.result is not None:
            if self._result_cls is None:
                return detailed.result
            return from_wire(detailed.result, self._result_cls)
        if detailed.status == "failed" and detailed.error is not None:
            err = detailed.error
            code = err.get("code")
            raise RequestError(str(err.get("message", "")),
                               code=code if isinstance(code, int) else INTERNAL_ERROR,
                               data=err.get("data"))
        raise RequestError(
            f"Task {detailed.task_id} was {detailed.status}: "
            f"{detailed.status_message or 'it has no result'}", code=INTERNAL_ERROR,
            data={"taskId": detailed.task_id, "status": detailed.status})

    async def cancel(self) -> t.Task:
        """Cancel the task (``tasks/cancel``); its state afterwards. 2025-11-25: the
        receiver answers with it (``cancelled``), and a task that already ended is
        :class:`~mcpactor.RequestError` -32602. The extension: the receiver only
        acknowledges (a task that already ended too); the state is read afterwards
        (``tasks/get``), and may be another terminal one if the work won the race."""
        if self._is_settled:
            return self.task
        if self.extension:
            await self._request("tasks/cancel", {"taskId": self.task_id},
                                timeout=self._timeout)
            return await self.refresh()
        task = await self._request("tasks/cancel", {"taskId": self.task_id},
                                   timeout=self._timeout, result_cls=t.Task)
        self._update(task)
        return self.task


async def _no_request(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("this task handle has no task to ask about")
