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

A proxy records like any server, but its replay cannot be exact: the remote server's
answers come from outside the recorded run (``mcpactor replay --against`` checks one).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
import trio

from mcpactor.protocol import types as t
from mcpactor.protocol.errors import (
    CapabilityNotSupported,
    ConnectionClosed,
    InternalError,
    MethodNotFound,
    ResourceNotFound,
)
from mcpactor.protocol.lifecycle import State
from mcpactor.server.compose import prefix_uri
from mcpactor.server.context import session_state
from mcpactor.server.lifespan import LifespanNotRunning
from mcpactor.session.context import RequestContext
from mcpactor.session.session import Session
from mcpactor.tracing.tasks import TRACK

if TYPE_CHECKING:
    from mcpactor.client.client import Client, ClientHandlers
    from mcpactor.server.app import Server

__all__ = ["RemoteServer", "proxy"]

log = logging.getLogger("mcpactor.server.remote")

class _Upstream:
    """One client session's connection to the remote server."""

    __slots__ = ("client", "done", "error", "inflight", "ready")

    def __init__(self) -> None:
        #: The client session's requests being answered upstream now: what the remote
        #: server asks or says meanwhile belongs to the one, when there is one (over
        #: HTTP it then rides that request's stream).
        self.inflight: list[Any] = []
        self.ready = trio.Event()
        self.done = trio.Event()
        self.client: Client | None = None
        self.error: BaseException | None = None


def _label(target: Any) -> str:
    from mcpactor.server.app import Server

    if isinstance(target, Server):
        return f"{target.info.name!r} (a server of this process)"
    if isinstance(target, str):
        return target
    return " ".join(shlex.quote(part) for part in target)


class RemoteServer:
    """A remote MCP server to mount (``server.mount(RemoteServer(target), prefix=...)``):
    see the module. ``options`` go to the ``connect_*`` function the target calls for
    (``headers``, ``auth``, ``timeout``, ``env``, ``cwd``, ``tls``, ...)."""

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
        self.label = _label(target)
        self._nursery: trio.Nursery | None = None
        self._upstreams: dict[Session, _Upstream] = {}

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

    async def client_for(self, rc: RequestContext) -> Client:
        """The upstream session of ``rc``'s client session (opened on first use)."""
        session = rc.session
        up = self._upstreams.get(session)
        if up is None:
            nursery = self._nursery
            if nursery is None:
                raise LifespanNotRunning(
                    f"the proxy of {self.label} is not running: serve it with run(), "
                    "serve_*(), asgi_app() or open_client(), or enter `async with "
                    "server.running():`")
            up = self._upstreams[session] = _Upstream()
            # The upstream conversation is not part of this server's recording: its tasks
            # are not the session's (the remote server's answers come from outside).
            token = TRACK.set(None)
            try:
                nursery.start_soon(self._hold, session, up)
            finally:
                TRACK.reset(token)
        await up.ready.wait()
        if up.client is None:
            raise InternalError(f"cannot reach the proxied server {self.label}: {up.error}",
                                data={"upstream": self.label})
        return up.client

    async def _hold(self, session: Session, up: _Upstream) -> None:
        try:
            async with self._connect(self._handlers(session, up)) as client:
                up.client = client
                up.ready.set()
                async with trio.open_nursery() as watch:
                    # Until either side ends: the client session, or the remote one (then
                    # the next request connects again).
                    watch.start_soon(_set_when, session.closed, up.done)
                    watch.start_soon(_set_when, client.session.closed, up.done)
                    await up.done.wait()
                    watch.cancel_scope.cancel()
        except Exception as exc:
            up.error = exc
            log.warning("proxy to %s: %s", self.label, exc)
        finally:
            up.ready.set()
            if self._upstreams.get(session) is up:
                del self._upstreams[session]

    # -- what the remote server asks back, and tells ---------------------------------------

    def _handlers(self, session: Session, up: _Upstream) -> ClientHandlers:
        from mcpactor.client import ClientHandlers

        caps = session.connection.peer_capabilities or {}

        async def forward(method: str, params: Any) -> Any:
            return await session.request(method, params, related_request=_related(up))

        async def sampling(params: t.CreateMessageRequestParams) -> Any:
            return await forward("sampling/createMessage", params)

        async def elicitation(params: Any) -> Any:
            return await forward("elicitation/create", params)

        async def roots() -> list[t.Root]:
            result = await forward("roots/list", None)
            return list(result.roots)

        async def notified(event: Any) -> None:
            await self._notified(session, up, event)

        modes = tuple(caps.get("elicitation") or {}) or ("form",)
        return ClientHandlers(
            sampling=sampling if "sampling" in caps else None,
            elicitation=elicitation if "elicitation" in caps else None,
            elicitation_modes=modes,
            roots=roots if "roots" in caps else None,
            on_notification=notified,
        )

    async def _notified(self, session: Session, up: _Upstream, event: Any) -> None:
        """A notification from the remote server, passed on to the client session."""
        if session.closed.is_set() or session.connection.state is not State.OPERATING:
            return
        method, params = event.method, event.raw_params
        if method == "notifications/message":
            level = (params or {}).get("level", "info")
            if not session_state(session).wants_log(level):
                return
        elif method == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            if isinstance(uri, str):
                params = {**params, "uri": prefix_uri(self.prefix, uri)}
        elif method not in ("notifications/tools/list_changed",
                            "notifications/prompts/list_changed",
                            "notifications/resources/list_changed"):
            return  # progress and cancellations belong to requests; the rest is theirs
        try:
            await session.notify(method, params, related_request=_related(up))
        except Exception as exc:  # the client cannot take it (a capability it lacks)
            log.debug("proxy: %s not passed on to session %s: %s", method, session.id, exc)

    # -- Mount ------------------------------------------------------------------------------

    def routes(self, kind: str, inner: str) -> bool:
        """Every name under the prefix (the remote server answers for the rest)."""
        return True

    async def forward(self, rc: RequestContext, method: str, params: Any) -> Any:
        """Ask the remote server, on this client session's upstream session."""
        client = await self.client_for(rc)
        up = self._upstreams.get(rc.session)
        meta = getattr(params, "meta", None)
        if meta and "progressToken" in meta:
            params = attrs.evolve(params, meta={k: v for k, v in meta.items()
                                                if k != "progressToken"} or None)
        on_progress = None
        if rc.progress_token is not None:
            def on_progress(progress: float, total: float | None, message: str | None) -> Any:
                return rc.report_progress(progress, total, message)
        if up is not None:
            up.inflight.append(rc.id)
        try:
            return await client.session.request(method, params, on_progress=on_progress)
        except CapabilityNotSupported:
            # The remote server lacks the feature (our capabilities were declared before
            # we knew it): answer as a server without it would.
            uri = getattr(params, "uri", None)
            if method in ("resources/read", "resources/metadata") and isinstance(uri, str):
                raise ResourceNotFound(uri) from None
            raise MethodNotFound(f"Method not found: {method} (the proxied server "
                                 f"{self.label} does not support it)") from None
        except ConnectionClosed as exc:
            raise InternalError(f"the proxied server {self.label} went away: {exc}",
                                data={"upstream": self.label}) from None
        finally:
            if up is not None:
                up.inflight.remove(rc.id)

    async def _list(self, rc: RequestContext, feature: str, method: str, field: str,
                    ) -> list[Any]:
        client = await self.client_for(rc)
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


def _related(up: _Upstream) -> Any:
    return up.inflight[0] if len(up.inflight) == 1 else None


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

