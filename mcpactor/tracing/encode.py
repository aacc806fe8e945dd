"""Turning recorded events into trace lines: redaction and orjson encoding.

Shared by every writer — the background thread, the trace sink process and the
in-memory recorder — so that each produces the same bytes for the same events. Free of
Trio on purpose: the sink process imports only this and :mod:`.redact`.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpactor.tracing.redact import REDACTED, Redactor
from mcpactor.tracing.tracer import FLAT_FIELDS, Compact, EncodedMessage

#: One event as ``emit`` stores it: seq, t, session, actor, kind, data. A tuple, not a
#: dict: building the event's dict is left to whoever encodes it. ``t`` is seconds as
#: the float nearest a whole number of nanoseconds (the recorder divides an integer
#: nanosecond reading by 1e9), so it prints in at most nine decimals as it is.
Record = tuple[int, float, str, str, str, dict[str, Any]]


def to_records(events: list[Compact], first_seq: int, origin: int) -> list[Record]:
    """``events`` as records: numbered from ``first_seq``, ``t`` in seconds since
    ``origin`` (nanoseconds), the float nearest a whole number of nanoseconds; flat
    events (:data:`.tracer.FLAT_FIELDS`) with their data as a dict again."""
    return [(seq, (e[0] - origin) / 1e9, e[1], e[2], e[3], e[4] if len(e) == 5 else flat_data(e))
            for seq, e in enumerate(events, first_seq)]


def flat_data(event: Compact) -> dict[str, Any]:
    """The data of a flat event (:data:`.tracer.FLAT_FIELDS`) as ``emit`` takes it."""
    kind = event[3]
    if kind == "message_in":
        return {"msg": event[4], "buffered": True} if event[5] else {"msg": event[4]}
    fields = FLAT_FIELDS.get(kind)
    if fields is None or len(fields) != len(event) - 4:
        raise ValueError(f"not a flat trace event: kind {kind!r}, {len(event)} items")
    return dict(zip(fields, event[4:], strict=True))

_PLAIN_TYPES = (int, float, bool, type(None))
#: Keys every event has, set by the runtime itself: never secrets, never scanned.
_STRUCTURAL = frozenset({"seq", "t", "session", "actor", "kind"})
#: Event kinds whose fields are ids, counters, durations and protocol outcomes only.
NO_FREE_TEXT = frozenset({
    "handler_started", "handler_finished", "timer_set", "timer_reset", "timer_fired",
    "actor_started", "actor_stopped", "progress_dropped", "session_started",
    "transport_opened", "draining",
})
#: seq, t, session, actor, kind, msg, related.
_MESSAGE_EVENT_SIZE = 7


def to_events(records: list[Record]) -> list[dict[str, Any]]:
    """The event dicts of ``records``: the structural keys first, then the data's."""
    out: list[dict[str, Any]] = []
    append = out.append
    for seq, t, session, actor, kind, data in records:
        append({"seq": seq, "t": t, "session": session, "actor": actor, "kind": kind, **data})
    return out


def encode_records(records: list[Record], redactor: Redactor) -> list[bytes]:
    """:func:`encode_events` for records as ``emit`` stores them, one line per event."""
    block = encode_block(records, redactor)
    return block[:-1].split(b"\n") if block else []


def encode_block(records: list[Record], redactor: Redactor) -> bytes:
    """The lines of :func:`encode_events` for ``records``, each ending in a newline (what
    a writer appends to the file).

    Most batches hold no secret at all: the batch is encoded on the fast path and one
    scan of the very bytes to be written proves that redaction would change nothing —
    the same bytes :func:`encode_events` would write, at a fraction of its cost.
    """
    clean = _encode_clean(records)
    if clean is not None and not redactor.batch_might_hold_secret(clean[1]):
        return clean[0]
    lines = encode_events(to_events(records), redactor)
    return b"\n".join(lines) + b"\n" if lines else b""


class _Unusual(Exception):
    """An event :func:`encode_compact` leaves to the records' way."""


def encode_compact(events: list[Compact], first_seq: int, origin: int,
                   redactor: Redactor) -> bytes:
    """:func:`encode_block` of ``to_records(events, first_seq, origin)``, the same bytes,
    without making the records first: what the trace sink does with the events a
    recording process stages. The four flat kinds (:data:`.tracer.FLAT_FIELDS`) go
    straight from their values to their line objects. Anything out of the common way (a
    message other than bytes, a line break in a message, data orjson cannot encode, a
    batch that might hold a secret) takes the records' way."""
    fragment = orjson.Fragment
    dumps = orjson.dumps
    newline = orjson.OPT_APPEND_NEWLINE
    lines: list[bytes] = []
    add = lines.append
    messages: list[bytes] = []
    keep = messages.append
    free = False
    seq = first_seq
    try:
        for e in events:
            kind = e[3]
            t = (e[0] - origin) / 1e9
            if len(e) == 5:
                # The rarer kinds, in emit's form: the records' encoder, one event at a
                # time (the same rules, written once).
                parts = _clean_parts([(seq, t, e[1], e[2], kind, e[4])])
                if parts is None:
                    raise _Unusual
                line, msgs, other = parts
                if msgs:
                    keep(msgs)
                free = free or other
                add(line)
                seq += 1
                continue
            if kind == "message_out":
                msg = e[4]
                if msg.__class__ is not bytes:
                    raise _Unusual
                keep(msg)
                ev = {"seq": seq, "t": t, "session": e[1], "actor": e[2], "kind": kind,
                      "msg": fragment(msg), "related": e[5]}
            elif kind == "message_in":
                msg = e[4]
                if msg.__class__ is not bytes:
                    raise _Unusual
                keep(msg)
                if e[5]:
                    ev = {"seq": seq, "t": t, "session": e[1], "actor": e[2], "kind": kind,
                          "msg": fragment(msg), "buffered": True}
                else:
                    ev = {"seq": seq, "t": t, "session": e[1], "actor": e[2], "kind": kind,
                          "msg": fragment(msg)}
            elif kind == "handler_started":
                ev = {"seq": seq, "t": t, "session": e[1], "actor": e[2], "kind": kind,
                      "id": e[4], "method": e[5]}
            elif kind == "handler_finished":
                ev = {"seq": seq, "t": t, "session": e[1], "actor": e[2], "kind": kind,
                      "id": e[4], "outcome": e[5], "suppressed": e[6]}
            else:
                raise _Unusual
            add(dumps(ev, option=newline))
            seq += 1
    except (_Unusual, TypeError):
        return encode_block(to_records(events, first_seq, origin), redactor)
    joined = b"".join(messages)
    block = b"".join(lines)
    # A raw line break would split a line; the scan reads the messages alone when every
    # other field is one the runtime wrote.
    if has_line_break(joined) or redactor.batch_might_hold_secret(block if free else joined):
        return encode_block(to_records(events, first_seq, origin), redactor)
    return block


def has_line_break(data: bytes) -> bool:
    """Whether ``data`` holds a raw CR or LF.

    ``bytes.find``, not ``in``: CPython's ``bytes in bytes`` first tries the needle as
    an integer and raises and clears a TypeError (a formatted message) on the way,
    which costs several times the search itself."""
    return data.find(b"\n") >= 0 or data.find(b"\r") >= 0


def embeddable(data: bytes) -> Any:
    """An encoded message as orjson embeds it: the bytes themselves (a Fragment), unless
    they hold a raw line break (legal JSON whitespace, e.g. a pretty-printed HTTP body,
    but it would split the trace line): then the message re-encoded compactly, or, if it
    is not JSON at all, its text as a string."""
    if has_line_break(data):
        try:
            return orjson.Fragment(orjson.dumps(orjson.loads(data)))
        except orjson.JSONDecodeError:
            return data.decode("utf-8", "replace")
    return orjson.Fragment(data)


#: Put between events in one orjson.dumps of the whole batch: a list item that is a bare
#: newline. ``,\n,`` can then only be a separator: valid JSON never has two commas in a
#: row, orjson escapes newlines inside strings, and embedded messages hold none
#: (:func:`embeddable`).
EVENT_SEPARATOR = orjson.Fragment(b"\n")


#: The kinds of message events: ``msg``, and for the writer's ``related`` (the request
#: id, which the message holds too).
MESSAGE_KINDS = frozenset({"message_in", "message_out"})


def _encode_clean(records: list[Record]) -> tuple[bytes, bytes] | None:
    # The lines of a batch without any redaction, and what the secret scan must read:
    # the messages alone when every other field is one the runtime wrote (message
    # events, kinds without free text), else the lines. None for what needs
    # encode_events (see _clean_parts).
    parts = _clean_parts(records)
    if parts is None:
        return None
    block, messages, free = parts
    return block, block if free else messages


def _clean_parts(records: list[Record]) -> tuple[bytes, bytes, bool] | None:
    # The lines of a batch without any redaction, one orjson.dumps per event (a C call
    # each: cheaper than one dumps of the batch and a pass to split it into lines); its
    # messages, joined; and whether any other field may hold free text. None for what
    # needs encode_events: undecodable input (``raw``, redacted by pattern) and anything
    # orjson cannot encode (messages anywhere but under ``msg`` included: encode_events
    # writes their repr).
    if not records:
        return b"", b"", False
    fragment = orjson.Fragment
    dumps = orjson.dumps
    newline = orjson.OPT_APPEND_NEWLINE
    lines: list[bytes] = []
    add = lines.append
    messages: list[bytes] = []
    keep = messages.append
    free = False
    try:
        for seq, t, session, actor, kind, data in records:
            ev = {"seq": seq, "t": t, "session": session, "actor": actor, "kind": kind, **data}
            msg: Any = data.get("msg")
            cls = msg.__class__
            if cls is bytes or cls is EncodedMessage:
                if cls is EncodedMessage:
                    msg = msg.data
                keep(msg)
                # A raw line break would split the line: checked on all messages at once.
                ev["msg"] = fragment(msg)
                if kind not in MESSAGE_KINDS or len(data) > 2:
                    free = True
            elif kind not in NO_FREE_TEXT:
                if "raw" in data:
                    return None
                free = True
            add(dumps(ev, option=newline))
    except TypeError:
        return None
    joined = b"".join(messages)
    if has_line_break(joined):
        return _clean_parts_broken(records)
    return b"".join(lines), joined, free


def _clean_parts_broken(records: list[Record]) -> tuple[bytes, bytes, bool] | None:
    # _clean_parts for a batch in which a message holds a raw line break: those
    # messages are embedded re-encoded (embeddable); the scan reads the whole block.
    out: list[bytes] = []
    for seq, t, session, actor, kind, data in records:
        ev = {"seq": seq, "t": t, "session": session, "actor": actor, "kind": kind, **data}
        msg = message_bytes(data.get("msg"))
        if msg is not None:
            ev["msg"] = embeddable(msg)
        try:
            out.append(orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE))
        except TypeError:
            return None
    return b"".join(out), b"", True


def encode_events(events: list[dict[str, Any]], redactor: Redactor) -> list[bytes]:
    """Encode events as JSON lines, redacting secrets (used by every recorder)."""
    dumps = orjson.dumps
    out: list[bytes] = []
    plain = _PLAIN_TYPES
    is_secret_key = redactor.is_secret_key
    might_hold = redactor.might_hold_secret
    for ev in events:
        kind = ev.get("kind")
        if kind in NO_FREE_TEXT:
            # Identifiers, counters and outcomes only: nothing there can be a secret.
            out.append(dumps(ev))
            continue
        msg = message_bytes(ev.get("msg"))
        if msg is not None and len(ev) <= _MESSAGE_EVENT_SIZE and not might_hold(msg):
            # The common message event: the exact bytes, embedded without decoding.
            ev["msg"] = embeddable(msg)
            out.append(dumps(ev))
            continue
        # Fast path, most other events: numbers, flags and short protocol strings that carry
        # no credential are encoded as they are, without building a redacted copy.
        for key, value in ev.items():
            if type(value) in plain or key in _STRUCTURAL:
                continue
            # ``raw`` is undecodable input, redacted by pattern (``"password": ...``).
            if (type(value) is str and key != "raw" and not is_secret_key(key)
                    and not redactor.text_might_hold_secret(value)):
                continue
            break
        else:
            out.append(dumps(ev))
            continue
        fixed: dict[str, Any] = {}
        for key, value in ev.items():
            if key in _STRUCTURAL:
                fixed[key] = value
                continue
            data = message_bytes(value)
            if data is not None:
                if redactor.might_hold_secret(data):
                    try:
                        value, _ = redactor.redact(orjson.loads(data))
                    except orjson.JSONDecodeError:
                        value = redactor.redact_text(data.decode("utf-8", "replace"))
                else:
                    value = embeddable(data)
            elif value is not None and redactor.is_secret_key(key):
                value = REDACTED
            elif key == "raw" and isinstance(value, str):
                value = redactor.redact_text(value)
            elif isinstance(value, dict | list | str):
                value, _ = redactor.redact(value)
            fixed[key] = value
        try:
            out.append(dumps(fixed))
        except TypeError:
            out.append(dumps({k: v if jsonable(v) else repr(v) for k, v in fixed.items()}))
    return out


def message_bytes(value: Any) -> bytes | None:
    """The encoded JSON of a traced message (bytes or :class:`EncodedMessage`), else None."""
    cls = value.__class__
    if cls is bytes:
        return value
    if cls is EncodedMessage:
        return value.data
    return None


def jsonable(value: Any) -> bool:
    """Whether orjson can encode ``value`` as it is."""
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True
