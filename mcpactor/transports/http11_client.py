"""A sans-I/O HTTP/1.1 client codec: request bytes out, response events in.

The client side of :mod:`.http11`. h11 cost the client tens of microseconds per
request and response (its state machine, its event objects, a regular expression per
header), on the path of every MCP call over HTTP; this reads and writes what an MCP
client exchanges — one request at a time per connection, bodies framed by
``Content-Length``, chunked or (rarely) the end of the connection — in a few string
operations. It checks what it sends (no CR, LF or NUL can get into a head) and refuses
what it cannot frame safely (conflicting lengths, unknown transfer codings, a head
without an end).

Use: :func:`request_bytes` for the request, then a :class:`ResponseReader` per
response: :meth:`~ResponseReader.feed` it what arrives (``b""`` at the end of the
connection) and take events from :meth:`~ResponseReader.next_event` until
:data:`END`: one :class:`ResponseHead` (interim 1xx responses are skipped), then body
chunks as ``bytes``. After :data:`END`, :attr:`~ResponseReader.reusable` says whether
the connection may carry the next request.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = [
    "END",
    "NEED_DATA",
    "HttpProtocolError",
    "ResponseHead",
    "ResponseReader",
    "request_bytes",
]

#: A response head may not be larger than this (h11's default limit too).
MAX_HEAD = 64 * 1024

_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+\Z")
_TARGET = re.compile(r"[\x21-\x7e]+\Z")
_BAD_VALUE = re.compile(r"[\x00\r\n]")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [^\r\n]*)?\Z")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}\Z")


class HttpProtocolError(Exception):
    """The response breaks HTTP/1.1 (or a request could not be written as HTTP)."""


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: :meth:`ResponseReader.next_event`: feed more bytes first.
NEED_DATA: Final = _Marker("NEED_DATA")
#: :meth:`ResponseReader.next_event`: the response is complete.
END: Final = _Marker("END")


@attrs.frozen
class ResponseHead:
    """A final response's status line and headers (names lower-cased, values stripped)."""

    status: int
    headers: list[tuple[bytes, bytes]]
    http_version: str


def request_bytes(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes | None
) -> bytes:
    """A whole request: head and body. The caller supplies ``Host`` and
    ``Content-Length``; anything that would not be a valid HTTP head is refused with
    :class:`HttpProtocolError`."""
    if not _TOKEN.match(method):
        raise HttpProtocolError(f"invalid method {method!r}")
    if not _TARGET.match(target):
        raise HttpProtocolError(f"invalid request target {target!r}")
    lines = [f"{method} {target} HTTP/1.1"]
    for name, value in headers:
        value = value.strip(" \t")
        if not _TOKEN.match(name):
            raise HttpProtocolError(f"invalid header name {name!r}")
        if _BAD_VALUE.search(value):
            raise HttpProtocolError(f"invalid value for header {name!r} (CR, LF or NUL)")
        lines.append(f"{name}: {value}")
    try:
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    except UnicodeEncodeError as exc:
        raise HttpProtocolError(f"non-ASCII text in the request head: {exc}") from None
    return head + body if body else head


class ResponseReader:
    """Parses one response to a request made with ``method`` (see the module)."""

    def __init__(self, method: str = "GET") -> None:
        self._no_body = method.upper() == "HEAD"
        self._buf = bytearray()
        self._eof = False
        self._state = "head"  # head, length, chunk-size, chunk-data, chunk-end, trailer, close, done
        self._left = 0  # body bytes still due (length, chunk-data)
        self._keep_alive = False

    def feed(self, data: bytes) -> None:
        """Bytes received; ``b""``: the peer closed the connection."""
        if data:
            if self._eof:
                raise HttpProtocolError("data after the end of the connection")
            self._buf += data
        else:
            self._eof = True

    @property
    def reusable(self) -> bool:
        """After :data:`END`: the connection may carry another request."""
        return self._state == "done" and self._keep_alive and not self._buf and not self._eof

    def next_event(self) -> ResponseHead | bytes | _Marker:
        """The next event (see the module); raises :class:`HttpProtocolError`."""
        state = self._state
        if state == "head":
            return self._next_head()
        if state == "length":
            if not self._left:
                self._state = "done"
                return END
            if self._buf:
                take = min(self._left, len(self._buf))
                data = bytes(self._buf[:take])
                del self._buf[:take]
                self._left -= take
                return data
            return self._need("the body ended early")
        if state == "close":
            if self._buf:
                data = bytes(self._buf)
                self._buf.clear()
                return data
            if self._eof:
                self._state = "done"
                return END
            return NEED_DATA
        if state.startswith("chunk") or state == "trailer":
            return self._next_chunked()
        return END

    def _need(self, what: str) -> _Marker:
        if self._eof:
            raise HttpProtocolError(f"the connection closed mid-response: {what}")
        return NEED_DATA

    def _next_head(self) -> ResponseHead | bytes | _Marker:
        while True:
            buf = self._buf
            end = buf.find(b"\r\n\r\n")
            size = 4
            if end < 0:
                end, size = buf.find(b"\n\n"), 2
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise HttpProtocolError("the response head is too large")
                if self._eof and not buf:
                    raise HttpProtocolError("the connection closed before a response")
                return self._need("the head did not end")
            raw = bytes(buf[:end])
            del buf[: end + size]
            head = self._parse_head(raw)
            if head is not None:
                return head

    def _parse_head(self, raw: bytes) -> ResponseHead | None:
        lines = raw.replace(b"\r\n", b"\n").split(b"\n")
        match = _STATUS_LINE.match(lines[0])
        if match is None:
            raise HttpProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        minor, status = match.group(1), int(match.group(2))
        headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            if line[:1] in (b" ", b"\t"):  # obsolete line folding: part of the last value
                if not headers:
                    raise HttpProtocolError("a folded line before any header")
                name, value = headers[-1]
                headers[-1] = (name, (value + b" " + line.strip(b" \t")).strip(b" \t"))
                continue
            name, sep, value = line.partition(b":")
            if not sep or not name or name != name.strip(b" \t"):
                raise HttpProtocolError(f"bad header line {line[:80]!r}")
            headers.append((name.lower(), value.strip(b" \t")))
        if 100 <= status < 200:
            if status == 101:
                raise HttpProtocolError("the server switched protocols, which was not asked for")
            return None  # interim: the final response follows
        version = "1." + minor.decode()
        connection = b",".join(v for k, v in headers if k == b"connection").lower()
        tokens = {t.strip() for t in connection.split(b",")}
        self._keep_alive = version == "1.1" and b"close" not in tokens
        self._frame(status, headers)
        return ResponseHead(status, headers, version)

    def _frame(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        # RFC 9112 section 6.3, in its order.
        if self._no_body or status in (204, 304):
            self._state, self._left = "length", 0
            return
        codings = [c.strip().lower() for k, v in headers if k == b"transfer-encoding"
                   for c in v.split(b",") if c.strip()]
        if codings:
            if codings != [b"chunked"]:
                raise HttpProtocolError(f"unsupported transfer coding {b', '.join(codings)!r}")
            self._state = "chunk-size"
            return
        lengths = {v.strip() for k, v in headers if k == b"content-length"}
        if lengths:
            values = {p.strip() for v in lengths for p in v.split(b",")}
            if len(values) != 1 or not next(iter(values)).isdigit():
                raise HttpProtocolError(f"bad Content-Length {sorted(lengths)!r}")
            self._state, self._left = "length", int(next(iter(values)))
            return
        self._state, self._keep_alive = "close", False

    def _next_chunked(self) -> bytes | _Marker:
        buf = self._buf
        while True:
            state = self._state
            if state == "chunk-data":
                if not buf:
                    return self._need("inside a chunk")
                take = min(self._left, len(buf))
                data = bytes(buf[:take])
                del buf[:take]
                self._left -= take
                if not self._left:
                    self._state = "chunk-end"
                return data
            end = buf.find(b"\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise HttpProtocolError("a chunk line is too long")
                return self._need("a chunk line did not end")
            line = bytes(buf[:end]).rstrip(b"\r")
            del buf[: end + 1]
            if state == "chunk-end":
                if line:
                    raise HttpProtocolError("a chunk did not end with CRLF")
                self._state = "chunk-size"
            elif state == "chunk-size":
                size_text = line.split(b";", 1)[0].strip(b" \t")
                if not _HEX.match(size_text):
                    raise HttpProtocolError(f"bad chunk size {line[:40]!r}")
                size = int(size_text, 16)
                if size:
                    self._state, self._left = "chunk-data", size
                else:
                    self._state = "trailer"
            else:  # trailer fields until an empty line; their content is not used
                if not line:
                    self._state = "done"
                    return END
