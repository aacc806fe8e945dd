"""What a server-side transport needs of the application it serves: :class:`SessionEndpoint`.

The HTTP app (:class:`~mcpactor.transports.http_server.McpHttpApp`), ``serve_http``,
``serve_websocket`` and the OAuth resource server take one of these, never a
``Server``: the transports open sessions through it and ask it the few questions
that are not about bytes (a custom HTTP route, whether a path needs a token, a
tool's scopes and input schema). The server layer provides the implementation
(``Server.session_endpoint()``, :class:`mcpactor.server.endpoint.ServerEndpoint`).
``tests/transports/test_layering.py`` checks that nothing here imports the server.

Each operation is called once per session or per HTTP request at most, never per
message: the per-message path stays inside the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mcpactor.session.session import Session
    from mcpactor.tracing.tracer import Tracer
    from mcpactor.transports.asgi import Receive, Scope, Send
    from mcpactor.transports.base import Transport

__all__ = ["EndpointSource", "Fanout", "SessionEndpoint", "endpoint_of"]

#: [scale-out] Where broadcast notifications go instead of this process's sessions.
Fanout = Callable[[str, Any], Awaitable[None]]


@runtime_checkable
class SessionEndpoint(Protocol):
    """The application side of a server transport: a session factory plus the
    questions an HTTP front asks before a message reaches a session."""

    @property
    def name(self) -> str:
        """The served application's name (for the "serving ... on URL" line)."""
        ...

    def open_session(
        self, transport: Transport, *, session_id: str | None = None,
        tracer: Tracer | None = None,
    ) -> Session:
        """A new session serving the application over ``transport`` (not started:
        the caller runs it); ``tracer``: a running recording its events go to."""
        ...

    def running(self) -> AbstractAsyncContextManager[Any]:
        """Keep the application ready (its lifespan) for the duration of the block;
        entered around a session by transports that serve sessions one by one."""
        ...

    async def serve_route(self, scope: Scope, receive: Receive, send: Send,
                          max_body: int) -> bool:
        """Answer an HTTP request for one of the application's own routes; False when
        no route matches ``scope["path"]``."""
        ...

    def route_needs_auth(self, path: str) -> bool:
        """Whether the application's route at ``path`` requires the bearer token."""
        ...

    def tool_scopes(self, name: str) -> Sequence[str]:
        """The OAuth scopes a ``tools/call`` of ``name`` needs (empty: none, or an
        unknown tool, which the session will refuse)."""
        ...

    def tool_input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The ``inputSchema`` of tool ``name`` (for the 2026-07-28 ``Mcp-Param-*``
        header checks), None when unknown."""
        ...

    def set_fanout(self, fanout: Fanout | None) -> None:
        """[scale-out] Send broadcast notifications through ``fanout`` (to every
        worker) instead of straight to this process's sessions; None: back to local."""
        ...

    async def deliver_broadcast(self, method: str, params: Any = None) -> None:
        """[scale-out] Deliver a broadcast notification to this process's sessions."""
        ...

    def use_request_state_key(self, key: str) -> None:
        """[scale-out] Sign the 2026-07-28 ``requestState`` with the deployment's
        shared key, so that a round started on one worker resumes on any other."""
        ...

    @property
    def task_runtime(self) -> Any:
        """[scale-out] The application's task runtime
        (:class:`mcpactor.tasks.TaskRuntime`), whose store a cluster may replace."""
        ...


class EndpointSource(Protocol):
    """Anything that can provide a :class:`SessionEndpoint` (a ``Server`` does)."""

    def session_endpoint(self) -> SessionEndpoint:
        """The endpoint serving this object's sessions."""
        ...


def endpoint_of(target: SessionEndpoint | EndpointSource) -> SessionEndpoint:
    """``target`` itself if it is an endpoint, else the one it provides; a
    ``TypeError`` naming what is expected otherwise."""
    provide = getattr(target, "session_endpoint", None)
    if provide is not None:
        endpoint: SessionEndpoint = provide()
        return endpoint
    if isinstance(target, SessionEndpoint):
        return target
    raise TypeError(
        f"expected a SessionEndpoint or an object with session_endpoint() (a Server), "
        f"got {type(target).__name__}"
    )
