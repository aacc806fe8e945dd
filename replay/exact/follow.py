"""Following a recording as closely as changed code allows.

The exact replay stops at the first divergence: from there on the recorded schedule no
longer describes what the code does. But most of it usually still does — a changed
result in one tool, an extra tool in a list, a lock around one handler — and running
the new code freely from the start would re-decide every race by the replay's own
timing, listing answers as "changed" that only came out of another interleaving.

A follow run keeps to the recording wherever the code still matches it:

- a task of the recording (the same name: the same spawn position) takes its steps at
  its recorded places in the schedule, and reads its recorded clock and entropy values
  for as long as it reads what it read live (:class:`~.changed.VirtualCapture`);
- a recorded step whose task cannot run then (it waits on something else now, or has
  ended) is passed over; the task, late, runs as soon as it can, and takes its later
  recorded steps at their places again;
- a task the recording does not have, or one past its recorded steps, runs freely;
- the clock is the recorded passes' times while the schedule lasts (so timers fire as
  they fired live), and jumps from deadline to deadline after it.

An unchanged task therefore takes exactly its recorded steps, and code that changes one
answer changes that answer only. Inputs come from the replay transport at the reader's
recorded steps, as in the exact replay; what the code sends is collected, whatever it
is. The same run is used by a live target that follows its recording
(:mod:`replay.livefollow`): there a task that waits for the real transport is waited
for instead of passed over.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import trio

from mcpactor.tracing import entropy
from mcpactor.tracing.encode import input_bytes, loads
from mcpactor.tracing.tasks import TaskRef, TaskTable
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed

from ..compare import Comparison, compare, response_key, server_messages
from ..model import ReplayResult
from ..trace import Event, Trace
from .changed import VirtualCapture
from .driver import Driver
from .scheduler import MISSING, ReplayClock, Scheduler, _threads_busy
from .transport import _RECEIVE_OUTCOMES, _SEND_OUTCOMES

Sent = list[tuple[str | None, Any]]

#: How many passes a session's first step waits for its supervisor to start.
_START_PASSES = 4


class FollowScheduler(Scheduler):
    """The recorded schedule, kept where the code lets it (see the module)."""

    def __init__(self, trace: Trace, *, wait_seconds: float = 60.0) -> None:
        super().__init__(trace, on_diverge=lambda reason: None, stall_seconds=wait_seconds)
        #: Recorded steps still to come, per task.
        self.remaining: Counter[int] = Counter(
            tid for sched in self.batches for tid in sched.run)
        #: Tasks that missed a recorded step: they run as soon as they can.
        self.late: set[int] = set()
        #: Tasks waiting on a real transport (a live target): their steps are waited for.
        self.io: set[int] = set()
        #: Steps passed over, and steps taken at their place (for tests and reports).
        self.skipped = 0
        self.followed = 0
        self._extra = max(self.names, default=0)
        self._waits = 0
        self._since: float | None = None

    # A follow run never stops following: mismatches are expected of changed code.
    def diverge(self, reason: str) -> None:
        """Nothing: a follow run passes over what it cannot follow."""

    def read(self, node: TaskRef, source: str, *, lenient: bool = True) -> Any:
        """The task's next recorded value, while it reads what it read live."""
        return super().read(node, source, lenient=True)

    def _by_name(self, name: str, task: Any) -> int | None:
        # A followed task named (spawned, or a root): the recorded task of that name; a
        # task the recording does not have gets a number of its own past the recorded
        # ones (and is followed, unscheduled), so that its clock and entropy reads are
        # the replay's derived values (the same every run) rather than the machine's,
        # and the tasks it spawns are named and followed in turn.
        tid = self.ids.get(name)
        if tid is None:
            self._extra += 1
            tid = self._extra
        self.tasks[tid] = task
        return tid

    def waiting(self) -> bool:
        """Whether the next step's task is worth waiting for in real time (a worker
        thread or a real transport may still wake it)."""
        tid = self.expected()
        return tid is not None and bool(self.io or _threads_busy())

    def batch(self, tasks: list[Any], runq: Any) -> list[Any]:
        """One pass: the recorded pass's steps whose tasks can take them, then the late
        tasks and those the recording does not schedule."""
        free: list[Any] = []
        ids = self.table.ids
        self._wake_released(tasks, runq)
        for task in tasks:
            tid = ids.get(task._counter)
            if tid is None:
                free.append(task)  # not followed (the replay's own, a transport's)
                continue
            if self.free or tid in self.io or not self.remaining[tid] or tid in self.late:
                self.late.discard(tid)
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
                if self._wait_for(tid, free, after, runq):
                    break
                # It cannot take this step now: pass it over; the task runs when it can.
                self.skipped += 1
                self.remaining[tid] -= 1
                if tid in self.tasks:
                    self.late.add(tid)
                self._advance()
                continue
            self._waits = 0
            self._since = None
            self.followed += 1
            self.remaining[tid] -= 1
            chosen.append(task)
            self.last_step[tid] = len(self.steps)
            self.steps.append((self.b, tid))
            self._advance()
        if self.done and not self.free:
            self._go_free(after, runq)
            free.extend(self.held.values())
            self.held.clear()
        return self._planned(chosen + after + free)

    def _wait_for(self, tid: int, free: list[Any], after: list[Any], runq: Any) -> bool:
        """Whether to wait (a pass, or a moment in real time) for the next step's task
        rather than pass it over."""
        name = self.names.get(tid, "")
        if tid not in self.tasks and "/" not in name:
            # A session's supervisor: start the session, and give it a few passes.
            if self._waits == 0:
                self._missing(tid, free, after, runq)
            self._waits += 1
            if self._waits <= _START_PASSES:
                return True
        # A task waiting for the real transport (a live target) may be what the next
        # step waits for (an answer from the client, the next request): wait for it. A
        # worker thread likewise.
        if self.io or (_threads_busy() and tid in self.tasks):
            now = time.monotonic()
            if self._since is None:
                self._since = now
            if now - self._since < self.stall_seconds:
                return True
        self._waits = 0
        self._since = None
        return False


class FollowClock(ReplayClock):
    """The follow run's clock: the recorded passes' times; no real waiting, except for
    a worker thread or a real transport (see :meth:`FollowScheduler.waiting`)."""

    scheduler: FollowScheduler

    def deadline_to_sleep_time(self, deadline: float) -> float:
        """Zero while recorded passes remain (passing over is immediate); past them,
        time jumps to the next deadline."""
        s = self.scheduler
        if deadline <= s.loop_now():
            return 0
        if s.free:
            if deadline != math.inf:
                s.now = deadline
                return 0
            return s.idle_wait
        return s.idle_wait if s.waiting() else 0


class FollowTransport(Transport):
    """A session's recorded inputs at the reader's recorded steps (as the exact replay's
    transport); what the code sends is collected, and never held up."""

    def __init__(self, name: str, sid: str, events: list[Event], scheduler: Scheduler,
                 sink: Sent) -> None:
        self.name = name
        self._sid = sid
        self._scheduler = scheduler
        self._sink = sink
        self._inputs = [ev for ev in events
                        if ev.actor == "reader" and ev.kind in _RECEIVE_OUTCOMES]
        self._outcomes = [ev for ev in events if ev.kind in _SEND_OUTCOMES]
        self._next_in = 0
        self._next_out = 0

    async def _yields(self, ev: Event | None) -> None:
        n = ev.data.get("yields", 1) if ev is not None else 1
        n = n if isinstance(n, int) and n > 0 else 0
        for _ in range(n):
            await self._scheduler.park()

    async def receive(self) -> bytes | Oversize:
        """The next recorded input (a recorded cancelled receive is passed: in changed
        code, the cancellation may not come)."""
        while (self._next_in < len(self._inputs)
               and self._inputs[self._next_in].kind == "receive_cancelled"):
            self._next_in += 1
        if self._next_in >= len(self._inputs):
            await trio.sleep_forever()
        ev = self._inputs[self._next_in]
        await self._yields(ev)
        self._next_in += 1
        if ev.kind == "message_in":
            return input_bytes(ev.data)  # non-UTF-8 input as its exact bytes (raw_b64)
        if ev.kind == "message_oversize":
            return Oversize(int(ev.data.get("size", 0)))
        if ev.kind == "transport_broken":
            raise TransportClosed(str(ev.data.get("error", "")))
        raise trio.EndOfChannel

    async def send(self, messages: list[Outgoing]) -> None:
        """Collect the messages; yield as the recording's send at this place did."""
        for data, _ in messages:
            self._sink.append((self._sid, _decode(data)))
        ev = self._outcomes[self._next_out] if self._next_out < len(self._outcomes) else None
        self._next_out += len(messages)
        if ev is not None and ev.kind == "send_cancelled":
            ev = None
        await self._yields(ev)

    async def close_request_stream(self, request_id: Any) -> None:
        """(HTTP) nothing to do."""

    async def aclose(self) -> None:
        """Nothing to release."""


def _decode(data: bytes) -> Any:
    # Integers past 64 bits exact, as the trace holds the recorded answers' ids.
    return loads(data)


class NullTracer:
    """The follow run's sessions' tracer: the events are not compared (the answers are)."""

    def __init__(self, scheduler: Scheduler, origin: float) -> None:
        self._scheduler = scheduler
        self._origin = origin
        #: The tasks the run follows: the sessions number theirs in the scheduler's table
        #: (spawn_root; the reader and writer mark themselves muted in it).
        self.tasks: TaskTable = scheduler.table
        self.log: Callable[[Any], None] = _drop

    def clock(self) -> int:
        """The replay's time, in nanoseconds since the recording's clock origin."""
        return round((self._scheduler.now - self._origin) * 1e9)

    def session_closed(self, session: str) -> None:
        """Nothing to close."""

    def stalled(self, reason: str) -> None:
        """A session's failure shows in what it did not answer."""


def _drop(event: Any) -> None:
    pass


class FollowDriver(Driver):
    """Starts the sessions on follow transports (see :class:`~.driver.Driver`)."""

    sink: Sent

    def _transport(self, sid: str) -> Any:
        events = self._events.get(sid, [])
        name = next((str(ev.data.get("transport")) for ev in events
                     if ev.kind == "session_started"), str(self.trace.header.get("transport")))
        return FollowTransport(name, sid, events, self.scheduler, self.sink)


def changed_responses(trace: Trace, subject: Any, exact: ReplayResult) -> Comparison:
    """Every response of ``subject`` (freshly loaded) to ``trace``'s inputs that is not
    the recorded one. The responses the exact replay ``exact`` reproduced before it
    diverged are the new code's own, as recorded: never listed; the rest come from a
    follow run (see the module)."""
    sent, _ = replay_follow(trace, subject)
    recorded, methods = server_messages(trace)
    return compare(recorded, sent, methods, settled=reproduced_responses(trace, exact))


def reproduced_responses(trace: Trace, exact: ReplayResult) -> set[tuple[str | None, str]]:
    """The ``(session, id)`` of every response among the events ``exact`` reproduced."""
    settled: set[tuple[str | None, str]] = set()
    for ev in trace.events[:exact.reproduced]:
        msg = ev.data.get("msg") if ev.kind == "message_out" else None
        for m in msg if isinstance(msg, list) else [msg]:
            if isinstance(m, dict) and "id" in m and "method" not in m:
                settled.add((ev.session, response_key(m["id"])))
    return settled


def replay_follow(trace: Trace, subject: Any) -> tuple[Sent, FollowScheduler]:
    """Run ``subject`` (a freshly loaded server) on ``trace``'s inputs, following the
    recording where it can (see the module): what it sent, as ``(session, message)``,
    and the scheduler (how much it followed)."""
    sent: Sent = []
    scheduler = FollowScheduler(trace)
    trio.run(_main, trace, subject, scheduler, sent, clock=FollowClock(scheduler))
    return sent, scheduler


async def _main(trace: Trace, subject: Any, scheduler: FollowScheduler, sent: Sent) -> None:
    from .engine import _lifespan

    origin = float((trace.header.get("clock") or {}).get("origin", 0.0))
    capture = VirtualCapture(scheduler, trace)
    seed = (trace.header.get("seeds") or {}).get("random")
    if isinstance(seed, int):
        entropy.global_random().seed(seed)
    async with _lifespan(trace, subject, scheduler):
        scheduler.install()
        entropy.activate(capture)
        try:
            async with trio.open_nursery() as nursery:
                driver = FollowDriver(nursery, subject, trace, scheduler,
                                      NullTracer(scheduler, origin))  # type: ignore[arg-type]
                driver.sink = sent
                scheduler.create = driver.create
                scheduler.act = driver.act
                scheduler.on_free = driver.on_free
                nursery.start_soon(driver.run)
                await driver.free.wait()
                # Past the schedule, whatever the new code still does (on a clock that
                # jumps to its deadlines) is waited for a while, not for ever.
                with trio.move_on_at(scheduler.now + 60.0):
                    await _quiet(driver)
                nursery.cancel_scope.cancel()
        finally:
            entropy.deactivate(capture)
            scheduler.uninstall()


async def _quiet(driver: Driver) -> None:
    """Until every session has ended."""
    for session in list(driver.sessions.values()):
        await session.closed.wait()


__all__ = ["MISSING", "FollowScheduler", "FollowTransport", "replay_follow"]
