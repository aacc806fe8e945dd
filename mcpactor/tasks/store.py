"""Where tasks live: the :class:`TaskStore` interface and the in-memory default.

A store keeps :class:`TaskRecord` values (plain data, JSON-able by :meth:`TaskRecord.
to_json`, so a shared store such as Redis can hold them as they are) and answers four
questions atomically: create one, read one, move one to a new status (never out of a
terminal one), and list a requestor's. :meth:`TaskStore.wait` lets a ``tasks/result``
wait for a change made anywhere, which a shared store implements with its own
notifications (or by polling). The runtime (:mod:`mcpactor.tasks.runtime`) is the only
caller; handler code never sees a store.

Expiry is the store's job: a record whose TTL has run out is gone (``get`` answers None,
``list`` leaves it out), as a Redis key with an expiry would be. The in-memory store
purges lazily, on the calls that touch it, and reads the wall clock through
``time.time`` at call time, so a recording captures it and a replay serves it back.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import InvalidParams

__all__ = ["InMemoryTaskStore", "TaskRecord", "TaskStore", "iso8601"]


def iso8601(seconds: float) -> str:
    """``seconds`` since the epoch as an RFC 3339 UTC timestamp with milliseconds."""
    whole = int(seconds)
    millis = round((seconds - whole) * 1000)
    if millis == 1000:
        whole, millis = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


@attrs.frozen(kw_only=True)
class TaskRecord:
    """One task as a store keeps it.

    ``owner``: the authorization context the task is bound to (None without one);
    ``session``: the session that created it (lists are scoped to it when there is no
    owner); ``result``: the wire result of the wrapped request (a completed task, or a
    tool call that reported ``isError``), and while a task of the 2026-07-28 extension
    is ``input_required``, its waiting questions (``{"inputRequests": {...}}``, so any
    process sharing the store can show them); ``error``: the JSON-RPC error object it ended
    with (``code``, ``message``, ``data``); ``version`` grows with every change.
    """

    task_id: str
    method: str
    owner: str | None
    session: str | None
    status: str
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    version: int = 0

    @property
    def terminal(self) -> bool:
        """Whether the task reached a status it never leaves."""
        return self.status in t.TERMINAL_STATUSES

    @property
    def expires_at(self) -> float | None:
        """When the store may forget it (wall clock seconds); None: never."""
        if self.ttl_ms is None:
            return None
        return self.created_at + self.ttl_ms / 1000

    def to_task(self) -> t.Task:
        """The task as the 2025-11-25 wire shows it."""
        return t.Task(
            task_id=self.task_id,
            status=self.status,  # type: ignore[arg-type]
            status_message=self.status_message,
            created_at=iso8601(self.created_at),
            last_updated_at=iso8601(self.updated_at),
            ttl=self.ttl_ms,
            poll_interval=self.poll_interval_ms,
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (what a shared store writes)."""
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskRecord:
        """The record :meth:`to_json` wrote."""
        names = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class TaskStore(Protocol):
    """What the task runtime needs from a store (see the module). Every method may be
    called from any task; each must be atomic on its own."""

    def now(self) -> float:
        """The wall clock (seconds since the epoch) this store judges expiry by."""
        ...

    async def create(self, record: TaskRecord) -> None:
        """Add a new task. When this returns, :meth:`get` finds it (the spec's task
        creation is strongly consistent)."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task, or None when unknown or expired."""
        ...

    async def transition(
        self,
        task_id: str,
        *,
        status: str,
        status_message: str | None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> tuple[TaskRecord | None, bool]:
        """Move a task to ``status`` (with its message, and for a terminal status its
        outcome) unless it is terminal already; returns the record as it is afterwards
        (None when unknown or expired) and whether this call changed it."""
        ...

    async def list(
        self, *, owner: str | None, session: str | None, cursor: str | None, limit: int
    ) -> tuple[list[TaskRecord], str | None]:
        """One page of the tasks bound to ``owner`` (when not None), else of those with
        no owner created by ``session``, oldest first, and the next page's cursor. A
        cursor this store did not hand out is :class:`InvalidParams`."""
        ...

    async def wait(self, task_id: str, version: int) -> TaskRecord | None:
        """Return the task once its ``version`` is past ``version`` (at once if it
        already is); None when it is unknown or gone."""
        ...

    async def delete(self, task_id: str) -> None:
        """Forget a task (nothing happens if it is unknown)."""
        ...


@attrs.define
class _Entry:
    record: TaskRecord
    seq: int
    changed: trio.Event | None = None


class InMemoryTaskStore:
    """The default :class:`TaskStore`: records in a dict, in creation order, for one
    process. ``clock`` (wall clock seconds) decides expiry; default ``time.time``."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._seq = 0

    def now(self) -> float:
        """The wall clock, as this store reads it."""
        # Looked up at each call: a recording swaps time.time to capture it.
        return self._clock() if self._clock is not None else time.time()

    def __len__(self) -> int:
        return len(self._entries)

    def _purge(self) -> None:
        now = self.now()
        for task_id in [k for k, e in self._entries.items()
                        if (exp := e.record.expires_at) is not None and exp <= now]:
            self._drop(task_id)

    def _drop(self, task_id: str) -> None:
        entry = self._entries.pop(task_id, None)
        if entry is not None and entry.changed is not None:
            entry.changed.set()

    def _live(self, task_id: str) -> _Entry | None:
        entry = self._entries.get(task_id)
        if entry is None:
            return None
        exp = entry.record.expires_at
        if exp is not None and exp <= self.now():
            self._drop(task_id)
            return None
        return entry

    async def create(self, record: TaskRecord) -> None:
        """Add a task (see :meth:`TaskStore.create`); expired ones are purged first."""
        self._purge()
        if record.task_id in self._entries:
            raise ValueError(f"task id {record.task_id!r} is already in use")
        self._seq += 1
        self._entries[record.task_id] = _Entry(record, self._seq)

    async def get(self, task_id: str) -> TaskRecord | None:
        """See :meth:`TaskStore.get`."""
        entry = self._live(task_id)
        return entry.record if entry is not None else None

    async def transition(
        self,
        task_id: str,
        *,
        status: str,
        status_message: str | None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> tuple[TaskRecord | None, bool]:
        """See :meth:`TaskStore.transition`."""
        entry = self._live(task_id)
        if entry is None:
            return None, False
        old = entry.record
        if old.terminal:
            return old, False
        entry.record = attrs.evolve(
            old, status=status, status_message=status_message, result=result, error=error,
            updated_at=self.now(), version=old.version + 1)
        if entry.changed is not None:
            entry.changed.set()
            entry.changed = None
        return entry.record, True

    async def list(
        self, *, owner: str | None, session: str | None, cursor: str | None, limit: int
    ) -> tuple[list[TaskRecord], str | None]:
        """See :meth:`TaskStore.list`."""
        after = _decode_cursor(cursor)
        self._purge()
        mine = [e for e in self._entries.values() if e.seq > after and (
            e.record.owner == owner if owner is not None
            else e.record.owner is None and e.record.session == session)]
        page = mine[:limit]
        more = len(mine) > limit
        return [e.record for e in page], (_encode_cursor(page[-1].seq) if more else None)

    async def wait(self, task_id: str, version: int) -> TaskRecord | None:
        """See :meth:`TaskStore.wait`."""
        while True:
            entry = self._live(task_id)
            if entry is None:
                return None
            if entry.record.version > version:
                return entry.record
            if entry.changed is None:
                entry.changed = trio.Event()
            await entry.changed.wait()

    async def delete(self, task_id: str) -> None:
        """See :meth:`TaskStore.delete`."""
        self._drop(task_id)


def _encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"t:{seq}".encode()).decode("ascii")


def _decode_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        kind, _, num = base64.urlsafe_b64decode(cursor.encode("ascii")).decode().partition(":")
        seq = int(num)
        if kind != "t" or seq < 0:
            raise ValueError(cursor)
        return seq
    except (ValueError, UnicodeError):
        raise InvalidParams("Invalid params: unknown tasks/list cursor",
                            data={"path": "params.cursor"}) from None
