"""``replay_exact``: one deterministic re-execution of a version-2 trace."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any

import trio

from mcpactor.tracing import entropy
from mcpactor.tracing.encode import dumps

from ..model import ReplayOptions, ReplayResult
from ..trace import Trace
from .capture import ReplayCapture
from .driver import Driver
from .matcher import ExactMatcher
from .scheduler import ReplayClock, Scheduler


def replay_exact(trace: Trace, subject: Any, options: ReplayOptions) -> ReplayResult:
    """Re-execute ``trace`` against ``subject`` (a freshly loaded server, or client
    script), following its recorded schedule, clocks and entropy (see
    :mod:`replay.exact`). One run: the schedule leaves nothing to search for."""
    box: dict[str, Any] = {}
    scheduler = Scheduler(trace, on_diverge=lambda reason: None,
                          stall_seconds=options.grace)
    scheduler.locate = options.locate
    trio.run(_main, trace, subject, options, scheduler, box, clock=ReplayClock(scheduler))
    matcher: ExactMatcher = box["matcher"]
    return ReplayResult(
        divergence=matcher.divergence,
        reproduced=matcher.reproduced,
        total=matcher.until_index,
        virtual_seconds=round(scheduler.now - float(
            (trace.header.get("clock") or {}).get("origin", 0.0)), 9),
        output=_output(trace, matcher),
        attempts=1,
        steps=tuple(scheduler.steps),
        emitters=tuple(matcher.emitters),
        locations=tuple(scheduler.locations),
        event_steps=tuple(matcher.event_steps),
    )


def _output(trace: Trace, matcher: ExactMatcher) -> tuple[bytes, ...]:
    """The replay as a trace: the header, the replayed events, and — the replay having
    run them — the recorded schedule and reads among them, up to where it stopped. The
    same bytes every time, and itself a trace that replays."""

    reproduced = matcher.reproduced
    stop = (trace.events[reproduced].seq if reproduced < len(trace.events)
            else (trace.schedule_lines[-1][0] + 1 if trace.schedule_lines else 0))
    schedule = [(seq, line) for seq, line in trace.schedule_lines if seq < stop]
    events = [(trace.events[i].seq, line) for i, line in enumerate(matcher.output)]
    body = [line for _, line in sorted(schedule + events, key=lambda pair: pair[0])]
    return (dumps({**trace.header, "replay": True}), *body)


async def _main(trace: Trace, subject: Any, options: ReplayOptions, scheduler: Scheduler,
                box: dict[str, Any]) -> None:
    matcher = ExactMatcher(trace, scheduler, until=options.until, on_step=options.on_step,
                           on_break=options.on_break, break_at=options.break_at)
    box["matcher"] = matcher
    scheduler.on_diverge = matcher.stalled
    capture = ReplayCapture(scheduler, (trace.header.get("seeds") or {}).get("random"))
    seed = (trace.header.get("seeds") or {}).get("random")
    if isinstance(seed, int):
        entropy.global_random().seed(seed)
    # A server's lifespan (its startup state) is entered before the recorded schedule,
    # as it was before the recorded sessions: its tasks are not followed.
    async with _lifespan(trace, subject, scheduler):
        await _scheduled(trace, subject, options, scheduler, matcher, capture)


@asynccontextmanager
async def _lifespan(trace: Trace, subject: Any, scheduler: Scheduler) -> AsyncIterator[None]:
    running = getattr(subject, "running", None)
    if trace.role == "client" or running is None:
        yield
        return
    async with AsyncExitStack() as stack:
        with _clock_free(scheduler):
            await stack.enter_async_context(running())
        try:
            yield
        finally:
            # Its end is outside the recording too: let it run however it likes.
            scheduler.free = True


@contextmanager
def _clock_free(scheduler: Scheduler) -> Iterator[None]:
    """Outside the recorded schedule, the lifespan's timers fire at once (the replay's
    clock stands still between recorded passes: a trio.sleep there would never end);
    the clock is put back where the recording starts."""
    saved = scheduler.free, scheduler.now
    scheduler.free = True
    try:
        yield
    finally:
        scheduler.free, scheduler.now = saved


async def _scheduled(trace: Trace, subject: Any, options: ReplayOptions, scheduler: Scheduler,
                     matcher: ExactMatcher, capture: ReplayCapture) -> None:
    scheduler.install()
    entropy.activate(capture)
    try:
        async with trio.open_nursery() as nursery:
            driver = Driver(nursery, subject, trace, scheduler, matcher)
            scheduler.create = driver.create
            scheduler.act = driver.act
            scheduler.on_free = driver.on_free
            nursery.start_soon(driver.run)
            if trace.role == "client":
                nursery.start_soon(driver.run_client, _client_options(trace, subject))
            async with trio.open_nursery() as waiters:
                async def until_free() -> None:
                    await driver.free.wait()
                    # Every recorded step has run: what has not happened now never will.
                    matcher.check_complete()

                waiters.start_soon(until_free)
                await matcher.finished.wait()
                waiters.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
    finally:
        entropy.deactivate(capture)
        scheduler.uninstall()


def _client_options(trace: Trace, script: Any) -> dict[str, Any]:
    """The client's connect options: the script's, else the recorded ones."""
    from mcpactor.client.client import timeout_from_json

    options: dict[str, Any] = dict(script.connect_options())
    recorded = trace.header.get("client_options") or {}
    if options.get("timeout") is None and "timeout" in recorded:
        options["timeout"] = timeout_from_json(recorded["timeout"])
    if "init_timeout" in recorded:
        options["init_timeout"] = timeout_from_json(recorded["init_timeout"])
    if "mode" not in options:
        # The era: discover-first, pinned, or handshake; a trace from before 2026-07-28
        # support (no mode recorded) opened with the handshake.
        mode = recorded.get("mode")
        options["mode"] = mode if isinstance(mode, str) else "legacy"
    sent = _recorded_initialize(trace)
    if "client_info" not in options and isinstance(sent.get("clientInfo"), dict):
        options["client_info"] = sent["clientInfo"]
    if "protocol_version" not in options and isinstance(sent.get("protocolVersion"), str):
        options["protocol_version"] = sent["protocolVersion"]
    return options


def _recorded_initialize(trace: Trace) -> dict[str, Any]:
    """The params of the ``initialize`` request the recorded client sent."""
    for ev in trace.events:
        msg = ev.data.get("msg") if ev.kind == "message_out" else None
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            params = msg.get("params")
            return params if isinstance(params, dict) else {}
    return {}
