"""Turning recorded events into trace lines: numbering, redaction, orjson encoding.

Shared by every output — the trace sink process, the writer thread and the in-memory
recorder — so that each produces the same bytes for the same events. Free of Trio on
purpose: the sink process imports only this and :mod:`.redact`.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import orjson

from mcpactor.tracing.redact import REDACTED, Redactor
from mcpactor.tracing.tracer import FLAT_FIELDS, Compact, EncodedMessage

__all__ = [
    "SCHEDULE_KINDS",
    "dumps",
    "embeddable",
    "encode_events",
    "input_bytes",
    "jsonable",
    "loads",
    "message_bytes",
    "raw_fields",
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
            data = message_bytes(value) if key != "raw" else None
            if data is not None:
                if redactor.might_hold_secret(data):
                    try:
                        value, _ = redactor.redact(loads(data))
                    except ValueError:
                        value = redactor.redact_text(data.decode("utf-8", "replace"))
                else:
                    value = embeddable(data)
            elif value is not None and redactor.is_secret_key(key):
                value = REDACTED
            elif key == "raw" and type(value) is bytes:
                # The input that was not JSON, as the session passes it: its text, and
                # its exact bytes when they are not UTF-8 (raw_fields).
                fixed.update(raw_fields(value, redactor))
                continue
            elif key == "raw" and isinstance(value, str):
                value = redactor.redact_text(value)
            elif isinstance(value, dict | list | str):
                value, _ = redactor.redact(value)
            fixed[key] = value
        out.append(dumps(fixed))
    return out


#: orjson writes integers in this range only; JSON has no bound (a request id may be
#: any integer, and a trace must carry it exactly).
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1


def dumps(obj: Any, option: int | None = None) -> bytes:
    """One trace line's JSON (or any JSON of trace values): orjson, and when it
    refuses, the same with every integer beyond 64 bits written exactly and any value
    it cannot encode as its ``repr`` (a trace line is never lost to one odd value).
    ``option``: orjson's. Raises TypeError only for what even that cannot encode."""
    try:
        return orjson.dumps(obj, option=option)
    except TypeError:
        return orjson.dumps(_encodable(obj, 0), option=option)


def _encodable(value: Any, depth: int) -> Any:
    # The slow path of dumps(): a copy that orjson takes.
    cls = value.__class__
    if cls is int:
        return orjson.Fragment(str(value).encode()) if not _INT_MIN <= value <= _INT_MAX else value
    if cls in (str, float, bool) or value is None or cls is orjson.Fragment:
        return value
    if depth > 200:
        raise TypeError("a trace value nested too deeply")
    if cls is dict:
        return {k if type(k) is str else str(k): _encodable(v, depth + 1)
                for k, v in value.items()}
    if cls in (list, tuple):
        return [_encodable(v, depth + 1) for v in value]
    if isinstance(value, int):  # an int subclass (an IntEnum): its number
        return _encodable(int(value), depth)
    return value if jsonable(value) else repr(value)


#: A run of digits as long as the smallest integer orjson reads as a float (2**63, 19
#: digits): a line without one decodes exactly with orjson alone.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_LONG_DIGITS_STR = re.compile(r"[0-9]{19}")


def loads(data: bytes | str) -> Any:
    """Decode a trace line (or an embedded message) with every integer exact: orjson,
    whose reading of an integer past 64 bits is a float (or a refusal), and the
    stdlib's ``json`` for the rare line that holds one. Raises ValueError
    (``orjson.JSONDecodeError`` for what is not JSON)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "number" not in str(exc).lower():
            raise
        try:
            return _exact_loads(data)
        except ValueError:
            raise exc from None
    if isinstance(data, str):
        wide = _LONG_DIGITS_STR.search(data) is not None
    else:
        wide = _LONG_DIGITS.search(data) is not None
    return _exact_loads(data) if wide else obj


def _exact_loads(data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def raw_fields(data: bytes, redactor: Redactor) -> dict[str, str]:
    """The keys of a ``message_in`` whose input was not JSON: ``raw``, its text (secrets
    redacted by pattern), and, when the bytes are not UTF-8, ``raw_b64``: the bytes
    themselves (base64), which the text cannot hold, so that a replay reads exactly
    what the recording read. Bytes that held a secret are not kept: their
    ``raw_b64`` is the redacted text's."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        shown = data.decode("utf-8", "replace")
        redacted = redactor.redact_text(shown)
        exact = data if redacted == shown else redacted.encode("utf-8")
        return {"raw": redacted, "raw_b64": base64.b64encode(exact).decode("ascii")}
    return {"raw": redactor.redact_text(text)}


def input_bytes(data: dict[str, Any]) -> bytes:
    """What a recorded ``message_in`` (its keys) fed the session: the message's JSON,
    or the exact bytes of input that was not JSON (``raw_b64``, else ``raw``'s text:
    traces before ``raw_b64`` existed)."""
    if "msg" in data:
        return dumps(data["msg"])
    exact = data.get("raw_b64")
    if isinstance(exact, str):
        try:
            return base64.b64decode(exact, validate=True)
        except ValueError:
            pass  # an edited trace: fall back to the text
    return str(data.get("raw", "")).encode("utf-8")


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
            return orjson.Fragment(dumps(loads(data)))
        except ValueError:
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
