"""Writing trace files: numbering, redaction, encoding, one file or one per session,
rotation — and the trace sink process that does it out of the recording process.

:class:`SinkCore` turns chunks of compact events (:mod:`.tracer`) into trace lines and
writes them. It runs in the trace sink process (``python -m mcpactor.tracing.sink``,
fed by :mod:`.sinkclient`), in a writer thread of the recording process where no
process can be started, or synchronously for an in-memory trace. It knows nothing of
Trio.

A recording is either one file for the whole process (every session, interleaved as
they ran: ``split: false``) or one file per session (``split: true``, in a folder,
``<session id>.jsonl``). In a per-session file, the schedule records keep that
session's tasks only, and every line is numbered within the file. A whole-process file
may rotate (``rotate_bytes``, ``rotate_seconds``): the next segment, named by the time
it starts, says in its header which segment came before; a replay reads them all, from
the first.

The sink's input is a stream of frames: a type byte, a channel number and a length
(:data:`FRAME`), then the body. ``O`` opens a channel (a JSON spec), ``C`` carries a
chunk (``marshal`` of ``(first_seq, events)``), ``S`` says a session ended (its id),
``E`` ends the channel (a chunk's events are flat, :data:`~.tracer.WIDTH` items each);
``P`` is a chunk packed by the compiled hooks (``_hooks.pack``: fewer instructions for
the recording process than marshal) instead of ``C``'s marshal. The sink's one answer, on its stdout, is ``E <channel>`` once a
channel's files are complete: the end of a recording may wait for it (asynchronously,
see :mod:`.sinkclient`); nothing else does.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import marshal
import os
import stat
import struct
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

from mcpactor.tracing.encode import encode_events, to_event
from mcpactor.tracing.redact import Redactor
from mcpactor.tracing.tracer import WIDTH

__all__ = ["FRAME", "MemoryFiles", "SinkCore", "chunk_or_declare", "claim_trace_file", "main"]

#: Frame header: type (1 byte), channel, body length.
FRAME = struct.Struct("<cII")
OP_OPEN, OP_CHUNK, OP_PACKED, OP_SESSION, OP_END = b"O", b"C", b"P", b"S", b"E"


class _File:
    """One trace file being written: its numbering, and what of it is still owed.

    The file is opened (and its header written) with its first write, and every write
    is of whole lines: one that fails is cut back off (:meth:`SinkCore._write`), so the
    file always ends with a complete line. Records that could not be written are
    declared by a ``trace_truncated`` record as soon as writing works again."""

    def __init__(self, name: str, header: dict[str, Any] | None, *, written: int = 0,
                 stream: IO[bytes] | None = None, size: int = 0) -> None:
        self.name = name
        self.stream = stream
        #: The header's line, until it is in the file.
        self.header = orjson.dumps(header) if header is not None else None
        #: (per-session files) the number of the latest record given to this file.
        self.seq = written
        #: The latest number the file holds or has declared lost (-1: unknown, a
        #: resumed file that is not a regular file: the next record goes on from it).
        self.written = written
        #: Records up to this number are lost (declared by the next marker).
        self.declared = written
        #: An unknown number of this file's records are lost (per-session files after
        #: the trace writer fell behind): the next marker has ``lost`` null.
        self.unknown = False
        #: Why records are missing, for the next marker.
        self.why: str | None = None
        #: Bytes of complete lines in the file.
        self.size = size
        #: A failed write could not be cut back off: begin the next one on a new line.
        self.ragged = False
        #: Open it to append (a file another writer began), not as a new file.
        self.append = False
        self.started = time.monotonic()

    @property
    def owes(self) -> bool:
        """Whether the file has something to write although no record comes: its
        header, or the declaration of lost records."""
        return self.header is not None or self.unknown or self.declared > self.written

    def close(self) -> None:
        if self.stream is None:
            return
        try:
            self.stream.close()
        except (OSError, ValueError):
            pass
        self.stream = None


class MemoryFiles:
    """An in-memory stand-in for the file system (``SinkCore(..., files=...)``)."""

    def __init__(self) -> None:
        self.files: dict[str, list[bytes]] = {}

    def open(self, name: str) -> IO[bytes]:
        """A new in-memory file named ``name``."""
        lines: list[bytes] = []
        self.files[name] = lines
        return _MemoryStream(lines)  # type: ignore[return-value]


class _MemoryStream:
    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines
        self._size = 0

    def write(self, data: bytes | memoryview) -> int:
        self._lines.extend(bytes(data).splitlines())
        self._size += len(data)
        return len(data)

    def truncate(self, size: int) -> int:
        # Only ever back to the end of a line (see SinkCore._write).
        while self._lines and self._size > size:
            self._size -= len(self._lines.pop()) + 1
        return self._size

    def seek(self, offset: int) -> int:
        return offset

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


#: How many closed session files a per-session recording remembers (see ``_closed``).
_CLOSED_MEMORY = 65536
#: How many closed files that still owe a declaration of lost records are kept open
#: for it while writing fails (the oldest are given up past it).
_UNFINISHED_MEMORY = 1024
#: How many records that cannot be encoded are reported one by one (then a count).
_REPORTED_BAD_RECORDS = 5


def _open_file(name: str) -> IO[bytes]:
    # Without waiting: a FIFO that no process reads is an error (ENXIO), retried with
    # the next write, rather than a sink stuck in open() forever. Unbuffered: a write
    # that fails must leave nothing behind to be flushed later (SinkCore._write).
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC,
                 0o666)
    try:
        os.set_blocking(fd, True)
        return open(fd, "wb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _open_append(name: str) -> IO[bytes]:
    fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.set_blocking(fd, True)
        return open(fd, "ab", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _write_all(stream: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = stream.write(view)
        if not n:
            raise OSError(f"a write to the trace took nothing ({n!r})")
        view = view[n:]


#: Trace files that are not regular files (a FIFO) that a recording of this process
#: writes to, held open from their check until the process ends: a reader that
#: opened one sees no end of it between the check and the sink's own open.
_claimed: dict[str, int] = {}


def claim_trace_file(path: str) -> None:
    """Check, without waiting, that a whole-process trace can be written to ``path``:
    a regular file is created if need be (and left as it is); anything else (a FIFO, a
    device) is opened without blocking and held open. A FIFO that no process reads is
    refused (``OSError`` ENXIO, saying so) rather than waited for: opening it for
    writing would block until a reader comes, maybe forever. Raises OSError."""
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is None or stat.S_ISREG(mode):
        with open(path, "ab"):
            pass
        return
    if path in _claimed:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(mode):
            raise OSError(errno.ENXIO, "it is a FIFO that no process reads: start its "
                          "reader first (a recording does not wait for one)") from None
        raise
    _claimed[path] = fd


def _describe(exc: BaseException) -> str:
    # "OSError: [Errno 28] No space left on device": the class, then what it says.
    return f"{type(exc).__name__}: {exc}"


def _stderr_report(message: str) -> None:
    print(f"mcpactor trace writer: {message}", file=sys.stderr, flush=True)


class SinkCore:
    """Encodes and writes one recording (see the module). ``spec`` keys: ``path`` (the
    file, or the folder with ``split``), ``split``, ``header`` (the header's object),
    ``origin`` (the clock reading, in ns, that event times count from), ``keys``
    (redacted keys), ``rotate_bytes``, ``rotate_seconds``.

    Nothing one record or one write does stops the recording: a record that cannot be
    encoded, or writes that fail (a full disk), lose those records only; the files stay
    line-complete and say what they lack (``trace_truncated``) once writing works
    again. ``report`` is told of each such trouble (a line for stderr)."""

    def __init__(self, spec: dict[str, Any],
                 files: Callable[[str], IO[bytes]] | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        self.path = str(spec["path"])
        self.split = bool(spec.get("split"))
        self.header = dict(spec["header"])
        self.origin = int(spec.get("origin", 0))
        self.redactor = Redactor(frozenset(spec.get("keys") or ()))
        self.rotate_bytes: int | None = spec.get("rotate_bytes")
        self.rotate_seconds: float | None = spec.get("rotate_seconds")
        self._open = files or _open_file
        self._report = report or _stderr_report
        #: Take over files another writer began (a trace sink that died): keep what they
        #: hold up to their last complete line, and go on from there.
        self.resume = bool(spec.get("resume"))
        self._files: dict[str, _File] = {}
        #: Sessions whose files were closed, newest last (bounded): records that still
        #: come for one (a task's worker outliving its session) are appended to its
        #: file, which is never begun again.
        self._closed: OrderedDict[str, None] = OrderedDict()
        #: Closed files that still owe their end (writing failed): retried with every
        #: chunk until it works.
        self._unfinished: OrderedDict[str, _File] = OrderedDict()
        #: (per session) records were dropped before they got here: a session file
        #: begun later may lack its beginning.
        self._truncated = False
        #: Writing fails at the moment (reported once, and once when it works again).
        self._failing = False
        self._bad_records = 0
        #: task id -> session id, from the schedule's ``new`` names; task id -> name.
        self._task_session: dict[int, str] = {}
        self._names: dict[int, str] = {}
        #: (per session) the latest schedule records: (whole-process seq, file seq, steps),
        #: and the whole-process records' runs, recent ones.
        self._scheds: dict[str, list[tuple[int, int, int]]] = {}
        self._runs: dict[int, list[int]] = {}
        self._segment = 0
        self._whole: _File | None = None
        self._all_names: set[str] = set()
        if not self.split:
            self._whole = self._new_segment(None)
            self._emit(self._whole, [])  # the header, now if it can be

    # -- files --------------------------------------------------------------------------

    def _segment_name(self) -> str:
        # Rotating: every segment is named by the time it starts and its number, so that
        # the names sort in the order the segments were written.
        if self.rotate_bytes is None and self.rotate_seconds is None:
            return self.path
        p = Path(self.path)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        return str(p.with_name(f"{p.stem}-{stamp}-{self._segment:04d}{p.suffix or '.jsonl'}"))

    def _new_segment(self, previous: _File | None) -> _File:
        if self.resume and previous is None and os.path.exists(self.path):
            self._segment = 1
            self._all_names = self._all_names | {self.path}
            return self._reopened(self.path)
        self._segment += 1
        name = self._segment_name()
        header = dict(self.header, scope="process", segment=self._segment,
                      previous=Path(previous.name).name if previous is not None else None)
        f = _File(name, header)
        if previous is not None:
            # The numbering goes on, and so does a gap not declared yet.
            f.written, f.declared, f.why = previous.written, previous.declared, previous.why
        self._all_names = self._all_names | {name}
        return f

    def _reopened(self, name: str) -> _File:
        """A file another writer began, to go on with."""
        try:
            stream, last, size = _reopen(name)
        except (OSError, ValueError) as exc:
            # Not now: appended to when it can be, after whatever line it ends with
            # (never begun again, which would erase it).
            self._failed(name, exc)
            f = _File(name, None, written=-1)
            f.append = f.ragged = True
            return f
        f = _File(name, None, written=last, stream=stream, size=size)
        f.why = "the trace writer before this one stopped"
        return f

    def _session_file(self, sid: str, first: dict[str, Any]) -> _File:
        f = self._files.get(sid)
        if f is not None:
            return f
        f = self._unfinished.pop(sid, None)
        if f is not None:
            self._files[sid] = f
            return f
        name = os.path.join(self.path, f"{sid}.jsonl")
        if (self.resume or sid in self._closed) and os.path.exists(name):
            f = self._files[sid] = self._reopened(name)
            return f
        header = dict(self.header, scope="session", session=sid, segment=1, previous=None)
        f = self._files[sid] = _File(name, header)
        if self._truncated and not (first["kind"] == "sched"
                                    and sid in (first.get("new") or {}).values()):
            # Begun after records were dropped, and not by the step that named its
            # supervisor: its beginning may be among them.
            f.unknown = True
            f.why = "the trace writer fell behind"
        return f

    # -- input --------------------------------------------------------------------------

    def chunk(self, first_seq: int, flat: list[Any]) -> None:
        """Encode and write the records of ``flat`` (a recorder's buffer: WIDTH items a
        record), numbered from ``first_seq`` (whole-process) or within each file (per
        session). A ``trace_truncated`` record among them (records the recording process
        dropped) takes no number."""
        if self._unfinished:
            self._retry_unfinished()
        if not flat:
            return
        if len(flat) % WIDTH:
            raise ValueError(f"a chunk of {len(flat)} items is not whole records of {WIDTH}")
        records: list[dict[str, Any]] = []
        seq = first_seq
        for e in zip(*[iter(flat)] * WIDTH, strict=True):
            try:
                if e[3] == "trace_truncated":
                    records.append(to_event(e, 0, self.origin))
                    continue
                records.append(to_event(self._named(e) if e[3] == "sched" and e[6] else e,
                                        seq, self.origin))
            except Exception as exc:
                # A malformed record is lost alone: declared in a whole-process file (in
                # one per session it belongs to no file that could say so).
                self._bad_record(seq, exc)
                if not self.split:
                    records.append({"kind": "trace_truncated", "first": seq, "lost": 1,
                                    "reason": f"record {seq} could not be encoded"})
            seq += 1
        if not self.split:
            f = self._whole
            assert f is not None
            self._emit(f, records)
            self._maybe_rotate()
            return
        per: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            if rec["kind"] == "trace_truncated":
                # How many of each session's records were lost is not known; sessions
                # begun among them are marked when their files begin (_session_file).
                self._truncated = True
                for sid in self._files:
                    per.setdefault(sid, []).append(dict(rec, lost=None))
                continue
            for sid, part in self._route(rec):
                f = self._session_file(sid, part)
                f.seq += 1
                part["seq"] = f.seq
                if part["kind"] == "sched":
                    self._note_sched(sid, rec["seq"], f.seq, len(part["run"]))
                per.setdefault(sid, []).append(part)
        for sid, recs in per.items():
            self._emit(self._files[sid], recs)

    def dropped(self, first_seq: int, count: int, reason: str) -> None:
        """Records ``first_seq`` .. ``first_seq + count - 1`` will never come (their chunk
        failed): declared in the files, as records the recording process dropped are."""
        if not self.split:
            assert self._whole is not None
            f = self._whole
            f.declared = max(f.declared, first_seq + count - 1)
            f.why = f.why or reason
            return
        self._truncated = True
        for f in self._files.values():
            f.unknown = True
            f.why = f.why or reason

    # -- writing ------------------------------------------------------------------------

    def _encode(self, records: list[dict[str, Any]]) -> list[bytes | None]:
        """Each record's line, None for one that cannot be encoded (reported)."""
        try:
            return list(encode_events(records, self.redactor))
        except Exception:
            pass  # find the record(s) at fault: the others are written
        out: list[bytes | None] = []
        for rec in records:
            try:
                out.append(encode_events([rec], self.redactor)[0])
            except Exception as exc:
                self._bad_record(rec.get("seq"), exc, rec.get("kind"))
                out.append(None)
        return out

    def _bad_record(self, seq: Any, exc: BaseException, kind: Any = None) -> None:
        self._bad_records += 1
        if self._bad_records <= _REPORTED_BAD_RECORDS:
            what = f"record {seq}" + (f" ({kind})" if kind else "")
            more = " (further ones are not reported)" \
                if self._bad_records == _REPORTED_BAD_RECORDS else ""
            self._report(f"{what} could not be encoded, left out (trace_truncated): "
                         f"{type(exc).__name__}: {exc}{more}")

    @staticmethod
    def _marker(first: int, lost: int | None, why: str | None) -> bytes:
        return orjson.dumps({"kind": "trace_truncated", "first": first, "lost": lost,
                             "reason": why or "records were lost"})

    def _emit(self, f: _File, items: list[dict[str, Any]]) -> None:
        """Write ``items`` (numbered records, and ``trace_truncated`` ones declaring
        records dropped before they got here) to ``f``, with a ``trace_truncated`` line
        wherever records are missing."""
        written, declared, unknown, why = f.written, f.declared, f.unknown, f.why
        records = [r for r in items if r["kind"] != "trace_truncated"]
        encoded = iter(self._encode(records) if records else [])
        lines: list[bytes] = []
        for rec in items:
            if rec["kind"] == "trace_truncated":
                lost = rec.get("lost")
                first = rec.get("first")
                if isinstance(lost, int) and isinstance(first, int):
                    declared = max(declared, first + lost - 1)
                else:
                    unknown = True
                why = why or rec.get("reason")
                continue
            line = next(encoded)
            s = rec["seq"]
            if line is None:
                declared = max(declared, s)
                why = why or f"record {s} could not be encoded"
                continue
            if written < 0:
                written = declared = s - 1  # resumed without knowing where (not a file)
            if unknown or s > written + 1:
                lines.append(self._marker(written + 1, None if unknown else s - written - 1,
                                          why))
                unknown, why = False, None
            lines.append(line)
            written = s
        last = records[-1]["seq"] if records else written
        if written >= 0 and (unknown or declared > written):
            # Lost records that no record of this batch follows: declared now.
            end = max(declared, written)
            lines.append(self._marker(written + 1, None if unknown else end - written, why))
            written, unknown = end, False
        if self._write(f, lines):
            f.written, f.declared, f.unknown = written, max(declared, written), unknown
            f.why = None
        else:
            # Nothing of it is in the file: all of it is owed, declared when a write works.
            f.declared = max(f.declared, declared, last)
            f.unknown = f.unknown or unknown

    def _write(self, f: _File, lines: list[bytes]) -> bool:
        """Append whole lines to ``f`` (its header first if it has not been written): all
        of them, or — the write failed, reported — none (cut back off)."""
        if f.header is not None:
            lines = [f.header, *lines]
        if not lines:
            return True
        data = b"\n".join(lines) + b"\n"
        if f.ragged:
            data = b"\n" + data
        try:
            if f.stream is None:
                if f.append:
                    f.stream = _open_append(f.name)
                    # Where a failed write is cut back to (a FIFO has no size: ragged).
                    f.size = os.fstat(f.stream.fileno()).st_size
                else:
                    f.stream = self._open(f.name)
            _write_all(f.stream, data)
            f.stream.flush()
        except (OSError, ValueError) as exc:
            f.why = f.why or f"writing the trace failed: {_describe(exc)}"
            self._cut_back(f)
            self._failed(f.name, exc)
            return False
        f.size += len(data)
        f.header = None
        f.ragged = False
        if self._failing:
            self._failing = False
            self._report("writing the trace works again: what could not be written is "
                         "declared by trace_truncated records")
        return True

    def _cut_back(self, f: _File) -> None:
        # A failed write may have left part of its data: the file must end with a
        # complete line.
        if f.stream is None:
            return
        try:
            f.stream.truncate(f.size)
            f.stream.seek(f.size)
        except (OSError, ValueError):
            f.ragged = True  # not a regular file: the next write begins a new line

    def _failed(self, name: str, exc: BaseException) -> None:
        if not self._failing:
            self._failing = True
            self._report(f"cannot write {name}: {_describe(exc)}; records are dropped "
                         "until writing works again")

    def _retry_unfinished(self) -> None:
        for sid, f in list(self._unfinished.items()):
            self._emit(f, [])
            if not f.owes:
                f.close()
                del self._unfinished[sid]

    def _note_sched(self, sid: str, global_seq: int, local_seq: int, n: int) -> None:
        # A session's latest schedule records: where an outside action is placed.
        notes = self._scheds.setdefault(sid, [])
        notes.append((global_seq, local_seq, n))
        if len(notes) > 2:
            del notes[0]

    def _local_at(self, sid: str, at: list[Any]) -> list[int]:
        """An outside action's place (``[sched seq, steps before]``, counted over every
        session of the process) in one session's file: its own records and steps."""
        g, k = int(at[0]), int(at[1])
        run = self._runs.get(g) or []
        mine = sum(1 for tid in run[:k] if self._task_session.get(tid) == sid)
        for global_seq, local_seq, n in reversed(self._scheds.get(sid, [])):
            if global_seq == g and mine:
                return [local_seq, mine]
            if global_seq < g:
                return [local_seq, n]
        return [0, 0]

    def _named(self, event: Any) -> Any:
        # The recording names a new task by its parent's number and its place among the
        # parent's children, three items a task (number, parent or None, ordinal or a
        # root's name: tasks.Numbering); the file says its whole name.
        names = self._names
        new: dict[int, str] = {}
        flat = event[6]
        for i in range(0, len(flat), 3):
            tid, parent, spec = flat[i], flat[i + 1], flat[i + 2]
            name = spec if parent is None else f"{names.get(parent, f'#{parent}')}/{spec}"
            new[tid] = names[tid] = name
        return (*event[:6], new)

    def _route(self, rec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        # Which session files a record goes to, and as what.
        kind = rec["kind"]
        if kind == "sched":
            for tid, name in (rec.get("new") or {}).items():
                self._task_session[int(tid)] = str(name).split("/", 1)[0]
            self._runs[rec["seq"]] = rec["run"]
            if len(self._runs) > 256:
                del self._runs[next(iter(self._runs))]
            per: dict[str, dict[str, Any]] = {}
            for tid in rec["run"]:
                sid = self._task_session.get(tid)
                if sid is None:
                    continue
                part = per.get(sid)
                if part is None:
                    part = per[sid] = {"seq": 0, "kind": "sched", "now": rec["now"], "run": []}
                part["run"].append(tid)
                name = (rec.get("new") or {}).get(str(tid))
                if name is not None:
                    part.setdefault("new", {})[str(tid)] = name
            return list(per.items())
        if kind == "read":
            sid = self._task_session.get(rec["task"])
            return [] if sid is None else [(sid, rec)]
        sid = rec.get("session")
        if sid is None:
            return []
        at = rec.get("at")
        if rec.get("actor") == "external" and isinstance(at, list) and len(at) == 2:
            rec = dict(rec, at=self._local_at(str(sid), at))
        return [(str(sid), rec)]

    def _maybe_rotate(self) -> None:
        f = self._whole
        if f is None:
            return
        if (self.rotate_bytes is not None and f.size >= self.rotate_bytes) or (
                self.rotate_seconds is not None
                and time.monotonic() - f.started >= self.rotate_seconds):
            if f.owes:
                return  # a segment ends with the whole of its lines, declarations included
            f.close()
            self._whole = self._new_segment(f)
            self._emit(self._whole, [])

    def session_closed(self, sid: str) -> None:
        """``sid`` ended: its file (per-session recordings) is complete, unless tasks
        it started go on (then their records are appended to it)."""
        f = self._files.pop(sid, None)
        if f is None:
            return
        self._closed[sid] = None
        if len(self._closed) > _CLOSED_MEMORY:
            self._closed.popitem(last=False)
        if f.owes:
            self._emit(f, [])
        if not f.owes:
            f.close()
            return
        # Writing fails: the file's end (what it lacks) is written when it works again.
        self._unfinished[sid] = f
        if len(self._unfinished) > _UNFINISHED_MEMORY:
            _, oldest = self._unfinished.popitem(last=False)
            oldest.close()

    def close(self) -> None:
        """Write what the files still owe, if writing works, and close them."""
        files = [*self._files.values(), *self._unfinished.values()]
        if self._whole is not None:
            files.append(self._whole)
        for f in files:
            if f.owes:
                self._emit(f, [])
            f.close()
        self._files.clear()
        self._unfinished.clear()
        self._whole = None

    @property
    def file_names(self) -> list[str]:
        """The files written so far (segments and per-session files)."""
        return sorted(self._all_names | {f.name for f in self._files.values()})


def _reopen(name: str) -> tuple[IO[bytes], int, int]:
    """Open a file another writer began: cut a partly written last line; the file, the
    number of its last record (0: header only; -1: not a regular file, which cannot
    be read back) and its size."""
    if not stat.S_ISREG(os.stat(name).st_mode):
        return _open_append(name), -1, 0
    stream = open(name, "r+b", buffering=0)
    try:
        data = stream.readall()
        end = data.rfind(b"\n") + 1
        stream.truncate(end)
        stream.seek(end)
    except BaseException:
        stream.close()
        raise
    last = 0
    for line in reversed(data[:end].splitlines()):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("seq"), int):
            last = obj["seq"]
            break
        if isinstance(obj, dict) and obj.get("kind") == "trace_truncated":
            first, lost = obj.get("first"), obj.get("lost")
            if isinstance(first, int):
                last = first + (lost if isinstance(lost, int) else 0) - 1
                break
    return stream, last, end


def serve(inp: IO[bytes], err: IO[str], out: IO[bytes] | None = None) -> None:
    """Read frames from ``inp`` until it ends; each channel's recording is written by a
    :class:`SinkCore` of its own. Trouble is reported on ``err``, and costs what it
    touched: a chunk that fails is declared lost and the recording goes on; a channel
    that cannot open drops its frames, and still answers its end (nothing waits for
    it in vain); the other channels go on."""
    cores: dict[int, SinkCore] = {}
    broken: set[int] = set()

    def say(channel: int, message: str) -> None:
        print(f"mcpactor trace sink: recording {channel}: {message}", file=err, flush=True)

    while True:
        head = _read(inp, FRAME.size)
        if head is None:
            break
        op, channel, length = FRAME.unpack(head)
        body = _read(inp, length)
        if body is None:
            break
        if op == OP_END:
            broken.discard(channel)
            core = cores.pop(channel, None)
            if core is not None:
                try:
                    core.close()
                except Exception as exc:
                    say(channel, f"closing its files failed: {type(exc).__name__}: {exc}")
            if out is not None:
                with contextlib.suppress(OSError):  # the recording process is gone
                    out.write(b"E %d\n" % channel)
                    out.flush()
            continue
        if channel in broken:
            continue
        try:
            if op == OP_OPEN:
                cores[channel] = SinkCore(orjson.loads(body),
                                          report=functools.partial(say, channel))
            elif op == OP_CHUNK:
                first_seq, events = marshal.loads(body)
                chunk_or_declare(cores[channel], first_seq, events)
            elif op == OP_PACKED:
                first_seq, events = _unpack()(body, marshal.loads)
                chunk_or_declare(cores[channel], first_seq, events)
            elif op == OP_SESSION:
                cores[channel].session_closed(body.decode())
        except Exception as exc:
            if channel in cores:
                say(channel, f"{type(exc).__name__}: {exc}")
                continue
            broken.add(channel)  # it never opened: nothing of it can be written
            say(channel, f"stopped: {type(exc).__name__}: {exc}")
    for core in cores.values():
        core.close()


def _unpack() -> Callable[[bytes, Callable[[bytes], Any]], tuple[int, list[Any]]]:
    # The compiled hooks' decoder: the recording process packs its chunks with them when
    # it has them, and this process is the same interpreter with the same package.
    from mcpactor.tracing import _hooks

    unpack: Callable[[bytes, Callable[[bytes], Any]], tuple[int, list[Any]]] = _hooks.unpack
    return unpack


def chunk_or_declare(core: SinkCore, first_seq: int, events: list[Any]) -> None:
    """``core.chunk``, and if it fails after all, its records declared lost (the
    recording goes on)."""
    try:
        core.chunk(first_seq, events)
    except Exception as exc:
        core.dropped(first_seq, len(events) // WIDTH,
                     f"records could not be written: {type(exc).__name__}: {exc}")
        raise


def _read(stream: IO[bytes], n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        more = stream.read(n - len(data))
        if not more:
            return None
        data += more
    return data


def main(argv: list[str]) -> int:
    """``python -m mcpactor.tracing.sink``: serve frames from stdin until it ends."""
    try:
        # Below the server it records, not starved: a sink at idle priority fell
        # minutes behind on a busy two-core machine.
        os.nice(10)
    except (AttributeError, OSError):
        pass
    serve(sys.stdin.buffer, sys.stderr, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
