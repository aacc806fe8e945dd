"""An in-memory transport pair: two sessions in one Trio run, for tests and benchmarks."""

from __future__ import annotations

import math

import trio

from mcpactor.transports.base import Outgoing, Oversize, Transport, TransportClosed


class MemoryTransport(Transport):
    """One end of an in-memory pipe; build them with :func:`memory_pair`."""

    name = "memory"

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send = send_channel
        self._receive = receive_channel

    async def receive(self) -> bytes | Oversize:
        """The next message, or EndOfChannel once the other end closed."""
        try:
            return await self._receive.receive()
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None

    async def send(self, messages: list[Outgoing]) -> None:
        """Deliver messages to the other end."""
        try:
            for m, _ in messages:
                await self._send.send(m)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise TransportClosed("the other end of the memory transport is closed") from exc

    async def aclose(self) -> None:
        """Close our sending side (the peer sees end of input) and our receiving side."""
        await self._send.aclose()
        await self._receive.aclose()


def memory_pair(buffer: float = math.inf) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives."""
    a_send, b_recv = trio.open_memory_channel[bytes](buffer)
    b_send, a_recv = trio.open_memory_channel[bytes](buffer)
    return MemoryTransport(a_send, a_recv), MemoryTransport(b_send, b_recv)
