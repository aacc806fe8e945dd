"""``mcpactor trace show`` and ``mcpactor trace diff``: traces as text."""

from __future__ import annotations

import difflib
from typing import Any, TextIO

import attrs
import orjson

from mcpactor.tracing.encode import dumps

from .render import describe_message, event_line
from .trace import VOLATILE_KEYS, Trace

_QUIET = frozenset({"actor_started", "actor_stopped", "transport_opened"})
_MARKS = {
    "cancel_requested": "CANCEL",
    "cancel_applied": "CANCEL",
    "timer_fired": "TIMEOUT",
    "handler_failed": "CRASH",
    "actor_failed": "CRASH",
    "transport_broken": "BROKEN",
    "message_dropped": "DROPPED",
    "response_dropped": "DROPPED",
    "progress_dropped": "DROPPED",
}


@attrs.define
class _Exchange:
    """One request and what became of it."""

    direction: str  # "in": the peer asked us; "out": we asked the peer
    rid: Any
    method: str
    start: float
    end: float | None = None
    outcome: str = "unanswered"


def exchanges(trace: Trace) -> list[_Exchange]:
    """Requests paired with their responses, cancellations and timeouts, in order."""
    found: list[_Exchange] = []
    open_: dict[tuple[str, str, str], _Exchange] = {}
    for ev in trace.events:
        d = ev.data
        for msg in _messages(d):
            if "method" in msg and "id" in msg:
                direction = "in" if ev.kind == "message_in" else "out"
                x = _Exchange(direction, msg["id"], str(msg["method"]), ev.t)
                found.append(x)
                open_[(ev.session or "", direction, _key(msg["id"]))] = x
            elif "id" in msg and ("result" in msg or "error" in msg):
                direction = "in" if ev.kind == "message_out" else "out"
                x2 = open_.pop((ev.session or "", direction, _key(msg["id"])), None)
                if x2 is not None:
                    x2.end = ev.t
                    if x2.outcome == "unanswered":
                        x2.outcome = "error" if "error" in msg else "ok"
                    else:
                        x2.outcome += ", answered anyway"
        if ev.kind in ("cancel_applied", "cancel_requested", "timer_fired") and "id" in d:
            direction = "out" if ev.actor == "tracker" else "in"
            x3 = open_.get((ev.session or "", direction, _key(d["id"])))
            if x3 is not None:
                what = "timed out" if ev.kind == "timer_fired" else "cancelled"
                if x3.outcome == "unanswered":
                    x3.outcome = what
                    x3.end = ev.t
    return found


def _key(rid: Any) -> str:
    return dumps(rid).decode()


def _messages(d: dict[str, Any]) -> list[dict[str, Any]]:
    if d.get("kind") not in ("message_in", "message_out"):
        return []
    msg = d.get("msg")
    items = msg if isinstance(msg, list) else [msg]
    return [m for m in items if isinstance(m, dict)]


def show(trace: Trace, out: TextIO, *, everything: bool = False) -> None:
    """Print the header, the timeline, and a table of requests with their latency."""
    h = trace.header
    print(f"trace: {trace.path}  role={h.get('role')}  transport={h.get('transport')}  "
          f"protocol={h.get('protocol_version')}  entry_point={h.get('entry_point')}", file=out)
    clock = h.get("clock") or {}
    print(f"clock: {clock.get('kind')}  seeds: {h.get('seeds')}  events: {len(trace.events)}",
          file=out)
    print("", file=out)
    for ev in trace.events:
        if not everything and ev.kind in _QUIET:
            continue
        mark = _MARKS.get(ev.kind, "")
        arrow = {"message_in": "-->", "message_out": "<--"}.get(ev.kind, "   ")
        print(f"{mark:>8} {arrow} {event_line(ev.data)}", file=out)
    print("", file=out)
    print("requests:", file=out)
    print(f"  {'dir':<4}{'id':<10}{'method':<34}{'start':>10} {'latency':>12}  outcome", file=out)
    for x in exchanges(trace):
        latency = f"{(x.end - x.start) * 1000:.3f}ms" if x.end is not None else "-"
        who = "<-" if x.direction == "in" else "->"
        print(f"  {who:<4}{_key(x.rid):<10}{x.method:<34}{x.start:>10.4f} {latency:>12}  "
              f"{x.outcome}", file=out)


def _line(ev: dict[str, Any], messages_only: bool) -> str | None:
    if messages_only:
        if ev.get("kind") not in ("message_in", "message_out"):
            return None
        body = ev.get("msg", ev.get("raw"))
        return f"{ev.get('kind')} {dumps(body, option=orjson.OPT_SORT_KEYS).decode()}"
    rest = {k: v for k, v in ev.items() if k not in VOLATILE_KEYS}
    return dumps(rest, option=orjson.OPT_SORT_KEYS).decode()


def diff(a: Trace, b: Trace, out: TextIO, *, messages_only: bool = False) -> int:
    """Print the events that differ (ignoring seq, time and session id); 0 if none."""
    la = [(ev, _line(ev.data, messages_only)) for ev in a.events]
    lb = [(ev, _line(ev.data, messages_only)) for ev in b.events]
    la = [(e, s) for e, s in la if s is not None]
    lb = [(e, s) for e, s in lb if s is not None]
    sm = difflib.SequenceMatcher(a=[s for _, s in la], b=[s for _, s in lb], autojunk=False)
    differences = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        differences += 1
        print(f"@@ A #{_seq(la, i1)}..#{_seq(la, i2 - 1)}  B #{_seq(lb, j1)}..#{_seq(lb, j2 - 1)} "
              f"({tag})", file=out)
        for ev, _ in la[i1:i2]:
            print(f"- {event_line(ev.data)}", file=out)
        for ev, _ in lb[j1:j2]:
            print(f"+ {event_line(ev.data)}", file=out)
    if differences == 0:
        print(f"identical: {len(la)} events compared", file=out)
        return 0
    print(f"{differences} difference(s)", file=out)
    return 1


def _seq(lines: list[Any], i: int) -> str:
    if 0 <= i < len(lines):
        return str(lines[i][0].seq)
    return "end"


__all__ = ["describe_message", "diff", "exchanges", "show"]
