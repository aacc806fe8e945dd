"""Comparing what a server answered with what the recording says it answered.

Used where the schedule cannot be followed — changed code (``--server NEW``) or a live
server (``--against``) — so the comparison is by meaning, not by order:

- each response is matched with the recorded one by session and request id;
- notifications are compared per session and method as counts (when one arrived,
  relative to others, is timing, which no request depends on);
- requests the server makes of the client (sampling, elicitation, roots) are compared
  per method, in order.

Every difference is listed, not just the first.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, TextIO

import attrs

from mcpactor.tracing.encode import dumps, loads

from .trace import Trace


@attrs.frozen
class Change:
    """One response that is not what the recording has (None: no response)."""

    session: str | None
    id: Any
    method: str
    recorded: Any
    replayed: Any


@attrs.frozen
class Comparison:
    """Every response that changed, and the notification and request counts that did."""

    changes: tuple[Change, ...]
    responses: int
    notifications: tuple[str, ...]
    #: The recorded sessions that had responses.
    sessions: tuple[str | None, ...] = ()

    @property
    def same(self) -> bool:
        """Whether every response is as recorded (notifications aside)."""
        return not self.changes


def _key(value: Any) -> str:
    return dumps(value).decode()


def response_key(value: Any) -> str:
    """A request id as the comparison keys it (its JSON)."""
    return _key(value)


def server_messages(trace: Trace) -> tuple[list[tuple[str | None, Any]], dict[Any, str]]:
    """What the recorded server sent, as ``(session, message)``, and the method of every
    request the client made, by ``(session, id)``."""
    out: list[tuple[str | None, Any]] = []
    methods: dict[Any, str] = {}
    inbound, outbound = ("message_out", "message_in") if trace.role == "client" else (
        "message_in", "message_out")
    for ev in trace.events:
        msg = ev.data.get("msg")
        if ev.kind == inbound:
            for m in msg if isinstance(msg, list) else [msg]:
                if isinstance(m, dict) and "method" in m and "id" in m:
                    methods[(ev.session, _key(m["id"]))] = str(m["method"])
        elif ev.kind == outbound:
            for m in msg if isinstance(msg, list) else [msg]:
                out.append((ev.session, m))
    return out, methods


def compare(recorded: Iterable[tuple[str | None, Any]],
            replayed: Iterable[tuple[str | None, Any]],
            methods: dict[Any, str], *,
            settled: set[tuple[str | None, str]] | frozenset[Any] = frozenset(),
            loose: set[tuple[str | None, str]] | frozenset[Any] = frozenset(),
            references: frozenset[str] = frozenset()) -> Comparison:
    """Compare two runs' server messages (see the module). ``settled``: the responses,
    by ``(session, id JSON)``, known to be the recorded ones (an exact replay reproduced
    them): never listed as changed. ``loose``: the responses compared by their form
    only (:func:`form`), whose values depended on timing or entropy. ``references``:
    strings of recorded answers that later inputs quote back (:func:`references`): a
    server's opaque state (a ``requestState``, a task id), compared as present only."""
    rec_resp, rec_note, rec_req = _split(recorded)
    new_resp, new_note, new_req = _split(replayed)
    changes: list[Change] = []
    for key in [*rec_resp, *(k for k in new_resp if k not in rec_resp)]:
        if key in settled:
            continue
        a, b = rec_resp.get(key), new_resp.get(key)
        if references and a is not None and b is not None:
            a, b = _unreferenced(a, b, references)
        if key in loose and a is not None and b is not None and form(a) == form(b):
            continue
        if a != b:
            sid, rid = key
            changes.append(Change(sid, loads(rid), methods.get(key, "?"), a, b))
    notes: list[str] = []
    for (sid, method) in sorted(set(rec_note) | set(new_note), key=str):
        a, b = rec_note.get((sid, method), 0), new_note.get((sid, method), 0)
        if a != b:
            notes.append(f"{method}: {a} recorded, {b} now")
    for (sid, method) in sorted(set(rec_req) | set(new_req), key=str):
        a, b = rec_req.get((sid, method), []), new_req.get((sid, method), [])
        if a != b:
            notes.append(f"{method} (asked of the client): {len(a)} recorded, {len(b)} now"
                         + ("" if len(a) != len(b) else ", with other params"))
    sessions = tuple(dict.fromkeys(sid for sid, _ in rec_resp))
    return Comparison(tuple(changes), len(rec_resp), tuple(notes), sessions)


def references(trace: Trace, *, shortest: int = 8) -> frozenset[str]:
    """The strings (``shortest`` characters or more) of the server's recorded messages
    that the client's later messages quote back: state the server handed out for the
    client to return (a ``requestState``, a task id, a cursor)."""
    inbound, outbound = ("message_out", "message_in") if trace.role == "client" else (
        "message_in", "message_out")
    handed: set[str] = set()
    quoted: set[str] = set()
    for ev in trace.events:
        if ev.kind == outbound:
            _strings(ev.data.get("msg"), handed, shortest)
        elif ev.kind == inbound and handed:
            found: set[str] = set()
            _strings(ev.data.get("msg"), found, shortest)
            quoted |= found & handed
    return frozenset(quoted)


def _strings(value: Any, into: set[str], shortest: int) -> None:
    if isinstance(value, str):
        if len(value) >= shortest:
            into.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, into, shortest)
    elif isinstance(value, list):
        for v in value:
            _strings(v, into, shortest)


def _unreferenced(a: Any, b: Any, refs: frozenset[str]) -> tuple[Any, Any]:
    """``a`` (recorded) and ``b`` (now) with each reference of ``a`` and the string at
    the same place in ``b`` both replaced by a placeholder."""
    if isinstance(a, str) and a in refs and isinstance(b, str):
        return "<reference>", "<reference>"
    if isinstance(a, dict) and isinstance(b, dict):
        pairs = {k: _unreferenced(a[k], b[k], refs) if k in b else (a[k], None)
                 for k in a}
        return ({k: x for k, (x, _) in pairs.items()},
                {**b, **{k: y for k, (_, y) in pairs.items() if k in b}})
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        both = [_unreferenced(x, y, refs) for x, y in zip(a, b, strict=True)]
        return [x for x, _ in both], [y for _, y in both]
    return a, b


def form(body: Any) -> Any:
    """A response with its values masked: an error's code; a result's structure, with
    every number, and in every string each number and each run of eight or more
    hexadecimal digits (a uuid, an id, a hash), replaced by a placeholder. Words stay:
    ``"took 60, 40 left"`` and ``"took 60, -20 left"`` have one form, ``"refused"``
    another."""
    if not isinstance(body, dict):
        return type(body).__name__
    if "error" in body:
        err = body["error"]
        return {"error": err.get("code") if isinstance(err, dict) else None}
    return _form(body.get("result"))


_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F-]*[0-9a-fA-F]{8,}[0-9a-fA-F-]*(?![0-9A-Za-z])")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _form(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_form(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "#"
    if isinstance(value, str):
        # One placeholder for ids and numbers: a random id's digits can all be decimal
        # ("62004210"), and it must have the same form as one with letters ("48b42b99").
        return _NUMBER.sub("#", _HEX.sub("#", value))
    return type(value).__name__


def racy_requests(trace: Trace) -> frozenset[tuple[str | None, str]]:
    """The requests, by ``(session, id JSON)``, whose recorded answers depended on more
    than their inputs: the handler ran while another handler of the process ran (any
    session: the order of their steps decided what each saw of shared state), or a
    clock or entropy value was read while it ran (``time.time()``, ``uuid4()``)."""
    spans: list[tuple[int, int, tuple[str | None, str]]] = []
    open_: dict[tuple[str | None, str], int] = {}
    for ev in trace.events:
        if ev.kind not in ("handler_started", "handler_finished", "handler_failed"):
            continue
        key = (ev.session, _key(ev.data.get("id")))
        if ev.kind == "handler_started":
            open_[key] = ev.seq
        elif key in open_:
            spans.append((open_.pop(key), ev.seq, key))
    last = trace.events[-1].seq if trace.events else 0
    spans.extend((start, last, key) for key, start in open_.items())
    reads = sorted(r.seq for r in trace.reads if r.source != "thread")
    racy: set[tuple[str | None, str]] = set()
    spans.sort()
    for i, (start, end, key) in enumerate(spans):
        for other_start, _, other in spans[i + 1:]:
            if other_start > end:
                break
            racy.add(key)
            racy.add(other)
        j = bisect.bisect_left(reads, start)
        if j < len(reads) and reads[j] <= end:
            racy.add(key)
    return frozenset(racy)


def _split(messages: Iterable[tuple[str | None, Any]]) -> tuple[
        dict[tuple[str | None, str], Any], Counter[tuple[str | None, str]],
        dict[tuple[str | None, str], list[Any]]]:
    responses: dict[tuple[str | None, str], Any] = {}
    notes: Counter[tuple[str | None, str]] = Counter()
    requests: dict[tuple[str | None, str], list[Any]] = {}
    for sid, m in messages:
        if not isinstance(m, dict):
            continue
        if "method" in m:
            if "id" in m:
                requests.setdefault((sid, str(m["method"])), []).append(m.get("params"))
            else:
                notes[(sid, str(m["method"]))] += 1
        elif "id" in m:
            body = {k: v for k, v in m.items() if k in ("result", "error")}
            responses[(sid, _key(m["id"]))] = body
    return responses, notes, requests


def print_comparison(cmp: Comparison, out: TextIO, *, what: str) -> None:
    """The table of changed responses (or "same"), and the notifications that differ."""
    if cmp.same:
        print(f"{what}: same: {cmp.responses} response(s), each as recorded", file=out)
    else:
        print(f"{what}: {len(cmp.changes)} of {cmp.responses} response(s) changed", file=out)
        # Ids repeat across the sessions of a whole-process trace: name the session then.
        several = len({c.session for c in cmp.changes} | set(cmp.sessions)) > 1
        head = ("session", "id", "method", "recorded", "now") if several else (
            "id", "method", "recorded", "now")
        rows = [head]
        for c in cmp.changes:
            row = (_key(c.id), c.method, _describe(c.recorded), _describe(c.replayed))
            rows.append(((c.session or "-")[:8], *row) if several else row)
        n = len(head) - 1
        widths = [min(max(len(r[i]) for r in rows), 48) for i in range(n)]
        for r in rows:
            print("  " + "  ".join([*(r[i][:48].ljust(widths[i]) for i in range(n)),
                                    r[n][:80]]), file=out)
    for note in cmp.notifications:
        print(f"  note: {note}", file=out)


def _describe(body: Any) -> str:
    """A response in a few words: its error, or its text, or its JSON."""
    if body is None:
        return "(no response)"
    if "error" in body:
        err = body["error"] if isinstance(body["error"], dict) else {}
        return f"error {err.get('code')}: {err.get('message')}"
    result = body.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        texts = [str(c["text"]) for c in result["content"]
                 if isinstance(c, dict) and isinstance(c.get("text"), str)]
        flag = "isError: " if result.get("isError") else ""
        if texts:
            return flag + " | ".join(texts)
    return dumps(result).decode()
