"""Shared state: the interface every scale-out feature stores through, and its in-memory
implementation.

A deployment of several workers (processes, hosts) shares one store: Redis in
production (:mod:`.redis_state`), :class:`MemoryState` for workers in one process
(tests, a single-process deployment that wants the same code path). What the store
offers is deliberately small, so that any backend with these five kinds of operation
can carry it:

- keys with a time to live (``get``, ``set``, ``compare_and_set``, ``delete``, ``touch``);
- append-only logs with a bounded length and a time to live (``append``,
  ``append_many``, ``read_range``, ``read_new``), each entry a dict of byte strings
  under an id that orders it after every earlier entry of its log;
- fire-and-forget broadcast (``publish``, ``subscribe``): only the subscribers of the
  moment hear a message.

Every operation either completes or raises :class:`SharedStateError` within the
store's own time bound: a store that is down is an error with its name and address,
never a hang.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol, runtime_checkable

import trio

__all__ = ["Append", "Entry", "MemoryState", "SharedState", "SharedStateError"]

#: One log entry: its id and its fields.
Entry = tuple[str, dict[str, bytes]]
#: One append of :meth:`SharedState.append_many`: the log, the fields, ``max_len`` and
#: ``ttl`` (as :meth:`SharedState.append` takes them).
Append = tuple[str, Mapping[str, bytes], int, "float | None"]


class SharedStateError(Exception):
    """The shared store could not do an operation (unreachable, timed out, refused);
    the message names the store and what failed."""


@runtime_checkable
class SharedState(Protocol):
    """What scale-out needs from a shared store (see the module's docstring)."""

    #: Where the store is, for messages (``redis://host:port/db``, ``memory``).
    name: str

    async def get(self, key: str) -> bytes | None:
        """The value of ``key``, None when absent or expired."""
        ...

    async def set(
        self, key: str, value: bytes, *, ttl: float | None = None, only_if_absent: bool = False
    ) -> bool:
        """Store ``value`` (for ``ttl`` seconds); with ``only_if_absent`` only when the key
        does not exist. Whether it was stored."""
        ...

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes, *, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if the key holds ``expected`` (None: absent); atomic."""
        ...

    async def delete(self, *keys: str) -> None:
        """Remove keys (and logs)."""
        ...

    async def touch(self, key: str, ttl: float) -> None:
        """Give a key (or a log) ``ttl`` more seconds to live from now."""
        ...

    async def append(
        self, log: str, fields: Mapping[str, bytes], *, max_len: int, ttl: float | None = None
    ) -> str:
        """Add an entry to ``log``, keeping about its last ``max_len`` entries, and give
        the log ``ttl`` seconds to live; the new entry's id."""
        ...

    async def append_many(self, appends: Sequence[Append]) -> list[str]:
        """Several appends (to one log or several) in one round trip, done in order; the
        new entries' ids. Either all are done or it raises (a store that failed midway
        may have done the first ones: the caller treats them all as failed)."""
        ...

    async def read_range(self, log: str, after: str = "0", count: int | None = None) -> list[Entry]:
        """The entries of ``log`` after id ``after`` (``"0"``: from the start), oldest first."""
        ...

    async def read_new(self, log: str, after: str, timeout: float) -> list[Entry]:
        """The entries after ``after``, waiting up to ``timeout`` seconds for one to
        come; ``[]`` when none came. ``after="$"`` means from now on."""
        ...

    async def publish(self, channel: str, data: bytes) -> None:
        """Send ``data`` to the current subscribers of ``channel``."""
        ...

    def subscribe(self, channel: str) -> AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """``async with state.subscribe(ch) as messages: async for data in messages``.
        The iteration raises :class:`SharedStateError` when the store is lost."""
        ...

    async def aclose(self) -> None:
        """Release the store's connections."""
        ...


class _Log:
    __slots__ = ("changed", "entries", "expires", "next")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.next = 0
        self.expires = math.inf
        self.changed = trio.Event()


def _entry_no(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


class MemoryState:
    """:class:`SharedState` in this process's memory: several apps in one Trio run
    (tests; a one-process deployment) share it like workers share Redis."""

    name = "memory"

    def __init__(self) -> None:
        self._values: dict[str, tuple[bytes, float]] = {}
        self._logs: dict[str, _Log] = {}
        self._subscribers: dict[str, set[trio.MemorySendChannel[bytes]]] = {}

    # -- keys -------------------------------------------------------------------------

    def _live(self, key: str) -> bytes | None:
        item = self._values.get(key)
        if item is None:
            return None
        if item[1] <= trio.current_time():
            del self._values[key]
            return None
        return item[0]

    @staticmethod
    def _deadline(ttl: float | None) -> float:
        return math.inf if ttl is None else trio.current_time() + ttl

    async def get(self, key: str) -> bytes | None:
        """See :meth:`SharedState.get`."""
        await trio.lowlevel.checkpoint()
        return self._live(key)

    async def set(
        self, key: str, value: bytes, *, ttl: float | None = None, only_if_absent: bool = False
    ) -> bool:
        """See :meth:`SharedState.set`."""
        await trio.lowlevel.checkpoint()
        if only_if_absent and self._live(key) is not None:
            return False
        self._values[key] = (bytes(value), self._deadline(ttl))
        return True

    async def compare_and_set(
        self, key: str, expected: bytes | None, value: bytes, *, ttl: float | None = None
    ) -> bool:
        """See :meth:`SharedState.compare_and_set`."""
        await trio.lowlevel.checkpoint()
        if self._live(key) != expected:
            return False
        self._values[key] = (bytes(value), self._deadline(ttl))
        return True

    async def delete(self, *keys: str) -> None:
        """See :meth:`SharedState.delete`."""
        await trio.lowlevel.checkpoint()
        for key in keys:
            self._values.pop(key, None)
            self._logs.pop(key, None)

    async def touch(self, key: str, ttl: float) -> None:
        """See :meth:`SharedState.touch`."""
        await trio.lowlevel.checkpoint()
        value = self._live(key)
        if value is not None:
            self._values[key] = (value, self._deadline(ttl))
        log = self._log(key, create=False)
        if log is not None:
            log.expires = self._deadline(ttl)

    # -- logs -------------------------------------------------------------------------

    def _log(self, key: str, *, create: bool) -> _Log | None:
        log = self._logs.get(key)
        if log is not None and log.expires <= trio.current_time():
            del self._logs[key]
            log = None
        if log is None and create:
            log = self._logs[key] = _Log()
        return log

    async def append(
        self, log: str, fields: Mapping[str, bytes], *, max_len: int, ttl: float | None = None
    ) -> str:
        """See :meth:`SharedState.append`."""
        await trio.lowlevel.checkpoint()
        entries = self._log(log, create=True)
        assert entries is not None
        entries.next += 1
        entry_id = f"{entries.next}-0"
        entries.entries.append((entry_id, {k: bytes(v) for k, v in fields.items()}))
        if len(entries.entries) > max_len:
            del entries.entries[: len(entries.entries) - max_len]
        if ttl is not None:
            entries.expires = self._deadline(ttl)
        entries.changed.set()
        entries.changed = trio.Event()
        return entry_id

    async def append_many(self, appends: Sequence[Append]) -> list[str]:
        """See :meth:`SharedState.append_many`."""
        return [await self.append(log, fields, max_len=max_len, ttl=ttl)
                for log, fields, max_len, ttl in appends]

    async def read_range(self, log: str, after: str = "0", count: int | None = None) -> list[Entry]:
        """See :meth:`SharedState.read_range`."""
        await trio.lowlevel.checkpoint()
        entries = self._log(log, create=False)
        if entries is None:
            return []
        floor = _entry_no(after)
        out = [e for e in entries.entries if _entry_no(e[0]) > floor]
        return out if count is None else out[:count]

    async def read_new(self, log: str, after: str, timeout: float) -> list[Entry]:
        """See :meth:`SharedState.read_new`."""
        entries = self._log(log, create=True)
        assert entries is not None
        if after == "$":
            after = f"{entries.next}-0"
        with trio.move_on_after(timeout):
            while True:
                found = await self.read_range(log, after)
                if found:
                    return found
                current = self._log(log, create=True)
                assert current is not None
                await current.changed.wait()
        return []

    # -- broadcast --------------------------------------------------------------------

    async def publish(self, channel: str, data: bytes) -> None:
        """See :meth:`SharedState.publish`."""
        await trio.lowlevel.checkpoint()
        for sub in list(self._subscribers.get(channel, ())):
            try:
                sub.send_nowait(bytes(data))
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # a subscriber that cannot keep up misses messages, as with Redis

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        """See :meth:`SharedState.subscribe`."""
        send, receive = trio.open_memory_channel[bytes](1000)
        subs = self._subscribers.setdefault(channel, set())
        subs.add(send)
        try:
            async with receive:
                yield receive.__aiter__()
        finally:
            subs.discard(send)
            if not subs:
                self._subscribers.pop(channel, None)

    async def aclose(self) -> None:
        """Nothing to release."""
        await trio.lowlevel.checkpoint()
