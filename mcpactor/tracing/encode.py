"""Turning recorded events into trace lines: redaction and orjson encoding.

Shared by every writer — the background thread, the trace sink process and the
in-memory recorder — so that each produces the same bytes for the same events. Free of
Trio on purpose: the sink process imports only this and :mod:`.redact`.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpactor.tracing.redact import REDACTED, Redactor
from mcpactor.tracing.tracer import EncodedMessage

#: One event as ``emit`` stores it: seq, t, session, actor, kind, data. A tuple, not a
#: dict: building the event's dict is left to whoever encodes it, off the Trio thread.
Record = tuple[int, float, str, str, str, dict[str, Any]]

_PLAIN_TYPES = (int, float, bool, type(None))
#: Keys every event has, set by the runtime itself: never secrets, never scanned.
_STRUCTURAL = frozenset({"seq", "t", "session", "actor", "kind"})
#: Event kinds whose fields are ids, counters, durations and protocol outcomes only.
_NO_FREE_TEXT = frozenset({
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
        ev = {"seq": seq, "t": t, "session": session, "actor": actor, "kind": kind}
        ev.update(data)
        append(ev)
    return out


def encode_records(
    records: list[Record], redactor: Redactor, scan: bytes | None = None
) -> list[bytes]:
    """:func:`encode_events` for records as ``emit`` stores them.

    Most batches hold no secret at all: one scan of the whole batch (``scan``: bytes
    holding every string of the batch as JSON, made here if not given) proves it, and
    the lines are then encoded without any per-event check — the same bytes
    :func:`encode_events` would write, at a fraction of its cost.
    """
    if scan is None:
        scan = _scan_bytes(records)
    if scan is not None and not redactor.batch_might_hold_secret(scan):
        lines = _encode_clean(records)
        if lines is not None:
            return lines
    return encode_events(to_events(records), redactor)


def _scan_bytes(records: list[Record]) -> bytes | None:
    parts: list[bytes] = []

    def default(obj: Any) -> Any:
        if obj.__class__ is EncodedMessage:
            parts.append(obj.data)
            return None
        raise TypeError

    try:
        parts.append(orjson.dumps(records, default=default))
    except TypeError:
        return None  # something only encode_events knows how to write
    # Separated, so that no needle can be made of the end of one part and the next.
    return b"\n".join(parts)


#: Put between events in one orjson.dumps of the whole batch: a list item that is a bare
#: newline. ``,\n,`` can then only be a separator: valid JSON never has two commas in a
#: row, and orjson escapes newlines inside strings (messages under ``msg`` are valid JSON).
_SEPARATOR = orjson.Fragment(b"\n")


def _encode_clean(records: list[Record]) -> list[bytes] | None:
    # Lines for a batch known to hold no secret, from one orjson.dumps; None for what
    # needs encode_events: undecodable input (``raw``, redacted by pattern) and anything
    # orjson cannot encode (messages anywhere but under ``msg`` included: encode_events
    # writes their repr).
    fragment = orjson.Fragment
    sep = _SEPARATOR
    items: list[Any] = []
    append = items.append
    for seq, t, session, actor, kind, data in records:
        if "raw" in data:
            return None
        ev = {"seq": seq, "t": round(t, 9) if type(t) is float else t, "session": session,
              "actor": actor, "kind": kind}
        ev.update(data)
        msg = ev.get("msg")
        if msg.__class__ is EncodedMessage:
            ev["msg"] = fragment(msg.data)
        append(ev)
        append(sep)
    if not items:
        return []
    try:
        body = orjson.dumps(items)
    except TypeError:
        return None
    return body[1:-3].split(b",\n,")  # [A,\n,B,\n] -> A, B


def encode_events(events: list[dict[str, Any]], redactor: Redactor) -> list[bytes]:
    """Encode events as JSON lines, redacting secrets (used by every recorder)."""
    dumps = orjson.dumps
    fragment = orjson.Fragment
    out: list[bytes] = []
    plain = _PLAIN_TYPES
    is_secret_key = redactor.is_secret_key
    might_hold = redactor.might_hold_secret
    for ev in events:
        t = ev.get("t")
        if type(t) is float:
            ev["t"] = round(t, 9)
        kind = ev.get("kind")
        if kind in _NO_FREE_TEXT:
            # Identifiers, counters and outcomes only: nothing there can be a secret.
            out.append(dumps(ev))
            continue
        msg = ev.get("msg")
        if type(msg) is EncodedMessage and len(ev) <= _MESSAGE_EVENT_SIZE and not might_hold(msg.data):
            # The common message event: the exact bytes, embedded without decoding.
            ev["msg"] = fragment(msg.data)
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
            if type(value) is EncodedMessage:
                data = value.data
                if redactor.might_hold_secret(data):
                    try:
                        value, _ = redactor.redact(orjson.loads(data))
                    except orjson.JSONDecodeError:
                        value = redactor.redact_text(data.decode("utf-8", "replace"))
                else:
                    value = fragment(data)
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


def jsonable(value: Any) -> bool:
    """Whether orjson can encode ``value`` as it is."""
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True
