"""The trace sink process: ``python -m mcpactor.tracing.sink NONCE``.

One per recording process (:mod:`.sinkclient` starts it), writing every trace file of
that process, so that redaction, encoding and file I/O cost the recording process
nothing but one ``marshal.dumps`` per few dozen events and a pipe write per batch.

Protocol. Frames on stdin: ``<op:u8><channel:u32><length:u32>`` then ``length`` bytes.

- ``OPEN``: JSON ``{"path": ..., "keys": [...]}``: append a trace to ``path`` (which the
  recording process has already created empty), redacting ``keys``;
- ``RECORDS``: a batch as typed parts, written in order: ``<parts:u32>``, the parts'
  lengths (native u32s), then the parts, each a type byte and its bytes:

  - ``L``: complete lines, written as they are (the header; lines the recording
    process encoded itself);
  - ``C``: events as the recorder buffers them (:data:`.encode.Compact`),
    ``marshal``-ed with the number of the first and the clock's origin: this process
    numbers, times, redacts and encodes them (:func:`.encode.encode_block`), so that
    the recording process pays one C call per few dozen events;
  - ``D``: events the recording process encoded itself, because ``marshal`` cannot
    carry their data (objects of other classes): ``<json length:u32><lines:u32>
    <blobs:u32><flags:u32>`` (``FREE_TEXT``: an event other than a message event may
    hold free text), the JSON array of events (each the object its line will be,
    ``{"seq", "t", "session", "actor", "kind", ...data}``, with a bare newline item
    after each), the blob lengths (native u32s), then the blobs: first ``lines``
    already-encoded lines, then the bytes of every traced message, in the order the
    JSON refers to them. A message stands in the JSON as the string
    ``"\\u0000" + NONCE``: carried beside the JSON rather than inside it, it reaches
    the file as the exact bytes that crossed the wire (decoding would lose their
    spacing). A part with nothing to redact is written by splicing bytes: the messages
    put where the marker stands, the separators turned into line ends; only one that
    may hold a secret (or a message holding a line break) is decoded and encoded
    again. Unless ``FREE_TEXT`` is set, the secret scan reads only the messages: every
    other field is then one the runtime wrote (ids, kinds, counters, outcomes);
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
import marshal
import os
import signal
import struct
import sys
from array import array
from typing import IO, Any

import orjson

from mcpactor.tracing.encode import (
    Record,
    encode_block,
    encode_compact,
    has_line_break,
    to_records,
)
from mcpactor.tracing.redact import Redactor
from mcpactor.tracing.tracer import EncodedMessage

#: Frame ops (2 was a single batch of the ``D`` form, before ``RECORDS``).
OP_OPEN, OP_CLOSE, OP_RECORDS = 1, 3, 4
FRAME = struct.Struct("<BII")
BATCH = struct.Struct("<IIII")
COUNT = struct.Struct("<I")
#: A ``D`` part flag: some event other than a message event may hold free text.
FREE_TEXT = 1


class _Trace:
    """One trace file being written."""

    def __init__(self, path: str, keys: list[str]) -> None:
        self.file: IO[bytes] = open(path, "ab")
        self.redactor = Redactor(frozenset(keys))
        self.learned = 0

    def write(self, lines: list[bytes], block: bytes) -> tuple[int, list[str]]:
        if lines:
            block = b"\n".join(lines) + b"\n" + block
        if block:
            self.file.write(block)
            self.file.flush()
        learned = self.redactor.learned
        new, self.learned = learned[self.learned :], len(learned)
        return self.file.tell(), new


def _parts(body: bytes) -> tuple[bytes, list[bytes], list[bytes], int]:
    # A D part's event array, header lines, messages and flags.
    json_len, n_lines, n_blobs, flags = BATCH.unpack_from(body)
    pos = BATCH.size
    payload = body[pos : pos + json_len]
    pos += json_len
    lengths = array("I")
    lengths.frombytes(body[pos : pos + 4 * n_blobs])
    pos += 4 * n_blobs
    blobs: list[bytes] = []
    for n in lengths:
        blobs.append(body[pos : pos + n])
        pos += n
    return payload, blobs[:n_lines], blobs[n_lines:], flags


def splice_block(body: bytes, marker: str) -> tuple[list[bytes], bytes | None, bytes]:
    """The header lines of a ``D`` part; its events as the lines to write, each ending
    in a newline, made by putting the messages where the marker stands — or None when
    that cannot give the right lines (a message holding a line break, a marker that is
    not one of ours): then :func:`decode_batch` and the encoder; and what the secret
    scan must read: the whole block, or only the messages when the body says that
    nothing else can hold free text."""
    payload, lines, messages, flags = _parts(body)
    if payload == b"[]":
        return lines, b"", b""
    # Every pass over the bytes counts here: one-byte membership tests (memchr) are
    # nearly free, anything else costs about a nanosecond a byte.
    everything = b"".join(messages)
    if has_line_break(everything):
        return lines, None, b""  # a raw line break inside a message: re-encode it
    # [A,\n,B,\n] -> A\nB, on the events alone: the separators can only stand between
    # events (see encode.EVENT_SEPARATOR).
    pieces = payload[1:-3].replace(b",\n,", b"\n").split(orjson.dumps(marker))
    if len(pieces) != len(messages) + 1:
        return lines, None, b""
    joined: list[bytes] = [pieces[0]]
    add = joined.append
    for message, piece in zip(messages, pieces[1:], strict=True):
        add(message)
        add(piece)
    add(b"\n")
    block = b"".join(joined)
    return lines, block, block if flags & FREE_TEXT else everything


def decode_batch(body: bytes, marker: str) -> tuple[list[bytes], list[Record]]:
    """The header lines and the records of a ``D`` part, messages as bytes (under
    ``msg``) or EncodedMessage (anywhere else)."""
    payload, lines, messages, _ = _parts(body)
    # [A,\n,B,\n] -> [A,B]: the separators only ever stand between events.
    events = orjson.loads(payload[:-3].replace(b",\n,", b",") + b"]" if payload != b"[]"
                          else payload)
    records: list[Record] = []
    it = iter(messages)
    for ev in events:
        seq, t, session, actor, kind = (ev.pop("seq"), ev.pop("t"), ev.pop("session"),
                                        ev.pop("actor"), ev.pop("kind"))
        if messages:
            # Messages are under ``msg`` in every event the runtime emits: look there
            # first; anything else takes the full walk.
            if ev.get("msg") == marker:
                ev["msg"] = next(it)  # bytes: an encoded message, as emitted
            else:
                ev = _replace_all(ev, marker, it)
        records.append((seq, t, session, actor, kind, ev))
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


def split_parts(body: bytes) -> list[bytes]:
    """The parts of a ``RECORDS`` body, each still led by its type byte."""
    (count,) = COUNT.unpack_from(body)
    lengths = array("I")
    lengths.frombytes(body[COUNT.size : COUNT.size + 4 * count])
    pos = COUNT.size + 4 * count
    parts: list[bytes] = []
    for n in lengths:
        parts.append(body[pos : pos + n])
        pos += n
    return parts


def records_body(parts: list[bytes]) -> bytes:
    """A ``RECORDS`` body of ``parts`` (each led by its type byte)."""
    return b"".join([COUNT.pack(len(parts)), array("I", map(len, parts)).tobytes(), *parts])


def compact_records(part: bytes) -> list[Record]:
    """The events of a ``C`` part (without its type byte) as records."""
    first_seq, origin, events = marshal.loads(part)
    return to_records(events, first_seq, origin)


def compact_block(part: bytes, redactor: Redactor) -> bytes:
    """The lines to write for a ``C`` part (without its type byte)."""
    first_seq, origin, events = marshal.loads(part)
    return encode_compact(events, first_seq, origin, redactor)


def decode_parts(body: bytes, marker: str) -> list[tuple[list[bytes], list[Record]]]:
    """A ``RECORDS`` body as (lines, records) pieces in order: what a writer taking over
    from the sink must write (lines are complete lines, without their newline)."""
    pieces: list[tuple[list[bytes], list[Record]]] = []
    for part in split_parts(body):
        kind, data = part[:1], part[1:]
        if kind == b"L":
            pieces.append((data[:-1].split(b"\n") if data else [], []))
        elif kind == b"C":
            pieces.append(([], compact_records(data)))
        else:
            pieces.append(decode_batch(data, marker))
    return pieces


def _write_parts(trace: _Trace, body: bytes, marker: str) -> tuple[int, list[str]]:
    blocks: list[bytes] = []
    for part in split_parts(body):
        kind, data = part[:1], part[1:]
        if kind == b"L":
            blocks.append(data)
        elif kind == b"C":
            blocks.append(compact_block(data, trace.redactor))
        elif kind == b"D":
            lines, block, scan = splice_block(data, marker)
            if block is None or trace.redactor.batch_might_hold_secret(scan):
                lines, records = decode_batch(data, marker)
                block = encode_block(records, trace.redactor)
            if lines:
                blocks.append(b"\n".join(lines) + b"\n")
            blocks.append(block)
        else:
            raise ValueError(f"unknown part type {kind!r}")
    return trace.write([], b"".join(blocks))


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
                elif op == OP_RECORDS:
                    size, learned = _write_parts(traces[channel], body, marker)
                    reply = ["A", channel, size, learned, errors.pop(channel, None)]
                elif op == OP_CLOSE:
                    trace = traces.pop(channel)
                    size = trace.file.tell()
                    trace.file.close()
                    reply = ["C", channel, size, errors.pop(channel, None)]
            except Exception as exc:  # one bad batch or file must not end the others
                errors[channel] = repr(exc)
                if op == OP_RECORDS:
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
