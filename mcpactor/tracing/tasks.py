"""Which Trio tasks a trace follows, and the names that identify them across runs.

A recording follows the tasks that run MCP sessions and the code they call: each
session's actor tree (its supervisor, reader, writer, notifier and one task per
request) and every task those spawn, however deep (a handler's own nursery included).
The transports' tasks (an HTTP connection, a WebSocket's reader, the trace writer's
own) are not followed: a replay puts a replay transport in their place.

Identity is a :class:`Node` held in a context variable (:data:`TRACK`). A task is named
when it is spawned (:class:`Naming`, a Trio instrument the recording's scheduler and the
replay's install): Trio copies the spawning task's context
into the new task, so at that moment the new task carries its spawner's node; it gets a
node of its own, named after the spawner and the order in which the spawner started its
followed tasks (``<sid>/3/1``: the first task spawned by the third task the session's
supervisor spawned). That order is deterministic in a replay that runs the same steps
in the same order, so the same task gets the same name live and replayed. A root (a
session's supervisor) is named by the code that starts it (:func:`spawn_root`): the
session id; a client's code names the task it runs in (:func:`follow_current`).

Every followed task's context holds its own node from its first step on, and an
unfollowed task's holds :data:`NOBODY` (or nothing: the default): the scheduler hooks
read a batch's task numbers straight from the contexts, without a Python call per task.

Bookkeeping on top of :mod:`contextvars`; the scheduler hooks that install
:class:`Naming` live in :mod:`mcpactor.tracing.schedule` and the replayer.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

__all__ = [
    "NAMER", "NOBODY", "TRACK", "Naming", "Node", "Numbering", "current_node", "follow_current",
    "spawn_root", "untracked",
]


class Node:
    """One followed task: who it is, its number, its spawn counter.

    A root is named by the code that starts it; any other task is the ``ordinal``-th
    followed child of its ``parent`` (its :attr:`name`, ``parent/ordinal``, is built
    when asked). ``rec``: the recording (or replay) that follows it; ``id``: the number
    that recording gave it (0: none); ``rng``: the task's own :mod:`random` stream,
    made on its first draw (:mod:`mcpactor.tracing.entropy`); ``muted``: the task is
    inside a transport's receive or send, which a replay replaces — its clock and
    entropy reads there are the transport's, not the session's, and are not logged,
    and the tasks it spawns (a transport's own) are not followed; ``pending``: a root
    made for a task not spawned yet (:func:`spawn_root`).

    The compiled spawn hook (``mcpactor.tracing._hooks``) fills the slots of the nodes
    it makes directly: a slot added here is one it must fill too.
    """

    __slots__ = ("_name", "id", "kids", "muted", "ordinal", "parent", "pending", "rec", "rng")

    def __init__(self, name: str | None, rec: Any = None, parent: Node | None = None,
                 ordinal: int = 0) -> None:
        self._name = name
        #: The recording the task belongs to (its session's tracer): a run may hold
        #: several (a server's and a client's), each following its own tasks.
        self.rec = rec
        self.parent = parent
        self.ordinal = ordinal
        self.kids = 0
        self.id = 0
        self.rng: Any = None
        self.muted = False
        self.pending = False

    @property
    def name(self) -> str:
        """``session-id`` for a root, ``<parent's name>/<ordinal>`` for any other."""
        name = self._name
        if name is None:
            assert self.parent is not None
            name = self._name = f"{self.parent.name}/{self.ordinal}"
        return name

    def __repr__(self) -> str:
        return f"Node({self.name!r})"


#: What an unfollowed task carries: no number (the hooks map every task to a node's
#: ``id`` in C, so the value is never None).
NOBODY = Node("-")

#: The node of the task running now (NOBODY for a task the trace does not follow).
TRACK: contextvars.ContextVar[Node] = contextvars.ContextVar("mcpactor_track", default=NOBODY)

#: Who numbers the followed tasks of the current Trio run (the recording's scheduler;
#: a replay numbers them by name when it first sees them): called with a root named
#: outside a spawn (:func:`follow_current`).
NAMER: trio.lowlevel.RunVar[Callable[[Node], None]] = trio.lowlevel.RunVar("mcpactor_namer")


class Numbering:
    """A recording's task numbers: the last one given, and the names of those given since
    the last ``sched`` record, flat, three items each: the number, then the parent's
    number and the ordinal, or None and a root's name. (Flat numbers and strings: until
    the records are handed on, the garbage collector has no container to follow.)"""

    __slots__ = ("last", "new")

    def __init__(self) -> None:
        self.last = 0
        self.new: list[Any] = []

    def number(self, node: Node) -> None:
        """Give ``node`` (a root, or a child named outside :class:`Naming`) a number."""
        self.last += 1
        node.id = self.last
        parent = node.parent
        if parent is None:
            self.new.extend((self.last, None, node.name))
        else:
            self.new.extend((self.last, parent.id, node.ordinal))


class Naming(trio.abc.Instrument):
    """Names every spawned task the trace follows, in spawn order: the scheduler hooks
    of a recording and of a replay each install one.

    Trio copies the spawning task's context into the new task, so when Trio reports the
    spawn the new task carries its spawner's node: a pending root (:func:`spawn_root`)
    becomes the new task's; a muted spawner's child (a transport's task) is not
    followed; any other followed spawner's child gets a node of its own, named
    ``<spawner>/<n>`` for the spawner's n-th followed child. ``numbered``: a recording
    numbers each new node at once, from its node's recording's :class:`Numbering`
    (``rec.numbering``); a replay numbers them by name when it first sees them.
    """

    def __init__(self, *, numbered: bool) -> None:
        self.numbered = numbered

    def task_spawned(self, task: Any) -> None:
        """Trio's hook: ``task`` was just spawned (by the running task)."""
        context = task.context
        node = context.get(TRACK, NOBODY)
        if not node.id:
            if node.pending:
                self.root(node)
            return  # an unfollowed spawner: its children inherit NOBODY (or its node)
        if node.muted:
            context.run(TRACK.set, NOBODY)
            return
        kids = node.kids = node.kids + 1
        rec = node.rec
        child = Node(None, rec, node, kids)
        context.run(TRACK.set, child)
        if self.numbered:
            numbering = rec.numbering
            tid = child.id = numbering.last = numbering.last + 1
            numbering.new.extend((tid, node.id, kids))

    def root(self, node: Node) -> None:
        """A root made by :func:`spawn_root` becomes the new task's."""
        node.pending = False
        if self.numbered and node.rec is not None:
            node.rec.numbering.number(node)


def current_node() -> Node | None:
    """The node of the running task (or of the task whose worker thread this is), if the
    trace follows it."""
    node = TRACK.get()
    return node if node.id else None


def spawn_root(
    nursery: trio.Nursery, name: str, fn: Callable[..., Awaitable[Any]], *args: Any,
    rec: Any = None,
) -> None:
    """Start ``fn(*args)`` as a followed root task named ``name`` (a session's supervisor)
    of the recording ``rec``.

    The node rides in the context the new task copies, where the spawn instrument
    (:class:`Naming`) finds it; the caller's own context is left as it was.
    """
    node = Node(name, rec)
    node.pending = True
    token = TRACK.set(node)
    try:
        nursery.start_soon(fn, *args, name=f"mcpactor:{name}")
    finally:
        node.pending = False
        TRACK.reset(token)


def follow_current(name: str, rec: Any) -> contextvars.Token[Node]:
    """Follow the running task from now on, as a root named ``name`` (a client's code,
    which runs in its caller's task); returns the token that puts its node back
    (``TRACK.reset``)."""
    node = Node(name, rec)
    token = TRACK.set(node)
    try:
        namer = NAMER.get()
    except (LookupError, RuntimeError):
        return token
    namer(node)
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
