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

import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import trio

from mcpactor.tracing.tasks import TRACK, classify

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
    )


class KeepOrder(random.Random):
    """Trio's scheduling coin, made to keep the order a hook chose.

    Trio reverses a batch when ``random()`` is below 0.5 (never, here); under
    Hypothesis it sorts the batch and calls ``shuffle``, which puts back the order the
    hook chose (:attr:`planned`).
    """

    def __init__(self) -> None:
        super().__init__(0)
        self.planned: list[Any] = []

    def random(self) -> float:
        """Never below 0.5: Trio leaves the batch as the hook returned it."""
        return 0.75

    def shuffle(self, x: Any, *args: Any, **kwargs: Any) -> None:
        """The hook's order, whatever Trio did to the batch before."""
        x[:] = self.planned


class RecordingRunq(deque[Any]):
    """Trio's run queue, telling the scheduler of every batch Trio takes from it."""

    def __init__(self, tasks: Any, hook: Callable[[list[Any]], list[Any]]) -> None:
        super().__init__(tasks)
        self._hook = hook

    def __iter__(self) -> Iterator[Any]:
        # Trio iterates the queue once per pass of its loop, to copy it into the batch.
        batch = self._hook([*deque.__iter__(self)])
        return iter(batch)


class RecordingClock(trio.abc.Clock):
    """Wraps the run's clock: logs followed tasks' readings; the loop's readings between
    its I/O wait and the batch all return the one that expired deadlines."""

    def __init__(self, inner: trio.abc.Clock, log: Callable[[tuple[Any, ...]], None]) -> None:
        self.inner = inner
        self._read = inner.current_time
        self._log = log
        #: The loop's reading for this pass; fresh: the next loop reading is a new pass's.
        self.now = inner.current_time()
        self.fresh = True

    def start_clock(self) -> None:
        """Already started: the recording wraps a running clock."""

    def current_time(self) -> float:
        """The time; logged when a followed task reads it."""
        try:
            task = _GLOBAL.task  # type: ignore[union-attr]
        except AttributeError:
            # The loop itself (no task is running).
            if self.fresh:
                self.now = self._read()
                self.fresh = False
            return self.now
        t = self._read()
        node = task.context.get(TRACK)
        if node is not None and node.task is task and not node.muted:
            self._log((0, None, None, "read", node.id, "clock", t))
        return t

    def deadline_to_sleep_time(self, deadline: float) -> float:
        """As the wrapped clock says (its own reading, not a pass's)."""
        return self.inner.deadline_to_sleep_time(deadline)


class RecordingScheduler:
    """The recording half of the scheduler hooks, installed in one Trio run.

    ``log`` appends one compact record to the recorder (see
    :mod:`mcpactor.tracing.recorder`); ``after_batch`` is called once per pass of the
    loop (the recorder hands its buffer on from there).
    """

    def __init__(
        self, log: Callable[[tuple[Any, ...]], None], after_batch: Callable[[], None],
        seq: Callable[[], int],
    ) -> None:
        self._log = log
        self._after = after_batch
        self._seq = seq
        self._ids = 0
        self._coin = random.Random()
        self._keep = KeepOrder()
        #: The current batch in run order, and the seq of its sched record (0: none).
        self.order: list[Any] = []
        self.sched_seq = 0
        self.clock: RecordingClock | None = None
        self._runner: Any = None
        self._saved: tuple[Any, Any, Any] | None = None

    # -- install ------------------------------------------------------------------------

    def install(self) -> bool:
        """Hook into the current Trio run; False (and nothing changed) when this Trio's
        internals are not the expected ones."""
        if not internals_ok():
            return False
        runner = _GLOBAL.runner  # type: ignore[union-attr]
        if isinstance(runner.runq, RecordingRunq):
            return False  # another recording already owns this run
        self._runner = runner
        self._saved = (runner.runq, runner.clock, _trio_run._r)
        self._coin.seed(_trio_run._r.getrandbits(64))
        runner.runq = RecordingRunq(runner.runq, self.batch)
        testing = _testing()
        if testing is None or not isinstance(runner.clock, testing.MockClock):
            # A MockClock stays as it is: Trio's autojump wants it there, and virtual
            # time does not move while a batch runs.
            self.clock = RecordingClock(runner.clock, self._log)
            runner.clock = self.clock
        _trio_run._r = self._keep
        return True

    def uninstall(self) -> None:
        """Put Trio's own queue, clock and coin back."""
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

    # -- the hook -----------------------------------------------------------------------

    def batch(self, tasks: list[Any]) -> list[Any]:
        """One pass's batch (in the order the tasks became runnable): name new followed
        tasks, choose the order, log it; returns the batch as Trio will pop it."""
        new: dict[int, str] | None = None
        followed = False
        for task in tasks:
            node = task.context.get(TRACK)
            if node is None:
                continue
            followed = True
            if node.task is not task:
                node = classify(task)
                assert node is not None
            if not node.id:
                self._ids += 1
                node.id = self._ids
                if new is None:
                    new = {}
                new[node.id] = node.name
        if self._coin.random() < 0.5:
            tasks.reverse()
        self.order = tasks
        clock = self.clock
        if followed:
            run = [n.id for t in tasks if (n := t.context.get(TRACK)) is not None]
            self.sched_seq = self._seq()
            now = clock.now if clock is not None else trio.current_time()
            self._log((0, None, None, "sched", now, run, new))
        if clock is not None:
            clock.fresh = True
        # Trio pops the batch from its end.
        popped = tasks[::-1]
        self._keep.planned = popped
        self._after()
        return popped

    def position(self) -> tuple[int, int]:
        """Where the running task is in the recorded order: the seq of the current
        batch's sched record, and how many followed steps of it ran before this one
        (for actions of unfollowed tasks that a replay must repeat at that point)."""
        try:
            me = trio.lowlevel.current_task()
        except RuntimeError:
            return self.sched_seq, 0
        done = 0
        for task in self.order:
            if task is me:
                break
            node = task.context.get(TRACK)
            if node is not None:
                done += 1
        return self.sched_seq, done


def _testing() -> Any:
    import sys

    # Only if already imported: importing trio.testing costs a recording process time.
    return sys.modules.get("trio.testing")


def current_scheduler() -> RecordingScheduler | None:
    """The recording scheduler installed in the current Trio run, if any."""
    runner = getattr(_GLOBAL, "runner", None)
    runq = getattr(runner, "runq", None)
    if isinstance(runq, RecordingRunq):
        hook = runq._hook
        owner = getattr(hook, "__self__", None)
        if isinstance(owner, RecordingScheduler):
            return owner
    return None


def wall_time() -> float:
    """Unix time now (kept apart so that the recorder's header is one call)."""
    return time.time()
