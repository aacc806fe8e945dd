"""Tasks: requests that run on after their answer (2025-11-25 ``tasks``, and the
2026-07-28 tasks extension, SEP-2663, over the same store and runtime).

:mod:`~mcpactor.tasks.store` keeps them (:class:`TaskStore`, an interface;
:class:`InMemoryTaskStore`, the default), :mod:`~mcpactor.tasks.runtime` runs them for
a receiver (a server's tool calls, a client's sampling and elicitation), and
:mod:`~mcpactor.tasks.handle` follows one from the requestor's side
(:class:`TaskHandle`). The server and client glue map them onto the protocol.
"""

from mcpactor.tasks.runtime import Outcome, Requester, RunningTask, TaskOptions, TaskRuntime
from mcpactor.tasks.store import InMemoryTaskStore, TaskRecord, TaskStore

__all__ = [
    "InMemoryTaskStore",
    "Outcome",
    "Requester",
    "RunningTask",
    "TaskOptions",
    "TaskRecord",
    "TaskRuntime",
    "TaskStore",
]
