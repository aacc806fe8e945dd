"""Which Trio tasks a trace follows, and the names that identify them across runs.

A recording follows the tasks that run MCP sessions and the code they call: each
session's actor tree (its supervisor, reader, writer, notifier and one task per
request) and every task those spawn, however deep (a handler's own nursery included).
The transports' tasks (an HTTP connection, a WebSocket's reader, the trace writer's
own) are not followed: a replay puts a replay transport in their place.

A recording's (or a replay's) :class:`TaskTable` holds its followed tasks, keyed by
Trio's own number for each task (``Task._counter``): the number the trace gives it, its
name, how many followed tasks it spawned, whether it is inside a transport now. Only
numbers and strings: a followed task costs the garbage collector nothing more than an
unfollowed one, and the scheduler hooks find a batch's numbers with a dict lookup per
task.

A task is named when it is spawned (:class:`Naming`, a Trio instrument the recording's
scheduler and the replay's install): the spawner is the running task, and the new task
is ``<spawner's name>/<n>`` for the spawner's n-th followed child (``<sid>/3/1``: the
first task spawned by the third task the session's supervisor spawned). That order is
deterministic in a replay that runs the same steps in the same order, so the same task
gets the same name live and replayed. A root (a session's supervisor) is named by the
code that starts it (:func:`spawn_root`): the session id; a client's code names the task
it runs in (:func:`follow_current`). Which table a spawn belongs to rides in a context
variable (:data:`TRACK`, a :class:`Root` per session, which every task of the session
inherits); a task spawned inside :func:`untracked` or by a task inside a transport is
not followed.

Bookkeeping only; the scheduler hooks that install :class:`Naming` live in
:mod:`mcpactor.tracing.schedule` and the replayer, and ``_hooks.c`` does the same
naming in C for a recording.
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

__all__ = [
    "NOBODY", "THREAD", "TRACK", "Naming", "Root", "TaskRef", "TaskTable", "current_node",
    "follow_current", "spawn_root", "untracked",
]

try:
    from trio._core import _run as _trio_run
except ImportError:  # pragma: no cover - depends on Trio's layout
    _trio_run = None  # type: ignore[assignment]

_GLOBAL: Any = getattr(_trio_run, "GLOBAL_RUN_CONTEXT", None)

#: The table grows by one entry per task and is swept of finished tasks once it holds
#: this many more entries than live ones (see :meth:`TaskTable.sweep`).
SWEEP_SLACK = 1024


class TaskTable:
    """The tasks one recording (or one replay) follows, by Trio's number for each task.

    ``owner``: the recording (a replay's capture), for what a task reads; ``by_name``:
    a replay's numbering — the recorded number of a task's name, or None for a task the
    recording does not have — where a recording numbers its tasks in turn (and lists
    each new one in :attr:`new` for its next ``sched`` record).

    A task's name is made when asked (:meth:`name`; a recording's sink spells it from
    the ``new`` lists): a child is kept as its parent's number and its ordinal.

    The compiled spawn hook (``mcpactor.tracing._hooks``) reads and writes these slots
    directly: a slot added here is one it must know of.
    """

    __slots__ = ("_sweep_at", "by_name", "ids", "kids", "last", "muted", "names", "new",
                 "ordinals", "owner", "parents", "rngs")

    def __init__(self, owner: Any, by_name: Callable[[str, Any], int | None] | None = None
                 ) -> None:
        self.owner = owner
        self.by_name = by_name
        #: Trio's number of each followed task -> the trace's.
        self.ids: dict[int, int] = {}
        #: The trace's number -> the names made so far (roots', and those asked for), each
        #: child's parent and ordinal, and how many followed tasks each task spawned.
        self.names: dict[int, str] = {}
        self.parents: dict[int, int] = {}
        self.ordinals: dict[int, int] = {}
        self.kids: dict[int, int] = {}
        #: The tasks inside a transport's receive or send now, which a replay replaces:
        #: their clock and entropy reads there are the transport's, not the session's, and
        #: the tasks they spawn (a transport's own) are not followed.
        self.muted: set[int] = set()
        #: Each task's own :mod:`random` stream, made on its first draw (entropy).
        self.rngs: dict[int, random.Random] = {}
        #: (A recording) the last number given, and the names of those given since the
        #: last sched record, flat, three items each: the number, then the parent's number
        #: and the ordinal, or None and a root's name.
        self.last = 0
        self.new: list[Any] = []
        self._sweep_at = SWEEP_SLACK

    # -- naming ---------------------------------------------------------------------------

    def name(self, tid: int) -> str:
        """The name of task ``tid``: a root's own, ``<parent>/<ordinal>`` for a child."""
        name = self.names.get(tid)
        if name is None:
            parent = self.parents.get(tid)
            if parent is None:
                return f"#{tid}"
            name = self.names[tid] = f"{self.name(parent)}/{self.ordinals[tid]}"
        return name

    def claim(self, task: Any, name: str) -> int:
        """Follow ``task`` as the root named ``name``; its number (0: a replay's root that
        the recording does not have)."""
        if self.by_name is None:
            self.last += 1
            tid = self.last
            self.new.extend((tid, None, name))
        else:
            tid = self.by_name(name, task) or 0
        if tid:
            self.names[tid] = name
            self.ids[task._counter] = tid
        return tid

    def spawned(self, task: Any, spawner: Any) -> None:
        """Name ``task``, just spawned by ``spawner`` (None: outside a task), if the table
        follows it."""
        if spawner is None:
            return
        stid = self.ids.get(spawner._counter)
        if stid is None or stid in self.muted:
            return  # an unfollowed spawner, or a transport's task
        kids = self.kids[stid] = self.kids.get(stid, 0) + 1
        if self.by_name is None:
            self.last += 1
            tid = self.last
            self.new.extend((tid, stid, kids))
        else:
            tid = self.by_name(f"{self.name(stid)}/{kids}", task) or 0
            if not tid:
                return
        self.parents[tid] = stid
        self.ordinals[tid] = kids
        self.ids[task._counter] = tid
        if len(self.ids) > self._sweep_at:
            self.sweep()

    def sweep(self) -> None:
        """Forget the tasks that have finished (Trio no longer runs them), but for the
        ancestors of those that run (their names spell their descendants'). In place:
        the session and the hooks hold these dicts."""
        runner = getattr(_GLOBAL, "runner", None)
        live = {task._counter for task in runner.tasks} if runner is not None else set()
        ids = self.ids
        for counter in [c for c in ids if c not in live]:
            del ids[counter]
        kept: set[int] = set()
        parents = self.parents
        for tid in ids.values():
            while tid and tid not in kept:
                kept.add(tid)
                tid = parents.get(tid, 0)
        for table in (self.names, self.parents, self.ordinals, self.kids, self.rngs):
            for tid in [t for t in table if t not in kept]:
                del table[tid]
        self._sweep_at = len(ids) + SWEEP_SLACK

    # -- the running task -------------------------------------------------------------------

    def of(self, task: Any) -> int:
        """The number of ``task`` (0: not followed)."""
        return self.ids.get(task._counter, 0)

    def current(self) -> int:
        """The number of the running task (0: not followed, or no task runs)."""
        try:
            task = _GLOBAL.task
        except AttributeError:
            return 0
        return self.ids.get(task._counter, 0)


class Root:
    """What the tasks of one followed tree carry in their context: the table that follows
    them, and (``pending``) the name of a root that :func:`spawn_root` is starting."""

    __slots__ = ("name", "pending", "table")

    def __init__(self, table: TaskTable | None, name: str, pending: bool = False) -> None:
        self.table = table
        self.name = name
        self.pending = pending

    def __repr__(self) -> str:
        return f"Root({self.name!r})"


#: What the tasks spawned inside :func:`untracked` carry: no table.
NOBODY = Root(None, "-")

#: The tree the running task belongs to (None: no followed tree).
TRACK: contextvars.ContextVar[Root | None] = contextvars.ContextVar("mcpactor_track",
                                                                    default=None)


class TaskRef:
    """One followed task as the code that reads clocks and entropy sees it (made when
    asked: :func:`current_node`)."""

    __slots__ = ("id", "table")

    def __init__(self, table: TaskTable, tid: int) -> None:
        self.table = table
        self.id = tid

    @property
    def name(self) -> str:
        """Its name (see the module)."""
        return self.table.name(self.id)

    @property
    def rec(self) -> Any:
        """The recording (or replay) that follows it."""
        return self.table.owner

    @property
    def muted(self) -> bool:
        """Whether it is inside a transport now (see :attr:`TaskTable.muted`)."""
        return self.id in self.table.muted

    @property
    def rng(self) -> random.Random | None:
        """Its own :mod:`random` stream, once made."""
        return self.table.rngs.get(self.id)

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self.table.rngs[self.id] = value

    def __repr__(self) -> str:
        return f"TaskRef({self.name!r})"


#: (In a worker thread a followed task started) that task: set by the entropy capture's
#: ``trio.to_thread.run_sync`` in the thread's copy of the task's context.
THREAD: contextvars.ContextVar[TaskRef | None] = contextvars.ContextVar("mcpactor_thread",
                                                                        default=None)


class Naming(trio.abc.Instrument):
    """Names every spawned task a trace follows, in spawn order: the scheduler hooks of a
    recording and of a replay each install one (a recording's ``task_spawned`` is the
    compiled one where it was built).

    Trio copies the spawning task's context into the new task, so when Trio reports the
    spawn the new task carries its tree's :class:`Root`: a pending root becomes the new
    task's; otherwise the running task (the spawner) names it, if the table follows the
    spawner and it is not inside a transport.
    """

    def task_spawned(self, task: Any) -> None:
        """Trio's hook: ``task`` was just spawned (by the running task)."""
        root = task.context.get(TRACK)
        if root is None:
            return
        table = root.table
        if table is None:
            return  # untracked
        if root.pending:
            self.root(root, task)
            return
        table.spawned(task, getattr(_GLOBAL, "task", None))

    def root(self, root: Root, task: Any) -> None:
        """A root made by :func:`spawn_root` becomes ``task``'s."""
        root.pending = False
        assert root.table is not None
        root.table.claim(task, root.name)


def current_node() -> TaskRef | None:
    """The running task (or the task whose worker thread this is), if a trace follows
    it."""
    ref = THREAD.get()
    if ref is not None:
        return ref
    root = TRACK.get()
    if root is None or root.table is None:
        return None
    tid = root.table.current()
    return TaskRef(root.table, tid) if tid else None


def spawn_root(
    nursery: trio.Nursery, name: str, fn: Callable[..., Awaitable[Any]], *args: Any,
    tracer: Any = None,
) -> None:
    """Start ``fn(*args)`` as a task named ``name`` (a session's supervisor): a followed
    root of ``tracer``'s table (``tracer.tasks``) if it has one, with everything it
    starts.

    The root rides in the context the new task copies, where the spawn instrument
    (:class:`Naming`) finds it; the caller's own context is left as it was.
    """
    table = getattr(tracer, "tasks", None)
    if not isinstance(table, TaskTable):
        nursery.start_soon(fn, *args, name=f"mcpactor:{name}")
        return
    root = Root(table, name, pending=True)
    token = TRACK.set(root)
    try:
        nursery.start_soon(fn, *args, name=f"mcpactor:{name}")
    finally:
        root.pending = False
        TRACK.reset(token)


def follow_current(name: str, tracer: Any) -> contextvars.Token[Root | None] | None:
    """Follow the running task from now on, as a root named ``name`` of ``tracer``'s table
    (a client's code, which runs in its caller's task); returns the token that puts the
    context back (``TRACK.reset``), None if ``tracer`` follows no tasks."""
    table = getattr(tracer, "tasks", None)
    if not isinstance(table, TaskTable):
        return None
    token = TRACK.set(Root(table, name))
    table.claim(trio.lowlevel.current_task(), name)
    return token


@contextmanager
def untracked() -> Iterator[None]:
    """Tasks spawned inside this block are not followed even when the spawning task is:
    for transport machinery started from a session's task (an HTTP answer), which a
    replay replaces."""
    token = TRACK.set(NOBODY)
    try:
        yield
    finally:
        TRACK.reset(token)
