"""Clocks, entropy and ``random`` as the followed tasks see them, recorded and replayed.

While a capture is active (a recording, or a replay), the standard library's sources of
nondeterminism are routed through it for the tasks a trace follows
(:mod:`mcpactor.tracing.tasks`), and for the worker threads those tasks start with
``trio.to_thread.run_sync`` (Trio copies the task's context into the thread):

- wall and monotonic clocks: ``time.time``, ``time.time_ns``, ``time.monotonic``,
  ``time.monotonic_ns``, ``time.perf_counter``, ``time.perf_counter_ns``, and, in the
  application's own modules (:func:`capture_datetime`), ``datetime.datetime.now``/
  ``utcnow``/``today`` and ``datetime.date.today`` (derived from ``time.time``);
- the functions that read the wall clock when left to: ``time.localtime``,
  ``time.gmtime``, ``time.ctime``, ``time.asctime``, ``time.strftime`` without their
  time argument (they read ``time.time()``, captured, instead);
- entropy: ``os.urandom``, ``os.getrandom`` and with them ``uuid.uuid4``,
  ``random.SystemRandom`` and with it :mod:`secrets`; ``uuid.uuid1`` (its time and clock
  sequence from the captured sources, the host's node id a read of its own,
  ``uuid_node``);
- :mod:`random`'s module functions: each followed task draws from a stream of its own,
  seeded from the trace's seed and the task's name, so what one task draws does not
  depend on how others interleave with it (a trace of one session replays alone).

A recording logs every value a followed task reads from the first two groups (``read``
records: the task, the source, the value); a replay hands the same values back, in the
same order, to the same task. Everything else — untraced code, the runtime's own tasks
— gets the real thing.

The functions are swapped on the modules (``time.time`` and so on), so code that looks
them up when it calls them is covered, wherever it was imported. A name bound before the
swap (``from time import time`` in a module imported earlier) keeps the original:
``mcpactor run --trace`` and ``mcpactor replay`` install the swap before they import the
server. The swap stays for the life of the process once made; with no capture active
the replacements call the originals.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import sys
import sysconfig
import threading
import time
import types
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import trio

from mcpactor.tracing.tasks import THREAD, TaskRef, current_node

__all__ = [
    "Capture", "activate", "deactivate", "global_random", "install", "installed", "real",
    "stream_for",
]

#: Sources whose values are recorded (``read`` records) and replayed.
CLOCK_SOURCES = ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                 "perf_counter_ns")
ENTROPY_SOURCES = ("urandom",)

_real: dict[str, Callable[..., Any]] = {name: getattr(time, name) for name in CLOCK_SOURCES}
_real["urandom"] = os.urandom
_real["uuid_node"] = uuid.getnode

#: ``time`` functions that read the wall clock when their time argument is left out (its
#: position): with it left out, a followed task's call reads ``time.time()`` (captured)
#: and passes that on.
_WALL_DERIVED = {"localtime": 0, "gmtime": 0, "ctime": 0, "asctime": 0, "strftime": 1}
_real_time_functions: dict[str, Callable[..., Any]] = {
    name: getattr(time, name) for name in _WALL_DERIVED}
_real_uuid1: Callable[..., uuid.UUID] = uuid.uuid1
#: 100-ns intervals from the start of the Gregorian calendar (version-1 UUIDs' epoch) to
#: the Unix epoch.
_UUID_EPOCH = 0x01B21DD213814000
_real_getrandom: Callable[..., bytes] | None = getattr(os, "getrandom", None)
_real_random_urandom: Callable[[int], bytes] = random._urandom  # type: ignore[attr-defined]
_RealDatetime = _dt.datetime
_RealDate = _dt.date


class Capture(Protocol):
    """What the swapped functions talk to: a followed task's recording, or a replay."""

    def value(self, node: TaskRef, source: str, real: Callable[..., Any], *args: Any) -> Any:
        """The value ``node``'s task reads from ``source`` (``real(*args)`` live)."""
        ...

    def seed_for(self, node: TaskRef) -> str:
        """The seed of ``node``'s :mod:`random` stream."""
        ...

    def thread_plan(self, node: TaskRef) -> str | None:
        """(A replay) how ``node``'s next wait for a worker thread ended live: ``done``
        (the thread's result) or ``cancelled``, after ``queued:`` when it first waited
        for a token of the thread limiter; None to run it as it comes."""
        ...

    async def wait_turn(self, granted: bool) -> None:
        """(A replay) one yield of the running task that ends at its next recorded step
        (a wait for a thread limiter's token: ``granted``, it ended when another thread
        handed its token over; else a cancellation ended it)."""
        ...

    def thread_done(self, node: TaskRef, outcome: str) -> None:
        """(A recording) how a wait for a worker thread ended."""
        ...


_active: Capture | None = None
#: Modules whose reads are never captured: the standard library's logging stamps every
#: record with the time, and whether a record is made depends on logging levels, which a
#: replay sets differently (it silences the handlers' logging); Trio's clocks (its
#: MockClock reads ``time.perf_counter``) are the recording's and the replay's own;
#: OpenTelemetry (span times, random span ids) and mcpactor's observability hooks are
#: observation, on or off independently of the recording and of its replay.
_UNCAPTURED = ("logging", "trio.", "trio", "opentelemetry", "mcpactor.observability")


def _uncaptured(module: str | None) -> bool:
    return module is not None and module.startswith(_UNCAPTURED)
_lock = threading.Lock()
_installed = False


def activate(capture: Capture) -> None:
    """Route the followed tasks' reads through ``capture`` (one at a time per process)."""
    global _active
    install()
    _active = capture


def deactivate(capture: Capture) -> None:
    """Stop routing through ``capture`` (if it is the active one)."""
    global _active
    if _active is capture:
        _active = None


def _node() -> TaskRef | None:
    # The followed task running now, or whose worker thread this is (the task that started
    # the thread, which waits meanwhile).
    return current_node()


def _read(source: str, *args: Any) -> Any:
    real = _real[source]
    node = _node()
    if node is None:
        return real(*args)
    # A replay's capture serves every followed task; live, the task's own recording.
    capture = _active or node.rec
    if capture is None or _uncaptured(sys._getframe(2).f_globals.get("__name__")):
        return real(*args)
    return capture.value(node, source, real, *args)


def _swapped(source: str) -> Callable[..., Any]:
    def read(*args: Any) -> Any:
        return _read(source, *args)

    read.__name__ = source
    read.__qualname__ = source
    read.__doc__ = _real[source].__doc__
    return read


def _system_urandom(n: int) -> bytes:
    return _read("urandom", n)


def _wall_derived(name: str) -> Callable[..., Any]:
    original = _real_time_functions[name]
    at = _WALL_DERIVED[name]
    # asctime and strftime take a struct_time: the local time of the captured reading.
    local = name in ("asctime", "strftime")

    def derived(*args: Any) -> Any:
        if len(args) > at and args[at] is not None:
            return original(*args)
        now = _read("time")
        when = _real_time_functions["localtime"](now) if local else now
        return original(*args[:at], when)

    derived.__name__ = name
    derived.__qualname__ = name
    derived.__doc__ = original.__doc__
    return derived


def _uuid1(node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
    if _node() is None:
        return _real_uuid1(node, clock_seq)
    # Made here rather than by uuid.uuid1: the system's generator reads the clock where
    # no capture sees it, and the Python one keeps the last timestamp of the process, so
    # its answer would depend on calls the trace does not hold (other threads', other
    # tasks'). The time, the clock sequence and the host's node id are all captured.
    timestamp = _read("time_ns") // 100 + _UUID_EPOCH
    if clock_seq is None:
        clock_seq = random.getrandbits(14)  # the task's own stream
    if node is None:
        node = _read("uuid_node")
    return uuid.UUID(fields=(timestamp & 0xFFFFFFFF, (timestamp >> 32) & 0xFFFF,
                             (timestamp >> 48) & 0x0FFF, (clock_seq >> 8) & 0x3F,
                             clock_seq & 0xFF, node), version=1)


def _getrandom(size: int, flags: int = 0) -> bytes:
    assert _real_getrandom is not None
    if _node() is None:
        return _real_getrandom(size, flags)
    return _read("urandom", size)


class _DatetimeMeta(type):
    # isinstance() and issubclass() answer for the real class: a real datetime made
    # elsewhere is still a datetime.datetime after the swap.
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _RealDatetime)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _RealDatetime)


class _DateMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _RealDate)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _RealDate)


class CapturedDatetime(_RealDatetime, metaclass=_DatetimeMeta):
    """``datetime.datetime`` whose ``now``/``utcnow``/``today`` read ``time.time`` (so a
    capture sees them); they return real ``datetime`` objects."""

    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> _RealDatetime:  # type: ignore[override]
        """The current local time, or in ``tz``."""
        return _RealDatetime.fromtimestamp(_read("time"), tz)

    @classmethod
    def utcnow(cls) -> _RealDatetime:  # type: ignore[override]
        """The current UTC time, naive (as the real ``utcnow``)."""
        return _RealDatetime.fromtimestamp(_read("time"), _dt.UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> _RealDatetime:  # type: ignore[override]
        """Same as ``now()``."""
        return _RealDatetime.fromtimestamp(_read("time"))


class CapturedDate(_RealDate, metaclass=_DateMeta):
    """``datetime.date`` whose ``today`` reads ``time.time``."""

    @classmethod
    def today(cls) -> _RealDate:  # type: ignore[override]
        """The current local date."""
        return _RealDate.fromtimestamp(_read("time"))


# Named as the classes they stand in for: messages, reprs and pickles show the usual names.
for _cls, _name in ((CapturedDatetime, "datetime"), (CapturedDate, "date")):
    _cls.__name__ = _cls.__qualname__ = _name
    _cls.__module__ = "datetime"


# -- random: one stream per followed task --------------------------------------------

_RANDOM_FUNCTIONS = (
    "random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle",
    "getrandbits", "randbytes", "gauss", "normalvariate", "lognormvariate", "expovariate",
    "vonmisesvariate", "gammavariate", "betavariate", "paretovariate", "weibullvariate",
    "triangular", "binomialvariate", "seed", "getstate", "setstate",
)
_global_random: random.Random = random._inst
#: What the modules whose reads are not captured draw from in a followed task.
_free_random = random.Random()


def stream_for(node: TaskRef, capture: Capture) -> random.Random:
    """``node``'s own :class:`random.Random`, made on first use."""
    rng = node.rng
    if rng is None:
        rng = node.rng = random.Random(capture.seed_for(node))
    assert isinstance(rng, random.Random)
    return rng


def _random_swapped(name: str) -> Callable[..., Any]:
    original = getattr(_global_random, name)

    def draw(*args: Any, **kwargs: Any) -> Any:
        node = _node()
        if node is not None:
            capture = _active or node.rec
            if capture is not None:
                if _uncaptured(sys._getframe(1).f_globals.get("__name__")):
                    # Observation's draws (random span ids): from a generator of their
                    # own, so the task's stream is the same with observation on or off.
                    return getattr(_free_random, name)(*args, **kwargs)
                return getattr(stream_for(node, capture), name)(*args, **kwargs)
        return original(*args, **kwargs)

    draw.__name__ = name
    draw.__qualname__ = name
    draw.__doc__ = original.__doc__
    return draw


def global_random() -> random.Random:
    """The generator behind :mod:`random`'s module functions (untraced code's)."""
    return _global_random


_users = 0
_saved: dict[tuple[Any, str], Any] = {}


_real_run_sync = trio.to_thread.run_sync


async def _run_sync(sync_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``trio.to_thread.run_sync`` as the followed tasks see it.

    A thread's end wakes its task from outside the schedule, and hands its limiter's token
    to the next task waiting for one. Recorded: whether the task first waited for a token
    (``queued:``), and whether the wait ended with the thread's result or with a
    cancellation (a timeout that fired first). Replayed: the same, whatever the threads do
    this time — the token comes from a limiter of the replay's (:class:`_ReplayLimiter`),
    granted at once or at the task's recorded step, never by a real thread's end; a wait
    that ended with the result does not take a cancellation meanwhile (it comes at the
    next checkpoint, as it did); a wait that ended cancelled keeps its thread from
    finishing first. Either way the thread runs, and its reads of the clocks and entropy
    are its task's.
    """
    node = current_node()
    capture = _active or (node.rec if node is not None else None)
    if node is None or node.muted or capture is None:
        return await _real_run_sync(sync_fn, *args, **kwargs)

    def in_thread(*a: Any) -> Any:
        # The thread runs in a copy of the task's context: its reads are the task's.
        # (A function handed over as it is — run_sync(os.urandom, 4) — is called from
        # here, so what it reads is captured as the application's.)
        THREAD.set(node)
        return sync_fn(*a)

    plan = capture.thread_plan(node)
    if plan is None:
        queued = "queued:" if _must_wait(kwargs.get("limiter")) else ""
        noting = kwargs["limiter"] = _NotingLimiter(kwargs.get("limiter"))
        try:
            result = await _real_run_sync(in_thread, *args, **kwargs)
        except trio.Cancelled:
            # Cancelled before its token came: "withdrawn" (no thread ran).
            capture.thread_done(node, queued + ("cancelled" if noting.granted else "withdrawn"))
            raise
        capture.thread_done(node, queued + "done")
        return result
    queued, _, outcome = plan.rpartition(":")
    if outcome == "withdrawn":
        # It never got its token live: it waits until the cancellation ends the wait (a
        # replay that no longer follows the recording lets it go on as it comes).
        await _ReplayLimiter(capture, True, granted=False).acquire_on_behalf_of(None)
        return await _real_run_sync(in_thread, *args, **kwargs)
    # A thread whose wait ended cancelled is held until the cancellation comes: nothing
    # to wait for in real time.
    kwargs["limiter"] = _ReplayLimiter(capture, bool(queued), counted=outcome == "done")
    if outcome == "done":
        # Not abandoned on cancel: the wait ends with the thread, as it did live (no cancel
        # scope of our own: entering one reads the clock, which live did not happen).
        kwargs.pop("cancellable", None)
        kwargs["abandon_on_cancel"] = False
        return await _real_run_sync(in_thread, *args, **kwargs)
    # Ended by a cancellation live, so abandonable here whatever the call asked (a wait
    # that cannot be abandoned ends with its thread, which is held until it is over).
    kwargs.pop("cancellable", None)
    kwargs["abandon_on_cancel"] = True
    release = threading.Event()

    def held(*a: Any) -> Any:
        try:
            return in_thread(*a)
        finally:
            release.wait()  # until the cancellation has ended the wait

    try:
        return await _real_run_sync(held, *args, **kwargs)
    finally:
        release.set()


class _NotingLimiter:
    """(A recording) the call's limiter, noting whether it granted the token: a wait
    cancelled before that ran no thread."""

    def __init__(self, limiter: Any) -> None:
        self._limiter = limiter if limiter is not None else (
            trio.to_thread.current_default_thread_limiter())
        self.granted = False

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        """The real limiter's token."""
        await self._limiter.acquire_on_behalf_of(borrower)
        self.granted = True

    def release_on_behalf_of(self, borrower: object) -> None:
        """Given back to the real limiter."""
        self._limiter.release_on_behalf_of(borrower)


def _must_wait(limiter: Any) -> bool:
    """Whether a task asking ``limiter`` (None: Trio's default) for a token now would wait
    for one (a limiter that is not a CapacityLimiter: never, as far as a trace knows)."""
    if limiter is None:
        limiter = trio.to_thread.current_default_thread_limiter()
    if not isinstance(limiter, trio.CapacityLimiter):
        return False
    return limiter.available_tokens < 1 or limiter.statistics().tasks_waiting > 0


class _ReplayLimiter:
    """The thread limiter of one replayed wait for a worker thread: its token is granted
    as the recording's was — at once (one yield, as a free token's), or at the task's
    recorded step when it waited live (one yield that ends there) — so no real thread's
    end decides it."""

    def __init__(self, capture: Capture, queued: bool, *, counted: bool = True,
                 granted: bool = True) -> None:
        self._capture = capture
        self._queued = queued
        self._counted = counted
        self._granted = granted

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        """The token, when the recording had it."""
        replay_threads_busy()  # this run's set, made if it is the first
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._queued:
            await self._capture.wait_turn(self._granted)
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
        if self._counted:
            _BUSY.get().add(borrower)

    def release_on_behalf_of(self, borrower: object) -> None:
        """The thread has ended."""
        _BUSY.get().discard(borrower)


#: (Per Trio run) the threads that hold a token of a replay limiter now: the replay waits
#: for them in real time, as for the threads of Trio's own limiter. Per run, so that a
#: thread still running when its run ended (which never gives its token back) is not
#: counted by the next.
_BUSY: trio.lowlevel.RunVar[set[object]] = trio.lowlevel.RunVar("mcpactor_replay_threads")


def replay_threads_busy() -> int:
    """How many worker threads of replayed waits are running (or held) now."""
    try:
        return len(_BUSY.get())
    except LookupError:
        _BUSY.set(set())
        return 0


_run_sync.__doc__ = _real_run_sync.__doc__


def install() -> None:
    """Swap the functions on their modules, for as long as someone uses them (each call
    wants an :func:`uninstall`; ``mcpactor run --trace`` keeps them for the process)."""
    global _installed, _users
    with _lock:
        _users += 1
        if _installed:
            return
        for module, names in ((time, (*CLOCK_SOURCES, *_WALL_DERIVED)),
                              (os, ("urandom", "getrandom")), (uuid, ("uuid1",)),
                              (random, ("_urandom", *_RANDOM_FUNCTIONS)),
                              (trio.to_thread, ("run_sync",))):
            for name in names:
                if hasattr(module, name):
                    _saved[(module, name)] = getattr(module, name)
        for source in CLOCK_SOURCES:
            setattr(time, source, _swapped(source))
        for name in _WALL_DERIVED:
            setattr(time, name, _wall_derived(name))
        os.urandom = _swapped("urandom")
        if _real_getrandom is not None:
            os.getrandom = _getrandom
        uuid.uuid1 = _uuid1
        random._urandom = _system_urandom  # type: ignore[attr-defined]
        for name in _RANDOM_FUNCTIONS:
            if hasattr(_global_random, name):
                setattr(random, name, _random_swapped(name))
        trio.to_thread.run_sync = _run_sync  # type: ignore[assignment]
        _installed = True


def uninstall() -> None:
    """Put the originals back once the last user is done (code that bound a swapped
    function meanwhile keeps it: with no capture active it behaves as the original)."""
    global _installed, _users
    with _lock:
        _users = max(0, _users - 1)
        if _users or not _installed:
            return
        for (module, name), original in _saved.items():
            setattr(module, name, original)
        _saved.clear()
        _installed = False


class _DatetimeModule(types.ModuleType):
    """The ``datetime`` module as the application's modules see it: ``datetime`` and
    ``date`` are the captured classes, everything else is the module's own."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_dt, name)


_DATETIME_MODULE = _DatetimeModule("datetime")
_DATETIME_MODULE.datetime = CapturedDatetime  # type: ignore[attr-defined]
_DATETIME_MODULE.date = CapturedDate  # type: ignore[attr-defined]
_STANDARD = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                       "platlib")})


def capture_datetime(modules: Any = None) -> int:
    """Let the application's modules read ``datetime.now()`` and ``date.today()``
    through the capture: their globals bound to ``datetime.datetime``, ``datetime.date``
    or the ``datetime`` module are pointed at the captured stand-ins (which make real
    ``datetime`` objects). The application's modules are the ones loaded from outside
    the standard library, the installed packages and mcpactor; the classes themselves
    are not swapped process-wide (libraries check them strictly). Returns how many
    names were pointed."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    changed = 0
    for module in list((modules if modules is not None else sys.modules).values()):
        path = getattr(module, "__file__", None)
        if not path or not isinstance(module, types.ModuleType):
            continue
        path = os.path.abspath(path)
        if path.startswith(_STANDARD) or path.startswith(here):
            continue
        for name, value in list(vars(module).items()):
            if value is _RealDatetime:
                setattr(module, name, CapturedDatetime)
            elif value is _RealDate:
                setattr(module, name, CapturedDate)
            elif value is _dt:
                setattr(module, name, _DATETIME_MODULE)
            else:
                continue
            changed += 1
    return changed


def installed() -> bool:
    """Whether the swap has been made in this process."""
    return _installed


def real(source: str) -> Callable[..., Any]:
    """The original function behind ``source`` (the runtime's own clocks use these)."""
    return _real[source]
