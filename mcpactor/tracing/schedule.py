"""Recording what decided a Trio run: the order of the followed tasks' steps, and time.

Given the same inputs, a Trio program does the same thing as long as its tasks take
their steps in the same order, see the same clock readings and draw the same entropy.
This module records the first two for the tasks a trace follows
(:mod:`mcpactor.tracing.tasks`); :mod:`mcpactor.tracing.entropy` records the third.

Trio runs its tasks in batches: each pass of its loop waits for I/O, reads the clock
once to expire deadlines, then runs every task that was runnable at that point. Three
hooks into that loop (all reach into Trio's internals, checked by :func:`internals_ok`
against the installed Trio):

- an instrument names and numbers each task as it is spawned
  (:class:`~mcpactor.tracing.tasks.Naming`): a followed task's context then holds its
  node, with its number;
- the run queue is replaced by a deque whose iteration — Trio copies the queue once per
  pass to make the batch — is the pass's hook (:meth:`RecordingRunq.__iter__`). It reads
  the batch's task numbers from the tasks' contexts, decides the order (a coin, as
  Trio's own, reversing the batch half the time) and logs one ``sched`` record: the
  loop's clock reading and the followed tasks in the order they will run, with the
  names of the tasks spawned since the last record. Trio's own coin is replaced by one
  that keeps that order;
- the clock is wrapped: every reading the loop makes between its I/O wait and the
  batch, and every reading the batch's tasks make, returns the one that expired
  deadlines (Trio also reads the clock while it cancels, through
  ``CancelScope.cancel_called``; a later reading there would expire a deadline the
  recorded reading did not, which no replay could repeat).

The hooks run for every pass of the loop, every clock reading and every spawned task,
and are most of what recording costs the process: their objects are
:class:`~mcpactor.tracing.hooks.PassHook` and :class:`~mcpactor.tracing.tasks.Naming`,
in C where ``mcpactor.tracing._hooks`` was built (:mod:`mcpactor.tracing.hooks`).

The replayer (``replay/exact/scheduler.py``) installs the mirror image: the same
instrument, queue and clock hooks, which run the recorded steps in the recorded order
at the recorded times.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import random
from collections import deque
from typing import Any, Protocol

import trio

from mcpactor.tracing import entropy, hooks
from mcpactor.tracing.tasks import TRACK, Naming, Root, TaskTable
from mcpactor.tracing.tracer import WIDTH

#: Records a recording buffers before it hands them on (the recorder's own limit).
CHUNK_EVENTS = 512
#: The same, in items of the flat buffer (every record is WIDTH items).
CHUNK_ITEMS = CHUNK_EVENTS * WIDTH

__all__ = ["CHUNK_EVENTS", "RecordingScheduler", "current_scheduler", "internals_ok"]

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
        and isinstance(getattr(runner, "runq", None), deque)
        and hasattr(runner, "clock")
        and isinstance(getattr(_trio_run, "_r", None), random.Random)
        and hasattr(trio.abc.Instrument, "task_spawned")
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


class RecordingRunq(deque[Any]):
    """Trio's run queue while a recording runs. Trio copies it once per pass of its loop
    to make the batch: that iteration is the pass's hook, a
    :class:`~mcpactor.tracing.hooks.PassHook` set as ``__iter__`` on a subclass made for
    the run (:meth:`RecordingScheduler._install`)."""

    #: The scheduler that installed it.
    scheduler: RecordingScheduler


class RecordingClock(trio.abc.Clock):
    """Wraps the run's clock so that time stands still while a pass's tasks run.

    The loop reads the clock once per pass (after its I/O wait) to expire deadlines;
    every reading until the next pass — the loop's own while it cancels, and the tasks'
    — returns that one (:meth:`~mcpactor.tracing.hooks.PassHook.current_time`, which
    this clock's ``current_time`` is). A deadline a task computes is then that pass's
    time plus its timeout, exactly as a replay, which has only the pass's recorded time,
    computes it; and no reading needs recording. (Within a pass the clock is at most one
    pass's duration behind; the next pass reads it afresh.)
    """

    def __init__(self, inner: trio.abc.Clock, hook: Any) -> None:
        self.inner = inner
        self.hook = hook
        # The hook's own reading, without a call of this class's in between.
        self.current_time = hook.current_time  # type: ignore[method-assign]

    def start_clock(self) -> None:
        """Already started: the recording wraps a running clock."""

    def current_time(self) -> float:
        """The pass's time (see the class)."""
        now: float = self.hook.current_time()
        return now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        """As the wrapped clock says (its own reading, not a pass's)."""
        return self.inner.deadline_to_sleep_time(deadline)


def _reading(clock: trio.abc.Clock) -> tuple[Any, float]:
    # The wrapped clock's reading as (inner, offset): Trio's own clock is perf_counter
    # plus an offset, read without a Python call; any other through its current_time.
    if type(clock) is trio._core._run.SystemClock and isinstance(
            getattr(clock, "offset", None), float):
        return entropy.real("perf_counter"), clock.offset
    return clock.current_time, 0.0


class Subscriber(Protocol):
    """A recording the scheduler reports to (:class:`~mcpactor.tracing.Recorder`).

    With one recording in the run (the usual case) the scheduler appends its records to
    ``_events`` itself, without a call per pass."""

    #: The records not yet handed on (flat: WIDTH items each), how many were handed on
    #: before them, and the tasks it follows.
    _events: list[Any]
    _base: int
    tasks: TaskTable

    def handoff(self) -> None:
        """Hand the buffered records on."""
        ...


class RecordingScheduler:
    """The recording half of the scheduler hooks, installed once per Trio run and shared
    by the recordings of that run (each reports the tasks of its own sessions: a
    followed task's node names its recording)."""

    def __init__(self) -> None:
        self._coin = random.Random()
        self._keep = KeepOrder()
        self._naming = Naming()
        self.recordings: list[Subscriber] = []
        #: (Several recordings) the current batch in run order, and each recording's
        #: part of it (the run queue keeps these for the usual case of one).
        self.order: list[Any] = []
        self.runs: dict[int, tuple[int, ...]] | None = None
        self.clock: RecordingClock | None = None
        #: The pass hook (hooks.PassHook, compiled or not), while installed.
        self.hook: Any = None
        self._runner: Any = None
        #: Trio's own Instruments object, while the compiled hook takes its spawn calls.
        self._instruments: Any = None
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
        # The pass hook handles the one-recording case itself.
        if self.hook is not None:
            self.hook.bind(self.recordings[0] if len(self.recordings) == 1 else None)

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
        # A class of the run's own: its iteration is this run's pass hook.
        runq_class = type("RecordingRunq", (RecordingRunq,), {"__module__": __name__})
        runq = self._runq = runq_class(runner.runq)
        runq.scheduler = self
        testing = _testing()
        # A MockClock stays as it is: Trio's autojump wants it there, and virtual time
        # does not move while a batch runs.
        wrap = testing is None or not isinstance(runner.clock, testing.MockClock)
        inner, offset = _reading(runner.clock) if wrap else (None, 0.0)
        compiled = hooks.native()
        self.hook = (compiled.PassHook if compiled is not None else hooks.PassHook)(
            runq=runq, many=self._batch_many, coin=self._coin.random, keep=self._keep,
            trio_run=_trio_run, inner=inner, offset=offset, virtual_now=trio.current_time,
            trio_state=_GLOBAL.__dict__, chunk_items=CHUNK_ITEMS, task_type=trio.lowlevel.Task,
            root_type=Root, table_type=TaskTable)
        setattr(runq_class, "__iter__", self.hook)  # noqa: B010 - a class slot, set late
        runner.runq = runq
        if wrap:
            self.clock = runner.clock = RecordingClock(runner.clock, self.hook)
        _trio_run._r = self._keep
        spawn = None
        if compiled is not None:
            # The same naming, in C (the instance's attribute, which Trio calls).
            # (The Python one stays for the rare cases: a root to claim.)
            python = Naming.task_spawned.__get__(self._naming)
            spawn = compiled.SpawnHook(
                track=TRACK, ctx_get=contextvars.Context.get, trio_state=_GLOBAL.__dict__,
                python=python, task_type=trio.lowlevel.Task, root_type=Root,
                table_type=TaskTable)
            self._naming.task_spawned = spawn.task_spawned  # type: ignore[method-assign]
        trio.lowlevel.add_instrument(self._naming)
        if spawn is not None:
            self._route_spawns(runner, spawn)
        trio.lowlevel.spawn_system_task(self._guard, name="mcpactor-recording-guard")

    def _route_spawns(self, runner: Any, spawn: Any) -> None:
        # Trio calls every instrument through its Instruments.call, a Python frame per
        # spawned task; while the naming is the only task_spawned instrument, the compiled
        # hook takes those calls itself (in a class of the run's own, sharing Trio's data:
        # instruments added or removed meanwhile stay as they are when it goes).
        original = runner.instruments
        data = getattr(original, "data", None)
        if not isinstance(data, dict) or not isinstance(data.get("task_spawned"), dict):
            return
        routed_class = type(type(original).__name__, (type(original),),
                            {"__slots__": (), "call": spawn.call})
        routed: Any = object.__new__(routed_class)
        routed.data = data
        spawn.route(data["task_spawned"], type(original).call.__get__(routed))
        runner.instruments = routed
        self._instruments = original

    def _uninstall(self) -> None:
        if self._saved is None:
            return
        runq, clock, coin = self._saved
        runner = self._runner
        if self._instruments is not None:
            runner.instruments = self._instruments
            self._instruments = None
        current = runner.runq
        runq.clear()
        runq.extend(deque.__iter__(current))
        runner.runq = runq
        runner.clock = clock
        _trio_run._r = coin
        self._saved = None
        self._runq = None
        if self.hook is not None:
            self.hook.bind(None)
            self.hook = None
        with contextlib.suppress(KeyError, RuntimeError):
            trio.lowlevel.remove_instrument(self._naming)

    # -- the hook (the one-recording case is the PassHook's own) --------------------------

    def _batch_many(self, tasks: list[Any]) -> list[Any]:
        # Several recordings in one run (a server's and a client's), or none left.
        # Returns the batch in run order.
        recordings = self.recordings
        runs: dict[Any, list[int]] = {}
        for task in tasks:
            for rec in recordings:
                tid = rec.tasks.ids.get(task._counter)
                if tid is not None:
                    run = runs.get(rec)
                    if run is None:
                        run = runs[rec] = []
                    run.append(tid)
                    break
        if self._coin.random() < 0.5:
            tasks.reverse()
            for run in runs.values():
                run.reverse()
        self.order = tasks
        done = self.runs = {id(rec): tuple(run) for rec, run in runs.items()}
        hook = self.hook
        if runs:
            now = hook.now
            for rec in runs:
                new = rec.tasks.new
                names = tuple(new) if new else None
                new.clear()
                rec._events.extend((0, None, None, "sched", now, done[id(rec)], names))
        hook.fresh = True
        if _trio_run._ALLOW_DETERMINISTIC_SCHEDULING:
            self._keep.planned = tasks[::-1]
        for rec in recordings:
            if len(rec._events) >= CHUNK_ITEMS:
                rec.handoff()
        return tasks

    def position(self, recording: Any) -> tuple[int, int]:
        """Where the running task is in ``recording``'s order: the seq of the current
        batch's sched record, and how many of the recording's steps in it ran before
        this one (for actions of unfollowed tasks that a replay must repeat there)."""
        seq, run = latest_sched(recording)
        runs = self.runs
        hook = self.hook
        if runs is not None:
            now, order = runs.get(id(recording)), self.order
        elif hook is not None and hook.rec is recording:
            now, order = hook.current, hook.order
        else:
            now, order = None, []
        if run is None or now is not run:
            # This pass ran none of the recording's tasks: after its latest record.
            return seq, 0 if run is None else len(run)
        try:
            me = trio.lowlevel.current_task()
        except RuntimeError:
            return seq, 0
        done = 0
        ids = recording.tasks.ids
        for task in order:
            if task is me:
                break
            if task._counter in ids:
                done += 1
        return seq, done


def latest_sched(recording: Any) -> tuple[int, tuple[int, ...] | None]:
    """The seq and run of ``recording``'s latest ``sched`` record ((0, None) before its
    first): among the records it has not handed on, else the one it kept at the last
    hand-over (``_last_sched``)."""
    found = last_sched_in(recording._events)
    if found is not None:
        i, run = found
        return recording._base + i + 1, run
    last: tuple[int, tuple[int, ...] | None] = getattr(recording, "_last_sched", (0, None))
    return last


def last_sched_in(events: list[Any]) -> tuple[int, tuple[int, ...]] | None:
    """The index (in records) and run of the last ``sched`` record of a flat buffer."""
    kinds = events[3::WIDTH]
    for i in range(len(kinds) - 1, -1, -1):
        if kinds[i] == "sched" and events[i * WIDTH] == 0:
            run: tuple[int, ...] = events[i * WIDTH + 5]
            return i, run
    return None


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
