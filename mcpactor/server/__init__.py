"""Writing MCP servers: the ``Server`` registry, ``Context`` and content helpers."""

from mcpactor.server.app import Server
from mcpactor.server.content import Audio, Embedded, Image, Link, Text, resource_contents
from mcpactor.server.context import Context
from mcpactor.server.dependencies import Depends
from mcpactor.server.elicitation import ElicitationResult
from mcpactor.server.handler import ToolError
from mcpactor.server.middleware import (
    CallNext,
    LoggingMiddleware,
    Middleware,
    MiddlewareContext,
    RateLimit,
    TimingMiddleware,
)
from mcpactor.server.remote import RemoteServer, proxy
from mcpactor.server.routes import HttpRequest, HttpResponse
from mcpactor.server.schema import Field

__all__ = [
    "Audio",
    "CallNext",
    "Context",
    "Depends",
    "ElicitationResult",
    "Embedded",
    "Field",
    "HttpRequest",
    "HttpResponse",
    "Image",
    "Link",
    "LoggingMiddleware",
    "Middleware",
    "MiddlewareContext",
    "RateLimit",
    "RemoteServer",
    "Server",
    "Text",
    "TimingMiddleware",
    "ToolError",
    "proxy",
    "resource_contents",
]
