"""What the recording's outside world did, done again at the same points.

The :class:`Driver` is a task of the replay that the recording did not follow. The
scheduler asks it to start a session when the schedule's next step belongs to one that
does not exist yet, and to repeat an outside action (``close_requested``: an HTTP
DELETE, an idle timeout, a SIGTERM) at the recorded point; it does each in a step of
its own, between the recorded ones. For a client-side trace it also runs the client
code, connected as it was live.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from ..trace import Event, Trace
from .matcher import ExactMatcher
from .scheduler import Scheduler
from .transport import ReplaySessionTransport


class Driver:
    """Starts the replayed sessions and repeats outside actions (see the module)."""

    def __init__(self, nursery: trio.Nursery, subject: Any, trace: Trace,
                 scheduler: Scheduler, matcher: ExactMatcher) -> None:
        self.nursery = nursery
        self.subject = subject
        self.trace = trace
        self.scheduler = scheduler
        self.matcher = matcher
        self.sessions: dict[str, Any] = {}
        self.free = trio.Event()
        self._jobs: deque[Callable[[], None]] = deque()
        self._task: Any = None
        self._parked = False
        by_session: dict[str, list[Event]] = {}
        for ev in trace.events:
            if ev.session is not None:
                by_session.setdefault(ev.session, []).append(ev)
        self._events = by_session

    # -- asked by the scheduler, from its hook ------------------------------------------

    def create(self, name: str) -> Any:
        """Start the session whose supervisor is ``name`` (its id)."""
        if self.trace.role == "client":
            return None  # the client code starts its session itself
        return self._later(lambda: self._start(name))

    def act(self, ev: Event) -> Any:
        """Repeat the outside action ``ev``."""
        return self._later(lambda: self._do(ev))

    def on_free(self) -> Any:
        """The schedule is over (or abandoned)."""
        return self._later(self.free.set)

    def _later(self, job: Callable[[], None]) -> Any:
        self._jobs.append(job)
        if self._parked and self._task is not None:
            self._parked = False
            trio.lowlevel.reschedule(self._task)
            return self._task
        return None

    # -- the driver's task --------------------------------------------------------------

    async def run(self) -> None:
        """Do the jobs the scheduler hands over, each in the step it was woken for."""
        self._task = trio.lowlevel.current_task()
        while True:
            while self._jobs:
                self._jobs.popleft()()
            self._parked = True

            def abort(_: Any) -> trio.lowlevel.Abort:
                self._parked = False
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)

    def _transport(self, sid: str) -> ReplaySessionTransport:
        events = self._events.get(sid, [])
        name = next((str(ev.data.get("transport")) for ev in events
                     if ev.kind == "session_started"), str(self.trace.header.get("transport")))
        return ReplaySessionTransport(name, events, self.scheduler)

    def _start(self, sid: str) -> None:
        session = self.subject.new_session(self._transport(sid), tracer=self.matcher,
                                           session_id=sid)
        self.sessions[sid] = session
        self.nursery.start_soon(self._serve, session)

    async def _serve(self, session: Any) -> None:
        try:
            await session.run()
        except Exception as exc:
            # An actor's bug ended the session: the recording either died the same way
            # (then its events say so, and they matched) or not.
            self.matcher.stalled(f"the replayed session failed: {exc!r}")

    def _do(self, ev: Event) -> None:
        if ev.kind == "close_requested":
            session = self.sessions.get(ev.session or "")
            if session is not None:
                session.close(str(ev.data.get("reason")),
                              graceful=ev.data.get("graceful") is True)

    async def run_client(self, options: dict[str, Any]) -> None:
        """Run the client code as the recording did (a client-side trace)."""
        from mcpactor.client.client import connect_transport

        script = self.subject
        sid = self.trace.sessions[0] if self.trace.sessions else None
        if sid is None:
            return
        try:
            async with connect_transport(self._transport(sid), tracer=self.matcher,
                                         session_id=sid, **options) as client:
                await script.main(client)
        except Exception:
            # Traced by connect_transport (client_failed) when it came from the client
            # code; anything else shows as a missing or different event.
            pass
