"""Reading traces: the header, the events, and every way a file can be unusable.

Every problem is a :class:`TraceError` with a one-line message naming the file and
line, which the command line prints as is (exit status 2).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import orjson

from mcpactor.tracing.encode import dumps, loads
from mcpactor.tracing.recorder import TRACE_FORMAT, TRACE_FORMAT_VERSION

SUPPORTED_VERSIONS = frozenset({1, TRACE_FORMAT_VERSION})
#: Records of the schedule and the entropy capture (version 2), not events of a session.
SCHEDULE_KINDS = frozenset({"sched", "read", "trace_truncated"})

#: Event kinds that are inputs: the replayer delivers them instead of reproducing them.
INPUT_KINDS = frozenset({"message_in", "message_oversize", "transport_closed", "transport_broken"})

#: Keys that legitimately differ between a recording and its replay (``at``: where in
#: the recorded steps an outside action happened, which the replay does not renumber).
VOLATILE_KEYS = frozenset({"seq", "t", "session", "at"})

#: Records that annotate the run without being part of it (``otel_span``: the
#: OpenTelemetry ids of a request's server span, written while the run was observed):
#: kept aside (:attr:`Trace.annotations`), never replayed nor compared.
ANNOTATION_KINDS = frozenset({"otel_span"})

#: The ``_meta`` keys of W3C trace context and baggage: an observed run puts fresh ids
#: there on every message it sends, so messages are compared without them.
PROPAGATION_KEYS = ("traceparent", "tracestate", "baggage")


class TraceError(Exception):
    """A trace that cannot be used: malformed, truncated, or of an unknown version."""


@attrs.frozen
class Event:
    """One recorded event: its position, time, actor, kind and the whole JSON object."""

    index: int
    seq: int
    t: float
    actor: str
    kind: str
    data: dict[str, Any]

    @property
    def is_input(self) -> bool:
        """Whether the replayer delivers this event (something the peer did)."""
        return self.actor == "reader" and self.kind in INPUT_KINDS

    @property
    def session(self) -> str | None:
        """The id of the session the event belongs to."""
        sid = self.data.get("session")
        return None if sid is None else str(sid)

    @property
    def stream(self) -> str:
        """The actor stream this event belongs to (see :func:`stream_key`)."""
        return stream_key(self.actor, self.data)

    def comparable(self) -> dict[str, Any]:
        """The event without the keys that may differ in a faithful replay."""
        return comparable(self.data)


def comparable(data: dict[str, Any]) -> dict[str, Any]:
    """An event without what may differ in a faithful replay: the volatile keys, and
    the trace context an observed run added to its messages (:data:`PROPAGATION_KEYS`)."""
    out = {k: v for k, v in data.items() if k not in VOLATILE_KEYS}
    msg = out.get("msg")
    if msg is not None and out.get("kind") in ("message_out", "message_in"):
        out["msg"] = _without_propagation(msg)
    return out


def _without_propagation(msg: Any) -> Any:
    if isinstance(msg, list):
        return [_without_propagation(m) for m in msg]
    if not isinstance(msg, dict):
        return msg
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or not any(k in meta for k in PROPAGATION_KEYS):
        return msg
    assert isinstance(params, dict)
    rest = {k: v for k, v in meta.items() if k not in PROPAGATION_KEYS}
    new_params = {k: v for k, v in params.items() if k != "_meta"}
    if rest:
        new_params["_meta"] = rest
    out = {k: v for k, v in msg.items() if k != "params"}
    if new_params:
        out["params"] = new_params
    return out


def stream_key(actor: str, data: dict[str, Any]) -> str:
    """Events of one stream happen in a fixed order; streams interleave freely.

    One stream per actor task, except the tracker, whose events come from whichever
    handler task sent the request: it gets one stream per request id.
    """
    if actor == "tracker":
        return f"tracker:{dumps(data.get('id')).decode()}"
    return actor


@attrs.frozen
class Sched:
    """(Version 2) one pass of the recorded run's loop: its clock reading and the
    followed tasks that took a step in it, in the order they ran."""

    index: int
    seq: int
    now: float
    run: tuple[int, ...]


@attrs.frozen
class Read:
    """(Version 2) a value a followed task read: a clock, or entropy."""

    seq: int
    task: int
    source: str
    value: Any


@attrs.frozen
class Trace:
    """A loaded trace: the header object and the events in recorded order.

    Version 2 traces also have the schedule (:attr:`scheds`), the task names it uses
    (:attr:`names`), the values the tasks read (:attr:`reads`) and the gaps the recording
    declared (:attr:`truncations`: ``(first seq, lost count or None)``).
    """

    header: dict[str, Any]
    events: tuple[Event, ...]
    path: Path | None = None
    scheds: tuple[Sched, ...] = ()
    names: dict[int, str] = attrs.Factory(dict)
    reads: tuple[Read, ...] = ()
    truncations: tuple[tuple[int, int | None], ...] = ()
    #: (Version 2) the schedule's and reads' lines as recorded, with their seqs.
    schedule_lines: tuple[tuple[int, bytes], ...] = ()
    #: Records of :data:`ANNOTATION_KINDS`, as read (not events of the run).
    annotations: tuple[dict[str, Any], ...] = ()

    @property
    def version(self) -> int:
        """The format version."""
        return int(self.header.get("format_version", 1))

    @property
    def sessions(self) -> list[str]:
        """The ids of the sessions in the trace, in the order they started."""
        seen: dict[str, None] = {}
        for ev in self.events:
            sid = ev.session
            if sid is not None:
                seen.setdefault(sid, None)
        return list(seen)

    @property
    def role(self) -> str:
        """``server`` or ``client``."""
        return str(self.header.get("role"))

    @property
    def session(self) -> str | None:
        """The recorded session id."""
        if self.events:
            return str(self.events[0].data.get("session"))
        s = self.header.get("session")
        return None if s is None else str(s)

    def by_seq(self, seq: int) -> Event | None:
        """The event numbered ``seq``, if any."""
        for ev in self.events:
            if ev.seq == seq:
                return ev
        return None


def load_trace(path: str | os.PathLike[str], *, require_end: bool = True) -> Trace:
    """Read and check a trace file (``require_end=False`` accepts one whose recording was
    cut short after a complete line: it can still be shown, or replayed ``--until``).

    A segment of a rotated whole-process trace is read with every segment before it (its
    header names the one before, in the same folder): a replay starts where the process
    did."""
    p = Path(path)
    data = _read_file(p)
    if not data.strip():
        segments = _segments_of(p)
        if segments:
            # `--trace rot.jsonl --trace-max-bytes` leaves rot.jsonl empty and writes
            # the segments beside it: the last one replays the whole chain.
            raise TraceError(f"{p}: empty file, not a trace: the recording was rotated "
                             f"into {len(segments)} segment(s) beside it; replay the last, "
                             f"{segments[-1]}, which reads the ones before it")
        raise TraceError(f"{p}: empty file, not a trace")
    chain = [p]
    first = data
    given: dict[str, Any] = {}
    while True:
        header = _header(str(chain[-1]), first.split(b"\n", 1)[0])
        given = header if len(chain) == 1 else given
        previous = header.get("previous")
        if not previous or header.get("format_version") == 1:
            break
        before = chain[-1].parent / str(previous)
        if not before.is_file() or before in chain:
            number = given.get("segment")
            this = f"segment {number}" if isinstance(number, int) else "a segment"
            which = "it" if len(chain) == 1 else (
                f"it is read with the segments before it, and {chain[-1].name}")
            raise TraceError(
                f"{p}: {this} of a rotated recording; {which} continues {previous}, "
                f"which is needed and missing from {chain[-1].parent}: a segment replays "
                "with every segment before it, so put all the segments in one folder and "
                "replay the last one")
        chain.append(before)
        first = _read_file(before)
    if len(chain) > 1:
        # The first segment's header, then every segment's records in order. Messages
        # name the segment given (the chain is read from it), not the first one.
        parts = [_read_file(q) for q in reversed(chain)]
        data = parts[0] + b"".join(part.split(b"\n", 1)[1] for part in parts[1:])
        try:
            return parse_trace(data, p, require_end=require_end)
        except TraceError as exc:
            text = str(exc)
            where = f"{p} (read with the {len(chain) - 1} segment(s) before it)"
            raise TraceError(where + text[len(str(p)):] if text.startswith(str(p))
                             else text) from None
    return parse_trace(data, p, require_end=require_end)


def _segments_of(p: Path) -> list[Path]:
    """The rotated segments of a whole-process trace recorded as ``p``
    (``<name>-<UTC start>-<n>.jsonl`` beside it), in order."""
    import re

    pattern = re.compile(re.escape(p.stem) + r"-\d{8}T\d{6}Z-(\d+)" + re.escape(p.suffix) + "$")
    try:
        found = [(int(m.group(1)), q) for q in p.parent.iterdir()
                 if (m := pattern.match(q.name))]
    except OSError:
        return []
    return [q for _, q in sorted(found)]


def _read_file(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{p}: no such trace file") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot read: {exc.strerror or exc}") from None


def parse_trace(data: bytes, path: Path | None = None, *, require_end: bool = True) -> Trace:
    """Parse trace bytes (``path`` only names the source in messages)."""
    name = str(path) if path is not None else "<trace>"
    if not data.strip():
        raise TraceError(f"{name}: empty file, not a trace")
    lines = data.split(b"\n")
    complete = data.endswith(b"\n")
    if complete:
        lines.pop()
    header = _header(name, lines[0])
    version = header.get("format_version")
    events: list[Event] = []
    scheds: list[Sched] = []
    reads: list[Read] = []
    names: dict[int, str] = {}
    truncations: list[tuple[int, int | None]] = []
    schedule_lines: list[tuple[int, bytes]] = []
    annotations: list[dict[str, Any]] = []
    last_seq = 0
    expect: int | None = None  # version 2: every line's seq is the one after the last
    for number, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        try:
            # Integers past 64 bits (request ids) exact: a replay feeds them back.
            obj = loads(raw)
        except ValueError:
            if number == len(lines) and not complete:
                raise TraceError(f"{name}: truncated: line {number} is cut off") from None
            raise TraceError(f"{name}: line {number} is not valid JSON") from None
        if version == 1:
            events.append(_event(name, number, obj, len(events)))
            if events[-1].seq <= last_seq:
                raise TraceError(f"{name}: line {number}: seq {events[-1].seq} is out of order")
            last_seq = events[-1].seq
            continue
        if not isinstance(obj, dict):
            raise TraceError(f"{name}: line {number} is not an event object")
        kind = obj.get("kind")
        if kind == "trace_truncated":
            first, lost = obj.get("first"), obj.get("lost")
            # It follows the last record, or the gap another one declared just before.
            if not isinstance(first, int) or first not in (last_seq + 1, expect):
                raise TraceError(f"{name}: line {number}: a trace_truncated record that does "
                                 f"not follow #{last_seq}")
            truncations.append((first, lost if isinstance(lost, int) else None))
            expect = first + lost if isinstance(lost, int) else None
            continue
        seq = obj.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise TraceError(f"{name}: line {number}: missing or bad 'seq'")
        wanted = last_seq + 1 if expect is None else expect
        if truncations and expect is None and seq > last_seq:
            wanted = seq  # after a gap of unknown size, numbering resumes anywhere higher
        if seq != wanted:
            if seq <= last_seq:
                raise TraceError(f"{name}: line {number}: seq {seq} is out of order "
                                 f"(after #{last_seq})")
            raise TraceError(
                f"{name}: line {number}: seq jumps from {last_seq} to {seq}: "
                f"{seq - last_seq - 1} line(s) are missing (edited or cut out of the trace)")
        last_seq, expect = seq, None
        if kind == "sched":
            scheds.append(_sched(name, number, obj, len(scheds), names))
            schedule_lines.append((seq, raw))
        elif kind == "read":
            reads.append(_read(name, number, obj))
            schedule_lines.append((seq, raw))
        elif kind in ANNOTATION_KINDS:
            annotations.append(obj)
        else:
            events.append(_event(name, number, obj, len(events)))
    if require_end:
        _check_ends(name, events, truncations)
    return Trace(header, tuple(events), path, tuple(scheds), names, tuple(reads),
                 tuple(truncations), tuple(schedule_lines), tuple(annotations))


def _check_ends(name: str, events: list[Event], truncations: list[Any]) -> None:
    if truncations:
        first, lost = truncations[0]
        how = "an unknown number of" if lost is None else str(lost)
        raise TraceError(
            f"{name}: the recording lost {how} records from #{first} (its writer fell behind, "
            f"died or could not write): replay what comes before with --until {first - 1}")
    if not events:
        raise TraceError(f"{name}: truncated: the trace has no events")
    open_: dict[str, int] = {}
    for ev in events:
        if ev.kind == "session_started" and ev.session is not None:
            open_[ev.session] = ev.seq
        elif ev.kind == "session_closed" and ev.session is not None:
            open_.pop(ev.session, None)
    # A task may outlive its session (and the recording): its events (actor "task:ID")
    # may follow the last session_closed, and one still running at the end is no cut.
    last_session = next((ev for ev in reversed(events)
                         if not (ev.actor or "").startswith("task:")), events[-1])
    if open_ or last_session.kind != "session_closed":
        last = events[-1].seq
        raise TraceError(
            f"{name}: truncated: the trace ends at event #{last} without its session_closed "
            f"event (was the recording cut short? replay what is there with --until {last})"
        )


def _sched(name: str, number: int, obj: dict[str, Any], index: int,
           names: dict[int, str]) -> Sched:
    now, run = obj.get("now"), obj.get("run")
    if not isinstance(now, int | float) or isinstance(now, bool) or not isinstance(run, list) \
            or not all(isinstance(i, int) for i in run):
        raise TraceError(f"{name}: line {number}: a sched record needs 'now' and 'run'")
    new = obj.get("new") or {}
    if not isinstance(new, dict):
        raise TraceError(f"{name}: line {number}: 'new' must map task numbers to names")
    for key, value in new.items():
        try:
            tid = int(key)
        except ValueError:
            raise TraceError(f"{name}: line {number}: task number {key!r} is not a number") from None
        if tid in names or not isinstance(value, str):
            raise TraceError(f"{name}: line {number}: task #{tid} is named twice")
        names[tid] = value
    for tid in run:
        if tid not in names:
            raise TraceError(f"{name}: line {number}: task #{tid} runs before it was named "
                             "(the trace was edited, or lines are missing)")
    return Sched(index, int(obj["seq"]), float(now), tuple(run))


def _read(name: str, number: int, obj: dict[str, Any]) -> Read:
    task, src = obj.get("task"), obj.get("src")
    if not isinstance(task, int) or not isinstance(src, str) or "v" not in obj:
        raise TraceError(f"{name}: line {number}: a read record needs 'task', 'src' and 'v'")
    return Read(int(obj["seq"]), task, src, obj["v"])


def _header(name: str, raw: bytes) -> dict[str, Any]:
    try:
        header = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise TraceError(f"{name}: line 1 is not a JSON header; not an mcpactor trace") from None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise TraceError(f"{name}: line 1 is not a trace header; not an mcpactor trace")
    if header.get("format") != TRACE_FORMAT:
        raise TraceError(f"{name}: format {header.get('format')!r} is not {TRACE_FORMAT!r}")
    version = header.get("format_version")
    if version not in SUPPORTED_VERSIONS:
        known = ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))
        raise TraceError(
            f"{name}: unknown trace format version {version!r} (this mcpactor reads {known})"
        )
    return header


def _event(name: str, number: int, obj: Any, index: int) -> Event:
    if not isinstance(obj, dict):
        raise TraceError(f"{name}: line {number} is not an event object")
    seq, t, actor, kind = obj.get("seq"), obj.get("t"), obj.get("actor"), obj.get("kind")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise TraceError(f"{name}: line {number}: missing or bad 'seq'")
    if not isinstance(t, int | float) or isinstance(t, bool):
        raise TraceError(f"{name}: line {number}: missing or bad 't'")
    if not isinstance(actor, str) or not isinstance(kind, str):
        raise TraceError(f"{name}: line {number}: missing 'actor' or 'kind'")
    if kind == "message_in" and "msg" not in obj and "raw" not in obj:
        raise TraceError(f"{name}: line {number}: message_in without 'msg' or 'raw'")
    if "raw_b64" in obj and not _base64(obj["raw_b64"]):
        raise TraceError(f"{name}: line {number}: 'raw_b64' is not base64")
    if kind == "message_out" and "msg" not in obj:
        raise TraceError(f"{name}: line {number}: message_out without 'msg'")
    return Event(index, seq, float(t), actor, kind, obj)


def _base64(value: Any) -> bool:
    import base64
    import binascii

    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True
