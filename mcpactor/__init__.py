"""mcpactor: a Model Context Protocol runtime for Python on Trio.

Servers are written as handlers on a :class:`Server`; clients connect with
:func:`connect_stdio` (and the other ``connect_*`` functions); every session is a
supervised actor tree that can be recorded to a JSONL trace and replayed.

Names are imported lazily, so ``import mcpactor.protocol`` stays free of Trio and
sockets (the protocol core is sans-I/O) and start-up only pays for what it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Client": "mcpactor.client",
    "ClientHandlers": "mcpactor.client",
    "HandlerContext": "mcpactor.client",
    "TlsOptions": "mcpactor.client",
    "ToolResult": "mcpactor.client",
    "connect_http": "mcpactor.client",
    "connect_sse": "mcpactor.client",
    "connect_stdio": "mcpactor.client",
    "connect_websocket": "mcpactor.client",
    "connect_transport": "mcpactor.client",
    "CapabilityNotSupported": "mcpactor.protocol.errors",
    "ConnectionClosed": "mcpactor.protocol.errors",
    "InvalidResult": "mcpactor.protocol.errors",
    "LocalProtocolError": "mcpactor.protocol.errors",
    "McpError": "mcpactor.protocol.errors",
    "MissingClientCapability": "mcpactor.protocol.errors",
    "InputRequired": "mcpactor.protocol.mrtr",
    "RequestError": "mcpactor.protocol.errors",
    "RequestTimeout": "mcpactor.protocol.errors",
    "ResourceNotFound": "mcpactor.protocol.errors",
    "Audio": "mcpactor.server",
    "Context": "mcpactor.server",
    "Depends": "mcpactor.server",
    "HttpRequest": "mcpactor.server",
    "HttpResponse": "mcpactor.server",
    "Middleware": "mcpactor.server",
    "MiddlewareContext": "mcpactor.server",
    "RemoteServer": "mcpactor.server",
    "proxy": "mcpactor.server",
    "ElicitationResult": "mcpactor.server",
    "Embedded": "mcpactor.server",
    "Field": "mcpactor.server",
    "Image": "mcpactor.server",
    "Link": "mcpactor.server",
    "Server": "mcpactor.server",
    "Text": "mcpactor.server",
    "ToolError": "mcpactor.server",
    "Limits": "mcpactor.session",
    "Timeout": "mcpactor.session",
    "HttpOptions": "mcpactor.transports.http_options",
}

__all__ = [
    "Audio",
    "CapabilityNotSupported",
    "Client",
    "ClientHandlers",
    "ConnectionClosed",
    "Context",
    "Depends",
    "ElicitationResult",
    "Embedded",
    "Field",
    "HandlerContext",
    "HttpOptions",
    "HttpRequest",
    "HttpResponse",
    "Image",
    "InputRequired",
    "InvalidResult",
    "Limits",
    "Link",
    "LocalProtocolError",
    "McpError",
    "Middleware",
    "MiddlewareContext",
    "MissingClientCapability",
    "RemoteServer",
    "RequestError",
    "RequestTimeout",
    "ResourceNotFound",
    "Server",
    "Text",
    "Timeout",
    "TlsOptions",
    "ToolError",
    "ToolResult",
    "__version__",
    "connect_http",
    "connect_sse",
    "connect_stdio",
    "connect_transport",
    "connect_websocket",
    "proxy",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpactor' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from mcpactor.client import (
        Client,
        ClientHandlers,
        HandlerContext,
        TlsOptions,
        ToolResult,
        connect_http,
        connect_sse,
        connect_stdio,
        connect_transport,
        connect_websocket,
    )
    from mcpactor.protocol.errors import (
        CapabilityNotSupported,
        ConnectionClosed,
        InvalidResult,
        LocalProtocolError,
        McpError,
        MissingClientCapability,
        RequestError,
        RequestTimeout,
        ResourceNotFound,
    )
    from mcpactor.protocol.mrtr import InputRequired
    from mcpactor.server import (
        Audio,
        Context,
        Depends,
        ElicitationResult,
        Embedded,
        Field,
        HttpRequest,
        HttpResponse,
        Image,
        Link,
        Middleware,
        MiddlewareContext,
        RemoteServer,
        Server,
        Text,
        ToolError,
        proxy,
    )
    from mcpactor.session import Limits, Timeout
    from mcpactor.transports.http_options import HttpOptions
