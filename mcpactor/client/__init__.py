"""Writing MCP clients: connect, call, and answer what the server asks back."""

from mcpactor.client.client import Client, ClientHandlers, connect_stdio, connect_transport
from mcpactor.client.handlers import HandlerContext
from mcpactor.client.remote import connect_http, connect_sse, connect_websocket
from mcpactor.client.results import ToolResult
from mcpactor.transports.http_proxy import TlsOptions

__all__ = [
    "Client",
    "ClientHandlers",
    "HandlerContext",
    "TlsOptions",
    "ToolResult",
    "connect_http",
    "connect_sse",
    "connect_stdio",
    "connect_transport",
    "connect_websocket",
]
