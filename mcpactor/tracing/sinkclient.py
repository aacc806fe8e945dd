"""Handing trace chunks to their writer without ever making the event loop wait.

Three outputs take chunks of compact events (``submit(first_seq, events)``) from a
:class:`~mcpactor.tracing.recorder.Recorder`:

- :class:`ProcessOutput` (the default): the trace sink process (:mod:`.sink`), one per
  recording process, shared by every recording in it. A chunk is one ``marshal.dumps``
  (C) and a write to a non-blocking pipe; what the pipe cannot take now waits in an
  outbox that a task of the recording's Trio run writes out as the pipe drains. Encoding
  happens in the sink, on the other core or in the gaps this process leaves.
- :class:`ThreadOutput`: a writer thread of this process (where no sink can run, or
  after the sink died). Encoding then shares the GIL with the event loop.
- :class:`MemoryOutput`: encodes at once, into memory (tests, the replayer's output).

Nothing here blocks the Trio thread. A writer that falls too far behind (its backlog
over :data:`MAX_BACKLOG_BYTES`, or :data:`MAX_BACKLOG_EVENTS` for the thread) loses
chunks instead: the next chunk that gets through is preceded by a ``trace_truncated``
record saying which events are missing, and the recorder counts them
(:attr:`Recorder.lost`). If the sink process dies, the recording goes on in a thread of
this process, appending to the same files after their last complete line (a
``trace_truncated`` record covers what the sink had not written).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import marshal
import os
import queue
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson

import mcpactor
from mcpactor.tracing import entropy, hooks
from mcpactor.tracing.sink import (
    FRAME,
    OP_CHUNK,
    OP_END,
    OP_OPEN,
    OP_PACKED,
    OP_SESSION,
    MemoryFiles,
    SinkCore,
    chunk_or_declare,
)
from mcpactor.tracing.tracer import WIDTH

__all__ = [
    "MAX_BACKLOG_BYTES",
    "MAX_BACKLOG_EVENTS",
    "MemoryOutput",
    "ProcessOutput",
    "ThreadOutput",
    "open_output",
    "writer_mode",
]

#: Bytes a recording may have waiting for the sink's pipe before chunks are dropped.
MAX_BACKLOG_BYTES = 64 << 20
#: Events the writer thread may have queued before chunks are dropped.
MAX_BACKLOG_EVENTS = 1_000_000
#: How long the end of a recording waits for its backlog to drain (in a blocking wait
#: after the run, or in the run's last task).
DRAIN_TIMEOUT = 10.0
_F_SETPIPE_SZ = 1031  # Linux: a larger pipe absorbs bursts without an outbox
_PIPE_SIZE = 1 << 20

DEFAULT_WRITER = "process"
#: The real clock: the recording's own waits are never part of what it captures.
_monotonic = entropy.real("monotonic")


def writer_mode(requested: str | None) -> str:
    """``process`` or ``thread``: ``requested``, else ``MCPACTOR_TRACE_WRITER``, else the
    sink process. A bad argument is an error; a bad environment value falls back to the
    default (a typo in the environment must not stop a server from starting)."""
    if requested is not None:
        if requested not in ("process", "thread"):
            raise ValueError(f"trace writer must be 'process' or 'thread', not {requested!r}")
        return requested
    env = os.environ.get("MCPACTOR_TRACE_WRITER", "").strip().lower()
    return env if env in ("process", "thread") else DEFAULT_WRITER


def _marshalable(events: list[Any]) -> list[Any]:
    # Values marshal cannot carry (objects of other classes) as text, as the encoder
    # would write them anyway.
    out: list[Any] = []
    for v in events:
        try:
            marshal.dumps(v)
        except ValueError:
            v = _plain(v)
        out.append(v)
    return out


def _marshal_one(value: Any) -> bytes:
    # What the packer leaves to marshal (ints beyond 64 bits, dicts, lists, ...), as the
    # encoder would write it.
    try:
        return marshal.dumps(value)
    except ValueError:
        return marshal.dumps(_plain(value))


def _packer() -> Any:
    compiled = hooks.native()
    return None if compiled is None else compiled.pack


#: The compiled chunk packer (None: marshal's frames).
_PACK = _packer()


def _plain(value: Any) -> Any:
    if value is None or type(value) in (str, bytes, int, float, bool):
        return value
    if type(value) is dict:
        return {str(k): _plain(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return [_plain(v) for v in value]
    data = getattr(value, "data", None)  # EncodedMessage
    if type(data) is bytes:
        return data
    return repr(value)


class _Backlog:
    """Counting what was dropped, and saying so in the next chunk that gets through."""

    def __init__(self) -> None:
        self.lost = 0
        self._first: int | None = None
        self._pending = 0

    def drop(self, first_seq: int, n: int) -> None:
        if self._first is None:
            self._first = first_seq
        self._pending += n
        self.lost += n

    def mark(self, events: list[Any]) -> list[Any]:
        if self._first is None:
            return events
        marker = (0, None, None, "trace_truncated", self._first, self._pending,
                  "the trace writer fell behind")
        self._first, self._pending = None, 0
        return [*marker, *events]


class MemoryOutput:
    """Encodes each chunk at once into :attr:`files` (name -> lines)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.files = MemoryFiles()
        self.core = SinkCore(spec, files=self.files.open)
        self.lost = 0

    def submit(self, first_seq: int, events: list[Any], *, last: bool = False) -> None:
        """Encode ``events`` now."""
        self.core.chunk(first_seq, events)

    def session_closed(self, sid: str) -> None:
        """Close ``sid``'s file."""
        self.core.session_closed(sid)

    def close(self) -> None:
        """Close the files."""
        self.core.close()

    async def drain(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """Nothing waits."""

    def lines(self) -> list[bytes]:
        """Every line written, of every file, in file order (one file, usually)."""
        return [line for name in sorted(self.files.files) for line in self.files.files[name]]


class ThreadOutput:
    """Encodes and writes in a background thread (``spec`` as :class:`SinkCore` takes)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Any, Any]] = queue.SimpleQueue()
        self._queued = 0
        self._backlog = _Backlog()
        self._spec = spec
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcpactor-trace-writer",
                                        daemon=True)
        self._closed = False
        self._thread.start()

    @property
    def lost(self) -> int:
        """Events dropped because the thread fell behind."""
        return self._backlog.lost

    def submit(self, first_seq: int, events: list[Any], *, last: bool = False) -> None:
        """Queue ``events`` (never waits; ``last``: whatever the backlog)."""
        if self._closed:
            return
        if self._queued + len(events) > MAX_BACKLOG_EVENTS * WIDTH and not last:
            self._backlog.drop(first_seq, len(events) // WIDTH)
            return
        events = self._backlog.mark(events)
        self._queued += len(events)
        self._queue.put(("C", first_seq, events))

    def session_closed(self, sid: str) -> None:
        """Close ``sid``'s file once what came before is written."""
        if not self._closed:
            self._queue.put(("S", sid, None))

    def close(self) -> None:
        """Write what is queued and close the files (in the thread: returns at once)."""
        if not self._closed:
            self._closed = True
            self._queue.put(("E", None, None))

    def join(self, timeout: float = DRAIN_TIMEOUT) -> bool:
        """Wait for the thread to finish (after :meth:`close`); False on timeout."""
        return self._done.wait(timeout)

    async def drain(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """After :meth:`close`: wait, without blocking the event loop, for the thread to
        have written everything."""
        import trio

        await trio.to_thread.run_sync(self._done.wait, timeout, abandon_on_cancel=True)

    def _run(self) -> None:
        try:
            core = SinkCore(self._spec)
        except Exception as exc:
            self.error = exc
            self._done.set()
            return
        try:
            while True:
                op, a, b = self._queue.get()
                try:
                    if op == "C":
                        self._queued -= len(b)
                        chunk_or_declare(core, a, b)
                    elif op == "S":
                        core.session_closed(a)
                    else:
                        break
                except Exception as exc:  # one bad chunk must not stop the rest
                    self.error = exc
                    print(f"mcpactor trace writer: {type(exc).__name__}: {exc}",
                          file=sys.stderr, flush=True)
        finally:
            core.close()
            self._done.set()


# -- the sink process ---------------------------------------------------------------------


class _SinkProcess:
    """The trace sink process and the pipe to it (one per recording process)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The sink must import this very mcpactor, wherever sys.path found it.
        root = str(Path(mcpactor.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpactor.tracing.sink"],
            # Its own stdout (its one answer: a recording's files are complete), never this
            # process's: over stdio that is the MCP stream.
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env,
            # Its own session: a terminal's Ctrl-C or a group kill must not end it before
            # this process has had its say; it ends with its stdin.
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdin.fileno()
        self.answers = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        os.set_blocking(self.answers, False)
        #: Channels whose files the sink has completed.
        self.ended: set[int] = set()
        self._partial = b""
        with contextlib.suppress(OSError):
            import fcntl

            fcntl.fcntl(self.fd, _F_SETPIPE_SZ, _PIPE_SIZE)
        self.pid = os.getpid()
        self.dead = False
        self._outbox: collections.deque[memoryview] = collections.deque()
        self.backlog = 0  # bytes in the outbox
        self._channels = 0
        self._lock = threading.Lock()
        self.owners: dict[int, ProcessOutput] = {}

    def channel(self, owner: ProcessOutput) -> int:
        self._channels += 1
        self.owners[self._channels] = owner
        return self._channels

    def send(self, op: bytes, channel: int, body: bytes) -> bool:
        """Queue one frame and write what the pipe takes now; False if the sink is dead."""
        with self._lock:
            if self.dead:
                return False
            self._outbox.append(memoryview(FRAME.pack(op, channel, len(body))))
            if body:
                self._outbox.append(memoryview(body))
            self.backlog += FRAME.size + len(body)
            self._pump()
            return not self.dead

    def _pump(self) -> None:
        outbox = self._outbox
        while outbox:
            try:
                written = os.writev(self.fd, list(outbox)[:64])
            except BlockingIOError:
                return
            except OSError:
                self._die()
                return
            self.backlog -= written
            while outbox and (written or not len(outbox[0])):
                head = outbox[0]
                if written >= len(head):
                    written -= len(head)
                    outbox.popleft()
                else:
                    outbox[0] = head[written:]
                    written = 0

    def pump(self) -> None:
        """Write what the pipe takes now."""
        with self._lock:
            if not self.dead:
                self._pump()

    def wait_ended(self, channel: int, timeout: float) -> bool:
        """(Not in the event loop's thread) write the outbox out and wait until the sink
        says ``channel``'s files are complete; False on timeout or if the sink died."""
        deadline = _monotonic() + timeout
        self.drain_blocking(timeout)
        while not self.dead and channel not in self.ended:
            self.read_answers()
            if channel in self.ended:
                break
            remaining = deadline - _monotonic()
            if remaining <= 0 or not self.alive():
                return False
            try:
                select.select([self.answers], [], [], min(remaining, 0.5))
            except (OSError, ValueError):
                return False
        return channel in self.ended

    def read_answers(self) -> None:
        """Take in the sink's answers so far (never waits)."""
        while not self.dead:
            try:
                data = os.read(self.answers, 4096)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                return
            *lines, self._partial = (self._partial + data).split(b"\n")
            for line in lines:
                if line.startswith(b"E "):
                    try:
                        self.ended.add(int(line[2:]))
                    except ValueError:
                        pass

    @property
    def pending(self) -> bool:
        """Whether frames wait in the outbox."""
        return bool(self._outbox) and not self.dead

    def drain_blocking(self, timeout: float) -> None:
        """Write the outbox out, waiting for the pipe (only outside the event loop)."""
        deadline = _monotonic() + timeout
        while self.pending:
            remaining = deadline - _monotonic()
            if remaining <= 0:
                return
            try:
                select.select([], [self.fd], [], remaining)
            except (OSError, ValueError):
                self._die()
                return
            self.pump()

    def _die(self) -> None:
        # The sink is gone: no more frames; the recordings continue in threads.
        if self.dead:
            return
        self.dead = True
        self._outbox.clear()
        self.backlog = 0
        with contextlib.suppress(OSError):
            self.proc.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()

    def alive(self) -> bool:
        """Whether the sink still runs."""
        if not self.dead and self.proc.poll() is not None:
            with self._lock:
                self._die()
        return not self.dead

    def shutdown(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """Write what is left, close the sink's stdin and wait for it to finish."""
        if self.dead:
            return
        self.drain_blocking(timeout)
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.dead = True


_sink: _SinkProcess | None = None
_sink_starts = 0
#: Sink processes one process may start: a dead sink is replaced for later recordings,
#: but not forever (whatever kills them would likely kill the next).
MAX_SINK_STARTS = 3
_sink_lock = threading.Lock()


def _shared_sink() -> _SinkProcess | None:
    global _sink, _sink_starts
    with _sink_lock:
        if _sink is not None and _sink.pid != os.getpid():
            _sink, _sink_starts = None, 0  # a fork: that sink belongs to the parent
        if (_sink is None or not _sink.alive()) and _sink_starts < MAX_SINK_STARTS:
            _sink_starts += 1
            try:
                _sink = _SinkProcess()
            except OSError:
                _sink, _sink_starts = None, MAX_SINK_STARTS
        return _sink if _sink is not None and not _sink.dead else None


@atexit.register
def _shutdown_sink() -> None:
    if _sink is not None and _sink.pid == os.getpid():
        _sink.shutdown()


class ProcessOutput:
    """One recording written by the shared sink process (see the module)."""

    def __init__(self, sink: _SinkProcess, spec: dict[str, Any]) -> None:
        self._sink = sink
        self._spec = spec
        self._backlog = _Backlog()
        self._fallback: ThreadOutput | None = None
        self._closed = False
        self._channel = sink.channel(self)
        if not sink.send(OP_OPEN, self._channel, orjson.dumps(spec)):
            self._fall_back()

    @property
    def lost(self) -> int:
        """Events dropped because the sink fell behind (or died)."""
        extra = self._fallback.lost if self._fallback is not None else 0
        return self._backlog.lost + extra

    @property
    def in_process(self) -> bool:
        """Whether the recording fell back to a writer thread of this process."""
        return self._fallback is not None

    def submit(self, first_seq: int, events: list[Any], *, last: bool = False) -> None:
        """Hand ``events`` to the sink (never waits). ``last``: the recording's final
        chunk, which goes whatever the backlog (with the record of any gap before it)."""
        if self._closed:
            return
        if self._fallback is None and not self._sink.alive():
            self._fall_back()
        if self._fallback is not None:
            self._fallback.submit(first_seq, events)
            return
        if self._sink.backlog > MAX_BACKLOG_BYTES and not last:
            self._backlog.drop(first_seq, len(events) // WIDTH)
            return
        events = self._backlog.mark(events)
        if _PACK is not None:
            op, body = OP_PACKED, _PACK(first_seq, events, _marshal_one)
        else:
            op = OP_CHUNK
            try:
                body = marshal.dumps((first_seq, events))
            except ValueError:
                body = marshal.dumps((first_seq, _marshalable(events)))
        if not self._sink.send(op, self._channel, body):
            self._fall_back()
            assert self._fallback is not None
            self._fallback.submit(first_seq, events)

    def session_closed(self, sid: str) -> None:
        """``sid``'s file is complete (per-session recordings)."""
        if self._fallback is not None:
            self._fallback.session_closed(sid)
        elif not self._closed:
            self._sink.send(OP_SESSION, self._channel, sid.encode())

    def close(self) -> None:
        """End the recording: the sink closes its files once it has written the rest."""
        if self._closed:
            return
        self._closed = True
        if self._fallback is not None:
            self._fallback.close()
        else:
            self._sink.send(OP_END, self._channel, b"")

    async def drain(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """After :meth:`close`: write the backlog out as the pipe drains, then wait for the
        sink to say the files are complete — without blocking the event loop."""
        import trio

        if self._fallback is not None:
            await self._fallback.drain(timeout)
            return
        sink = self._sink
        # In a thread: real time, whatever clock the run has (a virtual one would jump
        # past any timeout while the loop waits).
        await trio.to_thread.run_sync(sink.wait_ended, self._channel, timeout,
                                      abandon_on_cancel=True)
        if self._fallback is None and sink.dead and self._channel not in sink.ended:
            # The sink died with the end of this recording unwritten: write it here.
            self._fall_back()

    @property
    def pending(self) -> bool:
        """Whether frames wait for the pipe."""
        return self._fallback is None and self._sink.pending

    @property
    def fd(self) -> int:
        """The pipe to the sink."""
        return self._sink.fd

    def pump(self) -> None:
        """Write what the pipe takes now."""
        self._sink.pump()

    def _fall_back(self) -> None:
        if self._fallback is None:
            self._fallback = ThreadOutput(dict(self._spec, resume=True))


def open_output(spec: dict[str, Any], mode: str) -> ProcessOutput | ThreadOutput:
    """The output for one recording: the sink process (``mode="process"``, falling back
    to a thread where none can run) or a writer thread."""
    if mode == "process":
        sink = _shared_sink()
        if sink is not None:
            return ProcessOutput(sink, spec)
    return ThreadOutput(spec)
