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

    @property
    def same(self) -> bool:
        """Whether every response is as recorded (notifications aside)."""
        return not self.changes


def _key(value: Any) -> str:
    return dumps(value).decode()


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
            methods: dict[Any, str]) -> Comparison:
    """Compare two runs' server messages (see the module)."""
    rec_resp, rec_note, rec_req = _split(recorded)
    new_resp, new_note, new_req = _split(replayed)
    changes: list[Change] = []
    for key in [*rec_resp, *(k for k in new_resp if k not in rec_resp)]:
        a, b = rec_resp.get(key), new_resp.get(key)
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
    return Comparison(tuple(changes), len(rec_resp), tuple(notes))


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
        rows = [("id", "method", "recorded", "now")]
        for c in cmp.changes:
            rows.append((_key(c.id), c.method, _describe(c.recorded), _describe(c.replayed)))
        widths = [min(max(len(r[i]) for r in rows), 48) for i in range(3)]
        for r in rows:
            print("  " + "  ".join([*(r[i][:48].ljust(widths[i]) for i in range(3)), r[3][:80]]),
                  file=out)
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
