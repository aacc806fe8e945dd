"""The clocks and entropy a replayed task reads: the recorded values, in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpactor.tracing.tasks import TaskRef

from .scheduler import MISSING, Scheduler


class ReplayCapture:
    """The :class:`mcpactor.tracing.entropy.Capture` of a replay: a followed task gets
    back what it read live (see :meth:`Scheduler.read`); anything else gets the real
    value."""

    def __init__(self, scheduler: Scheduler, seed: Any) -> None:
        self._scheduler = scheduler
        self._seed = str(seed)

    def value(self, node: TaskRef, source: str, real: Callable[..., Any], *args: Any) -> Any:
        """The recorded value of ``source`` for ``node``'s task."""
        if node.muted or self._scheduler.free:
            return real(*args)
        value = self._scheduler.read(node, source)
        if value is MISSING:
            return real(*args)
        if source == "urandom":
            return bytes.fromhex(value)
        return value

    def seed_for(self, node: TaskRef) -> str:
        """The seed of ``node``'s :mod:`random` stream (as the recording's)."""
        return f"{self._seed}:{node.name}"

    def thread_plan(self, node: TaskRef) -> str | None:
        """How the recorded wait for this thread ended (None: not recorded)."""
        if self._scheduler.free:
            return None
        value = self._scheduler.take(node, "thread")
        return None if value is MISSING else str(value)

    def thread_done(self, node: TaskRef, outcome: str) -> None:
        """Nothing to record in a replay."""

    async def wait_turn(self, granted: bool) -> None:
        """Until the running task's next recorded step."""
        await self._scheduler.park(early=granted)
