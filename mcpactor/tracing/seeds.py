"""The seed of a recording, and what kind of clock it ran on.

A recording's followed tasks draw from :mod:`random` streams of their own, each seeded
from the trace's seed and the task's name (:mod:`.entropy`); the header keeps the seed.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Sequence

import trio

#: The variable that fixes the seed of Python's string hashing, and so the order in which
#: a set of strings is iterated: a recording fixes it so that a replay can.
HASH_SEED = "PYTHONHASHSEED"


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


def hash_seed() -> int | None:
    """This process's string-hash seed, when it is fixed (``PYTHONHASHSEED``)."""
    value = os.environ.get(HASH_SEED, "")
    return int(value) if value.isdigit() else None


def run_with_hash_seed(seed: int | None, argv: Sequence[str] | None = None) -> None:
    """Make sure this process hashes strings with ``seed`` (None: any fixed seed): when
    it does not, start this very command again with ``PYTHONHASHSEED`` set (``os.execv``:
    nothing has run yet that could tell). Iterating a set of strings then goes in the
    same order in the recording and in every replay."""
    current = hash_seed()
    if current is not None and (seed is None or current == seed):
        return
    if seed is None:
        seed = random.SystemRandom().randrange(1, 2**32)
    env = dict(os.environ, **{HASH_SEED: str(seed)})
    args = list(argv if argv is not None else sys.orig_argv)
    os.execve(sys.executable, [sys.executable, *args[1:]], env)
