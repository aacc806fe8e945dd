"""Newline-delimited message framing for byte streams (the stdio transport), sans-I/O.

MCP's stdio transport sends one JSON-RPC message per line; messages never contain
embedded newlines. :class:`LineFramer` turns arbitrary chunks into whole lines without
copying more than it must, and bounds how much a peer can make us buffer.
"""

from __future__ import annotations

import attrs

DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024


@attrs.frozen(slots=True)
class Oversize:
    """A line longer than the limit was discarded; ``size`` is how long it got."""

    size: int


class LineFramer:
    """Split a byte stream into lines of at most ``max_size`` bytes.

    A line over the limit is discarded up to its newline and reported once as
    :class:`Oversize`, so a peer sending too much cannot grow our buffer without bound
    and the next message still parses.
    """

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE) -> None:
        self.max_size = max_size
        self._buf = bytearray()
        self._discarding = 0  # bytes dropped so far of an oversize line, 0 if none

    def feed(self, chunk: bytes) -> list[bytes | Oversize]:
        """Add a chunk; return the complete lines (without newline) it finished."""
        out: list[bytes | Oversize] = []
        if self._discarding:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._discarding += len(chunk)
                return out
            out.append(Oversize(self._discarding + nl))
            self._discarding = 0
            chunk = chunk[nl + 1 :]
        if self._buf:
            self._buf += chunk
            data = bytes(self._buf)
            self._buf.clear()
        else:
            data = chunk
        start = 0
        find = data.find
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                break
            line = data[start:nl]
            start = nl + 1
            if len(line) > self.max_size:
                out.append(Oversize(len(line)))
                continue
            if line.endswith(b"\r"):
                line = line[:-1]
            if line.strip():
                out.append(line)
        rest = len(data) - start
        if rest > self.max_size:
            self._discarding = rest
        elif rest:
            self._buf += data[start:]
        return out

    def pending(self) -> int:
        """Bytes buffered towards an unfinished line."""
        return len(self._buf) + self._discarding

    def eof(self) -> list[bytes | Oversize]:
        """The stream ended: a final unterminated line still counts as a message."""
        out: list[bytes | Oversize] = []
        if self._discarding:
            out.append(Oversize(self._discarding))
        elif self._buf.strip():
            out.append(bytes(self._buf))
        self._buf.clear()
        self._discarding = 0
        return out
