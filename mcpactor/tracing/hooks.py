"""The recording's per-pass hook and clock: the reference implementation, and the loader
of the compiled one.

While a recording runs, :class:`PassHook` is the iteration of Trio's run queue (Trio
copies the queue once per pass of its loop to make the batch; see
:mod:`mcpactor.tracing.schedule`) and the clock's reading. It runs for every pass and
every reading, so the usual case — one recording in the run — does its per-task work in
C either way: here through a chain of ``map`` (each task's Trio number -> the recording's
number, :class:`~mcpactor.tracing.tasks.TaskTable`), in ``_hooks.c`` directly. The
spawn hook's reference is :class:`mcpactor.tracing.tasks.Naming`.

``_hooks.c`` implements the same objects (``PassHook``, and ``SpawnHook`` for
``Naming.task_spawned`` in a recording) for the recorded process's sake: in Python these
hooks are most of what recording costs it (``benchmarks/README.md``, "Trace recording").
Both produce the same trace, byte for byte (``tests/tracing/test_hooks.py``). Without a
C compiler at install the Python ones run; ``MCPACTOR_PURE_HOOKS=1`` picks them anyway.
"""

from __future__ import annotations

import importlib
import os
from collections import deque
from collections.abc import Callable, Iterator
from operator import attrgetter
from types import ModuleType
from typing import Any

__all__ = ["PassHook", "native"]


def native() -> ModuleType | None:
    """The compiled hooks (``mcpactor.tracing._hooks``), unless they were not built or
    ``MCPACTOR_PURE_HOOKS`` asks for the Python ones."""
    if os.environ.get("MCPACTOR_PURE_HOOKS", "").strip() not in ("", "0"):
        return None
    try:
        return importlib.import_module("mcpactor.tracing._hooks")
    except ImportError:
        return None


_deque_iter = deque.__iter__
_counter_of = attrgetter("_counter")


class PassHook:
    """One pass's batch (called with no arguments, as the run queue's ``__iter__``), and
    the clock's reading (:meth:`current_time`).

    ``runq``: the run queue; ``many(tasks)``: the scheduler's hook for a run without a
    single recording (:meth:`bind`), which returns the batch in run order; ``coin()``:
    below 0.5 the batch is reversed; ``keep``: Trio's replaced coin (``planned``);
    ``trio_run``: Trio's run module; ``inner`` and ``offset``: the wrapped clock's
    reading is ``offset + inner()``, read once per pass (None: a run whose clock is left
    as it is, read through ``virtual_now``); ``trio_state``: Trio's thread-local dict,
    with ``"task"`` in it while a task runs; ``chunk_items``: the buffer size at which
    the recording hands its records on; ``task_type``, ``root_type``, ``table_type``:
    Trio's task class, :class:`~mcpactor.tracing.tasks.Root` and
    :class:`~mcpactor.tracing.tasks.TaskTable` (whose slots the compiled hook reads
    directly).
    """

    def __init__(self, *, runq: deque[Any], many: Callable[[list[Any]], list[Any]],
                 coin: Callable[[], float], keep: Any, trio_run: Any,
                 inner: Callable[[], float] | None, offset: float,
                 virtual_now: Callable[[], float], trio_state: dict[str, Any],
                 chunk_items: int, task_type: type, root_type: type, table_type: type
                 ) -> None:
        self._runq = runq
        self._many = many
        self._coin = coin
        self._keep = keep
        self._trio_run = trio_run
        self._inner = inner
        self._offset = offset
        self._virtual_now = virtual_now
        self._trio_state = trio_state
        self._chunk_items = chunk_items
        #: The recording served alone (None: every pass goes to ``many``).
        self.rec: Any = None
        self._events: list[Any] = []
        self._table: Any = None
        self._handoff: Callable[[], None] = _nothing
        #: The current batch in run order, and its followed tasks' numbers (the run of
        #: its sched record).
        self.order: list[Any] = []
        self.current: tuple[int, ...] = ()
        #: Whether the next reading outside a task is a new pass's.
        self.fresh = True
        self._now = offset + inner() if inner is not None else 0.0

    def bind(self, rec: Any) -> None:
        """The recording the hook serves alone (None: every pass goes to ``many``)."""
        self.rec = rec
        if rec is None:
            self._events, self._table, self._handoff = [], None, _nothing
        else:
            self._events, self._table, self._handoff = rec._events, rec.tasks, rec.handoff

    @property
    def now(self) -> float:
        """The pass's clock reading."""
        return self._now if self._inner is not None else self._virtual_now()

    def __call__(self) -> Iterator[Any]:
        """The batch (in the order the tasks became runnable): choose the order (a coin,
        as Trio's own, reversing the batch half the time), log the followed tasks' part
        of it as one ``sched`` record — with the names of the tasks numbered since the
        last one; returns the batch so that Trio, which pops from the end of its copy,
        runs it in that order."""
        tasks = [*_deque_iter(self._runq)]
        if self.rec is None:
            return reversed(self._many(tasks))
        # A tuple: of numbers only, the garbage collector stops following it at once.
        run = tuple(filter(None, map(self._table.ids.get, map(_counter_of, tasks))))
        if self._coin() < 0.5:
            tasks.reverse()
            run = run[::-1]
        self.order = tasks
        self.current = run
        events = self._events
        if run:
            new = self._table.new
            names = tuple(new) if new else None
            new.clear()
            events.extend((0, None, None, "sched", self.now, run, names))
        self.fresh = True
        if len(events) >= self._chunk_items:
            self._handoff()
        if self._trio_run._ALLOW_DETERMINISTIC_SCHEDULING:
            self._keep.planned = tasks[::-1]
        return reversed(tasks)

    def current_time(self) -> float:
        """The pass's time: the loop reads the clock once per pass (after its I/O wait) to
        expire deadlines, and every reading until the next pass — the loop's own while
        it cancels, and the tasks' — returns that one."""
        inner = self._inner
        if inner is None:
            return self._virtual_now()
        # A dict lookup for "is a task running", where catching the AttributeError
        # would cost ten times more.
        if self.fresh and "task" not in self._trio_state:
            self._now = self._offset + inner()
            self.fresh = False
        return self._now


def _nothing() -> None:
    pass
