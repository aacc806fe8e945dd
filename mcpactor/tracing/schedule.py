"""Recording what decided a Trio run: the order of the followed tasks' steps, and time.

Given the same inputs, a Trio program does the same thing as long as its tasks take
their steps in the same order, see the same clock readings and draw the same entropy.
This module records the first two for the tasks a trace follows
(:mod:`mcpactor.tracing.tasks`); :mod:`mcpactor.tracing.entropy` records the third.

Trio runs its tasks in batches: each pass of its loop waits for I/O, reads the clock
once to expire deadlines, then runs every task that was runnable at that point. Two
hooks into that loop (both reach into Trio's internals, checked by
``tests/tracing/test_schedule.py`` against the installed Trio):

- the run queue is replaced by a deque whose iteration — Trio copies the queue once per
  pass to make the batch — hands each pass's batch to :meth:`RecordingScheduler.batch`.
  It names new tasks (:func:`~mcpactor.tracing.tasks.classify`, in the order they
  became runnable: spawn order), decides the order (a coin, as Trio's own, reversing
  the batch half the time) and logs one ``sched`` record: the loop's clock reading and
  the followed tasks in the order they will run. Trio's own coin is replaced by one
  that keeps that order.
- the clock is wrapped: readings made by followed tasks are logged (``read`` records,
  source ``clock``), and every reading the loop makes between its I/O wait and the
  batch returns the one that expired deadlines (Trio also reads the clock while it
  cancels, through ``CancelScope.cancel_called``; a later reading there would expire a
  deadline the recorded reading did not, which no replay could repeat).

The replayer (``replay/schedule.py``) installs the mirror image: the same queue and
clock hooks, which run the recorded steps in the recorded order at the recorded times.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from collections import deque
from collections.abc import Iterator
from typing import Any, Protocol

import trio

from mcpactor.tracing.tasks import DONE, TRACK, classify

#: Records a recording buffers before it hands them on (the recorder's own limit).
CHUNK_EVENTS = 512

__all__ = ["RecordingScheduler", "current_scheduler", "internals_ok"]

try:
    from trio._core import _run as _trio_run
except ImportError:  # pragma: no cover - depends on Trio's layout
    _trio_run = None  # type: ignore[assignment]

_GLOBAL = getattr(_trio_run, "GLOBAL_RUN_CONTEXT", None)


def internals_ok() -> bool:
    """Whether this Trio has the internals the hooks rely on (checked, not assumed)."""
    if _trio_run is None or _GLOBAL is None:
        return False
    runner = getattr(_GLOBAL, "runner", None)
    return (
        runner is not None
        and type(getattr(runner, "runq", None)) in (deque, RecordingRunq)
        and hasattr(runner, "clock")
        and isinstance(getattr(_trio_run, "_r", None), random.Random)
        # The count of a task's yields, which the session reads around transport I/O.
        and isinstance(getattr(getattr(_GLOBAL, "task", None), "_schedule_points", None), int)
    )


class KeepOrder(random.Random):
    """Trio's scheduling coin, made to keep the order a hook chose.

    Trio reverses a batch when ``random()`` is below 0.5 (never, here: a C callable
    that always answers 0.75, so the loop pays no Python call for it); under Hypothesis
    it sorts the batch and calls ``shuffle``, which puts back the order the hook chose
    (:attr:`planned`).
    """

    def __init__(self) -> None:
        super().__init__(0)
        self.planned: list[Any] = []
        self.random = itertools.repeat(0.75).__next__  # type: ignore[method-assign]

    def shuffle(self, x: Any, *args: Any, **kwargs: Any) -> None:
        """The hook's order, whatever Trio did to the batch before (the batch is the one
        the hook saw: anything else is left as it is)."""
        planned, self.planned = self.planned, []
        if len(planned) == len(x) and {id(t) for t in planned} == {id(t) for t in x}:
            x[:] = planned


_deque_iter = deque.__iter__


class RecordingRunq(deque[Any]):
    """Trio's run queue; Trio copies it once per pass of its loop to make the batch,
    and that copy (:meth:`__iter__`) is the scheduler's hook.

    The usual case, one recording in the run, is handled here in one frame: it runs for
    every pass of the loop and is most of what recording costs the process. Anything
    else goes to :meth:`RecordingScheduler._batch_many`.
    """

    def __init__(self, tasks: Any, scheduler: RecordingScheduler) -> None:
        super().__init__(tasks)
        self.scheduler = scheduler
        #: The run's only recording (None when there are none or several).
        self.rec: Any = None
        self.coin = scheduler._coin.random
        self.clock: RecordingClock | None = None

    def __iter__(self) -> Iterator[Any]:
        """One pass's batch (in the order the tasks became runnable): name new followed
        tasks, choose the order (a coin, as Trio's own, reversing the batch half the
        time), log the followed tasks' part of it as one ``sched`` record; returns the
        batch so that Trio, which pops from the end of its copy, runs it in that order."""
        tasks = list(_deque_iter(self))
        rec = self.rec
        s = self.scheduler
        if rec is None:
            return reversed(s._batch_many(tasks))
        ids: list[int] = []
        new: dict[int, Any] | None = None
        for task in tasks:
            node = task.context.get(TRACK)
            if node is None:
                continue
            if node.task is not task:
                node = classify(task)
                if node is None:
                    continue  # a transport's own task
            if node.rec is not rec:
                continue
            tid = node.id
            if not tid:
                tid = node.id = rec.next_id()
                parent = node.parent
                # A child as (parent, ordinal): the sink writes out its name.
                if new is None:
                    new = {}
                new[tid] = node.name if parent is None else (parent.id, node.ordinal)
            ids.append(tid)
        if self.coin() < 0.5:
            tasks.reverse()
            ids.reverse()
        s.order = tasks
        s.current = ids
        clock = self.clock
        events = rec._events
        if ids:
            events.append((0, None, None, "sched",
                           clock.now if clock is not None else trio.current_time(), ids, new))
        if len(events) >= CHUNK_EVENTS:
            rec.handoff()
        if clock is not None:
            clock.fresh = True
        if _trio_run._ALLOW_DETERMINISTIC_SCHEDULING:
            s._keep.planned = tasks[::-1]
        return reversed(tasks)


class RecordingClock(trio.abc.Clock):
    """Wraps the run's clock so that time stands still while a pass's tasks run.

    The loop reads the clock once per pass (after its I/O wait) to expire deadlines;
    every reading until the next pass — the loop's own while it cancels, and the tasks'
    — returns that one. A deadline a task computes is then that pass's time plus its
    timeout, exactly as a replay, which has only the pass's recorded time, computes it;
    and no reading needs recording. (Within a pass the clock is at most one pass's
    duration behind; the next pass reads it afresh.)
    """

    def __init__(self, inner: trio.abc.Clock) -> None:
        self.inner = inner
        self._read = inner.current_time
        #: The reading for this pass; fresh: the next loop reading is a new pass's.
        self.now = inner.current_time()
        self.fresh = True
        # Trio's thread-local, as seen from the thread the run is in (the clock is read
        # there only): outside a task it has no ``task``.
        self._trio_state = _GLOBAL.__dict__

    def start_clock(self) -> None:
        """Already started: the recording wraps a running clock."""

    def current_time(self) -> float:
        """The pass's time (see the class)."""
        # A dict lookup for "is a task running", where catching the AttributeError
        # would cost ten times more.
        if self.fresh and "task" not in self._trio_state:
            self.now = self._read()
            self.fresh = False
        return self.now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        """As the wrapped clock says (its own reading, not a pass's)."""
        return self.inner.deadline_to_sleep_time(deadline)


class Subscriber(Protocol):
    """A recording the scheduler reports to (:class:`~mcpactor.tracing.Recorder`).

    With one recording in the run (the usual case) the scheduler appends its records to
    ``_events`` itself, without a call per pass."""

    #: The records not yet handed on, and how many were handed on before them.
    _events: list[tuple[Any, ...]]
    _base: int

    def log(self, event: tuple[Any, ...], /) -> None:
        """Append one record."""
        ...

    def next_id(self) -> int:
        """A new task number of this recording."""
        ...

    def after_batch(self) -> None:
        """Once per pass of the loop."""
        ...

    def handoff(self) -> None:
        """Hand the buffered records on."""
        ...


class _TaskExits(trio.abc.Instrument):
    """Drops a finished followed task from its node.

    A followed task's context holds its node and the node names the task, a reference
    cycle: every request's task would be left to the garbage collector, whose runs then
    cost the recording process more than the recording itself. Marking the node done
    when the task exits lets reference counting free both.
    """

    def task_exited(self, task: Any) -> None:
        """Trio's hook: ``task`` has finished."""
        node = task.context.get(TRACK)
        if node is not None and node.task is task:
            node.task = DONE


class RecordingScheduler:
    """The recording half of the scheduler hooks, installed once per Trio run and shared
    by the recordings of that run (each reports the tasks of its own sessions: a
    followed task's node names its recording)."""

    def __init__(self) -> None:
        self._coin = random.Random()
        self._keep = KeepOrder()
        self._exits = _TaskExits()
        self.recordings: list[Subscriber] = []
        #: The current batch in run order, and the followed tasks' part of it: the run
        #: of the single recording's sched record (empty when it logged none), or per
        #: recording (:attr:`runs`) when there are several.
        self.order: list[Any] = []
        self.current: list[int] = []
        self.runs: dict[int, list[int]] | None = None
        self.clock: RecordingClock | None = None
        self._runner: Any = None
        self._runq: RecordingRunq | None = None
        self._saved: tuple[Any, Any, Any] | None = None

    # -- install ------------------------------------------------------------------------

    @classmethod
    def join(cls, recording: Subscriber) -> RecordingScheduler | None:
        """The current run's scheduler (installed on first use) with ``recording``
        subscribed; None when this Trio's internals are not the expected ones."""
        scheduler = current_scheduler()
        if scheduler is None:
            if not internals_ok():
                return None
            scheduler = cls()
            scheduler._install()
        scheduler.recordings.append(recording)
        scheduler._subscribed()
        return scheduler

    def _subscribed(self) -> None:
        # The run queue handles the one-recording case itself.
        if self._runq is not None:
            self._runq.rec = self.recordings[0] if len(self.recordings) == 1 else None

    async def _guard(self) -> None:
        # Trio's own parts go back when the run ends, whatever the recordings did.
        try:
            await trio.sleep_forever()
        finally:
            self.recordings.clear()
            self._uninstall()

    def leave(self, recording: Subscriber) -> None:
        """``recording`` stopped; the last one out puts Trio's own parts back."""
        if recording in self.recordings:
            self.recordings.remove(recording)
        self._subscribed()
        if not self.recordings:
            self._uninstall()

    def _install(self) -> None:
        runner = _GLOBAL.runner  # type: ignore[union-attr]
        self._runner = runner
        self._saved = (runner.runq, runner.clock, _trio_run._r)
        self._coin.seed(_trio_run._r.getrandbits(64))
        runq = self._runq = RecordingRunq(runner.runq, self)
        runner.runq = runq
        testing = _testing()
        if testing is None or not isinstance(runner.clock, testing.MockClock):
            # A MockClock stays as it is: Trio's autojump wants it there, and virtual
            # time does not move while a batch runs.
            self.clock = runq.clock = RecordingClock(runner.clock)
            runner.clock = self.clock
        _trio_run._r = self._keep
        trio.lowlevel.add_instrument(self._exits)
        trio.lowlevel.spawn_system_task(self._guard, name="mcpactor-recording-guard")

    def _uninstall(self) -> None:
        if self._saved is None:
            return
        runq, clock, coin = self._saved
        runner = self._runner
        current = runner.runq
        runq.clear()
        runq.extend(deque.__iter__(current))
        runner.runq = runq
        runner.clock = clock
        _trio_run._r = coin
        self._saved = None
        self._runq = None
        with contextlib.suppress(KeyError, RuntimeError):
            trio.lowlevel.remove_instrument(self._exits)

    # -- the hook (the one-recording case is RecordingRunq.__iter__) ----------------------

    def _batch_many(self, tasks: list[Any]) -> list[Any]:
        # Several recordings in one run (a server's and a client's), or none left.
        # Returns the batch in run order.
        recordings = self.recordings
        runs: dict[Any, list[int]] = {}
        new: dict[Any, dict[int, Any]] = {}
        for task in tasks:
            node = task.context.get(TRACK)
            if node is None:
                continue
            if node.task is not task:
                node = classify(task)
                if node is None:
                    continue
            rec = node.rec
            if rec is None or rec not in recordings:
                continue  # not recorded, or a recording that has stopped
            if not node.id:
                node.id = rec.next_id()
                parent = node.parent
                new.setdefault(rec, {})[node.id] = (
                    node.name if parent is None else (parent.id, node.ordinal))
            runs.setdefault(rec, []).append(node.id)
        if self._coin.random() < 0.5:
            tasks.reverse()
            for run in runs.values():
                run.reverse()
        self.order = tasks
        self.runs = {id(rec): run for rec, run in runs.items()}
        clock = self.clock
        if runs:
            now = clock.now if clock is not None else trio.current_time()
            for rec, run in runs.items():
                rec.log((0, None, None, "sched", now, run, new.get(rec)))
        if clock is not None:
            clock.fresh = True
        if _trio_run._ALLOW_DETERMINISTIC_SCHEDULING:
            self._keep.planned = tasks[::-1]
        for rec in recordings:
            rec.after_batch()
        return tasks

    def position(self, recording: Any) -> tuple[int, int]:
        """Where the running task is in ``recording``'s order: the seq of the current
        batch's sched record, and how many of the recording's steps in it ran before
        this one (for actions of unfollowed tasks that a replay must repeat there)."""
        seq, run = latest_sched(recording)
        runs = self.runs
        now = runs.get(id(recording)) if runs is not None else (
            self.current if self._runq is not None and self._runq.rec is recording else None)
        if run is None or now is not run:
            # This pass ran none of the recording's tasks: after its latest record.
            return seq, 0 if run is None else len(run)
        try:
            me = trio.lowlevel.current_task()
        except RuntimeError:
            return seq, 0
        done = 0
        for task in self.order:
            if task is me:
                break
            node = task.context.get(TRACK)
            if node is not None and node.rec is recording and node.id:
                done += 1
        return seq, done


def latest_sched(recording: Any) -> tuple[int, list[int] | None]:
    """The seq and run of ``recording``'s latest ``sched`` record ((0, None) before its
    first): among the records it has not handed on, else the one it kept at the last
    hand-over (``_last_sched``)."""
    events = recording._events
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if ev[3] == "sched" and ev[0] == 0:
            return recording._base + i + 1, ev[5]
    last: tuple[int, list[int] | None] = getattr(recording, "_last_sched", (0, None))
    return last


def _testing() -> Any:
    import sys

    # Only if already imported: importing trio.testing costs a recording process time.
    return sys.modules.get("trio.testing")


def current_scheduler() -> RecordingScheduler | None:
    """The recording scheduler installed in the current Trio run, if any."""
    runner = getattr(_GLOBAL, "runner", None)
    runq = getattr(runner, "runq", None)
    if isinstance(runq, RecordingRunq):
        owner = runq.scheduler
        if isinstance(owner, RecordingScheduler):
            return owner
    return None
