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

from mcpactor.tracing.recorder import TRACE_FORMAT, TRACE_FORMAT_VERSION

SUPPORTED_VERSIONS = frozenset({TRACE_FORMAT_VERSION})

#: Event kinds that are inputs: the replayer delivers them instead of reproducing them.
INPUT_KINDS = frozenset({"message_in", "message_oversize", "transport_closed", "transport_broken"})

#: Keys that legitimately differ between a recording and its replay.
VOLATILE_KEYS = frozenset({"seq", "t", "session"})


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
    def stream(self) -> str:
        """The actor stream this event belongs to (see :func:`stream_key`)."""
        return stream_key(self.actor, self.data)

    def comparable(self) -> dict[str, Any]:
        """The event without the keys that may differ in a faithful replay."""
        return {k: v for k, v in self.data.items() if k not in VOLATILE_KEYS}


def stream_key(actor: str, data: dict[str, Any]) -> str:
    """Events of one stream happen in a fixed order; streams interleave freely.

    One stream per actor task, except the tracker, whose events come from whichever
    handler task sent the request: it gets one stream per request id.
    """
    if actor == "tracker":
        return f"tracker:{orjson.dumps(data.get('id')).decode()}"
    return actor


@attrs.frozen
class Trace:
    """A loaded trace: the header object and the events in recorded order."""

    header: dict[str, Any]
    events: tuple[Event, ...]
    path: Path | None = None

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
    cut short after a complete line: it can still be shown, or replayed ``--until``)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{p}: no such trace file") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return parse_trace(data, p, require_end=require_end)


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
    events: list[Event] = []
    last_seq = 0
    for number, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if number == len(lines) and not complete:
                raise TraceError(f"{name}: truncated: line {number} is cut off") from None
            raise TraceError(f"{name}: line {number} is not valid JSON") from None
        events.append(_event(name, number, obj, len(events)))
        if events[-1].seq <= last_seq:
            raise TraceError(f"{name}: line {number}: seq {events[-1].seq} is out of order")
        last_seq = events[-1].seq
    if require_end and (not events or events[-1].kind != "session_closed"):
        last = events[-1].seq if events else 0
        raise TraceError(
            f"{name}: truncated: the trace ends at event #{last} without its session_closed "
            f"event (was the recording cut short? replay what is there with --until {last})"
        )
    return Trace(header, tuple(events), path)


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
    if kind == "message_out" and "msg" not in obj:
        raise TraceError(f"{name}: line {number}: message_out without 'msg'")
    return Event(index, seq, float(t), actor, kind, obj)
