"""Clocks and entropy for changed code.

A follow run (:mod:`replay.exact.follow`, ``mcpactor replay --server NEW`` past the
first divergence, and a live target following its recording) serves each task the
clock and entropy values it read live for as long as it reads what it read live (a
task of unchanged code), and otherwise values derived from the virtual time and the
recording's seed: the same every run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from mcpactor.tracing import entropy
from mcpactor.tracing.tasks import TaskRef

from ..trace import Trace
from .scheduler import MISSING, Scheduler


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

    def value(self, node: TaskRef, source: str, real: Callable[..., Any], *args: Any) -> Any:
        """What the task read live, while it reads as it did (a task of unchanged code);
        else a value consistent with the virtual clock (or the task's seeded bytes)."""
        if node.muted:
            return real(*args)  # inside a transport: its reads are not the task's
        recorded = self._scheduler.read(node, source, lenient=True) if node.id else MISSING
        if recorded is not MISSING:
            return bytes.fromhex(str(recorded)) if source == "urandom" else recorded
        now = self._scheduler.now
        if source == "urandom":
            rng = self._bytes.get(node.id)
            if rng is None:  # a TaskRef is made per read: the stream is the task's
                rng = self._bytes[node.id] = random.Random(f"{self._seed}:{node.name}:b")
            return rng.randbytes(int(args[0]) if args else 0)
        if source not in entropy.CLOCK_SOURCES:
            return real(*args)  # not a clock (the host's node id): as it is here
        if source.startswith("time"):
            wall = self._wall + (now - self._origin)
            return round(wall * 1e9) if source.endswith("_ns") else wall
        return round(now * 1e9) if source.endswith("_ns") else now

    def seed_for(self, node: TaskRef) -> str:
        """As the recording's."""
        return f"{self._seed}:{node.name}"

    def thread_plan(self, node: TaskRef) -> str | None:
        """How the task's next wait for a worker thread ended live, if it was recorded
        (a task of unchanged code waits as it did: a deadline that beat the thread
        beats it again); else the thread ends as it ends. A wait that ended cancelled
        live holds its thread until a cancellation ends it, which the end of the run
        provides if the code no longer brings one."""
        if not node.id:
            return None
        value = self._scheduler.take(node, "thread")
        return None if value is MISSING else str(value)

    def thread_done(self, node: TaskRef, outcome: str) -> None:
        """Nothing to record."""

    async def wait_turn(self, granted: bool) -> None:
        """Until the running task's next recorded step (passed over if it cannot take it)."""
        await self._scheduler.park(early=granted)
