"""The trace sink process: ``python -m mcpactor.tracing.sink NONCE``.

One per recording process (:mod:`.sinkclient` starts it), writing every trace file of
that process, so that redaction, encoding and file I/O cost the recording process
nothing but one ``orjson.dumps`` per batch and a pipe write.

Protocol. Frames on stdin: ``<op:u8><channel:u32><length:u32>`` then ``length`` bytes.

- ``OPEN``: JSON ``{"path": ..., "keys": [...]}``: append a trace to ``path`` (which the
  recording process has already created empty), redacting ``keys``;
- ``DATA``: a batch: ``<json length:u32><lines:u32><blobs:u32>``, the JSON array of
  records (``[seq, t, session, actor, kind, data]``), the blob lengths (native u32s),
  then the blobs: first ``lines`` already-encoded lines (the header), then the bytes of
  every :class:`~mcpactor.tracing.tracer.EncodedMessage`, in the order the JSON refers
  to them. A message stands in the JSON as the string ``"\\u0000" + NONCE``: carried
  beside the JSON rather than inside it, it reaches the file as the exact bytes that
  crossed the wire (decoding would lose their spacing);
- ``CLOSE``: write nothing more, close the file.

Answers on stdout, one JSON array per line: ``["A", channel, size, learned, error]``
after each batch is written (``size``: the file's size; ``learned``: secrets the
redactor learned from the batch, so that the recording process can carry on without
leaking them should this process die) and ``["C", channel, size, error]`` once a file
is closed; ``["E", channel, -1, error]`` when a file cannot be opened (the recording
process then writes it, and ignores the channel's later answers). At the end of stdin (the recording process has exited or died) every file is
closed and the process exits. Redaction and line format are :mod:`.encode`'s, as for
every other writer.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
from array import array
from typing import IO, Any

import orjson

from mcpactor.tracing.encode import Record, encode_records
from mcpactor.tracing.redact import Redactor
from mcpactor.tracing.tracer import EncodedMessage

OP_OPEN, OP_DATA, OP_CLOSE = 1, 2, 3
FRAME = struct.Struct("<BII")
BATCH = struct.Struct("<III")


class _Trace:
    """One trace file being written."""

    def __init__(self, path: str, keys: list[str]) -> None:
        self.file: IO[bytes] = open(path, "ab")
        self.redactor = Redactor(frozenset(keys))
        self.learned = 0

    def write(self, lines: list[bytes]) -> tuple[int, list[str]]:
        if lines:
            self.file.write(b"\n".join(lines) + b"\n")
            self.file.flush()
        learned = self.redactor.learned
        new, self.learned = learned[self.learned :], len(learned)
        return self.file.tell(), new


def decode_batch(body: bytes, marker: str) -> tuple[list[bytes], list[Record]]:
    """The header lines and the records of a ``DATA`` body, messages as bytes (under
    ``msg``) or EncodedMessage (anywhere else)."""
    json_len, n_lines, n_blobs = BATCH.unpack_from(body)
    pos = BATCH.size
    payload = memoryview(body)[pos : pos + json_len]
    pos += json_len
    lengths = array("I")
    lengths.frombytes(body[pos : pos + 4 * n_blobs])
    pos += 4 * n_blobs
    blobs: list[bytes] = []
    for n in lengths:
        blobs.append(body[pos : pos + n])
        pos += n
    lines, messages = blobs[:n_lines], blobs[n_lines:]
    records = orjson.loads(payload)
    # Messages are under ``msg`` in every event the runtime emits: look there first;
    # anything else takes the full walk.
    used = 0
    if messages:
        for rec in records:
            data = rec[5]
            if data.get("msg") == marker:
                data["msg"] = messages[used]  # bytes: an encoded message, as emitted
                used += 1
    if used != len(messages):
        records = orjson.loads(payload)
        it = iter(messages)
        for rec in records:
            rec[5] = _replace_all(rec[5], marker, it)
    return lines, records


def _replace_all(value: Any, marker: str, messages: Any) -> Any:
    # Depth first, in order: the order in which orjson met the messages when encoding.
    if isinstance(value, dict):
        return {k: _replace_all(v, marker, messages) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_all(v, marker, messages) for v in value]
    if value.__class__ is str and value == marker:
        return EncodedMessage(next(messages))
    return value


def _read(stream: IO[bytes], n: int) -> bytes | None:
    data = stream.read(n)
    return data if len(data) == n else None


def serve(inp: IO[bytes], out: IO[bytes], nonce: str) -> None:
    """Write traces as ``inp`` says until it ends; answer on ``out``."""
    marker = "\x00" + nonce
    traces: dict[int, _Trace] = {}
    errors: dict[int, str] = {}
    try:
        while (head := _read(inp, FRAME.size)) is not None:
            op, channel, length = FRAME.unpack(head)
            body = _read(inp, length)
            if body is None:
                break
            reply: list[Any] | None = None
            try:
                if op == OP_OPEN:
                    spec = orjson.loads(body)
                    try:
                        traces[channel] = _Trace(spec["path"], spec["keys"])
                    except OSError as exc:  # the recording process writes this one
                        reply = ["E", channel, -1, repr(exc)]
                elif op == OP_DATA:
                    trace = traces[channel]
                    lines, records = decode_batch(body, marker)
                    size, learned = trace.write(lines + encode_records(records, trace.redactor))
                    reply = ["A", channel, size, learned, errors.pop(channel, None)]
                elif op == OP_CLOSE:
                    trace = traces.pop(channel)
                    size = trace.file.tell()
                    trace.file.close()
                    reply = ["C", channel, size, errors.pop(channel, None)]
            except Exception as exc:  # one bad batch or file must not end the others
                errors[channel] = repr(exc)
                if op == OP_DATA:
                    reply = ["A", channel, -1, [], errors.pop(channel)]
                elif op == OP_CLOSE:
                    traces.pop(channel, None)
                    reply = ["C", channel, -1, errors.pop(channel)]
            if reply is not None:
                out.write(orjson.dumps(reply) + b"\n")
                out.flush()
    finally:
        for trace in traces.values():
            trace.file.close()


def main(argv: list[str]) -> int:
    """Entry point: ``argv[1]`` is the nonce of the message marker."""
    # Ctrl-C reaches the whole foreground process group; the recording process decides
    # when this one ends (by closing its stdin), after its last events are written.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Recording must not take CPU from the process it records: run in the gaps it
    # leaves (when there are none, the recorder's bounded backlog makes it wait).
    # SCHED_IDLE where there is one (Linux): it never preempts a normal task on waking,
    # which a merely niced process still does.
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(10)
    serve(sys.stdin.buffer, sys.stdout.buffer, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
