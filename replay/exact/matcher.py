"""Comparing an exact replay's events with the recording, as they happen.

The :class:`ExactMatcher` is every replayed session's tracer. With the schedule
enforced, the events must come in exactly the recorded order, all sessions together:
each one is compared with the next recorded event as soon as it is logged, and the
first difference stops the replay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from mcpactor.tracing.encode import dumps, encode_events, loads, to_event
from mcpactor.tracing.redact import Redactor
from mcpactor.tracing.tasks import current_node
from mcpactor.tracing.tracer import Compact

from ..jsondiff import json_diff
from ..matcher import CONTEXT_EVENTS, Divergence, same_json
from ..trace import ANNOTATION_KINDS, Event, Trace, comparable
from .scheduler import Scheduler

StepHook = Callable[[Event, dict[str, Any]], None]
BreakHook = Callable[[Event], None]


def _comparable(ev: dict[str, Any]) -> dict[str, Any]:
    return comparable(ev)


class ExactMatcher:
    """Tracer of the replayed sessions: checks every event against the recording and
    keeps the replay's own lines (``output``)."""

    def __init__(
        self,
        trace: Trace,
        scheduler: Scheduler,
        *,
        until: int | None = None,
        on_step: StepHook | None = None,
        on_break: BreakHook | None = None,
        break_at: int | None = None,
    ) -> None:
        self.trace = trace
        self.events = trace.events
        self.scheduler = scheduler
        #: The tasks the replay follows (the sessions' spawn_root and a client's code
        #: number theirs here).
        self.tasks = scheduler.table
        self.redactor = Redactor(frozenset(trace.header.get("redacted_keys") or ()))
        self._expected = [ev.comparable() for ev in self.events]
        self.next = 0
        self.divergence: Divergence | None = None
        self.finished = trio.Event()
        self.on_step = on_step
        self.on_break = on_break
        self.break_at = break_at
        self._broke = False
        self.until_index = len(self.events) if until is None else sum(
            1 for ev in self.events if ev.seq <= until)
        clock = trace.header.get("clock") or {}
        self._origin = float(clock.get("origin", 0.0))
        self.output: list[bytes] = []
        #: For each reproduced event, the task that emitted it (None: not a followed one)
        #: and the index of the step it was emitted in.
        self.emitters: list[int | None] = []
        self.event_steps: list[int | None] = []
        #: The log the sessions call (see mcpactor.tracing.tracer).
        self.log: Callable[[Compact], None] = self._log
        if self.until_index == 0:
            self.finished.set()

    # -- the tracer interface -----------------------------------------------------------

    def clock(self) -> int:
        """The replay's time, in nanoseconds since the recording's clock origin."""
        return round((self.scheduler.now - self._origin) * 1e9)

    def session_closed(self, session: str) -> None:
        """Nothing to close: the replay's output is kept in memory."""

    def _log(self, compact: Compact) -> None:
        if self.finished.is_set() or compact[3] in ANNOTATION_KINDS:
            return
        i = self.next
        expected = self.events[i] if i < len(self.events) else None
        seq = expected.seq if expected is not None else (
            self.events[-1].seq + 1 if self.events else 1)
        actual = self._normalize(to_event(compact, seq, 0))
        actual["t"] = round(self.scheduler.now - self._origin, 9)
        if expected is None:
            self.diverge(None, actual, f"the replay produced a {actual['kind']} event "
                         f"({actual['actor']}) that the recording does not have")
            return
        if actual.get("session") != expected.session or not same_json(
                self._expected[i], _comparable(actual)):
            reason = f"{expected.kind} ({expected.actor}) differs" if (
                actual["kind"] == expected.kind and actual.get("session") == expected.session
            ) else (f"order: {actual['kind']} ({actual['actor']}) happened where the recording "
                    f"has {expected.kind} ({expected.actor})")
            self.diverge(expected, actual, reason)
            return
        self.next = i + 1
        node = current_node()
        self.emitters.append(node.id if node is not None else None)
        self.event_steps.append(
            self.scheduler.last_step.get(node.id) if node is not None else None)
        self.output.append(dumps(actual))
        if self.on_step is not None:
            self.on_step(expected, actual)
        if self.next >= self.until_index:
            self.finished.set()
            return
        if self.break_at is not None and not self._broke and self.on_break is not None:
            nxt = self.events[self.next]
            if nxt.seq >= self.break_at:
                self._broke = True
                self.on_break(nxt)

    def _normalize(self, ev: dict[str, Any]) -> dict[str, Any]:
        # The event exactly as a recording would have written it (redacted, JSON types).
        decoded: dict[str, Any] = _loads(encode_events([ev], self.redactor)[0])
        return decoded

    # -- verdicts -----------------------------------------------------------------------

    def diverge(self, expected: Event | None, actual: dict[str, Any] | None,
                reason: str) -> None:
        """Record the first divergence and end the replay."""
        if self.divergence is not None or self.finished.is_set():
            return
        at = expected.index if expected is not None else self.next
        context = tuple(e.data for e in self.events[max(0, at - CONTEXT_EVENTS):at])
        exp = expected.data if expected is not None else None
        diff: list[str] = []
        if exp is not None and actual is not None:
            diff = json_diff(_comparable(exp), _comparable(actual))
        seq = expected.seq if expected is not None else (
            self.events[self.next].seq if self.next < len(self.events) else None)
        self.divergence = Divergence(seq, reason, exp, actual, tuple(diff), context)
        self.finished.set()

    def stalled(self, reason: str) -> None:
        """The schedule could not be followed (see :class:`~.scheduler.Scheduler`)."""
        nxt = self.events[self.next] if self.next < len(self.events) else None
        self.diverge(nxt, None, reason)

    def check_complete(self) -> None:
        """After the run: every recorded event (up to ``until``) must have happened."""
        if not self.finished.is_set() and self.next < self.until_index:
            missing = self.events[self.next]
            self.diverge(missing, None, f"{missing.kind} ({missing.actor}) never happened")

    @property
    def reproduced(self) -> int:
        """How many recorded events happened again."""
        return self.next


def _loads(line: bytes) -> Any:
    # Integers past 64 bits exact, as the trace's loader reads them.
    return loads(line)
