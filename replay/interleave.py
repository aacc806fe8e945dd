"""The interleaving around one request: which task ran between which awaits.

From an exact replay run with ``locate`` (every step's task and the line of the
application's code where that task had waited), :func:`interleaving` picks the steps
from the first to the last step of one request's handler (its own tasks: the handler
and any task it spawned) and every step of another handler's task that ran in between:
a check-then-act race shows as another handler's step between the handler's check and
its act. :func:`print_interleaving` writes it as text; :mod:`replay.html` draws it.
"""

from __future__ import annotations

import linecache
from typing import Any, TextIO

import attrs

from mcpactor.tracing.encode import dumps

from .model import ReplayResult
from .render import describe
from .trace import Trace


@attrs.frozen
class Step:
    """One step of a task: where its code resumed, and what it did that the trace shows."""

    index: int
    task: str
    mine: bool
    resumed_at: str | None
    #: Where the task waited after this step (None: it returned).
    waits_at: str | None
    events: tuple[str, ...]

    @property
    def code(self) -> str:
        """The line of code the task waits at after this step."""
        return _code(self.waits_at)


@attrs.frozen
class Interleaving:
    """The steps around one request (see the module)."""

    request: Any
    method: str
    handler: str
    steps: tuple[Step, ...]

    @property
    def others(self) -> tuple[Step, ...]:
        """Steps of other handlers that ran while the request's handler was waiting."""
        return tuple(s for s in self.steps if not s.mine)


class NoSuchRequest(Exception):
    """The trace has no handler for that request id."""


def _labels(trace: Trace, result: ReplayResult) -> dict[int, str]:
    # A task's label: the actor of the first event it emitted (handler:3, reader, ...),
    # else its recorded name.
    labels: dict[int, str] = {}
    for i, tid in enumerate(result.emitters):
        if tid is not None and tid not in labels and i < len(trace.events):
            actor = trace.events[i].actor
            labels[tid] = actor if actor != "supervisor" else "supervisor/reader"
    return labels


def interleaving(trace: Trace, result: ReplayResult, request: Any,
                 session: str | None = None) -> Interleaving:
    """The steps around request ``request`` (a JSON-RPC id; ``session`` when several
    sessions used it)."""
    key = dumps(request)
    starts = [i for i, ev in enumerate(trace.events[:result.reproduced])
              if ev.kind == "handler_started" and dumps(ev.data.get("id")) == key
              and (session is None or ev.session == session)]
    if not starts:
        raise NoSuchRequest(f"no handler ran for request {request!r} in this trace "
                            "(the request ids are the ones in message_in events)")
    if session is None and len({trace.events[i].session for i in starts}) > 1:
        raise NoSuchRequest(f"several sessions have a request "
                            f"{dumps(request).decode()}: name one with --session SID")
    start = starts[0]
    started = trace.events[start]
    handler_task = result.emitters[start]
    names = trace.names
    mine_prefix = names.get(handler_task or 0, "\x00")
    mine_ids = {tid for tid, name in names.items()
                if name == mine_prefix or name.startswith(mine_prefix + "/")}
    labels = _labels(trace, result)
    handlers = {tid for tid, label in labels.items() if label.startswith("handler:")}
    handler_ids = {tid for tid, name in names.items()
                   if any(name == names[h] or name.startswith(names[h] + "/")
                          for h in handlers)}
    my_steps = [i for i, (_, tid) in enumerate(result.steps) if tid in mine_ids]
    first, last = my_steps[0], my_steps[-1]
    events_by_step: dict[int, list[str]] = {}
    for i, step in enumerate(result.event_steps):
        if step is not None and i < len(trace.events):
            ev = trace.events[i]
            events_by_step.setdefault(step, []).append(f"{ev.kind} {describe(ev.data)}".strip())
    next_step: dict[int, int] = {}
    seen_next: dict[int, int] = {}
    for i in range(len(result.steps) - 1, -1, -1):
        tid = result.steps[i][1]
        if tid in seen_next:
            next_step[i] = seen_next[tid]
        seen_next[tid] = i
    steps: list[Step] = []
    for i in range(first, last + 1):
        tid = result.steps[i][1]
        mine = tid in mine_ids
        if not mine and tid not in handler_ids:
            continue  # the runtime's own tasks (reader, writer): not the application's
        where = result.locations[i] if i < len(result.locations) else None
        label = _label(tid, labels, names, started.session)
        nxt = next_step.get(i)
        waits = result.locations[nxt] if nxt is not None and nxt < len(result.locations) else None
        steps.append(Step(i, label, mine, where, waits, tuple(events_by_step.get(i, ()))))
    return Interleaving(request, str(started.data.get("method")),
                        _label(handler_task or 0, labels, names, started.session)
                        if handler_task else "handler", tuple(steps))


def _label(tid: int, labels: dict[int, str], names: dict[int, str],
           session: str | None) -> str:
    """A task as a reader knows it: its actor (``handler:4``), or, for a task a handler
    started, that handler's label and the child's place (``handler:4 child /1``); with
    the session's short id when it is not the request's session."""
    name = names.get(tid, f"#{tid}")
    by_name = {n: t for t, n in names.items()}
    label = labels.get(tid)
    if label is None:
        # The nearest ancestor that has a label: a handler's own tasks, however deep.
        parent, _, _ = name.rpartition("/")
        while parent and label is None:
            ancestor = by_name.get(parent)
            if ancestor is not None and ancestor in labels:
                label = f"{labels[ancestor]} child {name[len(parent):]}"
            parent, _, _ = parent.rpartition("/")
    root = name.split("/", 1)[0]
    if label is None:
        label = "task " + name[len(root):] if "/" in name else "supervisor"
    if session is not None and root != session:
        label = f"{label} [session {root[:8]}]"
    return label


def _code(where: str | None) -> str:
    if where is None:
        return "(returns)"
    path, _, line = where.rpartition(":")
    text = linecache.getline(path, int(line)).strip() if line.isdigit() else ""
    return text or where


def print_interleaving(view: Interleaving, out: TextIO) -> None:
    """The view as text: one line per step, the request's own marked ``>``."""
    print(f"interleaving of request {dumps(view.request).decode()} "
          f"({view.method}, {view.handler}): {len(view.steps)} step(s), "
          f"{len(view.others)} of them another handler's in between", file=out)
    width = max((len(s.task) for s in view.steps), default=8)
    for s in view.steps:
        mark = ">" if s.mine else "!"
        line = f"  {mark} step {s.index:<5} {s.task:<{width}}  from {_short(s.resumed_at):<22}"
        if s.waits_at is None:
            print(f"{line} then returns", file=out)
        else:
            print(f"{line} to {_short(s.waits_at):<16} {s.code}", file=out)
        for ev in s.events:
            print(f"  {'':<12} {'':<{width}}    emits {ev}", file=out)
    if view.others:
        print("  (>: the request's own steps; !: another handler's, run while it waited)",
              file=out)


def _short(where: str | None) -> str:
    if where is None:
        return "its start"
    path, _, line = where.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}"
