"""Trace recorders: JSONL files (``--trace PATH``) and an in-memory list.

The format is described in ``docs/trace-format.md``. Recording stays off the
per-message path as far as it can: ``emit`` appends one tuple to a list (and sessions
append their most frequent events themselves: :meth:`fast_log`); batches are
numbered, redacted, encoded (:mod:`.encode`) and written elsewhere: by a background
thread (:mod:`.writer`, ``writer="thread"``) or by a trace sink process shared by the
whole process (:mod:`.sinkclient`, ``writer="process"``, which leaves this process one
``marshal.dumps`` per 32 events). Messages arrive as
:class:`~mcpactor.tracing.tracer.EncodedMessage` bytes and are embedded with
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
from mcpactor.tracing.encode import (
    Compact,
    Record,
    encode_block,
    encode_events,
    encode_records,
    to_records,
)
from mcpactor.tracing.redact import DEFAULT_REDACT_KEYS, Redactor
from mcpactor.tracing.seeds import apply_seeds, clock_kind, fresh_seeds
from mcpactor.tracing.writer import BackgroundWriter, TraceWriter, writer_mode

__all__ = [
    "TRACE_FORMAT",
    "TRACE_FORMAT_VERSION",
    "JsonlRecorder",
    "MemoryRecorder",
    "TraceHeader",
    "encode_events",
]

TRACE_FORMAT = "mcpactor-trace"
TRACE_FORMAT_VERSION = 1
#: Hand a batch to the writer thread after this many events (the sink process: see
#: _STAGED_BATCH_EVENTS) ...
_BATCH_EVENTS = 256
#: ... or after this many seconds of wall time, so a live trace is never far behind.
_BATCH_SECONDS = 0.05
#: ... which MCPACTOR_TRACE_FLUSH_SECONDS overrides (a malformed value is ignored). The
#: instruction counts of benchmarks/instructions.py run the server 50 times slower under
#: valgrind: there, batches must fill up as they do at full speed, not go every 50 ms.
try:
    _BATCH_SECONDS = max(0.0, float(os.environ.get("MCPACTOR_TRACE_FLUSH_SECONDS", "")))
except ValueError:
    pass
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
    #: (client traces) the connect options that shape the session besides the client
    #: code: ``timeout`` and ``init_timeout``, which a replay uses unless told otherwise.
    client_options: dict[str, Any] | None = None

    def to_json(self, clock: dict[str, Any]) -> dict[str, Any]:
        """The header line's JSON object (``clock``: kind, origin, wall_origin)."""
        extra = {} if self.client_options is None else {"client_options": self.client_options}
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
            **extra,
        }


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


#: The type of Trio's default clock. It has no public name: should a Trio release move
#: it, every clock is read through its own method, as any other clock is.
_SYSTEM_CLOCK: type | None
try:
    from trio._core._run import SystemClock as _TrioSystemClock
except ImportError:  # pragma: no cover - depends on Trio's internals
    _SYSTEM_CLOCK = None
else:
    _SYSTEM_CLOCK = _TrioSystemClock
#: Every this many events a recorder whose writer can encode ahead (the sink process's)
#: hands them over to be encoded, and keeps only the bytes until the batch goes: the
#: session pays for encoding in small steps rather than one long stall per batch.
_STAGE_EVENTS = 32
#: A batch for a writer that takes staged events: its encoding is spread over the stages
#: already, so a batch only carries the hand-off's fixed costs (a pipe write, a wake-up
#: of the sink, its answer), paid a quarter as often as with 256 (same-run A/B: 2-4
#: points less recording cost).
_STAGED_BATCH_EVENTS = 1024
#: Kinds that complete the header (checked with one set lookup per event).
_HEADER_KINDS = frozenset({"initialized", "session_started"})
#: Kinds that need more than an append.
_RARE = _URGENT | _HEADER_KINDS


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
        #: Events not yet handed on, as :data:`Compact` tuples. One list for the
        #: recorder's life (emptied in place): :meth:`fast_log` hands out its append.
        self._events: list[Compact] = []
        self._staged = 0  # events handed to the writer ahead of their batch (_stage)
        self._batch_events = _BATCH_EVENTS
        #: Events numbered so far and handed on: the next in _events is number _base + 1.
        self._base = 0
        self._wall_origin = wall_origin
        self._origin = 0
        self._clock: dict[str, Any] = {}
        # Until the clock starts, reading it starts it (and reads 0): emit() never has to
        # ask whether the clock runs. Readings are integer nanoseconds.
        self._time: Callable[[], int] = self._first_time
        if _in_trio():
            self._start_clock()
        self._header_done = False
        #: Batches may be handed on: the header is complete (or written).
        self._ready = header.protocol_version is not None
        self._last_handoff = time.monotonic()
        self._closed = False

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record one event (see :class:`mcpactor.tracing.Tracer`).

        ``data`` is kept as it is, not copied: callers pass a fresh dict per event.
        """
        if self._closed:
            return
        events = self._events
        # Numbers and times are worked out when the events are handed on (_records):
        # here, one clock read in integer nanoseconds (a first read sets the origin).
        events.append((self._time(), session, actor, kind, data))
        # A batch is handed on at 256 events (1,024 staged), at once after an urgent kind,
        # and after _BATCH_SECONDS; the wall clock is read every 32 events only (a clock
        # read per event would cost more than the event). One set lookup covers the rare
        # kinds.
        if kind in _RARE or not len(events) & 31:
            if kind in _HEADER_KINDS:
                self._header_event(session, kind, data)
            self._maybe_flush(kind)

    def fast_log(self) -> tuple[Callable[[Compact], None], Callable[[], int]] | None:
        """The per-message fast path, for a session's most frequent events: ``(log,
        clock)``, where ``log((clock(), session, actor, kind, data))`` records an event as
        ``emit`` would, without a Python call of its own (both are C functions on Trio's
        system clock). Only for kinds that need nothing but an append (not the header or
        urgent kinds); the caller calls :meth:`tick` now and then (after each message).
        None when closed. Starts the clock.
        """
        if self._closed:
            return None
        if self._time == self._first_time:
            self._start_clock()
        return self._events.append, self._time

    def tick(self) -> None:
        """Let events recorded through :meth:`fast_log` be handed on, as ``emit`` does
        every 32 events."""
        if len(self._events) >= _STAGE_EVENTS and not self._closed:
            self._maybe_flush("")

    def _maybe_flush(self, kind: str) -> None:
        n = len(self._events)
        if n + self._staged >= self._batch_events:
            self.flush()
        elif self._ready and (
            kind in _URGENT or (
                not n & 31 and time.monotonic() - self._last_handoff >= _BATCH_SECONDS)
        ):
            # Held back until the protocol version is known (it is negotiated a few events
            # in), unless the batch grows large first.
            self.flush()
        elif n >= _STAGE_EVENTS and self._stage(self._events, self._base + 1, self._origin):
            self._staged += n
            self._base += n
            self._events.clear()
            self._batch_events = _STAGED_BATCH_EVENTS

    def _stage(self, events: list[Compact], first_seq: int, origin: int) -> bool:
        """Have ``events`` (numbered from ``first_seq``, timed from ``origin``) taken
        ahead of their batch; False: they stay here."""
        return False

    def _records(self) -> list[Record]:
        """The events not yet handed on, numbered and timed; the buffer is emptied."""
        events = self._events
        records = to_records(events, self._base + 1, self._origin)
        self._base += len(events)
        events.clear()
        return records

    def _header_event(self, session: str, kind: str, data: dict[str, Any]) -> None:
        if kind == "initialized" and self.header.protocol_version is None:
            self.header = attrs.evolve(self.header, protocol_version=data.get("protocol_version"))
            self._ready = self._header_done or self.header.protocol_version is not None
        elif kind == "session_started" and self.header.session is None:
            self.header = attrs.evolve(self.header, session=session)

    def _first_time(self) -> int:
        self._start_clock()
        return self._origin

    def _start_clock(self) -> None:
        # Times count from the recorder's creation inside a Trio run, or from its first
        # event when it was made outside one (its clock may be a MockClock). The clock's
        # own method is kept: trio.current_time() walks three layers on every call.
        origin: float
        if not _in_trio():
            self._time = time.monotonic_ns
            self._origin = self._time()
            origin = self._origin / 1e9
        else:
            clock = trio.lowlevel.current_clock()
            origin = clock.current_time()
            if type(clock) is _SYSTEM_CLOCK:
                # Trio's own clock is perf_counter() plus a constant: reading
                # perf_counter_ns directly saves a Python call per event, and differences
                # from the origin are the same. The header keeps the Trio reading.
                self._time = time.perf_counter_ns
            else:
                read = clock.current_time
                self._time = lambda: round(read() * 1e9)
            self._origin = self._time()
        wall = time.time() if self._wall_origin is None else self._wall_origin
        self._clock = {"kind": clock_kind(), "origin": origin, "wall_origin": wall}

    @property
    def last_seq(self) -> int:
        """The sequence number of the latest event (0 before the first)."""
        return self._base + len(self._events)

    def _take(self) -> tuple[list[bytes], list[Record]]:
        prefix: list[bytes] = []
        if not self._header_done:
            self._header_done = self._ready = True
            if not self._clock:
                self._start_clock()
            prefix.append(orjson.dumps(self.header.to_json(self._clock)))
        events = self._records()
        self._staged = 0
        self._last_handoff = time.monotonic()
        return prefix, events

    def flush(self) -> None:
        """Hand buffered events to the output."""

    def close(self) -> None:
        """Flush and stop recording."""
        if not self._closed:
            self.flush()
            self._closed = True
            # A fast_log handed out appends to the old list, which nothing reads now.
            self._events = []


class JsonlRecorder(_BufferedRecorder):
    """Writes a trace to ``path`` as JSON Lines: a header, then one event per line.

    Creating the recorder applies the header's seeds (fresh ones unless given), so the
    recorded run and its replays share Trio's scheduling seed and ``random``'s state.
    ``redact_keys`` adds secret keys to the defaults. ``writer`` chooses who encodes and
    writes: ``"thread"`` (a background thread of this process) or ``"process"`` (the trace
    sink process, falling back to a thread if it cannot start or dies); by default the
    ``MCPACTOR_TRACE_WRITER`` environment variable, else ``"thread"``. Both write the
    same bytes; :attr:`writer` tells which one is in use.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: TraceHeader,
        *,
        redact_keys: frozenset[str] | None = None,
        apply_header_seeds: bool = True,
        writer: str | None = None,
    ) -> None:
        mode = writer_mode(writer)
        super().__init__(header, redact_keys)
        if apply_header_seeds:
            apply_seeds(self.header.seeds)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Opened here in either mode, so that a bad path fails the caller right away.
        file = open(self.path, "wb")
        self._writer: TraceWriter
        if mode == "process":
            try:
                from mcpactor.tracing.sinkclient import open_process_writer
            except ImportError:  # no fcntl/select on pipes (Windows): the thread writes
                pw = None
            else:
                pw = open_process_writer(self.path, self.redactor.keys)
            if pw is not None:
                file.close()
                self._writer, self.writer = pw, "process"
                return
        redactor = self.redactor
        self._writer = BackgroundWriter(file, lambda events: encode_block(events, redactor))
        self.writer = "thread"

    def _stage(self, events: list[Compact], first_seq: int, origin: int) -> bool:
        return self._writer.stage(events, first_seq, origin)

    def flush(self) -> None:
        """Hand buffered events to the writer."""
        if self._events and self._staged and self._stage(
                self._events, self._base + 1, self._origin):
            # The rest of a staged batch goes the way the others went.
            self._base += len(self._events)
            self._events.clear()
        staged = self._staged
        prefix, events = self._take()
        if prefix or events or staged:
            self._writer.submit(prefix, events)

    def close(self) -> None:
        """Flush, wait until the writer has written everything, close the file."""
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
        self.lines.extend(encode_records(events, self.redactor))

    def events(self) -> list[dict[str, Any]]:
        """Every event so far, decoded (the header excluded)."""
        self.flush()
        return [e for e in map(orjson.loads, self.lines) if e.get("type") != "header"]
