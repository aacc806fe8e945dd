"""Pure pieces of the HTTP transports: SSE codec, header rules, Host/Origin, event store."""

from __future__ import annotations

import pytest

from mcpactor.transports.event_store import EventStore, format_event_id, parse_event_id
from mcpactor.transports.http_rules import (
    accepts,
    check_accept_get,
    check_accept_post,
    check_content_type,
    check_protocol_version,
    new_session_id,
    valid_session_id,
)
from mcpactor.transports.http_session import response_ids
from mcpactor.transports.security import OriginPolicy, host_name
from mcpactor.transports.sse import SseEvent, SseParser, encode_comment, encode_event

# -- SSE ----------------------------------------------------------------------------------


def test_encode_event_fields_and_multiline_data() -> None:
    out = encode_event(b'{"a":1}\nsecond', event="message", id="3-7", retry=500)
    assert out == b'event: message\nid: 3-7\nretry: 500\ndata: {"a":1}\ndata: second\n\n'


def test_priming_event_has_id_and_empty_data() -> None:
    assert encode_event(b"", id="1-0", retry=1000) == b"id: 1-0\nretry: 1000\ndata:\n\n"


def test_encode_rejects_line_breaks_in_ids() -> None:
    with pytest.raises(ValueError):
        encode_event(b"x", id="a\nb")


def test_parse_round_trip_split_at_every_byte() -> None:
    wire = (
        encode_event(b'{"x":1}', id="1-1")
        + encode_comment("ping")
        + encode_event(b"line1\r\nline2", event="endpoint")
        + encode_event(b"", id="1-2", retry=250)
    )
    parser = SseParser()
    events: list[SseEvent] = []
    for i in range(len(wire)):
        events.extend(parser.feed(wire[i : i + 1]))
    assert events == [
        SseEvent(data='{"x":1}', id="1-1"),
        SseEvent(data="line1\nline2", event="endpoint", id=None),
        SseEvent(data="", id="1-2", retry=250),
    ]
    assert parser.last_event_id == "1-2"
    assert parser.retry == 250


def test_parse_crlf_and_cr_line_endings_and_bom() -> None:
    parser = SseParser()
    events = parser.feed(b"\xef\xbb\xbfdata: a\r\n\r\ndata:b\r\r")
    # A CR at the end of the input may be the first half of a CRLF: not yet a line.
    assert [e.data for e in events] == ["a"]
    assert [e.data for e in parser.feed(b"\n")] == ["b"]


def test_parse_ignores_unknown_fields_and_bad_retry() -> None:
    parser = SseParser()
    events = parser.feed(b"foo: bar\nretry: soon\ndata: x\n\n")
    assert events == [SseEvent(data="x")]
    assert parser.retry is None


# -- header rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("application/json, text/event-stream", True),
        ("text/event-stream;q=0.9, application/json;q=1", True),
        ("*/*", True),
        ("application/*, text/*", True),
        ("application/json", False),
        ("text/event-stream", False),
        (None, False),
    ],
)
def test_post_accept(header: str | None, ok: bool) -> None:
    assert (check_accept_post(header) is None) is ok
    if not ok:
        err = check_accept_post(header)
        assert err is not None and err.status == 406


def test_get_accept_and_accepts() -> None:
    assert check_accept_get("text/event-stream") is None
    err = check_accept_get("application/json")
    assert err is not None and err.status == 406
    assert accepts("TEXT/Event-Stream", "text/event-stream")


def test_content_type() -> None:
    assert check_content_type("application/json; charset=utf-8") is None
    for bad in ("text/plain", None, "application/jsonx"):
        err = check_content_type(bad)
        assert err is not None and err.status == 415


def test_protocol_version_header() -> None:
    assert check_protocol_version(None) is None  # absent: 2025-03-26 assumed
    for v in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert check_protocol_version(v) is None
    err = check_protocol_version("1999-01-01")
    assert err is not None and err.status == 400 and err.code == -32600


def test_session_ids_are_visible_ascii_and_unique() -> None:
    ids = {new_session_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(valid_session_id(i) for i in ids)
    assert not valid_session_id("has space")
    assert not valid_session_id("")


# -- Host / Origin ------------------------------------------------------------------------


def test_host_name_parsing() -> None:
    assert host_name("LocalHost:8000") == "localhost"
    assert host_name("[::1]:9") == "[::1]"
    assert host_name("127.0.0.1") == "127.0.0.1"
    assert host_name("a:b:c") is None
    assert host_name("[::1]x") is None


def test_default_policy_is_loopback_only() -> None:
    p = OriginPolicy()
    assert p.host_ok("localhost:1234") and p.host_ok("127.0.0.1") and p.host_ok("[::1]:80")
    assert not p.host_ok("evil.example.com")
    assert not p.host_ok("evil.example.com:8000")
    assert p.origin_ok(None)
    assert p.origin_ok("http://localhost:3000")
    assert not p.origin_ok("http://evil.example.com")
    assert not p.origin_ok("null")
    assert not p.origin_ok("file://")


def test_configured_policy() -> None:
    p = OriginPolicy(frozenset({"api.example.com"}), frozenset({"https://app.example.com"}))
    assert p.host_ok("api.example.com:443")
    assert not p.host_ok("localhost")
    assert p.origin_ok("https://app.example.com")
    assert not p.origin_ok("https://other.example.com")


# -- event store --------------------------------------------------------------------------


def test_event_ids_round_trip() -> None:
    assert parse_event_id(format_event_id(12, 34)) == (12, 34)
    assert parse_event_id("event-3") is None
    assert parse_event_id("1-x") is None


def test_streams_replay_only_their_own_events() -> None:
    store = EventStore(max_events=100)
    a, b = store.new_stream(), store.new_stream()
    a.append(b"a1")
    b.append(b"b1")
    a.append(b"a2")
    found = store.find(a.event_id(1))
    assert found is not None
    stream, seq = found
    assert stream is a
    assert [d for _, d in stream.after(seq)] == [b"a2"]
    assert store.find("99-1") is None
    assert store.find(a.event_id(5)) is None  # beyond what the stream has


def test_store_is_bounded_and_drops_oldest() -> None:
    store = EventStore(max_events=5)
    s = store.new_stream()
    for i in range(12):
        s.append(str(i).encode())
    assert store.size == 5
    assert [d for _, d in s.after(0)] == [b"7", b"8", b"9", b"10", b"11"]


def test_stream_done_after_all_responses_and_detach_bumps_generation() -> None:
    store = EventStore()
    s = store.new_stream()
    s.pending = {1, 2}
    gen = s.attach()
    s.answered([1])
    assert not s.done
    s.answered([2])
    assert s.done
    s.detach()
    assert s.generation != gen


def test_response_ids() -> None:
    assert response_ids(b'{"jsonrpc":"2.0","id":3,"result":{}}') == [3]
    assert response_ids(b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":""}}') == ["x"]
    assert response_ids(b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]') == [1, 2]
    assert response_ids(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}') == []
    assert response_ids(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"result":1}}') == []


def test_split_url_and_authority() -> None:
    from mcpactor.transports.http_client import split_url

    origin, target = split_url("http://localhost:8000/mcp?x=1")
    assert (origin.host, origin.port, target) == ("localhost", 8000, "/mcp?x=1")
    assert origin.authority == "localhost:8000"
    origin, target = split_url("https://example.com")
    assert (origin.port, target, origin.authority) == (443, "/", "example.com")
    origin, _ = split_url("http://[::1]:9/")
    assert origin.authority == "[::1]:9"
    with pytest.raises(ValueError):
        split_url("ftp://x/")
