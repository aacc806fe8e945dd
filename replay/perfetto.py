"""``mcpactor trace export --format perfetto``: a trace as Chrome trace-event JSON.

The JSON Object Format of the Trace Event Format, which Perfetto UI
(https://ui.perfetto.dev) and ``chrome://tracing`` open: for long traces, where the
self-made HTML page (``trace html``) is for short ones.

- one process per session (``session <id>``), one thread (track) per actor: the
  reader, the writer, the supervisor, the notifier, the tracker, and each request's
  handler (``handler:<id>``);
- a handler's run is a slice from ``handler_started`` to ``handler_finished`` (or its
  cancellation), named by its method (and tool or prompt); every other event is a
  short slice on its actor's track, its keys in ``args``;
- flows: a request's arrival (``message_in`` on the reader) to its handler's start and
  to its response (``message_out`` on the writer); our own requests to their answers;
  a cancellation from ``cancel_requested`` to ``cancel_applied``.

Timestamps are the trace's (microseconds since the recording began). Slices on one
track never overlap partially (the format requires it): an event's slice starts no
earlier than the previous one on its track ended.
"""

from __future__ import annotations

from typing import Any

from mcpactor.tracing.encode import dumps

from .render import describe
from .trace import Trace

#: A point event's slice, in microseconds.
_TICK = 1.0
#: Kinds not drawn (starts and stops of actors carry nothing a timeline needs).
_QUIET = frozenset({"actor_started", "actor_stopped"})


class _Tracks:
    """Process and thread numbers, named once each by metadata events."""

    def __init__(self, out: list[dict[str, Any]]) -> None:
        self.out = out
        self.pids: dict[str, int] = {}
        self.tids: dict[tuple[int, str], int] = {}
        self.ends: dict[tuple[int, int], float] = {}

    def pid(self, session: str) -> int:
        pid = self.pids.get(session)
        if pid is None:
            pid = self.pids[session] = len(self.pids) + 1
            self.out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                             "args": {"name": f"session {session}"}})
        return pid

    def tid(self, pid: int, actor: str) -> int:
        tid = self.tids.get((pid, actor))
        if tid is None:
            tid = self.tids[(pid, actor)] = len([k for k in self.tids if k[0] == pid]) + 1
            self.out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                             "args": {"name": actor}})
            # Actors first, then handlers by their start.
            self.out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                             "args": {"sort_index": tid}})
        return tid

    def place(self, pid: int, tid: int, ts: float, dur: float) -> float:
        """A start for a slice of ``dur`` at ``ts`` that does not overlap the last one."""
        start = max(ts, self.ends.get((pid, tid), 0.0))
        self.ends[(pid, tid)] = start + dur
        return start


def to_chrome_trace(trace: Trace) -> dict[str, Any]:
    """The trace as a Trace Event Format object (``traceEvents`` and metadata)."""
    out: list[dict[str, Any]] = []
    tracks = _Tracks(out)
    flows = _Flows(out)
    handlers: dict[tuple[str, str], dict[str, Any]] = {}
    requests: dict[tuple[str, str], str] = {}  # (session, id) -> label, from message_in
    last_t = max((ev.t for ev in trace.events), default=0.0)
    for ev in trace.events:
        if ev.kind in _QUIET:
            continue
        session = ev.session or "?"
        pid = tracks.pid(session)
        actor = ev.actor
        ts = ev.t * 1e6
        d = ev.data
        if ev.kind == "handler_started":
            tid = tracks.tid(pid, actor)
            rid = _key(d.get("id"))
            name = requests.get((session, rid)) or str(d.get("method"))
            start = tracks.place(pid, tid, ts, 0.0)
            handlers[(session, actor)] = {
                "ph": "X", "name": name, "cat": "handler", "pid": pid, "tid": tid,
                "ts": start, "dur": 0.0, "args": {"id": d.get("id"), "method": d.get("method")}}
            flows.step(("request", session, rid), pid, tid, start)
            continue
        if ev.kind in ("handler_finished", "cancel_applied") and (session, actor) in handlers:
            run = handlers.pop((session, actor))
            end = max(ts, run["ts"])
            run["dur"] = end - run["ts"]
            run["args"]["outcome"] = d.get("outcome", "cancelled")
            tracks.ends[(pid, run["tid"])] = end
            out.append(run)
            if ev.kind == "cancel_applied":
                # The cancellation lands inside the handler's slice, at its end.
                flows.end(("cancel", session, _key(d.get("id"))), pid, run["tid"], end)
            continue
        tid = tracks.tid(pid, actor)
        start = tracks.place(pid, tid, ts, _TICK)
        out.append({"ph": "X", "name": _name(ev.kind, d), "cat": ev.kind, "pid": pid,
                    "tid": tid, "ts": start, "dur": _TICK,
                    "args": {"seq": ev.seq, "event": describe(d)}})
        mid = start + _TICK / 2
        if ev.kind in ("message_in", "message_out"):
            for msg in _messages(d):
                if "method" in msg and "id" in msg:
                    rid = _key(msg["id"])
                    label = _label(msg)
                    if ev.kind == "message_in":
                        requests[(session, rid)] = label
                        flows.begin(("request", session, rid), label, pid, tid, mid)
                    else:
                        flows.begin(("call", session, rid), label, pid, tid, mid)
                elif "id" in msg and ("result" in msg or "error" in msg):
                    rid = _key(msg["id"])
                    key = ("request", session, rid) if ev.kind == "message_out" else (
                        "call", session, rid)
                    flows.end(key, pid, tid, mid)
        elif ev.kind == "cancel_requested" and d.get("by") == "peer":
            flows.begin(("cancel", session, _key(d.get("id"))), "cancel", pid, tid, mid)
    # Handlers still running when the trace ends: up to its last event.
    for run in handlers.values():
        run["dur"] = max(last_t * 1e6 - run["ts"], 0.0)
        run["args"]["outcome"] = "unfinished"
        out.append(run)
    return {
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {"format": "mcpactor-trace", "role": trace.role,
                      "transport": trace.header.get("transport"),
                      "entry_point": trace.header.get("entry_point")},
    }


class _Flows:
    """Flow arrows (``s`` -> ``t`` ... -> ``f``), one id per request or cancellation."""

    def __init__(self, out: list[dict[str, Any]]) -> None:
        self.out = out
        self.open: dict[tuple[str, str, str], tuple[int, str]] = {}
        self.next = 0

    def begin(self, key: tuple[str, str, str], name: str, pid: int, tid: int, ts: float) -> None:
        self.next += 1
        self.open[key] = (self.next, name)
        self.out.append({"ph": "s", "id": self.next, "name": name, "cat": key[0],
                         "pid": pid, "tid": tid, "ts": ts})

    def step(self, key: tuple[str, str, str], pid: int, tid: int, ts: float) -> None:
        flow = self.open.get(key)
        if flow is not None:
            self.out.append({"ph": "t", "id": flow[0], "name": flow[1], "cat": key[0],
                             "pid": pid, "tid": tid, "ts": ts})

    def end(self, key: tuple[str, str, str], pid: int, tid: int, ts: float) -> None:
        flow = self.open.pop(key, None)
        if flow is not None:
            self.out.append({"ph": "f", "bp": "e", "id": flow[0], "name": flow[1],
                             "cat": key[0], "pid": pid, "tid": tid, "ts": ts})


def _messages(d: dict[str, Any]) -> list[dict[str, Any]]:
    msg = d.get("msg")
    items = msg if isinstance(msg, list) else [msg]
    return [m for m in items if isinstance(m, dict)]


def _key(rid: Any) -> str:
    return dumps(rid).decode()


def _label(msg: dict[str, Any]) -> str:
    method = str(msg.get("method"))
    params = msg.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return f"{method} {name}" if isinstance(name, str) else method


def _name(kind: str, d: dict[str, Any]) -> str:
    if kind in ("message_in", "message_out"):
        msgs = _messages(d)
        if len(msgs) == 1:
            m = msgs[0]
            if "method" in m:
                return f"{kind} {_label(m)}"
            if "error" in m:
                return f"{kind} error"
            return f"{kind} result"
        if msgs:
            return f"{kind} batch of {len(msgs)}"
    return kind
