"""Batch encoding: the one-scan path for secret-free batches writes encode_events' bytes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpactor.tracing import REDACTED, Redactor, encode_events
from mcpactor.tracing.encode import Record, _encode_clean, encode_records, to_events
from mcpactor.tracing.tracer import EncodedMessage


def _records(extra: list[dict[str, Any]]) -> list[Record]:
    datas: list[dict[str, Any]] = [
        {"role": "server", "transport": "stdio"},
        {"msg": EncodedMessage(b'{"jsonrpc": "2.0", "id": 1, "params": {"progressToken": 7}}')},
        {"id": 1, "method": "tools/call"},
        {"id": 1, "outcome": "ok", "suppressed": False},
        {"msg": EncodedMessage(b'{"id":1,"result":{"text":"caf\xc3\xa9 \\n"}}'), "related": 1},
        {"protocol_version": "v", "peer_info": {"name": "c", "tags": ["a", 1.5, None]}},
        {},
        *extra,
    ]
    # Times as the recorder makes them: whole nanoseconds divided by 1e9.
    return [(i + 1, (100_000_001 * i + 7) / 1e9, "sid", "reader", f"kind{i % 3}", d)
            for i, d in enumerate(datas)]


def _slow(records: list[Record]) -> list[bytes]:
    return encode_events(to_events(records), Redactor())


def test_a_clean_batch_takes_the_scan_and_writes_the_same_bytes() -> None:
    records = _records([])
    clean = _encode_clean(records)
    assert clean is not None
    block, scan = clean
    assert not Redactor().batch_might_hold_secret(block)
    assert block.splitlines() == _slow(records)
    assert encode_records(records, Redactor()) == _slow(records)
    # kind0..kind2 are not kinds the runtime writes without free text: all is scanned.
    assert scan == block
    # Message events and handler events only: the scan reads the messages alone.
    only = [(1, 0.0, "s", "reader", "message_in", {"msg": b'{"id":1}'}),
            (2, 0.0, "s", "handler:1", "handler_started", {"id": 1, "method": "Bearer x"}),
            (3, 0.0, "s", "writer", "message_out", {"msg": b'{"id":1,"result":{}}',
                                                    "related": 1})]
    clean = _encode_clean(only)
    assert clean is not None and clean[1] == b'{"id":1}{"id":1,"result":{}}'
    assert encode_records(only, Redactor()) == _slow(only)


def test_batches_with_secrets_or_odd_values_take_the_full_path() -> None:
    for extra in (
        {"peer_info": {"Client-Secret": "x"}},
        {"note": "Bearer\tabcdefgh"},
        {"raw": '{"password": "hunter22"'},
        {"obj": object()},
        {"inner": {"msg": EncodedMessage(b"{}")}},
        {"TO\u212aEN": "kelvin"},
    ):
        records = _records([extra])
        assert encode_records(records, Redactor()) == _slow(records), extra
    out = encode_records(_records([{"TO\u212aEN": "kelvin"}]), Redactor())
    assert orjson.loads(out[-1])["TO\u212aEN"] == REDACTED


def test_a_learned_secret_sends_later_batches_down_the_full_path() -> None:
    r = Redactor()
    encode_records(_records([{"msg": EncodedMessage(b'{"access_token":"tok-123456"}')}]), r)
    later = encode_records(_records([{"msg": EncodedMessage(b'{"echo":"tok-123456"}')}]), r)
    assert b"tok-123456" not in b"".join(later)


def test_a_message_with_raw_line_breaks_stays_on_one_line() -> None:
    # Legal JSON whitespace (a pretty-printed HTTP body) must not split the trace line.
    pretty = b'{\n  "jsonrpc": "2.0",\r\n  "id": 7,\n  "method": "ping"\n}'
    for records in (
        [(1, 0.0, "s", "reader", "message_in", {"msg": pretty})],
        [(1, 0.0, "s", "reader", "message_in", {"msg": EncodedMessage(pretty)})],
    ):
        lines = encode_records(records, Redactor())
        assert len(lines) == 1 and b"\n" not in lines[0] and b"\r" not in lines[0]
        assert orjson.loads(lines[0])["msg"] == {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        assert lines == _slow(records)


def test_a_key_spelled_with_escapes_is_still_redacted() -> None:
    # "\u0074oken" is "token": a byte search alone would miss it.
    msg = b'{"params":{"\\u0074oken":"tok-123456"}}'
    for value in (msg, EncodedMessage(msg)):
        lines = encode_records([(1, 0.0, "s", "reader", "message_in", {"msg": value})], Redactor())
        assert b"tok-123456" not in lines[0]
        assert orjson.loads(lines[0])["msg"]["params"]["token"] == REDACTED


def test_bytes_and_encoded_messages_are_written_alike() -> None:
    a = [(1, 0.5, "s", "writer", "message_out", {"msg": b'{"id":1}', "related": 1})]
    b = [(1, 0.5, "s", "writer", "message_out", {"msg": EncodedMessage(b'{"id":1}'), "related": 1})]
    assert encode_records(a, Redactor()) == encode_records(b, Redactor()) == _slow(b)
    assert orjson.loads(encode_records(a, Redactor())[0])["msg"] == {"id": 1}


def _compact(msgs: list[bytes], origin: int) -> tuple[list[Any], list[Any]]:
    """The four per-request events of each message, flat (as the session logs them) and
    as dicts (as emit takes them), with a few emit-only events among them."""
    flat: list[Any] = [(origin + 5, "s", "supervisor", "session_started",
                        {"role": "server", "transport": "stdio"})]
    plain: list[Any] = [flat[0]]
    for i, msg in enumerate(msgs):
        t = origin + 1_000 * (i + 1)
        actor = f"handler:{i}"
        reply = b'{"jsonrpc":"2.0","id":%d,"result":{}}' % i
        flat += [(t, "s", "reader", "message_in", msg, i % 2 == 0),
                 (t + 1, "s", actor, "handler_started", i, "tools/call"),
                 (t + 2, "s", actor, "handler_finished", i, "ok", False),
                 (t + 3, "s", "writer", "message_out", reply, i)]
        plain += [(t, "s", "reader", "message_in",
                   {"msg": msg, "buffered": True} if i % 2 == 0 else {"msg": msg}),
                  (t + 1, "s", actor, "handler_started", {"id": i, "method": "tools/call"}),
                  (t + 2, "s", actor, "handler_finished",
                   {"id": i, "outcome": "ok", "suppressed": False}),
                  (t + 3, "s", "writer", "message_out", {"msg": reply, "related": i})]
    return flat, plain


def test_the_sinks_encoder_writes_what_the_records_way_writes() -> None:
    from mcpactor.tracing.encode import encode_block, encode_compact, to_records

    origin = 1_000_000_007
    cases = {
        "clean": [b'{"jsonrpc":"2.0","id":%d,"method":"tools/call"}' % i for i in range(40)],
        "a secret key": [b'{"id":1,"params":{"api_key":"k-123456"}}', b'{"id":2}'],
        "a credential": [b'{"id":1,"params":{"note":"Bearer abcdef"}}'],
        "a line break": [b'{"id": 1,\n "method": "ping"}', b'{"id":2}'],
    }
    for name, msgs in cases.items():
        flat, plain = _compact(msgs, origin)
        # The flat events are the dict events, once handed on.
        assert to_records(flat, 3, origin) == to_records(plain, 3, origin), name
        expected = encode_block(to_records(plain, 3, origin), Redactor())
        for events in (flat, plain):
            block = encode_compact(events, 3, origin, Redactor())
            assert block == expected, name
        lines = [orjson.loads(line) for line in expected.splitlines()]
        assert [e["seq"] for e in lines] == list(range(3, 3 + len(flat))), name
        assert lines[1]["t"] == 1e-06 and lines[1].get("buffered") is True, name
        if name in ("a secret key", "a credential"):
            assert b"k-123456" not in expected and b"abcdef" not in expected
            assert REDACTED.encode() in expected
        if name == "a line break":
            assert lines[1]["msg"] == {"id": 1, "method": "ping"}


def test_the_sinks_encoder_takes_odd_events_the_records_way() -> None:
    from mcpactor.tracing.encode import encode_block, encode_compact, to_records

    odd: list[Any] = [
        (10, "s", "reader", "message_in", {"raw": '{"password": "hunter22"'}),
        (11, "s", "reader", "message_in", {"msg": 5}, ),  # not encoded JSON: as a value
        (12, "s", "writer", "message_out", "a str message", 1),  # flat, not bytes
        (13, "s", "x", "custom", {"note": "anything"}),
    ]
    for event in odd:
        block = encode_compact([event], 1, 0, Redactor())
        assert block == encode_block(to_records([event], 1, 0), Redactor())
        assert b"hunter22" not in block
    # A flat event of a kind that has no flat form is a bad batch, not a wrong line.
    with pytest.raises(ValueError, match="not a flat trace event"):
        encode_compact([(1, "s", "x", "custom", 1, 2)], 1, 0, Redactor())
