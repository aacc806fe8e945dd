"""The replayer's data: options, results, and the error for a replay that cannot start."""

from __future__ import annotations

import attrs

from .compare import Comparison
from .matcher import BreakHook, Divergence, StepHook


class ReplayError(Exception):
    """The replay cannot start (bad entry point, unsupported trace): one-line message."""


@attrs.frozen
class ReplayOptions:
    """How to replay.

    ``server`` (for a server-side trace) or ``client`` (a client-side one) overrides the
    header's entry point; ``until`` stops after event
    ``until``; ``break_at`` calls ``on_break`` just before event ``break_at``; ``on_step``
    sees every reproduced event; ``grace`` is how many virtual seconds past its recorded
    time an event may be late before the replay counts as stalled; ``schedules`` bounds
    the schedule search (see :func:`replay.engine.replay`).
    """

    server: str | None = None
    client: str | None = None
    until: int | None = None
    break_at: int | None = None
    on_step: StepHook | None = None
    on_break: BreakHook | None = None
    grace: float = 60.0
    #: Real-time stdio recordings of a two-request race made on a loaded machine needed
    #: up to ~440 runs (7 of about 185 needed more than 256) before ``message_in`` said
    #: which inputs the reader took without yielding (``buffered``); with it, 80 such
    #: recordings replayed within 4 runs (without it, the same 80: median 10, up to
    #: 433). The budget stays for traces without the key and for races the scheduler's
    #: coin flips decide; a faithful replay stops at its first match, so only a
    #: diverging replay pays for it.
    schedules: int = 1024
    #: Note, for every step, where in the application's code its task resumed (the
    #: interleaving view, :mod:`replay.interleave`): costs a walk of the task's frames.
    locate: bool = False


@attrs.frozen
class Schedule:
    """One way of running a replay: exact (actors interleave as recorded) or per actor
    (only each actor's own order is checked), with scheduler coin flips dictated
    (``forced``) and the inputs (by event index) that the reader takes without yielding
    (``no_yield``: a stream transport hands out lines it has already buffered at once)."""

    exact: bool = True
    forced: tuple[bool, ...] = ()
    no_yield: frozenset[int] = frozenset()


@attrs.frozen
class ReplayResult:
    """The verdict: ``faithful`` unless ``divergence``; ``output`` is the replayed
    session's own trace, byte-identical from one replay of a trace to the next."""

    divergence: Divergence | None
    reproduced: int
    total: int
    virtual_seconds: float
    output: tuple[bytes, ...]
    schedule: Schedule = Schedule()
    #: How many runs the schedule search made.
    attempts: int = 1
    #: (Version-2 traces) every step the replay ran, as (recorded pass index, task id),
    #: and for each reproduced event the task that emitted it (None: not a followed one).
    steps: tuple[tuple[int, int], ...] = ()
    emitters: tuple[int | None, ...] = ()
    #: (With ``ReplayOptions.locate``) for each step, where in the application's code
    #: its task had waited; for each reproduced event, the step it was emitted in.
    locations: tuple[str | None, ...] = ()
    event_steps: tuple[int | None, ...] = ()
    #: (Changed code, ``--server``) every response that is not the recorded one, from a
    #: run of the new code on the recorded inputs (see :mod:`replay.exact.follow`).
    changes: Comparison | None = None

    @property
    def faithful(self) -> bool:
        """Whether every compared event matched."""
        return self.divergence is None

    @property
    def mode(self) -> str:
        """``exact`` when the actors also interleaved as recorded, else ``per-actor``."""
        return "exact" if self.schedule.exact else "per-actor"

    def output_bytes(self) -> bytes:
        """The replayed trace as JSONL bytes."""
        return b"".join(line + b"\n" for line in self.output)
