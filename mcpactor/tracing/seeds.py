"""The seed of a recording, and what kind of clock it ran on.

A recording's followed tasks draw from :mod:`random` streams of their own, each seeded
from the trace's seed and the task's name (:mod:`.entropy`); the header keeps the seed.
"""

from __future__ import annotations

import random
import sys

import trio


def fresh_seeds() -> dict[str, int]:
    """A new seed for one recording."""
    return {"random": random.SystemRandom().getrandbits(63)}


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
    inner = getattr(clock, "inner", clock)  # the recording's wrapper
    return "virtual" if isinstance(inner, testing.MockClock) else "monotonic"
