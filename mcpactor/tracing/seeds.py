"""The sources of nondeterminism a trace pins down: seeds and the clock.

Trio shuffles the order in which runnable tasks run (a module-level ``random.Random``
in ``trio._core._run``); handlers may use :mod:`random`. Recording picks fresh seeds,
applies them, and writes them in the trace header; replay applies the same seeds.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import trio


def fresh_seeds() -> dict[str, int]:
    """New seeds for one recording: Trio's scheduler and Python's ``random``."""
    sysrand = random.SystemRandom()
    return {"scheduler": sysrand.getrandbits(63), "random": sysrand.getrandbits(63)}


def apply_seeds(seeds: dict[str, Any]) -> None:
    """Seed Trio's scheduler and the ``random`` module from a header's ``seeds``."""
    sched = seeds.get("scheduler")
    if isinstance(sched, int):
        # Trio keeps its scheduling RNG private; seeding it is the only way to make
        # its batch-order coin flips repeatable (its own Hypothesis plugin does this).
        from trio._core import _run

        _run._r.seed(sched)
    rnd = seeds.get("random")
    if isinstance(rnd, int):
        random.seed(rnd)


def clock_kind() -> str:
    """``virtual`` under :class:`trio.testing.MockClock`, else ``monotonic``."""
    try:
        clock = trio.lowlevel.current_clock()
    except RuntimeError:
        return "monotonic"
    # A MockClock exists only once trio.testing is imported; importing it here would cost
    # every recording process a second or so (it pulls in pytest, where installed).
    testing = sys.modules.get("trio.testing")
    if testing is None:
        return "monotonic"
    return "virtual" if isinstance(clock, testing.MockClock) else "monotonic"
