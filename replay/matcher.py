"""Matching a replayed session's events against the recording, as they happen.

The :class:`Matcher` is the replayed session's tracer. Each event the real code emits
is compared at once with the next recorded event of the same actor stream (see
:func:`replay.trace.stream_key`); the first mismatch stops the replay. The matcher also
knows how far the replay has got — every recorded event before index ``low`` has been
reproduced — which is what the replay transport waits on before delivering an input.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import attrs
import trio

from mcpactor.tracing.encode import dumps, encode_events, loads, message_bytes, to_event
from mcpactor.tracing.redact import Redactor
from mcpactor.tracing.tracer import Compact

from .jsondiff import json_diff
from .trace import VOLATILE_KEYS, Event, Trace, stream_key

_SCALARS = frozenset({str, int, float, bool})
_STRUCTURAL = frozenset({"seq", "t", "session", "actor", "kind"})

#: How many recorded events before a divergence the report shows.
CONTEXT_EVENTS = 6

StepHook = Callable[[Event, dict[str, Any]], None]
BreakHook = Callable[[Event], None]


@attrs.frozen
class Divergence:
    """The first point where the replay differs from the recording.

    ``expected`` is the recorded event (None: the replay produced an event the
    recording does not have); ``actual`` the replayed one (None: it never happened).
    """

    seq: int | None
    reason: str
    expected: dict[str, Any] | None
    actual: dict[str, Any] | None
    diff: tuple[str, ...]
    context: tuple[dict[str, Any], ...]


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``; floats are equal within the trace's 1 ns
    resolution (a duration computed from virtual times can differ from the live one in
    the last bit); key order does not matter."""
    ta, tb = type(a), type(b)
    if ta is dict:
        return tb is dict and a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if ta is list:
        return tb is list and len(a) == len(b) and all(map(same_json, a, b))
    if ta is float or tb is float:
        if ta not in (int, float) or tb not in (int, float):
            return False
        return bool(a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)))
    return ta is tb and bool(a == b)


#: What a version-1 recording said of a transport that a replay's events say otherwise
#: (``buffered`` then, ``yields`` now): not compared.
_TRANSPORT_KEYS = frozenset({"buffered", "yields"})
#: Kinds a version-1 recording never has (a replay of one does not compare them).
_NEWER_KINDS = frozenset({"close_requested", "receive_cancelled", "send_cancelled", "otel_span"})


def _comparable(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ev.items() if k not in VOLATILE_KEYS and k not in _TRANSPORT_KEYS}


class ReplayLog:
    """The replayed session's own trace lines (a version-1 replay's output)."""

    def __init__(self, header: dict[str, Any], redact_keys: frozenset[str]) -> None:
        self.redactor = Redactor(redact_keys)
        self.lines: list[bytes] = [dumps({**header, "replay": True})]
        self.last_seq = 0

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Add one event as a line."""
        self.last_seq += 1
        now = round(trio.current_time(), 9)
        ev = {"seq": self.last_seq, "t": now, "session": session, "actor": actor, "kind": kind,
              **data}
        self.lines.extend(encode_events([ev], self.redactor))

    def close(self) -> None:
        """Nothing to flush."""


class Matcher:
    """Tracer of the replayed session: records its output and checks every event."""

    def __init__(
        self,
        trace: Trace,
        recorder: ReplayLog,
        *,
        until: int | None = None,
        on_step: StepHook | None = None,
        on_break: BreakHook | None = None,
        break_at: int | None = None,
        strict: bool = False,
        coin_count: Callable[[], int] | None = None,
    ) -> None:
        self.trace = trace
        self.strict = strict
        self._coin_count = coin_count
        #: How many scheduler coin flips had happened when the replay diverged.
        self.diverged_at_coin: int | None = None
        self.events = trace.events
        self.recorder = recorder
        self.on_step = on_step
        self.on_break = on_break
        self.break_at = break_at
        self._expected = [ev.comparable() for ev in self.events]
        self._streams: dict[str, list[int]] = defaultdict(list)
        for ev in self.events:
            self._streams[ev.stream].append(ev.index)
        self._pos: dict[str, int] = defaultdict(int)
        self._matched = bytearray(len(self.events))
        #: Every recorded event before this index has been reproduced.
        self.low = 0
        self.reproduced = 0
        self.divergence: Divergence | None = None
        self.finished = False
        self.scope: trio.CancelScope | None = None
        self._lot = trio.lowlevel.ParkingLot()
        self._until_index = self._index_after(until)
        self._broke = False

    def _index_after(self, seq: int | None) -> int | None:
        if seq is None:
            return None
        return sum(1 for ev in self.events if ev.seq <= seq)

    # -- the Tracer interface -------------------------------------------------------------

    def log(self, compact: Compact, /) -> None:
        """Take one event (see mcpactor.tracing.tracer) and compare it."""
        if compact[3] in _NEWER_KINDS:
            return
        ev = to_event(compact, 0, 0)
        data = {k: v for k, v in ev.items() if k not in ("seq", "t", "session", "actor", "kind")}
        self.emit(str(ev["session"]), str(ev["actor"]), str(ev["kind"]), data)

    def clock(self) -> int:
        """The virtual clock, in nanoseconds."""
        return round(trio.current_time() * 1e9)

    def session_closed(self, session: str) -> None:
        """Nothing to close."""

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record the replayed event and compare it with the recording."""
        self.recorder.emit(session, actor, kind, data)
        if self.finished:
            return
        now = round(trio.current_time(), 9)
        ev = {"seq": self.recorder.last_seq, "t": now, "session": session, "actor": actor,
              "kind": kind, **data}
        actual = self._normalize(ev)
        key = stream_key(actor, actual)
        stream = self._streams.get(key, [])
        i = self._pos[key]
        if self.strict and self.low < len(self.events) and self.events[self.low].stream != key:
            # Exact mode: the actors must also interleave as recorded.
            nxt = self.events[self.low]
            self.diverge(nxt, actual, f"order: {kind} ({actor}) happened where the recording "
                         f"has {nxt.kind} ({nxt.actor})")
            return
        if i >= len(stream):
            self.diverge(None, actual, f"the replay produced a {kind} event ({actor}) "
                         "that the recording does not have")
            return
        expected = self.events[stream[i]]
        if not same_json(self._expected[expected.index], _comparable(actual)):
            self.diverge(expected, actual, f"{expected.kind} ({expected.actor}) differs")
            return
        self._pos[key] = i + 1
        self._matched[expected.index] = 1
        self.reproduced += 1
        while self.low < len(self.events) and self._matched[self.low]:
            self.low += 1
        if self.on_step is not None:
            self.on_step(expected, actual)
        if self._until_index is not None and self.low >= self._until_index:
            self.stop()
            return
        self._maybe_break()
        self._lot.unpark_all()

    def _normalize(self, ev: dict[str, Any]) -> dict[str, Any]:
        """The event exactly as a recording would have written it (redacted, JSON types).

        Most events hold only scalars and at most one encoded message; those are built
        directly. Anything else takes the recorder's own encode-and-decode path.
        """
        redactor = self.recorder.redactor
        out: dict[str, Any] = {}
        for key, value in ev.items():
            if key in _STRUCTURAL:
                out[key] = value
                continue
            if key == "raw":  # input that is not JSON: the recorder's own keys for it
                return self._slow_normalize(ev)
            raw = message_bytes(value)
            if raw is not None:
                try:
                    decoded = loads(raw)
                except ValueError:
                    return self._slow_normalize(ev)
                if redactor.might_hold_secret(raw):
                    decoded, _ = redactor.redact(decoded)
                out[key] = decoded
            elif value is None or type(value) in _SCALARS:
                if value is not None and redactor.is_secret_key(key):
                    return self._slow_normalize(ev)
                if type(value) is str and redactor.might_hold_secret(value.encode()):
                    return self._slow_normalize(ev)
                out[key] = value
            else:
                return self._slow_normalize(ev)
        return out

    def _slow_normalize(self, ev: dict[str, Any]) -> dict[str, Any]:
        decoded: dict[str, Any] = loads(encode_events([ev], self.recorder.redactor)[0])
        return decoded

    def close(self) -> None:
        """The session ended: flush the output."""
        self.recorder.close()

    # -- control ----------------------------------------------------------------------

    def _maybe_break(self) -> None:
        if self.break_at is None or self._broke or self.low >= len(self.events):
            return
        nxt = self.events[self.low]
        if nxt.seq >= self.break_at and not nxt.is_input:
            self._broke = True
            if self.on_break is not None:
                self.on_break(nxt)

    def before_input(self, ev: Event) -> None:
        """Called just before an input is delivered (for ``--break-at``)."""
        if self.break_at is not None and not self._broke and ev.seq >= self.break_at:
            self._broke = True
            if self.on_break is not None:
                self.on_break(ev)

    def diverge(self, expected: Event | None, actual: dict[str, Any] | None, reason: str) -> None:
        """Record the first divergence and stop the replay."""
        if self.divergence is not None:
            return
        if self._coin_count is not None:
            self.diverged_at_coin = self._coin_count()
        at = expected.index if expected is not None else self.low
        context = tuple(e.data for e in self.events[max(0, at - CONTEXT_EVENTS):at])
        exp = expected.data if expected is not None else None
        diff: list[str] = []
        if exp is not None and actual is not None:
            diff = json_diff(_comparable(exp), _comparable(actual))
        seq = expected.seq if expected is not None else (
            self.events[self.low].seq if self.low < len(self.events) else None
        )
        self.divergence = Divergence(seq, reason, exp, actual, tuple(diff), context)
        self.stop()

    def stop(self) -> None:
        """End the replay now (a divergence, ``--until``, or nothing left to replay)."""
        self.finished = True
        self._lot.unpark_all()
        if self.scope is not None:
            self.scope.cancel()

    def check_complete(self) -> None:
        """After the session ended by itself: every recorded event must have happened."""
        if not self.finished and self.low < len(self.events):
            missing = self.events[self.low]
            self.diverge(missing, None, f"{missing.kind} ({missing.actor}) never happened")

    # -- waiting, for the transport ------------------------------------------------------

    async def wait_reproduced(self, index: int, grace: float) -> bool:
        """Wait until every recorded event before ``index`` has been reproduced.

        While other tasks are runnable this yields once per scheduler batch, so the
        waiting task stays in step with them — it can run right after the event it
        waits for, in the same batch, as a task woken by a ready message would have
        live. When everything else is blocked it sleeps (letting the virtual clock
        jump) until an event arrives. False if the replay stopped, or stalled: the
        next expected event did not happen within ``grace`` virtual seconds of its
        recorded time (a divergence).
        """
        origin = 0.0  # the replay's virtual clock starts at 0, like the recorded times
        while self.low < index:
            if self.finished:
                return False
            if trio.lowlevel.current_statistics().tasks_runnable > 0:
                await trio.lowlevel.checkpoint()
                continue
            nxt = self.events[self.low]
            deadline = max(trio.current_time(), origin + nxt.t) + grace
            with trio.move_on_at(deadline) as timer:
                await self._lot.park()
            if timer.cancelled_caught and self.low < index and not self.finished:
                self.diverge(nxt, None, f"{nxt.kind} ({nxt.actor}) never happened: "
                             f"the replay stalled for {grace:g} virtual seconds")
                return False
        return not self.finished

    def next_in_stream(self, key: str) -> Event | None:
        """The next recorded event of stream ``key`` not yet reproduced."""
        stream = self._streams.get(key, [])
        i = self._pos[key]
        return self.events[stream[i]] if i < len(stream) else None

    @property
    def end_index(self) -> int:
        """Index past the last event to replay (``--until`` or the whole trace)."""
        if self._until_index is None:
            return len(self.events)
        return min(self._until_index, len(self.events))
