"""The recording side of the trace sink process (``writer="process"``).

Why a process: recording costs the session two things per event, building the event
and encoding it (a redaction check, orjson). A writer thread takes the second off the
Trio thread but not off the CPU the server runs on: it runs under the same GIL. Here the
Trio thread makes one ``marshal.dumps`` per 32 events (the events as buffered) and
one pipe write per batch; :mod:`.sink`, another interpreter, does the rest.

One sink process per recording process, started with the first recorder that asks and
shared by all (an HTTP server records one file per session). Every recorder keeps its
batches until the sink confirms them written; should the sink die or hang, the recorder
truncates its file to the last confirmed size and writes the rest itself, on a
:class:`~mcpactor.tracing.writer.BackgroundWriter`, with the secrets the sink had
learned — no event is lost, nothing is raised into the session. The sink exits when
its stdin ends (this process exited or died); it is reaped here once found dead, and at
exit.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import fcntl
import itertools
import marshal
import os
import secrets
import select
import subprocess
import sys
import threading
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

import mcpactor
from mcpactor.tracing.encode import (
    EVENT_SEPARATOR,
    MESSAGE_KINDS,
    NO_FREE_TEXT,
    Compact,
    Record,
    encode_block,
    encode_records,
    jsonable,
    to_records,
)
from mcpactor.tracing.redact import Redactor
from mcpactor.tracing.sink import (
    BATCH,
    FRAME,
    FREE_TEXT,
    OP_CLOSE,
    OP_OPEN,
    OP_RECORDS,
    compact_records,
    decode_batch,
    decode_parts,
    records_body,
)
from mcpactor.tracing.tracer import EncodedMessage
from mcpactor.tracing.writer import BackgroundWriter

#: How long close() waits for the sink to confirm a file complete before taking over.
CLOSE_TIMEOUT = 10.0
#: Batches (of up to 1,024 events) a recorder may have sent and not seen written.
#: Beyond, emit() waits for the sink: were it slower than the session for long, memory
#: would grow without bound.
MAX_PENDING = 32
#: Beyond this many unconfirmed batches the sink is falling behind (at idle priority on a
#: busy machine it gets little CPU): batches are then encoded here and the sink only
#: writes them, rather than making the session wait for it.
ENCODE_HERE_AFTER = 4
_F_SETPIPE_SZ = 1031  # Linux: a larger pipe lets the sink fall further behind unnoticed
_PIPE_SIZE = 1 << 20


#: A part of a batch, encoded as it will travel: the events' JSON array (messages as the
#: marker), the messages, and whether any other field may hold free text.
Chunk = tuple[bytes, list[bytes], bool]


def encode_chunk(records: list[Record], marker: orjson.Fragment) -> Chunk:
    """Some events as a chunk of a ``D`` part (see :mod:`.sink`): one ``orjson.dumps``.

    The events go as the objects their lines will be, messages standing in as the
    marker: for a batch with nothing to redact, the sink's work is then splicing bytes.
    The chunk also says whether any event outside the messages may hold free text; when
    none does (most batches: messages, handler and timer events), the sink's secret scan
    reads the messages alone (the same rule as the in-process encoder's, in
    :mod:`.encode`).
    """
    messages: list[bytes] = []
    append = messages.append
    sep = EVENT_SEPARATOR
    items: list[Any] = []
    add = items.append
    top = 0
    free = False
    for seq, t, session, actor, kind, data in records:
        if data.get("msg").__class__ in _MESSAGE_TYPES:
            top += 1
            if kind not in MESSAGE_KINDS or len(data) > 2:
                free = True
        elif kind not in NO_FREE_TEXT:
            free = True
        add({"seq": seq, "t": t, "session": session, "actor": actor, "kind": kind, **data})
        add(sep)

    def default(obj: Any) -> Any:
        cls = obj.__class__
        if cls is bytes:
            append(obj)
            return marker
        if cls is EncodedMessage:
            append(obj.data)
            return marker
        raise TypeError

    try:
        payload = orjson.dumps(items, default=default)
    except TypeError:
        payload = None
    if payload is None or len(messages) != top:
        # Something orjson cannot encode, or a message elsewhere than under ``msg``:
        # their repr, as the thread writer would write it.
        messages.clear()
        payload = orjson.dumps([_plain(i) for i in items], default=default)
        free = True
    return payload, messages, free


def batch_body(prefix: list[bytes], chunks: list[Chunk]) -> bytes:
    """A ``D`` part (without its type byte): the header lines ``prefix``, then the events of ``chunks``."""
    if len(chunks) == 1:
        payload, messages, free = chunks[0]
    else:
        # [A,\n,B,\n] + [C,\n] -> [A,\n,B,\n,C,\n]
        payload = b"[" + b",".join([c[0][1:-1] for c in chunks if c[0] != b"[]"]) + b"]"
        messages = [m for c in chunks for m in c[1]]
        free = any(c[2] for c in chunks)
    blobs = [*prefix, *messages]
    lengths = array("I", map(len, blobs)).tobytes()
    head = BATCH.pack(len(payload), len(prefix), len(blobs), FREE_TEXT if free else 0)
    return b"".join([head, payload, lengths, *blobs])


def _lines_part(lines: list[bytes]) -> bytes:
    # An ``L`` part: complete lines, written as they are.
    return b"L" + b"".join([line + b"\n" for line in lines])


#: What a traced message is: its bytes, or wrapped.
_MESSAGE_TYPES = (bytes, EncodedMessage)


def _plain(item: Any) -> Any:
    if item is EVENT_SEPARATOR:
        return item
    return {k: v if (k == "msg" and v.__class__ in _MESSAGE_TYPES) or jsonable(v) else repr(v)
            for k, v in item.items()}


class TraceSink:
    """The sink process and the two pipes to it, driven from the recording threads.

    No helper thread: frames are written to a non-blocking pipe (1 MiB, so a write
    rarely has to wait) and the sink's answers are read, without blocking, whenever a
    batch is sent. A thread waking per batch would take the GIL from the session's
    thread each time, and on a VM every such hand-over costs a scheduler wake-up.
    """

    def __init__(self) -> None:
        nonce = secrets.token_hex(8)
        self.marker_text = "\x00" + nonce
        self.marker = orjson.Fragment(orjson.dumps(self.marker_text))
        env = dict(os.environ)
        # The sink must import this very mcpactor, wherever sys.path found it.
        root = str(Path(mcpactor.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpactor.tracing.sink", nonce],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env,
            # Its own session: a terminal's Ctrl-C or a group kill must not end it before
            # this process has had its say; it ends with its stdin.
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._wfd = self.proc.stdin.fileno()
        self._rfd = self.proc.stdout.fileno()
        for fd in (self._wfd, self._rfd):
            os.set_blocking(fd, False)
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)
        self.pid = os.getpid()
        self.dead = False
        self._channels: dict[int, ProcessWriter] = {}
        self._ids = itertools.count(1)
        self._partial = b""
        # Recorders may live in several threads (one Trio run each); the pipes are shared.
        self._lock = threading.RLock()

    def register(self, writer: ProcessWriter) -> int:
        """A channel id for ``writer``'s file."""
        channel = next(self._ids)
        self._channels[channel] = writer
        return channel

    def forget(self, channel: int) -> None:
        """``channel``'s writer is closed."""
        self._channels.pop(channel, None)

    def send(self, op: int, channel: int, body: bytes) -> None:
        """Write one frame to the sink, then take in its answers so far. Waits only
        while the pipe is full; a sink that stays stuck that long is declared dead."""
        head = FRAME.pack(op, channel, len(body))
        with self._lock:
            # Most frames go in one writev, the body not copied behind its header.
            frame = memoryview(b"")
            try:
                sent = os.writev(self._wfd, [head, body])
            except BlockingIOError:
                sent = 0
            except OSError:
                self.die()
                return
            if sent < len(head) + len(body):
                frame = memoryview(head + body)[sent:]
            while frame and not self.dead:
                try:
                    frame = frame[os.write(self._wfd, frame) :]
                except BlockingIOError:
                    if not self._wait(CLOSE_TIMEOUT, writing=True):
                        self.die()
                except OSError:
                    self.die()
            self.poll()

    def poll(self) -> None:
        """Take in the sink's answers that have arrived (never blocks)."""
        with self._lock:
            while not self.dead:
                try:
                    data = os.read(self._rfd, 65536)
                except BlockingIOError:
                    return
                except OSError:
                    data = b""
                if not data:
                    self.die()
                    return
                *lines, self._partial = (self._partial + data).split(b"\n")
                for line in lines:
                    self._dispatch(line)

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Take in answers until ``done()`` or the sink's death; False after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self.poll()
            while not done() and not self.dead:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._wait(remaining):
                    return False
            return True

    def _wait(self, timeout: float, *, writing: bool = False) -> bool:
        # Until an answer can be read (read it: a sink blocked on a full answer pipe
        # reads no more frames) or, when writing, the frame pipe has room.
        try:
            readable, writable, _ = select.select(
                [self._rfd], [self._wfd] if writing else [], [], timeout)
        except (OSError, ValueError):
            self.die()
            return False
        if readable:
            self.poll()
        return bool(readable or writable)

    def _dispatch(self, line: bytes) -> None:
        try:
            reply = orjson.loads(line)
            writer = self._channels.get(reply[1])
            if writer is not None:
                writer.on_reply(reply)
        except Exception:  # a garbled answer only costs its own acknowledgement
            pass

    def die(self) -> None:
        """The sink is gone or useless: make sure it is dead, reap it, tell the writers
        (each then writes its own file)."""
        with self._lock:
            if self.dead:
                return
            self.dead = True
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    if f is not None:
                        f.close()
            for writer in list(self._channels.values()):
                writer.on_sink_dead()

    def alive(self) -> bool:
        """Whether the sink still runs (reaping it if it has exited on its own)."""
        if not self.dead and self.proc.poll() is not None:
            self.die()
        return not self.dead

    def shutdown(self, timeout: float = 5.0) -> None:
        """Close the sink's stdin: it writes what it has, closes every file and exits."""
        with self._lock:
            if self.dead:
                return
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
            self.die()


#: Sink processes one process may start: a dead sink is replaced for later recorders,
#: but not forever (whatever kills them would likely kill the next).
MAX_SINK_STARTS = 3
_sink: TraceSink | None = None
_sink_starts = 0
_sink_lock = threading.Lock()


def _shared_sink() -> TraceSink | None:
    global _sink, _sink_starts
    with _sink_lock:
        if _sink is not None and _sink.pid != os.getpid():
            _sink, _sink_starts = None, 0  # a fork: that sink belongs to the parent
        if (_sink is None or not _sink.alive()) and _sink_starts < MAX_SINK_STARTS:
            _sink_starts += 1
            try:
                _sink = TraceSink()
            except OSError:
                _sink, _sink_starts = None, MAX_SINK_STARTS  # no sink here: threads then
        return _sink if _sink is not None and not _sink.dead else None


@atexit.register
def _shutdown_sink() -> None:
    if _sink is not None and _sink.pid == os.getpid():
        _sink.shutdown()


def open_process_writer(path: Path, keys: frozenset[str]) -> ProcessWriter | None:
    """A writer for ``path`` (created empty by the caller) in the shared sink, or None
    when no sink can run in this process."""
    sink = _shared_sink()
    return None if sink is None else ProcessWriter(sink, path, keys)


class ProcessWriter:
    """One trace file written by the sink process (a :class:`~.writer.TraceWriter`)."""

    def __init__(self, sink: TraceSink, path: Path, keys: frozenset[str]) -> None:
        self.error: BaseException | None = None
        self._sink = sink
        self._path = path
        self._keys = keys
        #: Batches sent and not yet confirmed written, oldest first, as sent: bytes hold
        #: no references for the garbage collector to walk, and decode as the sink would.
        self._pending: collections.deque[bytes] = collections.deque()
        self._size = 0  # the file's size after the last confirmed batch
        self._learned: list[str] = []
        self._local: Redactor | None = None  # for batches encoded here; knows _learned
        self._local_learned = 0
        self._encode_here = False
        #: Events taken ahead of their batch (see stage()), in order: ``RECORDS`` parts.
        self._staged: list[bytes] = []
        self._closed_ok = False
        self._fallback: BackgroundWriter | None = None
        self._channel = sink.register(self)
        # Absolute: the sink's working directory is this process's when it started.
        spec = {"path": os.path.abspath(path), "keys": sorted(keys)}
        self._broken = False  # the sink could not open the file: this process writes it
        sink.send(OP_OPEN, self._channel, orjson.dumps(spec))

    @property
    def in_process(self) -> bool:
        """Whether this file's writing has fallen back to a thread of this process."""
        return self._fallback is not None

    def stage(self, events: list[Compact], first_seq: int, origin: int) -> bool:
        """Take ``events`` now, to be sent with the next batch; False if not taken.

        A recorder stages every few dozen events: one ``marshal.dumps`` (C) turns them
        into bytes, which the sink numbers, times, redacts and encodes. Encoding here
        cost the session three times as much per event as the append that records it;
        the sink does it on the other core, or in the gaps this process leaves. Events
        ``marshal`` cannot carry (objects of other classes) are encoded here.
        """
        if self._fallback is not None or self._sink.dead or self._broken:
            return False
        try:
            try:
                part = b"C" + marshal.dumps((first_seq, origin, events))
            except ValueError:
                records = to_records(events, first_seq, origin)
                part = b"D" + batch_body([], [encode_chunk(records, self._sink.marker)])
        except Exception as exc:
            # Left with the recorder: submit() takes them the careful way.
            self.error = exc
            return False
        self._staged.append(part)
        return True

    def _unstage(self) -> list[Record]:
        # The staged events as records again (for a path that needs them: rare).
        records: list[Record] = []
        for part in self._staged:
            if part[:1] == b"C":
                records += compact_records(part[1:])
            else:
                records += decode_batch(part[1:], self._sink.marker_text)[1]
        self._staged = []
        return records

    def submit(self, prefix: list[bytes], events: list[Record]) -> None:
        """Send one batch to the sink: the staged events, then ``events``."""
        if self._fallback is None and (self._sink.dead or self._broken):
            self._fall_back()
        if self._fallback is not None:
            self._fallback.submit(prefix, self._unstage() + events)
            return
        try:
            if self._encode_here or len(self._pending) >= ENCODE_HERE_AFTER:
                local = self._local_redactor()
                lines = encode_records(self._unstage() + events, local)
                body = records_body([_lines_part(prefix + lines)])
                # A secret learned here is unknown to the sink, which would not hunt for
                # it in later batches: from now on they are all encoded here.
                self._encode_here = len(local.learned) > len(self._learned)
            else:
                # Staged parts are let go only once the body exists: should anything here
                # raise, the careful path below takes them with ``events``, once each.
                parts = [_lines_part(prefix)] if prefix else []
                parts += self._staged
                if events:
                    parts.append(b"D" + batch_body([], [encode_chunk(events, self._sink.marker)]))
                body = records_body(parts)
                self._staged = []
        except Exception as exc:
            # Never into the session: this batch is encoded here and sent as lines.
            self.error = exc
            lines = encode_records(self._unstage() + events, self._redactor())
            body = records_body([_lines_part(prefix + lines)])
        if len(self._pending) >= MAX_PENDING:
            if not self._sink.wait_until(lambda: len(self._pending) < MAX_PENDING,
                                         CLOSE_TIMEOUT):
                self._sink.die()  # no progress for that long: hung
            if self._sink.dead:
                self._fall_back()
                assert self._fallback is not None
                self._resubmit(body)
                return
        self._pending.append(body)
        self._sink.send(OP_RECORDS, self._channel, body)

    def _resubmit(self, body: bytes) -> None:
        # A batch the sink did not write, to the writer that took over, in order.
        assert self._fallback is not None
        for lines, records in decode_parts(body, self._sink.marker_text):
            self._fallback.submit(lines, records)

    def close(self) -> None:
        """Return once the file is complete and closed, by the sink or by this process."""
        if self._fallback is None:
            if not self._sink.dead and not self._broken:
                self._sink.send(OP_CLOSE, self._channel, b"")
                if not self._sink.wait_until(lambda: self._closed_ok or self._broken,
                                             CLOSE_TIMEOUT):
                    self._sink.die()  # hung: take over rather than leave the file short
            if not self._closed_ok:
                self._fall_back()
        self._sink.forget(self._channel)
        if self._fallback is not None:
            self._fallback.close()

    def on_reply(self, reply: list[Any]) -> None:
        """An answer from the sink."""
        kind, _, size, *rest = reply
        if kind == "E" or self._broken:
            # The sink never opened the file: every batch is still ours to write.
            self._broken = True
            self.error = RuntimeError(f"trace sink: {rest[-1]}")
            return
        if kind == "A":
            self._pending.popleft()
            learned, error = rest
            self._learned.extend(learned)
        else:
            error = rest[0]
        if size >= 0:
            self._size = size
        if error:
            self.error = RuntimeError(f"trace sink: {error}")
        if kind == "C":
            self._closed_ok = True

    def on_sink_dead(self) -> None:
        """The sink has exited and been reaped: the next submit or close takes over."""

    def _redactor(self) -> Redactor:
        redactor = Redactor(self._keys)
        redactor.remember(self._learned)
        return redactor

    def _local_redactor(self) -> Redactor:
        # Kept across batches (making one compiles its patterns), and told what the
        # sink has learned since: a secret found there is hunted for here too.
        if self._local is None:
            self._local, self._local_learned = self._redactor(), len(self._learned)
        elif self._local_learned < len(self._learned):
            self._local.remember(self._learned[self._local_learned :])
            self._local_learned = len(self._learned)
        return self._local

    def _fall_back(self) -> None:
        # From here this process writes the file. The sink is gone for good first, so
        # that it cannot write behind our back; what it confirmed stays, the rest (a
        # batch may have been half written) is cut and written again. A file the sink
        # could not open is not the sink's fault: it stays, for the other files.
        if not self._broken:
            self._sink.die()  # no-op when dead already; never two writers on one file
        redactor = self._redactor()
        file: IO[bytes]
        try:
            file = open(self._path, "r+b")
            file.truncate(self._size)
            file.seek(self._size)
        except OSError as exc:
            self.error = exc
            file = open(os.devnull, "wb")
        self._fallback = BackgroundWriter(file, lambda events: encode_block(events, redactor))
        while self._pending:
            self._resubmit(self._pending.popleft())
