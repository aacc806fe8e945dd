"""A live server that follows its recording: how ``--against`` compares like with like.

A live server's race outcomes depend on its timing, and its random values on its own
entropy: played the recorded inputs, an unchanged server answers a racy trace
differently from one run to the next. ``mcpactor replay T --against CMD`` therefore
starts a command target with :data:`FOLLOW_ENV` set (and the recording's
``PYTHONHASHSEED``). An mcpactor server that serves stdio (``mcpactor run X``, or a
program calling ``Server.run()``) sees it and serves that one session as the follow
run does (:mod:`replay.exact.follow`), on its real stdin and stdout:

- its session has the recorded session id, and its tasks take their steps at their
  recorded places in the schedule, on the recorded passes' clock (timers fire in the
  pass they fired live, whatever the real time);
- each task reads its recorded clock and entropy values (``uuid4``, ``time.time()``),
  and draws from its recorded ``random`` stream, while it reads what it read live;
- the reader takes each real input at the recorded step where it took the recorded
  one, waiting in real time for it to arrive; every other step whose task cannot run
  (changed code) is passed over, and the task runs when it can.

It writes ``following`` to the file named in the variable, so that the driver knows
the answers are comparable exactly. Unchanged code gives the recorded answers, race
outcomes and random values included; changed code shows what changed.
"""

from __future__ import annotations

import os
from typing import Any

import trio

from mcpactor.tracing import entropy
from mcpactor.tracing.encode import loads
from mcpactor.tracing.tasks import TaskRef, current_node
from mcpactor.transports.base import Outgoing, Oversize, Transport

from .exact.follow import FollowDriver
from .trace import Event, Trace, TraceError, load_trace

#: ``{"trace": PATH, "session": SID, "ack": PATH, "wait": SECONDS}``: serve the session
#: ``SID`` of the trace at ``PATH`` following its recording (see the module).
FOLLOW_ENV = "MCPACTOR_REPLAY_FOLLOW"


def follow_request() -> dict[str, Any] | None:
    """The follow request of this process's environment, if any (a bad one: None)."""
    text = os.environ.get(FOLLOW_ENV)
    if not text:
        return None
    try:
        spec = loads(text)
    except ValueError:
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("trace"), str):
        return None
    return spec


class LiveFollowTransport(Transport):
    """The real stdio transport, its receives and sends placed at the recorded steps:
    a recorded input's earlier yields are taken at their recorded places, the real read
    happens outside the schedule (waited for, in real time), and the input is handed
    over at the recorded step that handed the recorded one over."""

    def __init__(self, real: Transport, events: list[Event], scheduler: Any) -> None:
        from .exact.transport import _RECEIVE_OUTCOMES, _SEND_OUTCOMES

        self.name = real.name
        self._real = real
        self._scheduler = scheduler
        self._inputs = [ev for ev in events if ev.actor == "reader"
                        and ev.kind in _RECEIVE_OUTCOMES and ev.kind != "receive_cancelled"]
        self._outcomes = [ev for ev in events if ev.kind in _SEND_OUTCOMES]
        self._next_in = 0
        self._next_out = 0

    async def _around(self, ev: Event | None, call: Any) -> Any:
        n = ev.data.get("yields", 1) if ev is not None else 1
        n = n if isinstance(n, int) and n > 0 else 0
        for _ in range(n - 1):
            await self._scheduler.park()
        node = _node()
        if node is not None:
            self._scheduler.io.add(node.id)
        try:
            result = await call()
        except BaseException:
            if node is not None:
                self._scheduler.io.discard(node.id)
            if n:
                await self._scheduler.park()
            raise
        if node is not None:
            self._scheduler.io.discard(node.id)
        if n:
            await self._scheduler.park()
        return result

    async def receive(self) -> bytes | Oversize:
        """The next real input, handed over at the recorded input's step."""
        ev = self._inputs[self._next_in] if self._next_in < len(self._inputs) else None
        self._next_in += 1
        result: bytes | Oversize = await self._around(ev, self._real.receive)
        return result

    async def send(self, messages: list[Outgoing]) -> None:
        """Write for real, completing at the recorded send's step."""
        ev = self._outcomes[self._next_out] if self._next_out < len(self._outcomes) else None
        self._next_out += len(messages)
        await self._around(ev, lambda: self._real.send(messages))

    async def aclose(self) -> None:
        """As the real transport."""
        await self._real.aclose()


def _node() -> TaskRef | None:
    # The followed task running now (its number in the follow run's table).
    return current_node()


def serve_following(server: Any, spec: dict[str, Any]) -> None:
    """Serve one stdio session of ``server`` following the session ``spec`` names (see
    the module). A trace that cannot be read is one line on stderr and exit status 2."""
    import sys

    try:
        trace = load_trace(str(spec["trace"]), require_end=False)
    except TraceError as exc:
        print(f"mcpactor: cannot follow the recording: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    sid = spec.get("session")
    if not isinstance(sid, str) or sid not in trace.sessions:
        sid = trace.sessions[0] if trace.sessions else None
    if trace.version < 2 or sid is None or trace.role != "server":
        # Nothing to follow (no schedule, or a client's recording): serve as usual.
        server.run("stdio")
        return
    ack = spec.get("ack")
    if isinstance(ack, str):
        try:
            with open(ack, "w") as f:
                f.write("following\n")
        except OSError:
            pass
    wait = spec.get("wait")
    from .exact.follow import FollowClock, FollowScheduler

    # A real-time wait for the real transport is bounded by the driver's own timeout.
    scheduler = FollowScheduler(trace, wait_seconds=float(
        wait) if isinstance(wait, int | float) and not isinstance(wait, bool) else 10.0)
    entropy.install()
    entropy.capture_datetime()
    try:
        trio.run(_serve, server, trace, sid, scheduler, clock=FollowClock(scheduler))
    finally:
        entropy.uninstall()


async def _serve(server: Any, trace: Trace, sid: str, scheduler: Any) -> None:
    from .exact.changed import VirtualCapture
    from .exact.engine import _lifespan
    from .exact.follow import NullTracer

    origin = float((trace.header.get("clock") or {}).get("origin", 0.0))
    capture = VirtualCapture(scheduler, trace)
    seed = (trace.header.get("seeds") or {}).get("random")
    if isinstance(seed, int):
        entropy.global_random().seed(seed)
    async with _lifespan(trace, server, scheduler):
        scheduler.install()
        entropy.activate(capture)
        try:
            async with trio.open_nursery() as nursery:
                driver = _LiveDriver(nursery, server, trace, scheduler,
                                     NullTracer(scheduler, origin))  # type: ignore[arg-type]
                driver.live = sid
                driver.sink = []
                scheduler.create = driver.create
                scheduler.act = driver.act
                scheduler.on_free = driver.on_free
                nursery.start_soon(driver.run)
        finally:
            entropy.deactivate(capture)
            scheduler.uninstall()


class _LiveDriver(FollowDriver):
    """The recording's sessions, each started at its supervisor's first step: the live
    one on the real stdio, the others on their recorded inputs (their answers go
    nowhere), so that the state they share with the live one (module globals, locks)
    changes as it did live. The process ends with the live one."""

    live: str

    def _transport(self, sid: str) -> Any:
        if sid != self.live:
            return super()._transport(sid)
        from mcpactor.transports.stdio import StdioServerTransport

        events = [ev for ev in self.trace.events if ev.session == sid]
        return LiveFollowTransport(StdioServerTransport(), events, self.scheduler)

    def _start(self, sid: str) -> None:
        super()._start(sid)
        if sid == self.live:
            self.nursery.start_soon(_end_with, self.sessions[sid], self.nursery)


async def _end_with(session: Any, nursery: trio.Nursery) -> None:
    await session.closed.wait()
    nursery.cancel_scope.cancel()
