"""The client's HTTP/1.1 codec against h11 (a parser nobody here wrote): the same
responses must read the same, fed whole or a byte at a time."""

from __future__ import annotations

from typing import Any

import h11
import pytest

from mcpactor.transports.http11_client import (
    END,
    NEED_DATA,
    HttpProtocolError,
    ResponseHead,
    ResponseReader,
    request_bytes,
)

CASES: dict[str, tuple[str, bytes]] = {
    "json": ("POST", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 13\r\nMcp-Session-Id: abc\r\n\r\n{\"result\":{}}"),
    "chunked-sse": ("POST", b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n"
                            b"7;ext=1\r\ndata: 1\r\n2\r\n\n\n\r\n0\r\nX-Trailer: t\r\n\r\n"),
    "interim-then-final": ("POST", b"HTTP/1.1 100 Continue\r\n\r\n"
                                   b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"),
    "no-content": ("DELETE", b"HTTP/1.1 204 No Content\r\nServer: x\r\n\r\n"),
    "not-modified-with-length": ("GET", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"),
    "head": ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
    "http-1.0": ("POST", b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
    "connection-close": ("POST", b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n"
                                 b"Content-Length: 2\r\n\r\n{}"),
    "until-close": ("GET", b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                           b"data: a\n\ndata: b\n\n"),
    "folded-header": ("GET", b"HTTP/1.1 200 OK\r\nX-Long: one\r\n  two\r\nContent-Length: 0\r\n\r\n"),
    "no-reason": ("GET", b"HTTP/1.1 404\r\nContent-Length: 3\r\n\r\nnop"),
}

BROKEN: dict[str, tuple[str, bytes]] = {
    "not-http": ("GET", b"SSH-2.0-OpenSSH\r\n\r\n"),
    "bad-chunk-size": ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
    "underscored-chunk-size": ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1_0\r\n"),
    "conflicting-lengths": ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
    "unknown-coding": ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
    "cut-body": ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"),
    "cut-head": ("GET", b"HTTP/1.1 200 OK\r\nContent-Le"),
    "space-before-colon": ("GET", b"HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n"),
}


def _ours(method: str, data: bytes, step: int) -> dict[str, Any]:
    reader = ResponseReader(method)
    out: dict[str, Any] = {"body": b""}
    chunks = [data[i : i + step] for i in range(0, len(data), step)] + [b""]
    for chunk in chunks:
        reader.feed(chunk)
        while True:
            ev = reader.next_event()
            if ev is NEED_DATA:
                break
            if isinstance(ev, ResponseHead):
                out["status"], out["headers"] = ev.status, ev.headers
            elif ev is END:
                out["reusable"] = reader.reusable if chunk else None
                return out
            else:
                assert isinstance(ev, bytes)
                out["body"] += ev
    raise HttpProtocolError("no end")


def _h11(method: str, data: bytes, step: int) -> dict[str, Any]:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target="/mcp", headers=[("host", "x")]))
    conn.send(h11.EndOfMessage())
    out: dict[str, Any] = {"body": b""}
    chunks = [data[i : i + step] for i in range(0, len(data), step)] + [b""]
    for chunk in chunks:
        conn.receive_data(chunk)
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                break
            if isinstance(ev, h11.Response):
                out["status"] = ev.status_code
                out["headers"] = [(k, v) for k, v in ev.headers]
            elif isinstance(ev, h11.Data):
                out["body"] += bytes(ev.data)
            elif isinstance(ev, h11.EndOfMessage):
                reusable = conn.our_state is h11.DONE and conn.their_state is h11.DONE
                out["reusable"] = reusable if chunk else None
                return out
    raise HttpProtocolError("no end")


def _comparable(result: dict[str, Any]) -> dict[str, Any]:
    # h11 joins a folded line with one space too; header names are lower-cased by both.
    return {**result, "headers": [(k.lower(), v) for k, v in result.get("headers", [])]}


@pytest.mark.parametrize("step", [1, 7, 1 << 20], ids=["bytewise", "7-byte", "whole"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_responses_read_as_h11_reads_them(case: str, step: int) -> None:
    method, data = CASES[case]
    ours, theirs = _ours(method, data, step), _h11(method, data, step)
    if case == "until-close":
        # Only the end of the connection ends that body: neither may reuse it.
        assert ours["reusable"] is None and theirs["reusable"] is None
    assert _comparable(ours) == _comparable(theirs)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_what_h11_refuses_we_refuse(case: str) -> None:
    method, data = BROKEN[case]
    with pytest.raises((h11.RemoteProtocolError, HttpProtocolError)):
        _h11(method, data, 1 << 20)
    with pytest.raises(HttpProtocolError):
        _ours(method, data, 1 << 20)


def test_requests_are_written_as_h11_writes_them() -> None:
    headers = [("host", "127.0.0.1:8000"), ("content-type", "application/json"),
               ("accept", "application/json, text/event-stream"), ("mcp-session-id", "s1"),
               ("content-length", "2")]
    conn = h11.Connection(h11.CLIENT)
    theirs = b"".join([conn.send(h11.Request(method="POST", target="/mcp?x=1", headers=headers))
                       or b"", conn.send(h11.Data(data=b"{}")) or b"",
                       conn.send(h11.EndOfMessage()) or b""])
    assert request_bytes("POST", "/mcp?x=1", headers, b"{}") == theirs


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [("POST", "/mcp", [("x-evil", "a\r\nInjected: 1")]),
     ("POST", "/mcp", [("bad name", "v")]),
     ("POST", "/m cp", []),
     ("PO ST", "/mcp", []),
     ("POST", "/mcp", [("x-nul", "a\x00b")]),
     ("POST", "/mcp", [("x-text", "caf\u00e9")])],
)
def test_a_request_that_would_not_be_http_is_refused(
    method: str, target: str, headers: list[tuple[str, str]]
) -> None:
    with pytest.raises(HttpProtocolError):
        request_bytes(method, target, headers, None)


def test_bytes_after_a_response_make_the_connection_unusable() -> None:
    reader = ResponseReader("POST")
    reader.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n")
    events = [reader.next_event() for _ in range(3)]
    assert events[1:] == [b"{}", END]
    assert not reader.reusable


def test_repeated_equal_lengths_frame_the_body() -> None:
    # Allowed (RFC 9112 6.3); h11 reports the header once, we keep both lines as sent.
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"
    assert _ours("GET", data, 1)["body"] == _h11("GET", data, 1)["body"] == b"ok"
