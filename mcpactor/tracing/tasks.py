"""Which Trio tasks a trace follows, and the names that identify them across runs.

A recording follows the tasks that run MCP sessions and the code they call: each
session's actor tree (its supervisor, reader, writer, notifier and one task per
request) and every task those spawn, however deep (a handler's own nursery included).
The transports' tasks (an HTTP connection, a WebSocket's reader, the trace writer's
own) are not followed: a replay puts a replay transport in their place.

Identity is a :class:`Node` held in a context variable. Trio copies the spawning task's
context into every new task, so a child first carries its parent's node; the first time
the scheduler hook sees the child (:func:`classify`), it gets a node of its own, named
after its parent and the order in which the parent spawned it (``<sid>/3/1``: the first
task spawned by the third task the session's supervisor spawned). That order is
deterministic in a replay that runs the same steps in the same order, so the same task
gets the same name live and replayed. A root (a session's supervisor) is named by the
code that starts it (:func:`spawn_root`): the session id.

Pure bookkeeping on top of :mod:`contextvars`; the scheduler hooks that call
:func:`classify` live in :mod:`mcpactor.tracing.schedule` and the replayer.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

__all__ = [
    "DONE", "TRACK", "Node", "classify", "current_node", "spawn_root", "untracked",
]

#: What a node's ``task`` becomes once the task has finished (the recording scheduler
#: marks it, so that the task and its node do not keep each other alive).
DONE: Any = object()


class Node:
    """One followed task: who it is, the task once known, and its spawn counter.

    A root is named by the code that starts it; any other task is the ``ordinal``-th
    child of its ``parent`` (its :attr:`name`, ``parent/ordinal``, is built when asked).
    ``rng``: the task's own :mod:`random` stream, made on its first draw
    (:mod:`mcpactor.tracing.entropy`); ``id``: the number its recording gave it.
    """

    __slots__ = ("_io", "_name", "id", "kids", "muted", "ordinal", "parent", "real", "rec",
                 "rng", "session", "task")

    def __init__(self, name: str | None, session: str, task: Any = None, rec: Any = None,
                 parent: Node | None = None, ordinal: int = 0) -> None:
        self._name = name
        self.parent = parent
        self.ordinal = ordinal
        self.session = session
        self.task = task
        #: The recording the task belongs to (its session's tracer): a run may hold
        #: several (a server's and a client's), each following its own tasks.
        self.rec = rec
        self.kids = 0
        self.id = 0
        self.rng: Any = None
        #: True for the node a task carries while it is inside a transport's receive or
        #: send (:meth:`io`), which a replay replaces: its clock and entropy reads there
        #: are the transport's, not the session's, and are not logged.
        self.muted = False
        #: (An :meth:`io` node) the task's own node.
        self.real: Node | None = None
        self._io: Node | None = None

    @property
    def name(self) -> str:
        """``session-id`` for a root, ``<parent's name>/<ordinal>`` for any other."""
        name = self._name
        if name is None:
            assert self.parent is not None
            name = self._name = f"{self.parent.name}/{self.ordinal}"
        return name

    def io(self) -> Node:
        """This task as it is while inside a transport: the same task (same name and
        number, so its steps there are recorded as its own), but its reads are not
        logged and the tasks it spawns (a transport's own) are not followed."""
        if self.real is not None:
            return self
        io = self._io
        if io is None:
            io = self._io = Node(self._name, self.session, self.task, self.rec, self.parent,
                                 self.ordinal)
            io.real = self
            io.muted = True
        io.id = self.id
        return io

    def lend(self, spare: Node) -> Node:
        """This task as :meth:`io` makes it, written into ``spare``, a node the caller
        keeps and reuses: for code that enters a transport from many short-lived tasks,
        one at a time (a session's writes: whoever writes holds the write token), where
        :meth:`io` would make a node per task. Returns this node if it is already an io
        node."""
        if self.real is not None:
            return self
        spare._name = self._name
        spare.parent = self.parent
        spare.ordinal = self.ordinal
        spare.task = self.task
        spare.rec = self.rec
        spare.id = self.id
        spare.real = self
        spare.muted = True
        spare.rng = None
        return spare

    def __repr__(self) -> str:
        return f"Node({self.name!r})"


#: The node of the task running now (or of its parent, until the hook has seen it).
TRACK: contextvars.ContextVar[Node | None] = contextvars.ContextVar("mcpactor_track", default=None)


def classify(task: Any) -> Node | None:
    """The node of ``task``, giving it one of its own the first time it is seen; None for
    a task the trace does not follow. Called by the scheduler hooks for every runnable
    task, in the order the tasks became runnable, which for new tasks is spawn order."""
    node = task.context.get(TRACK)
    if node is None:
        return None
    real = node.real
    if real is not None:
        if node.task is task:
            return real  # a followed task, inside a transport
        # Spawned by a transport from inside a followed task: the transport's own.
        task.context.run(TRACK.set, None)
        return None
    if node.task is task:
        return node
    if node.task is None:
        # A root made by spawn_root(): its first step.
        node.task = task
        return node
    node.kids += 1
    child = Node(None, node.session, task, node.rec, node, node.kids)
    task.context.run(TRACK.set, child)
    return child


def current_node() -> Node | None:
    """The node of the running task, if the trace follows it (and the hook has seen it)."""
    node = TRACK.get()
    if node is None:
        return None
    try:
        task = trio.lowlevel.current_task()
    except RuntimeError:
        return None
    return node if node.task is task else None


def spawn_root(
    nursery: trio.Nursery, name: str, session: str, fn: Callable[..., Awaitable[Any]], *args: Any,
    rec: Any = None,
) -> None:
    """Start ``fn(*args)`` as a followed root task named ``name`` (a session's supervisor)
    of the recording ``rec``.

    The node rides in the context the new task copies; the caller's own context is left
    as it was.
    """
    token = TRACK.set(Node(name, session, rec=rec))
    try:
        nursery.start_soon(fn, *args, name=f"mcpactor:{name}")
    finally:
        TRACK.reset(token)


@contextmanager
def untracked() -> Iterator[None]:
    """Tasks spawned inside this block are not followed even when the spawning task is:
    for transport machinery started from a session's task (an HTTP answer), which a
    replay replaces."""
    token = TRACK.set(None)
    try:
        yield
    finally:
        TRACK.reset(token)
