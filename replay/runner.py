"""One replay run: a fresh server, a virtual clock, a given schedule."""

from __future__ import annotations

import importlib
import inspect
import random
import sys
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing

from mcpactor.entrypoint import EntryPointError, load_entry_point

from .determinism import (
    ScriptedCoins,
    apply_seeds,
    install_coins,
    new_clock,
    order_timer_ties,
)
from .matcher import Matcher, ReplayLog
from .model import ReplayError, ReplayOptions, ReplayResult, Schedule
from .trace import Trace
from .transport import ReplayTransport


@attrs.frozen
class Run:
    """A run's result, with the scheduler decisions it made (for the search)."""

    result: ReplayResult
    decisions: tuple[bool, ...]
    diverged_at_coin: int | None
    yields: tuple[tuple[int, int], ...] = ()


def resolve_entry_point(spec: str, trace_path: Path | None) -> str:
    """A path entry point relative to the trace file when it is not found from here."""
    target, sep, attr = spec.partition(":")
    if (target.endswith(".py") or "/" in target) and not Path(target).is_file():
        if trace_path is not None:
            candidate = trace_path.resolve().parent / target
            if candidate.is_file():
                return f"{candidate}{sep}{attr}"
    return spec


def _missing_file(spec: str, trace_path: Path | None, option: str) -> str | None:
    """The one-line error for a relative file entry point found neither from here nor
    beside the trace (a trace moved away from its recording's folder): where it was
    looked for, and how to point at the code."""
    target, _, attr = spec.partition(":")
    if not (target.endswith(".py") or "/" in target) or Path(target).is_absolute() \
            or resolve_entry_point(spec, trace_path) != spec or Path(target).is_file():
        return None
    places = [str(Path.cwd() / target)]
    if trace_path is not None:
        beside = trace_path.resolve().parent / target
        if str(beside) not in places:
            places.append(str(beside))
    return (f"cannot load the entry point: no such file: {target} (looked for "
            f"{' and '.join(places)}, from the current directory and the trace's folder): "
            f"pass {option} PATH/TO/{Path(target).name}:{attr or 'server'}, or replay from "
            "the directory the recording was made in")


def load_server(spec: str, trace_path: Path | None = None) -> Any:
    """Load a fresh instance of the server at ``spec`` (module state starts anew)."""
    from mcpactor.server.app import Server

    obj = _load_fresh(spec, trace_path, "--server")
    if not isinstance(obj, Server):
        raise ReplayError(f"{spec} is a {type(obj).__name__}, not an mcpactor Server")
    return obj


def load_client(spec: str, trace_path: Path | None = None) -> Any:
    """Load the client code at ``spec`` afresh, as a ClientScript."""
    from mcpactor.client.script import as_client_script
    from mcpactor.server.app import Server

    obj = _load_fresh(spec, trace_path, "--client")
    script = None if isinstance(obj, Server) else as_client_script(obj)
    if script is None or not _is_async(script.main):
        what = type(obj).__name__ if script is None else "not an async function"
        raise ReplayError(
            f"{spec} is {'a ' if script is None else ''}{what}: a client trace replays "
            "client code, an `async def main(client)` or a mcpactor.client.script.ClientScript")
    return script


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))  # noqa: B004 - an object with an async __call__


def _load_fresh(spec: str, trace_path: Path | None, option: str) -> Any:
    missing = _missing_file(spec, trace_path, option)
    if missing is not None:
        raise ReplayError(missing)
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
    return obj


def run_once(trace: Trace, spec: str, options: ReplayOptions, schedule: Schedule) -> Run:
    """Replay ``trace`` once against freshly loaded code (the server, or the client)."""
    subject = (load_client if trace.role == "client" else load_server)(spec, trace.path)
    seeds = dict(trace.header.get("seeds") or {})
    base = seeds.get("scheduler")
    coins = ScriptedCoins(base if isinstance(base, int) else 0, schedule.forced)
    saved_random = random.getstate()
    previous = install_coins(coins)
    apply_seeds({"random": seeds.get("random")})
    box: dict[str, Any] = {}
    try:
        trio.run(_main, subject, trace, options, schedule, coins, box, clock=new_clock())
    finally:
        install_coins(previous)
        random.setstate(saved_random)
    matcher: Matcher = box["matcher"]
    result = ReplayResult(
        divergence=matcher.divergence,
        reproduced=matcher.reproduced,
        total=matcher.end_index,
        virtual_seconds=box["elapsed"],
        output=tuple(matcher.recorder.lines),
        schedule=schedule,
    )
    transport: ReplayTransport = box["transport"]
    return Run(result, tuple(coins.decisions), matcher.diverged_at_coin, tuple(transport.yields))


async def _main(
    subject: Any,
    trace: Trace,
    options: ReplayOptions,
    schedule: Schedule,
    coins: ScriptedCoins,
    box: dict[str, Any],
) -> None:
    order_timer_ties()
    header = trace.header
    recorder = ReplayLog(header, frozenset(header.get("redacted_keys") or ()))
    matcher = Matcher(
        trace,
        recorder,
        until=options.until,
        on_step=options.on_step,
        on_break=options.on_break,
        break_at=options.break_at,
        strict=schedule.exact,
        coin_count=lambda: len(coins.decisions),
    )
    box["matcher"] = matcher
    transport = ReplayTransport(
        matcher,
        str(header.get("transport")),
        grace=options.grace,
        no_yield=schedule.no_yield,
        coin_count=lambda: len(coins.decisions),
    )
    box["transport"] = transport
    if trace.events and trace.events[0].t > 0:
        # Start where the recording did: its clock origin may predate the session (the
        # recorder is made first), and later waits are measured from the same origin.
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        clock.jump(trace.events[0].t - trio.current_time())
    try:
        with trio.CancelScope() as scope:
            matcher.scope = scope
            if trace.role == "client":
                await _run_client(subject, trace, transport, matcher)
            else:
                session = subject.new_session(transport, tracer=matcher, session_id=trace.session)
                transport.close_session = session.close
                async with subject.running():  # the server's lifespan, as live
                    await session.run()
    except Exception as exc:
        # The replayed session died of an exception (an actor's bug): a divergence only
        # if the recording did not die the same way, which check_complete() decides.
        if not matcher.finished and matcher.low < len(trace.events):
            nxt = trace.events[matcher.low]
            matcher.diverge(nxt, None, f"the replayed session failed: {exc!r}")
    matcher.check_complete()
    recorder.close()
    box["elapsed"] = trio.current_time()


async def _run_client(script: Any, trace: Trace, transport: ReplayTransport,
                      matcher: Matcher) -> None:
    """The client code, connected as it was when recorded: its own failure (traced as
    ``client_failed``, which the matcher compares) is the recording's outcome too, not
    the replay's."""
    from mcpactor.client.client import connect_transport, timeout_from_json

    options = script.connect_options()
    # What the script leaves unset comes from the recording's connect options.
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
    try:
        async with connect_transport(transport, tracer=matcher, session_id=trace.session,
                                     **options) as client:
            await script.main(client)
    except Exception:
        # Traced by connect_transport (client_failed) when it came from the client code;
        # anything else shows as a missing or different event.
        pass


def _recorded_initialize(trace: Trace) -> dict[str, Any]:
    """The params of the ``initialize`` request the recorded client sent."""
    for ev in trace.events:
        msg = ev.data.get("msg") if ev.kind == "message_out" else None
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            params = msg.get("params")
            return params if isinstance(params, dict) else {}
    return {}
