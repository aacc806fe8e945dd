"""The task runtime: runs task-augmented requests past the request that started them.

One :class:`TaskRuntime` per receiver (a :class:`~mcpactor.Server`, or a client that
runs sampling and elicitation as tasks). :meth:`TaskRuntime.create` stores the task
(durably, before the ``CreateTaskResult`` goes out) and starts its *worker*; the
``tasks/*`` requests read and change it through the same runtime. Role-agnostic: what
a task does is the ``work`` coroutine its creator hands in.

A worker is a Trio system task (``trio.lowlevel.spawn_system_task``): it belongs to no
session, so it goes on when the session that created it ends (the client
disconnected), until the task finishes, its TTL runs out, it is cancelled, or the Trio
run ends. It is spawned with the creating handler's context, so a recording follows it
as that handler's child (its steps, its clock and entropy reads: a replay re-runs it).

Per running task the runtime keeps a :class:`RunningTask`: its cancel scope (the TTL is
its deadline; ``tasks/cancel`` cancels it: cooperative, at the work's next checkpoint),
and the sessions attached to it (the one that created it, and any that asked about it
since, newest last), which is where its progress, logs, status notifications and
requests to the requestor go. Bounded: ``TaskOptions.max_running`` workers run at once
(more wait their turn, ``working`` with a status message saying so) and past
``TaskOptions.max_tasks`` unfinished tasks a new one is refused with -32005.

The lifecycle is traced on the creating session as actor ``task:<id>``:
``task_created``, ``task_status``, ``task_cancel_requested`` and ``task_finished``.

Protocol mapping lives in the callers (:mod:`mcpactor.server.tasks`,
:mod:`mcpactor.client.tasks`): this module speaks in :class:`TaskRecord` and
:class:`Outcome`, not in wire shapes, so the 2026-07-28 extension's shapes
(``resultType: "task"``, ``tasks/update``) map onto the same runtime.
"""

from __future__ import annotations

import abc
import contextvars
import logging
import math
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import (
    ConnectionClosed,
    InternalError,
    InvalidParams,
    McpError,
    ServerBusy,
)
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.lifecycle import State
from mcpactor.tasks.store import InMemoryTaskStore, TaskRecord, TaskStore

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.session.tracker import Timeout

__all__ = ["Outcome", "RemoteRequestor", "Requester", "RunningTask", "TaskOptions", "TaskPeers",
           "TaskRuntime", "Work"]

log = logging.getLogger("mcpactor.tasks")


@attrs.frozen(kw_only=True)
class TaskOptions:
    """How a receiver runs tasks (times in seconds; the wire says milliseconds).

    ``default_ttl``: kept this long when the requestor names no ``ttl``; ``max_ttl``:
    a longer (or unlimited) request is cut to this (None: unlimited is granted);
    ``poll_interval``: the polling interval suggested to requestors; ``max_running``:
    workers running at once; ``max_tasks``: unfinished tasks at once (running or
    waiting for a slot), past which a new one is refused (-32005, "retry later");
    ``page_size``: tasks per ``tasks/list`` page; ``store``: where tasks live (default:
    a fresh :class:`~mcpactor.tasks.InMemoryTaskStore`).
    """

    default_ttl: float = 300.0
    max_ttl: float | None = 86400.0
    poll_interval: float = 1.0
    max_running: int = 64
    max_tasks: int = 1024
    page_size: int = 100
    store: TaskStore | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("max_running", "max_tasks", "page_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"TaskOptions.{name} must be at least 1")
        for name in ("default_ttl", "poll_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"TaskOptions.{name} must be positive (seconds)")

    def granted_ttl_ms(self, requested: int | None) -> int | None:
        """The TTL (ms) a task gets when ``requested`` (ms, or None: not named)."""
        if requested is None:
            wanted: float | None = self.default_ttl * 1000
        elif requested <= 0:
            wanted = None  # no limit asked for
        else:
            wanted = float(requested)
        cap = self.max_ttl * 1000 if self.max_ttl is not None else None
        if wanted is None:
            return None if cap is None else int(cap)
        return int(min(wanted, cap) if cap is not None else wanted)


@attrs.frozen
class Requester:
    """Who asks about a task: the authorization context tasks are bound to (``owner``,
    None without one) and the session (lists are scoped to it when there is no owner)."""

    owner: str | None
    session: str | None


@attrs.frozen(kw_only=True)
class Outcome:
    """How the wrapped request ended: a wire ``result`` (``failed``: a result that
    reports an error, such as a tool's ``isError``) or a JSON-RPC ``error``."""

    result: dict[str, Any] | None = None
    failed: bool = False
    error: McpError | None = None
    #: For a failed task: the ``statusMessage`` to show.
    message: str | None = None


#: What a task does: given its :class:`RunningTask`, produce the :class:`Outcome`.
Work = Callable[["RunningTask"], Awaitable[Outcome]]


class RemoteRequestor(abc.ABC):
    """A session held by another process sharing the task store (scale-out), attached
    to a task whose work runs here: the task's messages to it travel through the store
    (:mod:`mcpactor.scaleout.task_relay`). It takes what a local session takes from a
    task (notifications, requests); ``closed`` is set once it is known to be gone."""

    #: The session's id.
    id: str
    closed: trio.Event
    #: The capabilities its client declared (what the task's questions may use).
    capabilities: dict[str, Any]

    @abc.abstractmethod
    async def notify(
        self, method: str, params: Any = None, *, related_request: RequestId | None = None
    ) -> None:
        """Send a notification to the session's client."""

    @abc.abstractmethod
    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        result_cls: Any = None,
        related_request: RequestId | None = None,
    ) -> Any:
        """Send a request to the session's client and wait for its answer."""


class TaskPeers(Protocol):
    """Tasks whose work runs in another process sharing the store (scale-out): a
    session here that asks about one is attached to it there, so that the task's
    status notifications, progress, logs and questions reach it as they reach a
    session of the running process."""

    async def attach(self, task_id: str, session: Session,
                     result_request: RequestId | None) -> None:
        """``session`` asked about the task (``result_request``: its ``tasks/result``
        waiting now)."""
        ...

    async def detach(self, task_id: str, session: Session, result_request: RequestId) -> None:
        """The ``tasks/result`` ``result_request`` of ``session`` is answered (or gone)."""
        ...

    async def update(self, task_id: str, responses: dict[str, Any]) -> None:
        """Answers to the task's waiting questions (the 2026-07-28 extension's
        ``tasks/update``), for the process running it."""
        ...


def new_task_id() -> str:
    """A fresh, unguessable task id (128 bits). Read through ``os.urandom`` at call
    time: a recording captures it and a replay hands the same id out again."""
    return os.urandom(16).hex()


class RunningTask:
    """A task whose worker runs in this process (see the module): its cancel scope, the
    sessions attached to it, and the ways its work talks to the requestor."""

    def __init__(
        self, runtime: TaskRuntime, record: TaskRecord, creator: Session,
        request_id: RequestId, progress_token: str | int | None, *, parked: bool = False,
    ) -> None:
        self.runtime = runtime
        #: The 2026-07-28 tasks extension's way: the task's questions wait as numbered
        #: ``inputRequests`` for ``tasks/update`` (nothing is sent to a session, and
        #: progress and logs are not sent at all); else 2025-11-25's, requests and
        #: notifications to the attached sessions.
        self.parked = parked
        #: Questions waiting for the requestor (``parked``): key → the request and
        #: where its answer goes.
        self._inputs: dict[str, _Input] = {}
        self._keys_used: set[str] = set()
        #: Set by the work once it passed ``ctx.begin_task()`` (a tool that gathers
        #: input before becoming a task).
        self.begun = False
        self.task_id = record.task_id
        self.method = record.method
        self.creator = creator
        #: The id of the request that created the task (on the creator's session).
        self.request_id = request_id
        self.progress_token = progress_token
        self.scope = trio.CancelScope()
        #: Attached sessions, oldest first, each with its pending ``tasks/result`` ids
        #: (sessions of other processes too, with ``--redis``).
        self._sessions: dict[Session | RemoteRequestor, list[RequestId]] = {creator: []}
        self._attached: trio.Event | None = None
        self.cancel_requested = False
        self._last_progress: float | None = None
        self._status = "working"
        self._status_message: str | None = None
        #: Requests to the requestor waiting for answers (the task is input_required
        #: while any does), and the status message from before the first.
        self._asking = 0
        self._before_asking: str | None = None
        self.done = trio.Event()

    # -- sessions ------------------------------------------------------------------------

    def attach(
        self, session: Session | RemoteRequestor, result_request: RequestId | None = None
    ) -> None:
        """``session`` asked about the task (``result_request``: its ``tasks/result``
        waiting now): it becomes the newest place the task talks to."""
        pending = self._sessions.pop(session, [])
        if result_request is not None:
            pending.append(result_request)
        self._sessions[session] = pending
        if self._attached is not None:
            self._attached.set()
            self._attached = None

    def detach_result(self, session: Session | RemoteRequestor,
                      result_request: RequestId) -> None:
        """A ``tasks/result`` of ``session`` is answered (or gone)."""
        pending = self._sessions.get(session)
        if pending is not None and result_request in pending:
            pending.remove(result_request)

    def live_sessions(self) -> list[Session | RemoteRequestor]:
        """The attached sessions still open, newest last (closed ones are forgotten)."""
        for gone in [s for s in self._sessions if _ended(s)]:
            del self._sessions[gone]
        return list(self._sessions)

    def _target(self) -> tuple[Session | RemoteRequestor, RequestId | None] | None:
        """Where a message of the task goes: a session with a ``tasks/result`` waiting
        (on that request's stream, the 2025-11-25 way), else the newest live one."""
        live = self.live_sessions()
        for session in reversed(live):
            pending = self._sessions[session]
            if pending:
                return session, pending[-1]
        return (live[-1], None) if live else None

    @property
    def session(self) -> Session:
        """The session of this process the task talks to now (its creator's once all
        have closed): what the work's context shows as its session."""
        target = self._target()
        if target is not None and not isinstance(target[0], RemoteRequestor):
            return target[0]
        local = [s for s in self.live_sessions() if not isinstance(s, RemoteRequestor)]
        return local[-1] if local else self.creator

    @property
    def peer_capabilities(self) -> dict[str, Any]:
        """The capabilities of the client the task talks to now (a session of another
        process included)."""
        target = self._target()
        if target is not None and isinstance(target[0], RemoteRequestor):
            return target[0].capabilities
        return self.session.connection.peer_capabilities or {}

    # -- status ----------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """The status the worker last set (``working`` or ``input_required``)."""
        return self._status

    async def set_status(self, status: str = "working", message: str | None = None) -> None:
        """Move between ``working`` and ``input_required`` (or change the status
        message); a task already finished (cancelled) is left alone."""
        if status not in ("working", "input_required"):
            raise ValueError(f"a running task is 'working' or 'input_required', not {status!r}")
        if status == self._status and message == self._status_message:
            return
        record, changed = await self.runtime.store.transition(
            self.task_id, status=status, status_message=message,
            result=self._questions() if status == "input_required" else None)
        if changed and record is not None:
            self._status, self._status_message = status, message
            self.runtime._traced(self.creator, self.task_id, "task_status",
                                 {"status": status, "message": message})
            await self.runtime._publish(record, self)

    # -- talking to the requestor ---------------------------------------------------------

    # -- questions parked for tasks/update (the 2026-07-28 extension) ---------------------

    def _new_key(self, wanted: str) -> str:
        """A key no question of this task used before (the extension's rule)."""
        key, n = wanted, 1
        while key in self._keys_used:
            n += 1
            key = f"{wanted}-{n}"
        self._keys_used.add(key)
        return key

    def pending_requests(self) -> dict[str, dict[str, Any]]:
        """The questions waiting for an answer (``inputRequests``), by key."""
        return {key: entry.request for key, entry in self._inputs.items()}

    def _questions(self) -> dict[str, Any] | None:
        """What the record holds of a parked task's waiting questions (so that a
        process sharing the store shows them too): ``{"inputRequests": ...}``."""
        if not self.parked or not self._inputs:
            return None
        return {"inputRequests": self.pending_requests()}

    async def _store_questions(self) -> None:
        """The waiting questions changed while the task stays ``input_required``: the
        record shows the ones left."""
        record, changed = await self.runtime.store.transition(
            self.task_id, status=self._status, status_message=self._status_message,
            result=self._questions())
        if changed and record is not None:
            await self.runtime._publish(record, self)

    def answer(self, responses: dict[str, Any]) -> list[str]:
        """Answers from ``tasks/update``: each one for a waiting question resolves it
        (others are ignored, as the extension asks); the keys it resolved."""
        taken = []
        for key, response in responses.items():
            entry = self._inputs.get(key)
            if entry is None or entry.answer is not None or not isinstance(response, dict):
                continue
            entry.answer = response
            del self._inputs[key]
            entry.answered.set()
            taken.append(key)
        return taken

    async def ask_parked(
        self, requests: dict[str, tuple[str, dict[str, Any] | None]]
    ) -> dict[str, dict[str, Any]]:
        """Ask the requestor several questions at once, the extension's way: each waits
        as an ``inputRequests`` entry (under its wanted key, made unique for the task)
        and the task is ``input_required`` until all are answered; returns the answers
        (wire form) by the wanted keys."""
        entries: dict[str, _Input] = {}
        for wanted, (method, params) in requests.items():
            key = self._new_key(wanted)
            entries[wanted] = self._inputs[key] = _Input(
                {"method": method, "params": dict(params or {})})
        methods = sorted({method for method, _ in requests.values()})
        if self._asking == 0:
            self._before_asking = self._status_message
        self._asking += 1
        try:
            message = f"waiting for the requestor: {', '.join(methods)}"
            if self._status == "input_required" and self._status_message == message:
                await self._store_questions()  # more questions, the same status
            else:
                await self.set_status("input_required", message)
            for entry in entries.values():
                if not entry.answered.is_set():
                    await entry.answered.wait()
                    if self._inputs:
                        await self._store_questions()  # some still wait
            return {wanted: entry.answer or {} for wanted, entry in entries.items()}
        finally:
            for key in [k for k, e in self._inputs.items() if e in entries.values()]:
                del self._inputs[key]
            self._asking -= 1
            if self._asking == 0:
                with _bounded_shield():
                    await self.set_status("working", self._before_asking)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Progress with the creating request's token (valid for the task's whole life);
        False when there is no token, no live session, or ``progress`` did not grow. A
        ``message`` also becomes the task's status message (what ``tasks/get`` shows),
        token or not."""
        if self._last_progress is not None and progress <= self._last_progress:
            return False
        self._last_progress = progress
        if message is not None:
            # The requestor polling tasks/get sees the latest progress message too.
            await self.set_status(self._status, message)
        token = self.progress_token
        target = self._target()
        if token is None or target is None or self.parked:
            return False
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        params["_meta"] = t.related_task_meta(self.task_id)
        return await self._send_notification(target, "notifications/progress", params)

    async def notify(self, method: str, params: Any = None) -> bool:
        """Send a notification of the task's work (logs...) with the related-task
        ``_meta``; False when no session is attached (nobody to tell), or in the tasks
        extension, which has no notifications of a task's work."""
        target = self._target()
        if target is None or self.parked:
            return False
        wire = dict(to_wire(params) or {}) if params is not None else {}
        wire["_meta"] = t.related_task_meta(self.task_id, wire.get("_meta"))
        return await self._send_notification(target, method, wire)

    async def _send_notification(
        self, target: tuple[Session | RemoteRequestor, RequestId | None], method: str,
        params: dict[str, Any],
    ) -> bool:
        session, related = target
        try:
            await session.notify(method, params, related_request=related)
        except McpError:
            if not _ended(session):
                raise
            return False  # it closed meanwhile: nobody left to tell
        return True

    async def ask(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        result_cls: Any = None,
    ) -> Any:
        """Send a request to the requestor on the task's behalf (elicitation,
        sampling): the task is ``input_required`` meanwhile, the request carries the
        related-task ``_meta``, and it goes to a session with a ``tasks/result`` waiting
        (else the newest attached one). With no session open, it waits for the
        requestor to come back (any ``tasks/get`` or ``tasks/result`` attaches); if the
        session ends before answering, it is asked again on the next one. A ``parked``
        task (the 2026-07-28 extension) parks it for ``tasks/update`` instead
        (:meth:`ask_parked`)."""
        if self.parked:
            plain = dict(to_wire(params) or {}) if params is not None else {}
            kind = method.split("/")[0]
            answer = (await self.ask_parked({kind: (method, plain)}))[kind]
            return from_wire(answer, result_cls) if result_cls is not None else answer
        wire = dict(to_wire(params) or {}) if params is not None else {}
        wire["_meta"] = t.related_task_meta(self.task_id, wire.get("_meta"))
        if self._asking == 0:
            self._before_asking = self._status_message
        self._asking += 1
        await self.set_status("input_required", f"waiting for the requestor: {method}")
        try:
            while True:
                target = self._target()
                if target is None:
                    self._attached = self._attached or trio.Event()
                    await self._attached.wait()
                    continue
                session, related = target
                try:
                    return await session.request(method, wire, timeout=timeout,
                                                 result_cls=result_cls,
                                                 related_request=related)
                except McpError as exc:
                    if not (isinstance(exc, ConnectionClosed) or _ended(session)):
                        raise
                    # The requestor left mid-question: ask whoever comes back for the task.
                    self._sessions.pop(session, None)
        finally:
            self._asking -= 1
            if self._asking == 0:
                with _bounded_shield():
                    await self.set_status("working", self._before_asking)


@attrs.define(eq=False)
class _Input:
    """A question parked for ``tasks/update``: the request, and its answer once here."""

    request: dict[str, Any]
    answer: dict[str, Any] | None = None
    answered: trio.Event = attrs.Factory(trio.Event)


@attrs.define
class _RunState:
    """What a runtime keeps per Trio run: the limiter of running workers."""

    limiter: trio.CapacityLimiter


class TaskRuntime:
    """Runs and answers for the tasks of one receiver (see the module)."""

    def __init__(self, options: TaskOptions | None = None) -> None:
        self.options = options or TaskOptions()
        store = self.options.store
        self.store: TaskStore = store if store is not None else InMemoryTaskStore()
        self._running: dict[str, RunningTask] = {}
        #: Called with each change of a task (and its worker state when it runs here):
        #: how a server tells the 2026-07-28 listeners (``notifications/tasks``).
        self.observers: list[Callable[[TaskRecord, RunningTask | None], None]] = []
        #: Tasks running in other processes that share the store (set by scale-out).
        self.peers: TaskPeers | None = None
        self._run_state: trio.lowlevel.RunVar[_RunState] = trio.lowlevel.RunVar(
            f"mcpactor_tasks_{id(self)}")

    def running(self, task_id: str) -> RunningTask | None:
        """The task's worker state, if its worker runs in this process."""
        return self._running.get(task_id)

    @property
    def running_count(self) -> int:
        """Unfinished tasks whose workers run (or wait for a slot) here."""
        return len(self._running)

    def _limiter(self) -> trio.CapacityLimiter:
        try:
            return self._run_state.get().limiter
        except LookupError:
            state = _RunState(trio.CapacityLimiter(self.options.max_running))
            self._run_state.set(state)
            return state.limiter

    # -- creating and running ---------------------------------------------------------------

    async def create(
        self,
        *,
        method: str,
        requested_ttl_ms: int | None,
        requester: Requester,
        session: Session,
        request_id: RequestId,
        progress_token: str | int | None,
        work: Work,
        parked: bool = False,
    ) -> TaskRecord:
        """Store a new ``working`` task and start its worker; returns the record (the
        task exists in the store when this returns). Too many unfinished tasks:
        :class:`ServerBusy`. ``parked``: the 2026-07-28 extension's task (see
        :attr:`RunningTask.parked`)."""
        options = self.options
        if len(self._running) >= options.max_tasks:
            raise ServerBusy(
                "Server busy: too many unfinished tasks; retry later",
                data={"reason": "busy", "retryable": True, "max_tasks": options.max_tasks})
        now = self.store.now()
        record = TaskRecord(
            task_id=new_task_id(), method=method, owner=requester.owner,
            session=requester.session, status="working", created_at=now, updated_at=now,
            ttl_ms=options.granted_ttl_ms(requested_ttl_ms),
            poll_interval_ms=int(options.poll_interval * 1000))
        await self.store.create(record)
        running = RunningTask(self, record, session, request_id, progress_token,
                              parked=parked)
        if record.ttl_ms is not None:
            running.scope.deadline = trio.current_time() + record.ttl_ms / 1000
        self._running[record.task_id] = running
        self._traced(session, record.task_id, "task_created",
                     {"method": method, "request": request_id, "ttl": record.ttl_ms})
        # The handler's context: a recording follows the worker as its child.
        trio.lowlevel.spawn_system_task(
            self._worker, running, work, name=f"mcpactor:task:{record.task_id[:8]}",
            context=contextvars.copy_context())
        return record

    async def _worker(self, running: RunningTask, work: Work) -> None:
        task_id = running.task_id
        outcome: Outcome | None = None
        try:
            with running.scope:
                limiter = self._limiter()
                try:
                    limiter.acquire_on_behalf_of_nowait(running)
                except trio.WouldBlock:
                    await running.set_status("working", "waiting for a free task slot")
                    await limiter.acquire_on_behalf_of(running)
                    await running.set_status("working", None)
                try:
                    outcome = await work(running)
                finally:
                    limiter.release_on_behalf_of(running)
        except trio.Cancelled:
            # The Trio run is ending (the server stops): record why, then go. A system
            # task must not raise anything else: it would crash the whole run.
            try:
                with _bounded_shield():
                    await self._finish(running, Outcome(
                        error=InternalError("the task's process stopped before it finished"),
                        message="the server stopped before the task finished"))
            except Exception:
                log.exception("task %s: recording its end failed", task_id)
            finally:
                self._running.pop(task_id, None)
                running.done.set()
            raise
        except Exception as exc:  # the work's own bug: the task fails, the process lives
            log.exception("task %s (%s) failed", task_id, running.method)
            outcome = Outcome(error=InternalError(f"Internal error: {exc}"),
                              message=f"the task failed: {exc}")
        try:
            if running.scope.cancelled_caught and outcome is None:
                if running.cancel_requested:
                    self._traced(running.creator, task_id, "task_finished",
                                 {"outcome": "cancelled"})
                else:
                    await self._finish(running, Outcome(
                        error=InternalError("the task's TTL ran out before it finished"),
                        message="the task's TTL ran out before it finished"), "expired")
                return
            assert outcome is not None
            await self._finish(running, outcome)
        except Exception:
            log.exception("task %s: recording its end failed", task_id)
        finally:
            self._running.pop(task_id, None)
            running.done.set()

    async def _finish(self, running: RunningTask, outcome: Outcome,
                      why: str | None = None) -> None:
        """Store how the work ended; a task cancelled meanwhile stays cancelled (its
        outcome is dropped: traced as ``discarded``)."""
        message: str | None
        if outcome.error is not None:
            status, message = "failed", outcome.message or outcome.error.message
            error: dict[str, Any] | None = outcome.error.to_error()
        else:
            status = "failed" if outcome.failed else "completed"
            message, error = outcome.message, None
        record, changed = await self.store.transition(
            running.task_id, status=status, status_message=message, result=outcome.result,
            error=error)
        self._traced(running.creator, running.task_id, "task_finished",
                     {"outcome": (why or status) if changed else "discarded"})
        if changed and record is not None:
            await self._publish(record, running)

    # -- what the requestor asks --------------------------------------------------------------

    async def get(self, task_id: str, requester: Requester,
                  session: Session | None = None) -> TaskRecord:
        """The task, for ``requester`` (``tasks/get``); -32602 when it is unknown,
        expired or bound to someone else. ``session`` is attached to a running task."""
        record = await self.store.get(task_id)
        if record is None or (record.owner is not None and record.owner != requester.owner):
            raise InvalidParams("Failed to retrieve task: Task not found",
                                data={"taskId": task_id})
        if session is not None:
            await self._attach(record, session, None)
        return record

    async def _attach(self, record: TaskRecord, session: Session,
                      result_request: RequestId | None) -> bool:
        """Attach ``session`` to the task, here or in the process running it; whether
        it was attached elsewhere."""
        running = self._running.get(record.task_id)
        if running is not None:
            running.attach(session, result_request)
        elif self.peers is not None and not record.terminal:
            await self.peers.attach(record.task_id, session, result_request)
            return True
        return False

    async def wait_terminal(self, task_id: str, requester: Requester, session: Session,
                            request_id: RequestId) -> TaskRecord:
        """Block until the task is terminal (``tasks/result``); meanwhile the task's
        requests to the requestor go on this request's stream."""
        record = await self.get(task_id, requester)
        running = self._running.get(task_id)
        elsewhere = await self._attach(record, session, request_id)
        try:
            while not record.terminal:
                latest = await self.store.wait(task_id, record.version)
                if latest is None:
                    raise InvalidParams("Failed to retrieve task: Task has expired",
                                        data={"taskId": task_id})
                record = latest
        finally:
            if running is not None:
                running.detach_result(session, request_id)
            elif elsewhere and self.peers is not None:
                with _bounded_shield():
                    await self.peers.detach(task_id, session, request_id)
        return record

    async def cancel(self, task_id: str, requester: Requester,
                     session: Session | None = None, *,
                     terminal_ok: bool = False, attach: bool = True) -> TaskRecord:
        """Cancel the task (``tasks/cancel``): it is ``cancelled`` before this returns,
        and its worker (if here) is cancelled at its next checkpoint. A terminal task:
        -32602, or (``terminal_ok``, the 2026-07-28 extension's idempotent cancel) its
        record as it is. ``session`` (the one asking: the cancel is traced on it when
        the task does not run here) is attached first, so it hears the status change
        too, unless ``attach`` is False (the extension tells sessions nothing)."""
        record = await self.get(task_id, requester, session if attach else None)
        running = self._running.get(task_id)
        by = running.creator if running is not None else session
        if record.terminal:
            if by is not None:
                self._traced(by, task_id, "task_cancel_requested",
                             {"applied": False, "status": record.status})
            if terminal_ok:
                return record
            raise InvalidParams(
                f"Cannot cancel task: already in terminal status '{record.status}'",
                data={"taskId": task_id, "status": record.status})
        new, changed = await self.store.transition(
            task_id, status="cancelled", status_message="The task was cancelled by request.")
        if by is not None:
            self._traced(by, task_id, "task_cancel_requested",
                         {"applied": changed, "status": new.status if new else None})
        if new is None:
            raise InvalidParams("Failed to retrieve task: Task not found",
                                data={"taskId": task_id})
        if not changed:
            # Finished between the look and the change: that status stands.
            if terminal_ok:
                return new
            raise InvalidParams(
                f"Cannot cancel task: already in terminal status '{new.status}'",
                data={"taskId": task_id, "status": new.status})
        if running is not None:
            self._stop(running)
            await self._publish(new, running)
        return new

    async def cancel_local(self, task_id: str) -> bool:
        """Cancel the worker of a task another process sharing the store recorded
        ``cancelled``, if it runs here, and tell its sessions (as :meth:`cancel` does);
        whether it ran here."""
        running = self._running.get(task_id)
        if running is None:
            return False
        self._stop(running)
        record = await self.store.get(task_id)
        if record is not None and record.status == "cancelled":
            await self._publish(record, running)
        return True

    @staticmethod
    def _stop(running: RunningTask) -> None:
        """Cancel the worker of a task recorded ``cancelled`` (at its next checkpoint)."""
        running.cancel_requested = True
        running.scope.cancel()

    async def update(self, task_id: str, requester: Requester,
                     responses: dict[str, Any]) -> TaskRecord:
        """Answers to a task's waiting questions (``tasks/update``, the 2026-07-28
        extension): those for questions it waits on resolve them, the rest are ignored;
        -32602 when the task is unknown (as :meth:`get`)."""
        record = await self.get(task_id, requester)
        running = self._running.get(task_id)
        if running is not None:
            taken = running.answer(responses)
            self._traced(running.creator, task_id, "task_input_answered",
                         {"keys": taken, "ignored": sorted(set(responses) - set(taken))})
        elif self.peers is not None and not record.terminal:
            await self.peers.update(task_id, responses)
        return record

    async def list(self, requester: Requester,
                   cursor: str | None) -> tuple[list[TaskRecord], str | None]:
        """One page of ``requester``'s tasks (``tasks/list``)."""
        return await self.store.list(owner=requester.owner, session=requester.session,
                                     cursor=cursor, limit=self.options.page_size)

    # -- status notifications and tracing ---------------------------------------------------

    async def _publish(self, record: TaskRecord, running: RunningTask) -> None:
        """``notifications/tasks/status`` to every session attached to the task (the
        notification is optional: a session that cannot take it is skipped); and the
        change to the :attr:`observers`."""
        for observer in self.observers:
            try:
                observer(record, running)
            except Exception:
                log.exception("task %s: an observer of its changes failed", record.task_id)
        if running.parked:
            return  # the extension's tasks tell no session (its listeners: the observers)
        params = to_wire(record.to_task())
        for session in running.live_sessions():
            pending = running._sessions.get(session)
            try:
                await session.notify("notifications/tasks/status", params,
                                     related_request=pending[-1] if pending else None)
            except McpError:  # closed meanwhile, or a peer that cannot take it
                continue

    def _traced(self, session: Session, task_id: str, kind: str, data: dict[str, Any]) -> None:
        session._emit(f"task:{task_id}", kind, {"task": task_id, **data})


def ttl_seconds(record: TaskRecord) -> float:
    """A record's TTL in seconds (inf: unlimited)."""
    return math.inf if record.ttl_ms is None else record.ttl_ms / 1000


def _ended(session: Session | RemoteRequestor) -> bool:
    """Whether ``session`` is over (or closing: its connection refuses to send)."""
    if session.closed.is_set():
        return True
    return not isinstance(session, RemoteRequestor) and session.connection.state is State.CLOSED


def _bounded_shield(seconds: float = 5.0) -> trio.CancelScope:
    """A shield for cleanup that must run even when cancelled, but not forever (a
    session whose writer is stuck must not hold a task's end up)."""
    return trio.CancelScope(shield=True, deadline=trio.current_time() + seconds)
