"""Replaying a recorded server session: the real handlers, a replayed client.

:func:`replay` loads the server named in the trace header, runs sessions of it on a
:class:`~replay.transport.ReplayTransport` under a virtual clock, and reports whether
every recorded event happened again, in order.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from .model import ReplayError, ReplayOptions, ReplayResult, Schedule
from .runner import Run, load_client, load_server, resolve_entry_point, run_once
from .trace import Trace

__all__ = [
    "ReplayError",
    "ReplayOptions",
    "ReplayResult",
    "Schedule",
    "load_server",
    "replay",
    "resolve_entry_point",
]

#: How many scheduler decisions before a divergence the search considers flipping.
_WINDOW = 12
#: How many of the last inputs before a divergence the search considers.
_INPUTS = 3


def replay(trace: Trace, options: ReplayOptions = ReplayOptions()) -> ReplayResult:  # noqa: B008
    """Re-execute ``trace`` against its real code: the server of a server-side trace, the
    client code (``main(client)``, see :mod:`mcpactor.client.script`) of a client-side one.

    Inputs are delivered at their recorded points, which settles every race between
    the peer and the session. Races among the session's own tasks (two handlers, a
    handler and the reader) are decided by Trio's scheduler, whose coin flips in the
    recording also served the recording's other tasks and cannot be repeated as such.
    So the replay searches for a schedule: it runs in exact mode (actors must
    interleave as recorded) and, at a divergence, reruns with one of the preceding
    scheduler coin flips reversed, the runs that got furthest first, up to
    ``options.schedules`` runs. If no exact schedule is found, one run in per-actor mode
    (each actor's own events in order, interleaving free) decides. The search is
    deterministic: a trace replays to the same run, byte for byte, every time.
    """
    spec = _entry_point(trace, options)
    interactive = options.on_step is not None or options.break_at is not None
    if trace.version >= 2:
        # The recording holds the schedule, the clocks and the entropy: one run.
        from mcpactor.tracing import entropy

        from .exact.engine import replay_exact

        # Before the code is imported, so that its modules see the replayed functions.
        entropy.install()
        load = load_client if trace.role == "client" else load_server
        try:
            subject = load(spec, trace.path)
            entropy.capture_datetime()
            with _logging_off(not interactive):
                result = replay_exact(trace, subject, options)
                if result.faithful or options.server is None or trace.role != "server":
                    return result
                # Other code than the recording's: past its first divergence, what does it
                # answer to the recorded inputs?
                from .exact.follow import changed_responses

                subject = load(spec, trace.path)
                entropy.capture_datetime()
                return attrs.evolve(result, changes=changed_responses(trace, subject, result))
        finally:
            entropy.uninstall()
    quiet = attrs.evolve(options, on_step=None, on_break=None, break_at=None)
    # The handlers' own logging would repeat once per run of the search; an interactive
    # replay (stepping, a breakpoint) shows it, once.
    with _logging_off(not interactive):
        found, attempts = _search(trace, spec, quiet)
        if found is None and not interactive:
            found = run_once(trace, spec, options, Schedule(exact=False))
            attempts += 1
    if interactive:
        schedule = found.result.schedule if found is not None else Schedule(exact=False)
        found = run_once(trace, spec, options, schedule)
        attempts += 1
    assert found is not None
    return attrs.evolve(found.result, attempts=attempts)


def _entry_point(trace: Trace, options: ReplayOptions) -> str:
    """The code to run: the option for the trace's side, else the header's."""
    role = trace.role
    if role not in ("server", "client"):
        raise ReplayError(f"this trace's role is {role!r}: only server and client traces "
                          "replay (use `mcpactor trace show` to read it)")
    mine, other = ("client", "server") if role == "client" else ("server", "client")
    if getattr(options, other) is not None:
        raise ReplayError(f"this is a {role}-side trace: it replays {role} code "
                          f"(--{mine} MODULE:ATTR), not --{other}")
    spec = getattr(options, mine) or trace.header.get("entry_point")
    if not spec:
        raise ReplayError(f"the trace header names no entry point: pass --{mine} module:attr")
    return str(spec)


@contextmanager
def _logging_off(off: bool) -> Iterator[None]:
    if not off:
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def _search(trace: Trace, spec: str, options: ReplayOptions) -> tuple[Run | None, int]:
    """The first faithful exact run, and how many runs the search made."""
    budget = max(1, options.schedules)
    root = Schedule(exact=True)
    queue: list[tuple[int, int, Schedule]] = [(0, 0, root)]
    seen: set[Schedule] = {root}
    order = 0
    attempts = 0
    while queue and attempts < budget:
        _, _, schedule = heapq.heappop(queue)
        run = run_once(trace, spec, options, schedule)
        attempts += 1
        if run.result.faithful:
            return run, attempts
        at = run.diverged_at_coin
        if at is None:
            continue
        for child in _children(schedule, run, at):
            if child not in seen:
                seen.add(child)
                order += 1
                heapq.heappush(queue, (-run.result.reproduced, order, child))
    return None, attempts


def _children(schedule: Schedule, run: Run, at: int) -> list[Schedule]:
    """Schedules that change one decision made shortly before the divergence."""
    children = []
    # Reverse one of the last coin flips; later ones first, since a race is usually
    # decided just before it shows.
    for j in range(at - 1, max(len(schedule.forced), at - _WINDOW) - 1, -1):
        forced = (*run.decisions[:j], not run.decisions[j])
        children.append(attrs.evolve(schedule, forced=forced))
    # Or let the reader take one of the last inputs without yielding, as a stream
    # transport does with lines already buffered (the coins up to there stay).
    for index, coins in reversed(run.yields[-_INPUTS:]):
        if coins >= len(schedule.forced):
            children.append(attrs.evolve(schedule, forced=run.decisions[:coins],
                                         no_yield=schedule.no_yield | {index}))
    return children
