"""Middleware: code that wraps every request and notification a server handles.

A middleware is ``async def mw(ctx: MiddlewareContext, call_next) -> result``: it sees
the method, the typed params, the session and (for a request) a :class:`Context`; it
calls ``await call_next(ctx)`` to go on (or ``call_next(ctx.replace(params=...))`` to
change what the handler gets), and returns the result, its own or a changed one. Not
calling ``call_next`` answers without the handler: return a result, or raise an
:class:`~mcpactor.McpError` for an error answer (``ToolError`` in a ``tools/call``:
an ``isError`` result the model reads). They run in the order added, the first one
outermost. Subclass :class:`Middleware` to hook one kind of message
(``on_call_tool``, ``on_read_resource``, ...).

What middleware sees: every request the server's handlers answer (``tools/*``,
``resources/*``, ``prompts/*``, ``completion/complete``, ``logging/setLevel``, custom
methods) and the client notifications the application gets (``roots/list_changed``,
custom ones). ``initialize``, ``ping``, ``notifications/initialized``, cancellations
and progress are answered by the protocol core before any application code runs.
Results reach middleware typed (``tools/call`` as a
:class:`~mcpactor.protocol.types.CallToolResult`); a server without middleware pays
nothing for any of this.

In 2026-07-28 (no session): ``server/discover`` is answered by the protocol core;
every other request goes through the middleware, ``subscriptions/listen`` too (its
``call_next`` returns when the stream ends). ``ctx.session`` is then the transport's
(the stdio pipe's; over HTTP, one per request), so key per-client state on
``ctx.auth`` rather than on it. A handler that asks the client for input the request
did not bring (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) ends this run:
``call_next`` raises :class:`~mcpactor.protocol.mrtr.InputRequired` (an ``McpError``;
let it through), answered after the whole chain as the ``InputRequiredResult``. The
client's retry is a request of its own, with a new id, and runs the chain and the
handler again from the start: middleware runs once per round (``ctx.is_retry`` tells
a retry), as the handler does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs
import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import SERVER_BUSY, McpError
from mcpactor.protocol.jsonrpc import RequestId
from mcpactor.protocol.mrtr import InputRequired
from mcpactor.session.state import SessionAuth

if TYPE_CHECKING:
    from mcpactor.auth.verifier import AccessToken
    from mcpactor.server.app import Server
    from mcpactor.server.context import Context
    from mcpactor.session.context import RequestContext
    from mcpactor.session.session import Session

__all__ = [
    "CallNext",
    "LoggingMiddleware",
    "Middleware",
    "MiddlewareContext",
    "MiddlewareFn",
    "RateLimit",
    "TimingMiddleware",
]

P = TypeVar("P")


@attrs.frozen(kw_only=True)
class MiddlewareContext(Generic[P]):
    """One message on its way to the server's handlers (see the module)."""

    #: ``tools/call``, ``resources/read``, ``notifications/roots/list_changed``, ...
    method: str
    #: The typed params (``CallToolRequestParams`` for ``tools/call``, ...).
    params: P
    #: The session the message arrived on (for a 2026-07-28 request, the transport's:
    #: see the module).
    session: Session
    #: The server handling it (a mounted server's own middleware sees that server).
    server: Server[Any]
    #: The request's id; None for a notification.
    request_id: RequestId | None = None
    #: The params as they came on the wire (``_meta`` included).
    raw_params: dict[str, Any] | None = None
    #: The session-level request (None for a notification).
    request: RequestContext | None = attrs.field(default=None, repr=False)

    @property
    def is_request(self) -> bool:
        """True for a request (it gets an answer), False for a notification."""
        return self.request_id is not None

    @property
    def context(self) -> Context[Any]:
        """The request's :class:`Context` (log to the client, report progress, ...);
        a RuntimeError for a notification, which has no request to talk about."""
        from mcpactor.server.context import Context

        if self.request is None:
            raise RuntimeError(f"{self.method} is a notification: it has no request context")
        return Context(self.request, self.server)

    @property
    def auth(self) -> AccessToken | None:
        """[auth] The caller's validated OAuth token (HTTP with ``auth=``), else None."""
        if self.request is not None:
            return self.context.auth
        state = self.session.state.get(SessionAuth)
        return state.owner if state is not None else None

    @property
    def lifespan(self) -> Any:
        """The server's lifespan state (see ``Server(lifespan=...)``)."""
        return self.server.lifespan_state

    @property
    def client_info(self) -> dict[str, Any]:
        """The client's ``clientInfo`` (from ``initialize``, or a 2026-07-28 request's
        ``_meta``)."""
        if self.request is not None and self.request.modern is not None:
            return self.request.modern.client_info or {}
        return self.session.connection.peer_info or {}

    @property
    def protocol_version(self) -> str | None:
        """The revision the message speaks: the session's, or a 2026-07-28 request's
        own."""
        if self.request is not None:
            return self.request.protocol_version
        return self.session.connection.protocol_version

    @property
    def is_retry(self) -> bool:
        """Whether this request is a 2026-07-28 retry bringing the client's answers to
        an input round (``inputResponses``/``requestState``): the handler runs again
        from the start, and middleware runs again around it."""
        raw = self.raw_params
        return self.request is not None and self.request.modern is not None and \
            raw is not None and ("inputResponses" in raw or "requestState" in raw)

    def replace(self, **changes: Any) -> MiddlewareContext[P]:
        """A copy with ``changes`` (``params=...``): pass it to ``call_next``."""
        return attrs.evolve(self, **changes)


#: What ``call_next`` is: the rest of the chain, then the handler.
CallNext = Callable[[MiddlewareContext[Any]], Awaitable[Any]]
#: A middleware: ``async def mw(ctx, call_next) -> result``.
MiddlewareFn = Callable[[MiddlewareContext[Any], CallNext], Awaitable[Any]]


async def run_chain(middleware: Sequence[MiddlewareFn], ctx: MiddlewareContext[Any],
                    inner: CallNext) -> Any:
    """``ctx`` through ``middleware`` (first outermost), then ``inner``."""
    call: CallNext = inner
    for mw in reversed(middleware):
        call = _link(mw, call)
    return await call(ctx)


def _link(mw: MiddlewareFn, call_next: CallNext) -> CallNext:
    async def step(ctx: MiddlewareContext[Any]) -> Any:
        return await mw(ctx, call_next)

    return step


#: The method hooks of :class:`Middleware`, by method.
_HOOKS = {
    "tools/call": "on_call_tool",
    "tools/list": "on_list_tools",
    "resources/read": "on_read_resource",
    "resources/list": "on_list_resources",
    "resources/templates/list": "on_list_resource_templates",
    "prompts/get": "on_get_prompt",
    "prompts/list": "on_list_prompts",
    "completion/complete": "on_complete",
}


class Middleware:
    """A middleware as a class: override the hooks you need (each ``async def
    hook(ctx, call_next)``, returning what ``call_next`` returned or a result of its
    own). A message goes through ``on_message``, then ``on_request`` or
    ``on_notification``, then its method's hook: ``on_call_tool``, ``on_list_tools``,
    ``on_read_resource``, ``on_list_resources``, ``on_list_resource_templates``,
    ``on_get_prompt``, ``on_list_prompts``, ``on_complete``."""

    async def __call__(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        async def by_kind(ctx: MiddlewareContext[Any]) -> Any:
            if not ctx.is_request:
                return await self.on_notification(ctx, call_next)

            async def by_method(ctx: MiddlewareContext[Any]) -> Any:
                hook = _HOOKS.get(ctx.method)
                if hook is None:
                    return await call_next(ctx)
                fn: MiddlewareFn = getattr(self, hook)
                return await fn(ctx, call_next)

            return await self.on_request(ctx, by_method)

        return await self.on_message(ctx, by_kind)

    async def on_message(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """Every request and notification."""
        return await call_next(ctx)

    async def on_request(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """Every request."""
        return await call_next(ctx)

    async def on_notification(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """Every notification the application gets."""
        return await call_next(ctx)

    async def on_call_tool(self, ctx: MiddlewareContext[t.CallToolRequestParams],
                           call_next: CallNext) -> Any:
        """``tools/call``; the result is a ``CallToolResult``."""
        return await call_next(ctx)

    async def on_list_tools(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """``tools/list``; the result is a ``ListToolsResult``."""
        return await call_next(ctx)

    async def on_read_resource(self, ctx: MiddlewareContext[t.ReadResourceRequestParams],
                               call_next: CallNext) -> Any:
        """``resources/read``; the result is a ``ReadResourceResult``."""
        return await call_next(ctx)

    async def on_list_resources(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """``resources/list``."""
        return await call_next(ctx)

    async def on_list_resource_templates(self, ctx: MiddlewareContext[Any],
                                         call_next: CallNext) -> Any:
        """``resources/templates/list``."""
        return await call_next(ctx)

    async def on_get_prompt(self, ctx: MiddlewareContext[t.GetPromptRequestParams],
                            call_next: CallNext) -> Any:
        """``prompts/get``; the result is a ``GetPromptResult``."""
        return await call_next(ctx)

    async def on_list_prompts(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """``prompts/list``."""
        return await call_next(ctx)

    async def on_complete(self, ctx: MiddlewareContext[t.CompleteRequestParams],
                          call_next: CallNext) -> Any:
        """``completion/complete``."""
        return await call_next(ctx)


def _what(ctx: MiddlewareContext[Any]) -> str:
    name = getattr(ctx.params, "name", None) or getattr(ctx.params, "uri", None)
    return f"{ctx.method} {name}" if name else ctx.method


class LoggingMiddleware(Middleware):
    """Logs each message and how it ended (Python ``logging``; nothing goes to the
    client): ``→ tools/call add (id 3)``, ``← tools/call add ok``."""

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger or logging.getLogger("mcpactor.server.requests")
        self.level = level

    async def on_message(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """Log the message, its outcome and errors."""
        what = _what(ctx)
        self.logger.log(self.level, "session %s → %s%s", ctx.session.id, what,
                        f" (id {ctx.request_id})" if ctx.is_request else "")
        try:
            result = await call_next(ctx)
        except InputRequired as need:
            self.logger.log(self.level, "session %s ← %s input required: %s", ctx.session.id,
                            what, ", ".join(need.requests))
            raise
        except McpError as exc:
            self.logger.log(self.level, "session %s ← %s error %s: %s", ctx.session.id, what,
                            exc.code, exc.message)
            raise
        failed = isinstance(result, t.CallToolResult) and result.is_error
        self.logger.log(self.level, "session %s ← %s %s", ctx.session.id, what,
                        "isError" if failed else "ok")
        return result


class TimingMiddleware(Middleware):
    """Measures how long each request takes (on Trio's clock: virtual under a mock
    clock or a replay) and hands ``(ctx, seconds)`` to ``on_timing`` (default: a log
    line on ``mcpactor.server.timing``)."""

    def __init__(self, on_timing: Callable[[MiddlewareContext[Any], float], None] | None = None,
                 ) -> None:
        self.on_timing = on_timing

    async def on_request(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """Time the rest of the chain."""
        start = trio.current_time()
        try:
            return await call_next(ctx)
        finally:
            elapsed = trio.current_time() - start
            if self.on_timing is not None:
                self.on_timing(ctx, elapsed)
            else:
                logging.getLogger("mcpactor.server.timing").info(
                    "%s took %.3f ms", _what(ctx), elapsed * 1000)


class RateLimited(McpError):
    """A request refused by :class:`RateLimit` (``SERVER_BUSY``, -32005, with
    ``data.retryAfter`` in seconds)."""

    code = SERVER_BUSY


class RateLimit(Middleware):
    """A token bucket per key: ``rate`` requests a second on average, bursts of up to
    ``burst`` (default: ``rate`` rounded up, at least 1). Past it a request is refused
    at once with -32005 ("Rate limit exceeded", ``data.retryAfter``: seconds until a
    token is back), without running. ``key(ctx)`` picks the bucket: per session by
    default; ``lambda ctx: None`` shares one, ``lambda ctx: ctx.auth and
    ctx.auth.subject`` limits per user. ``methods`` limits only those methods (default:
    every request; notifications are never limited). Time is Trio's clock, so tests on
    a mock clock and replays see the same refusals.

    A 2026-07-28 request has no session (over HTTP each is a session of its own): by
    default such requests share a bucket per authenticated principal (``ctx.auth``),
    else one bucket. Each input round's retry is a request of its own and takes a
    token (the handler runs again)."""

    def __init__(
        self,
        rate: float,
        burst: int | None = None,
        *,
        key: Callable[[MiddlewareContext[Any]], Hashable] | None = None,
        methods: Sequence[str] | None = None,
    ) -> None:
        if rate <= 0:
            raise ValueError("RateLimit(rate=...) must be more than 0 requests a second")
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else max(1, math.ceil(rate)))
        if self.burst < 1:
            raise ValueError("RateLimit(burst=...) must be at least 1")
        self.key = key or _default_key
        self.methods = frozenset(methods) if methods is not None else None
        self._buckets: dict[Hashable, tuple[float, float]] = {}
        self._prune_at = 1024

    async def on_request(self, ctx: MiddlewareContext[Any], call_next: CallNext) -> Any:
        """Take a token, or refuse."""
        if self.methods is None or ctx.method in self.methods:
            key = self.key(ctx)
            now = trio.current_time()
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1:
                self._buckets[key] = (tokens, now)
                wait = (1 - tokens) / self.rate
                raise RateLimited("Rate limit exceeded: retry later",
                                  data={"retryAfter": round(wait, 3)})
            self._buckets[key] = (tokens - 1, now)
            if len(self._buckets) > self._prune_at:
                self._prune(now)
        return await call_next(ctx)

    def _prune(self, now: float) -> None:
        # A full bucket holds nothing worth remembering: it would start full anyway.
        self._buckets = {k: (tokens, last) for k, (tokens, last) in self._buckets.items()
                         if tokens + (now - last) * self.rate < self.burst}
        self._prune_at = max(1024, 2 * len(self._buckets))


def _default_key(ctx: MiddlewareContext[Any]) -> Hashable:
    """RateLimit's bucket: the session's; for a 2026-07-28 request (no session), the
    principal's, else the one of every such request."""
    request = ctx.request
    if request is None or request.modern is None:
        return ctx.session.id
    token = ctx.auth
    subject = getattr(token, "subject", None)
    return ("principal", subject) if subject else ("stateless",)


# -- the server's side: a message through the chain ------------------------------------


def _typed(method: str, value: Any) -> Any:
    """A route's wire-form result (the common ``tools/call`` answer is built as a dict)
    as the method's result class, for middleware to read."""
    if isinstance(value, dict):
        from mcpactor.protocol.convert import from_wire
        from mcpactor.protocol.methods import request_spec

        spec = request_spec(method)
        if spec is not None and spec.result_cls is not None:
            return from_wire(value, spec.result_cls)
    return value


async def request_through(server: Server[Any], rc: RequestContext,
                          route: Callable[[RequestContext], Awaitable[Any]]) -> Any:
    """Answer ``rc`` through ``server``'s middleware, then ``route``."""
    from mcpactor.server.handler import ToolError

    async def inner(ctx: MiddlewareContext[Any]) -> Any:
        request = rc if ctx.params is rc.params and ctx.method == rc.method else rc.derived(
            ctx.method, ctx.params)
        return _typed(ctx.method, await route(request))

    ctx: MiddlewareContext[Any] = MiddlewareContext(
        method=rc.method, params=rc.params, session=rc.session, server=server,
        request_id=rc.id, raw_params=rc.raw_params, request=rc)
    try:
        return await run_chain(server.middleware, ctx, inner)
    except ToolError as exc:
        if rc.method != "tools/call":
            raise
        # Refused by a middleware the way a tool refuses: a result the model reads.
        return t.CallToolResult(content=[t.TextContent(text=str(exc))], is_error=True)


async def notification_through(server: Server[Any], session: Session, event: Any,
                               handle: Callable[[Session, Any], Awaitable[None]]) -> None:
    """Hand a client notification to ``handle`` through ``server``'s middleware."""

    async def inner(ctx: MiddlewareContext[Any]) -> None:
        if ctx.params is not event.params or ctx.method != event.method:
            event_ = attrs.evolve(event, method=ctx.method, params=ctx.params)
        else:
            event_ = event
        await handle(session, event_)

    ctx: MiddlewareContext[Any] = MiddlewareContext(
        method=event.method, params=event.params, session=session, server=server,
        raw_params=event.raw_params)
    await run_chain(server.middleware, ctx, inner)
