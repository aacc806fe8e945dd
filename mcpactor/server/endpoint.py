"""The server's side of the transports' :class:`~mcpactor.transports.endpoint.SessionEndpoint`.

Transports know nothing of :class:`~mcpactor.server.app.Server`: they open sessions
and ask their few questions through this adapter (``Server.session_endpoint()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from mcpactor.transports.endpoint import Fanout

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.session.session import Session
    from mcpactor.tracing.tracer import Tracer
    from mcpactor.transports.asgi import Receive, Scope, Send
    from mcpactor.transports.base import Transport

__all__ = ["ServerEndpoint"]


class ServerEndpoint:
    """A :class:`~mcpactor.transports.endpoint.SessionEndpoint` serving ``server``."""

    __slots__ = ("server",)

    def __init__(self, server: Server[Any]) -> None:
        self.server = server

    @property
    def name(self) -> str:
        """The server's name (``Server(name=...)``)."""
        return self.server.info.name

    def open_session(
        self, transport: Transport, *, session_id: str | None = None,
        tracer: Tracer | None = None,
    ) -> Session:
        """``Server.new_session``: a session serving the server over ``transport``."""
        return self.server.new_session(transport, tracer=tracer, session_id=session_id)

    def running(self) -> AbstractAsyncContextManager[Any]:
        """The server's lifespan (shared with every other user of it)."""
        return self.server.running()

    async def serve_route(self, scope: Scope, receive: Receive, send: Send,
                          max_body: int) -> bool:
        """The server's custom HTTP routes (``@server.custom_route``), mounts included."""
        return await self.server.serve_http_route(scope, receive, send, max_body)

    def route_needs_auth(self, path: str) -> bool:
        """Whether a custom route at ``path`` was registered with ``auth=True``."""
        return self.server.http_route_needs_auth(path)

    def tool_scopes(self, name: str) -> Sequence[str]:
        """``@server.tool(scopes=[...])`` of the tool a call of ``name`` reaches."""
        entry = self.server.find_tool(name)
        scopes: Sequence[str] = getattr(entry, "scopes", ()) or ()
        return scopes

    def tool_input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The ``inputSchema`` of this server's own tool ``name``."""
        entry = self.server.tools.get(name)
        schema = getattr(getattr(entry, "tool", None), "input_schema", None)
        return schema if isinstance(schema, Mapping) else None

    def set_fanout(self, fanout: Fanout | None) -> None:
        """[scale-out] Route the server's broadcasts through ``fanout``."""
        self.server.fanout = fanout

    async def deliver_broadcast(self, method: str, params: Any = None) -> None:
        """[scale-out] ``Server.deliver_broadcast``."""
        await self.server.deliver_broadcast(method, params)

    def use_request_state_key(self, key: str) -> None:
        """[scale-out] The key becomes ``Server.request_state_key`` (it overrides one
        given to ``Server``: every worker of a deployment must sign alike)."""
        server = self.server
        if server.request_state_key != key:
            server.request_state_key = key
            server.request_state_codec = None  # made again, with this key, on first use

    @property
    def task_runtime(self) -> Any:
        """[scale-out] ``Server.task_runtime``."""
        return self.server.task_runtime
