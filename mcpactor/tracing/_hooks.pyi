"""Types of the compiled recording hooks (``_hooks.c``; see mcpactor.tracing.hooks)."""

from collections.abc import Callable, Iterator
from typing import Any

class PassHook:
    """The run queue's iteration for one pass, and the clock (hooks.PassHook)."""

    now: float
    fresh: bool
    rec: Any
    order: list[Any]
    current: tuple[int, ...]

    def __init__(self, *, runq: Any, many: Callable[[list[Any]], list[Any]],
                 coin: Callable[[], float], keep: Any, trio_run: Any,
                 inner: Callable[[], float] | None, offset: float,
                 virtual_now: Callable[[], float], trio_state: dict[str, Any],
                 chunk_items: int, task_type: type, root_type: type,
                 table_type: type) -> None: ...
    def __call__(self) -> Iterator[Any]: ...
    def bind(self, rec: Any, /) -> None: ...
    def current_time(self) -> float: ...

class SpawnHook:
    """tasks.Naming.task_spawned for a recording's table."""

    def __init__(self, *, track: Any, ctx_get: Callable[..., Any], trio_state: dict[str, Any],
                 python: Callable[[Any], None], task_type: type, root_type: type,
                 table_type: type) -> None: ...
    def task_spawned(self, task: Any, /) -> None: ...
    def route(self, spawned: dict[Any, None], general: Callable[..., None], /) -> None: ...
    def call(self, hookname: str, /, *args: Any) -> None: ...

def pack(first_seq: int, items: list[Any], fallback: Callable[[Any], bytes], /) -> bytes:
    """A chunk of records for the trace sink."""

def unpack(data: bytes, loads: Callable[[bytes], Any], /) -> tuple[int, list[Any]]:
    """What pack() made."""
