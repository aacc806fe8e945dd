"""Run a coroutine in the calling task, and learn whether it ever had to wait.

Starting a task costs a spawn and a scheduler pass; most request handlers (a tool that
computes its answer) finish without ever waiting, so running them in the task that
received the request saves both. :func:`run_eagerly` drives the coroutine itself: if
the coroutine finishes without yielding to the scheduler, nothing else happens; the
first time it yields (it waits for something), ``on_block`` is called once, before the
wait begins, so the caller can hand the work it would otherwise do meanwhile to
another task. From then on the coroutine is awaited as usual, in the calling task.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["run_eagerly"]

T = TypeVar("T")


class _Eager:
    __slots__ = ("coro", "on_block")

    def __init__(self, coro: Coroutine[Any, Any, Any], on_block: Callable[[], None]) -> None:
        self.coro = coro
        self.on_block = on_block

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        try:
            signal = coro.send(None)
        except StopIteration as done:
            return done.value
        try:
            self.on_block()
        except BaseException:
            coro.close()
            raise
        # The rest is ``yield from coro`` resumed after its first step: every value the
        # scheduler sends (or exception it throws) goes to the coroutine unchanged.
        while True:
            try:
                value = yield signal
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    signal = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    signal = coro.send(value)
                except StopIteration as done:
                    return done.value


async def run_eagerly(coro: Coroutine[Any, Any, T], on_block: Callable[[], None]) -> T:
    """Await ``coro`` in this task, calling ``on_block()`` the first time it waits."""
    result: T = await _Eager(coro, on_block)
    return result
