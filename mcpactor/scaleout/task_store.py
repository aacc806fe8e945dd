"""Tasks shared by every worker: a :class:`~mcpactor.tasks.TaskStore` over
:class:`~mcpactor.scaleout.state.SharedState` (``--redis``).

With it, any worker answers ``tasks/get``, ``tasks/list``, ``tasks/result`` and
``tasks/cancel`` for a task another worker runs. Keys (under the cluster's prefix):

- ``t:<task>``: the record (JSON) and the id of the worker running it, living as long
  as the task's TTL; every change is a compare-and-set that raises its version;
- ``tl:o:<owner>`` / ``tl:s:<session>``: the index ``tasks/list`` pages through (a log,
  oldest first; the cursor is an entry id);
- ``tc:<task>``: a channel told of each change (``tasks/result`` waits on it, and
  re-reads every ``poll`` seconds in case a message was lost);
- ``tx:<worker>``: the worker's task log, read in order by the worker
  (:meth:`SharedTaskStore.serve_control`): a cancel of a task it runs (a
  ``tasks/cancel`` that landed elsewhere), and the messages between a task running
  here and the sessions of other workers attached to it (:mod:`.task_relay`).

A worker that stops without finishing its tasks (``kill -9``, a crash) leaves them
``working`` in the store. Its liveness key (``w:<worker>``, the cluster's heartbeat) runs
out ``worker_ttl`` seconds later; the next read of such a task, on any worker, moves it
to ``failed`` saying why. So a task is never reported running forever.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol import jsonrpc
from mcpactor.protocol.errors import INTERNAL_ERROR, InvalidParams
from mcpactor.scaleout.state import SharedState, SharedStateError
from mcpactor.tasks.store import TaskRecord

if TYPE_CHECKING:
    from mcpactor.scaleout.cluster import Cluster
    from mcpactor.tasks.runtime import TaskRuntime

__all__ = ["WORKER_GONE_MESSAGE", "SharedTaskStore", "install_shared_tasks"]

#: The status message (and error) of a task whose worker stopped before it finished.
WORKER_GONE_MESSAGE = "the worker running the task stopped before it finished"
#: How long a task index lives after its newest task was added (at least the task's TTL).
INDEX_TTL = 7 * 86400.0
#: Entries kept per task index.
INDEX_MAX = 100_000
#: Entries kept in a worker's task log, and seconds it lives after its last entry.
CONTROL_MAX = 100_000
CONTROL_TTL = 3600.0
_CAS_TRIES = 100

log = logging.getLogger("mcpactor.scaleout")


class SharedTaskStore:
    """A :class:`~mcpactor.tasks.TaskStore` every worker sharing ``state`` sees (see the
    module). ``worker``: this worker's id (tasks created here are run here), whose
    liveness key is ``<prefix>w:<worker>``; ``poll``: seconds between re-reads of a
    task someone waits for."""

    def __init__(
        self, state: SharedState, *, worker: str, prefix: str = "mcpactor:", poll: float = 1.0,
    ) -> None:
        self.state = state
        self.worker = worker
        self.prefix = prefix
        self.poll = poll

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    def now(self) -> float:
        """The wall clock (read at call time: a recording captures it)."""
        return time.time()

    def _ttl(self, record: TaskRecord) -> float | None:
        """Seconds the record has left (None: no limit); <= 0: gone."""
        exp = record.expires_at
        return None if exp is None else exp - self.now()

    @staticmethod
    def _encode(record: TaskRecord, worker: str) -> bytes:
        return jsonrpc.dumps({"record": record.to_json(), "worker": worker})

    async def _read(self, task_id: str) -> tuple[bytes, TaskRecord, str] | None:
        raw = await self.state.get(self._key("t", task_id))
        if raw is None:
            return None
        data = jsonrpc.loads(raw)
        record = TaskRecord.from_json(data["record"])
        ttl = self._ttl(record)
        if ttl is not None and ttl <= 0:
            return None
        return raw, record, str(data["worker"])

    async def create(self, record: TaskRecord) -> None:
        """See :meth:`mcpactor.tasks.TaskStore.create`."""
        ttl = self._ttl(record)
        stored = await self.state.set(self._key("t", record.task_id),
                                      self._encode(record, self.worker), ttl=ttl,
                                      only_if_absent=True)
        if not stored:
            raise ValueError(f"task id {record.task_id!r} is already in use")
        await self.state.append(self._index(record.owner, record.session),
                                {"id": record.task_id.encode()}, max_len=INDEX_MAX,
                                ttl=max(ttl or 0.0, INDEX_TTL))

    def _index(self, owner: str | None, session: str | None) -> str:
        return self._key("tl", f"o:{owner}" if owner is not None else f"s:{session or ''}")

    async def get(self, task_id: str) -> TaskRecord | None:
        """See :meth:`mcpactor.tasks.TaskStore.get`; a task whose worker stopped is
        moved to ``failed`` first."""
        found = await self._read(task_id)
        if found is None:
            return None
        _, record, worker = found
        if record.terminal or worker == self.worker or await self._is_alive(worker):
            return record
        message = WORKER_GONE_MESSAGE
        new, _ = await self.transition(
            task_id, status="failed", status_message=message,
            error={"code": INTERNAL_ERROR, "message": f"Internal error: {message}",
                   "data": {"worker": worker}})
        return new

    async def _is_alive(self, worker: str) -> bool:
        return await self.state.get(self._key("w", worker)) is not None

    async def transition(
        self,
        task_id: str,
        *,
        status: str,
        status_message: str | None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> tuple[TaskRecord | None, bool]:
        """See :meth:`mcpactor.tasks.TaskStore.transition`: a compare-and-set on the
        record, told to those waiting (and, for a cancel, to the worker running it)."""
        for _ in range(_CAS_TRIES):
            found = await self._read(task_id)
            if found is None:
                return None, False
            raw, old, worker = found
            if old.terminal:
                return old, False
            new = attrs.evolve(old, status=status, status_message=status_message,
                               result=result, error=error, updated_at=self.now(),
                               version=old.version + 1)
            ttl = self._ttl(new)
            if ttl is not None and ttl <= 0:
                return None, False
            if await self.state.compare_and_set(self._key("t", task_id), raw,
                                                self._encode(new, worker), ttl=ttl):
                await self.state.publish(self._key("tc", task_id), str(new.version).encode())
                if status == "cancelled" and worker != self.worker:
                    await self.send_control(worker, {"k": "cancel", "task": task_id})
                return new, True
        raise SharedStateError(f"{self.state.name}: task {task_id} changed too often to "
                               "update it; retry")

    async def list(
        self, *, owner: str | None, session: str | None, cursor: str | None, limit: int
    ) -> tuple[list[TaskRecord], str | None]:
        """See :meth:`mcpactor.tasks.TaskStore.list`."""
        after = _decode_cursor(cursor)
        page: list[tuple[str, TaskRecord]] = []
        more = False
        for entry_id, fields in await self.state.read_range(self._index(owner, session), after):
            record = await self.get(fields["id"].decode())
            if record is None:
                continue  # expired (or deleted)
            if len(page) == limit:
                more = True
                break
            page.append((entry_id, record))
        return [r for _, r in page], (_encode_cursor(page[-1][0]) if more else None)

    async def wait(self, task_id: str, version: int) -> TaskRecord | None:
        """See :meth:`mcpactor.tasks.TaskStore.wait`: subscribed to the task's channel
        first, then read, so no change is missed; read again every ``poll`` seconds
        (a lost message, or a worker that stopped)."""
        async with self.state.subscribe(self._key("tc", task_id)) as changes:
            while True:
                record = await self.get(task_id)
                if record is None or record.version > version:
                    return record
                with trio.move_on_after(self.poll):
                    await anext(changes, None)

    async def delete(self, task_id: str) -> None:
        """See :meth:`mcpactor.tasks.TaskStore.delete`."""
        await self.state.delete(self._key("t", task_id))

    async def worker_of(self, task_id: str) -> str | None:
        """The worker running the task (None: unknown, expired)."""
        found = await self._read(task_id)
        return None if found is None else found[2]

    async def send_control(self, worker: str, message: dict[str, Any]) -> None:
        """Append ``message`` (JSON) to ``worker``'s task log."""
        await self.state.append(self._key("tx", worker), {"j": jsonrpc.dumps(message)},
                                max_len=CONTROL_MAX, ttl=CONTROL_TTL)

    async def serve_control(
        self, handle: Callable[[dict[str, Any]], Awaitable[None]]
    ) -> None:
        """Until cancelled: ``handle`` each message of this worker's task log, in the
        order they were appended (``{"k": "cancel", "task": ...}``: another worker
        recorded a task of this worker cancelled). A store that fails is read again
        after a growing pause, from where it stopped."""
        key = self._key("tx", self.worker)
        after = "0"
        failures = 0
        while True:
            try:
                entries = await self.state.read_new(key, after, timeout=5.0)
            except SharedStateError:
                failures += 1
                await trio.sleep(min(0.1 * 2 ** min(failures, 5), 2.0))
                continue
            failures = 0
            for entry_id, fields in entries:
                after = entry_id
                try:
                    message = jsonrpc.loads(fields.get("j", b"{}"))
                    await handle(message)
                except Exception:  # one bad message must not stop the worker's log
                    log.exception("task log message %s of worker %s failed", entry_id,
                                  self.worker)


def install_shared_tasks(cluster: Cluster, runtime: TaskRuntime) -> SharedTaskStore | None:
    """Make ``runtime`` keep its tasks in the cluster's store (unless the server was
    given a store of its own); the store, or None. The caller runs
    :meth:`SharedTaskStore.serve_control` and puts the old store back afterwards."""
    if runtime.options.store is not None:
        return None
    store = SharedTaskStore(cluster.state, worker=cluster.id, prefix=cluster.options.prefix,
                            poll=cluster.options.heartbeat)
    runtime.store = store
    return store


def _encode_cursor(entry_id: str) -> str:
    return base64.urlsafe_b64encode(f"r:{entry_id}".encode()).decode("ascii")


def _decode_cursor(cursor: str | None) -> str:
    if cursor is None:
        return "0"
    try:
        kind, _, entry_id = base64.urlsafe_b64decode(cursor.encode("ascii")).decode().partition(":")
        if kind != "r" or not entry_id or not all(p.isdigit() for p in entry_id.split("-")):
            raise ValueError(cursor)
        return entry_id
    except (ValueError, UnicodeError):
        raise InvalidParams("Invalid params: unknown tasks/list cursor",
                            data={"path": "params.cursor"}) from None
