"""A task's messages to requestor sessions held by other workers (``--redis``).

A task's work runs in the worker whose session created it. A requestor may ask about
it from a session another worker holds (any load balancer: a client that reconnected
lands anywhere): its ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` are answered
there from the shared store. For the task's own messages to reach that session as
they reach a session of the running worker (status notifications, progress, logs,
and its questions: elicitation and sampling, which move it to ``input_required``),
the asking worker *attaches* the session to the task in the running worker, which
then holds a :class:`RemoteSession` for it: a stand-in that the runtime treats as
one more attached session (:class:`~mcpactor.tasks.runtime.RemoteRequestor`).

Everything goes through the workers' task logs (``tx:<worker>``, read in order by
:meth:`~mcpactor.scaleout.task_store.SharedTaskStore.serve_control`):

=========  ==================  ==================================================
kind       from -> to          what
=========  ==================  ==================================================
``attach``  asking -> running  a session asked about the task (``r``: its waiting
                               ``tasks/result``)
``detach``  asking -> running  that ``tasks/result`` is answered
``cancel``  any -> running     the task was recorded cancelled
``update``  any -> running     answers to the task's waiting questions (the
                               2026-07-28 extension's ``tasks/update``)
``note``    running -> asking  a notification for the session
``ask``     running -> asking  a request for the session's client (token ``t``)
``unask``   running -> asking  the task gave up waiting (cancelled, timed out)
``answer``  asking -> running  the client's result or error for token ``t``
``gone``    asking -> running  the session is no longer held there
=========  ==================  ==================================================

Attach comes before cancel in the asking worker (the cancelling session hears the
status change too), and one log is read in order, so the running worker attaches the
session before it cancels. A running worker whose question waits on another worker
checks that worker's liveness every ``worker_ttl``: a worker that stopped ends the
question with :class:`~mcpactor.protocol.errors.ConnectionClosed`, and the task asks
the next session attached to it (or waits for one), as it does when a local session
closes mid-question.
"""

from __future__ import annotations

import logging
import secrets
import weakref
from typing import TYPE_CHECKING, Any

import trio

from mcpactor.protocol.convert import from_wire, to_wire
from mcpactor.protocol.errors import (
    ConnectionClosed,
    InvalidResult,
    McpError,
    RequestCancelled,
    RequestError,
    RequestTimeout,
)
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.methods import request_spec
from mcpactor.scaleout.state import SharedStateError
from mcpactor.tasks.runtime import RemoteRequestor

if TYPE_CHECKING:
    from mcpactor.scaleout.cluster import Cluster
    from mcpactor.scaleout.task_store import SharedTaskStore
    from mcpactor.session.session import Session
    from mcpactor.session.tracker import Timeout
    from mcpactor.tasks.runtime import TaskRuntime

__all__ = ["RemoteSession", "TaskRelay"]

log = logging.getLogger("mcpactor.scaleout")

#: Errors a question may end with, rebuilt as the same class on the running worker
#: (the task's code may tell them apart); any other is a RequestError with its code.
_ERRORS: dict[str, type[McpError]] = {
    cls.__name__: cls
    for cls in (ConnectionClosed, RequestTimeout, RequestCancelled, InvalidResult, RequestError)
}


def _seconds(timeout: Timeout | float | None) -> float | None:
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    return timeout.maximum if timeout.seconds is None else timeout.seconds


class RemoteSession(RemoteRequestor):
    """The running worker's stand-in for a session ``sid`` held by ``worker``."""

    def __init__(self, relay: TaskRelay, worker: str, sid: str,
                 capabilities: dict[str, Any]) -> None:
        self.relay = relay
        self.worker = worker
        self.id = sid
        self.closed = trio.Event()
        self.capabilities = capabilities

    def __repr__(self) -> str:
        return f"RemoteSession({self.id!r} on worker {self.worker!r})"

    async def notify(
        self, method: str, params: Any = None, *, related_request: RequestId | None = None
    ) -> None:
        """See :meth:`RemoteRequestor.notify` (handed to the holding worker's log)."""
        if self.closed.is_set():
            raise ConnectionClosed(f"session {self.id} is gone")
        try:
            await self.relay.send(self.worker, {
                "k": "note", "w": self.relay.worker, "s": self.id, "m": method,
                "p": to_wire(params), "r": related_request})
        except ConnectionClosed as exc:
            # The store failed: the notification is lost (best effort, as one to a
            # session that closed meanwhile), and the task goes on.
            log.warning("a notification of a task to session %s was lost: %s", self.id, exc)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout | float | None = None,
        result_cls: Any = None,
        related_request: RequestId | None = None,
    ) -> Any:
        """See :meth:`RemoteRequestor.request`: asked by the holding worker's session,
        answered through this worker's log."""
        if self.closed.is_set():
            raise ConnectionClosed(f"session {self.id} is gone")
        relay = self.relay
        token = secrets.token_hex(8)
        tx, rx = trio.open_memory_channel[dict[str, Any]](1)
        relay.waiting[token] = tx
        answered = False
        try:
            await relay.send(self.worker, {
                "k": "ask", "t": token, "w": relay.worker, "s": self.id, "m": method,
                "p": to_wire(params), "r": related_request, "to": _seconds(timeout)})
            while True:
                with trio.move_on_after(relay.cluster.options.worker_ttl):
                    answer = await rx.receive()
                    answered = True
                    break
                if not await relay.alive(self.worker):
                    self.closed.set()
                    raise ConnectionClosed(
                        f"the worker holding session {self.id} stopped before its client "
                        "answered")
        finally:
            relay.waiting.pop(token, None)
            if not answered:
                # Cancelled (the task was) or given up: the client's question goes too.
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await relay.send(self.worker, {"k": "unask", "t": token})
                    except McpError:
                        pass
        if "e" in answer:
            err = answer["e"]
            cls = _ERRORS.get(answer.get("c", ""), RequestError)
            if cls is ConnectionClosed:
                self.closed.set()
            raise cls(str(err.get("message", "")), code=int(err.get("code", -32603)),
                      data=err.get("data"))
        if result_cls is None:
            spec = request_spec(method)
            result_cls = spec.result_cls if spec is not None else None
        value = answer.get("ok")
        return value if result_cls is None else from_wire(value, result_cls)


class TaskRelay:
    """One worker's side of the task messages between workers (see the module): the
    runtime's :class:`~mcpactor.tasks.runtime.TaskPeers`, and the handler of this
    worker's task log."""

    def __init__(self, cluster: Cluster, store: SharedTaskStore, runtime: TaskRuntime) -> None:
        self.cluster = cluster
        self.store = store
        self.runtime = runtime
        self.worker = store.worker
        #: Questions of tasks running here, waiting for their answers (by token).
        self.waiting: dict[str, trio.MemorySendChannel[dict[str, Any]]] = {}
        #: Questions asked here for tasks of other workers (by token): their scopes.
        self._asking: dict[str, trio.CancelScope] = {}
        #: The stand-ins of other workers' sessions, while a running task holds them.
        self._remote: weakref.WeakValueDictionary[tuple[str, str], RemoteSession] = (
            weakref.WeakValueDictionary())
        self._nursery: trio.Nursery | None = None

    async def run(self) -> None:
        """Read this worker's task log until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await self.store.serve_control(self.handle)
            finally:
                self._nursery = None

    async def alive(self, worker: str) -> bool:
        """Whether ``worker`` is alive (True when the store cannot say: not known dead)."""
        try:
            return await self.cluster._alive(worker.encode())
        except SharedStateError:
            return True

    async def send(self, worker: str, message: dict[str, Any]) -> None:
        """Append ``message`` to ``worker``'s task log; a store failure is
        :class:`ConnectionClosed` (to a task, a session it cannot reach now)."""
        try:
            await self.store.send_control(worker, message)
        except SharedStateError as exc:
            raise ConnectionClosed(f"cannot reach worker {worker}: {exc}") from None

    # -- the asking worker: TaskPeers ---------------------------------------------------

    async def attach(self, task_id: str, session: Session,
                     result_request: RequestId | None) -> None:
        """See :class:`~mcpactor.tasks.runtime.TaskPeers`: told to the running worker.
        Best effort: the store failing leaves the session unattached (a later question
        about the task attaches it)."""
        await self._tell(task_id, {"k": "attach", "task": task_id, "w": self.worker,
                                   "s": session.id, "r": result_request,
                                   "c": session.connection.peer_capabilities or {}})

    async def detach(self, task_id: str, session: Session, result_request: RequestId) -> None:
        """See :class:`~mcpactor.tasks.runtime.TaskPeers`."""
        await self._tell(task_id, {"k": "detach", "task": task_id, "w": self.worker,
                                   "s": session.id, "r": result_request})

    async def update(self, task_id: str, responses: dict[str, Any]) -> None:
        """See :class:`~mcpactor.tasks.runtime.TaskPeers`: told to the running worker."""
        await self._tell(task_id, {"k": "update", "task": task_id, "i": responses})

    async def _tell(self, task_id: str, message: dict[str, Any]) -> None:
        try:
            worker = await self.store.worker_of(task_id)
            if worker is not None and worker != self.worker:
                await self.store.send_control(worker, message)
        except SharedStateError as exc:
            log.warning("task %s: could not tell its worker of %s: %s", task_id,
                        message["k"], exc)

    # -- this worker's task log ---------------------------------------------------------

    async def handle(self, message: dict[str, Any]) -> None:
        """One message of this worker's task log (see the module's table)."""
        kind = message.get("k")
        if kind == "cancel":
            await self.runtime.cancel_local(str(message["task"]))
        elif kind in ("attach", "detach"):
            running = self.runtime.running(str(message["task"]))
            if running is None:
                return  # finished meanwhile: nothing left to say to the session
            key = (str(message["w"]), str(message["s"]))
            remote = self._remote.get(key)
            if kind == "detach":
                if remote is not None and message.get("r") is not None:
                    running.detach_result(remote, message["r"])
                return
            if remote is None or remote.closed.is_set():
                remote = self._remote[key] = RemoteSession(self, *key, message.get("c") or {})
            running.attach(remote, message.get("r"))
        elif kind == "update":
            responses = message.get("i")
            running = self.runtime.running(str(message["task"]))
            if running is not None and isinstance(responses, dict):
                running.answer(responses)
        elif kind == "answer":
            waiter = self.waiting.pop(str(message.get("t")), None)
            if waiter is not None:
                waiter.send_nowait(message)
        elif kind == "gone":
            remote = self._remote.get((str(message["w"]), str(message["s"])))
            if remote is not None:
                remote.closed.set()
        elif kind == "note":
            session = self._session(str(message["s"]))
            if session is None:
                await self._gone(message)
                return
            # In the log's order (progress stays in order), but bounded: a client that
            # does not read must not hold up this worker's other task messages (a
            # notification is best effort, as on one worker).
            with trio.move_on_after(self.cluster.options.worker_ttl):
                try:
                    await session.notify(str(message["m"]), message.get("p"),
                                         related_request=message.get("r"))
                except McpError:
                    await self._gone(message)
        elif kind == "ask":
            assert self._nursery is not None
            scope = trio.CancelScope()
            self._asking[str(message["t"])] = scope
            self._nursery.start_soon(self._ask, message, scope)
        elif kind == "unask":
            asking = self._asking.pop(str(message.get("t")), None)
            if asking is not None:
                asking.cancel()

    def _session(self, sid: str) -> Session | None:
        app = self.cluster.app
        hs = app.sessions.get(sid) if app is not None else None
        session = hs.session if hs is not None else None
        return None if session is None or session.closed.is_set() else session

    async def _gone(self, message: dict[str, Any]) -> None:
        try:
            await self.store.send_control(str(message["w"]), {"k": "gone", "w": self.worker,
                                                              "s": message["s"]})
        except SharedStateError:
            pass

    async def _ask(self, message: dict[str, Any], scope: trio.CancelScope) -> None:
        """Ask the client of a session held here, for a task running elsewhere; send
        the answer back."""
        token = str(message["t"])
        origin = str(message["w"])
        answer: dict[str, Any] = {"k": "answer", "t": token}
        try:
            with scope:
                session = self._session(str(message["s"]))
                if session is None:
                    raise ConnectionClosed(f"session {message['s']} is no longer held by "
                                           f"worker {self.worker}")
                result = await session.request(
                    str(message["m"]), message.get("p"), timeout=message.get("to"),
                    related_request=message.get("r"))
                answer["ok"] = to_wire(result)
        except McpError as exc:
            answer["e"] = exc.to_error()
            answer["c"] = type(exc).__name__ if type(exc).__name__ in _ERRORS else "RequestError"
        finally:
            self._asking.pop(token, None)
        if scope.cancelled_caught:
            return  # the task gave up: nobody waits for the answer
        try:
            await self.store.send_control(origin, answer)
        except SharedStateError as exc:
            log.warning("the answer to a question of a task on worker %s was lost: %s",
                        origin, exc)
