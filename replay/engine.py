"""Replaying a recorded server session: the real handlers, a replayed client.

:func:`replay` loads the server named in the trace header, runs one session of it on a
:class:`~replay.transport.ReplayTransport` under a virtual clock with the recorded
seeds, and reports whether every recorded event happened again, in order.
"""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path
from typing import Any

import attrs
import trio

from mcpactor.entrypoint import EntryPointError, load_entry_point
from mcpactor.tracing.recorder import MemoryRecorder, TraceHeader
from replay.determinism import apply_seeds, new_clock, order_timer_ties
from replay.matcher import BreakHook, Divergence, Matcher, StepHook
from replay.trace import Trace
from replay.transport import ReplayTransport


class ReplayError(Exception):
    """The replay cannot start (bad entry point, unsupported trace): one-line message."""


@attrs.frozen
class ReplayOptions:
    """How to replay: ``server`` overrides the header's entry point; ``until`` stops after
    event ``until``; ``break_at`` calls ``on_break`` just before event ``break_at``;
    ``on_step`` sees every reproduced event; ``grace`` is how many virtual seconds past
    its recorded time an event may be late before the replay counts as stalled."""

    server: str | None = None
    until: int | None = None
    break_at: int | None = None
    on_step: StepHook | None = None
    on_break: BreakHook | None = None
    grace: float = 60.0
    schedules: int = 32


@attrs.frozen
class ReplayResult:
    """The verdict: ``faithful`` unless ``divergence``; ``output`` is the replayed
    session's own trace, byte-identical from one replay of a trace to the next."""

    divergence: Divergence | None
    reproduced: int
    total: int
    virtual_seconds: float
    output: tuple[bytes, ...]
    #: The scheduling seed of this replay, and how many seeds were tried to find it.
    scheduler_seed: int = 0
    attempts: int = 1

    @property
    def faithful(self) -> bool:
        """Whether every compared event matched."""
        return self.divergence is None

    def output_bytes(self) -> bytes:
        """The replayed trace as JSONL bytes."""
        return b"".join(line + b"\n" for line in self.output)


def resolve_entry_point(spec: str, trace_path: Path | None) -> str:
    """A path entry point relative to the trace file when it is not found from here."""
    target, sep, attr = spec.partition(":")
    if (target.endswith(".py") or "/" in target) and not Path(target).is_file():
        if trace_path is not None:
            candidate = trace_path.resolve().parent / target
            if candidate.is_file():
                return f"{candidate}{sep}{attr}"
    return spec


def load_server(spec: str, trace_path: Path | None = None) -> Any:
    """Load a fresh instance of the server at ``spec`` (module state starts anew)."""
    from mcpactor.server.app import Server

    spec = resolve_entry_point(spec, trace_path)
    target = spec.partition(":")[0]
    if not (target.endswith(".py") or "/" in target) and target in sys.modules:
        # Replays must not inherit state a previous run left in the module.
        try:
            importlib.reload(sys.modules[target])
        except Exception as exc:
            raise ReplayError(f"reloading {target} failed: {type(exc).__name__}: {exc}") from None
    try:
        obj = load_entry_point(spec)
    except EntryPointError as exc:
        raise ReplayError(f"cannot load the entry point: {exc}") from None
    if not isinstance(obj, Server):
        raise ReplayError(f"{spec} is a {type(obj).__name__}, not an mcpactor Server")
    return obj


def schedule_seeds(recorded: Any, count: int) -> list[int]:
    """The scheduling seeds a replay tries, in order: the recorded one first."""
    base = recorded if isinstance(recorded, int) else 0
    return [base] + [(base * 1_000_003 + i) % (1 << 63) for i in range(1, count)]


def replay(trace: Trace, options: ReplayOptions = ReplayOptions()) -> ReplayResult:
    """Re-execute ``trace`` (a server-side trace) against its real server code.

    Inputs are delivered at their recorded points, which fixes every race between the
    peer and the session. Races between the session's own tasks (two handlers, a
    handler and the writer) are decided by Trio's scheduler, whose coin flips in the
    recording also served the recorded peer's tasks and so cannot be repeated as
    such. The replay therefore searches: it runs with the recorded scheduling seed,
    and if that diverges, with further seeds derived from it, in a fixed order, up to
    ``options.schedules`` runs; the first faithful run is the result. The search is
    deterministic, so replaying a trace again gives the same run, byte for byte. If
    no run is faithful, the one that got furthest reports the divergence.
    """
    if trace.role != "server":
        raise ReplayError(
            f"this is a {trace.role}-side trace; replay re-runs server code "
            "(use `mcpactor trace show` to read it)"
        )
    spec = options.server or trace.header.get("entry_point")
    if not spec:
        raise ReplayError("the trace header names no entry point: pass --server module:attr")
    seeds = dict(trace.header.get("seeds") or {})
    best: ReplayResult | None = None
    candidates = schedule_seeds(seeds.get("scheduler"), max(1, options.schedules))
    for attempt, seed in enumerate(candidates, start=1):
        result = _attempt(trace, str(spec), options, {**seeds, "scheduler": seed})
        result = attrs.evolve(result, scheduler_seed=seed, attempts=attempt)
        if result.faithful:
            return result
        if best is None or result.reproduced > best.reproduced:
            best = result
        if options.until is not None or options.break_at is not None or options.on_step:
            break  # an interactive replay runs once, as asked
    assert best is not None
    return attrs.evolve(best, attempts=len(candidates) if options.schedules > 1 else 1)


def _attempt(trace: Trace, spec: str, options: ReplayOptions, seeds: dict[str, Any]) -> ReplayResult:
    server = load_server(spec, trace.path)
    saved_random, saved_sched = random.getstate(), _scheduler_state()
    apply_seeds(seeds)
    box: dict[str, Any] = {}
    try:
        trio.run(_run, server, trace, options, box, clock=new_clock())
    finally:
        random.setstate(saved_random)
        _restore_scheduler(saved_sched)
    matcher: Matcher = box["matcher"]
    return ReplayResult(
        divergence=matcher.divergence,
        reproduced=matcher.reproduced,
        total=matcher.end_index,
        virtual_seconds=box["elapsed"],
        output=tuple(matcher.recorder.lines),
    )


async def _run(server: Any, trace: Trace, options: ReplayOptions, box: dict[str, Any]) -> None:
    order_timer_ties()
    header = trace.header
    clock = header.get("clock") or {}
    recorder = MemoryRecorder(
        TraceHeader(
            role="server",
            transport=str(header.get("transport")),
            entry_point=header.get("entry_point"),
            protocol_version=header.get("protocol_version"),
            session=trace.session,
            seeds=dict(header.get("seeds") or {}),
            redacted_keys=list(header.get("redacted_keys") or []),
        ),
        wall_origin=clock.get("wall_origin"),
    )
    matcher = Matcher(
        trace,
        recorder,
        until=options.until,
        on_step=options.on_step,
        on_break=options.on_break,
        break_at=options.break_at,
    )
    box["matcher"] = matcher
    transport = ReplayTransport(matcher, str(header.get("transport")), grace=options.grace)
    session = server.new_session(transport, tracer=matcher, session_id=trace.session)
    with trio.CancelScope() as scope:
        matcher.scope = scope
        await session.run()
    matcher.check_complete()
    recorder.close()
    box["elapsed"] = trio.current_time()


def _scheduler_state() -> Any:
    from trio._core import _run

    return _run._r.getstate()


def _restore_scheduler(state: Any) -> None:
    from trio._core import _run

    _run._r.setstate(state)
