"""The transport interface: a pair of message streams.

A transport carries whole JSON-RPC messages (one object or one batch array per item),
already framed: the session never sees partial messages. Stream transports (stdio) do
their framing inside; message transports (HTTP, WebSocket, memory) have it for free.
"""

from __future__ import annotations

import abc

import trio

from mcpactor.protocol.framing import Oversize
from mcpactor.protocol.jsonrpc import RequestId

__all__ = ["Outgoing", "Oversize", "Transport", "TransportClosed"]

#: One outbound message and the inbound request it belongs to (its response, or progress,
#: logs and requests sent while handling it); None for messages of the session itself.
#: Stream transports ignore ``related``; Streamable HTTP routes by it.
Outgoing = tuple[bytes, RequestId | None]


class TransportClosed(Exception):
    """The transport is gone: the peer closed it, or it broke."""


class Transport(abc.ABC):
    """One end of a message pipe. ``name`` appears in traces (``stdio``, ``http``, ...)."""

    name: str = "transport"
    #: Whether the message :meth:`receive` returned last was handed out without yielding
    #: to the scheduler (it had arrived with an earlier one). Stream transports set it;
    #: the session traces it, so that a replay takes the same decision.
    buffered: bool = False

    @abc.abstractmethod
    async def receive(self) -> bytes | Oversize:
        """The next inbound message, or :class:`Oversize` for one that was too large.

        Raises :class:`trio.EndOfChannel` at a clean end of input and
        :class:`TransportClosed` when the transport broke.
        """

    @abc.abstractmethod
    async def send(self, messages: list[Outgoing]) -> None:
        """Write one or more messages, in order (the writer batches what it has)."""

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Close both directions; idempotent."""

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def aclose_quietly(transport: Transport) -> None:
    """Close a transport, ignoring errors from an already broken one."""
    with trio.CancelScope(shield=True):
        try:
            await transport.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError, TransportClosed, OSError):
            pass
