"""The request tracker: our outbound requests waiting for answers, with their timeouts.

A waiter is resolved by the reader when the response arrives; its timeout is a Trio
cancel scope deadline (Trio's scheduler is the timer wheel) that progress pushes back,
never past the hard maximum.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from mcpactor.protocol.errors import McpError
from mcpactor.protocol.jsonrpc import RequestId

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]


@attrs.frozen
class Timeout:
    """How long to wait for an answer.

    ``seconds``: the deadline, counted from the request or from the latest progress
    when ``reset_on_progress``; ``maximum``: the hard limit from the request, whatever
    progress says. Either may be None (no limit).
    """

    seconds: float | None = None
    reset_on_progress: bool = True
    maximum: float | None = None


@attrs.define(slots=True, eq=False)
class Waiter:
    """One outbound request waiting for its answer."""

    id: RequestId
    method: str
    timeout: Timeout
    on_progress: ProgressCallback | None
    started: float
    event: trio.Event = attrs.Factory(trio.Event)
    result: Any = None
    error: McpError | None = None
    scope: trio.CancelScope | None = None
    #: Progress callbacks queued on the notifier and not yet run; the caller waits for
    #: them before returning, so every progress seen on the wire was reported first.
    progress_pending: int = 0
    progress_done: trio.Event | None = None

    def progress_ran(self) -> None:
        """One queued progress callback finished (or was abandoned)."""
        self.progress_pending -= 1
        if self.progress_pending == 0 and self.progress_done is not None:
            self.progress_done.set()

    @property
    def hard_deadline(self) -> float:
        """The absolute time past which no progress extends the wait."""
        m = self.timeout.maximum
        return math.inf if m is None else self.started + m

    def deadline_from(self, now: float) -> float:
        """The deadline if the clock were restarted at ``now``."""
        s = self.timeout.seconds
        soft = math.inf if s is None else now + s
        return min(soft, self.hard_deadline)


class RequestTracker:
    """Outbound ids → waiters. Owned by the session; the reader resolves, callers wait."""

    def __init__(self) -> None:
        self._waiters: dict[RequestId, Waiter] = {}

    def __len__(self) -> int:
        return len(self._waiters)

    def add(self, waiter: Waiter) -> None:
        """Register a request before its bytes are sent (its answer may come at once)."""
        self._waiters[waiter.id] = waiter

    def get(self, rid: RequestId) -> Waiter | None:
        """The waiter for ``rid``, if still waiting."""
        return self._waiters.get(rid)

    def resolve(self, rid: RequestId, result: Any) -> Waiter | None:
        """Deliver a result; returns the waiter, or None if nobody waits any more."""
        w = self._waiters.pop(rid, None)
        if w is not None:
            w.result = result
            w.event.set()
        return w

    def fail(self, rid: RequestId, error: McpError) -> Waiter | None:
        """Deliver an error; returns the waiter, or None if nobody waits any more."""
        w = self._waiters.pop(rid, None)
        if w is not None:
            w.error = error
            w.event.set()
        return w

    def discard(self, rid: RequestId) -> None:
        """Stop tracking (the caller gave up)."""
        self._waiters.pop(rid, None)

    def fail_all(self, error: McpError) -> list[RequestId]:
        """The session ended: every waiter gets ``error``."""
        ids = list(self._waiters)
        for rid in ids:
            self.fail(rid, error)
        return ids
