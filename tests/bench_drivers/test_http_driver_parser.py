"""The HTTP benchmark driver's response parser: framing the servers under test use."""

from __future__ import annotations

import pytest

from benchmarks.drivers.http_client import ResponseParser
from benchmarks.drivers.pipe_client import BenchError

CHUNKED_SSE = (
    b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\n\r\n"
)


def test_chunked_body_byte_by_byte_after_an_interim_response() -> None:
    parser = ResponseParser()
    done = [parser.feed(CHUNKED_SSE[i : i + 1]) for i in range(len(CHUNKED_SSE))]
    assert done[-1] and not any(done[:-1])
    assert (parser.status, parser.body) == (200, b"helloabc")
    assert (b"content-type", b"text/event-stream") in parser.headers


def test_content_length_then_keep_alive_cycle() -> None:
    parser = ResponseParser()
    assert parser.feed(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    assert (parser.status, parser.body, parser.closing) == (202, b"", False)
    parser.next_response()
    assert not parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nab")
    assert parser.feed(b"cd")
    assert parser.body == b"abcd" and parser.closing


@pytest.mark.parametrize(
    "data",
    [
        b"SSH-2.0-x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["not-http", "close-delimited", "trailing-bytes", "bad-chunk-size"],
)
def test_what_a_kept_alive_session_cannot_take_is_an_error(data: bytes) -> None:
    with pytest.raises(BenchError):
        ResponseParser().feed(data)
