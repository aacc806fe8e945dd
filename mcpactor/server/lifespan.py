"""A server's lifespan: startup state (a database pool, an HTTP client) that handlers
reach through ``ctx.lifespan``, entered once however many sessions are served.

``Server(lifespan=fn)`` takes ``fn(server)`` (or ``fn()``) returning an async context
manager; what it yields is the state. Every way of serving enters it
(:meth:`Server.running`): ``run``, ``serve_stdio``, ``serve_http``,
``serve_websocket``, ``serve``, ``asgi_app`` (on the ASGI lifespan),
``mcpactor.testing.open_client`` and the replayer. Entered again while running (a
session served inside ``serve_http``, a second ``open_client``), it is shared, not run
twice: the entry that started it closes it once the last user is gone, so a database
pool outlives every session that uses it.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Generic, TypeVar

import trio

__all__ = ["Lifespan", "LifespanNotRunning", "LifespanRunner"]

S = TypeVar("S")

#: ``fn(server)`` or ``fn()`` returning an async context manager that yields the state.
Lifespan = Callable[..., AbstractAsyncContextManager[S]]


class LifespanNotRunning(RuntimeError):
    """``ctx.lifespan`` (or ``server.lifespan_state``) read while the lifespan is not
    entered: the server is used without one of the ways of serving it."""


def _takes_server(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    return bool(positional) or any(p.kind is p.VAR_POSITIONAL for p in params)


class LifespanRunner(Generic[S]):
    """Runs one server's lifespan functions, shared by every concurrent user.

    ``user`` is the server's own lifespan, whose value is the state; ``hooks`` run
    after it, in order (what mounted servers and proxies need). The first entry owns the
    context managers: it runs them in its own task (a nursery opened by a lifespan
    must be left in the task that opened it) and, on its way out, waits for the other
    users to leave before closing them.
    """

    def __init__(self, owner: Any, user: Lifespan[Any] | None = None) -> None:
        self.owner = owner
        self.user = user
        self.hooks: list[Callable[..., AbstractAsyncContextManager[Any]]] = []
        self.state: Any = None
        self.users = 0
        self._started: trio.Event | None = None
        self._failed: BaseException | None = None
        self._idle: trio.Event | None = None
        self._closing: trio.Event | None = None

    @property
    def active(self) -> bool:
        """Whether the lifespan is entered (startup complete, not closing)."""
        return (self._started is not None and self._started.is_set()
                and self._failed is None and self._closing is None)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Any]:
        """Enter the lifespan, or share it when it is already entered."""
        while self._closing is not None:
            # Closing: its state is going away; once it is gone, start it again.
            await self._closing.wait()
        if self._started is not None:
            # Starting or running already: wait for startup, then share it.
            await self._started.wait()
            if self._failed is not None:
                raise RuntimeError(
                    f"the lifespan of {self._name()} failed to start") from self._failed
            self.users += 1
            try:
                yield self.state
            finally:
                self.users -= 1
                if self.users == 0 and self._idle is not None:
                    self._idle.set()
            return
        self._started = started = trio.Event()
        self._failed = None
        self.users = 1
        closing = trio.Event()
        try:
            async with AsyncExitStack() as stack:
                try:
                    if self.user is not None:
                        self.state = await stack.enter_async_context(self._call(self.user))
                    for hook in self.hooks:
                        await stack.enter_async_context(self._call(hook))
                except BaseException as exc:
                    self._failed = exc
                    raise
                finally:
                    started.set()
                try:
                    yield self.state
                finally:
                    self.users -= 1
                    if self.users:
                        # Others still serve with it (sessions of the same server started
                        # beside this one): their state must not close under them.
                        self._idle = trio.Event()
                        with trio.CancelScope(shield=True):
                            await self._idle.wait()
                    self._closing = closing
        finally:
            self._started = None
            self._idle = None
            self.state = None
            self._closing = None
            closing.set()

    def _call(self, fn: Lifespan[Any]) -> AbstractAsyncContextManager[Any]:
        cm = fn(self.owner) if _takes_server(fn) else fn()
        if not hasattr(cm, "__aenter__"):
            if inspect.iscoroutine(cm):
                cm.close()  # never to be awaited: say why instead
            raise TypeError(
                f"the lifespan {getattr(fn, '__qualname__', fn)!r} of {self._name()} returned "
                f"{type(cm).__name__}, not an async context manager: decorate it with "
                "@contextlib.asynccontextmanager")
        return cm

    def _name(self) -> str:
        info = getattr(self.owner, "info", None)
        return f"server {getattr(info, 'name', self.owner)!r}"

    def require(self) -> Any:
        """The state (None for a server without a lifespan of its own), or
        :class:`LifespanNotRunning` naming the fix."""
        if self.user is None:
            return None
        if not self.active:
            raise LifespanNotRunning(
                f"the lifespan of {self._name()} is not running: serve the server with "
                "run(), serve_stdio(), serve_http(), serve_websocket(), serve(), "
                "asgi_app() or mcpactor.testing.open_client(), or enter "
                "`async with server.running():` around it")
        return self.state
