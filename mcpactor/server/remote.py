"""Proxying: a remote MCP server (a command over stdio, an http(s):// or ws(s):// URL,
or a :class:`Server` in the same process) served as a local one, through mcpactor's
own client.

``Server.as_proxy(target)`` (or :func:`proxy`) is a server whose every tool, resource,
template and prompt is the remote one's; ``server.mount(RemoteServer(target),
prefix="x")`` puts them beside a server's own. Each client session of the proxy gets
its own upstream session, opened on its first request and closed when it ends, so what
the remote server asks back (sampling, elicitation, roots) reaches the client that
caused it, with the capabilities that client declared; progress, log messages,
list-changed and resource-updated notifications come back the same way, and a
cancelled request is cancelled upstream. Errors keep their codes. Listing asks the
remote server every time (nothing is cached, so its changes show at once). An
upstream that cannot be reached is an error (-32603) naming it, and the next request
tries again.

Either side may speak a handshake revision or 2026-07-28 (the upstream client
connects with ``mode="auto"`` unless ``mode=`` pins it). What the remote server asks
is asked of the proxy's client through the :class:`Context` of the request that
caused it (:meth:`Context.relay`): a request in a handshake session, the proxy's own
input round in a 2026-07-28 request (the proxy's handler runs again on the client's
retry and asks the remote server again, answering its questions at once). A
2026-07-28 request has no session of its own: see :meth:`RemoteServer._lease` for the
upstream connection it uses.

A proxy records like any server, but its replay cannot be exact: the remote server's
answers come from outside the recorded run (``mcpactor replay --against`` checks one).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol import modern
from mcpactor.protocol import types as t
from mcpactor.protocol.errors import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND_LEGACY,
    CapabilityNotSupported,
    ConnectionClosed,
    InternalError,
    LocalProtocolError,
    MethodNotFound,
    RequestError,
    ResourceNotFound,
)
from mcpactor.protocol.lifecycle import State
from mcpactor.protocol.mrtr import InputRequired
from mcpactor.server.compose import prefix_uri
from mcpactor.server.context import LOG_LEVELS, Context, session_state
from mcpactor.server.lifespan import LifespanNotRunning
from mcpactor.session.context import RequestContext
from mcpactor.session.session import Session
from mcpactor.tracing.tasks import NOBODY, TRACK

if TYPE_CHECKING:
    from mcpactor.client.client import Client, ClientHandlers
    from mcpactor.server.app import Server

__all__ = ["RemoteServer", "proxy"]

log = logging.getLogger("mcpactor.server.remote")

#: Our client capabilities for each input request we can pass on.
_INPUT_CAPS = {"sampling": "sampling", "elicitation": "elicitation", "roots": "roots"}
#: Idle upstream handshake sessions kept per set of capabilities (see _lease).
_MAX_IDLE = 4
#: ``_meta`` keys of a 2026-07-28 request that describe the proxy's own client: the
#: upstream request carries the proxy's (and, for the client's own choices, see
#: _outgoing), never these as they came.
_MODERN_META = frozenset({
    modern.META_PROTOCOL_VERSION, modern.META_CLIENT_CAPABILITIES, modern.META_CLIENT_INFO,
    modern.META_LOG_LEVEL,
})
#: What a 2026-07-28 server stamps on its results (resultType, caching hints): the proxy
#: stamps its own.
_RESULT_STAMPS = frozenset({"resultType", "ttlMs", "cacheScope"})


class _Call:
    """One request of the proxy's client being answered upstream: the request, its
    :class:`Context` (what the remote server asks back is asked of the client through
    it), the task waiting for the upstream answer, and, when an input round of a
    2026-07-28 request ends that wait from another task, the round."""

    __slots__ = ("ctx", "need", "rc", "scope", "task")

    def __init__(self, rc: RequestContext, ctx: Context[Any]) -> None:
        self.rc = rc
        self.ctx = ctx
        self.task = trio.lowlevel.current_task()
        self.scope = trio.CancelScope()
        self.need: InputRequired | None = None


#: The call the current task is answering upstream (a 2026-07-28 upstream's input rounds
#: are answered in the caller's task, so its questions find their call exactly).
_CALL: ContextVar[_Call | None] = ContextVar("mcpactor_proxy_call", default=None)


class _Upstream:
    """One connection to the remote server: a client session's own (``session``), or
    one serving 2026-07-28 requests of the proxy's clients."""

    __slots__ = ("calls", "caps", "client", "done", "error", "listened", "listener", "ready",
                 "session")

    def __init__(self, session: Session | None, caps: frozenset[str]) -> None:
        #: The client session it belongs to; None for one serving 2026-07-28 requests.
        self.session = session
        #: The input capabilities it declared (sampling, elicitation, roots).
        self.caps = caps
        #: The requests being answered on it now: what the remote server asks or says
        #: meanwhile belongs to the one, when there is one (over HTTP it then rides that
        #: request's stream).
        self.calls: list[_Call] = []
        self.ready = trio.Event()
        self.done = trio.Event()
        self.client: Client | None = None
        self.error: BaseException | None = None
        #: A handshake client session's resource subscriptions, when the remote server
        #: speaks 2026-07-28: heard through one ``subscriptions/listen`` upstream.
        self.listened: frozenset[str] = frozenset()
        self.listener: trio.CancelScope | None = None

    def lone_call(self) -> _Call | None:
        """The one request in flight on it (None: none, or several)."""
        return self.calls[0] if len(self.calls) == 1 else None


def _label(target: Any) -> str:
    from mcpactor.server.app import Server

    if isinstance(target, Server):
        return f"{target.info.name!r} (a server of this process)"
    if isinstance(target, str):
        return target
    return " ".join(shlex.quote(part) for part in target)


def _speaks_modern(client: Client) -> bool:
    """Whether the upstream connection speaks 2026-07-28 (stateless)."""
    return client.session.connection.modern_meta is not None


def _rank(level: str) -> int:
    return LOG_LEVELS.index(level) if level in LOG_LEVELS else 0


def _input_caps(caps: dict[str, Any]) -> frozenset[str]:
    """The input requests a client can answer: ``sampling``, ``elicitation`` (and
    ``elicitation.url`` for URL mode), ``roots``."""
    names = {name for name in _INPUT_CAPS if name in caps}
    elicitation = caps.get("elicitation")
    if isinstance(elicitation, dict) and "url" in elicitation:
        names.add("elicitation.url")
    return frozenset(names)


#: A connection that can answer every client's input requests.
_ALL_INPUTS = frozenset({*_INPUT_CAPS, "elicitation.url"})


class RemoteServer:
    """A remote MCP server to mount (``server.mount(RemoteServer(target), prefix=...)``):
    see the module. ``options`` go to the ``connect_*`` function the target calls for
    (``headers``, ``auth``, ``timeout``, ``env``, ``cwd``, ``tls``, ``mode``, ...)."""

    remote = True

    def __init__(self, target: str | Sequence[str] | Server[Any], **options: Any) -> None:
        from mcpactor.server.app import Server

        if isinstance(target, str):
            if not target.startswith(("http://", "https://", "ws://", "wss://")):
                command = shlex.split(target)
                if not command:
                    raise ValueError("proxy target is empty: give a command line or a URL")
        elif not isinstance(target, Server):
            if not list(target):
                raise ValueError("proxy target is empty: give a command line or a URL")
            target = list(target)
        if "handlers" in options:
            raise TypeError("a proxy makes its own client handlers (it forwards what the "
                            "remote server asks to the client that caused it)")
        self.target = target
        self.options = options
        self.prefix: str | None = None
        #: Mounted in a server (once only: one nursery of upstream sessions).
        self.mounted = False
        #: The server it is mounted in.
        self.parent: Server[Any] | None = None
        self.label = _label(target)
        self._nursery: trio.Nursery | None = None
        #: Each handshake client session's own upstream session.
        self._by_session: dict[Session, _Upstream] = {}
        #: The one connection 2026-07-28 requests share when the remote server speaks
        #: 2026-07-28 too (stateless: each request carries its client's capabilities).
        self._shared: _Upstream | None = None
        #: Idle upstream handshake sessions for 2026-07-28 requests, by capabilities.
        self._idle: dict[frozenset[str], list[_Upstream]] = {}
        #: Whether the remote server speaks 2026-07-28 (None: not connected yet).
        self._modern: bool | None = None
        #: The first connection for 2026-07-28 requests while it connects (it tells
        #: which revision the remote server speaks).
        self._probe: _Upstream | None = None
        #: The connection whose list changes are told to the parent's listeners.
        self._announcer: _Upstream | None = None

    # -- lifetime ------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Own the upstream sessions' tasks for as long as the proxy is served."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                yield
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel()

    def _connect(self, handlers: ClientHandlers) -> AbstractAsyncContextManager[Client]:
        from mcpactor.client import connect_http, connect_stdio, connect_websocket
        from mcpactor.server.app import Server

        target = self.target
        if isinstance(target, Server):
            from mcpactor.testing.client import open_client

            return open_client(target, handlers=handlers, **self.options)
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            return connect_http(target, handlers=handlers, **self.options)
        if isinstance(target, str) and target.startswith(("ws://", "wss://")):
            return connect_websocket(target, handlers=handlers, **self.options)
        command = shlex.split(target) if isinstance(target, str) else list(target)
        return connect_stdio(command, handlers=handlers, **self.options)

    @asynccontextmanager
    async def _lease(self, rc: RequestContext) -> AsyncIterator[_Upstream]:
        """The upstream connection that answers ``rc``.

        A handshake session has its own, opened on first use and closed with it, which
        declares that session's capabilities. A 2026-07-28 request has no session: when
        the remote server speaks 2026-07-28 too, all such requests share one connection
        (each carries its client's capabilities in ``_meta``); when it speaks only the
        handshake revisions, each takes an upstream session that declared the same
        capabilities to itself for as long as it runs (what the remote server asks
        meanwhile is then this request's alone), kept afterwards for the next."""
        if rc.modern is None:
            up = self._by_session.get(rc.session)
            if up is None or not self._usable(up):
                up = self._by_session[rc.session] = _Upstream(
                    rc.session, _input_caps(rc.peer_capabilities))
                self._start(up)
            yield await self._ready(up)
            return
        while self._modern is not False:
            shared = self._shared
            if shared is not None and self._usable(shared):
                yield await self._ready(shared)
                return
            probe = self._probe
            if probe is not None:
                # Another request is connecting first: its outcome decides.
                await self._ready(probe)
                continue
            # The remote server's revision is not known yet (or it speaks 2026-07-28 and
            # its connection ended): a connection that can answer any client's inputs.
            probe = self._probe = _Upstream(None, _ALL_INPUTS)
            self._start(probe)
            try:
                await self._ready(probe)
            finally:
                self._probe = None
            assert probe.client is not None
            self._modern = _speaks_modern(probe.client)
            if probe.done.is_set():
                continue  # it ended at once: connect again
            if self._modern:
                self._shared = probe
            else:
                # A handshake server: this one joins the idle sessions of its
                # capabilities.
                self._idle.setdefault(probe.caps, []).append(probe)
        caps = _input_caps(rc.peer_capabilities)
        idle = self._idle.setdefault(caps, [])
        found: _Upstream | None = None
        while idle and found is None:
            candidate = idle.pop()
            if self._usable(candidate):
                found = candidate
        if found is not None:
            up = found
        else:
            up = _Upstream(None, caps)
            self._start(up)
        try:
            yield await self._ready(up)
        finally:
            if not up.done.is_set():
                if len(idle) < _MAX_IDLE:
                    idle.append(up)
                else:
                    up.done.set()

    def _start(self, up: _Upstream) -> None:
        nursery = self._nursery
        if nursery is None:
            raise LifespanNotRunning(
                f"the proxy of {self.label} is not running: serve it with run(), "
                "serve_*(), asgi_app() or open_client(), or enter `async with "
                "server.running():`")
        # The upstream conversation is not part of this server's recording: its tasks are
        # not the session's (the remote server's answers come from outside). Nor is it
        # any request's (what it asks finds its request itself).
        track, call = TRACK.set(NOBODY), _CALL.set(None)
        try:
            nursery.start_soon(self._hold, up)
        finally:
            _CALL.reset(call)
            TRACK.reset(track)

    async def _ready(self, up: _Upstream) -> _Upstream:
        await up.ready.wait()
        if up.client is None:
            raise InternalError(f"cannot reach the proxied server {self.label}: {up.error}",
                                data={"upstream": self.label})
        return up

    async def _hold(self, up: _Upstream) -> None:
        try:
            async with self._connect(self._handlers(up)) as client:
                up.client = client
                up.ready.set()
                async with trio.open_nursery() as watch:
                    # Until either side ends: the client session, or the remote one (then
                    # the next request connects again).
                    if up.session is not None:
                        watch.start_soon(_set_when, up.session.closed, up.done)
                    watch.start_soon(_set_when, client.session.closed, up.done)
                    await up.done.wait()
                    watch.cancel_scope.cancel()
        except Exception as exc:
            up.error = exc
            log.warning("proxy to %s: %s", self.label, exc)
        finally:
            up.done.set()
            up.ready.set()
            self._forget(up)

    def _usable(self, up: _Upstream) -> bool:
        """Whether a request may use ``up`` (one still connecting may); one whose
        remote side has gone is forgotten at once, before its task sees it end."""
        if not up.done.is_set():
            client = up.client
            if client is None or not (client.session.closed.is_set()
                                      or client.session.connection.state is State.CLOSED):
                return True
            up.done.set()
        self._forget(up)
        return False

    def _forget(self, up: _Upstream) -> None:
        if up.session is not None and self._by_session.get(up.session) is up:
            del self._by_session[up.session]
        if self._shared is up:
            self._shared = None
        idle = self._idle.get(up.caps)
        if idle is not None and up in idle:
            idle.remove(up)

    # -- what the remote server asks back, and tells ---------------------------------------

    def _handlers(self, up: _Upstream) -> ClientHandlers:
        from mcpactor.client import ClientHandlers

        async def relay(method: str, params: Any) -> Any:
            return await self._relay(up, method, params)

        async def sampling(params: t.CreateMessageRequestParams) -> Any:
            return await relay("sampling/createMessage", params)

        async def elicitation(params: Any) -> Any:
            return await relay("elicitation/create", params)

        async def roots() -> list[t.Root]:
            result = await relay("roots/list", None)
            return list(result.roots)

        async def notified(event: Any) -> None:
            await self._notified(up, event)

        modes = ("form", "url") if "elicitation.url" in up.caps else ("form",)
        return ClientHandlers(
            sampling=sampling if "sampling" in up.caps else None,
            elicitation=elicitation if "elicitation" in up.caps else None,
            elicitation_modes=modes,
            roots=roots if "roots" in up.caps else None,
            on_notification=notified,
        )

    async def _relay(self, up: _Upstream, method: str, params: Any) -> Any:
        """Ask the proxy's client what the remote server asked us, on behalf of the
        request that caused it (through its Context: a request in a handshake session,
        an input round in 2026-07-28)."""
        call = _CALL.get()
        if call is None or call not in up.calls:
            call = up.lone_call()
        if call is None:
            if up.session is not None:
                # Several requests of the session in flight: the question is the
                # session's (the spec allows a request that belongs to none).
                return await up.session.request(method, params)
            raise InternalError(f"the proxied server {self.label} sent {method} outside "
                                "any request of this proxy's")
        try:
            return await call.ctx.relay(method, params)
        except InputRequired as need:
            if trio.lowlevel.current_task() is call.task:
                raise  # a 2026-07-28 upstream's round, answered in the caller's task
            # A handshake upstream asked in a task of its own: the call waiting for its
            # answer ends with this round, and its upstream request is cancelled (it is
            # sent again, with the client's answer at hand, when the client retries).
            call.need = need
            call.scope.cancel()
            raise InternalError(f"{method} is asked of the proxy's client first; the "
                                "request will be sent again with its answer") from None

    async def _notified(self, up: _Upstream, event: Any) -> None:
        """A notification from the remote server, passed on to the client session (or,
        on a 2026-07-28 connection, to the request it belongs to and to the parent's
        ``subscriptions/listen`` streams)."""
        method, params = event.method, event.raw_params
        call = up.lone_call()
        if method == "notifications/message":
            level = (params or {}).get("level", "info")
            if call is not None and call.rc.modern is not None:
                wanted = call.rc.modern.log_level
                if wanted is None or _rank(level) < _rank(wanted):
                    return
                await call.rc.notify(method, params)
                return
            session = up.session
            if session is None or not session_state(session).wants_log(level):
                return
        elif method == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            if isinstance(uri, str):
                params = {**params, "uri": prefix_uri(self.prefix, uri)}
            meta = params.get("_meta") if params else None
            if isinstance(meta, dict) and modern.META_SUBSCRIPTION_ID in meta:
                # Heard on our upstream listen: the tag names that listen, not one of
                # the client's.
                meta = {k: v for k, v in meta.items() if k != modern.META_SUBSCRIPTION_ID}
                params = {k: v for k, v in params.items() if k != "_meta"}
                if meta:
                    params["_meta"] = meta
        elif method not in ("notifications/tools/list_changed",
                            "notifications/prompts/list_changed",
                            "notifications/resources/list_changed"):
            return  # progress and cancellations belong to requests; the rest is theirs
        session = up.session
        if session is None:
            # Told by a connection that serves 2026-07-28 requests: once, to the parent's
            # listen streams.
            if self._announcer is None or self._announcer.done.is_set():
                self._announcer = up
            if self._announcer is up and self.parent is not None:
                self.parent.listen_hub.publish(method, params)
            return
        if session.closed.is_set() or session.connection.state is not State.OPERATING:
            return
        try:
            await session.notify(method, params,
                                 related_request=call.rc.id if call is not None else None)
        except Exception as exc:  # the client cannot take it (a capability it lacks)
            log.debug("proxy: %s not passed on to session %s: %s", method, session.id, exc)

    # -- Mount ------------------------------------------------------------------------------

    def routes(self, kind: str, inner: str) -> bool:
        """Every name under the prefix (the remote server answers for the rest)."""
        return True

    async def forward(self, rc: RequestContext, method: str, params: Any) -> Any:
        """Ask the remote server, on the upstream connection that answers ``rc`` (see
        :meth:`_lease`); what it asks back meanwhile is asked of this request's client,
        and its input rounds (2026-07-28) are answered so."""
        async with self._lease(rc) as up:
            client = up.client
            assert client is not None
            if method in ("resources/subscribe", "resources/unsubscribe") \
                    and _speaks_modern(client):
                await self._relisten(up, client, method, params.uri)
                return {}
            params = self._outgoing(rc, client, params)
            on_progress = None
            if rc.progress_token is not None:
                def on_progress(progress: float, total: float | None, message: str | None,
                                ) -> Any:
                    return rc.report_progress(progress, total, message)
            call = _Call(rc, Context(rc, self.parent))  # type: ignore[arg-type]
            up.calls.append(call)
            token = _CALL.set(call)
            try:
                with call.scope:
                    result = await client.request(method, params, on_progress=on_progress)
                    # What the remote server said while answering (its log messages)
                    # goes to the client before the answer, as it would have.
                    await client.session.settle()
                    return _unstamped(result)
                if call.need is not None:
                    raise call.need
                raise InternalError(f"the proxied server {self.label}'s answer was lost")
            except CapabilityNotSupported:
                # The remote server lacks the feature (our capabilities were declared
                # before we knew it): answer as a server without it would.
                uri = getattr(params, "uri", None)
                if method in ("resources/read", "resources/metadata") and isinstance(uri, str):
                    raise ResourceNotFound(uri) from None
                raise MethodNotFound(f"Method not found: {method} (the proxied server "
                                     f"{self.label} does not support it)") from None
            except RequestError as exc:
                # "Resource not found" is coded by revision (-32002, or -32602 from
                # 2026-07-28): the remote server's code is its revision's; the answer
                # is coded for our client's.
                data = exc.data if isinstance(exc.data, dict) else {}
                if method in ("resources/read", "resources/metadata") \
                        and exc.code in (RESOURCE_NOT_FOUND_LEGACY, INVALID_PARAMS) \
                        and isinstance(data.get("uri"), str):
                    raise ResourceNotFound(data["uri"], exc.message) from None
                raise
            except LocalProtocolError as exc:
                if self._usable(up):
                    raise
                # The upstream session ended between taking it and sending on it.
                raise InternalError(f"the proxied server {self.label} went away: {exc}",
                                    data={"upstream": self.label}) from None
            except ConnectionClosed as exc:
                raise InternalError(f"the proxied server {self.label} went away: {exc}",
                                    data={"upstream": self.label}) from None
            finally:
                _CALL.reset(token)
                up.calls.remove(call)

    async def _relisten(self, up: _Upstream, client: Client, method: str, uri: str) -> None:
        """A handshake client's subscription to a 2026-07-28 remote server's resource:
        the upstream listen for the session's URIs, opened anew for the new set (the new
        one acknowledged before the old one ends, so no update falls between)."""
        uris = up.listened | {uri} if method == "resources/subscribe" else up.listened - {uri}
        if uris == up.listened:
            return
        old = up.listener
        up.listener = None
        if uris:
            nursery = self._nursery
            assert nursery is not None  # a lease was granted: the lifespan runs
            track, call = TRACK.set(NOBODY), _CALL.set(None)
            try:
                up.listener = await nursery.start(_listen_upstream, client, sorted(uris))
            finally:
                _CALL.reset(call)
                TRACK.reset(track)
        up.listened = uris
        if old is not None:
            old.cancel()

    @staticmethod
    def _outgoing(rc: RequestContext, client: Client, params: Any) -> Any:
        """``params`` as the upstream request carries them: without the client's
        progress token (ours goes instead), its input answers and request state (those
        of a 2026-07-28 retry answer the proxy, not the remote server) and its
        per-request ``_meta`` (the upstream connection adds its own); to a 2026-07-28
        remote server, with the capabilities and log level of this request's client."""
        meta = dict(getattr(params, "meta", None) or {})
        meta.pop("progressToken", None)
        for key in _MODERN_META:
            meta.pop(key, None)
        if _speaks_modern(client):
            meta[modern.META_CLIENT_CAPABILITIES] = rc.peer_capabilities
            if rc.modern is not None:
                level = rc.modern.log_level
            else:  # a handshake session hears every level until it sets one
                level = session_state(rc.session).log_level or LOG_LEVELS[0]
            if level is not None:
                meta[modern.META_LOG_LEVEL] = level
        extra = getattr(params, "extra", None)
        changes: dict[str, Any] = {}
        if extra and ("inputResponses" in extra or "requestState" in extra):
            changes["extra"] = {k: v for k, v in extra.items()
                                if k not in ("inputResponses", "requestState")}
        if meta != (getattr(params, "meta", None) or {}):
            changes["meta"] = meta or None
        return attrs.evolve(params, **changes) if changes else params

    async def _list(self, rc: RequestContext, feature: str, method: str, field: str,
                    ) -> list[Any]:
        async with self._lease(rc) as up:
            client = up.client
            assert client is not None
            if feature not in client.server_capabilities:
                return []
            items: list[Any] = []
            cursor: str | None = None
            while True:
                result = await client.request(method, {"cursor": cursor} if cursor else None)
                items.extend(getattr(result, field))
                cursor = result.next_cursor
                if not cursor:
                    return items

    async def tools(self, rc: RequestContext) -> list[t.Tool]:
        """The remote server's tools."""
        return await self._list(rc, "tools", "tools/list", "tools")

    async def prompts(self, rc: RequestContext) -> list[t.Prompt]:
        """The remote server's prompts."""
        return await self._list(rc, "prompts", "prompts/list", "prompts")

    async def resources(self, rc: RequestContext) -> list[t.Resource]:
        """The remote server's resources."""
        return await self._list(rc, "resources", "resources/list", "resources")

    async def templates(self, rc: RequestContext) -> list[t.ResourceTemplate]:
        """The remote server's resource templates."""
        return await self._list(rc, "resources", "resources/templates/list",
                                "resource_templates")

    def capabilities(self) -> dict[str, Any]:
        """Declared up front: the remote server's are known only once connected."""
        return {"tools": {"listChanged": True}, "prompts": {"listChanged": True},
                "resources": {"subscribe": True, "listChanged": True}, "completions": {}}

    def find_tool(self, inner: str) -> None:
        """No registration here: the remote server checks its own callers."""
        return None


async def _listen_upstream(client: Client, uris: list[str], *,
                           task_status: trio.TaskStatus[trio.CancelScope]) -> None:
    """Hold a ``subscriptions/listen`` for ``uris`` on ``client`` until cancelled or the
    upstream session ends (its updates reach the proxy's handlers meanwhile)."""
    with trio.CancelScope() as scope:
        async with client.listen(resource_uris=uris):
            task_status.started(scope)
            await client.session.closed.wait()


def _unstamped(result: Any) -> Any:
    """An upstream result without what a 2026-07-28 server stamps on its own results
    (``resultType``, caching hints, its ``serverInfo``): the proxy's are stamped on its
    answer as its client's revision asks."""
    extra = getattr(result, "extra", None)
    meta = getattr(result, "meta", None)
    changes: dict[str, Any] = {}
    if extra and not _RESULT_STAMPS.isdisjoint(extra):
        changes["extra"] = {k: v for k, v in extra.items() if k not in _RESULT_STAMPS}
    if meta and modern.META_SERVER_INFO in meta:
        changes["meta"] = {k: v for k, v in meta.items() if k != modern.META_SERVER_INFO} \
            or None
    return attrs.evolve(result, **changes) if changes else result


async def _set_when(source: trio.Event, target: trio.Event) -> None:
    await source.wait()
    target.set()


def proxy(target: str | Sequence[str] | Server[Any], *, name: str | None = None,
          **options: Any) -> Server[None]:
    """A server serving ``target``'s tools, resources and prompts (see the module);
    ``options`` go to the ``connect_*`` function. Same as ``Server.as_proxy``."""
    from mcpactor.server.app import Server

    remote = RemoteServer(target, **options)
    server: Server[None] = Server(name or f"proxy of {remote.label}")
    server.mount(remote)
    return server

