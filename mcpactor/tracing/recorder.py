"""Recording a Trio run's sessions: one :class:`Recorder` per run.

A recorder is every followed session's tracer (their events), and it records what
decided the run besides their inputs: the order of the followed tasks' steps with the
loop's clock (:mod:`.schedule`) and the clock and entropy values the followed tasks read
(:mod:`.entropy`). Everything is one stream of compact tuples, appended as it happens —
the session's per-message cost is a ``list.append`` and a clock reading — and handed in
chunks to an output (:mod:`.sinkclient`) that numbers, redacts, encodes and writes them
elsewhere, without the event loop ever waiting for it.

The file format is described in ``docs/trace-format.md``.

.. code-block:: python

    recorder = Recorder(TraceHeader(role="server", transport="stdio"), path="t.jsonl")
    async with recorder.recording():      # inside trio.run
        await server.serve(transport, tracer=recorder)
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from mcpactor import __version__ as _version
from mcpactor.tracing import entropy
from mcpactor.tracing.redact import DEFAULT_REDACT_KEYS
from mcpactor.tracing.schedule import RecordingScheduler, last_sched_in
from mcpactor.tracing.seeds import clock_kind, fresh_seeds, hash_seed
from mcpactor.tracing.sink import claim_trace_file
from mcpactor.tracing.sinkclient import (
    DRAIN_TIMEOUT,
    MemoryOutput,
    ProcessOutput,
    ThreadOutput,
    open_output,
    writer_mode,
)
from mcpactor.tracing.tasks import TaskRef, TaskTable
from mcpactor.tracing.tracer import WIDTH

__all__ = [
    "TRACE_FORMAT",
    "TRACE_FORMAT_VERSION",
    "MemoryRecorder",
    "Recorder",
    "RecordingError",
    "Rotation",
    "TraceHeader",
]

TRACE_FORMAT = "mcpactor-trace"
TRACE_FORMAT_VERSION = 2
#: Hand the buffer on after CHUNK_ITEMS items (the scheduler checks, once a pass) or this many seconds after the last hand-over (checked by the flusher task), which
#: MCPACTOR_TRACE_FLUSH_SECONDS overrides (the instruction counts of
#: benchmarks/instructions.py run the server 50 times slower under valgrind: there,
#: chunks must fill up as they do at full speed; a malformed value is ignored).
_CHUNK_SECONDS = 0.05
try:
    _CHUNK_SECONDS = max(0.001, float(os.environ.get("MCPACTOR_TRACE_FLUSH_SECONDS", "")))
except ValueError:
    pass
_perf_ns = entropy.real("perf_counter_ns")
_wall = entropy.real("time")


class RecordingError(Exception):
    """A recording cannot start: a bad path, or another recording in the same run."""


@attrs.frozen
class Rotation:
    """When a whole-process trace starts its next segment: after ``max_bytes`` bytes or
    ``max_seconds`` seconds (either; None: no limit)."""

    max_bytes: int | None = None
    max_seconds: float | None = None


@attrs.frozen
class TraceHeader:
    """What the first line of a trace says besides the clock: which side was recorded
    (``role``), over which transport, the code behind it (``entry_point``, ``module:attr``
    or ``path/file.py:attr``), the seed of the recorded tasks' :mod:`random` streams,
    and the keys whose values never reach the file."""

    role: str
    transport: str
    entry_point: str | None = None
    seeds: dict[str, Any] = attrs.Factory(fresh_seeds)
    redacted_keys: list[str] = attrs.Factory(lambda: sorted(DEFAULT_REDACT_KEYS))
    #: (client traces) the connect options that shape the session besides the client
    #: code: ``timeout`` and ``init_timeout``, which a replay uses unless told otherwise.
    client_options: dict[str, Any] | None = None

    def to_json(self, clock: dict[str, Any]) -> dict[str, Any]:
        """The header line's object (``clock``: kind, origin, wall_origin)."""
        extra = {} if self.client_options is None else {"client_options": self.client_options}
        return {
            "type": "header",
            "format": TRACE_FORMAT,
            "format_version": TRACE_FORMAT_VERSION,
            "mcpactor_version": _version,
            "role": self.role,
            "transport": self.transport,
            "entry_point": self.entry_point,
            "seeds": self.seeds,
            "clock": clock,
            "redacted_keys": list(self.redacted_keys),
            "hash_seed": hash_seed(),
            "pid": os.getpid(),
            **extra,
        }


class Recorder:
    """Records the followed sessions of one Trio run (see the module).

    ``path``: the trace file, or with ``split`` a folder that gets one file per session.
    ``writer``: ``"process"`` (the trace sink process), ``"thread"``, or ``"memory"``
    (:meth:`lines`); by default ``MCPACTOR_TRACE_WRITER``, else ``"process"``.
    ``rotation`` starts a new segment of a whole-process file now and then.
    Creating the recorder checks the path (a :class:`RecordingError` names the problem);
    :meth:`recording` (or :meth:`start` and :meth:`aclose`) runs it inside ``trio.run``.
    """

    def __init__(
        self,
        header: TraceHeader,
        path: str | os.PathLike[str] | None = None,
        *,
        split: bool = False,
        writer: str | None = None,
        redact_keys: frozenset[str] | None = None,
        rotation: Rotation | None = None,
    ) -> None:
        keys = frozenset(header.redacted_keys) | (redact_keys or frozenset())
        self.header = attrs.evolve(header, redacted_keys=sorted(keys))
        self.mode = "memory" if writer == "memory" or path is None else writer_mode(writer)
        self.path = None if path is None else Path(path)
        self.split = split
        self.rotation = rotation or Rotation()
        if self.path is not None:
            _check_path(self.path, split)
        #: The records not handed on yet, flat: WIDTH items each, one after the other
        #: (a record is never an object of its own that the garbage collector would
        #: have to follow until the hand-over).
        self._events: list[Any] = []
        #: Append one record, a tuple of WIDTH items (the session's per-message call: a
        #: C function).
        self.log: Callable[[tuple[Any, ...]], None] = self._events.extend
        #: The tasks it follows (the names of those numbered since the last sched record
        #: go in the next one).
        self.tasks = TaskTable(self)
        self._base = 0  # records handed on so far
        self._output: ProcessOutput | ThreadOutput | MemoryOutput | None = None
        self._scheduler: RecordingScheduler | None = None
        self._started = False
        self._closed = False
        self._last_handoff = 0
        self._ticker: _Ticker | None = None
        self._seed = str(self.header.seeds.get("random"))
        #: The seq and run of the latest sched record handed on (RecordingScheduler).
        self._last_sched: tuple[int, tuple[int, ...] | None] = (0, None)
        #: The trace's clock, in nanoseconds: Trio's system clock is perf_counter, read
        #: here directly (a C function, called for every record); a virtual clock is
        #: read through itself (start()).
        self.clock: Callable[[], int] = _perf_ns

    @classmethod
    def at(cls, path: str | os.PathLike[str], header: TraceHeader, *,
           rotation: Rotation | None = None, writer: str | None = None) -> Recorder:
        """A recorder for ``path`` as ``--trace`` takes it: a folder (one that exists,
        or a path ending in ``/``) gets one file per session; anything else is the file
        of a whole-process trace."""
        text = os.fspath(path)
        split = text.endswith(("/", os.sep)) or os.path.isdir(text)
        return cls(header, text, split=split, rotation=rotation, writer=writer)

    # -- the tracer interface -----------------------------------------------------------

    def session_closed(self, session: str) -> None:
        """A followed session ended: in a per-session recording, its file is complete."""
        if self._output is not None and self.split and not self._closed:
            self.handoff()
            self._output.session_closed(session)

    # -- lifetime -----------------------------------------------------------------------

    @asynccontextmanager
    async def recording(self) -> AsyncIterator[Recorder]:
        """Record for the duration of the block (inside ``trio.run``)."""
        self.start()
        try:
            yield self
        finally:
            with trio.CancelScope(shield=True):
                await self.aclose()

    def ensure_started(self) -> None:
        """Called by each session that records here: an in-memory recording starts with
        its first session; a file's must have been started (:meth:`recording`), so that
        its end is waited for."""
        if self._started:
            return
        if self.mode == "memory":
            self.start()
            return
        raise RecordingError(
            f"the recording to {self.path} is not running: record inside "
            "`async with recorder.recording():` (or pass trace=PATH to serve_*/connect_*)")

    def start(self) -> None:
        """Start recording in the current Trio run: the schedule hooks, the entropy
        capture, the header. Raises :class:`RecordingError` if another recording runs."""
        if self._started:
            return
        scheduler = RecordingScheduler.join(self)
        if scheduler is None:
            raise RecordingError(
                f"cannot record this Trio run: this Trio ({trio.__version__}) lacks the "
                "internals the recorder hooks into")
        self._scheduler = scheduler
        self._started = True
        clock = trio.lowlevel.current_clock()
        kind = clock_kind()
        if kind == "virtual":
            # Event times in virtual time, as everything else in such a run.
            inner = getattr(clock, "inner", clock)
            self.clock = lambda: round(inner.current_time() * 1e9)
        self._origin = self.clock()
        clock_info = {"kind": kind, "origin": clock.current_time(),
                      "origin_ns": self._origin, "wall_origin": _wall()}
        seed = self.header.seeds.get("random")
        if isinstance(seed, int):
            # Code that bound random's functions before the capture (``from random import
            # random`` in a module imported earlier) draws from the global generator.
            entropy.global_random().seed(seed)
        spec = {
            "path": str(self.path.resolve()) if self.path is not None else "<memory>",
            "split": self.split,
            "header": self.header.to_json(clock_info),
            "origin": self._origin,
            "keys": list(self.header.redacted_keys),
            "rotate_bytes": self.rotation.max_bytes,
            "rotate_seconds": self.rotation.max_seconds,
        }
        self._output = MemoryOutput(spec) if self.mode == "memory" else open_output(spec, self.mode)
        # The followed tasks' reads reach this recording through their nodes.
        entropy.install()
        entropy.capture_datetime()
        self._last_handoff = _perf_ns()
        if clock_kind() != "virtual":
            # (Under a virtual clock a periodic hand-over would be a wake-up the run does
            # not otherwise have; what a pass hands on, and the end's, are enough there.)
            self._ticker = _Ticker(trio.lowlevel.current_trio_token(), self._tick)
            self._ticker.start()

    async def aclose(self) -> None:
        """Stop recording: hand the rest on and wait (without blocking the loop, within
        a bound) for the output to take it."""
        if self._closed or not self._started:
            self._closed = True
            return
        self._stop()
        assert self._output is not None
        await self._output.drain(DRAIN_TIMEOUT)

    def close(self) -> None:
        """Stop recording now (the output finishes on its own: the sink process, or the
        writer thread, or at this process's exit)."""
        if self._closed or not self._started:
            self._closed = True
            return
        self._stop()

    def _stop(self) -> None:
        self._closed = True
        entropy.uninstall()
        if self._scheduler is not None:
            self._scheduler.leave(self)
        if self._ticker is not None:
            self._ticker.stop()
        self.handoff(last=True)
        assert self._output is not None
        self._output.close()
        # A session still running logs into a list nobody reads.
        self._events = []
        self.log = self._events.extend

    # -- handing on ---------------------------------------------------------------------

    # -- what the scheduler asks ---------------------------------------------------------


    def position(self) -> tuple[int, int] | None:
        """Where the running (unfollowed) task is among this recording's steps."""
        return None if self._scheduler is None else self._scheduler.position(self)

    def handoff(self, *, last: bool = False) -> None:
        """Hand the buffered records to the output (never waits). ``last``: the final
        hand-over, which the output takes whatever its backlog."""
        events = self._events
        n = len(events)
        if self._output is None or not (n or last):
            return
        # Worker threads may append meanwhile (a record at a time): only the first n
        # items, whole records, are taken.
        chunk = events[:n]
        del events[:n]
        first = self._base + 1
        # The latest sched record goes with the chunk; the scheduler's position() needs
        # its seq and run afterwards.
        found = last_sched_in(chunk)
        if found is not None:
            self._last_sched = (first + found[0], found[1])
        self._base += n // WIDTH
        self._last_handoff = _perf_ns()
        self._output.submit(first, chunk, last=last)

    def _tick(self) -> None:
        # Every _CHUNK_SECONDS, in the run's thread (the ticker's call): hands the buffer
        # on when the run has gone quiet (a pass hands it on when it is large), and writes
        # out what the sink's pipe could not take at once.
        if self._closed:
            return
        output = self._output
        if isinstance(output, ProcessOutput) and output.pending:
            output.pump()
        if self._events and _perf_ns() - self._last_handoff >= _CHUNK_SECONDS * 1e9:
            self.handoff()

    # -- the entropy capture ------------------------------------------------------------

    def value(self, node: TaskRef, source: str, real: Callable[..., Any], *args: Any) -> Any:
        """A followed task reads ``source``: the real value, logged."""
        v = real(*args)
        if not node.muted and node.id and not self._closed:
            self._events.extend((0, None, None, "read", node.id, source, v))
        return v

    def seed_for(self, node: TaskRef) -> str:
        """``node``'s :mod:`random` stream's seed: the trace's, and the task's name."""
        return f"{self._seed}:{node.name}"

    def thread_plan(self, node: TaskRef) -> str | None:
        """Live: a thread's wait ends as it ends."""
        return None

    def thread_done(self, node: TaskRef, outcome: str) -> None:
        """How a followed task's wait for a worker thread ended (a ``read``, source
        ``thread``)."""
        if node.id and not self._closed:
            self._events.extend((0, None, None, "read", node.id, "thread", outcome))

    async def wait_turn(self, granted: bool) -> None:
        """Live: never asked (the threads' own limiter decides)."""
        await trio.lowlevel.checkpoint()

    # -- for observability ----------------------------------------------------------------

    def file_for(self, session: str) -> str | None:
        """The file that holds ``session``'s events (None in memory): its own file in a
        per-session recording, else the trace file (a rotated trace's first name)."""
        if self.path is None:
            return None
        if self.split:
            return str(self.path.resolve() / f"{session}.jsonl")
        return str(self.path.resolve())

    def lag(self) -> dict[str, float]:
        """How far the writing is behind (for metrics): records not handed on yet,
        seconds since the last hand-over, bytes the writer has not taken, records lost."""
        out = self._output
        backlog = 0
        sink = getattr(out, "_sink", None)
        if sink is not None:
            backlog = int(getattr(sink, "backlog", 0))
        return {
            "buffered_records": len(self._events) // WIDTH,
            "seconds_since_handoff": (_perf_ns() - self._last_handoff) / 1e9
            if self._started and not self._closed else 0.0,
            "backlog_bytes": backlog,
            "lost": self.lost,
        }

    # -- results ------------------------------------------------------------------------

    @property
    def lost(self) -> int:
        """Records dropped because the output fell behind (0 normally)."""
        return 0 if self._output is None else self._output.lost

    @property
    def writer(self) -> str:
        """Which output writes: ``process``, ``thread`` or ``memory``."""
        out = self._output
        if isinstance(out, ProcessOutput):
            return "thread" if out.in_process else "process"
        return "memory" if isinstance(out, MemoryOutput) or self.mode == "memory" else "thread"

    def lines(self) -> list[bytes]:
        """(Memory recordings) every line so far, the header first."""
        if not isinstance(self._output, MemoryOutput):
            raise RecordingError("only an in-memory recording keeps its lines")
        if not self._closed:
            self.handoff()
        return self._output.lines()

    @property
    def last_seq(self) -> int:
        """The number of the latest record (0 before the first)."""
        return self._base + len(self._events) // WIDTH


class _Ticker(threading.Thread):
    """Calls ``tick`` in a Trio run's thread every ``_CHUNK_SECONDS`` (through the run's
    entry queue), until stopped or the run ends.

    A thread rather than a task asleep in the run: a timer pending in the run's deadline
    heap would cost its loop work on every pass, and the recording's periodic work needs
    none of the run's own time keeping.
    """

    def __init__(self, token: trio.lowlevel.TrioToken, tick: Callable[[], None]) -> None:
        super().__init__(name="mcpactor-trace-ticker", daemon=True)
        self._token = token
        self._tick = tick
        self._stopped = threading.Event()

    def run(self) -> None:
        """Tick until stopped."""
        while not self._stopped.wait(_CHUNK_SECONDS):
            try:
                self._token.run_sync_soon(self._tick, idempotent=True)
            except trio.RunFinishedError:
                return

    def stop(self) -> None:
        """Stop ticking (returns at once)."""
        self._stopped.set()


def _check_path(path: Path, split: bool) -> None:
    # Fail at once, with the reason, rather than in the writer later.
    try:
        if split:
            if path.exists() and not path.is_dir():
                raise RecordingError(f"{path} is a file: a recording of one file per session "
                                     "takes a folder")
            path.mkdir(parents=True, exist_ok=True)
            if not os.access(path, os.W_OK):
                raise RecordingError(f"{path}: the folder is not writable")
        else:
            if path.is_dir():
                raise RecordingError(f"{path} is a folder: a whole-process trace is a file "
                                     "(pass a folder for one file per session)")
            path.parent.mkdir(parents=True, exist_ok=True)
            claim_trace_file(str(path))  # never waits: a FIFO without a reader is refused
    except OSError as exc:
        raise RecordingError(f"{path}: cannot write the trace: {exc.strerror or exc}") from None


class MemoryRecorder(Recorder):
    """A recording kept in memory (tests): ``lines()``, ``events()``."""

    def __init__(self, header: TraceHeader | None = None, *,
                 redact_keys: frozenset[str] | None = None) -> None:
        super().__init__(header or TraceHeader(role="unknown", transport="memory"),
                         writer="memory", redact_keys=redact_keys)

    def events(self) -> list[dict[str, Any]]:
        """Every record so far, decoded (the header excluded)."""
        import orjson

        return [e for e in map(orjson.loads, self.lines()) if e.get("type") != "header"]
