"""The trace sink process (``writer="process"``): same bytes as the thread writer,
complete files on close, no event lost when it dies, no secret in the file."""

from __future__ import annotations

import io
import marshal
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor.tracing import REDACTED, JsonlRecorder, TraceHeader, sinkclient
from mcpactor.tracing.tracer import EncodedMessage
from mcpactor.tracing.writer import DEFAULT_WRITER, writer_mode

SECRET = "tok-8f2kQz91"


def _header() -> TraceHeader:
    return TraceHeader(role="server", transport="memory", entry_point="x:y",
                       seeds={"scheduler": 1, "random": 2})


def _events(wrap: Any = EncodedMessage) -> list[tuple[str, str, dict[str, Any]]]:
    """A bit of everything the encoder treats differently. ``wrap``: how messages are
    passed (the session passes bytes, which travel to the sink as they are buffered;
    an EncodedMessage, like the odd object, makes the recording process encode the
    events around it)."""
    odd = object()  # one instance: its repr is the same for both writers
    return [
        ("supervisor", "session_started", {"role": "server", "transport": "memory"}),
        ("reader", "message_in", {"msg": wrap(
            b'{"jsonrpc": "2.0", "id": 0, "method": "initialize",  "params": {}}')}),
        ("reader", "initialized", {"protocol_version": "2025-06-18",
                                   "peer_info": {"name": "c", "password": "pw"}}),
        ("handler:1", "handler_started", {"id": 1, "method": "tools/call"}),
        ("reader", "message_in", {"msg": wrap(
            b'{"id":1,"params":{"arguments":{"token":"%s"}}}' % SECRET.encode())}),
        ("writer", "message_out", {"msg": wrap(
            b'{"id":1,"result":"echo %s"}' % SECRET.encode()), "related": 1}),
        ("reader", "message_in", {"raw": 'not json "authorization": "Bearer abcdefghij"'}),
        *[("writer", "message_out", {"msg": wrap(b'{"i": %d}' % i), "related": i})
          for i in range(100)],
        ("reader", "custom", {"obj": odd, "big": 2**70, "nested": {"m": [1.5, None]},
                              "note": "with Bearer zzzzzzzzzz inside"}),
        ("reader", "custom", {"inner": {"msg": wrap(b'{"a":1}')}}),
        ("reader", "custom", {"set": {1, 2}, "pair": (1, "x")}),
        *[("writer", "message_out", {"msg": wrap(b'{"i": %d}' % i), "related": i})
          for i in range(600)],
        ("supervisor", "session_closed", {"reason": "eof"}),
    ]


def _process_recorder(path: Path) -> JsonlRecorder:
    """A recorder whose header is complete, written by the sink."""
    return JsonlRecorder(path, TraceHeader(role="server", transport="x", protocol_version="v"),
                         apply_header_seeds=False, writer="process")


def _fail_first_call(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Make ``sinkclient.<name>`` raise on its first call; the calls made (a list whose
    length counts them)."""
    real = getattr(sinkclient, name)
    calls: list[int] = []

    def fails_once(*args: Any) -> Any:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real(*args)

    monkeypatch.setattr(sinkclient, name, fails_once)
    return calls


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _same_header(a: bytes, b: bytes) -> None:
    ha, hb = orjson.loads(a), orjson.loads(b)
    del ha["clock"]["wall_origin"], hb["clock"]["wall_origin"]
    assert ha == hb


def _record_both(
    tmp_path: Path, events: list[tuple[str, str, dict[str, Any]]]
) -> tuple[list[bytes], list[bytes]]:
    """Record ``events`` with the thread writer and with the sink, the same data at the
    same (virtual) instant; the lines of both files."""

    async def main() -> None:
        recs = [JsonlRecorder(tmp_path / f"{mode}.jsonl", _header(), apply_header_seeds=False,
                              writer=mode) for mode in ("thread", "process")]
        assert [r.writer for r in recs] == ["thread", "process"]
        for actor, kind, data in events:
            for rec in recs:
                rec.emit("sid", actor, kind, data)
        for rec in recs:
            rec.close()

    trio.run(main, clock=trio.testing.MockClock())
    return _lines(tmp_path / "thread.jsonl"), _lines(tmp_path / "process.jsonl")


@pytest.mark.parametrize("wrap", [EncodedMessage, bytes])
def test_process_writer_writes_the_thread_writers_bytes(tmp_path: Path, wrap: Any) -> None:
    events = _events(wrap)

    thread, process = _record_both(tmp_path, events)
    assert len(thread) == len(events) + 1
    _same_header(thread[0], process[0])
    assert thread[1:] == process[1:]
    assert SECRET.encode() not in b"".join(process) and b"abcdefghij" not in b"".join(process)
    # The spacing of a message as it crossed the wire is kept.
    assert b'"method": "initialize",  "params"' in process[2]


def test_close_returns_once_the_file_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rec = _process_recorder(path)
    for i in range(5000):
        rec.emit("s", "writer", "message_out", {"msg": EncodedMessage(b'{"i":%d}' % i),
                                                "related": None})
    rec.close()
    lines = _lines(path)
    assert len(lines) == 5001
    assert orjson.loads(lines[-1])["msg"] == {"i": 4999}
    assert rec.writer == "process" and rec._writer.error is None


@pytest.mark.parametrize("wrap", [EncodedMessage, bytes])
def test_a_killed_sink_loses_no_event_and_leaks_no_learned_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrap: Any
) -> None:
    monkeypatch.setattr(sinkclient, "_sink_starts", 0)
    path = tmp_path / "t.jsonl"
    rec = _process_recorder(path)
    writer = rec._writer
    assert isinstance(writer, sinkclient.ProcessWriter)
    rec.emit("s", "reader", "message_in", {"msg": wrap(
        b'{"params":{"access_token":"%s"}}' % SECRET.encode())})
    n = 1
    for i in range(300):
        rec.emit("s", "writer", "message_out", {"msg": wrap(b'{"i":%d}' % i),
                                                "related": None})
        n += 1
    rec.flush()
    sink = sinkclient._sink
    assert sink is not None
    assert sink.wait_until(lambda: not writer._pending, 10)  # the sink has learned SECRET
    for i in range(3000):  # batches of 1,024: one is just sent when the sink dies
        rec.emit("s", "writer", "message_out", {"msg": wrap(b'{"j":%d}' % i),
                                                "related": None})
        n += 1
        if i == 2050:
            os.kill(sink.proc.pid, signal.SIGKILL)
    rec.emit("s", "writer", "message_out", {"msg": wrap(
        b'{"echo":"%s"}' % SECRET.encode()), "related": None})
    n += 1
    rec.close()
    assert writer.in_process
    assert sink.proc.returncode is not None  # reaped
    lines = _lines(path)
    assert [orjson.loads(x)["seq"] for x in lines[1:]] == list(range(1, n + 1))
    assert SECRET.encode() not in path.read_bytes()
    assert orjson.loads(lines[-1])["msg"] == {"echo": REDACTED}
    # Later recorders get a new sink.
    again = JsonlRecorder(tmp_path / "again.jsonl", _header(), apply_header_seeds=False,
                          writer="process")
    again.close()
    assert again.writer == "process" and sinkclient._sink is not sink


def test_secrets_are_redacted_in_process_mode(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rec = JsonlRecorder(path, _header(), apply_header_seeds=False, writer="process",
                        redact_keys=frozenset({"ssn"}))
    rec.emit("s", "reader", "initialized", {"protocol_version": "v"})
    rec.emit("s", "reader", "message_in", {"msg": EncodedMessage(
        b'{"params":{"_meta":{"Authorization":"Bearer %s","ssn":"123-45-6789"}}}'
        % SECRET.encode())})
    rec.emit("s", "writer", "message_out", {"msg": EncodedMessage(
        b'{"result":"your token is %s"}' % SECRET.encode()), "related": 1})
    rec.emit("s", "reader", "message_in", {"raw": '{"password": "hunter22", '})
    rec.close()
    data = path.read_bytes()
    assert rec.writer == "process"
    for secret in (SECRET, "123-45-6789", "hunter22"):
        assert secret.encode() not in data
    events = [orjson.loads(x) for x in data.splitlines()[1:]]
    assert events[1]["msg"]["params"]["_meta"] == {"Authorization": REDACTED, "ssn": REDACTED}
    assert events[2]["msg"]["result"] == f"your token is {REDACTED}"


_CHILD = """
import sys, time
from mcpactor.tracing import JsonlRecorder, TraceHeader
from mcpactor.tracing import sinkclient
rec = JsonlRecorder(sys.argv[1], TraceHeader(role="server", transport="x", protocol_version="v"),
                    apply_header_seeds=False, writer="process")
for i in range(100):
    rec.emit("s", "reader", "custom", {"i": i})
rec.flush()
print(sinkclient._sink.proc.pid, flush=True)
if sys.argv[2] == "die":
    time.sleep(30)
"""


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("end", ["exit", "die"])
def test_the_sink_ends_with_its_process_and_writes_what_it_got(tmp_path: Path, end: str) -> None:
    path = tmp_path / "t.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), end],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    sink_pid = int(proc.stdout.readline())
    if end == "die":
        proc.kill()  # no atexit, no close(): the sink sees its stdin end
    assert proc.wait(20) in (0, -signal.SIGKILL)
    assert _gone(sink_pid)
    assert len(_lines(path)) == 101  # the recorder was never closed


def test_the_writer_is_chosen_by_argument_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPACTOR_TRACE_WRITER", "process")
    assert writer_mode(None) == "process" and writer_mode("thread") == "thread"
    monkeypatch.setenv("MCPACTOR_TRACE_WRITER", "thread")
    assert writer_mode(None) == "thread" and writer_mode("process") == "process"
    monkeypatch.setenv("MCPACTOR_TRACE_WRITER", "bogus")
    assert writer_mode(None) == DEFAULT_WRITER
    monkeypatch.delenv("MCPACTOR_TRACE_WRITER")
    assert writer_mode(None) == DEFAULT_WRITER
    with pytest.raises(ValueError):
        writer_mode("bogus")


def test_the_sink_is_the_default_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPACTOR_TRACE_WRITER", raising=False)
    rec = JsonlRecorder(tmp_path / "t.jsonl", _header(), apply_header_seeds=False)
    rec.close()
    assert DEFAULT_WRITER == "process" and rec.writer == "process"


def test_a_sink_that_falls_behind_gets_batches_encoded_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every batch counts as "behind": each is encoded in this process, the sink only
    # writes it. The bytes are the thread writer's, secrets included (none in the file).
    monkeypatch.setattr(sinkclient, "ENCODE_HERE_AFTER", 0)
    events = _events()

    thread, process = _record_both(tmp_path, events)
    assert thread[1:] == process[1:] and len(process) == len(events) + 1
    assert SECRET.encode() not in b"".join(process)


def test_a_secret_learned_while_encoding_here_keeps_later_batches_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sink never sees the batch that revealed the secret, so it could not hunt for
    # its echo: once this process has learned something the sink has not, it encodes on.
    path = tmp_path / "t.jsonl"
    rec = _process_recorder(path)
    writer = rec._writer
    assert isinstance(writer, sinkclient.ProcessWriter)
    monkeypatch.setattr(sinkclient, "ENCODE_HERE_AFTER", 0)
    rec.emit("s", "reader", "message_in", {"msg": b'{"params":{"api_key":"%s"}}' % SECRET.encode()})
    rec.flush()
    monkeypatch.setattr(sinkclient, "ENCODE_HERE_AFTER", 10**9)  # the sink is keeping up
    rec.emit("s", "writer", "message_out", {"msg": b'{"echo":"%s"}' % SECRET.encode(),
                                            "related": None})
    rec.close()
    text = path.read_bytes()
    assert SECRET.encode() not in text and text.count(REDACTED.encode()) == 2


def test_a_file_the_sink_cannot_open_is_written_here_and_the_sink_stays(tmp_path: Path) -> None:
    sink = sinkclient._shared_sink()
    assert sink is not None
    path = tmp_path / "later" / "t.jsonl"  # no such folder when the sink tries
    writer = sinkclient.ProcessWriter(sink, path, frozenset({"token"}))
    assert sink.wait_until(lambda: writer._broken, 10)
    path.parent.mkdir()
    path.write_bytes(b"")
    writer.submit([b'{"type":"header"}'], [(1, 0.0, "s", "reader", "custom", {"token": "x"})])
    writer.close()
    assert writer.in_process and sink.alive()
    lines = _lines(path)
    assert len(lines) == 2 and orjson.loads(lines[1])["token"] == REDACTED


def test_clean_batches_are_spliced_and_still_match_the_thread_writer(tmp_path: Path) -> None:
    # No secret anywhere: the sink splices the messages into the lines without decoding,
    # except around a message holding line breaks, which it re-encodes like the thread.
    events: list[tuple[str, str, dict[str, Any]]] = [
        ("writer", "message_out", {"msg": b'{"id": %d,  "result": {}}' % i, "related": i})
        for i in range(300)
    ]
    events.insert(100, ("reader", "message_in", {"msg": b'{\n  "id": 7,\r\n  "method": "x"\n}'}))
    events.insert(5, ("handler:1", "handler_started", {"id": 1, "method": "tools/call"}))

    thread, process = _record_both(tmp_path, events)
    assert len(process) == len(events) + 1 and thread[1:] == process[1:]
    assert b'"id": 3,  "result"' in process[1 + 3]  # spacing kept: spliced, not re-encoded
    assert orjson.loads(process[1 + 101])["msg"] == {"id": 7, "method": "x"}


def test_a_batch_body_splices_to_the_encoders_lines_and_decodes_to_its_records() -> None:
    from mcpactor.tracing.encode import encode_block
    from mcpactor.tracing.redact import Redactor
    from mcpactor.tracing.sink import decode_batch, splice_block

    marker_text = "\x00abc123"
    marker = orjson.Fragment(orjson.dumps(marker_text))
    records = [
        (1, 0.5, "s", "reader", "message_in", {"msg": b'{"id": 1}'}),
        (2, 0.25, "s", "handler:1", "handler_started", {"id": 1, "method": "m"}),
        (3, 0.125, "s", "writer", "message_out", {"msg": b'{"id":1,"result":{}}', "related": 1}),
    ]
    # Staged in chunks, sent as one body.
    body = sinkclient.batch_body([b'{"type":"header"}'],
                                 [sinkclient.encode_chunk(records[:1], marker),
                                  sinkclient.encode_chunk([], marker),
                                  sinkclient.encode_chunk(records[1:], marker)])
    lines, block, scan = splice_block(body, marker_text)
    assert lines == [b'{"type":"header"}']
    assert block == encode_block(records, Redactor())  # the bytes, without decoding
    # Nothing but messages and handler events: the secret scan reads the messages.
    assert scan == b'{"id": 1}{"id":1,"result":{}}'
    _, decoded = decode_batch(body, marker_text)
    assert [tuple(r) for r in decoded] == records
    # An event that may carry free text (an error's text, say) has the whole block read.
    noted = [*records, (4, 0.5, "s", "reader", "transport_broken", {"error": "Bearer x"})]
    _, block, scan = splice_block(sinkclient.batch_body([], [sinkclient.encode_chunk(noted, marker)]), marker_text)
    assert scan == block and b"Bearer x" in block
    # A message holding a line break cannot be spliced: the sink re-encodes that batch.
    pretty = [(1, 0.5, "s", "reader", "message_in", {"msg": b'{\n"id": 1}'})]
    assert splice_block(sinkclient.batch_body([], [sinkclient.encode_chunk(pretty, marker)]), marker_text)[1] is None


@pytest.mark.parametrize(("failing", "wrap"), [
    ("batch_body", EncodedMessage),  # events encoded here (D parts)
    ("records_body", bytes),  # events handed over as buffered (C parts)
])
def test_a_batch_that_fails_to_encode_goes_the_careful_way_with_each_event_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str, wrap: Any
) -> None:
    path = tmp_path / "t.jsonl"
    rec = _process_recorder(path)
    calls = _fail_first_call(monkeypatch, failing)
    for i in range(300):  # staged in 32s; the batch fails to encode (at close)
        rec.emit("s", "writer", "message_out", {"msg": wrap(b'{"i":%d}' % i), "related": i})
    rec.close()
    lines = _lines(path)
    assert [orjson.loads(x)["seq"] for x in lines[1:]] == list(range(1, 301))
    assert orjson.loads(lines[-1])["msg"] == {"i": 299}
    assert isinstance(rec._writer.error, RuntimeError) and len(calls) > 1


def test_events_travel_to_the_sink_as_buffered_and_come_out_as_the_encoders_lines(
    tmp_path: Path,
) -> None:
    """A RECORDS body: header lines (L), buffered events (C: numbered, timed and encoded
    by the sink) and events encoded here (D) are written in order, as the thread writer
    would write them; a writer taking over decodes the same body to the same records."""
    from mcpactor.tracing.encode import encode_block, to_records
    from mcpactor.tracing.redact import DEFAULT_REDACT_KEYS, Redactor
    from mcpactor.tracing.sink import (
        OP_CLOSE,
        OP_OPEN,
        OP_RECORDS,
        decode_parts,
        records_body,
        serve,
    )

    marker_text = "\x00abc123"
    marker = orjson.Fragment(orjson.dumps(marker_text))
    origin = 5_000_000_000
    compact = [
        (origin + 1_500, "s", "reader", "message_in", {"msg": b'{"id": 1,  "method":"m"}'}),
        (origin + 2_000, "s", "handler:1", "handler_started", {"id": 1, "method": "m"}),
        (origin + 3_001, "s", "writer", "message_out",
         {"msg": b'{"id":1,"result":{"token":"%s"}}' % SECRET.encode(), "related": 1}),
    ]
    records = to_records(compact, 7, origin)
    assert [r[:2] for r in records] == [(7, 1.5e-6), (8, 2e-6), (9, 3.001e-6)]
    later = [(10, 0.5, "s", "reader", "custom", {"obj": "x"})]
    body = records_body([
        b"L" + b'{"type":"header"}\n',
        b"C" + marshal.dumps((7, origin, compact)),
        b"D" + sinkclient.batch_body([], [sinkclient.encode_chunk(later, marker)]),
    ])
    pieces = decode_parts(body, marker_text)
    assert pieces[0] == ([b'{"type":"header"}'], [])
    assert [tuple(r) for r in pieces[1][1]] == records and pieces[2][1] == later

    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    spec = orjson.dumps({"path": str(path), "keys": sorted(DEFAULT_REDACT_KEYS)})
    frames = b"".join(sinkclient.FRAME.pack(op, 1, len(b)) + b
                      for op, b in ((OP_OPEN, spec), (OP_RECORDS, body), (OP_CLOSE, b"")))
    out = io.BytesIO()
    serve(io.BufferedReader(io.BytesIO(frames)), out, marker_text[1:])
    answers = [orjson.loads(x) for x in out.getvalue().splitlines()]
    assert [a[0] for a in answers] == ["A", "C"] and answers[0][4] is None
    written = path.read_bytes()
    expected = b'{"type":"header"}\n' + encode_block(records + later, Redactor())
    assert written == expected
    assert SECRET.encode() not in written and b'"id": 1,  "method":"m"' in written
    assert answers[0][3] == [SECRET]  # learned: the recording process hunts for it too

    # An unknown part is an error answer for that batch, and nothing is written of it.
    out = io.BytesIO()
    bad = records_body([b"L" + b'{"a":1}\n', b"Z" + b"?"])
    frames = b"".join(sinkclient.FRAME.pack(op, 2, len(b)) + b
                      for op, b in ((OP_OPEN, spec), (OP_RECORDS, bad), (OP_CLOSE, b"")))
    serve(io.BufferedReader(io.BytesIO(frames)), out, marker_text[1:])
    first = orjson.loads(out.getvalue().splitlines()[0])
    assert first[:3] == ["A", 2, -1] and "unknown part" in first[4]
    assert path.read_bytes() == expected


def test_a_session_buffers_plain_messages_for_the_sink_to_encode(tmp_path: Path) -> None:
    """What the session passes (bytes) is marshalled as buffered, not encoded here."""
    rec = _process_recorder(tmp_path / "t.jsonl")
    writer = rec._writer
    assert isinstance(writer, sinkclient.ProcessWriter)
    for i in range(64):
        rec.emit("s", "writer", "message_out", {"msg": b'{"i":%d}' % i, "related": i})
    assert [part[:1] for part in writer._staged] == [b"C", b"C"]
    rec.emit("s", "reader", "custom", {"obj": object()})  # marshal cannot carry it
    for i in range(31):
        rec.emit("s", "writer", "message_out", {"msg": b'{"i":%d}' % i, "related": i})
    assert [part[:1] for part in writer._staged] == [b"C", b"C", b"D"]
    rec.close()
    lines = _lines(tmp_path / "t.jsonl")
    assert [orjson.loads(x)["seq"] for x in lines[1:]] == list(range(1, 97))
    assert orjson.loads(lines[65])["obj"].startswith("<object object")
