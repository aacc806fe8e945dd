"""Turning recorded events into trace lines: numbering, redaction, orjson encoding.

Shared by every output — the trace sink process, the writer thread and the in-memory
recorder — so that each produces the same bytes for the same events. Free of Trio on
purpose: the sink process imports only this and :mod:`.redact`.
"""

from __future__ import annotations

from typing import Any

import orjson

from mcpactor.tracing.redact import REDACTED, Redactor
from mcpactor.tracing.tracer import FLAT_FIELDS, Compact, EncodedMessage

__all__ = [
    "SCHEDULE_KINDS",
    "embeddable",
    "encode_events",
    "jsonable",
    "message_bytes",
    "to_event",
]

#: Records of the schedule and the entropy capture, not of a session: no ``t``,
#: ``session`` or ``actor``; their fields are runtime numbers only (never secrets).
SCHEDULE_KINDS = frozenset({"sched", "read", "trace_truncated"})

_PLAIN_TYPES = (int, float, bool, type(None))
#: Keys every event has, set by the runtime itself: never secrets, never scanned.
_STRUCTURAL = frozenset({"seq", "t", "session", "actor", "kind"})
#: Event kinds whose fields are ids, counters, durations and protocol outcomes only.
NO_FREE_TEXT = frozenset({
    "handler_started", "handler_finished", "timer_set", "timer_reset", "timer_fired",
    "actor_started", "actor_stopped", "progress_dropped", "session_started",
    "transport_opened", "draining", "send_cancelled", "receive_cancelled",
})
#: The flat events of a request's handler, whose actor (``handler:<id>``) is not logged.
HANDLER_KINDS = frozenset({"handler_started", "handler_finished"})
#: seq, t, session, actor, kind, msg, related, yields.
_MESSAGE_EVENT_SIZE = 8


def to_event(event: Compact, seq: int, origin: int) -> dict[str, Any]:
    """One compact event (:mod:`.tracer`) as the object of its trace line."""
    kind = event[3]
    if kind in SCHEDULE_KINDS:
        return _schedule_record(event, seq)
    actor = event[2]
    if actor is None and kind in HANDLER_KINDS:
        actor = f"handler:{event[4]}"  # the flat handler events leave it to be derived
    out: dict[str, Any] = {"seq": seq, "t": (event[0] - origin) / 1e9, "session": event[1],
                           "actor": actor, "kind": kind}
    if type(event[4]) is dict:
        # An event's keys as one dict (the places after it unused).
        if any(v is not None for v in event[5:]):
            raise ValueError(f"not a trace event: kind {kind!r}, a dict and more")
        out.update(event[4])
        return out
    fields = FLAT_FIELDS.get(kind)
    if fields is None or len(event) < 4 + len(fields) or any(
            v is not None for v in event[4 + len(fields):]):
        raise ValueError(f"not a trace event: kind {kind!r}, {len(event)} items")
    out.update(zip(fields, event[4:4 + len(fields)], strict=True))
    return out


def _schedule_record(event: Compact, seq: int) -> dict[str, Any]:
    kind = event[3]
    if kind == "sched":
        out: dict[str, Any] = {"seq": seq, "kind": "sched", "now": event[4], "run": event[5]}
        if event[6]:
            out["new"] = {str(k): v for k, v in event[6].items()}
        return out
    if kind == "read":
        value = event[6]
        if type(value) is bytes:
            value = value.hex()
        return {"seq": seq, "kind": "read", "task": event[4], "src": event[5], "v": value}
    # trace_truncated: events ``first`` .. ``first + lost - 1`` never reached the file.
    # It takes no number of its own.
    return {"kind": kind, "first": event[4], "lost": event[5], "reason": event[6]}


def encode_events(events: list[dict[str, Any]], redactor: Redactor) -> list[bytes]:
    """Encode events as JSON lines, redacting secrets (every output uses this)."""
    dumps = orjson.dumps
    out: list[bytes] = []
    plain = _PLAIN_TYPES
    is_secret_key = redactor.is_secret_key
    might_hold = redactor.might_hold_secret
    for ev in events:
        kind = ev.get("kind")
        if kind in NO_FREE_TEXT or kind in SCHEDULE_KINDS:
            # Identifiers, counters and outcomes only: nothing there can be a secret.
            out.append(dumps(ev))
            continue
        msg = message_bytes(ev.get("msg"))
        if msg is not None and len(ev) <= _MESSAGE_EVENT_SIZE and not might_hold(msg):
            # The common message event: the exact bytes, embedded without decoding.
            ev["msg"] = embeddable(msg)
            out.append(dumps(ev))
            continue
        # Most other events: numbers, flags and short protocol strings that carry no
        # credential are encoded as they are, without building a redacted copy.
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


def has_line_break(data: bytes) -> bool:
    """Whether ``data`` holds a raw CR or LF (``bytes.find``: CPython's ``in`` raises and
    clears a TypeError on the way)."""
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
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        if not _valid_json(data):
            # Not JSON: embedding it would make the line invalid; its text keeps it
            # readable.
            return data.decode("utf-8", "replace")
    return orjson.Fragment(data)


def _valid_json(data: bytes) -> bool:
    # orjson refuses integers beyond 64 bits, which JSON allows (a request id may be one).
    import json

    try:
        json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


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
