"""Trace recorders: JSONL files (``--trace PATH``) and an in-memory list for tests.

Recording stays off the per-message path as far as it can: an event is appended to a
list as a small dict, and the list is encoded with orjson and written in one call every
few hundred events (and at close). Messages that are already encoded bytes are embedded
with ``orjson.Fragment``, so a message is never decoded and encoded again for the trace.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO, Any

import attrs
import orjson
import trio

from mcpactor import __version__ as _version

TRACE_FORMAT_VERSION = 1
_FLUSH_EVERY = 512

# Keys whose values are secrets wherever they appear in a traced message.
DEFAULT_REDACT_KEYS = frozenset(
    {"authorization", "access_token", "refresh_token", "client_secret", "password", "token"}
)


@attrs.define
class TraceHeader:
    """The first line of a trace: what is needed to replay the rest."""

    role: str
    transport: str
    entry_point: str | None = None
    protocol_version: str | None = None
    session: str | None = None
    seeds: dict[str, Any] = attrs.Factory(dict)
    redacted_keys: list[str] = attrs.Factory(lambda: sorted(DEFAULT_REDACT_KEYS))

    def to_json(self, clock_origin: float, wall_origin: float) -> dict[str, Any]:
        """The header line's JSON object."""
        return {
            "type": "header",
            "format": "mcpactor-trace",
            "format_version": TRACE_FORMAT_VERSION,
            "mcpactor_version": _version,
            "protocol_version": self.protocol_version,
            "role": self.role,
            "transport": self.transport,
            "entry_point": self.entry_point,
            "session": self.session,
            "seeds": self.seeds,
            "clock": {"origin": clock_origin, "wall_origin": wall_origin},
            "redacted_keys": self.redacted_keys,
        }


def _now() -> float:
    try:
        return trio.current_time()
    except RuntimeError:
        return time.monotonic()


class _BufferedRecorder:
    def __init__(self, header: TraceHeader) -> None:
        self.header = header
        self._events: list[dict[str, Any]] = []
        self._seq = 0
        self._origin = _now()
        self._wall = time.time()
        self._header_done = False
        self._closed = False

    def emit(self, session: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        """Record one event (see :class:`mcpactor.tracing.Tracer`)."""
        if self._closed:
            return
        self._seq += 1
        if kind == "initialized" and self.header.protocol_version is None:
            self.header.protocol_version = data.get("protocol_version")
        self._events.append(
            {
                "seq": self._seq,
                "t": round(_now() - self._origin, 9),
                "session": session,
                "actor": actor,
                "kind": kind,
                **data,
            }
        )
        if len(self._events) >= _FLUSH_EVERY:
            self.flush()

    def _lines(self) -> list[bytes]:
        lines: list[bytes] = []
        if not self._header_done:
            self._header_done = True
            lines.append(orjson.dumps(self.header.to_json(self._origin, self._wall)))
        dumps = orjson.dumps
        for ev in self._events:
            try:
                lines.append(dumps(ev))
            except TypeError:
                lines.append(dumps({k: repr(v) if k == "data" else v for k, v in ev.items()}))
        self._events.clear()
        return lines

    def flush(self) -> None:
        """Write buffered events."""

    def close(self) -> None:
        """Flush and stop recording."""
        if not self._closed:
            self.flush()
            self._closed = True


class JsonlRecorder(_BufferedRecorder):
    """Writes a trace to ``path`` as JSON Lines: a header, then one event per line."""

    def __init__(self, path: str | os.PathLike[str], header: TraceHeader) -> None:
        super().__init__(header)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] = open(self.path, "wb")

    def flush(self) -> None:
        """Encode and write buffered events in one call."""
        lines = self._lines()
        if lines:
            self._file.write(b"\n".join(lines) + b"\n")
            self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if not self._closed:
            super().close()
            self._file.close()


class MemoryRecorder(_BufferedRecorder):
    """Keeps the trace in memory as JSON lines (tests, the replayer's output stream)."""

    def __init__(self, header: TraceHeader | None = None) -> None:
        super().__init__(header or TraceHeader(role="unknown", transport="memory"))
        self.lines: list[bytes] = []

    def flush(self) -> None:
        """Move buffered events to :attr:`lines`."""
        self.lines.extend(self._lines())

    def events(self) -> list[dict[str, Any]]:
        """Every event so far, decoded (the header excluded)."""
        self.flush()
        return [e for e in map(orjson.loads, self.lines) if e.get("type") != "header"]
