"""Running a recorded schedule again: the followed tasks take their steps in the recorded
order, at the recorded clock readings.

The mirror image of :mod:`mcpactor.tracing.schedule`. The same instrument names new
tasks exactly as the recording did (:class:`~mcpactor.tracing.tasks.Naming`, in spawn
order), each numbered as the recording's task of that name (:attr:`Scheduler.table`);
the run queue's hook sees every pass's batch and lets a followed task run only when it
is the next step of the recorded schedule. A task that became runnable
earlier is held back (kept out of Trio's queue, with the value it was woken with) until
its turn; a task that is parked in the replay transport (:meth:`Scheduler.park`, for the
times the live transport yielded) is woken when its turn comes. Tasks the recording
does not follow — the replay's own — run freely.

The clock reads the recorded pass's time while the steps of that pass run, so deadlines
expire exactly when they did live; a followed task's own readings are the recorded
values (:meth:`Scheduler.read`). If the next step cannot run — its task is blocked on
something the recording did not have — and nothing else can make progress (no worker
thread is busy), the replay has stalled: :attr:`Scheduler.stalled` says where.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import trio

from mcpactor.tracing import entropy
from mcpactor.tracing.schedule import KeepOrder
from mcpactor.tracing.tasks import Naming, TaskRef, TaskTable

from ..trace import Trace

try:
    from trio._core import _run as _trio_run
except ImportError:  # pragma: no cover - depends on Trio's layout
    _trio_run = None  # type: ignore[assignment]

_GLOBAL: Any = getattr(_trio_run, "GLOBAL_RUN_CONTEXT", None)

#: A recorded value that is not there (the replay read more, or something else).
MISSING = object()


class _StepRunq(deque[Any]):
    """Trio's run queue, each pass's batch chosen by the scheduler.

    Trio copies the queue (iterating it) and then clears it; a task woken while the
    scheduler chooses (an event set, a session closed) is kept through the clear, for the
    next pass, unless the scheduler took it into this one.
    """

    def __init__(self, tasks: Any, scheduler: Scheduler) -> None:
        super().__init__(tasks)
        self._scheduler = scheduler
        self._later: list[Any] = []

    def __iter__(self) -> Iterator[Any]:
        snapshot = [*deque.__iter__(self)]
        batch = self._scheduler.batch(snapshot, self)
        seen = {id(t) for t in snapshot} | {id(t) for t in batch}
        self._later = [t for t in deque.__iter__(self) if id(t) not in seen]
        return iter(batch)

    def clear(self) -> None:
        deque.clear(self)
        if self._later:
            deque.extend(self, self._later)
            self._later = []


class ReplayClock(trio.abc.Clock):
    """The replay's clock: the recorded pass's time; a followed task's readings are the
    recorded ones."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def start_clock(self) -> None:
        """Nothing to start: time is what the recording says."""

    def current_time(self) -> float:
        """The recorded time (see the class)."""
        s = self.scheduler
        try:
            task = _GLOBAL.task
        except AttributeError:
            return s.loop_now()
        if s.clock_reads:
            # A recording that logged each reading of Trio's clock (an early one): those.
            tid = s.table.of(task)
            if tid and tid not in s.table.muted and not s.free:
                value = s.read(TaskRef(s.table, tid), "clock")
                if value is not MISSING:
                    return float(value)
        return s.now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        """Nothing is runnable: wait a little, in real time, for a worker thread. Past the
        recording, time jumps to the next deadline (nothing is compared any more)."""
        s = self.scheduler
        if deadline <= s.loop_now():
            return 0
        if s.free and deadline != math.inf:
            s.now = deadline
            return 0
        return s.idle_wait


class Scheduler:
    """The recorded schedule and the cursor into it (see the module).

    ``on_diverge(reason)`` is called once if the replay cannot follow the schedule;
    ``create(name)`` asks for a session root the recording has next (its task does not
    exist yet); ``act(event)`` performs an outside action the recording did at this
    point (``close_requested``).
    """

    def __init__(
        self,
        trace: Trace,
        *,
        on_diverge: Callable[[str], None],
        stall_seconds: float = 60.0,
    ) -> None:
        self.trace = trace
        self.batches = trace.scheds
        self.names = trace.names
        self.ids = {name: tid for tid, name in trace.names.items()}
        self._reads: dict[int, deque[tuple[str, Any]]] = {}
        for r in trace.reads:
            self._reads.setdefault(r.task, deque()).append((r.source, r.value))
        #: Whether the recording logged the tasks' readings of Trio's clock (else they
        #: read the pass's time, as they did live).
        self.clock_reads = any(r.source == "clock" for r in trace.reads)
        self.b = 0
        self.i = 0
        self.now = self.batches[0].now if self.batches else float(
            (trace.header.get("clock") or {}).get("origin", 0.0))
        self._next_now: float | None = None
        self.held: dict[int, Any] = {}
        self.parked: dict[int, Any] = {}
        #: Parked tasks to wake when the loop reads their step's pass time (park(early)).
        self.early: set[int] = set()
        #: Parked tasks to wake in the next pass, the replay having stopped following.
        self._release: list[Any] = []
        self.tasks: dict[int, Any] = {}
        self.free = not self.batches
        self.on_diverge = on_diverge
        self.create: Callable[[str], Any] | None = None
        self.act: Callable[[Any], Any] | None = None
        #: Called (once) when the replay stops following the schedule: the end of the
        #: recording, or a divergence. May return a task to run in this pass.
        self.on_free: Callable[[], Any] | None = None
        self.stall_seconds = stall_seconds
        self.idle_wait = 0.02
        self.stalled: str | None = None
        #: Outside actions by where they happened: (sched seq, steps of it before).
        self._actions: dict[tuple[int, int], list[Any]] = {}
        index = {b.seq: b.index for b in self.batches}
        for ev in trace.events:
            at = ev.data.get("at")
            if ev.actor == "external" and isinstance(at, list) and len(at) == 2:
                self._actions.setdefault(self._place(index, int(at[0]), int(at[1])),
                                         []).append(ev)
        self._fired: set[int] = set()
        self._requested: set[str] = set()
        self._waiting_since: float | None = None
        #: Every step run, as (recorded pass index, task id): the interleaving views.
        self.steps: list[tuple[int, int]] = []
        #: With ``locate``: for each step, where its task was suspended before it (the
        #: await the step returned from; None for a task's first step).
        self.locate = False
        self.locations: list[str | None] = []
        #: For each task, the index of its latest step.
        self.last_step: dict[int, int] = {}
        self.current: int | None = None  # the id of the followed task taking a step now
        self._runner: Any = None
        self._saved: tuple[Any, Any] | None = None
        self._keep = KeepOrder()
        self._naming = Naming()
        #: The followed tasks, numbered as the recording's tasks of the same names.
        self.table = TaskTable(None, by_name=self._by_name)

    def _place(self, index: dict[int, int], seq: int, k: int) -> tuple[int, int]:
        # "After step k of record seq", as the cursor sees it: after a record's last
        # step is before the next record's first.
        b = index.get(seq)
        if b is None:
            later = [x for x in self.batches if x.seq > seq]
            return (later[0].seq, 0) if later else (seq, k)
        if k >= len(self.batches[b].run):
            nxt = b + 1
            return (self.batches[nxt].seq, 0) if nxt < len(self.batches) else (seq, k)
        return seq, k

    # -- install ------------------------------------------------------------------------

    def install(self) -> None:
        """Take over the run queue and the coin of the current Trio run (whose clock is
        a :class:`ReplayClock` on this scheduler)."""
        runner = _GLOBAL.runner
        self._runner = runner
        self._saved = (runner.runq, _trio_run._r)
        runner.runq = _StepRunq(runner.runq, self)
        _trio_run._r = self._keep
        trio.lowlevel.add_instrument(self._naming)

    def uninstall(self) -> None:
        """Give Trio its queue and coin back (everything held runs freely)."""
        if self._saved is None:
            return
        runq, coin = self._saved
        runner = self._runner
        current = [*deque.__iter__(runner.runq), *self.held.values()]
        self.held.clear()
        runq.clear()
        runq.extend(current)
        runner.runq = runq
        _trio_run._r = coin
        self._saved = None
        try:
            trio.lowlevel.remove_instrument(self._naming)
        except (KeyError, RuntimeError):
            pass

    # -- the cursor ---------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Every recorded step has been run."""
        return self.b >= len(self.batches)

    def expected(self) -> int | None:
        """The id of the task whose step comes next."""
        if self.done:
            return None
        return self.batches[self.b].run[self.i]

    def _advance(self) -> None:
        self.i += 1
        if self.i >= len(self.batches[self.b].run):
            self.b += 1
            self.i = 0
            if self.b < len(self.batches):
                # The steps chosen in this pass still run at its time; the loop's next
                # reading (which expires deadlines) is the next pass's.
                self._next_now = self.batches[self.b].now

    def loop_now(self) -> float:
        """The time as the loop reads it: the pass whose steps come next."""
        if self._next_now is not None:
            self.now, self._next_now = self._next_now, None
            self._wake_parked_for_pass()
        return self.now

    def _wake_parked_for_pass(self) -> None:
        # Live, a thread's end handing over a token woke the task before the loop expired
        # the pass's deadlines: the task was runnable then, so a deadline due in that pass
        # did not abort its wait. The loop reads its clock once per pass, before it
        # expires them: the tasks parked ``early`` whose step is in the pass are woken
        # here (not in the pass's hook, whose run queue Trio has already taken).
        if not self.early or self.done or self.free:
            return
        for tid in self.batches[self.b].run:
            if tid in self.early:
                self.early.discard(tid)
                task = self.parked.pop(tid, None)
                if task is not None:
                    trio.lowlevel.reschedule(task)

    def position(self) -> str:
        """Where the replay is, for messages: the next step's record and task."""
        if self.done:
            return "after the last recorded step"
        tid = self.expected()
        return f"step {self.i + 1} of #{self.batches[self.b].seq} ({self.names.get(tid or 0)})"

    # -- reads --------------------------------------------------------------------------

    def read(self, node: TaskRef, source: str, *, lenient: bool = False) -> Any:
        """The next value ``node``'s task read live, if it read ``source`` then; else
        MISSING (and the replay diverges: the code read something else). ``lenient``
        (changed code): Trio clock readings in between are passed over, and a mismatch
        is no divergence."""
        queue = self._reads.get(node.id)
        if not queue:
            return MISSING
        if lenient:
            while queue and queue[0][0] == "clock" and source != "clock":
                queue.popleft()
            if not queue or queue[0][0] != source:
                return MISSING
        recorded, value = queue[0]
        if recorded != source:
            self.diverge(f"task {node.name} read {_SOURCE.get(source, source)} where the "
                         f"recording read {_SOURCE.get(recorded, recorded)}")
            return MISSING
        queue.popleft()
        return value

    def take(self, node: TaskRef, source: str) -> Any:
        """The next value of ``source`` in ``node``'s reads, wherever it is among them
        (how a wait for a worker thread ended is logged after what the thread read)."""
        queue = self._reads.get(node.id)
        if not queue:
            return MISSING
        for i, (recorded, value) in enumerate(queue):
            if recorded == source:
                del queue[i]
                return value
        return MISSING

    # -- parking, for the replay transport ----------------------------------------------

    async def park(self, *, early: bool = False) -> None:
        """One yield of a live transport: wait until this task's next recorded step.
        ``early``: what ends the wait live came before the pass's deadlines expired (a
        thread limiter's token), so the task is woken when the loop reads the pass's
        time, before a deadline due in that pass could abort the wait."""
        task = trio.lowlevel.current_task()
        tid = self.table.of(task)
        if self.free or not tid:
            await trio.lowlevel.checkpoint()
            return
        self.parked[tid] = task
        if early:
            self.early.add(tid)

        def abort(_: Any) -> trio.lowlevel.Abort:
            self.parked.pop(tid, None)
            self.early.discard(tid)
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    # -- the hooks ----------------------------------------------------------------------

    def _by_name(self, name: str, task: Any) -> int | None:
        # A followed task named (spawned, or a client's code): the recorded task of that
        # name; a task the recording does not have is a divergence (and not followed).
        tid = self.ids.get(name)
        if tid is None:
            if not self.free:
                self.diverge(f"the replay started a task the recording does not "
                             f"have: {name} ({_where(task)})")
            return None
        self.tasks[tid] = task
        return tid

    def batch(self, tasks: list[Any], runq: deque[Any]) -> list[Any]:
        """One pass: the tasks Trio found runnable (oldest first); returns the batch in
        the order Trio pops it."""
        free: list[Any] = []
        ids = self.table.ids
        self._wake_released(tasks, runq)
        for task in tasks:
            tid = ids.get(task._counter)
            if tid is None or self.free:
                free.append(task)
            else:
                self.held[tid] = task
        if self.free:
            order = free + list(self.held.values())
            self.held.clear()
            return self._planned(order)
        chosen: list[Any] = []
        after: list[Any] = []
        b0 = self.b
        while not self.done and self.b == b0:
            acted, tid, task = self._step_task(after, runq)
            if acted:
                break
            if task is None:
                self._missing(tid, free, after, runq)
                break
            chosen.append(task)
            self.last_step[tid] = len(self.steps)
            self.steps.append((self.b, tid))
            if self.locate:
                self.locations.append(where_in_code(task))
            self._advance()
        if chosen or not self.done:
            self._check_progress(bool(chosen or free or after))
        if self.done and not self.free:
            # Past the recording: whatever runs now is not compared.
            self._go_free(after, runq)
            free.extend(self.held.values())
            self.held.clear()
        return self._planned(chosen + after + free)

    def _go_free(self, after: list[Any], runq: deque[Any]) -> None:
        self.free = True
        self._release_parked()
        if self.on_free is not None:
            woken = self.on_free()
            if woken is not None:
                after.append(self._take(woken, runq))

    def _step_task(self, after: list[Any], runq: deque[Any]) -> tuple[bool, int, Any]:
        """The next recorded step: ``(True, 0, None)`` when an outside action comes first
        (done now, the task it woke in ``after``); else the step's task number and the
        task if it can take it (held, or parked and woken now), else None."""
        action = self._due_action()
        if action is not None:
            # Something outside the followed tasks happened here live: the replay's
            # driver does it now, after the steps before it.
            if self.act is not None:
                woken = self.act(action)
                if woken is not None:
                    after.append(self._take(woken, runq))
            return True, 0, None
        tid = self.expected()
        assert tid is not None
        task = self.held.pop(tid, None)
        if task is None:
            parked = self.parked.pop(tid, None)
            if parked is not None:
                trio.lowlevel.reschedule(parked)
                task = self._take(parked, runq)
        return False, tid, task

    def _release_parked(self) -> None:
        # Tasks parked for their recorded step would wait for it forever once the replay
        # no longer follows the recording: the next pass wakes them (not this one, which
        # Trio has already taken from its run queue).
        self._release.extend(self.parked.values())
        self.parked.clear()
        self.early.clear()

    def _wake_released(self, tasks: list[Any], runq: deque[Any]) -> None:
        # The tasks released by _release_parked join this pass.
        if self._release:
            woken, self._release = self._release, []
            for task in woken:
                trio.lowlevel.reschedule(task)
                tasks.append(self._take(task, runq))

    def _planned(self, order: list[Any]) -> list[Any]:
        popped = order[::-1]  # Trio pops the batch from its end
        self._keep.planned = popped
        return popped

    def _take(self, task: Any, runq: deque[Any]) -> Any:
        # A task just rescheduled (appended to Trio's queue) runs in this pass instead.
        try:
            deque.remove(runq, task)
        except ValueError:
            pass
        return task

    def _due_action(self) -> Any:
        if not self._actions or self.done:
            return None
        key = (self.batches[self.b].seq, self.i)
        for ev in self._actions.get(key, ()):
            if ev.index not in self._fired:
                self._fired.add(ev.index)
                return ev
        return None

    def _missing(self, tid: int, free: list[Any], after: list[Any], runq: deque[Any]) -> None:
        # The next step's task is neither runnable nor parked.
        name = self.names.get(tid, f"#{tid}")
        if tid not in self.tasks and "/" not in name and self.create is not None \
                and name not in self._requested:
            # A session's supervisor the replay has not started yet: start it now.
            self._requested.add(name)
            woken = self.create(name)
            if woken is not None:
                after.append(self._take(woken, runq))

    def _check_progress(self, moved: bool) -> None:
        # A stall: the next step's task cannot run, nothing else runs, and no worker
        # thread is busy (a thread's end would wake the loop) for a while.
        if moved:
            self._waiting_since = None
            return
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
            return
        busy = _threads_busy()
        limit = self.stall_seconds if busy else 0.5
        if now - self._waiting_since >= limit:
            tid = self.expected()
            task = self.tasks.get(tid) if tid is not None else None
            where = f"; it waits at {_where(task)}" if task is not None else (
                "; that task never started")
            self.stalled = (f"the replay stalled: {self.names.get(tid or 0, '?')} should take "
                            f"the next step (#{self.batches[self.b].seq}){where}")
            self.diverge(self.stalled)

    def diverge(self, reason: str) -> None:
        """Stop following the schedule (once) and report why (tasks woken meanwhile run
        in the next pass)."""
        if self.free:
            return
        self.free = True
        self._release_parked()
        self.on_diverge(reason)
        if self.on_free is not None:
            self.on_free()


_SOURCE = {
    "clock": "Trio's clock", "time": "time.time()", "time_ns": "time.time_ns()",
    "monotonic": "time.monotonic()", "monotonic_ns": "time.monotonic_ns()",
    "perf_counter": "time.perf_counter()", "perf_counter_ns": "time.perf_counter_ns()",
    "urandom": "os.urandom()",
}


def _threads_busy() -> bool:
    if entropy.replay_threads_busy():
        return True
    try:
        stats = trio.to_thread.current_default_thread_limiter().statistics()
    except RuntimeError:
        return False
    return bool(stats.borrowed_tokens)


def _where(task: Any) -> str:
    """Where a task is suspended: the innermost frame of its coroutine chain."""
    coro = getattr(task, "coro", None)
    frame = None
    while coro is not None:
        f = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if f is None:
            break
        frame = f
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    if frame is None:
        return "an unknown point"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def where_in_code(task: Any) -> str | None:
    """Where a suspended task waits, as the application sees it: the innermost frame of
    its coroutine chain that is not Trio's or mcpactor's (``file:line``); None for a task
    that has not started."""
    coro = getattr(task, "coro", None)
    found: str | None = None
    started = False
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        if frame.f_lasti >= 0:
            started = True
        name = frame.f_code.co_filename
        if not _internal(name):
            found = f"{name}:{frame.f_lineno}"
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return found if started else None


def _internal(filename: str) -> bool:
    return filename.startswith(_INTERNAL) or filename.startswith("<")


def _package_dirs() -> tuple[str, ...]:
    import os
    import sysconfig

    import outcome

    import mcpactor

    dirs = [os.path.dirname(m.__file__ or "") for m in (trio, outcome, mcpactor)]
    dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # replay/
    dirs.append(sysconfig.get_paths()["stdlib"])
    return tuple(d + os.sep for d in dirs if d)


_INTERNAL = _package_dirs()
