"""Batch encoding: the one-scan path for secret-free batches writes encode_events' bytes."""

from __future__ import annotations

from typing import Any

import orjson

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
