"""A sans-I/O HTTP/1.1 fast path: the common request head in, response bytes out.

h11 costs ~70 us per request and response on the benchmark machine, a quarter of
the whole per-call budget of our server. Nearly every request an MCP client sends
has the same shape: an HTTP/1.1 request line, a handful of headers, a body framed by
``Content-Length``, keep-alive. :func:`parse_head` reads exactly that shape, with one
regular expression for the request line and one for the header block, and answers
:data:`FALLBACK` for everything else (HTTP/1.0, chunked bodies, ``Expect``,
upgrades, obsolete line folding, bare LF line ends, odd characters, a missing or
repeated ``Host``, a repeated or malformed ``Content-Length``, HEAD ...). The caller
then hands the buffered bytes to a fresh ``h11.Connection``, which gives the correct
answer, including the right 4xx for malformed input.

The rule that keeps the two paths consistent: a head is accepted here only when h11
would accept it and parse it to the same method, target and headers (names
lower-cased, values stripped of surrounding blanks).
``tests/transports/test_http11.py`` checks it on the same inputs.

Responses: :func:`response_head` serializes a status line and headers (adding
``Transfer-Encoding: chunked`` when the body length is unknown), :func:`chunk`
frames a body chunk, :data:`LAST_CHUNK` ends a chunked body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from http import HTTPStatus
from typing import Final

__all__ = [
    "FALLBACK",
    "LAST_CHUNK",
    "Fallback",
    "HeadCache",
    "RequestHead",
    "chunk",
    "head_too_large",
    "parse_head",
    "response_head",
]

_TOKEN = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e]+) HTTP/1\.1\r\n")
# A header line h11 accepts, OWS and field content together: once the blanks around
# the value are stripped, any run of blanks, visible ASCII and obs-text is a valid
# field value. Stricter than h11 (which also admits control characters other than NUL
# and CR/LF): what is left out goes to h11 to judge.
_HEADER_BLOCK = re.compile(rb"(?:" + _TOKEN + rb":[\t\x20-\x7e\x80-\xff]*\r\n)*")
_DIGITS = re.compile(rb"[0-9]{1,18}")
# h11 ends a head at the first empty line, LF or CRLF: such a head is h11's to read.
_LOOSE_END = re.compile(rb"\n\r?\n")

#: Headers whose presence sends the request to h11 (framing and protocol switches).
_SLOW_HEADERS: Final = frozenset({b"transfer-encoding", b"expect", b"upgrade"})


class Fallback:
    """The type of :data:`FALLBACK`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FALLBACK"


#: :func:`parse_head`'s answer for a request the fast path does not take.
FALLBACK: Final = Fallback()


class RequestHead:
    """A parsed request head; the body starts at ``body_start`` in the buffer."""

    __slots__ = ("body_start", "close", "content_length", "headers", "method", "target")

    def __init__(
        self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]],
        content_length: int, close: bool, body_start: int,
    ) -> None:
        self.method = method
        self.target = target
        #: Names lower-cased, values stripped, in the order received.
        self.headers = headers
        self.content_length = content_length
        #: The client sent ``Connection: close``: end the connection after answering.
        self.close = close
        self.body_start = body_start


class HeadCache:
    """The last request head parsed and response head serialized on one connection.

    A client sends the same head over and over (only ``Content-Length`` moves), and
    the app answers it with the same head: one entry per connection catches that, and
    memory stays bounded by the connections, not by the sessions they carry.
    """

    __slots__ = ("request", "request_key", "response", "response_key")

    def __init__(self) -> None:
        self.request_key: bytes | None = None
        self.request: tuple[bytes, bytes, list[tuple[bytes, bytes]], int, bool] | None = None
        self.response_key: tuple[int, tuple[tuple[bytes, bytes], ...], bool] | None = None
        self.response: tuple[bytes, bool, bool, int] | None = None


def parse_head(
    buf: bytes | bytearray, max_head: int, cache: HeadCache | None = None
) -> RequestHead | Fallback | None:
    """Parse the request head at the start of ``buf``.

    Returns the head, None when more bytes are needed, or :data:`FALLBACK` when h11
    must read this request (unusual shape, malformed, or longer than ``max_head``).
    """
    end = buf.find(b"\r\n\r\n", 0, max_head + 4)
    if end < 0:
        if len(buf) > max_head or _LOOSE_END.search(buf):
            return FALLBACK
        return None
    if cache is None:
        return _parse(buf, end)
    key = bytes(buf[:end])
    known = cache.request
    if known is not None and key == cache.request_key:
        method, target, headers, length, close = known
        return RequestHead(method, target, list(headers), length, close, end + 4)
    got = _parse(buf, end)
    if isinstance(got, RequestHead):
        cache.request_key = key
        cache.request = (got.method, got.target, list(got.headers), got.content_length,
                         got.close)
    return got


def _parse(buf: bytes | bytearray, end: int) -> RequestHead | Fallback:
    """:func:`parse_head` for a head that ends at ``end`` and is not in the cache."""
    line = _REQUEST_LINE.match(buf, 0, end + 2)
    if line is None:
        return FALLBACK
    start = line.end()
    block = bytes(buf[start : end + 2])
    if _HEADER_BLOCK.fullmatch(block) is None:
        return FALLBACK
    headers: list[tuple[bytes, bytes]] = []
    host = 0
    length: bytes | None = None
    close = False
    # Validated above: every line is ``token ":" value`` (split, not findall: faster).
    for text in block[:-2].split(b"\r\n") if block else ():
        raw_name, _, value = text.partition(b":")
        name = raw_name.lower()
        value = value.strip(b" \t")
        headers.append((name, value))
        if name == b"host":
            host += 1
        elif name == b"content-length":
            if length is not None or _DIGITS.fullmatch(value) is None:
                return FALLBACK
            length = value
        elif name == b"connection":
            for token in value.lower().split(b","):
                token = token.strip(b" \t")
                if token == b"close":
                    close = True
                elif token != b"keep-alive":
                    return FALLBACK
        elif name in _SLOW_HEADERS:
            return FALLBACK
    method = line.group(1)
    if host != 1 or method == b"HEAD":
        return FALLBACK
    return RequestHead(method, line.group(2), headers,
                       0 if length is None else int(length), close, end + 4)


def head_too_large(buf: bytes | bytearray, max_head: int) -> bool:
    """Whether the head at the start of ``buf`` is longer than ``max_head`` (431).

    h11 only bounds a head it is still waiting for, not one that arrived whole; this
    bounds both.
    """
    return len(buf) > max_head and _LOOSE_END.search(buf, 0, max_head + 4) is None


_REASONS: dict[int, bytes] = {s.value: s.phrase.encode("ascii") for s in HTTPStatus}
_NAME_OK = re.compile(_TOKEN)
# Names already checked: an app sends the same few names over and over.
_GOOD_NAMES: set[bytes] = set()
#: Ends a chunked body.
LAST_CHUNK: Final = b"0\r\n\r\n"


def response_head(
    status: int, headers: Iterable[tuple[bytes, bytes]], *, close: bool = False,
    cache: HeadCache | None = None,
) -> tuple[bytes, bool, bool, int]:
    """Serialize a response head; returns ``(bytes, chunked, close, content_length)``.

    A response with neither ``Content-Length`` nor a status that forbids a body gets
    ``Transfer-Encoding: chunked`` (its body then goes through :func:`chunk`).
    ``close`` adds ``Connection: close``; the returned ``close`` also says whether the
    app asked for it. ``content_length`` is the declared length, -1 when none. Raises
    ValueError on a header that would corrupt the stream (a name that is not a token,
    a value with CR, LF or NUL, a bad ``Content-Length``) or on a
    ``Transfer-Encoding`` the app set itself.
    """
    try:
        key = (status, tuple(headers), close)
        if cache is not None and cache.response is not None and key == cache.response_key:
            return cache.response
    except TypeError:  # pairs given as lists (ASGI allows any pair): not cacheable
        return _serialize(status, tuple((name, value) for name, value in headers), close)
    known = _serialize(*key)
    if cache is not None:
        cache.response_key = key
        cache.response = known
    return known


def _serialize(
    status: int, headers: tuple[tuple[bytes, bytes], ...], close: bool
) -> tuple[bytes, bool, bool, int]:
    """:func:`response_head` for a head that is not in the cache."""
    if not 100 <= status <= 999:
        raise ValueError(f"bad status code {status}")
    parts = [b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b""))]
    framed = status < 200 or status in (204, 304)
    has_close = False
    length = -1
    for name, value in headers:
        if name not in _GOOD_NAMES:
            if _NAME_OK.fullmatch(name) is None:
                raise ValueError(f"invalid response header name {name!r}")
            if len(_GOOD_NAMES) < 256:
                _GOOD_NAMES.add(name)
        if b"\r" in value or b"\n" in value or b"\0" in value:
            raise ValueError(f"invalid value for response header {name!r}")
        lower = name.lower()
        if lower == b"content-length":
            if length >= 0 or _DIGITS.fullmatch(value) is None:
                raise ValueError(f"bad Content-Length {value!r}")
            length = int(value)
            framed = True
        elif lower == b"transfer-encoding":
            raise ValueError("the server does the framing: no Transfer-Encoding from the app")
        elif lower == b"connection":
            has_close = has_close or b"close" in value.lower()
        parts.append(b"%s: %s\r\n" % (name, value))
    chunked = not framed
    if chunked:
        parts.append(b"transfer-encoding: chunked\r\n")
    if close and not has_close:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    return b"".join(parts), chunked, close or has_close, length


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (``data`` must not be empty)."""
    return b"%x\r\n%s\r\n" % (len(data), data)
