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
    return [(i + 1, 0.1 * i + 1e-12, "sid", "reader", f"kind{i % 3}", d)
            for i, d in enumerate(datas)]


def _slow(records: list[Record]) -> list[bytes]:
    return encode_events(to_events(records), Redactor())


def test_a_clean_batch_takes_the_scan_and_writes_the_same_bytes() -> None:
    records = _records([])
    lines = _encode_clean(records)
    assert lines is not None and not Redactor().batch_might_hold_secret(b"\n".join(lines))
    assert lines == _slow(records)
    assert encode_records(records, Redactor()) == _slow(records)


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
