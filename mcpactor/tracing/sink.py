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

import marshal
import os
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

__all__ = ["FRAME", "MemoryFiles", "SinkCore", "main"]

#: Frame header: type (1 byte), channel, body length.
FRAME = struct.Struct("<cII")
OP_OPEN, OP_CHUNK, OP_PACKED, OP_SESSION, OP_END = b"O", b"C", b"P", b"S", b"E"


class _File:
    """One trace file being written: its header, numbering and size."""

    def __init__(self, stream: IO[bytes], name: str, header: dict[str, Any] | None,
                 seq: int = 0) -> None:
        self.stream = stream
        self.name = name
        self.seq = seq
        self.size = 0
        self.started = time.monotonic()
        if header is not None:
            self.write([orjson.dumps(header)])

    def write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        data = b"\n".join(lines) + b"\n"
        self.stream.write(data)
        self.size += len(data)

    def close(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass


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

    def write(self, data: bytes) -> int:
        self._lines.extend(data.splitlines())
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


#: How many closed session files a per-session recording remembers (see ``_closed``).
_CLOSED_MEMORY = 65536


def _open_file(name: str) -> IO[bytes]:
    return open(name, "wb")


class SinkCore:
    """Encodes and writes one recording (see the module). ``spec`` keys: ``path`` (the
    file, or the folder with ``split``), ``split``, ``header`` (the header's object),
    ``origin`` (the clock reading, in ns, that event times count from), ``keys``
    (redacted keys), ``rotate_bytes``, ``rotate_seconds``."""

    def __init__(self, spec: dict[str, Any],
                 files: Callable[[str], IO[bytes]] | None = None) -> None:
        self.path = str(spec["path"])
        self.split = bool(spec.get("split"))
        self.header = dict(spec["header"])
        self.origin = int(spec.get("origin", 0))
        self.redactor = Redactor(frozenset(spec.get("keys") or ()))
        self.rotate_bytes: int | None = spec.get("rotate_bytes")
        self.rotate_seconds: float | None = spec.get("rotate_seconds")
        self._open = files or _open_file
        #: Take over files another writer began (a trace sink that died): keep what they
        #: hold up to their last complete line, and go on from there.
        self.resume = bool(spec.get("resume"))
        self._files: dict[str, _File] = {}
        #: Sessions whose files were closed, newest last (bounded): records that still
        #: come for one (a task's worker outliving its session) are appended to its
        #: file, which is never begun again.
        self._closed: OrderedDict[str, None] = OrderedDict()
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
            stream, last = _reopen(self.path)
            self._segment = 1
            self._all_names = self._all_names | {self.path}
            return _File(stream, self.path, None, last)
        self._segment += 1
        name = self._segment_name()
        header = dict(self.header, scope="process", segment=self._segment,
                      previous=Path(previous.name).name if previous is not None else None)
        f = _File(self._open(name), name, header)
        if previous is not None:
            f.seq = previous.seq
        self._all_names = self._all_names | {name}
        return f

    def _session_file(self, sid: str) -> _File:
        f = self._files.get(sid)
        if f is None:
            name = os.path.join(self.path, f"{sid}.jsonl")
            if (self.resume or sid in self._closed) and os.path.exists(name):
                stream, last = _reopen(name)
                f = self._files[sid] = _File(stream, name, None, last)
                return f
            header = dict(self.header, scope="session", session=sid, segment=1, previous=None)
            f = self._files[sid] = _File(self._open(name), name, header)
        return f

    # -- input --------------------------------------------------------------------------

    def chunk(self, first_seq: int, flat: list[Any]) -> None:
        """Encode and write the records of ``flat`` (a recorder's buffer: WIDTH items a
        record), numbered from ``first_seq`` (whole-process) or within each file (per
        session)."""
        if not flat:
            return
        if len(flat) % WIDTH:
            raise ValueError(f"a chunk of {len(flat)} items is not whole records of {WIDTH}")
        events = list(zip(*[iter(flat)] * WIDTH, strict=True))
        records = [to_event(self._named(e) if e[3] == "sched" and e[6] else e,
                            first_seq + i, self.origin) for i, e in enumerate(events)]
        if not self.split:
            assert self._whole is not None
            gap = first_seq - self._whole.seq - 1
            if gap > 0 and self.resume:
                # What the writer before this one never wrote.
                self._whole.write([orjson.dumps({
                    "kind": "trace_truncated", "first": self._whole.seq + 1, "lost": gap,
                    "reason": "the trace writer before this one stopped"})])
            self._whole.write(encode_events(records, self.redactor))
            self._whole.seq = records[-1]["seq"]
            self._whole.stream.flush()
            self._maybe_rotate()
            return
        per: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            for sid, part in self._route(rec):
                f = self._session_file(sid)
                if part["kind"] == "trace_truncated":
                    # How many of this session's events were lost is not known.
                    part["first"], part["lost"] = f.seq + 1, None
                else:
                    f.seq += 1
                    part["seq"] = f.seq
                    if part["kind"] == "sched":
                        self._note_sched(sid, rec["seq"], f.seq, len(part["run"]))
                per.setdefault(sid, []).append(part)
        for sid, recs in per.items():
            f = self._session_file(sid)
            f.write(encode_events(recs, self.redactor))
            f.stream.flush()

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
        if kind == "trace_truncated":
            return [(sid, dict(rec)) for sid in self._files]
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
            f.close()
            self._whole = self._new_segment(f)

    def session_closed(self, sid: str) -> None:
        """``sid`` ended: its file (per-session recordings) is complete, unless tasks
        it started go on (then their records are appended to it)."""
        f = self._files.pop(sid, None)
        if f is not None:
            f.close()
            self._closed[sid] = None
            if len(self._closed) > _CLOSED_MEMORY:
                self._closed.popitem(last=False)

    def close(self) -> None:
        """Close every file."""
        for f in self._files.values():
            f.close()
        self._files.clear()
        if self._whole is not None:
            self._whole.close()
            self._whole = None

    @property
    def file_names(self) -> list[str]:
        """The files written so far (segments and per-session files)."""
        return sorted(self._all_names | {f.name for f in self._files.values()})


def _reopen(name: str) -> tuple[IO[bytes], int]:
    # Cut a partly written last line; the seq of the last complete one (0: header only).
    stream = open(name, "r+b")
    data = stream.read()
    end = data.rfind(b"\n") + 1
    stream.truncate(end)
    stream.seek(end)
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
            last = int(obj.get("first", 1)) + int(obj.get("lost", 0)) - 1
            break
    return stream, last


def serve(inp: IO[bytes], err: IO[str], out: IO[bytes] | None = None) -> None:
    """Read frames from ``inp`` until it ends; each channel's recording is written by a
    :class:`SinkCore` of its own. A channel that fails is reported on ``err`` and its
    later frames are dropped; the others go on."""
    cores: dict[int, SinkCore] = {}
    broken: set[int] = set()
    while True:
        head = _read(inp, FRAME.size)
        if head is None:
            break
        op, channel, length = FRAME.unpack(head)
        body = _read(inp, length)
        if body is None:
            break
        if channel in broken:
            continue
        try:
            if op == OP_OPEN:
                cores[channel] = SinkCore(orjson.loads(body))
            elif op == OP_CHUNK:
                first_seq, events = marshal.loads(body)
                cores[channel].chunk(first_seq, events)
            elif op == OP_PACKED:
                first_seq, events = _unpack()(body, marshal.loads)
                cores[channel].chunk(first_seq, events)
            elif op == OP_SESSION:
                cores[channel].session_closed(body.decode())
            elif op == OP_END:
                core = cores.pop(channel, None)
                if core is not None:
                    core.close()
                if out is not None:
                    out.write(b"E %d\n" % channel)
                    out.flush()
        except Exception as exc:  # one recording's failure must not end the others
            broken.add(channel)
            core = cores.pop(channel, None)
            if core is not None:
                core.close()
            print(f"mcpactor trace sink: recording {channel} stopped: "
                  f"{type(exc).__name__}: {exc}", file=err, flush=True)
    for core in cores.values():
        core.close()


def _unpack() -> Callable[[bytes, Callable[[bytes], Any]], tuple[int, list[Any]]]:
    # The compiled hooks' decoder: the recording process packs its chunks with them when
    # it has them, and this process is the same interpreter with the same package.
    from mcpactor.tracing import _hooks

    unpack: Callable[[bytes, Callable[[bytes], Any]], tuple[int, list[Any]]] = _hooks.unpack
    return unpack


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
