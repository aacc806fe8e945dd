"""mcpactor: a Model Context Protocol runtime for Python on Trio.

Servers are written as handlers on a :class:`Server`; clients connect with
:func:`connect_stdio` (and the other ``connect_*`` functions); every session is a
supervised actor tree that can be recorded to a JSONL trace and replayed.
"""

__version__ = "0.1.0"

from mcpactor.client import Client, ClientHandlers, connect_stdio, connect_transport
from mcpactor.protocol.errors import (
    CapabilityNotSupported,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from mcpactor.server import (
    Audio,
    Context,
    Embedded,
    Field,
    Image,
    Link,
    Server,
    Text,
    ToolError,
)
from mcpactor.session import Limits, Timeout

__all__ = [
    "Audio",
    "CapabilityNotSupported",
    "Client",
    "ClientHandlers",
    "ConnectionClosed",
    "Context",
    "Embedded",
    "Field",
    "Image",
    "Limits",
    "Link",
    "McpError",
    "RequestTimeout",
    "Server",
    "Text",
    "Timeout",
    "ToolError",
    "__version__",
    "connect_stdio",
    "connect_transport",
]
