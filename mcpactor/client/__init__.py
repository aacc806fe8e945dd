"""Writing MCP clients: connect, call, and answer what the server asks back."""

from mcpactor.client.client import Client, ClientHandlers, connect_stdio, connect_transport

__all__ = ["Client", "ClientHandlers", "connect_stdio", "connect_transport"]
