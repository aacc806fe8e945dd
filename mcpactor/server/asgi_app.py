"""``Server.asgi_app()``: the HTTP side of a server as an ASGI application.

For an ASGI server that runs on Trio (hypercorn's Trio worker, or a Trio web
framework mounting it): the app's ASGI lifespan enters the server's lifespan and runs
the task group the sessions live in, so it must be run (``lifespan.startup``) before
requests arrive. A request that comes without it is 503 naming the fix. asyncio ASGI
servers (uvicorn, hypercorn's asyncio worker) cannot run it: mcpactor is Trio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from mcpactor.transports import asgi
from mcpactor.transports.asgi import Receive, Scope, Send
from mcpactor.transports.http_rules import HttpError

if TYPE_CHECKING:
    from mcpactor.server.app import Server
    from mcpactor.transports.http_server import McpHttpApp

__all__ = ["ServerAsgiApp"]


class ServerAsgiApp:
    """An ASGI application serving one :class:`Server` (see the module)."""

    def __init__(self, server: Server[Any], *, path: str = "/mcp", **http_options: Any) -> None:
        from mcpactor.transports.http_server import HttpOptions, McpHttpApp

        self.server = server
        self.app: McpHttpApp = McpHttpApp(server.session_endpoint(),
                                          HttpOptions(path=path, **http_options))
        self._running = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "http" and not self._running:
            await asgi.send_error(send, HttpError(
                503, "Service Unavailable: the ASGI lifespan was not run (serve this app "
                "with a Trio ASGI server that runs lifespans, e.g. hypercorn "
                "--worker-class trio)"))
            return
        await self.app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        started = False
        try:
            async with self.server.running(), trio.open_nursery() as nursery:
                await nursery.start(self.app.run)
                self._running = started = True
                await send({"type": "lifespan.startup.complete"})
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.shutdown":
                        break
                self._running = False
                nursery.cancel_scope.cancel()
        except Exception as exc:
            self._running = False
            if started:
                await send({"type": "lifespan.shutdown.failed", "message": repr(exc)})
                return
            await send({"type": "lifespan.startup.failed", "message": repr(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})
