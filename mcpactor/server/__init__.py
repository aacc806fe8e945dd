"""Writing MCP servers: the ``Server`` registry, ``Context`` and content helpers."""

from mcpactor.server.app import Server
from mcpactor.server.content import Audio, Embedded, Image, Link, Text, resource_contents
from mcpactor.server.context import Context
from mcpactor.server.elicitation import ElicitationResult
from mcpactor.server.handler import ToolError
from mcpactor.server.schema import Field

__all__ = [
    "Audio",
    "Context",
    "ElicitationResult",
    "Embedded",
    "Field",
    "Image",
    "Link",
    "Server",
    "Text",
    "ToolError",
    "resource_contents",
]
