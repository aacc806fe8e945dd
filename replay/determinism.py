"""What makes one Trio run repeat exactly: seeds, a virtual clock, ordered timers.

Trio's scheduler flips a coin per batch of runnable tasks (``trio._core._run._r``);
seeding it fixes the flips. Timers that expire at the same virtual instant are ordered
by ``id()`` of their cancel scopes, a memory address that changes from run to run;
:func:`order_timer_ties` makes the tie-breaker the order in which the deadlines were
set, which a seeded run repeats. Both reach into Trio internals, so both check that
the internals look as expected and do nothing otherwise (replays then stay correct but
ties may resolve differently from run to run).
"""

from __future__ import annotations

import itertools
import random
from heapq import heappush
from typing import Any

import attrs
import trio
import trio.testing
from trio._core import _run


def apply_seeds(seeds: dict[str, Any]) -> None:
    """Seed Python's ``random`` from a version-1 header's ``seeds`` (its Trio scheduler
    seed drives :class:`ScriptedCoins`)."""
    rnd = seeds.get("random")
    if isinstance(rnd, int):
        random.seed(rnd)

__all__ = ["ScriptedCoins", "apply_seeds", "install_coins", "new_clock", "order_timer_ties"]


def new_clock() -> trio.testing.MockClock:
    """A virtual clock that jumps to the next deadline whenever every task is blocked."""
    return trio.testing.MockClock(autojump_threshold=0)


_Deadlines: Any = getattr(_run, "Deadlines", None)


def _ordered_deadlines_class() -> Any:
    if _Deadlines is None or not attrs.has(_Deadlines):
        return None  # another Trio layout: leave its tie-breaker alone

    @attrs.define
    class OrderedDeadlines(_Deadlines):
        _order: Any = attrs.Factory(itertools.count)

        def add(self, deadline: float, cancel_scope: Any) -> None:
            heappush(self._heap, (deadline, next(self._order), cancel_scope))
            self._active += 1

    return OrderedDeadlines


_OrderedDeadlines = _ordered_deadlines_class()


def order_timer_ties() -> bool:
    """Make same-instant timers expire in the order they were set (call first thing
    inside ``trio.run``, before any deadline exists). True when it took effect."""
    runner = getattr(_run.GLOBAL_RUN_CONTEXT, "runner", None)
    current = getattr(runner, "deadlines", None)
    if _OrderedDeadlines is None or current is None or getattr(current, "_heap", None):
        return False
    runner.deadlines = _OrderedDeadlines()  # type: ignore[union-attr]
    return True


class ScriptedCoins(random.Random):
    """Trio's scheduling RNG, with some of its coin flips dictated.

    Trio calls ``random()`` once per batch of runnable tasks and runs the batch
    reversed when the value is below 0.5. The first ``len(forced)`` flips are taken from
    ``forced`` (True: reverse); later ones come from the seeded stream. Every decision
    is kept in :attr:`decisions`, so a run can be repeated with one flip changed.
    """

    def __init__(self, seed: int, forced: tuple[bool, ...] = ()) -> None:
        super().__init__(seed)
        self.forced = forced
        self.decisions: list[bool] = []

    def random(self) -> float:
        """The next coin (a float, as Trio expects)."""
        value = super().random()
        i = len(self.decisions)
        if i < len(self.forced):
            value = 0.25 if self.forced[i] else 0.75
        self.decisions.append(value < 0.5)
        return value


def install_coins(coins: random.Random) -> random.Random:
    """Make ``coins`` Trio's scheduling RNG; returns the one it replaces."""
    previous: random.Random = _run._r
    _run._r = coins  # Trio looks the module global up on every batch
    return previous
