"""What a client answers when the server asks: the handler types, the context a handler
may take, and the check of a handler's signature when it is registered.

A sampling or elicitation handler is called as ``handler(params)`` or
``handler(params, ctx)``, whichever it takes; a roots provider as ``provider()`` or
``provider(ctx)``; a notification callback as ``callback(params)``. Any of them may be
a coroutine function or a plain one. One that can be called none of these ways is a
TypeError naming it when :class:`ClientHandlers` is built, not an internal error the
server's model reads later.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from mcpactor.protocol import types as t

if TYPE_CHECKING:
    from mcpactor.session.context import RequestContext

__all__ = [
    "ElicitationHandler",
    "HandlerContext",
    "NotificationCallback",
    "RootsProvider",
    "SamplingHandler",
]


class HandlerContext:
    """The server's request a client handler is answering: its id, ``_meta``, whether
    it was cancelled, and the session it came on; ``report_progress`` if the server
    asked for progress."""

    __slots__ = ("_rc",)

    def __init__(self, rc: RequestContext) -> None:
        self._rc = rc

    @property
    def request_id(self) -> str | int:
        """The JSON-RPC id of the server's request."""
        return self._rc.id

    @property
    def method(self) -> str:
        """The request's method (``sampling/createMessage``, ``elicitation/create``...)."""
        return self._rc.method

    @property
    def meta(self) -> dict[str, Any] | None:
        """The request's ``_meta``."""
        return self._rc.meta

    @property
    def cancelled(self) -> bool:
        """Whether the server cancelled the request."""
        return self._rc.cancelled

    @property
    def session_id(self) -> str:
        """The client session's id (as traces name it)."""
        return self._rc.session.id

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version."""
        return self._rc.session.connection.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's ``serverInfo``."""
        return self._rc.session.connection.peer_info or {}

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Report progress on the server's request, if it asked for it."""
        return await self._rc.report_progress(progress, total, message)


SamplingAnswer: TypeAlias = t.CreateMessageResult | dict[str, Any]
ElicitationAnswer: TypeAlias = t.ElicitResult | dict[str, Any]

#: ``async def handler(params[, ctx]) -> CreateMessageResult``.
SamplingHandler: TypeAlias = (
    Callable[[t.CreateMessageRequestParams, HandlerContext], Awaitable[SamplingAnswer]]
    | Callable[[t.CreateMessageRequestParams], Awaitable[SamplingAnswer]]
)
#: ``async def handler(params[, ctx]) -> ElicitResult``; ``params`` is form or URL mode.
ElicitationHandler: TypeAlias = (
    Callable[[t.ElicitRequestParams, HandlerContext], Awaitable[ElicitationAnswer]]
    | Callable[[t.ElicitRequestParams], Awaitable[ElicitationAnswer]]
)
#: A list of roots, or ``async def provider([ctx]) -> list[Root]``.
RootsProvider: TypeAlias = (
    list[t.Root]
    | Callable[[], Awaitable[list[t.Root]]]
    | Callable[[HandlerContext], Awaitable[list[t.Root]]]
)
#: ``callback(params)``, a coroutine function or a plain one.
NotificationCallback: TypeAlias = Callable[[Any], Awaitable[None] | None]

#: Per handler field: how it is called, for the message of a handler that cannot be.
EXPECTED: dict[str, str] = {
    "sampling": "async def sampling(params: CreateMessageRequestParams, "
                "ctx: HandlerContext) -> CreateMessageResult (ctx optional)",
    "elicitation": "async def elicitation(params: ElicitRequestParams, "
                   "ctx: HandlerContext) -> ElicitResult (ctx optional)",
    "roots": "a list of Root, or async def roots(ctx: HandlerContext) -> list[Root] "
             "(ctx optional)",
    "notification": "a callback(params) (async or not)",
}


def positional_count(fn: Any, field: str, choices: tuple[int, ...]) -> int:
    """How many positional arguments to call ``fn`` with: the first of ``choices`` it
    accepts; TypeError naming the handler and the expected signature if none."""
    expected = EXPECTED["notification" if field.startswith("on_") else field]
    name = getattr(fn, "__qualname__", None) or repr(fn)
    if not callable(fn):
        raise TypeError(f"ClientHandlers({field}=...) takes {expected}, not "
                        f"{type(fn).__name__} {fn!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have none: take the first choice
        return choices[0]
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    star = any(p.kind is p.VAR_POSITIONAL for p in params)
    keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if not keyword_only:
        for n in choices:
            if len(required) <= n and (len(positional) >= n or star):
                return n
    if keyword_only:
        why = f"it needs keyword-only argument(s) {', '.join(keyword_only)}"
    elif len(required) > max(choices):
        why = f"it needs {len(required)} positional arguments"
    elif not positional:
        why = "it takes no arguments"
    else:
        why = f"it takes at most {len(positional)} positional argument(s)"
    shown = sig.replace(return_annotation=inspect.Signature.empty)
    raise TypeError(f"ClientHandlers({field}=...): {name}{shown} cannot be called as the "
                    f"handler is ({why}); expected {expected}")


async def call(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Call a handler and await what it returns when it is awaitable."""
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
