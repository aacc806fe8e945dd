"""Replaying a trace against changed code: the recorded inputs, the new behaviour.

When the code is not the recorded code, its tasks take other steps and the recorded
schedule means nothing. This replay feeds each session the recorded inputs at their
recorded (virtual) times — requests, cancellations, the client's answers to the
server's requests, all in their recorded form — lets the new code run freely on the
virtual clock, and collects what it says. The result is compared by meaning with the
recording (:mod:`replay.compare`): every response that changed.

Deterministic too: the clock is virtual (it jumps to the next deadline when nothing can
run), the followed tasks draw from the recording's :mod:`random` streams, and the clocks
and entropy they read are the recorded values as long as a task reads what it read live
(unchanged code), else derived from the virtual time and the recording's seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import orjson
import trio

from mcpactor.tracing import entropy
from mcpactor.tracing.tasks import Node
from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed

from ..compare import Comparison, compare, server_messages
from ..trace import Event, Trace
from .scheduler import MISSING, ReplayClock, Scheduler
from .transport import _encode

_RECEIVED = frozenset({"message_in", "message_oversize", "transport_closed", "transport_broken"})


class TimedTransport(Transport):
    """A session's recorded inputs at their recorded times; what it sends is collected."""

    def __init__(self, name: str, sid: str, inputs: list[Event], origin: float,
                 sink: list[tuple[str | None, Any]]) -> None:
        self.name = name
        self._sid = sid
        self._inputs = inputs
        self._origin = origin
        self._sink = sink
        self._next = 0

    async def receive(self) -> bytes | Oversize:
        """The next input, at its recorded time."""
        if self._next >= len(self._inputs):
            await trio.sleep_forever()
        ev = self._inputs[self._next]
        self._next += 1
        await trio.sleep_until(self._origin + ev.t)
        if ev.kind == "message_in":
            if "msg" in ev.data:
                return _encode(ev.data["msg"])
            return str(ev.data.get("raw", "")).encode("utf-8")
        if ev.kind == "message_oversize":
            return Oversize(int(ev.data.get("size", 0)))
        if ev.kind == "transport_broken":
            raise TransportClosed(str(ev.data.get("error", "")))
        raise trio.EndOfChannel

    async def send(self, messages: list[Outgoing]) -> None:
        """Collect what the code sends."""
        for data, _ in messages:
            try:
                msg = orjson.loads(data)
            except orjson.JSONDecodeError:
                import json

                msg = json.loads(data)
            self._sink.append((self._sid, msg))
        await trio.lowlevel.checkpoint()

    async def close_request_stream(self, request_id: Any) -> None:
        """(HTTP) nothing to do."""

    async def aclose(self) -> None:
        """Nothing to release."""


class VirtualCapture:
    """Clocks and entropy for changed code: derived from the virtual time and the
    recording's seed, the same every run."""

    def __init__(self, scheduler: Scheduler, trace: Trace) -> None:
        clock = trace.header.get("clock") or {}
        self._scheduler = scheduler
        self._origin = float(clock.get("origin", 0.0))
        self._wall = float(clock.get("wall_origin", 0.0))
        self._seed = str((trace.header.get("seeds") or {}).get("random"))
        self._bytes: dict[int, random.Random] = {}

    def value(self, node: Node, source: str, real: Callable[..., Any], *args: Any) -> Any:
        """What the task read live, while it reads as it did (a task of unchanged code);
        else a value consistent with the virtual clock (or the task's seeded bytes)."""
        if node.muted:
            return real(*args)  # inside a transport: its reads are not the task's
        recorded = self._scheduler.read(node, source, lenient=True) if node.id else MISSING
        if recorded is not MISSING:
            return bytes.fromhex(str(recorded)) if source == "urandom" else recorded
        now = self._scheduler.now
        if source == "urandom":
            rng = self._bytes.setdefault(id(node), random.Random(f"{self._seed}:{node.name}:b"))
            return rng.randbytes(int(args[0]) if args else 0)
        if source.startswith("time"):
            wall = self._wall + (now - self._origin)
            return round(wall * 1e9) if source.endswith("_ns") else wall
        return round(now * 1e9) if source.endswith("_ns") else now

    def seed_for(self, node: Node) -> str:
        """As the recording's."""
        return f"{self._seed}:{node.name}"

    def thread_plan(self, node: Node) -> str | None:
        """Changed code: threads end as they end (the recorded outcome, if any, is
        passed over)."""
        if node.id:
            self._scheduler.take(node, "thread")
        return None

    def thread_done(self, node: Node, outcome: str) -> None:
        """Nothing to record."""


def replay_changed(trace: Trace, subject: Any) -> Comparison:
    """Run ``subject`` (a freshly loaded server) on ``trace``'s inputs; compare what it
    answers with what the recording answered."""
    out: list[tuple[str | None, Any]] = []
    scheduler = Scheduler(trace, on_diverge=lambda reason: None)
    scheduler.free = True
    trio.run(_main, trace, subject, scheduler, out, clock=ReplayClock(scheduler))
    recorded, methods = server_messages(trace)
    return compare(recorded, out, methods)


async def _main(trace: Trace, subject: Any, scheduler: Scheduler,
                out: list[tuple[str | None, Any]]) -> None:
    clock = trace.header.get("clock") or {}
    origin = float(clock.get("origin", 0.0))
    scheduler.now = origin
    capture = VirtualCapture(scheduler, trace)
    seed = (trace.header.get("seeds") or {}).get("random")
    if isinstance(seed, int):
        entropy.global_random().seed(seed)
    scheduler.install()
    entropy.activate(capture)
    by_session: dict[str, list[Event]] = {}
    for ev in trace.events:
        if ev.session is not None:
            by_session.setdefault(ev.session, []).append(ev)
    try:
        async with trio.open_nursery() as nursery:
            sessions: dict[str, Any] = {}

            async def serve(sid: str, events: list[Event]) -> None:
                start = next((ev for ev in events if ev.kind == "session_started"), events[0])
                await trio.sleep_until(origin + start.t)
                inputs = [ev for ev in events if ev.actor == "reader" and ev.kind in _RECEIVED]
                name = str(start.data.get("transport", trace.header.get("transport")))
                session = subject.new_session(TimedTransport(name, sid, inputs, origin, out),
                                              session_id=sid)
                sessions[sid] = session
                try:
                    await session.run()
                except Exception:
                    pass  # the new code's own failure shows in what it did not answer

            async def outside(ev: Event) -> None:
                await trio.sleep_until(origin + ev.t)
                session = sessions.get(ev.session or "")
                if session is not None and ev.kind == "close_requested":
                    session.close(str(ev.data.get("reason")),
                                  graceful=ev.data.get("graceful") is True)

            for sid, events in by_session.items():
                nursery.start_soon(serve, sid, events)
            for ev in trace.events:
                if ev.actor == "external":
                    nursery.start_soon(outside, ev)
            last = trace.events[-1].t if trace.events else 0.0
            # Past the recording's end, whatever the new code still does is not waited for.
            await trio.sleep_until(origin + last + 60.0)
            nursery.cancel_scope.cancel()
    finally:
        entropy.deactivate(capture)
        scheduler.uninstall()
