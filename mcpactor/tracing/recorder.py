"""Trace recorders: JSONL files (``--trace PATH``) and an in-memory list.

The format is described in ``docs/trace-format.md``. Recording stays off the
per-message path as far as it can: ``emit`` appends a small dict to a list; batches are
redacted, encoded and written by a background thread (:mod:`.writer`). Messages arrive
as :class:`~mcpactor.tracing.tracer.EncodedMessage` bytes and are embedded with
``orjson.Fragment`` — never decoded and encoded again, unless they may hold a secret.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from mcpactor import __version__ as _version
from mcpactor.tracing.redact import DEFAULT_REDACT_KEYS, REDACTED, Redactor
from mcpactor.tracing.seeds import apply_seeds, clock_kind, fresh_seeds
from mcpactor.tracing.tracer import EncodedMessage
from mcpactor.tracing.writer import BackgroundWriter

TRACE_FORMAT = "mcpactor-trace"
TRACE_FORMAT_VERSION = 1
#: Hand a batch to the writer thread after this many events ...
_BATCH_EVENTS = 256
#: ... or after this many seconds of wall time, so a live trace is never far behind.
_BATCH_SECONDS = 0.05
#: ... or at once for these: rare events after which a session often goes quiet or dies
#: (a process killed while draining must not take the story of its end with it).
_URGENT = frozenset({
    "transport_closed", "transport_broken", "draining", "cancel_applied", "handler_failed",
    "actor_failed", "actor_stopped", "session_closed",
})


@attrs.frozen
class TraceHeader:
    """The first line of a trace: what is needed to replay the rest.

    ``entry_point`` names the server code (``module:attr`` or ``path/file.py:attr``);
    ``seeds`` are applied when recording starts (fresh ones by default);
    ``redacted_keys`` are the keys whose values never reach the trace.
    """

    role: str
    transport: str
    entry_point: str | None = None
    protocol_version: str | None = None
    session: str | None = None
    seeds: dict[str, Any] = attrs.Factory(fresh_seeds)
    redacted_keys: list[str] = attrs.Factory(lambda: sorted(DEFAULT_REDACT_KEYS))

    def to_json(self, clock: dict[str, Any]) -> dict[str, Any]:
        """The header line's JSON object (``clock``: kind, origin, wall_origin)."""
        return {
            "type": "header",
            "format": TRACE_FORMAT,
            "format_version": TRACE_FORMAT_VERSION,
            "mcpactor_version": _version,
            "protocol_version": self.protocol_version,
            "role": self.role,
            "transport": self.transport,
            "entry_point": self.entry_point,
            "session": self.session,
            "seeds": self.seeds,
            "clock": clock,
            "redacted_keys": list(self.redacted_keys),
        }


#: Keys every event has, set by the runtime itself: never secrets, never scanned.
_STRUCTURAL = frozenset({"seq", "t", "session", "actor", "kind"})


def _in_trio() -> bool:
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    return True


def _now() -> float:
    try:
        return trio.current_time()
    except RuntimeError:
        return time.monotonic()


_PLAIN_TYPES = (int, float, bool, type(None))
#: Event kinds whose fields are ids, counters, durations and protocol outcomes only.
_NO_FREE_TEXT = frozenset({
    "handler_started", "handler_finished", "timer_set", "timer_reset", "timer_fired",
    "actor_started", "actor_stopped", "progress_dropped", "session_started",
    "transport_opened", "draining",
})
#: seq, t, session, actor, kind, msg, related.
_MESSAGE_EVENT_SIZE = 7


def encode_events(events: list[dict[str, Any]], redactor: Redactor) -> list[bytes]:
    """Encode events as JSON lines, redacting secrets (used by every recorder)."""
    dumps = orjson.dumps
    fragment = orjson.Fragment
    out: list[bytes] = []
    plain = _PLAIN_TYPES
    is_secret_key = redactor.is_secret_key
    might_hold = redactor.might_hold_secret
    for ev in events:
        t = ev.get("t")
        if type(t) is float:
            ev["t"] = round(t, 9)
        kind = ev.get("kind")
        if kind in _NO_FREE_TEXT:
            # Identifiers, counters and outcomes only: nothing there can be a secret.
            out.append(dumps(ev))
            continue
        msg = ev.get("msg")
        if type(msg) is EncodedMessage and len(ev) <= _MESSAGE_EVENT_SIZE and not might_hold(msg.data):
            # The common message event: the exact bytes, embedded without decoding.
            ev["msg"] = fragment(msg.data)
            out.append(dumps(ev))
            continue
        # Fast path, most other events: numbers, flags and short protocol strings that carry
        # no credential are encoded as they are, without building a redacted copy.
        for key, value in ev.items():
            if type(value) in plain or key in _STRUCTURAL:
                continue
            if type(value) is str and not is_secret_key(key) and not redactor.text_might_hold_secret(value):
                continue
            break
        else:
            out.append(dumps(ev))
            continue
        fixed: dict[str, Any] = {}
        for key, value in ev.items():
            if key in _STRUCTURAL:
                fixed[key] = value
                continue
            if type(value) is EncodedMessage:
                data = value.data
                if redactor.might_hold_secret(data):
                    try:
                        value, _ = redactor.redact(orjson.loads(data))
                    except orjson.JSONDecodeError:
                        value = redactor.redact_text(data.decode("utf-8", "replace"))
                else:
                    value = fragment(data)
            elif value is not None and redactor.is_secret_key(key):
                value = REDACTED
            elif key == "raw" and isinstance(value, str):
                value = redactor.redact_text(value)
            elif isinstance(value, dict | list | str):
                value, _ = redactor.redact(value)
            fixed[key] = value
        try:
            out.append(dumps(fixed))
        except TypeError:
            out.append(dumps({k: v if _jsonable(v) else repr(v) for k, v in fixed.items()}))
    return out


def _jsonable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


class _BufferedRecorder:
    """Numbering, timing and batching shared by the recorders."""

    def __init__(
        self,
        header: TraceHeader,
        redact_keys: frozenset[str] | None,
        wall_origin: float | None = None,
    ) -> None:
        keys = frozenset(header.redacted_keys) | (redact_keys or frozenset())
        self.header = attrs.evolve(header, redacted_keys=sorted(keys))
        self.redactor = Redactor(keys)
        self._events: list[dict[str, Any]] = []
        self._seq = 0
        self._wall_origin = wall_origin
        self._origin = 0.0
        self._clock: dict[str, Any] = {}
        self._time: Callable[[], float] = _now
        if _in_trio():
            self._start_clock()
        self._header_done = False
        self._last_handoff = time.monotonic()
        self._closed = False

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record one event (see :class:`mcpactor.tracing.Tracer`)."""
        if self._closed:
            return
        self._seq += 1
        if kind == "initialized" and self.header.protocol_version is None:
            self.header = attrs.evolve(self.header, protocol_version=data.get("protocol_version"))
        if kind == "session_started" and self.header.session is None:
            self.header = attrs.evolve(self.header, session=session)
        ev = {
            "seq": self._seq,
            # Rounded when encoded, on the writer's side, not here on the hot path.
            "t": self._time() - self._origin if self._clock else self._start_clock(),
            "session": session,
            "actor": actor,
            "kind": kind,
        }
        ev.update(data)
        events = self._events
        events.append(ev)
        # Hold the header back until the protocol version is known (it is negotiated a
        # few events in), unless the batch grows large first. The wall-clock check runs
        # every 32 events: a clock read per event would cost more than the event.
        if self._header_done or self.header.protocol_version is not None:
            n = len(events)
            if n >= _BATCH_EVENTS or kind in _URGENT or (
                n % 32 == 0 and time.monotonic() - self._last_handoff >= _BATCH_SECONDS
            ):
                self.flush()
        elif len(self._events) >= _BATCH_EVENTS:
            self.flush()

    def _start_clock(self) -> float:
        # Times count from the recorder's creation inside a Trio run, or from its first
        # event when it was made outside one (its clock may be a MockClock). The clock's
        # own method is kept: trio.current_time() walks three layers on every call.
        self._time = trio.lowlevel.current_clock().current_time if _in_trio() else time.monotonic
        self._origin = self._time()
        wall = time.time() if self._wall_origin is None else self._wall_origin
        self._clock = {"kind": clock_kind(), "origin": self._origin, "wall_origin": wall}
        return 0.0

    @property
    def last_seq(self) -> int:
        """The sequence number of the latest event (0 before the first)."""
        return self._seq

    def _take(self) -> tuple[list[bytes], list[dict[str, Any]]]:
        prefix: list[bytes] = []
        if not self._header_done:
            self._header_done = True
            if not self._clock:
                self._start_clock()
            prefix.append(orjson.dumps(self.header.to_json(self._clock)))
        events, self._events = self._events, []
        self._last_handoff = time.monotonic()
        return prefix, events

    def flush(self) -> None:
        """Hand buffered events to the output."""

    def close(self) -> None:
        """Flush and stop recording."""
        if not self._closed:
            self.flush()
            self._closed = True


class JsonlRecorder(_BufferedRecorder):
    """Writes a trace to ``path`` as JSON Lines: a header, then one event per line.

    Creating the recorder applies the header's seeds (fresh ones unless given), so the
    recorded run and its replays share Trio's scheduling seed and ``random``'s state.
    ``redact_keys`` adds secret keys to the defaults.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: TraceHeader,
        *,
        redact_keys: frozenset[str] | None = None,
        apply_header_seeds: bool = True,
    ) -> None:
        super().__init__(header, redact_keys)
        if apply_header_seeds:
            apply_seeds(self.header.seeds)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        redactor = self.redactor
        self._writer = BackgroundWriter(
            open(self.path, "wb"), lambda events: encode_events(events, redactor)
        )

    def flush(self) -> None:
        """Hand buffered events to the writer thread."""
        prefix, events = self._take()
        if prefix or events:
            self._writer.submit(prefix, events)

    def close(self) -> None:
        """Flush, wait for the writer thread, close the file."""
        if not self._closed:
            super().close()
            self._writer.close()


class MemoryRecorder(_BufferedRecorder):
    """Keeps the trace in memory as JSON lines (tests, the replayer's output stream).

    ``wall_origin`` fixes the header's wall-clock origin (the replayer passes the
    recorded one so that its output is byte-identical from run to run).
    """

    def __init__(
        self,
        header: TraceHeader | None = None,
        *,
        redact_keys: frozenset[str] | None = None,
        wall_origin: float | None = None,
    ) -> None:
        super().__init__(
            header or TraceHeader(role="unknown", transport="memory"), redact_keys, wall_origin
        )
        self.lines: list[bytes] = []

    def flush(self) -> None:
        """Encode buffered events into :attr:`lines` (synchronously)."""
        prefix, events = self._take()
        self.lines.extend(prefix)
        self.lines.extend(encode_events(events, self.redactor))

    def events(self) -> list[dict[str, Any]]:
        """Every event so far, decoded (the header excluded)."""
        self.flush()
        return [e for e in map(orjson.loads, self.lines) if e.get("type") != "header"]
