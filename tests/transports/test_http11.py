"""The HTTP/1.1 fast path (:mod:`mcpactor.transports.http11`) against h11 on the same
inputs: whatever the fast path accepts, h11 must accept and read the same way."""

from __future__ import annotations

import random

import h11
import pytest

from mcpactor.transports import http11
from mcpactor.transports.http11 import FALLBACK, RequestHead, parse_head

BODY = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
BASE = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: abc\r\n"
    b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
)


def _h11_read(data: bytes) -> tuple[h11.Request, bytes, bool] | None:
    """What h11 makes of ``data``: the request, its body (as far as it came) and whether
    it asks to close; None when it refuses the input."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=16 * 1024)
    conn.receive_data(data)
    try:
        req = conn.next_event()
        if type(req) is not h11.Request:
            return None
        body = b""
        while True:
            ev = conn.next_event()
            if type(ev) is h11.Data:
                body += ev.data
            elif type(ev) is h11.EndOfMessage or ev is h11.NEED_DATA:
                break
            else:
                return None
    except h11.RemoteProtocolError:
        return None
    return req, body, conn.our_state is h11.MUST_CLOSE or not _keep_alive(req)


def _keep_alive(req: h11.Request) -> bool:
    values = b",".join(v for k, v in req.headers if k == b"connection").lower()
    return b"close" not in [t.strip() for t in values.split(b",")]


def _agrees(data: bytes) -> RequestHead | None:
    """Check the property on ``data``; the fast path's head when it took it."""
    got = parse_head(data, 16 * 1024)
    if not isinstance(got, RequestHead):
        return None
    theirs = _h11_read(data)
    assert theirs is not None, f"fast path accepted what h11 refuses: {data!r}"
    req, body, close = theirs
    assert got.method == req.method
    assert got.target == req.target
    assert got.headers == list(req.headers)
    assert data[got.body_start : got.body_start + got.content_length] == body
    assert len(body) <= got.content_length
    assert got.close == close
    return got


@pytest.mark.parametrize(
    "data",
    [
        BASE,
        BASE.replace(b"Host:", b"HOST:"),
        BASE.replace(b"application/json\r\n", b"application/json   \r\n", 1),
        BASE.replace(b"Mcp-Session-Id: abc", b"Mcp-Session-Id:abc"),
        BASE.replace(b"Mcp-Session-Id: abc", b"X-Empty:"),
        BASE.replace(b"Mcp-Session-Id: abc", b"Connection: keep-alive"),
        BASE.replace(b"Mcp-Session-Id: abc", b"Connection: close"),
        BASE.replace(b"Mcp-Session-Id: abc", b"Connection: Keep-Alive, CLOSE"),
        BASE.replace(b"Mcp-Session-Id: abc", b"X-Utf8: caf\xc3\xa9"),
        b"GET /mcp?x=1&y=%20 HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n",
        b"DELETE http://127.0.0.1/mcp HTTP/1.1\r\nhost: h\r\n\r\n",
    ],
)
def test_common_shapes_take_the_fast_path_and_read_like_h11(data: bytes) -> None:
    assert _agrees(data) is not None


@pytest.mark.parametrize(
    "data",
    [
        b"POST /mcp HTTP/1.0\r\nHost: h\r\nContent-Length: 0\r\n\r\n",  # HTTP/1.0
        b"HEAD /mcp HTTP/1.1\r\nHost: h\r\n\r\n",  # HEAD: h11 drops the body
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
        b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n",  # no Host
        b"POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",  # two Hosts
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\nx",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nX-Fold: a\r\n  b\r\n\r\n",  # obsolete folding
        b"POST /mcp HTTP/1.1\nHost: h\n\n",  # bare LF line ends
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n",
        b"POST  /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
        b"NOT HTTP\r\n\r\n",
        b"\r\nPOST /mcp HTTP/1.1\r\nHost: h\r\n\r\n",  # a leading empty line
    ],
)
def test_unusual_or_malformed_input_goes_to_h11(data: bytes) -> None:
    assert parse_head(data, 16 * 1024) is FALLBACK


def test_incomplete_heads_wait_and_oversize_heads_go_to_h11() -> None:
    head_end = BASE.index(b"\r\n\r\n") + 4
    for cut in range(head_end):
        assert parse_head(BASE[:cut], 16 * 1024) is None, cut
    # The head is complete once its empty line is in, whatever of the body is not.
    assert isinstance(parse_head(BASE[:head_end], 16 * 1024), RequestHead)
    assert parse_head(b"GET / HTTP/1.1\r\nX: " + b"a" * 200, 100) is FALLBACK
    big = b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 200 + b"\r\n\r\n"
    assert parse_head(big, 100) is FALLBACK
    assert isinstance(parse_head(big, 1000), RequestHead)


def test_the_connection_cache_gives_what_parsing_gives() -> None:
    cache = http11.HeadCache()
    other = BASE.replace(b"abc", b"xyz")
    for data in (BASE, BASE, other, BASE + BASE, b"GET / HTTP/1.0\r\n\r\n", BASE):
        fresh = parse_head(data, 16 * 1024)
        cached = parse_head(data, 16 * 1024, cache)
        if isinstance(fresh, RequestHead):
            assert isinstance(cached, RequestHead)
            assert [getattr(fresh, k) for k in RequestHead.__slots__] == [
                getattr(cached, k) for k in RequestHead.__slots__]
        else:
            assert cached is fresh
    head = http11.response_head(200, [(b"content-length", b"1")], cache=cache)
    assert http11.response_head(200, [(b"content-length", b"1")], cache=cache) == head
    assert http11.response_head(200, [(b"content-length", b"2")], cache=cache)[3] == 2


def test_pipelined_request_starts_after_the_body() -> None:
    head = parse_head(BASE + BASE, 16 * 1024)
    assert isinstance(head, RequestHead)
    rest = (BASE + BASE)[head.body_start + head.content_length :]
    assert rest == BASE


def test_mutations_never_make_the_fast_path_disagree_with_h11() -> None:
    rng = random.Random(1234)
    alphabet = [b" ", b"\t", b"\r", b"\n", b":", b",", b"\x00", b"\x01", b"\x7f", b"\x80",
                b"\xff", b"a", b"A", b"0", b"9", b"/", b"?", b"%", b"-", b"\r\n"]
    accepted = 0
    for _ in range(4000):
        data = bytearray(BASE)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(BASE) - len(BODY))  # the head: the body is opaque
            op = rng.random()
            piece = rng.choice(alphabet)
            if op < 0.4:
                data[pos : pos + 1] = piece
            elif op < 0.8:
                data[pos:pos] = piece
            else:
                del data[pos]
        if _agrees(bytes(data)) is not None:
            accepted += 1
    # Most mutations land in places that keep the request well formed: the property was
    # exercised on accepted inputs, not only on refusals.
    assert accepted > 500


def test_response_head_framing_and_validation() -> None:
    head, chunked, close, length = http11.response_head(
        200, [(b"content-type", b"application/json"), (b"content-length", b"2")]
    )
    assert head == (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: 2\r\n\r\n")
    assert (chunked, close, length) == (False, False, 2)
    head, chunked, close, length = http11.response_head(
        200, [(b"content-type", b"text/event-stream")], close=True
    )
    assert chunked and close and length == -1
    assert head.endswith(b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n")
    assert http11.chunk(b"hello") + http11.LAST_CHUNK == b"5\r\nhello\r\n0\r\n\r\n"
    head, chunked, _, _ = http11.response_head(204, [])
    assert not chunked and b"transfer-encoding" not in head
    # What h11 reads back is what was meant.
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "h")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(
        http11.response_head(202, [(b"mcp-session-id", b"x")])[0] + http11.chunk(b"ab")
        + http11.LAST_CHUNK
    )
    resp = conn.next_event()
    assert isinstance(resp, h11.Response) and resp.status_code == 202
    data = conn.next_event()
    assert isinstance(data, h11.Data) and data.data == b"ab"
    # Pairs as lists (ASGI allows them) are served too, just not cached.
    listed = http11.response_head(200, [[b"content-length", b"0"]])  # type: ignore[list-item]
    assert listed[0] == b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
    for bad in ([(b"x", b"a\r\nb")], [(b"bad name", b"v")], [(b"transfer-encoding", b"gzip")],
                [(b"content-length", b"1"), (b"content-length", b"1")]):
        with pytest.raises(ValueError):
            http11.response_head(200, bad)
