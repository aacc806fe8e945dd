"""Trace lines from compact events: numbering, times, flat and dict forms, the schedule's
records, redaction, odd messages."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from mcpactor.tracing import REDACTED, Redactor
from mcpactor.tracing.encode import dumps, encode_events, input_bytes, loads, raw_fields, to_event
from mcpactor.tracing.tracer import FLAT_FIELDS, EncodedMessage


def _lines(events: list[tuple[Any, ...]], redactor: Redactor | None = None,
           origin: int = 1_000) -> list[dict[str, Any]]:
    records = [to_event(e, i + 1, origin) for i, e in enumerate(events)]
    return [orjson.loads(x) for x in encode_events(records, redactor or Redactor())]


def test_flat_and_dict_events_become_the_same_lines() -> None:
    flat = [
        (2_000, "s", "reader", "message_in", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 1),
        (3_000, "s", "handler:1", "handler_started", 1, "ping"),
        (4_000, "s", "handler:1", "handler_finished", 1, "ok", False),
        (5_000, "s", "writer", "message_out", b'{"jsonrpc":"2.0","id":1,"result":{}}', 1, 0),
    ]
    as_dicts = [(*e[:4], dict(zip(FLAT_FIELDS[e[3]], e[4:], strict=True))) for e in flat]
    assert _lines(flat) == _lines(as_dicts)
    first = _lines(flat)[0]
    assert first == {"seq": 1, "t": 1e-06, "session": "s", "actor": "reader",
                     "kind": "message_in", "msg": {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                     "yields": 1}


def test_times_are_whole_nanoseconds_since_the_origin() -> None:
    lines = _lines([(1_000 + 123_456_789_012, "s", "reader", "tick", {})])
    assert lines[0]["t"] == 123.456789012


def test_schedule_records_have_no_time_session_or_actor() -> None:
    events = [
        (0, None, None, "sched", 12345.6789, [1, 2], {1: "sid", 2: "sid/1"}),
        (0, None, None, "read", 2, "urandom", b"\x00\xff"),
        (0, None, None, "read", 1, "clock", 12345.68),
        (0, None, None, "sched", 12345.7, [2], None),
    ]
    lines = _lines(events)
    assert lines[0] == {"seq": 1, "kind": "sched", "now": 12345.6789, "run": [1, 2],
                        "new": {"1": "sid", "2": "sid/1"}}
    assert lines[1] == {"seq": 2, "kind": "read", "task": 2, "src": "urandom", "v": "00ff"}
    assert lines[2]["v"] == 12345.68 and "new" not in lines[3]


def test_an_unknown_flat_form_is_an_error_not_a_wrong_line() -> None:
    with pytest.raises(ValueError, match="not a trace event"):
        to_event((0, "s", "reader", "message_in", b"{}"), 1, 0)


def test_secrets_are_redacted_wherever_they_are() -> None:
    r = Redactor()
    lines = _lines([
        (1, "s", "reader", "message_in", EncodedMessage(b'{"params":{"token":"tok-123456"}}'), 0),
        (2, "s", "reader", "custom", {"note": "Bearer abcdefgh", "password": "pw"}),
        (3, "s", "reader", "message_in", {"raw": '{"password": "hunter22"', "yields": 0}),
        (4, "s", "writer", "message_out", b'{"echo":"tok-123456"}', None, 1),
    ], r)
    text = orjson.dumps(lines)
    for secret in (b"tok-123456", b"abcdefgh", b"hunter22", b'"pw"'):
        assert secret not in text
    assert lines[0]["msg"]["params"]["token"] == REDACTED
    assert lines[1]["password"] == REDACTED and lines[1]["note"] == f"Bearer {REDACTED}"


def test_a_key_spelled_with_escapes_is_still_redacted() -> None:
    # "\u0074oken" is "token": a byte search alone would miss it.
    lines = _lines([(1, "s", "reader", "message_in",
                     b'{"params":{"\\u0074oken":"tok-123456"}}', 0)])
    assert lines[0]["msg"]["params"]["token"] == REDACTED


def test_a_message_with_raw_line_breaks_stays_on_one_line() -> None:
    # Legal JSON whitespace (a pretty-printed HTTP body) must not split the trace line.
    pretty = b'{\n  "jsonrpc": "2.0",\r\n  "id": 7,\n  "method": "ping"\n}'
    records = [to_event((1, "s", "reader", "message_in", pretty, 0), 1, 0)]
    out = encode_events(records, Redactor())
    assert len(out) == 1 and b"\n" not in out[0] and b"\r" not in out[0]
    assert orjson.loads(out[0])["msg"] == {"jsonrpc": "2.0", "id": 7, "method": "ping"}


def test_an_integer_id_beyond_64_bits_is_kept_exactly() -> None:
    import json

    big = b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}'
    out = encode_events([to_event((1, "s", "reader", "message_in", big, 0), 1, 0)], Redactor())
    assert json.loads(out[0])["msg"]["id"] == 18446744073709551617


def test_odd_values_are_written_as_text_never_raised() -> None:
    lines = _lines([(1, "s", "reader", "custom", {"obj": object(), "n": 1})])
    assert lines[0]["obj"].startswith("<object") and lines[0]["n"] == 1


WIDE = 18446744073709551617  # 2**64 + 1: orjson neither writes it nor reads it exactly


def test_ids_beyond_64_bits_in_event_values_are_written_digit_for_digit() -> None:
    """The flat events carry ids as ints (handler_started, handler_finished, a
    message_out's related; cancel ids in dict events): orjson refused them, which once
    stopped the whole recording."""
    records = [to_event(e, i + 1, 0) for i, e in enumerate([
        (1, "s", f"handler:{WIDE}", "handler_started", WIDE, "ping"),
        (2, "s", f"handler:{WIDE}", "handler_finished", -WIDE, "ok", False),
        (3, "s", "writer", "message_out", b'{"id":%d,"result":{}}' % WIDE, WIDE, 1),
        (4, "s", "reader", "cancel_requested", {"id": 2**70, "by": "peer", "reason": None,
                                                "target": "none", "note": [{"x": -(2**80)}]}),
        (5, "s", "reader", "custom", {"password": WIDE, "ids": [WIDE, 1.5]}),
        (0, None, None, "read", 3, "time_ns", 2**65),
    ])]
    out = encode_events(records, Redactor())
    assert b'"id":18446744073709551617,' in out[0]
    assert b'"id":-18446744073709551617,' in out[1]
    assert b'"related":18446744073709551617,' in out[2]
    back = [loads(x) for x in out]
    assert back[0]["id"] == WIDE and back[1]["id"] == -WIDE and back[2]["related"] == WIDE
    assert back[3]["id"] == 2**70 and back[3]["note"] == [{"x": -(2**80)}]
    assert back[4] == {**back[4], "password": REDACTED, "ids": [WIDE, 1.5]}
    assert back[5]["v"] == 2**65
    assert all(type(v) is int for v in (back[0]["id"], back[2]["related"], back[5]["v"]))


def test_loads_reads_wide_integers_exactly_and_is_strict() -> None:
    assert loads(b'{"a":18446744073709551617,"b":[1.5,-99999999999999999999999]}') == {
        "a": WIDE, "b": [1.5, -99999999999999999999999]}
    assert loads('{"n": %s}' % ("9" * 400)) == {"n": int("9" * 400)}  # past a double
    assert loads(b'{"x":1}') == {"x": 1}
    for bad in (b'{"a":', b"NaN", b'{"a":1}x'):
        with pytest.raises(ValueError):
            loads(bad)


def test_dumps_falls_back_per_value_never_for_the_whole_line() -> None:
    assert dumps({"n": WIDE, "o": object(), "k": {1: 2}}).startswith(
        b'{"n":18446744073709551617,"o":"<object object at')
    with pytest.raises(TypeError):
        dumps({"deep": _nested(300)})  # what even the fallback cannot write


def _nested(depth: int) -> Any:
    value: Any = WIDE
    for _ in range(depth):
        value = [value]
    return value


def test_input_that_is_not_utf8_keeps_its_bytes_beside_its_text() -> None:
    data = b'{"jsonrpc":"2.0","id":3,"method":"ping","x":"\xff\xfe"}'
    (line,) = encode_events([to_event((1, "s", "reader", "message_in",
                                       {"raw": data, "yields": 0}), 1, 0)], Redactor())
    ev = orjson.loads(line)
    assert ev["raw"] == data.decode("utf-8", "replace")  # readable: U+FFFD for the bytes
    assert base64.b64decode(ev["raw_b64"]) == data
    assert input_bytes(ev) == data  # what a replay feeds the session
    # Text that is UTF-8 is exact as it is: no second copy.
    (line,) = encode_events([to_event((1, "s", "reader", "message_in",
                                       {"raw": b"hello {", "yields": 0}), 1, 0)], Redactor())
    ev = orjson.loads(line)
    assert ev == {**ev, "raw": "hello {"} and "raw_b64" not in ev
    assert input_bytes(ev) == b"hello {"
    # A trace written before raw_b64 (raw as text) still feeds its text.
    assert input_bytes({"raw": "caf\ufffd"}) == "caf\ufffd".encode()
    assert input_bytes({"msg": {"id": WIDE}}) == b'{"id":18446744073709551617}'


def test_bytes_that_held_a_secret_are_not_kept() -> None:
    data = b'{"password": "hunter22", "x": "\xff"'
    fields = raw_fields(data, Redactor())
    assert "hunter22" not in fields["raw"]
    assert b"hunter22" not in base64.b64decode(fields["raw_b64"])
    assert base64.b64decode(fields["raw_b64"]) == fields["raw"].encode()
