"""Serving :class:`McpHttpApp` over TCP: our lean h11 server (default) or hypercorn."""

from __future__ import annotations

import logging
import socket
import sys
from typing import TYPE_CHECKING, Any, cast

import trio

from mcpactor.transports.security import LOCAL_HOSTS

if TYPE_CHECKING:
    from mcpactor.scaleout.cluster import ClusterOptions
    from mcpactor.scaleout.state import SharedState
    from mcpactor.tracing.tracer import Tracer
    from mcpactor.transports.endpoint import EndpointSource, SessionEndpoint
    from mcpactor.transports.http_server import McpHttpApp

__all__ = ["HTTP_SERVERS", "serve_app", "serve_http"]


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


async def serve_http(
    server: SessionEndpoint | EndpointSource,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    tracer: Tracer | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    quiet: bool = False,
    http_server: str = "h11",
    listen_socket: socket.socket | None = None,
    redis: str | SharedState | None = None,
    state_key: str | None = None,
    scaleout: ClusterOptions | None = None,
    **options: Any,
) -> None:
    """Serve ``server`` (a :class:`~mcpactor.transports.endpoint.SessionEndpoint`, or
    a ``Server``) over Streamable HTTP (and legacy HTTP+SSE) until cancelled.

    ``http_server``: ``"h11"`` (our lean server, the default) or ``"hypercorn"``.
    ``tracer``: a running recording (:class:`mcpactor.tracing.Recorder`) that every
    session's events go to. ``options`` are :class:`HttpOptions` fields. With ``nursery.start`` the task status
    is the endpoint URL (useful with ``port=0``). ``listen_socket``: serve on this
    listening socket (a worker of ``mcpactor run --workers``). ``redis``: share
    sessions with every worker using the same store (a ``redis://HOST:PORT/DB`` URL, or
    any :class:`~mcpactor.scaleout.state.SharedState`), see ``docs/scale-out.md``;
    ``state_key`` signs state clients carry between workers (it becomes the server's
    ``request_state_key``, so every worker given it resumes the 2026-07-28 input rounds
    of the others); ``scaleout`` tunes keys
    and timings (:class:`~mcpactor.scaleout.cluster.ClusterOptions`). Only loopback names and ``host`` are
    accepted in ``Host``/``Origin`` unless ``allowed_hosts``/``allowed_origins`` say
    otherwise (a server on 0.0.0.0 must list the names it is reached by).
    """
    if "allowed_hosts" not in options and host not in ("0.0.0.0", "::", ""):
        # A server bound to one named address also answers to that name.
        options["allowed_hosts"] = LOCAL_HOSTS | {host.lower(), f"[{host.lower()}]"}
    from mcpactor.transports.endpoint import endpoint_of
    from mcpactor.transports.http_server import HttpOptions, McpHttpApp

    if state_key is not None:
        endpoint_of(server).use_request_state_key(state_key)
    http_options = HttpOptions(path=path, tracer=tracer, **options)
    if redis is None:
        await serve_app(
            McpHttpApp(server, http_options), host=host, port=port, quiet=quiet,
            server=http_server, task_status=task_status, listen_socket=listen_socket,
        )
        return
    from mcpactor.scaleout.cluster import ClusterOptions, open_cluster

    if scaleout is None:
        idle = http_options.session_idle_timeout
        scaleout = ClusterOptions(session_ttl=(idle if idle is not None else 86_400.0) + 60.0)
    async with open_cluster(redis, options=scaleout, state_key=state_key) as cluster:
        await serve_app(
            McpHttpApp(server, http_options, cluster=cluster), host=host, port=port,
            quiet=quiet, server=http_server, task_status=task_status,
            listen_socket=listen_socket,
        )


#: HTTP servers that can carry the app (``server=`` of :func:`serve_app`).
HTTP_SERVERS = ("h11", "hypercorn")


async def serve_app(
    app: McpHttpApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    quiet: bool = False,
    server: str = "h11",
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    listen_socket: socket.socket | None = None,
) -> None:
    """Serve an :class:`McpHttpApp` until cancelled; the task status is the endpoint URL.

    ``server``: ``"h11"`` (default), our lean HTTP/1.1 server (:mod:`.h11_server`), or
    ``"hypercorn"``, hypercorn's Trio worker (HTTP/2 and TLS options live there).
    """
    if server not in HTTP_SERVERS:
        raise ValueError(f"unknown HTTP server {server!r}: use one of {', '.join(HTTP_SERVERS)}")
    if server == "hypercorn":
        # An extra (mcpactor[hypercorn]): missing, it is one clear error before serving.
        from mcpactor.extras import require

        require("hypercorn", "serving HTTP with hypercorn")
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        binds = await nursery.start(_SERVE[server], app, host, port, listen_socket)
        url = (binds[0] if binds else f"http://{_bind(host, port)}") + app.options.path
        if not quiet:
            print(f"mcpactor: serving {app.endpoint.name} on {url}", file=sys.stderr, flush=True)
        task_status.started(url)


async def _serve_h11(
    app: McpHttpApp, host: str, port: int, listen_socket: socket.socket | None, *,
    task_status: trio.TaskStatus[list[str]],
) -> None:
    from mcpactor.transports.h11_server import H11Options, serve_h11

    o = app.options
    options = H11Options(
        keep_alive_timeout=o.keep_alive_timeout, head_timeout=o.head_timeout,
        body_timeout=o.body_timeout, max_connections=o.max_connections,
        max_connections_per_peer=o.max_connections_per_peer,
        refusal_linger=o.refusal_linger, max_refusals=o.max_refusals,
    )
    await serve_h11(app, host=host, port=port, options=options, listen_socket=listen_socket,
                    task_status=task_status)


async def _serve_hypercorn(
    app: McpHttpApp, host: str, port: int, listen_socket: socket.socket | None, *,
    task_status: trio.TaskStatus[list[str]],
) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"fd://{listen_socket.fileno()}" if listen_socket is not None
                   else _bind(host, port)]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = app.options.keep_alive_timeout
    # Its default closes a keep-alive connection after 1,000 requests; an MCP client
    # keeps one connection for a whole session.
    config.keep_alive_max_requests = 10**9
    asgi_app = cast(Any, app)  # hypercorn's ASGI typing is stricter than our dict-based one
    await serve(asgi_app, config, task_status=task_status)


_SERVE = {"h11": _serve_h11, "hypercorn": _serve_hypercorn}
